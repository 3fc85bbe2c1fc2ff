"""README's "Layout" table matches the tree: every folder at the top and every package of miglab
is named there, and every path it names exists."""

from __future__ import annotations

import re
import subprocess

from testlib import ROOT

IGNORED_TOP = {"README.md", "CHANGELOG.md", ".gitignore", ".ansible-lint", "site.yml"}


def _layout_paths() -> set[str]:
    text = (ROOT / "README.md").read_text()
    table = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    paths = set()
    for row in table.splitlines():
        if row.startswith("| `"):
            first_cell = row.split(" | ")[0]
            paths |= {p.rstrip("/") for p in re.findall(r"`([^`]+)`", first_cell)}
    return paths


def test_every_path_in_the_layout_exists():
    missing = sorted(p for p in _layout_paths() if not (ROOT / p).exists())
    assert not missing


def test_every_top_folder_and_package_is_in_the_layout():
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    top = {f.split("/")[0] for f in tracked} - IGNORED_TOP
    packages = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "miglab").glob("*/__init__.py")}
    packages |= {str(p.parent.relative_to(ROOT)) for p in (ROOT / "miglab").glob("*/*/__init__.py")}
    named = _layout_paths()

    def covered(path: str) -> bool:  # the path itself or a folder above it is named
        return any(path == n or path.startswith(n + "/") for n in named)

    def has_named_part(folder: str) -> bool:  # a top folder may be described by its parts
        return covered(folder) or any(n.startswith(folder + "/") for n in named)

    assert not sorted(f for f in top if not has_named_part(f))
    assert not sorted(p for p in packages if not covered(p))
