"""The NVIDIA GPU Management Daemon on ESXi (real-lab notes V8): NVIDIA's second host component
beside the vGPU Manager (component ``nvd-gpu-mgmt-daemon``, VIB ``nvdgpumgmtdaemon``, its own
offline bundle ``nvd-gpu-mgmt-daemon_<version>-0.0.0000_<build>.zip``), controlled by
``/etc/init.d/nvdGpuMgmtDaemon start|stop|status``.

NVIDIA AI Enterprise 5 user guide, 2.7.1-2.7.4: install both components; before an update stop the
daemon, then update both and reboot; after the reboot check that the ``nvidia`` module is loaded
(``vmkload_mod -l | grep nvidia``), that the daemon runs (its ``status``) and ``nvidia-smi``. A
public ESXi 8 capture of NVIDIA's 525.147.01 download installs the daemon from its own zip (VIB
``NVD_bootbank_nvdgpumgmtdaemon_525.147.01-1OEM.700.1.0.15843807``, "Reboot Required: true"), so the
daemon ships separately from R525 on at least (:data:`DAEMON_FROM_BRANCH`).

:func:`plan_daemon` / :func:`verify_daemon` are called by
:func:`miglab.core.esxi.driver.plan_driver`
and :func:`~miglab.core.esxi.driver.verify_driver`; nothing here changes anything.
"""

from __future__ import annotations

import re

# The daemon's component / VIB names (any vendor: NVIDIA's 7.0.3 example names a
# VMW-esx-7.0.2-nvd-gpu-mgmt-daemon component file).
DAEMON_NAME_PATTERN = r"(?i)nvd-?gpu-?mgmt-?daemon"
DAEMON_SCRIPT = "/etc/init.d/nvdGpuMgmtDaemon"
# NVIDIA ships the daemon as a component of its own from this driver branch on (the 525.147.01
# capture; NVIDIA AI Enterprise 5 = R550 documents it too). Older branches: optional.
DAEMON_FROM_BRANCH = 525
DAEMON_POLICIES = ("auto", "required", "optional")
_BUNDLE_RE = re.compile(r"(?i)^nvd-gpu-mgmt-daemon_(?P<version>\d+(?:\.\d+)+)-")


def _driver_part(version: str | None) -> str | None:
    """``535.154.02-0.0.0000`` / ``535.154.02-1OEM.700.1.0.15843807`` -> ``535.154.02``."""
    head = str(version or "").split("-", 1)[0].strip()
    return head or None


def _vtuple(version: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version or ""))


def daemon_rows(rows: list[dict] | None) -> list[dict]:
    rx = re.compile(DAEMON_NAME_PATTERN)
    return [r for r in rows or [] if rx.search(str(r.get("name", "")))]


def installed_daemon(
    components: list[dict] | None, vibs: list[dict] | None
) -> tuple[dict | None, list[str]]:
    """The GPU Management Daemon installed (component first, else VIB), and problems (several)."""
    for source, rows in (("component", components), ("vib", vibs)):
        found = daemon_rows(rows)
        if len(found) > 1:
            names = ", ".join(f"{r['name']} {r['version']}" for r in found)
            return None, [
                f"several NVIDIA GPU Management Daemons are installed ({source}s: {names})"
            ]
        if found:
            r = found[0]
            return {
                "source": source,
                "name": r["name"],
                "version": r["version"],
                "daemon_version": _driver_part(r["version"]),
            }, []
    return None, []


def bundle_file_version(name: str | None) -> str | None:
    """The daemon version a bundle's file name says:
    ``nvd-gpu-mgmt-daemon_550.54.16-0.0.0000_23475125.zip`` -> ``550.54.16`` (None otherwise)."""
    base = str(name or "").rsplit("/", 1)[-1]
    m = _BUNDLE_RE.match(base)
    return m["version"] if m else None


def daemon_status(result: dict | None) -> dict:
    """``/etc/init.d/nvdGpuMgmtDaemon status`` (Ansible's command result) -> ``{"state",
    "message"}``; ``state``: ``running``, ``stopped``, ``absent`` (no script: the daemon is not
    installed), ``unknown`` (not run or not understood). Running: exit 0 and the text says
    "running" but not "not running" (ESXi's init scripts: "hostd is running." / "... is not
    running.", exit 3); the exact wording of NVIDIA's script is not published."""
    if not result:
        return {"state": "unknown", "message": "the daemon's status was not read"}
    rc = result.get("rc")
    text = "\n".join(str(result.get(k) or "") for k in ("stdout", "stderr", "msg")).strip()
    low = text.lower()
    if rc == 127 or "not found" in low or "no such file" in low:
        state = "absent"
    elif "not running" in low or "stopped" in low or rc == 3:
        state = "stopped"
    elif rc == 0 and "running" in low:
        state = "running"
    else:
        state = "unknown"
    return {"state": state, "message": text or f"exit status {rc}"}


def nvidia_module_loaded(text: str | None) -> bool | None:
    """Whether ``vmkload_mod -l`` lists the ``nvidia`` module (None when it was not run)."""
    if text is None:
        return None
    return any(line.split()[:1] == ["nvidia"] for line in str(text).splitlines())


def daemon_required(policy: str, driver_version: str | None) -> bool:
    """``required``: always; ``optional``: never; ``auto``: from :data:`DAEMON_FROM_BRANCH` on."""
    if policy == "required":
        return True
    if policy == "optional":
        return False
    m = re.match(r"^(\d+)\.", str(driver_version or ""))
    return bool(m) and int(m[1]) >= DAEMON_FROM_BRANCH


def plan_daemon(
    components: list[dict] | None,
    vibs: list[dict] | None,
    bundle_rows: list[dict] | None,
    facts: dict,
    want: dict,
    driver_action: str,
) -> tuple[dict, list[str], list[str]]:
    """What happens to the daemon on one host: ``({"action", "required", "policy",
    "bundle_given", "installed", "bundle", "status", "stop_first", "install", "reboot",
    "summary"}, problems, notes)``.

    ``action``: ``none``, ``install``, ``update``, ``downgrade``, ``start`` (installed and the
    driver running, the daemon stopped) or ``skip`` (not installed, no bundle, not required).
    ``stop_first``: stop the daemon before installing anything (NVIDIA: before an update).
    ``driver_action``: the vGPU Manager's plan (``none``, ``install``, ``upgrade``, ...).
    """
    driver_install = driver_action in ("install", "upgrade", "downgrade")
    problems: list[str] = []
    notes: list[str] = []
    # A caller that names no policy (one that predates the daemon) gets "optional"; the role
    # passes its esxi_vgpu_driver_daemon_policy (default auto).
    policy = str(want.get("daemon_policy") or "optional")
    if policy not in DAEMON_POLICIES:
        problems.append(
            f"esxi_vgpu_driver_daemon_policy {policy!r} is not one of {', '.join(DAEMON_POLICIES)}"
        )
        policy = "auto"
    wanted = str(want.get("version") or "").strip()
    bundle_name = str(want.get("daemon_bundle") or "").strip()
    required = daemon_required(policy, wanted)
    installed, more = installed_daemon(components, vibs)
    problems += more
    status = daemon_status(facts.get("daemon_status"))

    bundle = None
    if bundle_rows is not None:
        found = daemon_rows(bundle_rows)
        if len(found) != 1:
            names = ", ".join(r["name"] for r in bundle_rows) or "nothing"
            problems.append(
                f"the daemon bundle {bundle_name} holds {'no' if not found else 'several'} NVIDIA "
                f"GPU Management Daemon VIB{'s' if found else ''} (it holds {names})"
            )
        else:
            r = found[0]
            bundle = {
                "name": r["name"],
                "version": r["version"],
                "daemon_version": _driver_part(r["version"]),
                "acceptance_level": r.get("acceptance_level"),
                "status": r.get("status"),
            }
    bundle_version = bundle["daemon_version"] if bundle else bundle_file_version(bundle_name)

    action = "none"
    if installed is None:
        if bundle_name:
            action = "install"
        elif required:
            action = "skip"
            problems.append(
                f"the NVIDIA GPU Management Daemon (nvd-gpu-mgmt-daemon) is not installed and no "
                f"bundle for it is given: NVIDIA ships it as a second host component beside the "
                f"vGPU Manager (from R{DAEMON_FROM_BRANCH} on); set "
                "esxi_vgpu_driver_daemon_bundle_path or esxi_vgpu_driver_daemon_bundle_url and "
                "esxi_vgpu_driver_daemon_bundle_checksum (esxi_vgpu_driver_daemon_policy: optional "
                "goes on without it)"
            )
        else:
            action = "skip"
            notes.append(
                "WARNING: the NVIDIA GPU Management Daemon (nvd-gpu-mgmt-daemon) is not installed "
                "and no bundle for it is given (esxi_vgpu_driver_daemon_bundle_path / _url): the "
                "vGPU Manager is installed without it"
            )
    elif bundle_name and bundle_version and bundle_version != installed["daemon_version"]:
        newer = _vtuple(bundle_version) > _vtuple(installed["daemon_version"])
        action = "update" if newer else "downgrade"
        if not newer and not want.get("allow_downgrade"):
            problems.append(
                f"GPU Management Daemon {installed['daemon_version']} is installed, newer than the "
                f"bundle's {bundle_version}: a downgrade needs allow_downgrade"
            )
    elif status["state"] in ("stopped", "absent") and driver_action == "none":
        action = "start"
    install = action in ("install", "update", "downgrade")
    if install and bundle_rows is None:
        notes.append("the daemon bundle's contents are checked on the host before it is installed")
    if bundle and installed is None and bundle["status"] not in (None, "New"):
        notes.append(f"esxcli says the daemon bundle's VIB is {bundle['status']!r}")
    stop_first = (
        installed is not None and status["state"] != "stopped" and (install or driver_install)
    )
    have = installed["daemon_version"] if installed else None
    summary = {
        "none": f"GPU Management Daemon {have} installed: nothing to do",
        "install": f"install the GPU Management Daemon {bundle_version or ''}".rstrip(),
        "update": f"update the GPU Management Daemon {have} -> {bundle_version}",
        "downgrade": f"downgrade the GPU Management Daemon {have} -> {bundle_version}",
        "start": f"start the GPU Management Daemon {have} ({DAEMON_SCRIPT} start)",
        "skip": "no GPU Management Daemon",
    }[action]
    if stop_first:
        summary += f" (stopped first: {DAEMON_SCRIPT} stop)"
    return (
        {
            "action": action,
            "required": required,
            "policy": policy,
            "bundle_given": bool(bundle_name),
            "installed": installed,
            "bundle": bundle,
            "status": status,
            "stop_first": stop_first,
            "install": install,
            "reboot": install,  # the daemon's VIB asks for a reboot (the 525.147.01 capture)
            "summary": summary,
        },
        problems,
        notes,
    )


def verify_daemon(
    components: list[dict] | None, vibs: list[dict] | None, facts: dict, want: dict
) -> tuple[dict, list[str]]:
    """After the change: the daemon installed (when required or a bundle is given, or when it is
    there at all) and running, of the bundle's version when that is known."""
    problems: list[str] = []
    policy = str(want.get("daemon_policy") or "optional")
    bundle_name = str(want.get("daemon_bundle") or "").strip()
    expected = daemon_required(policy, want.get("version")) or bool(bundle_name)
    installed, more = installed_daemon(components, vibs)
    problems += more
    status = daemon_status(facts.get("daemon_status"))
    if installed is None:
        if expected:
            problems.append("the NVIDIA GPU Management Daemon is not installed")
    else:
        want_version = bundle_file_version(bundle_name) or want.get("daemon_version")
        if want_version and installed["daemon_version"] != want_version:
            problems.append(
                f"the installed GPU Management Daemon is {installed['daemon_version']}, not "
                f"{want_version}"
            )
        if status["state"] != "running" and facts.get("daemon_status") is not None:
            problems.append(
                f"the NVIDIA GPU Management Daemon is not running ({DAEMON_SCRIPT} status: "
                f"{status['message']})"
            )
    return {"installed": installed, "status": status, "expected": expected}, problems
