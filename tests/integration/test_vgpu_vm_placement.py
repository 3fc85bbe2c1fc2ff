"""miglab.lab.vgpu_vm powers VMs on so that vSphere puts each vGPU where the plan says, and says
where it landed (real-lab notes V1: vSphere picks the GPU by the host's assignment policy, V2:
the vGPU manager picks the MIG slot, first fit, V3: the per-VM pin `pciPassthru0.cfg.gpu-pci-id`,
unconfirmed, modelled by the simulator as operators report it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from miglab.sim import vcenter as vcsim_lab
from testlib import run_module, vcenter_args

pytestmark = pytest.mark.integration

S6 = [
    ("s6-vm1", "grid_a100d-4-40c", 0),
    ("s6-vm2", "grid_a100d-2-20c", 4),
    ("s6-vm3", "grid_a100d-1-10c", 6),
]


def _sim(vcsim_factory, tmp_path, policy="consolidation"):
    lab = vcsim_lab.default_lab()
    state = tmp_path / "vgpus"
    state.mkdir(parents=True)
    for h in lab["hosts"]:
        h["graphics_type"] = "sharedDirect"
        h["assignment_policy"] = policy
        h["host_state_dir"] = str(state)
    return vcsim_factory(lab), state


def _args(sim, vms, **kw):
    host = sim.lab["hosts"][0]["name"]
    return {
        **vcenter_args(sim),
        "host": host,
        "datastore": sim.lab["datastore"],
        "network": sim.lab["network"],
        "vcpus": 4,
        "memory_gb": 8,
        "power_state": "poweredon",
        "power_on_order": "sequential",
        "verify_placement": True,
        "vms": vms,
        **kw,
    }


def _slots(state: Path, host: str) -> dict:
    data = json.loads((state / f"{host}.json").read_text())
    return {v["vm"]: (g["pci_id"], v["placement_start"]) for g in data["gpus"] for v in g["vgpus"]}


def test_wrong_order_is_caught_and_the_planned_order_lands_as_planned(vcsim_factory, tmp_path):
    """V1 + V2: s6 powered on smallest first under consolidation puts the 4g.40gb (start 0
    only) on another GPU, and the module says so; largest first lands as planned."""
    sim, state = _sim(vcsim_factory, tmp_path)
    host = sim.lab["hosts"][0]["name"]
    wrong = [{"name": n, "vgpus": [t], "gpu": 0, "mig_slot": s} for n, t, s in reversed(S6)]
    res = run_module("vgpu_vm", _args(sim, wrong))
    assert res["failed"]
    assert (
        "s6-vm1: planned on GPU 0 (0000:3b:00.0), vCenter runs its vGPU on 0000:5e:00.0"
        in (res["msg"])
    )
    off = run_module("vgpu_vm", _args(sim, wrong, power_state="poweredoff"))
    assert not off["failed"], off["msg"]
    right = list(reversed(wrong))
    res = run_module("vgpu_vm", _args(sim, right))
    assert not res["failed"], res["msg"]
    assert {v["name"]: v["placement"]["gpu"] for v in res["vms"]} == {
        n: "0000:3b:00.0" for n, _, _ in S6
    }
    assert _slots(state, host) == {n: ("0000:3b:00.0", s) for n, _, s in S6}
    again = run_module("vgpu_vm", _args(sim, right))
    assert again["changed"] is False


def test_the_pin_puts_a_vgpu_on_its_planned_gpu(vcsim_factory, tmp_path):
    """V3: pinned, a VM planned on GPU 2 runs there whatever the policy would pick; the pin is
    a VM setting miglab removes again when it is off."""
    sim, state = _sim(vcsim_factory, tmp_path, policy="performance")
    host = sim.lab["hosts"][0]["name"]
    vms = [
        {"name": "pin-a", "vgpus": ["grid_a100d-3-40c"], "gpu": 2, "mig_slot": 0, "gpu_pin": True}
    ]
    res = run_module("vgpu_vm", _args(sim, vms))
    assert not res["failed"], res["msg"]
    assert res["vms"][0]["placement"] == {
        "gpu": "0000:86:00.0",
        "planned": {"gpu": "0000:86:00.0", "gpu_index": 2, "mig_slot": 0},
        "pinned": True,
    }
    assert _slots(state, host)["pin-a"] == ("0000:86:00.0", 0)
    unpinned = [{**vms[0], "gpu_pin": False}]
    res = run_module("vgpu_vm", _args(sim, unpinned, power_state="poweredoff"))
    assert res["changed"] and any("gpu-pci-id" in a for a in res["vms"][0]["actions"])


def test_a_planned_gpu_the_host_does_not_have_changes_nothing(vcsim_factory, tmp_path):
    sim, _ = _sim(vcsim_factory, tmp_path)
    vms = [{"name": "far", "vgpus": ["grid_a100d-1-10c"], "gpu": 9}]
    res = run_module("vgpu_vm", _args(sim, vms))
    assert res["failed"] and "planned GPU 9, but host" in res["msg"]
    assert "4 NVIDIA GPU(s)" in res["msg"] and res["changed"] is False


def test_a_new_folder_is_created_once_for_many_vms(vcsim_factory, tmp_path):
    """The VM folder is created before the worker pool: eight threads creating it on a first
    run raced (DuplicateName)."""
    sim, _ = _sim(vcsim_factory, tmp_path)
    vms = [{"name": f"f-{k}", "vgpus": ["grid_a100d-1-10c"]} for k in range(12)]
    args = _args(
        sim,
        vms,
        power_state="poweredoff",
        power_on_order="parallel",
        folder="miglab/campaign-x",
        concurrency=8,
    )
    res = run_module("vgpu_vm", args)
    assert not res["failed"], res["msg"]
    assert all(v["done"] == ["create"] for v in res["vms"])


def test_an_unmanaged_power_on_spreads_s7_over_the_gpus(vcsim_factory, tmp_path):
    """V1: under the default performance policy, s7 (three 2g.20gb and a 1g.10gb planned on one
    GPU) powered on as an unmanaged batch lands on four GPUs; the check names every VM off its
    GPU. Under consolidation, in order, all four land on GPU 0 at 0, 2, 4, 6."""
    sim, state = _sim(vcsim_factory, tmp_path, policy="performance")
    host = sim.lab["hosts"][0]["name"]
    s7 = [{"name": f"s7-vm{k}", "vgpus": ["grid_a100d-2-20c"], "gpu": 0, "mig_slot": 2 * (k - 1)}
          for k in (1, 2, 3)] + [{"name": "s7-vm4", "vgpus": ["grid_a100d-1-10c"], "gpu": 0,
                                 "mig_slot": 6}]  # fmt: skip
    res = run_module("vgpu_vm", _args(sim, s7, power_on_order="parallel"))
    assert res["failed"]
    assert len({g for g, _ in _slots(state, host).values()}) == 4
    assert res["msg"].count("vCenter runs its vGPU on") == 3
    run_module("vgpu_vm", _args(sim, s7, power_state="poweredoff"))
    sim2, state2 = _sim(vcsim_factory, tmp_path / "b", policy="consolidation")
    res = run_module("vgpu_vm", _args(sim2, s7))
    assert not res["failed"], res["msg"]
    assert _slots(state2, sim2.lab["hosts"][0]["name"]) == {
        v["name"]: ("0000:3b:00.0", v["mig_slot"]) for v in s7
    }
