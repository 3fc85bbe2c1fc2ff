"""guest_vgpu_driver with a licence server that never answers: clear timeout, token never logged."""

import os
import re
from pathlib import Path


def test_driver_installed_but_unlicensed(host):
    out = host.check_output("nvidia-smi -q")
    assert re.search(r"^\s+License Status\s+: Unlicensed \(Unrestricted\)$", out, re.M)
    assert host.service("nvidia-gridd").is_running
    journal = host.check_output("journalctl -u nvidia-gridd --no-pager")
    assert "Failed to acquire license from dls.never.invalid" in journal


def test_token_installed_from_the_variable(host):
    token = host.file("/etc/nvidia/ClientConfigToken/client_configuration_token_miglab.tok")
    standins = Path(os.environ["MIGLAB_STANDINS_DIR"])
    assert token.content_string == (standins / "client_configuration_token_never.tok").read_text()


def test_token_never_logged(host):
    standins = Path(os.environ["MIGLAB_STANDINS_DIR"])
    sentinel = (standins / "token-sentinel.txt").read_text().strip()
    token = (standins / "client_configuration_token_never.tok").read_text().strip()
    log = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "ansible.log").read_text()
    assert "vGPU licence not acquired within 8 s" in log  # the log is the real one
    assert sentinel not in log and token not in log
    assert sentinel not in host.check_output("journalctl --no-pager")
