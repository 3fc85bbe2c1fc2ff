"""The reference backend on the CPU: real MLPerf LoadGen, the ONNX Runtime SUT, a tiny model.

The model is generated here with ``onnx.helper`` (a small conv net, seeded random weights); no
download. Runs are short and go through the command the guests run, ``python -m
miglab.mlperf.run``, in subprocesses: one VM alone (scenario s1) and two "VMs" at once (scenario
s2: two processes released by one two-phase start barrier), Offline and Server. No assertion
depends on the machine's speed: verdicts follow from query counts, values are checked
as sums. The logs are then read with the collector (``parse_run``) and summed with
``aggregate_results``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mlperf_loadgen")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from miglab.core.runs import parse_run  # noqa: E402
from miglab.mlperf.guest.backends import BackendError, get_backend, run_dir_for  # noqa: E402
from miglab.mlperf.guest.backends.reference import ReferenceSettings, load_test_settings  # noqa: E402
from miglab.mlperf.guest.sut.base import Engine, Pending  # noqa: E402
from miglab.mlperf.guest.sut.runner import Runner  # noqa: E402
from miglab.mlperf.guest.sut.tiny import make_tiny_model  # noqa: E402
from miglab.mlperf.results.aggregate import aggregate_results  # noqa: E402
from testlib import OFFLINE_COUNTED, SERVER_COUNTED, release_together  # noqa: E402

SHORT = [
    "--min-duration-ms",
    "2000",
    "--min-query-count",
    "64",
    "--performance-sample-count",
    "256",
    "--threads",
    "1",
]


def run_cmd(*args, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.run", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_cmd(*args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "miglab.mlperf.run", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("model") / "tiny-conv.onnx", "tiny-conv")


@pytest.fixture(scope="module")
def lab_results(tmp_path_factory, tiny_model):
    """results/<campaign>: s1 = one VM, s2 = two VMs at once; resnet50 Offline and Server."""
    root = tmp_path_factory.mktemp("results") / "cpu-lab"

    def scenario(sid, vms, mlperf_scenario, extra):
        barriers = [root / ".barrier" / f"{sid}-{mlperf_scenario}-{vm}" for vm in vms]
        procs = [
            start_cmd(
                "--backend", "reference", "--sut", "onnxruntime", "--model", tiny_model,
                "--benchmark", "resnet50", "--scenario", mlperf_scenario,
                "--out", root / sid / vm, "--run", "1", "--barrier-dir", barrier,
                "--vm", f"cpu-lab-{sid}-{vm}", "--lab-scenario", sid,
                "--weights-kind", "random", *extra,
            )
            for vm, barrier in zip(vms, barriers, strict=True)
        ]  # fmt: skip
        try:
            start_at = release_together(barriers, procs)
            return [(p, *p.communicate(timeout=300), start_at) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()

    # s1: the target QPS is the raw throughput the command measures before the barrier
    s1 = scenario(
        "s1", ["vm1"], "Offline", ["--raw-seconds", "1", "--warmup-seconds", "0.5",
                                   *OFFLINE_COUNTED]
    )  # fmt: skip
    out = {
        "s1-Offline": s1,
        "s2-Offline": scenario(
            "s2",
            ["vm1", "vm2"],
            "Offline",
            ["--raw-seconds", "0", "--target-qps", "1000", *OFFLINE_COUNTED],
        ),  # fmt: skip
        "s2-Server": scenario("s2", ["vm1", "vm2"], "Server", SERVER_COUNTED),
    }
    return root, out


def test_every_run_exits_valid(lab_results):
    _, out = lab_results
    for name, procs in out.items():
        for p, stdout, stderr, _ in procs:
            assert p.returncode == 0, f"{name}: {stdout}\n{stderr}"
            assert stdout.startswith("VALID resnet50"), stdout
            assert "LoadGen done" in stderr  # progress goes to stderr


def test_layout_metadata_and_collector(lab_results):
    root, out = lab_results
    run = root / "s2" / "vm2" / "resnet50" / "Server" / "performance" / "run_1"
    assert run == run_dir_for(root / "s2" / "vm2", "resnet50", "Server", "PerformanceOnly", 1)
    assert {"mlperf_log_detail.txt", "mlperf_log_summary.txt", "miglab_run.json"} <= {
        p.name for p in run.iterdir()
    }
    meta = json.loads((run / "miglab_run.json").read_text())
    assert meta["simulated"] is False
    assert (meta["backend"], meta["sut"], meta["weights"]) == ("reference", "onnxruntime", "random")
    assert meta["inputs"] == "synthetic" and meta["sut_details"]["device"].startswith("CPU")
    # the device record (issue 17): the CPU by its model, what the collector reads back
    assert meta["device"]["kind"] == "cpu" and meta["device"]["cpus"] >= 1
    assert meta["device"]["name"] and set(meta["device"]) == {"kind", "name", "cpus"}
    assert (meta["vm"], meta["scenario"], meta["run"]) == ("cpu-lab-s2-vm2", "s2", 1)
    start_at = out["s2-Server"][0][3]
    assert meta["barrier"]["start_at"] == datetime.fromtimestamp(start_at).astimezone().isoformat()
    assert meta["barrier"]["late_s"] >= 0  # recorded; how late depends on the machine
    rec = parse_run(run)
    assert rec.valid and rec.loadgen_validity == "VALID"
    assert rec.scenario == "Server" and rec.mode == "PerformanceOnly"
    # written last: the checksums of every file of the run folder, nothing left over
    from miglab.formats.manifest import MANIFEST, read_manifest, verify_run

    listed, bad = read_manifest(run / MANIFEST)
    assert not bad and {p.name for p in run.iterdir()} == set(listed) | {MANIFEST}
    assert verify_run(run) == []
    assert rec.metric == "result_completed_samples_per_sec"
    assert rec.value > 0
    assert meta["settings"]["target_qps"] == 500 and meta["settings"]["min_query_count"] == 1000
    assert rec.meta.backend == "reference" and rec.meta.weights == "random"
    assert not rec.submission_valid  # 2 s is no submission
    assert any("min_duration" in r for r in rec.submission_reasons)
    assert rec.meta.device == meta["device"]
    for why in ("random weights", "synthetic inputs", "measured on the CPU"):  # issue 17
        assert any(why in r for r in rec.submission_reasons), why
        assert any(why in r for r in meta["loadgen"]["submission_reasons"]), why
    assert meta["loadgen"]["submission_valid"] is False

    s1 = root / "s1" / "vm1" / "resnet50" / "Offline" / "performance" / "run_1"
    meta1 = json.loads((s1 / "miglab_run.json").read_text())
    rec1 = parse_run(s1)
    assert rec1.valid and rec1.metric == "result_samples_per_second"
    assert meta1["raw_throughput"] > 0
    assert meta1["fidelity"] == pytest.approx(rec1.value / meta1["raw_throughput"])
    assert meta1["settings"]["target_qps_auto"] is True


def test_concurrent_vms_are_aggregated(lab_results):
    root, _ = lab_results
    # with no minimum overlap: how much two processes on this machine overlap is its speed's
    # business (the 90 % default is tested on fixed logs, test_mlperf_aggregate.py)
    agg = aggregate_results(root, baseline="s1", min_overlap=0.0)
    assert not agg.problems
    g = agg.group("s2", "resnet50", "Offline")
    assert g is not None and g.vms == ["vm1", "vm2"]
    (r,) = g.runs
    assert r.included, r.reasons
    assert r.window_source == "power"
    assert r.overlap_fraction > 0  # one start moment for both
    assert r.total == pytest.approx(sum(r.values.values()))
    assert set(r.values) == {"vm1", "vm2"}
    assert g.improvement_pct is not None  # against s1's single VM
    server = agg.group("s2", "resnet50", "Server")
    (rs,) = server.runs
    assert rs.included and rs.overlap_fraction > 0.5  # both last their 2 s arrival schedule
    assert rs.total == pytest.approx(sum(rs.values.values()))
    assert agg.simulated is False and agg.random_weights


def test_invalid_run_exits_1_with_a_reason(tmp_path, tiny_model):
    p = run_cmd(
        "--sut",
        "onnxruntime",
        "--model",
        tiny_model,
        "--benchmark",
        "resnet50",
        "--scenario",
        "Server",
        "--out",
        tmp_path,
        "--target-qps",
        "200",
        "--target-latency-ms",
        "0.001",
        "--raw-seconds",
        "0",
        *SHORT,
    )
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith("INVALID")
    assert "not valid: LoadGen says INVALID" in p.stderr.strip().splitlines()[-1]


def test_accuracy_refused_with_random_weights(tmp_path, tiny_model):
    p = run_cmd(
        "--sut",
        "onnxruntime",
        "--model",
        "tiny-conv",
        "--benchmark",
        "resnet50",
        "--mode",
        "AccuracyOnly",
        "--out",
        tmp_path,
    )
    assert p.returncode == 2
    assert p.stderr.strip().startswith("error: AccuracyOnly needs the real model weights")
    p = run_cmd(
        "--sut", "torch", "--benchmark", "bert", "--mode", "AccuracyOnly", "--out", tmp_path
    )
    assert p.returncode == 2 and "random weights" in p.stderr
    assert not list(tmp_path.iterdir())


def test_accuracy_run_scores_top1(tmp_path):
    """AccuracyOnly over a user dataset (.npz): LoadGen's accuracy log, scored against the
    labels and gated by the benchmark's target."""
    import onnxruntime as ort

    model = make_tiny_model(tmp_path / "mlp.onnx", "tiny-mlp", seed=3)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((100, 64)).astype(np.float32)
    pred = ort.InferenceSession(str(model)).run(None, {"input": x})[0].argmax(1)
    labels = np.where(np.arange(100) < 70, pred, (pred + 1) % 10)  # 70 % right
    np.savez(tmp_path / "data.npz", input=x, labels=labels)
    p = run_cmd(
        "--sut",
        "onnxruntime",
        "--model",
        model,
        "--dataset",
        tmp_path / "data.npz",
        "--benchmark",
        "resnet50",
        "--mode",
        "AccuracyOnly",
        "--out",
        tmp_path / "vm1",
        "--raw-seconds",
        "0",
        "--target-qps",
        "1000",
        "--performance-sample-count",
        "100",
    )
    # 70 % is below ResNet50's target (76.46 % x 0.99): the run is scored, filed and fails
    assert p.returncode == 1, p.stderr
    assert "accuracy 70.000 % is below the target 75.695 %" in p.stderr
    run = tmp_path / "vm1" / "resnet50" / "Offline" / "accuracy" / "run_1"
    meta = json.loads((run / "miglab_run.json").read_text())
    assert meta["weights"] == "real" and meta["inputs"] == "real"
    acc = meta["accuracy"]
    assert (acc["samples"], acc["good"], acc["top1"], acc["passed"]) == (100, 70, 0.7, False)
    assert acc["log_dtype"] == "int64"
    assert (run / "accuracy.txt").read_text() == "accuracy=70.000%, good=70, total=100\n"


def test_existing_run_is_not_overwritten(tmp_path):
    run = run_dir_for(tmp_path, "resnet50", "Offline", "PerformanceOnly", 1)
    run.mkdir(parents=True)
    (run / "mlperf_log_detail.txt").write_text("")
    b = get_backend("reference")
    b.prepare(ReferenceSettings(sut="onnxruntime", model="tiny-mlp", raw_seconds=0, target_qps=100))
    try:
        with pytest.raises(BackendError, match="already holds a run"):
            b.run("resnet50", "Offline", "PerformanceOnly", tmp_path, 1)
    finally:
        b.close()


# --- settings --------------------------------------------------------------------------------
def test_settings_from_conf_files_and_overrides(tmp_path):
    user = tmp_path / "user.conf"
    user.write_text(
        "resnet50.Offline.target_qps = 1234\n*.Server.target_qps = 77\n"
        "*.Offline.min_duration = 5000\nbert-99.Server.target_latency = 100\n"
    )
    s = ReferenceSettings(benchmark="resnet50", user_conf=str(user))
    _, eff = load_test_settings(s, "Offline", "PerformanceOnly")
    assert eff["target_qps"] == 1234 and eff["min_duration_ms"] == 5000
    assert eff["min_query_count"] == 24576  # LoadGen's built-in mlperf.conf
    assert eff["performance_sample_count"] == 1024
    s.min_duration_ms, s.target_qps = 1500, 99.5
    _, eff = load_test_settings(s, "Offline", "PerformanceOnly")
    assert (eff["min_duration_ms"], eff["target_qps"]) == (1500, 99.5)
    b = ReferenceSettings(benchmark="bert-99", user_conf=str(user))
    _, eff = load_test_settings(b, "Server", "PerformanceOnly")
    assert eff["target_qps"] == 77 and eff["target_latency_ms"] == 100  # bert-99 key read too
    assert eff["performance_sample_count"] == 10833
    _, eff = load_test_settings(ReferenceSettings(benchmark="bert"), "Server", "PerformanceOnly")
    assert eff["target_latency_ms"] == 130 and eff["min_duration_ms"] == 600000
    with pytest.raises(BackendError, match="no such config file"):
        load_test_settings(
            ReferenceSettings(user_conf=str(tmp_path / "nope.conf")), "Offline", "PerformanceOnly"
        )
    with pytest.raises(BackendError, match="unknown benchmark"):
        load_test_settings(ReferenceSettings(benchmark="gpt5"), "Offline", "PerformanceOnly")


# --- the dynamic batcher, without LoadGen ----------------------------------------------------
class SlowEngine(Engine):
    """Each batch takes 2 ms; records the batch sizes it was given."""

    sut, device, sample_count, max_batch = "fake", "none", 100, 16

    def __init__(self):
        self.sizes: list[int] = []

    def submit(self, indices):
        self.sizes.append(len(indices))
        time.sleep(0.002)
        return Pending(len(indices), outputs=np.asarray(indices))

    def wait(self, pending):
        return pending.outputs


def test_server_batcher_batches_under_load_and_completes_everything():
    eng = SlowEngine()
    runner = Runner(eng, batch_size=16, server_batch_size=8, server_timeout_s=0.001)
    done: list[int] = []
    lock = threading.Lock()

    def complete(ids, out):
        assert list(out) == [int(i) % 100 for i in ids]
        with lock:
            done.extend(int(i) for i in ids)

    runner.start("Server", complete, on_error=pytest.fail)
    for i in range(400):  # 400 queries at about 20 k/s: far over what 2 ms batches of 1 serve
        runner.issue([i], [i % 100])
        if i % 20 == 0:
            time.sleep(0.001)
    runner.stop()
    assert sorted(done) == list(range(400))
    assert max(eng.sizes) == 8 and len(eng.sizes) < 200
    assert runner.stats()["samples"] == 400


def test_raw_throughput_uses_full_batches():
    eng = SlowEngine()
    raw = Runner(eng, batch_size=16).measure_raw(0.1, warmup_s=0)
    assert raw["batch_size"] == 16 and set(eng.sizes) == {16}
    # counts, not rates: every batch full, the rate is the samples over the measured window
    assert raw["samples"] == 16 * len(eng.sizes) and raw["samples"] > 0
    assert raw["seconds"] > 0
    assert raw["samples_per_second"] == pytest.approx(raw["samples"] / raw["seconds"])
