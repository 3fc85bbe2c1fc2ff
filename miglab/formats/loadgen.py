"""Read MLPerf Inference LoadGen's log files: ``mlperf_log_detail.txt`` and, failing it,
``mlperf_log_summary.txt`` (what :mod:`miglab.core.runs` turns into one record per run).

The detail log holds one ``:::MLLOG {json}`` line per event, as LoadGen 1.1 through 6.x writes
it. Read as MLCommons' submission checker and ``log_parser.py`` read it:

* the **first** occurrence of a key wins (a file holding two runs is read as its first run; later
  ``result_*`` duplicates are reported);
* any line whose ``metadata.is_error`` (or a top-level ``is_error``) is true, or a non-zero
  ``num_errors`` (LoadGen 5+), is an error line;
* a line that is not an ``:::MLLOG`` line, or whose JSON is truncated or malformed (or nested
  more than :data:`MAX_DEPTH` deep), is reported (line number and reason) and skipped.

Values are kept exactly as logged (LoadGen writes doubles with six significant digits in the
detail log, two decimals in the summary), with one exception: a number that is not a finite
double -- ``NaN``, ``Infinity``, ``1e999``, an integer beyond the double range -- is kept as its
text (a :class:`BadNumber`) and listed in ``DetailLog.bad_numbers``, so it is never summed or
charted and JSON output stays JSON; :mod:`miglab.core.runs` makes such a run INVALID. The summary
log carries no LoadGen version, no timestamps and no error lines.

Files are read with :func:`miglab.formats.files.read_input`: regular files only (a FIFO or a
device is refused, never waited on), at most :data:`DETAIL_LIMIT` / :data:`SUMMARY_LIMIT` bytes.
Trees are walked with :func:`miglab.formats.manifest.walk`: a symbolic link is never followed.

Only the standard library is used.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miglab.errors import Problem, ValidationError
from miglab.formats.files import MiB, UnreadableFile, read_input
from miglab.formats.manifest import link_reason, walk

__all__ = [
    "DETAIL_LIMIT",
    "DETAIL_LOG",
    "MLLOG_PREFIX",
    "SCENARIOS",
    "SUMMARY_LIMIT",
    "SUMMARY_LOG",
    "BadLine",
    "BadNumber",
    "DetailLog",
    "TreeScan",
    "find_run_logs",
    "has_run_log",
    "in_compliance_test",
    "looks_like_summary",
    "parse_detail_text",
    "parse_summary_text",
    "read_detail_log",
    "read_log_text",
    "read_summary_log",
    "scan_tree",
]

DETAIL_LOG = "mlperf_log_detail.txt"
SUMMARY_LOG = "mlperf_log_summary.txt"
MLLOG_PREFIX = ":::MLLOG"
# LoadGen's scenarios (TestScenario), as its logs and MLPerf's results tree name them.
SCENARIOS = ("Offline", "Server", "SingleStream", "MultiStream")
POWER_TIME_FORMAT = "%m-%d-%Y %H:%M:%S.%f"  # LoadGen's power_begin/power_end
TEST_DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # LoadGen's test_datetime (host clock, despite 'Z')

# Bounds on what one log may make miglab hold or print. Real detail logs are 40-100 KB with
# about 150 distinct keys and flat values; summaries are 2 KB.
DETAIL_LIMIT = 64 * MiB
SUMMARY_LIMIT = 4 * MiB
MAX_DEPTH = 16  # nesting of one :::MLLOG record (LoadGen's values: a number, a string, a list)
MAX_KEYS = 10_000  # distinct keys kept; later new keys are bad lines
MAX_KEY_LEN = 256
MAX_LISTED = 20  # bad lines, error lines and bad numbers kept one by one; the rest are counted
TIME_MS_MAX = 1e12  # a line's time_ms (since the start of the run): 31 years
_DOUBLE_MAX = 1.7976931348623157e308


# --- low-level readers -------------------------------------------------------------------------
class BadNumber(str):
    """A number of a log that is not a finite double (``NaN``, ``Infinity``, ``1e999``, an
    integer beyond the double range), kept as its text: never a number to sum or chart, and a
    plain string in JSON output."""


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
    """The keys of one ``mlperf_log_detail.txt`` (first occurrence wins) and what was wrong.

    ``bad_lines``, ``errors`` and ``bad_numbers`` keep the first :data:`MAX_LISTED` of each;
    ``bad_line_count``, ``error_count`` and ``bad_number_count`` count them all."""

    path: str
    entries: dict[str, Entry] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)  # key -> later occurrences
    errors: list[str] = field(default_factory=list)  # "key: value" of is_error lines
    warnings: int = 0  # lines with is_warning
    bad_lines: list[BadLine] = field(default_factory=list)
    first_time_ms: float | None = None
    last_time_ms: float | None = None
    mllog_lines: int = 0
    bad_numbers: list[tuple[int, str, str]] = field(default_factory=list)  # (line, key, text)
    bad_line_count: int = 0
    error_count: int = 0
    bad_number_count: int = 0

    def get(self, key: str, default=None):
        e = self.entries.get(key)
        return default if e is None else e.value

    def time_of(self, key: str) -> float | None:
        e = self.entries.get(key)
        return None if e is None else e.time_ms

    def values(self) -> dict[str, Any]:
        return {k: e.value for k, e in self.entries.items()}

    def bad_line(self, line: int, reason: str, text: str) -> None:
        self.bad_line_count += 1
        if len(self.bad_lines) < MAX_LISTED:
            self.bad_lines.append(BadLine(line, reason, text[:120]))

    def error(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_LISTED:
            self.errors.append(text)

    def bad_number(self, line: int, key: str, text: str) -> None:
        self.bad_number_count += 1
        if len(self.bad_numbers) < MAX_LISTED:
            self.bad_numbers.append((line, key, text))


def _is_true(v) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


def _short(v, n: int = 200) -> str:
    s = str(v)
    return s if len(s) <= n else s[:n] + "..."


def _json_float(s: str):
    f = float(s)
    return f if math.isfinite(f) else BadNumber(_short(s, 40))


def _json_constant(name: str):  # NaN, Infinity, -Infinity: not JSON, but Python's json reads them
    return BadNumber(name)


def _bad_numbers_in(value) -> tuple[int, list[str]]:
    """(nesting depth, texts of bad numbers) of a decoded JSON value, without recursion."""
    depth, bad = 0, []
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        depth = max(depth, d)
        if depth > MAX_DEPTH:
            break
        if isinstance(v, BadNumber):
            bad.append(str(v))
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > _DOUBLE_MAX:
            bad.append(_short(v, 40))
        elif isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return depth, bad


def read_log_text(path: str | Path, limit: int = DETAIL_LIMIT) -> str:
    """The text of a LoadGen log (undecodable bytes replaced); ValidationError when it is not a
    regular file, or larger than ``limit``."""
    try:
        raw = read_input(path, limit=limit)
    except UnreadableFile as exc:
        raise ValidationError([Problem(str(path), "", exc.reason)]) from None
    return raw.decode("utf-8", errors="replace")


def read_detail_log(path: str | Path) -> DetailLog:
    """Read a detail log; raise ValidationError when the file is missing or not a LoadGen log."""
    return parse_detail_text(read_log_text(path, DETAIL_LIMIT), str(path))


def parse_detail_text(text: str, file: str) -> DetailLog:
    """A detail log's text -> :class:`DetailLog`; ValidationError when it holds no
    ``:::MLLOG`` line at all."""
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
            log.bad_line(i, "not an :::MLLOG line", stripped)
            continue
        try:
            rec = json.loads(
                stripped[len(MLLOG_PREFIX) :],
                parse_float=_json_float,
                parse_constant=_json_constant,
            )
        except json.JSONDecodeError as exc:
            reason = (
                "truncated :::MLLOG line (file ends inside it)"
                if last and not ends_with_newline
                else f"malformed :::MLLOG JSON ({exc.msg} at column {exc.colno})"
            )
            log.bad_line(i, reason, stripped)
            continue
        except RecursionError:
            log.bad_line(i, f":::MLLOG JSON nested more than {MAX_DEPTH} deep", stripped)
            continue
        except ValueError as exc:  # an integer of more digits than Python converts
            log.bad_line(i, f"malformed :::MLLOG JSON ({_short(exc, 80)})", stripped)
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
            log.bad_line(i, ":::MLLOG record has no 'key'", stripped)
            continue
        depth, _ = _bad_numbers_in(rec)
        if depth > MAX_DEPTH:
            log.bad_line(i, f":::MLLOG JSON nested more than {MAX_DEPTH} deep", stripped)
            continue
        key = rec["key"]
        if len(key) > MAX_KEY_LEN:
            log.bad_line(i, f"key longer than {MAX_KEY_LEN} characters", stripped)
            continue
        if key not in log.entries and len(log.entries) >= MAX_KEYS:
            log.bad_line(i, f"more than {MAX_KEYS} distinct keys: key ignored", stripped)
            continue
        log.mllog_lines += 1
        value = rec.get("value")
        for name, v in rec.items():
            for b in _bad_numbers_in(v)[1]:
                log.bad_number(i, key if name == "value" else f"{name} of {key}", b)
        t = rec.get("time_ms")
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            t = None  # absent, text, or a bad number (listed above)
        elif not 0 <= t <= TIME_MS_MAX:
            if abs(t) <= _DOUBLE_MAX:  # beyond it, listed above
                log.bad_number(i, f"time_ms of {key}", _short(t, 40))
            t = None
        else:
            t = float(t)
        if t is not None:
            log.first_time_ms = t if log.first_time_ms is None else min(log.first_time_ms, t)
            log.last_time_ms = t if log.last_time_ms is None else max(log.last_time_ms, t)
        meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
        if _is_true(meta.get("is_error")) or _is_true(rec.get("is_error")):
            log.error(f"line {i}: {key}: {_short(value)}")
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


_NON_FINITE_WORDS = {"nan", "-nan", "+nan", "inf", "-inf", "+inf", "infinity", "-infinity"}


def _summary_value(s: str):
    s = s.strip()
    if s in ("Yes", "YES", "yes"):
        return True
    if s in ("NO", "No", "no"):
        return False
    if re.fullmatch(r"-?\d+", s):
        if len(s) > 300:  # beyond a double (and Python's limit of digits is 4300)
            return BadNumber(_short(s, 40))
        return int(s)
    if re.fullmatch(r"-?\d+\.\d*(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+", s):
        f = float(s)
        return f if math.isfinite(f) else BadNumber(_short(s, 40))
    if s.lower() in _NON_FINITE_WORDS:
        return BadNumber(s)
    return s


def read_summary_log(path: str | Path) -> DetailLog:
    """Read ``mlperf_log_summary.txt`` into the detail log's keys (a fallback: no timestamps)."""
    return parse_summary_text(read_log_text(path, SUMMARY_LIMIT), str(path))


def parse_summary_text(text: str, file: str) -> DetailLog:
    """A summary log's text -> :class:`DetailLog` (the detail log's keys); ValidationError when
    it is not a LoadGen summary or names no scenario."""
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
        m = re.match(r"^(\d{1,9}) warnings? encountered", s)
        if m:
            log.warnings = int(m.group(1))
            continue
        m = re.match(r"^(\d+) ERRORS? encountered", s, re.IGNORECASE)
        if m:
            log.error(f"line {i}: summary: {_short(s)}")
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
        if isinstance(value, BadNumber):
            log.bad_number(i, key, str(value))
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


def looks_like_summary(file: str | Path) -> bool:
    """Whether ``file`` reads as a summary log (not a detail log); False when unreadable."""
    try:
        head = read_input(file, limit=DETAIL_LIMIT)[:4096].decode("utf-8", errors="replace")
    except UnreadableFile:
        return False
    return looks_like_summary_text(head)


def looks_like_summary_text(text: str) -> bool:
    head = text[:4096]
    return "MLPerf Results Summary" in head and MLLOG_PREFIX not in head


def has_run_log(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a LoadGen log to read (the detail or the summary log): an entry
    of that name, whatever it is -- a FIFO or a symbolic link named so is a run whose log is
    refused when read, not a run that is missing."""
    return any(os.path.lexists(Path(run_dir) / name) for name in (DETAIL_LOG, SUMMARY_LOG))


@dataclass
class TreeScan:
    """What :func:`scan_tree` found: ``run_dirs``, folders holding a LoadGen log (by name),
    reached without a symbolic link; ``refused``, ``(path, reason)`` of every symbolic link to
    a folder (never followed) and every folder that could not be listed; ``compliance_dirs``,
    run folders of an MLPerf compliance test (under ``<MLPerf scenario>/TEST<nn>/``), which are
    not performance runs and not in ``run_dirs``."""

    root: Path
    run_dirs: list[Path] = field(default_factory=list)
    compliance_dirs: list[Path] = field(default_factory=list)
    refused: list[tuple[Path, str]] = field(default_factory=list)


_TEST_DIR_RE = re.compile(r"TEST\d\d")


def in_compliance_test(parts) -> bool:
    """Whether a relative path goes through a compliance test's folder, ``<MLPerf
    scenario>/TEST<nn>`` (the submission checker's layout from v6.0: ``TEST01/``, ``TEST04/`` beside
    ``performance/`` and ``accuracy/``)."""
    parts = tuple(parts)
    return any(
        i > 0 and parts[i - 1] in SCENARIOS and _TEST_DIR_RE.fullmatch(p)
        for i, p in enumerate(parts)
    )


def scan_tree(root: str | Path) -> TreeScan:
    """Walk ``root`` (any depth, symbolic links never followed) for run folders."""
    root = Path(root)
    scan = TreeScan(root)

    def unlistable(folder: Path, exc: OSError) -> None:
        scan.refused.append((folder, f"cannot list: {exc.strerror or exc}"))

    for here, _dirs, files, links in walk(root, onerror=unlistable):
        if (
            DETAIL_LOG in files
            or SUMMARY_LOG in files
            or DETAIL_LOG in links
            or SUMMARY_LOG in links
        ):
            if in_compliance_test(here.relative_to(root).parts):
                scan.compliance_dirs.append(here)
            else:
                scan.run_dirs.append(here)
        for name in links:
            p = here / name
            if os.path.isdir(p):
                scan.refused.append((p, link_reason(p, root)))
    scan.run_dirs.sort()
    return scan


def find_run_logs(root: str | Path) -> list[Path]:
    """Every run directory under ``root`` (one holding a detail or a summary log), sorted;
    symbolic links are not followed (:func:`scan_tree` says which were refused)."""
    return scan_tree(root).run_dirs
