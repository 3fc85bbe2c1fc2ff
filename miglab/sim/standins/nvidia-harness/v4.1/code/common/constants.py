# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# constants.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: the same names and values (AliasedName with
# case-insensitive aliases, the AliasedNameEnum enums Benchmark / Scenario / Action / HarnessType /
# PowerSetting / CPUArchitecture / AcceleratorType, AccuracyTarget, ByteSuffix and Memory with
# its byte arithmetic, WorkloadSetting and its shortname, the default harness of each benchmark),
# written anew; only what the stand-in uses.
"""Harness constants (stand-in)."""

from __future__ import annotations

import math
import re
from code.common import __MLPERF_INF_VERSION__
from dataclasses import asdict, dataclass, field
from enum import Enum, unique

VERSION = __MLPERF_INF_VERSION__

# "<number>[ ]<unit>": 12.5 KB, 15TB (no exponent notation)
QUANTITY_UNIT_FORMAT = re.compile(r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)) ?(\S+)")


@unique
class ByteSuffix(Enum):
    B = (1, 0)
    KiB = (1024, 1)
    MiB = (1024, 2)
    GiB = (1024, 3)
    TiB = (1024, 4)
    KB = (1000, 1)
    MB = (1000, 2)
    GB = (1000, 3)
    TB = (1000, 4)

    def to_bytes(self):
        base, power = self.value
        return base**power


@dataclass(eq=True, frozen=True)
class Memory:
    """An amount of memory: ``quantity`` units of ``byte_suffix``; equal when the bytes are."""

    quantity: float
    byte_suffix: ByteSuffix
    _num_bytes: int = field(init=False)

    def __post_init__(self):
        n = self.quantity * self.byte_suffix.to_bytes()
        frac = n - math.trunc(n)
        if self.byte_suffix.value[0] in (1, 1000) and not (
            math.isclose(1 + frac, 1, rel_tol=1e-3) or math.isclose(1, frac, rel_tol=1e-3)
        ):
            raise ValueError(
                f"Memory({self.quantity}, {self.byte_suffix}) converts to {n} bytes, "
                "which is not an integer"
            )
        object.__setattr__(self, "_num_bytes", round(n))

    @classmethod
    def from_string(cls, s):
        m = QUANTITY_UNIT_FORMAT.fullmatch(s)
        if m is None:
            raise ValueError(f"Cannot convert string '{s}' to a Memory object. Invalid format.")
        if m.group(2) not in ByteSuffix.__members__:
            raise ValueError(f"Cannot convert string '{s}' to a Memory object. Invalid suffix.")
        quantity = float(m.group(1))
        if quantity < 0:
            raise ValueError(f"Cannot convert string '{s}' to a Memory object. Negative quantity.")
        return Memory(quantity, ByteSuffix[m.group(2)])

    def __eq__(self, o):
        if o.__class__ is not Memory:
            return NotImplemented
        return self._num_bytes == o._num_bytes

    def __hash__(self):
        return hash(self._num_bytes)

    @classmethod
    def _to_base(cls, base, n):
        top = float("inf")
        if isinstance(base, ByteSuffix):
            base, top = base.value
        if n < base:
            return Memory(n, ByteSuffix.B)
        power = 0
        while n >= base and power < top:
            power += 1
            n /= base
        return Memory(n, ByteSuffix((base, power)))

    @classmethod
    def to_1000_base(cls, n):
        return cls._to_base(1000, n)

    @classmethod
    def to_1024_base(cls, n):
        return cls._to_base(1024, n)

    def convert(self, byte_suffix):
        return Memory._to_base(byte_suffix, self._num_bytes)

    def to_bytes(self):
        return self._num_bytes

    def pretty_string(self) -> str:
        return f"{self.quantity:.2f} {self.byte_suffix.name}"


@dataclass(eq=False, frozen=True)
class AliasedName:
    """A name with aliases (and regex patterns) that compare equal to it, case-insensitively."""

    name: str | None
    aliases: tuple[str, ...] = tuple()
    patterns: tuple[re.Pattern, ...] = tuple()

    def __str__(self):
        return self.name

    def __hash__(self):
        return hash(None) if self.name is None else hash(self.name.lower())

    def __add__(self, other):
        """The name and every alias with ``other`` (a str) appended."""
        if other.__class__ is AliasedName:
            raise Exception(
                "Concatenating AliasedNames is ambiguous. One parameter should be a str."
            )
        if other.__class__ is not str:
            return NotImplemented
        if self.patterns:
            raise Exception("Cannot concatenate AliasedName with regex patterns.")
        return AliasedName(self.name + other, tuple(a + other for a in self.aliases))

    def __eq__(self, other) -> bool:
        if other is None:
            return self.name is None
        if isinstance(other, AliasedName):
            if self.name is None or other.name is None:
                return self.name == other.name
            return self.name.lower() == other.name.lower()
        if isinstance(other, str):
            if self.name is None:
                return False
            low = other.lower()
            if low == self.name.lower() or low in (a.lower() for a in self.aliases):
                return True
            return any(p.fullmatch(other) for p in self.patterns)
        return NotImplemented


class AliasedNameEnum(Enum):
    """Enum of AliasedName values; a member equals its value's names."""

    @classmethod
    def as_aliased_names(cls):
        return [m.value for m in cls]

    @classmethod
    def as_strings(cls):
        return [str(v) for v in cls.as_aliased_names()]

    @classmethod
    def get_match(cls, name):
        for member in cls:
            if member.value == name or member == name:
                return member
        return None

    def __eq__(self, other) -> bool:
        if self.__class__ is other.__class__:
            return self is other
        return self.value == other

    def __hash__(self) -> int:
        return hash(self.value)

    def valstr(self) -> str:
        return str(self.value)


@unique
class Benchmark(AliasedNameEnum):
    BERT = AliasedName("bert", ("bert-99", "bert-99.9"))
    DLRMv2 = AliasedName(
        "dlrm-v2", ("dlrm_v2", "dlrmv2", "dcnv2", "dlrm_dcn", "dlrm-v2-99", "dlrm-v2-99.9")
    )
    GPTJ = AliasedName("gptj", ("gptj6b", "gpt-j", "gptj-99", "gptj-99.9"))
    LLAMA2 = AliasedName(
        "llama2-70b", ("llama2", "llama-v2", "llama-v2-70b", "llama2-70b-99", "llama2-70b-99.9")
    )
    Mixtral8x7B = AliasedName(
        "mixtral-8x7b", ("mixtral", "mixtral8x7b", "moe", "mixtral-8x7b-99", "mixtral-8x7b-99.9")
    )
    ResNet50 = AliasedName("resnet50", ("resnet",))
    Retinanet = AliasedName("retinanet", ("ssd-retinanet", "resnext", "ssd-resnext"))
    SDXL = AliasedName(
        "stable-diffusion-xl", ("sdxl-base", "diffusion", "stable-diffusion", "sdxl")
    )
    UNET3D = AliasedName(
        "3d-unet",
        ("3dunet", "unet", "3d-unet-kits", "3d-unet-kits19", "3d-unet-99", "3d-unet-99.9"),
    )


@unique
class Scenario(AliasedNameEnum):
    Offline = AliasedName("Offline")
    Server = AliasedName("Server")
    SingleStream = AliasedName("SingleStream", ("single-stream", "single_stream"))
    MultiStream = AliasedName("MultiStream", ("multi-stream", "multi_stream"))


@unique
class Action(AliasedNameEnum):
    GenerateConfFiles = AliasedName("generate_conf_files")
    GenerateEngines = AliasedName("generate_engines")
    Calibrate = AliasedName("calibrate")
    RunHarness = AliasedName("run_harness")
    RunAuditHarness = AliasedName("run_audit_harness")


@unique
class CPUArchitecture(AliasedNameEnum):
    x86_64 = AliasedName("x86_64")
    aarch64 = AliasedName("aarch64")


@unique
class AcceleratorType(AliasedNameEnum):
    Discrete = AliasedName("Discrete")
    Integrated = AliasedName("Integrated")


@unique
class HarnessType(AliasedNameEnum):
    LWIS = AliasedName("lwis")
    Custom = AliasedName("custom")
    Triton = AliasedName("triton")
    HeteroMIG = AliasedName("hetero")
    TritonUnified = AliasedName("triton_unified")


@unique
class AccuracyTarget(Enum):
    k_99 = 0.99
    k_99_9 = 0.999


@unique
class PowerSetting(AliasedNameEnum):
    MaxP = AliasedName("MaxP")
    MaxQ = AliasedName("MaxQ")


@dataclass(frozen=True)
class WorkloadSetting:
    harness_type: HarnessType = HarnessType.Custom
    accuracy_target: AccuracyTarget = AccuracyTarget.k_99
    power_setting: PowerSetting = PowerSetting.MaxP

    def __str__(self) -> str:
        return f"WorkloadSetting({self.harness_type}, {self.accuracy_target}, {self.power_setting})"

    def shortname(self) -> str:
        h, a, p = self.harness_type, self.accuracy_target, self.power_setting
        return f"{h.value.name}_{a.name}_{p.value.name}"

    def as_dict(self):
        return asdict(self)


G_HIGH_ACC_ENABLED_BENCHMARKS = (
    Benchmark.BERT,
    Benchmark.DLRMv2,
    Benchmark.GPTJ,
    Benchmark.LLAMA2,
    Benchmark.UNET3D,
)

G_DEFAULT_HARNESS_TYPES = {
    Benchmark.BERT: HarnessType.Custom,
    Benchmark.GPTJ: HarnessType.Custom,
    Benchmark.LLAMA2: HarnessType.Custom,
    Benchmark.Mixtral8x7B: HarnessType.Custom,
    Benchmark.DLRMv2: HarnessType.Custom,
    Benchmark.ResNet50: HarnessType.LWIS,
    Benchmark.Retinanet: HarnessType.LWIS,
    Benchmark.UNET3D: HarnessType.Custom,
    Benchmark.SDXL: HarnessType.Custom,
}
