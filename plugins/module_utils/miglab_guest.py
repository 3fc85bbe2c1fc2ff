"""Guest-side logic of the guest roles: NVIDIA GRID driver state and Docker's daemon.json.

This file is shipped to the managed guests as Ansible module_utils (the modules
``miglab.lab.docker_daemon_json`` and ``miglab.lab.nvidia_driver_info`` import it), so it uses
only the Python standard library, imports nothing from the rest of miglab and never imports
Ansible. Python 3.8+ only (``miglab.core.guest_support.GUEST_MODULE_PYTHON``, checked with vermin
by tests/unit/test_guest_python.py): it runs on the guest's python3. A guest's ``nvidia-smi -q``
is read on the controller instead, by miglab's one parser of it (``miglab.formats.nvsmi``, for
the action ``miglab.lab.vgpu_license``).

Formats understood, each from real output:

* ``nvidia-installer --version`` / ``NVIDIA-Linux-x86_64-<v>-grid.run --version``:
  ``nvidia-installer:  version 535.216.01  (buildmeister@...)  <date>``.
* ``nvidia-smi --version`` (R535+): ``DRIVER version      : 580.159.04``.
* ``/proc/driver/nvidia/version``: ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.01
  ...``; ``/sys/module/nvidia/version``: the bare version.
* Docker's ``/etc/docker/daemon.json`` (a JSON object); the NVIDIA runtime entry is what
  ``nvidia-ctk runtime configure --runtime=docker`` writes (NVIDIA container toolkit,
  pkg/config/engine/docker/docker.go: ``runtimes.<name> = {"args": [], "path": <path>}``, plus
  ``default-runtime`` with ``--set-as-default``).
"""

from __future__ import annotations

import copy
import json
import re

__all__ = [
    "GuestError",
    "daemon_json_diff",
    "dump_daemon_json",
    "load_daemon_json",
    "merge_daemon_json",
    "needs_reboot",
    "nvidia_runtime_settings",
    "parse_installer_version",
    "parse_kernel_module_version",
    "parse_nvidia_smi_version",
    "version_tuple",
]


class GuestError(ValueError):
    """Input that cannot be used (unparseable output, invalid daemon.json); the message says why."""


# --------------------------------------------------------------------------------------------
# versions
# --------------------------------------------------------------------------------------------

_VERSION_RE = re.compile(r"^\d+(?:\.\d+){1,3}$")
_INSTALLER_RE = re.compile(r"^nvidia-installer:\s+version\s+(?P<v>\d+(?:\.\d+){1,3})\b", re.M)
_SMI_VERSION_RE = re.compile(r"^DRIVER version\s*:\s*(?P<v>\d+(?:\.\d+){1,3})\s*$", re.M)
_SMI_Q_DRIVER_RE = re.compile(r"^Driver Version\s*:\s*(?P<v>\d+(?:\.\d+){1,3})\s*$", re.M)
_NVRM_RE = re.compile(r"Kernel Module\s+(?P<v>\d+(?:\.\d+){1,3})\b")


def version_tuple(version: str) -> tuple:
    """``"535.216.01"`` -> ``(535, 216, 1)``; GuestError if it is not a dotted version."""
    text = (version or "").strip()
    if not _VERSION_RE.match(text):
        raise GuestError(f"not a driver version: {version!r} (expected digits and dots)")
    return tuple(int(part) for part in text.split("."))


def parse_installer_version(text: str) -> str | None:
    """Version printed by ``nvidia-installer --version`` or ``<driver>.run --version``."""
    m = _INSTALLER_RE.search(text or "")
    return m.group("v") if m else None


def parse_nvidia_smi_version(text: str) -> str | None:
    """Driver version from ``nvidia-smi --version`` (or the ``Driver Version`` of ``-q``)."""
    m = _SMI_VERSION_RE.search(text or "") or _SMI_Q_DRIVER_RE.search(text or "")
    return m.group("v") if m else None


def parse_kernel_module_version(text: str) -> str | None:
    """Version of the loaded kernel module: ``/proc/driver/nvidia/version`` (NVRM line) or the
    bare ``/sys/module/nvidia/version``."""
    text = (text or "").strip()
    if _VERSION_RE.match(text):
        return text
    m = _NVRM_RE.search(text)
    return m.group("v") if m else None


def needs_reboot(
    *, installed: str | None, loaded: str | None, nouveau_loaded: bool
) -> tuple[bool, str]:
    """Whether the guest must reboot for the installed driver to run, and why.

    nouveau still loaded keeps the NVIDIA module from binding the GPU; a loaded NVIDIA module of
    another version than the installed one means the new module could not be loaded in place.
    A driver that is installed but not loaded at all (first install) is loaded by the installer
    or at the next boot; no reboot is forced for it.
    """
    if installed and nouveau_loaded:
        return True, "the nouveau module is loaded; it must be unloaded (blacklisted) by a reboot"
    if installed and loaded and loaded != installed:
        return True, f"kernel module {loaded} is loaded but driver {installed} is installed"
    return False, ""


# --------------------------------------------------------------------------------------------
# Docker daemon.json
# --------------------------------------------------------------------------------------------


def load_daemon_json(text: str | None, path: str = "daemon.json") -> dict:
    """Parse daemon.json; a missing (None) or blank file is ``{}``. GuestError otherwise."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise GuestError(
            f"{path} is not valid JSON ({exc}); fix or remove it, it is left untouched"
        ) from None
    if not isinstance(data, dict):
        raise GuestError(f"{path} must hold a JSON object, not {type(data).__name__}")
    return data


def merge_daemon_json(current: dict, settings: dict, remove: list | tuple = ()) -> dict:
    """``current`` with ``settings`` merged in, recursively for objects; lists and scalars in
    ``settings`` replace the current value. Keys of ``current`` not named in ``settings`` are
    kept (the NVIDIA runtime added by the toolkit survives a later Docker role run). ``remove``
    lists top-level keys, or dotted paths (``runtimes.nvidia``), to delete. Inputs are not
    modified."""
    merged = copy.deepcopy(current)
    _deep_merge(merged, settings or {})
    for path in remove or ():
        _remove_path(merged, str(path).split("."))
    return merged


def _deep_merge(target: dict, updates: dict) -> None:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def _remove_path(data: dict, parts: list) -> None:
    node = data
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return
    node.pop(parts[-1], None)


def dump_daemon_json(data: dict) -> str:
    """The text written to daemon.json: 4-space indented like ``nvidia-ctk``, keys in their
    existing order, a final newline."""
    return json.dumps(data, indent=4) + "\n"


def daemon_json_diff(before: dict | None, after: dict) -> dict:
    """An Ansible ``diff`` dict (before/after text) for a daemon.json change."""
    return {
        "before": "" if before is None else dump_daemon_json(before),
        "after": dump_daemon_json(after),
    }


def nvidia_runtime_settings(
    name: str = "nvidia",
    path: str = "nvidia-container-runtime",
    set_as_default: bool = False,
    cdi: bool = False,
) -> dict:
    """daemon.json keys that ``nvidia-ctk runtime configure --runtime=docker`` sets."""
    settings: dict = {"runtimes": {name: {"args": [], "path": path}}}
    if set_as_default:
        settings["default-runtime"] = name
    if cdi:
        settings["features"] = {"cdi": True}
    return settings


# --- local .deb files ------------------------------------------------------------------------
# Debian's file name of a binary package is <package>_<version>_<architecture>.deb (Debian
# Policy 4.x, and what dpkg-name writes; an epoch's colon may appear as %3a).
_DEB_NAME_RE = re.compile(
    r"^(?P<package>[a-z0-9][a-z0-9+.-]+)_(?P<version>[^_/]+)_(?P<arch>[a-z0-9-]+)\.deb$"
)


def deb_name_version(filename: str) -> tuple | None:
    """``(package, version)`` from a .deb's Debian file name; None for any other name."""
    m = _DEB_NAME_RE.match(filename.rsplit("/", 1)[-1])
    if not m:
        return None
    return m.group("package"), m.group("version").replace("%3a", ":").replace("%3A", ":")


def parse_dpkg_query(text: str) -> dict:
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n' PKG...`` -> installed
    packages ``{package: version}`` (status ``ii``: installed and configured)."""
    installed = {}
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[2].startswith("ii"):
            installed[parts[0]] = parts[1]
    return installed


def debs_to_install(debs: list, dpkg_query_text: str) -> list:
    """The items of a .deb list (``{src|url, ...}``, in install order) that are not installed at
    the version their file name says; an item whose file name is not Debian's stays in. Keeps
    the order: a dependency comes before what needs it."""
    installed = parse_dpkg_query(dpkg_query_text)
    todo = []
    for item in debs:
        nv = deb_name_version(str(item.get("src") or item.get("url") or ""))
        if nv is None or installed.get(nv[0]) != nv[1]:
            todo.append(item)
    return todo
