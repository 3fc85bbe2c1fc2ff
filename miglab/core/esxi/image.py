"""NVIDIA's host components in a vSphere Lifecycle Manager (vLCM) image: which components of the
depot the cluster's desired image needs, the draft change that puts them there, and what a
compliance scan says about a host -- decided here, sent by ``miglab.adapters.vsphere.lifecycle``.

On a cluster managed by a single image, a component installed with esxcli is drift: the cluster
is non-compliant and the next remediation removes it (real-lab notes V16, Broadcom KB 440252).
The supported way is to import NVIDIA's offline bundles into vCenter's depot, add their
components to the cluster's desired image and remediate the hosts. Shapes follow VMware's
vSphere Automation API (``esx/settings``): ``SoftwareInfo.components`` maps a component name to
``{"version", "details": {"display_name", "display_version", "vendor"}}``; a depot-content entry
is ``{"name", "display_name", "vendor", "versions": [{"version", "display_version", ...}]}``;
``ClusterCompliance`` / ``HostCompliance`` carry ``status`` (COMPLIANT, NON_COMPLIANT,
INCOMPATIBLE, UNAVAILABLE) and per component ``current`` / ``target``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from miglab.core.esxi.driver import DRIVER_NAME_PATTERN

DAEMON_COMPONENT = "nvd-gpu-mgmt-daemon"  # NVIDIA AI Enterprise 5 user guide 2.7.1
LIFECYCLE_MODES = ("auto", "image", "esxcli")


class ImageError(ValueError):
    """The depot or the image cannot give what was asked; the message says what is there."""


@dataclass(frozen=True)
class Wanted:
    """NVIDIA's host components a cluster image should hold: the vGPU Manager of ``driver`` and,
    when ``daemon``, the GPU Management Daemon of the same version."""

    driver: str
    daemon: bool = True
    name_pattern: str = DRIVER_NAME_PATTERN
    component: str | None = None  # the vGPU Manager's component name, when several would match

    def is_manager(self, name: str) -> bool:
        if self.component:
            return name == self.component
        return bool(re.search(self.name_pattern, name)) and name != DAEMON_COMPONENT

    def managed(self, name: str) -> bool:
        """Whether miglab owns this component name in the image (adds, replaces, removes it)."""
        return name == DAEMON_COMPONENT or bool(re.search(self.name_pattern, name))


def _matches_version(entry: dict, driver: str) -> bool:
    version = str(entry.get("version") or "")
    return str(entry.get("display_version") or "") == driver or version.split("-", 1)[0] == driver


def pick_components(depot: list[dict], wanted: Wanted, image: dict | None = None) -> dict[str, str]:
    """``{component: version}`` of the depot's components that give ``wanted``; ImageError names
    what is missing or ambiguous (and what the depot has) when the depot cannot."""
    image = image or {}
    found: dict[str, list[tuple[str, str]]] = {"manager": [], "daemon": []}
    for comp in depot:
        name = str(comp.get("name") or "")
        role = (
            "daemon" if name == DAEMON_COMPONENT else "manager" if wanted.is_manager(name) else ""
        )
        if not role:
            continue
        for v in comp.get("versions") or ():
            if _matches_version(v, wanted.driver):
                found[role].append((name, str(v["version"])))
    picked: dict[str, str] = {}
    managers = sorted(set(found["manager"]))
    if len({n for n, _ in managers}) > 1:
        # Two flavours of the same driver (NVD-AIE-800 and NVD-VGPU-800): keep the image's.
        in_image = [(n, v) for n, v in managers if n in image]
        if len({n for n, _ in in_image}) != 1:
            names = ", ".join(sorted({n for n, _ in managers}))
            raise ImageError(
                f"the depot holds driver {wanted.driver} in several components ({names}): "
                "name the one to use (esxi_vgpu_driver_image_component)"
            )
        managers = in_image
    if not managers:
        raise ImageError(
            f"vCenter's depot holds no NVIDIA vGPU Manager component of driver {wanted.driver}"
            f" (NVIDIA components there: {_nvidia_summary(depot, wanted)})"
        )
    picked[managers[-1][0]] = managers[-1][1]
    if wanted.daemon:
        daemons = sorted(set(found["daemon"]))
        if not daemons:
            raise ImageError(
                f"vCenter's depot holds no {DAEMON_COMPONENT} component of version {wanted.driver}"
                f" (NVIDIA components there: {_nvidia_summary(depot, wanted)})"
            )
        picked[DAEMON_COMPONENT] = daemons[-1][1]
    return picked


def _nvidia_summary(depot: list[dict], wanted: Wanted) -> str:
    rows = [
        f"{c.get('name')} {v.get('display_version') or v.get('version')}"
        for c in depot
        if wanted.managed(str(c.get("name") or ""))
        for v in c.get("versions") or ()
    ]
    return ", ".join(sorted(rows)) or "none"


def depot_has(depot: list[dict], wanted: Wanted, image: dict | None = None) -> bool:
    try:
        pick_components(depot, wanted, image)
    except ImageError:
        return False
    return True


@dataclass(frozen=True)
class ImageChange:
    """A draft's component change: ``to_set`` {name: version}, ``to_delete`` [name]."""

    to_set: dict[str, str] = field(default_factory=dict)
    to_delete: tuple[str, ...] = ()
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.to_set and not self.to_delete

    def as_patch(self) -> dict:
        """The body of PATCH .../drafts/{draft}/software/components."""
        return {
            "components_to_set": dict(self.to_set),
            "components_to_delete": list(self.to_delete),
        }

    def describe(self) -> list[str]:
        lines = [
            f"{n} {self.before[n]} -> {v}" if n in self.before else f"add {n} {v}"
            for n, v in sorted(self.to_set.items())
        ]
        lines += [f"remove {n} {self.before.get(n, '')}".rstrip() for n in self.to_delete]
        return lines


def image_versions(components: dict) -> dict[str, str]:
    """``{name: version}`` of a SoftwareInfo's (or a components list's) components."""
    return {str(n): str((c or {}).get("version") or "") for n, c in (components or {}).items()}


def plan_image(components: dict, picked: dict[str, str], wanted: Wanted) -> ImageChange:
    """The change that makes the image hold exactly ``picked`` among the components miglab owns:
    set what differs, delete another NVIDIA vGPU Manager (another flavour's name); everything
    else in the image (base image, vendor add-on, other components) stays as the admin made it."""
    before = image_versions(components)
    to_set = {n: v for n, v in picked.items() if before.get(n) != v}
    to_delete = tuple(sorted(n for n in before if wanted.is_manager(n) and n not in picked))
    after = {n: v for n, v in before.items() if n not in to_delete}
    after.update(picked)
    return ImageChange(to_set, to_delete, before, after)


# --- compliance ------------------------------------------------------------------------------
@dataclass(frozen=True)
class HostState:
    """What a scan says about one host, split into miglab's components and everything else."""

    host: str
    name: str
    status: str
    ours: tuple[str, ...]  # "NVD-AIE-800: 550.127.06-1OEM... on host, image wants ..."
    other: tuple[str, ...]  # non-compliance miglab does not own (base image, other components)

    @property
    def compliant(self) -> bool:
        return self.status == "COMPLIANT"


def _version_of(info: dict | None) -> str:
    return str((info or {}).get("version") or "none")


def host_state(host_id: str, compliance: dict, wanted: Wanted) -> HostState:
    """Read one host out of a ClusterCompliance."""
    info = (compliance.get("host_info") or {}).get(host_id) or {}
    name = str(info.get("name") or host_id)
    hosts = compliance.get("hosts") or {}
    if host_id in (compliance.get("unavailable_hosts") or ()) or host_id not in hosts:
        return HostState(
            host_id, name, "UNAVAILABLE", (), ("no compliance data (host unavailable)",)
        )
    hc = hosts[host_id] or {}
    ours: list[str] = []
    other: list[str] = []
    base = hc.get("base_image") or {}
    if base.get("status") not in (None, "COMPLIANT"):
        other.append(
            f"base image {_version_of(base.get('current'))} on the host, "
            f"image wants {_version_of(base.get('target'))}"
        )
    if (hc.get("add_on") or {}).get("status") not in (None, "COMPLIANT"):
        other.append("vendor add-on differs")
    for cname, cc in sorted((hc.get("components") or {}).items()):
        if (cc or {}).get("status") in (None, "COMPLIANT"):
            continue
        text = (
            f"{cname}: {_version_of(cc.get('current'))} on the host, "
            f"image wants {_version_of(cc.get('target'))}"
        )
        (ours if wanted.managed(cname) else other).append(text)
    status = str(hc.get("status") or "UNAVAILABLE")
    return HostState(host_id, name, status, tuple(ours), tuple(other))


def remediation_problems(state: HostState, allow_other_drift: bool) -> list[str]:
    """Reasons not to remediate a host: remediation applies the whole image, so a host that
    differs in more than NVIDIA's components would get those changes too (an ESXi update, a
    vendor component removed) -- not what a driver install should do unasked."""
    if state.status == "UNAVAILABLE":
        return [f"{state.name}: vLCM has no compliance data for it (disconnected or not scanned)"]
    if state.status == "INCOMPATIBLE":
        why = "; ".join(state.other + state.ours)
        return [f"{state.name}: the image is INCOMPATIBLE with it: {why}"]
    if state.other and not allow_other_drift:
        return [
            f"{state.name}: remediation would also change {'; '.join(state.other)} "
            "(set esxi_vgpu_driver_image_remediate_other_drift: true to let vLCM do that)"
        ]
    return []


def summarize(compliance: dict) -> dict:
    """``{"status", "hosts": {name: status}}`` of a ClusterCompliance, for reports."""
    info = compliance.get("host_info") or {}
    hosts = {
        str((info.get(h) or {}).get("name") or h): str((c or {}).get("status"))
        for h, c in (compliance.get("hosts") or {}).items()
    }
    for h in compliance.get("unavailable_hosts") or ():
        hosts[str((info.get(h) or {}).get("name") or h)] = "UNAVAILABLE"
    return {"status": compliance.get("status"), "impact": compliance.get("impact"), "hosts": hosts}


def apply_failures(result: dict) -> list[str]:
    """Hosts an ApplyResult reports as failed, with their notifications' texts."""
    info = result.get("host_info") or {}
    out = []
    for h in result.get("failed_hosts") or ():
        status = (result.get("host_status") or {}).get(h) or {}
        msgs = [
            (n.get("message") or {}).get("default_message", "")
            for kind in ("errors", "warnings")
            for n in (status.get("notifications") or {}).get(kind) or ()
        ]
        out.append(
            f"{(info.get(h) or {}).get('name') or h}: {'; '.join(m for m in msgs if m) or 'failed'}"
        )
    return out


def lifecycle_decision(mode: str, image_managed: bool, esxcli_override: bool) -> dict:
    """Which install path the driver role takes on a host: ``{"path": "image"|"esxcli",
    "problem": str|None, "warning": str|None}``."""
    if mode not in LIFECYCLE_MODES:
        return {
            "path": None,
            "problem": f"lifecycle {mode!r} is not one of {', '.join(LIFECYCLE_MODES)}",
            "warning": None,
        }
    if mode == "image" and not image_managed:
        return {
            "path": None,
            "problem": (
                "the host's cluster is not managed by a vLCM image (lifecycle: image asks for one)"
            ),
            "warning": None,
        }
    if image_managed and mode != "esxcli":
        return {"path": "image", "problem": None, "warning": None}
    if image_managed and not esxcli_override:
        return {
            "path": None,
            "problem": (
                "the host's cluster is managed by a vLCM image: a component installed with esxcli "
                "makes it non-compliant and the next remediation removes it (real-lab notes V16); "
                "use lifecycle auto or image, or set esxi_vgpu_driver_esxcli_on_image_cluster: true"
            ),
            "warning": None,
        }
    warning = (
        "installing with esxcli on a vLCM image-managed cluster (override): the cluster will be "
        "non-compliant and a remediation will remove the driver"
        if image_managed
        else None
    )
    return {"path": "esxcli", "problem": None, "warning": warning}
