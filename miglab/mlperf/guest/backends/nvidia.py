"""The ``nvidia`` backend: NVIDIA's closed-division MLPerf Inference v1.1 harness in a vGPU VM.

The harness (``closed/NVIDIA/code`` of github.com/mlcommons/inference_results_v1.1, or Dell's copy
``closed/Dell/code``) is driven with its own make targets inside its container::

    make build
    make generate_engines RUN_ARGS="--benchmarks=resnet50 --scenarios=Offline"
    make run_harness RUN_ARGS="--benchmarks=resnet50 --scenarios=Offline \\
                               --test_mode=PerformanceOnly"

(``make prebuild`` starts that container from the guest; it is the caller's step, see
:attr:`NvidiaSettings.steps`). Inside a VM with a MIG-backed vGPU nvidia-smi names the GPU by its
vGPU type (``GRID A100D-2-20C``), which the harness does not know, so miglab generates, from the
catalog's description of the vGPU:

1. a ``SystemClass`` entry for ``code/common/system_list.py``'s ``KnownSystems`` matching that
   nvidia-smi name with no PCI ids, the way Dell added their VMware system
   (``R7525_vA100_PCIE_40GB = SystemClass("R7525_vA100-PCIE-40GB", ["GRID A100-40C"], [], ...)``);
2. ``@ConfigRegistry.register(...)`` config classes for
   ``configs/<benchmark>/<Scenario>/__init__.py`` in the v1.1 format
   (``class X(BenchmarkConfiguration): system = System(...); ...``);
3. after a run, the logs under ``build/logs/<timestamp>/<system id>/<benchmark>/<scenario>/``
   copied into miglab's results tree with ``miglab_run.json`` (backend ``nvidia``, real weights,
   the ``device`` as the guest's nvidia-smi shows it: :func:`miglab.mlperf.guest.device.describe`).

Scaling rule (documented, a starting point to tune, not a measured value): the full-GPU config of
the same board (NVIDIA's v1.1 ``A100_PCIe_80GBx1`` classes, table :data:`BASE_CONFIGS`) is scaled by
``f = profile compute slices / GPU compute slices`` (1/7 for 1g on an A100) times the number of
vGPUs in the VM: expected QPS (``offline_expected_qps`` / ``server_target_qps``) = round(base x f x
count); batch size = the largest power of two <= base batch x f (at least 1); BERT's TensorRT
``workspace_size`` = base x f rounded up to whole GiB, at least 2 GiB. For 1g.10gb this gives
ResNet50 Offline 256 / 5286 QPS, close to NVIDIA's own ``A100_SXM_80GB_MIG_1x1g10gb`` (256 / 5100).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from miglab.mlperf.guest.backends.base import (
    MODES,
    SCENARIOS,
    Backend,
    BackendError,
    benchmark_info,
    progress,
    run_dir_for,
)

__all__ = [
    "BASE_CONFIGS",
    "HarnessConfig",
    "NvidiaBackend",
    "NvidiaSettings",
    "VmSystem",
    "collect_logs",
    "find_harness_logs",
    "install",
    "render_config",
    "render_system_entry",
    "scale_config",
    "vm_system",
]

SOURCE_REPO = "github.com/mlcommons/inference_results_v1.1"
SOURCE_COMMIT = "912dcdb9163736beca40a1f86e25d1305deab549"
GIB = 1024**3

# miglab benchmark -> (harness --benchmarks name, configs/ folder, Benchmark enum, harness type,
# accuracy target, log folder names to look for)
HARNESS_BENCHMARKS = {
    "resnet50": ("resnet50", "resnet50", "ResNet50", "LWIS", "k_99", ("resnet50", "resnet")),
    "bert-99": ("bert", "bert", "BERT", "Custom", "k_99", ("bert-99", "bert")),
}

# The v1.1 harness's Architecture enum (code/common/system_list.py) knows these.
ARCHITECTURES = {"ampere": "Ampere", "turing": "Turing"}

# Catalog GPU -> the GPU id NVIDIA's v1.1 harness uses for the bare-metal board.
HARNESS_GPU_IDS = {
    "A100-PCIE-80GB": "A100-PCIe-80GB",
    "A100-PCIE-40GB": "A100-PCIe",
    "A100-SXM4-80GB": "A100-SXM-80GB",
    "A100-SXM4-40GB": "A100-SXM4-40GB",
    "A30": "A30",
}


@dataclass(frozen=True)
class HarnessConfig:
    """One full-GPU config class of the v1.1 harness, the base the VM's config is scaled from."""

    source: str  # path::class in inference_results_v1.1
    parent: str  # BenchmarkConfiguration, or a base class defined in the same file
    batch: int
    qps: float
    fields: tuple[tuple[str, object], ...]  # every other field, in NVIDIA's order
    workspace_size: int | None = None


_RN50_COMMON = (
    ("input_dtype", "int8"),
    ("input_format", "linear"),
    ("map_path", "data_maps/imagenet/val_map.txt"),
    ("precision", "int8"),
    ("tensor_path", "${PREPROCESSED_DATA_DIR}/imagenet/ResNet50/int8_linear"),
)
_BERT_TENSORS = (
    "${PREPROCESSED_DATA_DIR}/squad_tokenized/input_ids.npy,"
    "${PREPROCESSED_DATA_DIR}/squad_tokenized/segment_ids.npy,"
    "${PREPROCESSED_DATA_DIR}/squad_tokenized/input_mask.npy"
)

# (catalog GPU, benchmark, scenario) -> the v1.1 config of one bare-metal GPU (values copied).
BASE_CONFIGS: dict[tuple[str, str, str], HarnessConfig] = {
    ("A100-PCIE-80GB", "resnet50", "Offline"): HarnessConfig(
        "closed/NVIDIA/configs/resnet50/Offline/__init__.py::A100_PCIe_80GBx1",
        "BenchmarkConfiguration",
        2048,
        37000,
        (
            ("gpu_inference_streams", 1),
            *_RN50_COMMON,
            ("use_graphs", False),
            ("gpu_copy_streams", 2),
            ("run_infer_on_copy_streams", False),
        ),
    ),
    ("A100-PCIE-80GB", "resnet50", "Server"): HarnessConfig(
        "closed/NVIDIA/configs/resnet50/Server/__init__.py::A100_PCIe_80GBx1",
        "BenchmarkConfiguration",
        64,
        26000,
        (
            ("active_sms", 100),
            *_RN50_COMMON,
            ("use_deque_limit", True),
            ("deque_timeout_usec", 2000),
            ("gpu_copy_streams", 4),
            ("gpu_inference_streams", 3),
            ("use_cuda_thread_per_device", True),
            ("use_graphs", True),
        ),
    ),
    ("A100-PCIE-80GB", "bert-99", "Offline"): HarnessConfig(
        "closed/NVIDIA/configs/bert/Offline/__init__.py::A100_PCIe_80GBx1",
        "OfflineGPUBaseConfig",  # defined in that file (scenario, streams, enable_interleaved)
        1024,
        3400,
        (("use_small_tile_gemm_plugin", True), ("gemm_plugin_fairshare_cache_size", 120)),
        workspace_size=7516192768,
    ),
    # v1.1 has no A100_PCIe_80GBx1 BERT Server class: A100_PCIe_80GBx8 (23000 QPS) per GPU.
    ("A100-PCIE-80GB", "bert-99", "Server"): HarnessConfig(
        "closed/NVIDIA/configs/bert/Server/__init__.py::A100_PCIe_80GBx8 (/8 GPUs)",
        "BenchmarkConfiguration",
        64,
        23000 / 8,
        (
            ("bert_opt_seqlen", 384),
            ("coalesced_tensor", True),
            ("enable_interleaved", False),
            ("gpu_copy_streams", 1),
            ("gpu_inference_streams", 2),
            ("input_dtype", "int32"),
            ("input_format", "linear"),
            ("precision", "int8"),
            ("tensor_path", _BERT_TENSORS),
            ("use_graphs", True),
            ("active_sms", 60),
            ("gemm_plugin_fairshare_cache_size", 120),
            ("graphs_max_seqlen", 200),
            ("server_num_issue_query_threads", 1),
            ("soft_drop", 1.0),
            ("use_small_tile_gemm_plugin", True),
        ),
    ),
}


@dataclass(frozen=True)
class VmSystem:
    """The harness's view of one VM: its system entry and ids."""

    gpu_model: str  # catalog name
    profile: str  # MIG profile
    slices: int
    compute_slices: int
    vgpu_type: str  # vSphere type (grid_a100d-2-20c)
    type_name: str  # NVIDIA type name (A100D-2-20C)
    aliases: tuple[str, ...]  # nvidia-smi names the entry matches
    gpu_id: str  # SystemClass/System gpu
    arch: str  # Architecture enum member
    count: int

    @property
    def system_id(self) -> str:
        """``System.get_id()`` of v1.1 for an x86 non-MIG system: ``<gpu>x<count>``."""
        return f"{self.gpu_id}x{self.count}"

    @property
    def attr(self) -> str:
        """The KnownSystems attribute name."""
        return _ident(self.gpu_id)

    @property
    def class_name(self) -> str:
        """Config class name, v1.1 style (``A100_PCIe_80GB_MIG_1x1g10gb``, ``..._80GBx1``)."""
        return _ident(self.system_id)

    @property
    def fraction(self) -> float:
        return self.slices / self.compute_slices


def _ident(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", s.replace(".", "")).strip("_")


def vm_system(
    gpu: str,
    profile: str,
    count: int = 1,
    prefix: str = "",
    nvidia_smi_name: str | None = None,
) -> VmSystem:
    """The system a VM with ``count`` vGPUs of ``profile`` (MIG name or vGPU type) on ``gpu`` is.

    gpu id: ``[<prefix>_]v<harness GPU id>_<profile>`` (``vA100-PCIe-80GB_2g.20gb``), like Dell's
    ``R7525_vA100-PCIE-40GB``; the system id adds ``x<count>``.
    """
    from miglab.core.catalog import MigProfile, UnknownName, load_catalog

    try:
        model = load_catalog().get(gpu)
        prof = model.find_vgpu(profile)
    except UnknownName as exc:
        raise BackendError(str(exc).strip("'\"")) from None
    if not isinstance(prof, MigProfile):
        raise BackendError(f"{profile}: not a MIG-backed vGPU type (the nvidia backend needs MIG)")
    if count < 1:
        raise BackendError(f"vGPU count must be >= 1, got {count}")
    arch = ARCHITECTURES.get(model.architecture.lower())
    if arch is None:
        raise BackendError(
            f"{model.name}: architecture {model.architecture!r} is unknown to the v1.1 harness "
            f"(it knows {', '.join(sorted(ARCHITECTURES.values()))})"
        )
    vgpu = model.vgpu_type(prof)
    if not vgpu:
        raise BackendError(f"{model.name} {prof.name}: the catalog names no vGPU type")
    type_name = re.sub(r"^(grid_|nvidia_)", "", vgpu, flags=re.I).upper()
    aliases = (
        (nvidia_smi_name,) if nvidia_smi_name else (f"GRID {type_name}", f"NVIDIA {type_name}")
    )
    gpu_id = f"v{HARNESS_GPU_IDS.get(model.name, model.name)}_{prof.name}"
    if prefix:
        gpu_id = f"{prefix}_{gpu_id}"
    return VmSystem(
        gpu_model=model.name,
        profile=prof.name,
        slices=prof.slices,
        compute_slices=model.compute_slices,
        vgpu_type=vgpu,
        type_name=type_name,
        aliases=aliases,
        gpu_id=gpu_id,
        arch=arch,
        count=count,
    )


def _pow2_floor(x: float) -> int:
    return 1 if x < 1 else 2 ** int(math.floor(math.log2(x)))


def scale_config(system: VmSystem, benchmark: str, scenario: str) -> dict:
    """The VM's config values: the base config scaled by compute slices (module docstring)."""
    bench = benchmark_info(benchmark).name
    if bench not in HARNESS_BENCHMARKS:
        raise BackendError(
            f"{benchmark}: the nvidia backend supports {', '.join(HARNESS_BENCHMARKS)}"
        )
    if scenario not in SCENARIOS:
        raise BackendError(f"unsupported MLPerf scenario {scenario!r} (use {', '.join(SCENARIOS)})")
    base = BASE_CONFIGS.get((system.gpu_model, bench, scenario))
    if base is None:
        raise BackendError(
            f"no v1.1 base config for {system.gpu_model} {bench} {scenario} "
            f"(known: {', '.join(sorted({k[0] for k in BASE_CONFIGS}))})"
        )
    f = system.fraction
    batch = _pow2_floor(base.batch * f)
    qps = round(base.qps * f * system.count)
    qps_field = "offline_expected_qps" if scenario == "Offline" else "server_target_qps"
    fields = list(base.fields)
    fields.append(("gpu_batch_size", batch))
    if base.workspace_size:
        ws = max(2 * GIB, math.ceil(base.workspace_size * f / GIB) * GIB)
        fields.append(("workspace_size", ws))
    fields.append((qps_field, qps))
    if base.parent == "BenchmarkConfiguration":
        fields.append(("scenario", _Code(f"Scenario.{scenario}")))
        fields.append(("benchmark", _Code(f"Benchmark.{HARNESS_BENCHMARKS[bench][2]}")))
    return {
        "benchmark": bench,
        "scenario": scenario,
        "base": base,
        "batch": batch,
        "qps": qps,
        "qps_field": qps_field,
        "fields": fields,
    }


class _Code(str):
    """A value written as code (``Scenario.Offline``), not as a string literal."""


def _py(value) -> str:
    if isinstance(value, _Code):
        return str(value)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # double quotes, as NVIDIA writes them
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return repr(value)


def _env():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("miglab.mlperf.guest.backends", "templates/nvidia"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["py"] = _py
    return env


def _context(system: VmSystem) -> dict:
    return {
        "system_id": system.system_id,
        "gpu_model": system.gpu_model,
        "profile": system.profile,
        "slices": system.slices,
        "compute_slices": system.compute_slices,
        "vgpu_type": system.vgpu_type,
        "count": system.count,
        "gpu_id": system.gpu_id,
        "aliases": list(system.aliases),
        "arch": system.arch,
        "attr": system.attr,
    }


def render_system_entry(system: VmSystem) -> str:
    """The ``KnownSystems`` class-body lines (indented 4) for this VM."""
    return _env().get_template("system_entry.py.j2").render(**_context(system))


def render_config(system: VmSystem, benchmark: str, scenario: str) -> str:
    """The config class for ``configs/<benchmark>/<scenario>/__init__.py`` (to append)."""
    s = scale_config(system, benchmark, scenario)
    _, config_dir, _, harness, accuracy, _ = HARNESS_BENCHMARKS[s["benchmark"]]
    base: HarnessConfig = s["base"]
    return (
        _env()
        .get_template("config.py.j2")
        .render(
            **_context(system),
            benchmark=s["benchmark"],
            scenario=scenario,
            config_dir=config_dir,
            harness=harness,
            accuracy=accuracy,
            class_name=system.class_name,
            parent=base.parent,
            base_source=base.source,
            batch_field="gpu_batch_size",
            base_batch=base.batch,
            batch=s["batch"],
            qps_field=s["qps_field"],
            base_qps=round(base.qps, 2),
            qps=s["qps"],
            fields=s["fields"],
        )
    )


# --- installing into a harness tree ------------------------------------------------------------
def _replace_block(text: str, begin: str, end: str, block: str) -> str | None:
    """``text`` with the lines from ``begin`` to ``end`` replaced by ``block``; None if absent."""
    i = text.find(begin)
    if i < 0:
        return None
    start = text.rfind("\n", 0, i) + 1
    j = text.find(end, i)
    if j < 0:
        raise BackendError(f"unterminated miglab block {begin.strip()!r}")
    stop = text.find("\n", j)
    stop = len(text) if stop < 0 else stop + 1
    return text[:start] + block + text[stop:]


def install(harness_dir: str | Path, system: VmSystem, benchmarks, scenarios) -> list[Path]:
    """Write the system entry and the config classes into the harness tree (idempotent: a
    second call replaces miglab's blocks). Returns the files changed."""
    root = Path(harness_dir)
    changed = []
    sl = root / "code" / "common" / "system_list.py"
    if not sl.is_file():
        raise BackendError(f"{sl}: no such file (is {root} the harness's code folder's parent?)")
    text = sl.read_text(encoding="utf-8")
    entry = render_system_entry(system)
    tag = f"# miglab:begin system {system.system_id}"
    new = _replace_block(text, tag, f"# miglab:end system {system.system_id}", entry)
    if new is None:
        m = re.search(r"^class KnownSystems\b.*?$", text, flags=re.M)
        if not m:
            raise BackendError(f"{sl}: no 'class KnownSystems' (not a v1.1 system_list.py?)")
        k = re.compile(r"^    @staticmethod\s*\n    def get_all_system_classes", re.M)
        m2 = k.search(text, m.end())
        if not m2:
            raise BackendError(f"{sl}: KnownSystems has no get_all_system_classes()")
        new = text[: m2.start()] + entry + "\n" + text[m2.start() :]
    if new != text:
        sl.write_text(new, encoding="utf-8")
        changed.append(sl)
    for bench in benchmarks:
        name = benchmark_info(bench).name
        for scenario in scenarios:
            block = render_config(system, name, scenario)
            path = root / "configs" / HARNESS_BENCHMARKS[name][1] / scenario / "__init__.py"
            if not path.is_file():
                raise BackendError(f"{path}: no such file")
            text = path.read_text(encoding="utf-8")
            tag = f"# miglab:begin config {system.system_id} {name} {scenario}"
            end = f"# miglab:end config {system.system_id} {name} {scenario}"
            new = _replace_block(text, tag, end, block)
            if new is None:
                new = text.rstrip("\n") + "\n\n\n" + block
            if new != text:
                path.write_text(new, encoding="utf-8")
                changed.append(path)
    return changed


# --- logs ----------------------------------------------------------------------------------------
def find_harness_logs(
    harness_dir: str | Path, system_id: str, benchmark: str, scenario: str
) -> list[Path]:
    """Run folders ``build/logs/<timestamp>/<system id>[_...]/<benchmark>/<scenario>/`` holding
    ``mlperf_log_detail.txt``, newest timestamp first (the harness names them
    ``%Y.%m.%d-%H.%M.%S``, so name order is time order)."""
    from miglab.formats.loadgen import DETAIL_LOG

    name = benchmark_info(benchmark).name
    bench_dirs = HARNESS_BENCHMARKS.get(name, ("", "", "", "", "", (name,)))[5]
    logs = Path(harness_dir) / "build" / "logs"
    if not logs.is_dir():
        return []
    found = []
    for stamp in sorted(
        (p for p in logs.iterdir() if p.is_dir()), key=lambda p: p.name, reverse=True
    ):
        systems = sorted(
            p
            for p in stamp.iterdir()
            if p.is_dir() and (p.name == system_id or p.name.startswith(system_id + "_"))
        )
        for sysdir in sorted(systems, key=lambda p: p.name != system_id):  # exact id first
            for b in bench_dirs:
                d = sysdir / b / scenario
                if (d / DETAIL_LOG).is_file():
                    found.append(d)
                    break
    return found


LOG_FILES = ("mlperf_log_detail.txt", "mlperf_log_summary.txt", "mlperf_log_accuracy.json")


def collect_logs(
    log_dir: str | Path,
    out_dir: str | Path,
    benchmark: str,
    scenario: str,
    run_index: int,
    mode: str = "PerformanceOnly",
    meta: dict | None = None,
    overwrite: bool = False,
) -> Path:
    """Copy one harness run's LoadGen logs into ``<out>/<benchmark>/<scenario>/<mode>/run_<n>/``
    and write ``miglab_run.json`` there, each file atomically, then ``MANIFEST.sha256``.
    Returns the run folder."""
    from miglab.formats.loadgen import DETAIL_LOG
    from miglab.formats.manifest import MANIFEST, atomic_copy, atomic_write_text, write_manifest
    from miglab.formats.run_meta import RUN_META

    src = Path(log_dir)
    if not (src / DETAIL_LOG).is_file():
        raise BackendError(f"{src}: no {DETAIL_LOG}")
    name = benchmark_info(benchmark).name
    run_dir = run_dir_for(out_dir, name, scenario, mode, run_index)
    if (run_dir / DETAIL_LOG).exists() and not overwrite:
        raise BackendError(f"{run_dir} already holds a run (use overwrite)")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / MANIFEST).unlink(missing_ok=True)  # first: an unfinished copy has none
    copied = []
    for f in LOG_FILES:
        if (src / f).is_file():
            atomic_copy(src / f, run_dir / f)
            copied.append(f)
    data = {
        "schema": "miglab-run/1",
        "simulated": False,
        "backend": "nvidia",
        "weights": "real",
        "inputs": "real",
        "benchmark": name,
        "mlperf_scenario": scenario,
        "mode": mode,
        "run": run_index,
        "harness_log_dir": str(src),
        "files": copied,
    }
    for k, v in (meta or {}).items():
        if v is not None:
            data[k] = v
    atomic_write_text(run_dir / RUN_META, json.dumps(data, indent=2) + "\n")
    write_manifest(run_dir)
    return run_dir


# --- the backend ---------------------------------------------------------------------------------
@dataclass
class NvidiaSettings:
    """What the nvidia backend needs; ``harness_dir`` is the folder holding ``Makefile``,
    ``code/`` and ``configs/`` (closed/NVIDIA or closed/Dell), as seen inside the container."""

    harness_dir: str = "."
    gpu: str = "A100-PCIE-80GB"
    profile: str = "7g.80gb"  # MIG profile or vGPU type of the VM's vGPU(s)
    count: int = 1  # vGPUs of that profile in the VM
    prefix: str = ""  # system name prefix (e.g. R750xa)
    nvidia_smi_name: str | None = None  # what nvidia-smi -L prints, when not GRID <type>
    benchmarks: tuple[str, ...] = ("resnet50",)
    scenarios: tuple[str, ...] = ("Offline",)
    steps: tuple[str, ...] = ("build", "generate_engines")  # prepare's make targets ("prebuild")
    make: str = "make"
    extra_run_args: str = ""  # appended to RUN_ARGS (e.g. --config_ver=...)
    timeout_s: float | None = None
    overwrite: bool = False
    meta: dict = field(default_factory=dict)


def run_args(benchmark: str, scenario: str, mode: str | None = None, extra: str = "") -> str:
    name = benchmark_info(benchmark).name
    parts = [f"--benchmarks={HARNESS_BENCHMARKS[name][0]}", f"--scenarios={scenario}"]
    if mode:
        parts.append(f"--test_mode={mode}")
    if extra:
        parts.append(extra)
    return " ".join(parts)


class NvidiaBackend(Backend):
    """NVIDIA's v1.1 harness driven by make (see the module docstring)."""

    name = "nvidia"

    def __init__(self, runner: Callable | None = None):
        self.settings: NvidiaSettings | None = None
        self.system: VmSystem | None = None
        self._run = runner or subprocess.run
        self.commands: list[list[str]] = []
        self.device: dict | None = None  # the GPU the harness runs on (miglab_run.json's device)

    def _make(self, target: str, args: str | None = None) -> None:
        s = self.settings
        cmd = [*shlex.split(s.make), target]
        if args is not None:
            cmd.append(f"RUN_ARGS={args}")
        self.commands.append(cmd)
        progress(" ".join(shlex.quote(c) for c in cmd))
        try:
            rc = self._run(cmd, cwd=s.harness_dir, check=False, timeout=s.timeout_s).returncode
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(f"{' '.join(cmd)}: {exc}") from exc
        if rc != 0:
            raise BackendError(f"{' '.join(cmd)} failed (exit {rc})")

    def prepare(self, settings: NvidiaSettings) -> None:
        s = settings
        if not Path(s.harness_dir).is_dir():
            raise BackendError(f"{s.harness_dir}: no such harness folder")
        for sc in s.scenarios:
            if sc not in SCENARIOS:
                raise BackendError(f"unsupported scenario {sc!r} (use {', '.join(SCENARIOS)})")
        self.settings = s
        self.system = vm_system(s.gpu, s.profile, s.count, s.prefix, s.nvidia_smi_name)
        from miglab.mlperf.guest.device import describe

        self.device = describe("cuda")
        changed = install(s.harness_dir, self.system, s.benchmarks, s.scenarios)
        progress(
            f"system {self.system.system_id} ({', '.join(self.system.aliases)}): "
            f"{len(changed)} harness file(s) written"
        )
        for step in s.steps:
            if step == "generate_engines":
                for b in s.benchmarks:
                    for sc in s.scenarios:
                        self._make("generate_engines", run_args(b, sc, extra=s.extra_run_args))
            elif step in ("prebuild", "build"):
                self._make(step)
            else:
                raise BackendError(f"unknown prepare step {step!r}")

    def run(
        self, benchmark: str, scenario: str, mode: str, out_dir: str | Path, run_index: int
    ) -> Path:
        from miglab.mlperf.guest.backends.reference import now_iso

        s, system = self.settings, self.system
        if s is None or system is None:
            raise BackendError("prepare() was not called")
        if mode not in MODES:
            raise BackendError(f"unsupported mode {mode!r} (use {', '.join(MODES)})")
        before = set(find_harness_logs(s.harness_dir, system.system_id, benchmark, scenario))
        started = now_iso()
        t0 = time.time()
        self._make("run_harness", run_args(benchmark, scenario, mode, s.extra_run_args))
        finished = now_iso()
        new = [
            d
            for d in find_harness_logs(s.harness_dir, system.system_id, benchmark, scenario)
            if d not in before
        ]
        if not new:
            raise BackendError(
                f"make run_harness wrote no logs under {Path(s.harness_dir) / 'build' / 'logs'}"
                f"/<timestamp>/{system.system_id}/ for {benchmark} {scenario}"
            )
        meta = {
            "profile": system.profile,
            "vgpu_type": system.vgpu_type,
            "started_at": started,
            "finished_at": finished,
            "wall_s": round(time.time() - t0, 3),
            "device": self.device,
            "harness": {
                "dir": os.path.abspath(s.harness_dir),
                "system_id": system.system_id,
                "command": self.commands[-1],
                "source": f"{SOURCE_REPO} @ {SOURCE_COMMIT}",
            },
            **(s.meta or {}),
        }
        if self.clock:
            meta["clock"] = self.clock
        return collect_logs(
            new[0], out_dir, benchmark, scenario, run_index, mode, meta, overwrite=s.overwrite
        )
