"""The package's layers (README "Layout", docs/architecture.md): import-linter's contracts in
pyproject.toml hold, and no module is in an import circle (imports inside functions included)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_import_linter_contracts_hold():
    lint_imports = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    res = subprocess.run(
        [lint_imports, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "0 broken" in res.stdout


def _circles(graph) -> list[tuple[str, ...]]:
    found = set()
    for importer in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(importer):
            if imported != importer and graph.chain_exists(importer=imported, imported=importer):
                chain = graph.find_shortest_chain(importer=imported, imported=importer)
                found.add((importer, *chain))
    return sorted(found)


def test_no_module_is_in_an_import_circle():
    circles = _circles(grimp.build_graph("miglab"))
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


def test_the_circle_check_sees_a_circle(tmp_path, monkeypatch):
    pkg = tmp_path / "circlepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from circlepkg import b  # lazy\n")
    (pkg / "b.py").write_text("from circlepkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _circles(grimp.build_graph("circlepkg")) == [
        ("circlepkg.a", "circlepkg.b", "circlepkg.a"),
        ("circlepkg.b", "circlepkg.a", "circlepkg.b"),
    ]


@pytest.mark.parametrize(
    "layer", ["core", "formats", "adapters", "cli", "sim", "mlperf/guest", "mlperf/results"]
)
def test_every_layer_says_what_it_is(layer):
    init = ROOT / "miglab" / layer / "__init__.py"
    assert init.read_text().startswith('"""'), init


def test_one_set_of_exit_codes():
    """Exit codes come from miglab.errors only: no module defines its own."""
    import re

    own = []
    for f in sorted((ROOT / "miglab").rglob("*.py")):
        if f.name == "errors.py":
            continue
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if re.match(r"\s*EXIT_\w+(\s*,\s*EXIT_\w+)*\s*=", line):
                own.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not own, own
