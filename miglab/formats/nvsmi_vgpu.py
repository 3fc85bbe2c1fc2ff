"""What the NVIDIA vGPU manager on a host says about running vGPUs: ``nvidia-smi vgpu -q`` (which
VM's vGPU runs on which GPU, in which GPU instance) and ``nvidia-smi mig -lgi`` (each GPU
instance's placement), joined into VM -> (GPU, MIG start slot).

Layouts: ``nvidia-smi vgpu -q`` as NVIDIA's vGPU software user guide prints it ("GPU
00000000:3B:00.0", "Active vGPUs", per vGPU "vGPU ID" with "VM Name", "vGPU Name", "GPU Instance
ID"); ``nvidia-smi mig -lgi`` as the MIG user guide prints it (a boxed table: GPU, Name, Profile
ID, Instance ID, Placement Start:Size). Anything else in the text is skipped; a malformed value
is an error naming its line, never echoing the text.
"""

from __future__ import annotations

import re

_GPU_HEAD = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_KEY_VALUE = re.compile(r"^(\s+)([A-Za-z][A-Za-z0-9 ()/-]*?)\s*:\s*(.*?)\s*$")
_LGI_ROW = re.compile(r"^\|\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|\s*$")
_NO_INSTANCES = re.compile(r"No GPU instances found", re.IGNORECASE)


class HostVgpuError(ValueError):
    """The host's nvidia-smi output does not read as the documented layout."""


def parse_vgpu_query(text: str) -> list[dict]:
    """``nvidia-smi vgpu -q`` -> one dict per active vGPU: ``gpu`` (the GPU's bus id as printed),
    ``vm`` (VM Name), ``vgpu`` (vGPU Name), ``gpu_instance_id`` (int, None when N/A)."""
    out: list[dict] = []
    gpu: str | None = None
    current: dict | None = None
    for n, line in enumerate(text.splitlines(), start=1):
        m = _GPU_HEAD.match(line)
        if m:
            gpu, current = m.group(1), None
            continue
        kv = _KEY_VALUE.match(line)
        if not kv or gpu is None:
            continue
        key, value = kv.group(2), kv.group(3)
        if key == "vGPU ID":
            current = {"gpu": gpu, "vm": None, "vgpu": None, "gpu_instance_id": None}
            out.append(current)
        elif current is not None and key == "VM Name":
            current["vm"] = value
        elif current is not None and key == "vGPU Name":
            current["vgpu"] = value
        elif current is not None and key == "GPU Instance ID":
            if value.upper() in ("N/A", ""):
                current["gpu_instance_id"] = None
            elif value.isdigit():
                current["gpu_instance_id"] = int(value)
            else:
                raise HostVgpuError(f"line {n}: GPU Instance ID is not a number")
    for v in out:
        if not v["vm"]:
            raise HostVgpuError(f"a vGPU on GPU {v['gpu']} has no VM Name")
    return out


def parse_mig_lgi(text: str) -> list[dict]:
    """``nvidia-smi mig -lgi`` -> one dict per GPU instance: ``gpu`` (nvidia-smi index),
    ``profile`` (e.g. 4g.40gb), ``profile_id``, ``gpu_instance_id``, ``start``, ``size``. No
    instances ("No GPU instances found") is an empty list."""
    out = []
    for line in text.splitlines():
        m = _LGI_ROW.match(line.strip())
        if m:
            gpu, profile, pid, gi, start, size = m.groups()
            out.append(
                {
                    "gpu": int(gpu),
                    "profile": profile,
                    "profile_id": int(pid),
                    "gpu_instance_id": int(gi),
                    "start": int(start),
                    "size": int(size),
                }
            )
    if not out and text.strip() and not _NO_INSTANCES.search(text) and "GPU instances" not in text:
        raise HostVgpuError("no GPU instance table in the nvidia-smi mig -lgi output")
    return out


def parse_index_bus_ids(text: str) -> dict[int, str]:
    """``nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader`` -> index -> bus id."""
    out = {}
    for n, line in enumerate(text.splitlines(), start=1):
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 2 or cells[0] == "index":
            continue
        if not cells[0].isdigit():
            raise HostVgpuError(f"line {n}: the GPU index is not a number")
        out[int(cells[0])] = cells[1]
    return out


def vgpu_slots(vgpu_query: str, mig_lgi: str, index_bus_ids: str) -> dict[str, dict]:
    """VM name -> {"gpu": bus id, "mig_slot": start or None, "vgpu": name} from one host's
    three outputs."""
    buses = parse_index_bus_ids(index_bus_ids)
    by_bus = {bus.lower()[-12:]: i for i, bus in buses.items()}
    starts = {(g["gpu"], g["gpu_instance_id"]): g["start"] for g in parse_mig_lgi(mig_lgi)}
    out = {}
    for v in parse_vgpu_query(vgpu_query):
        index = by_bus.get(v["gpu"].lower()[-12:])
        slot = None
        if v["gpu_instance_id"] is not None and index is not None:
            slot = starts.get((index, v["gpu_instance_id"]))
        out[v["vm"]] = {"gpu": v["gpu"], "mig_slot": slot, "vgpu": v["vgpu"]}
    return out
