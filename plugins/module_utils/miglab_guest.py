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
* ``lsmod`` (kmod, from ``/proc/modules``): ``Module  Size  Used by`` then one module a line,
  its use count third.
* ``/proc/<pid>/cgroup`` (cgroup v2 ``0::/path``, v1 ``N:controllers:/path``): a systemd
  service's processes sit in ``/system.slice/<unit>.service``, a Docker container's in
  ``/system.slice/docker-<id>.scope`` (systemd cgroup driver) or ``/docker/<id>`` (cgroupfs).
* Docker's ``/etc/docker/daemon.json`` (a JSON object); the NVIDIA runtime entry is what
  ``nvidia-ctk runtime configure --runtime=docker`` writes (NVIDIA container toolkit,
  pkg/config/engine/docker/docker.go: ``runtimes.<name> = {"args": [], "path": <path>}``, plus
  ``default-runtime`` with ``--set-as-default``).
"""

from __future__ import annotations

import copy
import json
import os
import re

__all__ = [
    "GuestError",
    "daemon_json_diff",
    "dump_daemon_json",
    "load_daemon_json",
    "merge_daemon_json",
    "driver_users",
    "needs_reboot",
    "parse_lsmod",
    "parse_proc_cgroup",
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
    *,
    installed: str | None,
    loaded: str | None,
    nouveau_loaded: bool,
    library_mismatch: bool = False,
) -> tuple[bool, str]:
    """Whether the guest must reboot for the installed driver to run, and why.

    nouveau still loaded keeps the NVIDIA module from binding the GPU; a loaded NVIDIA module of
    another version than the installed one (or nvidia-smi's "Driver/library version mismatch",
    where the module's version cannot be read) means the new module could not be loaded in
    place. A driver that is installed but not loaded at all (first install) is loaded on first
    use or at the next boot; no reboot is forced for it.
    """
    if installed and nouveau_loaded:
        return True, "the nouveau module is loaded; it must be unloaded (blacklisted) by a reboot"
    if installed and loaded and loaded != installed:
        return True, f"kernel module {loaded} is loaded but driver {installed} is installed"
    if installed and library_mismatch:
        return True, (
            f"nvidia-smi reports a driver/library version mismatch: an older kernel module is "
            f"loaded but driver {installed} is installed"
        )
    return False, ""


# --------------------------------------------------------------------------------------------
# kernel modules and the processes that use the driver
# --------------------------------------------------------------------------------------------

_CONTAINER_RES = (
    re.compile(r"/docker-(?P<id>[0-9a-f]{12,64})\.scope$"),
    re.compile(r"/docker/(?P<id>[0-9a-f]{12,64})$"),
)
_UNIT_RE = re.compile(r"/(?P<unit>[^/]+\.service)$")


def parse_lsmod(text: str) -> dict:
    """``lsmod`` output -> ``{module: use count}`` (the header line is skipped)."""
    modules = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] != "Module" and parts[2].isdigit():
            modules[parts[0]] = int(parts[2])
    return modules


def parse_proc_cgroup(text: str) -> dict:
    """``/proc/<pid>/cgroup`` -> ``{"unit": name or None, "container": id or None}``.

    The unified (v2) line ``0::/path`` is used when present, else the first v1 line naming a
    path. A Docker container's processes are named by the container, a systemd service's by
    its unit; anything else (a login session, the init scope) by neither."""
    path = ""
    for line in (text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[0] == "0" and parts[1] == "":
            path = parts[2].strip()
            break
        if len(parts) == 3 and not path and parts[2].strip() not in ("", "/"):
            path = parts[2].strip()
    for container_re in _CONTAINER_RES:
        m = container_re.search(path)
        if m:
            return {"unit": None, "container": m.group("id")}
    m = _UNIT_RE.search(path)
    return {"unit": m.group("unit") if m else None, "container": None}


def driver_users(proc: str = "/proc") -> list:
    """The processes holding an NVIDIA device file (``/dev/nvidia*``) open, as ``lsof`` and
    ``fuser`` find them (links in ``/proc/<pid>/fd``): ``[{pid, comm, unit, container}]``, by
    pid. They keep the kernel module in use, so the driver's installer cannot replace it."""
    users = []
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        fd_dir = os.path.join(proc, entry, "fd")
        try:
            links = [os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)]
        except OSError:
            continue  # gone, or not ours to read
        if not any(link.startswith("/dev/nvidia") for link in links):
            continue
        comm = _read_text(os.path.join(proc, entry, "comm")).strip() or "?"
        where = parse_proc_cgroup(_read_text(os.path.join(proc, entry, "cgroup")))
        users.append({"pid": int(entry), "comm": comm, **where})
    return sorted(users, key=lambda user: user["pid"])


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


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
