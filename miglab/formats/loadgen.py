"""Read MLPerf Inference LoadGen logs: one :class:`RunRecord` per performance (or accuracy) run.

The source of truth is ``mlperf_log_detail.txt``: one ``:::MLLOG {json}`` line per event, as
LoadGen 1.1 through 6.x writes it. The rules, taken from MLCommons' submission checker and
``log_parser.py``:

* the **first** occurrence of a key wins (a file holding two runs is read as its first run; later
  ``result_*`` duplicates are reported);
* any line whose ``metadata.is_error`` (or a top-level ``is_error``) is true, or a non-zero
  ``num_errors`` (LoadGen 5+), invalidates the run;
* a line that is not an ``:::MLLOG`` line, or whose JSON is truncated or malformed, is reported
  (line number and reason) and skipped; it does not by itself invalidate the run, but a log cut
  before its results has no ``result_validity`` and is therefore not VALID.

The metric follows the submission checker of the LoadGen release that wrote the log
(``loadgen_version``): Offline ``result_samples_per_second``; Server
``result_scheduled_samples_per_sec`` up to 4.0 and ``result_completed_samples_per_sec`` from 4.1;
SingleStream ``result_90.00_percentile_latency_ns`` before 2.0 and ``early_stopping_latency_ss``
from 2.0; MultiStream ``effective_samples_per_query`` (streams) before 2.0 and
``early_stopping_latency_ms`` from 2.0. Values are kept exactly as logged (LoadGen writes doubles
with six significant digits in the detail log, two decimals in the summary).

When a run directory has no detail log, ``mlperf_log_summary.txt`` is read instead (it carries no
LoadGen version, no timestamps and no error lines: such runs cannot be checked for concurrency).

Each record also says whether the run would satisfy the submission rules on top of LoadGen's own
VALID (:func:`submission_problems`), and carries the run window: LoadGen's ``power_begin`` /
``power_end`` (the timed part of the run, millisecond resolution, the host's clock) or, failing
those, ``test_datetime`` plus the ``time_ms`` of the first and last lines.

Run metadata written by miglab's runners, ``miglab_run.json``, is read from the run directory and
its parents up to the campaign directory (nearest wins); see ``README.md`` beside this file.

Only the standard library is used; nothing here imports Ansible or pyVmomi.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from miglab.errors import Problem, Problems, ValidationError

__all__ = [
    "DETAIL_LOG",
    "RUN_META",
    "SUMMARY_LOG",
    "BadLine",
    "DetailLog",
    "RunMeta",
    "RunRecord",
    "find_run_logs",
    "metric_for",
    "parse_paths",
    "parse_run",
    "read_detail_log",
    "read_run_meta",
    "read_summary_log",
    "submission_problems",
]

DETAIL_LOG = "mlperf_log_detail.txt"
SUMMARY_LOG = "mlperf_log_summary.txt"
RUN_META = "miglab_run.json"
MLLOG_PREFIX = ":::MLLOG"

SCENARIOS = ("Offline", "Server", "SingleStream", "MultiStream")
POWER_TIME_FORMAT = "%m-%d-%Y %H:%M:%S.%f"  # LoadGen's power_begin/power_end
TEST_DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # LoadGen's test_datetime (host clock, despite 'Z')

# --- submission rules (MLCommons inference policies / submission_checker.py) ------------------
SUBMISSION_MIN_DURATION_MS = 600_000
OFFLINE_MIN_SAMPLES_PER_QUERY = 24_576  # before v4.0, every model
OFFLINE_MIN_SAMPLES_PER_QUERY_SINCE_V4 = {
    "resnet": 24_576,
    "retinanet": 24_576,
    "bert-99": 10_833,
    "bert-99.9": 10_833,
    "dlrm-v2-99": 24_576,
    "dlrm-v2-99.9": 24_576,
    "3d-unet-99": 43,
    "3d-unet-99.9": 43,
    "rnnt": 2_513,
    "gptj-99": 13_368,
    "gptj-99.9": 13_368,
    "llama2-70b-99": 24_576,
    "llama2-70b-99.9": 24_576,
    "stable-diffusion-xl": 5_000,
}
# Minimum query counts where early stopping does not apply (all scenarios before LoadGen 2.0;
# Offline always).
MIN_QUERY_COUNT = {"Offline": 1, "Server": 270_336, "SingleStream": 1_024, "MultiStream": 270_336}
# Server latency bounds (ns), per benchmark class.
SERVER_LATENCY_BOUND_NS = {
    "resnet": 15_000_000,
    "retinanet": 100_000_000,
    "ssd-resnet34": 100_000_000,
    "rnnt": 1_000_000_000,
    "bert-99": 130_000_000,
    "bert-99.9": 130_000_000,
    "dlrm-99": 30_000_000,
    "dlrm-99.9": 30_000_000,
    "dlrm-v2-99": 60_000_000,
    "dlrm-v2-99.9": 60_000_000,
    "gptj-99": 20_000_000_000,
    "gptj-99.9": 20_000_000_000,
    "llama2-70b-99": 20_000_000_000,
    "llama2-70b-99.9": 20_000_000_000,
    "stable-diffusion-xl": 20_000_000_000,
}
MIN_PERFORMANCE_SAMPLE_COUNT = {
    "resnet": 1_024,
    "retinanet": 64,
    "ssd-resnet34": 64,
    "rnnt": 2_513,
    "bert-99": 10_833,
    "bert-99.9": 10_833,
    "dlrm-v2-99": 204_800,
    "dlrm-v2-99.9": 204_800,
    "gptj-99": 13_368,
    "gptj-99.9": 13_368,
    "llama2-70b-99": 24_576,
    "llama2-70b-99.9": 24_576,
    "stable-diffusion-xl": 5_000,
}


def benchmark_class(benchmark: str | None) -> str | None:
    """The submission checker's model class of a benchmark name (``resnet50`` -> ``resnet``)."""
    if not benchmark:
        return None
    b = benchmark.strip().lower()
    if b in ("resnet", "resnet50", "resnet50-v1.5", "mobilenet") or b.startswith("resnet50"):
        return "resnet"
    if b.startswith("bert"):
        return "bert-99.9" if "99.9" in b else "bert-99"
    for known in sorted(SERVER_LATENCY_BOUND_NS, key=len, reverse=True):
        if b == known or b.startswith(known + "-") or b.startswith(known + "_"):
            return known
    return b


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


# --- run metadata ------------------------------------------------------------------------------
RUN_META_FIELDS = {
    "schema": str,
    "simulated": bool,
    "backend": str,
    "weights": str,
    "inputs": str,
    "benchmark": str,
    "scenario": str,
    "vm": str,
    "profile": str,
    "vgpu_type": str,
    "run": int,
    "started_at": str,
    "finished_at": str,
    "notes": str,
}
WEIGHTS = ("real", "random")
INPUTS = ("real", "synthetic")


@dataclass(frozen=True)
class RunMeta:
    """``miglab_run.json``: what produced a run (see README.md beside this module)."""

    files: tuple[str, ...] = ()
    simulated: bool | None = None
    backend: str | None = None
    weights: str | None = None  # "real" | "random"
    inputs: str | None = None  # "real" | "synthetic"
    benchmark: str | None = None
    scenario: str | None = None
    vm: str | None = None
    profile: str | None = None
    vgpu_type: str | None = None
    run: int | None = None
    started_at: datetime | None = None  # timezone-aware
    finished_at: datetime | None = None
    notes: str | None = None
    extra: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        out = {
            "files": list(self.files),
            "simulated": self.simulated,
            "backend": self.backend,
            "weights": self.weights,
            "inputs": self.inputs,
        }
        for k in ("benchmark", "scenario", "vm", "profile", "vgpu_type", "run", "notes"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        for k in ("started_at", "finished_at"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k).isoformat()
        if self.extra:
            out["extra"] = self.extra
        return out


def _parse_iso(s: str) -> datetime | None:
    try:
        d = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    return d if d.tzinfo is not None else None


def read_run_meta(run_dir: str | Path, levels: int = 6) -> RunMeta:
    """Merge ``miglab_run.json`` from ``run_dir`` and up to ``levels`` parents (nearest wins)."""
    d = Path(run_dir)
    chain = [d, *list(d.parents)[:levels]]
    merged: dict = {}
    files: list[str] = []
    for folder in reversed(chain):  # farthest first, so nearer files override
        f = folder / RUN_META
        if not f.is_file():
            continue
        merged.update(_load_run_meta_file(f))
        files.append(str(f))
    if not files:
        return RunMeta()
    known = {k: merged.pop(k) for k in list(merged) if k in RUN_META_FIELDS}
    for k in ("started_at", "finished_at"):
        if k in known:
            known[k] = _parse_iso(known[k])
    known.pop("schema", None)
    return RunMeta(files=tuple(reversed(files)), extra=merged, **known)


def _load_run_meta_file(f: Path) -> dict:
    p = Problems(str(f))
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError([Problem(str(f), "", f"cannot read: {exc}")]) from None
    except json.JSONDecodeError as exc:
        raise ValidationError(
            [Problem(str(f), "", f"not JSON: {exc.msg} at line {exc.lineno}")]
        ) from None
    if not isinstance(data, dict):
        raise ValidationError([Problem(str(f), "", "must be a JSON object")])
    for k, typ in RUN_META_FIELDS.items():
        if k not in data or data[k] is None:
            continue
        v = data[k]
        if typ is int and (isinstance(v, bool) or not isinstance(v, int)):
            p.add(k, f"must be an integer, got {type(v).__name__}")
        elif typ is not int and not isinstance(v, typ):
            p.add(k, f"must be a {typ.__name__}, got {type(v).__name__}")
    if isinstance(data.get("weights"), str) and data["weights"] not in WEIGHTS:
        p.add("weights", f"must be one of {', '.join(WEIGHTS)}, got {data['weights']!r}")
    if isinstance(data.get("inputs"), str) and data["inputs"] not in INPUTS:
        p.add("inputs", f"must be one of {', '.join(INPUTS)}, got {data['inputs']!r}")
    for k in ("started_at", "finished_at"):
        if isinstance(data.get(k), str) and _parse_iso(data[k]) is None:
            p.add(k, f"must be an ISO 8601 time with a time zone, got {data[k]!r}")
    p.raise_if_any()
    return {k: v for k, v in data.items() if v is not None}


# --- one run -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Metric:
    key: str
    unit: str  # "samples/s" | "ns" | "streams"
    higher_is_better: bool
    throughput: bool  # summed over concurrent VMs


def loadgen_release(version: str | None) -> tuple[int, int] | None:
    """``"4.1 @ c83565d85d"`` -> ``(4, 1)``; None when it cannot be read."""
    if not isinstance(version, str):
        return None
    m = re.match(r"\s*v?(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def metric_for(
    scenario: str | None, release: tuple[int, int] | None, keys=(), prefer_first=False
) -> Metric | None:
    """The submission metric of a scenario for a LoadGen release (None release: the newest).

    ``keys`` (in log order) lets a summary log, which has no version, use the metric it reports
    first (LoadGen's headline) when ``prefer_first`` is set.
    """
    new = release is None or release >= (2, 0)
    if scenario == "Offline":
        return Metric("result_samples_per_second", "samples/s", True, True)
    if scenario == "Server":
        sched, comp = "result_scheduled_samples_per_sec", "result_completed_samples_per_sec"
        if prefer_first:
            first = next((k for k in keys if k in (sched, comp)), None)
            if first:
                return Metric(first, "samples/s", True, True)
        key = comp if release is None or release >= (4, 1) else sched
        if keys and key not in keys:
            key = sched if key == comp else comp
        return Metric(key, "samples/s", True, True)
    if scenario == "SingleStream":
        if new and (not keys or "early_stopping_latency_ss" in keys):
            return Metric("early_stopping_latency_ss", "ns", False, False)
        return Metric("result_90.00_percentile_latency_ns", "ns", False, False)
    if scenario == "MultiStream":
        if new and (not keys or "early_stopping_latency_ms" in keys):
            return Metric("early_stopping_latency_ms", "ns", False, False)
        return Metric("effective_samples_per_query", "streams", True, True)
    return None


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


def _num(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def submission_problems(
    log: DetailLog, scenario: str | None, benchmark: str | None, release
) -> list[str]:
    """Why a run would fail the submission rules on top of LoadGen's VALID (empty: it passes).

    Checked: PerformanceOnly mode; LoadGen VALID; no error lines; ``min_duration`` >= 600 s;
    the minimum query count where early stopping does not apply; Offline samples per query;
    early stopping met; the Server latency bound of the benchmark (p99, and the target latency
    given to early stopping); the performance sample count. Seeds are reported, not checked.
    """
    out: list[str] = []
    g = log.get
    mode = g("effective_test_mode")
    if mode != "PerformanceOnly":
        out.append(f"test mode is {mode or 'unknown'}, not PerformanceOnly")
    if g("result_validity") != "VALID":
        out.append(f"LoadGen result is {g('result_validity') or 'missing'}, not VALID")
    if log.errors:
        out.append(f"{len(log.errors)} error line(s) in the log")
    md = _num(g("effective_min_duration_ms"))
    if md is None:
        out.append("min_duration unknown (no effective_min_duration_ms)")
    elif md < SUBMISSION_MIN_DURATION_MS:
        out.append(f"min_duration {md:g} ms < {SUBMISSION_MIN_DURATION_MS} ms")
    cls = benchmark_class(benchmark)
    early = scenario in ("Server", "SingleStream", "MultiStream") and (
        (release is not None and release >= (2, 0))
        or (release is None and "early_stopping_met" in log.entries)
    )
    mq = _num(g("effective_min_query_count"))
    if not early and scenario in MIN_QUERY_COUNT:
        need = MIN_QUERY_COUNT[scenario]
        if mq is None:
            out.append("min_query_count unknown (no effective_min_query_count)")
        elif mq < need:
            out.append(f"min_query_count {mq:g} < {need} required for {scenario}")
    if scenario == "Offline":
        spq = _num(g("effective_samples_per_query"))
        need = OFFLINE_MIN_SAMPLES_PER_QUERY
        if (
            release is not None
            and release >= (4, 0)
            and cls in OFFLINE_MIN_SAMPLES_PER_QUERY_SINCE_V4
        ):
            need = OFFLINE_MIN_SAMPLES_PER_QUERY_SINCE_V4[cls]
        if spq is None:
            out.append("samples_per_query unknown (no effective_samples_per_query)")
        elif spq < need:
            out.append(f"samples_per_query {spq:g} < {need} required for Offline")
    if early and g("early_stopping_met") is False:
        out.append(f"early stopping not met: {str(g('early_stopping_result', '')).strip()}")
    if scenario == "Server":
        bound = SERVER_LATENCY_BOUND_NS.get(cls or "")
        if bound is None:
            out.append(f"no Server latency bound known for benchmark {benchmark or '(unknown)'}")
        else:
            p99 = _num(g("result_99.00_percentile_latency_ns"))
            target = _num(g("effective_target_latency_ns"))
            if p99 is None:
                out.append("99th percentile latency missing")
            elif p99 > bound:
                out.append(f"p99 latency {p99 / 1e6:.3f} ms > {bound / 1e6:g} ms bound")
            if target is not None and target > bound:
                out.append(f"target latency {target / 1e6:g} ms > {bound / 1e6:g} ms bound")
    psc_need = MIN_PERFORMANCE_SAMPLE_COUNT.get(cls or "")
    psc = _num(g("effective_performance_sample_count"))
    if psc_need is not None and psc is not None and psc < psc_need:
        out.append(f"performance_sample_count {psc:g} < {psc_need} required")
    return out


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

    is_summary = file.name == SUMMARY_LOG or (file.name != DETAIL_LOG and _looks_like_summary(file))
    log = read_summary_log(file) if is_summary else read_detail_log(file)
    meta = read_run_meta(run_dir)
    bench = benchmark or meta.benchmark or _benchmark_from_path(run_dir)
    return _record(log, "summary" if is_summary else "detail", run_dir, bench, meta, file)


def _looks_like_summary(file: Path) -> bool:
    try:
        with file.open("rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    return "MLPerf Results Summary" in head and MLLOG_PREFIX not in head


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
        if _num(value) is None:
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
    num_errors = _num(g("num_errors"))
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
                if _num(sv) is not None:
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


def find_run_logs(root: str | Path) -> list[Path]:
    """Every run directory under ``root`` (one holding a detail or a summary log), sorted."""
    root = Path(root)
    dirs = {f.parent for name in (DETAIL_LOG, SUMMARY_LOG) for f in root.rglob(name)}
    return sorted(d for d in dirs if d.is_dir())


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
