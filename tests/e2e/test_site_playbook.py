"""`ansible-playbook site.yml` from the checkout, as ops teams run it (validate phase today)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testlib import ROOT, SEED

pytestmark = pytest.mark.e2e


def _playbook(*args: str) -> subprocess.CompletedProcess:
    bindir = Path(sys.executable).parent
    exe = shutil.which("ansible-playbook", path=str(bindir)) or "ansible-playbook"
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        PATH=f"{bindir}:{os.environ.get('PATH', '')}",
    )
    return subprocess.run(
        [exe, "site.yml", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_site_validates_and_plans_the_seed():
    res = _playbook("-e", f"miglab_campaign={SEED}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "r750xa-a100-80gb-mig: 8 scenarios" in res.stdout
    assert "19 VMs" in res.stdout


def test_site_check_mode_changes_nothing():
    res = _playbook("--check", "-e", f"miglab_campaign={SEED}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "changed=0" in res.stdout


def test_site_stops_on_bad_campaign(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(SEED.read_text().replace("runs: 3", "runs: 0"))
    res = _playbook("-e", f"miglab_campaign={bad}")
    assert res.returncode != 0
    assert f"{bad}: mlperf.runs: must be at least 1" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr
