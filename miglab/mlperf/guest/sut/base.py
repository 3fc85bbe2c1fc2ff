"""What a SUT engine offers the LoadGen driver (:mod:`miglab.mlperf.guest.sut.runner`).

An engine holds a model and its inputs -- synthetic ones staged (sample ``i`` of the query sample
library is row ``i``), or a dataset (:mod:`miglab.mlperf.guest.datasets`) whose samples LoadGen
loads into host memory and whose batches go to the device one at a time -- and runs batches of
sample indices: :meth:`Engine.submit` starts a
batch (asynchronously where the device allows), :meth:`Engine.wait` returns its outputs, one row
per sample, and :meth:`Engine.release` gives its buffers back. One thread submits, another waits,
so host and device work overlap.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Engine", "Pending", "pick_bucket"]


@dataclass
class Pending:
    """A submitted batch: ``n`` real samples (the engine may have padded it)."""

    n: int
    handle: object = None
    outputs: np.ndarray | None = None
    extra: dict = field(default_factory=dict)


def pick_bucket(n: int, buckets: tuple[int, ...] | None) -> int:
    """The smallest of ``buckets`` that holds ``n`` samples (``n`` when any size goes)."""
    if not buckets:
        return n
    for b in buckets:
        if b >= n:
            return b
    raise ValueError(f"batch of {n} is larger than the largest batch size {buckets[-1]}")


class Engine(ABC):
    """A model with staged inputs that runs batches of sample indices."""

    sut: str = "?"  # "torch" | "onnxruntime"
    device: str = "?"  # what it runs on, in words
    precision: str = "?"
    weights: str = "random"  # "real" | "random"
    inputs: str = "synthetic"  # "real" | "synthetic"
    model: str = "?"  # what model, in words
    sample_count: int = 0  # samples staged (the QSL's size)
    buckets: tuple[int, ...] | None = None  # batch sizes it can run, ascending; None: any
    max_batch: int = 1
    # what one row of outputs is, for the accuracy log: "int64" (a class), "float32" (logits),
    # "raw" (whatever the model gave)
    log_dtype: str = "raw"

    @abstractmethod
    def submit(self, indices: np.ndarray) -> Pending:
        """Start a batch of at most ``max_batch`` sample indices (may block for a free buffer)."""

    @abstractmethod
    def wait(self, pending: Pending) -> np.ndarray | None:
        """Block until the batch is done; its outputs (``pending.n`` rows) or None."""

    def release(self, pending: Pending) -> None:  # noqa: B027 - optional hook
        """Give the batch's buffers back (after its outputs were used)."""

    def describe(self) -> dict:
        """Metadata for ``miglab_run.json``."""
        return {
            "sut": self.sut,
            "device": self.device,
            "precision": self.precision,
            "model": self.model,
            "weights": self.weights,
            "inputs": self.inputs,
            "sample_count": self.sample_count,
            "max_batch": self.max_batch,
            "batch_sizes": list(self.buckets) if self.buckets else None,
        }

    def labels(self) -> np.ndarray | None:
        """Ground truth per sample when the dataset has it (accuracy scoring)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Free the model and its buffers."""
