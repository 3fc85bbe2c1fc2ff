"""The playbooks that create or power on the campaign's VMs pass the same VM options, among them
the clone's firmware and guest identity (real-lab notes V13): a phase that passed other ones would
converge the VMs the other phase made to something else."""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# The options that shape a VM; power-off and teardown calls name VMs only.
SHAPE = ("datacenter", "datastore", "network", "folder", "template", "firmware", "guest_identity")


def _vgpu_vm_tasks(node):
    if isinstance(node, dict):
        if "miglab.lab.vgpu_vm" in node and node["miglab.lab.vgpu_vm"].get("power_state") in (
            "unchanged",
            "poweredon",
        ):
            yield node["miglab.lab.vgpu_vm"]
        for value in node.values():
            yield from _vgpu_vm_tasks(value)
    elif isinstance(node, list):
        for item in node:
            yield from _vgpu_vm_tasks(item)


@pytest.fixture(scope="module")
def converging_calls():
    calls = []
    for name in ("vms.yml", "benchmark.yml"):
        calls += list(_vgpu_vm_tasks(yaml.safe_load((ROOT / "playbooks" / name).read_text())))
    assert len(calls) == 2  # vms.yml converges, benchmark.yml powers each wave on
    return calls


def test_clones_get_the_inventorys_firmware_and_guest_identity(converging_calls):
    for call in converging_calls:
        assert call["firmware"] == "{{ miglab_vm_firmware | default(omit) }}"
        assert call["guest_identity"] == "{{ miglab_vm_guest_identity | default(omit) }}"


def test_phases_shape_the_vms_alike(converging_calls):
    first, second = ({k: c.get(k) for k in SHAPE} for c in converging_calls)
    assert first == second
