"""Pieces of the main job (site.yml, `miglab run`) that need no lab: the plan -> VM spec filter,
which runs are still missing, campaign-wide progress and ETA, and `miglab run`'s refusal to start
over collected results."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest
from ansible.errors import AnsibleFilterError

from miglab.adapters.inventory import load_checked
from miglab.adapters.runner import Progress
from miglab.core.planning import plan_campaign, vm_spec
from testlib import FIXTURES, ROOT, SEED, collection_module, run_cli

DELL_OFFLINE = (
    FIXTURES
    / "mlperf/inference_results_v1.1/closed/Dell/results"
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
)


def run_cli_module(module, *args):
    return subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=120
    )


def _filters(name):
    mod = collection_module(f"plugins.filter.{name}")
    return mod.FilterModule().filters()


@pytest.fixture(scope="module")
def seed_plan():
    return plan_campaign(*load_checked(SEED, ROOT / "inventories" / "sim")).as_json()


def test_plan_carries_the_mlperf_matrix(seed_plan):
    assert seed_plan["mlperf"] == {
        "benchmarks": ["resnet50", "bert-99"],
        "scenarios": ["Offline"],
        "runs": 3,
        "baseline": "s1",
        "min_duration_s": 600,
    }


def test_vm_spec_from_the_plan(seed_plan):
    s6 = next(s for s in seed_plan["scenarios"] if s["id"] == "s6")
    specs = [vm_spec(v) for v in s6["vms"]]
    assert specs[0] == {
        "name": "r750xa-a100-80gb-mig-s6-vm1",
        "host": "esxi-01.sim.miglab.test",
        "vcpus": 32,
        "memory_gb": 64,
        "vgpus": ["grid_a100d-4-40c"],
        "mmio_gb": 64,
    }
    assert [s["vgpus"] for s in specs] == [
        ["grid_a100d-4-40c"],
        ["grid_a100d-2-20c"],
        ["grid_a100d-1-10c"],
    ]


def test_vgpu_vm_item_filter(seed_plan):
    item = _filters("lab")["vgpu_vm_item"]
    vm = seed_plan["scenarios"][0]["vms"][0]
    assert item(vm) == vm_spec(vm)
    with pytest.raises(AnsibleFilterError, match="no host"):
        item({"name": "x", "vgpu_type": "t", "vcpus": 1, "memory_gb": 1})
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        item(["x"])


def test_missing_runs(tmp_path):
    f = _filters("mlperf")
    matrix = f["mlperf_matrix"](["resnet50"], ["Offline"], 2)
    vm_dir = tmp_path / "camp" / "s1" / "vm1"
    assert f["mlperf_missing_runs"](matrix, vm_dir) == matrix
    run1 = vm_dir / "resnet50/Offline/performance/run_1"
    shutil.copytree(DELL_OFFLINE, run1)
    assert f["mlperf_missing_runs"](matrix, vm_dir) == [matrix[1]]


def test_progress_counts_rounds_and_skipped_waves():
    p = Progress(rounds_total=4)

    def ok(res):
        return {"event": "runner_on_ok", "event_data": {"host": "h", "res": res}}

    p.feed(ok({"miglab_progress": {"skipped": 2}}))
    assert p.eta_s() is None and "MLPerf rounds 2/4" in p.line()
    p.feed({"event": "playbook_on_task_start", "event_data": {"role": "miglab.lab.mlperf"}})
    p.feed(ok({"miglab_progress": {"done": 1, "total": 2}}))
    assert p.rounds_done == 1 and "MLPerf rounds 3/4" in p.line() and "ETA" in p.line()
    p.feed(ok({"miglab_progress": {"done": 2, "total": 2}}))
    assert p.eta_s() == 0.0


def test_run_refuses_to_start_over_collected_results(tmp_path):
    run1 = tmp_path / "r750xa-a100-80gb-mig" / "s1" / "vm1" / "resnet50/Offline/performance/run_1"
    shutil.copytree(DELL_OFFLINE, run1)
    res = run_cli("run", str(SEED), "--results-dir", str(tmp_path))
    assert res.returncode == 2
    assert "--resume" in res.stderr and "--fresh" in res.stderr
    assert "Traceback" not in res.stderr


def test_progress_phases_from_play_names_and_roles():
    p = Progress()

    def play(name):
        p.feed({"event": "playbook_on_play_start", "event_data": {"play": name}})
        return p.phase

    def task(name, role=""):
        p.feed({"event": "playbook_on_task_start", "event_data": {"task": name, "role": role}})
        return p.phase

    assert play("Validate the campaign and plan the lab") == "validate"
    assert play("ESXi hosts (rolling)") == "hosts"
    assert play("Create the campaign's VMs") == "vms"
    assert play("Benchmark the campaign, wave by wave") == "guests"
    assert task("Start Docker", "miglab.lab.guest_base") == "guests"
    assert task("Start the run", "miglab.lab.mlperf") == "mlperf"
    assert play("Write the campaign report") == "report"
    assert play("Remove the campaign's VMs") == "teardown"


def test_two_phase_barrier(tmp_path):
    import threading

    from miglab.mlperf.guest.backends import BackendError
    from miglab.mlperf.guest.run import await_go

    def release():
        while not (tmp_path / "state").exists():
            time.sleep(0.01)
        (tmp_path / "go").write_text("1234.5\n")

    t = threading.Thread(target=release)
    t.start()
    assert await_go(tmp_path, 10) == 1234.5
    t.join()
    assert (tmp_path / "state").read_text() == "ready\n"
    (tmp_path / "go").unlink()
    with pytest.raises(BackendError, match="no start moment"):
        await_go(tmp_path, 0.2)


def test_a_sut_that_fails_says_so_at_the_barrier(tmp_path):
    res = run_cli_module(
        "miglab.mlperf.run", "--sut", "onnxruntime", "--model", str(tmp_path / "missing.onnx"),
        "--benchmark", "resnet50", "--out", str(tmp_path / "out"),
        "--barrier-dir", str(tmp_path / "b"),
    )  # fmt: skip
    assert res.returncode == 2
    assert (tmp_path / "b" / "state").read_text().startswith("failed: ")


def test_a_second_run_against_a_lab_in_use_is_refused(tmp_path):
    """`miglab run` holds a lock per lab inventory; a second one is refused before it touches
    anything (exit 3), naming who holds the lab."""
    import json as _json
    import socket

    from miglab.adapters.lock import lock_path

    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / "hosts.yml").write_text((ROOT / "inventories/sim/hosts.yml").read_text())
    path = lock_path(str(lab), ROOT / ".cache" / "locks")
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        info = {"pid": holder.pid, "host": socket.gethostname(), "started": time.time(),
                "command": "miglab run campaigns/x.yml"}  # fmt: skip
        path.write_text(_json.dumps(info))
        res = run_cli("run", str(SEED), "-i", str(lab), "--results-dir", str(tmp_path / "r"))
        assert res.returncode == 3, res.stderr
        assert f"pid {holder.pid}" in res.stderr and "miglab run campaigns/x.yml" in res.stderr
        assert not (tmp_path / "r").exists() and "Traceback" not in res.stderr
    finally:
        holder.kill()
        holder.wait()
        path.unlink(missing_ok=True)


def test_campaign_plan_runs_inside_a_play(tmp_path):
    """miglab.lab.campaign_plan reads the lab inventory with ansible-core: it must run in the
    controller's process (an action plugin), where a module's process cannot import ansible-core
    (a module failed with "No module named 'ansible.module_utils.common.sentinel'")."""
    import os
    from pathlib import Path

    play = tmp_path / "plan.yml"
    play.write_text(
        "- name: Plan\n  hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - name: Validate and plan the seed\n      miglab.lab.campaign_plan:\n"
        f"        campaign: {SEED}\n        inventory: {ROOT / 'inventories/sim/hosts.yml'}\n"
        "      register: plan\n"
        "    - name: Show it\n      ansible.builtin.debug:\n"
        "        msg: \"scenarios {{ plan.plan.scenarios | map(attribute='id') | join(',') }}\"\n"
    )
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    res = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
         "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", str(play)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "scenarios s1,s2,s3,s4,s5,s6,s7,s8" in res.stdout
