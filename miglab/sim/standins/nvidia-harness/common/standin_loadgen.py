# STAND-IN (miglab's simulated lab), not NVIDIA software. What NVIDIA's closed-division MLPerf
# Inference harness binaries do at run time (closed/NVIDIA/code/harness/harness_default/
# main_default.cc and harness_bert/main_bert.cc of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549; the same flow in later rounds): build LoadGen's
# TestSettings from mlperf.conf, user.conf and the flags, run the REAL MLPerf LoadGen against a
# SUT and let LoadGen write its logs (mlperf_log_summary.txt, mlperf_log_detail.txt,
# mlperf_log_accuracy.json, mlperf_log_trace.json) into the harness's log folder. The SUT here is
# a service-rate model of the MIG slice behind the VM's vGPU, no TensorRT engine:
#
#     rate = FULL_GPU_RATE[benchmark] x compute_slices / gpu_slices   (samples per second)
#
# with the constants of miglab's own simulated SUT (miglab/mlperf/guest/sut/slice_model.py) so that
# results of the simulated lab's nvidia backend and reference backend are comparable.
#
# Shared by the stand-in harness rounds under miglab/sim/standins/nvidia-harness/<round>/
# (assemble.py copies it to <tree>/code/common/standin_loadgen.py). It runs in the harness's
# container, where miglab is not installed: standard library + mlperf_loadgen (mlcommons-loadgen
# >= 5.0.6, whose TestSettings.FromConfig takes conf_type) + nothing else.
#
# API (keep stable, the rounds call it):
#
#   run(benchmark, scenario, test_mode, log_dir, *, compute_slices, gpu_slices=7, batch_size,
#       devices=1, expected_qps=None, target_qps=None, min_duration_ms=None, min_query_count=None,
#       max_duration_ms=None, max_query_count=None, performance_sample_count=None,
#       server_target_latency_ns=None, user_conf=None, model=None, log_prefix="mlperf_log_",
#       log_suffix="", copy_summary_to_stdout=True) -> dict
#   service_rate(benchmark, compute_slices, gpu_slices=7) -> float
#   compute_slices_of(name, mig_profiles=()) -> int | None    (nvidia-smi name / MIG lines)
#   gpu_slices_of(name) -> int
#   read_detail_log(log_dir, keys) -> dict                     (":::MLLOG" entries by key)
#   RESULT_KEYS = {"Offline": "result_samples_per_second", "Server":
#                  "result_scheduled_samples_per_sec", "SingleStream": ...}
"""Stand-in harness run: the real MLPerf LoadGen against a service-rate model of a MIG slice."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import deque

__all__ = [
    "FULL_GPU_RATE",
    "GPU_SLICES",
    "RESULT_KEYS",
    "StandinError",
    "benchmark_key",
    "compute_slices_of",
    "gpu_slices_of",
    "read_detail_log",
    "run",
    "service_rate",
]

STANDIN = "STAND-IN (miglab simulated lab): service-rate model of a MIG slice, no TensorRT engine"

# Samples per second of one whole GPU (7 compute slices), the constants of miglab's simulated SUT
# (miglab/mlperf/guest/sut/slice_model.py FULL_GPU_RATE; keep them equal).
FULL_GPU_RATE = {"resnet50": 16000.0, "bert": 1700.0}
GPU_SLICES = 7  # compute slices of an A100 / H100 / H200 (MIG "7g")
# Boards whose MIG has fewer compute slices than 7 (NVIDIA's MIG user guide: A30 has 4).
_BOARD_SLICES = {"A30": 4}
_ALIASES = {
    "resnet50": "resnet50",
    "resnet": "resnet50",
    "bert": "bert",
    "bert-99": "bert",
    "bert-99.9": "bert",
}
# Total samples of each data set (LoadGen's QSL size): ImageNet 2012 validation, SQuAD v1.1 dev
# (as NVIDIA's harnesses count it: 10833 features).
_DATASET_SIZE = {"resnet50": 50000, "bert": 10833}
# LoadGen's performance sample count when neither flag nor user.conf sets one (mlperf.conf).
_PERF_SAMPLES = {"resnet50": 1024, "bert": 10833}
RESULT_KEYS = {
    "Offline": "result_samples_per_second",
    "Server": "result_scheduled_samples_per_sec",
    "SingleStream": "result_90.00_percentile_latency_ns",
}
_MLLOG = ":::MLLOG"


class StandinError(RuntimeError):
    """A run the stand-in cannot make (unknown benchmark, bad slices, LoadGen missing, ...)."""


def benchmark_key(benchmark: str) -> str:
    """``resnet50`` or ``bert`` for a harness's benchmark name (``bert-99``, ``resnet``...)."""
    key = _ALIASES.get(str(benchmark).strip().lower())
    if key is None:
        raise StandinError(
            f"the stand-in harness models {', '.join(sorted(FULL_GPU_RATE))} only, "
            f"not {benchmark!r}"
        )
    return key


def service_rate(benchmark: str, compute_slices: int, gpu_slices: int = GPU_SLICES) -> float:
    """Samples per second the modelled slice serves: FULL_GPU_RATE x compute / GPU slices."""
    if not 1 <= int(compute_slices) <= int(gpu_slices):
        raise StandinError(f"compute slices must be 1 to {gpu_slices}, not {compute_slices}")
    return FULL_GPU_RATE[benchmark_key(benchmark)] * int(compute_slices) / int(gpu_slices)


# A MIG-backed vGPU type as nvidia-smi names it in the VM: [GRID |NVIDIA ]<board>-<g>-<GB><class>
# (A100D-2-20C, A100-3-20C, A30-1-6C, H100XM-1-10C); time-sliced types have no middle number
# (A100D-20C, NVIDIA vGPU user guide, "Virtual GPU Types for Supported GPUs").
_VGPU_MIG_TYPE = re.compile(
    r"^(?:GRID |NVIDIA )?(?P<board>[A-Z]+\d+\w*)-(?P<g>\d)-(?P<gb>\d+)[A-Z]$"
)
_MIG_PROFILE = re.compile(r"\bMIG\s+(?P<g>\d)g\.\d+gb")


def compute_slices_of(name: str, mig_profiles=()) -> int | None:
    """The compute slices behind a GPU as the VM sees it: the number after the board in a
    MIG-backed vGPU type's name (``GRID A100D-2-20C`` -> 2), else the first MIG line given
    (``MIG 2g.20gb Device 0: ...`` -> 2); None when neither says (a whole GPU)."""
    m = _VGPU_MIG_TYPE.match(str(name).strip())
    if m:
        return int(m.group("g"))
    for line in mig_profiles:
        p = _MIG_PROFILE.search(str(line))
        if p:
            return int(p.group("g"))
    return None


def gpu_slices_of(name: str) -> int:
    """Compute slices of the whole board behind ``name`` (7, or 4 for an A30)."""
    text = re.sub(r"^(GRID|NVIDIA)\s+", "", str(name).strip())
    board = re.split(r"[-\s]", text, maxsplit=1)[0].rstrip("DXLM") if text else ""
    return _BOARD_SLICES.get(board, GPU_SLICES)


def read_detail_log(log_dir: str, keys) -> dict:
    """The last value of each of ``keys`` among the ``:::MLLOG {json}`` lines of
    ``<log_dir>/mlperf_log_detail.txt`` (missing keys are left out)."""
    want = set(keys)
    found: dict = {}
    path = os.path.join(log_dir, "mlperf_log_detail.txt")
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith(_MLLOG):
                continue
            try:
                entry = json.loads(line[len(_MLLOG) :].strip())
            except ValueError:
                continue
            if entry.get("key") in want:
                found[entry["key"]] = entry.get("value")
    return found


class _SliceSut:
    """One queue served at ``rate`` samples/s in batches of at most ``batch_size``: a batch of
    ``n`` is done ``n / rate`` s after the slice is free (sleeping, not computing)."""

    def __init__(self, lg, rate: float, batch_size: int):
        self.lg = lg
        self.rate = rate
        self.batch_size = max(1, int(batch_size))
        self.pending: deque = deque()
        self.cond = threading.Condition()
        self.stopping = False
        self.free_at = 0.0
        self.completed = 0
        self.batches = 0
        self.worker = threading.Thread(target=self._serve, name="standin-slice", daemon=True)
        self.worker.start()

    def issue(self, samples) -> None:
        with self.cond:
            self.pending.extend(s.id for s in samples)
            self.cond.notify()

    def flush(self) -> None:
        """LoadGen's flush: nothing is held back."""

    def _serve(self) -> None:
        lg = self.lg
        while True:
            with self.cond:
                while not self.pending and not self.stopping:
                    self.cond.wait()
                if not self.pending and self.stopping:
                    return
                n = min(self.batch_size, len(self.pending))
                ids = [self.pending.popleft() for _ in range(n)]
            start = max(time.perf_counter(), self.free_at)
            self.free_at = start + n / self.rate
            delay = self.free_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0) for i in ids])
            self.completed += n
            self.batches += 1

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify()
        self.worker.join(timeout=10)


def _loadgen():
    try:
        import mlperf_loadgen as lg
    except ImportError as exc:
        raise StandinError(
            f"MLPerf LoadGen is not installed here ({exc}): the stand-in harness needs the "
            "mlcommons-loadgen wheel (>= 5.0.6) in the harness's image"
        ) from None
    doc = getattr(lg.TestSettings.FromConfig, "__doc__", "") or ""
    if "conf_type" not in doc:
        raise StandinError("this MLPerf LoadGen is too old: install mlcommons-loadgen >= 5.0.6")
    return lg


def run(
    benchmark: str,
    scenario: str,
    test_mode: str,
    log_dir: str,
    *,
    compute_slices: int,
    gpu_slices: int = GPU_SLICES,
    batch_size: int,
    devices: int = 1,
    expected_qps: float | None = None,
    target_qps: float | None = None,
    min_duration_ms: int | None = None,
    min_query_count: int | None = None,
    max_duration_ms: int | None = None,
    max_query_count: int | None = None,
    performance_sample_count: int | None = None,
    server_target_latency_ns: int | None = None,
    user_conf: str | None = None,
    model: str | None = None,
    log_prefix: str = "mlperf_log_",
    log_suffix: str = "",
    copy_summary_to_stdout: bool = True,
) -> dict:
    """Run LoadGen once against the slice model and return what happened.

    Settings, in LoadGen's order of precedence as NVIDIA's harness binaries apply them: LoadGen's
    built-in mlperf.conf for ``model`` (default: ``resnet50`` / ``bert``) and ``scenario``, then
    ``user_conf`` (if given; read once, as a user.conf), then the keyword arguments that are not
    None (``expected_qps``: Offline's expected QPS, ``target_qps``: Server's target QPS).
    ``devices``: how many such slices (vGPUs) serve, as one queue at ``devices`` x the rate (the
    harness spreads batches over its GPUs). Logs go
    to ``log_dir`` (created) with LoadGen's names (``<log_prefix>summary.txt``...).

    Returns ``{"benchmark", "scenario", "test_mode", "log_dir", "rate", "compute_slices",
    "gpu_slices", "devices", "batch_size", "result_key", "result" (float or None), "result_validity"
    ("VALID" / "INVALID" / None), "valid" (bool or None), "samples_completed", "batches",
    "settings" (the effective values), "detail_log", "summary_log", "standin"}``.
    Raises StandinError for what cannot run."""
    key = benchmark_key(benchmark)
    if scenario not in RESULT_KEYS:
        raise StandinError(f"unknown scenario {scenario!r} (use {', '.join(RESULT_KEYS)})")
    if int(devices) < 1:
        raise StandinError(f"devices must be >= 1, not {devices}")
    rate = service_rate(key, compute_slices, gpu_slices) * int(devices)
    lg = _loadgen()
    modes = {
        "PerformanceOnly": lg.TestMode.PerformanceOnly,
        "AccuracyOnly": lg.TestMode.AccuracyOnly,
        "SubmissionRun": lg.TestMode.SubmissionRun,
        "FindPeakPerformance": lg.TestMode.FindPeakPerformance,
    }
    if test_mode not in modes:
        raise StandinError(f"unknown test mode {test_mode!r} (use {', '.join(modes)})")
    model_key = model or key

    ts = lg.TestSettings()
    rc = ts.FromConfig("", model_key, scenario, 0)  # LoadGen's built-in mlperf.conf
    if rc != 0:
        raise StandinError(f"LoadGen's mlperf.conf has no {model_key} {scenario} (rc {rc})")
    if user_conf:
        if not os.path.isfile(user_conf):
            raise StandinError(f"{user_conf}: no such user.conf")
        rc = ts.FromConfig(user_conf, model_key, scenario, 1)
        if rc != 0:
            raise StandinError(f"{user_conf}: LoadGen could not read this user.conf (rc {rc})")
    ts.scenario = getattr(lg.TestScenario, scenario)
    ts.mode = modes[test_mode]
    if expected_qps is not None:
        ts.offline_expected_qps = float(expected_qps)
    if target_qps is not None:
        ts.server_target_qps = float(target_qps)
    if min_duration_ms is not None:
        ts.min_duration_ms = int(min_duration_ms)
    if max_duration_ms is not None:
        ts.max_duration_ms = int(max_duration_ms)
    if min_query_count is not None:
        ts.min_query_count = int(min_query_count)
    if max_query_count is not None:
        ts.max_query_count = int(max_query_count)
    if server_target_latency_ns is not None:
        ts.server_target_latency_ns = int(server_target_latency_ns)
    if performance_sample_count:
        ts.performance_sample_count_override = int(performance_sample_count)
    perf_count = int(ts.performance_sample_count_override) or _PERF_SAMPLES[key]
    total = max(_DATASET_SIZE[key], perf_count)

    os.makedirs(log_dir, exist_ok=True)
    out = lg.LogOutputSettings()
    out.outdir = os.path.abspath(log_dir)
    out.prefix = log_prefix
    out.suffix = log_suffix
    out.copy_summary_to_stdout = bool(copy_summary_to_stdout)
    log_settings = lg.LogSettings()
    log_settings.log_output = out

    slice_sut = _SliceSut(lg, rate, batch_size)
    sut = lg.ConstructSUT(slice_sut.issue, slice_sut.flush)
    qsl = lg.ConstructQSL(total, perf_count, lambda _ids: None, lambda _ids: None)
    try:
        lg.StartTestWithLogSettings(sut, qsl, ts, log_settings)
    finally:
        slice_sut.stop()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)

    result_key = RESULT_KEYS[scenario]
    detail = os.path.join(log_dir, f"{log_prefix}detail{log_suffix}.txt")
    values = {}
    if os.path.isfile(detail):
        values = read_detail_log(os.path.dirname(detail) or ".", ["result_validity", result_key])
    validity = values.get("result_validity")
    result = values.get(result_key)
    return {
        "benchmark": key,
        "scenario": scenario,
        "test_mode": test_mode,
        "log_dir": log_dir,
        "rate": rate,
        "compute_slices": int(compute_slices),
        "gpu_slices": int(gpu_slices),
        "devices": int(devices),
        "batch_size": slice_sut.batch_size,
        "result_key": result_key,
        "result": float(result) if isinstance(result, (int, float)) else None,
        "result_validity": validity,
        "valid": None if validity is None else validity == "VALID",
        "samples_completed": slice_sut.completed,
        "batches": slice_sut.batches,
        "settings": {
            "model": model_key,
            "offline_expected_qps": float(ts.offline_expected_qps),
            "server_target_qps": float(ts.server_target_qps),
            "server_target_latency_ns": int(ts.server_target_latency_ns),
            "min_duration_ms": int(ts.min_duration_ms),
            "max_duration_ms": int(ts.max_duration_ms),
            "min_query_count": int(ts.min_query_count),
            "performance_sample_count": perf_count,
            "user_conf": user_conf,
        },
        "detail_log": detail,
        "summary_log": os.path.join(log_dir, f"{log_prefix}summary{log_suffix}.txt"),
        "standin": STANDIN,
    }
