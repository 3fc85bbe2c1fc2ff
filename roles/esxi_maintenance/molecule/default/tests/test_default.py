"""After esxi_maintenance (enter, reboot, exit): the host rebooted exactly once (the check-mode
run before converge rebooted nothing), vCenter sees it connected and back in service."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "tests" / "molecule" / "esxi"))
from standin_checks import hostname, standin_state, vcenter_host  # noqa: E402

testinfra_hosts = ["ansible://esxi_hosts"]


def test_back_in_service(host):
    vc = vcenter_host(hostname(host))
    assert vc["in_maintenance_mode"] is False
    assert vc["connection_state"] == "connected"


def test_exactly_one_reboot(host):
    state = standin_state(host)
    assert state["reboots"] == 1, state["log"]
