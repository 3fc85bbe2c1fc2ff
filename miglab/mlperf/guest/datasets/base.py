"""What a dataset offers the reference backend and the SUTs (see the package docstring)."""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np

__all__ = ["DatasetError", "SampleSource", "read_accuracy_entries"]


class DatasetError(ValueError):
    """A dataset that cannot be used as given; the message is one line meant for the user."""


def read_accuracy_entries(path: str | Path, dtype, row_shape: tuple[int, ...] | None = ()) -> dict:
    """LoadGen's ``mlperf_log_accuracy.json``: ``{qsl_idx: array}``, each entry's hex ``data``
    decoded as ``dtype`` (the type the SUT logged: ResNet50's class as int64 must not be read as
    int32, which would give two values per sample) and reshaped to ``row_shape``. A sample
    logged twice (LoadGen may repeat one) keeps its first result, as the reference accuracy
    scripts do. ``row_shape`` None: any number of values. DatasetError for a log that is not
    one, or an entry of the wrong size."""
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8") or "[]")
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: cannot read the accuracy log ({exc})") from None
    if not isinstance(entries, list):
        raise DatasetError(f"{path}: not a LoadGen accuracy log")
    dt = np.dtype(dtype)
    want = int(np.prod(row_shape, dtype=np.int64)) if row_shape else 1
    out: dict[int, np.ndarray] = {}
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("data"), str):
            raise DatasetError(f"{path}: not a LoadGen accuracy log")
        idx = e.get("qsl_idx")
        if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
            raise DatasetError(f"{path}: bad qsl_idx {idx!r}")
        if idx in out:
            continue
        try:
            raw = bytes.fromhex(e["data"])
        except ValueError:
            raise DatasetError(f"{path}: sample {idx}: data is not hex") from None
        if row_shape is not None and len(raw) != want * dt.itemsize:
            raise DatasetError(
                f"{path}: sample {idx} holds {len(raw)} bytes, not {want} x {dt.name} "
                f"({want * dt.itemsize} bytes)"
            )
        arr = np.frombuffer(raw[: len(raw) - len(raw) % dt.itemsize], dtype=dt)
        out[idx] = arr.reshape(row_shape) if row_shape else arr
    return out


class SampleSource(ABC):
    """A dataset as a query sample library: samples ``0 .. count-1`` in a fixed order.

    LoadGen calls :meth:`load` / :meth:`unload` with the samples it is about to issue (its
    ``load_samples_to_ram`` and ``unload_samples_from_ram``); :meth:`batch` returns the host
    arrays of loaded samples, one row per index, keyed by input name (a sample that was not
    loaded is loaded then: a raw-throughput measurement does not go through LoadGen)."""

    name = "?"
    inputs = "real"

    def __init__(self):
        self._ram: dict[int, dict[str, np.ndarray]] = {}
        self._lock = threading.Lock()
        self.loads = 0  # samples loaded into host memory so far (tests, progress)

    @property
    @abstractmethod
    def count(self) -> int:
        """How many samples the dataset holds (the QSL's total count)."""

    @abstractmethod
    def read(self, index: int) -> dict[str, np.ndarray]:
        """Sample ``index``'s inputs, preprocessed, as host arrays (one row, no batch axis)."""

    def load(self, indices) -> None:
        """LoadGen's ``load_samples_to_ram``: these samples into host memory."""
        for i in indices:
            i = int(i)
            if i not in self._ram:
                sample = self.read(i)
                with self._lock:
                    self._ram[i] = sample
                    self.loads += 1

    def unload(self, indices) -> None:
        """LoadGen's ``unload_samples_from_ram``."""
        with self._lock:
            for i in indices:
                self._ram.pop(int(i), None)

    @property
    def loaded(self) -> int:
        """Samples in host memory now."""
        return len(self._ram)

    def batch(self, indices) -> dict[str, np.ndarray]:
        """The inputs of samples ``indices`` stacked (batch axis first), from host memory."""
        rows = []
        for i in indices:
            i = int(i)
            sample = self._ram.get(i)
            if sample is None:
                self.load([i])
                sample = self._ram[i]
            rows.append(sample)
        return {name: np.stack([r[name] for r in rows]) for name in rows[0]}

    def input_names(self) -> tuple[str, ...]:
        """The names :meth:`batch` returns."""
        return tuple(self.read(0)) if self.count else ()

    def labels(self) -> np.ndarray | None:
        """Ground-truth class per sample, where the dataset has one (top-1)."""
        return None

    @abstractmethod
    def score(self, log_path: str | Path, dtype, benchmark: str) -> dict:
        """Score LoadGen's accuracy log (entries decoded as ``dtype``): a dict with ``samples``
        (distinct samples logged) and the benchmark's metric (see the subclasses)."""

    def describe(self) -> dict:
        """Metadata for ``miglab_run.json``."""
        return {"dataset": self.name, "samples": self.count}

    def close(self) -> None:
        with self._lock:
            self._ram.clear()
