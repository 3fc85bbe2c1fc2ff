"""MIG mode per GPU of an ESXi host: :func:`mig_wanted` (which GPUs need it for a campaign plan),
:func:`plan_mig` / :func:`verify_mig` (per-GPU changes, pending modes, and how to make them
effective: a GPU reset or a host reboot)."""

from __future__ import annotations

from miglab.core.esxi.host_facts import nvsmi_state

# GPU architectures whose pending MIG mode a GPU reset (nvidia-smi -r) may make effective on
# ESXi. NVIDIA prescribes a host reboot for Ampere (A100, A30) on ESXi, where the hypervisor does
# not let nvidia-smi reset the GPU ("Resetting GPU ... is not supported"); Hopper switches an
# idle GPU at once and is the one architecture where a reset is documented (real-lab notes V10:
# NVIDIA AI Enterprise vGPU appendix, MIG User Guide). Unknown architectures: reboot.
RESET_ARCHITECTURES = frozenset({"hopper"})


def _architecture(name: str, catalog) -> str | None:
    """The GPU's architecture from the catalog, by nvidia-smi's product name (None: unknown)."""
    if catalog is None:
        from miglab.core.catalog import load_catalog

        catalog = load_catalog()
    try:
        return (catalog.get(name).architecture or "").lower() or None
    except LookupError:
        return None


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
    catalog=None,
) -> dict:
    """Per-GPU MIG mode changes for one host, from nvidia-smi's query (see :func:`nvsmi_state`).

    A GPU whose pending mode differs from the wanted one is *set* (``nvidia-smi -i IDS -mig 1|0``);
    one whose pending mode is right but current mode is not *waits for activation*: by a GPU
    reset (``nvidia-smi -i IDS -r``) when ``allow_reset``, no VM uses it (``gpu_vms``: vSphere
    PCI id -> VM names, from miglab.lab.esxi_gpu_info; unknown counts as used) and its
    architecture is one where a reset is documented on ESXi (:data:`RESET_ARCHITECTURES`:
    Hopper; an Ampere GPU always needs the reboot, real-lab notes V10; architectures from
    ``catalog``, default miglab's), else by a host reboot when ``allow_reboot``, else it is a
    problem. Plan again after setting: some GPUs switch at once (the driver resets an idle GPU
    itself), others stay pending. A GPU without MIG (nvidia-smi ``[N/A]``: an L40S) has what
    time-sliced vGPUs need when MIG is wanted disabled; MIG wanted on it is a problem.

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
            if not gpu["mig_capable"] and not want[idx]:
                pass  # no MIG (an L40S): what time-sliced vGPUs need already, nothing to change
            elif not gpu["mig_capable"]:
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
        no_reset = {}
        for idx in activate:
            arch = _architecture(by_index[idx]["name"], catalog)
            if arch not in RESET_ARCHITECTURES:
                kind = arch.capitalize() if arch else "architecture unknown"
                no_reset[idx] = f"{by_index[idx]['name']}, {kind}"
        if allow_reset and not busy and not no_reset:
            activation, reset = "reset", list(activate)
        elif allow_reboot:
            activation = "reboot"
            if allow_reset:
                why = [
                    f"GPU {i}: " + (", ".join(v) + " use it" if v else "VMs unknown")
                    for i, v in busy.items()
                ]
                why += [
                    f"GPU {i} ({what}): not supported on ESXi, NVIDIA prescribes a host reboot "
                    "(a reset is documented for Hopper only)"
                    for i, what in no_reset.items()
                ]
                notes.append(
                    "GPU reset not possible (" + "; ".join(why) + "): the host reboots instead"
                )
        elif allow_reset and not busy:
            problems.append(
                f"MIG mode is pending on GPU(s) {', '.join(map(str, activate))}: "
                + "; ".join(f"GPU {i} ({what})" for i, what in no_reset.items())
                + " needs a host reboot on ESXi (a GPU reset is documented for Hopper only), "
                "which is not allowed (esxi_mig_reboot false)"
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
    """After the change: every wanted GPU has that MIG mode, current and pending (a GPU without
    MIG has it disabled)."""
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
        elif not gpu["mig_capable"] and not mode:
            continue  # a GPU without MIG (an L40S) is never in MIG mode
        elif gpu["mig_current"] != mode or gpu["mig_pending"] != mode:
            word = "Enabled" if mode else "Disabled"
            problems.append(
                f"GPU {idx} ({gpu['bus_id']}): MIG mode current {gpu['mig_current']}, pending "
                f"{gpu['mig_pending']}, wanted {word}"
            )
    return {"ok": not problems, "problems": problems, "gpus": state["gpus"]}
