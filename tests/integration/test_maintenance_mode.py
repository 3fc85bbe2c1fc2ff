"""Maintenance mode as a cluster without DRS allows it (real-lab notes V4: vSphere API
EnterMaintenanceMode_Task; community.vmware vmware_maintenancemode defaults evacuate to false):
miglab never asks to evacuate powered-off VMs there, powers the campaign's own VMs off first,
and names any other powered-on VM before a task starts."""

from __future__ import annotations

import pytest

from miglab.sim import vcenter as vcsim_lab
from testlib import run_module, vcenter_args

pytestmark = pytest.mark.integration


def _lab(vcsim_factory):
    lab = vcsim_lab.default_lab()
    lab["hosts"][0]["graphics_type"] = "sharedDirect"
    sim = vcsim_factory(lab)
    conn = vcenter_args(sim)
    host = sim.lab["hosts"][0]["name"]
    return sim, conn, host


def _vm_on(sim, conn, host, name, power_state="poweredon"):
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


def test_other_powered_on_vms_are_named_before_anything_is_done(vcsim_factory):
    sim, conn, host = _lab(vcsim_factory)
    _vm_on(sim, conn, host, "someone-elses-vm")
    _vm_on(sim, conn, host, "campaign-vm")
    base = {**conn, "esxi_hostname": host, "state": "maintenance"}
    res = run_module("esxi_host_maintenance", {**base, "power_off_vms": ["campaign-vm"]})
    assert res["failed"]
    assert "powered-on VMs someone-elses-vm keep it from entering maintenance mode" in res["msg"]
    assert "campaign-vm" not in res["msg"]
    # nothing was done: the campaign's VM is still on
    check = run_module("vgpu_vm", {**conn, "name": "campaign-vm", "power_state": "poweredon"})
    assert check["changed"] is False


def test_the_campaigns_own_vms_are_powered_off_first(vcsim_factory):
    sim, conn, host = _lab(vcsim_factory)
    _vm_on(sim, conn, host, "campaign-vm")
    base = {**conn, "esxi_hostname": host, "state": "maintenance"}
    planned = run_module(
        "esxi_host_maintenance", {**base, "power_off_vms": ["campaign-vm"]}, check=True
    )
    assert planned["changed"] and planned["powered_off"] == []
    res = run_module("esxi_host_maintenance", {**base, "power_off_vms": ["campaign-vm"]})
    assert not res["failed"], res["msg"]
    assert res["changed"] and res["powered_off"] == ["campaign-vm"]
    assert res["in_maintenance_mode"] is True
    assert run_module("esxi_host_maintenance", {**base, "state": "normal"})["changed"]


def test_evacuating_powered_off_vms_without_drs_is_refused(vcsim_factory):
    _, conn, host = _lab(vcsim_factory)
    res = run_module(
        "esxi_host_maintenance",
        {**conn, "esxi_hostname": host, "state": "maintenance", "evacuate_powered_off_vms": True},
    )
    assert res["failed"] and "evacuate_powered_off_vms needs DRS" in res["msg"]


def _enter(sim, host_name, **kw):
    """EnterMaintenanceMode_Task through pyVmomi: the task's fault (None when it succeeded)."""
    from pyVmomi import vim

    from miglab.adapters.vsphere.tasks import wait

    si = sim.connect()
    view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.HostSystem], True)
    host = next(h for h in view.view if h.name == host_name)
    task = host.EnterMaintenanceMode_Task(**kw)
    try:
        wait(task, 60, "enter")
    except Exception:  # noqa: BLE001 - the fault is what the test reads
        return task.info.error
    return None


def test_the_simulator_waits_and_times_out_as_vcenter_does(vcsim_factory):
    """V4 in the simulator: on a cluster without DRS a powered-on VM, or a powered-off one with
    evacuatePoweredOffVms (the API's default, true), keeps the task from succeeding; it waits
    for its timeout and fails with a bare Timedout naming no VM."""
    from pyVmomi import vim

    sim, conn, host = _lab(vcsim_factory)
    _vm_on(sim, conn, host, "busy-vm")
    fault = _enter(sim, host, timeout=1, evacuatePoweredOffVms=False)
    assert isinstance(fault, vim.fault.Timedout) and "busy-vm" not in (fault.msg or "")
    _vm_on(sim, conn, host, "busy-vm", power_state="poweredoff")
    fault = _enter(sim, host, timeout=1)  # evacuatePoweredOffVms left out: true
    assert isinstance(fault, vim.fault.Timedout)
    assert _enter(sim, host, timeout=1, evacuatePoweredOffVms=False) is None
