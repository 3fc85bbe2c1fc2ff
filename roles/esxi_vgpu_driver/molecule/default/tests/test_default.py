"""After playbooks/esxi_hosts.yml: each stand-in host runs the wanted driver with the campaign's
MIG modes, rebooted only as often as needed; vCenter shows Shared Direct in effect and no host
left in maintenance mode."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "tests" / "molecule" / "esxi"))
from standin_checks import hostname, standin_state, vcenter_host  # noqa: E402

testinfra_hosts = ["ansible://esxi_hosts"]

DRIVER = "535.154.02"
# esxi-a: fresh (install reboot + MIG reboot); esxi-b: upgrade (one reboot); esxi-c: nothing.
EXPECT = {
    "esxi-a": {"reboots": 2, "mig": [True, True]},
    "esxi-b": {"reboots": 1, "mig": [False, False]},
    "esxi-c": {"reboots": 0, "mig": [False, True]},
}


def test_driver_installed_and_running(host):
    components = host.check_output("esxcli software component list")
    assert f"{DRIVER}-1OEM.702.0.0.17630552" in components
    assert "535.129.03" not in components
    out = host.check_output(
        "nvidia-smi --query-gpu=driver_version,mig.mode.current,mig.mode.pending "
        "--format=csv,noheader"
    )
    rows = [line.split(", ") for line in out.splitlines()]
    assert {r[0] for r in rows} == {DRIVER}
    want = EXPECT[hostname(host)]["mig"]
    assert [r[1] == "Enabled" for r in rows] == want, out
    assert [r[2] == "Enabled" for r in rows] == want, out


DAEMON = "/etc/init.d/nvdGpuMgmtDaemon"


def test_v8_gpu_management_daemon_installed_and_running(host):
    """Real-lab notes V8: both NVIDIA host components, the daemon running, the nvidia module
    loaded (NVIDIA AI Enterprise 5 user guide 2.7.3's checks)."""
    components = host.check_output("esxcli software component list")
    rows = [line.split() for line in components.splitlines()]
    assert [r[-4] for r in rows if r[0] == "nvd-gpu-mgmt-daemon"] == [f"{DRIVER}-0.0.0000"], rows
    assert "535.129.03-0.0.0000" not in components
    status = host.run(f"{DAEMON} status")
    assert (status.rc, status.stdout.strip()) == (0, "nvdGpuMgmtDaemon is running."), status
    modules = host.check_output("vmkload_mod -l").splitlines()
    assert any(line.split()[:1] == ["nvidia"] for line in modules), modules


def test_v8_daemon_stopped_before_the_update(host):
    log = standin_state(host)["log"]
    installs = [n for n, line in enumerate(log) if " install /vmfs/volumes/" in line]
    stops = [n for n, line in enumerate(log) if "nvdGpuMgmtDaemon stop (was running: True)" in line]
    if hostname(host) == "esxi-b":  # updated: the daemon stopped before the first install
        assert stops and installs and stops[0] < installs[0], log
    else:  # esxi-a: nothing ran before; esxi-c: nothing changed
        assert not stops, log


def test_rebooted_only_when_needed(host):
    state = standin_state(host)
    assert state["reboots"] == EXPECT[hostname(host)]["reboots"], state["log"]


@pytest.fixture(scope="module")
def vc(host):
    return vcenter_host(hostname(host))


def test_vcenter_host_back_in_service(host, vc):
    assert vc["connection_state"] == "connected"
    assert vc["in_maintenance_mode"] is False


def test_vcenter_shared_direct_in_effect(host, vc):
    assert vc["graphics_config"]["default_graphics_type"] == "sharedDirect"
    assert vc["graphics_config"]["assignment_policy"] == "performance"
    assert {g["graphics_type"] for g in vc["graphics_info"]} == {"sharedDirect"}
