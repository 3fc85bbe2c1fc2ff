"""Issue 17 items 5 and 7, wired end to end: the mlperf role's search, accuracy and compliance
rounds (plugins/filter/mlperf.py), the campaign fields that ask for them, where each round is
filed, and the report's "Target QPS search" and "Compliance" tables."""

from __future__ import annotations

import json
import shutil

import pytest
from ansible.errors import AnsibleFilterError

from miglab.errors import ValidationError
from miglab.formats.manifest import verify_tree, write_manifest
from miglab.mlperf.guest.run import build_parser
from miglab.mlperf.results.aggregate import aggregate_results
from miglab.mlperf.results.report import write_report
from testlib import FIXTURES, collection_module

DELL_OFFLINE = (
    FIXTURES
    / "mlperf/inference_results_v1.1/closed/Dell/results"
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
)
OPTS = {"sut": "slice-model", "out": "/g/camp/s7/vm1", "mode": "PerformanceOnly",
        "profile": "2g.20gb"}  # fmt: skip


@pytest.fixture(scope="module")
def f():
    return collection_module("plugins.filter.mlperf").FilterModule().filters()


# --- the matrix --------------------------------------------------------------------------------
def test_matrix_orders_search_accuracy_runs_compliance(f):
    m = f["mlperf_matrix"](["resnet50", "bert-99"], ["Offline"], 2, qps_search=True,
                           accuracy=True, compliance=["TEST01", "TEST04"])  # fmt: skip
    assert [(i.get("kind", "performance"), i["benchmark"], i.get("test")) for i in m] == [
        ("search", "resnet50", None),
        ("search", "bert-99", None),
        ("accuracy", "resnet50", None),
        ("accuracy", "bert-99", None),
        ("performance", "resnet50", None),
        ("performance", "bert-99", None),
        ("performance", "resnet50", None),
        ("performance", "bert-99", None),
        ("compliance", "resnet50", "TEST01"),
        ("compliance", "bert-99", "TEST01"),
        ("compliance", "resnet50", "TEST04"),  # TEST04 is not for BERT: no round
    ]
    # the role passes its booleans as text sometimes; plain performance items stay as they were
    assert f["mlperf_matrix"]("resnet50", "Server", 1, qps_search="False") == [
        {"benchmark": "resnet50", "scenario": "Server", "run": 1}
    ]
    with pytest.raises(AnsibleFilterError, match="unknown compliance test 'TEST05'"):
        f["mlperf_matrix"](["resnet50"], ["Offline"], 1, compliance=["TEST05"])


def test_rounds_are_filed_by_kind(f):
    d = f["mlperf_round_dir"]
    item = {"benchmark": "resnet50", "scenario": "Server", "run": 2}
    assert d(item) == "resnet50/Server/performance/run_2"
    # an AccuracyOnly run started by the role was filed under performance/ before
    assert d(item, "AccuracyOnly") == "resnet50/Server/accuracy/run_2"
    assert d({**item, "kind": "accuracy", "run": 1}) == "resnet50/Server/accuracy/run_1"
    assert d({**item, "kind": "compliance", "test": "TEST04"}) == (
        "resnet50/Server/TEST04/performance/run_1"
    )
    assert d({**item, "kind": "search"}) == "resnet50/Server/qps_search.json"
    assert f["mlperf_profile_key"]("2g.20gb", "vm1") == "2g.20gb"
    assert f["mlperf_profile_key"]("", "camp-s1-vm1") == "camp-s1-vm1"
    assert f["mlperf_profile_key"]("A100 4C/x", "vm") == "A100_4C_x"


# --- the rounds of a guest's session -----------------------------------------------------------
def _argv(r):
    a = build_parser().parse_args(r["argv"])  # every option is one the guest's runner takes
    return a


def test_session_rounds_per_kind(f, tmp_path):
    m = f["mlperf_matrix"](["resnet50"], ["Server"], 1, qps_search=True, accuracy=True,
                           compliance=["TEST04"])  # fmt: skip
    rounds = f["mlperf_session_rounds"](
        m, OPTS, "/g/.barrier/w-s7-vm1", extra_args=["--min-query-count", "1"],
        searcher=True, search_dir=str(tmp_path / "qps_search" / "2g.20gb"),
        search_options={"min_duration_ms": 2000, "max_trials": 6},
        accuracy_args={"resnet50": ["--dataset", "/data/imagenet.npz"]},
    )  # fmt: skip
    search, acc, perf, test = rounds
    assert [r["kind"] for r in rounds] == ["search", "accuracy", "performance", "compliance"]
    a = _argv(search)
    assert a.qps_search and a.search_min_duration_ms == 2000 and a.search_max_trials == 6
    assert a.mode == "PerformanceOnly" and a.pack is None and search["tarball"] is None
    assert search["dir"] == "resnet50/Server/qps_search.json"
    a = _argv(acc)
    assert a.mode == "AccuracyOnly" and a.dataset == "/data/imagenet.npz"
    assert acc["dir"] == "resnet50/Server/accuracy/run_1"
    a = _argv(perf)
    assert (a.mode, a.qps_search, a.compliance, a.dataset) == ("PerformanceOnly", False, None, None)
    assert a.target_qps is None  # the searched target comes as the profile's file, not a flag
    assert perf["dir"] == "resnet50/Server/performance/run_1"
    a = _argv(test)
    assert a.compliance == "TEST04" and a.mode == "PerformanceOnly"
    assert test["dir"] == "resnet50/Server/TEST04/performance/run_1"
    assert len({r["barrier_dir"] for r in rounds}) == 4


def _search_file(folder, bench="resnet50", scen="Server", qps=1234.5, **extra):
    path = folder / bench / scen / "qps_search.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"schema": "miglab-qps-search/1", "benchmark": bench, "mlperf_scenario": scen,
           "profile": "2g.20gb", "vm": "camp-s2-vm1", "target_qps": qps,
           "latency_bound_ms": 15.0 if scen == "Server" else None, "converged": True,
           "trials": [{"target_qps": qps, "valid": True, "reason": "", "p99_ms": 9.1}] * 5,
           "date": "2026-12-05T10:00:00.000+00:00", **extra}  # fmt: skip
    path.write_text(json.dumps(doc))
    return path


def test_one_search_per_profile_reused_on_resume(f, tmp_path):
    """The first VM of a profile searches; the others do not; once the profile's folder on the
    controller holds the target, nobody searches again (a second run changes nothing), whatever
    the resume setting; a redo pass never searches."""
    m = f["mlperf_matrix"](["resnet50"], ["Server"], 1, qps_search=True)
    folder = tmp_path / "camp" / "qps_search" / "2g.20gb"
    plan = f["mlperf_session_rounds"]
    assert plan(m, OPTS, "/b/x", searcher=True, search_dir=str(folder))[0]["kind"] == "search"
    assert plan(m, OPTS, "/b/x", searcher=False, search_dir=str(folder))[0] is None
    assert plan(m, OPTS, "/b/x", searcher="False", search_dir=str(folder))[0] is None
    _search_file(folder)
    for resume in (None, []):
        assert plan(m, OPTS, "/b/x", searcher=True, search_dir=str(folder),
                    peer_vm_dirs=resume)[0] is None  # fmt: skip
    assert f["mlperf_searched_targets"](m, str(folder)) == [
        {"benchmark": "resnet50", "scenario": "Server", "dir": "resnet50/Server/qps_search.json",
         "path": str(folder / "resnet50/Server/qps_search.json"), "target_qps": 1234.5}
    ]  # fmt: skip
    # a failed search (no target) is searched again
    _search_file(folder, qps=None, error="no target QPS was VALID")
    assert f["mlperf_search_target"](folder / "resnet50/Server/qps_search.json") is None
    assert plan(m, OPTS, "/b/x", searcher=True, search_dir=str(folder))[0] is not None
    # the wave check of playbooks/benchmark.yml counts a missing search as a round to do
    states = f["mlperf_round_checks"](m, [str(tmp_path / "camp/s2/vm1")], search_dir=str(folder))
    assert states[0]["state"] == "missing" and states[1]["state"] == "missing"


def test_resume_accuracy_per_vm_and_compliance_in_every_vm(f, tmp_path):
    m = f["mlperf_matrix"](["resnet50"], ["Offline"], 1, accuracy=True, compliance=["TEST04"])
    peers = [tmp_path / "camp" / "s6" / vm for vm in ("vm1", "vm2")]
    for vm in peers:
        shutil.copytree(DELL_OFFLINE, vm / "resnet50/Offline/performance/run_1")
        acc = vm / "resnet50/Offline/accuracy/run_1"
        shutil.copytree(DELL_OFFLINE, acc)
        (acc / "miglab_run.json").write_text(json.dumps({"loadgen": {"valid": vm.name == "vm1"}}))
    shutil.copytree(DELL_OFFLINE, peers[0] / "resnet50/Offline/TEST04/performance/run_1")
    plan = f["mlperf_session_rounds"]
    for vm in peers:
        acc, perf, test = plan(m, OPTS, "/b/x", peer_vm_dirs=[str(p) for p in peers],
                               vm_dir=str(vm))  # fmt: skip
        assert perf is None  # VALID in both, run at once
        assert (acc is None) == (vm.name == "vm1")  # vm2's accuracy run is not complete
        assert test is not None  # vm2 has no TEST04 run: both run it again, at once
    shutil.copytree(DELL_OFFLINE, peers[1] / "resnet50/Offline/TEST04/performance/run_1")
    assert plan(m, OPTS, "/b/x", peer_vm_dirs=[str(p) for p in peers], vm_dir=str(peers[0]))[
        2:
    ] == [None]


def test_compliance_is_verified_on_the_controller(f, tmp_path):
    vm = tmp_path / "camp" / "s1" / "vm1"
    sd = vm / "resnet50" / "Offline"
    shutil.copytree(DELL_OFFLINE, sd / "performance" / "run_1")
    m = f["mlperf_matrix"](["resnet50"], ["Offline"], 1, compliance=["TEST04"])
    assert f["mlperf_compliance_checks"](m, str(vm)) == []  # no TEST04 run: nothing to verify
    shutil.copytree(DELL_OFFLINE, sd / "TEST04" / "performance" / "run_1")
    (check,) = f["mlperf_compliance_checks"](m, str(vm))
    assert check["exists"] and check["dir"] == str(sd / "TEST04")
    (one,) = check["files"]
    # the Dell log was not run with TEST04's audit.config: the check says so, as MLCommons' does
    assert one["name"] == "verify_performance.txt" and not one["passed"]
    assert one["text"].rstrip().splitlines()[-1].startswith("TEST FAIL")
    assert check["line"].startswith("TEST04 resnet50 Offline: FAIL (verify_performance: TEST FAIL")


# --- the campaign ------------------------------------------------------------------------------
CAMPAIGN = """\
version: 1
name: t
gpu: A100-PCIE-80GB
mlperf:
  benchmarks: [resnet50, bert-99]
  scenarios: [Offline, Server]
  runs: 1
  baseline: s1
{extra}
scenarios:
  s1: {{vgpus: {{7g.80gb: 1}}}}
"""


def _load(tmp_path, extra):
    from miglab.core.campaign import load_campaign

    p = tmp_path / "c.yml"
    p.write_text(CAMPAIGN.format(extra=extra))
    return load_campaign(p)


def test_campaign_fields(tmp_path):
    c = _load(tmp_path, "  qps_search: {max_trials: 8}\n  accuracy: true\n"
                        "  compliance: [TEST01, TEST04]")  # fmt: skip
    assert c.mlperf.qps_search.max_trials == 8 and c.mlperf.qps_search.min_duration_ms == 10000
    assert c.mlperf.accuracy is True and c.mlperf.compliance == ("TEST01", "TEST04")
    assert c.mlperf.compliance_pairs() == [("TEST01", "resnet50"), ("TEST01", "bert-99"),
                                           ("TEST04", "resnet50")]  # fmt: skip
    assert any("TEST04 is not for bert-99" in w for w in c.warnings)
    c = _load(tmp_path, "  qps_search: false")
    assert c.mlperf.qps_search is None and not c.mlperf.accuracy and c.mlperf.compliance == ()
    assert _load(tmp_path, "  qps_search: true").mlperf.qps_search.tolerance == 0.02


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        ("  qps_search: 3", "mlperf.qps_search", "must be true, false or a mapping"),
        ("  qps_search: {tolerence: 0.1}", "mlperf.qps_search.tolerence", "did you mean"),
        ("  qps_search: {max_trials: 0}", "mlperf.qps_search.max_trials", "at least 1"),
        ("  accuracy: yes please", "mlperf.accuracy", "must be true or false"),
        ("  compliance: [TEST05]", "mlperf.compliance[0]", "unknown value 'TEST05'"),
        ("  compliance: TEST04", "mlperf.compliance", "must be a non-empty list"),
        ("  compliance: [TEST01]", "mlperf.compliance[0]", "set mlperf.accuracy: true"),
    ],
)
def test_campaign_refuses_bad_fields(tmp_path, extra, field, says):
    with pytest.raises(ValidationError) as err:
        _load(tmp_path, extra)
    (prob,) = err.value.problems
    assert prob.field == field and says in prob.reason, prob


def test_campaign_refuses_a_test_for_none_of_its_benchmarks(tmp_path):
    p = tmp_path / "c.yml"
    p.write_text(CAMPAIGN.format(extra="  compliance: [TEST04]").replace(
        "[resnet50, bert-99]", "[bert-99]"))  # fmt: skip
    from miglab.core.campaign import load_campaign

    with pytest.raises(ValidationError) as err:
        load_campaign(p)
    (prob,) = err.value.problems
    assert prob.field == "mlperf.compliance[0]" and "TEST04 applies to none" in prob.reason


def test_campaign_reserves_the_search_folder_name(tmp_path):
    p = tmp_path / "c.yml"
    p.write_text(
        CAMPAIGN.format(extra="").replace("  s1: {", "  qps_search: {vgpus: {7g.80gb: 1}}\n  s1: {")
    )
    from miglab.core.campaign import load_campaign

    with pytest.raises(ValidationError) as err:
        load_campaign(p)
    assert [x.field for x in err.value.problems] == ["scenarios.qps_search"]


# --- the report --------------------------------------------------------------------------------
def _tree(tmp_path):
    camp = tmp_path / "results" / "camp"
    sd = camp / "s1" / "vm1" / "resnet50" / "Offline"
    shutil.copytree(DELL_OFFLINE, sd / "performance" / "run_1")
    shutil.copytree(DELL_OFFLINE, sd / "accuracy" / "run_1")
    t = sd / "TEST04"
    shutil.copytree(DELL_OFFLINE, t / "performance" / "run_1")
    (t / "verify_performance.txt").write_text("reference score = 1\ntest score = 1\nTEST PASS\n")
    for run in (sd / "performance/run_1", sd / "accuracy/run_1", t / "performance/run_1"):
        write_manifest(run)
    _search_file(camp / "qps_search" / "2g.20gb", scen="Offline", qps=2000.0,
                 trials=None, latency_bound_ms=None)  # fmt: skip
    _search_file(
        camp / "qps_search" / "1g.10gb",
        qps=None,
        error="no target QPS was VALID",
        profile="1g.10gb",
    )
    return camp


def test_report_tables_and_compliance_never_counted(tmp_path):
    camp = _tree(tmp_path)
    for root in (camp, camp.parent):
        agg = aggregate_results(root)
        (g,) = agg.groups
        assert [t.run for t in g.runs] == [1]  # TEST04 and accuracy runs are not counted
        assert not agg.problems, agg.problems
        assert [(s.profile, s.kind, s.target_qps, s.trials) for s in agg.searches] == [
            ("1g.10gb", "search", None, 5),  # a failed search: no target, said in the note
            ("2g.20gb", "calibration", 2000.0, 1),
        ]
        (c,) = agg.compliance
        assert (c.scenario, c.vm, c.test, c.verdict) == ("s1", "vm1", "TEST04", "PASS")
        assert c.reason == "verify_performance: TEST PASS"
    files = write_report(agg, tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Target QPS search" in md and "## Compliance" in md
    assert "| 2g.20gb | resnet50 | Offline | calibration | 2,000 | 1 | - | camp-s2-vm1 |" in md
    assert "no target found: no target QPS was VALID" in md
    assert "| s1 | vm1 | resnet50 | Offline | TEST04 | PASS | verify_performance: TEST PASS |" in md
    html = (tmp_path / "report" / "report.html").read_text()
    assert "<h2>Target QPS search</h2>" in html and "<h2>Compliance</h2>" in html
    data = json.loads((tmp_path / "report" / "results.json").read_text())
    assert data["compliance"][0]["verdict"] == "PASS" and len(data["qps_searches"]) == 2
    assert files


def test_results_verify_checks_accuracy_and_compliance_runs(tmp_path):
    camp = _tree(tmp_path)
    report = verify_tree(camp)
    assert report.ok, report.issues
    runs = sorted(str(p).removeprefix(str(camp) + "/") for p in report.runs)
    assert runs == ["s1/vm1/resnet50/Offline/TEST04/performance/run_1",
                    "s1/vm1/resnet50/Offline/accuracy/run_1",
                    "s1/vm1/resnet50/Offline/performance/run_1"]  # fmt: skip
    (camp / "s1/vm1/resnet50/Offline/TEST04/performance/run_1/mlperf_log_detail.txt").write_text(
        "x"
    )
    assert not verify_tree(camp).ok
