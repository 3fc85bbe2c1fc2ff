"""A ``.npz`` of preprocessed inputs (``--dataset``): one array per model input, the samples
along the first axis, and an optional ``labels`` array (a class per sample) for top-1 scoring.

The arrays stay in host memory (numpy reads the file once); a SUT takes one batch of rows at a
time to its device, as with the other datasets."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from miglab.mlperf.guest.datasets.base import DatasetError, SampleSource, read_accuracy_entries

__all__ = ["NpzSource"]


class NpzSource(SampleSource):
    name = "npz"

    def __init__(self, path: str | Path, names: tuple[str, ...] | None = None):
        """``names``: the arrays to use as inputs (default: every array but ``labels``)."""
        super().__init__()
        self.path = Path(path)
        try:
            with np.load(self.path, allow_pickle=False) as data:
                files = list(data.files)
                wanted = [n for n in (names or files) if n != "labels"]
                missing = [n for n in wanted if n not in files]
                if missing:
                    raise DatasetError(f"{path}: lacks the model inputs {missing}")
                self._arrays = {n: np.ascontiguousarray(data[n]) for n in wanted}
                self._labels = np.asarray(data["labels"]) if "labels" in files else None
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{path}: not a readable .npz ({exc})") from None
        counts = {len(a) for a in self._arrays.values()}
        if len(counts) != 1:
            raise DatasetError(f"{path}: inputs have different sample counts")
        self._count = counts.pop()

    @property
    def count(self) -> int:
        return self._count

    def arrays(self) -> dict[str, np.ndarray]:
        """Every input array (host memory)."""
        return self._arrays

    def input_names(self) -> tuple[str, ...]:
        return tuple(self._arrays)

    def read(self, index: int) -> dict[str, np.ndarray]:
        return {n: a[index] for n, a in self._arrays.items()}

    def batch(self, indices) -> dict[str, np.ndarray]:
        idx = np.asarray(indices, dtype=np.int64)
        return {n: a[idx] for n, a in self._arrays.items()}

    def labels(self) -> np.ndarray | None:
        return self._labels

    def score(self, log_path: str | Path, dtype, benchmark: str = "") -> dict:
        """Top-1 against ``labels`` (the SUT logged one class per sample); without labels only
        the sample count."""
        if self._labels is None:
            got = read_accuracy_entries(log_path, np.uint8, None)  # any size: counted
            return {
                "samples": len(got),
                "note": "no labels in the dataset: score mlperf_log_accuracy.json yourself",
            }
        got = read_accuracy_entries(log_path, dtype)
        good = sum(int(int(v[0]) == int(self._labels[i])) for i, v in got.items())
        return {
            "samples": len(got),
            "good": good,
            "total": len(got),
            "top1": good / len(got) if got else None,
        }

    def describe(self) -> dict:
        return {"dataset": "npz", "file": str(self.path), "samples": self.count}
