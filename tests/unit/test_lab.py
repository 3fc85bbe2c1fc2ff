"""The lab inventory: hosts and GPUs from an Ansible YAML inventory, strict validation."""

from __future__ import annotations

import textwrap

import pytest

from miglab.adapters.inventory import load_lab
from miglab.errors import ValidationError

INV = textwrap.dedent("""\
    all:
      children:
        esxi_hosts:
          hosts:
            h1:
              miglab_host_gpus: [{model: A100-PCIE-80GB, count: 2}, H100-PCIE-80GB]
              miglab_host_cpus: 64
              miglab_host_memory_gb: 512
          vars:
            miglab_host_cpu_overcommit: 1.5
""")


def test_sim_lab_is_the_seed_host(sim_lab):
    (host,) = sim_lab.hosts
    assert [g.name for g in host.gpus] == ["A100-PCIE-80GB"] * 4
    assert host.cpus == 128 and host.memory_gb == 1024


def test_inventory_file_group_vars_and_host_vars(tmp_path):
    (tmp_path / "hosts.yml").write_text(INV)
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "h1.yml").write_text("miglab_host_cpus: 96\n")
    lab = load_lab(tmp_path)
    (h,) = lab.hosts
    assert [g.name for g in h.gpus] == ["A100-PCIE-80GB", "A100-PCIE-80GB", "H100-PCIE-80GB"]
    assert h.cpus == 96 and h.cpu_overcommit == 1.5 and h.vcpu_capacity == 144


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (("model: A100-PCIE-80GB", "model: A999"), "miglab_host_gpus[0].model", "unknown GPU"),
        (("count: 2", "count: 0"), "miglab_host_gpus[0].count", "at least 1"),
        (("miglab_host_cpus: 64", "miglab_host_cpus: lots"), "miglab_host_cpus", "integer"),
        (
            ("miglab_host_cpus: 64", "miglab_host_cpu: 64"),
            "miglab_host_cpu",
            "did you mean 'miglab_host_cpus'",
        ),
        (("          miglab_host_memory_gb: 512\n", ""), "miglab_host_memory_gb", "is required"),
        (
            ("miglab_host_cpu_overcommit: 1.5", "miglab_host_cpu_overcommit: 0.5"),
            "miglab_host_cpu_overcommit",
            "at least 1.0",
        ),
    ],
)
def test_bad_inventory(tmp_path, edit, field, words):
    f = tmp_path / "hosts.yml"
    f.write_text(INV.replace(*edit))
    with pytest.raises(ValidationError) as info:
        load_lab(f)
    lines = [str(p) for p in info.value.problems]
    assert any(line.startswith(f"{f}: ") and field in line and words in line for line in lines), (
        lines
    )


def test_inventory_without_hosts(tmp_path):
    f = tmp_path / "hosts.yml"
    f.write_text("all:\n  children:\n    esxi_hosts:\n      hosts: {}\n")
    with pytest.raises(ValidationError, match="no ESXi hosts"):
        load_lab(f)


def test_campaign_gpu_missing_from_lab(tmp_path, catalog):
    from miglab.core.campaign import load_campaign
    from testlib import SEED

    f = tmp_path / "hosts.yml"
    f.write_text(INV.replace("A100-PCIE-80GB", "H200-SXM").replace("H100-PCIE-80GB", "H200-SXM"))
    with pytest.raises(ValidationError, match="has no A100-PCIE-80GB"):
        load_campaign(SEED, load_lab(f))


def test_group_vars_folders_and_vault_files(tmp_path):
    (tmp_path / "hosts.yml").write_text(INV.replace("          miglab_host_cpus: 64\n", ""))
    gv = tmp_path / "group_vars" / "esxi_hosts"
    gv.mkdir(parents=True)
    (gv / "hardware.yml").write_text("miglab_host_cpus: 48\n")
    (gv / "vault.yml").write_text("$ANSIBLE_VAULT;1.1;AES256\n6162\n")
    (h,) = load_lab(tmp_path).hosts
    assert h.cpus == 48


def test_example_real_lab_inventory(catalog):
    from testlib import ROOT

    (h,) = load_lab(ROOT / "inventories" / "example-r750xa").hosts
    assert h.name == "r750xa-01.lab.example" and len(h.gpus) == 4 and h.cpus == 128


def test_vcenter_connection_options_for_module_defaults():
    from miglab.core.labvars import connection_options

    assert connection_options(None) == {}
    assert connection_options(
        {"hostname": "vc.lab", "username": "u", "password": "p", "port": 443, "ca_bundle": None}
    ) == {"hostname": "vc.lab", "username": "u", "password": "p", "port": 443}
    with pytest.raises(ValueError, match="unknown keys hostnme"):
        connection_options({"hostnme": "vc.lab"})
    with pytest.raises(ValueError, match="must be a mapping"):
        connection_options("vc.lab")


PRECEDENCE_INV = textwrap.dedent("""\
    all:
      vars:
        miglab_host_cpu_overcommit: 1.1           # beaten by group_vars/all.yml
      children:
        esxi_hosts:
          vars:
            miglab_host_memory_reserved_gb: 10    # beaten by group_vars/esxi_hosts.json
            miglab_host_gpus: [A100-PCIE-80GB]
          hosts:
            h2:
              miglab_host_cpus: 16
              miglab_host_memory_gb: 128
          children:
            rack1:                                # a child group: its hosts are ESXi hosts too
              vars:
                miglab_host_cpus: 32              # beaten by group_vars/rack1 (no extension)
              hosts:
                h1:
                  miglab_host_memory_gb: 256      # beaten by host_vars/h1/hardware.yml
""")


def _precedence_lab(tmp_path):
    (tmp_path / "hosts.yml").write_text(PRECEDENCE_INV)
    gv = tmp_path / "group_vars"
    gv.mkdir()
    (gv / "all.yml").write_text("miglab_host_cpu_overcommit: 1.2\n")
    (gv / "esxi_hosts.json").write_text('{"miglab_host_memory_reserved_gb": 20}\n')
    (gv / "rack1").write_text("miglab_host_cpus: 48\n")
    hv = tmp_path / "host_vars" / "h1"
    hv.mkdir(parents=True)
    (hv / "hardware.yml").write_text("miglab_host_memory_gb: 512\n")
    return tmp_path


def _ansible_inventory_host(folder, host) -> dict:
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    cmd = shutil.which("ansible-inventory") or str(
        Path(sys.executable).parent / "ansible-inventory"
    )
    res = subprocess.run(
        [cmd, "-i", str(folder / "hosts.yml"), "--host", host],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(res.stdout)


def test_values_follow_ansibles_precedence_as_ansible_inventory_shows(tmp_path):
    lab = load_lab(_precedence_lab(tmp_path))
    assert [h.name for h in lab.hosts] == ["h2", "h1"]
    for host in lab.hosts:
        seen = _ansible_inventory_host(tmp_path, host.name)
        assert host.cpus == seen["miglab_host_cpus"]
        assert host.memory_gb == seen["miglab_host_memory_gb"]
        assert host.cpu_overcommit == seen["miglab_host_cpu_overcommit"]
        assert host.memory_reserved_gb == seen["miglab_host_memory_reserved_gb"]
    h2, h1 = lab.hosts
    assert (h1.cpus, h1.memory_gb, h1.cpu_overcommit, h1.memory_reserved_gb) == (48, 512, 1.2, 20)
    assert (h2.cpus, h2.memory_gb) == (16, 128)


def test_a_vault_encrypted_vars_file_is_read_with_the_vault_password(tmp_path, monkeypatch):
    from ansible.parsing.vault import VaultLib, VaultSecret

    folder = _precedence_lab(tmp_path)
    secret = b"lab-vault-password"
    (tmp_path / "vault-pass").write_bytes(secret)
    vault = VaultLib([("default", VaultSecret(secret))])
    (folder / "host_vars" / "h1" / "secret.yml").write_bytes(
        vault.encrypt("miglab_host_cpus: 64\n")
    )
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(tmp_path / "vault-pass"))
    h1 = next(h for h in load_lab(folder).hosts if h.name == "h1")
    assert h1.cpus == 64 == _ansible_inventory_host(folder, "h1")["miglab_host_cpus"]
    monkeypatch.delenv("ANSIBLE_VAULT_PASSWORD_FILE")
    h1 = next(h for h in load_lab(folder).hosts if h.name == "h1")
    assert h1.cpus == 48  # no password: the encrypted file is left out


def test_g3_legacy_licensing_with_an_r525_or_later_guest_driver_is_refused(tmp_path):
    """Real-lab notes G3: from vGPU software 15 (R525) on, guests license only from NVIDIA
    License System (vGPU 15.x release notes: "incompatible with all releases of the NVIDIA vGPU
    software license server"). The mode and the driver are often in different group files."""
    (tmp_path / "hosts.yml").write_text(INV)
    gv = tmp_path / "group_vars"
    (gv / "guests").mkdir(parents=True)
    (gv / "all.yml").write_text('guest_vgpu_driver_version: "535.216.01"\n')
    (gv / "guests" / "licence.yml").write_text("guest_vgpu_driver_license_mode: legacy\n")
    with pytest.raises(ValidationError) as exc:
        load_lab(tmp_path)
    (line,) = [str(p) for p in exc.value.problems]
    assert line.startswith(f"{gv / 'guests' / 'licence.yml'}: guest_vgpu_driver_license_mode: ")
    assert "legacy licensing does not work with the R535 guest driver" in line
    assert "guest_vgpu_driver_version" in line and "use nls" in line
    # the installer's file name says the branch too
    (gv / "all.yml").write_text(
        "guest_vgpu_driver_url: https://files.lab/NVIDIA-Linux-x86_64-550.90.07-grid.run\n"
    )
    with pytest.raises(ValidationError, match="R550 guest driver"):
        load_lab(tmp_path)
    # R470 (vGPU 13) still talks to a legacy licence server; nls is always fine; a templated
    # version is Ansible's to fill in and not judged
    for version, mode in (("470.256.02", "legacy"), ("535.216.01", "nls"),
                          ("{{ driver_version }}", "legacy")):  # fmt: skip
        (gv / "all.yml").write_text(f'guest_vgpu_driver_version: "{version}"\n')
        (gv / "guests" / "licence.yml").write_text(f"guest_vgpu_driver_license_mode: {mode}\n")
        assert load_lab(tmp_path).hosts


def test_driver_branch_from_versions_and_installer_names():
    from miglab.core.labvars import driver_branch

    assert driver_branch("535.216.01") == 535
    assert driver_branch("/srv/NVIDIA-Linux-x86_64-550.90.07-grid.run") == 550
    assert driver_branch("https://h/v1.2/NVIDIA-Linux-x86_64-470.256.02-grid.run") == 470
    assert driver_branch("{{ v }}") is None and driver_branch("") is None
    assert driver_branch(True) is None and driver_branch(None) is None
