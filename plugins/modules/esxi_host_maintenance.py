#!/usr/bin/python
"""Ansible module miglab.lab.esxi_host_maintenance: maintenance mode and reboot-and-wait."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: esxi_host_maintenance
short_description: Enter or exit maintenance mode, or reboot an ESXi host and wait for it
description:
  - V(maintenance) enters maintenance mode (evacuating VMs on DRS clusters), V(normal) exits it.
  - V(rebooted) reboots the host through vCenter and waits until vCenter sees it connected again
    (it must first go down, then come back), failing with a clear message after O(timeout).
    The host must be in maintenance mode unless O(force).
  - Check mode reports what would happen.
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
extends_documentation_fragment: [miglab.lab.vmware]
options:
  esxi_hostname:
    description: Host as named in vCenter.
    type: str
    required: true
  state:
    description: Wanted state.
    type: str
    choices: [maintenance, normal, rebooted]
    required: true
  timeout:
    description: Seconds to wait for maintenance mode or for the host to come back.
    type: int
    default: 1200
  evacuate_powered_off_vms:
    description:
      - The API's C(evacuatePoweredOffVms) when entering maintenance mode, for DRS clusters only.
        Without DRS vCenter's task does not succeed while powered-off VMs are registered on the
        host, so miglab refuses V(true) there (as community.vmware, it defaults to V(false)).
    type: bool
    default: false
  power_off_vms:
    description:
      - VMs (names) that may be powered off before entering maintenance mode (the campaign's
        own). Other powered-on VMs on a host without DRS are named in an error before the task
        starts (vCenter's own task would wait for its timeout and fail with a bare timeout).
    type: list
    elements: str
    default: []
  force:
    description: Reboot even when the host is not in maintenance mode.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Maintenance mode, reboot, back to service
  miglab.lab.esxi_host_maintenance:
    esxi_hostname: "{{ inventory_hostname }}"
    state: "{{ item }}"
  loop: [maintenance, rebooted, normal]
"""

RETURN = r"""
in_maintenance_mode:
  description: Whether the host is in maintenance mode at the end.
  returned: always
  type: bool
powered_off:
  description: The VMs of O(power_off_vms) that were powered off to enter maintenance mode.
  returned: always
  type: list
  elements: str
reboot_seconds:
  description: How long the reboot took until vCenter saw the host connected again.
  returned: when state is rebooted and not in check mode
  type: float
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
            "esxi_hostname": {"type": "str", "required": True},
            "state": {
                "type": "str",
                "required": True,
                "choices": ["maintenance", "normal", "rebooted"],
            },
            "timeout": {"type": "int", "default": 1200},
            "evacuate_powered_off_vms": {"type": "bool", "default": False},
            "power_off_vms": {"type": "list", "elements": "str", "default": []},
            "force": {"type": "bool", "default": False},
        }
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    require_miglab(module)
    from miglab.adapters.vsphere.connection import VsphereError
    from miglab.adapters.vsphere.hosts import ensure_maintenance, find_hosts, reboot_and_wait

    p = module.params
    out = {"changed": False, "powered_off": []}
    with vsphere_session(module) as si:
        host = find_hosts(si, [p["esxi_hostname"]])[p["esxi_hostname"]]
        if p["state"] in ("maintenance", "normal"):
            out["changed"] = ensure_maintenance(
                host,
                p["state"] == "maintenance",
                module.check_mode,
                p["timeout"],
                p["evacuate_powered_off_vms"],
                p["power_off_vms"],
                out["powered_off"],
            )
        else:
            if not p["force"] and not host.runtime.inMaintenanceMode:
                raise VsphereError(
                    f"{host.name}: not in maintenance mode; enter it first "
                    "(state: maintenance) or set force: true"
                )
            out["changed"] = True
            if not module.check_mode:
                out["reboot_seconds"] = round(reboot_and_wait(host, p["timeout"], p["force"]), 1)
        out["in_maintenance_mode"] = (
            bool(host.runtime.inMaintenanceMode)
            if not (module.check_mode and out["changed"] and p["state"] != "rebooted")
            else p["state"] == "maintenance"
        )
    module.exit_json(**out)


if __name__ == "__main__":
    main()
