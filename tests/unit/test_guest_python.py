"""Code that runs inside the guests is checked with vermin against the oldest Python it must run
on, both taken from miglab.core.guest_support:

* the guest modules (plugins/modules that the guest roles call and that no action plugin runs on
  the controller) and the module_utils they import run on the guest's python3 under Ansible:
  GUEST_MODULE_PYTHON (3.8), which the module_utils' docstring claims;
* the MLPerf guest side (miglab.mlperf.guest) and everything of the package it imports run in
  the venv the mlperf role makes from the guest's python3: the oldest supported guest's Python
  (Debian 12: 3.11)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from miglab.core.guest_support import (
    GUEST_MODULE_PYTHON,
    SUPPORTED_GUESTS,
    oldest_guest_python,
    version_tuple,
)
from testlib import ROOT

GUEST_ROLES = ("guest_base", "guest_vgpu_driver", "guest_container_toolkit", "mlperf")
MODULE_UTILS = "ansible_collections.miglab.lab.plugins.module_utils."


def _guest_modules() -> list[Path]:
    """The collection's modules the guest roles call that run on the guest (a module with an
    action plugin of the same name runs on the controller), and the module_utils they import."""
    used = set()
    for role in GUEST_ROLES:
        for path in (ROOT / "roles" / role).glob("*/*.yml"):
            used |= set(re.findall(r"^\s*-?\s*miglab\.lab\.(\w+):", path.read_text(), re.M))
    modules = [
        ROOT / "plugins" / "modules" / f"{name}.py"
        for name in sorted(used)
        if (ROOT / "plugins" / "modules" / f"{name}.py").exists()
        and not (ROOT / "plugins" / "action" / f"{name}.py").exists()
    ]
    utils = set()
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(MODULE_UTILS):
                utils.add(ROOT / "plugins" / "module_utils" / f"{node.module.rsplit('.', 1)[1]}.py")
    return modules + sorted(utils)


def _module_file(name: str) -> Path | None:
    path = ROOT / Path(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.exists():
            return candidate
    return None


def _guest_side_files() -> list[Path]:
    """miglab.mlperf.guest and its import closure within miglab (imports anywhere in a file,
    lazy ones too), with the packages above each module: importing a module runs them."""
    todo = ["miglab.mlperf.guest"] + [
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "miglab" / "mlperf" / "guest").rglob("*.py")
    ]
    seen: dict[str, Path] = {}
    while todo:
        name = todo.pop().removesuffix(".__init__")
        path = _module_file(name)
        if name in seen or path is None:
            continue
        seen[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.split(".")[0] == "miglab"]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                if base.split(".")[0] == "miglab":
                    todo += [base] + [f"{base}.{a.name}" for a in node.names]
    return sorted(seen.values())


CLAIMS = {
    "guest modules": (GUEST_MODULE_PYTHON, _guest_modules, []),
    # Annotations are evaluated here (dataclasses, typing.get_type_hints): vermin counts them.
    "MLPerf guest side": (oldest_guest_python(), _guest_side_files, ["--eval-annotations"]),
}


def _vermin(target: str, paths, *options: str) -> subprocess.CompletedProcess:
    """vermin's command (vermin 1.9 has no ``python -m vermin``), from the test extras."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "vermin"), f"-t={target}-", "--violations", "--no-tips",
         *options, *map(str, paths)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_guest_code_is_found():
    names = {p.relative_to(ROOT).as_posix() for p in _guest_modules()}
    assert {
        "plugins/modules/docker_daemon_json.py",
        "plugins/modules/nvidia_driver_info.py",
        "plugins/modules/nvidia_driver_users.py",
        "plugins/module_utils/miglab_guest.py",
    } <= names
    files = {p.relative_to(ROOT).as_posix() for p in _guest_side_files()}
    assert {"miglab/__init__.py", "miglab/mlperf/__init__.py", "miglab/core/process.py"} <= files
    assert {"miglab/mlperf/guest/run.py", "miglab/formats/loadgen.py"} <= files
    assert not any(f.startswith(("miglab/cli/", "miglab/adapters/", "miglab/sim/")) for f in files)


@pytest.mark.parametrize("what", sorted(CLAIMS))
def test_guest_code_runs_on_the_oldest_python_it_claims(what):
    target, files, options = CLAIMS[what]
    res = _vermin(target, files(), *options)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_claims_fit_the_supported_guests():
    """The modules' target is no newer than any supported guest's python3 and no older than the
    oldest target Python of the ansible-core the project installs (the guests must run it); the
    module_utils' docstring states the same target."""
    from ansible.module_utils.basic import _PY_MIN

    assert version_tuple(GUEST_MODULE_PYTHON) <= version_tuple(oldest_guest_python())
    assert min(version_tuple(g.python) for g in SUPPORTED_GUESTS) >= _PY_MIN
    assert version_tuple(GUEST_MODULE_PYTHON) >= (3, 7)  # ansible-core 2.17's oldest target
    doc = ast.get_docstring(ast.parse((ROOT / "plugins/module_utils/miglab_guest.py").read_text()))
    assert f"Python {GUEST_MODULE_PYTHON}+" in " ".join(doc.split())


def test_guest_modules_postpone_annotations():
    """The modules are checked without --eval-annotations: with ``from __future__ import
    annotations`` Python never evaluates them (nothing calls get_type_hints on a module), so
    ``tuple[str, str]`` in a signature is fine on 3.8."""
    files = [
        p for p in _guest_modules() if "from __future__ import annotations" not in p.read_text()
    ]
    assert not files


@pytest.mark.parametrize(
    ("code", "newer"),
    [
        ("def f(x):\n    match x:\n        case 1:\n            return 'one'\n", "3.10"),
        ("try:\n    pass\nexcept* ValueError:\n    pass\n", "3.11"),
        ("type Pair = tuple[int, int]\n", "3.12"),
        ("import itertools\n\nprint(list(itertools.batched('abcd', 2)))\n", "3.12"),
    ],
)
def test_the_check_sees_newer_python(tmp_path, code, newer):
    """A file that needs Python ``newer`` fails the check one release below it and passes at it."""
    path = tmp_path / "newer.py"
    path.write_text(code)
    older = f"3.{int(newer.split('.')[1]) - 1}"
    res = _vermin(older, [path], "--eval-annotations")
    assert res.returncode == 1 and "Target versions not met" in res.stdout, res.stdout
    assert _vermin(newer, [path], "--eval-annotations").returncode == 0
