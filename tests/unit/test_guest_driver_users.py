"""G1/G2 (real-lab notes): what holds the NVIDIA driver in a guest, and the stand-in VM kernel and
GRID installer that refuse as NVIDIA's installer and kmod do (nouveau bound, module in use)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from miglab_guest import driver_users, parse_lsmod, parse_proc_cgroup

from testlib import load_script, run_module

ROOT = Path(__file__).resolve().parents[2]
STANDINS = ROOT / "miglab" / "sim" / "standins"
DOCKER_ID = "3f5c" + "0" * 60

# ---------------------------------------------------------------------------------------------
# lsmod and /proc/<pid>/cgroup
# ---------------------------------------------------------------------------------------------


def test_parse_lsmod():
    # the layout of kmod's lsmod (from /proc/modules): name, size, use count, users
    text = (
        "Module                  Size  Used by\n"
        "nvidia_uvm           1536000  0\n"
        "nvidia              56602624  3 nvidia_uvm\n"
        "drm                   614400  1 nouveau\n"
    )
    assert parse_lsmod(text) == {"nvidia_uvm": 0, "nvidia": 3, "drm": 1}
    assert parse_lsmod("") == {}


@pytest.mark.parametrize(
    ("text", "unit", "container"),
    [
        ("0::/system.slice/nvidia-gridd.service\n", "nvidia-gridd.service", None),
        (f"0::/system.slice/docker-{DOCKER_ID}.scope\n", None, DOCKER_ID),  # systemd driver
        (f"0::/docker/{DOCKER_ID}\n", None, DOCKER_ID),  # cgroupfs driver
        (  # cgroup v1: the first line naming a path
            "12:pids:/system.slice/nvidia-persistenced.service\n1:name=systemd:/system.slice/x\n",
            "nvidia-persistenced.service",
            None,
        ),
        ("0::/user.slice/user-0.slice/session-3.scope\n", None, None),  # a login shell
        ("0::/init.scope\n", None, None),
        ("", None, None),
    ],
)
def test_parse_proc_cgroup(text, unit, container):
    assert parse_proc_cgroup(text) == {"unit": unit, "container": container}


def _proc(tmp_path: Path, pid: int, comm: str, cgroup: str, fds: list[str]) -> None:
    folder = tmp_path / str(pid)
    (folder / "fd").mkdir(parents=True)
    (folder / "comm").write_text(comm + "\n")
    (folder / "cgroup").write_text(cgroup)
    for n, target in enumerate(fds):
        os.symlink(target, folder / "fd" / str(n))


def test_driver_users_are_the_holders_of_dev_nvidia(tmp_path):
    _proc(
        tmp_path,
        812,
        "nvidia-gridd",
        "0::/system.slice/nvidia-gridd.service\n",
        ["/dev/null", "/dev/nvidiactl"],
    )
    _proc(tmp_path, 95, "sh", f"0::/system.slice/docker-{DOCKER_ID}.scope\n", ["/dev/nvidia0"])
    _proc(tmp_path, 40, "sshd", "0::/system.slice/ssh.service\n", ["socket:[123]"])
    (tmp_path / "self").mkdir()  # not a pid
    assert driver_users(str(tmp_path)) == [
        {"pid": 95, "comm": "sh", "unit": None, "container": DOCKER_ID},
        {"pid": 812, "comm": "nvidia-gridd", "unit": "nvidia-gridd.service", "container": None},
    ]


# ---------------------------------------------------------------------------------------------
# the stand-ins
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    """The stand-in VM kernel with its state, modprobe.d and initramfs in tmp_path."""
    vm = load_script(STANDINS / "vgpu-vm" / "vm-kernel", "standin_vm_kernel")
    monkeypatch.setattr(vm, "STATE", str(tmp_path / "run"))
    monkeypatch.setattr(vm, "MODPROBE_DIRS", (str(tmp_path / "modprobe.d"),))
    monkeypatch.setattr(vm, "INITRAMFS_DIR", str(tmp_path / "initramfs"))
    monkeypatch.setattr(vm, "CONFIG", str(tmp_path / "vgpu-vm.json"))
    monkeypatch.setattr(vm, "DEVICES", (str(tmp_path / "nvidiactl"),))
    manifest = tmp_path / "manifest.json"
    monkeypatch.setattr(vm, "DRIVER_MANIFEST", str(manifest))
    monkeypatch.setattr(vm, "holders", lambda: [])
    (tmp_path / "modprobe.d").mkdir()
    vm.tmp = tmp_path
    vm.install_driver = lambda version: manifest.write_text(json.dumps({"version": version}))
    return vm


def test_a_fresh_vm_boots_with_nouveau_and_only_a_rebuilt_initramfs_drops_it(kernel, capsys):
    kernel.boot()
    assert kernel.loaded() == {"nouveau": ""}
    blacklist = kernel.tmp / "modprobe.d" / "blacklist-nouveau.conf"
    blacklist.write_text("blacklist nouveau\noptions nouveau modeset=0\n")
    kernel.boot()  # blacklisted in modprobe.d only: the initramfs still loads it
    assert "nouveau" in kernel.loaded()
    assert kernel.cmd_modprobe(["-r", "nouveau"]) == 1  # fbcon holds it: only a reboot helps
    assert "modprobe: FATAL: Module nouveau is in use." in capsys.readouterr().err
    assert kernel.cmd_update_initramfs(["-u", "-k", "all"]) == 0
    assert "update-initramfs: Generating /boot/initrd.img-" in capsys.readouterr().out
    kernel.boot()
    assert kernel.loaded() == {}
    kernel.install_driver("535.216.01")
    kernel.boot()
    assert kernel.loaded() == {"nvidia": "535.216.01"}


def test_nvidia_loads_only_without_nouveau_and_unloads_only_unused(kernel, capsys, monkeypatch):
    kernel.install_driver("535.216.01")
    kernel.boot()  # nouveau bound
    assert kernel.cmd_modprobe(["nvidia"]) == 1
    assert "could not insert 'nvidia': No such device" in capsys.readouterr().err
    kernel.set_unloaded("nouveau")
    assert kernel.cmd_modprobe(["nvidia"]) == 0
    monkeypatch.setattr(kernel, "holders", lambda: [(812, "nvidia-gridd")])
    assert kernel.cmd_modprobe(["-r", "nvidia"]) == 1
    assert "modprobe: FATAL: Module nvidia is in use." in capsys.readouterr().err
    assert kernel.cmd_rmmod(["nvidia"]) == 1
    assert "rmmod: ERROR: Module nvidia is in use" in capsys.readouterr().err
    kernel.cmd_lsmod([])
    assert "nvidia              56602624  1" in capsys.readouterr().out
    monkeypatch.setattr(kernel, "holders", lambda: [])
    assert kernel.cmd_modprobe(["-r", "nvidia_uvm", "nvidia"]) == 0
    assert kernel.loaded() == {}


@pytest.fixture
def installer(monkeypatch, tmp_path):
    inst = load_script(STANDINS / "grid-driver" / "nvidia-installer", "standin_installer")
    monkeypatch.setattr(inst, "write_log", lambda: None)
    monkeypatch.setattr(
        inst, "NOUVEAU_FILES", (str(tmp_path / "nvidia-installer-disable-nouveau.conf"),)
    )
    return inst


def _state(monkeypatch, installer, loaded):
    monkeypatch.setattr(installer.standin_kernel, "status", lambda: {"loaded": loaded})


def test_installer_up_to_r535_refuses_nouveau_with_an_error(installer, monkeypatch, capsys):
    _state(monkeypatch, installer, {"nouveau": ""})
    with pytest.raises(SystemExit) as stop:
        installer.check_nouveau("535.216.01", {"--silent"})
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert (
        "ERROR: The Nouveau kernel driver is currently in use by your system.  This driver" in err
    )
    assert "Please consult the NVIDIA driver README" in err
    assert (
        "ERROR: Installation has failed.  Please see the file '/var/log/nvidia-installer.log'"
        in err
    )
    installer.check_nouveau("535.216.01", {"--silent", "--no-nouveau-check"})  # skipped


def test_installer_from_r545_warns_writes_the_blacklist_and_aborts(
    installer, monkeypatch, capsys, tmp_path
):
    _state(monkeypatch, installer, {"nouveau": ""})
    with pytest.raises(SystemExit):
        installer.check_nouveau("550.144.03", {"--silent"})
    err = capsys.readouterr().err
    assert "WARNING: The Nouveau kernel driver is currently in use" in err
    assert "Please consult" not in err  # the README sentence was dropped in 545
    written = (tmp_path / "nvidia-installer-disable-nouveau.conf").read_text()
    assert (
        written == "# generated by nvidia-installer\nblacklist nouveau\noptions nouveau modeset=0\n"
    )


@pytest.mark.parametrize(
    ("version", "text"),
    [
        ("535.216.01", "ERROR: An NVIDIA kernel module 'nvidia' appears to already be loaded"),
        ("550.144.03", "WARNING: An NVIDIA kernel module 'nvidia' appears to be already loaded"),
    ],
)
def test_installer_refuses_a_module_in_use(installer, monkeypatch, capsys, version, text):
    _state(monkeypatch, installer, {"nvidia": "535.216.01"})
    monkeypatch.setattr(installer.standin_kernel, "modprobe", lambda *a: (1, "in use"))
    with pytest.raises(SystemExit) as stop:
        installer.check_module_unloaded(version, {"--silent"})
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert text in err and "ERROR: Installation has failed." in err


def test_installer_goes_on_once_the_module_unloads(installer, monkeypatch):
    states = iter([{"loaded": {"nvidia": "535.216.01"}}, {"loaded": {}}])
    monkeypatch.setattr(installer.standin_kernel, "status", lambda: next(states))
    monkeypatch.setattr(installer.standin_kernel, "modprobe", lambda *a: (0, ""))
    installer.check_module_unloaded("550.144.03", {"--silent"})  # no exit


# ---------------------------------------------------------------------------------------------
# the module miglab.lab.nvidia_driver_users
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def fake_tools(tmp_path):
    """systemctl and docker that record their arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls"
    for tool in ("systemctl", "docker"):
        script = bindir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\n')
        script.chmod(0o755)
    return {"PATH": f"{bindir}:{Path(sys.executable).parent}:{os.environ['PATH']}"}, calls


# The stopping side needs a guest of its own (this machine's /proc also shows the processes of
# test containers): the molecule scenario guest_vgpu_driver:upgrade runs it.
def test_started_again_services_first_then_containers(fake_tools):
    env, calls = fake_tools
    users = {
        "units": ["nvidia-gridd.service", "nvidia-persistenced.service"],
        "containers": [DOCKER_ID],
    }
    r = run_module("nvidia_driver_users", {"state": "started", "users": users}, check=True, env=env)
    assert r["changed"] and not calls.exists()  # check mode: nothing run
    r = run_module("nvidia_driver_users", {"state": "started", "users": users}, env=env)
    assert r["changed"] and r["started"] == users
    assert calls.read_text().splitlines() == [
        "systemctl start nvidia-gridd.service nvidia-persistenced.service",
        f"docker start {DOCKER_ID}",
    ]
