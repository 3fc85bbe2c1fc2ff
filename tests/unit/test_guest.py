"""plugins/module_utils/miglab_guest.py: GRID driver state from real installer and nvidia-smi
output, daemon.json merging, and the NVIDIA stand-ins of miglab/sim/standins checked against the
same parsers (the licence in nvidia-smi -q: tests/unit/test_vgpu_license.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from miglab_guest import (
    GuestError,
    daemon_json_diff,
    dump_daemon_json,
    load_daemon_json,
    merge_daemon_json,
    needs_reboot,
    nvidia_runtime_settings,
    parse_installer_version,
    parse_kernel_module_version,
    parse_nvidia_smi_version,
    version_tuple,
)

from miglab.core.vgpu_license import license_problem, read_license
from testlib import load_script

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "nvidia-smi"
STANDINS = ROOT / "miglab" / "sim" / "standins"

# ---------------------------------------------------------------------------------------------
# versions and reboots
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version"),
    [
        # real `NVIDIA-Linux-x86_64-352.30.run --version` / `nvidia-installer -v` outputs
        (
            "\nnvidia-installer:  version 352.30  (buildmeister@swio-display-x64-rhel04-18)"
            "  Tue Jul 21 19:36:36 PDT 2015\n  The NVIDIA Software Installer for Unix/Linux.\n",
            "352.30",
        ),
        ("nvidia-installer:  version 550.144.03\n", "550.144.03"),
        ("nvidia-installer:  version 418.87.00\n  The NVIDIA Software Installer", "418.87.00"),
        ("sh: 1: nvidia-installer: not found\n", None),
    ],
)
def test_installer_version(text, version):
    assert parse_installer_version(text) == version


def test_nvidia_smi_version_real_capture():
    text = (FIXTURES / "h200-version.txt").read_text()
    assert parse_nvidia_smi_version(text) == "580.159.04"
    v100d_q = (FIXTURES / "v100d-vgpu-guest-q.txt").read_text()
    assert parse_nvidia_smi_version(v100d_q) == "535.216.01"  # -q works too
    assert parse_nvidia_smi_version("") is None


def test_kernel_module_version():
    nvrm = (
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.01  Wed Oct 23 20:25:43 UTC 2024\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
    )
    assert parse_kernel_module_version(nvrm) == "535.216.01"
    assert parse_kernel_module_version("550.144.03\n") == "550.144.03"
    assert parse_kernel_module_version("") is None


def test_version_tuple():
    assert version_tuple("535.216.01") == (535, 216, 1)
    assert version_tuple("550.144.03") > version_tuple("535.216.01")
    with pytest.raises(GuestError):
        version_tuple("latest")


@pytest.mark.parametrize(
    ("installed", "loaded", "nouveau", "reboot"),
    [
        (None, None, False, False),  # nothing installed
        ("535.216.01", None, False, False),  # first install, module loaded by the installer/boot
        ("535.216.01", "535.216.01", False, False),
        ("550.144.03", "535.216.01", False, True),  # upgraded, old module still loaded
        ("535.216.01", None, True, True),  # nouveau holds the GPU
        (None, None, True, False),  # nouveau but no NVIDIA driver yet: nothing to reboot for
    ],
)
def test_needs_reboot(installed, loaded, nouveau, reboot):
    required, reason = needs_reboot(installed=installed, loaded=loaded, nouveau_loaded=nouveau)
    assert required is reboot
    assert bool(reason) is reboot


def test_needs_reboot_on_nvidia_smis_version_mismatch():
    """Where the module's version cannot be read, nvidia-smi's "Driver/library version mismatch"
    says an old module is still loaded."""
    required, reason = needs_reboot(
        installed="550.144.03", loaded=None, nouveau_loaded=False, library_mismatch=True
    )
    assert required and "version mismatch" in reason


# ---------------------------------------------------------------------------------------------
# daemon.json
# ---------------------------------------------------------------------------------------------


def test_load_daemon_json():
    assert load_daemon_json(None) == {}
    assert load_daemon_json("  \n") == {}
    assert load_daemon_json('{"log-level": "warn"}') == {"log-level": "warn"}
    with pytest.raises(GuestError, match="not valid JSON.*left untouched"):
        load_daemon_json('{"log-level": ', "/etc/docker/daemon.json")
    with pytest.raises(GuestError, match="must hold a JSON object"):
        load_daemon_json("[]")


def test_merge_keeps_other_keys_and_the_nvidia_runtime():
    current = {
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}},
        "data-root": "/srv/docker",
        "log-opts": {"max-file": "3"},
    }
    merged = merge_daemon_json(
        current, {"log-opts": {"max-size": "10m"}, "registry-mirrors": ["http://mirror:5000"]}
    )
    assert merged == {
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}},
        "data-root": "/srv/docker",
        "log-opts": {"max-file": "3", "max-size": "10m"},
        "registry-mirrors": ["http://mirror:5000"],
    }
    assert current["log-opts"] == {"max-file": "3"}  # input untouched


def test_merge_replaces_lists_and_scalars_and_removes():
    current = {"registry-mirrors": ["a"], "debug": True, "runtimes": {"x": {}, "nvidia": {}}}
    merged = merge_daemon_json(
        current, {"registry-mirrors": ["b"], "debug": False}, remove=["runtimes.x", "nope.deeper"]
    )
    assert merged == {"registry-mirrors": ["b"], "debug": False, "runtimes": {"nvidia": {}}}
    assert merge_daemon_json(merged, {"registry-mirrors": ["b"], "debug": False}) == merged


def test_nvidia_runtime_settings_like_nvidia_ctk():
    # NVIDIA/nvidia-container-toolkit pkg/config/engine/docker/docker.go AddRuntime
    assert nvidia_runtime_settings() == {
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}
    }
    s = nvidia_runtime_settings("nv", "/usr/bin/nvidia-container-runtime", True, True)
    assert s["default-runtime"] == "nv"
    assert s["features"] == {"cdi": True}
    assert s["runtimes"]["nv"]["path"] == "/usr/bin/nvidia-container-runtime"


def test_dump_and_diff():
    text = dump_daemon_json({"b": 1, "a": {"c": 2}})
    assert text == '{\n    "b": 1,\n    "a": {\n        "c": 2\n    }\n}\n'
    assert daemon_json_diff(None, {"a": 1})["before"] == ""
    assert daemon_json_diff({}, {"a": 1}) == {"before": "{}\n", "after": '{\n    "a": 1\n}\n'}


def test_guest_module_is_standalone():
    """It is shipped to guests as module_utils: standard library only, no miglab, no Ansible."""
    source = (ROOT / "plugins" / "module_utils" / "miglab_guest.py").read_text()
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports == [
        "from __future__ import annotations",
        "import copy",
        "import json",
        "import os",
        "import re",
    ]
    # a real file of the collection, not a link into the package (a tarball without the package
    # would ship a dangling link)
    assert not (ROOT / "plugins" / "module_utils" / "miglab_guest.py").is_symlink()


# ---------------------------------------------------------------------------------------------
# the stand-ins, read by the same parsers
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def smi_share(tmp_path):
    """The files the GRID stand-in installs to /usr/share/nvidia-standin, for driver 535.216.01."""
    share = tmp_path / "share"
    share.mkdir()
    shutil.copy(FIXTURES / "h200-q.txt", share / "nvidia-smi-q.txt")
    shutil.copy(FIXTURES / "h200-nvidia-smi.txt", share / "nvidia-smi.txt")
    (share / "manifest.json").write_text(
        json.dumps({"version": "535.216.01", "cuda": "12.2", "built": "x", "standin": True})
    )
    return share


def run_smi(share: Path, state: Path, *args: str) -> str:
    env = dict(os.environ, MIGLAB_STANDIN_SHARE=str(share), MIGLAB_STANDIN_STATE=str(state))
    r = subprocess.run(
        [sys.executable, str(STANDINS / "grid-driver" / "nvidia-smi"), *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return r.stdout


def test_standin_nvidia_smi_q_unlicensed_then_licensed(smi_share, tmp_path):
    state = tmp_path / "standin-license.json"
    q = read_license(run_smi(smi_share, state, "-q"))
    (gpu,) = q["gpus"]
    assert q["driver_version"] == "535.216.01" and q["cuda_version"] == "12.2"
    assert (gpu["product_name"], gpu["virtualization_mode"]) == ("NVIDIA H200X-141C", "VGPU")
    assert gpu["license_status"] == "Unlicensed (Unrestricted)"
    state.write_text(json.dumps({"status": "Licensed", "expiry": "2026-12-1 9:5:7 GMT"}))
    q = read_license(run_smi(smi_share, state, "-q"))
    assert q["gpus"][0]["license_expiry"] == "2026-12-1 9:5:7 GMT"
    assert license_problem(q) is None


def test_standin_nvidia_smi_q_is_the_real_capture_otherwise(smi_share, tmp_path):
    """Every line but the documented substitutions and the licence block is the H200 capture's."""
    out = run_smi(smi_share, tmp_path / "none.json", "-q").split("\n")
    real = (FIXTURES / "h200-q.txt").read_text().split("\n")
    block = out.index("    vGPU Software Licensed Product")
    assert out[block + 1].split(":")[0].rstrip() == "        Product Name"
    assert out[block + 2].split(":")[0].rstrip() == "        License Status"
    assert len(out[block + 2].split(" : ")[0]) == len(real[3].split(" : ")[0])  # aligned
    assert len(out) == len(real) + 3
    changed = {
        "Timestamp",
        "Driver Version",
        "CUDA Version",
        "Product Name",
        "Product Brand",
        "Virtualization Mode",
        "GSP Firmware Version",
    }
    for ours, theirs in zip(out[:block] + out[block + 3 :], real, strict=True):
        if ours != theirs:
            assert ours.split(" : ")[0] == theirs.split(" : ")[0]
            assert ours.split(":")[0].strip() in changed, ours


def test_standin_nvidia_smi_version_and_summary(smi_share, tmp_path):
    version = run_smi(smi_share, tmp_path / "s.json", "--version")
    assert parse_nvidia_smi_version(version) == "535.216.01"
    real = (FIXTURES / "h200-version.txt").read_text().splitlines()
    assert [line.split(":")[0] for line in version.splitlines()] == [
        line.split(":")[0] for line in real
    ]
    table = run_smi(smi_share, tmp_path / "s.json")
    assert (
        "| NVIDIA-SMI 535.216.01             Driver Version: 535.216.01     CUDA Version: 12.2"
        in table
    )
    assert {len(line) for line in table.splitlines()[1:12]} == {91}  # the table stays aligned


def test_standin_gridd_reads_client_configuration_tokens(tmp_path):
    gridd = load_script(STANDINS / "grid-driver" / "nvidia-gridd", "standin_gridd")
    tokens = tmp_path / "ClientConfigToken"
    tokens.mkdir()
    subprocess.run(
        [sys.executable, str(STANDINS / "make-token.py"), "dls.lab.example", str(tokens / "a.tok")],
        check=True,
    )
    assert gridd.token_server(str(tokens))[0] == "dls.lab.example:443"
    (tokens / "b.tok").write_text("not-a-token")
    os.utime(tokens / "b.tok", (2e9, 2e9))  # the newest token is the one read
    assert gridd.token_server(str(tokens)) == (None, str(tokens / "b.tok"))


def test_standin_grid_run_reports_its_version(tmp_path):
    out = subprocess.run(
        [
            "bash",
            str(STANDINS / "grid-driver" / "build-run.sh"),
            "550.144.03",
            "12.4",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(out).name == "NVIDIA-Linux-x86_64-550.144.03-grid.run"
    version = subprocess.run(["sh", out, "--version"], capture_output=True, text=True, check=True)
    assert parse_installer_version(version.stdout) == "550.144.03"
    info = subprocess.run(["sh", out, "--info"], capture_output=True, text=True, check=True)
    assert (
        "Identification: NVIDIA Accelerated Graphics Driver for Linux-x86_64 550.144.03"
        in info.stdout
    )
    bad = subprocess.run(["sh", out, "--frobnicate"], capture_output=True, text=True)
    assert bad.returncode == 1 and "Unrecognized option: '--frobnicate'" in bad.stderr


def run_ctk(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(STANDINS / "container-toolkit" / "nvidia-ctk"), *args],
        capture_output=True,
        text=True,
    )


def test_standin_nvidia_ctk_merges_like_the_module(tmp_path):
    cfg = tmp_path / "daemon.json"
    current = {"log-level": "warn", "runtimes": {"other": {"path": "runc"}}, "labels": ["a"]}
    cfg.write_text(json.dumps(current))
    dry = run_ctk("runtime", "configure", "--runtime=docker", f"--config={cfg}", "--dry-run")
    assert dry.returncode == 0 and json.loads(cfg.read_text()) == current  # dry run: unchanged
    expected = merge_daemon_json(current, nvidia_runtime_settings())
    assert json.loads(dry.stdout) == expected
    r = run_ctk("runtime", "configure", "--runtime=docker", f"--config={cfg}")
    assert r.returncode == 0
    assert "INFO[0000] Wrote updated config to " + str(cfg) in r.stderr
    assert cfg.read_text() == dry.stdout  # what --dry-run printed is what it writes
    assert json.loads(cfg.read_text()) == expected
    r = run_ctk("runtime", "configure", "--runtime=docker", f"--config={cfg}", "--set-as-default")
    assert json.loads(cfg.read_text())["default-runtime"] == "nvidia"


def test_standin_nvidia_ctk_refuses_invalid_json(tmp_path):
    cfg = tmp_path / "daemon.json"
    cfg.write_text("{oops")
    r = run_ctk("runtime", "configure", "--runtime=docker", f"--config={cfg}")
    assert r.returncode == 1 and "unable to load config for runtime docker" in r.stderr
    assert cfg.read_text() == "{oops"
    missing = tmp_path / "new" / "daemon.json"
    r = run_ctk("runtime", "configure", "--runtime=docker", f"--config={missing}")
    assert "Config file does not exist; using empty config" in r.stderr
    assert json.loads(missing.read_text()) == nvidia_runtime_settings()


def test_the_standins_captures_are_the_fixtures():
    """The GRID stand-in prints real captures; its copies (an installed miglab has no tests/)
    are the fixtures, byte for byte."""
    captures = STANDINS / "grid-driver" / "captures"
    for name in ("h200-q.txt", "h200-nvidia-smi.txt"):
        assert (captures / name).read_bytes() == (FIXTURES / name).read_bytes(), name


def test_only_debs_not_installed_at_their_version_are_installed():
    from miglab_guest import deb_name_version, debs_to_install

    base = {"src": "files/nvidia-container-toolkit-base_1.17.8-1_amd64.deb", "checksum": "x"}
    tool = {"src": "files/nvidia-container-toolkit_1.17.8-1_amd64.deb", "checksum": "y"}
    odd = {"url": "https://example.test/toolkit-latest.deb", "checksum": "z"}
    assert deb_name_version(base["src"]) == ("nvidia-container-toolkit-base", "1.17.8-1")
    assert deb_name_version("libfoo_1%3a2.0-1_amd64.deb") == ("libfoo", "1:2.0-1")
    assert deb_name_version("toolkit-latest.deb") is None
    # dpkg-query -W -f '${Package}\t${Version}\t${db:Status-Abbrev}\n' (Debian 12's dpkg 1.21)
    query = (
        "nvidia-container-toolkit-base\t1.17.8-1\tii \nnvidia-container-toolkit\t1.17.7-1\tii \n"
    )
    assert debs_to_install([base, tool, odd], query) == [tool, odd]
    assert debs_to_install([base, tool], "nvidia-container-toolkit\t1.17.8-1\trc \n") == [
        base,
        tool,
    ]
    assert debs_to_install([base], query) == []


def test_the_standins_licence_tokens_are_readable_by_their_owner_only(tmp_path):
    """A client configuration token is a secret: on the controller the stand-ins' tokens are
    0600 (they were 0644). In the guest the role sets the mode NVIDIA's License System guide asks
    for (744, guest_vgpu_driver_license_token_mode): nvidia-gridd reads it there."""
    subprocess.run(["bash", str(STANDINS / "build.sh"), str(tmp_path)], check=True,
                   capture_output=True)  # fmt: skip
    tokens = sorted(tmp_path.glob("*.tok"))
    assert [t.name for t in tokens] == [
        "client_configuration_token_never.tok", "client_configuration_token_standin.tok"
    ]  # fmt: skip
    assert {t.stat().st_mode & 0o777 for t in tokens} == {0o600}
