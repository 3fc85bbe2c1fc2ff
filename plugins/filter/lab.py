"""Filters miglab.lab.*: the campaign plan turned into what the lab's modules take.

Thin: each filter hands plain data to :mod:`miglab.core.planning` or :mod:`miglab.core.labvars`
and returns its answer.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.miglab.lab.plugins.plugin_utils.values import plain, require

try:
    from miglab.core import labvars, planning, power_on
    from miglab.core.catalog import load_catalog

    IMPORT_ERROR = None
except ImportError as exc:  # reported when a filter is used
    labvars = planning = power_on = load_catalog = None
    IMPORT_ERROR = exc


def vgpu_vm_item(plan_vm, pin=False):
    """A planned VM (host var ``miglab_vm`` of the campaign_vms inventory, or a plan's
    ``scenarios[].vms[]`` item) -> an item of ``miglab.lab.vgpu_vm``'s ``vms`` option; ``pin``
    sets its ``gpu_pin`` (every call for a VM must pass the same, or the pin comes and goes)."""
    lib = require(planning, "lab", IMPORT_ERROR)
    value = plain(plan_vm)
    if not isinstance(value, dict):
        raise AnsibleFilterError(
            f"vgpu_vm_item: a planned VM must be a dict, not {type(value).__name__}"
        )
    try:
        spec = lib.vm_spec(value)
    except ValueError as exc:
        raise AnsibleFilterError(f"vgpu_vm_item: {exc}") from exc
    if pin:
        spec["gpu_pin"] = True
    return spec


def vmware_connection(vcenter):
    """``miglab_vcenter`` -> the connection options of the action group ``miglab.lab.vmware``, for
    ``module_defaults`` (see playbooks/vms.yml)."""
    lib = require(labvars, "lab", IMPORT_ERROR)
    try:
        return lib.connection_options(plain(vcenter))
    except ValueError as exc:
        raise AnsibleFilterError(f"vmware_connection: {exc}") from exc


def vgpu_power_on_order(items, plan, wave, pin=False):
    """A wave's ``vgpu_vm`` items (``vgpu_vm_item``) in the order that makes vSphere put each
    vGPU on its planned GPU and MIG slot, each with ``gpu_pin`` (see miglab.core.power_on)."""
    lib = require(power_on, "lab", IMPORT_ERROR)
    try:
        return lib.power_on_items(plain(items), plain(plan), int(wave), load_catalog(), bool(pin))
    except (KeyError, LookupError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"vgpu_power_on_order: {exc}") from exc


def vgpu_assignment_policy(plan, host, pin=False, fallback="performance"):
    """The shared passthrough GPU assignment policy the plan needs on ``host`` (``fallback`` for
    a host the plan does not use)."""
    lib = require(power_on, "lab", IMPORT_ERROR)
    try:
        policies = lib.host_policies(plain(plan), load_catalog(), bool(pin))
    except (KeyError, LookupError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"vgpu_assignment_policy: {exc}") from exc
    return policies.get(str(host), {}).get("policy", fallback)


def vgpu_placement(vm_results, host_results):
    """Where each VM of a wave runs: ``miglab.lab.vgpu_vm``'s ``vms`` result and the registered
    loop of the hosts' nvidia-smi calls (``results[].item``: the host, ``results[].stdout``) ->
    {"vms": {name: {gpu, mig_slot, planned, pinned}}, "problems": [...]}."""
    lib = require(power_on, "lab", IMPORT_ERROR)
    outputs = {}
    for r in plain(host_results) or []:
        if isinstance(r, dict) and not r.get("skipped"):
            outputs[str(r.get("item"))] = str(r.get("stdout") or "")
    try:
        return lib.wave_placement(plain(vm_results) or [], outputs)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"vgpu_placement: {exc}") from exc


class FilterModule:
    def filters(self):
        return {
            "vgpu_vm_item": vgpu_vm_item,
            "vmware_connection": vmware_connection,
            "vgpu_power_on_order": vgpu_power_on_order,
            "vgpu_assignment_policy": vgpu_assignment_policy,
            "vgpu_placement": vgpu_placement,
        }
