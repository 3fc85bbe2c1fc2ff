"""After esxi_graphics: vCenter has Shared Direct and the consolidation policy configured and in
effect on the GPU (after one reboot, which the stand-in saw too); the host is back in service."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "tests" / "molecule" / "esxi"))
from standin_checks import hostname, standin_state, vcenter_host  # noqa: E402

testinfra_hosts = ["ansible://esxi_hosts"]


def test_shared_direct_configured_and_in_effect(host):
    vc = vcenter_host(hostname(host))
    assert vc["graphics_config"]["default_graphics_type"] == "sharedDirect"
    assert vc["graphics_config"]["assignment_policy"] == "consolidation"
    assert [g["graphics_type"] for g in vc["graphics_info"]] == ["sharedDirect"]
    assert vc["in_maintenance_mode"] is False
    assert vc["connection_state"] == "connected"


def test_one_reboot(host):
    state = standin_state(host)
    assert state["reboots"] == 1, state["log"]
