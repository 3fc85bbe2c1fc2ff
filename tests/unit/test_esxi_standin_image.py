"""Issue 19: the ESXi stand-in under a vLCM image-managed cluster. ESXi 8.0 U3 as a release the
stand-in plays; ``esxi-standin components`` (the base image and NVIDIA components as vLCM shows
them) and ``esxi-standin image-apply ZIP...`` (the host's NVIDIA components made exactly those of
the given bundles: installed, replaced, removed, a reboot pending), run as the simulated vLCM's
backend (miglab/sim/vlcm_lab.py) runs them, with a temporary state file."""

from __future__ import annotations

import json
import subprocess

import pytest

from miglab.core import esxi
from miglab.formats import esxcli
from testlib import esxi_standin_host

QUERY = ["--query-gpu=" + ",".join(esxi.NVSMI_QUERY_FIELDS), "--format=csv"]


@pytest.fixture
def host(tmp_path):
    run = esxi_standin_host(tmp_path, "8.0.0", "gpus=A100-PCIE-80GB:2", "esxi=8.0.3")

    def components() -> dict:
        res = run("esxi-standin", "components")
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    def apply(*zips: str) -> subprocess.CompletedProcess:
        return run("esxi-standin", "image-apply", *zips)

    run.components, run.apply = components, apply
    return run


def test_esxi_8_0_3_is_a_release(host):
    vl = host("vmware", "-vl").stdout
    assert vl == "VMware ESXi 8.0.3 build-24022510\nVMware ESXi 8.0 Update 3\n"
    assert esxcli.parse_vmware_version(vl)["version"] == "8.0.3"
    listed = host("esxcli", "software", "component", "list").stdout
    assert "8.0.3-0.0.24022510" in listed and "8.0 U3" in listed
    assert "Platforms" in listed  # the ESXi 8 table
    base = host.components()["base_image"]
    assert base == {
        "version": "8.0.3-0.0.24022510",
        "display_name": "ESXi",
        "display_version": "8.0 U3",
        "release_date": "2024-06-25T00:00:00.000Z",
    }


def test_older_releases_keep_their_base_version(host):
    assert host("esxi-standin", "init", "esxi=7.0.3").returncode == 0
    assert host.components()["base_image"]["version"] == "7.0.3-0.20.19193900"
    assert "7.0.3-0.20.19193900" in host("esxcli", "software", "component", "list").stdout


def test_components_of_a_fresh_host_are_none(host):
    comps = host.components()
    assert comps["components"] == {}
    assert comps["reboot_required"] is False
    assert comps["esxi"] == "8.0.3"


def test_apply_installs_the_image_and_the_driver_runs_after_the_reboot(host):
    drv, dmn = host.bundle("550.127.06"), host.bundle("550.127.06", "DAEMON")
    res = host.apply(drv, dmn)
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert sorted(out["installed"]) == [
        "NVD-AIE-800_550.127.06-1OEM.800.1.0.20613240",
        "nvd-gpu-mgmt-daemon_550.127.06-0.0.0000",
    ]
    assert out["removed"] == [] and out["skipped"] == []
    assert out["reboot_required"] is True
    comps = host.components()
    assert comps["components"] == {
        "NVD-AIE-800": {
            "version": "550.127.06-1OEM.800.1.0.20613240",
            "display_name": "NVIDIA AI Enterprise vGPU driver for VMWare ESX-8.0.0",
            "display_version": "550.127.06",
            "vendor": "NVIDIA",
        },
        "nvd-gpu-mgmt-daemon": {
            "version": "550.127.06-0.0.0000",
            "display_name": "NVIDIA GPU Management Daemon",
            "display_version": "550.127.06",
            "vendor": "NVIDIA",
        },
    }
    assert comps["reboot_required"] is True and comps["driver_running"] is None
    # esxcli sees the same components; the driver is not loaded before the reboot
    listed = host("esxcli", "software", "component", "list").stdout
    assert "NVD-AIE-800" in listed and "nvd-gpu-mgmt-daemon" in listed
    assert host("nvidia-smi", *QUERY).returncode == 9  # installed, not running
    # vCenter's reboot (the reboot link's boot request) loads it
    assert host("esxi-standin", "boot-request", "vcenter").returncode == 0
    comps = host.components()
    assert comps["reboot_required"] is False and comps["driver_running"] == "550.127.06"
    assert host("nvidia-smi", *QUERY).returncode == 0
    assert host("nvdGpuMgmtDaemon", "status").returncode == 0  # started at boot


def test_apply_again_changes_nothing(host):
    drv = host.bundle("550.127.06")
    assert host.apply(drv).returncode == 0
    assert host("esxi-standin", "reboot").returncode == 0
    res = host.apply(drv)
    assert res.returncode == 0
    out = json.loads(res.stdout)
    assert out == {
        "installed": [],
        "removed": [],
        "skipped": ["NVD-AIE-800_550.127.06-1OEM.800.1.0.20613240"],
        "reboot_required": False,
    }
    assert host.components()["reboot_required"] is False


def test_apply_replaces_and_removes_what_the_image_does_not_hold(host):
    # drift: the daemon added with esxcli, the driver of another version
    old_drv, dmn = host.bundle("535.216.01"), host.bundle("535.216.01", "DAEMON")
    for z in (old_drv, dmn):
        assert host("esxcli", "software", "component", "apply", "-d", z).returncode == 0
    assert host("esxi-standin", "reboot").returncode == 0
    assert host("nvdGpuMgmtDaemon", "status").returncode == 0  # running
    new_drv = host.bundle("550.127.06")
    res = host.apply(new_drv)  # no refusal while the daemon runs (staged for the next boot)
    assert res.returncode == 0, res.stdout
    out = json.loads(res.stdout)
    assert out["installed"] == ["NVD-AIE-800_550.127.06-1OEM.800.1.0.20613240"]
    assert sorted(out["removed"]) == [
        "NVD-AIE-800_535.216.01-1OEM.800.1.0.20613240",
        "nvd-gpu-mgmt-daemon_535.216.01-0.0.0000",
    ]
    comps = host.components()
    assert list(comps["components"]) == ["NVD-AIE-800"]
    assert comps["driver_running"] == "535.216.01"  # the old one, until the reboot
    assert host("nvdGpuMgmtDaemon", "status").returncode == 127  # script gone
    assert host("esxi-standin", "reboot").returncode == 0
    comps = host.components()
    assert comps["driver_running"] == "550.127.06" and comps["reboot_required"] is False


def test_apply_of_nothing_removes_every_nvidia_component(host):
    assert host.apply(host.bundle("550.127.06")).returncode == 0
    assert host("esxi-standin", "reboot").returncode == 0
    out = json.loads(host.apply().stdout)
    assert out["removed"] == ["NVD-AIE-800_550.127.06-1OEM.800.1.0.20613240"]
    assert host.components()["components"] == {}
    assert host("nvidia-smi").returncode == 127  # the driver's files are gone
    assert host("esxi-standin", "reboot").returncode == 0
    assert host.components()["driver_running"] is None


def test_refusals_change_nothing(host):
    before = host("esxi-standin", "show").stdout
    # below the host's acceptance level (init's default: PartnerSupported)
    low = host.bundle("550.127.06", acceptance="CommunitySupported")
    res = host.apply(low)
    assert res.returncode == 1 and "[AcceptanceLevelError]" in res.stdout
    # two host drivers in one image
    a, b = host.bundle("550.127.06"), host.bundle("550.127.06", "VGPU")
    res = host.apply(a, b)
    assert res.returncode == 1 and "[ComponentConflictError]" in res.stdout
    assert "NVD-AIE-800" in res.stdout and "NVD-VGPU-800" in res.stdout
    # a zip that is not there
    res = host.apply(str(host.tmp / "missing.zip"))
    assert res.returncode == 1 and "[MetadataDownloadError]" in res.stdout
    assert host("esxi-standin", "show").stdout == before
    assert host.components()["components"] == {}
