# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# systems/memory.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: host memory from /proc/meminfo's MemTotal (its "kB"
# read as ByteSuffix.KB, 1000 bytes, as the real code does) and MemoryConfiguration, equal within
# comparison_tolerance (5 %). Written anew.
"""Host memory detection (stand-in)."""

from __future__ import annotations

import math
import re
from code.common.constants import ByteSuffix, Memory
from code.common.systems.base import Hardware
from code.common.systems.info_source import InfoSource
from dataclasses import dataclass

SYS_MEMINFO_FILE = "/proc/meminfo"


def get_mem_info(sys_meminfo_file=SYS_MEMINFO_FILE):
    fields = {}
    with open(sys_meminfo_file) as f:
        for line in f.read().split("\n"):
            parts = re.split(r":\s*", line)
            if len(parts) == 2:
                fields[parts[0]] = parts[1]
    return [fields]


MEM_INFO_SOURCE = InfoSource(get_mem_info)


@dataclass(eq=True, frozen=True)
class MemoryConfiguration(Hardware):
    host_memory_capacity: Memory
    comparison_tolerance: float = 0.05

    @classmethod
    def detect(cls):
        MEM_INFO_SOURCE.reset()
        quantity, suffix = next(MEM_INFO_SOURCE)["MemTotal"].split()
        mem = Memory(float(quantity), ByteSuffix[suffix.upper()])
        return MemoryConfiguration(Memory.to_1000_base(mem.to_bytes()))

    def matches(self, other) -> bool:
        if other.__class__ != self.__class__:
            return NotImplemented
        return math.isclose(
            self.host_memory_capacity.to_bytes(),
            other.host_memory_capacity.to_bytes(),
            rel_tol=self.comparison_tolerance,
        )

    def __eq__(self, o) -> bool:
        return self.matches(o)

    def pretty_string(self) -> str:
        mem = self.host_memory_capacity.pretty_string()
        return f"MemoryConfiguration: {mem} (Matching Tolerance: {self.comparison_tolerance})"
