"""What a simulated VM's guest sees of its vGPUs: the VM's virtual hardware description.

The guest keeper (``miglab.sim.daemon.GuestKeeper``) writes it before each start of a VM's
container, from the vGPU devices vCenter (the simulator) has configured on the VM; the GRID
driver stand-in's ``nvidia-smi`` (miglab/sim/standins/grid-driver/nvidia-smi) reads it, so each
simulated VM shows its own vGPU, as a real guest driver shows the vGPU its hypervisor gave it.

On the host the file is ``<out>/hardware/<vm>/vgpu.json``; the folder is bind-mounted read-only
at ``GUEST_DIR`` in the VM's container (a folder, not the file: the file is replaced by a rename,
which a single-file bind mount would not follow). Format (schema 1)::

    {"schema": 1, "standin": "...", "vm": "s6-vm1", "vgpus": [
      {"index": 0, "vgpu_type": "grid_a100d-2-20c", "name": "GRID A100D-2-20C",
       "gpu": "A100-PCIE-80GB", "board": "NVIDIA A100 80GB PCIe", "architecture": "ampere",
       "pci_device_id": "0x20B510DE",
       "framebuffer_mib": 20480, "mig_profile": "2g.20gb", "guest_mig_devices": true,
       "uuid": "GPU-...", "mig_uuid": "MIG-...", "bus_id": "00000000:02:00.0"}]}

A VM without a vGPU gets ``"vgpus": []``. ``describe_vgpu`` is the pure part (vGPU type -> what
the guest driver reports), from miglab's GPU catalog. Sources of each value: the stand-ins'
README (miglab/sim/standins/README.md, "The VM's vGPU").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

GUEST_DIR = "/etc/miglab-sim"  # where the guest (and its GPU containers) find the description
FILE = "vgpu.json"
SCHEMA = 1
STANDIN = (
    "miglab simulated lab: this VM's virtual hardware as vCenter (the simulator) configured it, "
    "written by miglab.sim.daemon's guest keeper; read by the GRID driver stand-in's nvidia-smi"
)
# NVIDIA's PCI vendor id, as nvidia-smi appends it to the device id (pci.device_id "0x20B510DE").
NVIDIA_VENDOR = "10DE"


def nvidia_smi_name(vgpu_type: str) -> str:
    """The name the guest driver gives a vSphere vGPU type: vSphere writes NVIDIA's type name in
    lower case with "_" for the space (grid_a100d-2-20c is "GRID A100D-2-20C" in vgpuConfig.xml
    and in a guest's nvidia-smi; nvidia_h100xm-1-10c is "NVIDIA H100XM-1-10C")."""
    prefix, sep, rest = vgpu_type.strip().partition("_")
    return f"{prefix.upper()} {rest.upper()}" if sep else vgpu_type.strip().upper()


def _framebuffer_from_name(vgpu_type: str) -> int | None:
    """MiB from the type name: -<slices>-<GB>c[me] (MIG-backed) or -<GB>c (time-sliced); NVIDIA's
    type tables give exactly that framebuffer (e.g. GRID A100D-2-20C: 20G)."""
    m = re.search(r"-(?:\d+-)?(\d+)c(?:me)?$", vgpu_type.strip().lower())
    return int(m.group(1)) * 1024 if m else None


def _hexid(*parts: object) -> str:
    return hashlib.sha256("\0".join(str(p) for p in parts).encode()).hexdigest()


def vgpu_uuid(vm: str, index: int) -> str:
    """A stable GPU UUID for the VM's index-th vGPU (GPU-<8-4-4-4-12> lower-case hex, as a vGPU
    guest prints it: GPU-57abc772-1dd3-11b2-8fae-e31710b8f307, GRID V100D-8C)."""
    h = _hexid("miglab-sim-vgpu", vm, index)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def mig_uuid(vm: str, index: int) -> str:
    """A stable UUID for the MIG device inside a MIG-backed vGPU (MIG-<8-4-4-4-12>, the form
    nvidia-smi -L prints since R470)."""
    h = _hexid("miglab-sim-mig", vm, index)
    return f"MIG-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def bus_id(index: int) -> str:
    """The vGPU's PCI address in the guest. vSphere guests show their one vGPU at
    00000000:02:00.0 (GRID V100D-8C, TKGI; GRID A100-2-10C, vSphere 7.0U3); the following device
    numbers for more vGPUs are an approximation."""
    return f"00000000:02:{index:02X}.0"


def describe_vgpu(vgpu_type: str, catalog=None) -> dict:
    """What the guest driver reports for one vGPU of this vSphere type (the catalog's GPU model
    offering the type). A type no catalog model offers keeps its name and, where the name says
    it, its framebuffer; the board's fields are None."""
    from miglab.core.catalog import MigProfile, load_catalog

    catalog = catalog or load_catalog()
    key = vgpu_type.strip().lower()
    model = next(
        (
            m
            for m in catalog
            if key in {t.lower() for t in m.mig_backed.values()}
            or key in {t.name.lower() for t in m.time_sliced}
        ),
        None,
    )
    found = model.find_vgpu(key) if model is not None else None
    framebuffer = _framebuffer_from_name(key)
    if found is not None and not isinstance(found, MigProfile):
        framebuffer = int(round(found.framebuffer_gib * 1024))
    device = (model.pci_device_ids or (None,))[0] if model is not None else None
    return {
        "vgpu_type": vgpu_type.strip(),
        "name": nvidia_smi_name(vgpu_type),
        "gpu": model.name if model is not None else None,
        "board": (model.product_names or (None,))[0] if model is not None else None,
        "architecture": (model.architecture or None) if model is not None else None,
        # the vGPU shows the physical board's device id (an H100XM-80C guest: 0x233010DE)
        "pci_device_id": f"0x{device[2:].upper()}{NVIDIA_VENDOR}" if device else None,
        "framebuffer_mib": framebuffer,
        "mig_profile": found.name if isinstance(found, MigProfile) else None,
        # a MIG-backed vGPU's guest has one compute instance, created when the guest driver
        # loads (NVIDIA vGPU user guide): nvidia-smi lists it as a MIG device
        "guest_mig_devices": isinstance(found, MigProfile),
    }


def describe_vm(vm: str, vgpu_types: list[str], catalog=None) -> dict:
    """The whole description of one VM: its vGPUs in device order, with stable UUIDs."""
    vgpus = []
    for i, vgpu_type in enumerate(vgpu_types):
        entry = {"index": i, **describe_vgpu(vgpu_type, catalog)}
        entry["uuid"] = vgpu_uuid(vm, i)
        entry["mig_uuid"] = mig_uuid(vm, i) if entry["mig_profile"] else None
        entry["bus_id"] = bus_id(i)
        vgpus.append(entry)
    return {"schema": SCHEMA, "standin": STANDIN, "vm": vm, "vgpus": vgpus}


def vgpu_types_of(devices) -> list[str]:
    """The vGPU types of a VM's devices (config.hardware.device), in device order: its
    VirtualPCIPassthrough devices with a VMIOP (vGPU) backing, as miglab.adapters.vsphere.vms
    reads them."""
    from pyVmomi import vim

    return [
        d.backing.vgpu
        for d in devices or []
        if isinstance(d, vim.vm.device.VirtualPCIPassthrough)
        and isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)
        and d.backing.vgpu
    ]


def write_description(folder: Path, description: dict) -> Path:
    """Replace ``folder/vgpu.json`` atomically (a reader sees the old file or the new one)."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)  # the guest reads it through the bind mount, whoever runs podman
    tmp = folder / (FILE + ".tmp")
    tmp.write_text(json.dumps(description, indent=2, sort_keys=True) + "\n")
    os.chmod(tmp, 0o644)
    return tmp.replace(folder / FILE)
