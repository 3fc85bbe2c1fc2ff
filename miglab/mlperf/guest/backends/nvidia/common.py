"""What every round of NVIDIA's MLPerf Inference harness shares, as miglab drives it.

A *round* (:class:`HarnessRound`) is one published version of NVIDIA's closed-division harness
(``closed/NVIDIA`` of github.com/mlcommons/inference_results_v<round>): its way of naming and
detecting systems, its config files, its make targets and where its logs land. miglab generates,
for the VM's vGPU, the system entry the harness's detection must pick and the config classes
for that system, then drives the harness's own steps and copies its LoadGen logs into the results
tree exactly as the reference backend lays them out.
"""

from __future__ import annotations

import json
import math
import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from miglab.mlperf.guest.backends.base import (
    SCENARIOS,
    BackendError,
    benchmark_info,
    loadgen_result,
    run_dir_for,
)

__all__ = [
    "GIB",
    "LOG_FILES",
    "HarnessBenchmark",
    "HarnessConfig",
    "HarnessRound",
    "VmSystem",
    "collect_logs",
    "find_log_dirs",
    "ident",
    "pow2_floor",
    "replace_block",
]

GIB = 1024**3
LOG_FILES = (
    "mlperf_log_detail.txt",
    "mlperf_log_summary.txt",
    "mlperf_log_accuracy.json",
    "accuracy.txt",
)


@dataclass(frozen=True)
class HarnessBenchmark:
    """How one round's harness names a miglab benchmark."""

    run_name: str  # --benchmarks=<run_name>
    config_dir: str  # configs/<config_dir>/<Scenario>/
    enum: str  # Benchmark.<enum>
    harness_type: str  # HarnessType.<harness_type> of its default harness
    accuracy: str  # AccuracyTarget.<accuracy>
    log_dirs: tuple[str, ...]  # folder names its logs may use under <system id>/


@dataclass(frozen=True)
class HarnessConfig:
    """One full-GPU config class of a round, the base the VM's config is scaled from."""

    source: str  # path::class in inference_results_<round>
    parent: str  # BenchmarkConfiguration, or a base class defined in the same file
    batch: int
    qps: float
    fields: tuple[tuple[str, object], ...]  # every other field, in NVIDIA's order
    workspace_size: int | None = None


@dataclass(frozen=True)
class VmSystem:
    """The harness's view of one VM: what nvidia-smi shows in it and the ids miglab gives it."""

    gpu_model: str  # catalog name (A100-PCIE-80GB)
    profile: str  # MIG profile (2g.20gb)
    slices: int  # compute slices of the profile
    compute_slices: int  # compute slices of the whole GPU
    memory_gb: int  # the profile's memory in GB, as its name says (20 for 2g.20gb)
    vgpu_type: str  # vSphere type (grid_a100d-2-20c)
    type_name: str  # NVIDIA type name (A100D-2-20C)
    aliases: tuple[str, ...]  # nvidia-smi names the entry matches
    gpu_id: str  # the harness's GPU / system name
    arch: str  # the round's Architecture member
    count: int
    pci_device_id: str = ""  # the physical board's, as nvidia-smi prints it (0x20B510DE)
    framebuffer_mib: int = 0  # the vGPU's memory as nvidia-smi shows it
    prefix: str = ""

    @property
    def system_id(self) -> str:
        """``<gpu id>x<count>``: the id of a system without MIG devices in both rounds."""
        return f"{self.gpu_id}x{self.count}"

    @property
    def mig_system_id(self) -> str:
        """v1.1's ``System.get_id()`` when nvidia-smi lists the vGPU's MIG device in the VM."""
        return f"{self.gpu_id}-MIG_{self.count}x{self.profile}"

    @property
    def class_name(self) -> str:
        """Config class name (``R750xa_vA100_PCIe_80GB_2g20gbx1``)."""
        return ident(self.system_id)

    @property
    def fraction(self) -> float:
        return self.slices / self.compute_slices


def ident(s: str) -> str:
    """``s`` as a Python identifier (dots dropped, other separators as ``_``)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", s.replace(".", "")).strip("_")


def pow2_floor(x: float) -> int:
    return 1 if x < 1 else 2 ** int(math.floor(math.log2(x)))


class Code(str):
    """A value written as code (``Scenario.Offline``), not as a string literal."""


def py_literal(value) -> str:
    """``value`` as NVIDIA's config files write it."""
    if isinstance(value, Code):
        return str(value)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # double quotes, as NVIDIA writes them
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def template_env(round_dir: str):
    """Jinja2 for ``templates/<round_dir>`` beside this module (StrictUndefined, filter ``py``)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader(__package__, f"templates/{round_dir}"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["py"] = py_literal
    return env


def replace_block(text: str, begin: str, end: str, block: str) -> str | None:
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


def write_if_changed(path: Path, text: str, changed: list[Path]) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        new = not path.exists()
        path.write_text(text, encoding="utf-8")
        if new and hasattr(os, "geteuid") and os.geteuid() == 0:
            # the harness folder belongs to the user its container runs as (the mlperf role's
            # mlperf_harness_user): a file miglab adds as root goes to that owner too
            owner = path.parent.stat()
            os.chown(path, owner.st_uid, owner.st_gid)
        changed.append(path)


def append_block(path: Path, begin: str, end: str, block: str, changed: list[Path]) -> None:
    """Put ``block`` (marked ``begin``..``end``) into ``path``: in place of an earlier one, else
    at the end (idempotent)."""
    if not path.is_file():
        raise BackendError(f"{path}: no such file")
    text = path.read_text(encoding="utf-8")
    new = replace_block(text, begin, end, block)
    if new is None:
        new = text.rstrip("\n") + "\n\n\n" + block
    write_if_changed(path, new, changed)


class HarnessRound(ABC):
    """One round of NVIDIA's harness: what miglab writes into it and how it runs it."""

    name: str = "?"
    source_repo: str = ""
    source_commit: str = ""
    architectures: dict[str, str] = {}  # catalog architecture (lower) -> Architecture member
    gpu_ids: dict[str, str] = {}  # catalog GPU -> the round's id of the bare-metal board
    benchmarks: dict[str, HarnessBenchmark] = {}
    base_configs: dict[tuple[str, str, str], HarnessConfig] = {}
    # make targets on the guest that build the harness's container image (launch "docker")
    docker_steps: tuple[tuple[str, ...], ...] = ()
    # the harness's own detection, run in its container: prints the system id last
    detect_command: tuple[str, ...] = ("python3", "scripts/get_system_id.py")

    @property
    def source(self) -> str:
        return f"{self.source_repo} @ {self.source_commit}"

    def harness_benchmark(self, benchmark: str) -> HarnessBenchmark:
        name = benchmark_info(benchmark).name
        hb = self.benchmarks.get(name)
        if hb is None:
            raise BackendError(
                f"{benchmark}: the nvidia backend ({self.name}) supports "
                f"{', '.join(self.benchmarks)}"
            )
        return hb

    def vm_system(
        self,
        gpu: str,
        profile: str,
        count: int = 1,
        prefix: str = "",
        nvidia_smi_name: str | None = None,
    ) -> VmSystem:
        """The system a VM with ``count`` vGPUs of ``profile`` (MIG name or vGPU type) on ``gpu``
        is: gpu id ``[<prefix>_]v<harness GPU id>_<profile>``, like Dell's
        ``R7525_vA100-PCIE-40GB``; the system id adds ``x<count>``."""
        from miglab.core.catalog import MigProfile, UnknownName, load_catalog

        try:
            model = load_catalog().get(gpu)
            prof = model.find_vgpu(profile)
        except UnknownName as exc:
            raise BackendError(str(exc).strip("'\"")) from None
        if not isinstance(prof, MigProfile):
            raise BackendError(
                f"{profile}: not a MIG-backed vGPU type (the nvidia backend needs MIG)"
            )
        if count < 1:
            raise BackendError(f"vGPU count must be >= 1, got {count}")
        arch = self.architectures.get(model.architecture.lower())
        if arch is None:
            raise BackendError(
                f"{model.name}: architecture {model.architecture!r} is unknown to the {self.name} "
                f"harness (it knows {', '.join(sorted(set(self.architectures.values())))})"
            )
        vgpu = model.vgpu_type(prof)
        if not vgpu:
            raise BackendError(f"{model.name} {prof.name}: the catalog names no vGPU type")
        type_name = re.sub(r"^(grid_|nvidia_)", "", vgpu, flags=re.I).upper()
        aliases = (
            (nvidia_smi_name,) if nvidia_smi_name else (f"GRID {type_name}", f"NVIDIA {type_name}")
        )
        gpu_id = f"v{self.gpu_ids.get(model.name, model.name)}_{prof.name}"
        if prefix:
            gpu_id = f"{prefix}_{gpu_id}"
        ids = list(getattr(model, "pci_device_ids", ()) or ())
        pci = f"0x{ids[0][2:].upper()}10DE" if ids else ""
        mem = re.search(r"\.(\d+)gb", prof.name)
        return VmSystem(
            gpu_model=model.name,
            profile=prof.name,
            slices=prof.slices,
            compute_slices=model.compute_slices,
            memory_gb=int(mem.group(1)) if mem else 0,
            vgpu_type=vgpu,
            type_name=type_name,
            aliases=aliases,
            gpu_id=gpu_id,
            arch=arch,
            count=count,
            pci_device_id=pci,
            framebuffer_mib=int(round(prof.memory_gib * 1024)),
            prefix=prefix,
        )

    def scale_config(self, system: VmSystem, benchmark: str, scenario: str) -> dict:
        """The VM's config values: the base config scaled by compute slices (the package's
        docstring gives the rule)."""
        hb = self.harness_benchmark(benchmark)
        bench = benchmark_info(benchmark).name
        if scenario not in SCENARIOS:
            raise BackendError(
                f"unsupported MLPerf scenario {scenario!r} (use {', '.join(SCENARIOS)})"
            )
        base = self.base_configs.get((system.gpu_model, bench, scenario))
        if base is None:
            raise BackendError(
                f"no {self.name} base config for {system.gpu_model} {bench} {scenario} "
                f"(known: {', '.join(sorted({k[0] for k in self.base_configs}))})"
            )
        f = system.fraction
        batch = pow2_floor(base.batch * f)
        qps = round(base.qps * f * system.count)
        qps_field = "offline_expected_qps" if scenario == "Offline" else "server_target_qps"
        fields = list(base.fields)
        fields.append(("gpu_batch_size", batch))
        if base.workspace_size:
            ws = max(2 * GIB, math.ceil(base.workspace_size * f / GIB) * GIB)
            fields.append(("workspace_size", ws))
        fields.append((qps_field, qps))
        if base.parent == "BenchmarkConfiguration":
            fields.append(("scenario", Code(f"Scenario.{scenario}")))
            fields.append(("benchmark", Code(f"Benchmark.{hb.enum}")))
        return {
            "benchmark": bench,
            "scenario": scenario,
            "base": base,
            "batch": batch,
            "qps": qps,
            "qps_field": qps_field,
            "fields": fields,
        }

    @abstractmethod
    def install_system(self, harness_dir: str | Path, system: VmSystem) -> list[Path]:
        """Write the VM's system entry into the harness tree (idempotent); the files changed."""

    @abstractmethod
    def install_configs(
        self,
        harness_dir: str | Path,
        system: VmSystem,
        benchmarks,
        scenarios,
        system_id: str | None = None,
    ) -> list[Path]:
        """Write the VM's config classes for the system id the harness detected (``None``:
        the one miglab expects); the files changed."""

    def install(self, harness_dir, system: VmSystem, benchmarks, scenarios) -> list[Path]:
        """System entry and configs for the expected id (tests; the backend detects between)."""
        return self.install_system(harness_dir, system) + self.install_configs(
            harness_dir, system, benchmarks, scenarios
        )

    def expected_ids(self, system: VmSystem) -> tuple[str, ...]:
        """The ids the harness's detection may give this VM when miglab's entry wins."""
        return (system.system_id,)

    def make_vars(self) -> list[str]:
        """Variables every make call of this round gets (the settings' own win)."""
        return []

    def target_qps_arg(self, scenario: str, qps: float) -> str:
        """RUN_ARGS' override of the config's target QPS."""
        key = "offline_expected_qps" if scenario == "Offline" else "server_target_qps"
        return f"--{key}={qps:g}"

    def run_args(self, benchmark: str, scenario: str, mode: str | None = None, extra="") -> str:
        parts = [
            f"--benchmarks={self.harness_benchmark(benchmark).run_name}",
            f"--scenarios={scenario}",
        ]
        if mode:
            parts.append(f"--test_mode={mode}")
        if extra:
            parts.append(extra)
        return " ".join(parts)

    def find_logs(self, harness_dir, system_id: str, benchmark: str, scenario: str) -> list[Path]:
        return find_log_dirs(
            harness_dir, system_id, self.harness_benchmark(benchmark).log_dirs, scenario
        )


def find_log_dirs(harness_dir: str | Path, system_id: str, bench_dirs, scenario: str) -> list[Path]:
    """Run folders ``build/logs/<timestamp>/<system id>[_...]/<benchmark>/<scenario>/`` holding
    ``mlperf_log_detail.txt``, newest timestamp first (the harness names them
    ``%Y.%m.%d-%H.%M.%S``, so name order is time order)."""
    from miglab.formats.loadgen import DETAIL_LOG

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
    and write ``miglab_run.json`` there (with LoadGen's verdict, ``loadgen``, read by the same
    collector as the reference backend's runs), each file atomically, then
    ``MANIFEST.sha256``. Returns the run folder."""
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
    for stale in set(LOG_FILES) - set(copied):  # an overwritten run keeps none of the old files
        (run_dir / stale).unlink(missing_ok=True)
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
    if data.get("simulated"):  # a stand-in harness (the simulated lab): no model, no data
        data.update(weights="none", inputs="synthetic")
    data["loadgen"] = loadgen_result(run_dir, name, data)
    atomic_write_text(run_dir / RUN_META, json.dumps(data, indent=2) + "\n")
    write_manifest(run_dir)
    return run_dir
