# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# systems/systems.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: SystemConfiguration(host_cpu_conf, host_mem_conf,
# accelerator_conf, numa_conf=None, system_id=None); detect() from lscpu, /proc/meminfo and
# nvidia-smi; matches() compares CPU, memory and accelerators (not NUMA); get_id / set_id; the
# submission name "<system id>_TRT[_Triton|_HeteroMultiUse][_MaxQ]". Written anew.
# STAND-IN difference: NUMA is not detected (the real code reads `nvidia-smi topo -m`, numactl
# and taskset on multi-GPU systems); numa_conf stays None.
"""A whole system's description (stand-in)."""

from __future__ import annotations

import textwrap
from code.common import logging
from code.common.constants import HarnessType, PowerSetting
from code.common.systems.accelerator import GPU, MIG, AcceleratorConfiguration
from code.common.systems.base import Hardware
from code.common.systems.cpu import CPUConfiguration
from code.common.systems.memory import MemoryConfiguration
from dataclasses import dataclass


@dataclass(eq=True, frozen=True)
class SystemConfiguration(Hardware):
    host_cpu_conf: CPUConfiguration
    host_mem_conf: MemoryConfiguration
    accelerator_conf: AcceleratorConfiguration
    numa_conf: object | None = None
    system_id: str | None = None

    @classmethod
    def detect(cls, no_auto_numa=False):
        return SystemConfiguration(
            CPUConfiguration.detect(),
            MemoryConfiguration.detect(),
            AcceleratorConfiguration.detect(),
            numa_conf=None,
        )

    def __hash__(self) -> int:
        return (
            hash(self.host_cpu_conf)
            + 13 * hash(self.host_mem_conf)
            + 29 * hash(self.accelerator_conf)
            + 37 * hash(self.numa_conf)
        )

    def get_id(self):
        return self.system_id

    def set_id(self, s):
        object.__setattr__(self, "system_id", s)

    def get_compute_sm(self):
        sm = None
        for accelerator in self.accelerator_conf.layout:
            if accelerator.__class__ in (MIG, GPU):
                if sm is None:
                    sm = accelerator.compute_sm
                elif accelerator.compute_sm != sm:
                    logging.warning("Multiple accelerators detected, using architecture of first.")
        return sm

    def matches(self, other) -> bool:
        if other.__class__ != self.__class__:
            return NotImplemented
        return (
            self.host_cpu_conf == other.host_cpu_conf
            and self.host_mem_conf == other.host_mem_conf
            and self.accelerator_conf == other.accelerator_conf
        )

    def __eq__(self, o) -> bool:
        return self.matches(o)

    def pretty_string(self) -> str:
        def show(x):
            return x.pretty_string() if hasattr(x, "pretty_string") else str(x)

        lines = [
            f"System ID (Optional Alias): {self.system_id}",
            show(self.host_cpu_conf),
            show(self.host_mem_conf),
            show(self.accelerator_conf),
            f"NUMA Config String: {self.numa_conf}",
        ]
        return "SystemConfiguration:\n" + textwrap.indent("\n".join(lines), " " * 4)

    def get_full_name(self, workload_setting, trt_version=""):
        if self.system_id is None:
            return None
        name = self.system_id
        if type(self.accelerator_conf.get_primary_accelerator()) in (GPU, MIG):
            name += f"_TRT{trt_version}"
        if workload_setting.harness_type == HarnessType.Triton:
            name += "_Triton"
        elif workload_setting.harness_type == HarnessType.HeteroMIG:
            name += "_HeteroMultiUse"
        if workload_setting.power_setting == PowerSetting.MaxQ:
            name += "_MaxQ"
        return name
