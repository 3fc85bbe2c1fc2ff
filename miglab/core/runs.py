"""One MLPerf Inference run as miglab counts it: a :class:`RunRecord` read from LoadGen's logs
(:mod:`miglab.formats.loadgen`) and miglab's run metadata (:mod:`miglab.formats.run_meta`), with
its metric and the submission rules (:mod:`miglab.core.mlperf_rules`) applied.

* a line LoadGen marks as an error, or a non-zero ``num_errors``, invalidates the run; a bad line
  does not by itself, but a log cut before its results has no ``result_validity`` and is
  therefore not VALID;
* each record says whether the run would satisfy the submission rules on top of LoadGen's own
  VALID -- never when its ``miglab_run.json`` says it was simulated, ran random weights, synthetic
  inputs or on the CPU (:func:`~miglab.core.mlperf_rules.measurement_problems`) -- and carries
  the run window: LoadGen's ``power_begin`` / ``power_end`` (the timed part of the run,
  millisecond resolution, the host's clock) or, failing those, ``test_datetime`` plus the
  ``time_ms`` of the first and last lines;
* a run read from a summary log cannot be checked for concurrency (no timestamps).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from miglab.core.mlperf_rules import (
    as_number,
    loadgen_release,
    measurement_problems,
    metric_for,
    submission_problems,
)
from miglab.errors import Problem, ValidationError
from miglab.formats.files import UnreadableFile
from miglab.formats.loadgen import (
    DETAIL_LIMIT,
    DETAIL_LOG,
    POWER_TIME_FORMAT,
    SCENARIOS,
    SUMMARY_LIMIT,
    SUMMARY_LOG,
    TEST_DATETIME_FORMAT,
    BadLine,
    BadNumber,
    DetailLog,
    has_run_log,
    looks_like_summary_text,
    parse_detail_text,
    parse_summary_text,
    read_log_text,
    scan_tree,
)
from miglab.formats.manifest import link_reason
from miglab.formats.run_meta import RunMeta, read_run_meta

__all__ = ["MIN_OVERLAP", "RunRecord", "json_dumps", "parse_paths", "parse_run", "parse_run_safely"]

# The checks LoadGen ANDs into its VALID (loadgen results.cc): a log that says VALID beside one
# of these false contradicts itself. Not every release logs all four.
LOADGEN_FLAGS = (
    "result_perf_constraints_met",
    "result_min_duration_met",
    "result_min_queries_met",
    "early_stopping_met",
)

# The least fraction of a round's span (first start to last end) that all its VMs must run at once
# for the round to count as concurrent (issue 17): below it the VMs measured more of the GPU than
# they share in a real run, so their sum would overstate the scenario; "not concurrent", never
# summed.
MIN_OVERLAP = 0.9

# A metric value must be above 0 and at most this (samples/s, streams or ns): no system does
# 10^15 samples a second, no run takes 10^15 ns (11.6 days) per query; sums over VMs and
# statistics over runs of such values stay far inside a double.
METRIC_MAX = 1e15


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
    bad_numbers: list[dict] = field(default_factory=list)  # {line, key, text}: not finite

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
            "bad_numbers": self.bad_numbers,
            "notes": self.notes,
            "meta": self.meta.as_json(),
        }


def _short(s: str, n: int = 200) -> str:
    return s if len(s) <= n else s[:n] + "..."


def json_safe(data):
    """``data`` with every float that is not finite replaced by None (JSON has no NaN)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(v) for v in data]
    return data


def json_dumps(data, indent: int | None = 2) -> str:
    """Results as JSON text: always JSON (``allow_nan=False``; a NaN would be null)."""
    return json.dumps(json_safe(data), indent=indent, allow_nan=False)


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


def parse_run(
    path: str | Path, benchmark: str | None = None, *, root: str | Path | None = None
) -> RunRecord:
    """Read one run: a run directory, a detail log or a summary log.

    A directory is read through its detail log, else its summary log; a log in it that is a
    symbolic link is refused (never followed), as is one that is not a regular file. A file
    named on its own is read wherever it is. ``root`` is the results tree the run is part of
    (``miglab_run.json`` is not looked for above it). Raises ValidationError (``FILE: FIELD:
    reason``) when there is no LoadGen log to read.
    """
    p = Path(path)
    if p.is_dir():
        run_dir = p
        detail, summary = p / DETAIL_LOG, p / SUMMARY_LOG
        if os.path.lexists(detail):
            file = detail
        elif os.path.lexists(summary):
            file = summary
        else:
            raise ValidationError(
                [Problem(str(p), "", f"no {DETAIL_LOG} or {SUMMARY_LOG} in this directory")]
            )
        if file.is_symlink():
            raise ValidationError([Problem(str(file), "", link_reason(file, root or run_dir))])
    elif os.path.lexists(p):
        run_dir, file = p.parent, p
    else:
        raise ValidationError([Problem(str(p), "", "no such file or directory")])

    limit = SUMMARY_LIMIT if file.name == SUMMARY_LOG else DETAIL_LIMIT
    text = read_log_text(file, limit)
    is_summary = file.name == SUMMARY_LOG or (
        file.name != DETAIL_LOG and looks_like_summary_text(text)
    )
    log = parse_summary_text(text, str(file)) if is_summary else parse_detail_text(text, str(file))
    meta = read_run_meta(run_dir, root=root)
    bench = benchmark or meta.benchmark or _benchmark_from_path(run_dir)
    return _record(
        log, "summary" if is_summary else "detail", run_dir, bench, meta, file, root=root
    )


def _show(v) -> str:
    """A logged value as the log writes it (``false``, ``"no"``), at most 60 characters."""
    try:
        s = json.dumps(v, allow_nan=False)
    except (TypeError, ValueError):
        s = repr(v)
    return s if len(s) <= 60 else s[:60] + "..."


def _failed(flag) -> bool:
    """A check LoadGen logs as not met: anything but true (the summary of LoadGen 5+ says
    "Skipped" for min queries when it does not enforce them, and VALID beside it)."""
    return flag is not True and flag != "Skipped"


def _listed(items: list[str], total: int, shown: int = 3) -> str:
    more = f"; and {total - shown} more" if total > shown else ""
    return "; ".join(items[:shown]) + more


def _bad_numbers(log: DetailLog) -> str | None:
    if not log.bad_number_count:
        return None
    items = [f"{key} is {text} (line {n})" for n, key, text in log.bad_numbers]
    return f"not a finite number: {_listed(items, log.bad_number_count)}"


def _summary_checks(
    run_dir: Path, root: str | Path | None, log: DetailLog, metric, value, invalid, notes
):
    """Check the summary log beside a detail log against it; the summary's metric value (or
    None). Appends to ``invalid`` what contradicts the detail log, to ``notes`` the rest."""
    sfile = run_dir / SUMMARY_LOG
    if not os.path.lexists(sfile):
        return None
    if sfile.is_symlink():
        invalid.append(f"{SUMMARY_LOG}: {link_reason(sfile, root or run_dir)}")
        return None
    try:
        text = read_log_text(sfile, SUMMARY_LIMIT)
    except ValidationError as exc:
        invalid.append(f"{SUMMARY_LOG} refused: {exc.problems[0].reason}")
        return None
    try:
        s = parse_summary_text(text, str(sfile))
    except ValidationError as exc:
        notes.append(f"{SUMMARY_LOG} unreadable: {exc.problems[0].reason}")
        return None
    bad = _bad_numbers(s)
    if bad:
        invalid.append(f"{SUMMARY_LOG}: {bad}")
    g, sg = log.get, s.get
    said = False
    for key, what in (
        ("result_validity", "result"),
        ("effective_scenario", "scenario"),
        ("effective_test_mode", "test mode"),
    ):
        if key in s.entries and key in log.entries and sg(key) != g(key):
            invalid.append(
                f"{SUMMARY_LOG} says {what} {_show(sg(key))}, {DETAIL_LOG} says {_show(g(key))}"
            )
            said = said or key == "result_validity"
    if not said and g("result_validity") == "VALID":
        failed = [k for k in LOADGEN_FLAGS if k in s.entries and _failed(sg(k))]
        if failed:
            invalid.append(
                f"{DETAIL_LOG} says VALID, but {SUMMARY_LOG} says "
                + ", ".join(f"{k} is {_show(sg(k))}" for k in failed)
            )
    summary_value = None
    if metric is not None and value is not None:
        sv = sg(metric.key)
        if as_number(sv) is not None:
            summary_value = sv
            if not _values_agree(value, sv):
                invalid.append(f"{SUMMARY_LOG} reports {metric.key} {sv}, the detail log {value}")
    return summary_value


def _record(
    log: DetailLog,
    source: str,
    run_dir: Path,
    bench: str | None,
    meta: RunMeta,
    file: Path,
    root: str | Path | None = None,
) -> RunRecord:
    g = log.get
    notes: list[str] = []
    invalid: list[str] = []

    def text(*keys, required: bool = False) -> str | None:
        """The first of ``keys`` logged, as text; a value of another type is a reason."""
        for key in keys:
            v = g(key)
            if v is None or v == "":
                continue
            if isinstance(v, str) and not isinstance(v, BadNumber):
                return v
            (invalid if required else notes).append(f"{key} is {_show(v)}, not text")
            return None
        return None

    version = text("loadgen_version")
    release = loadgen_release(version)
    scenario = text("effective_scenario", "requested_scenario", required=True)
    mode = text("effective_test_mode", "requested_test_mode", required=True)
    keys = list(log.entries)
    metric = metric_for(scenario, release, keys, prefer_first=source == "summary")
    value = None
    bad = _bad_numbers(log)
    if bad:
        invalid.append(bad)
    if scenario not in SCENARIOS:
        invalid.append(f"unknown MLPerf scenario {_show(scenario)}")
    elif metric is not None:
        value = g(metric.key)
        number = as_number(value)
        if number is None:
            if isinstance(value, BadNumber) or any(k == metric.key for _, k, _ in log.bad_numbers):
                pass  # said above
            elif metric.key in log.entries and mode == "PerformanceOnly":
                invalid.append(f"{metric.key} is {_show(value)}, not a number")
            elif mode == "PerformanceOnly":
                invalid.append(f"no {metric.key} in the log (run cut short?)")
            value = None
        elif not 0 < number <= METRIC_MAX:
            invalid.append(
                f"{metric.key} {value} is out of range (above 0, at most {METRIC_MAX:g})"
            )
    negative = [
        f"{k} {e.value} (line {e.line})"
        for k, e in log.entries.items()
        if k.startswith(("result_", "effective_", "early_stopping_"))
        and (as_number(e.value) or 0) < 0
    ]
    if negative:
        invalid.append(f"negative value(s): {_listed(negative, len(negative))}")
    validity = g("result_validity")
    if validity is None:
        invalid.append("no result_validity in the log (run cut short?)")
    elif validity != "VALID":
        reason = g("result_invalid_reason")
        flags = [
            k.removeprefix("result_").removesuffix("_met") for k in LOADGEN_FLAGS if g(k) is False
        ]
        detail = f": {_short(reason.strip())}" if isinstance(reason, str) and reason.strip() else ""
        if flags:
            detail += f" (not met: {', '.join(flags)})"
        shown = validity if isinstance(validity, str) and len(validity) <= 40 else _show(validity)
        invalid.append(f"LoadGen says {shown}{detail}")
    else:
        # LoadGen's VALID is the AND of these checks (results.cc): VALID beside a failed one
        # is a log that contradicts itself.
        failed = [k for k in LOADGEN_FLAGS if k in log.entries and _failed(g(k))]
        if failed:
            invalid.append(
                "LoadGen says VALID, but " + ", ".join(f"{k} is {_show(g(k))}" for k in failed)
            )
    if log.error_count:
        invalid.append(f"{log.error_count} error line(s): {log.errors[0]}")
    num_errors = as_number(g("num_errors"))
    if num_errors:
        invalid.append(f"LoadGen counted {num_errors:g} error(s) (num_errors)")
    if log.bad_line_count:
        notes.append(
            f"{log.bad_line_count} unreadable line(s) skipped, first at {log.bad_lines[0]}"
        )
    dups = [
        f"{k} logged {n + 1} times; the first is used"
        for k, n in log.duplicates.items()
        if k.startswith(("result_", "effective_", "early_stopping"))
    ]
    notes += dups[:5]
    if len(dups) > 5:
        notes.append(f"and {len(dups) - 5} more keys logged more than once")
    if mode is not None and mode != "PerformanceOnly":
        notes.append(f"{mode} run: not a throughput measurement")
    if source == "summary":
        notes.append("read from the summary log: no LoadGen version, timestamps or error lines")

    summary_value = None
    if source == "detail":
        summary_value = _summary_checks(run_dir, root, log, metric, value, invalid, notes)

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

    test_dt = text("test_datetime")
    pb, pe = text("power_begin"), text("power_end")
    wp = None
    t0, t1 = _parse_time(pb, POWER_TIME_FORMAT), _parse_time(pe, POWER_TIME_FORMAT)
    if t0 and t1 and t1 >= t0:
        wp = (t0, t1)
    wl = None
    td = _parse_time(test_dt, TEST_DATETIME_FORMAT)
    if td and log.first_time_ms is not None and log.last_time_ms is not None:
        try:
            wl = (
                td + timedelta(milliseconds=log.first_time_ms),
                td + timedelta(milliseconds=log.last_time_ms),
            )
        except OverflowError:
            notes.append("test_datetime + time_ms is beyond the year 9999: no log window")

    valid = not invalid and value is not None
    sub = submission_problems(log, scenario, bench, release)
    if metric is not None and value is None and not any("no " + metric.key in r for r in sub):
        sub.append(
            f"{metric.key} is not a usable number"
            if metric.key in log.entries
            else f"no {metric.key} in the log"
        )
    sub += measurement_problems(
        simulated=meta.simulated,
        weights=meta.weights,
        inputs=meta.inputs,
        device_kind=(meta.device or {}).get("kind"),
    )
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
        loadgen_validity=validity
        if validity is None or isinstance(validity, str)
        else _show(validity),
        valid=valid,
        invalid_reasons=invalid,
        submission_valid=valid and not sub,
        submission_reasons=sub,
        loadgen_version=version,
        loadgen_release=release,
        sut_name=text("sut_name"),
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
        bad_numbers=[{"line": n, "key": k, "text": t} for n, k, t in log.bad_numbers],
    )


# What a LoadGen bug, a damaged file or a hand-edited log can raise from deep inside the reading
# of one run: each is that run's problem, never the end of a report over all the others.
READ_ERRORS = (OSError, ValueError, TypeError, ArithmeticError, RecursionError, UnreadableFile)


def parse_run_safely(path, benchmark=None, *, root=None) -> tuple[RunRecord | None, str | None]:
    """:func:`parse_run`, or why it could not read the run (one line per problem)."""
    try:
        return parse_run(path, benchmark, root=root), None
    except ValidationError as exc:
        return None, "; ".join(str(p) for p in exc.problems)
    except READ_ERRORS as exc:
        return None, f"{path}: cannot read: {type(exc).__name__}: {str(exc)[:200]}"


def parse_paths(paths) -> list[RunRecord]:
    """``results parse``: each path a log file, a run directory or a tree of runs.

    Every path is checked; all problems (missing paths, files that are not LoadGen logs, bad
    ``miglab_run.json``, symbolic links to folders in a tree, never followed) are raised
    together.
    """
    records: list[RunRecord] = []
    problems: list[Problem] = []
    for path in paths:
        p = Path(path)
        if not os.path.lexists(p):
            problems.append(Problem(str(p), "", "no such file or directory"))
            continue
        targets: list[Path]
        root = None
        if p.is_dir() and not has_run_log(p):
            scan = scan_tree(p)
            problems.extend(Problem(str(d), "", why) for d, why in scan.refused)
            targets, root = scan.run_dirs, p
            if not targets:
                if not scan.refused:
                    problems.append(
                        Problem(
                            str(p), "", f"no {DETAIL_LOG} or {SUMMARY_LOG} under this directory"
                        )
                    )
                continue
        else:
            targets = [p]
        for t in targets:
            try:
                records.append(parse_run(t, root=root))
            except ValidationError as exc:
                problems.extend(exc.problems)
            except READ_ERRORS as exc:
                problems.append(Problem(str(t), "", f"cannot read: {type(exc).__name__}: {exc}"))
    if problems:
        raise ValidationError(problems)
    return records
