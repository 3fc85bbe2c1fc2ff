"""Search runs with the real MLPerf LoadGen against a SUT of modelled latency.

The SUT answers each query after a fixed service time on one worker (batch 1, one batch in
flight): its latency is at least that time, and far above its capacity the queue grows without
bound. Trials are chosen where the verdict does not depend on the machine's speed: 30 % of the
capacity (p99 a few ms against BERT's 130 ms bound), 3x the capacity (a backlog of seconds), or
a service time over the bound. Assertions are on verdicts and the recorded structure only.
"""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("mlperf_loadgen")

from miglab.mlperf.guest.backends import BackendError  # noqa: E402
from miglab.mlperf.guest.backends.reference import (  # noqa: E402
    ReferenceBackend,
    ReferenceSettings,
)
from miglab.mlperf.guest.qps_search import (  # noqa: E402
    SearchOptions,
    calibrate_offline,
    search_path,
    search_server,
    stored_target,
)
from miglab.mlperf.guest.run import build_parser  # noqa: E402
from miglab.mlperf.guest.sut.base import Engine, Pending  # noqa: E402
from miglab.mlperf.guest.sut.runner import Runner  # noqa: E402


class FixedServiceEngine(Engine):
    sut, device, max_batch, sample_count = "fake", "none", 1, 64

    def __init__(self, service_s: float):
        self.service_s = service_s

    def submit(self, indices):
        time.sleep(self.service_s)
        return Pending(len(indices), outputs=None)

    def wait(self, pending):
        return None


def backend_with(service_s: float, **kw) -> ReferenceBackend:
    b = ReferenceBackend()
    b.settings = ReferenceSettings(
        benchmark="bert-99",
        scenario="Server",
        sut="onnxruntime",
        raw_seconds=0,
        performance_sample_count=64,
        meta={"vm": "vm1", "profile": "MIG-1g.18gb"},
        **kw,
    )
    b.engine = FixedServiceEngine(service_s)
    b.runner = Runner(b.engine, batch_size=1, server_batch_size=1, server_timeout_s=0)
    b.runner.max_inflight = 1
    return b


def test_server_search_finds_the_valid_target_and_full_runs_use_it(tmp_path):
    b = backend_with(0.002, min_duration_ms=200, min_query_count=20)  # capacity 500 QPS
    opts = SearchOptions(min_duration_ms=500, min_query_count=500, max_trials=2, growth=10)
    opts.start_qps = 150.0
    path = search_server(b, "bert-99", tmp_path, opts)
    assert (
        path
        == tmp_path / "bert-99" / "Server" / "qps_search.json"
        == search_path(tmp_path, "bert-99")
    )
    doc = json.loads(path.read_text())
    assert doc["schema"] == "miglab-qps-search/1" and "not results" in doc["kind"]
    assert doc["profile"] == "MIG-1g.18gb" and doc["vm"] == "vm1"
    assert doc["latency_bound_ms"] == 130.0
    assert doc["settings"]["min_query_count"] == 500 and doc["date"]
    trials = doc["trials"]
    assert [t["target_qps"] for t in trials] == [150.0, 1500.0]
    assert [t["valid"] for t in trials] == [True, False]
    assert "bound" in trials[1]["reason"] or "INVALID" in trials[1]["reason"]
    assert doc["target_qps"] == 150.0 and set(trials[0]) == {
        "target_qps",
        "valid",
        "reason",
        "p99_ms",
    }
    # search runs leave no LoadGen logs in the results tree
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["qps_search.json"]
    # a full run without a target QPS uses the stored one, and says where it came from
    run_dir = b.run("bert-99", "Server", "PerformanceOnly", tmp_path, 1)
    meta = json.loads((run_dir / "miglab_run.json").read_text())
    assert meta["settings"]["target_qps"] == 150.0
    assert meta["settings"]["target_qps_from"] == str(path)
    # another profile's search is not used
    assert stored_target(tmp_path, "bert-99", "Server", "MIG-7g.141gb") is None
    assert stored_target(tmp_path, "bert-99", "Server", "MIG-1g.18gb") == (150.0, str(path))


def test_nothing_valid_is_an_error_and_recorded(tmp_path):
    b = backend_with(0.2)  # every answer takes 200 ms: over BERT's 130 ms bound
    opts = SearchOptions(min_duration_ms=100, min_query_count=3, max_trials=1, start_qps=20.0)
    with pytest.raises(BackendError, match="no target QPS was VALID"):
        search_server(b, "bert-99", tmp_path, opts)
    doc = json.loads(search_path(tmp_path, "bert-99").read_text())
    assert doc["target_qps"] is None and "no target QPS was VALID" in doc["error"]
    assert len(doc["trials"]) == 1 and doc["trials"][0]["valid"] is False
    assert stored_target(tmp_path, "bert-99", "Server", "MIG-1g.18gb") is None


def test_offline_calibration_stores_the_expected_qps(tmp_path):
    b = backend_with(0.002)
    opts = SearchOptions(min_duration_ms=200, min_query_count=1, start_qps=100.0)
    path = calibrate_offline(b, "bert-99", tmp_path, opts)
    doc = json.loads(path.read_text())
    assert path == search_path(tmp_path, "bert-99", "Offline")
    assert doc["measured_samples_per_second"] > 0
    assert doc["target_qps"] == pytest.approx(doc["measured_samples_per_second"] * 1.1)
    assert stored_target(tmp_path, "bert-99", "Offline", None)[0] == doc["target_qps"]


def test_run_options():
    a = build_parser().parse_args(
        ["--sut", "torch", "--benchmark", "resnet50", "--scenario", "Server", "--out", "o"]
        + ["--qps-search", "--search-min-duration-ms", "5000", "--search-max-trials", "8"]
    )
    assert a.qps_search and a.search_min_duration_ms == 5000 and a.search_max_trials == 8
    assert a.search_tolerance == 0.02 and a.search_start_qps is None
