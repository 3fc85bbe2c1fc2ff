"""ESXi host facts and decisions for the ESXi host roles (core: no Ansible, no pyVmomi import).

The roles ``esxi_vgpu_driver``, ``esxi_mig`` and ``esxi_graphics`` run commands on the ESXi host
(``esxcli``, ``vmware -vl``, ``nvidia-smi``) and ask vCenter (miglab's vSphere modules); the raw
output comes here, through the controller-side filters in ``plugins/filter/esxi.py``. Everything
the roles decide is decided here:

* what the host's output says (parsed by :mod:`miglab.formats.esxcli` and
  :mod:`miglab.formats.nvsmi`), including the ``nvidia-smi`` failures that tell "no driver",
  "driver not loaded" and "reboot pending" apart;
* :func:`plan_driver` / :func:`verify_driver`: install, upgrade, downgrade, reboot or nothing, with
  every reason to refuse (bundle contents, acceptance level, ESXi release, guest driver branch)
  found before anything changes;
* :func:`mig_wanted`: which GPUs of a host need MIG mode for a campaign plan;
  :func:`plan_mig` / :func:`verify_mig`: per-GPU MIG mode changes, pending modes and how to make
  them effective (GPU reset or host reboot);
* :func:`graphics_restart_pending`: whether the configured host graphics type is in effect.

Formats and their public sources: ``tests/fixtures/esxi/README.md``.
"""

from __future__ import annotations

import re

from miglab.errors import ValidationError
from miglab.formats.esxcli import (
    ACCEPTANCE_LEVELS,
    acceptance_allows,
    parse_acceptance,
    parse_component_list,
    parse_vib_list,
    parse_vmware_version,
)
from miglab.formats.nvsmi import parse_query_gpu_csv

__all__ = [
    "NVSMI_QUERY_FIELDS",
    "VGPU_BRANCHES",
    "branch_problem",
    "driver_branch",
    "graphics_restart_pending",
    "mig_wanted",
    "nvsmi_state",
    "package_version",
    "pci_id",
    "plan_driver",
    "plan_mig",
    "verify_driver",
    "verify_mig",
]


# NVIDIA vGPU software release per driver branch (the vGPU Manager's major version), from the
# "NVIDIA vGPU Software Driver Versions" table of each release's notes (docs.nvidia.com/grid).
VGPU_BRANCHES = {470: 13, 510: 14, 525: 15, 535: 16, 550: 17, 570: 18, 580: 19}
BRANCH_POLICIES = ("same-branch", "nvidia")

# Names of NVIDIA's host driver packages: components NVD-AIE-800, NVD-VGPU-702, ...; VIBs
# NVD-AIE_ESXi_8.0.0_Driver, NVIDIA-VMware_ESXi_7.0.2_Driver, ... (not nvd-gpu-mgmt-daemon, the
# separate GPU management daemon component).
DRIVER_NAME_PATTERN = r"^(?:NVD|NVIDIA)[-_]"
NVIDIA_VENDOR = "NVIDIA"

# What the roles ask nvidia-smi (one CSV row per GPU, with a header; without ``index`` a GPU's
# index is its row: nvidia-smi lists GPUs in index order).
NVSMI_QUERY_FIELDS = (
    "index",
    "pci.bus_id",
    "name",
    "driver_version",
    "mig.mode.current",
    "mig.mode.pending",
)

# --------------------------------------------------------------------------------------------
# versions
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# nvidia-smi on the host
# --------------------------------------------------------------------------------------------

_NO_DRIVER = "couldn't communicate with the NVIDIA driver"
_MISMATCH = "Driver/library version mismatch"
_NOT_RUN = "Error executing command"  # Ansible's command module: the executable is not there


def nvsmi_state(result: dict | None) -> dict:
    """What an ``nvidia-smi --query-gpu=... --format=csv`` run says about the host driver.

    ``result``: the command's ``rc``, ``stdout``, ``stderr`` and ``msg`` (Ansible's command result;
    a missing executable gives rc 2 and "Error executing command" or "No such file", or rc 127 and
    "not found" through a shell). Returns ``{"state",
    "driver_version", "gpus", "message"}``; ``state`` is ``loaded`` (GPUs listed), ``absent`` (no
    nvidia-smi: no driver installed), ``not_loaded`` (installed, not loaded: reboot),
    ``mismatch`` (a newer driver installed while the old one runs: reboot) or ``error``.
    """
    result = result or {}
    rc = result.get("rc")
    out = str(result.get("stdout") or "")
    err = str(result.get("stderr") or "")
    msg = str(result.get("msg") or "")
    text = "\n".join(t for t in (out, err, msg) if t)
    state = {"state": "error", "driver_version": None, "gpus": [], "message": text.strip()}
    if rc is None and not text:
        state["state"] = "absent"
        state["message"] = "nvidia-smi was not run"
    elif rc == 127 or "No such file" in text or "not found" in text or _NOT_RUN in msg:
        state["state"] = "absent"  # ansible-core 2.19 says only "Error executing command."
    elif _NO_DRIVER in text:
        state["state"] = "not_loaded"
    elif _MISMATCH in text:
        state["state"] = "mismatch"
    elif rc == 0:
        try:
            gpus = parse_query_gpu_csv(out, "nvidia-smi --query-gpu")
        except ValidationError as exc:
            state["message"] = str(exc)
            return state
        missing = [f for f in NVSMI_QUERY_FIELDS[1:] if gpus and f not in gpus[0]]
        if missing:
            state["message"] = f"nvidia-smi --query-gpu output lacks {', '.join(missing)}"
            return state
        versions = sorted({g["driver_version"] for g in gpus if g.get("driver_version")})
        state.update(
            state="loaded",
            driver_version=versions[0] if len(versions) == 1 else None,
            gpus=[_gpu_row(g, n) for n, g in enumerate(gpus)],
            message="",
        )
        if len(versions) > 1:
            state.update(state="error", message=f"GPUs report several drivers: {versions}")
    return state


def _mode(value: str | None) -> bool | None:
    if value is None:
        return None
    return {"enabled": True, "disabled": False}.get(value.strip().lower())


_BUS_ID_RE = re.compile(
    r"^(?P<dom>[0-9A-Fa-f]+):(?P<bus>[0-9A-Fa-f]{2}):(?P<dev>[0-9A-Fa-f]{2}\.\d)$"
)


def pci_id(bus_id: str) -> str:
    """nvidia-smi's ``00000000:3B:00.0`` as vSphere writes PCI ids: ``0000:3b:00.0``."""
    m = _BUS_ID_RE.match((bus_id or "").strip())
    if not m:
        return (bus_id or "").strip().lower()
    return f"{int(m['dom'], 16):04x}:{m['bus'].lower()}:{m['dev'].lower()}"


def _gpu_row(g: dict, position: int) -> dict:
    return {
        "index": int(g["index"]) if g.get("index") is not None else position,  # rows: index order
        "bus_id": g["pci.bus_id"],
        "pci_id": pci_id(g["pci.bus_id"]),
        "name": g["name"],
        "driver_version": g["driver_version"],
        "mig_current": _mode(g["mig.mode.current"]),
        "mig_pending": _mode(g["mig.mode.pending"]),
        "mig_capable": g["mig.mode.current"] is not None,
    }


# --------------------------------------------------------------------------------------------
# host driver: plan and verify
# --------------------------------------------------------------------------------------------


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
    result, see :func:`nvsmi_state`).

    ``want``: ``version`` (the driver version wanted, e.g. ``535.154.02``), ``guest_driver_version``
    (optional), ``branch_policy`` (``same-branch`` / ``nvidia``), ``allow_downgrade``,
    ``name_pattern`` (regex of the driver's component/VIB names).

    Returns ``{"action", "install", "reboot", "problems", "notes", "summary", "esxi", "acceptance",
    "installed", "bundle", "loaded"}``: ``action`` is ``none``, ``install``, ``upgrade``,
    ``downgrade`` or ``reboot`` (installed but not running); ``problems`` lists every reason to
    stop before any change (empty when the role may go on).
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
    return {
        "action": action,
        "install": install,
        "reboot": action != "none",
        "problems": problems,
        "notes": notes,
        "summary": summary,
        "esxi": esxi,
        "acceptance": acceptance,
        "installed": installed,
        "bundle": bundle,
        "loaded": {k: loaded[k] for k in ("state", "driver_version", "message")},
    }


def verify_driver(facts: dict, want: dict) -> dict:
    """After the change: the wanted driver is installed and the running one (nvidia-smi)."""
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
    return {
        "ok": not problems,
        "problems": problems,
        "installed": installed,
        "loaded": {k: loaded[k] for k in ("state", "driver_version", "message")},
        "gpus": loaded["gpus"],
    }


# --------------------------------------------------------------------------------------------
# MIG mode
# --------------------------------------------------------------------------------------------


def _want_value(value) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("enabled", "enable", "true", "yes", "on", "1", "mig"):
        return True
    if text in ("disabled", "disable", "false", "no", "off", "0"):
        return False
    return None


def mig_wanted(
    plan: dict | None,
    host: str,
    explicit: dict | None = None,
    disable_unused: bool = False,
    gpu_count: int | None = None,
) -> dict:
    """The MIG mode each GPU of ``host`` needs: ``{"wanted": {index: bool}, "problems",
    "notes", "uses": {index: [scenario ids]}}``.

    ``plan``: a campaign plan (``miglab plan --json``, ``miglab.lab.campaign_plan``'s ``plan``);
    a GPU that holds MIG-backed vGPUs in some scenario needs MIG enabled, one that holds
    time-sliced vGPUs needs it disabled, one used both ways is a problem (MIG mode would have to
    change between scenarios). GPU indexes are the host's GPUs in inventory order, which is
    nvidia-smi's order (by PCI bus id) when the inventory lists the GPUs that way.
    ``explicit`` (index -> enabled/disabled/bool) overrides the plan; ``disable_unused`` disables
    MIG on the other GPUs of the host (``gpu_count`` of them).
    """
    problems: list[str] = []
    notes: list[str] = []
    modes: dict[int, set] = {}
    uses: dict[int, list[str]] = {}
    for scenario in (plan or {}).get("scenarios") or []:
        for gpu in scenario.get("gpus") or []:
            if gpu.get("host") != host:
                continue
            idx = int(gpu["index"])
            modes.setdefault(idx, set()).add(gpu.get("mode"))
            uses.setdefault(idx, []).append(f"{scenario.get('id')}:{gpu.get('mode')}")
    wanted: dict[int, bool] = {}
    for idx, seen in sorted(modes.items()):
        if seen == {"mig"}:
            wanted[idx] = True
        elif seen == {"time-sliced"}:
            wanted[idx] = False
        elif str(idx) not in {str(k) for k in (explicit or {})}:
            problems.append(
                f"GPU {idx} of {host} holds MIG-backed and time-sliced vGPUs in different "
                f"scenarios ({', '.join(uses[idx])}): MIG mode would change between scenarios; "
                "set its mode explicitly"
            )
    overrides, override_problems = _norm_wanted(explicit)
    problems.extend(override_problems)
    wanted.update(overrides)
    if disable_unused:
        if gpu_count is None:
            problems.append("disable_unused needs the host's GPU count")
        else:
            for idx in range(int(gpu_count)):
                wanted.setdefault(idx, False)
    if gpu_count is not None:
        for idx in wanted:
            if idx >= int(gpu_count):
                problems.append(f"GPU {idx} of {host} does not exist (the host has {gpu_count})")
    if not wanted and not problems:
        notes.append(f"no GPU of {host} needs a MIG mode (not in the plan, none set)")
    return {
        "wanted": dict(sorted(wanted.items())),
        "problems": problems,
        "notes": notes,
        "uses": uses,
    }


def _norm_wanted(wanted: dict | None) -> tuple[dict[int, bool], list[str]]:
    out, problems = {}, []
    for key, value in (wanted or {}).items():
        try:
            idx = int(key)
        except (TypeError, ValueError):
            problems.append(f"GPU index {key!r} is not a number")
            continue
        mode = _want_value(value)
        if mode is None:
            problems.append(f"GPU {idx}: MIG mode {value!r} is not enabled or disabled")
        else:
            out[idx] = mode
    return out, problems


def plan_mig(
    nvidia_smi: dict,
    wanted: dict,
    gpu_vms: dict | None = None,
    allow_reset: bool = False,
    allow_reboot: bool = True,
) -> dict:
    """Per-GPU MIG mode changes for one host, from nvidia-smi's query (see :func:`nvsmi_state`).

    A GPU whose pending mode differs from the wanted one is *set* (``nvidia-smi -i IDS -mig 1|0``);
    one whose pending mode is right but current mode is not *waits for activation*: by a GPU
    reset (``nvidia-smi -i IDS -r``) when ``allow_reset`` and no VM uses it (``gpu_vms``: vSphere
    PCI id -> VM names, from miglab.lab.esxi_gpu_info; unknown counts as used), else by a host
    reboot when ``allow_reboot``, else it is a problem. Plan again after setting: some GPUs switch
    at once (the driver resets an idle GPU itself), others stay pending.

    Returns ``{"gpus", "enable", "disable", "activate", "activation", "reset", "problems",
    "notes", "summary"}``: ``enable`` / ``disable`` / ``activate`` / ``reset`` are nvidia-smi GPU
    indexes, ``activation`` is ``none``, ``reset`` or ``reboot``.
    """
    want, problems = _norm_wanted(wanted)
    notes: list[str] = []
    state = nvsmi_state(nvidia_smi)
    if state["state"] != "loaded":
        problems.append(
            f"nvidia-smi cannot list the GPUs ({state['state'].replace('_', ' ')}): "
            f"{state['message'] or 'no output'}; is the NVIDIA host driver installed and loaded?"
        )
        return {
            "gpus": [],
            "enable": [],
            "disable": [],
            "activate": [],
            "activation": "none",
            "reset": [],
            "problems": problems,
            "notes": notes,
            "summary": "cannot read the GPUs",
        }
    by_index = {g["index"]: g for g in state["gpus"]}
    for idx in want:
        if idx not in by_index:
            problems.append(f"GPU {idx} does not exist (nvidia-smi lists {sorted(by_index)})")
    rows, enable, disable, activate = [], [], [], []
    for idx, gpu in sorted(by_index.items()):
        row = {k: gpu[k] for k in ("index", "bus_id", "pci_id", "name")}
        row.update(current=gpu["mig_current"], pending=gpu["mig_pending"], want=want.get(idx))
        action = "none"
        if idx in want:
            if not gpu["mig_capable"]:
                problems.append(f"GPU {idx} ({gpu['name']}) does not support MIG")
                action = "unsupported"
            elif gpu["mig_pending"] != want[idx]:
                action = "enable" if want[idx] else "disable"
                (enable if want[idx] else disable).append(idx)
            elif gpu["mig_current"] != want[idx]:
                action = "activate"
                activate.append(idx)
        elif gpu["mig_capable"] and gpu["mig_current"] != gpu["mig_pending"]:
            notes.append(f"GPU {idx}: MIG mode pending {gpu['mig_pending']} (not managed here)")
        row["action"] = action
        rows.append(row)

    activation, reset = "none", []
    if activate:
        vms = {str(k).lower(): list(v or []) for k, v in (gpu_vms or {}).items()}
        busy = {
            idx: vms.get(by_index[idx]["pci_id"])
            for idx in activate
            if vms.get(by_index[idx]["pci_id"]) is None or vms[by_index[idx]["pci_id"]]
        }
        if allow_reset and not busy:
            activation, reset = "reset", list(activate)
        elif allow_reboot:
            activation = "reboot"
            if allow_reset:
                notes.append(
                    "GPU reset not possible ("
                    + "; ".join(
                        f"GPU {i}: " + (", ".join(v) + " use it" if v else "VMs unknown")
                        for i, v in busy.items()
                    )
                    + "): the host reboots instead"
                )
        else:
            problems.append(
                f"MIG mode is pending on GPU(s) {', '.join(map(str, activate))} and needs a GPU "
                "reset or a host reboot, neither of which is allowed"
            )
    parts = []
    if enable:
        parts.append(f"enable MIG on GPU {','.join(map(str, enable))}")
    if disable:
        parts.append(f"disable MIG on GPU {','.join(map(str, disable))}")
    if activate:
        ids = ",".join(map(str, activate))
        parts.append(f"activate pending MIG mode on GPU {ids} by {activation}")
    return {
        "gpus": rows,
        "enable": enable,
        "disable": disable,
        "activate": activate,
        "activation": activation,
        "reset": reset,
        "problems": problems,
        "notes": notes,
        "summary": "; ".join(parts) or "MIG modes as wanted: nothing to do",
    }


def verify_mig(nvidia_smi: dict, wanted: dict) -> dict:
    """After the change: every wanted GPU has that MIG mode, current and pending."""
    want, problems = _norm_wanted(wanted)
    state = nvsmi_state(nvidia_smi)
    if state["state"] != "loaded":
        problems.append(f"nvidia-smi cannot list the GPUs: {state['message']}")
        return {"ok": False, "problems": problems, "gpus": []}
    by_index = {g["index"]: g for g in state["gpus"]}
    for idx, mode in sorted(want.items()):
        gpu = by_index.get(idx)
        if gpu is None:
            problems.append(f"GPU {idx} does not exist")
        elif gpu["mig_current"] != mode or gpu["mig_pending"] != mode:
            word = "Enabled" if mode else "Disabled"
            problems.append(
                f"GPU {idx} ({gpu['bus_id']}): MIG mode current {gpu['mig_current']}, pending "
                f"{gpu['mig_pending']}, wanted {word}"
            )
    return {"ok": not problems, "problems": problems, "gpus": state["gpus"]}


# --------------------------------------------------------------------------------------------
# host graphics
# --------------------------------------------------------------------------------------------


def graphics_restart_pending(host_info: dict) -> dict:
    """Whether the host's configured graphics types are in effect on its NVIDIA GPUs.

    ``host_info``: one host of miglab.lab.esxi_gpu_info (``graphics_config`` as configured,
    ``graphics_info`` per GPU as in effect). vSphere applies a new type at the next reboot (or
    Xorg restart); returns ``{"pending": bool, "gpus": [{pci_id, in_effect, configured}]}``.
    """
    cfg = host_info.get("graphics_config") or {}
    default = cfg.get("default_graphics_type")
    devices = {str(k).lower(): v for k, v in (cfg.get("devices") or {}).items()}
    gpus = []
    for g in host_info.get("graphics_info") or []:
        pci = str(g.get("pci_id") or "").lower()
        configured = devices.get(pci, default)
        in_effect = g.get("graphics_type")
        if in_effect == "direct" or configured is None:
            continue  # passthrough GPUs and hosts without a configuration are not ours
        gpus.append({"pci_id": pci, "in_effect": in_effect, "configured": configured})
    return {"pending": any(g["in_effect"] != g["configured"] for g in gpus), "gpus": gpus}
