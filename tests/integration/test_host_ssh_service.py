"""SSH after a reboot (real-lab notes V6: ESXi's SSH service, TSM-SSH, with its default policy
"off" -- start and stop manually -- stops at every boot; vCenter can start it through
HostServiceSystem.StartService; lockdown mode keeps root out of SSH. Sources: ESXi service policy
docs; F. Denneman, "Installing the NVAIE vGPU driver", 2023).

First the simulator and the ESXi stand-in show it (SSH stops at boot, the stand-in's sshd refuses
then), then miglab handles it: the esxi_host_service module starts TSM-SSH, and the
esxi_maintenance role's reboot does so before it waits for SSH."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from testlib import ROOT, ansible_env, run_args, run_module, stdout_if_ok, vcenter_args

pytestmark = pytest.mark.integration

STANDIN = ROOT / "miglab" / "sim" / "standins" / "esxi" / "esxi_standin.py"


def _lab(vcsim_factory, tmp_path, **host):
    from miglab.sim import vcenter as vcsim_lab

    lab = vcsim_lab.default_lab()
    lab["hosts"][0].update(host_state_dir=str(tmp_path), **host)
    sim = vcsim_factory(lab, reboot_seconds=0.2)
    return sim, vcenter_args(sim), sim.lab["hosts"][0]["name"]


def _ssh_service(sim, name):
    from pyVmomi import vim

    si = sim.connect()
    view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.HostSystem], True)
    (host,) = [h for h in view.view if h.name == name]
    (svc,) = [s for s in host.configManager.serviceSystem.serviceInfo.service if s.key == "TSM-SSH"]
    return bool(svc.running), str(svc.policy)


def _reboot(conn, name):
    base = {**conn, "esxi_hostname": name}
    for state in ("maintenance", "rebooted"):
        res = run_module("esxi_host_maintenance", {**base, "state": state, "timeout": 120})
        assert not res["failed"], res.get("msg")


def _standin_sshd(tmp_path, name) -> subprocess.CompletedProcess:
    """The stand-in's ``esxi-standin sshd`` outside its container: vCenter's view of the host
    from the simulator's host_state_dir, and ``echo`` in place of /usr/sbin/sshd (prints the
    arguments sshd would get)."""
    env = {
        "ESXI_STANDIN_VCENTER_DIR": str(tmp_path),
        "ESXI_STANDIN_HOSTNAME": name,
        "ESXI_STANDIN_SSHD": "/bin/echo",
        "ESXI_STANDIN_STATE": str(tmp_path / "standin-state.json"),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [sys.executable, str(STANDIN), "esxi-standin", "sshd"],
        env=env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_ssh_stops_at_every_boot_and_the_standin_refuses_then(vcsim_factory, tmp_path):
    """V6, the simulation: SSH runs at first (an admin let Ansible in), stops at the reboot; the
    host's file says so and the stand-in's sshd refuses as a closed port 22."""
    sim, conn, name = _lab(vcsim_factory, tmp_path)
    assert _ssh_service(sim, name) == (True, "off")
    assert _standin_sshd(tmp_path, name).stdout.strip() == "-i"
    _reboot(conn, name)
    assert _ssh_service(sim, name) == (False, "off")
    seen = json.loads((tmp_path / f"{name}.json").read_text())
    assert seen["services"]["TSM-SSH"] == {"running": False, "policy": "off"}
    refused = _standin_sshd(tmp_path, name)
    assert refused.returncode == 255
    assert refused.stderr == f"ssh: connect to host {name} port 22: Connection refused\n"


def test_ssh_with_policy_on_survives_a_reboot(vcsim_factory, tmp_path):
    sim, conn, name = _lab(vcsim_factory, tmp_path, ssh_policy="on")
    _reboot(conn, name)
    assert _ssh_service(sim, name) == (True, "on")


def test_the_module_starts_ssh_through_vcenter(vcsim_factory, tmp_path):
    """V6, miglab: esxi_host_service starts TSM-SSH (check mode first changes nothing); a second
    run changes nothing; the stand-in's sshd lets SSH in again."""
    sim, conn, name = _lab(vcsim_factory, tmp_path)
    _reboot(conn, name)
    args = {**conn, "esxi_hostname": name}
    checked = run_module("esxi_host_service", args, check=True)
    assert checked["changed"] and checked["actions"] == ["start"], checked.get("msg")
    assert _ssh_service(sim, name) == (False, "off")
    started = run_module("esxi_host_service", args)
    assert started["changed"] and started["running"] and started["policy"] == "off"
    assert started["lockdown_mode"] == "lockdownDisabled"
    assert _ssh_service(sim, name) == (True, "off")
    assert run_module("esxi_host_service", args)["changed"] is False
    assert _standin_sshd(tmp_path, name).stdout.strip() == "-i"


def test_lockdown_mode_is_reported_and_keeps_root_out(vcsim_factory, tmp_path):
    sim, conn, name = _lab(vcsim_factory, tmp_path, lockdown_mode="lockdownNormal")
    res = run_module("esxi_host_service", {**conn, "esxi_hostname": name, "state": "unchanged"})
    assert res["lockdown_mode"] == "lockdownNormal" and res["changed"] is False
    assert _standin_sshd(tmp_path, name).stdout.split() == ["-i", "-o", "DenyUsers=root"]


def test_an_unknown_service_is_named(vcsim_factory, tmp_path):
    sim, conn, name = _lab(vcsim_factory, tmp_path)
    res = run_module("esxi_host_service", {**conn, "esxi_hostname": name, "service_name": "nope"})
    assert res["failed"]
    assert res["msg"] == f"{name}: no service nope (the host has TSM-SSH, ntpd, xorg)"


def _play(tmp_path: Path, conn: dict, name: str, tasks_from: str, extra: str = "") -> str:
    """The esxi_maintenance role's entry point on the simulator, the host reached locally (what
    this test checks happens through vCenter)."""
    vc = json.dumps({**conn, "validate_certs": True})
    (tmp_path / "play.yml").write_text(textwrap.dedent(f"""\
        - hosts: {name}
          gather_facts: false
          tasks:
            - ansible.builtin.include_role:
                name: miglab.lab.esxi_maintenance
                tasks_from: {tasks_from}
              vars:
                esxi_maintenance_vcenter: {vc}
                esxi_maintenance_reboot_timeout: 120
                esxi_maintenance_connection_timeout: 5
                {extra}
        """))  # fmt: skip
    (tmp_path / "inv.ini").write_text(
        f"[esxi_hosts]\n{name} ansible_connection=local ansible_python_interpreter={sys.executable}"
        " ansible_user=root\n"
    )
    return run_args(
        ["ansible-playbook", "-i", tmp_path / "inv.ini", tmp_path / "play.yml"],
        cwd=ROOT, env=ansible_env(), timeout=300,
    )  # fmt: skip


def test_the_roles_reboot_starts_ssh_before_it_waits(vcsim_factory, tmp_path):
    """V6, miglab: after the role's reboot, TSM-SSH runs again (before this change it stayed
    stopped, and the wait for SSH timed out on a real host)."""
    sim, conn, name = _lab(vcsim_factory, tmp_path)
    stdout_if_ok(_play(tmp_path, conn, name, "reboot"))
    assert _ssh_service(sim, name) == (True, "off")
    assert _standin_sshd(tmp_path, name).returncode == 0


def test_the_role_says_when_lockdown_keeps_root_out(vcsim_factory, tmp_path):
    sim, conn, name = _lab(vcsim_factory, tmp_path, lockdown_mode="lockdownStrict")
    res = _play(tmp_path, conn, name, "ssh")
    assert res.returncode != 0
    assert f"{name}: lockdown mode lockdownStrict keeps root out of SSH" in res.stdout
