"""miglab.adapters.inventory_vms: a campaign plan as ordered inventory hosts (the campaign_vms
plugin's core), the vCenter settings it reads, and the lab folder that holds a plugin
configuration."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from miglab.adapters import inventory_vms as iv
from miglab.adapters.inventory import load_lab
from miglab.errors import ValidationError
from testlib import ROOT, SEED

SIM = ROOT / "inventories" / "sim"
CAMPAIGN = "r750xa-a100-80gb-mig"
# The seed on the simulated lab: waves of the plan (miglab plan), scenarios in campaign order.
WAVES = {"s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 2, "s6": 2, "s7": 3, "s8": 4}
VMS = {"s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 1, "s6": 3, "s7": 4, "s8": 7}
PLUGIN_CONFIG = "plugin: miglab.lab.campaign_vms\ncampaign: campaign.yml\n"
INV = textwrap.dedent("""\
    all:
      children:
        esxi_hosts:
          hosts:
            esxi-01.sim.miglab.test:
              miglab_host_gpus: [{model: A100-PCIE-80GB, count: 4}]
              miglab_host_cpus: 128
              miglab_host_memory_gb: 1024
""")


@pytest.fixture(scope="module")
def seed():
    return iv.load_inventory(SEED, SIM)


def test_seed_has_19_hosts_in_wave_then_campaign_order(seed):
    names = [h.name for h in seed.hosts]
    expected = [f"{CAMPAIGN}-{s}-vm{k}" for s in WAVES for k in range(1, VMS[s] + 1)]
    assert len(names) == 19 == len(set(names))
    assert names == expected
    waves = [h.vars["miglab_wave"] for h in seed.hosts]
    assert waves == sorted(waves) and waves[0] == 1 and waves[-1] == 4


def test_seed_groups(seed):
    by_name = {h.name: h for h in seed.hosts}
    assert by_name[f"{CAMPAIGN}-s6-vm2"].groups == (
        "guests",
        "miglab_vms",
        "miglab_scenario_s6",
        "miglab_wave_002",
    )
    assert all(h.groups[:2] == ("guests", "miglab_vms") for h in seed.hosts)
    groups = seed.groups
    assert list(groups)[:2] == ["guests", "miglab_vms"]
    assert groups["guests"] is None and groups["miglab_vms"] is None
    assert {g for g, parent in groups.items() if parent == "miglab_vms"} == {
        *(f"miglab_scenario_{s}" for s in WAVES),
        *(f"miglab_wave_{w:03d}" for w in (1, 2, 3, 4)),
    }
    wave1 = [h.name for h in seed.hosts if "miglab_wave_001" in h.groups]
    assert wave1 == [f"{CAMPAIGN}-{s}-vm1" for s in ("s1", "s2", "s3", "s4")]


def test_seed_host_vars(seed):
    h = next(h for h in seed.hosts if h.name == f"{CAMPAIGN}-s6-vm2")
    v = h.vars
    assert v["miglab_wave"] == 2
    assert v["mlperf_campaign"] == CAMPAIGN
    assert v["mlperf_lab_scenario"] == "s6"
    assert v["mlperf_vm_name"] == h.name
    assert v["mlperf_profile"] == "2g.20gb"
    assert v["mlperf_vgpu_type"] == "grid_a100d-2-20c"
    vm = v["miglab_vm"]
    assert set(vm) == {
        "name",
        "host",
        "gpu",
        "profile",
        "vgpu_type",
        "start_slice",
        "vcpus",
        "memory_gb",
        "memory_reservation_gb",
        "mmio_gb",
        "scenario",
        "wave",
    }
    assert vm["name"] == h.name and vm["scenario"] == "s6" and vm["wave"] == 2
    assert vm["host"] == "esxi-01.sim.miglab.test"
    assert vm["profile"] == "2g.20gb" and vm["vgpu_type"] == "grid_a100d-2-20c"
    assert vm["vcpus"] == 32 and vm["memory_gb"] == vm["memory_reservation_gb"] == 64
    assert vm["mmio_gb"] == 64
    # the same data as `miglab plan --json`
    from miglab.adapters.inventory import load_checked
    from miglab.core.planning import plan_campaign

    plan = plan_campaign(*load_checked(SEED, SIM)).as_json()
    (s6,) = (s for s in plan["scenarios"] if s["id"] == "s6")
    assert {k: vm[k] for k in s6["vms"][1]} == s6["vms"][1]


def test_seed_all_group_vars_and_warnings(seed):
    assert seed.group_vars == {
        "miglab_inventory_campaign": str(SEED),
        "miglab_inventory_campaign_name": CAMPAIGN,
        "miglab_inventory_lab": str(SIM),
    }
    assert any("mmio_gb" in w for w in seed.warnings)


def test_relative_paths_become_absolute(monkeypatch):
    monkeypatch.chdir(ROOT)
    inv = iv.load_inventory("campaigns/r750xa-a100-80gb-mig.yml", "inventories/sim")
    assert inv.campaign_file == str(SEED) and inv.lab == str(SIM)


def _plan(scenarios):
    return {
        "campaign": "c",
        "scenarios": [
            {
                "id": sid,
                "wave": wave,
                "vms": [
                    {"name": f"c-{sid}-vm{k}", "profile": "1g.10gb", "vgpu_type": "t"}
                    for k in range(1, n + 1)
                ],
            }
            for sid, wave, n in scenarios
        ],
    }


def test_order_is_wave_then_campaign_then_vm():
    plan = _plan([("b", 1, 2), ("z", 2, 1), ("a", 1, 1), ("c", 1, 1)])
    hosts = iv.vm_hosts(plan, ["a", "b", "c", "z"])
    assert [h.name for h in hosts] == ["c-a-vm1", "c-b-vm1", "c-b-vm2", "c-c-vm1", "c-z-vm1"]
    # without the campaign's order: the plan's order within a wave
    hosts = iv.vm_hosts(plan)
    assert [h.name for h in hosts] == ["c-b-vm1", "c-b-vm2", "c-a-vm1", "c-c-vm1", "c-z-vm1"]


def test_group_names_are_ansible_safe():
    (h,) = iv.vm_hosts(_plan([("big-1.x", 12, 1)]))
    assert h.groups[2:] == ("miglab_scenario_big_1_x", "miglab_wave_012")
    assert h.vars["mlperf_lab_scenario"] == "big-1.x"  # the variable keeps the real id


def test_vcenter_vars():
    assert iv.vcenter_vars(None) == {"miglab_vm_power_state": "absent"}
    assert iv.vcenter_vars({"power_state": "poweredOn", "ip": "10.0.0.7"}) == {
        "miglab_vm_power_state": "poweredOn",
        "ansible_host": "10.0.0.7",
    }
    assert iv.vcenter_vars({"power_state": "poweredOff", "ip": None}) == {
        "miglab_vm_power_state": "poweredOff"
    }


def test_guest_ip_mapping_with_a_fake_collector(monkeypatch):
    from miglab.adapters.vsphere import guests

    rows = [
        {"name": "a", "runtime.powerState": "poweredOn", "guest.ipAddress": "192.0.2.10"},
        {"name": "b", "runtime.powerState": "poweredOff"},
        {"name": "t", "runtime.powerState": "poweredOff", "config.template": True},
        {"name": "other", "runtime.powerState": "poweredOn", "guest.ipAddress": "192.0.2.99"},
    ]
    calls = []

    def collect(si, vimtype, props, root=None):
        calls.append(props)
        return [(object(), r) for r in rows]

    monkeypatch.setattr(guests.props, "collect", collect)
    states = guests.read_guests(object(), ["a", "b", "t", "missing"])
    assert len(calls) == 1 and "guest.ipAddress" in calls[0]  # one round trip
    assert states == {
        "a": {"power_state": "poweredOn", "ip": "192.0.2.10"},
        "b": {"power_state": "poweredOff", "ip": None},
    }
    mapped = {n: iv.vcenter_vars(states.get(n)) for n in ("a", "b", "t", "missing")}
    assert mapped["a"] == {"miglab_vm_power_state": "poweredOn", "ansible_host": "192.0.2.10"}
    assert mapped["b"] == {"miglab_vm_power_state": "poweredOff"}
    assert mapped["t"] == mapped["missing"] == {"miglab_vm_power_state": "absent"}


def test_source_paths(tmp_path, monkeypatch):
    cfg = tmp_path / "conf" / "lab.campaign_vms.yml"
    campaign, lab = iv.source_paths(cfg, "../c.yml", None, {})
    assert campaign == str(tmp_path / "c.yml") and lab == str(tmp_path / "conf")
    campaign, lab = iv.source_paths(cfg, "/abs/c.yml", "inv", {})
    assert campaign == "/abs/c.yml" and lab == str(tmp_path / "conf" / "inv")
    assert iv.source_paths(cfg, None, None, {})[0] is None
    # MIGLAB_CAMPAIGN wins; relative to the current directory
    monkeypatch.chdir(tmp_path)
    env = {"MIGLAB_CAMPAIGN": "other.yml"}
    assert iv.source_paths(cfg, "c.yml", None, env)[0] == str(tmp_path / "other.yml")
    monkeypatch.setenv("MIGLAB_CAMPAIGN", "/x/y.yml")
    assert iv.source_paths(cfg, "c.yml", None)[0] == "/x/y.yml"


def test_vcenter_file(tmp_path):
    f = tmp_path / "vcenter.json"
    f.write_text(
        json.dumps(
            {
                "hostname": "127.0.0.1",
                "port": 8989,
                "username": "u",
                "password": "p",
                "validate_certs": True,
                "ca_bundle": "ca.pem",
                "url": "https://127.0.0.1:8989/sdk",  # other keys are ignored
            }
        )
    )
    assert iv.read_vcenter_file(f) == {
        "hostname": "127.0.0.1",
        "port": 8989,
        "username": "u",
        "password": "p",
        "validate_certs": True,
        "ca_bundle": str(tmp_path / "ca.pem"),
    }


@pytest.mark.parametrize(
    "text, line",
    [
        (None, ": (top): file not found"),
        ("{nope", ": (top): not valid JSON at line 1, column 2"),
        ("[1]", ": (top): must be a JSON object"),
        ('{"port": "x"}', ": port: must be a TCP port number, got 'x'"),
        ('{"validate_certs": "yes"}', ": validate_certs: must be true or false"),
        ('{"password": 12345678}', ": password: must be a string"),
    ],
)
def test_bad_vcenter_file(tmp_path, text, line):
    f = tmp_path / "vcenter.json"
    if text is not None:
        f.write_text(text)
    with pytest.raises(ValidationError) as exc:
        iv.read_vcenter_file(f)
    assert str(exc.value).startswith(f"{f}{line}")
    assert "12345678" not in str(exc.value)


def test_connection_settings_precedence():
    from_file = {"hostname": "file-host", "port": 8989, "password": "file-pw"}
    options = {
        "hostname": (None, False),
        "port": (443, False),  # the default: the file wins
        "username": ("env-user", True),
        "password": ("cfg-pw", True),  # explicit: wins over the file
        "validate_certs": (True, False),
        "ca_bundle": (None, False),
    }
    assert iv.connection_settings(options, from_file) == {
        "hostname": "file-host",
        "port": 8989,
        "username": "env-user",
        "password": "cfg-pw",
        "validate_certs": True,
        "ca_bundle": None,
    }
    assert iv.connection_settings({}) == {
        "hostname": None,
        "port": 443,
        "username": None,
        "password": None,
        "validate_certs": True,
        "ca_bundle": None,
    }


def test_bad_campaign_raises_problem_lines(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(SEED.read_text().replace("runs: 3", "runs: 0"))
    with pytest.raises(ValidationError) as exc:
        iv.load_inventory(bad, SIM)
    assert str(exc.value).splitlines() == [f"{bad}: mlperf.runs: must be at least 1, got 0"]


# --- the lab folder may hold the plugin's configuration -----------------------------------------
def test_lab_folder_skips_plugin_config(tmp_path):
    (tmp_path / "lab.yml").write_text(INV)
    (tmp_path / "campaign_vms.yml").write_text(PLUGIN_CONFIG)
    (tmp_path / "other.campaign_vms.yaml").write_text("plugin: miglab.lab.campaign_vms\n")
    lab = load_lab(tmp_path)
    assert [h.name for h in lab.hosts] == ["esxi-01.sim.miglab.test"]
    assert lab.source == str(tmp_path)


def test_lab_folder_with_hosts_yml_and_plugin_config(tmp_path):
    (tmp_path / "hosts.yml").write_text(INV)
    (tmp_path / "a.campaign_vms.yml").write_text(PLUGIN_CONFIG)
    assert [h.name for h in load_lab(tmp_path).hosts] == ["esxi-01.sim.miglab.test"]


def test_lab_folder_without_an_inventory_is_still_an_error(tmp_path):
    (tmp_path / "campaign_vms.yml").write_text(PLUGIN_CONFIG)
    with pytest.raises(ValidationError) as exc:
        load_lab(tmp_path)
    assert str(exc.value) == f"{tmp_path}: (top): is a directory, expected a YAML file"


def test_lab_folder_with_two_inventories_reads_both(tmp_path):
    # As ansible-playbook -i FOLDER does (it used to be refused as ambiguous).
    (tmp_path / "campaign_vms.yml").write_text(PLUGIN_CONFIG)
    (tmp_path / "first.yml").write_text(INV)
    (tmp_path / "second.yml").write_text(INV.replace("esxi-01.sim", "esxi-02.sim"))
    assert [h.name for h in load_lab(tmp_path).hosts] == [
        "esxi-01.sim.miglab.test",
        "esxi-02.sim.miglab.test",
    ]


def test_default_lab_is_the_config_folder(tmp_path):
    (tmp_path / "lab.yml").write_text(INV)
    (tmp_path / "campaign.yml").write_text(SEED.read_text())
    cfg = tmp_path / "campaign_vms.yml"
    cfg.write_text(PLUGIN_CONFIG)
    campaign, lab = iv.source_paths(cfg, "campaign.yml", None, {})
    inv = iv.load_inventory(campaign, lab)
    assert len(inv.hosts) == 19 and inv.lab == str(tmp_path) == os.path.dirname(cfg)
