#!/usr/bin/python
"""Ansible module miglab.lab.esxi_gpu_info: NVIDIA GPUs and vGPU types of ESXi hosts."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: esxi_gpu_info
short_description: NVIDIA GPUs, vGPU types and graphics settings of ESXi hosts
description:
  - Per host, the NVIDIA PCI devices (PCI id, device id, name) mapped to miglab's GPU catalog,
    the vGPU types the host offers (C(sharedPassthruGpuTypes), C(sharedGpuCapabilities)), the
    graphics information and the graphics configuration.
  - Changes nothing.
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
extends_documentation_fragment: [miglab.lab.vmware]
options:
  esxi_hostname:
    description: Host(s) as named in vCenter; all hosts (of O(cluster)) when not set.
    type: list
    elements: str
  cluster:
    description: Only the hosts of this cluster.
    type: str
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: What GPUs and vGPU types do the lab's hosts have?
  miglab.lab.esxi_gpu_info:
    cluster: gpu-cluster
  register: gpu_info

- name: Every host must offer the campaign's vGPU type
  ansible.builtin.assert:
    that: "'grid_a100d-2-20c' in item.value.vgpu_types"
  loop: "{{ gpu_info.hosts | dict2items }}"
"""

RETURN = r"""
hosts:
  description: Host name to its GPU information.
  returned: always
  type: dict
  contains:
    gpus:
      description: NVIDIA PCI devices with C(pci_id), C(device_id), C(name), C(catalog).
      type: list
      elements: dict
    vgpu_types:
      description: vGPU types the host offers.
      type: list
      elements: str
    graphics_config:
      description: Default graphics type, assignment policy, per-device types.
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
    spec.update({"esxi_hostname": {"type": "list", "elements": "str"}, "cluster": {"type": "str"}})
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    require_miglab(module)
    from miglab.adapters.vsphere.hosts import find_hosts, gpu_info

    with vsphere_session(module) as si:
        hosts = find_hosts(si, module.params["esxi_hostname"], module.params["cluster"])
        info = {name: gpu_info(host) for name, host in sorted(hosts.items())}
    module.exit_json(changed=False, hosts=info)


if __name__ == "__main__":
    main()
