"""The pure part of the vSphere layer: desired vs current VM state, MMIO sizes."""

from __future__ import annotations

from miglab.adapters.vsphere.vmspec import (
    VmDesired,
    changes,
    cold_changes,
    current_view,
    desired_view,
    gpu_of_vgpu_type,
    required_mmio_gb,
)


def _current(**kw):
    base = {
        "host": "h1",
        "guest_id": "ubuntu64Guest",
        "vcpus": 32,
        "memory_mb": 65536,
        "memory_reservation_locked_to_max": True,
        "firmware": "efi",
        "secure_boot": False,
        "extra_config": {
            "pciPassthru.use64bitMMIO": "TRUE",
            "pciPassthru.allowP2P": "TRUE",
            "pciPassthru.64bitMMIOSizeGB": "256",
            "other": "x",
        },
        "vgpus": ["grid_a100d-2-20c"],
        "disk_gb": 64,
        "network": "VM Network",
        "power_state": "poweredoff",
    }
    base.update(kw)
    return base


def test_mmio_sizes_follow_the_catalog():
    assert gpu_of_vgpu_type("grid_a100d-2-20c").name == "A100-PCIE-80GB"
    assert required_mmio_gb(["grid_a100d-2-20c"]) == 256
    assert required_mmio_gb(["grid_a100d-2-20c", "grid_a100d-1-10c"]) == 512
    assert required_mmio_gb(["nvidia_h200x-1-18c"]) == 512
    assert required_mmio_gb(["grid_unknown-1-1c"]) is None


def test_in_sync_vm_has_no_changes():
    d = VmDesired("vm", host="h1", vgpus=["grid_a100d-2-20c"], mmio_gb=256, network="VM Network")
    cur = _current()
    assert changes(current_view(cur), desired_view(d, cur)) == []


def test_one_field_and_unmanaged_keys_kept():
    d = VmDesired("vm", host="h1", vcpus=16, vgpus=["grid_a100d-2-20c"], mmio_gb=256)
    cur = _current()
    after = desired_view(d, cur)
    assert changes(current_view(cur), after) == ["vcpus: 32 -> 16"]
    assert after["extra_config"]["other"] == "x"  # settings miglab does not manage stay
    assert cold_changes(current_view(cur), after) == ["vcpus"]


def test_removing_all_vgpus_removes_mmio_settings():
    d = VmDesired("vm", host="h1", vgpus=[])
    after = desired_view(d, _current())
    assert "pciPassthru.64bitMMIOSizeGB" not in after["extra_config"]
    assert after["vgpus"] == []


def test_disk_only_grows():
    d = VmDesired("vm", host="h1", vgpus=["grid_a100d-2-20c"], mmio_gb=256, disk_gb=32)
    assert desired_view(d, _current(disk_gb=64))["disk_gb"] == 64
