"""Power state and guest IP of many VMs, read in one PropertyCollector round trip."""

from __future__ import annotations

from collections.abc import Iterable

from miglab.adapters.vsphere import props
from miglab.adapters.vsphere.connection import ConnectionSpec, VsphereError, connect, disconnect

GUEST_PROPS = ["name", "runtime.powerState", "guest.ipAddress", "config.template"]


def read_guests(si, names: Iterable[str]) -> dict[str, dict]:
    """``{name: {"power_state": "poweredOn"|"poweredOff"|"suspended", "ip": str|None}}`` for
    the VMs of ``names`` that exist (templates are not VMs); the others are left out."""
    from pyVmomi import vim

    wanted = set(names)
    out: dict[str, dict] = {}
    for _obj, p in props.collect(si, vim.VirtualMachine, GUEST_PROPS):
        name = p.get("name")
        if name not in wanted or p.get("config.template") or name in out:
            continue
        out[name] = {
            "power_state": str(p.get("runtime.powerState") or "unknown"),
            "ip": p.get("guest.ipAddress") or None,
        }
    return out


def duplicate_ips(states: dict[str, dict]) -> list[str]:
    """One line per guest IP that several powered-on VMs of ``states`` (:func:`read_guests`)
    report: clones of one template that were not customized keep its /etc/machine-id, from
    which systemd-networkd derives its DHCP client id, and so share one lease (real-lab notes
    V13, VMware KB 82229). Ansible would reach one guest for both."""
    return [
        f"{' and '.join(sorted(names))} report the same guest IP {ip}: clones of one template "
        "that are not customized share its machine-id and so its DHCP lease (VMware KB 82229); "
        "empty /etc/machine-id in the template (or give each clone its own identity) and "
        "recreate the VMs"
        for ip, names in sorted(_shared_ips(states).items())
    ]


def unshare_ips(states: dict[str, dict]) -> tuple[dict[str, dict], list[str]]:
    """``states`` without the guest IP of powered-on VMs that share one (:func:`duplicate_ips`,
    whose lines come second), each of those marked ``ip_shared_with`` the others: an inventory
    must not point two hosts at one guest, Ansible would configure and benchmark it twice."""
    out = dict(states)
    for names in _shared_ips(states).values():
        for name in names:
            others = sorted(n for n in names if n != name)
            out[name] = {**states[name], "ip": None, "ip_shared_with": others}
    return out, duplicate_ips(states)


def _shared_ips(states: dict[str, dict]) -> dict[str, list[str]]:
    """{guest IP: the powered-on VMs reporting it} for IPs more than one VM reports."""
    by_ip: dict[str, list[str]] = {}
    for name, s in states.items():
        if s.get("ip") and s.get("power_state") == "poweredOn":
            by_ip.setdefault(s["ip"], []).append(name)
    return {ip: sorted(names) for ip, names in by_ip.items() if len(names) > 1}


def guest_states(spec: ConnectionSpec, names: Iterable[str]) -> dict[str, dict]:
    """One session: log in, read the VMs of ``names`` (:func:`read_guests`), log out.
    Raises VsphereError, phrased for the operator, on any failure."""
    si = connect(spec)
    try:
        return read_guests(si, names)
    except VsphereError:
        raise
    except Exception as exc:  # a vSphere fault or a dropped connection, not a miglab bug
        reason = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        raise VsphereError(f"cannot read the VMs from {spec.describe()}: {reason}") from None
    finally:
        disconnect(si)
