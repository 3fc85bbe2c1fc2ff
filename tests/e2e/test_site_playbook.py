"""`ansible-playbook site.yml --tags validate` from the checkout, as ops teams run it: the
validate phase needs no running lab (the whole job on the simulated lab: test_sim_lab.py)."""

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
    res = _playbook("--tags", "validate", "-e", f"miglab_campaign={SEED}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "r750xa-a100-80gb-mig: 8 scenarios" in res.stdout
    assert "19 VMs" in res.stdout


def test_site_check_mode_changes_nothing():
    res = _playbook("--check", "--tags", "validate", "-e", f"miglab_campaign={SEED}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "changed=0" in res.stdout


def test_site_stops_on_bad_campaign(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(SEED.read_text().replace("runs: 3", "runs: 0"))
    res = _playbook("--tags", "validate", "-e", f"miglab_campaign={bad}")
    assert res.returncode != 0
    assert f"{bad}: mlperf.runs: must be at least 1" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr


def test_site_says_how_to_start_the_simulated_lab(tmp_path):
    """Phases that talk to the lab need it running: a clear line, not a connection error."""
    env_dir = tmp_path / "sim"  # a state folder without vcsim.json: the lab is down
    res = _playbook("--tags", "vms", "-e", f"miglab_sim_dir={env_dir}")
    assert res.returncode != 0
    assert "the simulated lab is not running: start it with `miglab sim up`" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr
