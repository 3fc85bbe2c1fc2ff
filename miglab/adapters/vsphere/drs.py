"""Per-VM DRS overrides for the campaign's VMs (ClusterDrsVmConfigSpec).

In a DRS cluster set to Partially or Fully Automated, DRS chooses the host when a VM powers on,
so a VM planned on one host and GPU can start on another (real-lab notes V5: NVIDIA AI
Enterprise user guide, "vGPU in a DRS cluster"; vSphere DrsBehaviorInfo). An override with DRS
disabled for the VM keeps it where miglab registered it, and DRS does not migrate it later.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from miglab.adapters.vsphere import props
from miglab.adapters.vsphere.connection import VsphereError
from miglab.adapters.vsphere.tasks import wait

BEHAVIORS = ("manual", "partiallyAutomated", "fullyAutomated")


@dataclass
class OverrideResult:
    changed: bool = False
    vms: dict[str, dict] = field(default_factory=dict)  # name -> what was found and done

    def as_dict(self) -> dict:
        return {"changed": self.changed, "vms": self.vms}


def drs_places(
    drs_enabled: bool,
    default_behavior: str | None,
    override_enabled: bool | None = None,
    override_behavior: str | None = None,
) -> str | None:
    """The DRS behaviour that lets DRS choose a VM's host at power-on (partiallyAutomated, or
    fullyAutomated, which also migrates it later), or None when DRS keeps the VM where it is: no
    DRS, a manual cluster, or an override disabling DRS or setting manual for the VM."""
    if not drs_enabled or override_enabled is False:
        return None
    behavior = override_behavior or default_behavior or "fullyAutomated"
    return None if behavior == "manual" else str(behavior)


def drs_placement_problem(vm: str, cluster: str, behavior: str) -> str:
    """The line that stops a power-on DRS would place (real-lab notes V5)."""
    later = ", and migrates it during a run" if behavior == "fullyAutomated" else ""
    return (
        f"{vm}: DRS of cluster {cluster} is {behavior} for this VM: it picks the VM's host at "
        f"power-on{later}, so the planned host and GPU are not kept; give the VM a DRS override "
        "(playbooks/vms.yml does with miglab_vm_drs_override: true, the default; or module "
        "miglab.lab.vm_drs_override), then run again"
    )


def _describe(override) -> str:
    if override is None:
        return "none (cluster default)"
    if override.enabled is False:
        return "disabled"
    return str(override.behavior or "enabled")


def ensure_drs_overrides(
    si, names: list[str], enabled: bool = False, behavior: str | None = None, check: bool = False
) -> OverrideResult:
    """Give every named VM in a DRS-enabled cluster the override (DRS ``enabled`` for it, and
    ``behavior`` when given), one ReconfigureComputeResource_Task per cluster; VMs in clusters
    without DRS, or on a lone host, need none and are left alone."""
    from pyVmomi import vim

    if behavior is not None and behavior not in BEHAVIORS:
        raise VsphereError(f"DRS behavior {behavior!r} is not one of {', '.join(BEHAVIORS)}")
    found = props.by_name(si, vim.VirtualMachine)
    missing = sorted(n for n in names if n not in found)
    if missing:
        raise VsphereError(f"VM(s) not found: {', '.join(missing)}")
    result = OverrideResult()
    specs: dict = {}  # cluster -> [ClusterDrsVmConfigSpec]
    clusters: dict = {}
    for name in names:
        vm = found[name]
        host = vm.runtime.host
        cluster = host.parent if host is not None else None
        if not isinstance(cluster, vim.ClusterComputeResource):
            result.vms[name] = {"cluster": None, "drs": False, "override": "none (no cluster)"}
            continue
        key = cluster._moId
        if key not in clusters:
            cfg = cluster.configurationEx
            clusters[key] = (cluster, cfg, {o.key._moId: o for o in cfg.drsVmConfig or []})
        cluster, cfg, existing = clusters[key]
        drs_on = bool(cfg.drsConfig.enabled)
        current = existing.get(vm._moId)
        entry = {"cluster": cluster.name, "drs": drs_on, "override": _describe(current)}
        result.vms[name] = entry
        if not drs_on:
            continue
        if (
            current is not None
            and bool(current.enabled) == enabled
            and (behavior is None or str(current.behavior) == behavior)
        ):
            continue
        info = vim.cluster.DrsVmConfigInfo(key=vm, enabled=enabled)
        if behavior is not None:
            info.behavior = behavior
        op = "edit" if current is not None else "add"
        specs.setdefault(key, []).append(vim.cluster.DrsVmConfigSpec(operation=op, info=info))
        after = "disabled" if not enabled else (behavior or "enabled")
        entry.update(override=after, before=entry["override"])
        result.changed = True
    if not check:
        for key, vm_specs in specs.items():
            cluster = clusters[key][0]
            spec = vim.cluster.ConfigSpecEx(drsVmConfigSpec=vm_specs)
            wait(
                cluster.ReconfigureComputeResource_Task(spec=spec, modify=True),
                300,
                f"{cluster.name}: DRS overrides for {len(vm_specs)} VM(s)",
            )
    return result
