"""The power-on order and assignment policy that make vSphere put each vGPU where the plan says,
and the check of where it landed (real-lab notes V1: vSphere picks the GPU by the host's
sharedPassthruAssignmentPolicy; V2: the vGPU manager creates each MIG GPU instance at the first
free start; V3: the per-VM GPU pin, unconfirmed)."""

from __future__ import annotations

import random

import pytest

from miglab.adapters.inventory import load_checked
from miglab.core import power_on as po
from miglab.core.catalog import load_catalog
from miglab.core.placement import first_fit_layout
from miglab.core.planning import plan_campaign
from miglab.formats.nvsmi_vgpu import (
    HostVgpuError,
    parse_index_bus_ids,
    parse_mig_lgi,
    parse_vgpu_query,
    vgpu_slots,
)
from testlib import ROOT, SEED, collection_module

A100 = load_catalog().get("A100-PCIE-80GB")
GPUS = [A100] * 4
GPU_IDS = ["0000:3b:00.0", "0000:5e:00.0", "0000:86:00.0", "0000:af:00.0"]


def vm(name, gpu, profile, start):
    return po.PlannedVgpu(name, "h", gpu, A100.profile(profile), start)


S6 = [vm("vm1", 0, "4g.40gb", 0), vm("vm2", 0, "2g.20gb", 4), vm("vm3", 0, "1g.10gb", 6)]
S7 = [vm(f"vm{i}", 0, "2g.20gb", 2 * (i - 1)) for i in (1, 2, 3)] + [vm("vm4", 0, "1g.10gb", 6)]


@pytest.fixture(scope="module")
def seed_plan():
    return plan_campaign(*load_checked(SEED, ROOT / "inventories" / "sim")).as_json()


# --- the model of vSphere's choice --------------------------------------------------------------
def test_first_fit_gives_each_instance_the_lowest_free_start():
    """V2: the vGPU manager, not miglab, picks the start; largest first gives the dense layout."""
    layout = first_fit_layout(A100, [A100.profile(p) for p in ("1g.10gb", "2g.20gb", "4g.40gb")])
    assert [(i.profile.name, i.start) for i in layout.instances] == [
        ("4g.40gb", 0),
        ("2g.20gb", 4),
        ("1g.10gb", 6),
    ]
    assert [i.start for i in first_fit_layout(A100, [A100.profile("3g.40gb")]).instances] == [0]


def test_an_unmanaged_power_on_breaks_the_seed_s6_layout():
    """V1 + V2: under the default performance policy s6 spreads over three GPUs; with
    consolidation but the 1g first, the 4g.40gb (start 0 only) cannot join it on that GPU."""
    got = po.predict(GPUS, S6, "performance")
    assert sorted(g for g, _ in got.values()) == [0, 1, 2]
    wrong = [S6[2], S6[1], S6[0]]
    got = po.predict(GPUS, wrong, "consolidation")
    assert got["vm3"] == (0, 0) and got["vm2"] == (0, 2)
    assert got["vm1"][0] != 0  # the 4g.40gb went to another GPU
    assert po.predict(GPUS, S6, "consolidation") == {"vm1": (0, 0), "vm2": (0, 4), "vm3": (0, 6)}


def test_the_seed_s7_layout_needs_consolidation_and_the_order():
    """V1: performance spreads s7's four VMs over four GPUs; consolidation packs them as
    planned (0, 2, 4, 6)."""
    assert len({g for g, _ in po.predict(GPUS, S7, "performance").values()}) == 4
    assert po.predict(GPUS, S7, "consolidation") == {
        "vm1": (0, 0),
        "vm2": (0, 2),
        "vm3": (0, 4),
        "vm4": (0, 6),
    }


def test_gpu_order_finds_an_order_that_gives_the_planned_starts():
    for _ in range(20):
        shuffled = random.sample(S6, len(S6))
        order = po.gpu_order(A100, shuffled)
        assert [p.vm for p in order] == ["vm1", "vm2", "vm3"]
    # planned starts no power-on order can give (the vGPU manager always takes the first free)
    assert po.gpu_order(A100, [vm("x", 0, "1g.10gb", 6)]) is None


def test_pinned_vgpus_go_to_their_gpu():
    """V3: with the pin only the order on each GPU matters."""
    wave = [vm("a", 1, "1g.10gb", 0), vm("b", 0, "4g.40gb", 0)]
    assert po.predict(GPUS, wave, "consolidation") == {"a": (0, 0), "b": (1, 0)}
    assert po.predict(GPUS, wave, "consolidation", pinned=True) == {"a": (1, 0), "b": (0, 0)}


# --- the seed campaign ---------------------------------------------------------------------------
def test_the_seed_plan_says_which_waves_need_pinned_vgpus(seed_plan):
    cat = load_catalog()
    one = {hp.host: hp for hp in po.wave_power_on(seed_plan, 1, cat)}
    assert one["esxi-01.sim.miglab.test"].policy == "performance"  # one VM per GPU
    three = po.wave_power_on(seed_plan, 3, cat)[0]
    assert three.policy == "consolidation"  # s7 on one GPU
    two = po.wave_power_on(seed_plan, 2, cat)[0]
    assert two.policy is None and "miglab_vgpu_gpu_pin" in two.problems[0]
    assert po.wave_power_on(seed_plan, 2, cat, pin=True)[0].policy == "consolidation"
    assignment = seed_plan["vgpu_assignment"]
    host = assignment["unpinned"]["esxi-01.sim.miglab.test"]
    assert host["policy"] == "consolidation" and host["unserved_waves"] == [1, 2]
    assert assignment["pinned"]["esxi-01.sim.miglab.test"]["unserved_waves"] == []


def test_power_on_items_orders_each_gpu_largest_first(seed_plan):
    s6 = next(s for s in seed_plan["scenarios"] if s["id"] == "s6")
    s5 = next(s for s in seed_plan["scenarios"] if s["id"] == "s5")
    items = [{"name": v["name"]} for v in reversed(s6["vms"] + s5["vms"])]
    ordered = po.power_on_items(items, seed_plan, 2, load_catalog(), pin=True)
    names = [i["name"].rsplit("-", 2)[-2] + "-" + i["name"].rsplit("-", 1)[-1] for i in ordered]
    assert names == ["s5-vm1", "s6-vm1", "s6-vm2", "s6-vm3"]
    assert all(i["gpu_pin"] for i in ordered)


def test_unknown_gpus_keep_their_order():
    plan = {
        "lab": {"hosts": [{"name": "h", "gpus": ["NO-SUCH-GPU"]}]},
        "scenarios": [{"wave": 1, "vms": [{"name": "b", "host": "h", "gpu": 0, "profile": "x"}]}],
    }
    items = [{"name": "b"}, {"name": "a"}]
    assert [i["name"] for i in po.power_on_items(items, plan, 1, load_catalog())] == ["b", "a"]


def test_the_plan_shows_the_policy_and_the_waves_that_need_pins():
    from testlib import run_cli

    res = run_cli("plan", str(SEED))
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    assert "assignment policy consolidation; wave(s) 1, 2 land as planned only with pinned" in text


# --- what ran ----------------------------------------------------------------------------------
VGPU_Q = """
==============NVSMI LOG==============

Timestamp                                 : Thu Dec  3 10:00:00 2026
Driver Version                            : 535.154.02

GPU 00000000:3B:00.0
    Active vGPUs                          : 2
    vGPU ID                               : 3251634178
        VM ID                             : 2103066
        VM Name                           : s6-vm1
        vGPU Name                         : GRID A100D-4-40C
        GPU Instance ID                   : 1
        FB Memory Usage
            Total                         : 40960 MiB
    vGPU ID                               : 3251634179
        VM ID                             : 2103067
        VM Name                           : s6-vm2
        vGPU Name                         : GRID A100D-2-20C
        GPU Instance ID                   : 2
GPU 00000000:5E:00.0
    Active vGPUs                          : 1
    vGPU ID                               : 3251634180
        VM ID                             : 2103068
        VM Name                           : s6-vm3
        vGPU Name                         : GRID A100D-1-10C
        GPU Instance ID                   : 1
"""
LGI = """+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 4g.40gb          5        1          0:4     |
+-------------------------------------------------------+
|   0  MIG 2g.20gb         14        2          4:2     |
+-------------------------------------------------------+
|   1  MIG 1g.10gb         19        1          0:1     |
+-------------------------------------------------------+
"""
INDEX = "0, 00000000:3B:00.0\n1, 00000000:5E:00.0\n"


def test_parsers_read_nvidias_layouts():
    vgpus = parse_vgpu_query(VGPU_Q)
    assert [(v["gpu"], v["vm"], v["gpu_instance_id"]) for v in vgpus] == [
        ("00000000:3B:00.0", "s6-vm1", 1),
        ("00000000:3B:00.0", "s6-vm2", 2),
        ("00000000:5E:00.0", "s6-vm3", 1),
    ]
    assert [(g["gpu"], g["profile"], g["start"], g["size"]) for g in parse_mig_lgi(LGI)] == [
        (0, "4g.40gb", 0, 4),
        (0, "2g.20gb", 4, 2),
        (1, "1g.10gb", 0, 1),
    ]
    assert parse_mig_lgi("No GPU instances found: Not Found\n") == []
    assert parse_index_bus_ids(INDEX) == {0: "00000000:3B:00.0", 1: "00000000:5E:00.0"}
    assert vgpu_slots(VGPU_Q, LGI, INDEX)["s6-vm2"]["mig_slot"] == 4


def test_parsers_refuse_without_echoing():
    secret = (
        "GPU 00000000:3B:00.0\n    vGPU ID : 1\n        VM Name : x\n"
        "        GPU Instance ID : p4ss\n"
    )
    with pytest.raises(HostVgpuError) as exc:
        parse_vgpu_query(secret)
    assert "p4ss" not in str(exc.value) and "line 4" in str(exc.value)
    with pytest.raises(HostVgpuError):
        parse_mig_lgi("hunter2 is no table\n")


def _vm_result(name, gpu, planned_gpu, slot):
    return {
        "name": name,
        "placement": {
            "gpu": gpu,
            "planned": {"gpu": planned_gpu, "gpu_index": 0, "mig_slot": slot},
            "pinned": False,
        },
    }


def test_wave_placement_joins_vcenter_and_the_host():
    text = po.HOST_SECTIONS.join([VGPU_Q, LGI, INDEX])
    results = [
        _vm_result("s6-vm1", "0000:3b:00.0", "0000:3b:00.0", 0),
        _vm_result("s6-vm2", "0000:3b:00.0", "0000:3b:00.0", 4),
        _vm_result("s6-vm3", "0000:5e:00.0", "0000:3b:00.0", 6),
    ]
    out = po.wave_placement(results, {"esxi-01": text})
    assert out["vms"]["s6-vm2"] == {
        "gpu": "0000:3b:00.0",
        "mig_slot": 4,
        "planned": {"gpu": "0000:3b:00.0", "mig_slot": 4},
        "pinned": False,
    }
    assert out["problems"] == [
        "s6-vm3: planned on GPU 0000:3b:00.0 slot 6, running on GPU 0000:5e:00.0 slot 0"
    ]


def test_wave_placement_names_a_host_that_disagrees_with_vcenter():
    text = po.HOST_SECTIONS.join([VGPU_Q, LGI, INDEX])
    results = [_vm_result("s6-vm3", "0000:3b:00.0", "0000:3b:00.0", 6)]
    problems = po.wave_placement(results, {"esxi-01": text})["problems"]
    assert any("vCenter says GPU 0000:3b:00.0" in p for p in problems)
    missing = po.wave_placement(
        [_vm_result("other", "0000:3b:00.0", "0000:3b:00.0", 0)], {"esxi-01": text}
    )["problems"]
    assert missing == ["other: no vGPU of this VM in its host's nvidia-smi vgpu -q"]


def test_normalize_pci_id():
    assert po.normalize_pci_id("00000000:3B:00.0") == "0000:3b:00.0"
    assert po.normalize_pci_id("0000:3b:00.0") == "0000:3b:00.0"
    assert po.normalize_pci_id("3b:00.0") == "0000:3b:00.0"


def test_the_filters_hand_the_work_to_the_core(seed_plan):
    filters = collection_module("plugins.filter.lab").FilterModule().filters()
    assert filters["vgpu_assignment_policy"](seed_plan, "esxi-01.sim.miglab.test") == (
        "consolidation"
    )
    assert filters["vgpu_assignment_policy"](seed_plan, "elsewhere", False, "performance") == (
        "performance"
    )
    s6 = next(s for s in seed_plan["scenarios"] if s["id"] == "s6")
    item = filters["vgpu_vm_item"](s6["vms"][2], True)
    assert item["gpu"] == 1 and item["mig_slot"] == 6 and item["gpu_pin"] is True
    host = [
        {"item": "esxi-01", "stdout": po.HOST_SECTIONS.join([VGPU_Q, LGI, INDEX])},
        {"item": "esxi-02", "skipped": True},
    ]
    out = filters["vgpu_placement"]([_vm_result("s6-vm1", GPU_IDS[0], GPU_IDS[0], 0)], host)
    assert out["problems"] == [] and out["vms"]["s6-vm1"]["mig_slot"] == 0
