"""Inventory plugin miglab.lab.campaign_vms with query_vcenter against the project's vcsim:
power states of the campaign's VMs in one session, clear one-line errors, no password shown."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from testlib import BIN, ROOT, SEED, ansible_env, run_module

pytestmark = pytest.mark.integration

SIM_HOSTS = ROOT / "inventories" / "sim" / "hosts.yml"
CAMPAIGN = "r750xa-a100-80gb-mig"
ON, OFF = f"{CAMPAIGN}-s1-vm1", f"{CAMPAIGN}-s6-vm2"


def ansible_inventory(config: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("ansible-inventory", path=str(BIN)) or "ansible-inventory"
    environ = ansible_env({"ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "true", **(env or {})})
    return subprocess.run(
        [exe, "-i", str(config), "--list"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def hostvars(res: subprocess.CompletedProcess) -> dict:
    assert res.returncode == 0, res.stdout + res.stderr
    raw = json.loads(res.stdout)["_meta"]["hostvars"]

    def plain(v):
        if isinstance(v, dict):
            return v["__ansible_unsafe"] if set(v) == {"__ansible_unsafe"} else v
        return v

    return {h: {k: plain(v) for k, v in hv.items()} for h, hv in raw.items()}


def write_config(folder: Path, extra: str = "", name: str = "campaign_vms.yml") -> Path:
    f = folder / name
    f.write_text(
        f"plugin: miglab.lab.campaign_vms\ncampaign: {SEED}\nlab: {SIM_HOSTS}\n"
        f"query_vcenter: true\n" + textwrap.dedent(extra)
    )
    return f


def vcenter_file(sim, folder: Path, **override) -> Path:
    """The connection file the simulated lab writes (relative ca_bundle: next to it)."""
    shutil.copy(sim.ca_file, folder / "ca.pem")
    data = {
        "hostname": sim.host,
        "port": sim.port,
        "username": sim.username,
        "password": sim.password,
        "validate_certs": True,
        "ca_bundle": "ca.pem",
    }
    data.update(override)
    f = folder / "vcenter.json"
    f.write_text(json.dumps(data))
    return f


@pytest.fixture(scope="module")
def sim_with_vms(vcsim_binary):
    """A simulator of its own (vGPU VMs power on only in sharedDirect graphics mode) with two of
    the seed's VMs, created by miglab.lab.vgpu_vm as the plan places them: one powered on."""
    from miglab.adapters.inventory_vms import load_inventory
    from miglab.sim import vcenter as vcsim_lab

    plan = {h.name: h.vars["miglab_vm"] for h in load_inventory(SEED, SIM_HOSTS).hosts}
    with vcsim_lab.Vcsim(binary=vcsim_binary, graphics_type="sharedDirect") as sim:
        host = sim.lab["hosts"][0]
        for name, power in ((ON, "poweredon"), (OFF, "poweredoff")):
            vm = plan[name]
            assert vm["host"] == host["name"]
            res = run_module(
                "vgpu_vm",
                {
                    "hostname": sim.host,
                    "port": sim.port,
                    "username": sim.username,
                    "password": sim.password,
                    "ca_bundle": sim.ca_file,
                    "name": name,
                    "host": vm["host"],
                    "datastore": sim.lab["datastore"],
                    "network": sim.lab["network"],
                    "vcpus": vm["vcpus"],
                    "memory_gb": vm["memory_gb"],
                    "mmio_gb": vm["mmio_gb"],
                    "vgpus": [vm["vgpu_type"]],
                    "power_state": power,
                },
            )
            assert res["changed"] and not res["failed"], res.get("msg")
        yield sim


def test_power_states_from_vcenter_file(sim_with_vms, tmp_path):
    vcenter_file(sim_with_vms, tmp_path)
    hv = hostvars(ansible_inventory(write_config(tmp_path, "vcenter_file: vcenter.json\n")))
    assert len(hv) == 19
    assert hv[ON]["miglab_vm_power_state"] == "poweredOn"
    assert hv[OFF]["miglab_vm_power_state"] == "poweredOff"
    absent = [h for h, v in hv.items() if v["miglab_vm_power_state"] == "absent"]
    assert len(absent) == 17 and ON not in absent and OFF not in absent
    # vcsim reports no guest IP (no VMware Tools): no ansible_host, so no wrong address
    assert not any("ansible_host" in v for v in hv.values())


def test_connection_from_options_and_environment(sim_with_vms, tmp_path):
    sim = sim_with_vms
    env = {
        "VMWARE_HOST": sim.host,
        "VMWARE_PORT": str(sim.port),
        "VMWARE_USER": sim.username,
        "VMWARE_PASSWORD": sim.password,
        "VMWARE_CA_BUNDLE": sim.ca_file,
    }
    hv = hostvars(ansible_inventory(write_config(tmp_path), env=env))
    assert hv[ON]["miglab_vm_power_state"] == "poweredOn"
    # explicit options win over the vcenter file (here: its wrong port)
    vcenter_file(sim, tmp_path, port=1)
    cfg = write_config(
        tmp_path,
        f"""\
        vcenter_file: vcenter.json
        port: {sim.port}
        """,
        name="opts.campaign_vms.yml",
    )
    hv = hostvars(ansible_inventory(cfg))
    assert hv[OFF]["miglab_vm_power_state"] == "poweredOff"


def test_wrong_password_is_one_clear_line(sim_with_vms, tmp_path):
    sim = sim_with_vms
    vcenter_file(sim, tmp_path)
    wrong = "Wrong-Secret-4711"
    cfg = write_config(tmp_path, f"vcenter_file: vcenter.json\npassword: {wrong}\n")
    res = ansible_inventory(cfg)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    expected = (
        f"vCenter: login failed for {sim.username}@{sim.host}:{sim.port}: "
        "wrong user name or password"
    )
    assert expected in res.stderr
    assert wrong not in out and sim.password not in out
    assert "Traceback" not in out


def test_unreachable_vcenter_is_one_clear_line(tmp_path):
    import socket

    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = write_config(
        tmp_path,
        f"""\
        hostname: 127.0.0.1
        port: {port}
        username: someone
        password: Not-Shown-0815
        """,
    )
    res = ansible_inventory(cfg)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert f"vCenter: cannot reach 127.0.0.1:{port}: " in res.stderr
    assert "Not-Shown-0815" not in out and "Traceback" not in out


def test_untrusted_certificate_is_one_clear_line(sim_with_vms, tmp_path):
    sim = sim_with_vms
    vcenter_file(sim, tmp_path, ca_bundle=None)  # verify against the system CAs only
    res = ansible_inventory(write_config(tmp_path, "vcenter_file: vcenter.json\n"))
    assert res.returncode != 0
    assert f"vCenter: TLS certificate of {sim.host}:{sim.port} not trusted" in res.stderr
    assert sim.password not in res.stdout + res.stderr


def test_v13_vms_sharing_a_guest_ip_get_no_ansible_host(vcsim_factory, tmp_path):
    """Real-lab notes V13: clones of a template with a machine-id share one DHCP lease; the
    inventory must not point both hosts at that one guest, and says why."""
    from miglab.adapters.inventory_vms import load_inventory
    from miglab.sim import vcenter as vcsim_lab

    lab = vcsim_lab.default_lab()
    lab["hosts"][0]["graphics_type"] = "sharedDirect"
    lab["templates"] = [{"name": "tmpl", "firmware": "efi", "machine_id": "1" * 32}]
    lab["guest_dhcp"] = "192.0.2.0/24"
    sim = vcsim_factory(lab)
    plan = {h.name: h.vars["miglab_vm"] for h in load_inventory(SEED, SIM_HOSTS).hosts}
    vms = [
        {
            "name": name,
            "host": plan[name]["host"],
            "vcpus": plan[name]["vcpus"],
            "memory_gb": plan[name]["memory_gb"],
            "mmio_gb": plan[name]["mmio_gb"],
            "vgpus": [plan[name]["vgpu_type"]],
        }
        for name in (ON, OFF)
    ]
    res = run_module(
        "vgpu_vm",
        {
            "hostname": sim.host,
            "port": sim.port,
            "username": sim.username,
            "password": sim.password,
            "ca_bundle": sim.ca_file,
            "datastore": sim.lab["datastore"],
            "network": sim.lab["network"],
            "template": "tmpl",
            "power_state": "poweredon",
            "vms": vms,
        },
    )
    assert not res["failed"], res.get("msg")
    vcenter_file(sim, tmp_path)
    out = ansible_inventory(write_config(tmp_path, "vcenter_file: vcenter.json\n"))
    hv = hostvars(out)
    for name, other in ((ON, OFF), (OFF, ON)):
        assert "ansible_host" not in hv[name]
        shared = [
            v["__ansible_unsafe"] if isinstance(v, dict) else v
            for v in hv[name]["miglab_vm_ip_shared_with"]
        ]
        assert shared == [other]
    warning = " ".join(out.stderr.split())
    assert (
        "report the same guest IP 192.0.2." in warning and "ansible_host is left unset" in warning
    )
