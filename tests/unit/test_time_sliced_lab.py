"""Issue 19: time-sliced vGPUs (an L40S lab) from the campaign to the guest: the plan packs a
scenario's VMs of one type onto a GPU up to the type's maximum, the simulated lab's vCenter and
guests know the board, and the controller's placement read after power-on says how many vGPUs
share each time-sliced GPU (what the simulated SUT's share is made from)."""

from __future__ import annotations

import filecmp

import pytest

from miglab.adapters.inventory import load_checked
from miglab.core import power_on as po
from miglab.core.catalog import load_catalog
from miglab.core.planning import plan_campaign
from testlib import ROOT

L40S_LAB = ROOT / "inventories" / "sim-l40s"
CAMPAIGN = ROOT / "campaigns" / "l40s-time-sliced.yml"
E2E_CAMPAIGN = ROOT / "tests" / "e2e" / "campaigns" / "sim-l40s.yml"


def _plan(campaign):
    return plan_campaign(*load_checked(campaign, L40S_LAB)).as_json()


def test_the_l40s_campaign_plans_its_vms_onto_shared_gpus():
    plan = _plan(CAMPAIGN)
    by_id = {s["id"]: s for s in plan["scenarios"]}
    assert plan["gpu"] == "L40S" and plan["mlperf"]["runs"] == 3
    shared = {sid: [(g["type"], g["vgpus"]) for g in s["gpus"]] for sid, s in by_id.items()}
    assert shared == {
        "s1": [("nvidia_l40s-48c", 1)],
        "s2": [("nvidia_l40s-24c", 2)],
        "s3": [("nvidia_l40s-16c", 3)],
        "s4": [("nvidia_l40s-12c", 4)],
        "s5": [("nvidia_l40s-8c", 6)],
        "s6": [("nvidia_l40s-48c", 1)] * 4,
        "s7": [("nvidia_l40s-24c", 2)] * 4,
    }
    for s in plan["scenarios"]:
        assert {g["mode"] for g in s["gpus"]} == {"time-sliced"}
        for vm in s["vms"]:  # no MIG start slot, one vGPU type per GPU
            assert vm["start_slice"] is None and vm["vgpu_type"] == vm["profile"]
            assert vm["mmio_gb"] == 128


def test_the_e2e_campaign_fits_the_l40s_lab():
    plan = _plan(E2E_CAMPAIGN)
    assert [(s["id"], s["wave"], len(s["vms"]), len(s["gpus"])) for s in plan["scenarios"]] == [
        ("s1", 1, 1, 1),
        ("s2", 2, 2, 1),
    ]


def test_the_l40s_lab_shares_the_default_labs_guest_settings():
    """The golden guest image's recipe hashes the inventory's group_vars/guests: the same files
    as inventories/sim's, so both labs use one image (no rebuild when the other lab comes up)."""
    sim = ROOT / "inventories" / "sim" / "group_vars"
    for rel in ("guests/roles.yml", "all/sim.yml", "esxi_hosts.yml"):
        assert filecmp.cmp(sim / rel, L40S_LAB / "group_vars" / rel, shallow=False), rel
    assert sorted(p.name for p in (L40S_LAB / "group_vars" / "guests").iterdir()) == sorted(
        p.name for p in (sim / "guests").iterdir()
    )


def test_the_simulated_vcenter_offers_the_l40s_time_sliced_types():
    from miglab.adapters.inventory import load_lab
    from miglab.sim.vcenter import lab_json

    catalog = load_catalog()
    (host,) = lab_json(load_lab(L40S_LAB / "hosts.yml", catalog), catalog)["hosts"]
    assert len(host["gpus"]) == 4
    for gpu in host["gpus"]:
        assert gpu["name"] == "NVIDIA L40S" and gpu["memory_mb"] == 48 * 1024
        assert "mig_compute_slices" not in gpu  # no MIG on Ada Lovelace
    assert "nvidia_l40s-24c" in host["vgpu_types"] and host["mig_placements"] == {}


def test_the_guest_sees_an_l40s_time_sliced_vgpu():
    from miglab.sim.vgpu_view import describe_vgpu

    v = describe_vgpu("nvidia_l40s-24c")
    assert v["name"] == "NVIDIA L40S-24C" and v["gpu"] == "L40S"
    assert v["framebuffer_mib"] == 24 * 1024 and v["mig_profile"] is None
    assert v["guest_mig_devices"] is False and v["pci_device_id"] == "0x26B910DE"


# ``nvidia-smi vgpu -q`` of a host with two L40S-24C vGPUs on its first GPU and one L40S-48C on
# its second (time-sliced: no GPU instance), in the layout of NVIDIA's vGPU user guide.
VGPU_Q = """
GPU 00000000:3B:00.0
    Active vGPUs                          : 2
    vGPU ID                               : 3251634177
        VM ID                             : 2103066
        VM Name                           : s2-vm1
        vGPU Name                         : NVIDIA L40S-24C
        GPU Instance ID                   : N/A
    vGPU ID                               : 3251634178
        VM ID                             : 2103067
        VM Name                           : s2-vm2
        vGPU Name                         : NVIDIA L40S-24C
        GPU Instance ID                   : N/A
GPU 00000000:5E:00.0
    Active vGPUs                          : 1
    vGPU ID                               : 3251634179
        VM ID                             : 2103068
        VM Name                           : s1-vm1
        vGPU Name                         : NVIDIA L40S-48C
        GPU Instance ID                   : N/A
"""
NO_GI = "No GPU instances found: Not Found\n"
INDEX = "0, 00000000:3B:00.0\n1, 00000000:5E:00.0\n"


def _vm(name, gpu):
    return {
        "name": name,
        "placement": {
            "gpu": gpu,
            "planned": {"gpu": gpu, "gpu_index": 0, "mig_slot": None},
            "pinned": True,
        },
    }


def test_wave_placement_counts_the_vgpus_sharing_a_time_sliced_gpu():
    text = po.HOST_SECTIONS.join([VGPU_Q, NO_GI, INDEX])
    results = [_vm("s2-vm1", "0000:3b:00.0"), _vm("s2-vm2", "0000:3b:00.0"),
               _vm("s1-vm1", "0000:5e:00.0")]  # fmt: skip
    out = po.wave_placement(results, {"esxi-l40s-01": text})
    assert out["problems"] == []
    assert out["vms"]["s2-vm1"] == {
        "gpu": "0000:3b:00.0",
        "mig_slot": None,
        "planned": {"gpu": "0000:3b:00.0", "mig_slot": None},
        "pinned": True,
        "gpu_vgpus": 2,
    }
    assert out["vms"]["s2-vm2"]["gpu_vgpus"] == 2
    assert out["vms"]["s1-vm1"]["gpu_vgpus"] == 1


def test_wave_placement_counts_per_host():
    """Two hosts' GPUs have the same PCI address: their vGPUs are counted apart."""
    other = VGPU_Q.replace("s2-vm", "x-vm").replace("s1-vm1", "x-vm3")
    texts = {
        "esxi-a": po.HOST_SECTIONS.join([VGPU_Q, NO_GI, INDEX]),
        "esxi-b": po.HOST_SECTIONS.join([other, NO_GI, INDEX]),
    }
    out = po.wave_placement([_vm("s1-vm1", "0000:5e:00.0"), _vm("x-vm1", "0000:3b:00.0")], texts)
    assert out["vms"]["s1-vm1"]["gpu_vgpus"] == 1
    assert out["vms"]["x-vm1"]["gpu_vgpus"] == 2


@pytest.mark.parametrize("host_text", [None, "broken"])
def test_wave_placement_without_the_hosts_view_counts_nothing(host_text):
    hosts = {} if host_text is None else {"esxi-l40s-01": host_text}
    out = po.wave_placement([_vm("s1-vm1", "0000:5e:00.0")], hosts)
    assert "gpu_vgpus" not in out["vms"]["s1-vm1"]


# --- the hosts phase: a GPU without MIG is already what time-sliced vGPUs need --------------
QUERY = "index, pci.bus_id, name, driver_version, mig.mode.current, mig.mode.pending\n"


def _nvsmi(*gpus):
    rows = "".join(
        f"{n}, 00000000:{0x3B + 0x23 * n:02X}:00.0, {name}, 535.216.01, {cur}, {pend}\n"
        for n, (name, cur, pend) in enumerate(gpus)
    )
    return {"rc": 0, "stdout": QUERY + rows}


def test_the_l40s_plan_wants_mig_off_and_a_gpu_without_mig_has_it_off():
    """The plan wants MIG disabled on a GPU of time-sliced vGPUs; an L40S has no MIG mode
    ([N/A]): nothing to change, not a problem. Wanting MIG on it stays one."""
    from miglab.core import esxi

    plan = _plan(E2E_CAMPAIGN)
    wanted = esxi.mig_wanted(plan, "esxi-l40s-01.sim.miglab.test")["wanted"]
    assert wanted == {0: False}
    l40s = _nvsmi(*[("NVIDIA L40S", "[N/A]", "[N/A]")] * 4)
    out = esxi.plan_mig(l40s, wanted)
    assert out["problems"] == []
    assert (out["enable"], out["disable"], out["activate"]) == ([], [], [])
    assert out["summary"] == "MIG modes as wanted: nothing to do"
    assert out["gpus"][0]["action"] == "none"
    assert esxi.verify_mig(l40s, wanted)["ok"]
    assert "does not support MIG" in esxi.plan_mig(l40s, {0: True})["problems"][0]
    assert not esxi.verify_mig(l40s, {0: True})["ok"]
