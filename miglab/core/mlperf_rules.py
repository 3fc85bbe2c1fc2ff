"""MLPerf Inference's submission rules and metrics, as MLCommons' inference policies and
``submission_checker.py`` state them, per LoadGen release: which value is a scenario's metric,
and why a run LoadGen calls VALID would still fail a submission.

The metric follows the submission checker of the LoadGen release that wrote the log
(``loadgen_version``): Offline ``result_samples_per_second``; Server
``result_scheduled_samples_per_sec`` up to 4.0 and ``result_completed_samples_per_sec`` from 4.1;
SingleStream ``result_90.00_percentile_latency_ns`` before 2.0 and ``early_stopping_latency_ss``
from 2.0; MultiStream ``effective_samples_per_query`` (streams) before 2.0 and
``early_stopping_latency_ms`` from 2.0.

A log says how a run was measured, not what: :func:`measurement_problems` adds what miglab's run
metadata says (a simulated lab, random weights, synthetic inputs, the CPU instead of the
accelerator), and :func:`combined_problems` what a figure over several VMs is (a sum of
independent LoadGen instances, which no submission reports). Either keeps a figure from being
called submission-valid, whatever its log says.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from miglab.formats.loadgen import DetailLog

__all__ = [
    "Metric",
    "as_number",
    "benchmark_class",
    "combined_problems",
    "loadgen_release",
    "measurement_problems",
    "metric_for",
    "submission_problems",
]

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


def as_number(v) -> float | None:
    """``v`` as a finite float; None for anything else (text, a bool, NaN, an infinity, an
    integer beyond the double range)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


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
    if log.error_count:
        out.append(f"{log.error_count} error line(s) in the log")
    md = as_number(g("effective_min_duration_ms"))
    if md is None:
        out.append("min_duration unknown (no effective_min_duration_ms)")
    elif md < SUBMISSION_MIN_DURATION_MS:
        out.append(f"min_duration {md:g} ms < {SUBMISSION_MIN_DURATION_MS} ms")
    cls = benchmark_class(benchmark)
    early = scenario in ("Server", "SingleStream", "MultiStream") and (
        (release is not None and release >= (2, 0))
        or (release is None and "early_stopping_met" in log.entries)
    )
    mq = as_number(g("effective_min_query_count"))
    if not early and scenario in MIN_QUERY_COUNT:
        need = MIN_QUERY_COUNT[scenario]
        if mq is None:
            out.append("min_query_count unknown (no effective_min_query_count)")
        elif mq < need:
            out.append(f"min_query_count {mq:g} < {need} required for {scenario}")
    if scenario == "Offline":
        spq = as_number(g("effective_samples_per_query"))
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
    if early and "early_stopping_met" in log.entries and g("early_stopping_met") is not True:
        out.append(f"early stopping not met: {str(g('early_stopping_result', '')).strip()}")
    if scenario == "Server":
        bound = SERVER_LATENCY_BOUND_NS.get(cls or "")
        if bound is None:
            out.append(f"no Server latency bound known for benchmark {benchmark or '(unknown)'}")
        else:
            p99 = as_number(g("result_99.00_percentile_latency_ns"))
            target = as_number(g("effective_target_latency_ns"))
            if p99 is None:
                out.append("99th percentile latency missing")
            elif p99 > bound:
                out.append(f"p99 latency {p99 / 1e6:.3f} ms > {bound / 1e6:g} ms bound")
            if target is not None and target > bound:
                out.append(f"target latency {target / 1e6:g} ms > {bound / 1e6:g} ms bound")
    psc_need = MIN_PERFORMANCE_SAMPLE_COUNT.get(cls or "")
    psc = as_number(g("effective_performance_sample_count"))
    if psc_need is not None and psc is not None and psc < psc_need:
        out.append(f"performance_sample_count {psc:g} < {psc_need} required")
    return out


def measurement_problems(
    *,
    simulated: bool | None = None,
    weights: str | None = None,
    inputs: str | None = None,
    device_kind: str | None = None,
) -> list[str]:
    """Why what a run measured can never meet the submission rules, from its run metadata
    (``miglab_run.json``): a simulated lab, random weights (no accuracy run can back the
    figure), synthetic inputs (not the benchmark's dataset), or the CPU (not the accelerator
    under test). Empty when none of these is recorded; what is not recorded (a log without
    metadata, e.g. a published submission's) is judged by its log alone."""
    out: list[str] = []
    if simulated:
        out.append("simulated lab: no real accelerator was measured")
    if weights == "random":
        out.append("random weights: no accuracy run can back the figure")
    elif weights == "none":
        out.append("no model weights (a service-rate model): nothing was inferred")
    if inputs == "synthetic":
        out.append("synthetic inputs: not the benchmark's dataset")
    if device_kind == "cpu":
        out.append("measured on the CPU, not on an accelerator")
    return out


def combined_problems(instances: int, combine: str = "sum") -> list[str]:
    """Why a figure combined over ``instances`` LoadGen runs (one per VM; ``combine`` "sum" for
    throughput, "max" for latency) is no submission figure: MLPerf reports what one LoadGen
    measured of one system under test; a sum (or worst case) of independent LoadGen instances,
    each with its own query schedule, is not such a measurement. Empty for one instance."""
    if instances <= 1:
        return []
    how = "sum" if combine == "sum" else "worst"
    return [
        f"the {how} of {instances} independent LoadGen instances (one per VM), "
        "not one LoadGen run of one system under test"
    ]
