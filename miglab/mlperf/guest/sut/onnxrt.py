"""ONNX Runtime SUT: any ONNX model file, on the CPU (``device="cpu"``) or with ONNX Runtime's CUDA
execution provider (``cuda``, ``cuda:N``: the onnxruntime-gpu package; a session that does not
run on it is refused, never run on the CPU instead, :mod:`miglab.mlperf.guest.device`).

Inputs: synthetic (seeded random values of each input's shape and type, staged in host memory)
for performance runs, or a dataset (:mod:`miglab.mlperf.guest.datasets`: ImageNet, SQuAD or a
``.npz`` whose keys are the model's input names) whose samples LoadGen loads into host memory;
each batch is gathered from there and handed to ONNX Runtime, which copies it to the device for
that run only. The batch dimension is the first dimension of every input; a model with a fixed
batch size is run padded to that size.

Outputs, by ``task`` (what the accuracy log holds, one row per sample):

* ``classify`` (ResNet50): the class, int64, 0-based. The MLCommons ResNet50 ONNX model
  (``resnet50_v1.onnx``) outputs ``ArgMax:0``, int64 over 1001 classes with background at 0,
  so 1..1000 for ImageNet's classes: the reference subtracts 1 (mlcommons/inference
  ``vision/classification_and_detection/python/main.py``, ``PostProcessCommon(offset=-1)``,
  commit b66003e10e2db4b8c36a448b0545ec90fcc6e9e9). An integer output of one value per sample
  is taken as such an ArgMax (offset -1); otherwise the first float output's argmax (offset -1
  over 1001 classes, 0 over 1000). ``label_offset`` overrides the offset.
* ``qa`` (BERT): start and end logits as ``(384, 2)`` float32 (two outputs of ``(N, 384)``
  stacked on the last axis, as the reference's ``onnxruntime_SUT.py`` does, or one output
  already ``(N, 384, 2)``).
* None: the first output as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from miglab.formats.manifest import sha256_file
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
        source=None,
        task: str | None = None,
        label_offset: int | None = None,
    ):
        """``source``: a :class:`~miglab.mlperf.guest.datasets.base.SampleSource` (``dataset``,
        a ``.npz`` path, is read into one); neither: synthetic inputs. ``argmax`` (older
        callers): True is ``task="classify"``."""
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
        self.model = f"{path.name} (sha256 {sha256_file(path)[:16]})"
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
        if source is None and dataset is not None:
            from miglab.mlperf.guest.datasets.npz import NpzSource

            source = NpzSource(dataset, tuple(i.name for i in self._inputs))
        self.source = source
        self.task = task if task is not None else ("classify" if argmax else None)
        self.label_offset = label_offset
        self._staged = {}
        if source is not None:
            self.inputs = "real"
            self._input_of = self._map_inputs(source.input_names())
            self.sample_count = source.count
        else:
            self.inputs = "synthetic"
            rng = np.random.default_rng(seed)
            for i in self._inputs:
                dims = i.shape[1:]
                if not all(isinstance(d, int) and d > 0 for d in dims):
                    raise ValueError(
                        f"input {i.name} has a non-fixed shape {i.shape}: synthetic inputs need "
                        "fixed dimensions after the batch one (give a dataset)"
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
        self.log_dtype = {"classify": "int64", "qa": "float32"}.get(self.task or "", "raw")

    # the dataset's input names and the names the MLCommons / Hugging Face BERT models use
    ALIASES = {
        "input_mask": ("attention_mask",),
        "segment_ids": ("token_type_ids",),
        "attention_mask": ("input_mask",),
        "token_type_ids": ("segment_ids",),
    }

    def _map_inputs(self, names: tuple[str, ...]) -> dict[str, tuple[str, object]]:
        """model input -> (dataset input, numpy type): by name (or alias); a model with one
        input takes a dataset with one input whatever its name."""
        model = {i.name: i for i in self._inputs}
        if len(model) == 1 and len(names) == 1:
            (only,) = model.values()
            return {only.name: (names[0], ORT_TYPES.get(only.type))}
        out = {}
        for name, i in model.items():
            found = next(
                (n for n in (name, *self.ALIASES.get(name, ())) if n in names),
                None,
            )
            if found is None:
                raise ValueError(f"the dataset has no input for the model's {name!r} ({names})")
            out[name] = (found, ORT_TYPES.get(i.type))
        return out

    def _postprocess(self, outs: list[np.ndarray]) -> np.ndarray:
        if self.task == "classify":
            for o in outs:  # an ArgMax output: one integer per sample
                if np.issubdtype(o.dtype, np.integer) and (o.ndim == 1 or o.shape[1:] == (1,)):
                    offset = -1 if self.label_offset is None else self.label_offset
                    return o.reshape(-1).astype(np.int64) + offset
            logits = next((o for o in outs if o.ndim == 2), None)
            if logits is not None:
                default = -1 if logits.shape[1] == 1001 else 0
                offset = default if self.label_offset is None else self.label_offset
                return logits.argmax(axis=1).astype(np.int64) + offset
        elif self.task == "qa":
            floats = [o for o in outs if np.issubdtype(o.dtype, np.floating)]
            if len(floats) >= 2 and floats[0].ndim == 2 and floats[0].shape == floats[1].shape:
                return np.stack(floats[:2], axis=-1).astype(np.float32)
            if floats and floats[0].ndim == 3 and floats[0].shape[-1] == 2:
                return floats[0].astype(np.float32)
        return outs[0]

    def labels(self) -> np.ndarray | None:
        return self.source.labels() if self.source is not None else None

    def submit(self, indices: np.ndarray) -> Pending:
        n = len(indices)
        bs = pick_bucket(n, self.buckets)
        if bs != n:
            indices = np.concatenate([indices, np.full(bs - n, indices[0], dtype=indices.dtype)])
        if self.source is not None:  # this batch only, from host memory
            host = self.source.batch(indices)
            feed = {
                name: host[src] if dtype is None else host[src].astype(dtype, copy=False)
                for name, (src, dtype) in self._input_of.items()
            }
        else:
            feed = {name: arr[indices] for name, arr in self._staged.items()}
        out = self._postprocess(self.session.run(None, feed))[:n]
        return Pending(n, outputs=np.ascontiguousarray(out))

    def wait(self, pending: Pending) -> np.ndarray | None:
        return pending.outputs

    def close(self) -> None:
        self.session = None
        self._staged = {}
        if self.source is not None:
            self.source.close()
