"""Real-lab notes V13 without vCenter: a clone keeps its template's firmware and gets a
cloud-init guest identity once; VMs sharing a guest IP are named; the example real-lab inventory
names a template and a host driver bundle built for its ESXi 7.0.3 host."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import yaml

from miglab.adapters import inventory_vms as iv
from miglab.adapters.vsphere.guests import duplicate_ips, unshare_ips
from miglab.adapters.vsphere.vmspec import (
    VmDesired,
    changes,
    current_view,
    desired_view,
    firmware_problem,
    guest_identity_config,
)
from miglab.core import esxi
from testlib import ROOT, run_cli

EXAMPLE = ROOT / "inventories" / "example-r750xa"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "esxi"


def _cur(**kw) -> dict:
    base = {"host": "h1", "guest_id": "ubuntu64Guest", "vcpus": 32, "memory_mb": 65536,
            "memory_reservation_locked_to_max": True, "firmware": "bios", "secure_boot": False,
            "extra_config": {}, "vgpus": [], "disk_gb": 64, "network": None,
            "power_state": "poweredoff"}  # fmt: skip
    base.update(kw)
    return base


def test_identity_is_cloud_init_metadata_with_the_vm_name():
    keys = guest_identity_config(VmDesired("s6-vm1"))
    assert keys["guestinfo.metadata.encoding"] == "base64"
    meta = json.loads(base64.b64decode(keys["guestinfo.metadata"]))
    assert meta == {"instance-id": "s6-vm1", "local-hostname": "s6-vm1"}
    # a VM name that is no host name still gives a valid local-hostname
    odd = guest_identity_config(VmDesired("s 6_vm.1"))
    assert json.loads(base64.b64decode(odd["guestinfo.metadata"]))["local-hostname"] == "s-6-vm-1"
    assert guest_identity_config(VmDesired("x", guest_identity="none")) == {}


def test_a_clone_follows_its_template_firmware_and_gets_its_identity_only_when_made():
    d = VmDesired("vm", template="tmpl")
    planned = desired_view(d, None, clone=True, template_firmware="bios")
    assert planned["firmware"] == "bios"  # the old code asked efi of every VM
    assert "guestinfo.metadata" in planned["extra_config"]
    made = desired_view(d, _cur(), clone=True)
    assert made["firmware"] == "bios" and "guestinfo.metadata" in made["extra_config"]
    # later runs: no identity added to a VM that exists (its guest booted with what it had)
    assert changes(current_view(_cur()), desired_view(d, _cur())) == []
    kept = _cur(extra_config=made["extra_config"])
    assert changes(current_view(kept), desired_view(d, kept)) == []


def test_firmware_defaults_and_explicit_choice():
    assert desired_view(VmDesired("new"), None)["firmware"] == "efi"  # created, not cloned
    assert desired_view(VmDesired("vm", firmware="efi"), _cur())["firmware"] == "efi"
    assert desired_view(VmDesired("vm"), _cur(firmware="efi"))["firmware"] == "efi"


def test_firmware_problems_name_the_template_and_the_way_out():
    msg = firmware_problem(VmDesired("vm", template="ubuntu-bios", firmware="efi"), "bios")
    assert msg == (
        "template 'ubuntu-bios' has BIOS firmware and a guest installed for it does not boot as "
        "EFI: use an EFI template or set the VM's firmware to bios"
    )
    assert "use a BIOS template" in firmware_problem(
        VmDesired("vm", template="t", firmware="bios"), "efi"
    )
    assert firmware_problem(VmDesired("vm", template="t"), "bios") is None
    assert firmware_problem(VmDesired("vm", template="t", firmware="bios"), "bios") is None
    sb = VmDesired("vm", template="t", secure_boot=True)
    assert "secure_boot needs efi" in firmware_problem(sb, "bios")
    assert "secure_boot needs efi" in firmware_problem(
        VmDesired("vm", secure_boot=True), None, "bios"
    )
    assert firmware_problem(VmDesired("vm", secure_boot=True), None) is None


def test_duplicate_guest_ips_name_both_vms_the_address_and_the_cause():
    on = "poweredOn"
    states = {
        "s6-vm2": {"power_state": on, "ip": "192.0.2.10"},
        "s6-vm1": {"power_state": on, "ip": "192.0.2.10"},
        "s6-vm3": {"power_state": on, "ip": "192.0.2.11"},
        "s7-vm1": {"power_state": on, "ip": None},
        "old": {"power_state": "poweredOff", "ip": "192.0.2.11"},
    }
    (line,) = duplicate_ips(states)
    assert line.startswith("s6-vm1 and s6-vm2 report the same guest IP 192.0.2.10: ")
    assert "machine-id" in line and "KB 82229" in line and "\n" not in line
    assert duplicate_ips({"a": {"power_state": on, "ip": "192.0.2.1"}}) == []


def test_an_inventory_points_no_two_hosts_at_one_guest():
    """V13: VMs sharing an address lose it (Ansible would configure one guest twice)."""
    on = "poweredOn"
    states = {
        "s6-vm1": {"power_state": on, "ip": "192.0.2.10"},
        "s6-vm2": {"power_state": on, "ip": "192.0.2.10"},
        "s6-vm3": {"power_state": on, "ip": "192.0.2.11"},
    }
    out, (line,) = unshare_ips(states)
    assert out["s6-vm1"] == {"power_state": on, "ip": None, "ip_shared_with": ["s6-vm2"]}
    assert out["s6-vm3"] == states["s6-vm3"] and "s6-vm1 and s6-vm2" in line
    assert iv.vcenter_vars(out["s6-vm2"]) == {
        "miglab_vm_power_state": on,
        "miglab_vm_ip_shared_with": ["s6-vm1"],
    }


# --- the example real-lab inventory -------------------------------------------------------------
def _vars(rel: str) -> dict:
    return yaml.safe_load((EXAMPLE / "group_vars" / rel).read_text())


def test_the_example_inventory_validates():
    r = run_cli(
        "validate", "campaigns/r750xa-a100-80gb-mig.yml", "-i", "inventories/example-r750xa"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok: ") and "fits lab inventories/example-r750xa" in r.stdout


def test_the_example_inventory_names_a_template():
    assert _vars("all/vcenter.yml")["miglab_vm_template"]


def _table(titles: list[str], row: list[str]) -> str:
    widths = [max(len(t), len(c)) for t, c in zip(titles, row, strict=True)]

    def line(cells):  # esxcli's layout: columns two spaces apart, a dash rule
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(titles), "  ".join("-" * w for w in widths), line(row)]) + "\n"


def _plan_on_703(bundle_path: str, version: str) -> dict:
    """miglab's own bundle check (plan_driver) on the R750xa's ESXi 7.0.3, for a bundle whose
    driver VIB has the version its file name says."""
    m = re.search(
        r"NVD-AIE-(\d{3})_(\d+\.\d+\.\d+)-(\d+OEM\.\d{3}\.[\d.]+?)_\d+\.zip$", bundle_path
    )
    assert m, bundle_path
    target, driver, pkg = m.groups()
    esx = target[0] + "." + target[1] + "." + target[2]
    vib = [f"NVD-AIE_ESXi_{esx}_Driver", f"{driver}-{pkg}", "NVIDIA", "2024-10-01",
           "VMwareAccepted", "New"]  # fmt: skip
    facts = {
        "vmware_vl": (FIXTURES / "vmware-vl-7.0.3.txt").read_text(),
        "acceptance": "PartnerSupported\n",
        "components": None,
        "vibs": None,
        "bundle_vibs": _table(
            ["Name", "Version", "Vendor", "Creation Date", "Acceptance Level", "Status"], vib
        ),
        "nvidia_smi": {"rc": 2, "msg": "Error executing command."},
    }
    return esxi.plan_driver(facts, {"version": version})


def test_the_example_bundle_is_built_for_the_hosts_esxi_release():
    drv = _vars("esxi_hosts/driver.yml")
    path, version = drv["esxi_vgpu_driver_bundle_path"], drv["esxi_vgpu_driver_version"]
    plan = _plan_on_703(path, version)
    assert plan["problems"] == [] and plan["action"] == "install", plan["problems"]
    assert plan["esxi"]["version"] == "7.0.3" and plan["bundle"]["esxi"] == "7.0.2"
    # the vSphere 8 bundle it named before is refused there by the same check
    old = "/x/NVD-AIE-800_535.216.01-1OEM.800.1.0.20613240_24235034.zip"
    assert any("built for ESXi 8.0.0" in p for p in _plan_on_703(old, version)["problems"])
