"""Round v4.1 of NVIDIA's harness: the round with Hopper (H100, H200) and still the A100 80GB PCIe.

Source: ``closed/NVIDIA`` of github.com/mlcommons/inference_results_v4.1
@ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183.

Systems (``code/common/systems/``): ``system_list.py`` builds ``KnownSystem =
MatchableEnum("KnownSystem", ...)`` from NVIDIA's entries first, then ``custom_systems`` of
``code/common/systems/custom_list.py`` (the file ``scripts/custom_systems/add_custom_system.py``
creates from ``scripts/custom_systems/stubs/custom_system.py.stub``); ``get_first_match`` tries
them in that order. ``DETECTED_SYSTEM`` comes from ``nvidia-smi --query-gpu=gpu_name,
pci.device_id,uuid,memory.total,power.limit,power.max_limit,mig.mode.current
--format=csv,noheader`` and ``nvidia-smi -L``, cuda-python's compute capability, ``lscpu`` and
``/proc/meminfo``. A GPU matches on (type, memory, max power limit, PCI id, SM) -- the name only
when a side has no PCI id -- so NVIDIA's bare-metal entries (a max power limit of 300-700 W, the
whole board's memory) never match a vGPU, whose guest shows ``[N/A]`` power (read as ``None``)
and its own framebuffer. A GPU whose ``mig.mode.current`` is ``Enabled`` is dropped from the GPU
list (``get_gpu_info``) and its MIG devices from ``nvidia-smi -L`` are detected instead
(``MIG(name="<GPU name> MIG-<g>g.<gb>gb", vram=<gb> GiB, <the GPU's PCI id, power and SM>,
num_gpcs=<g>)``): a MIG-backed vGPU's guest reports MIG mode ``Enabled`` and lists the one MIG
device it holds. miglab therefore writes two entries with ONE system id: ``<key>_MIG`` (the MIG
device: the case expected in a MIG-backed vGPU guest) and ``<key>`` (the vGPU as a GPU: a guest
that does not report MIG mode ``Enabled``); both have configs, so either may match.

The system id is v1.1's ``[<prefix>_]v<board>_<profile>x<count>`` (``R750xa_vA100-PCIe-80GB_
2g.20gbx1``, dots and dashes as in NVIDIA's own ``A100-PCIe-80GB-MIG_1x1g.10gb``); the
``custom_systems`` key is it as an identifier (``R750xa_vA100_PCIe_80GB_2g_20gbx1``: configs name
``KnownSystem.<key>``), and the config classes are the key upper-cased, as add_custom_system.py
names them. The harness logs to ``build/logs/<timestamp>/<system id>_TRT/<resnet50|bert-99>/
<scenario>/`` (``code/common/harness.py`` ``get_full_log_dir``, ``Makefile.const`` ``LOG_DIR``).

Configs: ``ConfigRegistry.load_configs`` (``configs/configuration.py``) imports
``configs/<benchmark>/<Scenario>/custom.py`` when it exists; that file starts with ``from . import
*`` (the scenario's ``__init__.py``: ``OfflineGPUBaseConfig`` / ``ServerGPUBaseConfig``,
``ConfigRegistry``, ``KnownSystem``...). A config may inherit only a config of the same accelerator
(``_check_inheritance_constraints``), so the vGPU's class cannot extend NVIDIA's
``H100_PCIe_80GBx1``: the values of that class are copied (``BASE_CONFIGS``) onto the scenario's
base config, as partners' custom.py files do, and scaled by the package's rule.
``start_from_device`` is dropped (v4.1 accepts it only for the systems
``SystemClassifications.start_from_device_enabled`` lists). The TensorRT workspace is also capped
at the vGPU's framebuffer (whole GiB): H200's BERT Offline class asks for 128 GB, which 1/7 still
leaves above a 1g.18gb vGPU's 16 GiB.

Detection is checked with the round's own code: ``python3 -c`` importing
``scripts/get_system_id.py`` (which prints ``MATCHED_SYSTEM``, ``KnownSystem.<key>``) and
printing ``MATCHED_SYSTEM`` and then ``DETECTED_SYSTEM.get_id()``, the matched entry's system id
(``None`` when nothing matched), whose last line the backend compares with miglab's id.

Hopper: ``code/common/harness.py`` runs ``sudo nvidia-smi boost-slider --vboost <n>`` before and
after every run on a Hopper system (``vboost_slider``, default 0); a failure fails the run.
"""

from __future__ import annotations

import dataclasses
import math
import platform
import re
from pathlib import Path

from miglab.mlperf.guest.backends.base import BackendError, benchmark_info
from miglab.mlperf.guest.backends.nvidia.common import (
    GIB,
    HarnessBenchmark,
    HarnessConfig,
    HarnessRound,
    VmSystem,
    append_block,
    replace_block,
    template_env,
    write_if_changed,
)

__all__ = ["BASE_CONFIGS", "V4_1", "V41Round"]

SOURCE_REPO = "github.com/mlcommons/inference_results_v4.1"
SOURCE_COMMIT = "198fc46799b3328b36ee4bcbdebfa2db5a8e6183"

_RN50 = "closed/NVIDIA/configs/resnet50/{}/__init__.py::{}"
_BERT = "closed/NVIDIA/configs/bert/{}/__init__.py::{}"
_WS = 7516192768  # NVIDIA's BERT workspace_size (7 GiB)
# resnet50 Server: the fields of NVIDIA's H100_PCIe_80GBx1 (also H100 NVL's, which has no class)
_RN50_SERVER_H100_PCIE = (
    ("use_deque_limit", True),
    ("deque_timeout_usec", 2000),
    ("gpu_copy_streams", 4),
    ("gpu_inference_streams", 2),
    ("use_cuda_thread_per_device", True),
    ("use_batcher_thread_per_device", True),
    ("use_graphs", True),
)
_RN50_SERVER_SXM = (  # H100_SXM_80GBx1 and H200_SXM_141GBx1 (start_from_device dropped)
    ("use_deque_limit", True),
    ("deque_timeout_usec", 3000),
    ("gpu_copy_streams", 2),
    ("gpu_inference_streams", 1),
    ("use_cuda_thread_per_device", True),
    ("use_graphs", True),
)
_BERT_SERVER_H100_PCIE = (
    ("use_small_tile_gemm_plugin", False),
    ("use_graphs", False),
    ("graphs_max_seqlen", 200),
    ("server_num_issue_query_threads", 1),
    ("soft_drop", 0.99),
)


def _rn50_offline(cls: str, batch: int, qps: float) -> HarnessConfig:
    # OfflineGPUBaseConfig sets run_infer_on_copy_streams, use_graphs, the streams; the classes
    # add only batch, QPS (and start_from_device, dropped)
    return HarnessConfig(_RN50.format("Offline", cls), "OfflineGPUBaseConfig", batch, qps, ())


# (catalog GPU, benchmark, scenario) -> the v4.1 class of one bare-metal GPU (values copied; the
# parent is the scenario's base class of the same file, which custom.py imports)
BASE_CONFIGS: dict[tuple[str, str, str], HarnessConfig] = {
    ("H100-PCIE-80GB", "resnet50", "Offline"): _rn50_offline("H100_PCIe_80GBx1", 2048, 57000),
    ("H100-SXM5-80GB", "resnet50", "Offline"): _rn50_offline("H100_SXM_80GBx1", 2048, 90000),
    ("H100-NVL", "resnet50", "Offline"): _rn50_offline("H100_NVL_94GBx1", 2048, 57000),
    ("H200-SXM", "resnet50", "Offline"): _rn50_offline("H200_SXM_141GBx1", 2048, 90000),
    ("A100-PCIE-80GB", "resnet50", "Offline"): _rn50_offline("A100_PCIe_80GBx1", 2048, 40000),
    ("H100-PCIE-80GB", "resnet50", "Server"): HarnessConfig(
        _RN50.format("Server", "H100_PCIe_80GBx1"),
        "ServerGPUBaseConfig",
        128,
        47000,
        _RN50_SERVER_H100_PCIE,
    ),
    ("H100-SXM5-80GB", "resnet50", "Server"): HarnessConfig(
        _RN50.format("Server", "H100_SXM_80GBx1"),
        "ServerGPUBaseConfig",
        256,
        73000,
        _RN50_SERVER_SXM,
    ),
    # v4.1 has no H100 NVL resnet50 Server class; its Offline class equals H100_PCIe_80GBx1's
    ("H100-NVL", "resnet50", "Server"): HarnessConfig(
        _RN50.format("Server", "H100_PCIe_80GBx1 (no H100_NVL_94GB class)"),
        "ServerGPUBaseConfig",
        128,
        47000,
        _RN50_SERVER_H100_PCIE,
    ),
    ("H200-SXM", "resnet50", "Server"): HarnessConfig(
        _RN50.format("Server", "H200_SXM_141GBx1"),
        "ServerGPUBaseConfig",
        256,
        79000,
        _RN50_SERVER_SXM,
    ),
    # v4.1 has no A100_PCIe_80GBx1 resnet50 Server class: A100_PCIe_80GBx8 per GPU
    ("A100-PCIE-80GB", "resnet50", "Server"): HarnessConfig(
        _RN50.format("Server", "A100_PCIe_80GBx8 (/8 GPUs)"),
        "ServerGPUBaseConfig",
        64,
        236000 / 8,
        (
            ("use_deque_limit", True),
            ("deque_timeout_usec", 2000),
            ("gpu_copy_streams", 9),
            ("gpu_inference_streams", 2),
            ("use_cuda_thread_per_device", True),
            ("use_graphs", True),
        ),
    ),
    ("H100-PCIE-80GB", "bert-99", "Offline"): HarnessConfig(
        _BERT.format("Offline", "H100_PCIe_80GBx1"),
        "OfflineGPUBaseConfig",
        1280,
        5700,
        (("use_small_tile_gemm_plugin", False),),
        workspace_size=_WS,
    ),
    ("H100-SXM5-80GB", "bert-99", "Offline"): HarnessConfig(
        _BERT.format("Offline", "H100_SXM_80GBx1"),
        "OfflineGPUBaseConfig",
        1280,
        9400,
        (
            ("use_small_tile_gemm_plugin", False),
            ("gpu_copy_streams", 2),
            ("gpu_inference_streams", 1),
        ),
        workspace_size=_WS,
    ),
    ("H100-NVL", "bert-99", "Offline"): HarnessConfig(
        _BERT.format("Offline", "H100_NVL_94GBx1"),
        "OfflineGPUBaseConfig",
        1280,
        5700,
        (("use_small_tile_gemm_plugin", False),),
        workspace_size=_WS,
    ),
    ("H200-SXM", "bert-99", "Offline"): HarnessConfig(
        _BERT.format("Offline", "H200_SXM_141GBx1"),
        "OfflineGPUBaseConfig",
        1280,
        9400,
        (
            ("use_small_tile_gemm_plugin", False),
            ("gpu_copy_streams", 2),
            ("gpu_inference_streams", 1),
            ("vboost_slider", 1),
        ),
        workspace_size=128000000000,
    ),
    ("A100-PCIE-80GB", "bert-99", "Offline"): HarnessConfig(
        _BERT.format("Offline", "A100_PCIe_80GBx1"),
        "OfflineGPUBaseConfig",
        1024,
        3400,
        (("use_small_tile_gemm_plugin", True),),
        workspace_size=_WS,
    ),
    ("H100-PCIE-80GB", "bert-99", "Server"): HarnessConfig(
        _BERT.format("Server", "H100_PCIe_80GBx1"),
        "ServerGPUBaseConfig",
        256,
        4560,
        _BERT_SERVER_H100_PCIE,
        workspace_size=_WS,
    ),
    ("H100-SXM5-80GB", "bert-99", "Server"): HarnessConfig(
        _BERT.format("Server", "H100_SXM_80GBx1"),
        "ServerGPUBaseConfig",
        128,
        7000,
        (
            ("use_small_tile_gemm_plugin", False),
            ("use_graphs", False),
            ("gpu_copy_streams", 2),
            ("gpu_inference_streams", 2),
            ("server_num_issue_query_threads", 1),
        ),
        workspace_size=_WS,
    ),
    # v4.1 has no H100 NVL BERT Server class: H100_PCIe_80GBx1's (equal Offline classes)
    ("H100-NVL", "bert-99", "Server"): HarnessConfig(
        _BERT.format("Server", "H100_PCIe_80GBx1 (no H100_NVL_94GB class)"),
        "ServerGPUBaseConfig",
        256,
        4560,
        _BERT_SERVER_H100_PCIE,
        workspace_size=_WS,
    ),
    ("H200-SXM", "bert-99", "Server"): HarnessConfig(
        _BERT.format("Server", "H200_SXM_141GBx1"),
        "ServerGPUBaseConfig",
        128,
        7200,
        (
            ("use_small_tile_gemm_plugin", False),
            ("use_graphs", False),
            ("gpu_copy_streams", 2),
            ("gpu_inference_streams", 2),
            ("server_num_issue_query_threads", 1),
            ("vboost_slider", 1),
        ),
        workspace_size=_WS,
    ),
    # v4.1 has no A100_PCIe_80GBx1 BERT Server class: A100_PCIe_80GBx8 per GPU
    ("A100-PCIE-80GB", "bert-99", "Server"): HarnessConfig(
        _BERT.format("Server", "A100_PCIe_80GBx8 (/8 GPUs)"),
        "ServerGPUBaseConfig",
        64,
        23000 / 8,
        (
            ("active_sms", 60),
            ("graphs_max_seqlen", 200),
            ("server_num_issue_query_threads", 1),
            ("soft_drop", 1.0),
        ),
    ),
}

# fields of NVIDIA's class left out: start_from_device is a field only of the systems
# SystemClassifications.start_from_device_enabled lists (code/common/fields.py), not of a custom one
DROPPED = {
    (gpu, "resnet50", scenario): ("start_from_device",)
    for gpu in ("H100-SXM5-80GB", "H200-SXM")
    for scenario in ("Offline", "Server")
}
# gpu_batch_size's key (the engine's component) per benchmark
_COMPONENT = {"resnet50": "resnet50", "bert-99": "bert"}
# compute capability of each architecture (SystemClassifications.is_hopper: 90, is_ampere: 80)
COMPUTE_SM = {"Hopper": 90, "Ampere": 80}
# add_custom_system.py's CUSTOM_CONFIG_FILE_HEADER
CUSTOM_CONFIG_HEADER = (
    "# Generated file by scripts/custom_systems/add_custom_system.py\n"
    "# Contains configs for all custom systems in code/common/systems/custom_list.py\n"
    "\n"
    "from . import *\n"
    "\n"
    "\n"
)
CUSTOM_LIST = Path("code") / "common" / "systems" / "custom_list.py"
CUSTOM_STUB = Path("scripts") / "custom_systems" / "stubs" / "custom_system.py.stub"
_END_BANNER = "#### END OF CUSTOM SYSTEMS ####"
MIN_HOST_MEMORY_GIB = 8  # the entry's min_memory_requirement (NVIDIA's entries: 30 GiB to 2 TB)


def key_of(system_id: str) -> str:
    """The ``custom_systems`` key (``KnownSystem`` member) of a system id: an identifier
    (add_custom_system.py's ``[A-Za-z][A-Za-z0-9_]*``; ``.``, ``-``, ``+`` become ``_``)."""
    key = re.sub(r"[^A-Za-z0-9_]", "_", system_id)
    return key if re.match(r"[A-Za-z]", key) else f"v{key}"


class V41Round(HarnessRound):
    name = "v4.1"
    source_repo = SOURCE_REPO
    source_commit = SOURCE_COMMIT
    architectures = {"hopper": "Hopper", "ampere": "Ampere"}
    # catalog GPU -> the board in NVIDIA's system ids (H100-PCIe-80GBx1, DGX-H100_H100-SXM-80GBx1,
    # H100-NVL-94GBx1, H200-SXM-141GBx1, A100-PCIe-80GBx1): the boards with a v4.1 class
    gpu_ids = {
        "H100-PCIE-80GB": "H100-PCIe-80GB",
        "H100-SXM5-80GB": "H100-SXM-80GB",
        "H100-NVL": "H100-NVL-94GB",
        "H200-SXM": "H200-SXM-141GB",
        "A100-PCIE-80GB": "A100-PCIe-80GB",
    }
    benchmarks = {
        "resnet50": HarnessBenchmark(
            "resnet50", "resnet50", "ResNet50", "LWIS", "k_99", ("resnet50",)
        ),
        "bert-99": HarnessBenchmark("bert", "bert", "BERT", "Custom", "k_99", ("bert-99",)),
    }
    base_configs = BASE_CONFIGS
    # Makefile.docker: build_docker (mlperf-inference:<tag>-latest), then docker_add_user
    # (mlperf-inference:<tag>, the image launch_docker runs); v4.1 has no NO_BUILD
    docker_steps = (("build_docker",), ("docker_add_user",))
    detect_command = (
        "python3",
        "-c",
        "from scripts.get_system_id import DETECTED_SYSTEM, MATCHED_SYSTEM; "
        "print(MATCHED_SYSTEM); print(DETECTED_SYSTEM.get_id())",
    )

    def make_vars(self) -> list[str]:
        # Makefile.const's ARCH is `uname -p`, which Debian answers "unknown" (Ubuntu: the
        # machine), and it stops every target with "Not supported for docker context other than
        # x86_64, aarch64 or Jetson Orin" on anything else
        return [f"ARCH={platform.machine()}"]

    # --- the VM's system --------------------------------------------------------------------
    def vm_system(self, gpu, profile, count=1, prefix="", nvidia_smi_name=None) -> VmSystem:
        system = super().vm_system(gpu, profile, count, prefix, nvidia_smi_name)
        if system.gpu_model not in self.gpu_ids:
            raise BackendError(
                f"{system.gpu_model}: the {self.name} harness has no class of this board to "
                f"scale from (it has {', '.join(sorted(self.gpu_ids))})"
            )
        if not nvidia_smi_name and system.vgpu_type.lower().startswith("nvidia_"):
            # the driver's own name first: "NVIDIA H100-1-10C", not "GRID H100-1-10C"
            system = dataclasses.replace(system, aliases=tuple(reversed(system.aliases)))
        return system

    @staticmethod
    def keys(system: VmSystem) -> tuple[str, str]:
        """The two ``custom_systems`` keys: the vGPU as a GPU, the vGPU's MIG device."""
        key = key_of(system.system_id)
        return key, f"{key}_MIG"

    def scale_config(self, system: VmSystem, benchmark: str, scenario: str) -> dict:
        """The package's rule; v4.1's ``gpu_batch_size`` is a dict keyed by the engine's
        component, and the workspace is capped at the vGPU's framebuffer."""
        s = super().scale_config(system, benchmark, scenario)
        component = _COMPONENT[s["benchmark"]]
        cap = max(2, system.framebuffer_mib // 1024) * GIB
        fields = []
        for name, value in s["fields"]:
            if name == "gpu_batch_size":
                value = {component: value}
            elif name == "workspace_size":
                value = min(value, cap)
                s["workspace"] = value
            fields.append((name, value))
        s["fields"] = fields
        s["component"] = component
        return s

    # --- rendering ----------------------------------------------------------------------------
    def render_system_entry(self, system: VmSystem) -> str:
        gpu_key, mig_key = self.keys(system)
        sm = COMPUTE_SM[system.arch]
        name = system.aliases[0]
        pci = _str(system.pci_device_id) if system.pci_device_id else "MATCH_ANY"
        cpu = (
            "CPUConfiguration(layout={CPU(name=MATCH_ANY, architecture=CPUArchitecture.x86_64, "
            "core_count=MATCH_ANY, threads_per_core=MATCH_ANY): MATCH_ANY})"
        )
        mem = (
            "min_memory_requirement(Memory(quantity="
            f"{MIN_HOST_MEMORY_GIB}, byte_suffix=ByteSuffix.GiB))"
        )
        # memory.total: the vGPU type's framebuffer (<GB> of the type name, what guests show
        # within 5%) and the catalog's MIG memory; one approximate match when they agree
        sizes = [f"Memory(quantity={system.memory_gb}, byte_suffix=ByteSuffix.GiB)"]
        if not math.isclose(system.memory_gb * 1024, system.framebuffer_mib, rel_tol=0.05):
            sizes.append(f"Memory(quantity={system.framebuffer_mib}, byte_suffix=ByteSuffix.MiB)")
        approx = [f"match_float_approximate({m})" for m in sizes]
        vram = approx[0] if len(approx) == 1 else f"MatchAllowList([{', '.join(approx)}])"
        gpu_name = _str(name) if system.pci_device_id else _aliased(system.aliases)
        gpu = (
            f"GPU(name={gpu_name}, accelerator_type=AcceleratorType.Discrete, vram={vram}, "
            f"max_power_limit=MATCH_ANY, pci_id={pci}, compute_sm={sm})"
        )
        m = re.match(r"(\d+)g\.(\d+)gb", system.profile)
        gpcs, gb = (int(m.group(1)), int(m.group(2))) if m else (system.slices, system.memory_gb)
        mig_names = [f"{a} MIG-{gpcs}g.{gb}gb" for a in system.aliases]
        mig_name = _str(mig_names[0]) if system.pci_device_id else _aliased(mig_names)
        mig = (
            f"MIG(name={mig_name}, accelerator_type=AcceleratorType.Discrete, "
            f"vram=Memory(quantity={gb}, byte_suffix=ByteSuffix.GiB), max_power_limit=MATCH_ANY, "
            f"pci_id={pci}, compute_sm={sm}, num_gpcs={gpcs})"
        )
        return (
            template_env("v4.1")
            .get_template("custom_system.py.j2")
            .render(
                **_context(system),
                gpu_key=gpu_key,
                mig_key=mig_key,
                system_id=system.system_id,
                entries=[
                    (gpu_key, self._entry(cpu, mem, gpu, system)),
                    (mig_key, self._entry(cpu, mem, mig, system)),
                ],
                name=name,
                sm=sm,
            )
        )

    @staticmethod
    def _entry(cpu: str, mem: str, accelerator: str, system: VmSystem) -> str:
        return (
            f"SystemConfiguration(host_cpu_conf={cpu}, host_mem_conf={mem}, "
            f"accelerator_conf=AcceleratorConfiguration(layout={{{accelerator}: {system.count}}}), "
            f"numa_conf=None, system_id={_str(system.system_id)})"
        )

    def render_config(self, system: VmSystem, benchmark: str, scenario: str) -> str:
        s = self.scale_config(system, benchmark, scenario)
        hb = self.harness_benchmark(benchmark)
        base: HarnessConfig = s["base"]
        gpu_key, mig_key = self.keys(system)
        dropped = list(DROPPED.get((system.gpu_model, s["benchmark"], scenario), ()))
        return (
            template_env("v4.1")
            .get_template("custom_config.py.j2")
            .render(
                **_context(system),
                system_id=system.system_id,
                benchmark=s["benchmark"],
                scenario=scenario,
                config_dir=hb.config_dir,
                harness=hb.harness_type,
                accuracy=hb.accuracy,
                classes=[(gpu_key, gpu_key.upper()), (mig_key, mig_key.upper())],
                parent=base.parent,
                base_source=base.source,
                base_batch={s["component"]: base.batch},
                batch={s["component"]: s["batch"]},
                qps_field=s["qps_field"],
                base_qps=round(base.qps, 2),
                qps=s["qps"],
                base_workspace=base.workspace_size,
                workspace=s.get("workspace"),
                dropped=dropped,
                fields=s["fields"],
            )
        )

    # --- installation -----------------------------------------------------------------------
    def install_system(self, harness_dir, system: VmSystem) -> list[Path]:
        """Put the VM's entries into ``code/common/systems/custom_list.py``, created from the
        round's stub when absent (as add_custom_system.py does), between its START / END
        banners; an earlier block of the same system id is replaced."""
        root = Path(harness_dir)
        changed: list[Path] = []
        path, stub = root / CUSTOM_LIST, root / CUSTOM_STUB
        if path.is_file():
            text = path.read_text(encoding="utf-8")
        elif stub.is_file():
            text = stub.read_text(encoding="utf-8")
        else:
            raise BackendError(
                f"{path}: no such file, nor {stub} (is {root} a v4.1 harness folder, the parent "
                "of code/ and scripts/?)"
            )
        entry = self.render_system_entry(system)
        sid = system.system_id
        new = replace_block(
            text, f"# miglab:begin system {sid}", f"# miglab:end system {sid}", entry
        )
        if new is None:
            lines = text.splitlines(keepends=True)
            end = next((i for i, ln in enumerate(lines) if ln.strip() == _END_BANNER), None)
            if end is None or end < 1 or "custom_systems" not in text:
                raise BackendError(
                    f"{path}: no '{_END_BANNER}' banner after custom_systems (not a v4.1 "
                    "custom_list.py?)"
                )
            # before the blank lines above the END banner, after the START banner's blank line
            at = end - 1
            while at > 0 and not lines[at - 1].strip():
                at -= 1
            gap = "\n" if at and lines[at - 1].startswith("###") else ""
            new = "".join(lines[:at]) + gap + entry + "".join(lines[at:])
        write_if_changed(path, new, changed)
        return changed

    def install_configs(
        self, harness_dir, system: VmSystem, benchmarks, scenarios, system_id=None
    ) -> list[Path]:
        """Write the VM's classes (one per ``custom_systems`` key) into each
        ``configs/<benchmark>/<Scenario>/custom.py`` (created with add_custom_system.py's
        header); an earlier block of the same system is replaced."""
        if system_id not in (None, *self.expected_ids(system)):
            raise BackendError(f"{system_id}: not an id of miglab's system {system.system_id}")
        root = Path(harness_dir)
        changed: list[Path] = []
        for bench in benchmarks:
            hb = self.harness_benchmark(bench)
            for scenario in scenarios:
                block = self.render_config(system, bench, scenario)
                folder = root / "configs" / hb.config_dir / scenario
                if not (folder / "__init__.py").is_file():
                    raise BackendError(
                        f"{folder / '__init__.py'}: no such file (is {root} a v4.1 harness folder?)"
                    )
                path = folder / "custom.py"
                if not path.is_file():
                    write_if_changed(path, CUSTOM_CONFIG_HEADER, changed)
                name = benchmark_info(bench).name
                tag = f"# miglab:begin config {system.system_id} {name} {scenario}"
                end = f"# miglab:end config {system.system_id} {name} {scenario}"
                append_block(path, tag, end, block, changed)
        return sorted(set(changed), key=changed.index)


def _str(s: str) -> str:
    """A string as obj_to_codestr writes it (double quotes)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _aliased(names) -> str:
    first, *rest = names
    tail = f", ({', '.join(_str(n) for n in rest)},)" if rest else ""
    return f"AliasedName({_str(first)}{tail})"


def _context(system: VmSystem) -> dict:
    return {
        "block_id": system.system_id,
        "gpu_model": system.gpu_model,
        "profile": system.profile,
        "slices": system.slices,
        "compute_slices": system.compute_slices,
        "vgpu_type": system.vgpu_type,
        "count": system.count,
        "pci": system.pci_device_id,
        "framebuffer_mib": system.framebuffer_mib,
        "source": f"{SOURCE_REPO} @ {SOURCE_COMMIT}",
    }


V4_1 = V41Round()
