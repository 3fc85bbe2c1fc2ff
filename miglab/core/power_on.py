"""Power-on order and GPU assignment policy that make vSphere put each vGPU where the plan says.

vSphere, not the VM's spec, picks the physical GPU of a vGPU when the VM powers on, by the host's
``sharedPassthruAssignmentPolicy`` (``performance`` spreads vGPUs over GPUs, ``consolidation``
packs them), and on a MIG GPU the vGPU manager creates the GPU instance and picks its start slot
itself (rows V1 and V2 of the real-lab notes: vSphere API HostGraphicsManager; NVIDIA AI
Enterprise vGPU appendix, "VMware vSphere creates the GPU instances"). So the planned layout runs
only if the VMs power on one by one in the right order under the right policy.

The model of vSphere's choice used here (and by the simulated lab's vCenter):

* a GPU can take a MIG-backed vGPU when one of its profile's start slots has all the slots the
  instance needs free; the vGPU manager takes the lowest such start (first fit);
* a GPU can take a time-sliced vGPU when it holds no MIG instance and no other type, and the
  framebuffers fit;
* ``performance`` picks, among the GPUs that can take it, the one holding the fewest vGPUs,
  ``consolidation`` the one holding the most; ties go to the lower GPU index (PCI order).

The model is a prediction only: whatever it says, miglab reads where every vGPU landed after
each power-on wave and stops on a difference (``placement_mismatches``). An optional per-VM pin
(``pciPassthru0.cfg.gpu-pci-id``, row V3: unconfirmed) makes the GPU choice explicit.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from miglab.core.catalog import Catalog, GpuModel, MigProfile, TimeSlicedType
from miglab.core.placement import first_free_start, slice_mask
from miglab.formats.nvsmi_vgpu import HostVgpuError, vgpu_slots

POLICIES = ("consolidation", "performance")
# Between the three nvidia-smi outputs of one host in one shell call (playbooks/benchmark.yml).
HOST_SECTIONS = "\n@@miglab-nvidia-smi@@\n"
PERMUTATION_LIMIT = 6  # orders tried one by one up to 6 VMs on a GPU (720); beyond, the two rules


@dataclass(frozen=True)
class PlannedVgpu:
    """One VM of the plan as the power-on sees it."""

    vm: str
    host: str
    gpu: int  # GPU index on its host (PCI order)
    vgpu: MigProfile | TimeSlicedType
    start: int | None  # planned MIG start slot; None for time-sliced vGPUs


@dataclass
class _GpuState:
    model: GpuModel
    mask: int = 0  # MIG memory slices in use
    count: int = 0  # vGPUs on the GPU
    time_sliced: TimeSlicedType | None = None
    framebuffer_gib: float = 0.0

    def first_fit(self, vgpu: MigProfile | TimeSlicedType) -> int | None | bool:
        """The start slot the vGPU manager would give a MIG vGPU (None: it does not fit); True
        or False for a time-sliced one."""
        if isinstance(vgpu, MigProfile):
            if self.time_sliced is not None:
                return None
            return first_free_start(self.model, vgpu, self.mask)
        if self.mask or (self.time_sliced is not None and self.time_sliced != vgpu):
            return False
        return self.framebuffer_gib + vgpu.framebuffer_gib <= self.model.memory_gib

    def take(self, vgpu: MigProfile | TimeSlicedType, start: int | None) -> None:
        self.count += 1
        if isinstance(vgpu, MigProfile):
            self.mask |= slice_mask(vgpu, int(start or 0))
        else:
            self.time_sliced = vgpu
            self.framebuffer_gib += vgpu.framebuffer_gib


def predict(
    models: list[GpuModel], order: list[PlannedVgpu], policy: str, pinned: bool = False
) -> dict[str, tuple[int, int | None] | None]:
    """Where each VM of ``order`` (one host, powered on one after the other, GPUs empty at the
    start) lands: VM name -> (GPU index, start slot), None when no GPU can take it. With
    ``pinned`` every VM goes to its planned GPU (or nowhere)."""
    gpus = [_GpuState(m) for m in models]
    out: dict[str, tuple[int, int | None] | None] = {}
    for p in order:
        fits = []
        for i, g in enumerate(gpus):
            if pinned and i != p.gpu:
                continue
            where = g.first_fit(p.vgpu)
            if where is None or where is False:
                continue
            fits.append((i, None if where is True else where))
        if not fits:
            out[p.vm] = None
            continue
        if policy == "consolidation":
            i, start = min(fits, key=lambda f: (-gpus[f[0]].count, f[0]))
        else:
            i, start = min(fits, key=lambda f: (gpus[f[0]].count, f[0]))
        gpus[i].take(p.vgpu, start)
        out[p.vm] = (i, start)
    return out


def _size(p: PlannedVgpu) -> tuple:
    if isinstance(p.vgpu, MigProfile):
        return (-p.vgpu.placement_size, -p.vgpu.slices, p.start or 0, p.vm)
    return (-p.vgpu.framebuffer_gib, 0, 0, p.vm)


def gpu_order(model: GpuModel, vms: list[PlannedVgpu]) -> list[PlannedVgpu] | None:
    """An order of one GPU's VMs in which first fit gives every MIG vGPU its planned start:
    largest profile first when that works (NVIDIA's advice), else lowest start first, else the
    first permutation that works; None when none does."""

    def works(order: list[PlannedVgpu]) -> bool:
        got = predict(
            [model], [PlannedVgpu(p.vm, p.host, 0, p.vgpu, p.start) for p in order], "consolidation"
        )
        return all(
            got[p.vm] is not None and (p.start is None or got[p.vm][1] == p.start) for p in order
        )

    candidates = [sorted(vms, key=_size), sorted(vms, key=lambda p: (p.start or 0, _size(p)))]
    for order in candidates:
        if works(order):
            return order
    if len(vms) <= PERMUTATION_LIMIT:
        for perm in itertools.permutations(sorted(vms, key=_size)):
            if works(list(perm)):
                return list(perm)
    return None


@dataclass
class HostPowerOn:
    """How one host's VMs of one wave power on."""

    host: str
    order: list[str]  # VM names, one after the other
    policy: str | None  # the assignment policy under which ``order`` gives the plan; None: none
    pin: bool  # the order relies on per-VM GPU pins
    problems: list[str] = field(default_factory=list)


def _gpu_major(groups: dict[int, list[PlannedVgpu]], by: str) -> list[PlannedVgpu]:
    keys = sorted(groups)
    if by == "fullest":
        keys = sorted(groups, key=lambda i: (-len(groups[i]), i))
    if by == "round-robin":
        out, lists = [], [list(groups[i]) for i in keys]
        while any(lists):
            for lst in lists:
                if lst:
                    out.append(lst.pop(0))
        return out
    return [p for i in keys for p in groups[i]]


def host_power_on(
    host: str,
    models: list[GpuModel],
    vms: list[PlannedVgpu],
    policies: tuple[str, ...] = POLICIES,
    pin: bool = False,
) -> HostPowerOn:
    """The power-on order of one host's VMs in one wave and the policy (of ``policies``) under
    which vSphere's choice, as modelled in :func:`predict`, gives every VM its planned GPU and
    start slot. With ``pin`` the GPUs are pinned and only the order within each GPU matters."""
    groups: dict[int, list[PlannedVgpu]] = {}
    problems = []
    for p in vms:
        groups.setdefault(p.gpu, []).append(p)
    for i in sorted(groups):
        if i >= len(models):
            problems.append(f"host {host}: the plan names GPU {i}, the host has {len(models)}")
            continue
        order = gpu_order(models[i], groups[i])
        if order is None:
            problems.append(
                f"host {host} GPU {i}: no power-on order gives "
                + ", ".join(f"{p.vm} its planned start slot {p.start}" for p in groups[i])
                + " (the vGPU manager places each instance at the first free start)"
            )
            order = sorted(groups[i], key=_size)
        groups[i] = order
    if problems:
        return HostPowerOn(
            host, [p.vm for i in sorted(groups) for p in groups[i]], None, pin, problems
        )
    planned = {p.vm: (p.gpu, p.start) for p in vms}
    for policy in policies:
        for by in ("index", "fullest", "round-robin"):
            order = _gpu_major(groups, by)
            if predict(models, order, policy, pinned=pin) == planned:
                return HostPowerOn(host, [p.vm for p in order], policy, pin)
    order = _gpu_major(groups, "index")
    return HostPowerOn(
        host,
        [p.vm for p in order],
        None,
        pin,
        [
            f"host {host}: no power-on order makes vSphere's "
            f"{' or '.join(policies)} policy put every VM on its planned GPU; "
            "pin the vGPUs (miglab_vgpu_gpu_pin: true) or change the plan"
        ],
    )


def _planned(plan: dict, catalog: Catalog) -> tuple[dict[str, list[GpuModel]], list[dict]]:
    models: dict[str, list[GpuModel]] = {}
    for h in plan.get("lab", {}).get("hosts", []):
        try:
            models[h["name"]] = [catalog.get(name) for name in h.get("gpus", [])]
        except LookupError:  # a GPU the catalog does not know (imported): no prediction there
            continue
    return models, plan.get("scenarios", [])


def _vgpu(model: GpuModel, vm: dict) -> MigProfile | TimeSlicedType:
    return model.find_vgpu(vm.get("profile") or vm["vgpu_type"])


def wave_power_on(
    plan: dict,
    wave: int,
    catalog: Catalog,
    pin: bool = False,
    policy: str | dict[str, str] | None = None,
) -> list[HostPowerOn]:
    """Per host, how the VMs of wave ``wave`` of a plan (``CampaignPlan.as_json()``) power on;
    ``policy`` fixes the hosts' assignment policy (one for all, or per host name: the one its
    hosts phase set); without it both are tried."""
    models, scenarios = _planned(plan, catalog)
    per_host: dict[str, list[PlannedVgpu]] = {}
    for s in scenarios:
        if s.get("wave") != wave:
            continue
        for vm in s["vms"]:
            host_models = models.get(vm["host"], [])
            if vm.get("gpu") is None or vm["gpu"] >= len(host_models):
                continue
            model = host_models[vm["gpu"]]
            try:
                vgpu = _vgpu(model, vm)
            except LookupError:
                continue
            per_host.setdefault(vm["host"], []).append(
                PlannedVgpu(vm["name"], vm["host"], vm["gpu"], vgpu, vm.get("start_slice"))
            )
    out = []
    for h in sorted(per_host):
        fixed = policy.get(h) if isinstance(policy, dict) else policy
        out.append(host_power_on(h, models[h], per_host[h], (fixed,) if fixed else POLICIES, pin))
    return out


def power_on_items(
    items: list[dict], plan: dict, wave: int, catalog: Catalog, pin: bool = False
) -> list[dict]:
    """The ``vgpu_vm`` items of one wave in power-on order (per host, under the assignment
    policy :func:`host_policies` gives the host), each with ``gpu_pin``; VMs the plan does not
    place keep their place at the end."""
    policies = {h: v["policy"] for h, v in host_policies(plan, catalog, pin).items()}
    rank = {}
    for hp in wave_power_on(plan, wave, catalog, pin, policies):
        for k, name in enumerate(hp.order):
            rank[name] = k
    ordered = sorted(items, key=lambda i: (rank.get(i.get("name"), len(rank)),))
    return [{**i, "gpu_pin": bool(pin)} for i in ordered]


def host_policies(plan: dict, catalog: Catalog, pin: bool = False) -> dict[str, dict]:
    """The assignment policy each host needs for all waves of a plan: host -> {"policy": name,
    "unserved_waves": [wave numbers], "problems": [one line per such wave]}. The policy serving
    the most waves wins (``consolidation`` on a tie)."""
    served: dict[str, dict[str, set[int]]] = {}
    needed: dict[str, set[int]] = {}
    for wave in sorted({s["wave"] for s in plan.get("scenarios", [])}):
        for policy in POLICIES:
            for hp in wave_power_on(plan, wave, catalog, pin, policy):
                needed.setdefault(hp.host, set()).add(wave)
                by_policy = served.setdefault(hp.host, {p: set() for p in POLICIES})
                if not hp.problems:
                    by_policy[policy].add(wave)
    out = {}
    for host in sorted(needed):
        by_policy = served[host]
        best = max(POLICIES, key=lambda p: (len(by_policy[p]), p == "consolidation"))
        out[host] = {
            "policy": best,
            "unserved_waves": sorted(needed[host] - by_policy[best]),
            "problems": [
                f"host {host}: under the {best} assignment policy the VMs of wave {w} do not "
                "all land on their planned GPU and slot; pin the vGPUs "
                "(miglab_vgpu_gpu_pin: true) or change the plan"
                for w in sorted(needed[host] - by_policy[best])
            ],
        }
    return out


# --- what ran --------------------------------------------------------------------------------
def normalize_pci_id(value: str) -> str:
    """``00000000:3B:00.0`` (nvidia-smi) and ``0000:3b:00.0`` (vSphere) as one spelling:
    4-digit domain, lower case."""
    text = str(value).strip().lower()
    domain, _, rest = text.rpartition(":")
    head, _, bus = domain.rpartition(":")
    if head:
        head = head[-4:].rjust(4, "0")
        return f"{head}:{bus}:{rest}"
    return f"0000:{text}" if text.count(":") == 1 else text


def placement_mismatches(planned: dict[str, dict], actual: dict[str, dict]) -> list[str]:
    """One line per VM whose vGPU is not where the plan put it. Both map VM name ->
    {"gpu": PCI id, "mig_slot": start or None}; a VM missing from ``actual`` was not found on
    any GPU."""
    out = []
    for vm in sorted(planned):
        want = planned[vm]
        got = actual.get(vm)
        if got is None or got.get("gpu") is None:
            out.append(
                f"{vm}: planned on GPU {want.get('gpu')} slot {want.get('mig_slot')}, "
                "but no GPU of its host holds its vGPU"
            )
            continue
        same_gpu = normalize_pci_id(got["gpu"]) == normalize_pci_id(want["gpu"])
        same_slot = want.get("mig_slot") is None or got.get("mig_slot") == want.get("mig_slot")
        if not (same_gpu and same_slot):
            out.append(
                f"{vm}: planned on GPU {want['gpu']} slot {want.get('mig_slot')}, "
                f"running on GPU {got['gpu']} slot {got.get('mig_slot')}"
            )
    return out


def wave_placement(vm_results: list[dict], host_outputs: dict[str, str]) -> dict:
    """Where each VM of a wave runs, from ``miglab.lab.vgpu_vm``'s ``vms`` result (vCenter's
    GPU per VM, the plan's GPU and slot) and each ESXi host's ``nvidia-smi vgpu -q``, ``mig
    -lgi`` and ``--query-gpu=index,pci.bus_id`` output (:data:`HOST_SECTIONS` apart).

    Returns {"vms": {name: {"gpu", "mig_slot", "planned": {"gpu", "mig_slot"}, "pinned"}},
    "problems": [one line per VM not where the plan put it, or the host and vCenter disagree]}.
    A time-sliced vGPU (no planned MIG slot) the host lists also gets ``gpu_vgpus``: how many
    vGPUs the host's vGPU manager runs on its GPU (the VMs that share it by time slicing; the
    simulated lab's SUT gives each 1/N of the GPU).
    """
    seen: dict[str, dict] = {}
    problems: list[str] = []
    for host, text in sorted(host_outputs.items()):
        parts = text.split(HOST_SECTIONS)
        if len(parts) != 3:
            problems.append(f"host {host}: the nvidia-smi output has not its three parts")
            continue
        try:
            found = vgpu_slots(*parts)
        except HostVgpuError as exc:
            problems.append(f"host {host}: nvidia-smi: {exc}")
            continue
        for vm, where in found.items():
            seen[vm] = {**where, "host": host}
    sharing = Counter((v["host"], normalize_pci_id(v["gpu"])) for v in seen.values())
    out: dict[str, dict] = {}
    planned: dict[str, dict] = {}
    actual: dict[str, dict] = {}
    for r in vm_results:
        p = r.get("placement")
        if not p or not p.get("planned") or p["planned"].get("gpu") is None:
            continue
        name = r["name"]
        host_view = seen.get(name)
        gpu = p.get("gpu") or (host_view or {}).get("gpu")
        if (
            p.get("gpu")
            and host_view
            and normalize_pci_id(host_view["gpu"]) != normalize_pci_id(p["gpu"])
        ):
            problems.append(
                f"{name}: vCenter says GPU {p['gpu']}, the host's nvidia-smi {host_view['gpu']}"
            )
        slot = (host_view or {}).get("mig_slot")
        want = {
            "gpu": normalize_pci_id(p["planned"]["gpu"]),
            "mig_slot": p["planned"].get("mig_slot"),
        }
        got = {"gpu": None if gpu is None else normalize_pci_id(gpu), "mig_slot": slot}
        out[name] = {**got, "planned": want, "pinned": bool(p.get("pinned"))}
        if want["mig_slot"] is None and host_view is not None:
            where = (host_view["host"], normalize_pci_id(host_view["gpu"]))
            out[name]["gpu_vgpus"] = sharing[where]
        if want["mig_slot"] is not None and host_view is None:
            problems.append(f"{name}: no vGPU of this VM in its host's nvidia-smi vgpu -q")
            continue
        planned[name], actual[name] = want, got
    problems += placement_mismatches(planned, {k: v for k, v in actual.items() if v["gpu"]})
    return {"vms": out, "problems": problems}
