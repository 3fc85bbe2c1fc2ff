# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# systems/system_list.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183, written anew with the real facts:
#   - add_systems(name format, id format, CPU, accelerator, counts, minimum memory) fills the
#     table with SystemConfiguration(CPUConfiguration({cpu: MATCH_ANY}), min_memory_requirement,
#     AcceleratorConfiguration({accelerator: count}), numa_conf=MATCH_ANY, system_id=...); NVIDIA's
#     datacenter systems of the round are listed first, with their real member names and ids;
#   - then the custom systems: `custom_systems` of code/common/systems/custom_list.py when that
#     module exists, or of <MLPINF_CUSTOM_DEFINITION_PATH>/custom_systems/custom_list.py when the
#     variable is set (a missing path: FileNotFoundError "MLPINF_CUSTOM_DEFINITION_PATH <p> does
#     not exist.");
#   - KnownSystem = MatchableEnum("KnownSystem", <that table>): get_first_match tries NVIDIA's
#     entries first, then the custom ones, in definition order;
#   - DETECTED_SYSTEM = SystemConfiguration.detect(); MATCHED_SYSTEM = its first match (None when
#     nothing matched; a deprecated system logs "Detected system is a deprecated system, and is
#     no longer supported: <member>"); the match sets DETECTED_SYSTEM's id to the entry's
#     system_id;
#   - SystemClassifications (is_hopper: SM 90, is_ampere, is_aarch64, start_from_device_enabled,
#     gpu_based...) of MATCHED_SYSTEM's entry.
# The Jetson / GeForce entries are left out.
"""Known systems and the detection of the one the harness runs on (stand-in)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from code.common import logging
from code.common.constants import ByteSuffix, CPUArchitecture, Memory
from code.common.systems.accelerator import GPU, MIG, AcceleratorConfiguration  # noqa: F401
from code.common.systems.base import MATCH_ANY, MatchableEnum, MatchAllowList
from code.common.systems.cpu import CPU, CPUConfiguration
from code.common.systems.known_hardware import KnownCPU, KnownGPU, KnownMIG, min_memory_requirement
from code.common.systems.memory import MemoryConfiguration  # noqa: F401
from code.common.systems.systems import SystemConfiguration

_system_confs = {}


def add_systems(name_format, id_format, cpu, accelerator, counts, mem_requirement, target=None):
    """One SystemConfiguration per accelerator count, named and id'ed by the formats."""
    target = _system_confs if target is None else target
    for count in counts:
        target[name_format.format(count)] = SystemConfiguration(
            CPUConfiguration({cpu: MATCH_ANY}),
            min_memory_requirement(mem_requirement),
            AcceleratorConfiguration({accelerator: count}),
            numa_conf=MATCH_ANY,
            system_id=id_format.format(count),
        )


_G, _M, _C = KnownGPU, KnownMIG, KnownCPU
_GiB, _TiB, _TB = ByteSuffix.GiB, ByteSuffix.TiB, ByteSuffix.TB
_EPYC_OR_ANY_X86 = MatchAllowList([_C.AMD_EPYC_7742.value, _C.x86_64_Generic.value])

# Grace-Hopper, Ada
add_systems(
    "GH200_96GB_ARMx{}",
    "GH200-GraceHopper-Superchip_GH200-96GB_aarch64x{}",
    _C.GraceHopper_ARM.value,
    _G.GH200_GraceHopper_96GB.value,
    [1],
    Memory(500, _GiB),
)
add_systems(
    "GH200_144GB_ARMx{}",
    "GH200-GraceHopper-Superchip_GH200-144GB_aarch64x{}",
    _C.GraceHopper_ARM.value,
    _G.GH200_GraceHopper_144GB.value,
    [1, 2],
    Memory(600, _GiB),
)
add_systems(
    "L40x{}", "L40x{}", _C.AMD_EPYC_7313P.value, _G.L40.value, [1, 2, 4, 8], Memory(100, _GiB)
)
add_systems("L4x{}", "L4x{}", _C.AMD_EPYC_7313P.value, _G.L4.value, [1, 2, 4, 8], Memory(100, _GiB))
add_systems(
    "L40Sx{}", "L40Sx{}", _C.AMD_EPYC_7742.value, _G.L40S.value, [1, 2, 4, 8], Memory(100, _GiB)
)
# Hopper
_HOPPER = (
    (
        "H200_SXM_141GBx{}",
        "H200-SXM-141GBx{}",
        _C.Intel_Xeon_Platinum_8480C,
        _G.H200_SXM_141GB,
        30,
        _GiB,
    ),
    (
        "H200_SXM_141GB_CTSx{}",
        "H200-SXM-141GB-CTSx{}",
        _C.Intel_Xeon_Platinum_8480C,
        _G.H200_SXM_141GB_CTS,
        2,
        _TB,
    ),
    ("H100_NVL_94GBx{}", "H100-NVL-94GBx{}", _C.Intel_Xeon_Platinum_8480P, _G.H100_NVL, 30, _GiB),
    (
        "H100_SXM_80GBx{}",
        "DGX-H100_H100-SXM-80GBx{}",
        _C.Intel_Xeon_Platinum_8480C,
        _G.H100_SXM_80GB,
        30,
        _GiB,
    ),
    ("H100_PCIe_80GBx{}", "H100-PCIe-80GBx{}", _C.AMD_EPYC_7742, _G.H100_PCIe_80GB, 100, _GiB),
    (
        "H100_PCIe_80GB_ARMx{}",
        "H100-PCIe-80GB_aarch64x{}",
        _C.Neoverse_N1_ARM,
        _G.H100_PCIe_80GB,
        100,
        _GiB,
    ),
)
for _name, _id, _cpu, _gpu, _mem, _unit in _HOPPER:
    add_systems(_name, _id, _cpu.value, _gpu.value, [1, 2, 4, 8], Memory(_mem, _unit))
# Ampere
_AMPERE = (
    (
        "A100_PCIe_40GB_ARMx{}",
        "A100-PCIe_aarch64x{}",
        _C.Neoverse_N1_ARM.value,
        _G.A100_PCIe_40GB,
        [1, 2, 4],
        30,
        _GiB,
    ),
    (
        "A100_PCIe_80GBx{}",
        "A100-PCIe-80GBx{}",
        _EPYC_OR_ANY_X86,
        _G.A100_PCIe_80GB,
        [1, 8],
        30,
        _GiB,
    ),
    (
        "A100_PCIe_80GB_ARMx{}",
        "A100-PCIe-80GB_aarch64x{}",
        _C.Neoverse_N1_ARM.value,
        _G.A100_PCIe_80GB,
        [1, 2, 4],
        30,
        _GiB,
    ),
    (
        "A100_PCIe_40GB_MIG_{}x1g_5gb",
        "A100-PCIe-MIG_{}x1g.5gb",
        _C.AMD_EPYC_7742.value,
        _M.A100_PCIe_40GB_1GPC,
        [1],
        1,
        _TiB,
    ),
    (
        "A100_PCIe_80GB_MIG_{}x1g_10gb",
        "A100-PCIe-80GB-MIG_{}x1g.10gb",
        _C.AMD_EPYC_7742.value,
        _M.A100_PCIe_80GB_1GPC,
        [1],
        1,
        _TB,
    ),
    (
        "A100_SXM4_40GBx{}",
        "DGX-A100_A100-SXM4-40GBx{}",
        _EPYC_OR_ANY_X86,
        _G.A100_SXM4_40GB,
        [1, 8],
        30,
        _GiB,
    ),
    (
        "A100_SXM_80GBx{}",
        "DGX-A100_A100-SXM-80GBx{}",
        _EPYC_OR_ANY_X86,
        _G.A100_SXM_80GB,
        [1, 8],
        30,
        _GiB,
    ),
    (
        "A100_SXM4_40GB_MIG_{}x1g_5gb",
        "DGX-A100_A100-SXM4-40GB-MIG_{}x1g.5gb",
        _C.AMD_EPYC_7742.value,
        _M.A100_SXM4_40GB_1GPC,
        [1],
        1,
        _TiB,
    ),
    (
        "A100_SXM_80GB_MIG_{}x1g_10gb",
        "DGX-A100_A100-SXM-80GB-MIG_{}x1g.10gb",
        _C.AMD_EPYC_7742.value,
        _M.A100_SXM_80GB_1GPC,
        [1],
        1,
        _TiB,
    ),
    ("A10x{}", "A10x{}", _C.AMD_EPYC_7742.value, _G.A10, [1, 8], 0.9, _TiB),
    ("A30x{}", "A30x{}", _C.AMD_EPYC_7742.value, _G.A30, [1, 8], 0.5, _TiB),
    ("A2x{}", "A2x{}", MATCH_ANY, _G.A2, [1, 2], 100, _GiB),
    ("A30_MIG_{}x1g_6gb", "A30-MIG_{}x1g.6gb", _C.AMD_EPYC_7742.value, _M.A30_1GPC, [1], 0.5, _TiB),
)
for _name, _id, _cpu, _acc, _counts, _mem, _unit in _AMPERE:
    add_systems(_name, _id, _cpu, _acc.value, _counts, Memory(_mem, _unit))
# Turing
add_systems(
    "T4x{}",
    "T4x{}",
    CPU(MATCH_ANY, CPUArchitecture.x86_64, MATCH_ANY, MATCH_ANY),
    _G.T4.value,
    [1, 8, 20],
    Memory(32, _GiB),
)

# Custom systems (add_custom_system.py's custom_list.py), after NVIDIA's
_custom_definition_path = os.environ.get("MLPINF_CUSTOM_DEFINITION_PATH", None)
if _custom_definition_path is None:
    if importlib.util.find_spec("code.common.systems.custom_list") is not None:
        from code.common.systems.custom_list import custom_systems

        _system_confs.update(custom_systems)
elif not os.path.exists(_custom_definition_path):
    raise FileNotFoundError(
        f"MLPINF_CUSTOM_DEFINITION_PATH {_custom_definition_path} does not exist."
    )
else:
    sys.path.insert(0, _custom_definition_path)
    try:
        if importlib.util.find_spec("custom_systems.custom_list") is not None:
            _system_confs.update(
                importlib.import_module("custom_systems.custom_list").custom_systems
            )
    finally:
        sys.path.remove(_custom_definition_path)

KnownSystem = MatchableEnum("KnownSystem", _system_confs)

_deprecated_systems = {}
add_systems(
    "A100_PCIe_40GBx{}",
    "A100-PCIex{}",
    _EPYC_OR_ANY_X86,
    _G.A100_PCIe_40GB.value,
    [1, 8],
    Memory(30, _GiB),
    target=_deprecated_systems,
)
add_systems(
    "A100_PCIe_80GB_MIG_{}x1g_10gb",
    "A100-PCIe-80GB-MIG_{}x1g.10gb",
    _C.AMD_EPYC_7742.value,
    _M.A100_PCIe_80GB_1GPC.value,
    [7, 56],
    Memory(1, _TB),
    target=_deprecated_systems,
)
DeprecatedSystem = MatchableEnum("DeprecatedSystem", _deprecated_systems)


def match_known_system(sys_conf):
    """The KnownSystem member ``sys_conf`` matches first (its id set from the member's), or
    None."""
    match = KnownSystem.get_first_match(sys_conf)
    if match is None:
        old = DeprecatedSystem.get_first_match(sys_conf)
        if old is not None:
            logging.warning(
                f"Detected system is a deprecated system, and is no longer supported: {old}"
            )
        return None
    sys_conf.set_id(match.value.system_id)
    return match


DETECTED_SYSTEM = SystemConfiguration.detect()
MATCHED_SYSTEM = match_known_system(DETECTED_SYSTEM)


def _default_on_matched(f):
    def _inner(cls, v=MATCHED_SYSTEM):
        if v is None:
            return False
        if type(v) is SystemConfiguration:
            v = match_known_system(v)
        elif type(v) is not KnownSystem:
            raise TypeError(f"Cannot classify system of object type {type(v)}")
        return f(cls, v)

    return _inner


def _named(*names):
    return [KnownSystem[n] for n in names if n in KnownSystem.__members__]


class SystemClassifications:
    """Predicates on a KnownSystem (MATCHED_SYSTEM by default)."""

    @classmethod
    @_default_on_matched
    def is_hopper(cls, sys):
        return sys.value.get_compute_sm() in [90]

    @classmethod
    @_default_on_matched
    def is_ada(cls, sys):
        return sys.value.get_compute_sm() in [89]

    @classmethod
    @_default_on_matched
    def is_ampere(cls, sys):
        return sys.value.get_compute_sm() in [80, 86, 87, 89]

    @classmethod
    @_default_on_matched
    def is_aarch64(cls, sys):
        return sys.value.host_cpu_conf.get_architecture() == CPUArchitecture.aarch64

    @classmethod
    @_default_on_matched
    def is_soc(cls, sys):
        return False

    @classmethod
    @_default_on_matched
    def start_from_device_enabled(cls, sys):
        return sys in _named(
            "H200_SXM_141GB_CTSx1",
            "H200_SXM_141GB_CTSx8",
            "H200_SXM_141GBx1",
            "H200_SXM_141GBx8",
            "H100_SXM_80GBx1",
            "H100_SXM_80GBx8",
            "A100_SXM_80GBx1",
            "A100_SXM_80GBx8",
            "A100_SXM_80GB_MIG_1x1g_10gb",
            "A100_SXM4_40GBx1",
            "A100_SXM4_40GBx8",
            "A100_SXM4_40GB_MIG_1x1g_5gb",
            "GH200_96GB_ARMx1",
            "GH200_144GB_ARMx1",
            "GH200_144GB_ARMx2",
        )

    @classmethod
    @_default_on_matched
    def end_on_device_enabled(cls, sys):
        return sys in _named(
            "A100_SXM_80GBx1",
            "A100_SXM_80GBx8",
            "A100_SXM_80GB_MIG_1x1g_10gb",
            "A100_SXM4_40GBx1",
            "A100_SXM4_40GBx8",
            "A100_SXM4_40GB_MIG_1x1g_5gb",
            "GH200_96GB_ARMx1",
        )

    @classmethod
    @_default_on_matched
    def gpu_based(cls, sys):
        conf = sys.value.accelerator_conf
        return conf.num_gpus() + conf.num_migs() > 0

    @classmethod
    @_default_on_matched
    def multi_gpu(cls, sys):
        conf = sys.value.accelerator_conf
        return conf.num_gpus() + conf.num_migs() > 1
