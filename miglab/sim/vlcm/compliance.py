"""Compliance of a host with a cluster's desired image (pure functions; the shapes are VMware's
HostCompliance / ClusterCompliance, the rules are this simulator's: see README.md, "Scan").

An image here is ``{"base_image": {"version", "display_name", "display_version", "release_date"},
"components": {name: version}}``; ``details(name, version)`` gives a depot's
``{"display_name", "display_version", "vendor"}`` for an image component, or None."""

from __future__ import annotations

import re
from collections.abc import Callable

IMPACTS = ("NO_IMPACT", "MAINTENANCE_MODE_REQUIRED", "REBOOT_REQUIRED")
# Components whose change needs a reboot: a host driver is only loaded at boot (real-lab notes on
# NVIDIA's vGPU Manager; VMware's reference leaves impact to the components' metadata).
REBOOT_VENDORS = {"NVIDIA"}

Details = Callable[[str, str], "dict | None"]


def version_key(version: str) -> tuple:
    """A sort key for ESXi-style versions ("8.0.3-0.0.24022510", "535.154.02-1OEM.800.1.0...")."""
    return tuple(int(p) if p.isdigit() else p for p in re.findall(r"\d+|[A-Za-z]+", version))


def notifications(info=(), warnings=(), errors=()) -> dict:
    return {"info": list(info), "warnings": list(warnings), "errors": list(errors)}


def notification(now: str, ident: str, text: str, *args: str) -> dict:
    return {
        "id": ident,
        "time": now,
        "message": {"id": ident, "default_message": text, "args": list(args)},
    }


def base_image_info(base: dict) -> dict:
    return {
        "version": base.get("version"),
        "details": {
            "display_name": base.get("display_name", "ESXi"),
            "display_version": base.get("display_version", base.get("version")),
            "release_date": base.get("release_date"),
        },
    }


def component_info(version: str, details: dict | None) -> dict:
    info: dict = {"version": version}
    if details:
        info["details"] = {
            "display_name": details.get("display_name", ""),
            "display_version": details.get("display_version", version),
            "vendor": details.get("vendor", ""),
        }
    return info


def _max_impact(impacts) -> str:
    return max(impacts, key=IMPACTS.index, default="NO_IMPACT")


def _component(name: str, target: dict | None, current: dict | None, now: str) -> tuple[dict, str]:
    """(ComponentCompliance, impact): ``target``/``current`` are ComponentInfo or None."""
    if target and current and target["version"] == current["version"]:
        status, impact, notes = "COMPLIANT", "NO_IMPACT", notifications()
    else:
        vendor = ((target or current or {}).get("details") or {}).get("vendor", "")
        impact = "REBOOT_REQUIRED" if vendor in REBOOT_VENDORS else "MAINTENANCE_MODE_REQUIRED"
        status = "NON_COMPLIANT"
        if current is None:
            text = f"Component {name} {target['version']} is in the image but not on the host."
            notes = notifications(info=[notification(now, "miglab.vlcm.component.missing", text)])
        elif target is None:
            text = (
                f"Component {name} {current['version']} is on the host but not in the image; "
                "remediation removes it."
            )
            notes = notifications(warnings=[notification(now, "miglab.vlcm.component.extra", text)])
        else:
            text = (
                f"Component {name} is {current['version']} on the host, "
                f"{target['version']} in the image."
            )
            notes = notifications(info=[notification(now, "miglab.vlcm.component.version", text)])
    return (
        {
            "status": status,
            "current": current,
            "target": target,
            "current_source": "USER" if current else None,
            "target_source": "USER" if target else None,
            "notifications": notes,
        },
        impact,
    )


def host_compliance(
    image: dict,
    details: Details,
    base: dict,
    installed: dict[str, dict],
    commit: str,
    now: str,
) -> dict:
    """HostCompliance of a host running base image ``base`` with non-base ``installed`` components
    (the backend's shapes) against ``image``."""
    target_base = image["base_image"]
    if base.get("version") == target_base.get("version"):
        base_status, base_notes = "COMPLIANT", notifications()
    elif version_key(base.get("version", "")) > version_key(target_base.get("version", "")):
        text = (
            f"The host's base image {base.get('version')} is newer than the image's "
            f"{target_base.get('version')}: a downgrade is not supported."
        )
        base_status = "INCOMPATIBLE"
        base_notes = notifications(errors=[notification(now, "miglab.vlcm.base.downgrade", text)])
    else:
        base_status, base_notes = "NON_COMPLIANT", notifications()
    impacts = ["NO_IMPACT" if base_status == "COMPLIANT" else "REBOOT_REQUIRED"]
    components = {}
    for name in sorted(set(image["components"]) | set(installed)):
        target = None
        if name in image["components"]:
            version = image["components"][name]
            target = component_info(version, details(name, version))
        current = None
        if name in installed:
            got = installed[name]
            current = component_info(got["version"], got)
        comp, impact = _component(name, target, current, now)
        components[name] = comp
        impacts.append(impact)
    statuses = {base_status} | {c["status"] for c in components.values()}
    if "INCOMPATIBLE" in statuses:
        status = "INCOMPATIBLE"
    elif "NON_COMPLIANT" in statuses:
        status = "NON_COMPLIANT"
    else:
        status = "COMPLIANT"
    return {
        "status": status,
        "impact": _max_impact(impacts),
        "base_image": {
            "status": base_status,
            "current": base_image_info(base),
            "target": base_image_info(target_base),
            "notifications": base_notes,
        },
        "add_on": {
            "status": "COMPLIANT",
            "current": None,
            "target": None,
            "notifications": notifications(),
        },
        "components": components,
        "solutions": {},
        "notifications": notifications(),
        "scan_time": now,
        "commit": commit,
    }


def cluster_compliance(
    hosts: dict[str, dict],
    host_names: dict[str, str],
    unavailable: list[str],
    commit: str,
    now: str,
    notes: dict | None = None,
) -> dict:
    """ClusterCompliance from per-host HostCompliance (``hosts``) and unreachable host ids."""
    compliant = sorted(h for h, c in hosts.items() if c["status"] == "COMPLIANT")
    non_compliant = sorted(h for h, c in hosts.items() if c["status"] == "NON_COMPLIANT")
    incompatible = sorted(h for h, c in hosts.items() if c["status"] == "INCOMPATIBLE")
    if incompatible:
        status = "INCOMPATIBLE"
    elif non_compliant:
        status = "NON_COMPLIANT"
    elif unavailable:
        status = "UNAVAILABLE"
    else:
        status = "COMPLIANT"
    impact = _max_impact(c["impact"] for c in hosts.values())
    if unavailable and impact == "NO_IMPACT":
        impact = "UNKNOWN"
    return {
        "status": status,
        "impact": impact,
        "hosts": hosts,
        "compliant_hosts": compliant,
        "non_compliant_hosts": non_compliant,
        "incompatible_hosts": incompatible,
        "unavailable_hosts": sorted(unavailable),
        "host_info": {
            h: {"name": host_names.get(h, h), "is_vsan_witness": False}
            for h in sorted(set(hosts) | set(unavailable))
        },
        "notifications": notes or notifications(),
        "scan_time": now,
        "commit": commit,
    }
