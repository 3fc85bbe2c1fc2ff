#!/usr/bin/python
"""Ansible module miglab.lab.esxi_host_graphics: host graphics type and vGPU assignment policy."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: esxi_host_graphics
short_description: Set an ESXi host's default graphics type and vGPU assignment policy
description:
  - Sets the host's default graphics type (V(sharedDirect) is required for NVIDIA vGPU),
    the shared passthrough GPU assignment policy and per-GPU graphics types.
  - Only what is set is changed; an option left out is left as it is (unlike modules that reset
    it to V(shared)).
  - The new graphics type applies to a GPU once the host's Xorg service restarts or the host
    reboots; the result says so in RV(restart_needed).
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
extends_documentation_fragment: [miglab.lab.vmware]
options:
  esxi_hostname:
    description: Host(s) as named in vCenter. All hosts of O(cluster) when not set.
    type: list
    elements: str
  cluster:
    description: Cluster whose hosts to configure.
    type: str
  default_graphics_type:
    description: Host default graphics type.
    type: str
    choices: [shared, sharedDirect]
  assignment_policy:
    description: Shared passthrough GPU assignment policy (spread VMs or pack GPUs).
    type: str
    choices: [performance, consolidation]
  device_types:
    description: Per-GPU graphics type, PCI id (for example V(0000:3b:00.0)) to type.
    type: dict
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: full
"""

EXAMPLES = r"""
- name: vGPU needs Shared Direct; spread VMs across GPUs
  miglab.lab.esxi_host_graphics:
    esxi_hostname: [esxi-01.lab.example]
    default_graphics_type: sharedDirect
    assignment_policy: performance
"""

RETURN = r"""
hosts:
  description: Per host, whether it changed and its settings before and after.
  returned: always
  type: dict
restart_needed:
  description: Whether a changed graphics type still needs an Xorg restart or a host reboot.
  returned: always
  type: bool
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
            "esxi_hostname": {"type": "list", "elements": "str"},
            "cluster": {"type": "str"},
            "default_graphics_type": {"type": "str", "choices": ["shared", "sharedDirect"]},
            "assignment_policy": {"type": "str", "choices": ["performance", "consolidation"]},
            "device_types": {"type": "dict"},
        }
    )
    module = AnsibleModule(
        argument_spec=spec, supports_check_mode=True, required_one_of=[("esxi_hostname", "cluster")]
    )
    require_miglab(module)
    from miglab.adapters.vsphere.hosts import GRAPHICS_TYPES, ensure_graphics, find_hosts

    p = module.params
    for dev, gtype in (p["device_types"] or {}).items():
        if gtype not in GRAPHICS_TYPES:
            module.fail_json(
                msg=f"device_types.{dev}: {gtype!r} is not one of {', '.join(GRAPHICS_TYPES)}"
            )
    results = {}
    with vsphere_session(module) as si:
        for name, host in find_hosts(si, p["esxi_hostname"], p["cluster"]).items():
            results[name] = ensure_graphics(
                host,
                p["default_graphics_type"],
                p["assignment_policy"],
                p["device_types"],
                module.check_mode,
            )
    changed = any(r["changed"] for r in results.values())
    restart = any(
        r["changed"]
        and (
            r["before"]["default_graphics_type"] != r["after"]["default_graphics_type"]
            or r["before"]["devices"] != r["after"]["devices"]
        )
        for r in results.values()
    )
    out = {"changed": changed, "hosts": results, "restart_needed": restart}
    if module._diff:
        out["diff"] = [
            {"before_header": n, "after_header": n, "before": r["before"], "after": r["after"]}
            for n, r in results.items()
            if r["changed"]
        ]
    module.exit_json(**out)


if __name__ == "__main__":
    main()
