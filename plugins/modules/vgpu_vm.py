#!/usr/bin/python
"""Ansible module miglab.lab.vgpu_vm: converge one or many vGPU VMs in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vgpu_vm
short_description: Create, reconfigure, power and remove VMs with NVIDIA vGPUs on vSphere
description:
  - Converges one VM (O(name)) or many (O(vms)) to a spec in one call and one vCenter session
    (firmware, vCPUs, memory fully reserved and locked to max, the three pciPassthru
    settings, vGPU devices, disk, network, guest OS, placement on a host, power state).
  - A VM cloned from O(template) keeps the template's firmware (a guest installed for BIOS does
    not boot as EFI, nor the reverse) and gets its own guest identity (O(guest_identity)).
  - Every VM is validated first (host exists, each vGPU type is offered by the host's
    C(sharedGpuCapabilities), datastore, network, template); on any problem nothing is changed.
    A type the host does not offer is named with the reason (no NVIDIA host driver, graphics
    type not Shared Direct, MIG mode on or off, a type of another GPU).
  - A VM to power on in a cluster whose DRS would choose its host (partially or fully automated,
    no per-VM override) is refused, as the planned host and GPU would not be kept (see
    M(miglab.lab.vm_drs_override)).
  - The VMs' vCenter tasks run concurrently (at most O(concurrency) at a time); the result reports
    each VM.
  - The MMIO size defaults to what NVIDIA documents for the vGPU's GPU (miglab's catalog); a
    smaller O(mmio_gb) is applied with a warning.
  - Check mode and diff mode report exactly what would change and change nothing.
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
extends_documentation_fragment: [miglab.lab.vmware]
options:
  datacenter:
    description: Datacenter of the VMs; the first one when not set.
    type: str
  vms:
    description:
      - The VMs. Keys not given in an item are taken from the module's top-level options of the
        same name.
    type: list
    elements: dict
  name:
    description: Name of a single VM (instead of O(vms)).
    type: str
  state:
    description: V(present) converges the VM, V(absent) powers it off and deletes it.
    type: str
    choices: [present, absent]
  host:
    description: ESXi host (name as in vCenter) the VM is created on / moved to.
    type: str
  datastore:
    description: Datastore for a new VM.
    type: str
  folder:
    description: VM folder path under the datacenter's VM folder (created when missing).
    type: str
  network:
    description:
      - Network of the VM's first NIC (vmxnet3; one is added when the VM has none), by name in
        the datacenter. Its kind decides the NIC backing, as the vSphere API needs it - a
        standard port group C(NetworkBackingInfo), a distributed port group (vDS, NSX segments
        on a VDS included) C(DistributedVirtualPortBackingInfo) with the switch's uuid and the
        port group's key, an NSX opaque network C(OpaqueNetworkBackingInfo).
      - A NIC on the wrong backing type is moved to the right one (the diff shows both). A name
        no network has, or that several have (a standard and a distributed port group), fails
        before anything is changed; make the port group's name unique.
    type: str
  guest_id:
    description: vSphere guest OS identifier.
    type: str
  vcpus:
    description: Number of vCPUs.
    type: int
  memory_gb:
    description: Memory in GB; vGPU VMs reserve all of it (locked to max).
    type: int
  secure_boot:
    description: Enable UEFI secure boot.
    type: bool
  vgpus:
    description: vSphere vGPU types, one device each (for example V(grid_a100d-2-20c)).
    type: list
    elements: str
  mmio_gb:
    description:
      - C(pciPassthru.64bitMMIOSizeGB). Default from miglab's GPU catalog (NVIDIA's documented
        size per vGPU, summed over the VM's vGPUs, rounded up to a power of two).
    type: int
  advanced_settings:
    description: Further VMX advanced settings (C(extraConfig)) to set.
    type: dict
  disk_gb:
    description: Size of the first disk in GB (only grown, never shrunk).
    type: int
  template:
    description: Clone a new VM from this template or VM.
    type: str
  firmware:
    description:
      - C(config.firmware). Not set, a clone keeps its template's firmware, an existing VM its
        own, and a VM created without O(template) gets V(efi).
      - A clone asking for another firmware than its template's is refused before anything is
        cloned (its guest would not boot); so is O(secure_boot) with V(bios).
    type: str
    choices: [efi, bios]
  guest_identity:
    description:
      - What a new clone of O(template) gets so that clones of one template are told apart
        (VMware KB 82229). V(cloud-init) sets the VM's C(guestinfo.metadata) (base64 JSON with
        C(instance-id) and C(local-hostname), both the VM name; C(guestinfo.metadata.encoding)
        V(base64)), which cloud-init's VMware datasource reads at boot; a new instance-id makes
        cloud-init set the hostname and new SSH host keys on first boot.
      - Set only when the clone is made; later runs leave the keys as they are (no change, no
        new identity for a guest that already booted). V(none) sets nothing.
      - cloud-init does not reset C(/etc/machine-id), from which systemd-networkd derives its
        DHCP client id; give the template an empty one, or the clones share one DHCP address
        (M(miglab.lab.vm_guest_address) fails naming them).
      - Default V(cloud-init).
    type: str
    choices: [cloud-init, none]
  power_state:
    description: Power state to converge to; V(unchanged) leaves it as it is.
    type: str
    choices: [poweredon, poweredoff, unchanged]
  gpu:
    description:
      - The planned physical GPU of the VM's vGPU, as an index among the host's NVIDIA GPUs in PCI
        order (the plan's and nvidia-smi's numbering). vSphere, not the VM, picks the GPU at
        power-on (by the host's assignment policy); with O(gpu) set the result says where the
        vGPU landed (RV(vms[].placement)), and O(verify_placement) fails on a difference.
    type: int
  mig_slot:
    description:
      - The planned MIG start slot, reported back in C(planned) of RV(vms[].placement); the slot in
        use is read on the ESXi host (C(nvidia-smi vgpu -q), C(nvidia-smi mig -lgi)), not here.
    type: int
  gpu_pin:
    description:
      - Pin the vGPU to the planned O(gpu) with the VM setting C(pciPassthru0.cfg.gpu-pci-id).
        The setting is reported by operators, not documented by VMware or NVIDIA; miglab checks
        the placement either way. V(false) (the default) removes a pin set earlier.
    type: bool
  power_on_order:
    description:
      - V(parallel) runs the VMs' tasks concurrently. V(sequential) converges the VMs of each
        host one after the other in the order given (hosts in parallel), because vSphere places
        each vGPU at power-on by what the GPUs already hold and the order decides the layout. A
        VM that fails stops the ones after it on its host.
    type: str
    choices: [parallel, sequential]
    default: parallel
  verify_placement:
    description:
      - Fail when a powered-on VM with O(gpu) runs on another GPU than the planned one (the
        message names the VM, the planned and the actual GPU).
    type: bool
    default: false
  allow_power_off:
    description:
      - Power a running VM off when a change needs it (vGPU, vCPU, memory, firmware, host),
        then back on.
    type: bool
    default: false
  concurrency:
    description: How many VMs' vCenter tasks may run at the same time.
    type: int
    default: 8
  timeout:
    description: Seconds to wait for each vCenter task.
    type: int
    default: 900
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: full
"""

EXAMPLES = r"""
- name: The seed's scenario 6 (three VMs sharing one A100 80GB)
  miglab.lab.vgpu_vm:
    hostname: vcenter.lab.example
    username: administrator@vsphere.local
    password: "{{ vault_vcenter_password }}"
    host: esxi-01.lab.example
    datastore: datastore1
    network: VM Network
    vcpus: 32
    memory_gb: 64
    mmio_gb: 64
    power_state: poweredon
    vms:
      - {name: s6-vm1, vgpus: [grid_a100d-4-40c]}
      - {name: s6-vm2, vgpus: [grid_a100d-2-20c]}
      - {name: s6-vm3, vgpus: [grid_a100d-1-10c]}

- name: Remove them
  miglab.lab.vgpu_vm:
    state: absent
    vms: [{name: s6-vm1}, {name: s6-vm2}, {name: s6-vm3}]
"""

RETURN = r"""
vms:
  description: One entry per VM, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: VM name.
      type: str
    changed:
      description: Whether the VM changed (or would, in check mode).
      type: bool
    actions:
      description: What was (or would be) done, for example V(create) or V(power on).
      type: list
      elements: str
    done:
      description: The actions that completed (all of RV(vms[].actions) unless the VM failed).
      type: list
      elements: str
    failed:
      description: Whether this VM failed.
      type: bool
    msg:
      description: The VM's error, if any.
      type: str
    placement:
      description:
        - For VMs with O(gpu); null otherwise. C(gpu) is the PCI id of the GPU vCenter reports
          the vGPU on (C(HostGraphicsInfo.vm)), null when it is not powered on; C(planned) has
          C(gpu) (PCI id), C(gpu_index) and C(mig_slot); C(pinned) says whether it was pinned.
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.miglab.lab.plugins.module_utils.vmware import (  # noqa: E402
    connection_argument_spec,
    require_miglab,
    vsphere_session,
)

VM_KEYS = {
    "name": {"type": "str"},
    "state": {"type": "str", "choices": ["present", "absent"]},
    "host": {"type": "str"},
    "datastore": {"type": "str"},
    "folder": {"type": "str"},
    "network": {"type": "str"},
    "guest_id": {"type": "str"},
    "vcpus": {"type": "int"},
    "memory_gb": {"type": "int"},
    "secure_boot": {"type": "bool"},
    "vgpus": {"type": "list", "elements": "str"},
    "mmio_gb": {"type": "int"},
    "advanced_settings": {"type": "dict"},
    "disk_gb": {"type": "int"},
    "template": {"type": "str"},
    "firmware": {"type": "str", "choices": ["efi", "bios"]},
    "guest_identity": {"type": "str", "choices": ["cloud-init", "none"]},
    "power_state": {"type": "str", "choices": ["poweredon", "poweredoff", "unchanged"]},
    "gpu": {"type": "int"},
    "mig_slot": {"type": "int"},
    "gpu_pin": {"type": "bool"},
}
DEFAULTS = {
    "state": "present",
    "guest_id": "ubuntu64Guest",
    "vcpus": 32,
    "memory_gb": 64,
    "secure_boot": False,
    "vgpus": [],
    "advanced_settings": {},
    "disk_gb": 64,
    "power_state": "unchanged",
    "gpu_pin": False,
    "guest_identity": "cloud-init",
}


def _desired(module) -> list:
    from miglab.adapters.vsphere.vmspec import VmDesired, required_mmio_gb

    p = module.params
    items = p["vms"] if p["vms"] is not None else ([{"name": p["name"]}] if p["name"] else [])
    if not items:
        module.fail_json(msg="one of name or vms is required")
    out = []
    for k, item in enumerate(items):
        unknown = set(item) - set(VM_KEYS)
        if unknown:
            module.fail_json(
                msg=f"vms[{k}]: unknown key(s) {', '.join(sorted(unknown))} "
                f"(known: {', '.join(VM_KEYS)})"
            )
        merged = {key: item.get(key, p.get(key)) for key in VM_KEYS}
        for key, value in DEFAULTS.items():
            if merged[key] is None:
                merged[key] = value
        if not merged["name"]:
            module.fail_json(msg=f"vms[{k}]: name is required")
        vgpus = [str(v).lower() for v in merged["vgpus"]]
        mmio = merged["mmio_gb"] if merged["mmio_gb"] is not None else required_mmio_gb(vgpus)
        out.append(
            VmDesired(
                name=merged["name"],
                state=merged["state"],
                host=merged["host"],
                datastore=merged["datastore"],
                folder=merged["folder"],
                network=merged["network"],
                guest_id=merged["guest_id"],
                vcpus=int(merged["vcpus"]),
                memory_mb=int(merged["memory_gb"]) * 1024,
                secure_boot=bool(merged["secure_boot"]),
                vgpus=vgpus,
                mmio_gb=mmio,
                advanced={str(a): str(b) for a, b in (merged["advanced_settings"] or {}).items()},
                disk_gb=merged["disk_gb"],
                template=merged["template"],
                power_state=merged["power_state"],
                gpu=merged["gpu"],
                mig_slot=merged["mig_slot"],
                gpu_pin=bool(merged["gpu_pin"]),
                firmware=merged["firmware"],
                guest_identity=merged["guest_identity"],
            )
        )
    return out


def main() -> None:
    spec = connection_argument_spec()
    spec.update({key: dict(value) for key, value in VM_KEYS.items()})
    spec.update(
        {
            "datacenter": {"type": "str"},
            "vms": {"type": "list", "elements": "dict"},
            "allow_power_off": {"type": "bool", "default": False},
            "concurrency": {"type": "int", "default": 8},
            "timeout": {"type": "int", "default": 900},
            "power_on_order": {
                "type": "str",
                "choices": ["parallel", "sequential"],
                "default": "parallel",
            },
            "verify_placement": {"type": "bool", "default": False},
        }
    )
    module = AnsibleModule(
        argument_spec=spec, supports_check_mode=True, mutually_exclusive=[("name", "vms")]
    )
    require_miglab(module)
    from miglab.adapters.vsphere.vms import VmConverger

    wanted = _desired(module)
    with vsphere_session(module) as si:
        conv = VmConverger(
            si,
            module.params["datacenter"],
            module.params["concurrency"],
            module.params["allow_power_off"],
            module.params["timeout"],
            sequential=module.params["power_on_order"] == "sequential",
        )
        results = conv.converge(wanted, check_mode=module.check_mode)
    for r in results:
        for w in r.warnings:
            module.warn(w)
    out = {
        "changed": any(r.changed for r in results)
        if module.check_mode
        else any(r.done for r in results),
        "vms": [r.as_dict() for r in results],
    }
    if module._diff:
        out["diff"] = [
            {
                "before_header": r.name,
                "after_header": r.name,
                "before": _public(r.before),
                "after": _public(r.after),
            }
            for r in results
            if r.changed
        ]
    failed = [r for r in results if r.error]
    if module.params["verify_placement"] and not module.check_mode:
        for r in results:
            p = r.placement
            if r.error or not p or p["planned"]["gpu"] is None:
                continue
            if p["gpu"] != p["planned"]["gpu"]:
                r.error = (
                    f"{r.name}: planned on GPU {p['planned']['gpu_index']} "
                    f"({p['planned']['gpu']}), vCenter runs its vGPU on "
                    f"{p['gpu'] or 'no GPU'}"
                )
                failed.append(r)
    if failed:
        module.fail_json(msg="; ".join(r.error for r in failed), **out)
    module.exit_json(**out)


def _public(view):
    if view is None:
        return {}
    return {k: v for k, v in view.items() if not k.startswith("_")}


if __name__ == "__main__":
    main()
