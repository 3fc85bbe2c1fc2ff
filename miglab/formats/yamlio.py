"""Strict, safe YAML reading for user inputs.

Refuses what PyYAML would silently accept: duplicate keys (the last one would win), non-UTF-8
bytes, files over a size limit, alias expansion past a node budget ("billion laughs"), recursive
aliases and nesting deeper than any miglab input needs. Problems are collected with the field
path where the YAML shows it, each on one line.

``ansible=True`` (inventories and their group_vars/host_vars) also reads Ansible's own tags:
``!vault`` / ``!vault-encrypted`` values become :class:`Vaulted` strings (secrets miglab never
decrypts, accepted as given) and ``!unsafe`` values plain strings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from miglab.errors import Problems
from miglab.formats.files import UnreadableFile, read_input

MAX_BYTES = 1_000_000
MAX_NODES = 100_000
MAX_DEPTH = 64


class Vaulted(str):
    """An Ansible vault-encrypted value (``!vault |``): a secret that is there, not readable."""


class _Stop(Exception):
    """Reading stops: the document cannot be used (the reason is in ``args[0]``)."""


class _SafeLoader(yaml.SafeLoader):
    """SafeLoader that gives up composing past the node budget (before the whole file is
    parsed into memory: 1 MB of ``[1,1,...]`` is half a million nodes)."""

    _composed = 0

    def compose_node(self, parent, index):
        self._composed += 1
        if self._composed > MAX_NODES:
            raise _Stop(f"YAML has more than {MAX_NODES} nodes")
        return super().compose_node(parent, index)


class _AnsibleLoader(_SafeLoader):
    """SafeLoader plus the tags Ansible puts into inventories and variable files."""


def _vaulted(loader: yaml.SafeLoader, node: yaml.Node) -> Vaulted:
    return Vaulted(loader.construct_scalar(node))


def _unsafe(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


_AnsibleLoader.add_constructor("!vault", _vaulted)
_AnsibleLoader.add_constructor("!vault-encrypted", _vaulted)
_AnsibleLoader.add_constructor("!unsafe", _unsafe)


def _walk(node: yaml.Node, path: str, problems: Problems, seen: list[int], stack: set) -> None:
    """Count expanded nodes (aliases share node objects), find duplicate mapping keys, refuse
    recursive aliases and deep nesting."""
    seen[0] += 1
    if seen[0] > MAX_NODES:
        raise _Stop(f"YAML expands to more than {MAX_NODES} nodes (alias bomb?)")
    if len(stack) >= MAX_DEPTH:
        raise _Stop(f"nested deeper than {MAX_DEPTH} levels (line {node.start_mark.line + 1})")
    if id(node) in stack:
        raise _Stop(f"recursive alias at {path or 'the top'} (a node that contains itself)")
    if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        return
    stack.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key == "<<":
                _walk(value_node, path, problems, seen, stack)
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
            _walk(value_node, child, problems, seen, stack)
    else:
        for i, item in enumerate(node.value):
            _walk(item, f"{path}[{i}]", problems, seen, stack)
    stack.discard(id(node))


def _yaml_error(exc: yaml.YAMLError, text: str) -> str:
    """PyYAML's error as one line: where and what (its own text spans several lines)."""
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return (
            f"not valid YAML at line {line}, column {column}: control character #x{code:04x} "
            "is not allowed"
        )
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(unknown position)"
    what = getattr(exc, "problem", None) or getattr(exc, "context", None) or type(exc).__name__
    return f"not valid YAML at {where}: {what}"


def load_bytes(raw: bytes, file: str, problems: Problems, *, ansible: bool = False) -> Any:
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
    loader = _AnsibleLoader if ansible else _SafeLoader
    try:
        docs = list(yaml.compose_all(text, Loader=loader))
    except yaml.YAMLError as exc:
        problems.add("", _yaml_error(exc, text))
        return None
    except _Stop as stop:
        problems.add("", str(stop))
        return None
    except RecursionError:
        problems.add("", f"nested deeper than {MAX_DEPTH} levels")
        return None
    if len(docs) != 1 or docs[0] is None:
        problems.add("", f"expected one YAML document, found {len(docs)}")
        return None
    before = len(problems.items)
    try:
        _walk(docs[0], "", problems, [0], set())
    except _Stop as stop:
        problems.add("", str(stop))
        return None
    if len(problems.items) > before:
        return None
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as exc:  # e.g. a tag no safe constructor knows, an unhashable key
        problems.add("", _yaml_error(exc, text))
        return None


def load_file(path: str | Path, problems: Problems, *, ansible: bool = False) -> Any:
    try:
        # a regular file of at most MAX_BYTES: a FIFO, a device or a huge file is refused unread
        raw = read_input(path, limit=MAX_BYTES)
    except UnreadableFile as exc:
        problems.add("", exc.reason + (", expected a YAML file" if exc.kind == "folder" else ""))
        return None
    return load_bytes(raw, problems.file, problems, ansible=ansible)
