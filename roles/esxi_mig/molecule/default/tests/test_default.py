"""After esxi_mig: each GPU has the wanted MIG mode (current and pending), made effective the
cheapest allowed way -- a reboot (mig-a; mig-r too, though a GPU reset is allowed: Ampere on ESXi
needs the reboot, real-lab notes V10) or nothing (mig-h, Hopper) -- and no host is left in
maintenance mode."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "tests" / "molecule" / "esxi"))
from standin_checks import hostname, standin_state, vcenter_host  # noqa: E402

testinfra_hosts = ["ansible://esxi_hosts"]

EXPECT = {
    "mig-a": {"mig": ["Enabled", "Disabled"], "reboots": 1, "resets": 0},
    "mig-r": {"mig": ["Enabled"], "reboots": 1, "resets": 0},
    "mig-h": {"mig": ["Enabled"], "reboots": 0, "resets": 0},
}


def test_mig_modes(host):
    out = host.check_output(
        "nvidia-smi --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader"
    )
    rows = [line.split(", ") for line in out.splitlines()]
    want = EXPECT[hostname(host)]["mig"]
    assert [r[0] for r in rows] == want, out
    assert [r[1] for r in rows] == want, out


def test_made_effective_the_cheapest_allowed_way(host):
    state = standin_state(host)
    want = EXPECT[hostname(host)]
    assert (state["reboots"], state["resets"]) == (want["reboots"], want["resets"]), state["log"]


def test_not_left_in_maintenance_mode(host):
    vc = vcenter_host(hostname(host))
    assert vc["connection_state"] == "connected"
    assert vc["in_maintenance_mode"] is False
