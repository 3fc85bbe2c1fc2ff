# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# systems/cpu.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: the host CPU from `lscpu` ("Model name",
# "Architecture", "Core(s) per socket", "Thread(s) per core", "Socket(s)"), CPU(name,
# architecture, core_count, threads_per_core) and CPUConfiguration(layout={CPU: sockets}) with the
# real matching rules. Written anew.
"""Host CPU detection (stand-in)."""

from __future__ import annotations

import re
import textwrap
from code.common import run_command
from code.common.constants import AliasedName, CPUArchitecture
from code.common.systems.base import Hardware, Matchable, layouts_match
from code.common.systems.info_source import InfoSource
from dataclasses import dataclass

CPU_INFO_COMMAND = "lscpu"


def get_cpu_info():
    """``lscpu``'s "field: value" lines as one dict, in a list."""
    fields = {}
    for line in run_command(CPU_INFO_COMMAND, get_output=True, tee=False, verbose=False):
        parts = re.split(r":\s*", line)
        if len(parts) == 2:
            fields[parts[0]] = parts[1]
    return [fields]


CPU_INFO_SOURCE = InfoSource(get_cpu_info)


@dataclass(eq=True, frozen=True)
class CPU(Hardware):
    name: Matchable | str | AliasedName
    architecture: Matchable | CPUArchitecture
    core_count: Matchable | int
    threads_per_core: Matchable | int

    @classmethod
    def detect(cls):
        f = next(CPU_INFO_SOURCE)
        arch = f.get("Architecture", "UnknownArch")
        return CPU(
            f.get("Model name", arch + "_" + f.get("Model", "UnknownNum")),
            CPUArchitecture(arch),
            int(f.get("Core(s) per socket", f.get("Core(s) per cluster", "0"))),
            int(f.get("Thread(s) per core", "1")),
        )

    def identifiers(self):
        return (self.name, self.architecture, self.core_count, self.threads_per_core)

    def __eq__(self, o) -> bool:
        return self.matches(o)

    def pretty_string(self) -> str:
        return f"CPU ({self.architecture}): {self.name}\n" + textwrap.indent(
            f"{self.core_count} Cores, {self.threads_per_core} Threads/Core", " " * 4
        )


@dataclass(eq=True, frozen=True)
class CPUConfiguration(Hardware):
    layout: dict[CPU, int]

    @classmethod
    def detect(cls):
        CPU_INFO_SOURCE.reset()
        cpus = []
        while CPU_INFO_SOURCE.has_next():
            cpus.append(CPU.detect())
        layout = {}
        for i, f in enumerate(CPU_INFO_SOURCE):
            layout[cpus[i]] = int(f.get("Socket(s)", 1).replace("-", "1"))
        return CPUConfiguration(layout)

    def get_primary_cpu(self):
        return next(iter(self.layout), None)

    def get_architecture(self):
        cpu = self.get_primary_cpu()
        return None if cpu is None else cpu.architecture

    def chip_count(self):
        return sum(self.layout.values())

    def matches(self, other) -> bool:
        if other.__class__ != self.__class__:
            return NotImplemented
        return layouts_match(self.layout, other.layout)

    def __eq__(self, o) -> bool:
        return self.matches(o)

    def pretty_string(self) -> str:
        lines = [f"{n}x " + c.pretty_string() for c, n in self.layout.items()]
        return "CPUConfiguration:\n" + textwrap.indent("\n".join(lines), " " * 4)
