"""The ``reference`` backend: MLPerf LoadGen from PyPI (``mlcommons-loadgen``) driving a SUT.

SUTs (``miglab.mlperf.guest.sut``): ``torch`` (ResNet50 / BERT-large on a CUDA GPU, fp16 or, BERT
only
and opt-in, FP8 GEMMs, CUDA graphs, inputs staged on the GPU) and ``onnxruntime`` (any ONNX model
on the CPU, or with ONNX Runtime's CUDA provider). The device (``device``: ``cuda``, ``cuda:N``,
``cpu``; default the SUT's, :data:`DEFAULT_DEVICE`) is checked before anything is loaded: a CUDA
device that is not visible stops the run (:mod:`miglab.mlperf.guest.device`), never a silent run
on the CPU. Scenarios Offline and Server; modes PerformanceOnly and AccuracyOnly (AccuracyOnly
needs real weights and a dataset given by the user and is refused otherwise). Nothing is loaded
from the network.

Datasets (:mod:`miglab.mlperf.guest.datasets`): ImageNet validation (``dataset_path``, a folder
of JPEGs with ``val_map.txt``) for ResNet50, SQuAD v1.1 dev (``squad_json`` and ``vocab``) for
BERT, or a ``.npz`` of preprocessed inputs (``dataset``). LoadGen's QSL callbacks load the
samples it will issue into host memory and unload them after; each batch goes to the device
when it runs, so the set is never staged on the device. An AccuracyOnly run is scored as the
MLCommons accuracy scripts score it and files ``accuracy.txt`` in their format (what the
submission checker reads, :mod:`miglab.core.accuracy`) beside ``mlperf_log_accuracy.json``; it
passes when every sample was logged and the score reaches the benchmark's target (ResNet50
top-1 76.46 % x 0.99, BERT F1 90.874 % x 0.99 / x 0.999), and fails otherwise (exit 1,
``miglab_run.json``'s ``accuracy.passed`` and ``loadgen.valid`` false).

LoadGen settings come from the standard files: LoadGen (``mlcommons-loadgen`` 5.0.6 and later,
:data:`LOADGEN_REQUIREMENT`) carries ``mlperf.conf`` inside itself and loads it first; one config
file given by the user (``user.conf``, or a ``mlperf.conf`` of the user's: LoadGen takes one, two
are refused) is applied on top of it by LoadGen's own ``TestSettings.FromConfig`` with the
benchmark's model key (``resnet50``, ``bert``; for ``bert-99`` lines keyed ``bert-99`` are read
too); then the command line overrides for short runs (min/max duration, query counts, target QPS,
latency, performance sample count). LoadGen allows one user.conf per process (every later
``FromConfig`` of one logs an ERROR into the next run's detail log, which makes that run INVALID),
and a session runs many rounds in one process: :func:`conf_file_values` has LoadGen read the file
once, in a process of its own, and every run's ``TestSettings`` gets its values.

Where neither file nor command line sets a target QPS (it is still mlperf.conf's
1.0), the one this VM's search runs stored for its profile is used (``qps_search.json``,
:mod:`miglab.mlperf.guest.qps_search`: Server's highest VALID target, Offline's calibrated
expected QPS); without one, the SUT's raw throughput measured in
:meth:`ReferenceBackend.prepare` is used: 1.1x of
it for Offline (``auto_target_factor``; LoadGen adds another 10 %, so a run lasts about 1.2x the
minimum duration and stays VALID if the SUT runs up to 20 % faster under LoadGen than measured),
half of it for Server (a guess: set it in user.conf for real runs).

Every run writes ``miglab_run.json`` beside LoadGen's logs (keys in ``../README.md``; this backend
adds ``sut``, ``device`` (the record of what was measured: nvidia-smi's GPU or the CPU),
``precision``, ``model``, ``raw_throughput``, ``fidelity``, ``loadgen``,
``settings``, ``batching`` and ``barrier``), atomically, and last ``MANIFEST.sha256`` (the
checksums of the run folder's files, :mod:`miglab.formats.manifest`): a run folder without one did
not finish.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from miglab.formats.manifest import MANIFEST, atomic_write_text, write_manifest
from miglab.mlperf.guest import device as device_lib
from miglab.mlperf.guest.backends.base import (
    MODES,
    SCENARIOS,
    Backend,
    BackendError,
    benchmark_info,
    loadgen_result,
    progress,
    run_dir_for,
)

__all__ = [
    "LOADGEN_REQUIREMENT",
    "ReferenceBackend",
    "ReferenceSettings",
    "check_loadgen",
    "conf_file_values",
    "load_test_settings",
    "now_iso",
]

# slice-model: the simulated lab's MIG slice, a service-rate model (sut/slice_model.py)
SUTS = ("torch", "onnxruntime", "slice-model")
DEFAULT_QPS = 1.0  # mlperf.conf's placeholder target_qps
# The first mlcommons-loadgen on PyPI whose TestSettings.FromConfig takes ``conf_type`` (0: the
# built-in mlperf.conf, 1: a user.conf; mlcommons/inference PR #1994), the call below: 4.0 takes
# three arguments, 4.1.7 to 5.0.5 a fourth ``is_mlperf_conf: bool`` of the opposite sense (#1882).
LOADGEN_REQUIREMENT = "mlcommons-loadgen>=5.0.6"
CONF_READ_TIMEOUT_S = 120.0  # LoadGen reading one config file in a process of its own
OFFLINE_AUTO_FACTOR = 1.1
SERVER_AUTO_FRACTION = 0.5

# The device a SUT runs on when none is given: the torch SUT the GPU, the onnxruntime SUT the CPU
# (the mlperf role always gives one: mlperf_device, cuda by default).
DEFAULT_DEVICE = {"torch": "cuda", "onnxruntime": "cpu", "slice-model": "cpu"}
# What the onnxruntime SUT makes of a benchmark's outputs (sut/onnxrt.py): ResNet50's class,
# BERT's start and end logits.
TASKS = {"resnet50": "classify", "bert": "qa"}
# Per SUT and benchmark: Offline batch, Server max batch, Server batching timeout (ms).
DEFAULTS = {
    ("torch", "resnet50"): (512, 128, 2.0),
    ("torch", "bert"): (256, 64, 10.0),
    ("onnxruntime", "*"): (32, 8, 1.0),
    ("slice-model", "*"): (256, 32, 1.0),
}


def now_iso() -> str:
    """The wall-clock time now, ISO 8601 with the local time zone."""
    return datetime.now().astimezone().isoformat(timespec="milliseconds")


@dataclass
class ReferenceSettings:
    """Everything a reference run needs; the run command fills it from its options."""

    benchmark: str = "resnet50"
    scenario: str = "Offline"
    mode: str = "PerformanceOnly"
    sut: str = "onnxruntime"
    model: str | None = None  # onnxruntime: an .onnx file, or tiny-conv / tiny-mlp
    weights: str | None = None  # torch: a state_dict file or a local Hugging Face folder
    weights_kind: str | None = None  # force "real" / "random" in the metadata
    dataset: str | None = None  # .npz of preprocessed inputs (see the SUTs)
    dataset_path: str | None = None  # ImageNet validation: the folder of JPEGs
    val_map: str | None = None  # ImageNet: the image list (default: <dataset_path>/val_map.txt)
    squad_json: str | None = None  # SQuAD v1.1 dev-v1.1.json
    vocab: str | None = None  # BERT's vocab.txt
    cache_dir: str | None = None  # preprocessed samples / tokenized features, reused
    preprocessing: str | None = None  # ImageNet: vgg (ONNX) / pytorch (torch); None: the SUT's
    dataset_count: int | None = None  # use the first N samples only (a short accuracy check)
    label_offset: int | None = None  # onnxruntime ResNet50: added to the model's class
    device: str | None = None  # cuda, cuda:N or cpu; None: DEFAULT_DEVICE of the SUT
    mlperf_conf: str | None = None
    user_conf: str | None = None
    min_duration_ms: int | None = None
    max_duration_ms: int | None = None
    min_query_count: int | None = None
    max_query_count: int | None = None
    target_qps: float | None = None
    target_latency_ms: float | None = None
    performance_sample_count: int | None = None
    batch_size: int | None = None  # Offline batch (and the raw-throughput batch)
    server_batch_size: int | None = None
    server_timeout_ms: float | None = None
    max_inflight: int = 2
    batch_sizes: tuple[int, ...] | None = None  # torch: the CUDA graphs to capture
    compile: bool = False
    cuda_graphs: bool = True
    attention: str | None = None  # torch BERT: flash / efficient / cudnn / math (None: any)
    fast_gelu: bool = False  # torch BERT: tanh GELU in the GEMM epilogue (a numerics change)
    precision: str | None = None  # torch: fp16 (None) or fp8 (BERT's encoder GEMMs; opt-in)
    threads: int | None = None  # onnxruntime intra-op threads
    raw_seconds: float = 5.0
    warmup_seconds: float = 2.0
    auto_target_factor: float = OFFLINE_AUTO_FACTOR  # Offline target = factor x raw when unset
    seed: int = 0
    overwrite: bool = False
    meta: dict = field(default_factory=dict)  # vm, scenario (the campaign's), profile, ...


def _conf_error(path, rc) -> BackendError:
    return BackendError(f"{path}: LoadGen could not read this config file (FromConfig -> {rc})")


def check_loadgen(lg) -> None:
    """Refuse a LoadGen whose ``TestSettings.FromConfig`` takes no ``conf_type`` (before 5.0.6:
    the calls here would fail or read the wrong file)."""
    doc = getattr(lg.TestSettings.FromConfig, "__doc__", None) or ""
    if "conf_type" in doc:
        return
    try:
        from importlib.metadata import version

        have = f"mlcommons-loadgen {version('mlcommons-loadgen')}"
    except Exception:  # noqa: BLE001 - only for the message
        have = "this MLPerf LoadGen"
    raise BackendError(
        f"{have} is too old: its TestSettings.FromConfig takes no conf_type "
        f"({' '.join(doc.split())[:160] or 'no signature'}); install {LOADGEN_REQUIREMENT}"
    )


# Run as ``python -c`` by conf_file_values: LoadGen reads one config file, as a user.conf, for the
# model keys in order and one scenario; the answer is one JSON line, the TestSettings attributes
# (bool, int, float) it then holds. (For bert-99 the file is read under both keys, as this backend
# always did; LoadGen's once-per-process check then fires here, in a process that runs no test
# and so writes no log.)
_CONF_READER = """
import json, sys
import mlperf_loadgen as lg
path, scenario, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
ts = lg.TestSettings()
for key in keys:
    rc = ts.FromConfig(path, key, scenario, 1)
    if rc != 0:
        print(json.dumps({"rc": rc}))
        sys.exit(0)
values = {}
for name, attr in vars(lg.TestSettings).items():
    if isinstance(attr, property) and attr.fset is not None:
        value = getattr(ts, name)
        if type(value) in (bool, int, float):
            values[name] = value
print(json.dumps({"rc": 0, "values": values}))
"""
_CONF_VALUES: dict[tuple, dict] = {}  # (file, its sha256, keys, scenario) -> values


def conf_file_values(path: str | Path, keys: list[str], scenario: str) -> dict:
    """The ``TestSettings`` attributes LoadGen's built-in mlperf.conf and the config file ``path``
    give the model ``keys`` (in order) in ``scenario``: ``{name: value}``.

    LoadGen allows one user.conf per process: every ``FromConfig(..., conf_type=1)`` after the
    first logs ``Multiple conf files are used. This is not valid for official submission.`` as an
    ERROR line into the next test's detail log (a function-static counter in
    ``TestSettings::FromConfig``, mlcommons/inference loadgen/test_settings_internal.cc, since
    PR #1882), and a ``TestSettings`` cannot be copied (it does not pickle). So LoadGen reads the
    file here in a process of its own, once per file content, keys and scenario in this process;
    every run's settings get the values through their attributes."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        why = exc.strerror or exc
        raise BackendError(f"{path}: cannot read this config file ({why})") from None
    key = (str(p.resolve()), hashlib.sha256(data).hexdigest(), tuple(keys), scenario)
    if key not in _CONF_VALUES:
        cmd = [sys.executable, "-c", _CONF_READER, str(p.resolve()), scenario, *keys]
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=CONF_READ_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(f"{path}: LoadGen could not read this config file ({exc})") from None
        lines = proc.stdout.strip().splitlines()
        try:
            answer = json.loads(lines[-1]) if proc.returncode == 0 and lines else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or not isinstance(answer.get("values", {}), dict):
            why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            raise BackendError(f"{path}: LoadGen could not read this config file ({why})")
        if answer.get("rc"):
            raise _conf_error(path, answer["rc"])
        _CONF_VALUES[key] = answer["values"]
    return dict(_CONF_VALUES[key])


def load_test_settings(s: ReferenceSettings, scenario: str, mode: str):
    """A LoadGen ``TestSettings`` from LoadGen's mlperf.conf, the user's config file and the
    overrides; and a dict of what it holds (for the metadata)."""
    import mlperf_loadgen as lg

    check_loadgen(lg)
    info = benchmark_info(s.benchmark)
    files = [str(path) for path in (s.mlperf_conf, s.user_conf) if path]
    if len(files) > 1:
        raise BackendError(
            f"two config files ({' and '.join(files)}): LoadGen takes one on top of its built-in "
            "mlperf.conf and logs 'Multiple conf files are used. This is not valid for official "
            "submission.' for a second, which makes the run INVALID: put the settings in one "
            "user.conf"
        )
    ts = lg.TestSettings()
    if files:
        if not Path(files[0]).is_file():
            raise BackendError(f"{files[0]}: no such config file")
        keys = [info.loadgen_model] + ([info.name] if info.name != info.loadgen_model else [])
        for name, value in conf_file_values(files[0], keys, scenario).items():
            setattr(ts, name, value)
    else:
        rc = ts.FromConfig("", info.loadgen_model, scenario, 0)  # LoadGen's built-in mlperf.conf
        if rc != 0:
            raise _conf_error("mlperf.conf (LoadGen's own)", rc)
    ts.scenario = getattr(lg.TestScenario, scenario)
    ts.mode = getattr(lg.TestMode, mode)
    if s.min_duration_ms is not None:
        ts.min_duration_ms = int(s.min_duration_ms)
    if s.max_duration_ms is not None:
        ts.max_duration_ms = int(s.max_duration_ms)
    if s.min_query_count is not None:
        ts.min_query_count = int(s.min_query_count)
    if s.max_query_count is not None:
        ts.max_query_count = int(s.max_query_count)
    if s.performance_sample_count is not None:
        ts.performance_sample_count_override = int(s.performance_sample_count)
    if s.target_qps is not None:
        if scenario == "Offline":
            ts.offline_expected_qps = float(s.target_qps)
        else:
            ts.server_target_qps = float(s.target_qps)
    if s.target_latency_ms is not None:
        ts.server_target_latency_ns = int(s.target_latency_ms * 1e6)
    return ts, _effective(ts, scenario, info)


def _effective(ts, scenario, info) -> dict:
    d = {
        "min_duration_ms": int(ts.min_duration_ms),
        "max_duration_ms": int(ts.max_duration_ms),
        "min_query_count": int(ts.min_query_count),
        "performance_sample_count": int(ts.performance_sample_count_override)
        or info.performance_sample_count,
    }
    if scenario == "Offline":
        d["target_qps"] = float(ts.offline_expected_qps)
    else:
        d["target_qps"] = float(ts.server_target_qps)
        d["target_latency_ms"] = ts.server_target_latency_ns / 1e6
    return d


class ReferenceBackend(Backend):
    """LoadGen + the torch or onnxruntime SUT (see the module docstring)."""

    name = "reference"

    def __init__(self):
        self.settings: ReferenceSettings | None = None
        self.engine = None
        self.runner = None
        self.raw: dict = {}
        self.setup_s: float | None = None
        self._tmp: str | None = None
        self.barrier: dict | None = None
        self.device: dict | None = None  # what the SUT runs on (miglab_run.json's device)
        # a compliance test (TEST01, TEST04; miglab.core.compliance) for the next run, or None
        self.compliance: str | None = None
        self.source = None  # the dataset (miglab.mlperf.guest.datasets), None: synthetic

    def _close_source(self) -> None:
        if self.source is not None:
            self.source.close()
        self.source = None

    # --- prepare -------------------------------------------------------------------------------
    def prepare(self, settings: ReferenceSettings) -> None:
        from miglab.mlperf.guest.sut.runner import Runner

        s = settings
        info = benchmark_info(s.benchmark)
        if s.scenario not in SCENARIOS:
            raise BackendError(f"unsupported scenario {s.scenario!r} (use {', '.join(SCENARIOS)})")
        if s.mode not in MODES:
            raise BackendError(f"unsupported mode {s.mode!r} (use {', '.join(MODES)})")
        if s.sut not in SUTS:
            raise BackendError(f"unknown SUT {s.sut!r} (use {', '.join(SUTS)})")
        if s.precision not in (None, "fp16"):
            if s.sut != "torch":
                raise BackendError(f"--precision {s.precision} is for the torch SUT only")
            from miglab.mlperf.guest.sut.torch_sut import check_precision

            try:
                check_precision(info.name, s.precision, s.fast_gelu)
            except ValueError as exc:
                raise BackendError(str(exc)) from None
        try:
            import mlperf_loadgen  # noqa: F401
        except ImportError:
            raise BackendError(
                "MLPerf LoadGen is not installed (pip install mlcommons-loadgen)"
            ) from None
        self._check_accuracy_inputs(s)
        device = s.device or DEFAULT_DEVICE[s.sut]
        device_lib.require_cuda(s.sut, device)  # before anything slow: never the CPU instead
        self.settings = s
        _, eff = load_test_settings(s, s.scenario, s.mode)
        family = "bert" if info.loadgen_model == "bert" else info.name
        batch, server_batch, timeout_ms = DEFAULTS.get(
            (s.sut, family), DEFAULTS[("onnxruntime", "*")]
        )
        batch = s.batch_size or batch
        server_batch = s.server_batch_size or min(server_batch, batch)
        timeout_ms = s.server_timeout_ms if s.server_timeout_ms is not None else timeout_ms
        t0 = time.perf_counter()
        progress(
            f"preparing {s.sut} SUT for {info.name} {s.scenario} {s.mode} "
            f"({eff['performance_sample_count']} samples)"
        )
        if s.preprocessing is not None and s.preprocessing not in ("vgg", "pytorch"):
            raise BackendError(f"unknown preprocessing {s.preprocessing!r} (use vgg, pytorch)")
        if s.sut == "slice-model" and (s.dataset_path or s.squad_json):
            raise BackendError("the slice model runs no inference: it takes no dataset")
        self.source = None if s.sut == "slice-model" else self._open_source(s, info)
        try:
            if s.sut == "torch":
                self.engine = self._torch_engine(s, info, eff, batch, server_batch)
            elif s.sut == "slice-model":
                self.engine = self._slice_model_engine(s, info, eff, batch)
            else:
                self.engine = self._ort_engine(s, eff, batch)
        except BackendError:
            self._close_source()
            raise
        except (ImportError, OSError, ValueError, RuntimeError) as exc:
            self._close_source()
            raise BackendError(f"cannot prepare the {s.sut} SUT: {exc}") from exc
        self.device = device_lib.describe(
            device,
            uuid=getattr(self.engine, "cuda_uuid", None),
            name=getattr(self.engine, "cuda_name", None),
        )
        self.runner = Runner(
            self.engine,
            batch_size=batch,
            server_batch_size=server_batch,
            server_timeout_s=timeout_ms / 1000.0,
            max_inflight=s.max_inflight,
        )
        nominal = getattr(self.engine, "nominal_samples_per_second", None)
        if nominal:  # a model's rate is what it serves: no measurement to make
            self.raw = {"samples_per_second": nominal, "model": True}
            self.device["name"] = f"{self.engine.device} on {self.device['name']}"
        elif s.raw_seconds > 0:
            progress(f"measuring the raw throughput ({s.raw_seconds:g} s, batch {batch})")
            try:
                self.raw = self.runner.measure_raw(s.raw_seconds, s.warmup_seconds)
            except RuntimeError as exc:
                raise BackendError(str(exc)) from exc
            progress(f"raw throughput {self.raw['samples_per_second']:.1f} samples/s")
        self.setup_s = time.perf_counter() - t0

    def _check_accuracy_inputs(self, s: ReferenceSettings) -> None:
        if s.mode != "AccuracyOnly":
            return
        random_weights = s.weights_kind == "random" or (
            s.sut == "torch" and not s.weights and s.weights_kind != "real"
        )
        tiny = s.sut == "onnxruntime" and (s.model or "").startswith("tiny-")
        has_data = bool(s.dataset or s.dataset_path or s.squad_json)
        if random_weights or tiny or not has_data:
            raise BackendError(
                "AccuracyOnly needs the real model weights (--weights for torch, a trained "
                "--model for onnxruntime) and the dataset (--dataset-path for ImageNet, "
                "--squad-json and --vocab for SQuAD, or --dataset FILE.npz); this run has "
                + ("random weights" if (random_weights or tiny) else "no dataset")
                + ": nothing to score"
            )
        for p in (s.weights, s.dataset, s.model):
            if p and not p.startswith("tiny-") and not Path(p).exists():
                raise BackendError(f"{p}: no such file or folder")

    def _open_source(self, s: ReferenceSettings, info):
        """The dataset the settings name, as a QSL (None: synthetic inputs); BackendError when
        it does not fit the benchmark or cannot be read."""
        from miglab.mlperf.guest.datasets.base import DatasetError

        given = [
            name
            for name, v in (
                ("--dataset", s.dataset),
                ("--dataset-path", s.dataset_path),
                ("--squad-json", s.squad_json),
            )
            if v
        ]
        if len(given) > 1:
            raise BackendError(f"{' and '.join(given)}: give one dataset")
        bert = info.loadgen_model == "bert"
        try:
            if s.dataset_path or s.val_map:
                if bert:
                    raise BackendError(f"{info.name} takes SQuAD (--squad-json), not ImageNet")
                if not s.dataset_path:
                    raise BackendError("--val-map needs --dataset-path (the image folder)")
                from miglab.mlperf.guest.datasets.imagenet import ImagenetSource

                return ImagenetSource(
                    s.dataset_path,
                    s.val_map,
                    preprocessing=s.preprocessing or ("pytorch" if s.sut == "torch" else "vgg"),
                    layout="NCHW",
                    cache_dir=s.cache_dir,
                    count=s.dataset_count,
                )
            if s.squad_json or s.vocab:
                if not bert:
                    raise BackendError(f"{info.name} takes ImageNet (--dataset-path), not SQuAD")
                if not (s.squad_json and s.vocab):
                    raise BackendError("SQuAD needs both --squad-json and --vocab")
                from miglab.mlperf.guest.datasets.squad import SquadSource

                return SquadSource(
                    s.squad_json, s.vocab, cache_dir=s.cache_dir, count=s.dataset_count
                )
            if s.dataset:
                from miglab.mlperf.guest.datasets.npz import NpzSource

                if s.dataset_count is not None:
                    raise BackendError("--dataset-count is for --dataset-path / --squad-json")
                return NpzSource(s.dataset)
        except DatasetError as exc:
            raise BackendError(str(exc)) from None
        return None

    def _torch_engine(self, s, info, eff, batch, server_batch):
        from miglab.mlperf.guest.sut.torch_sut import TorchEngine, default_buckets

        if s.batch_sizes:
            buckets = set(s.batch_sizes) | {batch}
        elif s.scenario == "Server":
            buckets = set(default_buckets(server_batch, dense=True)) | {batch}
        else:
            buckets = {batch}
        accuracy = s.mode == "AccuracyOnly"
        return TorchEngine(
            info.name,
            batch_sizes=sorted(buckets),
            sample_count=eff["performance_sample_count"],
            weights=s.weights,
            source=self.source,
            compile=s.compile,
            cuda_graphs=s.cuda_graphs and not accuracy,
            attention=s.attention,
            fast_gelu=s.fast_gelu,
            precision=s.precision,
            device=s.device or DEFAULT_DEVICE["torch"],
            seed=s.seed,
            progress=progress,
        )

    def _slice_model_engine(self, s, info, eff, batch):
        from miglab.mlperf.guest.sut.slice_model import engine_for

        # a MIG profile's compute slices, or a time-sliced vGPU's share of its board's GPU
        return engine_for(
            info.name,
            s.meta,
            sample_count=int(eff["performance_sample_count"]),
            max_batch=batch,
        )

    def _ort_engine(self, s, eff, batch):
        from miglab.mlperf.guest.sut.onnxrt import OnnxRuntimeEngine
        from miglab.mlperf.guest.sut.tiny import TINY_MODELS, make_tiny_model

        if not s.model:
            raise BackendError("the onnxruntime SUT needs --model FILE.onnx (or tiny-conv)")
        weights = s.weights_kind or "real"
        path = s.model
        if s.model in TINY_MODELS:
            self._tmp = tempfile.mkdtemp(prefix="miglab-tiny-")
            path = make_tiny_model(Path(self._tmp) / f"{s.model}.onnx", s.model, seed=s.seed)
            weights = "random"
        return OnnxRuntimeEngine(
            path,
            sample_count=eff["performance_sample_count"],
            max_batch=batch,
            source=self.source,
            threads=s.threads,
            weights=weights,
            seed=s.seed,
            device=s.device or DEFAULT_DEVICE["onnxruntime"],
            task=TASKS.get(benchmark_info(s.benchmark).loadgen_model),
            label_offset=s.label_offset,
        )

    # --- run -----------------------------------------------------------------------------------
    def run(
        self, benchmark: str, scenario: str, mode: str, out_dir: str | Path, run_index: int
    ) -> Path:
        import mlperf_loadgen as lg

        from miglab.formats.loadgen import DETAIL_LOG
        from miglab.formats.run_meta import RUN_META

        s = self.settings
        if s is None or self.engine is None:
            raise BackendError("prepare() was not called")
        info = benchmark_info(benchmark)
        if info.name != benchmark_info(s.benchmark).name:
            raise BackendError(f"prepared for {s.benchmark}, asked to run {benchmark}")
        if mode == "AccuracyOnly" and s.mode != "AccuracyOnly":
            self._check_accuracy_inputs(ReferenceSettings(**{**asdict(s), "mode": mode}))
        run_dir = run_dir_for(out_dir, info.name, scenario, mode, run_index)
        test = self.compliance
        audit = run_dir / "no-audit.config"
        if test:  # <benchmark>/<scenario>/TEST0x/performance/run_1 (the submission checker's)
            from miglab.core import compliance as compliance_lib

            if mode != "PerformanceOnly":
                raise BackendError(f"{test} is a PerformanceOnly run (audit.config sets mode 2)")
            try:
                audit_text = compliance_lib.audit_config(test, info.name)
            except ValueError as exc:
                raise BackendError(str(exc)) from None
            run_dir = compliance_lib.compliance_dir(run_dir.parent.parent, test) / "performance"
            run_dir = run_dir / "run_1"
            audit = run_dir / compliance_lib.AUDIT_CONFIG
        if (run_dir / DETAIL_LOG).exists() and not s.overwrite:
            raise BackendError(f"{run_dir} already holds a run (use --overwrite)")
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / MANIFEST).unlink(missing_ok=True)  # first: an unfinished run has none
        (run_dir / RUN_META).unlink(missing_ok=True)
        if test:  # LoadGen reads it at the start of the test (loadgen.cc: conf_type 2)
            atomic_write_text(audit, audit_text)
        ts, eff = load_test_settings(s, scenario, mode)
        auto = None
        raw = self.raw.get("samples_per_second")
        stored = None
        if s.target_qps is None and eff["target_qps"] <= DEFAULT_QPS:
            from miglab.mlperf.guest.qps_search import stored_target

            stored = stored_target(out_dir, info.name, scenario, (s.meta or {}).get("profile"))
        if stored is not None:  # this VM's searched / calibrated target (qps_search.json)
            auto = stored[0]
            field_name = "offline_expected_qps" if scenario == "Offline" else "server_target_qps"
            setattr(ts, field_name, auto)
            eff["target_qps"], eff["target_qps_from"] = auto, stored[1]
            progress(f"target QPS not set: using {auto:.1f}, searched ({stored[1]})")
        elif (
            s.target_qps is None
            and eff["target_qps"] <= DEFAULT_QPS
            and not (raw is None and mode == "AccuracyOnly" and scenario == "Offline")
        ):
            # (Offline AccuracyOnly: LoadGen issues every sample in one query whatever the
            # expected QPS, so an accuracy round need not measure the raw throughput first.)
            if not raw:
                raise BackendError(
                    "no target QPS: set it in user.conf or with --target-qps (or let the "
                    "raw throughput be measured)"
                )
            auto = raw * (s.auto_target_factor if scenario == "Offline" else SERVER_AUTO_FRACTION)
            if scenario == "Offline":
                ts.offline_expected_qps = auto
            else:
                ts.server_target_qps = auto
            eff["target_qps"] = auto
            progress(
                f"target QPS not set: using {auto:.1f} "
                + (
                    f"({s.auto_target_factor:g}x the raw throughput)"
                    if scenario == "Offline"
                    else "(half the raw throughput)"
                )
            )
        engine, runner = self.engine, self.runner
        total = engine.sample_count
        perf = min(eff["performance_sample_count"], total)
        if eff["performance_sample_count"] > total:
            if self.source is None:
                raise BackendError(
                    f"performance_sample_count {eff['performance_sample_count']} > the "
                    f"{total} samples the SUT holds"
                )
            # A dataset smaller than the benchmark's performance sample count (a subset, a test
            # set): LoadGen's QSL takes min(count, performance count), as the MLCommons
            # reference's does; the detail log's effective count then shows it, and the rules
            # check calls the run below the required count.
            progress(
                f"performance_sample_count {eff['performance_sample_count']} > the {total} "
                f"samples of the dataset: {total}"
            )
            ts.performance_sample_count_override = total
            eff["performance_sample_count"] = total
        if self.source is not None:  # LoadGen's load/unload: host memory, never the device
            qsl = lg.ConstructQSL(total, perf, self.source.load, self.source.unload)
        else:
            qsl = lg.ConstructQSL(total, perf, lambda _s: None, lambda _s: None)
        sut = lg.ConstructFastSUT(runner.issue, runner.flush)
        response = lg.QuerySampleResponse
        complete_fn = lg.QuerySamplesComplete

        if mode == "AccuracyOnly" or test == "TEST01":  # TEST01 logs sampled results

            def complete(ids, out):
                out = np.ascontiguousarray(out)
                row = out.nbytes // len(ids)
                base = out.ctypes.data
                complete_fn([response(i, base + k * row, row) for k, i in enumerate(ids.tolist())])
        else:

            def complete(ids, out):
                complete_fn([response(i, 0, 0) for i in ids.tolist()])

        log = lg.LogSettings()
        log.log_output.outdir = str(run_dir)
        log.log_output.copy_summary_to_stdout = False
        log.enable_trace = False
        progress(
            f"LoadGen {info.name} {scenario} {mode}: target {eff['target_qps']:.1f} QPS, "
            f"min duration {eff['min_duration_ms'] / 1000:g} s -> {run_dir}"
        )
        runner.start(scenario, complete)
        started = now_iso()
        t0 = time.perf_counter()
        lg.StartTestWithLogSettings(sut, qsl, ts, log, audit_config_filename=str(audit))
        wall = time.perf_counter() - t0
        finished = now_iso()
        runner.stop()
        lg.DestroySUT(sut)
        lg.DestroyQSL(qsl)
        progress(f"LoadGen done in {wall:.1f} s")
        for junk in ("mlperf_log_trace.json",):
            p = run_dir / junk
            if p.exists() and p.stat().st_size == 0:
                p.unlink()
        accuracy = self._score_accuracy(run_dir) if mode == "AccuracyOnly" else None
        if test == "TEST01":  # TEST01/accuracy/mlperf_log_accuracy.json
            (run_dir.parent.parent / "accuracy").mkdir(exist_ok=True)
            (run_dir / "mlperf_log_accuracy.json").replace(
                run_dir.parent.parent / "accuracy" / "mlperf_log_accuracy.json"
            )
        if mode == "PerformanceOnly":
            acc = run_dir / "mlperf_log_accuracy.json"
            if acc.exists() and acc.stat().st_size <= 4:
                acc.unlink()
        meta = self._metadata(info, scenario, mode, run_index, eff, auto, started, finished)
        meta["batching"] = runner.stats()
        if test:
            meta["compliance"] = test
        if accuracy is not None:
            meta["accuracy"] = accuracy
        result = loadgen_result(run_dir, info.name, meta)
        if mode == "AccuracyOnly":  # LoadGen gives no verdict: every sample must be logged
            got = (accuracy or {}).get("samples", 0)
            errors = [r for r in result.get("reasons", []) if "result_validity" not in r]
            if got != total:
                errors.append(f"accuracy log holds {got} of {total} samples")
            passed = (accuracy or {}).get("passed")
            if passed is False:
                errors.append(
                    f"accuracy {accuracy['value']:.3f} % is below the target "
                    f"{accuracy['target']:.3f} % ({accuracy['metric']}, "
                    f"{accuracy['reference']} x {accuracy['fraction']})"
                )
            result["valid"] = not errors
            if errors:
                result["validity"] = "INCOMPLETE" if got != total else "FAIL"
            else:
                result["validity"] = "PASS" if passed else "COMPLETE"
            result["reasons"] = errors
            result["value"] = None
        meta["loadgen"] = result
        if scenario == "Offline" and raw and result.get("value"):
            meta["fidelity"] = result["value"] / raw
        atomic_write_text(run_dir / RUN_META, json.dumps(meta, indent=2) + "\n")
        write_manifest(run_dir)
        return run_dir

    def _metadata(self, info, scenario, mode, run_index, eff, auto, started, finished) -> dict:
        s, engine = self.settings, self.engine
        d = engine.describe()
        meta = {
            "schema": "miglab-run/1",
            "simulated": False,
            "backend": "reference",
            "sut": engine.sut,
            "weights": s.weights_kind or engine.weights,
            "inputs": engine.inputs,
            "dataset": self.source.describe() if self.source is not None else None,
            "benchmark": info.name,
            "mlperf_scenario": scenario,
            "mode": mode,
            "run": run_index,
            "started_at": started,
            "finished_at": finished,
            "device": self.device,
            "precision": engine.precision,
            "model": engine.model,
            "raw_throughput": self.raw.get("samples_per_second"),
            "raw": self.raw or None,
            "settings": {
                **eff,
                "target_qps_auto": auto is not None,
                "mlperf_conf": s.mlperf_conf,
                "user_conf": s.user_conf,
                "batch_size": self.runner.batch_size,
                "server_batch_size": self.runner.server_batch_size,
                "server_timeout_ms": self.runner.server_timeout_s * 1000.0,
                "max_inflight": self.runner.max_inflight,
            },
            "sut_details": d,
            "setup_s": self.setup_s,
            "host": platform.node(),
            "pid": os.getpid(),
        }
        try:
            from importlib.metadata import version

            meta["loadgen_package"] = version("mlcommons-loadgen")
        except Exception:  # noqa: BLE001 - informative only
            pass
        if self.barrier:
            meta["barrier"] = self.barrier
        if self.clock:
            meta["clock"] = self.clock
        for k, v in (s.meta or {}).items():
            if v is not None:
                meta[k] = v
        return meta

    def _score_accuracy(self, run_dir: Path) -> dict | None:
        """Score the run's accuracy log with its dataset, write ``accuracy.txt`` (the reference
        accuracy script's line, :func:`miglab.core.accuracy.accuracy_text`) and judge it
        against the benchmark's target: the dict for ``miglab_run.json``'s ``accuracy``."""
        from miglab.core import accuracy as accuracy_lib
        from miglab.mlperf.guest.datasets.base import DatasetError

        path = run_dir / "mlperf_log_accuracy.json"
        if not path.is_file() or self.source is None:
            return None
        benchmark = benchmark_info(self.settings.benchmark).name
        dtype = self.engine.log_dtype
        if dtype == "raw":
            return {"samples": None, "note": f"the {self.engine.sut} SUT's outputs are not scored"}
        try:
            out = self.source.score(path, dtype, benchmark)
        except DatasetError as exc:
            raise BackendError(f"cannot score the accuracy log: {exc}") from None
        out["log_dtype"] = dtype
        out["log_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        out["dataset"] = self.source.describe()
        if self.source.count < getattr(self.source, "total_listed", self.source.count) or (
            self.source.count < getattr(self.source, "total_features", self.source.count)
        ):
            out["subset"] = True  # --dataset-count: not the full validation set
        if "top1" in out and out["top1"] is not None:
            value = 100.0 * out["top1"]
            scores = {"good": out["good"], "total": out["total"]}
        elif "f1" in out:
            value = out["f1"]
            scores = {"exact_match": out["exact_match"], "f1": out["f1"]}
        else:
            return out
        target = accuracy_lib.accuracy_target(benchmark)
        if target is None or (target.metric == "acc") != ("top1" in out):
            return out
        atomic_write_text(run_dir / "accuracy.txt", accuracy_lib.accuracy_text(benchmark, scores))
        out.update(accuracy_lib.judge(benchmark, value))
        return out

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        self.engine = None
        self._close_source()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
