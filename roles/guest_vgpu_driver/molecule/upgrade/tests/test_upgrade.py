"""guest_vgpu_driver upgrade 535.216.01 -> 550.144.03 (GRID driver stand-ins) while services and a
container hold the driver (real-lab notes G2)."""

import re


def test_upgraded_exactly_once(host):
    installs = host.file("/var/log/nvidia-standin-installs.log").content_string.splitlines()
    assert len(installs) == 2, installs  # prepare's install and one upgrade; no reinstall
    assert " installed 535.216.01 " in installs[0] and installs[0].endswith("previous=-")
    assert " installed 550.144.03 " in installs[1] and installs[1].endswith("previous=535.216.01")
    assert "version 550.144.03" in host.check_output("nvidia-installer --version")
    # the installer never met a module in use: the role stopped its users first
    log = host.file("/var/log/nvidia-installer.log").content_string
    assert "appears to be already loaded" not in log


def test_dkms_holds_only_the_new_module(host):
    status = host.check_output("dkms status")
    assert "nvidia/550.144.03: added" in status
    assert "535.216.01" not in status


def test_mirror_download_staged_and_removed(host):
    assert not host.file("/var/tmp/miglab-vgpu-driver/NVIDIA-Linux-grid-550.144.03.run").exists


def test_the_new_module_is_loaded_without_a_reboot(host):
    assert '"nvidia": "550.144.03"' in host.check_output("miglab-standin-kernel status")
    assert "DRIVER version      : 550.144.03" in host.check_output("nvidia-smi --version")


def test_the_drivers_users_run_again(host):
    assert host.service("nvidia-gridd").is_running
    assert host.service("nvidia-persistenced").is_running
    state = host.check_output("docker inspect --format '{{.State.Running}}' gpu-worker")
    assert state.strip() == "true"
    lsmod = host.check_output("lsmod")
    assert re.search(r"^nvidia\s+\d+\s+3$", lsmod, re.M), lsmod  # gridd, persistenced, container


def test_licensed_through_nls(host):
    conf = host.file("/etc/nvidia/gridd.conf").content_string
    assert "ServerAddress" not in conf
    out = host.check_output("nvidia-smi -q")
    assert re.search(r"^Driver Version\s+: 550\.144\.03$", out, re.M)
    assert re.search(r"^\s+License Status\s+: Licensed \(Expiry: ", out, re.M)
