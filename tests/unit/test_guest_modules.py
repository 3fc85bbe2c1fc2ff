"""The guest modules run for real through Ansible on localhost (ansible-runner): check mode, diff,
idempotence, clear failures; the NVIDIA programs they call are the stand-ins of
miglab/sim/standins."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from testlib import run_module

ROOT = Path(__file__).resolve().parents[2]
STANDINS = ROOT / "miglab" / "sim" / "standins"
FIXTURES = ROOT / "tests" / "fixtures" / "nvidia-smi"


# ---------------------------------------------------------------------------------------------
# docker_daemon_json
# ---------------------------------------------------------------------------------------------


def test_docker_daemon_json_merge_check_diff_idempotent(tmp_path):
    path = tmp_path / "docker" / "daemon.json"
    path.parent.mkdir()
    original = '{"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}'
    path.write_text(original)
    args = {"path": str(path), "settings": {"log-opts": {"max-size": "10m"}}}

    r = run_module("docker_daemon_json", args, check=True, diff=True)
    assert r["changed"] and not r["failed"]
    assert path.read_text() == original  # check mode wrote nothing
    assert '"max-size": "10m"' in r["diff"]["after"] and r["diff"]["before"].count("nvidia") == 2

    r = run_module("docker_daemon_json", args)
    assert r["changed"]
    cfg = json.loads(path.read_text())
    assert cfg["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"  # kept
    assert cfg["log-opts"] == {"max-size": "10m"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o644

    r = run_module("docker_daemon_json", args)
    assert not r["changed"]  # second run changes nothing


def test_docker_daemon_json_nvidia_runtime_and_creation(tmp_path):
    path = tmp_path / "etc-docker" / "daemon.json"  # neither file nor folder exists
    args = {"path": str(path), "nvidia_runtime": {"set_as_default": True}}
    r = run_module("docker_daemon_json", args)
    assert r["changed"]
    assert json.loads(path.read_text()) == {
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}},
        "default-runtime": "nvidia",
    }
    assert not run_module("docker_daemon_json", args)["changed"]


def test_docker_daemon_json_reformat_only_is_no_change(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text('{"b":1,\n"a":2}')  # another tool's formatting
    r = run_module("docker_daemon_json", {"path": str(path), "settings": {"a": 2}})
    assert not r["changed"] and path.read_text() == '{"b":1,\n"a":2}'


def test_docker_daemon_json_invalid_file_is_left_alone(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text('{"log-level": ')
    r = run_module("docker_daemon_json", {"path": str(path), "settings": {"debug": True}})
    assert r["failed"]
    assert "is not valid JSON" in r["msg"] and "left untouched" in r["msg"]
    assert path.read_text() == '{"log-level": '


# ---------------------------------------------------------------------------------------------
# vgpu_license and nvidia_driver_info with the GRID stand-in's programs on PATH
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def grid_bin(tmp_path):
    """A PATH folder with the stand-in nvidia-smi and nvidia-installer (driver 535.216.01), and
    the licence state file the stand-in nvidia-gridd would write."""
    share = tmp_path / "share"
    share.mkdir()
    shutil.copy(FIXTURES / "h200-q.txt", share / "nvidia-smi-q.txt")
    shutil.copy(FIXTURES / "h200-nvidia-smi.txt", share / "nvidia-smi.txt")
    manifest = {"version": "535.216.01", "cuda": "12.2", "built": "x", "standin": True}
    (share / "manifest.json").write_text(json.dumps(manifest))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("nvidia-smi", "nvidia-installer"):
        shutil.copy(STANDINS / "grid-driver" / name, bindir / name)
        (share / name).write_text("")  # nvidia-installer --version reads the manifest beside it
    shutil.copy(share / "manifest.json", bindir / "manifest.json")
    # their helper for the stand-in VM kernel (absent here: they behave as with no kernel model)
    shutil.copy(STANDINS / "grid-driver" / "standin_kernel.py", bindir / "standin_kernel.py")
    state = tmp_path / "standin-license.json"
    env = {
        "PATH": f"{bindir}:{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "MIGLAB_STANDIN_SHARE": str(share),
        "MIGLAB_STANDIN_STATE": str(state),
    }
    return env, state


def test_vgpu_license_acquired(grid_bin):
    env, state = grid_bin
    state.write_text(json.dumps({"status": "Licensed", "expiry": "2026-12-1 9:5:7 GMT"}))
    r = run_module("vgpu_license", {"timeout": 10, "interval": 1}, env=env)
    assert not r["failed"] and not r["changed"]
    assert r["licensed"] and r["attempts"] == 1
    assert r["gpus"][0]["license_expiry"] == "2026-12-1 9:5:7 GMT"
    assert r["driver_version"] == "535.216.01"


def test_vgpu_license_timeout_is_a_clear_error(grid_bin):
    env, _ = grid_bin
    r = run_module("vgpu_license", {"timeout": 2, "interval": 1}, env=env)
    assert r["failed"] and not r["licensed"]
    assert r["msg"].startswith(
        "vGPU licence not acquired within 2 s: GPU 00000000:00:06.0 (NVIDIA H200X-141C) "
        "License Status is 'Unlicensed (Unrestricted)'. Check the client configuration token"
    )
    assert "journalctl -u nvidia-gridd" in r["msg"]
    assert r["attempts"] >= 2


def test_vgpu_license_check_mode_never_waits(grid_bin):
    env, _ = grid_bin
    r = run_module("vgpu_license", {"timeout": 60}, env=env, check=True)
    assert not r["failed"] and not r["licensed"] and r["attempts"] == 1


def test_nvidia_driver_info(grid_bin, tmp_path):
    env, _ = grid_bin
    r = run_module("nvidia_driver_info", {}, env=env)
    assert r["installed_version"] == "535.216.01"
    assert r["reboot_required"] is False and r["changed"] is False
    run = Path(
        os.popen(
            f"bash {STANDINS / 'grid-driver' / 'build-run.sh'} 550.144.03 12.4 {tmp_path / 'out'}"
        )
        .read()
        .strip()
    )
    r = run_module("nvidia_driver_info", {"installer": str(run)}, env=env)
    assert r["installer_version"] == "550.144.03"
    not_a_run = tmp_path / "x.run"
    not_a_run.write_text("echo hello\n")
    r = run_module("nvidia_driver_info", {"installer": str(not_a_run)}, env=env)
    assert r["failed"] and "is it an NVIDIA driver .run file?" in r["msg"]


def test_nvidia_driver_info_without_a_driver():
    r = run_module(
        "nvidia_driver_info", {}, env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    )
    assert r["installed_version"] is None and r["gridd_installed"] is False
    assert r["reboot_required"] is False
