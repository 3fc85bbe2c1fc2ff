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
"""

from __future__ import annotations

import re
import threading
import time

import numpy as np

from miglab.mlperf.guest.sut.base import Engine, Pending

__all__ = ["FULL_GPU_RATE", "FULL_SLICES", "SliceModelEngine", "compute_slices"]

FULL_GPU_RATE = {"resnet50": 16000.0, "bert-99": 1700.0, "bert-99.9": 1700.0}
FULL_SLICES = 7  # compute slices of a full A100 / H100 / H200 (MIG's "7g")
_PROFILE_RE = re.compile(r"^(?P<g>[1-9])g\.\d+gb(\+\w+)?$")


def compute_slices(profile: str | None) -> int:
    """The compute slices of a MIG profile (``3g.40gb`` -> 3, ``1g.10gb+me`` -> 1); a profile
    that is not MIG (a time-sliced vGPU, none) is the whole GPU."""
    m = _PROFILE_RE.match((profile or "").strip().lower())
    return int(m.group("g")) if m else FULL_SLICES


class SliceModelEngine(Engine):
    """Serves batches at the modelled rate of ``slices`` of ``FULL_SLICES`` compute slices."""

    sut = "slice-model"
    precision = "none"
    weights = "none"
    inputs = "synthetic"

    def __init__(self, benchmark: str, slices: int, *, sample_count: int = 1024,
                 max_batch: int = 32) -> None:  # fmt: skip
        if benchmark not in FULL_GPU_RATE:
            raise ValueError(f"the slice model has no rate for {benchmark!r}")
        if not 1 <= slices <= FULL_SLICES:
            raise ValueError(f"compute slices must be 1 to {FULL_SLICES}, not {slices}")
        self.slices = slices
        self.rate = FULL_GPU_RATE[benchmark] * slices / FULL_SLICES
        self.device = f"SIMULATED MIG slice ({slices} of {FULL_SLICES} compute slices)"
        self.model = (
            f"SIMULATED service-rate model: {self.rate:.0f} samples/s "
            f"({FULL_GPU_RATE[benchmark]:.0f} x {slices}/{FULL_SLICES})"
        )
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
