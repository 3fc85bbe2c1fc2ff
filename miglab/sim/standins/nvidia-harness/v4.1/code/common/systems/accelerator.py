# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# systems/accelerator.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183, written anew with the real facts:
#   - GPUs: `CUDA_VISIBLE_ORDER=PCI_BUS_ID nvidia-smi --query-gpu=gpu_name,pci.device_id,uuid,
#     memory.total,power.limit,power.max_limit,mig.mode.current --format=csv,noheader`; a line
#     with another number of fields is "Internal: Malformed nvidia-smi output"; when any GPU has
#     MIG mode "Enabled", the GPU list is emptied (kept only for the MIG detection, which reads the
#     parent's PCI id, power and SM from it); memory.total "<n> MiB" -> Memory in 1024 units;
#     power.max_limit "[N/A]" -> None;
#   - MIG devices: `nvidia-smi -L`, "GPU <i>: <name> (UUID: GPU-...)" lines and under them
#     "  MIG <g>g.<gb>gb  Device <d>: (UUID: MIG-...)" lines (the real regexes; any other line
#     under a GPU breaks the parser, as in the real code), each a MIG(name="<GPU name>
#     MIG-<g>g.<gb>gb", vram=<gb> GiB, the parent's PCI id / max power / SM, num_gpcs=<g>);
#   - GPU.matches: when both sides have a PCI id (str / AliasedName) the name is not compared;
#   - CUDA_VISIBLE_DEVICES: GPU indices and GPU-/MIG- UUIDs select devices.
# STAND-IN difference: the compute capability, which the real code reads with cuda-python
# (cuDeviceGetAttribute), comes from `nvidia-smi --query-gpu=compute_cap` (what the real
# Makefile.const reads for SM), else from the board's PCI device id (a vGPU reports its board's).
"""GPU and MIG detection (stand-in)."""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from code.common import logging, run_command
from code.common.constants import AcceleratorType, AliasedName, ByteSuffix, Memory
from code.common.systems.base import Hardware, Matchable, layouts_match
from code.common.systems.info_source import InfoSource
from collections import defaultdict
from dataclasses import dataclass
from subprocess import CalledProcessError

SOC_MODEL_FILEPATH = "/sys/firmware/devicetree/base/model"
NV_GPU_INFO_COMMAND = "nvidia-smi"
NV_GPU_INFO_QUERY_FIELDS = (
    "gpu_name",
    "pci.device_id",
    "uuid",
    "memory.total",
    "power.limit",
    "power.max_limit",
    "mig.mode.current",
)
NVIDIA_SMI_GPU_REGEX = re.compile(r"GPU (\d+): ([\w\- ]+) \(UUID: (GPU-[0-9a-f\-]+)\)")
NVIDIA_SMI_MIG_REGEX = re.compile(
    r"\s+MIG\s+(\d+)g.(\d+)gb\s+Device\s+(\d+):\s+\(UUID:\s+(MIG-[0-9a-f\-]+)\)"
)
# compute capability by board PCI device id (the stand-in's replacement of cuda-python)
_SM_BY_DEVICE = {
    **dict.fromkeys(("2321", "2330", "2331", "2335", "2339", "233B", "233F", "2342", "2348"), 90),
    **dict.fromkeys(("26B5", "26B9", "27B8"), 89),
    **dict.fromkeys(("20B0", "20B2", "20B5", "20B7", "20BF", "20F1", "20F3", "2236", "25B6"), 80),
    **dict.fromkeys(("1EB8",), 75),
}


def get_accelerator_info(force_no_gpu_cmd=False):
    """{(gpu index, GPU uuid, GPU name): [(MIG device id, MIG uuid, gpcs, GB), ...]} from -L."""
    found = {}
    if force_no_gpu_cmd or shutil.which(NV_GPU_INFO_COMMAND) is None:
        return found
    try:
        lines = run_command(
            f"CUDA_VISIBLE_ORDER=PCI_BUS_ID {NV_GPU_INFO_COMMAND} -L",
            get_output=True,
            tee=False,
            verbose=False,
        )
    except CalledProcessError:
        logging.warning(
            "nvidia-smi command exists but failed to execute - Ignoring accelerator detection."
        )
        return found
    gpu = None
    for line in lines:
        g = NVIDIA_SMI_GPU_REGEX.match(line)
        if g:
            gpu = (int(g.group(1)), g.group(3), g.group(2))
            assert len(found) == gpu[0], f"GPU found out of order:\nf{lines}"
            found[gpu] = []
            continue
        assert gpu, f"MIG found without its parent GPU:\nf{lines}"
        m = NVIDIA_SMI_MIG_REGEX.match(line)
        device = int(m.group(3))  # a line that is no MIG line fails here, as in the real code
        assert len(found[gpu]) == device, f"MIG found out of order:\nf{lines}"
        found[gpu].append((device, m.group(4), int(m.group(1)), int(m.group(2))))
    return found


def _visible(instances, mig=False):
    """The instances CUDA_VISIBLE_DEVICES selects (all when unset), renumbered from 0."""
    wanted = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if not wanted or not instances:
        return instances
    key = "parent_gpu_index" if mig else "pci_index"
    picked, seen = [], set()
    for inst in instances:
        for d in wanted.split(","):
            if d.isnumeric():
                hit = int(d) == inst.get(key)
            elif d.startswith("GPU-"):
                hit = d == inst.get("parent_gpu_uuid" if mig else "uuid")
            elif d.startswith("MIG-"):
                hit = mig and d == inst.get("uuid")
            else:
                raise RuntimeError(f"Unexpected '{d}' from CUDA_VISIBLE_DEVICES: {wanted}'")
            if hit and inst.get("uuid") not in seen:
                picked.append(inst)
                seen.add(inst.get("uuid"))
    order = sorted({inst.get(key) for inst in picked})
    for inst in picked:
        inst[key] = order.index(inst[key])
    return sorted(picked, key=lambda i: (i.get("pci_index", 0), i.get("parent_gpu_index", 0)))


def get_compute_sm(device_index, pci_id=None):
    """The SM version of GPU ``device_index`` (90 for Hopper), None when unknown."""
    try:
        lines = run_command(
            f"{NV_GPU_INFO_COMMAND} --query-gpu=compute_cap --format=csv,noheader",
            get_output=True,
            tee=False,
            verbose=False,
        )
        caps = [ln.strip() for ln in lines if ln.strip()]
        if device_index < len(caps) and re.fullmatch(r"\d+\.\d+", caps[device_index]):
            return int(caps[device_index].replace(".", ""))
    except CalledProcessError:
        pass
    m = re.fullmatch(r"0x([0-9A-Fa-f]{4})10DE", str(pci_id or ""))
    return _SM_BY_DEVICE.get(m.group(1).upper()) if m else None


def get_gpu_info(mig_enabled=False, skip_cuda_devices_filter=False, force_no_gpu_cmd=False):
    """One dict per GPU (the query's fields, pci_index, compute_sm); none when nvidia-smi is
    missing or fails, and none (unless ``mig_enabled``) when a GPU has MIG mode Enabled."""
    info = []
    if os.path.exists(SOC_MODEL_FILEPATH):  # Jetson: not modelled by the stand-in
        return info
    if force_no_gpu_cmd or shutil.which(NV_GPU_INFO_COMMAND) is None:
        return info
    query = "--query-gpu=" + ",".join(NV_GPU_INFO_QUERY_FIELDS)
    cmd = f"CUDA_VISIBLE_ORDER=PCI_BUS_ID {NV_GPU_INFO_COMMAND} {query} --format=csv,noheader"
    try:
        lines = run_command(cmd, get_output=True, tee=False, verbose=False)
    except CalledProcessError:
        logging.warning("nvidia-smi command exists but failed to execute - Ignoring GPU detection.")
        return info
    rows = [[x.strip() for x in line.split(",")] for line in lines if len(line) > 0]
    index_of = {row[2]: i for i, row in enumerate(rows) if len(row) > 2}
    gpus, any_mig = [], False
    for row in rows:
        if len(row) != len(NV_GPU_INFO_QUERY_FIELDS):
            raise RuntimeError(f"Internal: Malformed {NV_GPU_INFO_COMMAND} output")
        gpu = dict(zip(NV_GPU_INFO_QUERY_FIELDS, row, strict=True))
        gpu["pci_index"] = index_of[row[2]]
        any_mig = any_mig or gpu["mig.mode.current"] == "Enabled"
        gpus.append(gpu)
    if any_mig:
        # MIG and whole GPUs are not used together: keep the MIG GPUs for get_mig_info, or none
        gpus = [g for g in gpus if g["mig.mode.current"] == "Enabled"] if mig_enabled else []
    info = gpus if skip_cuda_devices_filter else _visible(gpus)
    for gpu in info:
        index = 0 if (mig_enabled or gpu["mig.mode.current"] == "Enabled") else gpu["pci_index"]
        gpu["compute_sm"] = get_compute_sm(index, gpu["pci.device_id"])
    return info


def _power(value):
    if value is None or value == "[N/A]":
        return None
    return float(value.split()[0])


@dataclass(eq=True, frozen=True)
class Accelerator(Hardware):
    name: Matchable | str | AliasedName
    accelerator_type: Matchable | AcceleratorType


@dataclass(eq=True, frozen=True)
class GPU(Accelerator):
    vram: Matchable | Memory
    max_power_limit: Matchable | float
    pci_id: Matchable | AliasedName
    compute_sm: Matchable | int

    @classmethod
    def detect(cls):
        f = next(GPU_INFO_SOURCE)
        total = f["memory.total"]
        vram = None
        if total not in (None, "", "[N/A]", "[Insufficient Permissions]"):
            parts = total.split()
            assert len(parts) <= 2
            if len(parts) == 1:
                vram = Memory.to_1024_base(float(parts[0]))
            else:
                size = Memory(float(parts[0]), ByteSuffix[parts[1]])
                vram = Memory.to_1024_base(size.to_bytes())
        kind = AcceleratorType.Integrated if total is None else AcceleratorType.Discrete
        return GPU(
            f["gpu_name"],
            kind,
            vram,
            _power(f["power.max_limit"]),
            f["pci.device_id"],
            f["compute_sm"],
        )

    def identifiers(self):
        return (
            self.name,
            self.accelerator_type,
            self.vram,
            self.max_power_limit,
            self.pci_id,
            self.compute_sm,
        )

    def matches(self, other) -> bool:
        if other.__class__ != self.__class__:
            return NotImplemented
        mine, theirs = self.identifiers(), other.identifiers()
        # the name changes with the driver; a PCI id on both sides decides instead
        if all(type(x) in (str, AliasedName) for x in (mine[4], theirs[4])):
            return mine[1:] == theirs[1:]
        return mine == theirs

    def __eq__(self, o) -> bool:
        return self.matches(o)

    def pretty_string(self) -> str:
        vram = self.vram.pretty_string() if hasattr(self.vram, "pretty_string") else self.vram
        lines = [
            f"AcceleratorType: {getattr(self.accelerator_type, 'name', self.accelerator_type)}",
            f"SM Compute Capability: {self.compute_sm}",
            f"Memory Capacity: {vram}",
            f"Max Power Limit: {self.max_power_limit} W",
        ]
        return f"GPU ({self.pci_id}): {self.name}\n" + textwrap.indent("\n".join(lines), " " * 4)


def get_mig_info(force_no_gpu_cmd=False):
    """One dict per MIG device of ``nvidia-smi -L``, with its parent GPU's PCI id, max power
    limit and SM."""
    info = []
    if force_no_gpu_cmd or shutil.which(NV_GPU_INFO_COMMAND) is None:
        return info
    parents = {}
    for gpu in get_gpu_info(mig_enabled=True, skip_cuda_devices_filter=True):
        parents[gpu["uuid"]] = {
            "pci_id": gpu["pci.device_id"],
            "max_power_limit": _power(gpu["power.max_limit"]),
            "compute_sm": gpu["compute_sm"],
        }
    ACCELERATOR_INFO_SOURCE.reset()
    for (index, uuid, name), migs in ACCELERATOR_INFO_SOURCE:
        for device, mig_uuid, gpcs, gb in migs:
            item = {
                "device_id": device,
                "uuid": mig_uuid,
                "num_gpcs": gpcs,
                "mem_gb": gb,
                "parent_gpu_index": index,
                "parent_gpu_name": name,
                "parent_gpu_uuid": uuid,
            }
            for k, v in parents[uuid].items():  # KeyError for a GPU not in the query, as real
                item[f"parent_gpu_{k}"] = v
            info.append(item)
    return _visible(info, mig=True)


@dataclass(eq=True, frozen=True)
class MIG(GPU):
    num_gpcs: Matchable | int

    @classmethod
    def detect(cls):
        f = next(MIG_INFO_SOURCE)
        gpcs, gb = f["num_gpcs"], f["mem_gb"]
        return MIG(
            f"{f['parent_gpu_name']} MIG-{gpcs}g.{gb}gb",
            AcceleratorType.Discrete,
            Memory(gb, ByteSuffix.GiB),
            f["parent_gpu_max_power_limit"],
            f["parent_gpu_pci_id"],
            f["parent_gpu_compute_sm"],
            gpcs,
        )

    def identifiers(self):
        return (*super().identifiers(), self.num_gpcs)

    def __eq__(self, o) -> bool:
        return self.matches(o)

    def pretty_string(self) -> str:
        first, rest = GPU.pretty_string(self).split("\n", 1)
        return f"{self.num_gpcs}-GPC MIG ({self.pci_id}): {self.name}\n{rest}"


@dataclass(eq=True, frozen=True)
class AcceleratorConfiguration(Hardware):
    layout: dict[Accelerator, int]

    def num_gpus(self):
        return sum(n for a, n in self.layout.items() if a.__class__ is GPU)

    def num_migs(self):
        return sum(n for a, n in self.layout.items() if a.__class__ is MIG)

    def get_accelerators(self):
        return list(self.layout)

    def get_primary_accelerator(self):
        return next(iter(self.layout), None)

    @classmethod
    def detect(cls):
        layout = defaultdict(int)
        GPU_INFO_SOURCE.reset()
        while GPU_INFO_SOURCE.has_next():
            layout[GPU.detect()] += 1
        MIG_INFO_SOURCE.reset()
        while MIG_INFO_SOURCE.has_next():
            layout[MIG.detect()] += 1
        return AcceleratorConfiguration(layout)

    def matches(self, other) -> bool:
        if other.__class__ != self.__class__:
            return NotImplemented
        return layouts_match(self.layout, other.layout)

    def __eq__(self, o) -> bool:
        return self.matches(o)

    def pretty_string(self) -> str:
        lines = [f"{n}x " + a.pretty_string() for a, n in self.layout.items()]
        return "AcceleratorConfiguration:\n" + textwrap.indent("\n".join(lines), " " * 4)


ACCELERATOR_INFO_SOURCE = InfoSource(get_accelerator_info)
GPU_INFO_SOURCE = InfoSource(get_gpu_info)
MIG_INFO_SOURCE = InfoSource(get_mig_info)
