"""ESXi host operations through vCenter: graphics settings, maintenance mode, reboot-and-wait,
and what NVIDIA GPUs and vGPU types a host has."""

from __future__ import annotations

import time

from miglab.adapters.vsphere import props
from miglab.adapters.vsphere.connection import VsphereError
from miglab.adapters.vsphere.tasks import wait
from miglab.core.catalog import load_catalog

NVIDIA_VENDOR_ID = 0x10DE
GRAPHICS_TYPES = ("shared", "sharedDirect")
ASSIGNMENT_POLICIES = ("performance", "consolidation")


def find_hosts(si, names: list[str] | None = None, cluster: str | None = None) -> dict:
    """name -> HostSystem for the named hosts (all hosts, or a cluster's, when none named)."""
    from pyVmomi import vim

    root = None
    if cluster:
        clusters = props.by_name(si, vim.ClusterComputeResource)
        if cluster not in clusters:
            raise VsphereError(f"cluster {cluster!r} not found")
        root = clusters[cluster]
    hosts = props.by_name(si, vim.HostSystem, root)
    if names:
        missing = [n for n in names if n not in hosts]
        if missing:
            raise VsphereError(
                f"host(s) not found: {', '.join(missing)} (known: {', '.join(sorted(hosts))})"
            )
        return {n: hosts[n] for n in names}
    return hosts


# --- graphics -------------------------------------------------------------------------------------
def graphics_state(host) -> dict:
    mgr = host.configManager.graphicsManager
    if mgr is None:
        raise VsphereError(f"{host.name}: has no graphics manager")
    cfg = mgr.graphicsConfig
    return {
        "default_graphics_type": getattr(cfg, "hostDefaultGraphicsType", None),
        "assignment_policy": getattr(cfg, "sharedPassthruAssignmentPolicy", None),
        "devices": {d.deviceId: d.graphicsType for d in (getattr(cfg, "deviceType", None) or [])},
    }


def ensure_graphics(
    host,
    default_graphics_type: str | None,
    assignment_policy: str | None,
    device_types: dict[str, str] | None,
    check_mode: bool,
) -> dict:
    """Change only what was asked for; returns {changed, before, after}."""
    from pyVmomi import vim

    before = graphics_state(host)
    after = {**before, "devices": dict(before["devices"])}
    if default_graphics_type is not None:
        after["default_graphics_type"] = default_graphics_type
    if assignment_policy is not None:
        after["assignment_policy"] = assignment_policy
    for dev, gtype in (device_types or {}).items():
        after["devices"][dev] = gtype
    changed = after != before
    if changed and not check_mode:
        # Each device's entry is the one vCenter holds with only its type changed: fields miglab
        # does not set (vSphere 8.0 U3's vgpuMode, sameSize / mixedSize) stay as the admin chose
        # (real-lab notes V15; pyVmomi v8_0_3_0 HostGraphicsConfigDeviceType).
        current = host.configManager.graphicsManager.graphicsConfig
        held = {d.deviceId: d for d in (getattr(current, "deviceType", None) or [])}
        devices = []
        for dev, gtype in sorted(after["devices"].items()):
            entry = held.get(dev)
            if entry is None:
                entry = vim.host.GraphicsConfig.DeviceType(deviceId=dev)
            entry.graphicsType = gtype
            devices.append(entry)
        cfg = vim.host.GraphicsConfig(
            hostDefaultGraphicsType=after["default_graphics_type"],
            sharedPassthruAssignmentPolicy=after["assignment_policy"],
            deviceType=devices,
        )
        host.configManager.graphicsManager.UpdateGraphicsConfig(cfg)
        after = graphics_state(host)
    return {"changed": changed, "before": before, "after": after}


# --- maintenance mode and reboot ------------------------------------------------------------------
def _drs_enabled(host) -> bool:
    cluster = host.parent
    cfg = getattr(getattr(cluster, "configurationEx", None), "drsConfig", None)
    return bool(getattr(cfg, "enabled", False))


def ensure_maintenance(
    host,
    enabled: bool,
    check_mode: bool,
    timeout_s: int = 900,
    evacuate: bool = False,
    power_off_vms: tuple[str, ...] | list[str] = (),
    powered_off: list[str] | None = None,
) -> bool:
    """Enter or leave maintenance mode. Entering: the host's powered-on VMs named in
    ``power_off_vms`` (the campaign's own) are powered off first (their names appended to
    ``powered_off``); other powered-on VMs are named in an error before the task starts, unless
    DRS can move them: without DRS the real task waits for its timeout and fails with a bare
    timeout fault naming no VM (real-lab notes V4). ``evacuate`` is the API's
    ``evacuatePoweredOffVms``: true only with DRS (a task with it does not succeed unless
    powered-off VMs are re-registered elsewhere)."""
    if bool(host.runtime.inMaintenanceMode) == enabled:
        return False
    if enabled:
        on = [vm for vm in host.vm or [] if str(vm.runtime.powerState) == "poweredOn"]
        ours = [vm for vm in on if vm.name in set(power_off_vms)]
        others = sorted(vm.name for vm in on if vm not in ours)
        drs = _drs_enabled(host)
        if others and not drs:
            raise VsphereError(
                f"{host.name}: powered-on VMs {', '.join(others)} keep it from entering "
                "maintenance mode (no DRS to move them: vCenter's task would wait "
                f"{timeout_s} s and fail with a bare timeout); power them off or migrate them, "
                "then run again"
            )
        if evacuate and not drs:
            raise VsphereError(
                f"{host.name}: evacuate_powered_off_vms needs DRS (without it vCenter's task "
                "does not succeed while powered-off VMs are registered on the host); leave it "
                "false"
            )
        if check_mode:
            return True
        for vm in ours:
            wait(vm.PowerOffVM_Task(), timeout_s, f"power off {vm.name}")
            if powered_off is not None:
                powered_off.append(vm.name)
    if check_mode:
        return True
    if enabled:
        wait(
            host.EnterMaintenanceMode_Task(timeout=timeout_s, evacuatePoweredOffVms=evacuate),
            timeout_s + 60,
            f"{host.name}: enter maintenance mode",
        )
    else:
        wait(
            host.ExitMaintenanceMode_Task(timeout=timeout_s),
            timeout_s + 60,
            f"{host.name}: exit maintenance mode",
        )
    return True


def reboot_and_wait(
    host, timeout_s: int = 1200, force: bool = False, poll_s: float = 1.0, down_timeout_s: int = 300
) -> float:
    """Reboot the host and wait until vCenter sees it connected again; seconds it took.

    The host is back when it is connected and either its ``runtime.bootTime`` is newer than
    before the reboot or it was seen away (connectionState not "connected") in between. The boot
    time is what makes this certain: a poll can miss a short away phase (a loaded controller, a
    slow vCenter answer), and a host that never goes down is still not mistaken for one that
    is back.
    """
    if not force and not host.runtime.inMaintenanceMode:
        raise VsphereError(f"{host.name}: not in maintenance mode; enter it first (or force)")
    booted = host.runtime.bootTime
    start = time.monotonic()
    wait(host.RebootHost_Task(force=force), 300, f"{host.name}: reboot")
    went_down = False
    while time.monotonic() - start < timeout_s:
        runtime = host.runtime
        state = str(runtime.connectionState)
        if state != "connected":
            went_down = True
        elif went_down or _booted_since(runtime.bootTime, booted):
            return time.monotonic() - start
        elif time.monotonic() - start > down_timeout_s:
            raise VsphereError(
                f"{host.name}: accepted the reboot but never went down within {down_timeout_s} s"
            )
        time.sleep(poll_s)
    raise VsphereError(
        f"{host.name}: did not reconnect within {timeout_s} s after reboot "
        f"(last connection state: {host.runtime.connectionState}); check its "
        "console — the rollout stops here"
    )


def _booted_since(now, before) -> bool:
    """True when the host's boot time moved on (vCenter sets it when a host comes back up)."""
    return now is not None and (before is None or now > before)


# --- GPU information ------------------------------------------------------------------------------
def gpu_info(host) -> dict:
    catalog = load_catalog()
    hw = host.hardware
    gpus = []
    for dev in getattr(hw, "pciDevice", None) or []:
        if (dev.vendorId & 0xFFFF) != NVIDIA_VENDOR_ID:
            continue
        device_id = f"0x{dev.deviceId & 0xFFFF:04x}"
        try:
            model = catalog.get(device_id).name
        except LookupError:
            model = None
        gpus.append(
            {
                "pci_id": dev.id,
                "device_id": device_id,
                "name": dev.deviceName,
                "vendor": dev.vendorName,
                "catalog": model,
            }
        )
    config = host.config
    passthru = {
        str(getattr(p, "id", "")).lower(): p
        for p in (getattr(config, "pciPassthruInfo", None) or [])
    }
    for g in gpus:
        p = passthru.get(str(g["pci_id"]).lower())
        g["passthrough_enabled"] = bool(getattr(p, "passthruEnabled", False))
        g["passthrough_active"] = bool(getattr(p, "passthruActive", False))
    caps = [
        {
            "vgpu": c.vgpu,
            "disk_snapshot_supported": c.diskSnapshotSupported,
            "memory_snapshot_supported": c.memorySnapshotSupported,
            "suspend_supported": c.suspendSupported,
            "migrate_supported": c.migrateSupported,
        }
        for c in (getattr(config, "sharedGpuCapabilities", None) or [])
    ]
    graphics = [
        {
            "device_name": g.deviceName,
            "vendor": g.vendorName,
            "pci_id": g.pciId,
            "graphics_type": g.graphicsType,
            "memory_kb": g.memorySizeInKB,
            "vms": [vm.name for vm in (g.vm or [])],
        }
        for g in (getattr(config, "graphicsInfo", None) or [])
    ]
    try:
        gcfg = graphics_state(host)
    except VsphereError:
        gcfg = None
    return {
        "name": host.name,
        "connection_state": str(host.runtime.connectionState),
        "in_maintenance_mode": bool(host.runtime.inMaintenanceMode),
        "gpus": gpus,
        "vgpu_types": sorted(getattr(config, "sharedPassthruGpuTypes", None) or []),
        "vgpu_capabilities": caps,
        "graphics_info": graphics,
        "graphics_config": gcfg,
    }


# --- lifecycle ------------------------------------------------------------------------------------
def host_lifecycle(host) -> dict:
    """``{"cluster_name", "cluster", "image_managed"}`` of a host's cluster: ``lifecycleManaged``
    (vSphere API 7.0, ComputeResource) is true when a single vLCM image manages its hosts
    (real-lab notes V16). A standalone host: its ComputeResource, never image-managed here."""
    from pyVmomi import vim

    parent = host.parent
    managed = bool(getattr(parent, "lifecycleManaged", False))
    return {
        "cluster_name": parent.name if isinstance(parent, vim.ClusterComputeResource) else "",
        "cluster": parent._moId,
        "image_managed": managed,
    }
