#!/usr/bin/python
"""Ansible module miglab.lab.esxi_host_service: an ESXi host service (TSM-SSH) through vCenter."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: esxi_host_service
short_description: Start or stop an ESXi host service through vCenter; report lockdown mode
description:
  - Brings one service of an ESXi host (C(HostServiceSystem)), by default SSH (C(TSM-SSH)), to
    O(state), and its start-up policy to O(service_policy) when given.
  - ESXi's SSH service with its default policy (V(off), "start and stop manually") stops at every
    boot; Ansible cannot reach a host again after a reboot until it is started, which vCenter can
    do. miglab's reboot tasks call this module before they wait for SSH.
  - Returns the host's lockdown mode, which keeps root out of SSH even while the service runs.
  - Check mode reports what would change.
version_added: "0.2.0"
author: miglab developers (!UNKNOWN)
extends_documentation_fragment: [miglab.lab.vmware]
options:
  esxi_hostname:
    description: Host as named in vCenter.
    type: str
    required: true
  service_name:
    description: The service's key, as C(HostServiceSystem) lists it (C(TSM-SSH), C(ntpd), ...).
    type: str
    default: TSM-SSH
  state:
    description: Wanted state; V(unchanged) only reports (or sets the policy).
    type: str
    choices: [started, stopped, restarted, unchanged]
    default: started
  service_policy:
    description:
      - Start-up policy; V(off) is ESXi's default ("start and stop manually"), V(on) starts the
        service at every boot. Left as it is when not given (miglab does not change an admin's
        policy unless asked).
    type: str
    choices: ["on", "off", automatic]
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: none
notes:
  - Sources, real-lab notes V6 - ESXi service policy documentation; F. Denneman, "Installing the
    NVAIE vGPU driver" (2023); vSphere API C(HostServiceSystem), C(HostConfigInfo.lockdownMode).
"""

EXAMPLES = r"""
- name: SSH on again after a reboot
  miglab.lab.esxi_host_service:
    esxi_hostname: "{{ inventory_hostname }}"
  delegate_to: localhost
  register: ssh_service

- name: No root SSH in lockdown mode
  ansible.builtin.assert:
    that: ssh_service.lockdown_mode == 'lockdownDisabled'
"""

RETURN = r"""
service:
  description: The service key.
  returned: always
  type: str
running:
  description: Whether the service runs at the end (in check mode, would run).
  returned: always
  type: bool
policy:
  description: The service's start-up policy at the end.
  returned: always
  type: str
lockdown_mode:
  description: The host's lockdown mode (C(lockdownDisabled), C(lockdownNormal), C(lockdownStrict)).
  returned: always
  type: str
actions:
  description: What was (or, in check mode, would be) done, in order.
  returned: always
  type: list
  elements: str
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
            "service_name": {"type": "str", "default": "TSM-SSH"},
            "state": {
                "type": "str",
                "default": "started",
                "choices": ["started", "stopped", "restarted", "unchanged"],
            },
            "service_policy": {"type": "str", "choices": ["on", "off", "automatic"]},
        }
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    require_miglab(module)
    from miglab.adapters.vsphere.hosts import find_hosts
    from miglab.adapters.vsphere.services import ensure_service

    p = module.params
    with vsphere_session(module) as si:
        host = find_hosts(si, [p["esxi_hostname"]])[p["esxi_hostname"]]
        result = ensure_service(
            host, p["service_name"], p["state"], p["service_policy"], module.check_mode
        )
    module.exit_json(**result.as_dict())


if __name__ == "__main__":
    main()
