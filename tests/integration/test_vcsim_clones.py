"""Real-lab notes V13: clones of one template share the guest's identity unless customized
(same machine-id, so the same DHCP address: VMware KB 82229), and a guest installed for BIOS does
not boot as EFI. First the simulator shows it (through pyVmomi), then miglab handles it: a clone
keeps its template's firmware (an EFI clone of a BIOS template is refused before cloning), gets a
cloud-init guest identity once, and vm_guest_address names VMs that share an address."""

from __future__ import annotations

import base64
import json

import pytest
from pyVim.connect import Disconnect
from pyVim.task import WaitForTask
from pyVmomi import vim

from miglab.core.catalog import load_catalog
from miglab.core.placement import Host, Lab
from miglab.sim import vcenter as vcsim_lab
from testlib import run_module, vcenter_args

VGPU = "grid_a100d-2-20c"
BIOS, SEALED = "ubuntu-bios", "ubuntu-sealed"  # a template with a machine-id, one without


def _lab() -> dict:
    cat = load_catalog()
    a100 = cat.get("A100-PCIE-80GB")
    lab = vcsim_lab.lab_json(
        Lab((Host("esxi-01.sim.miglab.test", (a100,) * 4, 128, 1024),)),
        cat,
        graphics_type="sharedDirect",
    )
    lab["templates"] = [
        {"name": BIOS, "firmware": "bios", "machine_id": "4f1c0d2a9b8e4c7d8e6f5a4b3c2d1e0f"},
        {"name": SEALED, "firmware": "efi", "machine_id": ""},
    ]
    lab["guest_dhcp"] = "192.0.2.0/24"
    return lab


@pytest.fixture
def sim(vcsim_factory):
    return vcsim_factory(_lab())


@pytest.fixture
def si(sim):
    si = sim.connect()
    yield si
    Disconnect(si)


def _vms(si) -> dict:
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    try:
        return {vm.name: vm for vm in view.view}
    finally:
        view.Destroy()


def _clone(si, template: str, name: str, power_on: bool = True):
    content = si.RetrieveContent()
    dc = content.rootFolder.childEntity[0]
    host = dc.hostFolder.childEntity[0].host[0]
    spec = vim.vm.CloneSpec(
        location=vim.vm.RelocateSpec(host=host, pool=host.parent.resourcePool),
        powerOn=False,
        template=False,
    )
    WaitForTask(_vms(si)[template].CloneVM_Task(folder=dc.vmFolder, name=name, spec=spec))
    vm = _vms(si)[name]
    if power_on:
        WaitForTask(vm.PowerOnVM_Task())
    return vm


def _base(sim) -> dict:
    return {
        **vcenter_args(sim),
        "host": sim.lab["hosts"][0]["name"],
        "datastore": "datastore1",
        "network": "VM Network",
        "vcpus": 4,
        "memory_gb": 8,
        "vgpus": [VGPU],
    }


# --- the simulator ------------------------------------------------------------------------------
def test_v13_sim_templates_keep_firmware_and_uncustomized_clones_share_an_address(si):
    vms = _vms(si)
    assert vms[BIOS].config.template and vms[BIOS].config.firmware == "bios"
    assert vms[SEALED].config.firmware == "efi"
    a, b = _clone(si, BIOS, "a"), _clone(si, BIOS, "b")
    # vSphere's clone copies the configuration: the firmware stays (stock govmomi reset it)
    assert a.config.firmware == b.config.firmware == "bios"
    # the copied disk carries the template's machine-id: one DHCP client id, one lease
    assert a.guest.ipAddress and a.guest.ipAddress == b.guest.ipAddress
    assert a.guest.toolsRunningStatus == "guestToolsRunning"
    # a sealed template (empty machine-id): each clone makes its own at first boot
    c, d = _clone(si, SEALED, "c"), _clone(si, SEALED, "d")
    assert len({a.guest.ipAddress, c.guest.ipAddress, d.guest.ipAddress}) == 3
    # the lease follows the machine-id: the same address after a power cycle
    ip = c.guest.ipAddress
    WaitForTask(c.PowerOffVM_Task())
    assert c.guest.ipAddress is None
    WaitForTask(c.PowerOnVM_Task())
    assert c.guest.ipAddress == ip


def test_v13_sim_a_bios_guest_does_not_boot_as_efi(si):
    vm = _clone(si, BIOS, "e", power_on=False)
    WaitForTask(vm.ReconfigVM_Task(vim.vm.ConfigSpec(firmware="efi")))
    WaitForTask(vm.PowerOnVM_Task())
    # the power-on succeeds; the guest never starts, so VMware Tools report nothing
    assert vm.runtime.powerState == "poweredOn"
    assert vm.guest.toolsRunningStatus == "guestToolsNotRunning" and vm.guest.ipAddress is None


def test_v13_sim_cloud_init_metadata_sets_the_hostname_not_the_machine_id(si):
    meta = base64.b64encode(json.dumps({"instance-id": "f", "local-hostname": "f"}).encode())
    vms = []
    for name in ("f", "g"):
        vm = _clone(si, BIOS, name, power_on=False)
        extra = [
            vim.option.OptionValue(key="guestinfo.metadata", value=meta.decode()),
            vim.option.OptionValue(key="guestinfo.metadata.encoding", value="base64"),
        ]
        WaitForTask(vm.ReconfigVM_Task(vim.vm.ConfigSpec(extraConfig=extra)))
        WaitForTask(vm.PowerOnVM_Task())
        vms.append(vm)
    assert vms[0].guest.hostName == "f"
    # cloud-init issue #4066: a new instance-id leaves /etc/machine-id as it was
    assert vms[0].guest.ipAddress == vms[1].guest.ipAddress


def test_v13_sim_bad_template_keys_stop_the_simulator(vcsim_factory):
    lab = _lab()
    lab["templates"].append({"name": "x", "firmware": "uefi"})
    lab["guest_dhcp"] = "192.0.2.0/30"
    with pytest.raises(RuntimeError) as exc:
        vcsim_factory(lab)
    assert "templates[2].firmware" in str(exc.value) and "guest_dhcp" in str(exc.value)


# --- miglab -------------------------------------------------------------------------------------
def test_v13_efi_clone_of_a_bios_template_is_refused_before_cloning(sim, si):
    res = run_module("vgpu_vm", dict(_base(sim), name="s1-vm1", template=BIOS, firmware="efi"))
    assert res["failed"]
    msg = res["msg"]
    assert "\n" not in msg and "Traceback" not in res["_stdout"]
    assert f"template '{BIOS}' has BIOS firmware" in msg
    assert "use an EFI template or set the VM's firmware to bios" in msg
    assert "s1-vm1" not in _vms(si)  # nothing was cloned


def test_v13_clone_keeps_the_template_firmware_and_gets_its_identity_once(sim, si):
    args = dict(_base(sim), name="s1-vm1", template=BIOS, power_state="poweredon")
    res = run_module("vgpu_vm", args)
    assert not res["failed"], res.get("msg")
    assert res["vms"][0]["actions"] == [f"clone from {BIOS}", "power on"]
    vm = _vms(si)["s1-vm1"]
    # the old code set EFI on every clone: this guest would not have booted (no address)
    assert vm.config.firmware == "bios"
    assert vm.guest.toolsRunningStatus == "guestToolsRunning" and vm.guest.ipAddress
    extra = {o.key: o.value for o in vm.config.extraConfig}
    assert extra["guestinfo.metadata.encoding"] == "base64"
    meta = json.loads(base64.b64decode(extra["guestinfo.metadata"]))
    assert meta == {"instance-id": "s1-vm1", "local-hostname": "s1-vm1"}
    assert vm.guest.hostName == "s1-vm1"  # cloud-init's VMware datasource read it
    # idempotent: nothing changes on a second run, the identity included
    again = run_module("vgpu_vm", args)
    assert again["changed"] is False and not again["failed"], again.get("msg")
    assert {o.key: o.value for o in vm.config.extraConfig} == extra


def test_v13_guest_identity_none_sets_no_guestinfo(sim, si):
    args = dict(_base(sim), name="s1-vm2", template=SEALED, guest_identity="none")
    assert not run_module("vgpu_vm", args)["failed"]
    vm = _vms(si)["s1-vm2"]
    assert vm.config.firmware == "efi"
    assert not [o for o in vm.config.extraConfig if o.key.startswith("guestinfo.")]


def test_v13_vm_guest_address_names_clones_that_share_an_address(sim, si):
    vms = [
        {"name": n, "template": BIOS, "power_state": "poweredon", "gpu": i}
        for i, n in enumerate(("s6-vm1", "s6-vm2"))
    ]
    res = run_module("vgpu_vm", dict(_base(sim), vms=vms))
    assert not res["failed"], res.get("msg")
    ip = _vms(si)["s6-vm1"].guest.ipAddress
    got = run_module("vm_guest_address", dict(vcenter_args(sim), names=["s6-vm1", "s6-vm2"]))
    assert got["failed"]
    msg = got["msg"]
    assert "\n" not in msg and "Traceback" not in got["_stdout"]
    assert f"s6-vm1 and s6-vm2 report the same guest IP {ip}" in msg and "KB 82229" in msg


def test_v13_clones_of_a_sealed_template_get_their_own_addresses(sim):
    vms = [{"name": n, "template": SEALED, "power_state": "poweredon"} for n in ("a1", "a2")]
    assert not run_module("vgpu_vm", dict(_base(sim), vms=vms))["failed"]
    got = run_module("vm_guest_address", dict(vcenter_args(sim), names=["a1", "a2"]))
    assert not got["failed"], got.get("msg")
    assert len(set(got["addresses"].values())) == 2
