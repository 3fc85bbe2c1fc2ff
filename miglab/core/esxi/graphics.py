"""The host graphics type: whether the configured default (Shared Direct) is in effect, and why
a host does not offer a vGPU type."""

from __future__ import annotations

# HostGraphicsInfo.graphicsType of a GPU while no host driver is loaded (vSphere API
# HostGraphicsInfoGraphicsType: "Basic graphics when no host driver is available"); real-lab
# notes V9.
BASIC = "basic"


def graphics_restart_pending(host_info: dict) -> dict:
    """Whether the host's configured graphics types are in effect on its NVIDIA GPUs.

    ``host_info``: one host of miglab.lab.esxi_gpu_info (``graphics_config`` as configured,
    ``graphics_info`` per GPU as in effect). vSphere applies a new type at the next reboot (or
    Xorg restart); returns ``{"pending": bool, "gpus": [{pci_id, in_effect, configured}],
    "no_driver": [pci ids]}``. A GPU in effect ``basic`` has no NVIDIA host driver loaded yet (the
    state before the driver, real-lab notes V9): it counts as pending (the reboot that loads an
    installed driver puts the configured type in effect) and is listed in ``no_driver``.
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
    return {
        "pending": any(g["in_effect"] != g["configured"] for g in gpus),
        "gpus": gpus,
        "no_driver": [g["pci_id"] for g in gpus if g["in_effect"] == BASIC],
    }


def _vgpu_kind(vgpu: str, catalog) -> tuple[bool | None, str | None]:
    """(True for a MIG-backed vGPU type, False for a time-sliced one, None when unknown; the
    catalog GPU model that offers it)."""
    key = vgpu.lower()
    for model in catalog:
        if key in {t.lower() for t in model.mig_backed.values()}:
            return True, model.name
        if key in {t.name.lower() for t in model.time_sliced}:
            return False, model.name
    return None, None


def _is_mig_type(vgpu: str, catalog) -> bool | None:
    """True for a MIG-backed vGPU type, False for a time-sliced one, None when unknown."""
    return _vgpu_kind(vgpu, catalog)[0]


def vgpu_offer_problems(host_info: dict, vgpus, catalog=None) -> list[str]:
    """One line per vGPU type the host does not offer now, naming the host, the type and why.

    ``host_info``: one host of miglab.lab.esxi_gpu_info (``vgpu_types``: sharedPassthruGpuTypes,
    ``graphics_info`` per GPU in effect). vSphere offers vGPU types only with the NVIDIA host
    driver loaded and a GPU in Shared Direct mode, MIG-backed types only for GPUs in MIG mode,
    time-sliced ones only for GPUs not in MIG mode (real-lab notes V9); vCenter does not show MIG
    mode, so it is read from which kinds of type the host offers.
    """
    if catalog is None:
        from miglab.core.catalog import load_catalog

        catalog = load_catalog()
    host = host_info.get("name") or "the host"
    offered = list(host_info.get("vgpu_types") or [])
    offered_lower = {t.lower() for t in offered}
    gpus = [
        g
        for g in host_info.get("graphics_info") or []
        if "nvidia" in str(g.get("vendor") or "").lower()
    ]
    kinds = {_is_mig_type(t, catalog) for t in offered}
    types_in_effect = sorted({str(g.get("graphics_type")) for g in gpus})
    out = []
    for vgpu in vgpus or []:
        if vgpu.lower() in offered_lower:
            continue
        mig, model = _vgpu_kind(vgpu, catalog)
        if not gpus:
            why = "vCenter shows no NVIDIA GPU on it (config.graphicsInfo)"
        elif all(g.get("graphics_type") == BASIC for g in gpus):
            why = (
                "no NVIDIA host driver is loaded (graphics type basic): install the vGPU "
                "manager (esxi_vgpu_driver) and reboot"
            )
        elif not any(g.get("graphics_type") == "sharedDirect" for g in gpus):
            why = (
                f"graphics type {', '.join(types_in_effect)}, not Shared Direct (sharedDirect): "
                "set it (esxi_graphics) and reboot"
            )
        elif mig is True and False in kinds and True not in kinds:
            why = "no GPU is in MIG mode (MIG-backed types need it: esxi_mig)"
        elif mig is False and True in kinds and False not in kinds:
            why = "its GPUs are in MIG mode (time-sliced types need MIG off: esxi_mig)"
        elif mig is None:
            why = "the catalog does not know this vGPU type"
        else:
            why = f"it is not a type of this host's GPUs (it is a vGPU type of {model})"
        out.append(
            f"{host}: vGPU type {vgpu} is not offered now: {why} "
            f"(it offers: {', '.join(sorted(offered)) or 'none'})"
        )
    return out


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
