"""Search, performance and compliance rounds of the mlperf role, end to end on this machine with
the real LoadGen and the slice-model SUT (SIMULATED: it sleeps instead of computing): the rounds
the role plans (plugins/filter/mlperf.py) run in one guest session
(``python -m miglab.mlperf.guest.session``) released round by round through the barrier as
roles/mlperf/tasks/run.yml does; the "controller" keeps the search per profile, hands the target
to a second VM of the same profile, files each run where the role does, verifies TEST04 against
its run_1 and reports it. Two VMs (2g.20gb), ResNet50 Offline: about 20 s."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from miglab.mlperf.results.aggregate import aggregate_results
from miglab.mlperf.results.report import write_report
from testlib import collection_module

pytest.importorskip("mlperf_loadgen")

PY = [sys.executable, "-m"]


def _run(*argv, timeout=120):
    res = subprocess.run([*PY, *argv], capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res


def _session(f, tmp_path, vm, searcher, search_dir, matrix):
    guest = tmp_path / "guest" / vm / "results"
    out = guest / "camp" / "s7" / vm
    opts = {"backend": "reference", "sut": "slice-model", "mode": "PerformanceOnly",
            "out": str(out), "profile": "2g.20gb", "vm": vm, "lab_scenario": "s7",
            "simulated": True, "overwrite": True, "raw_seconds": 0}  # fmt: skip
    rounds = f["mlperf_session_rounds"](
        matrix, opts, str(guest / ".barrier" / f"w-s7-{vm}"),
        extra_args=["--min-duration-ms", "1000", "--min-query-count", "1"],
        searcher=searcher, search_dir=str(search_dir),
        search_options={"min_duration_ms": 1000, "min_query_count": 1},
    )  # fmt: skip
    live = [r for r in rounds if r]
    if live:
        _run("miglab.mlperf.guest.session", "start", "--rounds",
             json.dumps([r["argv"] for r in live]), "--stop", str(guest / "stop"),
             "--log", str(guest / "session.log"))  # fmt: skip
    return out, rounds


def _release(r):
    _run("miglab.mlperf.guest.barrier", "ready", r["barrier_dir"], "--timeout", "60")
    _run("miglab.mlperf.guest.barrier", "release", r["barrier_dir"], str(time.time() + 0.5),
         "--timeout", "120")  # fmt: skip


def _collect(r, controller_vm):
    """What fetch.yml does, without the manifest swap: unpack the packed run where it is filed."""
    dest = controller_vm / r["dir"]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(r["tarball"]) as tar:
        tar.extractall(dest.parent, filter="data")
    assert dest.is_dir()


def test_search_then_runs_then_compliance(tmp_path):
    f = collection_module("plugins.filter.mlperf").FilterModule().filters()
    matrix = f["mlperf_matrix"](["resnet50"], ["Offline"], 1, qps_search=True,
                                compliance=["TEST04"])  # fmt: skip
    results = tmp_path / "results" / "camp"
    search_dir = results / "qps_search" / "2g.20gb"
    started = time.monotonic()
    g1, r1 = _session(f, tmp_path, "vm1", True, search_dir, matrix)
    g2, r2 = _session(f, tmp_path, "vm2", False, search_dir, matrix)
    assert [r["kind"] if r else None for r in r1] == ["search", "performance", "compliance"]
    assert r2[0] is None  # one search per profile: vm1's
    search, perf1, test1 = r1
    _release(search)
    # the controller keeps it per profile (fetch.yml) and gives it to vm2 (searched.yml)
    kept = search_dir / search["dir"]
    kept.parent.mkdir(parents=True)
    shutil.copy(g1 / search["dir"], kept)
    (target,) = f["mlperf_searched_targets"](matrix, str(search_dir))
    doc = json.loads(kept.read_text())
    assert doc["profile"] == "2g.20gb" and doc["target_qps"] == target["target_qps"] > 0
    (g2 / target["dir"]).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(kept, g2 / target["dir"])
    # both VMs run run_1 and TEST04 at once, at the searched target
    for pair in ((perf1, r2[1]), (test1, r2[2])):
        for r in pair:
            _run("miglab.mlperf.guest.barrier", "ready", r["barrier_dir"], "--timeout", "60")
        at = str(time.time() + 0.5)
        procs = [subprocess.Popen([*PY, "miglab.mlperf.guest.barrier", "release",
                                   r["barrier_dir"], at, "--timeout", "120"])
                 for r in pair]  # fmt: skip
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
    for vm, rounds in (("vm1", r1), ("vm2", r2)):
        cvm = results / "s7" / f"camp-s7-{vm}"
        for r in rounds[1:]:
            _collect(r, cvm)
        meta = json.loads((cvm / rounds[1]["dir"] / "miglab_run.json").read_text())
        assert meta["loadgen"]["valid"] is True
        assert meta["settings"]["target_qps"] == pytest.approx(target["target_qps"])
        assert meta["settings"]["target_qps_from"].endswith("resnet50/Offline/qps_search.json")
        # verified on the controller against its run_1 (compliance.yml)
        (check,) = f["mlperf_compliance_checks"](matrix, str(cvm))
        assert check["passed"], check
        for one in check["files"]:
            Path(check["dir"], one["name"]).write_text(one["text"])
    assert time.monotonic() - started < 60
    # the report: one counted run per VM summed, the search and both TEST04 verdicts beside it
    agg = aggregate_results(results)
    (g,) = agg.groups
    assert [t.run for t in g.runs] == [1] and sorted(g.vms) == ["camp-s7-vm1", "camp-s7-vm2"]
    (s,) = agg.searches
    assert (s.profile, s.kind, s.target_qps) == ("2g.20gb", "calibration", target["target_qps"])
    assert [(c.vm, c.test, c.verdict) for c in agg.compliance] == [
        ("camp-s7-vm1", "TEST04", "PASS"),
        ("camp-s7-vm2", "TEST04", "PASS"),
    ]
    write_report(agg, tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    assert (
        "## Target QPS search" in md and "| camp-s7-vm2 | resnet50 | Offline | TEST04 | PASS" in md
    )
