"""Which network a VM's NIC names and the backing it needs (real-lab notes V12), pure part."""

from __future__ import annotations

import pytest

from miglab.adapters.vsphere.networks import (
    Network,
    NetworkError,
    NetworkIndex,
    backing_for,
    nic_label,
    nic_of_backing,
)
from miglab.adapters.vsphere.vmspec import VmDesired, changes, current_view, desired_view

STD = Network("VM Network", "standard")
DV = Network("VM Network DV", "distributed", "DSwitch", "50 2a uuid", "dvportgroup-25")
NSX = Network("seg", "opaque", opaque_id="41325c3f", opaque_type="nsx.LogicalSwitch")
INDEX = NetworkIndex([STD, DV, NSX], "dc1")


def test_each_kind_needs_its_own_backing():
    assert STD.nic() == {"type": "standard", "network": "VM Network"}
    assert DV.nic() == {
        "type": "distributed",
        "switch_uuid": "50 2a uuid",
        "portgroup_key": "dvportgroup-25",
    }
    assert NSX.nic() == {
        "type": "opaque",
        "opaque_network_id": "41325c3f",
        "opaque_network_type": "nsx.LogicalSwitch",
    }


def test_resolve_by_name():
    assert INDEX.resolve("VM Network DV") is DV
    with pytest.raises(NetworkError, match=r"network 'nope' not found in datacenter dc1 \(known"):
        INDEX.resolve("nope")
    twice = NetworkIndex([STD, Network("VM Network", "distributed", "DSwitch", "u", "k")], "dc1")
    with pytest.raises(NetworkError) as err:
        twice.resolve("VM Network")
    msg = str(err.value)
    assert "'VM Network' is ambiguous in datacenter dc1: 2 networks" in msg
    assert "standard port group; distributed port group on switch DSwitch" in msg
    assert "rename the port group so that its name is unique" in msg


def test_a_backing_names_its_network():
    assert INDEX.name_of(DV.nic()) == "VM Network DV"
    assert INDEX.name_of(NSX.nic()) == "seg"
    assert INDEX.name_of({"type": "standard", "network": "x"}) == "x"
    assert (
        INDEX.name_of({"type": "distributed", "switch_uuid": "u", "portgroup_key": "gone"}) is None
    )
    assert INDEX.name_of(None) is None


def test_pyvmomi_backings_round_trip():
    for net in (STD, DV, NSX):
        assert nic_of_backing(backing_for(net)) == net.nic()
    assert nic_of_backing(None) is None


def _cur(network, backing):
    return {"host": "h1", "network": network, "network_backing": backing, "vgpus": []}


def _want(net):
    return VmDesired("vm", host="h1", network=net.name, network_backing=net.nic(), vgpus=[])


def test_right_backing_is_unchanged():
    cur = _cur(DV.name, DV.nic())
    after = desired_view(_want(DV), cur)
    assert [c for c in changes(current_view(cur), after) if c.startswith("network")] == []


def test_wrong_backing_type_is_corrected_and_the_diff_says_from_to():
    # a NIC whose standard backing names the DV port group (vCenter leaves it disconnected)
    cur = _cur(DV.name, {"type": "standard", "network": DV.name})
    (line,) = [
        c for c in changes(current_view(cur), desired_view(_want(DV), cur)) if "network" in c
    ]
    assert line == (
        "network: 'VM Network DV' (standard port group, NetworkBackingInfo) -> 'VM Network DV' "
        "(distributed port group dvportgroup-25 on switch 50 2a uuid, "
        "DistributedVirtualPortBackingInfo)"
    )


def test_moving_networks_is_one_line():
    cur = _cur(STD.name, STD.nic())
    lines = [c for c in changes(current_view(cur), desired_view(_want(NSX), cur)) if "network" in c]
    assert lines == [
        "network: 'VM Network' (standard port group, NetworkBackingInfo) -> 'seg' (NSX opaque "
        "network 41325c3f of type nsx.LogicalSwitch, OpaqueNetworkBackingInfo)"
    ]
    assert nic_label(None) == "no NIC"
