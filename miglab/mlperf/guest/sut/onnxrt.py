"""ONNX Runtime SUT: any ONNX model file, on the CPU (``device="cpu"``) or with ONNX Runtime's CUDA
execution provider (``cuda``, ``cuda:N``: the onnxruntime-gpu package; a session that does not
run on it is refused, never run on the CPU instead, :mod:`miglab.mlperf.guest.device`).

Inputs are staged in host memory: synthetic (seeded random values of each input's shape and type)
for performance runs, or the arrays of a ``.npz`` dataset whose keys are the model's input names
(plus an optional ``labels`` array for top-1 scoring) for accuracy runs. The batch dimension is the
first dimension of every input; a model with a fixed batch size is run padded to that size.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from miglab.mlperf.guest.device import cpu_name, parse_device, require_cuda_session
from miglab.mlperf.guest.sut.base import Engine, Pending, pick_bucket

__all__ = ["OnnxRuntimeEngine", "cpu_name"]

ORT_TYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class OnnxRuntimeEngine(Engine):
    sut = "onnxruntime"
    precision = "as in the model"

    def __init__(
        self,
        model_path: str | Path,
        *,
        sample_count: int,
        max_batch: int = 64,
        dataset: str | Path | None = None,
        threads: int | None = None,
        weights: str = "real",
        argmax: bool | None = None,
        seed: int = 0,
        device: str = "cpu",
    ):
        import onnxruntime as ort

        path = Path(model_path)
        if not path.is_file():
            raise FileNotFoundError(f"ONNX model {path} not found")
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        kind, index = parse_device(device, default="cpu")
        if kind == "cuda":
            providers = [("CUDAExecutionProvider", {"device_id": index})]
        else:
            providers = ["CPUExecutionProvider"]
        self.session = ort.InferenceSession(str(path), sess_options=opts, providers=providers)
        if kind == "cuda":
            require_cuda_session(self.session)
            self.device = f"CUDA device {index} (ONNX Runtime CUDA execution provider)"
        else:
            self.device = f"CPU ({cpu_name()}, {os.cpu_count()} logical CPUs)"
        self.model = f"{path.name} (sha256 {_sha256(path)[:16]})"
        self.weights = weights
        self._inputs = self.session.get_inputs()
        batch_dims = {i.shape[0] for i in self._inputs if i.shape}
        fixed = [d for d in batch_dims if isinstance(d, int) and d > 0]
        if fixed:
            if len(set(fixed)) > 1:
                raise ValueError(f"model inputs disagree on the batch size: {sorted(fixed)}")
            self.buckets = (fixed[0],)
            self.max_batch = fixed[0]
        else:
            self.buckets = None
            self.max_batch = max(1, max_batch)
        self._labels = None
        if dataset is not None:
            self.inputs = "real"
            with np.load(dataset) as data:
                missing = [i.name for i in self._inputs if i.name not in data.files]
                if missing:
                    raise ValueError(f"dataset {dataset} lacks the model inputs {missing}")
                self._staged = {i.name: np.ascontiguousarray(data[i.name]) for i in self._inputs}
                if "labels" in data.files:
                    self._labels = np.asarray(data["labels"])
            counts = {len(a) for a in self._staged.values()}
            if len(counts) != 1:
                raise ValueError(f"dataset {dataset}: inputs have different sample counts")
            self.sample_count = counts.pop()
        else:
            self.inputs = "synthetic"
            rng = np.random.default_rng(seed)
            self._staged = {}
            for i in self._inputs:
                dims = i.shape[1:]
                if not all(isinstance(d, int) and d > 0 for d in dims):
                    raise ValueError(
                        f"input {i.name} has a non-fixed shape {i.shape}: synthetic inputs need "
                        "fixed dimensions after the batch one (give --dataset)"
                    )
                dtype = ORT_TYPES.get(i.type)
                if dtype is None:
                    raise ValueError(f"input {i.name}: unsupported type {i.type}")
                shape = (sample_count, *dims)
                if np.issubdtype(dtype, np.floating):
                    arr = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
                elif dtype is np.bool_:
                    arr = rng.integers(0, 2, shape).astype(np.bool_)
                else:
                    arr = rng.integers(0, 100, shape).astype(dtype)
                self._staged[i.name] = arr
            self.sample_count = sample_count
        self._argmax = (self._labels is not None) if argmax is None else argmax

    def labels(self) -> np.ndarray | None:
        return self._labels

    def submit(self, indices: np.ndarray) -> Pending:
        n = len(indices)
        bs = pick_bucket(n, self.buckets)
        if bs != n:
            indices = np.concatenate([indices, np.full(bs - n, indices[0], dtype=indices.dtype)])
        feed = {name: arr[indices] for name, arr in self._staged.items()}
        out = self.session.run(None, feed)[0][:n]
        if self._argmax and out.ndim == 2:
            out = out.argmax(axis=1).astype(np.int32)
        return Pending(n, outputs=np.ascontiguousarray(out))

    def wait(self, pending: Pending) -> np.ndarray | None:
        return pending.outputs

    def close(self) -> None:
        self.session = None
        self._staged = {}
