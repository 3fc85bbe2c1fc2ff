"""Filters miglab.lab.*: the campaign plan turned into what the lab's modules take.

Thin: each filter hands plain data to :mod:`miglab.core.planning` or :mod:`miglab.core.labvars`
and returns its answer.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.miglab.lab.plugins.plugin_utils.values import plain, require

try:
    from miglab.core import labvars, planning

    IMPORT_ERROR = None
except ImportError as exc:  # reported when a filter is used
    labvars = planning = None
    IMPORT_ERROR = exc


def vgpu_vm_item(plan_vm):
    """A planned VM (host var ``miglab_vm`` of the campaign_vms inventory, or a plan's
    ``scenarios[].vms[]`` item) -> an item of ``miglab.lab.vgpu_vm``'s ``vms`` option."""
    lib = require(planning, "lab", IMPORT_ERROR)
    value = plain(plan_vm)
    if not isinstance(value, dict):
        raise AnsibleFilterError(
            f"vgpu_vm_item: a planned VM must be a dict, not {type(value).__name__}"
        )
    try:
        return lib.vm_spec(value)
    except ValueError as exc:
        raise AnsibleFilterError(f"vgpu_vm_item: {exc}") from exc


def vmware_connection(vcenter):
    """``miglab_vcenter`` -> the connection options of the action group ``miglab.lab.vmware``, for
    ``module_defaults`` (see playbooks/vms.yml)."""
    lib = require(labvars, "lab", IMPORT_ERROR)
    try:
        return lib.connection_options(plain(vcenter))
    except ValueError as exc:
        raise AnsibleFilterError(f"vmware_connection: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"vgpu_vm_item": vgpu_vm_item, "vmware_connection": vmware_connection}
