"""Round v1.1 of NVIDIA's harness (the seed's A100 80GB PCIe lab, Dell's validated design).

Source: ``closed/NVIDIA`` (and Dell's copy ``closed/Dell``) of
github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549.

Detection (``code/common/__init__.py`` ``get_system()``): nvidia-smi's
``--query-gpu=gpu_name,pci.device_id,uuid`` gives the name and the 4-digit PCI device id of the
first GPU; every ``SystemClass`` of ``KnownSystems`` is tried in ``dir(KnownSystems)`` order --
alphabetical -- and the first ``get_match()`` wins. ``get_match`` compares the PCI id when both
sides have one and the name only when the class has no PCI ids. A vGPU reports the physical
board's device id (0x20B5 for the A100 80GB PCIe), so NVIDIA's bare-metal ``A100_PCIe_80GB``
class (PCI id 20B5, counts 1/2/8, no MIG slices) matches a 1-vGPU VM as ``A100-PCIe-80GBx1``.
Dell's fork patched ``get_match``; miglab instead names its entry so that it sorts before every
class of the same board (the vGPU type name: ``A100D_2_20C_...`` < ``A100_PCIe_80GB`` because
``D`` and digits sort before ``_``), and then runs the harness's own ``scripts/get_system_id.py``
to check that its entry won (:class:`~miglab.mlperf.guest.backends.nvidia.NvidiaBackend`).

When nvidia-smi in the VM also lists the vGPU's MIG device (``MIG 2g.20gb Device 0: ...``) the
harness's id gets v1.1's MIG suffix (``<gpu>-MIG_1x2g.20gb``); miglab writes the configs for
whichever id the harness detected.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path

from miglab.mlperf.guest.backends.base import BackendError, benchmark_info
from miglab.mlperf.guest.backends.nvidia.common import (
    HarnessBenchmark,
    HarnessConfig,
    HarnessRound,
    VmSystem,
    append_block,
    ident,
    replace_block,
    template_env,
    write_if_changed,
)

__all__ = ["BASE_CONFIGS", "V1_1", "V11Round"]

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


class V11Round(HarnessRound):
    name = "v1.1"
    source_repo = "github.com/mlcommons/inference_results_v1.1"
    source_commit = "912dcdb9163736beca40a1f86e25d1305deab549"
    # code/common/system_list.py's Architecture enum
    architectures = {"ampere": "Ampere", "turing": "Turing"}
    # catalog GPU -> the GPU id of NVIDIA's bare-metal SystemClass
    gpu_ids = {
        "A100-PCIE-80GB": "A100-PCIe-80GB",
        "A100-PCIE-40GB": "A100-PCIe",
        "A100-SXM4-80GB": "A100-SXM-80GB",
        "A100-SXM4-40GB": "A100-SXM4-40GB",
        "A30": "A30",
    }
    benchmarks = {
        "resnet50": HarnessBenchmark(
            "resnet50", "resnet50", "ResNet50", "LWIS", "k_99", ("resnet50", "resnet")
        ),
        "bert-99": HarnessBenchmark("bert", "bert", "BERT", "Custom", "k_99", ("bert-99", "bert")),
    }
    base_configs = BASE_CONFIGS
    # Makefile: build_docker (NO_BUILD=1: the image only, as `make prebuild` does), then
    # docker_add_user (the image launch_docker runs, mlperf-inference:$(DOCKER_TAG))
    docker_steps = (("build_docker", "NO_BUILD=1"), ("docker_add_user",))
    detect_command = ("python3", "scripts/get_system_id.py")

    def make_vars(self) -> list[str]:
        # The Makefile's ARCH is `uname -p`, which Debian answers "unknown" (Ubuntu: x86_64), and
        # it stops every target on anything but x86_64 / aarch64.
        return [f"ARCH={platform.machine()}"]

    def target_qps_arg(self, scenario: str, qps: float) -> str:
        # code/common/arguments.py: offline_expected_qps is a float, server_target_qps an int
        if scenario == "Offline":
            return f"--offline_expected_qps={qps:g}"
        return f"--server_target_qps={int(round(qps))}"

    @staticmethod
    def attr(system: VmSystem) -> str:
        """The ``KnownSystems`` attribute: the vGPU type first, so that it sorts before the
        bare-metal classes of the same board in ``dir()`` order (module docstring)."""
        tail = f"_{ident(system.prefix)}" if system.prefix else ""
        return f"{ident(system.type_name)}{tail}_vGPUx{system.count}"

    def expected_ids(self, system: VmSystem) -> tuple[str, ...]:
        return (system.system_id, system.mig_system_id)

    def render_system_entry(self, system: VmSystem) -> str:
        return (
            template_env("v1.1")
            .get_template("system_entry.py.j2")
            .render(**_context(system), attr=self.attr(system))
        )

    def render_config(
        self, system: VmSystem, benchmark: str, scenario: str, mig: bool = False
    ) -> str:
        s = self.scale_config(system, benchmark, scenario)
        hb = self.harness_benchmark(benchmark)
        base: HarnessConfig = s["base"]
        m = re.match(r"(\d+)g\.(\d+)gb", system.profile)
        return (
            template_env("v1.1")
            .get_template("config.py.j2")
            .render(
                **_context(system),
                system_id=system.mig_system_id if mig else system.system_id,
                mig=mig,
                mig_gpcs=int(m.group(1)) if m else system.slices,
                mig_gb=int(m.group(2)) if m else system.memory_gb,
                benchmark=s["benchmark"],
                scenario=scenario,
                config_dir=hb.config_dir,
                harness=hb.harness_type,
                accuracy=hb.accuracy,
                class_name=ident(system.mig_system_id if mig else system.system_id),
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

    def install_system(self, harness_dir, system: VmSystem) -> list[Path]:
        root = Path(harness_dir)
        changed: list[Path] = []
        sl = root / "code" / "common" / "system_list.py"
        if not sl.is_file():
            raise BackendError(
                f"{sl}: no such file (is {root} the harness's code folder's parent?)"
            )
        text = sl.read_text(encoding="utf-8")
        entry = self.render_system_entry(system)
        tag = f"# miglab:begin system {system.system_id}"
        new = replace_block(text, tag, f"# miglab:end system {system.system_id}", entry)
        if new is None:
            m = re.search(r"^class KnownSystems\b.*?$", text, flags=re.M)
            if not m:
                raise BackendError(f"{sl}: no 'class KnownSystems' (not a v1.1 system_list.py?)")
            k = re.compile(r"^    @staticmethod\s*\n    def get_all_system_classes", re.M)
            m2 = k.search(text, m.end())
            if not m2:
                raise BackendError(f"{sl}: KnownSystems has no get_all_system_classes()")
            new = text[: m2.start()] + entry + "\n" + text[m2.start() :]
        write_if_changed(sl, new, changed)
        return changed

    def install_configs(
        self, harness_dir, system: VmSystem, benchmarks, scenarios, system_id=None
    ) -> list[Path]:
        if system_id not in (None, *self.expected_ids(system)):
            raise BackendError(f"{system_id}: not an id of miglab's system {system.system_id}")
        mig = system_id == system.mig_system_id
        root = Path(harness_dir)
        changed: list[Path] = []
        for bench in benchmarks:
            hb = self.harness_benchmark(bench)
            for scenario in scenarios:
                block = self.render_config(system, bench, scenario, mig=mig)
                path = root / "configs" / hb.config_dir / scenario / "__init__.py"
                # one block per VM system: a re-detected id (MIG shown or not) replaces it
                name = benchmark_info(bench).name
                tag = f"# miglab:begin config {system.system_id} {name} {scenario}"
                end = f"# miglab:end config {system.system_id} {name} {scenario}"
                append_block(path, tag, end, block, changed)
        return changed


def _context(system: VmSystem) -> dict:
    return {
        "block_id": system.system_id,
        "gpu_model": system.gpu_model,
        "profile": system.profile,
        "slices": system.slices,
        "compute_slices": system.compute_slices,
        "vgpu_type": system.vgpu_type,
        "count": system.count,
        "gpu_id": system.gpu_id,
        "aliases": list(system.aliases),
        "arch": system.arch,
    }


V1_1 = V11Round()
