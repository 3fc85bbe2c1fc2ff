"""Python embedded in playbooks, roles and molecule scenarios (inline ``python -c`` scripts) imports
only names the package has: code moved in the package cannot leave such an import behind, which
would otherwise show only when that scenario runs (molecule, minutes into the suite)."""

from __future__ import annotations

import importlib
import re

from testlib import ROOT

IMPORT_RE = re.compile(r"^\s*from (miglab(?:\.\w+)+) import ([\w, ]+?)\s*$", re.M)
PLACES = ("roles", "playbooks", "tests/molecule", "miglab/sim", "scripts")
SUFFIXES = {".yml", ".yaml", ".j2", ".sh"}


def _embedded_imports() -> list[tuple[str, str, str]]:
    found = []
    for place in PLACES:
        for path in sorted((ROOT / place).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            for m in IMPORT_RE.finditer(path.read_text(errors="replace")):
                for name in m.group(2).split(","):
                    found.append((str(path.relative_to(ROOT)), m.group(1), name.strip()))
    return found


def test_every_embedded_import_names_something_the_package_has():
    found = _embedded_imports()
    assert any(f.startswith("roles/mlperf/molecule/") for f, _, _ in found)  # not vacuous
    missing = []
    for file, module, name in found:
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{file}: {module}: {exc}")
            continue
        if not hasattr(mod, name):
            missing.append(f"{file}: from {module} import {name}: no such name")
    assert not missing
