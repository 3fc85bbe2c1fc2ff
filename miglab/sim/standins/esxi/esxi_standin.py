#!/usr/bin/env python3
"""ESXi shell STAND-IN (test infrastructure, not VMware or NVIDIA software).

One program behind the commands miglab's ESXi host roles run over SSH on an ESXi host, for a
Debian container that plays the host in molecule scenarios:

    esxcli software vib list | component list | acceptance get | acceptance set --level=L
    esxcli software sources vib list -d ZIP | component apply -d ZIP | vib install -d ZIP
    vmware -v | -l | -vl
    nvidia-smi [-q] [-L] [--query-gpu=F,... --format=csv[,noheader][,nounits]]
    nvidia-smi -i IDS -mig 0|1 | -i IDS -r
    nvidia-smi vgpu -q [-i IDS] | mig -lgi [-i IDS]   (the vGPUs the simulated vCenter runs here)
    esxi-standin init [gpus=MODEL:N,...] [mig=I,...] [in_use=I,...] [esxi=V] [acceptance=L]
    vmkload_mod -l                                    (the nvidia module while the driver runs)
    /etc/init.d/nvdGpuMgmtDaemon start|stop|status    (once the GPU Management Daemon is installed)
    esxi-standin reboot | boot-request | preinstall [--loaded] ZIP | sshd | show
    esxi-standin components | image-apply [ZIP...]    (the simulated vLCM's view and remediation)

It keeps the host's state in one JSON file ($ESXI_STANDIN_STATE, default
/var/lib/esxi-standin/state.json): ESXi release, acceptance level, the installed NVIDIA driver
(component + VIB), the NVIDIA GPU Management Daemon (component + VIB) and whether it runs, the
driver running since the last "boot", and per GPU its MIG mode (current /
pending), whether a VM uses it, reboot and reset counters and a log. Output follows the real
commands' formats; README.md names the public source of each. A driver bundle here is a zip with a
``standin-depot.json`` manifest (make-bundle.py), not a VMware depot.

"Reboot": ``esxi-standin reboot`` (the hook) loads the installed driver and makes pending MIG modes
current. ``esxi-standin boot-request`` only records that vCenter rebooted the host; the next
command applies it first (miglab/sim/daemon.py sends it when the simulated vCenter
reboots the matching host), so a role sees the reboot's effects right after vSphere's reboot.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import re
import socket
import sys
import zipfile
import zlib
from pathlib import Path

STATE = Path(os.environ.get("ESXI_STANDIN_STATE", "/var/lib/esxi-standin/state.json"))
BOOT_REQUESTS = STATE.with_name("boot-requests")
NVSMI_LINK = os.environ.get("ESXI_STANDIN_NVSMI_LINK", "/bin/nvidia-smi")
NVSMI_TARGET = os.environ.get("ESXI_STANDIN_NVSMI_TARGET", "/opt/esxi-standin/bin/nvidia-smi")
MANIFEST = "standin-depot.json"
# The GPU Management Daemon's init script (NVIDIA AI Enterprise 5 user guide, 2.7.2-2.7.4:
# /etc/init.d/nvdGpuMgmtDaemon start|stop|status), there once the daemon's VIB is installed.
DAEMON = "nvdGpuMgmtDaemon"
DAEMON_LINK = os.environ.get("ESXI_STANDIN_DAEMON_LINK", f"/etc/init.d/{DAEMON}")
DAEMON_TARGET = os.environ.get("ESXI_STANDIN_DAEMON_TARGET", f"/opt/esxi-standin/bin/{DAEMON}")

ACCEPTANCE = ("VMwareCertified", "VMwareAccepted", "PartnerSupported", "CommunitySupported")
# VIB descriptors spell acceptance levels like this (esxcli's AcceptanceLevelError quotes them).
ACCEPTANCE_SHORT = {
    "VMwareCertified": "certified",
    "VMwareAccepted": "accepted",
    "PartnerSupported": "partner",
    "CommunitySupported": "community",
}

# GPU models the stand-in can play: name as nvidia-smi prints it, architecture, MIG support,
# framebuffer MiB, PCI device and subsystem ids as `nvidia-smi -q` prints them (miglab's catalog,
# tests/fixtures/nvidia-smi and NVIDIA's product pages).
GPU_MODELS = {
    "A100-PCIE-80GB": ("NVIDIA A100 80GB PCIe", "Ampere", True, 81920, "0x20B510DE", "0x153310DE"),
    "A100-PCIE-40GB": ("NVIDIA A100-PCIE-40GB", "Ampere", True, 40960, "0x20F110DE", "0x145F10DE"),
    "A30": ("NVIDIA A30", "Ampere", True, 24576, "0x20B710DE", "0x153210DE"),
    "H100-PCIE-80GB": ("NVIDIA H100 PCIe", "Hopper", True, 81559, "0x233110DE", "0x162610DE"),
    "L40S": ("NVIDIA L40S", "Ada Lovelace", False, 46068, "0x26B910DE", "0x185110DE"),
}
# PCI buses of a host's GPUs in order: the same as miglab/sim/vcenter.py gives the simulator.
GPU_BUSES = (0x3B, 0x5E, 0x86, 0xAF, 0xD8, 0x17, 0x31, 0x4B, 0x65, 0xB1, 0xCA, 0xE3)

ESXI_RELEASES = {  # version -> (build, `vmware -l` level, ESXi base component display version)
    "7.0.3": (19193900, "Update 3", "7.0 Update 3c"),
    "8.0.0": (20513097, "GA", "8.0 GA"),
    "8.0.1": (21495797, "Update 1", "8.0 Update 1"),
    # ESXi 8.0 Update 3 GA (VMware's release notes: 25 JUN 2024, ISO build 24022510); its base
    # image as vLCM shows it: version 8.0.3-0.0.24022510, display version "8.0 U3"
    "8.0.3": (24022510, "Update 3", "8.0 U3"),
}
# The middle of the base component's version (<release>-<middle>.<build>) where it is not 0.20
# (ESXi 7.0 U3c's 7.0.3-0.20.19193900); and each release's GA date (vLCM's base image
# release_date; VMware's release notes).
ESXI_BASE_MIDDLE = {"8.0.3": "0.0"}
ESXI_RELEASE_DATES = {
    "7.0.3": "2022-01-27",
    "8.0.0": "2022-10-11",
    "8.0.1": "2023-04-18",
    "8.0.3": "2024-06-25",
}


class Exit(Exception):
    def __init__(self, code: int, out: str = "", err: str = ""):
        self.code, self.out, self.err = code, out, err


# --------------------------------------------------------------------------------------------
# state
# --------------------------------------------------------------------------------------------


def default_state() -> dict:
    return {
        "esxi": "7.0.3",
        "acceptance": "PartnerSupported",
        "driver": None,  # the installed NVIDIA driver: a bundle manifest + install date
        "loaded_driver": None,  # driver version running since the last boot
        "daemon": None,  # the installed GPU Management Daemon: a bundle manifest + install date
        "daemon_running": False,
        "gpus": [{"model": "A100-PCIE-80GB"}],
        "reboots": 0,
        "resets": 0,
        "boot_requests_applied": 0,
        "log": [],
    }


def _complete(state: dict) -> dict:
    base = default_state()
    for key, value in base.items():
        state.setdefault(key, value)
    for n, gpu in enumerate(state["gpus"]):
        model = gpu.setdefault("model", "A100-PCIE-80GB")
        name, arch, mig, mem, dev, sub = GPU_MODELS[model]
        bus = GPU_BUSES[n] if n < len(GPU_BUSES) else 0x100 + n
        gpu.setdefault("bus_id", f"00000000:{bus:02X}:00.0")
        gpu.setdefault("name", name)
        gpu.setdefault("arch", arch)
        gpu.setdefault("mig_capable", mig)
        gpu.setdefault("memory_mib", mem)
        gpu.setdefault("device_id", dev)
        gpu.setdefault("subsystem_id", sub)
        gpu.setdefault("mig_current", False)
        gpu.setdefault("mig_pending", gpu["mig_current"])
        gpu.setdefault("in_use", False)
        gpu.setdefault("uuid", f"GPU-{n:08d}-0000-0000-0000-00000000{bus:04x}")
        gpu.setdefault("serial", f"13240220{n:05d}")
    return state


@contextlib.contextmanager
def host_state(write: bool = True):
    """The state, locked; applies pending boot requests first; saved on exit when ``write``."""
    STATE.parent.mkdir(parents=True, exist_ok=True)
    with open(STATE.with_name("lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = _complete(json.loads(STATE.read_text()) if STATE.exists() else {})
        requests = _boot_requests()
        booted = False
        while state["boot_requests_applied"] < requests:
            _boot(state, "reboot requested by vCenter (RebootHost_Task)")
            state["boot_requests_applied"] += 1
            booted = True
        yield state
        if write or booted:
            tmp = STATE.with_suffix(".tmp")
            tmp.write_text(json.dumps(state, indent=2) + "\n")
            tmp.replace(STATE)


def _boot_requests() -> int:
    try:
        return len([x for x in BOOT_REQUESTS.read_text().splitlines() if x.strip()])
    except FileNotFoundError:
        return 0


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _log(state: dict, what: str) -> None:
    state["log"].append(f"{_now()} {what}")


def _boot(state: dict, why: str) -> None:
    drv = state["driver"]
    state["loaded_driver"] = drv["driver_version"] if drv else None
    for gpu in state["gpus"]:
        gpu["mig_current"] = gpu["mig_pending"]
        gpu["in_use"] = False
    state["reboots"] += 1
    state.pop("reboot_required", None)  # image-apply's pending reboot is done
    _link_nvsmi(drv is not None)
    _link_daemon(state["daemon"] is not None)
    # The daemon starts at boot when installed (its init script runs at boot), once the nvidia
    # module is loaded (ASSUMPTION V8-START, README.md).
    state["daemon_running"] = state["daemon"] is not None and state["loaded_driver"] is not None
    _log(state, f"boot ({why}); driver running: {state['loaded_driver']}; "
                f"{DAEMON} running: {state['daemon_running']}")  # fmt: skip


def _link_nvsmi(present: bool) -> None:
    """The driver package brings nvidia-smi; without it the command does not exist."""
    _link(NVSMI_TARGET, NVSMI_LINK, present)


def _link_daemon(present: bool) -> None:
    """The daemon's VIB brings its init script; without it the script does not exist."""
    _link(DAEMON_TARGET, DAEMON_LINK, present)


def _link(target: str, link: str, present: bool) -> None:
    with contextlib.suppress(OSError):
        if present and not os.path.lexists(link):
            os.makedirs(os.path.dirname(link) or ".", exist_ok=True)
            os.symlink(target, link)
        elif not present and os.path.lexists(link):
            os.unlink(link)


# --------------------------------------------------------------------------------------------
# esxcli
# --------------------------------------------------------------------------------------------


def table(titles: list[str], rows: list[list[str]]) -> str:
    """esxcli's table: columns as wide as their widest cell, two spaces apart, a dash rule."""
    widths = [max([len(t)] + [len(r[i]) for r in rows]) for i, t in enumerate(titles)]

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [line(titles), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out) + "\n"


def _major(state) -> int:
    return int(state["esxi"].split(".")[0])


def _base_vibs(state) -> list[dict]:
    build = ESXI_RELEASES[state["esxi"]][0]
    ver = state["esxi"]
    tag = ver.replace(".", "")
    return [
        {"name": "atlantic", "version": f"1.0.3.0-8vmw.{tag}.0.20.{build}", "vendor": "VMW",
         "acceptance_level": "VMwareCertified", "date": "2023-05-05"},
        {"name": "esx-base", "version": f"{ver}-0.20.{build}", "vendor": "VMware",
         "acceptance_level": "VMwareCertified", "date": "2023-05-05"},
    ]  # fmt: skip


def _base_version(state) -> str:
    build = ESXI_RELEASES[state["esxi"]][0]
    return f"{state['esxi']}-{ESXI_BASE_MIDDLE.get(state['esxi'], '0.20')}.{build}"


def _base_components(state) -> list[dict]:
    _build, _level, display = ESXI_RELEASES[state["esxi"]]
    return [
        {"name": "ESXi", "display_name": "ESXi", "version": _base_version(state),
         "display_version": display, "vendor": "VMware, Inc.",
         "acceptance_level": "VMwareCertified", "date": "05-05-2023"},
    ]  # fmt: skip


def _installed_date(state) -> str:
    return (state["driver"] or {}).get("installed", _now())[:10]


def vib_list(state) -> str:
    rows = [dict(v) for v in _base_vibs(state)]
    for pkg in ("driver", "daemon"):
        if state[pkg]:
            rows.append({**state[pkg]["vib"], "date": state[pkg].get("installed", _now())[:10]})
    rows.sort(key=lambda r: r["name"].lower())
    titles = ["Name", "Version", "Vendor", "Acceptance Level", "Install Date"]
    cells = [[r["name"], r["version"], r["vendor"], r["acceptance_level"], r["date"]] for r in rows]
    if _major(state) >= 8:
        titles.append("Platforms")
        cells = [c + ["host"] for c in cells]
    return table(titles, cells)


def component_list(state) -> str:
    rows = [dict(c) for c in _base_components(state)]
    for pkg in ("driver", "daemon"):
        if state[pkg]:
            comp = state[pkg]["component"]
            rows.append({**comp, "date": state[pkg].get("release_date", "03-27-2023")})
    rows.sort(key=lambda r: r["name"].lower())
    if _major(state) >= 8:
        titles = ["Name", "Display Name", "Version", "Display Version", "Vendor", "Release Date",
                  "Acceptance Level", "Platforms"]  # fmt: skip
        cells = [[r["name"], r["display_name"], r["version"], r["display_version"], r["vendor"],
                  r["date"], r["acceptance_level"], "host"] for r in rows]  # fmt: skip
    else:
        titles = ["Name", "Display Name", "Version", "Display Version", "Vendor",
                  "Acceptance Level"]  # fmt: skip
        cells = [[r["name"], r["display_name"], r["version"], r["display_version"], r["vendor"],
                  r["acceptance_level"]] for r in rows]  # fmt: skip
    return table(titles, cells)


def _depot_arg(args: list[str]) -> str:
    for n, a in enumerate(args):
        if a in ("-d", "--depot") and n + 1 < len(args):
            return args[n + 1]
        if a.startswith("--depot="):
            return a.split("=", 1)[1]
    raise Exit(1, err="Error: Missing required parameter -d|--depot\n")


def read_depot(path: str) -> dict:
    """A stand-in bundle's manifest; esxcli's MetadataDownloadError when it cannot be read."""
    url = f"zip:{path}?index.xml"

    def fail(reason: str):
        raise Exit(
            1,
            out=(
                "[MetadataDownloadError]\n"
                f" Could not download from depot at {url}, skipping ({reason})\n"
                f"        url = {url}\n"
                " Please refer to the log file for more details.\n"
            ),
        )

    if not path.startswith("/"):
        fail(f"'{path}': the depot path must be absolute")
    try:
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read(MANIFEST))
    except FileNotFoundError:
        fail(f"Error extracting index.xml from {path}: [Errno 2] No such file or directory")
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        fail(f"Error extracting index.xml from {path}: {exc}")
    raise AssertionError("unreachable")


def _vkey(version: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def _kind(depot: dict) -> str:
    """Which NVIDIA package a bundle holds: "daemon" (the GPU Management Daemon) or "driver"."""
    return "daemon" if depot.get("kind") == "daemon" else "driver"


def sources_vib_list(state, depot: dict) -> str:
    vib = depot["vib"]
    status = "New"
    if state[_kind(depot)]:
        have = state[_kind(depot)]["vib"]
        if have["name"] == vib["name"]:
            if have["version"] == vib["version"]:
                status = "Installed"
            elif _vkey(vib["version"]) > _vkey(have["version"]):
                status = "Update"
            else:
                status = "Downgrade"
    titles = ["Name", "Version", "Vendor", "Creation Date", "Acceptance Level", "Status"]
    row = [vib["name"], vib["version"], vib["vendor"], depot.get("creation_date", "2023-11-03"),
           vib["acceptance_level"], status]  # fmt: skip
    if _major(state) >= 8:
        titles.append("Platforms")
        row.append("host")
    return table(titles, [row])


def _vib_id(vib: dict) -> str:
    return f"{vib['vendor']}_bootbank_{vib['name']}_{vib['version']}"


def _check_acceptance(state, vib: dict) -> None:
    """esxcli's AcceptanceLevelError for a VIB below the host's acceptance level."""
    host_level, vib_level = state["acceptance"], vib["acceptance_level"]
    if ACCEPTANCE.index(vib_level) > ACCEPTANCE.index(host_level):
        raise Exit(
            1,
            out=(
                "[AcceptanceLevelError]\n"
                f" VIB {_vib_id(vib)}'s acceptance level is {ACCEPTANCE_SHORT[vib_level]}, which "
                "is not compliant with the ImageProfile acceptance level "
                f"{ACCEPTANCE_SHORT[host_level]}\n"
                " To change the host acceptance level, use the 'esxcli software acceptance set' "
                "command.\n"
                " Please refer to the log file for more details.\n"
            ),
        )


def install(state, depot_path: str, kind: str) -> str:
    depot = read_depot(depot_path)
    vib = depot["vib"]
    _check_acceptance(state, vib)
    comp = depot["component"]
    comp_id = f"{comp['name']}_{comp['version']}"
    pkg = _kind(depot)
    same = state[pkg] is not None and state[pkg]["vib"]["version"] == vib["version"]
    if state[pkg] and not same and state["daemon_running"]:
        # ASSUMPTION V8-BUSY (README.md): NVIDIA has the daemon stopped before the vGPU Manager
        # (and the daemon) are updated (NVIDIA AI Enterprise 5 user guide, 2.7.2); no public
        # capture shows what esxcli prints when it is not, so the stand-in refuses the update
        # as esxcli refuses a VIB whose files are in use, in esxcli's error layout.
        old = state[pkg]
        raise Exit(
            1,
            out=(
                "[InstallationError]\n"
                f" Failed to remove VIB {_vib_id(old['vib'])}: its files are in use by the "
                f"running {DAEMON} (NVIDIA GPU Management Daemon)\n"
                "        vibs = " + _vib_id(old["vib"]) + "\n"
                " Please refer to the log file for more details.\n"
            ),
        )
    removed = []
    if state[pkg] and not same:
        old = state[pkg]
        removed = [f"{old['component']['name']}_{old['component']['version']}"]
        if kind == "vib":
            removed = [_vib_id(old["vib"])]
    if not same:
        state[pkg] = {**depot, "installed": _now()}
        if pkg == "driver":
            _link_nvsmi(True)
        else:
            _link_daemon(True)
        _log(state, f"{kind} install {depot_path}: {vib['name']} {vib['version']}")
    new_id = comp_id if kind == "component" else _vib_id(vib)
    label = "Components" if kind == "component" else "VIBs"
    # The daemon: the Installation Result of a public ESXi 8 capture of its install (vib install
    # of nvd-gpu-mgmt-daemon_525.147.01-0.0.0000_22624911.zip: reboot required); the vGPU
    # Manager: component-apply-8.0-nvd-aie.txt (no reboot required).
    reboot = pkg == "daemon" and not same
    message = "Operation finished successfully."
    if reboot:
        message = (
            "The update completed successfully, but the system needs to be rebooted for the "
            "changes to be effective."
        )
    lines = [
        "Installation Result",
        "   Message: " + ("Host is not changed." if same else message),
        f"   {label} Installed: {'' if same else new_id}",
        f"   {label} Removed: {', '.join(removed)}",
        f"   {label} Skipped: {new_id if same else ''}",
        f"   Reboot Required: {'true' if reboot else 'false'}",
    ]
    if _major(state) >= 8:
        lines.append("   DPU Results:")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def esxcli(args: list[str]) -> str:
    words = [a for a in args if not a.startswith("-")]
    if words[:3] == ["software", "acceptance", "set"]:
        level = next((a.split("=", 1)[1] for a in args if a.startswith("--level=")), None)
        if level is None and "--level" in args:
            level = args[args.index("--level") + 1]
        if level not in ACCEPTANCE:
            raise Exit(1, err=f"Error: Invalid option --level: {level}\n")
        with host_state() as s:
            s["acceptance"] = level
            _log(s, f"acceptance level set to {level}")
        return f"Host acceptance level changed to '{level}'.\n"
    read_only = {
        ("software", "vib", "list"): vib_list,
        ("software", "component", "list"): component_list,
        ("software", "acceptance", "get"): lambda s: s["acceptance"] + "\n",
    }
    key = tuple(words[:3])
    if key in read_only:
        with host_state(write=False) as s:
            return read_only[key](s)
    if key == ("software", "sources", "vib") and words[3:4] == ["list"]:
        depot = read_depot(_depot_arg(args))
        with host_state(write=False) as s:
            return sources_vib_list(s, depot)
    if key in (("software", "component", "apply"), ("software", "vib", "install")):
        with host_state() as s:
            return install(s, _depot_arg(args), "component" if key[1] == "component" else "vib")
    raise Exit(1, err=f"Error: Unknown command or namespace {' '.join(words)}\n")


def vmware(args: list[str]) -> str:
    with host_state(write=False) as s:
        build, level, _ = ESXI_RELEASES[s["esxi"]]
        major_minor = ".".join(s["esxi"].split(".")[:2])
    flags = "".join(a.lstrip("-") for a in args if a.startswith("-"))
    out = []
    if "v" in flags or "version" in args:
        out.append(f"VMware ESXi {s['esxi']} build-{build}")
    if "l" in flags or "level" in args:
        out.append(f"VMware ESXi {major_minor} {level}" if level != "GA" else
                   f"VMware ESXi {s['esxi']} GA")  # fmt: skip
    if not out:
        raise Exit(1, err="usage: vmware [-v|--version] [-l|--level]\n")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# vmkload_mod, the GPU Management Daemon's init script (real-lab notes V8)
# --------------------------------------------------------------------------------------------
# A few stock modules of an ESXi 7/8 host (name, used, size in kB), then nvidia while the driver
# runs: its line as NVIDIA AI Enterprise 5 user guide 2.7.3 shows it (`nvidia  5  8420`); the
# header and the stock rows are ASSUMPTION V8-VMKLOAD (README.md).
_STOCK_MODULES = [("vmkernel", 0, 0), ("procfs", 2, 16), ("vmkplexer", 10, 28),
                  ("vmklinux_9", 0, 0), ("vmkapi_mgmt", 1, 12), ("iodm", 2, 40)]  # fmt: skip


def vmkload_mod(args: list[str]) -> str:
    if "-l" not in args and "--list" not in args:
        raise Exit(1, err="Usage: vmkload_mod [-l] (only -l in the stand-in)\n")
    with host_state(write=False) as s:
        mods = list(_STOCK_MODULES)
        if s["loaded_driver"] is not None:
            mods.append(("nvidia", 5, 8420))
    lines = [f"{'Name':<25}{'Used':<5}Size (kb)"]
    lines += [f"{name:<25}{used:<5}{size}" for name, used, size in mods]
    return "\n".join(lines) + "\n"


def gpu_mgmt_daemon(args: list[str]) -> str:
    """``/etc/init.d/nvdGpuMgmtDaemon start|stop|status`` (NVIDIA AI Enterprise 5 user guide,
    2.7.4). The commands are NVIDIA's; what they print is ASSUMPTION V8-STATUS (README.md): the
    wording and exit codes of ESXi's own init scripts (``/etc/init.d/hostd status``: "hostd is
    running." / "hostd is not running.", exit 0 / 3)."""
    verb = args[0] if args else ""
    with host_state() as s:
        if s["daemon"] is None:  # no VIB, no script
            raise Exit(127, err=f"sh: /etc/init.d/{DAEMON}: not found\n")
        if verb == "status":
            if s["daemon_running"]:
                return f"{DAEMON} is running.\n"
            raise Exit(3, out=f"{DAEMON} is not running.\n")
        if verb == "stop":
            was = s["daemon_running"]
            s["daemon_running"] = False
            _log(s, f"{DAEMON} stop (was running: {was})")
            return f"{DAEMON} stopped.\n" if was else f"{DAEMON} is not running.\n"
        if verb == "start":
            if s["daemon_running"]:
                return f"{DAEMON} is already running.\n"
            if s["loaded_driver"] is None:  # ASSUMPTION V8-START: it needs the nvidia module
                raise Exit(1, out=f"{DAEMON} failed to start: the nvidia module is not loaded.\n")
            s["daemon_running"] = True
            _log(s, f"{DAEMON} start")
            return f"{DAEMON} started.\n"
    raise Exit(1, err=f"Usage: /etc/init.d/{DAEMON} {{start|stop|status}}\n")


# --------------------------------------------------------------------------------------------
# nvidia-smi
# --------------------------------------------------------------------------------------------

NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
    "that the latest NVIDIA driver is installed and running.\n\n"
)
QUERY_FIELDS = {
    "index": lambda n, g, s: str(n),
    "pci.bus_id": lambda n, g, s: g["bus_id"],
    "name": lambda n, g, s: g["name"],
    "driver_version": lambda n, g, s: s["loaded_driver"],
    "mig.mode.current": lambda n, g, s: _mig_word(g, "mig_current"),
    "mig.mode.pending": lambda n, g, s: _mig_word(g, "mig_pending"),
    "memory.total": lambda n, g, s: f"{g['memory_mib']} MiB",
    "uuid": lambda n, g, s: g["uuid"],
    "serial": lambda n, g, s: g["serial"],
    "pci.device_id": lambda n, g, s: g["device_id"],
}
UNITS = {"memory.total": "MiB"}


def _mig_capable(gpu) -> bool:
    return bool(gpu["mig_capable"])


def _mig_word(gpu, key) -> str:
    if not _mig_capable(gpu):
        return "[N/A]"
    return "Enabled" if gpu[key] else "Disabled"


def _selected(args: list[str], state) -> list[int]:
    ids = None
    for n, a in enumerate(args):
        if a in ("-i", "--id") and n + 1 < len(args):
            ids = args[n + 1]
        elif a.startswith("--id="):
            ids = a.split("=", 1)[1]
    if ids is None:
        return list(range(len(state["gpus"])))
    picked = []
    for part in ids.split(","):
        part = part.strip()
        if part.isdigit() and int(part) < len(state["gpus"]):
            picked.append(int(part))
            continue
        match = [n for n, g in enumerate(state["gpus"]) if part.upper() in (g["bus_id"], g["uuid"])]
        if not match:
            raise Exit(6, out="No devices were found\n")
        picked += match
    return picked


def nvidia_smi(args: list[str]) -> str:
    with host_state() as s:
        if s["driver"] is None:
            raise Exit(127, err="sh: nvidia-smi: not found\n")
        if s["loaded_driver"] is None:
            raise Exit(9, out=NO_DRIVER)
        if s["loaded_driver"] != s["driver"]["driver_version"]:
            raise Exit(18, out="Failed to initialize NVML: Driver/library version mismatch\n")
        s = _driver_view(s)
        if not s["gpus"]:  # every GPU in passthrough mode (nvidia-smi's own wording)
            raise Exit(6, out="No devices were found\n")
        gpus = _selected(args, s)
        if args[:1] == ["vgpu"]:
            if "-q" in args or "--query" in args:
                return _vgpu_query(s, gpus)
            raise Exit(2, out=f"Invalid combination of input arguments: {' '.join(args)}\n")
        if args[:1] == ["mig"]:
            if "-lgi" in args or "--list-gpu-instances" in args:
                return _list_gpu_instances(s, gpus)
            raise Exit(2, out=f"Invalid combination of input arguments: {' '.join(args)}\n")
        query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
        if query is not None:
            return _query(s, gpus, query, args)
        if "-mig" in args or "--multi-instance-gpu" in args:
            flag = "-mig" if "-mig" in args else "--multi-instance-gpu"
            value = args[args.index(flag) + 1] if args.index(flag) + 1 < len(args) else ""
            if value not in ("0", "1"):
                raise Exit(2, out=f'Invalid value "{value}" for -mig. Valid values are 0 and 1.\n')
            return _set_mig(s, gpus, value == "1")
        if "-r" in args or "--gpu-reset" in args:
            return _reset(s, gpus)
        if "-L" in args or "--list-gpus" in args:
            return "".join(
                f"GPU {n}: {s['gpus'][n]['name']} (UUID: {s['gpus'][n]['uuid']})\n" for n in gpus
            )
        if "-q" in args or "--query" in args:
            return _query_full(s, gpus)
        if not args:
            return _summary(s)
        raise Exit(2, out=f"Invalid combination of input arguments: {' '.join(args)}\n")


# --- the vGPUs vCenter runs on this host (the simulator writes them, miglab/sim/vcsim) ----------
VCENTER_DIR = Path(os.environ.get("ESXI_STANDIN_VCENTER_DIR", "/var/lib/esxi-standin/vcenter"))
# MIG profile ids as nvidia-smi mig -lgip numbers them on 7-slice GPUs (A100, H100, H200) and on
# the 4-slice A30, by (compute slices, double memory, media extensions); miglab's catalog.
PROFILE_IDS_7 = {(1, False, False): 19, (1, False, True): 20, (1, True, False): 15,
                 (2, False, False): 14, (3, False, False): 9, (4, False, False): 5,
                 (7, False, False): 0}  # fmt: skip
PROFILE_IDS_4 = {(1, False, False): 14, (1, False, True): 21, (2, False, False): 5,
                 (2, False, True): 6, (4, False, False): 0}  # fmt: skip
_TYPE_RE = re.compile(r"-(\d+)-(\d+)c(me)?$")


def _vcenter_view() -> dict | None:
    """What the simulated vCenter says about this host (its vGPUs, services, lockdown mode), or
    None when the simulator wrote no file for it (molecule, or no vCenter). The host name is the
    container's ($ESXI_STANDIN_HOSTNAME outside one)."""
    name = os.environ.get("ESXI_STANDIN_HOSTNAME") or socket.gethostname()
    try:
        data = json.loads((VCENTER_DIR / f"{name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _nvsmi_bus(pci_id: object) -> str | None:
    """vSphere's PCI id (0000:3b:00.0) in nvidia-smi's spelling (00000000:3B:00.0), or None."""
    domain, _, rest = str(pci_id).upper().partition(":")
    if rest.count(":") == 1 and re.fullmatch(r"[0-9A-F]{1,8}", domain):
        return f"{int(domain, 16):08X}:{rest}"
    return None


def _passthrough_buses() -> set[str]:
    """Bus ids of the GPUs vCenter has in DirectPath I/O (passthrough) mode now: the host driver
    does not own them, so nvidia-smi lists none of them (real-lab notes V11: Denneman 2023,
    vSphere PciPassthruInfo)."""
    data = _vcenter_view() or {}
    gpus = data.get("gpus")
    return {
        bus
        for g in (gpus if isinstance(gpus, list) else [])
        if isinstance(g, dict) and g.get("passthrough") is True
        for bus in [_nvsmi_bus(g.get("pci_id"))]
        if bus
    }


def _driver_view(state: dict) -> dict:
    """The host state as the NVIDIA driver sees it: without GPUs in passthrough mode (nvidia-smi
    numbers the rest from 0). The GPU entries are the state's own, so changes to them are kept."""
    hidden = _passthrough_buses()
    if not hidden:
        return state
    view = dict(state)
    view["gpus"] = [g for g in state["gpus"] if g["bus_id"] not in hidden]
    return view


def _running_vgpus() -> dict[str, list[dict]]:
    """Bus id (nvidia-smi's spelling) -> the vGPUs vCenter runs on that GPU; nothing when the
    simulator wrote no file for this host (molecule, or no vCenter)."""
    data = _vcenter_view() or {}
    out: dict[str, list[dict]] = {}
    gpus = data.get("gpus") if isinstance(data, dict) else None
    for g in gpus if isinstance(gpus, list) else []:
        if not isinstance(g, dict):
            continue
        bus = _nvsmi_bus(g.get("pci_id", ""))
        if bus:
            vgpus = g.get("vgpus", [])
            out[bus] = [
                v for v in (vgpus if isinstance(vgpus, list) else []) if isinstance(v, dict)
            ]
    return out


def _profile_of(gpu: dict, vgpu_type: str) -> tuple[str, int]:
    """A MIG-backed vGPU type's GPU instance profile: (name, id), e.g. ("4g.40gb", 5). Read from
    the type's name (the container has no miglab catalog); tests/unit/test_esxi_standin.py checks
    it against the catalog's ``mig_backed`` and profile ids for every model played here."""
    m = _TYPE_RE.search(vgpu_type.lower())
    if not m:
        return "?", -1
    slices, gb, me = int(m.group(1)), int(m.group(2)), bool(m.group(3))
    seven = gpu["model"] != "A30"
    per_slice = gpu["memory_mib"] / 1024 / (8 if seven else 4)
    double = slices == 1 and gb > per_slice * 1.5
    ids = PROFILE_IDS_7 if seven else PROFILE_IDS_4
    return f"{slices}g.{gb}gb" + ("+me" if me else ""), ids.get((slices, double, me), -1)


def _stable_number(text: str, low: int, span: int) -> int:
    """A number in [low, low + span) derived from text (CRC-32): the same on every call."""
    return low + zlib.crc32(text.encode()) % span


def _vgpu_name(vgpu_type: str) -> str:
    """NVIDIA's name of a vSphere vGPU type: grid_a100d-4-40c -> GRID A100D-4-40C,
    nvidia_h100-1-10c -> NVIDIA H100-1-10C."""
    t = vgpu_type.strip()
    for prefix, brand in (("grid_", "GRID"), ("nvidia_", "NVIDIA")):
        if t.lower().startswith(prefix):
            return f"{brand} {t[len(prefix) :].upper()}"
    return f"GRID {t.upper()}"


def _vgpu_query(s, gpus) -> str:
    """``nvidia-smi vgpu -q`` as the vGPU manager prints it (NVIDIA vGPU software user guide,
    "Monitoring GPU performance"; the keys miglab reads and a few others)."""
    running = _running_vgpus()
    lines = []
    for n in gpus:
        g = s["gpus"][n]
        vgpus = running.get(g["bus_id"], [])
        lines.append(f"GPU {g['bus_id']}")
        lines.append(f"    {'Active vGPUs':<34}: {len(vgpus)}")
        for k, v in enumerate(vgpus):
            vm, vtype = str(v.get("vm", "")), str(v.get("vgpu_type", ""))
            device = f"{vm}/{g['bus_id']}/{k}"
            gi = v.get("gpu_instance_id", -1)
            gi_text = gi if isinstance(gi, int) and gi >= 0 else "N/A"
            m = _TYPE_RE.search(vtype.lower()) or re.search(r"-()(\d+)c$", vtype.lower())
            mib = int(m.group(2)) * 1024 if m else 0  # MIG-backed -S-GGc, time-sliced -GGc
            lines += [
                # made-up stable ids: vGPU ID per VM and device (GPU, position), VM ID per VM
                f"    {'vGPU ID':<34}: {_stable_number(device, 3_000_000_000, 1 << 30)}",
                f"        {'VM ID':<30}: {_stable_number(vm, 2_000_000, 8_000_000)}",
                f"        {'VM Name':<30}: {vm}",
                f"        {'vGPU Name':<30}: {_vgpu_name(vtype)}",
                f"        {'vGPU Type':<30}: {_stable_number(vtype.lower(), 600, 300)}",
                f"        {'vGPU UUID':<30}: {v.get('vm_uuid') or 'N/A'}",
                f"        {'Guest Driver Version':<30}: N/A",
                f"        {'License Status':<30}: N/A",
                f"        {'GPU Instance ID':<30}: {gi_text}",
                f"        {'Accounting Mode':<30}: N/A",
                f"        {'ECC Mode':<30}: Enabled",
                f"        {'Accounting Buffer Size':<30}: 4000",
                f"        {'Frame Rate Limit':<30}: N/A",
                "        FB Memory Usage",
                f"            {'Total':<26}: {mib} MiB",
                f"            {'Used':<26}: 0 MiB",
                f"            {'Free':<26}: {mib} MiB",
            ]
    return "\n".join(lines) + "\n"


def _list_gpu_instances(s, gpus) -> str:
    """``nvidia-smi mig -lgi``: the GPU instances vSphere had the vGPU manager create (NVIDIA
    Multi-Instance GPU User Guide, "List GPU instances"); GPUs without MIG are not listed."""
    running = _running_vgpus()
    rows = []
    for n in gpus:
        g = s["gpus"][n]
        if not (_mig_capable(g) and g["mig_current"]):
            continue
        for v in sorted(running.get(g["bus_id"], []), key=lambda v: v.get("placement_start", 0)):
            keys = ("gpu_instance_id", "placement_start", "placement_size")
            gi, start, size = (v.get(k, -1) for k in keys)
            if not all(isinstance(x, int) and x >= 0 for x in (gi, start, size)):
                continue
            name, pid = _profile_of(g, str(v.get("vgpu_type", "")))
            rows.append(f"|  {n:>2}  MIG {name:<12}{pid:>6}{gi:>9}{start:>11}:{size:<6}|")
    if not rows:
        raise Exit(6, out="No GPU instances found: Not Found\n")
    bar = "+" + "-" * 55 + "+"
    out = [
        bar,
        "| GPU instances:" + " " * 40 + "|",
        "| GPU   Name             Profile  Instance   Placement  |",
        "|                          ID       ID       Start:Size |",
        "|" + "=" * 55 + "|",
    ]
    for r in rows:
        out += [r, bar]
    return "\n".join(out) + "\n"


def _query(s, gpus, query, args) -> str:
    fields = [f.strip() for f in query.split(",") if f.strip()]
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "")
    if "csv" not in fmt.split(","):
        raise Exit(2, out='"--format" is required for "--query-gpu"\n')
    for f in fields:
        if f not in QUERY_FIELDS:
            raise Exit(2, out=f'Field "{f}" is not a valid field to query.\n\n')
    nounits = "nounits" in fmt.split(",")
    lines = []
    if "noheader" not in fmt.split(","):
        lines.append(", ".join(f + (f" [{UNITS[f]}]" if f in UNITS else "") for f in fields))
    for n in gpus:
        values = []
        for f in fields:
            v = QUERY_FIELDS[f](n, s["gpus"][n], s)
            if nounits and f in UNITS:
                v = v.rsplit(" ", 1)[0]
            values.append(v)
        lines.append(", ".join(values))
    return "\n".join(lines) + "\n"


def _set_mig(s, gpus, enable: bool) -> str:
    word = "Enabled" if enable else "Disabled"
    out = []
    for n in gpus:
        g = s["gpus"][n]
        if not _mig_capable(g):
            out.append(f"Unable to {'enable' if enable else 'disable'} MIG Mode for GPU "
                       f"{g['bus_id']}: Not Supported")  # fmt: skip
            out.append("Treating as warning and moving on.")
            continue
        g["mig_pending"] = enable
        state = "enable" if enable else "disable"
        # On ESXi an Ampere GPU's new mode stays pending until the host reboots: the hypervisor
        # does not let nvidia-smi reset it ("Not Supported"; real-lab notes V10: an A100 ESXi
        # capture and the MIG User Guide's passthrough example print exactly these two lines).
        # An idle Hopper GPU is reset by the driver at once; a busy one stays pending.
        if g["arch"] == "Hopper" and not g["in_use"]:
            g["mig_current"] = enable
            out.append(f"{word} MIG Mode for GPU {g['bus_id']}")
        elif g["mig_current"] == enable:
            out.append(f"{word} MIG Mode for GPU {g['bus_id']}")
        elif g["arch"] == "Ampere":
            out.append(
                f"Warning: MIG mode is in pending {state} state for GPU {g['bus_id']}:Not Supported"
            )
            out.append(
                "Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU "
                f"{g['bus_id']}"
            )
        else:
            out.append(
                f"Warning: MIG mode is in pending {state} state for GPU {g['bus_id']}:In use by "
                "another client"
            )
            out.append(
                f"{g['bus_id']} is currently being used by one or more other processes (e.g. CUDA "
                "application or a monitoring application such as another instance of nvidia-smi). "
                "Please first kill all processes using the device and retry the command or reboot "
                "the system to make MIG mode effective."
            )
        _log(s, f"nvidia-smi -mig {int(enable)} on GPU {n}: current {g['mig_current']}, "
                f"pending {g['mig_pending']}")  # fmt: skip
    out.append("All done.")
    return "\n".join(out) + "\n"


def _reset(s, gpus) -> str:
    # Ampere under ESXi: GPU reset is not a supported path (NVIDIA prescribes a host reboot;
    # real-lab notes V10). Wording of the MIG User Guide's passthrough example ("Resetting GPU
    # ... is not supported."); the exit status is approximate (NVML's NOT_SUPPORTED is 3).
    ampere = [n for n in gpus if s["gpus"][n]["arch"] == "Ampere"]
    if ampere:
        lines = [f"Resetting GPU {s['gpus'][n]['bus_id']} is not supported." for n in ampere]
        raise Exit(3, out="\n".join(lines) + "\n")
    busy = [n for n in gpus if s["gpus"][n]["in_use"]]
    if busy:
        lines = ["The following GPUs could not be reset:"]
        lines += [f"  GPU {s['gpus'][n]['bus_id']}: In use by another client" for n in busy]
        lines += [
            "",
            f"{len(busy)} device is currently being used by one or more other processes (e.g., "
            "Fabric Manager, CUDA application, graphics application such as an X server, or a "
            "monitoring application such as another instance of nvidia-smi). Please first kill "
            "all processes using this device and all compute applications running in the system.",
        ]
        raise Exit(255, out="\n".join(lines) + "\n")
    out = []
    for n in gpus:
        g = s["gpus"][n]
        g["mig_current"] = g["mig_pending"]
        out.append(f"GPU {g['bus_id']} was successfully reset.")
        s["resets"] += 1
        _log(s, f"GPU {n} reset: MIG mode current {g['mig_current']}")
    out.append("All done.")
    return "\n".join(out) + "\n"


def _header(s) -> list[str]:
    return [
        "",
        "==============NVSMI LOG==============",
        "",
        f"{'Timestamp':<42}: {datetime.datetime.now().strftime('%a %b %d %H:%M:%S %Y')}",
        f"{'Driver Version':<42}: {s['loaded_driver']}",
        f"{'CUDA Version':<42}: Not Found",
        "",
        f"{'Attached GPUs':<42}: {len(s['gpus'])}",
    ]


def _query_full(s, gpus) -> str:
    """`nvidia-smi -q`, the sections miglab reads, in the layout of a host vGPU Manager."""

    def kv(indent, key, value):
        return f"{' ' * indent}{key:<{42 - indent}}: {value}"

    lines = _header(s)
    for n in gpus:
        g = s["gpus"][n]
        dom, bus, devfn = g["bus_id"].split(":")
        mig = _mig_capable(g)
        lines += [
            f"GPU {g['bus_id']}",
            kv(4, "Product Name", g["name"]),
            kv(4, "Product Brand", "NVIDIA"),
            kv(4, "Product Architecture", g["arch"]),
            kv(4, "Display Mode", "Enabled"),
            kv(4, "Display Active", "Disabled"),
            kv(4, "Persistence Mode", "Enabled"),
            "    MIG Mode",
            kv(8, "Current", _mig_word(g, "mig_current") if mig else "N/A"),
            kv(8, "Pending", _mig_word(g, "mig_pending") if mig else "N/A"),
            kv(4, "Accounting Mode", "Enabled"),
            kv(4, "Serial Number", g["serial"]),
            kv(4, "GPU UUID", g["uuid"]),
            kv(4, "Minor Number", str(n)),
            "    GPU Virtualization Mode",
            kv(8, "Virtualization Mode", "Host VGPU"),
            kv(8, "Host VGPU Mode", "SR-IOV"),
            "    PCI",
            kv(8, "Bus", f"0x{bus}"),
            kv(8, "Device", f"0x{devfn.split('.')[0]}"),
            kv(8, "Domain", f"0x{dom[-4:]}"),
            kv(8, "Device Id", g["device_id"]),
            kv(8, "Bus Id", g["bus_id"]),
            kv(8, "Sub System Id", g["subsystem_id"]),
            "    FB Memory Usage",
            kv(8, "Total", f"{g['memory_mib']} MiB"),
            kv(8, "Used", "0 MiB"),
            kv(8, "Free", f"{g['memory_mib']} MiB"),
            kv(4, "Processes", "None"),
            "",
        ]
    return "\n".join(lines) + "\n"


def _summary(s) -> str:
    drv = s["loaded_driver"]
    top = f"| NVIDIA-SMI {drv:<14}Driver Version: {drv:<13}CUDA Version: N/A      |"
    rule = "+-------------------------------+----------------------+----------------------+"
    lines = [
        datetime.datetime.now().strftime("%a %b %d %H:%M:%S %Y"),
        "+-----------------------------------------------------------------------------+",
        top,
        "|-------------------------------+----------------------+----------------------+",
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |",
        "|                               |                      |               MIG M. |",
        "|===============================+======================+======================|",
    ]
    for n, g in enumerate(s["gpus"]):
        name = g["name"].replace("NVIDIA ", "")[:16]
        mig = _mig_word(g, "mig_current").strip("[]")
        lines += [
            f"| {n:>3}  {name:<16}   On   | {g['bus_id']} Off |                    0 |",
            f"| N/A   35C    P0    40W / 300W |      0MiB / {g['memory_mib']:>5}MiB |"
            "      0%      Default |",
            f"|                               |                      |{mig:>21} |",
            rule,
        ]  # fmt: skip
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# SSH: the host's sshd, as its TSM-SSH service and lockdown mode allow (real-lab notes V6)
# --------------------------------------------------------------------------------------------
SSHD = os.environ.get("ESXI_STANDIN_SSHD", "/usr/sbin/sshd")


def sshd(args: list[str]) -> str:
    """``esxi-standin sshd``: one SSH connection on stdin/stdout (``sshd -i``, for ssh's
    ProxyCommand), refused while vCenter shows TSM-SSH stopped -- ESXi's default policy ("start
    and stop manually") stops it at every boot (ESXi service policy docs; F. Denneman,
    "Installing the NVAIE vGPU driver", 2023) -- and without root login in lockdown mode
    (vSphere Security, "Lockdown Mode": root is not an exception user by default). The refusal
    reads as ssh prints a closed port 22. No file from the simulator (molecule): SSH runs."""
    view = _vcenter_view() or {}
    services = view.get("services") if isinstance(view.get("services"), dict) else {}
    ssh = services.get("TSM-SSH")
    if isinstance(ssh, dict) and ssh.get("running") is False:
        name = os.environ.get("ESXI_STANDIN_HOSTNAME") or socket.gethostname()
        raise Exit(255, err=f"ssh: connect to host {name} port 22: Connection refused\n")
    argv = [SSHD, "-i", *args]
    if view.get("lockdown_mode") not in (None, "lockdownDisabled"):
        argv[2:2] = ["-o", "DenyUsers=root"]
    with contextlib.suppress(OSError):
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation folder
    sys.stdout.flush()
    os.execv(SSHD, argv)
    return ""  # not reached


# --------------------------------------------------------------------------------------------
# vSphere Lifecycle Manager (vLCM): what an image-managed cluster's remediation does to the host
# (miglab/sim/vlcm_lab.py runs these through `podman exec`)
# --------------------------------------------------------------------------------------------
PACKAGES = ("driver", "daemon")  # the NVIDIA components a stand-in host can hold
COMPONENT_KEYS = ("version", "display_name", "display_version", "vendor")


def _component_id(pkg: dict) -> str:
    return f"{pkg['component']['name']}_{pkg['component']['version']}"


def components(state) -> dict:
    """``esxi-standin components``: the base image and the non-base (NVIDIA) components as
    vLCM's software info shows them (vSphere Automation API, esx/settings: BaseImageInfo,
    ComponentInfo), and whether a reboot is pending after ``image-apply``."""
    _build, _level, display = ESXI_RELEASES[state["esxi"]]
    date = ESXI_RELEASE_DATES.get(state["esxi"])
    comps = {}
    for pkg in PACKAGES:
        if state[pkg]:
            c = state[pkg]["component"]
            comps[c["name"]] = {k: c[k] for k in COMPONENT_KEYS}
    return {
        "esxi": state["esxi"],
        "base_image": {
            "version": _base_version(state),
            "display_name": "ESXi",
            "display_version": display,
            "release_date": f"{date}T00:00:00.000Z" if date else None,
        },
        "components": comps,
        "reboot_required": bool(state.get("reboot_required")),
        "driver_running": state["loaded_driver"],
    }


def image_apply(state, paths: list[str]) -> dict:
    """``esxi-standin image-apply [ZIP...]``: make the host's NVIDIA components exactly those of
    these stand-in bundles, as vLCM's remediation installs a desired image: each given component
    is installed or replaced (as ``esxcli software component apply``: the same acceptance-level
    check), an NVIDIA component not given is removed, an unchanged one skipped. Like an image
    staged for the next boot, the new driver runs only after a reboot (``reboot_required``;
    vLCM's impact REBOOT_REQUIRED); ASSUMPTION V19-APPLY (README.md): no refusal while the GPU
    Management Daemon runs (the image is activated at boot, not installed into the running
    system). Nothing changes when any bundle is refused. Returns the result as JSON-ready
    dict: installed / removed / skipped component ids, reboot_required."""
    wanted: dict[str, tuple[str, dict]] = {}
    for path in paths:
        depot = read_depot(path)
        pkg = _kind(depot)
        if pkg in wanted:
            other = wanted[pkg][1]["component"]["name"]
            raise Exit(
                1,
                out=(
                    "[ComponentConflictError]\n"
                    f" Components {other} and {depot['component']['name']} both provide the "
                    f"NVIDIA {'GPU Management Daemon' if pkg == 'daemon' else 'host driver'}: "
                    "an image holds one of them\n"
                    " Please refer to the log file for more details.\n"
                ),
            )
        wanted[pkg] = (path, depot)
    for _path, depot in wanted.values():
        _check_acceptance(state, depot["vib"])
    installed, removed, skipped = [], [], []
    for pkg in PACKAGES:
        have, want = state[pkg], wanted.get(pkg)
        if want is None:
            if have:
                removed.append(_component_id(have))
                state[pkg] = None
                if pkg == "daemon":
                    state["daemon_running"] = False
                _log(state, f"image-apply: removed {_component_id(have)}")
            continue
        path, depot = want
        if have and have["component"] == depot["component"] and have["vib"] == depot["vib"]:
            skipped.append(_component_id(have))
            continue
        if have:
            removed.append(_component_id(have))
        state[pkg] = {**depot, "installed": _now()}
        installed.append(_component_id(state[pkg]))
        _log(state, f"image-apply: installed {_component_id(state[pkg])} from {path}")
    _link_nvsmi(state["driver"] is not None)
    _link_daemon(state["daemon"] is not None)
    if installed or removed:
        state["reboot_required"] = True
    return {
        "installed": installed,
        "removed": removed,
        "skipped": skipped,
        "reboot_required": bool(state.get("reboot_required")),
    }


# --------------------------------------------------------------------------------------------
# the stand-in's own commands
# --------------------------------------------------------------------------------------------


def standin(args: list[str]) -> str:
    cmd = args[0] if args else "show"
    if cmd == "boot-request":
        BOOT_REQUESTS.parent.mkdir(parents=True, exist_ok=True)
        with open(BOOT_REQUESTS, "a") as f:
            f.write(f"{_now()} {' '.join(args[1:]) or 'reboot'}\n")
        return ""
    if cmd == "reboot":
        with host_state() as s:
            _boot(s, "esxi-standin reboot")
        return "rebooted\n"
    if cmd == "preinstall":  # test setup: a driver that was there before the test
        path = args[-1]
        with host_state() as s:
            install(s, path, "component")
            if "--loaded" in args and _kind(read_depot(path)) == "daemon":
                s["daemon_running"] = s["loaded_driver"] is not None
            elif "--loaded" in args:
                s["loaded_driver"] = s["driver"]["driver_version"]
            _log(s, f"preinstalled {path}{' (loaded)' if '--loaded' in args else ''}")
        return ""
    if cmd == "init":  # test setup: a fresh host
        opts = dict(a.split("=", 1) for a in args[1:] if "=" in a)
        gpus = []
        for part in filter(None, opts.get("gpus", "A100-PCIE-80GB:1").split(",")):
            model, _, count = part.partition(":")
            if model not in GPU_MODELS:
                raise Exit(2, err=f"unknown GPU model {model} (known: {', '.join(GPU_MODELS)})\n")
            gpus += [{"model": model} for _ in range(int(count or 1))]
        for idx in filter(None, opts.get("mig", "").split(",")):
            gpus[int(idx)].update(mig_current=True, mig_pending=True)
        for idx in filter(None, opts.get("in_use", "").split(",")):
            gpus[int(idx)]["in_use"] = True
        state = {**default_state(), "gpus": gpus}
        state["esxi"] = opts.get("esxi", state["esxi"])
        state["acceptance"] = opts.get("acceptance", state["acceptance"])
        if state["esxi"] not in ESXI_RELEASES or state["acceptance"] not in ACCEPTANCE:
            raise Exit(2, err=f"unknown ESXi release or acceptance level: {opts}\n")
        STATE.parent.mkdir(parents=True, exist_ok=True)
        BOOT_REQUESTS.unlink(missing_ok=True)
        _link_nvsmi(False)
        _link_daemon(False)
        _log(state, f"init {' '.join(args[1:])}")
        STATE.write_text(json.dumps(_complete(state), indent=2) + "\n")
        return ""
    if cmd == "sshd":
        return sshd(args[1:])
    if cmd == "components":
        with host_state(write=False) as s:
            return json.dumps(components(s), indent=2, sort_keys=True) + "\n"
    if cmd == "image-apply":
        with host_state() as s:
            return json.dumps(image_apply(s, args[1:]), indent=2) + "\n"
    if cmd == "show":
        with host_state(write=False) as s:
            return json.dumps(s, indent=2) + "\n"
    raise Exit(2, err=f"usage: esxi-standin {USAGE}\n")


USAGE = (
    "init [gpus=MODEL:N,...] [mig=I,...] [in_use=I,...] [esxi=V] [acceptance=L] | reboot | "
    "boot-request | preinstall [--loaded] ZIP | sshd [SSHD-OPTIONS] | show | components | "
    "image-apply [ZIP...]"
)
COMMANDS = {
    "esxcli": esxcli,
    "vmware": vmware,
    "nvidia-smi": nvidia_smi,
    "vmkload_mod": vmkload_mod,
    DAEMON: gpu_mgmt_daemon,
    "esxi-standin": standin,
}


def main(argv: list[str]) -> int:
    prog = os.path.basename(argv[0]) if argv else "esxi-standin"
    args = argv[1:]
    if prog not in COMMANDS and args and args[0] in COMMANDS:
        prog, args = args[0], args[1:]
    try:
        sys.stdout.write(COMMANDS.get(prog, standin)(args))
        return 0
    except Exit as exc:
        sys.stdout.write(exc.out)
        sys.stderr.write(exc.err)
        return exc.code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
