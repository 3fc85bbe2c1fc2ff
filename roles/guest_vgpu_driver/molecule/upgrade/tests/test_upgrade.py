"""guest_vgpu_driver upgrade 535.216.01 -> 550.144.03 (GRID driver stand-ins), legacy licensing."""

import re


def test_upgraded_exactly_once(host):
    installs = host.file("/var/log/nvidia-standin-installs.log").content_string.splitlines()
    assert len(installs) == 2, installs  # prepare's install and one upgrade; no reinstall
    assert " installed 535.216.01 " in installs[0] and installs[0].endswith("previous=-")
    assert " installed 550.144.03 " in installs[1] and installs[1].endswith("previous=535.216.01")
    assert "version 550.144.03" in host.check_output("nvidia-installer --version")


def test_dkms_holds_only_the_new_module(host):
    status = host.check_output("dkms status")
    assert "nvidia/550.144.03: added" in status
    assert "535.216.01" not in status


def test_mirror_download_staged_and_removed(host):
    assert not host.file("/var/tmp/miglab-vgpu-driver/NVIDIA-Linux-grid-550.144.03.run").exists


def test_legacy_server_licensed(host):
    conf = host.file("/etc/nvidia/gridd.conf").content_string
    assert re.search(r"^ServerAddress=dls\.lab\.example$", conf, re.M)
    assert re.search(r"^ServerPort=7070$", conf, re.M)
    assert re.search(r"^FeatureType=1$", conf, re.M)
    out = host.check_output("nvidia-smi -q")
    assert re.search(r"^Driver Version\s+: 550\.144\.03$", out, re.M)
    assert re.search(r"^\s+License Status\s+: Licensed \(Expiry: ", out, re.M)
    journal = host.check_output("journalctl -u nvidia-gridd --no-pager")
    assert "License acquired successfully. (Info: dls.lab.example," in journal
