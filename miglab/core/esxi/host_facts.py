"""What ``nvidia-smi`` on an ESXi host says: its query CSV, and the failures that tell "no
driver", "driver not loaded" and "reboot pending" apart (parsed by :mod:`miglab.formats.nvsmi`)."""

from __future__ import annotations

import re

from miglab.errors import ValidationError
from miglab.formats.nvsmi import parse_query_gpu_csv

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
