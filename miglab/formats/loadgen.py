"""Read MLPerf Inference LoadGen's log files: ``mlperf_log_detail.txt`` and, failing it,
``mlperf_log_summary.txt`` (what :mod:`miglab.core.runs` turns into one record per run).

The detail log holds one ``:::MLLOG {json}`` line per event, as LoadGen 1.1 through 6.x writes
it. Read as MLCommons' submission checker and ``log_parser.py`` read it:

* the **first** occurrence of a key wins (a file holding two runs is read as its first run; later
  ``result_*`` duplicates are reported);
* any line whose ``metadata.is_error`` (or a top-level ``is_error``) is true, or a non-zero
  ``num_errors`` (LoadGen 5+), is an error line;
* a line that is not an ``:::MLLOG`` line, or whose JSON is truncated or malformed, is reported
  (line number and reason) and skipped.

Values are kept exactly as logged (LoadGen writes doubles with six significant digits in the
detail log, two decimals in the summary). The summary log carries no LoadGen version, no
timestamps and no error lines.

Only the standard library is used.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miglab.errors import Problem, ValidationError

__all__ = [
    "DETAIL_LOG",
    "MLLOG_PREFIX",
    "SCENARIOS",
    "SUMMARY_LOG",
    "BadLine",
    "DetailLog",
    "find_run_logs",
    "has_run_log",
    "looks_like_summary",
    "read_detail_log",
    "read_summary_log",
]

DETAIL_LOG = "mlperf_log_detail.txt"
SUMMARY_LOG = "mlperf_log_summary.txt"
MLLOG_PREFIX = ":::MLLOG"
# LoadGen's scenarios (TestScenario), as its logs and MLPerf's results tree name them.
SCENARIOS = ("Offline", "Server", "SingleStream", "MultiStream")
POWER_TIME_FORMAT = "%m-%d-%Y %H:%M:%S.%f"  # LoadGen's power_begin/power_end
TEST_DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # LoadGen's test_datetime (host clock, despite 'Z')


# --- low-level readers -------------------------------------------------------------------------
@dataclass(frozen=True)
class BadLine:
    """A line of a detail log that could not be used."""

    line: int  # 1-based
    reason: str
    text: str  # the first 120 characters

    def as_json(self) -> dict:
        return {"line": self.line, "reason": self.reason, "text": self.text}

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass(frozen=True)
class Entry:
    value: Any
    time_ms: float | None
    line: int


@dataclass
class DetailLog:
    """The keys of one ``mlperf_log_detail.txt`` (first occurrence wins) and what was wrong."""

    path: str
    entries: dict[str, Entry] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)  # key -> later occurrences
    errors: list[str] = field(default_factory=list)  # "key: value" of is_error lines
    warnings: int = 0  # lines with is_warning
    bad_lines: list[BadLine] = field(default_factory=list)
    first_time_ms: float | None = None
    last_time_ms: float | None = None
    mllog_lines: int = 0

    def get(self, key: str, default=None):
        e = self.entries.get(key)
        return default if e is None else e.value

    def time_of(self, key: str) -> float | None:
        e = self.entries.get(key)
        return None if e is None else e.time_ms

    def values(self) -> dict[str, Any]:
        return {k: e.value for k, e in self.entries.items()}


def _is_true(v) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


def read_detail_log(path: str | Path) -> DetailLog:
    """Read a detail log; raise ValidationError when the file is missing or not a LoadGen log."""
    file = str(path)
    p = Path(path)
    if not p.is_file():
        raise ValidationError(
            [Problem(file, "", "no such file" if not p.exists() else "not a regular file")]
        )
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ValidationError([Problem(file, "", f"cannot read: {exc.strerror}")]) from None
    text = raw.decode("utf-8", errors="replace")
    log = DetailLog(file)
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines = lines[:-1]
    for i, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        last = i == len(lines)
        if not stripped.startswith(MLLOG_PREFIX):
            log.bad_lines.append(BadLine(i, "not an :::MLLOG line", stripped[:120]))
            continue
        try:
            rec = json.loads(stripped[len(MLLOG_PREFIX) :])
        except json.JSONDecodeError as exc:
            reason = (
                "truncated :::MLLOG line (file ends inside it)"
                if last and not ends_with_newline
                else f"malformed :::MLLOG JSON ({exc.msg} at column {exc.colno})"
            )
            log.bad_lines.append(BadLine(i, reason, stripped[:120]))
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
            log.bad_lines.append(BadLine(i, ":::MLLOG record has no 'key'", stripped[:120]))
            continue
        log.mllog_lines += 1
        key = rec["key"]
        value = rec.get("value")
        t = rec.get("time_ms")
        t = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
        if t is not None:
            log.first_time_ms = t if log.first_time_ms is None else min(log.first_time_ms, t)
            log.last_time_ms = t if log.last_time_ms is None else max(log.last_time_ms, t)
        meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
        if _is_true(meta.get("is_error")) or _is_true(rec.get("is_error")):
            log.errors.append(f"line {i}: {key}: {value}")
        if _is_true(meta.get("is_warning")) or _is_true(rec.get("is_warning")):
            log.warnings += 1
        if key in log.entries:
            log.duplicates[key] = log.duplicates.get(key, 0) + 1
        else:
            log.entries[key] = Entry(value, t, i)
    if log.mllog_lines == 0:
        raise ValidationError(
            [Problem(file, "", "not an MLPerf LoadGen detail log: no ':::MLLOG {json}' line")]
        )
    return log


_SUMMARY_KEYS = {
    "sut name": "sut_name",
    "scenario": "effective_scenario",
    "mode": "effective_test_mode",
    "samples per second": "result_samples_per_second",
    "scheduled samples per second": "result_scheduled_samples_per_sec",
    "completed samples per second": "result_completed_samples_per_sec",
    "tokens per second": "result_tokens_per_second",
    "result is": "result_validity",
    "performance constraints satisfied": "result_perf_constraints_met",
    "min duration satisfied": "result_min_duration_met",
    "min queries satisfied": "result_min_queries_met",
    "early stopping satisfied": "early_stopping_met",
    "qps w/ loadgen overhead": "result_qps_with_loadgen_overhead",
    "qps w/o loadgen overhead": "result_qps_without_loadgen_overhead",
    "min latency (ns)": "result_min_latency_ns",
    "max latency (ns)": "result_max_latency_ns",
    "mean latency (ns)": "result_mean_latency_ns",
    "samples_per_query": "effective_samples_per_query",
    "target_qps": "effective_target_qps",
    "target_latency (ns)": "effective_target_latency_ns",
    "max_async_queries": "effective_max_async_queries",
    "min_duration (ms)": "effective_min_duration_ms",
    "max_duration (ms)": "effective_max_duration_ms",
    "min_query_count": "effective_min_query_count",
    "max_query_count": "effective_max_query_count",
    "qsl_rng_seed": "effective_qsl_rng_seed",
    "sample_index_rng_seed": "effective_sample_index_rng_seed",
    "schedule_rng_seed": "effective_schedule_rng_seed",
    "accuracy_log_rng_seed": "effective_accuracy_log_rng_seed",
    "accuracy_log_probability": "effective_accuracy_log_probability",
    "accuracy_log_sampling_target": "effective_accuracy_log_sampling_target",
    "performance_sample_count": "effective_performance_sample_count",
}
_PERCENTILE_RE = re.compile(r"^(\d+(?:\.\d+)?) percentile latency \(ns\)$")
_TARGET_PCT_RE = re.compile(r"^(\d+(?:\.\d+)?)th percentile latency \(ns\)$")
_ES_RE = re.compile(r"^\*?\s*early stopping (\d+(?:\.\d+)?)th percentile estimate$")


def _summary_value(s: str):
    s = s.strip()
    if s in ("Yes", "YES", "yes"):
        return True
    if s in ("NO", "No", "no"):
        return False
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    if re.fullmatch(r"-?\d+\.\d*(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+", s):
        return float(s)
    return s


def read_summary_log(path: str | Path) -> DetailLog:
    """Read ``mlperf_log_summary.txt`` into the detail log's keys (a fallback: no timestamps)."""
    file = str(path)
    p = Path(path)
    if not p.is_file():
        raise ValidationError(
            [Problem(file, "", "no such file" if not p.exists() else "not a regular file")]
        )
    text = p.read_bytes().decode("utf-8", errors="replace")
    if "MLPerf Results Summary" not in text:
        raise ValidationError(
            [Problem(file, "", "not an MLPerf LoadGen summary: no 'MLPerf Results Summary'")]
        )
    log = DetailLog(file)
    section = "results"
    for i, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or set(s) == {"="}:
            continue
        if s == "Additional Stats":
            section = "additional"
            continue
        if s == "Test Parameters Used":
            section = "parameters"
            continue
        if s.startswith("Per-query latency"):
            section = "per-query"
            continue
        m = re.match(r"^(\d+) warnings? encountered", s)
        if m:
            log.warnings = int(m.group(1))
            continue
        m = re.match(r"^(\d+) ERRORS? encountered", s, re.IGNORECASE)
        if m:
            log.errors.append(f"line {i}: summary: {s}")
            continue
        if ":" not in s:
            continue
        k, _, v = s.partition(":")
        k = k.strip().lstrip("* ").strip()
        lk = k.lower()
        value = _summary_value(v)
        key = _SUMMARY_KEYS.get(lk)
        if key is None:
            m = _PERCENTILE_RE.match(lk)
            if m:
                pct = f"{float(m.group(1)):.2f}"
                key = (
                    f"result_{pct}_percentile_per_query_latency_ns"
                    if section == "per-query"
                    else f"result_{pct}_percentile_latency_ns"
                )
            elif _TARGET_PCT_RE.match(lk):
                key = "summary_target_percentile_latency_ns"
            elif _ES_RE.match(lk):
                key = "summary_early_stopping_estimate_ns"
        elif section == "per-query" and key.startswith("result_") and key.endswith("latency_ns"):
            key = key.replace("result_", "result_query_", 1)
        if key is None:
            continue
        log.mllog_lines += 1
        if key in log.entries:
            log.duplicates[key] = log.duplicates.get(key, 0) + 1
        else:
            log.entries[key] = Entry(value, None, i)
    if "effective_scenario" not in log.entries:
        raise ValidationError([Problem(file, "Scenario", "the summary names no scenario")])
    # Map the early-stopping estimate onto the detail log's key for the scenario.
    scen = log.get("effective_scenario")
    es = log.entries.get("summary_early_stopping_estimate_ns")
    if es is not None:
        key = "early_stopping_latency_ss" if scen == "SingleStream" else "early_stopping_latency_ms"
        log.entries.setdefault(key, es)
    return log


def looks_like_summary(file: Path) -> bool:
    try:
        with file.open("rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    return "MLPerf Results Summary" in head and MLLOG_PREFIX not in head


def has_run_log(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a LoadGen log to read (the detail or the summary log)."""
    return any((Path(run_dir) / name).is_file() for name in (DETAIL_LOG, SUMMARY_LOG))


def find_run_logs(root: str | Path) -> list[Path]:
    """Every run directory under ``root`` (one holding a detail or a summary log), sorted."""
    root = Path(root)
    dirs = {f.parent for name in (DETAIL_LOG, SUMMARY_LOG) for f in root.rglob(name)}
    return sorted(d for d in dirs if d.is_dir())
