"""One MLPerf Inference run as miglab counts it: a :class:`RunRecord` read from LoadGen's logs
(:mod:`miglab.formats.loadgen`) and miglab's run metadata (:mod:`miglab.formats.run_meta`), with
its metric and the submission rules (:mod:`miglab.core.mlperf_rules`) applied.

* a line LoadGen marks as an error, or a non-zero ``num_errors``, invalidates the run; a bad line
  does not by itself, but a log cut before its results has no ``result_validity`` and is
  therefore not VALID;
* each record says whether the run would satisfy the submission rules on top of LoadGen's own
  VALID, and carries the run window: LoadGen's ``power_begin`` / ``power_end`` (the timed part of
  the run, millisecond resolution, the host's clock) or, failing those, ``test_datetime`` plus the
  ``time_ms`` of the first and last lines;
* a run read from a summary log cannot be checked for concurrency (no timestamps).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from miglab.core.mlperf_rules import as_number, loadgen_release, metric_for, submission_problems
from miglab.errors import Problem, ValidationError
from miglab.formats.loadgen import (
    DETAIL_LOG,
    POWER_TIME_FORMAT,
    SCENARIOS,
    SUMMARY_LOG,
    TEST_DATETIME_FORMAT,
    BadLine,
    DetailLog,
    find_run_logs,
    looks_like_summary,
    read_detail_log,
    read_summary_log,
)
from miglab.formats.run_meta import RunMeta, read_run_meta

__all__ = ["RunRecord", "parse_paths", "parse_run"]


@dataclass
class RunRecord:
    """One LoadGen run as read from its logs; ``as_json()`` is the ``results parse`` record."""

    path: str  # the log file read
    source: str  # "detail" | "summary"
    run_dir: str
    benchmark: str | None
    scenario: str | None  # MLPerf scenario (effective_scenario)
    mode: str | None  # effective_test_mode
    metric: str | None
    value: float | int | None
    unit: str | None
    higher_is_better: bool | None
    throughput: bool
    loadgen_validity: str | None  # result_validity as logged
    valid: bool  # LoadGen VALID, no error lines, a value
    invalid_reasons: list[str]
    submission_valid: bool
    submission_reasons: list[str]
    loadgen_version: str | None
    loadgen_release: tuple[int, int] | None
    sut_name: str | None
    settings: dict  # effective_* keys (seeds included) as logged
    seeds: dict
    early_stopping: dict
    latency_ns: dict  # min/max/mean and percentiles "50.00" ...
    results: dict  # other result_* keys (query counts, flags, ...)
    test_datetime: str | None
    power_begin: str | None
    power_end: str | None
    first_time_ms: float | None
    last_time_ms: float | None
    result_time_ms: float | None
    window_power: tuple[datetime, datetime] | None
    window_log: tuple[datetime, datetime] | None
    errors: list[str]
    warnings: int
    bad_lines: list[BadLine]
    notes: list[str]
    summary_value: float | int | None = None
    meta: RunMeta = field(default_factory=RunMeta)

    # -- windows ---------------------------------------------------------------------------------
    @property
    def window_runner(self) -> tuple[datetime, datetime] | None:
        m = self.meta
        if m.started_at and m.finished_at and m.finished_at >= m.started_at:
            return (m.started_at, m.finished_at)
        return None

    def window(self, source: str) -> tuple[datetime, datetime] | None:
        return {
            "power": self.window_power,
            "runner": self.window_runner,
            "log": self.window_log,
        }[source]

    @property
    def duration_s(self) -> float | None:
        w = self.window_power or self.window_runner or self.window_log
        return None if w is None else (w[1] - w[0]).total_seconds()

    @property
    def min_duration_ms(self):
        return self.settings.get("effective_min_duration_ms")

    def as_json(self) -> dict:
        def iso(w):
            return None if w is None else [w[0].isoformat(), w[1].isoformat()]

        return {
            "path": self.path,
            "source": self.source,
            "run_dir": self.run_dir,
            "benchmark": self.benchmark,
            "scenario": self.scenario,
            "mode": self.mode,
            "metric": self.metric,
            "value": self.value,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "valid": self.valid,
            "loadgen_validity": self.loadgen_validity,
            "invalid_reasons": self.invalid_reasons,
            "submission_valid": self.submission_valid,
            "submission_reasons": self.submission_reasons,
            "loadgen_version": self.loadgen_version,
            "min_duration_ms": self.min_duration_ms,
            "early_stopping": self.early_stopping,
            "sut_name": self.sut_name,
            "settings": self.settings,
            "seeds": self.seeds,
            "latency_ns": self.latency_ns,
            "results": self.results,
            "summary_value": self.summary_value,
            "timestamps": {
                "test_datetime": self.test_datetime,
                "power_begin": self.power_begin,
                "power_end": self.power_end,
                "first_time_ms": self.first_time_ms,
                "last_time_ms": self.last_time_ms,
                "result_time_ms": self.result_time_ms,
                "window_power": iso(self.window_power),
                "window_log": iso(self.window_log),
                "window_runner": iso(self.window_runner),
                "duration_s": self.duration_s,
            },
            "errors": self.errors,
            "warnings": self.warnings,
            "bad_lines": [b.as_json() for b in self.bad_lines],
            "notes": self.notes,
            "meta": self.meta.as_json(),
        }


def _parse_time(s, fmt) -> datetime | None:
    if not isinstance(s, str):
        return None
    try:
        return datetime.strptime(s.strip(), fmt)
    except ValueError:
        return None


def _benchmark_from_path(run_dir: Path) -> str | None:
    """``.../<benchmark>/<Scenario>/performance/run_<n>`` -> benchmark."""
    parts = run_dir.parts
    for i in range(len(parts) - 1, 1, -1):
        if parts[i] in ("performance", "accuracy") and parts[i - 1] in SCENARIOS:
            return parts[i - 2]
        if parts[i] in SCENARIOS and i >= 1 and i == len(parts) - 1:
            return parts[i - 1]
    return None


def _values_agree(a, b) -> bool:
    """Detail (6 significant digits) and summary (2 decimals) values of one run agree."""
    a, b = float(a), float(b)
    if a == b:
        return True
    mag = max(abs(a), abs(b))
    sig6 = 0.5 * 10 ** (math.floor(math.log10(mag)) - 5) if mag > 0 else 0.0
    return abs(a - b) <= sig6 + 0.005 + 1e-9


def parse_run(path: str | Path, benchmark: str | None = None) -> RunRecord:
    """Read one run: a run directory, a detail log or a summary log.

    A directory is read through its detail log, else its summary log. Raises ValidationError
    (``FILE: FIELD: reason``) when there is no LoadGen log to read.
    """
    p = Path(path)
    if p.is_dir():
        run_dir = p
        detail, summary = p / DETAIL_LOG, p / SUMMARY_LOG
        if detail.is_file():
            file = detail
        elif summary.is_file():
            file = summary
        else:
            raise ValidationError(
                [Problem(str(p), "", f"no {DETAIL_LOG} or {SUMMARY_LOG} in this directory")]
            )
    elif p.exists():
        run_dir, file = p.parent, p
    else:
        raise ValidationError([Problem(str(p), "", "no such file or directory")])

    is_summary = file.name == SUMMARY_LOG or (file.name != DETAIL_LOG and looks_like_summary(file))
    log = read_summary_log(file) if is_summary else read_detail_log(file)
    meta = read_run_meta(run_dir)
    bench = benchmark or meta.benchmark or _benchmark_from_path(run_dir)
    return _record(log, "summary" if is_summary else "detail", run_dir, bench, meta, file)


def _record(
    log: DetailLog, source: str, run_dir: Path, bench: str | None, meta: RunMeta, file: Path
) -> RunRecord:
    g = log.get
    version = g("loadgen_version")
    release = loadgen_release(version)
    scenario = g("effective_scenario") or g("requested_scenario")
    mode = g("effective_test_mode") or g("requested_test_mode")
    notes: list[str] = []
    invalid: list[str] = []
    keys = list(log.entries)
    metric = metric_for(scenario, release, keys, prefer_first=source == "summary")
    value = None
    if scenario not in SCENARIOS:
        invalid.append(f"unknown MLPerf scenario {scenario!r}")
    elif metric is not None:
        value = g(metric.key)
        if as_number(value) is None:
            if mode == "PerformanceOnly":
                invalid.append(f"no {metric.key} in the log (run cut short?)")
            value = None
    validity = g("result_validity")
    if validity is None:
        invalid.append("no result_validity in the log (run cut short?)")
    elif validity != "VALID":
        reason = g("result_invalid_reason")
        flags = [
            k.removeprefix("result_").removesuffix("_met")
            for k in (
                "result_perf_constraints_met",
                "result_min_duration_met",
                "result_min_queries_met",
                "early_stopping_met",
            )
            if g(k) is False
        ]
        detail = f": {reason.strip()}" if isinstance(reason, str) and reason.strip() else ""
        if flags:
            detail += f" (not met: {', '.join(flags)})"
        invalid.append(f"LoadGen says {validity}{detail}")
    if log.errors:
        invalid.append(f"{len(log.errors)} error line(s): {log.errors[0]}")
    num_errors = as_number(g("num_errors"))
    if num_errors:
        invalid.append(f"LoadGen counted {num_errors:g} error(s) (num_errors)")
    if log.bad_lines:
        notes.append(
            f"{len(log.bad_lines)} unreadable line(s) skipped, first at {log.bad_lines[0]}"
        )
    for k, n in log.duplicates.items():
        if k.startswith(("result_", "effective_", "early_stopping")):
            notes.append(f"{k} logged {n + 1} times; the first is used")
    if mode is not None and mode != "PerformanceOnly":
        notes.append(f"{mode} run: not a throughput measurement")
    if source == "summary":
        notes.append("read from the summary log: no LoadGen version, timestamps or error lines")

    summary_value = None
    if source == "detail" and metric is not None and value is not None:
        sfile = run_dir / SUMMARY_LOG
        if sfile.is_file():
            try:
                s = read_summary_log(sfile)
            except ValidationError as exc:
                notes.append(f"{SUMMARY_LOG} unreadable: {exc.problems[0].reason}")
            else:
                sv = s.get(metric.key)
                if as_number(sv) is not None:
                    summary_value = sv
                    if not _values_agree(value, sv):
                        invalid.append(
                            f"{SUMMARY_LOG} reports {metric.key} {sv}, the detail log {value}"
                        )

    settings = {k: e.value for k, e in log.entries.items() if k.startswith("effective_")}
    seeds = {
        k.removeprefix("effective_"): v for k, v in settings.items() if k.endswith("_rng_seed")
    }
    early = {
        k: log.get(k)
        for k in (
            "early_stopping_met",
            "early_stopping_result",
            "early_stopping_latency_ss",
            "early_stopping_latency_ms",
            "early_stopping_ttft_result",
            "early_stopping_tpot_result",
        )
        if k in log.entries
    }
    if isinstance(early.get("early_stopping_result"), str):
        early["early_stopping_result"] = early["early_stopping_result"].strip()
    latency: dict = {}
    for k, e in log.entries.items():
        m = re.fullmatch(r"result_(min|max|mean)_latency_ns", k)
        if m:
            latency[m.group(1)] = e.value
            continue
        m = re.fullmatch(r"result_(\d+\.\d+)_percentile_latency_ns", k)
        if m:
            latency.setdefault("percentiles", {})[m.group(1)] = e.value
    results = {
        k: e.value
        for k, e in log.entries.items()
        if (k.startswith("result_") and not k.endswith("latency_ns"))
        or k in ("num_errors", "generated_query_count", "generated_samples_per_query")
    }
    if metric is not None and metric.key in results:
        results.pop(metric.key)

    test_dt = g("test_datetime")
    pb, pe = g("power_begin"), g("power_end")
    wp = None
    t0, t1 = _parse_time(pb, POWER_TIME_FORMAT), _parse_time(pe, POWER_TIME_FORMAT)
    if t0 and t1 and t1 >= t0:
        wp = (t0, t1)
    wl = None
    td = _parse_time(test_dt, TEST_DATETIME_FORMAT)
    if td and log.first_time_ms is not None and log.last_time_ms is not None:
        wl = (
            td + timedelta(milliseconds=log.first_time_ms),
            td + timedelta(milliseconds=log.last_time_ms),
        )

    valid = not invalid and value is not None
    sub = submission_problems(log, scenario, bench, release)
    if metric is not None and value is None and not any("no " + metric.key in r for r in sub):
        sub.append(f"no {metric.key} in the log")
    return RunRecord(
        path=str(file),
        source=source,
        run_dir=str(run_dir),
        benchmark=bench,
        scenario=scenario,
        mode=mode,
        metric=metric.key if metric else None,
        value=value,
        unit=metric.unit if metric else None,
        higher_is_better=metric.higher_is_better if metric else None,
        throughput=bool(metric and metric.throughput),
        loadgen_validity=validity,
        valid=valid,
        invalid_reasons=invalid,
        submission_valid=valid and not sub,
        submission_reasons=sub,
        loadgen_version=version,
        loadgen_release=release,
        sut_name=g("sut_name"),
        settings=settings,
        seeds=seeds,
        early_stopping=early,
        latency_ns=latency,
        results=results,
        test_datetime=test_dt,
        power_begin=pb,
        power_end=pe,
        first_time_ms=log.first_time_ms,
        last_time_ms=log.last_time_ms,
        result_time_ms=log.time_of("result_validity"),
        window_power=wp,
        window_log=wl,
        errors=list(log.errors),
        warnings=log.warnings,
        bad_lines=list(log.bad_lines),
        notes=notes,
        summary_value=summary_value,
        meta=meta,
    )


def parse_paths(paths) -> list[RunRecord]:
    """``results parse``: each path a log file, a run directory or a tree of runs.

    Every path is checked; all problems (missing paths, files that are not LoadGen logs, bad
    ``miglab_run.json``) are raised together.
    """
    records: list[RunRecord] = []
    problems: list[Problem] = []
    for path in paths:
        p = Path(path)
        if not p.exists():
            problems.append(Problem(str(p), "", "no such file or directory"))
            continue
        targets: list[Path]
        if p.is_dir() and not (p / DETAIL_LOG).is_file() and not (p / SUMMARY_LOG).is_file():
            targets = find_run_logs(p)
            if not targets:
                problems.append(
                    Problem(str(p), "", f"no {DETAIL_LOG} or {SUMMARY_LOG} under this directory")
                )
                continue
        else:
            targets = [p]
        for t in targets:
            try:
                records.append(parse_run(t))
            except ValidationError as exc:
                problems.extend(exc.problems)
    if problems:
        raise ValidationError(problems)
    return records
