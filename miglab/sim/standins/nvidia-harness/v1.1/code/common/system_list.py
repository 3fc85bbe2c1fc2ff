# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# system_list.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: the same classes, signatures, id format, matching
# rules and NVIDIA's bare-metal KnownSystems entries (names, nvidia-smi aliases, PCI device ids,
# architectures, GPU counts, MIG slices), written anew. As in the real file, KnownSystems'
# entries are class attributes and get_all_system_classes() lists them in dir() order
# (alphabetical): get_system() takes the FIRST match, so an entry's attribute name decides which
# of two matching entries wins.
"""Known systems, their ids and how a GPU is matched to one (stand-in)."""

import os
import platform
import re
import subprocess
from code.common.constants import CPUArch
from collections import OrderedDict
from enum import Enum, unique

# nvidia-smi -L lines: "GPU <i>: <name> (UUID: GPU-...)" and "  MIG <g>g.<gb>gb Device <d>: (UUID:
# MIG-...)" (the real regexes' groups: index, name, uuid / gpcs, memory GB, device, uuid)
NVIDIA_SMI_GPU_REGEX = re.compile(r"GPU (\d+): ([\w\- ]+) \(UUID: (GPU-[0-9a-f\-]+)\)")
NVIDIA_SMI_MIG_REGEX = re.compile(
    r"\s+MIG\s+(\d+)g.(\d+)gb\s+Device\s+(\d+):\s+\(UUID:\s+(MIG-[0-9a-f\-]+)\)"
)


@unique
class Architecture(Enum):
    Turing = "Turing"
    Xavier = "Xavier"
    Ampere = "Ampere"
    Intel_CPU_x86_64 = "Intel CPU x86_64"
    Unknown = "Unknown"


class MIGSlice:
    """A MIG instance shape (``<gpcs>g.<GB>gb``); with device id and uuid, an active one."""

    def __init__(self, num_gpcs, mem_gb, device_id=None, uuid=None):
        if (device_id is None) != (uuid is None):
            raise AssertionError("MIGSlice: device_id and uuid go together")
        self.num_gpcs = num_gpcs
        self.mem_gb = mem_gb
        self.device_id = device_id
        self.uuid = uuid

    def __str__(self):
        return f"{self.num_gpcs:d}g.{self.mem_gb:d}gb"

    def __hash__(self):
        return hash(str(self))

    def __eq__(self, other):
        return str(self) == str(other)

    def is_active_slice(self):
        return self.device_id is None

    def get_gpu_uuid(self):
        return self.uuid.split("/")[0][len("MIG-") :]

    def get_gpu_instance_id(self):
        return int(self.uuid.split("/")[1])

    def get_compute_instance_id(self):
        return int(self.uuid.split("/")[2])


class MIGConfiguration:
    """The MIG instances of a system: ``{gpu id: {MIGSlice: count}}``."""

    def __init__(self, conf):
        self.conf = conf

    def check_compatible(self, valid_mig_slices):
        allowed = {str(s) for s in valid_mig_slices}
        return all(str(s) in allowed for gpu in self.conf for s in self.conf[gpu])

    def num_gpus(self):
        return len(self.conf)

    def num_mig_slices(self):
        return sum(n for gpu in self.conf for n in self.conf[gpu].values())

    def __str__(self):
        """``<count>x<g>g.<GB>gb`` (``1x2g.20gb``). As in the real code, only the shape counted
        last is named (its join is over a one-element list), and a GPU listed with no instance
        leaves that shape unset (an UnboundLocalError)."""
        totals = OrderedDict()
        for gpu in self.conf:
            for mig in self.conf[gpu]:
                totals[mig] = totals.get(mig, 0) + self.conf[gpu][mig]
        if not (all(totals) and all(n > 0 for n in totals.values())):
            raise AssertionError(f"Unsupported MIG configuration: {self.conf}")
        return "_".join(sorted([f"{totals[mig]}x{mig}"]))

    @staticmethod
    def get_gpu_mig_slice_mapping():
        """``{gpu uuid: [active MIGSlice, ...]}`` from ``nvidia-smi -L``."""
        proc = subprocess.run("nvidia-smi -L", shell=True, stdout=subprocess.PIPE, text=True)
        mapping = {}
        gpu_uuid = None
        for line in proc.stdout.splitlines(keepends=True):
            g = NVIDIA_SMI_GPU_REGEX.match(line)
            if g is not None:
                gpu_uuid = g.group(3)
                mapping[gpu_uuid] = []
            m = NVIDIA_SMI_MIG_REGEX.match(line)
            if m is not None:
                mapping[gpu_uuid].append(
                    MIGSlice(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4))
                )
        return mapping

    @staticmethod
    def from_nvidia_smi():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        wanted = {g for g in (visible or "").split(",") if g.startswith("MIG")}
        conf = OrderedDict()
        for gpu, slices in MIGConfiguration.get_gpu_mig_slice_mapping().items():
            conf[gpu] = {}
            for s in slices:
                if not visible or s.uuid in wanted:
                    conf[gpu][s] = conf[gpu].get(s, 0) + 1
        return MIGConfiguration(conf)


class System:
    """A concrete system: GPU id, architecture, GPU count, MIG configuration, CPU architecture."""

    def __init__(self, gpu, arch, count, pci_id=None, mig_conf=None, cpu_arch=CPUArch.x86_64):
        self.gpu = gpu
        self.arch = arch
        self.count = count
        self.mig_conf = mig_conf
        self.pci_id = pci_id
        self.uses_mig = mig_conf is not None
        self.cpu_arch = cpu_arch

    def get_id(self):
        """``<gpu>x<count>`` (``<gpu>_<cpu arch>x<count>`` off x86_64; Xavier: ``<gpu>``);
        with MIG instances ``<gpu>-MIG_<count>x<g>g.<GB>gb`` instead."""
        sid = str(self.gpu)
        if self.arch != Architecture.Xavier:
            if self.cpu_arch != CPUArch.x86_64:
                sid += "_" + self.cpu_arch.valstr()
            sid += f"x{self.count}"
        if self.mig_conf is not None:
            sid = f"{self.gpu}-MIG_{self.mig_conf}"
        return sid

    def __str__(self):
        return self.get_id()

    def __hash__(self):
        return hash(str(self))

    def __eq__(self, other):
        return str(self) == str(other)


class SystemClass:
    """A family of systems: GPU id, nvidia-smi names, PCI device ids, architecture, supported
    GPU counts, MIG slices (None: no MIG) and CPU architecture."""

    def __init__(
        self,
        gpu,
        aliases,
        pci_ids,
        arch,
        supported_counts,
        valid_mig_slices=None,
        cpu_arch=CPUArch.x86_64,
    ):
        self.gpu = gpu
        self.aliases = aliases
        self.pci_ids = pci_ids
        self.arch = arch
        self.supported_counts = supported_counts
        self.valid_mig_slices = valid_mig_slices
        self.supports_mig = valid_mig_slices is not None
        self.cpu_arch = cpu_arch

    def __str__(self):
        return (
            f"SystemClass(gpu={self.gpu}, aliases={self.aliases}, pci_ids={self.pci_ids}, "
            f"arch={self.arch}, counts={self.supported_counts}, "
            f"cpu_arch={self.cpu_arch.value.name})"
        )

    def get_match(self, name, count, pci_id=None, mig_conf=None):
        """The System for ``count`` GPUs called ``name`` (PCI device ``pci_id``), or None.

        The PCI id decides when both the GPU and this class have one; the name (one of the
        aliases) only when either has none. Then the count must be supported, the MIG slices
        allowed (classes with MIG support), and this machine's CPU architecture (Python's
        ``platform.processor()``) this class's."""
        if pci_id is not None and len(self.pci_ids) > 0:
            matched = pci_id in self.pci_ids
        else:
            matched = name in self.aliases
        if not matched or count not in self.supported_counts:
            return None
        if (
            self.supports_mig
            and mig_conf is not None
            and not mig_conf.check_compatible(self.valid_mig_slices)
        ):
            return None
        if CPUArch.get_match(platform.processor()) != self.cpu_arch:
            return None
        return System(
            self.gpu, self.arch, count, pci_id=pci_id, mig_conf=mig_conf, cpu_arch=self.cpu_arch
        )


class KnownSystems:
    """Every supported system (NVIDIA's entries of the round)."""

    A100_PCIe_40GB = SystemClass(
        "A100-PCIe", ["A100-PCIE-40GB"], ["20F1", "20BF"], Architecture.Ampere, [1, 2, 8]
    )
    A100_PCIe_40GB_aarch64 = SystemClass(
        "A100-PCIe",
        ["A100-PCIE-40GB"],
        ["20F1", "20BF"],
        Architecture.Ampere,
        [1, 2, 4],
        cpu_arch=CPUArch.aarch64,
    )
    A100_PCIe_80GB = SystemClass(
        "A100-PCIe-80GB", ["A100-PCIE-80GB"], ["20B5"], Architecture.Ampere, [1, 2, 8]
    )
    A100_PCIe_80GB_aarch64 = SystemClass(
        "A100-PCIe-80GB",
        ["A100-PCIE-80GB"],
        ["20B5"],
        Architecture.Ampere,
        [1, 2, 4],
        cpu_arch=CPUArch.aarch64,
    )
    A100_SXM4_40GB = SystemClass(
        "A100-SXM4-40GB",
        ["A100-SXM4-40GB"],
        ["20B0"],
        Architecture.Ampere,
        [1, 8],
        valid_mig_slices=[MIGSlice(1, 5), MIGSlice(2, 10), MIGSlice(3, 20)],
    )
    A100_SXM_80GB = SystemClass(
        "A100-SXM-80GB",
        ["A100-SXM-80GB"],
        ["20B2"],
        Architecture.Ampere,
        [1, 4, 8],
        valid_mig_slices=[MIGSlice(1, 10), MIGSlice(2, 20), MIGSlice(3, 40)],
    )
    GeForceRTX_3080 = SystemClass(
        "GeForceRTX3080", ["GeForce RTX 3080"], ["2206"], Architecture.Ampere, [1]
    )
    GeForceRTX_3090 = SystemClass(
        "GeForceRTX3090",
        ["GeForce RTX 3090", "Quadro RTX A6000", "RTX A6000"],
        ["2204", "2230"],
        Architecture.Ampere,
        [1],
    )
    A10 = SystemClass("A10", ["A10"], ["2236"], Architecture.Ampere, [1, 8])
    T4 = SystemClass(
        "T4", ["Tesla T4", "T4 32GB"], ["1EB8", "1EB9"], Architecture.Turing, [1, 8, 20]
    )
    AGX_Xavier = SystemClass(
        "AGX_Xavier", ["Jetson-AGX"], [], Architecture.Xavier, [1], cpu_arch=CPUArch.aarch64
    )
    Xavier_NX = SystemClass(
        "Xavier_NX", ["Xavier NX"], [], Architecture.Xavier, [1], cpu_arch=CPUArch.aarch64
    )
    A30 = SystemClass(
        "A30",
        ["A30"],
        ["20B7"],
        Architecture.Ampere,
        [1, 8],
        valid_mig_slices=[MIGSlice(1, 6), MIGSlice(2, 12), MIGSlice(4, 24)],
    )

    # CPU Systems
    Triton_CPU_2S_6258R = SystemClass(
        "Triton_CPU_2S_6258R", ["2S_6258R"], [], Architecture.Intel_CPU_x86_64, [1]
    )
    Triton_CPU_4S_8380H = SystemClass(
        "Triton_CPU_4S_8380H", ["4S_8380H"], [], Architecture.Intel_CPU_x86_64, [1]
    )

    @staticmethod
    def get_all_system_classes():
        return [
            getattr(KnownSystems, attr)
            for attr in dir(KnownSystems)
            if type(getattr(KnownSystems, attr)) is SystemClass
        ]

    @staticmethod
    def get_all_systems():
        systems = []
        for cls in KnownSystems.get_all_system_classes():
            for count in cls.supported_counts:
                systems.append(System(cls.gpu, cls.arch, count, cpu_arch=cls.cpu_arch))
                if count == 1 and cls.valid_mig_slices is not None:
                    for mig in cls.valid_mig_slices:
                        conf = MIGConfiguration({"DummyGPU": {mig: 1}})
                        systems.append(System(cls.gpu, cls.arch, count, mig_conf=conf))
        # NVIDIA's multi-instance systems: 56x 1g.10gb on a DGX-A100, 32x 1g.6gb on 8 A30s
        systems.append(
            System(
                "A100-SXM-80GB",
                Architecture.Ampere,
                8,
                mig_conf=MIGConfiguration({"DummyGPU": {MIGSlice(1, 10): 56}}),
            )
        )
        systems.append(
            System(
                "A30",
                Architecture.Ampere,
                8,
                mig_conf=MIGConfiguration({"DummyGPU": {MIGSlice(1, 6): 32}}),
            )
        )
        return systems
