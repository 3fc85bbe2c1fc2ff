"""Code that runs inside the guests is checked (vermin) against the oldest Python it claims: the
guest modules and their module_utils run on the guest's own Python (Ubuntu 20.04: 3.8), the
MLPerf guest side in the venv the mlperf role builds (the package's requires-python, 3.11)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testlib import ROOT

GUEST_MODULES = ["docker_daemon_json", "nvidia_driver_info"]
CLAIMS = {
    "3.8": [
        ROOT / "plugins" / "module_utils" / "miglab_guest.py",
        *(ROOT / "plugins" / "modules" / f"{m}.py" for m in GUEST_MODULES),
    ],
    "3.11": [
        ROOT / "miglab" / "mlperf" / "guest",
        ROOT / "miglab" / "formats",
        ROOT / "miglab" / "core" / "process.py",
    ],
}


def _vermin(target: str, paths) -> subprocess.CompletedProcess:
    vermin = shutil.which("vermin") or str(Path(sys.executable).parent / "vermin")
    return subprocess.run(
        [vermin, f"-t={target}-", "--violations", "--no-tips", *map(str, paths)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("target", sorted(CLAIMS))
def test_guest_code_runs_on_the_oldest_python_it_claims(target):
    res = _vermin(target, CLAIMS[target])
    assert res.returncode == 0, res.stdout + res.stderr


def test_guest_modules_postpone_annotations():
    """vermin does not read annotations; with ``from __future__ import annotations`` Python never
    evaluates them either, so ``list[str]`` in a signature is fine on 3.8."""
    files = [p for p in CLAIMS["3.8"] if "from __future__ import annotations" not in p.read_text()]
    assert not files


def test_the_check_sees_newer_syntax(tmp_path):
    newer = tmp_path / "newer.py"
    newer.write_text("def f(x):\n    match x:\n        case 1:\n            return 'one'\n")
    assert _vermin("3.8", [newer]).returncode != 0
