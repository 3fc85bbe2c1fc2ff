"""After the failure cases: where the role refused, nothing changed; the host that never came
back stays in maintenance mode; the rollout never reached the next host."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "tests" / "molecule" / "esxi"))
from standin_checks import hostname, standin_state, vcenter_host  # noqa: E402

testinfra_hosts = ["ansible://esxi_hosts"]


def test_driver_only_where_the_rollout_got(host):
    components = host.check_output("esxcli software component list")
    if hostname(host) == "esxi-gone":
        assert "NVD-AIE-702" in components  # installed, then the reboot never ended
    else:
        assert "NVD-" not in components


def test_acceptance_level_put_back(host):
    assert host.check_output("esxcli software acceptance get") == "PartnerSupported"


def test_maintenance_mode_only_for_the_lost_host(host):
    vc = vcenter_host(hostname(host))
    if hostname(host) == "esxi-gone":
        assert vc["in_maintenance_mode"] is True
        assert vc["connection_state"] == "notResponding"
    else:
        assert vc["in_maintenance_mode"] is False
        assert vc["connection_state"] == "connected"
        assert standin_state(host)["reboots"] == 0
