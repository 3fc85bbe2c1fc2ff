"""The simulator offers vGPU types as a real host does (real-lab notes V9): graphics type `basic`
before the host driver, types only with the driver loaded and Shared Direct, MIG-backed types only
for GPUs in MIG mode, time-sliced ones only for GPUs not in MIG mode -- and miglab says why a
type is not offered."""

from __future__ import annotations

import pytest
from pyVim.connect import Disconnect
from pyVim.task import WaitForTask
from pyVmomi import vim, vmodl

from miglab.core.esxi import graphics_restart_pending, vgpu_offer_problems
from miglab.sim import vcenter as vcsim_lab
from testlib import run_module, vcenter_args

pytestmark = pytest.mark.integration

MIG_TYPE = "grid_a100d-2-20c"
TS_TYPE = "grid_a100d-20c"


def _lab(**host):
    lab = vcsim_lab.default_lab()
    lab["hosts"][0].update(host)
    return lab


def _host(si, name):
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.HostSystem], True)
    try:
        return next(h for h in view.view if h.name == name)
    finally:
        view.Destroy()


def _info(sim) -> dict:
    name = sim.lab["hosts"][0]["name"]
    res = run_module("esxi_gpu_info", {**vcenter_args(sim), "esxi_hostname": [name]})
    assert not res["failed"], res.get("msg")
    return res["hosts"][name]


def _offered(host):
    gm = host.configManager.graphicsManager
    caps = [c.vgpu for c in host.config.sharedGpuCapabilities]
    assert list(host.config.sharedPassthruGpuTypes) == caps
    assert [c.vgpu for c in gm.sharedGpuCapabilities] == caps
    assert list(gm.sharedPassthruGpuTypes) == caps
    return caps


def test_v9_basic_before_the_driver_and_no_types(vcsim_factory):
    """V9: without the host driver every GPU is `basic` and no vGPU type is offered, even in
    sharedDirect; miglab names the host, the type and the missing driver."""
    sim = vcsim_factory(_lab(driver_loaded=False, graphics_type="sharedDirect"))
    si = sim.connect()
    try:
        host = _host(si, sim.lab["hosts"][0]["name"])
        assert {g.graphicsType for g in host.config.graphicsInfo} == {"basic"}
        assert _offered(host) == []
    finally:
        Disconnect(si)
    info = _info(sim)
    assert {g["graphics_type"] for g in info["graphics_info"]} == {"basic"}
    # esxi_graphics: basic counts as not in effect, and says that no driver is loaded
    pending = graphics_restart_pending(info)
    assert pending["pending"] and len(pending["no_driver"]) == len(info["graphics_info"])
    # esxi_host_graphics configures a host whose GPUs are basic (the configuration is the host's)
    args = {**vcenter_args(sim), "esxi_hostname": [info["name"]]}
    res = run_module("esxi_host_graphics", {**args, "assignment_policy": "consolidation"})
    assert not res["failed"] and res["changed"], res.get("msg")
    (line,) = vgpu_offer_problems(info, [MIG_TYPE])
    assert info["name"] in line and MIG_TYPE in line and "no NVIDIA host driver" in line


def test_v9_types_only_in_shared_direct(vcsim_factory):
    """V9: with the driver but graphics type shared (vSGA) nothing is offered; after
    sharedDirect is put in effect (xorg restart) the types are."""
    sim = vcsim_factory(_lab())
    si = sim.connect()
    try:
        host = _host(si, sim.lab["hosts"][0]["name"])
        assert {g.graphicsType for g in host.config.graphicsInfo} == {"shared"}
        assert _offered(host) == []
        line = vgpu_offer_problems(_info(sim), [MIG_TYPE])[0]
        assert "not Shared Direct" in line and MIG_TYPE in line
        host.configManager.graphicsManager.UpdateGraphicsConfig(
            vim.host.GraphicsConfig(hostDefaultGraphicsType="sharedDirect")
        )
        host.configManager.serviceSystem.RestartService("xorg")
        assert _offered(host) == sim.lab["hosts"][0]["vgpu_types"]
        assert vgpu_offer_problems(_info(sim), [MIG_TYPE, TS_TYPE]) == []
    finally:
        Disconnect(si)


def test_v9_mig_types_only_for_gpus_in_mig_mode(vcsim_factory):
    """V9: GPUs in MIG mode offer MIG-backed types only; a GPU not in MIG mode time-sliced types
    only; a vGPU that needs the other kind does not power on on that GPU."""
    lab = _lab(graphics_type="sharedDirect")
    types = lab["hosts"][0]["vgpu_types"]
    gpus = lab["hosts"][0]["gpus"]
    for g in gpus:
        g["mig_mode"] = True
    sim = vcsim_factory(lab)
    si = sim.connect()
    try:
        host = _host(si, lab["hosts"][0]["name"])
        offered = _offered(host)
        assert MIG_TYPE in offered and TS_TYPE not in offered
        assert offered == [t for t in types if t.count("-") == 2]  # grid_a100d-<slices>-<GB>c
    finally:
        Disconnect(si)
    (line,) = vgpu_offer_problems(_info(sim), [TS_TYPE])
    assert "in MIG mode" in line and TS_TYPE in line

    for g in gpus:
        g["mig_mode"] = False
    gpus[0]["mig_mode"] = True  # one MIG GPU, the rest time-sliced: both kinds offered
    sim = vcsim_factory(lab)
    si = sim.connect()
    try:
        host = _host(si, lab["hosts"][0]["name"])
        assert _offered(host) == types
        # a MIG-backed vGPU goes to the one GPU in MIG mode, never to the others
        dc = si.RetrieveContent().rootFolder.childEntity[0]
        pool = host.parent.resourcePool
        vms = []
        for n in range(2):
            spec = vim.vm.ConfigSpec(
                name=f"v9-mig-{n}",
                guestId="ubuntu64Guest",
                numCPUs=4,
                memoryMB=8192,
                memoryReservationLockedToMax=True,
                files=vim.vm.FileInfo(vmPathName="[datastore1]"),
                deviceChange=[
                    vim.vm.device.VirtualDeviceSpec(
                        operation="add",
                        device=vim.vm.device.VirtualPCIPassthrough(
                            key=-100,
                            backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(
                                vgpu="grid_a100d-4-40c"
                            ),
                        ),
                    )
                ],
            )
            task = dc.vmFolder.CreateVM_Task(config=spec, pool=pool, host=host)
            WaitForTask(task)
            vms.append(task.info.result)
        WaitForTask(vms[0].PowerOnVM_Task())
        with pytest.raises(vmodl.MethodFault) as exc:
            WaitForTask(vms[1].PowerOnVM_Task())  # 4g + 4g exceed the one MIG GPU
        text = " ".join(m.message for m in exc.value.faultMessage)
        assert "not in MIG mode" in text, text
        holders = [len(g.vm) for g in host.configManager.graphicsManager.graphicsInfo]
        assert holders == [1] + [0] * (len(gpus) - 1)
    finally:
        Disconnect(si)
