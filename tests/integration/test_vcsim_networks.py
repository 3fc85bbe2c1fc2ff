"""Distributed (vDS) and NSX networks: real-lab notes V12.

vSphere API: a NIC on a standard port group has a ``NetworkBackingInfo`` (``deviceName``), one on
a distributed port group a ``DistributedVirtualPortBackingInfo`` (the switch's uuid and the port
group's key), one on an NSX opaque network an ``OpaqueNetworkBackingInfo``; vCenter refuses a
standard backing naming a distributed port group. First the simulator (lab keys
``distributed_port_groups``, ``opaque_networks``) shows that, then miglab's vgpu_vm module puts
VMs on those networks with the right backing, idempotently.
"""

from __future__ import annotations

import pytest

from miglab.sim import vcenter as vcsim_lab
from testlib import run_module, vcenter_args

pytestmark = pytest.mark.integration

DV, DV2, NSX = "VM Network DV", "VM Network DV2", "nsx-segment"


@pytest.fixture(scope="module")
def sim(vcsim_binary):
    lab = vcsim_lab.default_lab()
    lab["distributed_port_groups"] = [DV, DV2]
    lab["opaque_networks"] = [NSX]
    with vcsim_lab.Vcsim(lab, binary=vcsim_binary) as s:
        yield s


def _objects(si, vimtype):
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vimtype], True)
    try:
        return list(view.view)
    finally:
        view.Destroy()


def _by_name(si, vimtype, name):
    (obj,) = [o for o in _objects(si, vimtype) if o.name == name]
    return obj


def _create_vm(si, name, backing, host=None):
    """CreateVM_Task with one vmxnet3 NIC of ``backing`` (on ``host``, default: the lab's only
    one); the task's error or None."""
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    if host is None:
        (host,) = _objects(si, vim.HostSystem)
    (dc,) = _objects(si, vim.Datacenter)
    spec = vim.vm.ConfigSpec(
        name=name,
        guestId="ubuntu64Guest",
        numCPUs=1,
        memoryMB=256,
        files=vim.vm.FileInfo(vmPathName="[datastore1]"),
        deviceChange=[
            vim.vm.device.VirtualDeviceSpec(
                operation="add", device=vim.vm.device.VirtualVmxnet3(key=-1, backing=backing)
            )
        ],
    )
    try:
        WaitForTask(
            dc.vmFolder.CreateVM_Task(config=spec, pool=host.parent.resourcePool, host=host)
        )
    except vim.fault.VimFault as exc:
        return exc
    return None


def _nic(si, vm_name):
    from pyVmomi import vim

    vm = _by_name(si, vim.VirtualMachine, vm_name)
    (nic,) = [
        d for d in vm.config.hardware.device if isinstance(d, vim.vm.device.VirtualEthernetCard)
    ]
    return vm, nic


def _dv_port(si, pg_name):
    from pyVmomi import vim

    pg = _by_name(si, vim.dvs.DistributedVirtualPortgroup, pg_name)
    return pg.config.distributedVirtualSwitch.uuid, pg.key


# --- the simulator -------------------------------------------------------------------------------
def test_v12_lab_has_a_distributed_switch_and_an_nsx_network(sim):
    from pyVmomi import vim

    si = sim.connect()
    (dvs,) = _objects(si, vim.DistributedVirtualSwitch)
    (host,) = _objects(si, vim.HostSystem)
    assert (
        dvs.name == "DSwitch"
        and dvs.uuid
        and [h.name for h in dvs.summary.hostMember] == [host.name]
    )
    pg = _by_name(si, vim.dvs.DistributedVirtualPortgroup, DV)
    assert pg.key and pg.config.distributedVirtualSwitch == dvs and pg.config.name == DV
    assert DV in dvs.summary.portgroupName
    assert {DV, DV2, NSX, "VM Network"} <= {n.name for n in host.network}
    nsx = _by_name(si, vim.OpaqueNetwork, NSX)
    assert nsx.summary.opaqueNetworkType == "nsx.LogicalSwitch" and nsx.summary.opaqueNetworkId
    # the standard network is still a plain vim.Network
    assert type(_by_name(si, vim.Network, "VM Network")) is vim.Network


def test_v12_standard_backing_naming_a_distributed_port_group_is_refused(sim):
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    si = sim.connect()
    card = vim.vm.device.VirtualEthernetCard
    err = _create_vm(si, "v12-std-on-dv", card.NetworkBackingInfo(deviceName=DV))
    assert isinstance(err, vim.fault.InvalidDeviceSpec) and err.deviceIndex == 0, err
    assert "Invalid configuration for device '0'" in err.msg
    assert "DistributedVirtualPortBackingInfo" in err.faultMessage[0].message
    assert not [v for v in _objects(si, vim.VirtualMachine) if v.name == "v12-std-on-dv"]
    err = _create_vm(si, "v12-std-on-nsx", card.NetworkBackingInfo(deviceName=NSX))
    assert isinstance(err, vim.fault.InvalidDeviceSpec)
    assert "OpaqueNetworkBackingInfo" in err.faultMessage[0].message

    # the right backings are taken, and vCenter lists the VM's networks
    uuid, key = _dv_port(si, DV)
    dv_backing = card.DistributedVirtualPortBackingInfo(
        port=vim.dvs.PortConnection(switchUuid=uuid, portgroupKey=key)
    )
    assert _create_vm(si, "v12-dv", dv_backing) is None
    vm, nic = _nic(si, "v12-dv")
    assert (nic.backing.port.switchUuid, nic.backing.port.portgroupKey) == (uuid, key)
    assert [n.name for n in vm.network] == [DV]
    summary = _by_name(si, vim.OpaqueNetwork, NSX).summary
    nsx_backing = card.OpaqueNetworkBackingInfo(
        opaqueNetworkId=summary.opaqueNetworkId, opaqueNetworkType=summary.opaqueNetworkType
    )
    assert _create_vm(si, "v12-nsx", nsx_backing) is None
    assert [n.name for n in _nic(si, "v12-nsx")[0].network] == [NSX]

    # ReconfigVM_Task too: moving the NIC with a standard backing naming the DV port group fails
    # and leaves it as it was
    vm, nic = _nic(si, "v12-dv")
    nic.backing = card.NetworkBackingInfo(deviceName=DV2)
    edit = vim.vm.device.VirtualDeviceSpec(operation="edit", device=nic)
    with pytest.raises(vim.fault.InvalidDeviceSpec):
        WaitForTask(vm.ReconfigVM_Task(vim.vm.ConfigSpec(deviceChange=[edit])))
    assert _nic(si, "v12-dv")[1].backing.port.portgroupKey == key
    for name in ("v12-dv", "v12-nsx"):
        WaitForTask(_by_name(si, vim.VirtualMachine, name).Destroy_Task())


def test_v12_clone_spec_nic_backings_are_checked_too(sim):
    """V12: CloneVM_Task's spec may change the clone's NIC; the same refusal applies there."""
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    si = sim.connect()
    card = vim.vm.device.VirtualEthernetCard
    assert _create_vm(si, "v12-src", card.NetworkBackingInfo(deviceName="VM Network")) is None
    src, nic = _nic(si, "v12-src")
    (host,) = _objects(si, vim.HostSystem)
    nic.backing = card.NetworkBackingInfo(deviceName=DV)
    edit = vim.vm.device.VirtualDeviceSpec(operation="edit", device=nic)
    spec = vim.vm.CloneSpec(
        location=vim.vm.RelocateSpec(pool=host.parent.resourcePool, deviceChange=[edit]),
        powerOn=False,
    )
    with pytest.raises(vim.fault.InvalidDeviceSpec) as exc:
        WaitForTask(src.CloneVM_Task(folder=src.parent, name="v12-clone", spec=spec))
    assert "DistributedVirtualPortBackingInfo" in exc.value.faultMessage[0].message
    assert not [v for v in _objects(si, vim.VirtualMachine) if v.name == "v12-clone"]
    uuid, key = _dv_port(si, DV)
    nic.backing = card.DistributedVirtualPortBackingInfo(
        port=vim.dvs.PortConnection(switchUuid=uuid, portgroupKey=key)
    )
    WaitForTask(src.CloneVM_Task(folder=src.parent, name="v12-clone", spec=spec))
    assert _nic(si, "v12-clone")[1].backing.port.portgroupKey == key
    for name in ("v12-src", "v12-clone"):
        WaitForTask(_by_name(si, vim.VirtualMachine, name).Destroy_Task())


# --- miglab --------------------------------------------------------------------------------------
def _args(sim, name, network, **kw):
    return {
        **vcenter_args(sim),
        "name": name,
        "host": sim.lab["hosts"][0]["name"],
        "datastore": sim.lab["datastore"],
        "network": network,
        "vcpus": 2,
        "memory_gb": 1,
        "vgpus": [],
        **kw,
    }


def test_vgpu_vm_creates_a_vm_on_a_distributed_port_group(sim):
    from pyVmomi import vim

    si = sim.connect()
    args = _args(sim, "v12-mig-dv", DV)
    preview = run_module("vgpu_vm", args, check=True)
    assert preview["changed"] and preview["vms"][0]["actions"] == ["create"], preview
    assert not [v for v in _objects(si, vim.VirtualMachine) if v.name == "v12-mig-dv"]

    res = run_module("vgpu_vm", args)
    assert res["changed"] and not res["failed"], res.get("msg")
    vm, nic = _nic(si, "v12-mig-dv")
    assert isinstance(
        nic.backing, vim.vm.device.VirtualEthernetCard.DistributedVirtualPortBackingInfo
    )
    assert (nic.backing.port.switchUuid, nic.backing.port.portgroupKey) == _dv_port(si, DV)
    assert [n.name for n in vm.network] == [DV]

    again = run_module("vgpu_vm", args, check=True, diff=True)
    assert again["changed"] is False and not again["failed"], again
    assert run_module("vgpu_vm", args)["changed"] is False
    assert run_module("vgpu_vm", {**vcenter_args(sim), "name": "v12-mig-dv", "state": "absent"})[
        "changed"
    ]


def test_vgpu_vm_moves_a_nic_between_network_kinds(sim):
    from pyVmomi import vim

    si = sim.connect()
    card = vim.vm.device.VirtualEthernetCard
    assert run_module("vgpu_vm", _args(sim, "v12-move", "VM Network"))["changed"]
    assert isinstance(_nic(si, "v12-move")[1].backing, card.NetworkBackingInfo)

    # standard -> distributed: check mode says from/to, with the backing types, and changes nothing
    to_dv = _args(sim, "v12-move", DV)
    preview = run_module("vgpu_vm", to_dv, check=True, diff=True)
    (action,) = preview["vms"][0]["actions"]
    assert action.startswith("reconfigure: network: 'VM Network' (standard port group"), action
    assert f"-> '{DV}' (distributed port group" in action and "DistributedVirtualPort" in action
    assert preview["diff"][0]["after"]["network_backing"]["type"] == "distributed"
    assert isinstance(_nic(si, "v12-move")[1].backing, card.NetworkBackingInfo)

    assert run_module("vgpu_vm", to_dv)["changed"]
    nic = _nic(si, "v12-move")[1]
    assert isinstance(nic.backing, card.DistributedVirtualPortBackingInfo)
    assert (nic.backing.port.switchUuid, nic.backing.port.portgroupKey) == _dv_port(si, DV)
    assert run_module("vgpu_vm", to_dv)["changed"] is False

    # one distributed port group to another: the port group key changes
    assert run_module("vgpu_vm", _args(sim, "v12-move", DV2))["changed"]
    assert _nic(si, "v12-move")[1].backing.port.portgroupKey == _dv_port(si, DV2)[1]

    # NSX opaque network, from its summary; then back to the standard port group
    to_nsx = _args(sim, "v12-move", NSX)
    assert run_module("vgpu_vm", to_nsx)["changed"]
    nic = _nic(si, "v12-move")[1]
    summary = _by_name(si, vim.OpaqueNetwork, NSX).summary
    assert isinstance(nic.backing, card.OpaqueNetworkBackingInfo)
    assert (nic.backing.opaqueNetworkId, nic.backing.opaqueNetworkType) == (
        summary.opaqueNetworkId,
        "nsx.LogicalSwitch",
    )
    assert run_module("vgpu_vm", to_nsx)["changed"] is False
    back = _args(sim, "v12-move", "VM Network")
    assert run_module("vgpu_vm", back)["changed"]
    nic = _nic(si, "v12-move")[1]
    assert (
        isinstance(nic.backing, card.NetworkBackingInfo) and nic.backing.deviceName == "VM Network"
    )
    assert run_module("vgpu_vm", back)["changed"] is False


def test_vgpu_vm_names_an_unknown_network(sim):
    res = run_module("vgpu_vm", _args(sim, "v12-unknown", "no-such-net"))
    assert res["failed"] and not res["changed"]
    assert "network 'no-such-net' not found in datacenter dc1" in res["msg"], res["msg"]
    assert DV in res["msg"]  # the known ones are listed


def test_vgpu_vm_refuses_a_name_both_standard_and_distributed(vcsim_factory):
    lab = vcsim_lab.default_lab()
    lab["distributed_port_groups"] = ["VM Network"]  # vCenter allows it: another switch
    s = vcsim_factory(lab)
    res = run_module("vgpu_vm", _args(s, "v12-ambiguous", "VM Network"))
    assert res["failed"] and not res["changed"]
    msg = res["msg"]
    assert "network 'VM Network' is ambiguous in datacenter dc1" in msg, msg
    assert "standard port group" in msg and "distributed port group on switch DSwitch" in msg
    assert "rename the port group so that its name is unique" in msg


def test_vgpu_vm_adds_the_nic_a_vm_lacks(sim):
    from pyVmomi import vim

    si = sim.connect()
    args = _args(sim, "v12-nonic", None)
    del args["network"]
    assert run_module("vgpu_vm", args)["changed"]
    vm = _by_name(si, vim.VirtualMachine, "v12-nonic")
    assert not [
        d for d in vm.config.hardware.device if isinstance(d, vim.vm.device.VirtualEthernetCard)
    ]
    on_dv = _args(sim, "v12-nonic", DV)
    assert run_module("vgpu_vm", on_dv)["changed"]
    nic = _nic(si, "v12-nonic")[1]
    assert nic.backing.port.portgroupKey == _dv_port(si, DV)[1]
    assert run_module("vgpu_vm", on_dv)["changed"] is False


@pytest.fixture
def two_hosts_one_member(vcsim_factory):
    """A vDS whose only member is the first of two hosts (distributed_switch_hosts)."""
    import copy

    lab = vcsim_lab.default_lab()
    second = copy.deepcopy(lab["hosts"][0])
    second["name"] = "esxi-02.sim.miglab.test"
    lab["hosts"].append(second)
    lab["distributed_port_groups"] = [DV]
    lab["distributed_switch_hosts"] = [lab["hosts"][0]["name"]]
    return vcsim_factory(lab), second["name"]


def test_v12_sim_a_host_outside_the_switch_gets_no_nic_on_its_port_groups(two_hosts_one_member):
    """V12, the simulation: a distributed port group serves only the switch's member hosts (vSphere
    Networking: hosts must be associated with the switch)."""
    from pyVmomi import vim

    sim, outside = two_hosts_one_member
    si = sim.connect()
    pg = _by_name(si, vim.dvs.DistributedVirtualPortgroup, DV)
    assert [h.name for h in pg.host] == [sim.lab["hosts"][0]["name"]]
    uuid, key = _dv_port(si, DV)
    card = vim.vm.device.VirtualEthernetCard
    backing = card.DistributedVirtualPortBackingInfo(
        port=vim.dvs.PortConnection(switchUuid=uuid, portgroupKey=key)
    )
    err = _create_vm(si, "v12-outside", backing, host=_by_name(si, vim.HostSystem, outside))
    assert isinstance(err, vim.fault.InvalidDeviceSpec), err
    assert f"host {outside} is not a member of distributed switch DSwitch" in (
        err.faultMessage[0].message
    )


def test_vgpu_vm_refuses_a_port_group_the_host_is_not_on(two_hosts_one_member):
    """V12, miglab: named before anything is created, with the way out."""
    sim, outside = two_hosts_one_member
    res = run_module("vgpu_vm", _args(sim, "v12-outside", DV, host=outside))
    assert res["failed"] and not res["changed"]
    assert f"host {outside} is not a member of distributed switch DSwitch" in res["msg"]
    assert "Add and Manage Hosts" in res["msg"]
    member_host = sim.lab["hosts"][0]["name"]
    member = run_module("vgpu_vm", _args(sim, "v12-member", DV, host=member_host))
    assert member["changed"] and not member["failed"], member.get("msg")
