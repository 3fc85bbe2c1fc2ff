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
