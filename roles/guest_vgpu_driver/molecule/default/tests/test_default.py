"""guest_vgpu_driver, first install with an NVIDIA License System token (GRID driver stand-in)."""

import os
import re
from pathlib import Path

VERSION = "535.216.01"


def test_driver_installed_once(host):
    out = host.check_output("nvidia-installer --version")
    assert f"nvidia-installer:  version {VERSION}" in out
    installs = host.file("/var/log/nvidia-standin-installs.log").content_string.splitlines()
    assert len(installs) == 1, installs  # the idempotence run did not reinstall
    assert f"installed {VERSION} args=--dkms --silent" in installs[0]
    assert not host.file("/var/tmp/miglab-vgpu-driver/NVIDIA-Linux-grid-535.216.01.run").exists


def test_dkms_has_the_module(host):
    assert f"nvidia/{VERSION}: added" in host.check_output("dkms status")


def test_nouveau_blacklisted(host):
    f = host.file("/etc/modprobe.d/blacklist-nouveau.conf")
    assert f.contains("^blacklist nouveau$")
    assert f.contains("^options nouveau modeset=0$")


def test_token_and_gridd_conf(host):
    token = host.file("/etc/nvidia/ClientConfigToken/client_configuration_token_miglab.tok")
    assert token.exists and token.mode == 0o744
    conf = host.file("/etc/nvidia/gridd.conf").content_string
    assert re.search(r"^FeatureType=1$", conf, re.M)
    assert "ServerAddress" not in conf  # NLS: the token names the server


def test_gridd_running_and_licensed(host):
    gridd = host.service("nvidia-gridd")
    assert gridd.is_running and gridd.is_enabled
    out = host.check_output("nvidia-smi -q")
    assert re.search(
        r"^\s+License Status\s+: Licensed \(Expiry: \d+-\d+-\d+ \d+:\d+:\d+ GMT\)$", out, re.M
    )
    assert re.search(r"^Driver Version\s+: 535\.216\.01$", out, re.M)


def test_token_never_logged(host):
    standins = Path(os.environ["MIGLAB_STANDINS_DIR"])
    sentinel = (standins / "token-sentinel.txt").read_text().strip()
    token = (standins / "client_configuration_token_standin.tok").read_text().strip()
    log = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "ansible.log").read_text()
    assert "miglab.lab.guest_vgpu_driver" in log  # the log is the real one
    assert sentinel not in log and token not in log
    journal = host.check_output("journalctl -u nvidia-gridd --no-pager")
    assert sentinel not in journal


def test_nouveau_gone_and_the_driver_loaded_after_one_reboot(host):
    lsmod = host.check_output("lsmod")
    assert not re.search(r"^nouveau ", lsmod, re.M)
    # in use by nvidia-gridd, which holds /dev/nvidiactl
    assert re.search(r"^nvidia\s+\d+\s+[1-9]", lsmod, re.M), lsmod
    state = host.check_output("miglab-standin-kernel status")
    assert '"initramfs_blacklist": ["nouveau"]' in state  # the initramfs was rebuilt
    log = host.file("/var/log/nvidia-installer.log").content_string
    assert "Nouveau" not in log  # the installer never met nouveau: the reboot came first
