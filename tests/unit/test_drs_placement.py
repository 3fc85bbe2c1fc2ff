"""When DRS chooses a VM's host at power-on (real-lab notes V5: vSphere DrsBehaviorInfo; NVIDIA AI
Enterprise user guide, "vGPU in a DRS cluster"), and the line that stops such a power-on."""

import pytest

from miglab.adapters.vsphere.drs import drs_placement_problem, drs_places


@pytest.mark.parametrize(
    ("enabled", "default", "override_enabled", "override_behavior", "places"),
    [
        (False, "fullyAutomated", None, None, None),  # no DRS
        (True, "manual", None, None, None),
        (True, "partiallyAutomated", None, None, "partiallyAutomated"),
        (True, "fullyAutomated", None, None, "fullyAutomated"),
        (True, None, None, None, "fullyAutomated"),  # vSphere's default behaviour
        (True, "fullyAutomated", False, None, None),  # override: DRS off for the VM
        (True, "fullyAutomated", True, "manual", None),
        (True, "manual", True, "partiallyAutomated", "partiallyAutomated"),
    ],
)
def test_drs_places(enabled, default, override_enabled, override_behavior, places):
    assert drs_places(enabled, default, override_enabled, override_behavior) == places


def test_the_line_names_vm_cluster_and_the_way_out():
    line = drs_placement_problem("s6-vm1", "gpu-cluster", "fullyAutomated")
    assert line.startswith("s6-vm1: DRS of cluster gpu-cluster is fullyAutomated")
    assert "migrates it during a run" in line and "miglab_vm_drs_override" in line
    assert "migrates" not in drs_placement_problem("v", "c", "partiallyAutomated")
