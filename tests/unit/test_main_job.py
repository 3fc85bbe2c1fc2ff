"""Pieces of the main job (site.yml, `miglab run`) that need no lab: the plan -> VM spec filter,
which runs are still missing, campaign-wide progress and ETA, and `miglab run`'s refusal to start
over collected results."""

from __future__ import annotations

import json
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
        # Offline calibration per MIG profile (the seed's qps_search: true), no accuracy or
        # compliance rounds (they need real weights and data)
        "qps_search": {
            "min_duration_ms": 10000,
            "min_query_count": 1000,
            "tolerance": 0.02,
            "max_trials": 12,
        },
        "accuracy": False,
        "compliance": [],
        "backend": "reference",  # LoadGen + miglab's SUT; nvidia: NVIDIA's harness
        "harness": None,
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
        "gpu": 1,
        "mig_slot": 0,
    }
    # the layout first fit gives when they power on largest first (real-lab notes V2)
    assert [(s["gpu"], s["mig_slot"]) for s in specs] == [(1, 0), (1, 4), (1, 6)]
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


def test_incomplete_rounds_are_those_the_report_would_not_sum(tmp_path):
    """The wave check of playbooks/benchmark.yml: a round is done only when every VM of the
    campaign scenario has it VALID and the VMs ran it at once; a VM VALID on its own whose peer
    ran at another time redoes it (a campaign that could never complete on resume before)."""
    f = _filters("mlperf")
    matrix = f["mlperf_matrix"](["resnet50"], ["Offline"], 2)
    peers = [tmp_path / "camp" / "s6" / vm for vm in ("vm1", "vm2")]
    assert [c["state"] for c in f["mlperf_incomplete_rounds"](matrix, peers)] == ["missing"] * 2
    for vm in peers:
        shutil.copytree(DELL_OFFLINE, vm / "resnet50/Offline/performance/run_1")
    assert f["mlperf_incomplete_rounds"](matrix, peers) == [
        {**matrix[1], "state": "missing", "reasons": ["vm1: no LoadGen log", "vm2: no LoadGen log"]}
    ]
    # vm2's run_2 is VALID, but from a day earlier than vm1's (test_datetime and power times)
    for vm, day in (("vm1", "07"), ("vm2", "06")):
        run2 = peers[vm == "vm2"] / "resnet50/Offline/performance/run_2"
        shutil.copytree(DELL_OFFLINE, run2)
        log = run2 / "mlperf_log_detail.txt"
        log.write_text(log.read_text().replace("08-07-2021 ", f"08-{day}-2021 ")
                       .replace("2021-08-07T", f"2021-08-{day}T"))  # fmt: skip
    (late,) = f["mlperf_incomplete_rounds"](matrix, peers)
    assert (late["run"], late["state"]) == (2, "not concurrent")
    assert late["reasons"][0].startswith("not concurrent: run windows do not overlap (power")
    assert f["mlperf_round_checks"](matrix, peers)[0]["state"] == "complete"


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


@pytest.mark.parametrize(("fixed_after", "passes"), [(None, ["4.0", "8.0"]), (1, ["4.0"]), (0, [])])
def test_rounds_whose_vms_did_not_run_at_once_are_redone_with_a_longer_margin(
    tmp_path, fixed_after, passes
):
    """roles/mlperf/tasks/redo.yml in a play, with runs.yml replaced by a stub that notes each
    pass (its margin and what it redoes) and, after ``fixed_after`` passes, makes the round
    concurrent (the redo worked). Deterministic: the round is made not concurrent by editing
    vm2's timestamps a day back, not by a slow start. At most mlperf_concurrency_retries passes,
    twice the margin each; none when the round is concurrent already."""
    import os
    from pathlib import Path

    peers = [tmp_path / "res" / "camp" / "s6" / vm for vm in ("vm1", "vm2")]
    for vm in peers:
        shutil.copytree(DELL_OFFLINE, vm / "resnet50/Offline/performance/run_1")
    log = peers[1] / "resnet50/Offline/performance/run_1/mlperf_log_detail.txt"
    good = log.read_text()
    if fixed_after != 0:
        log.write_text(good.replace("08-07-2021 ", "08-06-2021 "))
    good_copy = tmp_path / "good.txt"
    good_copy.write_text(good)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    shutil.copy(ROOT / "roles/mlperf/tasks/redo.yml", tasks / "redo.yml")
    noted = tmp_path / "passes.txt"
    (tasks / "runs.yml").write_text(
        "- name: Note the pass\n  ansible.builtin.shell: >-\n"
        f"    echo '{{{{ __mlperf_margin_s }}}} {{{{ __mlperf_redo | join(\",\") }}}}' >> {noted}\n"
        "  changed_when: true\n"
        "- name: The redo worked\n  ansible.builtin.copy:\n"
        f"    src: {good_copy}\n    dest: {log}\n    mode: '0644'\n"
        f"  when: {fixed_after or 0} > 0 and __mlperf_redo_pass | int >= {fixed_after or 0}\n"
    )
    play = tmp_path / "play.yml"
    play.write_text(
        "- name: Redo\n  hosts: localhost\n  gather_facts: false\n  vars:\n"
        "    mlperf_concurrency_retries: 2\n    mlperf_barrier_margin_s: 2\n"
        "    mlperf_lab_scenario: s6\n"
        "    __mlperf_matrix: [{benchmark: resnet50, scenario: Offline, run: 1}]\n"
        f"    __mlperf_peer_dirs: {json.dumps([str(p) for p in peers])}\n"
        f"    __mlperf_vm_results: {peers[0]}\n"
        "  tasks:\n"
        "    - name: Count the passes from zero\n      ansible.builtin.set_fact:\n"
        "        __mlperf_redo_pass: 0\n"
        f"    - name: Redo\n      ansible.builtin.include_tasks: {tasks / 'redo.yml'}\n"
    )
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    res = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
         "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}", str(play)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    lines = noted.read_text().split("\n")[:-1] if noted.exists() else []
    assert lines == [f"{m} not concurrent" for m in passes]
    said = " ".join(res.stdout.split())  # the YAML callback wraps long lines
    if passes:
        assert (
            "s6: redoing 1 round(s) in all its VMs (pass 1 of 2, start margin 4.0 s): not "
            "concurrent: run windows do not overlap (power timestamps): vm2 ended "
            "2021-08-06T15:07:13" in said
        )
