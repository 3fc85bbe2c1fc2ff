"""NVIDIA's host driver on ESXi: package versions, driver branches (host and guest), and
:func:`plan_driver` / :func:`verify_driver`: install, upgrade, downgrade, reboot or nothing, with
every reason to refuse (bundle contents, acceptance level, ESXi release, guest driver branch)
found before anything changes. Formats and their public sources:
``tests/fixtures/esxi/README.md``."""

from __future__ import annotations

import re

from miglab.core.esxi.daemon import nvidia_module_loaded, plan_daemon, verify_daemon
from miglab.core.esxi.host_facts import nvsmi_state
from miglab.core.vgpu_versions import BRANCH_TO_RELEASE
from miglab.errors import ValidationError
from miglab.formats.esxcli import (
    ACCEPTANCE_LEVELS,
    acceptance_allows,
    parse_acceptance,
    parse_component_list,
    parse_vib_list,
    parse_vmware_version,
)

# NVIDIA vGPU software release per driver branch (the vGPU Manager's major version): one table,
# with its sources, in miglab.core.vgpu_versions.
VGPU_BRANCHES = dict(sorted(BRANCH_TO_RELEASE.items()))
BRANCH_POLICIES = ("same-branch", "nvidia")

# Names of NVIDIA's host driver packages: components NVD-AIE-800, NVD-VGPU-702, ...; VIBs
# NVD-AIE_ESXi_8.0.0_Driver, NVIDIA-VMware_ESXi_7.0.2_Driver, ... (not nvd-gpu-mgmt-daemon, the
# separate GPU management daemon component).
DRIVER_NAME_PATTERN = r"^(?:NVD|NVIDIA)[-_]"
NVIDIA_VENDOR = "NVIDIA"


_PKG_VERSION_RE = re.compile(
    r"^(?P<driver>\d+(?:\.\d+)+)-(?P<release>\d+)(?:OEM|vmw)\.(?P<target>\d{3,})\.(?P<rest>[\d.]+)$"
)


def package_version(version: str) -> dict:
    """A VIB or component version (``535.154.02-1OEM.702.0.0.17630552``) -> ``{"driver":
    "535.154.02", "esxi": "7.0.2"}`` (``esxi``: the ESXi release the package was built for, None
    when the version does not say)."""
    m = _PKG_VERSION_RE.match(version or "")
    if not m:
        return {"driver": (version or "").split("-", 1)[0] or None, "esxi": None}
    target = m["target"]
    return {"driver": m["driver"], "esxi": f"{target[0]}.{target[1]}.{target[2:]}"}


def _vtuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version or ""))


def driver_branch(version: str) -> int | None:
    """The driver branch of an NVIDIA driver version: 535 for ``535.154.02``."""
    m = re.match(r"^(\d+)\.", (version or "").strip())
    return int(m[1]) if m else None


def branch_problem(
    host_version: str, guest_version: str, policy: str = "same-branch"
) -> str | None:
    """Why a guest GRID driver does not go with a host vGPU Manager, or None when it does.

    ``same-branch`` (the default): the guest driver comes from the host driver's branch (host
    535.x needs guest 535.x). ``nvidia``: NVIDIA's compatibility rule, which also accepts a guest
    driver from the branch just before the host's (vGPU 19 release notes, "Compatibility
    Requirements for the NVIDIA vGPU Manager and Guest VM Driver"); branches missing from
    :data:`VGPU_BRANCHES` must then match exactly.
    """
    if policy not in BRANCH_POLICIES:
        return f"branch policy {policy!r} is not one of {', '.join(BRANCH_POLICIES)}"
    host, guest = driver_branch(host_version), driver_branch(guest_version)
    if host is None:
        return f"host driver version {host_version!r} is not an NVIDIA driver version"
    if guest is None:
        return f"guest driver version {guest_version!r} is not an NVIDIA driver version"
    if host == guest:
        return None

    def release(branch: int) -> str:
        vgpu = VGPU_BRANCHES.get(branch)
        return f"R{branch} (vGPU {vgpu})" if vgpu else f"R{branch}"

    if policy == "nvidia":
        known = sorted(VGPU_BRANCHES)
        if host in known and guest in known and known.index(host) == known.index(guest) + 1:
            return None
        rule = "the same branch or the branch just before the host's"
    else:
        rule = "the host driver's branch"
    return (
        f"guest driver {guest_version} is from {release(guest)}, the host vGPU Manager "
        f"{host_version} from {release(host)}: the guest GRID driver must come from {rule} "
        f"(else the vGPU does not load in the VM)"
    )


def _parsed(problems: list[str], parse, text, what: str, *args):
    if text is None:
        return None
    try:
        return parse(text, what, *args)
    except ValidationError as exc:
        problems.extend(str(p) for p in exc.problems)
        return None


def _drivers(rows: list[dict] | None, pattern: str) -> list[dict]:
    rx = re.compile(pattern)
    return [r for r in rows or [] if r.get("vendor") == NVIDIA_VENDOR and rx.search(r["name"])]


def installed_driver(
    components: list[dict] | None, vibs: list[dict] | None, pattern: str = DRIVER_NAME_PATTERN
) -> tuple[dict | None, list[str]]:
    """The NVIDIA host driver installed (component first, else VIB), and problems (several)."""
    for source, rows in (("component", components), ("vib", vibs)):
        found = _drivers(rows, pattern)
        if len(found) > 1:
            names = ", ".join(f"{r['name']} {r['version']}" for r in found)
            return None, [f"several NVIDIA host drivers are installed ({source}s: {names})"]
        if found:
            r = found[0]
            ver = package_version(r["version"])
            return {
                "source": source,
                "name": r["name"],
                "version": r["version"],
                "driver_version": ver["driver"],
                "esxi": ver["esxi"],
                "acceptance_level": r.get("acceptance_level"),
            }, []
    return None, []


def plan_driver(facts: dict, want: dict) -> dict:
    """Decide what the NVIDIA host driver role does on one host; nothing here changes anything.

    ``facts`` (raw command output; None where not run): ``vmware_vl``, ``acceptance``,
    ``components``, ``vibs`` (``esxcli software component list`` / ``vib list``),
    ``bundle_vibs`` (``esxcli software sources vib list -d BUNDLE``; None while the bundle is not
    on the host, e.g. in check mode before it is copied), ``nvidia_smi`` (the query's command
    result, see :func:`nvsmi_state`); for the GPU Management Daemon (real-lab notes V8,
    :mod:`miglab.core.esxi.daemon`): ``daemon_status`` (``/etc/init.d/nvdGpuMgmtDaemon status``'s
    command result), ``daemon_bundle_vibs`` (``sources vib list`` of the daemon's bundle; None while
    not read), ``vmkload`` (``vmkload_mod -l``; None when not run).

    ``want``: ``version`` (the driver version wanted, e.g. ``535.154.02``), ``guest_driver_version``
    (optional), ``branch_policy`` (``same-branch`` / ``nvidia``), ``allow_downgrade``,
    ``name_pattern`` (regex of the driver's component/VIB names), ``daemon_policy`` (``auto``,
    ``required``, ``optional``), ``daemon_bundle`` (the daemon bundle's file name; empty: none).

    Returns ``{"action", "install", "reboot", "problems", "notes", "summary", "esxi", "acceptance",
    "installed", "bundle", "loaded", "daemon"}``: ``action`` is ``none``, ``install``, ``upgrade``,
    ``downgrade`` or ``reboot`` (installed but not running); ``daemon`` is
    :func:`~miglab.core.esxi.daemon.plan_daemon`'s plan (``daemon.install``: install its bundle,
    ``daemon.stop_first``: stop it before installing anything); ``reboot`` is true when either
    needs one; ``problems`` lists every reason to stop before any change (empty when the role may
    go on).
    """
    problems: list[str] = []
    notes: list[str] = []
    wanted = str(want.get("version") or "").strip()
    pattern = want.get("name_pattern") or DRIVER_NAME_PATTERN
    if not re.match(r"^\d+(?:\.\d+)+$", wanted):
        problems.append(f"wanted driver version {wanted!r} is not like 535.154.02")

    esxi = _parsed(problems, parse_vmware_version, facts.get("vmware_vl"), "vmware -vl")
    acceptance = _parsed(problems, parse_acceptance, facts.get("acceptance"), "acceptance get")
    components = _parsed(
        problems, parse_component_list, facts.get("components"), "esxcli software component list"
    )
    vibs = _parsed(problems, parse_vib_list, facts.get("vibs"), "esxcli software vib list")
    bundle_rows = _parsed(
        problems, parse_vib_list, facts.get("bundle_vibs"), "esxcli software sources vib list"
    )
    installed, more = installed_driver(components, vibs, pattern)
    problems += more
    loaded = nvsmi_state(facts.get("nvidia_smi"))
    if loaded["state"] == "error":
        problems.append(f"nvidia-smi failed: {loaded['message']}")

    bundle = None
    if bundle_rows is not None:
        found = _drivers(bundle_rows, pattern)
        if not found:
            names = ", ".join(r["name"] for r in bundle_rows) or "nothing"
            problems.append(f"the bundle holds no NVIDIA host driver VIB (it holds {names})")
        elif len(found) > 1:
            problems.append(f"the bundle holds several driver VIBs: {[r['name'] for r in found]}")
        else:
            r = found[0]
            ver = package_version(r["version"])
            bundle = {
                "name": r["name"],
                "version": r["version"],
                "driver_version": ver["driver"],
                "esxi": ver["esxi"],
                "acceptance_level": r["acceptance_level"],
                "status": r.get("status"),
            }
            if wanted and ver["driver"] != wanted:
                problems.append(
                    f"the bundle holds driver {ver['driver']} ({r['name']} {r['version']}), "
                    f"not the wanted {wanted}"
                )

    # What to do.
    action = "none"
    if installed is None:
        action = "install"
    elif wanted and installed["driver_version"] != wanted:
        newer = _vtuple(wanted) > _vtuple(installed["driver_version"])
        action = "upgrade" if newer else "downgrade"
    elif loaded["state"] != "loaded" or loaded["driver_version"] != wanted:
        action = "reboot"
    install = action in ("install", "upgrade", "downgrade")
    if install and bundle_rows is None:
        notes.append(
            "the bundle's contents, the ESXi release and the acceptance level are checked on the "
            "host before anything is installed"
            if facts.get("acceptance") is None
            else "the bundle is not on the host yet (check mode): its contents are checked there "
            "before anything is installed"
        )

    if action == "downgrade" and not want.get("allow_downgrade"):
        problems.append(
            f"driver {installed['driver_version']} is installed, newer than the wanted {wanted}: "
            "a downgrade needs allow_downgrade"
        )
    # Another driver flavour (vGPU vs AI Enterprise VIB) must be removed first; the VIB names tell.
    installed_vibs = _drivers(vibs, pattern)
    if install and bundle and installed and len(installed_vibs) == 1:
        other = installed_vibs[0]["name"]
        if other != bundle["name"]:
            verb = "component" if installed["source"] == "component" else "vib"
            problems.append(
                f"the host runs {other} {installed['version']}, the bundle brings "
                f"{bundle['name']}: remove the installed driver first "
                f"(esxcli software {verb} remove -n {installed['name']})"
            )
    if install and bundle and acceptance:
        level = bundle["acceptance_level"]
        if level not in ACCEPTANCE_LEVELS:
            problems.append(f"the bundle's VIB {bundle['name']} has acceptance level {level!r}")
        elif not acceptance_allows(acceptance, level):
            problems.append(
                f"host acceptance level {acceptance} does not allow the bundle's {level} VIB "
                f"{bundle['name']}; lower it first (esxcli software acceptance set "
                f"--level={level}) or use a bundle signed at {acceptance}"
            )
    if install and bundle and esxi and esxi["version"] and bundle["esxi"]:
        host_rel, pkg_rel = _vtuple(esxi["version"]), _vtuple(bundle["esxi"])
        if host_rel[:2] != pkg_rel[:2] or host_rel < pkg_rel:
            problems.append(
                f"the bundle is built for ESXi {bundle['esxi']} ({bundle['version']}); the host "
                f"runs ESXi {esxi['version']}"
            )
    guest = str(want.get("guest_driver_version") or "").strip()
    if guest and wanted:
        why = branch_problem(wanted, guest, want.get("branch_policy") or "same-branch")
        if why:
            problems.append(why)
    elif not guest:
        notes.append("no guest driver version given: host/guest branch compatibility not checked")

    daemon, more, daemon_notes = plan_daemon(
        components,
        vibs,
        _parsed(
            problems,
            parse_vib_list,
            facts.get("daemon_bundle_vibs"),
            "esxcli software sources vib list (daemon bundle)",
        ),
        facts,
        want,
        action,
    )
    problems += more
    notes += daemon_notes
    if daemon["install"] and daemon["bundle"] and acceptance:
        level = daemon["bundle"]["acceptance_level"]
        if level in ACCEPTANCE_LEVELS and not acceptance_allows(acceptance, level):
            problems.append(
                f"host acceptance level {acceptance} does not allow the daemon bundle's {level} "
                f"VIB {daemon['bundle']['name']}; lower it first (esxcli software acceptance set "
                f"--level={level})"
            )

    have = installed["driver_version"] if installed else "no NVIDIA driver"
    summary = {
        "none": f"driver {wanted} installed and running: nothing to do",
        "install": f"install driver {wanted} (host has {have}), then reboot",
        "upgrade": f"upgrade driver {have} -> {wanted}, then reboot",
        "downgrade": f"downgrade driver {have} -> {wanted}, then reboot",
        "reboot": f"driver {wanted} is installed but {loaded['state'].replace('_', ' ')}"
        f"{' (running ' + loaded['driver_version'] + ')' if loaded['driver_version'] else ''}"
        ": reboot",
    }[action]
    if daemon["action"] not in ("none", "skip"):
        summary += f"; {daemon['summary']}"
    return {
        "action": action,
        "install": install,
        "reboot": action != "none" or daemon["reboot"],
        "problems": problems,
        "notes": notes,
        "summary": summary,
        "esxi": esxi,
        "acceptance": acceptance,
        "installed": installed,
        "bundle": bundle,
        "loaded": {k: loaded[k] for k in ("state", "driver_version", "message")},
        "daemon": daemon,
    }


def verify_driver(facts: dict, want: dict) -> dict:
    """After the change: the wanted driver is installed, its ``nvidia`` module loaded
    (``vmkload_mod -l``, when ``facts["vmkload"]`` is given), nvidia-smi runs it, and the GPU
    Management Daemon is installed and running (:func:`~miglab.core.esxi.daemon.verify_daemon`;
    ``want``: ``daemon_policy``, ``daemon_bundle``, ``daemon_version``)."""
    problems: list[str] = []
    wanted = str(want.get("version") or "").strip()
    pattern = want.get("name_pattern") or DRIVER_NAME_PATTERN
    components = _parsed(
        problems, parse_component_list, facts.get("components"), "esxcli software component list"
    )
    vibs = _parsed(problems, parse_vib_list, facts.get("vibs"), "esxcli software vib list")
    installed, more = installed_driver(components, vibs, pattern)
    problems += more
    loaded = nvsmi_state(facts.get("nvidia_smi"))
    if installed is None:
        problems.append("no NVIDIA host driver is installed")
    elif installed["driver_version"] != wanted:
        problems.append(f"installed driver is {installed['driver_version']}, not {wanted}")
    if loaded["state"] != "loaded":
        problems.append(
            f"the driver is not running ({loaded['state'].replace('_', ' ')}): {loaded['message']}"
        )
    elif loaded["driver_version"] != wanted:
        problems.append(f"nvidia-smi reports driver {loaded['driver_version']}, not {wanted}")
    module = nvidia_module_loaded(facts.get("vmkload"))
    if module is False:
        problems.append(
            "the nvidia module is not loaded (vmkload_mod -l lists no nvidia): look for the "
            "driver's load-time errors in dmesg / vmkernel.log"
        )
    daemon, more = verify_daemon(components, vibs, facts, want)
    problems += more
    return {
        "ok": not problems,
        "problems": problems,
        "installed": installed,
        "loaded": {k: loaded[k] for k in ("state", "driver_version", "message")},
        "gpus": loaded["gpus"],
        "module_loaded": module,
        "daemon": daemon,
    }
