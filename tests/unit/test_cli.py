"""The `miglab` command as users run it: exit codes, JSON contracts, human output."""

from __future__ import annotations

import json
import re

import yaml

from testlib import FIXTURES, ROOT, SEED, run_cli


def test_validate_seed():
    res = run_cli("validate", SEED)
    assert res.returncode == 0, res.stderr
    assert "8 scenarios, 19 VMs" in res.stdout


def test_plan_seed_prints_all_layouts_and_schedule():
    res = run_cli("plan", SEED)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for sid in [f"s{i}" for i in range(1, 9)]:
        assert f"Scenario {sid}:" in out
    assert out.count("[1g.10gb]") >= 7 + 1 + 1 + 1  # s8's seven, s5, s6, s7
    assert "grid_a100d-2-20c" in out and "serial" in out and "lower bound" in out


def test_plan_json_contract():
    res = run_cli("plan", SEED, "--json")
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert plan["gpu"] == "A100-PCIE-80GB"
    s6 = next(s for s in plan["scenarios"] if s["id"] == "s6")
    assert [(v["profile"], v["start_slice"]) for v in s6["vms"]] == [
        ("4g.40gb", 0),
        ("2g.20gb", 4),
        ("1g.10gb", 6),
    ]
    assert {v["vgpu_type"] for v in s6["vms"]} == {
        "grid_a100d-4-40c",
        "grid_a100d-2-20c",
        "grid_a100d-1-10c",
    }
    sch = plan["schedule"]
    assert sch["lower_bound_s"] <= sch["makespan_s"] <= sch["serial_s"]


def test_gpu_profiles_json_contract():
    res = run_cli("gpu", "profiles", "a100-pcie-80gb", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["gpu"] == "A100-PCIE-80GB"
    keys = {"name", "id", "slices", "memory_gib", "max_instances", "placements", "placement_size"}
    assert all(set(p) == keys for p in data["profiles"])


def test_gpu_profiles_unknown_gpu_exits_2():
    res = run_cli("gpu", "profiles", "B300")
    assert res.returncode == 2 and res.stderr.startswith("error: <command line>: GPU: unknown")


def test_import_mig_from_real_h200_capture(tmp_path):
    both = tmp_path / "h200.txt"
    both.write_text(
        (FIXTURES / "nvidia-smi" / "h200-mig-lgip.txt").read_text()
        + (FIXTURES / "nvidia-smi" / "h200-mig-lgipp.txt").read_text()
    )
    res = run_cli("gpu", "import-mig", both, "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    one = next(p for p in data["profiles"] if p["name"] == "1g.18gb")
    assert one == {
        "name": "1g.18gb",
        "id": 19,
        "slices": 1,
        "memory_gib": 16.0,
        "max_instances": 7,
        "placements": [0, 1, 2, 3, 4, 5, 6],
        "placement_size": 1,
    }
    # The capture agrees with the catalog's H200 entry.
    cat = json.loads(run_cli("gpu", "profiles", "H200-SXM", "--json").stdout)
    assert sorted(map(json.dumps, cat["profiles"])) == sorted(map(json.dumps, data["profiles"]))


def test_import_mig_needs_placements(tmp_path):
    res = run_cli("gpu", "import-mig", FIXTURES / "nvidia-smi" / "h200-mig-lgip.txt")
    assert res.returncode == 2 and "-lgipp" in res.stderr and "Traceback" not in res.stderr


def test_import_mig_garbage_exits_2(tmp_path):
    f = tmp_path / "junk.txt"
    f.write_text("hello world\n")
    res = run_cli("gpu", "import-mig", f)
    assert res.returncode == 2 and res.stderr.startswith(f"error: {f}")


def test_gpu_fit_exit_codes():
    ok = run_cli("gpu", "fit", "A100-PCIE-80GB", "4g.40gb", "2g.20gb", "1g.10gb")
    assert ok.returncode == 0 and "4g.40gb" in ok.stdout
    no = run_cli("gpu", "fit", "A100-PCIE-80GB", "3g.40gb", "3g.40gb", "1g.10gb")
    assert no.returncode == 1 and "does not fit" in no.stdout
    bad = run_cli("gpu", "fit", "A100-PCIE-80GB", "9g.99gb")
    assert bad.returncode == 2


def test_mig_parted_round_trip(tmp_path):
    res = run_cli("gpu", "mig-parted", SEED)
    assert res.returncode == 0, res.stderr
    doc = yaml.safe_load(res.stdout)
    assert doc["version"] == "v1"
    s7 = doc["mig-configs"]["s7"][0]
    assert s7["mig-enabled"] is True and s7["mig-devices"] == {"2g.20gb": 3, "1g.10gb": 1}
    assert s7["device-filter"] == "0x20B510DE" or s7["device-filter"] == ["0x20B510DE"]
    exported = tmp_path / "mp.yaml"
    exported.write_text(res.stdout)
    back = run_cli("gpu", "from-mig-parted", exported, "--name", "back")
    assert back.returncode == 0, back.stderr
    campaign = tmp_path / "back.yml"
    campaign.write_text(back.stdout)
    assert run_cli("validate", campaign).returncode == 0
    again = yaml.safe_load(back.stdout)
    seed = yaml.safe_load(SEED.read_text())
    for sid, body in seed["scenarios"].items():
        assert again["scenarios"][sid]["vgpus"] == body["vgpus"]


def test_from_mig_parted_real_nvidia_example():
    res = run_cli(
        "gpu", "from-mig-parted", FIXTURES / "mig-parted" / "dgx-station-80gb-config.yaml"
    )
    assert res.returncode == 0, res.stderr
    doc = yaml.safe_load(res.stdout)
    assert doc["gpu"] == "A100-SXM4-80GB"
    assert doc["scenarios"]["all-1g-10gb-dgx-station-80"]["vgpus"] == {"1g.10gb": 7}


def test_from_mig_parted_bad_file(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("version: v2\nmig-configs: {}\n")
    res = run_cli("gpu", "from-mig-parted", f)
    assert res.returncode == 2 and "version" in res.stderr and "Traceback" not in res.stderr


def test_h200_example_plan():
    res = run_cli(
        "plan",
        ROOT / "campaigns" / "h200-sxm-mig.yml",
        "-i",
        ROOT / "inventories" / "example-h200",
        "--json",
    )
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    scale = next(s for s in plan["scenarios"] if s["id"] == "scale-out")
    assert len(scale["gpus"]) == 4 and len(scale["vms"]) == 28


def test_gpu_inspect_real_captures():
    for name in ("h200-q.txt", "h200-q.xml", "h200-query-gpu.csv"):
        res = run_cli("gpu", "inspect", FIXTURES / "nvidia-smi" / name, "--json")
        assert res.returncode == 0, res.stderr
        (gpu,) = json.loads(res.stdout)
        assert gpu["catalog"] == "H200-SXM" and gpu["driver_version"] == "580.159.04"
        assert gpu["mig_mode_current"] == "Disabled" and gpu["mig_change_pending"] is False


def test_gpu_inspect_sees_a_pending_mig_change(tmp_path):
    # The real capture with MIG "Pending: Enabled", as after `nvidia-smi -mig 1` before a reboot.
    text = (FIXTURES / "nvidia-smi" / "h200-q.txt").read_text()
    head, tail = text.split("MIG Mode", 1)
    tail = re.sub(r"(Pending\s+: )Disabled", r"\1Enabled", tail, count=1)
    f = tmp_path / "pending.txt"
    f.write_text(head + "MIG Mode" + tail)
    (gpu,) = json.loads(run_cli("gpu", "inspect", f, "--json").stdout)
    assert gpu["mig_mode_pending"] == "Enabled" and gpu["mig_change_pending"] is True


# --- the project folder: the current directory, --project-dir or MIGLAB_PROJECT_DIR -------------
def test_the_project_is_the_current_directory_not_the_package(tmp_path):
    import shutil

    r = run_cli("validate", SEED, cwd=tmp_path)  # no -i: the project's inventories/sim
    assert r.returncode == 2
    assert (
        r.stderr.strip() == f"error: {tmp_path / 'inventories' / 'sim'}: (top): inventory not found"
    )
    shutil.copytree(ROOT / "inventories" / "sim", tmp_path / "inventories" / "sim")
    r = run_cli("validate", SEED, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert str(tmp_path / "inventories" / "sim") in r.stdout
    r = run_cli("--project-dir", tmp_path, "validate", SEED)  # from the checkout, another project
    assert r.returncode == 0 and str(tmp_path / "inventories" / "sim") in r.stdout
    r = run_cli("--project-dir", tmp_path / "missing", "validate", SEED)
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: {tmp_path / 'missing'}: --project-dir: not a folder"


# --- miglab init: a starter project ----------------------------------------------------------
def test_init_writes_the_starter_project_and_keeps_what_is_there(tmp_path):
    folder = tmp_path / "lab1"
    r = run_cli("init", folder)
    assert r.returncode == 0, r.stderr
    for rel in ("inventories/sim/hosts.yml", "inventories/example-r750xa/hosts.yml",
                "campaigns/r750xa-a100-80gb-mig.yml", "campaigns/h200-sxm-mig.yml"):  # fmt: skip
        assert (folder / rel).read_bytes() == (ROOT / rel).read_bytes(), rel
    vault = folder / "inventories/example-r750xa/group_vars/all/vault.yml.example"
    assert vault.stat().st_mode & 0o777 == 0o600
    assert "0 file(s) written" in run_cli("init", folder).stdout  # a second init changes nothing
    # a file changed by the user is never overwritten, and nothing else is written either
    (folder / "ansible.cfg").write_text("[defaults]\n")
    (folder / "campaigns" / "h200-sxm-mig.yml").unlink()
    r = run_cli("init", folder)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"error: {folder / 'ansible.cfg'}: miglab init: exists with other contents (kept)"
    ]
    assert not (folder / "campaigns" / "h200-sxm-mig.yml").exists()
    (tmp_path / "file").write_text("")
    r = run_cli("init", tmp_path / "file")
    assert r.returncode == 2 and "exists and is not a folder" in r.stderr


def test_the_starter_ansible_cfg_is_the_checkouts_without_the_checkout_paths():
    def settings(text: str) -> list[str]:
        return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]

    starter = settings((ROOT / "miglab/cli/starter/ansible.cfg").read_text())
    checkout = settings((ROOT / "ansible.cfg").read_text())
    assert [ln for ln in checkout if ln not in starter] == [
        "collections_path = ./collections",
        "roles_path = ./roles",
    ]
    assert [ln for ln in starter if ln not in checkout] == []


def test_the_main_job_is_the_checkouts_site_yml_else_the_collections(tmp_path):
    from miglab.adapters.project import main_playbook

    assert main_playbook(ROOT) == "site.yml"
    assert main_playbook(tmp_path) == "miglab.lab.site"
