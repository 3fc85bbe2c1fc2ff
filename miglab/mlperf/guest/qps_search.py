"""Search runs: the highest VALID Server target QPS, and Offline's expected QPS, of a prepared SUT.

A Server result is only meaningful at the highest target QPS that stays VALID (p99 within the
benchmark's bound, early stopping met: MLPerf inference rules); submitters search for it, per
system. :func:`search_server` does, per VM (its vGPU profile): short LoadGen Server runs against
the prepared SUT at the target QPS :func:`miglab.core.qps_search.search_highest_valid` picks
(from the raw throughput: an exponential bracket, then bisection), each judged by
:func:`miglab.core.qps_search.server_verdict`. :func:`calibrate_offline` runs one short Offline
run and takes LoadGen's measured samples/s (times :data:`OFFLINE_HEADROOM`) as the expected QPS.

These are search runs, not results: their LoadGen logs go to a temporary folder and are
deleted; what stays is one JSON file in the VM's folder of the results tree,
``<vm>/<benchmark>/Server/qps_search.json`` (:data:`SEARCH_FILE`) and
``<vm>/<benchmark>/Offline/qps_search.json``: the profile, the target QPS found, every trial
(target QPS, verdict, p99, reason), the settings of the short runs and when. The full runs of
that VM read it (:func:`stored_target`) when neither the campaign's user.conf nor
``--target-qps`` sets a target.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict, replace
from datetime import datetime
from pathlib import Path

from miglab.core.qps_search import (
    NoValidQps,
    Verdict,
    latency_bound_ms,
    search_highest_valid,
    server_verdict,
)
from miglab.formats.manifest import atomic_write_text
from miglab.mlperf.guest.backends.base import BackendError, benchmark_info, progress

__all__ = [
    "OFFLINE_HEADROOM",
    "SEARCH_FILE",
    "SearchOptions",
    "calibrate_offline",
    "search_path",
    "search_server",
    "stored_target",
]

SEARCH_FILE = "qps_search.json"
SCHEMA = "miglab-qps-search/1"
# LoadGen issues expected QPS x min_duration x 1.1 samples in Offline; an expected QPS 10 % over
# the calibrated throughput keeps the run VALID when the SUT runs up to about 20 % faster.
OFFLINE_HEADROOM = 1.1


class SearchOptions:
    """The short runs' settings (each a LoadGen override of the SUT's settings)."""

    def __init__(
        self,
        min_duration_ms: int = 10_000,
        min_query_count: int = 1_000,
        tolerance: float = 0.02,
        max_trials: int = 12,
        growth: float = 2.0,
        start_qps: float | None = None,
        upper_qps: float | None = None,
    ):
        self.min_duration_ms = int(min_duration_ms)
        self.min_query_count = int(min_query_count)
        self.tolerance = float(tolerance)
        self.max_trials = int(max_trials)
        self.growth = float(growth)
        self.start_qps = start_qps
        self.upper_qps = upper_qps

    def as_json(self) -> dict:
        return dict(vars(self))


def search_path(out_dir: str | Path, benchmark: str, scenario: str = "Server") -> Path:
    """``<out>/<benchmark>/<scenario>/qps_search.json``."""
    return Path(out_dir) / benchmark_info(benchmark).name / scenario / SEARCH_FILE


def stored_target(
    out_dir: str | Path, benchmark: str, scenario: str, profile: str | None
) -> tuple[float, str] | None:
    """The searched (Server) or calibrated (Offline) target QPS stored for this VM's folder and
    ``profile``: ``(qps, path)``; None when there is none, or it is another profile's."""
    path = search_path(out_dir, benchmark, scenario)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None
    qps = data.get("target_qps")
    if isinstance(qps, bool) or not isinstance(qps, (int, float)) or not qps > 0:
        return None
    if profile and data.get("profile") and data["profile"] != profile:
        progress(f"warning: {path} is for profile {data['profile']}, not {profile}: not used")
        return None
    return float(qps), str(path)


def _trial(backend, benchmark: str, scenario: str, qps: float, opts: SearchOptions, work: Path):
    """One short LoadGen run at ``qps`` in ``work``; its ``loadgen`` result and early stopping."""
    from miglab.formats.loadgen import DETAIL_LOG, read_detail_log

    saved = backend.settings
    backend.settings = replace(
        saved,
        target_qps=float(qps),
        min_duration_ms=opts.min_duration_ms,
        min_query_count=opts.min_query_count,
        overwrite=True,
        meta={**(saved.meta or {}), "notes": "search run, not a result"},
    )
    try:
        n = len(list(work.iterdir())) + 1
        run_dir = backend.run(benchmark, scenario, "PerformanceOnly", work / f"trial_{n}", 1)
    finally:
        backend.settings = saved
    meta = json.loads((run_dir / "miglab_run.json").read_text(encoding="utf-8"))
    early = None
    if (run_dir / DETAIL_LOG).is_file():
        early = read_detail_log(run_dir / DETAIL_LOG).get("early_stopping_met")
    return meta.get("loadgen") or {}, early


def _write(path: Path, backend, benchmark: str, scenario: str, body: dict) -> Path:
    s = backend.settings
    meta = s.meta or {}
    doc = {
        "schema": SCHEMA,
        "kind": "search runs (short LoadGen runs), not results",
        "benchmark": benchmark_info(benchmark).name,
        "mlperf_scenario": scenario,
        "vm": meta.get("vm"),
        "profile": meta.get("profile"),
        "vgpu_type": meta.get("vgpu_type"),
        "lab_scenario": meta.get("scenario"),
        "raw_throughput": (backend.raw or {}).get("samples_per_second"),
        **body,
        "date": datetime.now().astimezone().isoformat(timespec="milliseconds"),
        "sut": {
            "sut": s.sut,
            "user_conf": s.user_conf,
            "batch_size": getattr(backend.runner, "batch_size", None),
            "server_batch_size": getattr(backend.runner, "server_batch_size", None),
            "server_timeout_ms": getattr(backend.runner, "server_timeout_s", 0.0) * 1000.0,
            "max_inflight": getattr(backend.runner, "max_inflight", None),
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")
    return path


def _start(backend, opts: SearchOptions) -> float:
    start = (
        opts.start_qps
        or backend.settings.target_qps
        or (backend.raw or {}).get("samples_per_second")
    )
    if not start:
        raise BackendError(
            "the QPS search needs a start: the raw throughput (--raw-seconds > 0) or --target-qps"
        )
    return float(start)


def search_server(backend, benchmark: str, out_dir: str | Path, opts: SearchOptions) -> Path:
    """Search the highest VALID Server target QPS of the prepared ``backend``; the JSON file."""
    bound = latency_bound_ms(benchmark)
    start = _start(backend, opts)
    work = Path(tempfile.mkdtemp(prefix="miglab-qps-search-"))
    path = search_path(out_dir, benchmark, "Server")

    def run(qps: float) -> Verdict:
        progress(f"QPS search: search run at {qps:.1f} QPS (not a result)")
        res, early = _trial(backend, benchmark, "Server", qps, opts, work)
        v = server_verdict(
            benchmark,
            validity=res.get("validity"),
            early_stopping_met=early,
            p99_ms=res.get("p99_latency_ms"),
            reasons=res.get("reasons") or [],
        )
        progress(f"QPS search: {qps:.1f} QPS {'VALID' if v.valid else 'not VALID: ' + v.reason}")
        return v

    body = {"start_qps": start, "latency_bound_ms": bound, "settings": opts.as_json()}
    try:
        result = search_highest_valid(
            run,
            start,
            upper=opts.upper_qps,
            tolerance=opts.tolerance,
            max_trials=opts.max_trials,
            growth=opts.growth,
        )
    except NoValidQps as exc:
        trials = [asdict(t) for t in exc.trials]
        failed = {**body, "target_qps": None, "error": str(exc), "trials": trials}
        _write(path, backend, benchmark, "Server", failed)
        raise BackendError(f"QPS search: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    progress(f"QPS search: highest VALID target {result.target_qps:.1f} QPS")
    return _write(path, backend, benchmark, "Server", {**body, **result.as_json()})


def calibrate_offline(backend, benchmark: str, out_dir: str | Path, opts: SearchOptions) -> Path:
    """Offline's expected QPS from one short Offline run; the JSON file."""
    start = _start(backend, opts)
    work = Path(tempfile.mkdtemp(prefix="miglab-qps-search-"))
    try:
        progress(f"Offline calibration: search run at {start:.1f} expected QPS (not a result)")
        res, _ = _trial(backend, benchmark, "Offline", start, opts, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    measured = res.get("value")
    body = {
        "start_qps": start,
        "settings": opts.as_json(),
        "measured_samples_per_second": measured,
        "headroom": OFFLINE_HEADROOM,
        "calibration_validity": res.get("validity"),
        "target_qps": measured * OFFLINE_HEADROOM if measured else None,
    }
    path = _write(search_path(out_dir, benchmark, "Offline"), backend, benchmark, "Offline", body)
    if not measured:
        raise BackendError(f"Offline calibration: no throughput measured ({res.get('reasons')})")
    progress(f"Offline calibration: expected QPS {body['target_qps']:.1f}")
    return path
