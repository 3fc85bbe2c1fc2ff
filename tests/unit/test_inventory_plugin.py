"""Inventory plugin miglab.lab.campaign_vms through the real `ansible-inventory` (as users run it):
hosts, groups and variables of the seed campaign, relative paths, MIGLAB_CAMPAIGN, constructed
options, and what a user sees when the campaign does not validate."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from testlib import BIN, ROOT, SEED, ansible_env

SIM_HOSTS = ROOT / "inventories" / "sim" / "hosts.yml"
CAMPAIGN = "r750xa-a100-80gb-mig"
ORDER = [
    f"{CAMPAIGN}-{s}-vm{k}"
    for s, n in (("s1", 1), ("s2", 1), ("s3", 1), ("s4", 1), ("s5", 1), ("s6", 3), ("s7", 4))
    for k in range(1, n + 1)
] + [f"{CAMPAIGN}-s8-vm{k}" for k in range(1, 8)]
WARN_ON_BAD_SOURCE = {"ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "false"}
FAIL_ON_BAD_SOURCE = {"ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "true"}


def ansible(tool: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which(tool, path=str(BIN)) or tool
    return subprocess.run(
        [exe, *args], cwd=ROOT, env=ansible_env(env), capture_output=True, text=True, timeout=120
    )


def plain(value):
    """ansible-inventory's JSON without the ``{"__ansible_unsafe": ...}`` wrappers."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def inventory_list(source: Path, env: dict | None = None, export: bool = False) -> dict:
    args = ["-i", str(source), "--list"] + (["--export"] if export else [])
    res = ansible("ansible-inventory", *args, env={**FAIL_ON_BAD_SOURCE, **(env or {})})
    assert res.returncode == 0, res.stdout + res.stderr
    return plain(json.loads(res.stdout))


def config(folder: Path, body: str, name: str = "campaign_vms.yml") -> Path:
    f = folder / name
    f.write_text("plugin: miglab.lab.campaign_vms\n" + textwrap.dedent(body))
    return f


@pytest.fixture
def seed_config(tmp_path) -> Path:
    return config(tmp_path, f"campaign: {SEED}\nlab: {SIM_HOSTS}\n")


def test_seed_hosts_groups_and_vars(seed_config):
    inv = inventory_list(seed_config)
    hostvars = inv["_meta"]["hostvars"]
    assert sorted(hostvars) == sorted(ORDER) and len(ORDER) == 19
    assert inv["guests"]["hosts"] == ORDER
    assert inv["miglab_vms"]["hosts"] == ORDER
    assert set(inv["miglab_vms"]["children"]) == {
        *(f"miglab_scenario_s{i}" for i in range(1, 9)),
        *(f"miglab_wave_{w:03d}" for w in (1, 2, 3, 4)),
    }
    assert "guests" in inv["all"]["children"] and "miglab_vms" in inv["all"]["children"]
    assert inv["miglab_scenario_s6"]["hosts"] == [f"{CAMPAIGN}-s6-vm{k}" for k in (1, 2, 3)]
    assert inv["miglab_wave_001"]["hosts"] == ORDER[:4]
    assert inv["miglab_wave_002"]["hosts"] == ORDER[4:8]
    assert inv["miglab_wave_004"]["hosts"] == ORDER[12:]

    v = hostvars[f"{CAMPAIGN}-s6-vm2"]
    assert v["miglab_wave"] == 2
    assert v["mlperf_campaign"] == CAMPAIGN
    assert v["mlperf_lab_scenario"] == "s6"
    assert v["mlperf_vm_name"] == f"{CAMPAIGN}-s6-vm2"
    assert v["mlperf_profile"] == "2g.20gb"
    assert v["mlperf_vgpu_type"] == "grid_a100d-2-20c"
    assert v["miglab_vm"] == {
        "name": f"{CAMPAIGN}-s6-vm2",
        "host": "esxi-01.sim.miglab.test",
        "gpu": 1,
        "profile": "2g.20gb",
        "vgpu_type": "grid_a100d-2-20c",
        "start_slice": 4,
        "vcpus": 32,
        "memory_gb": 64,
        "memory_reservation_gb": 64,
        "mmio_gb": 64,
        "scenario": "s6",
        "wave": 2,
    }
    assert "miglab_vm_power_state" not in v and "ansible_host" not in v  # no vCenter query
    # all-group variables (host vars in --list, the group's own with --export)
    all_vars = {
        "miglab_inventory_campaign": str(SEED),
        "miglab_inventory_campaign_name": CAMPAIGN,
        "miglab_inventory_lab": str(SIM_HOSTS),
    }
    assert {k: v[k] for k in all_vars} == all_vars
    assert inventory_list(seed_config, export=True)["all"]["vars"] == all_vars


def test_serial_batches_follow_the_plan(seed_config, tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(
        textwrap.dedent("""\
        - hosts: guests
          gather_facts: false
          connection: local
          serial: 4
          tasks:
            - name: Batch
              ansible.builtin.debug:
                msg: "{{ ansible_play_batch }}"
              run_once: true
        """)
    )
    res = ansible(
        "ansible-playbook",
        "-i",
        str(seed_config),
        str(play),
        env={**FAIL_ON_BAD_SOURCE, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"},
    )
    assert res.returncode == 0, res.stdout + res.stderr
    batches = [
        result["msg"]
        for p in json.loads(res.stdout)["plays"]
        for task in p["tasks"]
        for result in task["hosts"].values()
    ]
    assert batches == [ORDER[i : i + 4] for i in range(0, 19, 4)]


def test_relative_paths_and_default_lab(tmp_path):
    (tmp_path / "campaigns").mkdir()
    shutil.copy(SEED, tmp_path / "campaigns" / "seed.yml")
    shutil.copy(SIM_HOSTS, tmp_path / "hosts.yml")  # the lab: the config file's folder
    cfg = config(tmp_path, "campaign: campaigns/seed.yml\n")
    inv = inventory_list(cfg, export=True)
    assert inv["all"]["vars"]["miglab_inventory_campaign"] == str(tmp_path / "campaigns/seed.yml")
    assert inv["all"]["vars"]["miglab_inventory_lab"] == str(tmp_path)
    assert inv["guests"]["hosts"] == ORDER
    # the folder as the inventory source: the ESXi hosts and the campaign's VMs together
    both = inventory_list(tmp_path)
    assert both["esxi_hosts"]["hosts"] == ["esxi-01.sim.miglab.test"]
    assert both["guests"]["hosts"] == ORDER


def test_miglab_campaign_overrides(tmp_path, seed_config):
    small = tmp_path / "small.yml"
    text = SEED.read_text().replace(f"name: {CAMPAIGN}", "name: small")
    text = "\n".join(
        line for line in text.splitlines() if not line.startswith(("  s2:", "  s7:", "  s8:"))
    )
    small.write_text(text + "\n")
    inv = inventory_list(seed_config, env={"MIGLAB_CAMPAIGN": str(small)})
    assert inv["guests"]["hosts"] == [
        "small-s1-vm1",
        "small-s3-vm1",
        "small-s4-vm1",
        "small-s5-vm1",
        "small-s6-vm1",
        "small-s6-vm2",
        "small-s6-vm3",
    ]
    v = inv["_meta"]["hostvars"]["small-s6-vm1"]
    assert v["mlperf_campaign"] == "small" and v["miglab_inventory_campaign"] == str(small)
    # relative to the current directory (ansible-inventory runs in the repository root)
    small_cfg = config(tmp_path, f"campaign: {small}\nlab: {SIM_HOSTS}\n", "s.campaign_vms.yml")
    assert inventory_list(small_cfg)["guests"]["hosts"][0] == "small-s1-vm1"
    rel = os.path.relpath(SEED, ROOT)
    inv = inventory_list(small_cfg, env={"MIGLAB_CAMPAIGN": rel}, export=True)
    assert inv["guests"]["hosts"] == ORDER
    assert inv["all"]["vars"]["miglab_inventory_campaign"] == str(SEED)


def test_constructed_options(tmp_path):
    cfg = config(
        tmp_path,
        f"""\
        campaign: {SEED}
        lab: {SIM_HOSTS}
        compose:
          ansible_user: "'ubuntu'"
          run_label: mlperf_lab_scenario ~ '/' ~ mlperf_profile
        groups:
          gpu0: miglab_vm.gpu == 0
        keyed_groups:
          - key: mlperf_profile
            prefix: profile
        """,
    )
    inv = inventory_list(cfg)
    v = inv["_meta"]["hostvars"][f"{CAMPAIGN}-s6-vm2"]
    assert v["ansible_user"] == "ubuntu" and v["run_label"] == "s6/2g.20gb"
    assert f"{CAMPAIGN}-s1-vm1" in inv["gpu0"]["hosts"]
    assert inv["profile_1g_10gb"]["hosts"][0] == f"{CAMPAIGN}-s5-vm1"
    assert len(inv["profile_1g_10gb"]["hosts"]) == 1 + 1 + 1 + 7


def test_bad_campaign_fails_with_the_problem_line(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(SEED.read_text().replace("runs: 3", "runs: 0"))
    cfg = config(tmp_path, f"campaign: {bad}\nlab: {SIM_HOSTS}\n")
    line = f"{bad}: mlperf.runs: must be at least 1, got 0"
    # miglab's ansible.cfg sets [inventory] any_unparsed_is_failed: an error
    res = ansible("ansible-inventory", "-i", str(cfg), "--list")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert line in out
    assert f"Completely failed to parse inventory source {cfg}" in out
    assert "Traceback" not in out
    # Ansible's default (without miglab's ansible.cfg setting): warnings (the same line) and an
    # inventory without the VMs
    res = ansible("ansible-inventory", "-i", str(cfg), "--list", env=WARN_ON_BAD_SOURCE)
    assert res.returncode == 0
    assert line in res.stderr and "Traceback" not in res.stdout + res.stderr
    assert "guests" not in json.loads(res.stdout)


def test_bad_lab_and_missing_campaign(tmp_path):
    lab = tmp_path / "lab.yml"
    lab.write_text(SIM_HOSTS.read_text().replace("miglab_host_cpus: 128", "miglab_host_cpus: 0"))
    cfg = config(tmp_path, f"campaign: {SEED}\nlab: {lab}\n")
    res = ansible("ansible-inventory", "-i", str(cfg), "--list", env=FAIL_ON_BAD_SOURCE)
    assert res.returncode != 0
    assert f"{lab}: all.children.esxi_hosts.hosts.esxi-01.sim.miglab.test." in res.stderr
    assert "Traceback" not in res.stdout + res.stderr

    cfg = config(tmp_path, "lab: lab.yml\n", name="nocampaign.campaign_vms.yml")
    res = ansible("ansible-inventory", "-i", str(cfg), "--list", env=FAIL_ON_BAD_SOURCE)
    assert res.returncode != 0
    assert f"{cfg}: campaign: is required (or set MIGLAB_CAMPAIGN)" in res.stderr


def test_other_file_names_are_not_this_plugins(tmp_path):
    cfg = config(tmp_path, f"campaign: {SEED}\nlab: {SIM_HOSTS}\n", name="vms.yml")
    res = ansible("ansible-inventory", "-i", str(cfg), "--list", env=WARN_ON_BAD_SOURCE)
    # the auto plugin hands the file to the plugin by its `plugin:` key; verify_file refuses
    assert "guests" not in json.loads(res.stdout)


def test_ansible_doc_renders():
    res = ansible("ansible-doc", "-t", "inventory", "miglab.lab.campaign_vms")
    assert res.returncode == 0, res.stdout + res.stderr
    for word in ("miglab_wave_", "MIGLAB_CAMPAIGN", "query_vcenter", "VMWARE_HOST", "keyed_groups"):
        assert word in res.stdout, word
    src = (ROOT / "plugins" / "inventory" / "campaign_vms.py").read_text()
    docs = {
        n.targets[0].id: yaml.safe_load(n.value.value)
        for n in ast.parse(src).body
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
        if n.targets[0].id in ("DOCUMENTATION", "EXAMPLES")
    }
    assert docs["DOCUMENTATION"]["name"] == "campaign_vms"
    assert docs["EXAMPLES"]["plugin"] == "miglab.lab.campaign_vms"


def test_enabled_in_ansible_cfg():
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    enabled = [p.strip() for p in cfg["inventory"]["enable_plugins"].split(",")]
    assert "miglab.lab.campaign_vms" in enabled
    assert {"ansible.builtin.yaml", "ansible.builtin.ini", "ansible.builtin.auto"} <= set(enabled)


def test_without_miglab_the_error_says_so(monkeypatch):
    import importlib.util

    from ansible.errors import AnsibleParserError

    for name in ("miglab", "miglab.adapters.inventory_vms", "miglab.errors"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    path = ROOT / "plugins" / "inventory" / "campaign_vms.py"
    spec = importlib.util.spec_from_file_location("campaign_vms_without_miglab", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.inventory_vms is None and mod.IMPORT_ERROR is not None
    plugin = mod.InventoryModule()
    monkeypatch.setattr(plugin, "_read_config_data", lambda path: {})
    with pytest.raises(AnsibleParserError, match="needs the miglab Python package"):
        plugin.parse(object(), None, "x.campaign_vms.yml")
