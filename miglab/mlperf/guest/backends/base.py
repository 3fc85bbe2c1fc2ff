"""The interface every MLPerf backend implements, and what they share.

A backend turns one (benchmark, MLPerf scenario, mode, run number) into LoadGen logs laid out as
the collector expects (``README.md`` beside the package)::

    <out>/<benchmark>/<MLPerf scenario>/<performance|accuracy>/run_<n>/
        mlperf_log_detail.txt  mlperf_log_summary.txt  miglab_run.json

``<out>`` is the VM's folder of the results tree (``results/<campaign>/<scenario>/<vm>``).
:meth:`Backend.prepare` does everything slow (loading the model, staging inputs, building CUDA
graphs, measuring the SUT's raw throughput) so that :meth:`Backend.run` can start at a barrier.
"""

from __future__ import annotations

import sys
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BENCHMARKS",
    "MODES",
    "SCENARIOS",
    "Backend",
    "BackendError",
    "BenchmarkInfo",
    "benchmark_info",
    "loadgen_result",
    "progress",
    "run_dir_for",
]

SCENARIOS = ("Offline", "Server")
MODES = ("PerformanceOnly", "AccuracyOnly")
MODE_DIRS = {"PerformanceOnly": "performance", "AccuracyOnly": "accuracy"}


class BackendError(Exception):
    """A run that cannot be made as asked; the message is one line meant for the user."""


@dataclass(frozen=True)
class BenchmarkInfo:
    """What a benchmark needs from a backend."""

    name: str  # results-tree name (resnet50, bert-99, ...)
    loadgen_model: str  # the model key of mlperf.conf / user.conf lines
    performance_sample_count: int  # mlperf.conf's performance_sample_count_override
    server_latency_ms: float  # the Server latency bound (p99)
    aliases: tuple[str, ...] = field(default=())


BENCHMARKS = {
    "resnet50": BenchmarkInfo("resnet50", "resnet50", 1024, 15.0, ("resnet", "resnet50-v1.5")),
    "bert-99": BenchmarkInfo("bert-99", "bert", 10833, 130.0, ("bert", "bert-large")),
    "bert-99.9": BenchmarkInfo("bert-99.9", "bert", 10833, 130.0),
}


def benchmark_info(name: str) -> BenchmarkInfo:
    """The benchmark called ``name`` or one of its aliases; BackendError when unknown."""
    key = name.strip().lower()
    for info in BENCHMARKS.values():
        if key == info.name or key in info.aliases:
            return info
    raise BackendError(
        f"unknown benchmark {name!r} (known: {', '.join(sorted(BENCHMARKS))}, bert, resnet)"
    )


def run_dir_for(out_dir: str | Path, benchmark: str, scenario: str, mode: str, run: int) -> Path:
    """``<out>/<benchmark>/<scenario>/<performance|accuracy>/run_<n>``."""
    if scenario not in SCENARIOS:
        raise BackendError(f"unsupported MLPerf scenario {scenario!r} (use {', '.join(SCENARIOS)})")
    if mode not in MODES:
        raise BackendError(f"unsupported mode {mode!r} (use {', '.join(MODES)})")
    if run < 1:
        raise BackendError(f"run number must be >= 1, got {run}")
    return Path(out_dir) / benchmark / scenario / MODE_DIRS[mode] / f"run_{run}"


def progress(msg: str) -> None:
    """One progress line on stderr (stdout stays free for results)."""
    sys.stderr.write(f"[miglab.mlperf {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


class Backend(ABC):
    """A way of running MLPerf Inference: ``prepare`` once, then ``run`` one or more times."""

    name: str = "?"
    # the guest's clock against the controller's, measured before this run (miglab_run.json's
    # clock); set by the runner for each run, None when not measured
    clock: dict | None = None

    @abstractmethod
    def prepare(self, settings) -> None:
        """Get ready to run (models, inputs, warm-up); raise BackendError with a reason."""

    @abstractmethod
    def run(
        self, benchmark: str, scenario: str, mode: str, out_dir: str | Path, run_index: int
    ) -> Path:
        """Run LoadGen once and return the folder holding its logs (and ``miglab_run.json``)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what ``prepare`` took (GPU memory, sessions)."""


def loadgen_result(run_dir: Path, benchmark: str, meta: dict | None = None) -> dict:
    """LoadGen's verdict on a run, read with the collector; the submission verdict also judges
    what ``meta`` (the run's metadata, not written yet) says was measured."""
    from miglab.core.mlperf_rules import measurement_problems
    from miglab.core.runs import parse_run
    from miglab.errors import ValidationError

    try:
        r = parse_run(run_dir, benchmark=benchmark)
    except ValidationError as exc:
        return {"valid": False, "reasons": [str(p) for p in exc.problems]}
    m = meta or {}
    measured = [
        x
        for x in measurement_problems(
            simulated=m.get("simulated"),
            weights=m.get("weights"),
            inputs=m.get("inputs"),
            device_kind=(m.get("device") or {}).get("kind"),
        )
        if x not in r.submission_reasons
    ]
    pct = (r.latency_ns or {}).get("percentiles") or {}
    return {
        "version": r.loadgen_version,
        "validity": r.loadgen_validity,
        "valid": r.valid,
        "reasons": r.invalid_reasons,
        "metric": r.metric,
        "value": r.value,
        "unit": r.unit,
        "p99_latency_ms": (pct["99.00"] / 1e6) if pct.get("99.00") else None,
        "p50_latency_ms": (pct["50.00"] / 1e6) if pct.get("50.00") else None,
        "submission_valid": r.submission_valid and not measured,
        "submission_reasons": r.submission_reasons + measured,
    }
