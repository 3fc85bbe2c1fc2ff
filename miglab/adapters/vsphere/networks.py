"""Which vSphere network a VM's NIC names, and the NIC backing that network needs.

vSphere API (real-lab notes V12): ``VirtualEthernetCardNetworkBackingInfo`` (``deviceName``) is
for standard port groups only; a distributed port group (vDS, NSX segments on a VDS included)
needs ``DistributedVirtualPortBackingInfo`` (``port`` = the switch's uuid and the port group's
key), an NSX opaque network (``OpaqueNetwork``) ``OpaqueNetworkBackingInfo`` (its summary's
``opaqueNetworkId`` and ``opaqueNetworkType``), as community.vmware's vmware_guest_network builds
them. vCenter refuses a standard backing naming a distributed port group (or leaves the NIC
disconnected).

A NIC's backing is compared as a plain dict (``Network.nic()`` / ``nic_of_backing``): pure Python
here, pyVmomi only inside the functions that read or build vSphere objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STANDARD, DISTRIBUTED, OPAQUE = "standard", "distributed", "opaque"
_KIND_WORDS = {
    STANDARD: "standard port group",
    DISTRIBUTED: "distributed port group",
    OPAQUE: "NSX opaque network",
}


class NetworkError(ValueError):
    """A network name that does not resolve to exactly one network of the datacenter."""


@dataclass(frozen=True)
class Network:
    name: str
    kind: str  # standard | distributed | opaque
    switch: str | None = None  # distributed: the switch's name
    switch_uuid: str | None = None
    portgroup_key: str | None = None
    opaque_id: str | None = None
    opaque_type: str | None = None
    obj: Any = field(default=None, compare=False, repr=False)  # the pyVmomi object
    # distributed: the moIds of the hosts the port group serves (the switch's members)
    host_ids: frozenset[str] | None = field(default=None, compare=False)

    def nic(self) -> dict:
        """The NIC backing this network needs, in ``nic_of_backing``'s form."""
        if self.kind == DISTRIBUTED:
            return {
                "type": DISTRIBUTED,
                "switch_uuid": self.switch_uuid,
                "portgroup_key": self.portgroup_key,
            }
        if self.kind == OPAQUE:
            return {
                "type": OPAQUE,
                "opaque_network_id": self.opaque_id,
                "opaque_network_type": self.opaque_type,
            }
        return {"type": STANDARD, "network": self.name}

    def serves(self, host_id: str) -> bool:
        """Whether a VM on this host can use the network: a distributed port group serves only
        its switch's member hosts (vSphere Networking: hosts must be associated with the
        switch; real-lab notes V12). Other kinds are not checked here."""
        return self.kind != DISTRIBUTED or self.host_ids is None or host_id in self.host_ids

    def describe(self) -> str:
        where = f" on switch {self.switch}" if self.switch else ""
        return f"{_KIND_WORDS.get(self.kind, self.kind)}{where}"


class NetworkIndex:
    """The networks of one datacenter, looked up by name or by a NIC's backing."""

    def __init__(self, networks: list[Network], datacenter: str = ""):
        self.networks = list(networks)
        self.datacenter = datacenter

    def resolve(self, name: str) -> Network:
        """The one network called ``name``; NetworkError naming it when none or several are."""
        found = [n for n in self.networks if n.name == name]
        where = f" in datacenter {self.datacenter}" if self.datacenter else ""
        if not found:
            known = sorted({n.name for n in self.networks})
            shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
            raise NetworkError(f"network {name!r} not found{where} (known: {shown or 'none'})")
        if len(found) > 1:
            kinds = "; ".join(n.describe() for n in found)
            raise NetworkError(
                f"network {name!r} is ambiguous{where}: {len(found)} networks have that name "
                f"({kinds}); rename the port group so that its name is unique"
            )
        return found[0]

    def name_of(self, nic: dict | None) -> str | None:
        """The name of the network a NIC backing (``nic_of_backing``) points at, if known."""
        if not nic:
            return None
        if nic.get("type") == STANDARD:
            return nic.get("network")
        for n in self.networks:
            if n.kind != STANDARD and n.nic() == nic:
                return n.name
        return None


def nic_label(nic: dict | None, name: str | None = None) -> str:
    """A NIC backing for a human: ``'VM Network DV' (distributed port group dvportgroup-25 on
    switch 9cb8..., DistributedVirtualPortBackingInfo)``; ``name``: the network's, when known."""
    if not nic:
        return "no NIC"
    kind = nic.get("type")
    if kind == DISTRIBUTED:
        what = (
            f"distributed port group {nic.get('portgroup_key')} on switch "
            f"{nic.get('switch_uuid')}, DistributedVirtualPortBackingInfo"
        )
    elif kind == OPAQUE:
        what = (
            f"NSX opaque network {nic.get('opaque_network_id')} of type "
            f"{nic.get('opaque_network_type')}, OpaqueNetworkBackingInfo"
        )
    else:
        name = nic.get("network")
        what = "standard port group, NetworkBackingInfo"
    return f"{name!r} ({what})" if name else f"({what})"


# --- pyVmomi ------------------------------------------------------------------------------------
def collect_networks(si, dc) -> NetworkIndex:
    """Every network of a datacenter, with what its NIC backing needs (four property reads)."""
    from pyVmomi import vim

    from miglab.adapters.vsphere import props

    switches = {
        obj._moId: p
        for obj, p in props.collect(si, vim.DistributedVirtualSwitch, ["name", "uuid"], dc)
    }
    portgroups = {
        obj._moId: p
        for obj, p in props.collect(
            si,
            vim.dvs.DistributedVirtualPortgroup,
            ["key", "config.distributedVirtualSwitch", "host"],
            dc,
        )
    }
    opaque = {
        obj._moId: p.get("summary")
        for obj, p in props.collect(si, vim.OpaqueNetwork, ["summary"], dc)
    }
    out = []
    for obj, p in props.collect(si, vim.Network, ["name"], dc):
        name = p.get("name")
        if name is None:
            continue
        moid = obj._moId
        if moid in portgroups:
            sw_ref = portgroups[moid].get("config.distributedVirtualSwitch")
            sw = switches.get(sw_ref._moId, {}) if sw_ref is not None else {}
            out.append(
                Network(
                    name,
                    DISTRIBUTED,
                    switch=sw.get("name"),
                    switch_uuid=sw.get("uuid"),
                    portgroup_key=portgroups[moid].get("key"),
                    obj=obj,
                    host_ids=frozenset(h._moId for h in portgroups[moid].get("host") or []),
                )
            )
        elif moid in opaque:
            summary = opaque[moid]
            out.append(
                Network(
                    name,
                    OPAQUE,
                    opaque_id=getattr(summary, "opaqueNetworkId", None),
                    opaque_type=getattr(summary, "opaqueNetworkType", None),
                    obj=obj,
                )
            )
        else:
            out.append(Network(name, STANDARD, obj=obj))
    return NetworkIndex(out, getattr(dc, "name", ""))


def nic_of_backing(backing) -> dict | None:
    """A NIC's pyVmomi backing as ``Network.nic()``'s dict (None: not a network backing)."""
    from pyVmomi import vim

    card = vim.vm.device.VirtualEthernetCard
    if isinstance(backing, card.DistributedVirtualPortBackingInfo):
        port = backing.port
        return {
            "type": DISTRIBUTED,
            "switch_uuid": getattr(port, "switchUuid", None),
            "portgroup_key": getattr(port, "portgroupKey", None),
        }
    if isinstance(backing, card.OpaqueNetworkBackingInfo):
        return {
            "type": OPAQUE,
            "opaque_network_id": backing.opaqueNetworkId,
            "opaque_network_type": backing.opaqueNetworkType,
        }
    if isinstance(backing, card.NetworkBackingInfo):
        return {"type": STANDARD, "network": backing.deviceName}
    return None


def backing_for(net: Network):
    """The pyVmomi NIC backing a network needs (real-lab notes V12)."""
    from pyVmomi import vim

    card = vim.vm.device.VirtualEthernetCard
    if net.kind == DISTRIBUTED:
        return card.DistributedVirtualPortBackingInfo(
            port=vim.dvs.PortConnection(switchUuid=net.switch_uuid, portgroupKey=net.portgroup_key)
        )
    if net.kind == OPAQUE:
        return card.OpaqueNetworkBackingInfo(
            opaqueNetworkId=net.opaque_id, opaqueNetworkType=net.opaque_type
        )
    return card.NetworkBackingInfo(deviceName=net.name, network=net.obj)
