"""The LoadGen log reader on real published logs (tests/fixtures/mlperf, see its README.md).

Tests that need a broken or changed log copy a real one into tmp_path and edit only what the
test is about; each says what it edits.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from miglab.core.mlperf_rules import loadgen_release, metric_for
from miglab.core.runs import parse_paths, parse_run
from miglab.errors import ValidationError
from miglab.formats.loadgen import read_detail_log, read_summary_log
from miglab.formats.run_meta import read_run_meta
from testlib import FIXTURES, edit_mllog

MLPERF = FIXTURES / "mlperf"
DELL = MLPERF / "inference_results_v1.1/closed/Dell/results"
MIG28 = DELL / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50"
DELL_OFFLINE = MIG28 / "Offline/performance/run_1"
DELL_SERVER = MIG28 / "Server/performance/run_1"
VA100_BERT = DELL / "R7525_vA100-PCIE-40GBx3_TRT/bert-99/Offline/performance/run_1"
H200_SERVER = (
    MLPERF
    / "inference_results_v4.1/closed/NVIDIA/results/H200-SXM-141GBx8_TRT/resnet50/Server"
    / "performance/run_1"
)


def copy_run(src: Path, dst: Path, detail: bool = True, summary: bool = True) -> Path:
    dst.mkdir(parents=True)
    for name, want in (("mlperf_log_detail.txt", detail), ("mlperf_log_summary.txt", summary)):
        if want and (src / name).is_file():
            shutil.copy(src / name, dst / name)
    return dst


# --- the published values ----------------------------------------------------------------------
def test_dell_mig_offline_reproduces_published_value():
    r = parse_run(DELL_OFFLINE)
    assert (r.benchmark, r.scenario, r.mode) == ("resnet50", "Offline", "PerformanceOnly")
    assert r.metric == "result_samples_per_second"
    assert r.value == 136656 and r.unit == "samples/s"
    assert r.loadgen_validity == "VALID" and r.valid and r.invalid_reasons == []
    assert r.submission_valid and r.submission_reasons == []
    assert r.loadgen_version == "1.1 @ b1452de454" and r.loadgen_release == (1, 1)
    assert r.summary_value == 136656  # the summary file beside it agrees
    assert r.sut_name == "Triton_MultiMigServer"
    assert r.settings["effective_min_duration_ms"] == 600000
    assert r.settings["effective_samples_per_query"] == 102696000
    assert r.seeds == {
        "qsl_rng_seed": 1624344308455410291,
        "sample_index_rng_seed": 517984244576520566,
        "schedule_rng_seed": 10051496985653635065,
        "accuracy_log_rng_seed": 0,
    }
    assert r.early_stopping == {}  # LoadGen 1.1 has no early stopping
    assert r.errors == [] and r.bad_lines == [] and r.warnings == 0


def test_dell_mig_server_uses_scheduled_qps_of_loadgen_1_1():
    r = parse_run(DELL_SERVER)
    assert r.scenario == "Server" and r.metric == "result_scheduled_samples_per_sec"
    assert r.value == 40002.8  # as published; the detail log keeps 6 significant digits
    assert r.summary_value == 40002.77  # the summary's 2 decimals, consistent with it
    assert r.results["result_completed_samples_per_sec"] == 40002.6
    assert r.results["result_perf_constraints_met"] is True
    assert r.valid and r.submission_valid
    assert r.settings["effective_target_latency_ns"] == 15000000
    assert r.settings["effective_min_query_count"] == 270336
    assert r.latency_ns["percentiles"]["99.00"] == 10253549  # under the 15 ms bound


def test_vmware_va100_bert_offline():
    r = parse_run(VA100_BERT)
    assert (r.benchmark, r.scenario) == ("bert-99", "Offline")
    assert r.value == 8475.47 and r.summary_value == 8475.47
    assert r.valid and r.submission_valid
    assert r.sut_name == "BERT SERVER"
    assert r.warnings == 6  # "Logging allocation detected" warnings: not errors
    assert r.settings["effective_performance_sample_count"] == 10833


def test_h200_v41_server_uses_completed_qps():
    r = parse_run(H200_SERVER)
    assert r.loadgen_release == (4, 1)
    assert r.metric == "result_completed_samples_per_sec" and r.value == 632229
    assert r.results["result_scheduled_samples_per_sec"] == 632241
    assert r.valid and r.submission_valid
    assert r.early_stopping == {
        "early_stopping_met": True,
        "early_stopping_result": "* Run successful.",
    }
    assert r.results["result_query_count"] == 379344721
    assert r.settings["effective_min_query_count"] == 100  # early stopping: no 270336 rule
    assert r.summary_value is None  # no summary file in the fixture


@pytest.mark.parametrize("run", [DELL_OFFLINE, DELL_SERVER, VA100_BERT])
def test_detail_matches_summary_file(run):
    """Every latency statistic and test parameter the summary prints equals the detail log's."""
    d = parse_run(run)
    s = read_summary_log(run / "mlperf_log_summary.txt")
    assert s.get("result_validity") == d.loadgen_validity == "VALID"
    assert s.get("effective_scenario") == d.scenario
    for k in ("min", "max", "mean"):
        assert s.get(f"result_{k}_latency_ns") == d.latency_ns[k]
    for pct, ns in d.latency_ns["percentiles"].items():
        assert s.get(f"result_{pct}_percentile_latency_ns") == ns
    for key in (
        "effective_samples_per_query",
        "effective_target_qps",
        "effective_target_latency_ns",
        "effective_min_duration_ms",
        "effective_min_query_count",
        "effective_qsl_rng_seed",
        "effective_sample_index_rng_seed",
        "effective_schedule_rng_seed",
        "effective_performance_sample_count",
    ):
        assert s.get(key) == d.settings[key], key


def test_run_windows_from_power_timestamps():
    r = parse_run(DELL_OFFLINE)
    assert r.window_power == (
        datetime(2021, 8, 7, 14, 54, 41, 562000),
        datetime(2021, 8, 7, 15, 7, 13, 55000),
    )
    # the timed window is the run: its length is the Offline query's max latency (751.49 s)
    assert r.duration_s == pytest.approx(r.latency_ns["max"] / 1e9, abs=0.01)
    # test_datetime is the host's local time (here 5 h behind the power clock) + time_ms
    assert r.test_datetime == "2021-08-07T09:54:35Z"
    assert r.window_log[0] == datetime(2021, 8, 7, 9, 54, 35, 13)
    assert r.first_time_ms == 0.012688 and r.last_time_ms == 758186.20833
    assert r.result_time_ms == 758186.20833
    h = parse_run(H200_SERVER)
    assert h.duration_s == pytest.approx(600.012)


def test_results_parse_json_contract(tmp_path):
    recs = [r.as_json() for r in parse_paths([MLPERF])]
    assert len(recs) == 4
    for rec in recs:
        for k in (
            "path",
            "benchmark",
            "scenario",
            "mode",
            "metric",
            "value",
            "valid",
            "loadgen_version",
            "min_duration_ms",
            "early_stopping",
            "submission_valid",
            "submission_reasons",
        ):
            assert k in rec
    json.dumps(recs)  # serialisable as is
    by = {(r["benchmark"], r["scenario"], r["loadgen_version"][:3]): r["value"] for r in recs}
    assert by == {
        ("resnet50", "Offline", "1.1"): 136656,
        ("resnet50", "Server", "1.1"): 40002.8,
        ("bert-99", "Offline", "1.1"): 8475.47,
        ("resnet50", "Server", "4.1"): 632229,
    }


# --- summary fallback --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("run", "metric", "value"),
    [
        (DELL_OFFLINE, "result_samples_per_second", 136656),
        (DELL_SERVER, "result_scheduled_samples_per_sec", 40002.77),
        (VA100_BERT, "result_samples_per_second", 8475.47),
    ],
)
def test_summary_fallback_when_detail_missing(tmp_path, run, metric, value):
    d = copy_run(run, tmp_path / "resnet50/Offline/performance/run_1", detail=False)
    r = parse_run(d)
    assert r.source == "summary" and r.metric == metric and r.value == value
    assert r.valid and r.loadgen_version is None
    assert r.window_power is None and r.window_log is None
    assert any("summary log" in n for n in r.notes)


# --- damaged and edited logs ---------------------------------------------------------------------
def test_garbage_and_truncated_lines_are_reported_not_fatal(tmp_path):
    # edit: one non-MLLOG line inserted, one malformed MLLOG line, and a truncated last line
    text = (DELL_OFFLINE / "mlperf_log_detail.txt").read_text()
    lines = text.splitlines(keepends=True)
    lines.insert(10, "Some harness output that is not LoadGen's\n")
    lines.insert(20, ':::MLLOG {"key": "broken", "value": \n')
    text = "".join(lines) + ':::MLLOG {"key": "result_min_latency_ns", "val'
    f = tmp_path / "mlperf_log_detail.txt"
    f.write_text(text)
    r = parse_run(f)
    assert r.value == 136656 and r.valid
    reasons = [(b.line, b.reason) for b in r.bad_lines]
    assert reasons[0] == (11, "not an :::MLLOG line")
    assert reasons[1][0] == 21 and reasons[1][1].startswith("malformed :::MLLOG JSON")
    assert reasons[2][1] == "truncated :::MLLOG line (file ends inside it)"
    assert any("3 unreadable line(s)" in n for n in r.notes)


def test_log_cut_before_results_is_not_valid(tmp_path):
    # edit: the file ends (mid-line) before LoadGen wrote its results
    text = (DELL_OFFLINE / "mlperf_log_detail.txt").read_text()
    cut = text.index(':::MLLOG {"key": "power_begin"') + 40
    f = tmp_path / "mlperf_log_detail.txt"
    f.write_text(text[:cut])
    r = parse_run(f)
    assert not r.valid and r.value is None
    assert "no result_samples_per_second in the log (run cut short?)" in r.invalid_reasons
    assert "no result_validity in the log (run cut short?)" in r.invalid_reasons
    assert not r.submission_valid
    assert r.window_power is None and r.window_log is not None
    assert r.bad_lines[-1].reason.startswith("truncated")


def test_error_line_invalidates(tmp_path):
    # edit: one LoadGen error line appended (as MLPERF_LOG_ERROR writes it)
    text = (DELL_OFFLINE / "mlperf_log_detail.txt").read_text()
    err = {
        "key": "error_runtime",
        "value": "Loadgen built with uncommitted changes!",
        "time_ms": 1.0,
        "namespace": "mlperf::logging",
        "event_type": "POINT_IN_TIME",
        "metadata": {"is_error": True, "is_warning": False},
    }
    f = tmp_path / "mlperf_log_detail.txt"
    f.write_text(text + ":::MLLOG " + json.dumps(err) + "\n")
    r = parse_run(f)
    assert r.loadgen_validity == "VALID" and not r.valid
    assert r.invalid_reasons == [
        "1 error line(s): line 82: error_runtime: Loadgen built with uncommitted changes!"
    ]
    assert "1 error line(s) in the log" in r.submission_reasons


def test_first_occurrence_wins(tmp_path):
    # edit: a second result_samples_per_second line with another value appended
    src = DELL_OFFLINE / "mlperf_log_detail.txt"
    dup = {"key": "result_samples_per_second", "value": 1, "time_ms": 9e9, "metadata": {}}
    f = tmp_path / "mlperf_log_detail.txt"
    f.write_text(src.read_text() + ":::MLLOG " + json.dumps(dup) + "\n")
    r = parse_run(f)
    assert r.value == 136656 and r.valid
    assert "result_samples_per_second logged 2 times; the first is used" in r.notes
    assert read_detail_log(f).duplicates["result_samples_per_second"] == 1


def test_invalid_loadgen_result_is_reported(tmp_path):
    # edit: result_validity and result_min_duration_met flipped as LoadGen writes a short run
    text = edit_mllog(
        (DELL_OFFLINE / "mlperf_log_detail.txt").read_text(),
        {"result_validity": "INVALID", "result_min_duration_met": False},
    )
    f = tmp_path / "mlperf_log_detail.txt"
    f.write_text(text)
    r = parse_run(f)
    assert not r.valid and r.value == 136656
    assert r.invalid_reasons == ["LoadGen says INVALID (not met: min_duration)"]
    assert "LoadGen result is INVALID, not VALID" in r.submission_reasons


def test_summary_disagreeing_with_detail_invalidates(tmp_path):
    # edit: the detail log's metric changed while the summary beside it keeps 136656
    d = copy_run(DELL_OFFLINE, tmp_path / "run_1")
    f = d / "mlperf_log_detail.txt"
    f.write_text(edit_mllog(f.read_text(), {"result_samples_per_second": 130000}))
    r = parse_run(d)
    assert not r.valid
    assert r.invalid_reasons == [
        "mlperf_log_summary.txt reports result_samples_per_second 136656, the detail log 130000"
    ]


def test_submission_rules_short_duration(tmp_path):
    # edit: effective_min_duration_ms set to 60 s (LoadGen can still say VALID)
    text = edit_mllog(
        (DELL_OFFLINE / "mlperf_log_detail.txt").read_text(),
        {"effective_min_duration_ms": 60000, "effective_samples_per_query": 1000},
    )
    f = tmp_path / "mlperf_log_detail.txt"
    f.write_text(text)
    r = parse_run(f, benchmark="resnet50")
    assert r.valid and not r.submission_valid
    assert r.submission_reasons == [
        "min_duration 60000 ms < 600000 ms",
        "samples_per_query 1000 < 24576 required for Offline",
    ]


def test_submission_rules_server_latency_bound(tmp_path):
    # edit: the p99 latency of the H200 Server run raised to 16 ms, over ResNet50's 15 ms
    text = edit_mllog(
        (H200_SERVER / "mlperf_log_detail.txt").read_text(),
        {"result_99.00_percentile_latency_ns": 16000000, "early_stopping_met": False},
    )
    d = tmp_path / "resnet50/Server/performance/run_1"
    d.mkdir(parents=True)
    (d / "mlperf_log_detail.txt").write_text(text)
    r = parse_run(d)
    # LoadGen's VALID is the AND of its checks, early stopping among them: VALID beside
    # early_stopping_met false is a log that contradicts itself, so the run is not valid
    assert r.benchmark == "resnet50" and r.loadgen_validity == "VALID" and not r.valid
    assert r.invalid_reasons == ["LoadGen says VALID, but early_stopping_met is false"]
    assert r.submission_reasons == [
        "early stopping not met: * Run successful.",
        "p99 latency 16.000 ms > 15 ms bound",
    ]


def test_submission_rules_min_queries_before_early_stopping(tmp_path):
    # edit: the LoadGen 1.1 Server run's min_query_count lowered below 270336
    text = edit_mllog(
        (DELL_SERVER / "mlperf_log_detail.txt").read_text(), {"effective_min_query_count": 1000}
    )
    f = tmp_path / "mlperf_log_detail.txt"
    f.write_text(text)
    r = parse_run(f, benchmark="resnet50")
    assert r.submission_reasons == ["min_query_count 1000 < 270336 required for Server"]


# --- bad input ------------------------------------------------------------------------------------
def test_not_a_loadgen_log_is_a_validation_error(tmp_path):
    f = tmp_path / "mlperf_log_detail.txt"
    f.write_text("hello\nworld\n")
    with pytest.raises(ValidationError) as exc:
        parse_run(f)
    assert str(exc.value.problems[0]).endswith(
        "not an MLPerf LoadGen detail log: no ':::MLLOG {json}' line"
    )


def test_parse_paths_collects_every_problem(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValidationError) as exc:
        parse_paths([tmp_path / "missing", empty, DELL_OFFLINE])
    lines = [str(p) for p in exc.value.problems]
    assert lines == [
        f"{tmp_path / 'missing'}: (top): no such file or directory",
        f"{empty}: (top): no mlperf_log_detail.txt or mlperf_log_summary.txt under this directory",
    ]


# --- run metadata ---------------------------------------------------------------------------------
def test_run_meta_nearest_wins(tmp_path):
    run = copy_run(DELL_OFFLINE, tmp_path / "s6/vm2/resnet50/Offline/performance/run_1")
    (tmp_path / "s6/vm2/miglab_run.json").write_text(
        json.dumps(
            {"simulated": False, "backend": "nvidia", "weights": "real", "profile": "2g.20gb"}
        )
    )
    (run / "miglab_run.json").write_text(
        json.dumps(
            {
                "simulated": True,
                "weights": "random",
                "started_at": "2026-01-05T10:00:00Z",
                "finished_at": "2026-01-05T10:13:00+00:00",
                "custom": 1,
            }
        )
    )
    m = read_run_meta(run)
    assert (m.simulated, m.backend, m.weights, m.profile) == (True, "nvidia", "random", "2g.20gb")
    assert m.extra == {"custom": 1}
    r = parse_run(run)
    assert r.window_runner[1] - r.window_runner[0] == (
        datetime(2026, 1, 5, 10, 13) - datetime(2026, 1, 5, 10, 0)
    )
    assert r.as_json()["meta"]["simulated"] is True


def test_run_meta_bad_values(tmp_path):
    (tmp_path / "miglab_run.json").write_text(
        json.dumps({"simulated": "yes", "weights": "pretrained", "started_at": "10:00"})
    )
    with pytest.raises(ValidationError) as exc:
        read_run_meta(tmp_path)
    assert [(p.field, p.reason) for p in exc.value.problems] == [
        ("simulated", "must be a bool, got str"),
        ("weights", "must be one of real, random, none, got 'pretrained'"),
        ("started_at", "must be an ISO 8601 time with a time zone, got '10:00'"),
    ]


# --- metric table ---------------------------------------------------------------------------------
def test_metric_by_release():
    assert loadgen_release("1.1 @ b1452de454") == (1, 1)
    assert loadgen_release("5.1.0 @ abc") == (5, 1)
    assert loadgen_release(None) is None
    m = {
        ("Offline", (1, 1)): "result_samples_per_second",
        ("Server", (1, 1)): "result_scheduled_samples_per_sec",
        ("Server", (4, 0)): "result_scheduled_samples_per_sec",
        ("Server", (4, 1)): "result_completed_samples_per_sec",
        ("Server", (6, 0)): "result_completed_samples_per_sec",
        ("SingleStream", (1, 1)): "result_90.00_percentile_latency_ns",
        ("SingleStream", (2, 0)): "early_stopping_latency_ss",
        ("MultiStream", (1, 1)): "effective_samples_per_query",
        ("MultiStream", (3, 1)): "early_stopping_latency_ms",
    }
    for (scen, rel), key in m.items():
        assert metric_for(scen, rel).key == key, (scen, rel)
    assert metric_for("SingleStream", (2, 0)).higher_is_better is False
    assert not metric_for("SingleStream", (2, 0)).throughput
