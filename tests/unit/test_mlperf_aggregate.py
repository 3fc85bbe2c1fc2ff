"""Aggregation of concurrent VMs on synthetic results trees built from real published logs.

Every tree is made of copies of Dell's MLPerf v1.1 R750xa MIG ResNet50 Offline detail log (or
NVIDIA's v4.1 H200 Server log), without the summary file so that an edited value is not
contradicted by it. Each test edits only what it is about and says what: the
``result_samples_per_second`` values (to get a spread over runs and VMs), the ``power_begin``/
``power_end`` timestamps (to move a VM's run window), ``result_validity``, an added error line,
or a removed run folder. All VMs of a run otherwise share the real log's run window.
"""

from __future__ import annotations

import io
import json
import shutil
import statistics
from contextlib import redirect_stderr, redirect_stdout
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from miglab.cli.commands import main
from miglab.errors import ValidationError
from miglab.mlperf.results.aggregate import (
    RoundCheck,
    aggregate_results,
    campaign_context,
    check_round,
    normalize_plan,
)
from testlib import FIXTURES, SEED, edit_mllog

RESULTS = FIXTURES / "mlperf/inference_results_v1.1/closed/Dell/results"
OFFLINE = (
    RESULTS
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
    / "mlperf_log_detail.txt"
)
H200_SERVER = (
    FIXTURES
    / "mlperf/inference_results_v4.1/closed/NVIDIA/results/H200-SXM-141GBx8_TRT/resnet50/Server"
    / "performance/run_1/mlperf_log_detail.txt"
)
POWER_FMT = "%m-%d-%Y %H:%M:%S.%f"

# Throughput per VM and run (edited into result_samples_per_second). s1 has the real value in
# run 1; s6's run totals are 144541, 144000 and 145082 (mean 144541 = s1's mean * 1.0577).
S1 = {"vm1": [136656, 135000, 138312]}
S6 = {
    "vm1": [82000, 81700, 82300],
    "vm2": [41000, 40800, 41200],
    "vm3": [21541, 21500, 21582],
}


def shifted_power(text: str, seconds: float) -> dict:
    """New power_begin/power_end values, the real ones moved by ``seconds``."""
    out = {}
    for line in text.splitlines():
        if line.startswith(":::MLLOG") and '"power_' in line:
            rec = json.loads(line[len(":::MLLOG ") :])
            if rec["key"] in ("power_begin", "power_end") and rec["key"] not in out:
                t = datetime.strptime(rec["value"], POWER_FMT) + timedelta(seconds=seconds)
                out[rec["key"]] = t.strftime(POWER_FMT)[:-3]
    return out


def run_dir(root: Path, scen: str, vm: str, n: int, bench="resnet50", mlscen="Offline") -> Path:
    return root / scen / vm / bench / mlscen / "performance" / f"run_{n}"


def build(root: Path, layout: dict, src: Path = OFFLINE, bench="resnet50", mlscen="Offline"):
    """``layout``: scenario -> vm -> per-run values (None: keep the real value)."""
    real = src.read_text()
    key = "result_samples_per_second" if mlscen == "Offline" else None
    for scen, vms in layout.items():
        for vm, values in vms.items():
            for n, v in enumerate(values, start=1):
                d = run_dir(root, scen, vm, n, bench, mlscen)
                d.mkdir(parents=True)
                text = real if v is None or key is None else edit_mllog(real, {key: v})
                (d / "mlperf_log_detail.txt").write_text(text)
    return root


def edit_run(root: Path, scen: str, vm: str, n: int, **kw) -> None:
    f = run_dir(root, scen, vm, n) / "mlperf_log_detail.txt"
    f.write_text(edit_mllog(f.read_text(), **kw))


@pytest.fixture
def seed_tree(tmp_path):
    return build(tmp_path / "results" / "r750xa-a100-80gb-mig", {"s1": S1, "s6": S6})


def totals(g):
    return {r.run: (r.total if r.included else None) for r in g.runs}


# --- sums, statistics, improvement ----------------------------------------------------------------
def test_sum_over_vms_stats_and_improvement(seed_tree):
    ctx = campaign_context(SEED)
    assert ctx["baseline"] == "s1" and ctx["runs"] == 3
    agg = aggregate_results(seed_tree.parent, **{k: ctx[k] for k in ("baseline", "plan", "runs")})
    s1 = agg.group("s1", "resnet50", "Offline")
    s6 = agg.group("s6", "resnet50", "Offline")
    assert s1.campaign == s6.campaign == "r750xa-a100-80gb-mig"
    assert totals(s1) == {1: 136656, 2: 135000, 3: 138312}
    assert (s1.mean, s1.stdev, s1.min, s1.max, s1.count) == (136656, 1656, 135000, 138312, 3)
    assert totals(s6) == {1: 144541, 2: 144000, 3: 145082}
    assert s6.mean == 144541
    assert s6.stdev == pytest.approx(statistics.stdev([144541, 144000, 145082]))
    assert s6.spread_pct == pytest.approx((145082 - 144000) / 144541 * 100)
    assert s6.per_vm_mean == {"vm1": 82000, "vm2": 41000, "vm3": 21541}
    assert s6.profiles == {"vm1": "4g.40gb", "vm2": "2g.20gb", "vm3": "1g.10gb"}
    assert s6.scenario_profiles == "1x 4g.40gb + 1x 2g.20gb + 1x 1g.10gb"
    assert s6.improvement_pct == pytest.approx(7885 / 136656 * 100)
    assert round(s6.improvement_pct, 2) == 5.77  # the seed's scenario 6 ResNet50 figure
    assert s1.improvement_pct == 0.0
    assert all(r.overlap_fraction == 1.0 and r.window_source == "power" for r in s6.runs)
    assert s6.status == "ok" and s1.submission_valid  # one VM: the published log's verdict
    # three VMs: a sum of independent LoadGen instances is no submission figure (issue 17)
    assert not s6.submission_valid and not any(r.submission_valid for r in s6.runs)
    assert s6.submission_reasons == [
        "the sum of 3 independent LoadGen instances (one per VM), not one LoadGen run of one "
        "system under test"
    ]
    assert s6.metric == "result_samples_per_second" and s6.combine == "sum"
    assert agg.problems == []


def test_results_root_with_several_campaigns(seed_tree, tmp_path):
    build(tmp_path / "results" / "other", {"s1": {"vm1": [100000]}})
    agg = aggregate_results(tmp_path / "results", baseline="s1")
    assert [(g.campaign, g.scenario) for g in agg.groups] == [
        ("other", "s1"),
        ("r750xa-a100-80gb-mig", "s1"),
        ("r750xa-a100-80gb-mig", "s6"),
    ]
    assert agg.group("s1", "resnet50", "Offline", campaign="other").mean == 100000
    assert agg.group("s6", "resnet50", "Offline").baseline_mean == 136656  # same campaign only


# --- runs that do not count -----------------------------------------------------------------------
def test_windows_that_do_not_overlap_exclude_the_run(seed_tree):
    # edit: vm2's run_2 power_begin/power_end moved one hour later
    f = run_dir(seed_tree, "s6", "vm2", 2) / "mlperf_log_detail.txt"
    edit_run(seed_tree, "s6", "vm2", 2, values=shifted_power(f.read_text(), 3600))
    g = aggregate_results(seed_tree, baseline="s1").group("s6", "resnet50", "Offline")
    assert totals(g) == {1: 144541, 2: None, 3: 145082}
    run2 = g.runs[1]
    assert run2.overlap_fraction == 0.0
    assert run2.reasons == [
        "not concurrent: run windows do not overlap (power timestamps): vm1 ended "
        "2021-08-07T15:07:13.055000 before vm2 started 2021-08-07T15:54:41.562000"
    ]
    assert g.count == 2 and g.mean == (144541 + 145082) / 2 and g.status == "partial"
    assert g.excluded_reasons == ["run_2: " + run2.reasons[0]]


def test_partial_overlap_fraction_and_min_overlap(seed_tree):
    # edit: vm3's run_1 power window moved 300 s later (still overlapping the others)
    f = run_dir(seed_tree, "s6", "vm3", 1) / "mlperf_log_detail.txt"
    edit_run(seed_tree, "s6", "vm3", 1, values=shifted_power(f.read_text(), 300))
    span = 751.493  # power_end - power_begin of the real run
    frac = (span - 300) / (span + 300)
    g = aggregate_results(seed_tree, min_overlap=0.0).group("s6", "resnet50", "Offline")
    assert g.runs[0].included and g.runs[0].overlap_fraction == pytest.approx(frac)
    g = aggregate_results(seed_tree, min_overlap=0.5).group("s6", "resnet50", "Offline")
    assert not g.runs[0].included
    assert g.runs[0].reasons == [
        "not concurrent: run windows overlap 42.9% (power timestamps), below the required 50%"
    ]
    # the default (issue 17): 90 % of the round's span, else "not concurrent", never summed
    g = aggregate_results(seed_tree).group("s6", "resnet50", "Offline")
    assert not g.runs[0].included and g.runs[0].total is None
    assert g.runs[0].reasons == [
        "not concurrent: run windows overlap 42.9% (power timestamps), below the required 90%"
    ]


def test_invalid_vm_run_is_reported_not_summed(seed_tree):
    # edit: vm3's run_3 result_validity flipped to INVALID with its min duration flag
    edit_run(
        seed_tree,
        "s6",
        "vm3",
        3,
        values={"result_validity": "INVALID", "result_min_duration_met": False},
    )
    g = aggregate_results(seed_tree).group("s6", "resnet50", "Offline")
    assert totals(g) == {1: 144541, 2: 144000, 3: None}
    assert g.runs[2].reasons == ["vm3: LoadGen says INVALID (not met: min_duration)"]
    assert g.runs[2].values == {"vm1": 82300, "vm2": 41200}  # the usable ones, not summed


def test_error_line_in_one_vm_excludes_its_run(seed_tree):
    # edit: one LoadGen error line appended to vm1's run_1
    f = run_dir(seed_tree, "s6", "vm1", 1) / "mlperf_log_detail.txt"
    err = {"key": "error_runtime", "value": "boom", "time_ms": 1.0, "metadata": {"is_error": True}}
    f.write_text(f.read_text() + ":::MLLOG " + json.dumps(err) + "\n")
    g = aggregate_results(seed_tree).group("s6", "resnet50", "Offline")
    assert not g.runs[0].included
    assert g.runs[0].reasons == ["vm1: 1 error line(s): line 82: error_runtime: boom"]


def test_missing_run_and_missing_vm(seed_tree):
    # edit: vm2's run_3 folder removed, then all of vm3
    shutil.rmtree(run_dir(seed_tree, "s6", "vm2", 3))
    g = aggregate_results(seed_tree).group("s6", "resnet50", "Offline")
    assert totals(g) == {1: 144541, 2: 144000, 3: None}
    assert g.runs[2].reasons == ["vm2: run_3 missing"]
    shutil.rmtree(seed_tree / "s6" / "vm3")
    plan = campaign_context(SEED)["plan"]
    g = aggregate_results(seed_tree, plan=plan).group("s6", "resnet50", "Offline")
    assert g.status == "invalid" and g.mean is None
    assert g.runs[0].reasons == ["no results from planned VM(s) r750xa-a100-80gb-mig-s6-vm3"]
    # a plain scenario -> vgpus plan only knows the count
    g = aggregate_results(seed_tree, plan={"s6": {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}}).group(
        "s6", "resnet50", "Offline"
    )
    assert g.runs[0].reasons == ["2 VM folder(s) found, the plan has 3 VMs"]
    assert g.expected_vms == 3


def test_expected_runs_from_the_campaign(seed_tree):
    # edit: run_3 removed from every VM of s6
    for vm in S6:
        shutil.rmtree(run_dir(seed_tree, "s6", vm, 3))
    g = aggregate_results(seed_tree, runs=3).group("s6", "resnet50", "Offline")
    assert g.runs[2].reasons == [
        "vm1: run_3 missing",
        "vm2: run_3 missing",
        "vm3: run_3 missing",
    ]


def test_unreadable_log_is_reported(seed_tree):
    # edit: vm2's run_1 detail log replaced by text that is not a LoadGen log
    (run_dir(seed_tree, "s6", "vm2", 1) / "mlperf_log_detail.txt").write_text("garbage\n")
    g = aggregate_results(seed_tree).group("s6", "resnet50", "Offline")
    assert not g.runs[0].included
    (reason,) = g.runs[0].reasons
    assert reason.startswith("vm2: unreadable log: ") and reason.endswith(
        "not an MLPerf LoadGen detail log: no ':::MLLOG {json}' line"
    )


# --- one round, as resume sees it -----------------------------------------------------------------
def _round(root: Path, n: int) -> dict:
    return {vm: run_dir(root, "s6", vm, n) for vm in S6}


def test_check_round_follows_the_report(seed_tree):
    """Resume redoes a round exactly when the report would not sum it: each edit below makes
    the aggregate exclude a run, and check_round says why in the same words."""
    assert check_round(_round(seed_tree, 1)).complete
    # every VM VALID on its own, but vm2 ran an hour later: not concurrent (redo all three)
    f = run_dir(seed_tree, "s6", "vm2", 2) / "mlperf_log_detail.txt"
    edit_run(seed_tree, "s6", "vm2", 2, values=shifted_power(f.read_text(), 3600))
    late = check_round(_round(seed_tree, 2))
    assert late.state == "not concurrent" and not late.complete
    group = aggregate_results(seed_tree).group("s6", "resnet50", "Offline")
    assert list(late.reasons) == group.runs[1].reasons
    # LoadGen's verdict
    edit_run(seed_tree, "s6", "vm3", 3, values={"result_validity": "INVALID"})
    bad = check_round(_round(seed_tree, 3))
    assert bad.state == "invalid" and bad.reasons == ("vm3: LoadGen says INVALID",)
    # no log at all in one VM
    shutil.rmtree(run_dir(seed_tree, "s6", "vm1", 3))
    assert check_round(_round(seed_tree, 3)) == RoundCheck("missing", ("vm1: no LoadGen log",))
    assert check_round({}).state == "missing"
    # an unreadable log is not something a redo of the round is sure to fix: invalid
    (run_dir(seed_tree, "s6", "vm2", 1) / "mlperf_log_detail.txt").write_text("garbage\n")
    assert check_round(_round(seed_tree, 1)).state == "invalid"


def test_check_round_of_one_vm_needs_no_overlap(seed_tree):
    assert check_round({"vm1": run_dir(seed_tree, "s1", "vm1", 1)}).complete


def test_summary_only_runs_cannot_prove_concurrency(tmp_path):
    # edit: none; two VMs with only the real (unedited) summary file each
    summary = OFFLINE.parent / "mlperf_log_summary.txt"
    for vm in ("vm1", "vm2"):
        d = run_dir(tmp_path, "s2", vm, 1)
        d.mkdir(parents=True)
        shutil.copy(summary, d)
    g = aggregate_results(tmp_path).group("s2", "resnet50", "Offline")
    assert g.runs[0].reasons == ["cannot check that the VMs ran at once: no common timestamps"]
    g = aggregate_results(tmp_path, require_timestamps=False).group("s2", "resnet50", "Offline")
    assert g.runs[0].included and g.runs[0].total == 2 * 136656
    assert not g.runs[0].submission_valid
    assert g.runs[0].submission_reasons == [
        "concurrency not checked: cannot check that the VMs ran at once: no common timestamps",
        "the sum of 2 independent LoadGen instances (one per VM), not one LoadGen run of one "
        "system under test",
    ]


@pytest.mark.parametrize("with_runner", [True, False])
def test_window_fallbacks(seed_tree, with_runner):
    # edit: power_begin/power_end removed from both s6 VMs' run_1 (and vm3 removed); with
    # miglab_run.json runner times the runner window is used, else test_datetime + time_ms
    shutil.rmtree(seed_tree / "s6" / "vm3")
    for vm in ("vm1", "vm2"):
        edit_run(seed_tree, "s6", vm, 1, drop=("power_begin", "power_end"))
        if with_runner:
            (run_dir(seed_tree, "s6", vm, 1) / "miglab_run.json").write_text(
                json.dumps(
                    {
                        "started_at": "2026-01-05T10:00:00Z",
                        "finished_at": f"2026-01-05T10:1{vm[-1]}:00Z",
                        "simulated": False,
                        "weights": "real",
                        "backend": "nvidia",
                    }
                )
            )
    g = aggregate_results(seed_tree).group("s6", "resnet50", "Offline")
    r = g.runs[0]
    assert r.included
    if with_runner:
        assert r.window_source == "runner" and r.overlap_fraction == pytest.approx(
            11 / 12
        )  # 10:00-10:11, 10:00-10:12
    else:
        assert r.window_source == "log" and r.overlap_fraction == 1.0
    assert [x.window_source for x in g.runs[1:]] == ["power", "power"]


def test_server_v41_sums_completed_qps(tmp_path):
    # edit: none; the real H200 v4.1 Server log in two VMs
    build(tmp_path, {"s2": {"vm1": [None], "vm2": [None]}}, src=H200_SERVER, mlscen="Server")
    g = aggregate_results(tmp_path).group("s2", "resnet50", "Server")
    assert g.metric == "result_completed_samples_per_sec"
    assert g.runs[0].total == 2 * 632229 and not g.submission_valid  # two LoadGen instances
    assert g.submission_reasons == [
        "the sum of 2 independent LoadGen instances (one per VM), not one LoadGen run of one "
        "system under test"
    ]


def test_simulated_metadata_flows_to_groups(seed_tree):
    # edit: a miglab_run.json in every s6 VM folder saying simulated, random weights
    for vm in S6:
        (seed_tree / "s6" / vm / "miglab_run.json").write_text(
            json.dumps({"simulated": True, "backend": "reference", "weights": "random"})
        )
    agg = aggregate_results(seed_tree, baseline="s1")
    s6 = agg.group("s6", "resnet50", "Offline")
    assert (s6.simulated, s6.weights, s6.backends) == (True, ["random"], ["reference"])
    assert agg.group("s1", "resnet50", "Offline").simulated is None
    assert agg.simulated is True and agg.random_weights


# --- bad input and layout -------------------------------------------------------------------------
def test_bad_directories(tmp_path):
    with pytest.raises(ValidationError) as exc:
        aggregate_results(tmp_path / "nope")
    assert str(exc.value.problems[0]) == f"{tmp_path / 'nope'}: (top): no such directory"
    with pytest.raises(ValidationError) as exc:
        aggregate_results(tmp_path)
    assert "no mlperf_log_detail.txt or mlperf_log_summary.txt found" in str(exc.value)


def test_files_outside_the_layout_are_listed(seed_tree):
    stray = seed_tree / "s6" / "notes" / "run_1"
    stray.mkdir(parents=True)
    shutil.copy(OFFLINE, stray)
    agg = aggregate_results(seed_tree)
    assert len(agg.problems) == 1 and agg.problems[0].startswith(str(stray))
    assert agg.group("s6", "resnet50", "Offline").status == "ok"


# --- CLI ------------------------------------------------------------------------------------------
def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def test_cli_aggregate_json_and_csv(seed_tree):
    rc, out, _ = cli("results", "aggregate", seed_tree, "--json", "--campaign", SEED)
    assert rc == 0
    data = json.loads(out)
    s6 = next(g for g in data["groups"] if g["scenario"] == "s6")
    assert s6["mean"] == 144541 and s6["baseline"] == "s1"
    assert [r["total"] for r in s6["runs"]] == [144541, 144000, 145082]
    rc, out, _ = cli("results", "aggregate", seed_tree, "--csv", "--baseline", "s1")
    assert rc == 0
    header, row1, row2 = out.strip().splitlines()
    assert header.startswith("campaign,scenario,benchmark,mlperf_scenario,vms,profiles")
    assert ",s6,resnet50,Offline,3," in row2 and "run_1=144541;run_2=144000;run_3=145082" in row2
    rc, out, _ = cli("results", "aggregate", seed_tree, "--baseline", "s1")
    assert rc == 0 and "+5.77 % vs s1" in out


def test_cli_bad_input_exits_2(tmp_path):
    rc, _, err = cli("results", "aggregate", tmp_path / "missing")
    assert rc == 2
    assert err == f"error: {tmp_path / 'missing'}: (top): no such directory\n"
    rc, _, err = cli("results", "parse", tmp_path / "missing", SEED)
    assert rc == 2
    assert err.splitlines() == [
        f"error: {tmp_path / 'missing'}: (top): no such file or directory",
        f"error: {SEED}: (top): not an MLPerf LoadGen detail log: no ':::MLLOG {{json}}' line",
    ]


def test_cli_parse(seed_tree):
    rc, out, _ = cli("results", "parse", run_dir(seed_tree, "s6", "vm1", 1), "--json")
    assert rc == 0
    (rec,) = json.loads(out)
    assert (rec["value"], rec["valid"], rec["benchmark"]) == (82000, True, "resnet50")
    rc, out, _ = cli("results", "parse", seed_tree / "s1")
    assert rc == 0 and out.count("LoadGen: VALID") == 3


def test_plan_json_names_vm_profiles(seed_tree):
    from miglab.adapters.inventory import load_checked
    from miglab.core.planning import plan_campaign

    plan_json = plan_campaign(*load_checked(SEED, None)).as_json()  # `miglab plan --json`
    plans = normalize_plan(plan_json)
    assert plans["s6"].vms["r750xa-a100-80gb-mig-s6-vm2"] == "2g.20gb"
    g = aggregate_results(seed_tree, plan=plan_json).group("s6", "resnet50", "Offline")
    assert g.profiles == {"vm1": "4g.40gb", "vm2": "2g.20gb", "vm3": "1g.10gb"}
    with pytest.raises(ValidationError) as exc:
        normalize_plan({"s6": {"4g.40gb": "one"}})
    assert str(exc.value) == "plan: s6.vgpus: must map vGPU profiles to positive counts"


# --- placement (real-lab notes V1-V2: the layout that ran, not only the planned one) ------------
def _placement(root: Path, scen: str, vm: str, n: int, gpu: str, slot: int, planned_slot: int):
    meta = {
        "placement": {
            "gpu": gpu,
            "mig_slot": slot,
            "planned": {"gpu": "0000:5e:00.0", "mig_slot": planned_slot},
            "pinned": True,
        }
    }
    (run_dir(root, scen, vm, n) / "miglab_run.json").write_text(json.dumps(meta))


def test_a_run_off_its_planned_gpu_or_slot_is_not_counted(seed_tree, tmp_path):
    from miglab.mlperf.results.report import write_report

    for n in (1, 2, 3):
        _placement(seed_tree, "s6", "vm1", n, "0000:5e:00.0", 0, 0)
    _placement(seed_tree, "s6", "vm2", 2, "0000:86:00.0", 4, 4)
    _placement(seed_tree, "s6", "vm3", 3, "0000:5e:00.0", 0, 6)
    agg = aggregate_results(seed_tree.parent, baseline="s1")
    g = next(x for x in agg.groups if x.scenario == "s6")
    runs = {r.run: r for r in g.runs}
    assert runs[1].included
    assert not runs[2].included and runs[2].reasons == [
        "vm2: ran on GPU 0000:86:00.0, planned on 0000:5e:00.0"
    ]
    assert runs[3].reasons == ["vm3: ran at MIG slot 0, planned at slot 6"]
    md = Path(write_report(agg, tmp_path / "out")["report.md"]).read_text()
    assert "### Placement" in md
    assert "| s6 | vm1 |" in md and "0000:5e:00.0 (pinned) | 0 | 0000:5e:00.0 slot 0 | yes |" in md
    assert "| s1 | vm1 | - | - | - | - | not recorded |" in md


def test_a_malformed_placement_is_a_problem_of_its_run(seed_tree):
    f = run_dir(seed_tree, "s6", "vm1", 1) / "miglab_run.json"
    f.write_text(json.dumps({"placement": {"gpu": 3, "mig_slot": "0", "planned": []}}))
    agg = aggregate_results(seed_tree.parent, baseline="s1")
    g = next(x for x in agg.groups if x.scenario == "s6")
    reason = " ".join(next(r for r in g.runs if r.run == 1).reasons)
    assert "placement.gpu" in reason and "placement.mig_slot" in reason
    assert "placement.planned: must be an object" in reason


# --- clock sync (issue 16): windows compared in the controller's time -----------------------------
SPAN = 751.493  # power_end - power_begin of the real run


def _clock(root: Path, scen: str, vm: str, n: int, offset: float, uncertainty: float = 0.0002):
    """``vm``'s run ``n`` says its guest's clock was ``offset`` s ahead of the controller's."""
    clock = {
        "method": "responder",
        "offset_s": offset,
        "uncertainty_s": uncertainty,
        "reference": "10.88.0.1:12123",
        "samples": 8,
        "measured_at": "2021-08-07T15:00:00+00:00",
    }
    (run_dir(root, scen, vm, n) / "miglab_run.json").write_text(json.dumps({"clock": clock}))


@pytest.fixture
def pair(tmp_path):
    """Two VMs of s2, one run each, the real log's window in both."""
    return build(tmp_path / "results" / "c", {"s2": {"vm1": [None], "vm2": [None]}})


def test_windows_that_overlap_only_after_the_clock_correction_are_summed(pair):
    # edit: vm2's power window starts 0.2 s after vm1's ended -- by vm2's clock, which was
    # 300 ms ahead of the controller's: in the controller's time vm2 started 0.1 s before vm1
    # ended (the raw windows do not overlap at all)
    f = run_dir(pair, "s2", "vm2", 1) / "mlperf_log_detail.txt"
    edit_run(pair, "s2", "vm2", 1, values=shifted_power(f.read_text(), SPAN + 0.2))
    _clock(pair, "s2", "vm1", 1, 0.0)
    _clock(pair, "s2", "vm2", 1, 0.300)
    # (a sliver of overlap: with no minimum, to show the correction alone decides)
    (run,) = aggregate_results(pair, min_overlap=0.0).group("s2", "resnet50", "Offline").runs
    assert run.included, run.reasons
    assert run.window_corrected
    assert run.overlap_fraction == pytest.approx(0.1 / (2 * SPAN - 0.1), rel=1e-3)
    assert run.clock.flagged  # 300 ms apart: beyond the 50 ms bound, said (not excluded)
    assert check_round(
        {vm: run_dir(pair, "s2", vm, 1) for vm in ("vm1", "vm2")}, min_overlap=0.0
    ).complete  # resume and redo follow the report
    # the same tree without the measurements: the raw windows, excluded as before
    for vm in ("vm1", "vm2"):
        (run_dir(pair, "s2", vm, 1) / "miglab_run.json").unlink()
    (run,) = aggregate_results(pair).group("s2", "resnet50", "Offline").runs
    assert not run.included and run.overlap_fraction == 0.0
    assert run.clock.state == "not checked" and not run.window_corrected


def test_a_skewed_guest_that_started_on_its_own_clock_overlaps_less(pair):
    # Both guests started LoadGen at the barrier's moment by their own clocks: the same logged
    # window. vm1's clock was 2 s ahead, so in the controller's time it ran 2 s earlier.
    _clock(pair, "s2", "vm1", 1, 2.0)
    _clock(pair, "s2", "vm2", 1, 0.0)
    agg = aggregate_results(pair, clock_bound=3.0)
    (run,) = agg.group("s2", "resnet50", "Offline").runs
    assert run.overlap_fraction == pytest.approx((SPAN - 2) / (SPAN + 2), rel=1e-6)
    assert run.clock.state == "ok" and run.clock.offsets == {"vm1": 2.0, "vm2": 0.0}
    assert agg.as_json()["clock_bound_s"] == 3.0


def test_a_scenario_whose_clocks_disagree_is_flagged_in_every_output(pair, tmp_path):
    from miglab.mlperf.results.report import write_report

    _clock(pair, "s2", "vm1", 1, 0.004)
    _clock(pair, "s2", "vm2", 1, 0.124)
    agg = aggregate_results(pair)
    g = agg.group("s2", "resnet50", "Offline")
    (run,) = g.runs
    assert run.included and run.clock.flagged
    assert run.clock.spread_s == pytest.approx(0.120)
    why = "vm2 is 124.0 ms, vm1 4.0 ms off the controller's clock"
    assert run.clock.reasons == (why,)
    assert g.notes == [
        "run_1: the VMs' clocks are flagged: offsets differ by up to 120.0 ms (bound 50.0 ms); "
        + why
    ]
    data = g.as_json()
    assert data["clock"] == "flagged" and data["clock_flagged_runs"] == [1]
    assert data["runs"][0]["clock"]["offsets_s"] == {"vm1": 0.004, "vm2": 0.124}
    assert agg.csv_rows()[0]["clock"] == "flagged run_1 (120.0 ms)"
    md = Path(write_report(agg, tmp_path / "out")["report.md"]).read_text()
    assert "CLOCKS DISAGREE" in md and "s2 resnet50 Offline run_1" in md
    assert "### Clocks" in md
    assert "| s2 | 1 | vm1: +4.0 ms (+-0.2), vm2: +124.0 ms (+-0.2) | 120.0 ms | FLAGGED" in md
    # a looser bound (miglab results aggregate --clock-bound 0.2): ok
    assert (
        aggregate_results(pair, clock_bound=0.2)
        .group("s2", "resnet50", "Offline")
        .runs[0]
        .clock.state
        == "ok"
    )
    rc, out, _ = cli("results", "aggregate", pair, "--csv", "--clock-bound", "0.2")
    assert rc == 0 and ",ok," in out.splitlines()[1]
    with pytest.raises(ValidationError, match="clock_bound: must be above 0"):
        aggregate_results(pair, clock_bound=0)


def test_runs_without_clock_data_are_marked_not_checked(seed_tree, tmp_path):
    from miglab.mlperf.results.report import write_report

    agg = aggregate_results(seed_tree, baseline="s1")
    g = agg.group("s6", "resnet50", "Offline")
    assert totals(g) == {1: 144541, 2: 144000, 3: 145082}  # today's behaviour
    assert {r.clock.state for r in g.runs} == {"not checked"}
    assert g.clock_state == "not checked" and agg.csv_rows()[1]["clock"] == "not checked"
    md = Path(write_report(agg, tmp_path / "out")["report.md"]).read_text()
    assert (
        "| s6 | 1 | vm1: not measured, vm2: not measured, vm3: not measured | - | not checked" in md
    )
    assert "CLOCKS DISAGREE" not in md
