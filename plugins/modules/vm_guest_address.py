#!/usr/bin/python
"""Ansible module miglab.lab.vm_guest_address: wait for VMs' guest IP addresses (VMware Tools)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vm_guest_address
short_description: Wait until powered-on VMs report a guest IP address, and return the addresses
description:
  - Reads the power state and C(guest.ipAddress) of every VM of O(names) in one property-collector
    call per poll, until each is powered on and has an address (VMware Tools in the guest
    reports it), or until O(timeout).
  - Changes nothing. Used after powering a wave's VMs on, so that Ansible can reach them.
  - Fails at once when two of the VMs report the same address, naming them and the address.
    Clones of one template that were not customized share its machine-id and so one DHCP lease
    (VMware KB 82229); waiting does not change that.
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
extends_documentation_fragment: [miglab.lab.vmware]
options:
  names:
    description: The VMs, as named in vCenter.
    type: list
    elements: str
    required: true
  timeout:
    description: Seconds to wait for all addresses.
    type: int
    default: 600
  poll:
    description: Seconds between two reads.
    type: int
    default: 5
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Wait for the wave's guests to come up with an address
  miglab.lab.vm_guest_address:
    names: "{{ ansible_play_batch }}"
    timeout: 900
  delegate_to: localhost
  run_once: true
  register: addresses

- name: Reach each guest at its address
  ansible.builtin.set_fact:
    ansible_host: "{{ addresses.addresses[inventory_hostname] }}"
"""

RETURN = r"""
addresses:
  description: VM name to its guest IP address.
  returned: success
  type: dict
waited_s:
  description: Seconds waited.
  returned: always
  type: float
"""

import time  # noqa: E402

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
            "names": {"type": "list", "elements": "str", "required": True},
            "timeout": {"type": "int", "default": 600},
            "poll": {"type": "int", "default": 5},
        }
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    require_miglab(module)
    from miglab.adapters.vsphere.guests import duplicate_ips, read_guests

    names = list(dict.fromkeys(module.params["names"]))
    started = time.monotonic()
    with vsphere_session(module) as si:
        while True:
            state = read_guests(si, names)
            missing = [n for n in names if n not in state]
            if missing:
                module.fail_json(msg=f"no such VM in vCenter: {', '.join(missing)}")
            pending = {
                n: ("not powered on" if s["power_state"] != "poweredOn" else "no guest IP yet")
                for n, s in state.items()
                if s["power_state"] != "poweredOn" or not s["ip"]
            }
            waited = round(time.monotonic() - started, 1)
            same = duplicate_ips(state)
            if same:
                module.fail_json(msg="; ".join(same), waited_s=waited)
            if not pending:
                module.exit_json(
                    changed=False, addresses={n: state[n]["ip"] for n in names}, waited_s=waited
                )
            if waited >= module.params["timeout"]:
                why = "; ".join(f"{n}: {r}" for n, r in sorted(pending.items()))
                module.fail_json(
                    msg=f"no guest IP address after {waited:.0f} s (VMware Tools running?): {why}",
                    waited_s=waited,
                )
            time.sleep(max(1, module.params["poll"]))


if __name__ == "__main__":
    main()
