# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# constants.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: the same names, values and matching rules (names
# compared without case, aliases, regex patterns), written anew. The real file imports TensorRT
# unless OUTSIDE_MLPINF_ENV is set; the stand-in has no TensorRT.
"""Names of MLPerf Inference benchmarks, scenarios, actions... (stand-in)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from enum import Enum, unique

VERSION = "v1.1"


@dataclass(eq=False, frozen=True)
class AliasedName:
    """A name with equivalent aliases and regex patterns (compared without case)."""

    name: str | None
    aliases: tuple = ()
    patterns: tuple = ()

    def __str__(self):
        return self.name

    def __hash__(self):
        return hash(None if self.name is None else self.name.lower())

    def __eq__(self, other):
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
            if low == self.name.lower() or low in {a.lower() for a in self.aliases}:
                return True
            return any(p.fullmatch(other) for p in self.patterns)
        return False


class AliasedNameEnum(Enum):
    """An Enum of AliasedNames: a member equals its value's name or aliases."""

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

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self is other
        return self.value == other

    def __hash__(self):
        return hash(self.value)

    def valstr(self):
        return str(self.value)


@unique
class Benchmark(AliasedNameEnum):
    BERT = AliasedName("bert")
    DLRM = AliasedName("dlrm")
    RNNT = AliasedName("rnnt", ("rnn-t",))
    ResNet50 = AliasedName("resnet50", ("resnet",))
    SSDMobileNet = AliasedName("ssd-mobilenet", ("ssdmobilenet", "ssd-small"))
    SSDResNet34 = AliasedName("ssd-resnet34", ("ssdresnet34", "ssd-large"))
    UNET3D = AliasedName("3d-unet", ("3dunet", "unet"))


@unique
class Scenario(AliasedNameEnum):
    Offline = AliasedName("Offline")
    Server = AliasedName("Server")
    SingleStream = AliasedName("SingleStream", ("single-stream", "single_stream"))


@unique
class Action(AliasedNameEnum):
    GenerateConfFiles = AliasedName("generate_conf_files")
    GenerateEngines = AliasedName("generate_engines")
    Calibrate = AliasedName("calibrate")
    RunHarness = AliasedName("run_harness")
    RunCPUHarness = AliasedName("run_cpu_harness")
    RunAuditHarness = AliasedName("run_audit_harness")
    RunCPUAuditHarness = AliasedName("run_cpu_audit_harness")
    RunAuditVerify = AliasedName("run_audit_verification")
    RunCPUAuditVerify = AliasedName("run_cpu_audit_verification")


_SXM_DEVICE_IDS = (
    "A100-SXM-80GBx1",
    "A100-SXM-80GBx8",
    "A100-SXM-80GB-MIG_1x1g.10gb",
    "A100-SXM-80GB-MIG_28x1g.10gb",
    "A100-SXM-80GB-MIG_56x1g.10gb",
    "A100-SXM4-40GBx1",
    "A100-SXM4-40GBx8",
    "A100-SXM4-40GB-MIG_1x1g.5gb",
)


@unique
class AdHocSystemClassification(AliasedNameEnum):
    Xavier = AliasedName("xavier", ("AGX_Xavier", "Xavier_NX"))
    StartFromDeviceEnabled = AliasedName("start_from_device_enabled", _SXM_DEVICE_IDS)
    EndOnDeviceEnabled = AliasedName("end_on_device_enabled", _SXM_DEVICE_IDS)
    IntelOpenVino = AliasedName(
        "intel_openvino", ("Triton_CPU_2S_6258Rx1", "Triton_CPU_4S_8380Hx1")
    )
    GPUBased = AliasedName("gpu_based", patterns=(re.compile(r"(?!Triton_CPU_).*"),))
    CatchAll = AliasedName("CATCH_ALL", patterns=(re.compile(r".*"),))  # keep last


@unique
class Precision(AliasedNameEnum):
    INT8 = AliasedName("int8")
    FP16 = AliasedName("fp16")
    FP32 = AliasedName("fp32")


@unique
class InputFormats(AliasedNameEnum):
    Linear = AliasedName("linear")
    CHW4 = AliasedName("chw4")
    DHWC8 = AliasedName("dhwc8")
    CDHW32 = AliasedName("cdhw32")


@unique
class HarnessType(AliasedNameEnum):
    LWIS = AliasedName("lwis")
    Custom = AliasedName("custom")
    Triton = AliasedName("triton")
    HeteroMIG = AliasedName("hetero")


@unique
class AccuracyTarget(Enum):
    k_99 = 0.99
    k_99_9 = 0.999


@unique
class PowerSetting(AliasedNameEnum):
    MaxP = AliasedName("MaxP")
    MaxQ = AliasedName("MaxQ")


@unique
class CPUArch(AliasedNameEnum):
    x86_64 = AliasedName("x86_64")
    aarch64 = AliasedName("aarch64")


@dataclass(frozen=True)
class WorkloadSetting:
    """Harness, accuracy target and power setting of a workload (a config's registry key)."""

    harness_type: HarnessType = HarnessType.Custom
    accuracy_target: AccuracyTarget = AccuracyTarget.k_99
    power_setting: PowerSetting = PowerSetting.MaxP

    def __str__(self):
        return f"WorkloadSetting({self.harness_type}, {self.accuracy_target}, {self.power_setting})"

    def shortname(self):
        """``lwis_k_99_MaxP``: the harness's config_ver and engine name part."""
        return "_".join(
            (
                self.harness_type.value.name,
                self.accuracy_target.name,
                self.power_setting.value.name,
            )
        )

    def as_dict(self):
        return asdict(self)


G_HIGH_ACC_ENABLED_BENCHMARKS = (Benchmark.BERT, Benchmark.DLRM, Benchmark.UNET3D)
G_DATACENTER_BENCHMARKS = (
    Benchmark.BERT,
    Benchmark.DLRM,
    Benchmark.RNNT,
    Benchmark.ResNet50,
    Benchmark.SSDResNet34,
    Benchmark.UNET3D,
)
G_EDGE_BENCHMARKS = (
    Benchmark.BERT,
    Benchmark.RNNT,
    Benchmark.ResNet50,
    Benchmark.SSDMobileNet,
    Benchmark.SSDResNet34,
    Benchmark.UNET3D,
)
G_DEFAULT_HARNESS_TYPES = {
    Benchmark.BERT: HarnessType.Custom,
    Benchmark.DLRM: HarnessType.Custom,
    Benchmark.RNNT: HarnessType.Custom,
    Benchmark.ResNet50: HarnessType.LWIS,
    Benchmark.SSDMobileNet: HarnessType.LWIS,
    Benchmark.SSDResNet34: HarnessType.LWIS,
    Benchmark.UNET3D: HarnessType.LWIS,
}


def config_ver_to_workload_setting(benchmark, config_ver):
    """A legacy ``--config_ver`` (``default``, ``high_accuracy``, ``triton``, ``maxq``...) as
    a WorkloadSetting: substrings pick the harness, accuracy target and power setting."""
    harness = G_DEFAULT_HARNESS_TYPES[benchmark]
    if "openvino" in config_ver or "triton" in config_ver:
        harness = HarnessType.Triton
    elif "hetero" in config_ver:
        harness = HarnessType.HeteroMIG
    accuracy = AccuracyTarget.k_99_9 if "high_accuracy" in config_ver else AccuracyTarget.k_99
    power = PowerSetting.MaxQ if "maxq" in config_ver else PowerSetting.MaxP
    return WorkloadSetting(harness_type=harness, accuracy_target=accuracy, power_setting=power)
