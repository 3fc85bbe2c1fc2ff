#!/usr/bin/python
"""Ansible module miglab.lab.esxi_cluster_image: NVIDIA's host driver through a vLCM image."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: esxi_cluster_image
short_description: Put NVIDIA's vGPU host driver into a vLCM cluster image and remediate hosts
description:
  - On a vSphere 7.0 U2+/8 cluster managed by a single vSphere Lifecycle Manager (vLCM) image, a
    component installed with esxcli is drift - the cluster turns non-compliant and the next
    remediation removes it. This module takes the supported way, through the vSphere Automation
    REST API (C(/api/esx/settings)).
  - It imports NVIDIA's offline bundles (O(depots)) into vCenter's depot when the components of
    O(driver_version) are not there yet, adds the vGPU Manager component (and the GPU Management
    Daemon's, O(daemon)) to the cluster's desired image through a draft and a commit, scans
    compliance, and remediates O(esxi_hostname) (or, with O(cluster), every host that needs it),
    which vLCM does host by host - maintenance mode, install, reboot, exit.
  - Components of the image that are not NVIDIA's (base image, vendor add-on, others) are left as
    they are; a host that differs from the image in more than NVIDIA's components is not
    remediated unless O(allow_other_drift), since remediation applies the whole image.
  - With O(state=query) it only reports whether the host's cluster is image-managed (the cluster's
    C(lifecycleManaged) flag, read through the vSphere API, so vCenters and clusters without the
    REST endpoint answer too) and, with O(scan) on an image-managed cluster, its image's
    components and compliance (REST).
  - Check mode reports the import, the image change (as a diff) and the hosts it would
    remediate, changing nothing.
version_added: "0.3.0"
author: miglab developers (!UNKNOWN)
extends_documentation_fragment: [miglab.lab.vmware]
options:
  esxi_hostname:
    description: Host as named in vCenter; its cluster's image is used, and only it is remediated.
    type: str
  cluster:
    description: Cluster name, instead of O(esxi_hostname); every host that needs it is remediated.
    type: str
  state:
    description: V(present) puts the driver into the image; V(query) only reads.
    type: str
    choices: [present, query]
    default: present
  driver_version:
    description: NVIDIA driver version wanted, e.g. C(550.127.06) (required with V(present)).
    type: str
  daemon:
    description: Also the NVIDIA GPU Management Daemon component (C(nvd-gpu-mgmt-daemon)).
    type: bool
    default: true
  depots:
    description:
      - URLs vCenter pulls NVIDIA's offline bundles from (vGPU Manager, GPU Management Daemon),
        imported only when the depot lacks the wanted components. vCenter itself downloads them.
    type: list
    elements: str
    default: []
  name_pattern:
    description: Regular expression of NVIDIA's vGPU Manager component names.
    type: str
    default: "^(?:NVD|NVIDIA)[-_]"
  component:
    description: The vGPU Manager's component name, when the depot holds the driver in several.
    type: str
  remediate:
    description: Remediate after the image change (false only changes the image).
    type: bool
    default: true
  allow_other_drift:
    description: Remediate also hosts that differ from the image in more than NVIDIA's components.
    type: bool
    default: false
  scan:
    description: With V(query), also run a compliance scan.
    type: bool
    default: false
  task_timeout:
    description: Seconds to wait for each vCenter task (an import, a scan, a remediation).
    type: int
    default: 7200
attributes:
  check_mode:
    description: Can run in check mode and report the import, image change and remediation.
    support: full
  diff_mode:
    description: Returns the image's components before and after (in check mode, as they would be).
    support: full
notes:
  - Real-lab notes V16 (Broadcom KB 440252; F. Denneman 2023). API - VMware vSphere Automation
    API, C(esx/settings/clusters/{cluster}/software), C(.../software/drafts),
    C(esx/settings/depots/offline), C(esx/settings/depot-content/components), C(cis/tasks).
"""

EXAMPLES = r"""
- name: NVIDIA's driver into the cluster image, then remediate this host
  miglab.lab.esxi_cluster_image:
    esxi_hostname: "{{ inventory_hostname }}"
    driver_version: 550.127.06
    depots:
      - https://depot.lab.example/nvidia/NVD-AIE-800_550.127.06-1OEM.800.1.0.20613240_24166025.zip
      - https://depot.lab.example/nvidia/nvd-gpu-mgmt-daemon_550.127.06-0.0.0000_24166060.zip
  delegate_to: localhost

- name: Is the host's cluster image-managed?
  miglab.lab.esxi_cluster_image:
    esxi_hostname: "{{ inventory_hostname }}"
    state: query
  delegate_to: localhost
  register: lifecycle
"""

RETURN = r"""
cluster:
  description: The cluster's identifier (C(domain-c7)).
  returned: always
  type: str
cluster_name:
  description: The cluster's name.
  returned: always
  type: str
image_managed:
  description: Whether the cluster is managed by a single vLCM image.
  returned: always
  type: bool
components:
  description: The image's components before any change (name -> version and details).
  returned: always
  type: dict
imported:
  description: Depot URLs imported (in check mode, that would be).
  returned: always
  type: list
  elements: str
image_change:
  description: The image's component changes, one line each.
  returned: always
  type: list
  elements: str
commit:
  description: The commit the image change made.
  returned: when the image was changed
  type: str
remediated:
  description: Hosts remediated (in check mode, that would be).
  returned: always
  type: list
  elements: str
compliance:
  description: The last scan - C(status), C(impact) and C(hosts) (name -> status).
  returned: always
  type: dict
actions:
  description: What was (or would be) done, in order.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.miglab.lab.plugins.module_utils.vmware import (  # noqa: E402
    connection_argument_spec,
    require_miglab,
    rest_session,
    vsphere_session,
)


def query(module) -> dict:
    """Image-managed or not, through the vSphere API (pyVmomi); details through REST on request."""
    from miglab.adapters.vsphere.hosts import find_hosts, host_lifecycle
    from miglab.adapters.vsphere.props import by_name
    from miglab.core.esxi.image import summarize

    p = module.params
    with vsphere_session(module) as si:
        if p["esxi_hostname"]:
            host = find_hosts(si, [p["esxi_hostname"]])[p["esxi_hostname"]]
            found = host_lifecycle(host)
        else:
            from pyVmomi import vim

            cluster = by_name(si, vim.ClusterComputeResource).get(p["cluster"])
            if cluster is None:
                module.fail_json(msg=f"cluster {p['cluster']!r} not found")
            found = {
                "cluster_name": cluster.name,
                "cluster": cluster._moId,
                "image_managed": bool(getattr(cluster, "lifecycleManaged", False)),
            }
    out = {
        "changed": False,
        **found,
        "components": {},
        "imported": [],
        "image_change": [],
        "remediated": [],
        "compliance": {},
        "actions": [],
    }
    if found["image_managed"] and p["scan"]:
        with rest_session(module) as api:
            out["components"] = (api.software(found["cluster"]) or {}).get("components") or {}
            out["compliance"] = summarize(api.scan(found["cluster"], timeout=p["task_timeout"]))
    return out


def main() -> None:
    spec = connection_argument_spec()
    spec.update(
        {
            "esxi_hostname": {"type": "str"},
            "cluster": {"type": "str"},
            "state": {"type": "str", "default": "present", "choices": ["present", "query"]},
            "driver_version": {"type": "str"},
            "daemon": {"type": "bool", "default": True},
            "depots": {"type": "list", "elements": "str", "default": []},
            "name_pattern": {"type": "str", "default": "^(?:NVD|NVIDIA)[-_]"},
            "component": {"type": "str"},
            "remediate": {"type": "bool", "default": True},
            "allow_other_drift": {"type": "bool", "default": False},
            "scan": {"type": "bool", "default": False},
            "task_timeout": {"type": "int", "default": 7200},
        }
    )
    module = AnsibleModule(
        argument_spec=spec,
        supports_check_mode=True,
        required_one_of=[("esxi_hostname", "cluster")],
        mutually_exclusive=[("esxi_hostname", "cluster")],
        required_if=[("state", "present", ("driver_version",))],
    )
    require_miglab(module)
    from miglab.adapters.vsphere.cluster_image import ClusterImage
    from miglab.core.esxi.image import ImageError, Wanted

    p = module.params
    if p["state"] == "query":
        module.exit_json(**query(module))
    wanted = Wanted(
        driver=p["driver_version"] or "",
        daemon=p["daemon"],
        name_pattern=p["name_pattern"],
        component=p["component"],
    )
    with rest_session(module) as api:
        ci = ClusterImage(
            api,
            wanted,
            depots=p["depots"],
            check_mode=module.check_mode,
            remediate=p["remediate"],
            allow_other_drift=p["allow_other_drift"],
            task_timeout=p["task_timeout"],
            log=module.log,
        )
        try:
            res = ci.ensure(p["esxi_hostname"], p["cluster"])
        except ImageError as exc:
            module.fail_json(
                msg=f"{p['esxi_hostname'] or p['cluster']}: {exc}; nothing was changed"
            )
    out = res.as_dict()
    diff = out.pop("diff")
    if module._diff and diff:
        out["diff"] = diff
    module.exit_json(**out)


if __name__ == "__main__":
    main()
