# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# systems/known_hardware.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: the helpers match_float_approximate (5 %),
# min_memory_requirement, pci_id_match_list ("0x<id>10DE") and NVIDIA's KnownGPU / KnownMIG /
# KnownCPU values (names, memory, max power limit, PCI ids, SM) of the datacenter boards, copied as
# facts; the Jetson and GeForce entries are left out. Written anew.
"""Known hardware components (stand-in)."""

from __future__ import annotations

import re
from code.common.constants import AcceleratorType, AliasedName, ByteSuffix, CPUArchitecture, Memory
from code.common.systems.accelerator import GPU, MIG
from code.common.systems.base import (
    MATCH_ANY,
    MatchableEnum,
    MatchAllowList,
    MatchFloatApproximate,
    MatchNumericThreshold,
)
from code.common.systems.cpu import CPU
from code.common.systems.memory import MemoryConfiguration
from enum import unique


def mem_to_bytes(m):
    return m.to_bytes()


def match_float_approximate(m):
    return MatchFloatApproximate(m, mem_to_bytes, rel_tol=0.05)


def mem_conf_to_bytes(mc):
    return mem_to_bytes(mc.host_memory_capacity)


def mem_conf_to_min_bytes(mc):
    return mem_conf_to_bytes(mc) * (1 - mc.comparison_tolerance)


def min_memory_requirement(m):
    return MatchNumericThreshold(MemoryConfiguration(m), mem_conf_to_min_bytes, min_threshold=True)


def get_full_pci_id(s):
    return f"0x{s}10DE"


def pci_id_match_list(ids):
    full = [get_full_pci_id(i) for i in ids]
    assert full
    return AliasedName(full[0], tuple(full[1:]))


_D = AcceleratorType.Discrete
_GIB = ByteSuffix.GiB


def _gpu(name, gib, watts, ids, sm):
    return GPU(
        name, _D, match_float_approximate(Memory(gib, _GIB)), watts, pci_id_match_list(ids), sm
    )


@unique
class KnownGPU(MatchableEnum):
    GH200_GraceHopper_96GB = _gpu("NVIDIA Graphics Device", 96, 900.0, ("2342",), 90)
    GH200_GraceHopper_144GB = _gpu("NVIDIA Graphics Device", 144, 900.0, ("2348",), 90)
    L4 = _gpu("NVIDIA Graphics Device", 23, 72.0, ("27B8",), 89)
    L40 = _gpu("NVIDIA Graphics Device", 45, 300.0, ("26B5",), 89)
    L40S = _gpu("NVIDIA L40S", 45, 350.0, ("26B9",), 89)
    H100_SXM_80GB = _gpu("NVIDIA H100 80GB HBM3", 80, 700.0, ("2330", "233F"), 90)
    H100_PCIe_80GB = _gpu("NVIDIA Graphics Device", 80, 350.0, ("2331",), 90)
    H100_NVL = _gpu("NVIDIA H100 NVL", 94, 400.0, ("2321",), 90)
    H200_SXM_141GB = _gpu("NVIDIA H200", 140, 700.0, ("2335",), 90)
    H200_SXM_141GB_CTS = _gpu("NVIDIA H200", 140, 1000.0, ("2335",), 90)
    A100_PCIe_40GB = _gpu(
        AliasedName(
            "A100-PCIe-40GB",
            ("A100-PCIe", "NVIDIA A100-PCIe", "NVIDIA A100-PCIe-40GB", "NVIDIA A100 40GB PCIe"),
        ),
        40,
        250.0,
        ("20F1", "20BF"),
        80,
    )
    A100_PCIe_80GB = _gpu(
        AliasedName("A100-PCIe-80GB", ("NVIDIA A100-PCIe-80GB", "NVIDIA A100 80GB PCIe")),
        80,
        300.0,
        ("20B5",),
        80,
    )
    A100_SXM4_40GB = _gpu(
        AliasedName("A100-SXM4-40GB", ("NVIDIA A100-SXM4-40GB",)),
        40,
        400.0,
        ("20B0",),
        80,
    )
    A100_SXM_80GB = _gpu(
        AliasedName("A100-SXM-80GB", ("NVIDIA A100-SXM-80GB", "NVIDIA A100-SXM4-80GB")),
        80,
        400.0,
        ("20B2",),
        80,
    )
    A10 = _gpu(AliasedName("A10", ("NVIDIA A10",)), 24, 150.0, ("2236",), 86)
    A30 = _gpu(AliasedName("A30", ("NVIDIA A30",)), 24, 165.0, ("20B7",), 80)
    A2 = _gpu(AliasedName("A2", ("NVIDIA A2",)), 15, 60.0, ("25B6",), 86)
    T4 = GPU(
        AliasedName("T4", ("Tesla T4", "T4 32GB", "NVIDIA T4", "NVIDIA Tesla T4")),
        _D,
        MatchAllowList(
            [
                match_float_approximate(Memory(16, _GIB)),
                match_float_approximate(Memory(32, _GIB)),
            ]
        ),
        70.0,
        pci_id_match_list(("1EB8", "1EB9")),
        75,
    )


def _mig(parent, profile, gib, watts, ids):
    name = parent.value.name + f" MIG-{profile}"
    vram = match_float_approximate(Memory(gib, _GIB))
    return MIG(name, _D, vram, watts, pci_id_match_list(ids), 80, num_gpcs=1)


@unique
class KnownMIG(MatchableEnum):
    A30_1GPC = _mig(KnownGPU.A30, "1g.6gb", 6, 165.0, ("20B7",))
    A100_PCIe_40GB_1GPC = _mig(KnownGPU.A100_PCIe_40GB, "1g.5gb", 5, 250.0, ("20F1", "20BF"))
    A100_PCIe_80GB_1GPC = _mig(KnownGPU.A100_PCIe_80GB, "1g.10gb", 10, 300.0, ("20B5",))
    A100_SXM4_40GB_1GPC = _mig(KnownGPU.A100_SXM4_40GB, "1g.5gb", 5, 400.0, ("20B0",))
    A100_SXM_80GB_1GPC = _mig(KnownGPU.A100_SXM_80GB, "1g.10gb", 10, 400.0, ("20B2",))


_X86 = CPUArchitecture.x86_64
_ARM = CPUArchitecture.aarch64
_ONE_TWO = MatchAllowList([1, 2])


@unique
class KnownCPU(MatchableEnum):
    GraceHopper_ARM = CPU(AliasedName("aarch64_0", ("NVIDIA Grace CPU",)), _ARM, 72, 1)
    Intel_Xeon_Platinum_8480C = CPU(
        AliasedName("Intel(R) Xeon(R) Platinum 8480C", ("Intel(R) Xeon(R) Platinum 8480CL",)),
        _X86,
        56,
        _ONE_TWO,
    )
    Intel_Xeon_Platinum_8480P = CPU(
        AliasedName("Intel(R) Xeon(R) Platinum 8480+", ("Intel(R) Xeon(R) Platinum 8480+",)),
        _X86,
        56,
        _ONE_TWO,
    )
    AMD_EPYC_7742 = CPU(
        AliasedName("AMD EPYC 7742 64-Core Processor", ("AMD EPYC 7742",)),
        _X86,
        MatchAllowList([64, 32]),
        _ONE_TWO,
    )
    Intel_Xeon_Platinum_8380 = CPU(
        AliasedName("Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz"),
        _X86,
        40,
        _ONE_TWO,
    )
    x86_64_Generic = CPU(
        AliasedName("x86-64 Generic", patterns=(re.compile(r"(?:AMD|Intel).*"),)),
        _X86,
        MATCH_ANY,
        MATCH_ANY,
    )
    Neoverse_N1_ARM = CPU(
        AliasedName("Neoverse-N1", ("Ampere Altra Q80-30",)),
        _ARM,
        80,
        1,
    )
    AMD_EPYC_7313P = CPU(
        AliasedName("AMD EPYC 7313P 16-Core Processor", ("AMD EPYC 7313P",)),
        _X86,
        16,
        2,
    )
