"""The simulated lab's SUT: a MIG slice as a service-rate model (SIMULATED, never a measurement).

The simulated lab's VMs are containers sharing the controller's few cores. A SUT that computes
would race the other VMs of its scenario for those cores, so a scenario's runs would neither last
alike nor overlap, and their sum would say how the host's scheduler shares cores, not how a GPU's
MIG instances share it. This engine computes nothing: it serves samples at a fixed rate, the way a
MIG instance serves them at a rate set by its compute slices:

    rate = FULL_GPU_RATE[benchmark] x compute_slices / 7

A batch of ``n`` samples is done ``n / rate`` seconds after the engine is free (one queue, like a
device's stream), and waiting for it sleeps, so VMs on one machine do not slow each other. The
model's constants are of the order of one H200 running the reference PyTorch SUT
(``bench/RESULTS-gpu.md``: ResNet50 about 16,000 and BERT-large about 1,700 samples/s); they are
model constants, labelled SIMULATED in every run's metadata and the report. What the model
implies: seven 1g instances together serve what one 7g instance serves, and a k-g instance k/7
of it -- the ideal MIG scaling a real lab's campaign measures against.

A time-sliced vGPU (a C-series type without MIG, e.g. ``nvidia_l40s-24c``) has the whole GPU's
compute, shared by time slicing with every other vGPU on that GPU: with NVIDIA's default
best-effort scheduler, N busy vGPUs get about 1/N of the GPU each (NVIDIA vGPU user guide, "vGPU
scheduling policies"). The model gives it

    rate = full-GPU rate x 1 / N

with N the vGPUs the host's vGPU manager runs on its GPU, read by the controller after power-on
(the run's ``placement.gpu_vgpus``, :func:`miglab.core.power_on.wave_placement`); without that
count the whole GPU, and the device says the sharing is not known.

The full-GPU rate is :data:`FULL_GPU_RATE` unless the vGPU type's board has a published rate of
its own in :data:`BOARD_RATES` (the L40S: MLPerf Inference results per GPU), SIMULATED all the same.
"""

from __future__ import annotations

import re
import threading
import time

import numpy as np

from miglab.mlperf.guest.sut.base import Engine, Pending

__all__ = [
    "BOARD_RATES",
    "FULL_GPU_RATE",
    "FULL_SLICES",
    "SliceModelEngine",
    "compute_slices",
    "engine_for",
    "full_gpu_rate",
    "gpu_vgpus",
]

FULL_GPU_RATE = {"resnet50": 16000.0, "bert-99": 1700.0, "bert-99.9": 1700.0}
FULL_SLICES = 7  # compute slices of a full A100 / H100 / H200 (MIG's "7g")
# Full-GPU rates of boards with a published number of their own, by the vSphere vGPU type's board
# prefix (the type name up to its first "-"). Samples/s per GPU, Offline, SIMULATED model constants.
BOARD_RATES = {
    # NVIDIA L40S: MLPerf Inference v4.0, closed division, Dell, "Dell PowerEdge R760xa (4x L40S,
    # TensorRT)" (github.com/mlcommons/inference_results_v4.0 @ 3c4a1cf1,
    # closed/Dell/results/R760xa_L40Sx4_TRT/<benchmark>/Offline/performance/run_1/
    # mlperf_log_summary.txt): ResNet50 175,746, BERT-99 13,538.2, BERT-99.9 7,308.19 samples/s
    # on 4 GPUs, divided by 4. NVIDIA's TensorRT harness, so of another kind than FULL_GPU_RATE
    # (the reference PyTorch SUT): compare an L40S campaign's scenarios with each other.
    "nvidia_l40s": {"resnet50": 175746 / 4, "bert-99": 13538.2 / 4, "bert-99.9": 7308.19 / 4},
}
_PROFILE_RE = re.compile(r"^(?P<g>[1-9])g\.\d+gb(\+\w+)?$")


def compute_slices(profile: str | None) -> int:
    """The compute slices of a MIG profile (``3g.40gb`` -> 3, ``1g.10gb+me`` -> 1); a profile
    that is not MIG (a time-sliced vGPU, none) is the whole GPU."""
    m = _PROFILE_RE.match((profile or "").strip().lower())
    return int(m.group("g")) if m else FULL_SLICES


def full_gpu_rate(benchmark: str, vgpu_type: str | None = None) -> float:
    """The modelled full-GPU rate of ``benchmark``: the board's own (:data:`BOARD_RATES`, by the
    vGPU type's prefix, e.g. ``nvidia_l40s-24c`` -> ``nvidia_l40s``), else :data:`FULL_GPU_RATE`."""
    board = (vgpu_type or "").strip().lower().split("-", 1)[0]
    rates = BOARD_RATES.get(board, FULL_GPU_RATE)
    if benchmark not in rates:
        raise ValueError(f"the slice model has no rate for {benchmark!r}")
    return rates[benchmark]


def gpu_vgpus(placement: object) -> int | None:
    """How many vGPUs share the VM's GPU, from its placement (``gpu_vgpus``, a positive integer);
    None when the placement does not say."""
    n = placement.get("gpu_vgpus") if isinstance(placement, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else None


def _is_mig(profile: str | None) -> bool:
    return _PROFILE_RE.match((profile or "").strip().lower()) is not None


class SliceModelEngine(Engine):
    """Serves batches at the modelled rate of ``slices`` of ``FULL_SLICES`` compute slices, or of
    a time-sliced vGPU's share (``1/shared_by``) of the whole GPU."""

    sut = "slice-model"
    precision = "none"
    weights = "none"
    inputs = "synthetic"

    def __init__(self, benchmark: str, slices: int, *, sample_count: int = 1024,
                 max_batch: int = 32, shared_by: int | None = 1, time_sliced: bool = False,
                 full_rate: float | None = None) -> None:  # fmt: skip
        if benchmark not in FULL_GPU_RATE:
            raise ValueError(f"the slice model has no rate for {benchmark!r}")
        if not 1 <= slices <= FULL_SLICES:
            raise ValueError(f"compute slices must be 1 to {FULL_SLICES}, not {slices}")
        if shared_by is not None and (isinstance(shared_by, bool) or shared_by < 1):
            raise ValueError(f"vGPUs sharing the GPU must be at least 1, not {shared_by}")
        full = FULL_GPU_RATE[benchmark] if full_rate is None else float(full_rate)
        if not full > 0:
            raise ValueError(f"the full-GPU rate must be positive, not {full_rate}")
        self.slices = slices
        self.time_sliced = time_sliced
        self.shared_by = shared_by or 1
        self.rate = full * slices / FULL_SLICES / self.shared_by
        if time_sliced:
            share = (
                f"1/{self.shared_by} of the GPU: {self.shared_by} vGPU(s) on it"
                if shared_by
                else "the whole GPU: how many vGPUs share it is not known"
            )
            self.device = f"SIMULATED time-sliced vGPU ({share})"
            how = f"{full:.0f} x 1/{self.shared_by}, time-sliced"
        else:
            self.device = f"SIMULATED MIG slice ({slices} of {FULL_SLICES} compute slices)"
            how = f"{full:.0f} x {slices}/{FULL_SLICES}"
        self.model = f"SIMULATED service-rate model: {self.rate:.0f} samples/s ({how})"
        self.sample_count = sample_count
        self.max_batch = max_batch
        self._free_at = 0.0
        self._lock = threading.Lock()

    @property
    def nominal_samples_per_second(self) -> float:
        """What the model serves at most: its calibration is exact."""
        return self.rate

    def submit(self, indices: np.ndarray) -> Pending:
        n = len(indices)
        with self._lock:
            start = max(time.perf_counter(), self._free_at)
            self._free_at = start + n / self.rate
            done_at = self._free_at
        return Pending(n, handle=done_at)

    def wait(self, pending: Pending) -> np.ndarray | None:
        delay = pending.handle - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        return np.zeros((pending.n, 1), dtype=np.float32)

    def release(self, pending: Pending) -> None:
        """Nothing to give back."""


def engine_for(benchmark: str, meta: dict | None, *, sample_count: int = 1024,
               max_batch: int = 32) -> SliceModelEngine:  # fmt: skip
    """The engine of a run from its metadata (``python -m miglab.mlperf.run``'s ``--profile``,
    ``--vgpu-type``, ``--placement``): a MIG profile is its compute slices; another vGPU (a
    time-sliced type) is 1/N of its board's full GPU, N from the placement; no vGPU at all is the
    whole GPU."""
    meta = meta or {}
    profile, vgpu_type = meta.get("profile"), meta.get("vgpu_type")
    time_sliced = bool((profile or vgpu_type or "").strip()) and not _is_mig(profile)
    return SliceModelEngine(
        benchmark,
        compute_slices(profile),
        sample_count=sample_count,
        max_batch=max_batch,
        shared_by=gpu_vgpus(meta.get("placement")) if time_sliced else 1,
        time_sliced=time_sliced,
        full_rate=full_gpu_rate(benchmark, vgpu_type or profile),
    )
