"""Inventory plugin miglab.lab.campaign_vms: a campaign's benchmark VMs as Ansible hosts.

Thin: :mod:`miglab.adapters.inventory_vms` plans the campaign (miglab's own planning, as ``miglab
plan``)
and lists the hosts with their groups and variables; :mod:`miglab.adapters.vsphere.guests` reads
power
states and guest IPs from vCenter. This file maps options and errors to Ansible's.
"""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: campaign_vms
short_description: The benchmark VMs of a miglab campaign as inventory hosts
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
description:
  - Plans a miglab campaign on its lab (the same validation and plan as C(miglab plan --json))
    and adds one host per VM of every scenario, named as the plan names the VM
    (C(<campaign>-<scenario>-vm<k>)).
  - Hosts are added by wave, then in the order of the scenarios in the campaign file, then in
    each scenario's VM order; plays that batch hosts with C(serial) follow that order.
  - "Groups: C(guests) (what the guest playbooks target) and C(miglab_vms) hold every VM;
    C(miglab_scenario_<id>) (for example C(miglab_scenario_s6)) and C(miglab_wave_<NNN>) (wave
    number zero-padded to three digits, for example C(miglab_wave_001)) are children of
    C(miglab_vms). Characters of a scenario id other than letters, digits and C(_) become C(_)
    in its group name."
  - "Host variables: C(miglab_vm) (the plan's VM: C(name), C(host), C(gpu), C(profile),
    C(vgpu_type), C(start_slice), C(vcpus), C(memory_gb), C(memory_reservation_gb), C(mmio_gb),
    plus C(scenario) and C(wave)), C(miglab_wave), C(mlperf_campaign), C(mlperf_lab_scenario),
    C(mlperf_vm_name), C(mlperf_profile) and C(mlperf_vgpu_type)."
  - "Variables of the C(all) group: C(miglab_inventory_campaign) (absolute path of the campaign
    file), C(miglab_inventory_campaign_name) and C(miglab_inventory_lab) (absolute path of the
    lab inventory)."
  - With O(query_vcenter=true), one vCenter session reads every campaign VM's power state and
    guest IP address in one property collector call and sets C(miglab_vm_power_state)
    (V(poweredOn), V(poweredOff), V(suspended), or V(absent) for a VM vCenter does not have)
    and, when VMware Tools reports an address, C(ansible_host). Powered-on VMs that report one
    address (clones of one template not customized, real-lab notes V13) get no C(ansible_host)
    but C(miglab_vm_ip_shared_with), and a warning names them.
  - Uses a YAML configuration file whose name ends with C(campaign_vms.yml) or
    C(campaign_vms.yaml).
  - "A campaign or lab that does not validate fails the source with miglab's problem lines
    (C(FILE: FIELD: reason), one per problem). Ansible reports a failed inventory source as a
    warning and goes on without its hosts unless C(unparsed_is_failed) or
    C(any_unparsed_is_failed) is set in the C([inventory]) section of C(ansible.cfg) (or
    E(ANSIBLE_INVENTORY_UNPARSED_FAILED) / E(ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED))."
extends_documentation_fragment:
  - ansible.builtin.constructed
requirements:
  - the C(miglab) Python package on the controller
  - C(pyvmomi) on the controller, for O(query_vcenter=true)
options:
  plugin:
    description: Marks this file as a configuration of this plugin.
    type: str
    required: true
    choices: [miglab.lab.campaign_vms]
  campaign:
    description:
      - Path of the miglab campaign file. A relative path is relative to the folder of this
        configuration file.
      - The environment variable E(MIGLAB_CAMPAIGN), when set, overrides it (a relative path
        there is relative to the current directory).
      - Required unless E(MIGLAB_CAMPAIGN) is set.
    type: str
  lab:
    description:
      - Path of the lab's miglab inventory the campaign is planned on (an Ansible YAML inventory
        file or folder with the group C(esxi_hosts), as C(miglab plan -i) reads it). A relative
        path is relative to the folder of this configuration file.
      - Default is the folder of this configuration file; inventory plugin configurations in
        that folder (YAML files with a top-level C(plugin) key) are not taken for the lab.
    type: str
  query_vcenter:
    description:
      - Read each VM's power state and guest IP address from vCenter and set the host variables
        C(miglab_vm_power_state) and C(ansible_host).
      - A vCenter that cannot be reached or refuses the login fails this inventory source.
    type: bool
    default: false
  vcenter_file:
    description:
      - Path of a JSON file with the vCenter connection, an object with any of C(hostname),
        C(port), C(username), C(password), C(validate_certs) and C(ca_bundle) (other keys are
        ignored; a relative C(ca_bundle) is relative to the JSON file's folder). The simulated
        lab writes such a file.
      - A relative path is relative to the folder of this configuration file.
      - The connection options below win over it when set in this configuration file or by
        their environment variables.
    type: str
  hostname:
    description: vCenter (or ESXi) host name or IP address.
    type: str
    env:
      - name: VMWARE_HOST
  username:
    description: User name for vCenter.
    type: str
    env:
      - name: VMWARE_USER
  password:
    description:
      - Password of O(username). Never shown in error messages.
    type: str
    env:
      - name: VMWARE_PASSWORD
  port:
    description: vCenter HTTPS port.
    type: int
    default: 443
    env:
      - name: VMWARE_PORT
  validate_certs:
    description: Verify vCenter's TLS certificate. Only set to V(false) for a lab you trust.
    type: bool
    default: true
    env:
      - name: VMWARE_VALIDATE_CERTS
  ca_bundle:
    description:
      - PEM file of the certificate authorities that signed vCenter's certificate, for
        O(validate_certs=true) with a private CA.
    type: path
    env:
      - name: VMWARE_CA_BUNDLE
notes:
  - Hosts have no connection variables beyond C(ansible_host); give C(ansible_user) and the
    like in C(group_vars/guests) or with O(compose).
"""

EXAMPLES = r"""
# inventories/sim/vms.campaign_vms.yml: the seed campaign's VMs, planned on the lab next to it
# (inventories/sim/hosts.yml); `ansible-inventory -i inventories/sim --graph` lists both.
plugin: miglab.lab.campaign_vms
campaign: ../../campaigns/r750xa-a100-80gb-mig.yml
lab: hosts.yml

# campaign_vms.yml anywhere, with the lab named and power states / IPs from vCenter:
# plugin: miglab.lab.campaign_vms
# campaign: /srv/miglab/campaigns/r750xa-a100-80gb-mig.yml
# lab: /srv/miglab/inventories/my-lab
# query_vcenter: true
# hostname: vcenter.lab.example        # or VMWARE_HOST, VMWARE_USER, VMWARE_PASSWORD, ...
# username: administrator@vsphere.local
# ca_bundle: /etc/pki/lab-ca.pem
# keyed_groups:
#   - key: miglab_vm.host              # one group per ESXi host: esxi_host_esxi_01_lab_example
#     prefix: esxi_host
# compose:
#   ansible_user: "'ubuntu'"
# groups:
#   miglab_running: miglab_vm_power_state == 'poweredOn'

# Another campaign with the same configuration:
#   MIGLAB_CAMPAIGN=campaigns/h200-sxm-mig.yml ansible-inventory -i campaign_vms.yml --graph
"""

import os  # noqa: E402
import time  # noqa: E402

from ansible.errors import AnsibleParserError  # noqa: E402
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable  # noqa: E402

try:
    from miglab.adapters import inventory_vms
    from miglab.errors import ValidationError

    IMPORT_ERROR = None
except ImportError as exc:  # reported when a configuration is parsed
    inventory_vms = None
    ValidationError = Exception
    IMPORT_ERROR = exc

CONNECTION_OPTIONS = ("hostname", "port", "username", "password", "validate_certs", "ca_bundle")
# Ansible hands a source that failed to every other enabled plugin, and ansible.builtin.auto
# loads this one again for it: a refused login is repeated from memory for a few seconds rather
# than tried again on vCenter (failed logins count towards vCenter's account lockout).
_FAILED_LOGINS: dict = {}
FAILED_LOGIN_MEMORY_S = 30


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "miglab.lab.campaign_vms"

    def verify_file(self, path):
        return super().verify_file(path) and str(path).endswith(
            ("campaign_vms.yml", "campaign_vms.yaml")
        )

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        if inventory_vms is None:
            raise AnsibleParserError(
                f"{self.NAME} needs the miglab Python package on the controller "
                f"(pip install -e <miglab checkout>): {IMPORT_ERROR}"
            )
        campaign, lab = inventory_vms.source_paths(
            path, self.get_option("campaign"), self.get_option("lab")
        )
        if not campaign:
            raise AnsibleParserError(f"{path}: campaign: is required (or set MIGLAB_CAMPAIGN)")
        try:
            inv = inventory_vms.load_inventory(campaign, lab)
        except ValidationError as exc:
            raise AnsibleParserError(str(exc)) from None
        for warning in inv.warnings:
            self.display.v(f"{self.NAME}: {warning}")
        states = self._vcenter(path, [h.name for h in inv.hosts])
        self._populate(inv, states)

    # --- vCenter ----------------------------------------------------------------------------
    def _vcenter(self, path, names):
        """{VM name: state} from vCenter, or None when query_vcenter is off."""
        if not self.get_option("query_vcenter"):
            return None
        try:
            import pyVmomi  # noqa: F401

            from miglab.adapters.vsphere.connection import ConnectionSpec, VsphereError
            from miglab.adapters.vsphere.guests import guest_states, unshare_ips
        except ImportError as exc:
            raise AnsibleParserError(
                f"{self.NAME}: query_vcenter needs pyvmomi on the controller: {exc}"
            ) from None
        from_file = None
        if self.get_option("vcenter_file"):
            file = inventory_vms.config_path(path, self.get_option("vcenter_file"))
            try:
                from_file = inventory_vms.read_vcenter_file(file)
            except ValidationError as exc:
                raise AnsibleParserError(str(exc)) from None
        options = {}
        for key in CONNECTION_OPTIONS:
            value, origin = self.get_option_and_origin(key)
            options[key] = (value, origin != "default")
        settings = inventory_vms.connection_settings(options, from_file)
        password = settings["password"]
        spec = ConnectionSpec(
            hostname=_text(settings["hostname"]),
            username=_text(settings["username"]),
            password=_text(password),
            port=int(settings["port"]),
            validate_certs=bool(settings["validate_certs"]),
            ca_bundle=_text(settings["ca_bundle"]),
        )
        key = (os.path.abspath(path), hash(spec))
        failed = _FAILED_LOGINS.get(key)
        if failed and time.monotonic() - failed[0] < FAILED_LOGIN_MEMORY_S:
            raise AnsibleParserError(failed[1])
        try:
            states, shared = unshare_ips(guest_states(spec, names))
        except VsphereError as exc:
            msg = " ".join(str(exc).split())  # one line
            if password:
                msg = msg.replace(str(password), "********")
            _FAILED_LOGINS[key] = (time.monotonic(), f"vCenter: {msg}")
            raise AnsibleParserError(f"vCenter: {msg}") from None
        for line in shared:
            self.display.warning(f"{self.NAME}: {line}; ansible_host is left unset for them")
        return states

    # --- inventory --------------------------------------------------------------------------
    def _populate(self, inv, states):
        for group, parent in inv.groups.items():
            self.inventory.add_group(group)
            if parent:
                self.inventory.add_child(parent, group)
        for key, value in inv.group_vars.items():
            self.inventory.set_variable("all", key, value)
        strict = self.get_option("strict")
        for host in inv.hosts:
            hvars = dict(host.vars)
            if states is not None:
                hvars.update(inventory_vms.vcenter_vars(states.get(host.name)))
            for group in host.groups:
                self.inventory.add_host(host.name, group=group)
            for key, value in hvars.items():
                self.inventory.set_variable(host.name, key, value)
            variables = {**inv.group_vars, **hvars}
            self._set_composite_vars(self.get_option("compose"), variables, host.name, strict)
            self._add_host_to_composed_groups(
                self.get_option("groups"), variables, host.name, strict
            )
            self._add_host_to_keyed_groups(
                self.get_option("keyed_groups"), variables, host.name, strict
            )


def _text(value):
    return None if value is None else str(value)
