#!/usr/bin/python
"""Ansible module miglab.lab.vm_drs_override: per-VM DRS overrides for the campaign's VMs."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vm_drs_override
short_description: Keep DRS from choosing another host for VMs (per-VM DRS overrides)
description:
  - In a DRS cluster set to Partially or Fully Automated, DRS chooses the host when a VM powers
    on, so a VM planned on one host and GPU can run elsewhere. NVIDIA supports vGPU VMs in DRS
    clusters set to Partially Automated or Manual, and Partially Automated still places VMs at
    power-on.
  - This module gives each VM in O(vms) a per-VM override (by default DRS disabled for it; it
    powers on where it is registered and is not migrated), one cluster reconfiguration per
    cluster. VMs in clusters without DRS, or on a lone host, are left alone and reported.
  - Check mode reports what would change; a second run changes nothing.
version_added: "0.2.0"
author: miglab developers (!UNKNOWN)
extends_documentation_fragment: [miglab.lab.vmware]
options:
  vms:
    description: VM names, as vCenter names them.
    type: list
    elements: str
    required: true
  drs_enable:
    description: DRS for these VMs; V(false) (the default) keeps them where they are registered.
    type: bool
    default: false
  drs_automation_level:
    description:
      - With O(drs_enable=true), the VMs' automation level; V(manual) keeps the host at power-on.
    type: str
    choices: [manual, partiallyAutomated, fullyAutomated]
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: none
notes:
  - Sources, real-lab notes V5 - NVIDIA AI Enterprise user guide, "vGPU in a DRS cluster";
    vSphere API C(ClusterDrsVmConfigSpec), C(DrsBehaviorInfo). Like community.vmware's
    C(vmware_drs_override), for many VMs in one call.
"""

EXAMPLES = r"""
- name: The campaign's VMs stay on their planned hosts
  miglab.lab.vm_drs_override:
    vms: "{{ groups['miglab_vms'] }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
vms:
  description: >-
    Per VM: C(cluster) (or null), C(drs) (whether DRS is on there), C(override) (at the end) and,
    when it changed, C(before).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.miglab.lab.plugins.module_utils.vmware import (  # noqa: E402
    connection_argument_spec,
    require_miglab,
    vsphere_session,
)


def main() -> None:
    spec = connection_argument_spec()
    spec.update(
        {
            "vms": {"type": "list", "elements": "str", "required": True},
            "drs_enable": {"type": "bool", "default": False},
            "drs_automation_level": {
                "type": "str",
                "choices": ["manual", "partiallyAutomated", "fullyAutomated"],
            },
        }
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    require_miglab(module)
    from miglab.adapters.vsphere.drs import ensure_drs_overrides

    p = module.params
    if p["drs_automation_level"] and not p["drs_enable"]:
        module.fail_json(msg="drs_automation_level needs drs_enable: true")
    with vsphere_session(module) as si:
        result = ensure_drs_overrides(
            si, p["vms"], p["drs_enable"], p["drs_automation_level"], module.check_mode
        )
    module.exit_json(**result.as_dict())


if __name__ == "__main__":
    main()
