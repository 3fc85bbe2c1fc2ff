"""roles/mlperf/tasks/fetch.yml on this machine (the "guest" is localhost, connection local): the
tarball the run packed in the guest is fetched, checked against its manifest and swapped in; the
run it replaces goes only once the new one is in place; a run that does not match its manifest
leaves the old folder alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from miglab.formats.manifest import MANIFEST, verify_run, verify_tree, write_manifest
from miglab.mlperf.guest.run import pack
from testlib import FIXTURES, ROOT

DELL_RUN = (
    FIXTURES
    / "mlperf/inference_results_v1.1/closed/Dell/results"
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
)
PLAY = """\
- name: Fetch one run
  hosts: all
  gather_facts: false
  tasks:
    - name: The role's fetch
      ansible.builtin.include_tasks: {fetch}
"""


@pytest.fixture
def lab(tmp_path):
    guest_vm = tmp_path / "guest" / "results" / "camp" / "s1" / "vm1"
    controller_run = (
        tmp_path / "results" / "camp" / "s1" / "vm1" / "resnet50/Offline/performance/run_1"
    )
    guest_run = guest_vm / "resnet50/Offline/performance/run_1"
    guest_run.mkdir(parents=True)
    for f in ("mlperf_log_detail.txt", "mlperf_log_summary.txt"):
        shutil.copy(DELL_RUN / f, guest_run / f)
    (guest_run / "miglab_run.json").write_text('{"schema": "miglab-run/1", "run": 1}\n')
    (tmp_path / "guest-cache").mkdir()
    extra = {
        "__mlperf_tarball": str(tmp_path / "guest-cache" / "run.tar.gz"),
        "__mlperf_controller_dir": str(controller_run),
        "mlperf_controller_cache": str(tmp_path / "cache"),
        "mlperf_vm_name": "vm1",
    }
    (tmp_path / "vars.json").write_text(json.dumps(extra))
    (tmp_path / "play.yml").write_text(PLAY.format(fetch=ROOT / "roles/mlperf/tasks/fetch.yml"))
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n")

    def run():
        pack(guest_run, tmp_path / "guest-cache" / "run.tar.gz")  # as run.py --pack does
        env = dict(
            os.environ,
            ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
            ANSIBLE_NOCOLOR="1",
            PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        )
        return subprocess.run(
            [
                str(Path(sys.executable).parent / "ansible-playbook"),
                "-i",
                str(tmp_path / "hosts.yml"),
                "-v",
                "-c",
                "local",
                "-e",
                f"ansible_python_interpreter={sys.executable}",
                "-e",
                f"@{tmp_path / 'vars.json'}",
                str(tmp_path / "play.yml"),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )

    return guest_run, controller_run, run


def old_run(controller_run):
    controller_run.mkdir(parents=True)
    (controller_run / "mlperf_log_detail.txt").write_text("an earlier run\n")
    (controller_run / "old-only.txt").write_text("old\n")
    write_manifest(controller_run)


def staging(controller_run):
    return sorted(controller_run.parent.glob("run_1.fetch-*"))


def test_fetch_swaps_the_checked_run_in(lab):
    guest_run, controller_run, run = lab
    write_manifest(guest_run)
    old_run(controller_run)
    res = run()
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(p.name for p in controller_run.iterdir()) == sorted(
        p.name for p in guest_run.iterdir()
    )
    assert (controller_run / MANIFEST).read_bytes() == (guest_run / MANIFEST).read_bytes()
    assert verify_tree(controller_run.parents[5]).ok  # no staging folder, nothing left over
    assert staging(controller_run) == []


def test_fetch_writes_a_manifest_for_an_older_guest(lab):
    guest_run, controller_run, run = lab  # the guest's miglab wrote no manifest
    res = run()
    assert res.returncode == 0, res.stdout + res.stderr
    assert "wrote_manifest: true" in res.stdout
    assert verify_run(controller_run) == [] and staging(controller_run) == []
    assert not (guest_run / MANIFEST).exists()


def test_fetch_of_a_run_that_does_not_check_keeps_the_old_one(lab):
    guest_run, controller_run, run = lab
    write_manifest(guest_run)
    (guest_run / "mlperf_log_summary.txt").write_text("changed after the manifest\n")
    old_run(controller_run)
    res = run()
    assert res.returncode != 0
    out = " ".join((res.stdout + res.stderr).split())  # the yaml callback folds long lines
    assert "mlperf_log_summary.txt: checksum differs from MANIFEST.sha256" in out, out
    assert (controller_run / "old-only.txt").read_text() == "old\n"
    assert verify_run(controller_run) == []
    (stage,) = staging(controller_run)
    assert f"the fetched run stays in {stage}" in out
    kinds = [i.kind for i in verify_tree(controller_run.parents[5]).issues]
    assert kinds == ["staging"]
