"""Where MIG GPU instances land: NVIDIA's placement rules on one GPU, then packing across
GPUs and hosts.

One GPU (``fit``): a GPU instance of profile P starts at one of P's allowed memory slices
(``nvidia-smi mig -lgipp``) and occupies ``placement_size`` consecutive memory slices; instances
never overlap; each profile has a maximum instance count; the compute slices and the engines
(copy engines, NVDEC, NVENC, NVJPG, OFA) of all instances together must not exceed the GPU's.
A sum of slices is not enough: 3g.40gb + 3g.40gb + 1g.10gb has 7 compute slices but no placement,
since both 3g instances occupy four memory slices each.

Several GPUs and hosts (``pack``): one VM per vGPU; MIG-backed vGPUs of any mix share a GPU in MIG
mode, a time-sliced vGPU type needs a GPU of its own type; a host takes VMs while their vCPUs stay
within its (over-commit-aware) CPU capacity and their memory, which vGPU VMs must reserve in full,
within its memory.
"""

from __future__ import annotations

import bisect
import functools
from collections import Counter
from dataclasses import dataclass, field

from miglab.core.catalog import ENGINE_KEYS, GpuModel, MigProfile, TimeSlicedType


# ---------------------------------------------------------------------------------------------
# One GPU
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Instance:
    """A GPU instance of ``profile`` starting at memory slice ``start``."""

    profile: MigProfile
    start: int

    @property
    def end(self) -> int:
        return self.start + self.profile.placement_size

    @property
    def mask(self) -> int:
        return ((1 << self.profile.placement_size) - 1) << self.start


@dataclass(frozen=True)
class GpuLayout:
    """A valid set of GPU instances on one GPU, with what is left."""

    gpu: GpuModel
    instances: tuple[Instance, ...]

    @property
    def used_mask(self) -> int:
        mask = 0
        for i in self.instances:
            mask |= i.mask
        return mask

    @property
    def used_compute(self) -> int:
        return sum(i.profile.slices for i in self.instances)

    @property
    def free_compute(self) -> int:
        return self.gpu.compute_slices - self.used_compute

    @property
    def free_memory_slices(self) -> list[int]:
        return [s for s in range(self.gpu.memory_slices) if not self.used_mask >> s & 1]

    @property
    def free_memory_gib(self) -> float:
        per_slice = self.gpu.memory_gib / self.gpu.memory_slices
        return round(len(self.free_memory_slices) * per_slice, 2)

    def addable(self) -> dict[str, int]:
        """How many more instances of each profile (alone) would still fit."""
        out = {}
        for p in self.gpu.profiles:
            n = 0
            while fit(self.gpu, [p] * (n + 1), self.instances) is not None:
                n += 1
            out[p.name] = n
        return out

    @property
    def fillable_compute(self) -> int:
        """The most compute slices that further instances could still use."""
        return _max_fill(self.gpu, self.used_mask, _counts_key(self.gpu, self.instances))

    @property
    def stranded_compute(self) -> int:
        """Free compute slices no placement can use any more: the cost of fragmentation."""
        return self.free_compute - self.fillable_compute

    def summary(self) -> dict:
        return {
            "instances": [
                {"profile": i.profile.name, "start": i.start, "size": i.profile.placement_size}
                for i in self.instances
            ],
            "free_compute_slices": self.free_compute,
            "free_memory_slices": self.free_memory_slices,
            "free_memory_gib": self.free_memory_gib,
            "stranded_compute_slices": self.stranded_compute,
            "addable": {k: v for k, v in self.addable().items() if v},
        }

    def render(self, label: str = "", names: dict[int, str] | None = None) -> str:
        """A text picture of the memory slices, like Figure 1 of the seed's blog post."""
        return render_map(self, label, names)


def _engine_total(profiles) -> tuple[int, ...]:
    tot = [0] * len(ENGINE_KEYS)
    for p in profiles:
        for k, v in enumerate(p.engines.as_tuple()):
            tot[k] += v
    return tuple(tot)


def count_problems(gpu: GpuModel, profiles: list[MigProfile]) -> list[str]:
    """Rules that need no placement search: instance limits, compute, memory, engines."""
    problems = []
    counts = Counter(p.name for p in profiles)
    by_name = {p.name: p for p in gpu.profiles}
    for name, n in counts.items():
        if n > by_name[name].max_instances:
            problems.append(
                f"{n}x {name} exceeds its maximum of {by_name[name].max_instances} per GPU"
            )
    compute = sum(p.slices for p in profiles)
    if compute > gpu.compute_slices:
        problems.append(f"needs {compute} compute slices, {gpu.name} has {gpu.compute_slices}")
    memory = sum(p.placement_size for p in profiles)
    if memory > gpu.memory_slices:
        problems.append(f"needs {memory} memory slices, {gpu.name} has {gpu.memory_slices}")
    total = _engine_total(profiles)
    for key, have, need in zip(ENGINE_KEYS, gpu.engines.as_tuple(), total, strict=True):
        if need > have:
            problems.append(f"needs {need} {key} engines, {gpu.name} has {have}")
    return problems


def _solutions(gpu: GpuModel, profiles: list[MigProfile], occupied: int):
    """Every placement (start per instance) of ``profiles`` around ``occupied`` slices.

    Profiles are placed biggest first; identical profiles take increasing starts so that each
    set of positions is produced once.
    """
    order = sorted(profiles, key=lambda p: (-p.placement_size, len(p.placements), p.name))

    def rec(k: int, mask: int, prev: tuple[str, int]):
        if k == len(order):
            yield ()
            return
        p = order[k]
        for start in p.placements:
            if prev[0] == p.name and start <= prev[1]:
                continue
            if start + p.placement_size > gpu.memory_slices:
                continue
            m = ((1 << p.placement_size) - 1) << start
            if mask & m:
                continue
            for rest in rec(k + 1, mask | m, (p.name, start)):
                yield (Instance(p, start), *rest)

    yield from rec(0, occupied, ("", -1))


def _counts_key(gpu: GpuModel, instances) -> tuple[int, ...]:
    c = Counter(i.profile.name for i in instances)
    return tuple(c[p.name] for p in gpu.profiles)


@functools.lru_cache(maxsize=65536)
def _max_fill(gpu: GpuModel, mask: int, counts: tuple[int, ...]) -> int:
    """Most compute slices addable on top of ``mask`` with ``counts`` instances already there."""
    used = [p for p, n in zip(gpu.profiles, counts, strict=True) for _ in range(n)]
    free_compute = gpu.compute_slices - sum(p.slices for p in used)
    engines_used = _engine_total(used)
    best = 0
    for k, p in enumerate(gpu.profiles):
        if counts[k] >= p.max_instances or p.slices > free_compute:
            continue
        if any(
            u + e > h
            for u, e, h in zip(
                engines_used, p.engines.as_tuple(), gpu.engines.as_tuple(), strict=True
            )
        ):
            continue
        for start in p.placements:
            m = ((1 << p.placement_size) - 1) << start
            if start + p.placement_size > gpu.memory_slices or mask & m:
                continue
            nxt = counts[:k] + (counts[k] + 1,) + counts[k + 1 :]
            best = max(best, p.slices + _max_fill(gpu, mask | m, nxt))
            if best == free_compute:
                return best
    return best


def _score(layout: GpuLayout) -> tuple:
    """Prefer layouts that keep the most of the GPU usable, then the biggest free block."""
    largest = 0
    mask = layout.used_mask
    for p in layout.gpu.profiles:
        if any(
            not mask & (((1 << p.placement_size) - 1) << s)
            and s + p.placement_size <= layout.gpu.memory_slices
            for s in p.placements
        ):
            largest = max(largest, p.placement_size)
    return (layout.fillable_compute, largest, tuple(i.start for i in layout.instances))


@functools.lru_cache(maxsize=16384)
def _fit_cached(gpu: GpuModel, names: tuple[str, ...], fixed: tuple[Instance, ...]):
    by_name = {p.name: p for p in gpu.profiles}
    profiles = [by_name[n] for n in names]
    everything = [i.profile for i in fixed] + profiles
    if count_problems(gpu, everything):
        return None
    occupied = 0
    for i in fixed:
        occupied |= i.mask
    best = None
    best_score = None
    for sol in _solutions(gpu, profiles, occupied):
        layout = GpuLayout(gpu, tuple(sorted(fixed + sol, key=lambda i: (i.start, i.profile.name))))
        score = _score(layout)
        if best_score is None or score > best_score:
            best, best_score = layout, score
    return best


def fit(
    gpu: GpuModel, profiles: list[MigProfile], fixed: tuple[Instance, ...] = ()
) -> GpuLayout | None:
    """The best valid layout of ``profiles`` (plus already-placed ``fixed``) on one GPU, or None."""
    known = _profile_names(gpu)
    for p in profiles:
        if p.name not in known or known[p.name] is not p:
            raise ValueError(f"{p.name} is not a MIG profile object of {gpu.name}")
    names = tuple(sorted(p.name for p in profiles))
    return _fit_cached(gpu, names, tuple(fixed))


def first_fit_layout(gpu: GpuModel, profiles: list[MigProfile]) -> GpuLayout | None:
    """The layout NVIDIA's vGPU manager makes when VMs with these profiles power on one by one,
    largest profile first: it creates each GPU instance itself at the first free start its
    profile allows (real-lab notes, row V2). None when that order leaves one out."""
    if count_problems(gpu, profiles):
        return None
    mask, out = 0, []
    for p in sorted(profiles, key=lambda p: (-p.placement_size, -p.slices, p.name)):
        start = first_free_start(gpu, p, mask)
        if start is None:
            return None
        mask |= slice_mask(p, start)
        out.append(Instance(p, start))
    return GpuLayout(gpu, tuple(sorted(out, key=lambda i: (i.start, i.profile.name))))


def slice_mask(profile: MigProfile, start: int) -> int:
    """The memory slices (bit i: slice i) a GPU instance of ``profile`` at ``start`` holds."""
    return ((1 << profile.placement_size) - 1) << start


def first_free_start(gpu: GpuModel, profile: MigProfile, used: int) -> int | None:
    """The first start ``profile`` allows whose slices are free in ``used`` (a slice mask): the
    one NVIDIA's vGPU manager picks when it creates the GPU instance (real-lab notes V2)."""
    for start in profile.placements:
        if start + profile.placement_size <= gpu.memory_slices and not used & slice_mask(
            profile, start
        ):
            return start
    return None


@functools.lru_cache(maxsize=256)
def _profile_names(gpu: GpuModel) -> dict[str, MigProfile]:
    return {p.name: p for p in gpu.profiles}


def explain_no_fit(gpu: GpuModel, profiles: list[MigProfile]) -> str:
    """Why ``profiles`` cannot share one GPU, in NVIDIA's terms."""
    problems = count_problems(gpu, profiles)
    if problems:
        return "; ".join(problems)
    return (
        "no placement satisfies NVIDIA's start-slice rules (the instances' memory slices would "
        "overlap: "
        + ", ".join(
            f"{p.name} starts at {{{','.join(map(str, p.placements))}}} size {p.placement_size}"
            for p in sorted(set(profiles), key=lambda p: -p.placement_size)
        )
        + ")"
    )


def render_map(layout: GpuLayout, label: str = "", names: dict[int, str] | None = None) -> str:
    """A text picture of one GPU's memory slices: a ruler, one box per GPU instance and, when
    ``names`` maps an instance's start slice to a label (e.g. its VM), a line of those labels."""
    width = 9
    n = layout.gpu.memory_slices
    pad = " " * len(label)
    ruler = pad + " " + "".join(f"{s:^{width}}" for s in range(n))
    boxes: list[str] = []
    tags: list[str] = []
    pos = 0

    def free_cell():
        boxes.append("[" + "free".center(width - 2) + "]")
        tags.append(" " * width)

    for inst in sorted(layout.instances, key=lambda i: i.start):
        while pos < inst.start:
            free_cell()
            pos += 1
        span = width * inst.profile.placement_size - 2
        boxes.append("[" + inst.profile.name[:span].center(span) + "]")
        tags.append(" " + (names or {}).get(inst.start, "")[:span].center(span) + " ")
        pos = inst.end
    while pos < n:
        free_cell()
        pos += 1
    lines = [ruler, label + " " + "".join(boxes)]
    if names:
        lines.append(pad + " " + "".join(tags).rstrip())
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Several GPUs and hosts
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Host:
    """An ESXi host of the lab: its GPUs (index = nvidia-smi index) and capacity."""

    name: str
    gpus: tuple[GpuModel, ...]
    cpus: int  # logical CPUs
    memory_gb: int
    cpu_overcommit: float = 2.0  # most vCPUs per logical CPU the lab allows
    memory_reserved_gb: int = 32  # kept for ESXi itself
    esxi_version: str | None = None  # the ESXi release it runs ("8.0.3"); None: not known
    vgpu_driver_version: str | None = None  # its NVIDIA host driver ("550.127.06"); None: not known

    @property
    def vcpu_capacity(self) -> int:
        return int(self.cpus * self.cpu_overcommit)

    @property
    def memory_capacity_gb(self) -> int:
        return self.memory_gb - self.memory_reserved_gb


@dataclass(frozen=True)
class Lab:
    hosts: tuple[Host, ...]
    name: str = "lab"
    source: str = "<built-in>"

    def gpu_slots(self) -> list[tuple[str, int]]:
        return [(h.name, i) for h in self.hosts for i in range(len(h.gpus))]

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)


@dataclass(frozen=True)
class VmRequest:
    """One VM of a scenario: one vGPU plus its size."""

    name: str
    vgpu: MigProfile | TimeSlicedType
    vcpus: int
    memory_gb: int


@dataclass(frozen=True)
class VmPlacement:
    vm: VmRequest
    host: str
    gpu_index: int
    start: int | None  # memory slice of the GPU instance; None for time-sliced vGPUs
    vgpu_type: str | None  # None: no vSphere vGPU type known (GPU imported from a capture)


@dataclass
class GpuUse:
    """What one scenario puts on one GPU."""

    host: str
    index: int
    model: GpuModel
    mig: GpuLayout | None = None
    time_sliced: TimeSlicedType | None = None
    vms: list[VmRequest] = field(default_factory=list)

    @property
    def mode(self) -> str:
        return "mig" if self.mig is not None else "time-sliced"


@dataclass
class Packing:
    """Where every VM of one scenario lands."""

    placements: list[VmPlacement]
    gpus: list[GpuUse]
    host_vcpus: dict[str, int]
    host_memory_gb: dict[str, int]

    @property
    def gpu_slots(self) -> set[tuple[str, int]]:
        return {(g.host, g.index) for g in self.gpus}


EXACT_SEARCH_MAX_VMS = 64


class PackError(ValueError):
    """The VMs cannot be placed; the message says what ran out."""


def _vm_sort_key(vm: VmRequest):
    if isinstance(vm.vgpu, MigProfile):
        return (0, -vm.vgpu.placement_size, -vm.vgpu.slices, len(vm.vgpu.placements), vm.name)
    return (1, -vm.vgpu.framebuffer_gib, 0, 0, vm.name)


def pack(
    vms: list[VmRequest],
    lab: Lab,
    *,
    allowed_gpus: set[tuple[str, int]] | None = None,
    host_vcpu_limit: dict[str, int] | None = None,
    host_memory_limit: dict[str, int] | None = None,
    max_gpus: int | None = None,
    node_limit: int = 200_000,
) -> Packing:
    """Place every VM on a (host, GPU), fewest GPUs first; exact backtracking over GPU choice.

    ``allowed_gpus`` restricts the GPUs (e.g. those not busy with a concurrent scenario);
    ``host_vcpu_limit``/``host_memory_limit`` override a host's capacity (used by the scheduler).
    """
    order = sorted(vms, key=_vm_sort_key)
    hosts = {h.name: h for h in lab.hosts}
    slots = [s for s in lab.gpu_slots() if allowed_gpus is None or s in allowed_gpus]
    vcpu_cap = {h.name: h.vcpu_capacity for h in lab.hosts}
    vcpu_cap.update(host_vcpu_limit or {})
    mem_cap = {h.name: h.memory_capacity_gb for h in lab.hosts}
    mem_cap.update(host_memory_limit or {})
    _check_capacity(order, hosts, slots, vcpu_cap, mem_cap)

    search = _PackSearch(order, hosts, slots, vcpu_cap, mem_cap, max_gpus, node_limit)
    if not search.greedy():
        search.clear()
        # Exact search only where it is affordable (greedy handles large scenarios) and where
        # the GPUs' total compute and memory slices could hold the MIG VMs at all (a scheduler
        # trying a scenario on the GPUs left free would otherwise search in vain).
        if (
            len(order) > EXACT_SEARCH_MAX_VMS
            or not _slices_suffice(order, [hosts[h].gpus[i] for h, i in slots], max_gpus)
            or not search.exact(0)
        ):
            raise PackError(_explain_pack_failure(order, lab, slots, vcpu_cap, mem_cap, max_gpus))
    return _packing(search, hosts, slots)


def _check_capacity(order, hosts, slots, vcpu_cap, mem_cap) -> None:
    """Quick, clear reasons before searching: a VM that fits on no GPU/host at all, or more
    vCPUs or reserved memory than the lab allows."""
    # Each GPU model of the slots with the distinct (vCPUs a VM may take, memory) of its hosts,
    # and each kind of VM (vGPU, vCPUs, memory) checked once: a large lab has few of either.
    room_by_model: dict[GpuModel, set[tuple[int, int]]] = {}  # GpuModel: by identity
    for host_name, idx in slots:
        host = hosts[host_name]
        room = (min(vcpu_cap[host_name], host.cpus), mem_cap[host_name])
        room_by_model.setdefault(host.gpus[idx], set()).add(room)
    fits_by_kind: dict[tuple, bool] = {}
    for vm in order:
        kind = (id(vm.vgpu), vm.vcpus, vm.memory_gb)
        if kind not in fits_by_kind:
            fits_by_kind[kind] = any(
                _offers(model, vm.vgpu)
                and any(vm.vcpus <= vcpus and vm.memory_gb <= mem for vcpus, mem in rooms)
                for model, rooms in room_by_model.items()
            )
        if not fits_by_kind[kind]:
            raise PackError(
                f"VM {vm.name} ({_vgpu_name(vm.vgpu)}, {vm.vcpus} vCPUs, {vm.memory_gb} GB) "
                "fits on no GPU/host of the lab"
            )
    need_vcpus = sum(vm.vcpus for vm in order)
    have_vcpus = sum(vcpu_cap[h] for h in {s[0] for s in slots})
    if need_vcpus > have_vcpus:
        raise PackError(f"needs {need_vcpus} vCPUs, the lab allows {have_vcpus}")
    need_mem = sum(vm.memory_gb for vm in order)
    have_mem = sum(mem_cap[h] for h in {s[0] for s in slots})
    if need_mem > have_mem:
        raise PackError(f"needs {need_mem} GB of reserved memory, the lab has {have_mem} GB")


def _offers(model: GpuModel, vgpu: MigProfile | TimeSlicedType) -> bool:
    """Whether a GPU of ``model`` can hold ``vgpu`` at all."""
    if isinstance(vgpu, MigProfile):
        return any(p.name == vgpu.name and p.id == vgpu.id for p in model.profiles)
    return vgpu in model.time_sliced


class _PackSearch:
    """The placement search: which VMs each GPU holds and each host's vCPU and memory use, a
    greedy first fit, and an exact backtracking search over GPU choice.

    Both try, for each VM, the GPUs in use first (in slot order), then one fresh GPU per class
    of alike ones: the first of each model on each host in use, and for hosts not in use yet the
    first host of each (model, CPUs, memory). The classes are kept as lists, so that a VM costs
    the GPUs and hosts in use, not every GPU of the lab.
    """

    def __init__(self, order, hosts, slots, vcpu_cap, mem_cap, max_gpus, node_limit):
        self.order, self.hosts, self.slots = order, hosts, slots
        self.vcpu_cap, self.mem_cap = vcpu_cap, mem_cap
        self.max_gpus, self.node_limit = max_gpus, node_limit
        self.position = {slot: k for k, slot in enumerate(slots)}
        # Each host's GPUs by model name, in slot order (a host's slots are consecutive).
        self.host_gpus: dict[str, dict[str, list[tuple[str, int]]]] = {}
        for slot in slots:
            model_name = hosts[slot[0]].gpus[slot[1]].name
            self.host_gpus.setdefault(slot[0], {}).setdefault(model_name, []).append(slot)
        # Hosts alike for a fresh GPU of a model while not in use, in slot order.
        self.alike_hosts: dict[tuple[str, int, int], list[str]] = {}
        for host_name, by_model in self.host_gpus.items():
            host = hosts[host_name]
            for model_name in by_model:
                key = (model_name, host.cpus, host.memory_gb)
                self.alike_hosts.setdefault(key, []).append(host_name)
        self.clear()
        self.nodes = 0
        # States known to fail. What the remaining VMs can do depends only on which vGPUs each
        # GPU holds and on each host's vCPU and memory use, not on which of two alike VMs went
        # where: without this, an infeasible scenario on a few GPUs retries every permutation.
        self.dead: set[tuple] = set()

    def clear(self) -> None:
        self.gpu: dict[tuple[str, int], list[VmRequest]] = {}
        self.vcpu = dict.fromkeys(self.hosts, 0)
        self.mem = dict.fromkeys(self.hosts, 0)
        self.gpus_in_use: dict[str, int] = {}  # hosts in use: how many of their GPUs hold VMs

    def gpu_accepts(self, slot, vm) -> bool:
        model = self.hosts[slot[0]].gpus[slot[1]]
        current = self.gpu.get(slot, [])
        if isinstance(vm.vgpu, MigProfile):
            if any(not isinstance(v.vgpu, MigProfile) for v in current):
                return False
            return fit(model, [v.vgpu for v in current] + [vm.vgpu]) is not None
        if vm.vgpu not in model.time_sliced:
            return False
        if any(v.vgpu != vm.vgpu for v in current):
            return False
        return len(current) < vm.vgpu.max_per_gpu

    def host_accepts(self, host_name, vm) -> bool:
        return (
            self.vcpu[host_name] + vm.vcpus <= self.vcpu_cap[host_name]
            and self.mem[host_name] + vm.memory_gb <= self.mem_cap[host_name]
        )

    def gpus_allowed_more(self) -> bool:
        return self.max_gpus is None or len(self.gpu) < self.max_gpus

    def candidates(self) -> list[tuple[str, int]]:
        """GPUs already used by the scenario first, then one fresh GPU per equivalence class
        (same model on a host in the same state: trying a second one cannot help)."""
        used = sorted(self.gpu, key=self.position.__getitem__)
        if not self.gpus_allowed_more():
            return used
        fresh = []
        for host_name in self.gpus_in_use:
            for gpus in self.host_gpus[host_name].values():
                slot = next((s for s in gpus if s not in self.gpu), None)
                if slot is not None:
                    fresh.append(slot)
        for (model_name, _, _), names in self.alike_hosts.items():
            host_name = next((h for h in names if h not in self.gpus_in_use), None)
            if host_name is not None:
                fresh.append(self.host_gpus[host_name][model_name][0])
        return used + sorted(fresh, key=self.position.__getitem__)

    def place(self, slot, vm) -> None:
        if slot not in self.gpu:
            self.gpu[slot] = []
            self.gpus_in_use[slot[0]] = self.gpus_in_use.get(slot[0], 0) + 1
        self.gpu[slot].append(vm)
        self.vcpu[slot[0]] += vm.vcpus
        self.mem[slot[0]] += vm.memory_gb

    def unplace(self, slot, vm) -> None:
        self.gpu[slot].remove(vm)
        if not self.gpu[slot]:
            del self.gpu[slot]
            self.gpus_in_use[slot[0]] -= 1
            if not self.gpus_in_use[slot[0]]:
                del self.gpus_in_use[slot[0]]
        self.vcpu[slot[0]] -= vm.vcpus
        self.mem[slot[0]] -= vm.memory_gb

    def greedy(self) -> bool:
        """First fit, biggest vGPUs first, over the candidates in the exact search's order.

        Placing only adds, which keeps large labs fast: a GPU that refused a profile refuses it
        again later (its instances only grow), so each profile keeps the positions of the GPUs
        in use that have not refused it; and a GPU or host in use stays in use, so each host and
        class of alike hosts keeps a pointer to its first one that may still be fresh.
        """
        refused: set[tuple] = set()
        used_positions: list[int] = []  # sorted
        open_to: dict[str, list[int]] = {}  # profile -> sorted positions of GPUs not refusing it
        fresh_pointer: dict[tuple, int] = {}  # (host, model) or an alike class -> list index
        roomy_hosts: dict[str, None] = {}  # hosts in use that may still have a fresh GPU

        def first_fresh(items: list, key: tuple, taken) -> int:
            k = fresh_pointer.get(key, 0)
            while k < len(items) and items[k] in taken:
                k += 1
            fresh_pointer[key] = k
            return k

        def fresh_gpus() -> list[tuple[str, int]]:
            fresh = []
            for host_name in list(roomy_hosts):
                found = False
                for model_name, gpus in self.host_gpus[host_name].items():
                    k = first_fresh(gpus, (host_name, model_name), self.gpu)
                    if k < len(gpus):
                        fresh.append(gpus[k])
                        found = True
                if not found:
                    del roomy_hosts[host_name]
            for key, names in self.alike_hosts.items():
                k = first_fresh(names, key, self.gpus_in_use)
                if k < len(names):
                    fresh.append(self.host_gpus[names[k]][key[0]][0])
            return sorted(fresh, key=self.position.__getitem__)

        for vm in self.order:
            name = vm.vgpu.name
            if name not in open_to:
                open_to[name] = [p for p in used_positions if (self.slots[p], name) not in refused]
            chosen = None
            now_refusing = set()
            for p in open_to[name]:
                slot = self.slots[p]
                if not self.host_accepts(slot[0], vm):
                    continue
                if self.gpu_accepts(slot, vm):
                    chosen = slot
                    break
                refused.add((slot, name))
                now_refusing.add(p)
            if now_refusing:
                open_to[name] = [p for p in open_to[name] if p not in now_refusing]
            if chosen is None and self.gpus_allowed_more():
                for slot in fresh_gpus():
                    if (slot, name) in refused or not self.host_accepts(slot[0], vm):
                        continue
                    if self.gpu_accepts(slot, vm):
                        chosen = slot
                        break
                    refused.add((slot, name))
                if chosen is not None:
                    # A fresh GPU now in use: open to every profile it has not refused.
                    p = self.position[chosen]
                    bisect.insort(used_positions, p)
                    for profile, positions in open_to.items():
                        if (chosen, profile) not in refused:
                            bisect.insort(positions, p)
                    roomy_hosts[chosen[0]] = None
            if chosen is None:
                return False
            self.place(chosen, vm)
        return True

    def _state_key(self, k: int) -> tuple:
        gpus_key = tuple(
            sorted(
                (slot, tuple(sorted(_vgpu_name(v.vgpu) for v in vms)))
                for slot, vms in self.gpu.items()
            )
        )
        # Hosts not in use (which gpus_key tells) have no vCPUs or memory taken.
        in_use = sorted(self.gpus_in_use)
        return (
            k,
            gpus_key,
            tuple((h, self.vcpu[h]) for h in in_use),
            tuple((h, self.mem[h]) for h in in_use),
        )

    def exact(self, k: int) -> bool:
        if k == len(self.order):
            return True
        key = self._state_key(k)
        if key in self.dead:
            return False
        self.nodes += 1
        if self.nodes > self.node_limit:
            raise PackError(f"placement search gave up after {self.node_limit} steps")
        vm = self.order[k]
        for slot in self.candidates():
            if self.host_accepts(slot[0], vm) and self.gpu_accepts(slot, vm):
                self.place(slot, vm)
                if self.exact(k + 1):
                    return True
                self.unplace(slot, vm)
        self.dead.add(key)
        return False


def _packing(search: _PackSearch, hosts, slots) -> Packing:
    """The result of a finished search: each GPU's MIG layout (the one first fit gives when its
    VMs power on largest first, where it exists; starts handed to VMs of a profile in VM-name
    order) or time-sliced type, and each VM's placement."""
    placements: list[VmPlacement] = []
    gpus: list[GpuUse] = []
    for slot in slots:
        if slot not in search.gpu:
            continue
        model = hosts[slot[0]].gpus[slot[1]]
        members = search.gpu[slot]
        use = GpuUse(slot[0], slot[1], model, vms=list(members))
        if isinstance(members[0].vgpu, MigProfile):
            # The layout powering on largest first gives, where it exists: the vGPU manager,
            # not miglab, picks each instance's start (row V2); else the best one.
            profiles = [v.vgpu for v in members]
            layout = first_fit_layout(model, profiles) or fit(model, profiles)
            assert layout is not None  # accepted by the search
            use.mig = layout
            starts: dict[str, list[int]] = {}
            for inst in layout.instances:
                starts.setdefault(inst.profile.name, []).append(inst.start)
            for vm in sorted(members, key=lambda v: v.name):
                start = starts[vm.vgpu.name].pop(0)
                placements.append(
                    VmPlacement(vm, slot[0], slot[1], start, model.vgpu_type(vm.vgpu))
                )
        else:
            use.time_sliced = members[0].vgpu
            for vm in sorted(members, key=lambda v: v.name):
                placements.append(VmPlacement(vm, slot[0], slot[1], None, vm.vgpu.name))
        gpus.append(use)
    placements.sort(key=lambda p: p.vm.name)
    return Packing(
        placements,
        gpus,
        {h: v for h, v in search.vcpu.items() if v},
        {h: v for h, v in search.mem.items() if v},
    )


def _slices_suffice(order: list[VmRequest], models: list[GpuModel], max_gpus: int | None) -> bool:
    """Whether the MIG VMs' compute and memory slices fit in those of the best ``max_gpus``
    GPUs: a necessary condition only (placement rules may still refuse)."""
    mig = [vm.vgpu for vm in order if isinstance(vm.vgpu, MigProfile)]
    if not mig:
        return True
    usable = [m for m in models if m.profiles]
    if max_gpus is not None:
        usable_compute = sorted((m.compute_slices for m in usable), reverse=True)[:max_gpus]
        usable_memory = sorted((m.memory_slices for m in usable), reverse=True)[:max_gpus]
    else:
        usable_compute = [m.compute_slices for m in usable]
        usable_memory = [m.memory_slices for m in usable]
    return sum(p.slices for p in mig) <= sum(usable_compute) and sum(
        p.placement_size for p in mig
    ) <= sum(usable_memory)


def _vgpu_name(v: MigProfile | TimeSlicedType) -> str:
    return v.name


def _explain_pack_failure(order, lab, slots, vcpu_cap, mem_cap, max_gpus) -> str:
    mig = [vm.vgpu for vm in order if isinstance(vm.vgpu, MigProfile)]
    first_host: dict[str, Host] = {}  # as lab.host() finds it, without a scan per GPU
    for h in lab.hosts:
        first_host.setdefault(h.name, h)
    models = {first_host[h].gpus[i] for h, i in slots}
    if max_gpus == 1 and len(models) == 1 and mig and len(mig) == len(order):
        model = next(iter(models))
        return f"cannot share one {model.name}: " + explain_no_fit(model, mig)
    desc = ", ".join(f"{n}x {name}" for name, n in Counter(v.vgpu.name for v in order).items())
    where = f"{len(slots)} GPU(s)" + (f", at most {max_gpus} for this scenario" if max_gpus else "")
    return (
        f"{desc} do not fit on {where} under NVIDIA's placement rules and the hosts' vCPU/memory "
        f"capacity (vCPUs {sum(v.vcpus for v in order)} of {sum(vcpu_cap[h] for h in vcpu_cap)}, "
        f"memory {sum(v.memory_gb for v in order)} of {sum(mem_cap[h] for h in mem_cap)} GB)"
    )
