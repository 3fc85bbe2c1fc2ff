"""What a vGPU VM should look like, what it looks like, and the difference (pure Python).

The three ``pciPassthru.*`` settings follow NVIDIA's and VMware's guidance for vGPU VMs with large
BARs: 64-bit MMIO on, peer-to-peer allowed, and an MMIO window of at least the size NVIDIA
documents for the GPU (per vGPU; several vGPUs add up, rounded to a power of two).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field

from miglab.adapters.vsphere.networks import nic_label
from miglab.core.catalog import Catalog, GpuModel, load_catalog

MMIO_KEYS = ("pciPassthru.use64bitMMIO", "pciPassthru.allowP2P", "pciPassthru.64bitMMIOSizeGB")
# Changing these needs the VM powered off (vSphere refuses, or applies them only at power-on).
# Reported to pin a VM's first vGPU to one physical GPU (real-lab notes V3: operator notes only,
# unconfirmed); miglab checks where every vGPU landed either way.
GPU_PIN_KEY = "pciPassthru0.cfg.gpu-pci-id"
COLD_FIELDS = ("vcpus", "memory_mb", "vgpus", "firmware", "secure_boot", "host")
FIRMWARES = ("efi", "bios")
# Real-lab notes V13: clones of one template share the guest's identity unless customized. A
# clone gets cloud-init's VMware datasource keys (cloud-init docs, "VMware" datasource, GuestInfo
# keys): a new instance-id (cloud-init then runs its per-instance steps: new SSH host keys) and
# local-hostname. It does not reset /etc/machine-id (cloud-init issue #4066): the template must
# have an empty one, or the clones share a DHCP lease (VMware KB 82229; vm_guest_address says so).
GUEST_IDENTITIES = ("cloud-init", "none")
GUESTINFO_KEYS = ("guestinfo.metadata", "guestinfo.metadata.encoding")


@dataclass
class VmDesired:
    name: str
    state: str = "present"  # present | absent
    host: str | None = None
    datastore: str | None = None
    folder: str | None = None
    network: str | None = None
    # the NIC backing the network needs (``networks.Network.nic()``), resolved from vCenter
    network_backing: dict | None = None
    guest_id: str = "ubuntu64Guest"
    vcpus: int = 32
    memory_mb: int = 65536
    secure_boot: bool = False
    vgpus: list[str] = field(default_factory=list)
    mmio_gb: int | None = None
    advanced: dict[str, str] = field(default_factory=dict)
    disk_gb: int | None = 64
    template: str | None = None
    power_state: str = "unchanged"  # poweredon | poweredoff | unchanged
    gpu: int | None = None  # planned GPU: index among the host's NVIDIA GPUs in PCI order
    mig_slot: int | None = None  # planned MIG start slot (checked on the host, not here)
    gpu_pin: bool = False  # pin the vGPU to the planned GPU (pciPassthru0.cfg.gpu-pci-id)
    gpu_pci_id: str | None = None  # the planned GPU's PCI id, resolved from the host
    # None: a clone keeps its template's, an existing VM its own, a new VM gets efi (a guest
    # installed for one firmware does not boot under the other: notes V13)
    firmware: str | None = None
    guest_identity: str = "cloud-init"  # cloud-init | none: what a new clone gets (notes V13)

    def extra_config(self) -> dict[str, str]:
        out = dict(self.advanced)
        if self.vgpus:
            out["pciPassthru.use64bitMMIO"] = "TRUE"
            out["pciPassthru.allowP2P"] = "TRUE"
            out["pciPassthru.64bitMMIOSizeGB"] = str(self.mmio_gb)
        if self.vgpus and self.gpu_pin and self.gpu_pci_id:
            out[GPU_PIN_KEY] = self.gpu_pci_id
        return out


def guest_identity_config(d: VmDesired) -> dict[str, str]:
    """The guestinfo keys that give a new clone its own identity (empty for ``none``)."""
    if d.guest_identity != "cloud-init":
        return {}
    host = re.sub(r"[^A-Za-z0-9-]+", "-", d.name).strip("-")[:63] or "vm"
    meta = json.dumps({"instance-id": d.name, "local-hostname": host}, sort_keys=True)
    return {
        "guestinfo.metadata": base64.b64encode(meta.encode()).decode(),
        "guestinfo.metadata.encoding": "base64",
    }


def firmware_problem(
    d: VmDesired, template_firmware: str | None, current: str | None = None
) -> str | None:
    """Why the VM would not boot as ``d`` asks: a clone of a template with
    ``template_firmware`` switched to the other firmware, or secure boot without EFI
    (``current``: an existing VM's firmware)."""
    want = d.firmware or current or template_firmware or "efi"
    if d.firmware and template_firmware and d.firmware != template_firmware:
        article = "an" if d.firmware == "efi" else "a"
        return (
            f"template {d.template!r} has {template_firmware.upper()} firmware and a guest "
            f"installed for it does not boot as {d.firmware.upper()}: use {article} "
            f"{d.firmware.upper()} template or set the VM's firmware to {template_firmware}"
        )
    if d.secure_boot and want == "bios":
        return "secure_boot needs efi firmware, the VM's is bios"
    return None


def gpu_of_vgpu_type(vgpu_type: str, catalog: Catalog | None = None) -> GpuModel | None:
    """The catalog GPU model offering a vSphere vGPU type (MIG-backed or time-sliced)."""
    catalog = catalog or load_catalog()
    key = vgpu_type.lower()
    for model in catalog:
        if key in {t.lower() for t in model.mig_backed.values()} or key in {
            t.name.lower() for t in model.time_sliced
        }:
            return model
    return None


def required_mmio_gb(vgpus: list[str], catalog: Catalog | None = None) -> int | None:
    """NVIDIA's documented MMIO size for a VM with these vGPUs (summed, next power of two)."""
    total = 0
    for v in vgpus:
        model = gpu_of_vgpu_type(v, catalog)
        if model is None or not model.mmio_gb:
            return None
        total += model.mmio_gb
    if not total:
        return None
    size = 1
    while size < total:
        size *= 2
    return size


def current_view(cur: dict) -> dict:
    """The comparable part of a VM's current state (``read_vm`` in miglab.adapters.vsphere.vms)."""
    return {
        "host": cur.get("host"),
        "guest_id": cur.get("guest_id"),
        "vcpus": cur.get("vcpus"),
        "memory_mb": cur.get("memory_mb"),
        "memory_reservation_locked_to_max": cur.get("memory_reservation_locked_to_max"),
        "firmware": cur.get("firmware"),
        "secure_boot": cur.get("secure_boot"),
        "extra_config": dict(cur.get("extra_config") or {}),
        "vgpus": list(cur.get("vgpus") or []),
        "disk_gb": cur.get("disk_gb"),
        "network": cur.get("network"),
        "network_backing": cur.get("network_backing"),
        "power_state": cur.get("power_state"),
    }


def desired_view(
    d: VmDesired, cur: dict | None, *, clone: bool = False, template_firmware: str | None = None
) -> dict:
    """``current_view`` as it should be, keeping what the user did not ask to change. ``clone``:
    the VM is a new clone of ``d.template`` (``cur`` is the clone, or None before cloning, then
    ``template_firmware`` is the template's): it also gets its guest identity."""
    base = current_view(cur or {})
    firmware = d.firmware or base["firmware"] or template_firmware or "efi"
    want = dict(base)
    want.update(
        {
            "guest_id": d.guest_id,
            "vcpus": d.vcpus,
            "memory_mb": d.memory_mb,
            "memory_reservation_locked_to_max": True
            if d.vgpus
            else base["memory_reservation_locked_to_max"] or False,
            "firmware": firmware,
            "secure_boot": d.secure_boot,
            "vgpus": sorted(d.vgpus),
        }
    )
    if d.host:
        want["host"] = d.host
    if d.network:
        want["network"] = d.network
        if d.network_backing:
            want["network_backing"] = d.network_backing
    if d.disk_gb is not None and (cur is None or (base["disk_gb"] or 0) < d.disk_gb):
        want["disk_gb"] = d.disk_gb
    extra = dict(base["extra_config"])
    extra.update(d.extra_config())
    if clone:  # only when cloning: a later run keeps what the guest booted with (idempotent)
        extra.update(guest_identity_config(d))
    if not d.vgpus:
        for k in MMIO_KEYS:
            extra.pop(k, None)
    if not (d.vgpus and d.gpu_pin):
        extra.pop(GPU_PIN_KEY, None)
    want["extra_config"] = extra
    if d.power_state in ("poweredon", "poweredoff"):
        want["power_state"] = d.power_state
    elif cur is None:
        want["power_state"] = "poweredoff"
    return want


def changes(before: dict, after: dict) -> list[str]:
    """Human-readable list of what differs ("vcpus: 16 -> 32")."""
    out = []
    for key in after:
        b, a = before.get(key), after.get(key)
        if key == "vgpus":
            b = sorted(b or [])
        if key == "network_backing":
            # one line for the NIC, from/to, its backing type included (real-lab notes V12)
            if b != a:
                before_name, after_name = before.get("network"), after.get("network")
                out.append(f"network: {nic_label(b, before_name)} -> {nic_label(a, after_name)}")
            continue
        if key == "network" and after.get("network_backing") != before.get("network_backing"):
            continue  # said by the network_backing line
        if key == "extra_config":
            for k in sorted(set(a) | set(b or {})):
                if (b or {}).get(k) != a.get(k):
                    out.append(f"{k}: {(b or {}).get(k)} -> {a.get(k)}")
            continue
        if b != a:
            out.append(f"{key}: {b} -> {a}")
    return out


def cold_changes(before: dict, after: dict) -> list[str]:
    return [
        k
        for k in COLD_FIELDS
        if k in after
        and (
            sorted(before.get(k) or []) != sorted(after[k] or [])
            if k == "vgpus"
            else before.get(k) != after.get(k)
        )
    ]
