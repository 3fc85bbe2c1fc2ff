"""Which vSphere (ESXi) and NVIDIA vGPU software releases offer a vGPU type, and what a host runs.

The catalog (``gpus/*.yaml``, key ``vgpu.since`` and ``vgpu.type_since``) says, per board and per
vGPU type, the earliest releases known to offer it; :class:`Availability` holds that and judges a
host. A host's vSphere release is the lab inventory's ``miglab_host_esxi_version`` ("8.0.3");
its vGPU software release is read from the host driver version (``esxi_vgpu_driver_version``,
"550.127.06") through :data:`VGPU_BRANCHES`, NVIDIA's vGPU software release per driver branch.
A release that is not known (no inventory value, a driver branch not in the table, a minimum
whose minor release the driver branch cannot tell) is not judged: no refusal, a note instead.

Sources: ``catalog/SOURCES.md`` section "vGPU versions".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# NVIDIA vGPU software major release -> host driver branch, each with its source (SOURCES.md).
# Releases without a source here (9, 10, 11, 20 and later) are left out: a host driver of
# another branch is "vGPU software unknown" and not judged.
VGPU_BRANCHES: dict[int, tuple[int, str]] = {
    8: (418, "vGPU 8.x release notes (R418): 8.0 = 418.66 ... 8.10 = 418.240"),
    12: (460, "vGPU 12.x release notes (R460): 12.0 = 460.32.03 ... 12.4 = 460.106.00"),
    13: (470, "NVIDIA AI Enterprise 1.4 release notes: vGPU 13.5 = Virtual GPU Manager 470.161.02"),
    14: (510, "vGPU 14.x release notes (R510): 14.0 = 510.47.03"),
    15: (525, "vGPU 15.x release notes (R525): 15.0 = 525.60.12, 15.1 = 525.85.07"),
    16: (535, "NVIDIA vGPU software lifecycle: 'NVIDIA vGPU 16 R535 Long-Term Support'"),
    17: (550, "NVIDIA vGPU software lifecycle: 'NVIDIA vGPU 17 R550 Production'"),
    18: (570, "570.211.01 = vGPU 18.6 (Azure/aks-gpu#154; no NVIDIA page found)"),
    19: (580, "vGPU 19.0 release notes for VMware vSphere (R580): 19.0 = 580.65.05"),
}
BRANCH_TO_RELEASE = {branch: major for major, (branch, _) in VGPU_BRANCHES.items()}

ESXI_VAR = "miglab_host_esxi_version"
DRIVER_VAR = "esxi_vgpu_driver_version"

# "8.0.3", "8.0", "7.0.3.00100" (a patch level), "8.0 U3", "8.0u3", "8.0 Update 3"
_RELEASE = re.compile(
    r"(?P<major>\d{1,2})\.(?P<minor>\d{1,2})"
    r"(?:\.(?P<update>\d{1,2})(?:\.\d+)*|\s*(?:u|update)\s*(?P<u>\d{1,2}))?",
    re.IGNORECASE,
)
_DRIVER = re.compile(r"(?P<branch>\d{3})\.\d{1,3}(?:\.\d{1,3})?")
_VGPU_RELEASE = re.compile(r"(?P<major>\d{1,2})(?:\.(?P<minor>\d{1,2}))?")


def parse_vsphere(value) -> tuple[int, int, int]:
    """A vSphere/ESXi release as (major, minor, update): "8.0.3", "8.0 U3" and "8.0u3" are
    (8, 0, 3); "8.0" is (8, 0, 0). Raises ValueError for anything else (a bool, "8", "latest")."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{value!r} is not an ESXi release")
    text = str(value).strip()
    m = _RELEASE.fullmatch(text)
    if not m:
        raise ValueError(f'{text!r} is not an ESXi release (like "8.0.3" or "8.0 U3")')
    update = m.group("update") or m.group("u") or 0
    return int(m.group("major")), int(m.group("minor")), int(update)


def format_vsphere(release: tuple[int, int, int]) -> str:
    """(8, 0, 3) -> "8.0 U3"; (8, 0, 0) -> "8.0" (as VMware writes its releases)."""
    major, minor, update = release
    return f"{major}.{minor}" + (f" U{update}" if update else "")


def parse_vgpu_release(value) -> tuple[int, int | None]:
    """An NVIDIA vGPU software release as (major, minor): "17.4" -> (17, 4), "16" -> (16, None).
    Raises ValueError for anything else."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{value!r} is not an NVIDIA vGPU software release")
    m = _VGPU_RELEASE.fullmatch(str(value).strip())
    if not m:
        raise ValueError(f'{value!r} is not an NVIDIA vGPU software release (like "17.4")')
    return int(m.group("major")), int(m.group("minor")) if m.group("minor") else None


def format_vgpu_release(release: tuple[int, int | None]) -> str:
    major, minor = release
    return f"{major}.{minor}" if minor is not None else f"{major}.x"


def driver_branch(version) -> int | None:
    """The driver branch of a host driver version: "550.127.06" -> 550; None when it is not one
    (a value Ansible fills in later, a typo)."""
    if isinstance(version, bool) or not isinstance(version, str | int | float):
        return None
    m = _DRIVER.fullmatch(str(version).strip())
    return int(m.group("branch")) if m else None


def vgpu_release_of_driver(version) -> int | None:
    """The NVIDIA vGPU software major release a host driver version belongs to ("550.127.06" ->
    17); None when the version or its branch is not known (:data:`VGPU_BRANCHES`)."""
    branch = driver_branch(version)
    return BRANCH_TO_RELEASE.get(branch) if branch is not None else None


@dataclass(frozen=True)
class Availability:
    """The earliest releases known to offer a vGPU type (None: not known, not judged).

    ``vsphere_min`` is (major, minor, update); ``vgpu_software_min`` is (major, minor or None).
    ``source`` names where the catalog has them from (tags of SOURCES.md)."""

    vsphere_min: tuple[int, int, int] | None = None
    vgpu_software_min: tuple[int, int | None] | None = None
    source: str = ""

    @classmethod
    def from_dict(cls, raw, where: str = "since") -> Availability:
        """From a catalog mapping ``{vsphere: "8.0.3", vgpu_software: "15.0", source: "..."}``;
        raises ValueError naming ``where`` for a bad key or value."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: must be a mapping of vsphere, vgpu_software, source")
        unknown = set(raw) - {"vsphere", "vgpu_software", "source"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        try:
            vsphere = parse_vsphere(raw["vsphere"]) if raw.get("vsphere") is not None else None
            vgpu = (
                parse_vgpu_release(raw["vgpu_software"])
                if raw.get("vgpu_software") is not None
                else None
            )
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        return cls(vsphere, vgpu, str(raw.get("source") or ""))

    def merged(self, override: Availability) -> Availability:
        """This board-wide availability with a type's own values taking precedence."""
        return Availability(
            override.vsphere_min or self.vsphere_min,
            override.vgpu_software_min or self.vgpu_software_min,
            "; ".join(s for s in (self.source, override.source) if s),
        )

    @property
    def known(self) -> bool:
        return self.vsphere_min is not None or self.vgpu_software_min is not None

    def describe(self) -> str:
        """ "vSphere 8.0 U3, NVIDIA vGPU software 15.0" (what is known)."""
        parts = []
        if self.vsphere_min:
            parts.append(f"vSphere {format_vsphere(self.vsphere_min)}")
        if self.vgpu_software_min:
            parts.append(f"NVIDIA vGPU software {format_vgpu_release(self.vgpu_software_min)}")
        return ", ".join(parts) or "no known minimum"

    def vsphere_ok(self, esxi_version) -> bool | None:
        """True/False whether a host of this ESXi release offers the type; None: not judged
        (no minimum known, or the host's release unknown)."""
        if self.vsphere_min is None or esxi_version is None:
            return None
        return parse_vsphere(esxi_version) >= self.vsphere_min

    def vgpu_software_ok(self, driver_version) -> bool | None:
        """True/False whether a host driver of this version offers the type; None: not judged
        (no minimum known, the driver's vGPU release unknown, or only its minor release, which
        the driver branch cannot tell, would decide)."""
        if self.vgpu_software_min is None:
            return None
        major = vgpu_release_of_driver(driver_version)
        if major is None:
            return None
        need_major, need_minor = self.vgpu_software_min
        if major != need_major:
            return major > need_major
        return True if not need_minor else None
