"""A campaign's benchmark VMs as Ansible inventory hosts (core: no Ansible, no pyVmomi import).

The inventory plugin ``miglab.lab.campaign_vms`` is a thin adapter around this module: it plans
the campaign with miglab's own planning (:func:`miglab.adapters.inventory.load_checked` and
:func:`~miglab.core.planning.plan_campaign`, as ``miglab plan --json``) and turns the plan into an
ordered list of hosts, each with its groups and host variables:

- hosts come in the order later plays batch them with ``serial``: by wave, then by the
  scenario's position in the campaign file, then in the scenario's VM order;
- groups: ``guests`` (what the guest playbooks target), ``miglab_vms`` and, as children of
  ``miglab_vms``, ``miglab_scenario_<id>`` and ``miglab_wave_<NNN>`` (wave zero-padded to 3
  digits);
- host variables: ``miglab_vm`` (the plan's VM plus ``scenario`` and ``wave``), ``miglab_wave``,
  ``mlperf_campaign``, ``mlperf_lab_scenario``, ``mlperf_vm_name``, ``mlperf_profile``,
  ``mlperf_vgpu_type``; with a vCenter read (:mod:`miglab.adapters.vsphere.guests`),
  ``miglab_vm_power_state`` and ``ansible_host`` (the guest's IP, when VMware Tools reports one).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from miglab.errors import Problems
from miglab.formats.files import INPUT_BYTES, UnreadableFile, read_input_text

GUESTS_GROUP = "guests"
VMS_GROUP = "miglab_vms"
SCENARIO_PREFIX = "miglab_scenario_"
WAVE_PREFIX = "miglab_wave_"
CAMPAIGN_ENV = "MIGLAB_CAMPAIGN"
POWER_ABSENT = "absent"
CONNECTION_KEYS = ("hostname", "port", "username", "password", "validate_certs", "ca_bundle")
CONNECTION_DEFAULTS = {"port": 443, "validate_certs": True}


@dataclass(frozen=True)
class VmHost:
    """One inventory host: its name, its groups (in order) and its host variables."""

    name: str
    groups: tuple[str, ...]
    vars: dict


@dataclass
class VmInventory:
    """Everything the plugin adds: hosts in order, groups with their parent, ``all`` vars."""

    campaign_file: str
    campaign_name: str
    lab: str
    hosts: list[VmHost]
    warnings: list[str] = field(default_factory=list)

    @property
    def groups(self) -> dict[str, str | None]:
        """Group name -> parent group (None: top level), in the order they first appear."""
        out: dict[str, str | None] = {GUESTS_GROUP: None, VMS_GROUP: None}
        for prefix in (SCENARIO_PREFIX, WAVE_PREFIX):
            for h in self.hosts:
                for g in h.groups:
                    if g.startswith(prefix):
                        out.setdefault(g, VMS_GROUP)
        return out

    @property
    def group_vars(self) -> dict:
        """Variables of the ``all`` group."""
        return {
            "miglab_inventory_campaign": self.campaign_file,
            "miglab_inventory_campaign_name": self.campaign_name,
            "miglab_inventory_lab": self.lab,
        }


def group_name(prefix: str, value: str) -> str:
    """An Ansible-safe group name: characters other than letters, digits and '_' become '_'."""
    return prefix + re.sub(r"[^A-Za-z0-9_]", "_", str(value))


def scenario_group(scenario_id: str) -> str:
    return group_name(SCENARIO_PREFIX, scenario_id)


def wave_group(wave: int) -> str:
    return f"{WAVE_PREFIX}{int(wave):03d}"


def vm_hosts(plan: dict, scenario_order: list[str] | None = None) -> list[VmHost]:
    """The hosts of a plan (``CampaignPlan.as_json()``), in wave / campaign / VM order.

    ``scenario_order``: the scenario ids as the campaign file lists them (default: the plan's
    order), which orders the scenarios of one wave."""
    scenarios = list(plan.get("scenarios") or [])
    order = {sid: i for i, sid in enumerate(scenario_order or [s["id"] for s in scenarios])}
    scenarios.sort(key=lambda s: (int(s["wave"]), order.get(s["id"], len(order))))
    hosts = []
    for s in scenarios:
        sid, wave = s["id"], int(s["wave"])
        for vm in s.get("vms") or []:
            groups = (GUESTS_GROUP, VMS_GROUP, scenario_group(sid), wave_group(wave))
            hvars = {
                "miglab_vm": {**vm, "scenario": sid, "wave": wave},
                "miglab_wave": wave,
                "mlperf_campaign": plan["campaign"],
                "mlperf_lab_scenario": sid,
                "mlperf_vm_name": vm["name"],
                "mlperf_profile": vm["profile"],
                "mlperf_vgpu_type": vm["vgpu_type"],
            }
            hosts.append(VmHost(vm["name"], groups, hvars))
    return hosts


def config_path(config_file: str | Path, value: str) -> str:
    """``value`` (``~`` and ``$VARS`` expanded) as an absolute path; a relative one is relative
    to the folder of the plugin configuration file ``config_file``."""
    base = Path(os.path.abspath(config_file)).parent
    return os.path.abspath(base / os.path.expanduser(os.path.expandvars(str(value))))


def source_paths(
    config_file: str | Path,
    campaign: str | None,
    lab: str | None,
    environ: dict | None = None,
) -> tuple[str | None, str]:
    """Absolute paths of the campaign and the lab inventory of a plugin configuration.

    ``campaign`` and ``lab`` are relative to the configuration file's folder, ``lab`` defaults
    to that folder; the environment's ``MIGLAB_CAMPAIGN`` (relative to the current directory)
    overrides ``campaign``. The campaign is None when neither is set."""
    environ = os.environ if environ is None else environ
    override = environ.get(CAMPAIGN_ENV)
    if override:
        campaign_path = os.path.abspath(os.path.expanduser(override))
    elif campaign:
        campaign_path = config_path(config_file, campaign)
    else:
        campaign_path = None
    lab_path = config_path(config_file, lab or ".")
    return campaign_path, lab_path


def load_inventory(campaign_path: str | Path, lab_path: str | Path) -> VmInventory:
    """Validate and plan the campaign on the lab, then list its VMs; raises ValidationError
    (every problem of the campaign and the lab, one ``FILE: FIELD: reason`` each)."""
    from miglab.adapters.inventory import load_checked
    from miglab.core.planning import plan_campaign

    campaign, lab = load_checked(campaign_path, lab_path)
    plan = plan_campaign(campaign, lab).as_json()
    return VmInventory(
        campaign_file=os.path.abspath(campaign_path),
        campaign_name=campaign.name,
        lab=os.path.abspath(lab_path),
        hosts=vm_hosts(plan, list(campaign.scenarios)),
        warnings=list(campaign.warnings),
    )


def vcenter_vars(state: dict | None) -> dict:
    """Host variables from one VM's vCenter state (``{"power_state", "ip"}``; None: no such VM)."""
    if state is None:
        return {"miglab_vm_power_state": POWER_ABSENT}
    out = {"miglab_vm_power_state": str(state.get("power_state") or "unknown")}
    if state.get("ip"):
        out["ansible_host"] = str(state["ip"])
    if state.get("ip_shared_with"):  # its address is another VM's too (real-lab notes V13)
        out["miglab_vm_ip_shared_with"] = list(state["ip_shared_with"])
    return out


def read_vcenter_file(path: str | Path) -> dict:
    """Connection settings from a JSON file ``{hostname, port, username, password,
    validate_certs, ca_bundle}`` (all optional; other keys are ignored). A relative
    ``ca_bundle`` is relative to the file's folder. Raises ValidationError."""
    p = Problems(str(path))
    try:
        data = json.loads(read_input_text(path, limit=INPUT_BYTES))
    except UnreadableFile as exc:
        p.add("", exc.reason)
        p.raise_if_any()
    except json.JSONDecodeError as exc:
        p.add("", f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")
        p.raise_if_any()
    except RecursionError:
        p.add("", "not valid JSON: nested too deeply")
        p.raise_if_any()
    if not isinstance(data, dict):
        p.add("", "must be a JSON object of connection settings")
        p.raise_if_any()
    out: dict = {}
    for key in CONNECTION_KEYS:
        if data.get(key) is None:
            continue
        value = data[key]
        if key == "port":
            ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536
            if not ok:
                p.add(key, f"must be a TCP port number, got {value!r}")
                continue
        elif key == "validate_certs":
            if not isinstance(value, bool):
                p.add(key, f"must be true or false, got {value!r}")
                continue
        elif not isinstance(value, str):
            p.add(key, "must be a string")  # never echo the value: it may be the password
            continue
        if key == "ca_bundle":
            value = os.path.abspath(Path(path).parent / os.path.expanduser(value))
        out[key] = value
    p.raise_if_any()
    return out


def connection_settings(options: dict, from_file: dict | None = None) -> dict:
    """Merge connection settings: ``options`` maps each key to ``(value, explicit)`` (explicit:
    set in the plugin configuration or by its environment variable); explicit values win over
    ``from_file``, which wins over the defaults."""
    from_file = from_file or {}
    out = {}
    for key in CONNECTION_KEYS:
        value, explicit = options.get(key, (None, False))
        if explicit and value is not None:
            out[key] = value
        elif from_file.get(key) is not None:
            out[key] = from_file[key]
        elif value is not None:
            out[key] = value
        else:
            out[key] = CONNECTION_DEFAULTS.get(key)
    return out
