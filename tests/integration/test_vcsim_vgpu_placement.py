"""Where the simulated vCenter puts a vGPU at power-on, proven through pyVmomi alone (no miglab
module): the physical GPU by the host's assignment policy (real-lab notes V1), the MIG start slot
by the vGPU manager's first fit (V2), the per-VM GPU pin `pciPassthru<N>.cfg.gpu-pci-id` (V3,
unconfirmed: modelled as operators describe it), and the host's vGPUs as the simulator writes them
for the ESXi stand-in (`host_state_dir`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyVim.connect import Disconnect
from pyVim.task import WaitForTask
from pyVmomi import vim, vmodl

from miglab.sim import vcenter as vcsim_lab
from testlib import wait_until

pytestmark = pytest.mark.integration

HOST = "esxi-01.sim.miglab.test"  # the built-in lab: 4x A100 80GB PCIe
GPUS = ["0000:3b:00.0", "0000:5e:00.0", "0000:86:00.0", "0000:af:00.0"]
G1, G2, G4, G7 = "grid_a100d-1-10c", "grid_a100d-2-20c", "grid_a100d-4-40c", "grid_a100d-7-80c"
TIME_SLICED = "grid_a100d-20c"


# --- helpers -------------------------------------------------------------------------------------
class Lab:
    """One simulator with the built-in lab, GPUs in sharedDirect, its own host_state_dir."""

    def __init__(self, vcsim_factory, tmp_path: Path, policy: str = "performance", **kw):
        lab = vcsim_lab.default_lab()
        self.state_dir = tmp_path / "vcenter"
        self.state_dir.mkdir(parents=True)
        for h in lab["hosts"]:
            h.update(graphics_type="sharedDirect", assignment_policy=policy,
                     host_state_dir=str(self.state_dir), **kw)  # fmt: skip
        self.sim = vcsim_factory(lab)
        self.si = self.sim.connect()
        content = self.si.RetrieveContent()
        view = content.viewManager.CreateContainerView(
            content.rootFolder, [vim.HostSystem, vim.ClusterComputeResource, vim.Datacenter], True
        )
        objs = {(type(o), o.name): o for o in view.view}
        view.Destroy()
        self.host = objs[(vim.HostSystem, HOST)]
        self.pool = objs[(vim.ClusterComputeResource, "cluster1")].resourcePool
        self.folder = objs[(vim.Datacenter, "dc1")].vmFolder
        self.vms: dict[str, vim.VirtualMachine] = {}

    def close(self):
        Disconnect(self.si)

    def vm(self, name: str, *vgpus: str, pins: dict[int, str] | None = None) -> vim.VirtualMachine:
        """A powered-off VM with one vGPU device per type, memory reserved; pins: device
        number (0, 1, ...) -> PCI id written as pciPassthru<N>.cfg.gpu-pci-id."""
        extra = [vim.option.OptionValue(key="pciPassthru.use64bitMMIO", value="TRUE")]
        extra += [
            vim.option.OptionValue(key=f"pciPassthru{n}.cfg.gpu-pci-id", value=pci)
            for n, pci in (pins or {}).items()
        ]
        devices = [
            vim.vm.device.VirtualDeviceSpec(
                operation="add",
                device=vim.vm.device.VirtualPCIPassthrough(
                    key=-100 - k,
                    backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=t),
                ),
            )
            for k, t in enumerate(vgpus)
        ]
        spec = vim.vm.ConfigSpec(
            name=name,
            guestId="ubuntu64Guest",
            numCPUs=4,
            memoryMB=8192,
            memoryReservationLockedToMax=True,
            files=vim.vm.FileInfo(vmPathName="[datastore1]"),
            extraConfig=extra,
            deviceChange=devices,
        )
        task = self.folder.CreateVM_Task(config=spec, pool=self.pool, host=self.host)
        WaitForTask(task)
        self.vms[name] = task.info.result
        return self.vms[name]

    def power_on(self, *names: str, concurrently: bool = False) -> None:
        """In this order, each after the previous one finished, or all issued before any is
        waited for (as an unmanaged batch power-on does)."""
        if concurrently:
            tasks = [self.vms[n].PowerOnVM_Task() for n in names]
            for t in tasks:
                WaitForTask(t)
            return
        for n in names:
            WaitForTask(self.vms[n].PowerOnVM_Task())

    def power_off(self, *names: str) -> None:
        for n in names:
            WaitForTask(self.vms[n].PowerOffVM_Task())

    def state(self) -> dict:
        return json.loads((self.state_dir / f"{HOST}.json").read_text())

    def slots(self) -> dict[str, tuple[str, int]]:
        """VM -> (GPU PCI id, MIG start slot) from the state file."""
        return {
            v["vm"]: (g["pci_id"], v["placement_start"])
            for g in self.state()["gpus"]
            for v in g["vgpus"]
        }

    def graphics_vms(self) -> dict[str, list[str]]:
        """GPU PCI id -> names of the VMs HostGraphicsInfo.vm[] says it holds."""
        info = self.host.configManager.graphicsManager.graphicsInfo
        return {g.pciId: sorted(vm.name for vm in g.vm) for g in info}


@pytest.fixture
def lab_of(vcsim_factory, tmp_path):
    """lab_of(policy="performance") -> a Lab, its session closed after the test."""
    made: list[Lab] = []

    def make(policy: str = "performance", **kw) -> Lab:
        lab = Lab(vcsim_factory, tmp_path / f"lab{len(made)}", policy, **kw)
        made.append(lab)
        return lab

    yield make
    for lab in made:
        lab.close()


def power_on_fault(vm: vim.VirtualMachine) -> vmodl.MethodFault:
    with pytest.raises(vmodl.MethodFault) as exc:
        WaitForTask(vm.PowerOnVM_Task())
    return exc.value


# --- the state file and first fit ----------------------------------------------------------------
def test_first_fit_slots_in_power_on_order_and_the_state_file(lab_of):
    """V2: the vGPU manager creates each GPU instance at the lowest allowed start whose memory
    slices are free, in power-on order; the state file lists every GPU of the host (empty at start)
    and each vGPU's type, GPU instance id (lowest free from 1; 0 for the whole GPU), start and
    size (-1 for time-sliced vGPUs)."""
    lab = lab_of("consolidation")
    state = lab.state()
    assert state["services"]["TSM-SSH"] == {"running": True, "policy": "off"}  # V6
    assert {k: state[k] for k in ("host", "gpus")} == {
        "host": HOST,
        "gpus": [
            {"pci_id": p, "name": "NVIDIA A100 80GB PCIe", "vgpus": [], "passthrough": False}
            for p in GPUS
        ],
    }
    for name, t in (("a", G1), ("b", G1), ("c", G2), ("d", G1), ("ts", TIME_SLICED), ("w", G7)):
        lab.vm(name, t)
    lab.power_on("a", "b", "c", "d", "ts", "w")
    state = lab.state()
    uuid = lab.vms["a"].config.uuid
    assert uuid and state["gpus"][0]["vgpus"][0] == {
        "vm": "a",
        "vm_uuid": uuid,
        "vgpu_type": G1,
        "gpu_instance_id": 1,
        "placement_start": 0,
        "placement_size": 1,
    }
    rows = [
        [(v["vm"], v["gpu_instance_id"], v["placement_start"], v["placement_size"])
         for v in g["vgpus"]]
        for g in state["gpus"]
    ]  # fmt: skip
    assert rows == [
        [("a", 1, 0, 1), ("b", 2, 1, 1), ("c", 3, 2, 2), ("d", 4, 4, 1)],  # 2g: 0 taken -> 2
        [("ts", -1, -1, -1)],  # time-sliced: not on a GPU holding MIG vGPUs
        [("w", 0, 0, 8)],  # 7g.80gb: the whole GPU, instance 0
        [],
    ]
    assert lab.graphics_vms() == {
        GPUS[0]: ["a", "b", "c", "d"],
        GPUS[1]: ["ts"],
        GPUS[2]: ["w"],
        GPUS[3]: [],
    }


def test_the_state_file_is_replaced_atomically_and_follows_power_off(lab_of):
    """V2: powering a VM off frees its GPU instance's slots (the next vGPU may take them) and its
    instance id; a forced reboot frees them all. The file is written by rename: no temporary file
    stays behind."""
    lab = lab_of("consolidation", reboot_seconds=0.2)
    for name, t in (("s6-vm1", G4), ("s6-vm2", G2), ("s6-vm3", G1), ("again", G2)):
        lab.vm(name, t)
    lab.power_on("s6-vm1", "s6-vm2", "s6-vm3")
    assert lab.slots() == {"s6-vm1": (GPUS[0], 0), "s6-vm2": (GPUS[0], 4), "s6-vm3": (GPUS[0], 6)}
    lab.power_off("s6-vm2")
    assert lab.slots() == {"s6-vm1": (GPUS[0], 0), "s6-vm3": (GPUS[0], 6)}
    assert lab.graphics_vms()[GPUS[0]] == ["s6-vm1", "s6-vm3"]
    lab.power_on("again")
    (again,) = [v for v in lab.state()["gpus"][0]["vgpus"] if v["vm"] == "again"]
    assert (again["placement_start"], again["gpu_instance_id"]) == (4, 2)
    lab.power_off("s6-vm1", "s6-vm3", "again")
    assert all(g["vgpus"] == [] for g in lab.state()["gpus"])
    assert lab.graphics_vms() == {p: [] for p in GPUS}

    lab.power_on("s6-vm1", "s6-vm2")
    WaitForTask(lab.host.RebootHost_Task(force=True))  # the VMs go down with the host
    assert all(g["vgpus"] == [] for g in lab.state()["gpus"])
    assert wait_until(lambda: lab.host.runtime.connectionState == "connected")
    assert sorted(p.name for p in lab.state_dir.iterdir()) == [f"{HOST}.json"]


# --- the seed's scenarios s6 and s7 --------------------------------------------------------------
S6 = (("s6-vm1", G4), ("s6-vm2", G2), ("s6-vm3", G1))  # planned: one GPU, 4g@0, 2g@4, 1g@6
S7 = (("s7-vm1", G2), ("s7-vm2", G2), ("s7-vm3", G2), ("s7-vm4", G1))  # planned: 0, 2, 4, 6


@pytest.mark.parametrize("concurrently", [False, True], ids=["in-order", "concurrently"])
def test_s6_powered_on_unmanaged_lands_on_three_gpus(lab_of, concurrently):
    """V1: under the default performance policy, s6 (planned on ONE GPU) powered on the way an
    unmanaged power-on does it -- smallest first, or all at once -- lands on three GPUs."""
    lab = lab_of("performance")
    for name, t in S6:
        lab.vm(name, t)
    lab.power_on("s6-vm3", "s6-vm2", "s6-vm1", concurrently=concurrently)
    slots = lab.slots()
    assert len({gpu for gpu, _ in slots.values()}) == 3
    assert all(start == 0 for _, start in slots.values())  # each alone on its GPU
    if not concurrently:
        assert slots == {"s6-vm3": (GPUS[0], 0), "s6-vm2": (GPUS[1], 0), "s6-vm1": (GPUS[2], 0)}


def test_s6_consolidated_smallest_first_is_not_the_plan(lab_of):
    """V1 + V2: under consolidation with the 1g.10gb first (slot 0) and the 2g.20gb next (slot
    2), the 4g.40gb can start only at slot 0, which is taken: it goes to the next GPU."""
    lab = lab_of("consolidation")
    for name, t in S6:
        lab.vm(name, t)
    lab.power_on("s6-vm3", "s6-vm2", "s6-vm1")
    assert lab.slots() == {"s6-vm3": (GPUS[0], 0), "s6-vm2": (GPUS[0], 2), "s6-vm1": (GPUS[1], 0)}


def test_s6_consolidated_largest_first_is_the_plan(lab_of):
    """V1 + V2: under consolidation, largest first, all three share GPU 0 at 4g@0, 2g@4, 1g@6."""
    lab = lab_of("consolidation")
    for name, t in S6:
        lab.vm(name, t)
    lab.power_on("s6-vm1", "s6-vm2", "s6-vm3")
    assert lab.slots() == {"s6-vm1": (GPUS[0], 0), "s6-vm2": (GPUS[0], 4), "s6-vm3": (GPUS[0], 6)}
    assert [v["gpu_instance_id"] for v in lab.state()["gpus"][0]["vgpus"]] == [1, 2, 3]


def test_s7_spread_by_performance_packed_by_consolidation(lab_of):
    """V1 + V2: s7 (three 2g.20gb and a 1g.10gb planned on one GPU): performance spreads them
    over four GPUs; consolidation in the order 2g, 2g, 2g, 1g gives GPU 0 at 0, 2, 4, 6; with
    the 1g.10gb first (slot 0) the third 2g.20gb finds no start (0, 2, 4 taken; 6 is not a
    2g.20gb start) and goes to GPU 1."""
    spread = lab_of("performance")
    for name, t in S7:
        spread.vm(name, t)
    spread.power_on(*(n for n, _ in S7), concurrently=True)
    assert sorted(gpu for gpu, _ in spread.slots().values()) == GPUS

    packed = lab_of("consolidation")
    for name, t in S7:
        packed.vm(name, t)
    packed.power_on(*(n for n, _ in S7))
    assert packed.slots() == {
        "s7-vm1": (GPUS[0], 0),
        "s7-vm2": (GPUS[0], 2),
        "s7-vm3": (GPUS[0], 4),
        "s7-vm4": (GPUS[0], 6),
    }

    wrong = lab_of("consolidation")
    for name, t in S7:
        wrong.vm(name, t)
    wrong.power_on("s7-vm4", "s7-vm1", "s7-vm2", "s7-vm3")
    assert wrong.slots() == {
        "s7-vm4": (GPUS[0], 0),
        "s7-vm1": (GPUS[0], 2),
        "s7-vm2": (GPUS[0], 4),
        "s7-vm3": (GPUS[1], 0),
    }


def test_first_fit_not_summed_slices_decides(lab_of):
    """V2: the start slots, not the summed compute slices, decide whether a MIG vGPU fits: two
    3g.40gb (3 + 3 of 7 compute slices) take slots 0 and 4, after which a 1g.10gb (1 compute
    slice left) finds no free memory slice on that GPU."""
    lab = lab_of("consolidation")
    lab.vm("x", "grid_a100d-3-40c")
    lab.vm("y", "grid_a100d-3-40c")
    lab.vm("z", G1)
    lab.power_on("x", "y", "z")
    assert lab.slots() == {"x": (GPUS[0], 0), "y": (GPUS[0], 4), "z": (GPUS[1], 0)}


def test_a_mig_type_without_placement_rules_falls_back_to_summed_slices(vcsim_factory, tmp_path):
    """Without a type's mig_placements entry the simulator only sums compute slices (3 + 2 + 1 of
    7) and framebuffer: the 1g.10gb joins the 3g.40gb and the 2g.20gb, with no start slot or
    instance id (-1)."""
    lab = vcsim_lab.default_lab()
    del lab["hosts"][0]["mig_placements"][G1]
    state = tmp_path / "vcenter"
    state.mkdir()
    lab["hosts"][0].update(graphics_type="sharedDirect", assignment_policy="consolidation",
                           host_state_dir=str(state))  # fmt: skip
    sim = vcsim_factory(lab)
    si = sim.connect()
    try:
        content = si.RetrieveContent()
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.Datacenter], True)
        (dc,) = view.view
        view.Destroy()
        host = dc.hostFolder.childEntity[0].host[0]
        for name, t in (("x", "grid_a100d-3-40c"), ("y", G2), ("z", G1)):
            spec = vim.vm.ConfigSpec(
                name=name, guestId="ubuntu64Guest", numCPUs=2, memoryMB=4096,
                memoryReservationLockedToMax=True, files=vim.vm.FileInfo(vmPathName="[datastore1]"),
                deviceChange=[vim.vm.device.VirtualDeviceSpec(
                    operation="add", device=vim.vm.device.VirtualPCIPassthrough(
                        key=-100,
                        backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=t)))],
            )  # fmt: skip
            task = dc.vmFolder.CreateVM_Task(config=spec, pool=host.parent.resourcePool, host=host)
            WaitForTask(task)
            WaitForTask(task.info.result.PowerOnVM_Task())
    finally:
        Disconnect(si)
    gpu0 = json.loads((state / f"{HOST}.json").read_text())["gpus"][0]["vgpus"]
    assert [(v["vm"], v["placement_start"], v["gpu_instance_id"]) for v in gpu0] == [
        ("x", 0, 1),
        ("y", 4, 2),
        ("z", -1, -1),
    ]


# --- the pin (V3, unconfirmed) -------------------------------------------------------------------
def test_a_pinned_vgpu_lands_on_its_gpu(lab_of):
    """V3: pciPassthru<N>.cfg.gpu-pci-id pins the VM's N-th vGPU device to that GPU (PCI id
    compared case-insensitively), whatever the policy would pick; the other device is placed by
    the policy."""
    lab = lab_of("performance")
    lab.vm("pinned", G4, pins={0: GPUS[2]})
    lab.vm("second", G1, G2, pins={1: GPUS[3].upper()})  # only the 2g.20gb is pinned
    lab.power_on("pinned", "second")
    state = lab.state()
    where = {(v["vm"], v["vgpu_type"]): g["pci_id"] for g in state["gpus"] for v in g["vgpus"]}
    assert where == {
        ("pinned", G4): GPUS[2],
        ("second", G1): GPUS[0],  # performance: the first GPU holding fewest vGPUs
        ("second", G2): GPUS[3],
    }


def test_a_pin_to_a_full_or_unknown_gpu_fails_the_power_on(lab_of):
    """V3: a pinned vGPU is tried on that GPU only: a GPU that cannot take it, or a PCI id that
    is no GPU of the host, fails the power-on (InsufficientResourcesFault) naming the pin and
    why; nothing is placed."""
    lab = lab_of("performance")
    lab.vm("first", G4, pins={0: GPUS[1]})
    lab.power_on("first")  # 4g.40gb at slot 0: half the framebuffer left, but no 4g.40gb start
    lab.vm("late", G4, pins={0: GPUS[1]})
    fault = power_on_fault(lab.vms["late"])
    assert isinstance(fault, vim.fault.InsufficientResourcesFault)
    detail = fault.faultMessage[0].message
    assert f"pinned to {GPUS[1]}" in detail and "no free start slot" in detail, detail
    assert lab.vms["late"].runtime.powerState == "poweredOff"
    lab.vm("whole", G7, pins={0: GPUS[2]})
    lab.power_on("whole")
    lab.vm("full", G1, pins={0: GPUS[2]})
    detail = power_on_fault(lab.vms["full"]).faultMessage[0].message
    assert f"pinned to {GPUS[2]}" in detail and "framebuffer" in detail, detail

    lab.vm("nowhere", G1, pins={0: "0000:01:00.0"})
    fault = power_on_fault(lab.vms["nowhere"])
    assert isinstance(fault, vim.fault.InsufficientResourcesFault)
    detail = fault.faultMessage[0].message
    assert "pinned to 0000:01:00.0" in detail and f"no GPU of host {HOST}" in detail, detail
    assert lab.slots() == {"first": (GPUS[1], 0), "whole": (GPUS[2], 0)}


# --- the lab file -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"starts": [-1], "size": 1}, "start -1 is negative"),
        ({"starts": [6], "size": 4}, "start 6 + size 4 exceeds the 8 memory slices"),
        ({"starts": [], "size": 1}, "needs starts and a size of at least 1"),
        ({"starts": [0], "size": 0}, "needs starts and a size of at least 1"),
    ],
)
def test_bad_mig_placements_are_refused_at_start(vcsim_factory, rule, message):
    lab = vcsim_lab.default_lab()
    lab["hosts"][0]["mig_placements"][G4] = rule
    with pytest.raises(RuntimeError, match="exited with 2") as exc:
        vcsim_factory(lab)
    assert message in str(exc.value)


def test_lab_json_carries_the_catalogs_placements():
    """The lab file's rules are the catalog's (A100 80GB: 8 memory slices)."""
    host = vcsim_lab.default_lab()["hosts"][0]
    assert [g["mig_memory_slices"] for g in host["gpus"]] == [8, 8, 8, 8]
    assert host["mig_placements"] == {
        "grid_a100d-1-10c": {"starts": [0, 1, 2, 3, 4, 5, 6], "size": 1},
        "grid_a100d-1-10cme": {"starts": [0, 1, 2, 3, 4, 5, 6], "size": 1},
        "grid_a100d-1-20c": {"starts": [0, 2, 4, 6], "size": 2},
        "grid_a100d-2-20c": {"starts": [0, 2, 4], "size": 2},
        "grid_a100d-3-40c": {"starts": [0, 4], "size": 4},
        "grid_a100d-4-40c": {"starts": [0], "size": 4},
        "grid_a100d-7-80c": {"starts": [0], "size": 8},
    }
