"""The host graphics type: whether the configured default (Shared Direct) is in effect."""

from __future__ import annotations


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


def passthrough_problems(host_info: dict) -> list[str]:
    """One line per NVIDIA GPU of the host in passthrough (DirectPath I/O) mode, or set to it for
    the next boot: the host driver and nvidia-smi do not see such a GPU and vSphere gives it no
    vGPU (real-lab notes V11: vSphere PciPassthruInfo; F. Denneman, 2023)."""
    out = []
    for g in host_info.get("gpus") or []:
        if not (g.get("passthrough_enabled") or g.get("passthrough_active")):
            continue
        state = "is in" if g.get("passthrough_active") else "is set to (from the next boot)"
        out.append(
            f"{host_info.get('name') or 'host'}: GPU {g.get('pci_id')} ({g.get('name')}) {state} "
            "passthrough (DirectPath I/O) mode: the NVIDIA host driver and nvidia-smi do not see "
            "it and it holds no vGPU; turn passthrough off (vSphere Client: the host > Configure "
            "> Hardware > PCI Devices > Toggle passthrough) and reboot the host"
        )
    return out
