"""Strict, safe YAML reading for user inputs.

Refuses what PyYAML would silently accept: duplicate keys (the last one would win), non-UTF-8
bytes, files over a size limit and alias expansion past a node budget ("billion laughs").
Problems are collected with the field path where the YAML shows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from miglab.errors import Problems

MAX_BYTES = 1_000_000
MAX_NODES = 100_000


class _Budget(Exception):
    pass


def _walk(node: yaml.Node, path: str, problems: Problems, seen: list[int]) -> None:
    """Count expanded nodes (aliases share node objects) and find duplicate mapping keys."""
    seen[0] += 1
    if seen[0] > MAX_NODES:
        raise _Budget
    if isinstance(node, yaml.MappingNode):
        first: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key == "<<":
                _walk(value_node, path, problems, seen)
                continue
            child = f"{path}.{key}" if path else str(key)
            if key is not None:
                if key in first:
                    problems.add(
                        child,
                        f"duplicate key {key!r} (lines {first[key] + 1} and "
                        f"{key_node.start_mark.line + 1}); YAML would silently keep the last",
                    )
                else:
                    first[key] = key_node.start_mark.line
            _walk(value_node, child, problems, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, f"{path}[{i}]", problems, seen)


def load_bytes(raw: bytes, file: str, problems: Problems) -> Any:
    """Parse one YAML document; returns None (with problems added) when it cannot be used."""
    if len(raw) > MAX_BYTES:
        problems.add("", f"file is {len(raw)} bytes, larger than the {MAX_BYTES}-byte limit")
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.add("", f"not UTF-8 text (byte {exc.start}: {raw[exc.start : exc.start + 1]!r})")
        return None
    if not text.strip():
        problems.add("", "file is empty")
        return None
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(unknown position)"
        problems.add("", f"not valid YAML at {where}: {getattr(exc, 'problem', exc)}")
        return None
    if len(docs) != 1 or docs[0] is None:
        problems.add("", f"expected one YAML document, found {len(docs)}")
        return None
    before = len(problems.items)
    try:
        _walk(docs[0], "", problems, [0])
    except _Budget:
        problems.add("", f"YAML expands to more than {MAX_NODES} nodes (alias bomb?)")
        return None
    if len(problems.items) > before:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:  # e.g. a bad tag
        problems.add("", f"not valid YAML: {exc}")
        return None


def load_file(path: str | Path, problems: Problems) -> Any:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        problems.add("", "file not found")
        return None
    except IsADirectoryError:
        problems.add("", "is a directory, expected a YAML file")
        return None
    except OSError as exc:
        problems.add("", f"cannot read: {exc.strerror}")
        return None
    return load_bytes(raw, problems.file, problems)
