"""Every benchmark under bench/ still runs: its smoke mode, as a subprocess, with its results
written to a temporary file (never bench/RESULTS*.md). Only that it ran and wrote its table is
checked: nothing about timing or throughput (those numbers live in bench/RESULTS*.md)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile

import pytest

from testlib import ROOT, ansible_env

pytestmark = pytest.mark.bench

BENCH = ROOT / "bench"
TIMEOUT = 300  # seconds; each smoke mode takes well under a minute on 2 CPUs


def run_bench(script: str, *args) -> subprocess.CompletedProcess:
    p = subprocess.run(
        [sys.executable, str(BENCH / script), *map(str, args)],
        cwd=ROOT,
        env=ansible_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    tail = f"{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    assert p.returncode == 0, f"{script} exit {p.returncode}:\n{tail}"
    return p


def table_rows(text: str, header: str) -> list[str]:
    """The table rows under ``header`` (after its separator line), up to the first non-row."""
    lines = text.splitlines()
    assert header in lines, f"no table header {header!r} in:\n{text}"
    rows = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("| "):
            break
        rows.append(line)
    return rows


@pytest.fixture(autouse=True)
def committed_results_untouched():
    """A smoke run never rewrites the committed results (bench/RESULTS*.md)."""

    def digest() -> dict:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in BENCH.glob("RESULTS*")}

    before = digest()
    yield
    assert digest() == before


def test_bench_plan_quick(tmp_path):
    out = tmp_path / "RESULTS-plan.md"
    run_bench("bench_plan.py", "--quick", "--results", out)
    text = out.read_text()
    assert text.startswith("# Planning speed (quick smoke run)\n")
    rows = table_rows(
        text, "| case | scenarios | VMs | GPUs | best s | median s | planned makespan h |"
    )
    assert [r.split(" | ")[0] for r in rows] == [
        "| seed (R750xa, 4 GPUs)",
        "| 2 hosts x 4 GPUs",
        "| 8 hosts x 4 GPUs",
    ]


def test_bench_vsphere_smoke(tmp_path, vcsim_binary):
    out = tmp_path / "RESULTS.md"
    run_bench("bench_vsphere.py", "--smoke", "--results", out)
    text = out.read_text()
    assert text.startswith("# vSphere provisioning: miglab vs community.vmware (smoke run)\n")
    header = (
        "| case | VMs | miglab create s | community.vmware create s | ratio | miglab no-op s | "
        "community.vmware no-op s | reruns changed? |"
    )
    rows = table_rows(text, header)
    assert len(rows) == 1 and rows[0].startswith("| smoke: 1 host x 2 VMs | 2 | ")


def test_bench_gpu_smoke(tmp_path):
    """The onnxruntime SUT on the tiny models, on the CPU: no torch (not in the test install)."""
    out = tmp_path / "RESULTS-gpu.md"
    keep = tmp_path / "out"
    run_bench(
        "bench_gpu.py", "--smoke", "--out", keep, "--work", tmp_path / "work", "--results", out
    )
    text = out.read_text()
    assert text.startswith("# GPU bench (smoke run, SUT onnxruntime, device cpu)\n")
    rows = table_rows(text, "| run | metric | value | raw | fidelity | p99 ms | valid |")
    runs = sorted(r.split(" | ")[0].removeprefix("| ") for r in rows)
    perf = "performance/run_1"
    assert runs == [
        f"single/vm1/bert-99/Offline/{perf}",
        f"single/vm1/resnet50/Offline/{perf}",
        f"single/vm1/resnet50/Server/{perf}",
        f"ts2/vm1/resnet50/Offline/{perf}",
        f"ts2/vm2/resnet50/Offline/{perf}",
    ]
    summary = json.loads((keep / "summary.json").read_text())
    # every lab command ran to the end: 0 VALID, 1 finished but not VALID (2, 3: it broke)
    assert {k: v["rc"] in (0, 1) for k, v in summary["commands"].items()} == dict.fromkeys(
        ["resnet50/offline", "resnet50/server", "bert-99/offline", "ts2/vm1", "ts2/vm2"], True
    )
    with tarfile.open(keep / "results.tgz") as tar:
        names = tar.getnames()
    assert f"results/h200/ts2/vm2/resnet50/Offline/{perf}/miglab_run.json" in names


def test_bench_gpu_qps_search_smoke(tmp_path):
    """bench/gpu_qps_search.sh's four steps with the slice-model SUT on the CPU: the search and
    the calibration write qps_search.json, and the full runs take their targets from it."""
    out = tmp_path / "out"
    out.mkdir()
    env = {**ansible_env(), "PYTHON": sys.executable, "MIGLAB_QPS_WORK": str(tmp_path / "work")}
    p = subprocess.run(
        ["bash", str(BENCH / "gpu_qps_search.sh"), out, "resnet50", "1000", "300", "smoke"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    vm = tmp_path / "work/results/h200/single/vm1/resnet50"
    for scenario in ("Server", "Offline"):
        found = json.loads((vm / scenario / "qps_search.json").read_text())["target_qps"]
        run = json.loads((vm / scenario / "performance/run_1/miglab_run.json").read_text())
        assert run["settings"]["target_qps"] == found
        assert run["settings"]["target_qps_from"].endswith(f"{scenario}/qps_search.json")
    with tarfile.open(out / "results-resnet50.tgz") as tar:
        assert "results/h200/single/vm1/resnet50/Server/qps_search.json" in tar.getnames()


def test_bench_main_job_smoke(tmp_path):
    """Clone + the timed commands + log parsing + results file, with `miglab validate` and
    `miglab plan` in the clone: no setup, no simulated lab (the suite's own stays untouched)."""
    out = tmp_path / "RESULTS-main-job.md"
    clone = tmp_path / "clone"
    run_bench("bench_main_job.py", "--smoke", "--clone", clone, "--results", out)
    text = out.read_text()
    assert text.startswith("# README's main command on the simulated lab (smoke run")
    rows = table_rows(text, "| run | exit | wall time | target | summary |")
    assert [r.split(" | ")[:2] for r in rows] == [
        ["| first (smoke: `miglab validate`)", "0"],
        ["| repeat (smoke: `miglab plan`)", "0"],
    ]
    assert f"fits lab {clone}/inventories/sim" in rows[0]  # ran in the clone, on its lab
    logs = tmp_path / "RESULTS-main-job-logs"
    assert (logs / "first-run.log").is_file() and (logs / "repeat-run.log").is_file()
    assert (clone / ".git").is_dir()
    assert not (clone / ".venv").exists() and not (clone / ".cache").exists()


def test_job_split_reads_ansible_runner_events(tmp_path):
    """bench/job_split.py on three tasks' events as ansible-runner writes them: each task's time
    runs to the next task's start, the last to the playbook's end; parts sum to the wall time."""
    events = tmp_path / "job_events"
    events.mkdir()
    rows = [
        ("playbook_on_task_start", "2026-12-02T03:00:00.000000", "miglab.lab.mlperf",
         "Release the barrier and wait in the guest until the run has ended"),
        ("playbook_on_task_start", "2026-12-02T03:00:05.000000", "miglab.lab.guest_base",
         "Start Docker"),
        ("playbook_on_task_start", "2026-12-02T03:00:07.500000", "", "Power the wave's VMs off"),
        ("playbook_on_stats", "2026-12-02T03:00:08.000000", "", ""),
    ]  # fmt: skip
    for i, (kind, created, role, task) in enumerate(rows, 1):
        ev = {"event": kind, "created": created, "event_data": {"role": role, "task": task}}
        (events / f"{i}-{kind}.json").write_text(json.dumps(ev))
    out = run_bench("job_split.py", tmp_path).stdout
    assert "wall time 8 s" in out
    assert "| mlperf: release + run + pack | 5 |" in out
    assert "| guest roles | 2 |" in out  # 2.5 s, rounded to even
    assert "| everything else | 0 |" in out
