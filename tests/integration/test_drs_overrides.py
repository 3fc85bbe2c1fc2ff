"""DRS chooses the host at power-on (real-lab notes V5: NVIDIA AI Enterprise user guide, "vGPU in
a DRS cluster" -- Partially Automated or Manual; vSphere DrsBehaviorInfo -- Partially Automated
still places VMs at power-on). First the simulator shows it, then miglab's per-VM overrides keep
the campaign's VMs on their planned hosts."""

from __future__ import annotations

import copy

import pytest

from testlib import run_module, vcenter_args

pytestmark = pytest.mark.integration


def _two_hosts(vcsim_factory, drs="partiallyAutomated"):
    from miglab.sim import vcenter as vcsim_lab

    lab = vcsim_lab.default_lab()
    first = lab["hosts"][0]
    first["graphics_type"] = "sharedDirect"
    second = copy.deepcopy(first)
    second["name"] = "esxi-02.sim.miglab.test"
    lab["hosts"].append(second)
    lab["drs"] = drs
    sim = vcsim_factory(lab)
    return sim, vcenter_args(sim), first["name"], second["name"]


def _vm(sim, conn, host, name, power_state):
    res = run_module(
        "vgpu_vm",
        {
            **conn,
            "name": name,
            "host": host,
            "datastore": sim.lab["datastore"],
            "network": sim.lab["network"],
            "vcpus": 2,
            "memory_gb": 4,
            "vgpus": ["grid_a100d-1-10c"],
            "power_state": power_state,
        },
    )
    assert not res["failed"], res["msg"]


def _vm_obj(sim, name):
    from pyVmomi import vim

    si = sim.connect()
    view = si.content.viewManager.CreateContainerView(
        si.content.rootFolder, [vim.VirtualMachine], True
    )
    (vm,) = [v for v in view.view if v.name == name]
    return vm


def _host_of(sim, name):
    return _vm_obj(sim, name).runtime.host.name


def _power_on_raw(sim, name):
    """Power on through the API, as a user in the vSphere Client would: no miglab checks."""
    from pyVim.task import WaitForTask

    WaitForTask(_vm_obj(sim, name).PowerOnVM_Task())


def _busy(sim, conn, host):
    _vm(sim, conn, host, "busy", "poweredoff")
    _power_on_raw(sim, "busy")


def test_drs_moves_a_vm_at_power_on(vcsim_factory):
    """V5, the simulation: with Partially Automated DRS a VM registered on the busier host powers
    on on the other one."""
    sim, conn, one, two = _two_hosts(vcsim_factory)
    _busy(sim, conn, one)
    _vm(sim, conn, one, "planned-on-one", "poweredoff")
    _power_on_raw(sim, "planned-on-one")
    assert _host_of(sim, "planned-on-one") == two


@pytest.mark.parametrize("drs", ["partiallyAutomated", "fullyAutomated"])
def test_miglab_refuses_a_power_on_drs_would_place(vcsim_factory, drs):
    """V5, miglab: without an override vgpu_vm does not power the VM on (DRS would choose its
    host), names the cluster and the way out, and leaves the VM off."""
    sim, conn, one, _ = _two_hosts(vcsim_factory, drs=drs)
    _vm(sim, conn, one, "vm", "poweredoff")
    res = run_module("vgpu_vm", {**conn, "name": "vm", "power_state": "poweredon"})
    assert res["failed"]
    assert "vm: DRS of cluster" in res["msg"] and f"is {drs} for this VM" in res["msg"]
    assert "miglab_vm_drs_override" in res["msg"]
    assert ("migrates it during a run" in res["msg"]) == (drs == "fullyAutomated")
    assert str(_vm_obj(sim, "vm").runtime.powerState) == "poweredOff"


def test_a_per_vm_override_keeps_the_vm_on_its_host(vcsim_factory):
    """V5, miglab: vm_drs_override disables DRS for the campaign's VMs (check mode first changes
    nothing, a second run changes nothing); the VM then powers on where it was planned."""
    sim, conn, one, two = _two_hosts(vcsim_factory)
    _busy(sim, conn, one)
    _vm(sim, conn, one, "planned-on-one", "poweredoff")
    args = {**conn, "vms": ["planned-on-one"]}
    checked = run_module("vm_drs_override", args, check=True)
    assert checked["changed"] and checked["vms"]["planned-on-one"]["override"] == "disabled"
    res = run_module("vm_drs_override", args)
    assert res["changed"], res.get("msg")
    assert res["vms"]["planned-on-one"] == {
        "cluster": res["vms"]["planned-on-one"]["cluster"],
        "drs": True,
        "override": "disabled",
        "before": "none (cluster default)",
    }
    assert run_module("vm_drs_override", args)["changed"] is False
    run_module("vgpu_vm", {**conn, "name": "planned-on-one", "power_state": "poweredon"})
    assert _host_of(sim, "planned-on-one") == one


def test_manual_override_keeps_the_host_too(vcsim_factory):
    sim, conn, one, _ = _two_hosts(vcsim_factory, drs="fullyAutomated")
    _busy(sim, conn, one)
    _vm(sim, conn, one, "vm", "poweredoff")
    args = {**conn, "vms": ["vm"], "drs_enable": True, "drs_automation_level": "manual"}
    assert run_module("vm_drs_override", args)["vms"]["vm"]["override"] == "manual"
    run_module("vgpu_vm", {**conn, "name": "vm", "power_state": "poweredon"})
    assert _host_of(sim, "vm") == one


def test_without_drs_nothing_is_changed(vcsim_factory):
    sim, conn, one, _ = _two_hosts(vcsim_factory, drs="off")
    _vm(sim, conn, one, "vm", "poweredoff")
    res = run_module("vm_drs_override", {**conn, "vms": ["vm"]})
    assert res["changed"] is False and res["vms"]["vm"]["drs"] is False


def test_unknown_vms_are_named(vcsim_factory):
    sim, conn, *_ = _two_hosts(vcsim_factory)
    res = run_module("vm_drs_override", {**conn, "vms": ["nope", "nada"]})
    assert res["failed"] and res["msg"] == "VM(s) not found: nada, nope"
