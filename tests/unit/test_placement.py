"""Placement on one GPU against NVIDIA's documented combinations and an independent brute force;
packing across GPUs and hosts."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miglab.core.placement import Host, Lab, PackError, VmRequest, count_problems, fit, pack

# NVIDIA MIG User Guide, "A100 MIG profiles" combination diagram (A100 80GB: same shape as 40GB).
A100_VALID = [
    ["7g.80gb"],
    ["4g.40gb", "3g.40gb"],
    ["4g.40gb", "2g.20gb", "1g.10gb"],
    ["4g.40gb", "1g.10gb", "1g.10gb", "1g.10gb"],
    ["3g.40gb", "3g.40gb"],
    ["3g.40gb", "2g.20gb", "1g.10gb"],
    ["3g.40gb", "1g.10gb", "1g.10gb", "1g.10gb"],
    ["2g.20gb", "2g.20gb", "2g.20gb", "1g.10gb"],
    ["2g.20gb", "2g.20gb", "1g.10gb", "1g.10gb", "1g.10gb"],
    ["1g.10gb"] * 7,
    ["1g.20gb"] * 4,
    ["1g.10gb+me", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"],
]
A100_INVALID = [
    (["4g.40gb", "4g.40gb"], "maximum of 1"),
    (["3g.40gb", "3g.40gb", "1g.10gb"], "memory slices"),  # 7 compute slices, still no room
    (["1g.10gb"] * 8, "maximum of 7"),
    (["7g.80gb", "1g.10gb"], "compute slices"),
    (["4g.40gb", "3g.40gb", "1g.10gb"], "compute slices"),
    (["2g.20gb"] * 4, "maximum of 3"),
    (["1g.10gb+me", "1g.10gb+me"], "maximum of 1"),
    (["1g.20gb"] * 4 + ["1g.10gb"], "memory slices"),
]
# The same shapes on H200 141GB (profile names from a real `nvidia-smi mig -lgip` capture).
H200_VALID = [
    ["7g.141gb"],
    ["4g.71gb", "3g.71gb"],
    ["4g.71gb", "2g.35gb", "1g.18gb"],
    ["2g.35gb", "2g.35gb", "2g.35gb", "1g.18gb"],
    ["1g.18gb"] * 7,
    ["1g.35gb"] * 4,
]
H200_INVALID = [
    ["4g.71gb", "4g.71gb"],
    ["3g.71gb", "3g.71gb", "1g.18gb"],
    ["1g.18gb"] * 8,
    ["7g.141gb", "1g.18gb"],
]


def _profiles(g, names):
    return [g.profile(n) for n in names]


def _assert_valid_layout(g, layout, names):
    assert sorted(i.profile.name for i in layout.instances) == sorted(names)
    cells = set()
    for inst in layout.instances:
        assert inst.start in inst.profile.placements
        mine = set(range(inst.start, inst.end))
        assert not mine & cells and max(mine) < g.memory_slices
        cells |= mine


@pytest.mark.parametrize("names", A100_VALID, ids=lambda n: "+".join(n))
def test_a100_documented_valid_combinations_fit(catalog, names):
    g = catalog.get("A100-PCIE-80GB")
    layout = fit(g, _profiles(g, names))
    assert layout is not None
    _assert_valid_layout(g, layout, names)


@pytest.mark.parametrize("names, reason", A100_INVALID, ids=lambda x: str(x))
def test_a100_documented_invalid_combinations_do_not_fit(catalog, names, reason):
    from miglab.core.placement import explain_no_fit

    g = catalog.get("A100-PCIE-80GB")
    assert fit(g, _profiles(g, names)) is None
    assert reason in explain_no_fit(g, _profiles(g, names))


@pytest.mark.parametrize("names", H200_VALID, ids=lambda n: "+".join(n))
def test_h200_valid(catalog, names):
    g = catalog.get("H200-SXM")
    layout = fit(g, _profiles(g, names))
    assert layout is not None
    _assert_valid_layout(g, layout, names)


@pytest.mark.parametrize("names", H200_INVALID, ids=lambda n: "+".join(n))
def test_h200_invalid(catalog, names):
    g = catalog.get("H200-SXM")
    assert fit(g, _profiles(g, names)) is None


def test_fragmentation_is_measured(catalog):
    g = catalog.get("A100-PCIE-80GB")
    one_3g = fit(g, _profiles(g, ["3g.40gb"]))
    # 3g.40gb goes where a 4g.40gb still fits next to it.
    assert [i.start for i in one_3g.instances] == [4]
    assert one_3g.addable()["4g.40gb"] == 1
    two_3g = fit(g, _profiles(g, ["3g.40gb", "3g.40gb"]))
    assert two_3g.free_compute == 1 and two_3g.stranded_compute == 1
    assert fit(g, _profiles(g, ["1g.10gb"])).instances[0].start == 6


def test_fixed_instances_are_respected(catalog):
    g = catalog.get("A100-PCIE-80GB")
    first = fit(g, _profiles(g, ["1g.10gb"]))
    more = fit(g, _profiles(g, ["4g.40gb"]), fixed=first.instances)
    assert more is not None and len(more.instances) == 2


# --- independent brute force -------------------------------------------------------------------
def brute_force_fits(g, profiles) -> bool:
    """Naive re-statement of NVIDIA's rules: limits, engines, then every order of every start."""
    from collections import Counter

    for name, n in Counter(p.name for p in profiles).items():
        if n > next(p for p in g.profiles if p.name == name).max_instances:
            return False
    if sum(p.slices for p in profiles) > g.compute_slices:
        return False
    for key in ("copy", "decoders", "encoders", "jpeg", "ofa"):
        if sum(getattr(p.engines, key) for p in profiles) > getattr(g.engines, key):
            return False

    def place(rest, used):
        if not rest:
            return True
        p = rest[0]
        for s in p.placements:
            cells = set(range(s, s + p.placement_size))
            if max(cells) < g.memory_slices and not cells & used and place(rest[1:], used | cells):
                return True
        return False

    return place(list(profiles), frozenset())


GPUS = ["A100-PCIE-40GB", "A100-PCIE-80GB", "A30", "H100-SXM5-80GB", "H200-SXM", "H200-NVL"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), gpu=st.sampled_from(GPUS))
def test_fit_agrees_with_brute_force(catalog, data, gpu):
    g = catalog.get(gpu)
    profiles = data.draw(st.lists(st.sampled_from(g.profiles), min_size=1, max_size=8))
    layout = fit(g, profiles)
    assert (layout is not None) == brute_force_fits(g, profiles)
    if layout is not None:
        _assert_valid_layout(g, layout, [p.name for p in profiles])
        assert not count_problems(g, profiles)


# --- several GPUs and hosts ---------------------------------------------------------------------
def _lab(catalog, hosts=1, gpus=4, cpus=128, mem=1024, overcommit=2.0, model="A100-PCIE-80GB"):
    g = catalog.get(model)
    return Lab(tuple(Host(f"esx{i}", (g,) * gpus, cpus, mem, overcommit, 32) for i in range(hosts)))


def _vms(g, name, n, vcpus=32, mem=64):
    return [VmRequest(f"vm{k}-{name}", g.find_vgpu(name), vcpus, mem) for k in range(n)]


def test_28_1g_vms_fill_4_gpus(catalog):
    lab = _lab(catalog, overcommit=8.0, mem=4096)
    g = catalog.get("A100-PCIE-80GB")
    packing = pack(_vms(g, "1g.10gb", 28, vcpus=8), lab)
    assert len(packing.gpus) == 4
    assert all(len(u.vms) == 7 for u in packing.gpus)
    with pytest.raises(PackError):
        pack(_vms(g, "1g.10gb", 29, vcpus=8), lab)


def test_fewest_gpus_and_mixed_profiles(catalog):
    g = catalog.get("A100-PCIE-80GB")
    vms = _vms(g, "4g.40gb", 2) + _vms(g, "3g.40gb", 2)
    packing = pack(vms, _lab(catalog))
    assert len(packing.gpus) == 2  # 4g+3g twice, not four GPUs


def test_host_cpu_and_memory_capacity_are_honoured(catalog):
    g = catalog.get("A100-PCIE-80GB")
    lab = _lab(catalog, hosts=2, cpus=64, overcommit=1.0, mem=256)
    # 3 VMs of 32 vCPUs: one host takes 2 (64 CPUs), so the third goes to the other host.
    packing = pack(_vms(g, "1g.10gb", 3), lab)
    assert packing.host_vcpus == {"esx0": 64, "esx1": 32}
    with pytest.raises(PackError, match="vCPUs"):
        pack(_vms(g, "1g.10gb", 5), lab)
    with pytest.raises(PackError, match="memory"):
        pack(_vms(g, "1g.10gb", 2, vcpus=1, mem=200), _lab(catalog, hosts=1, mem=256))


def test_time_sliced_vgpus_need_their_own_gpu(catalog):
    g = catalog.get("A100-PCIE-80GB")
    vms = _vms(g, "grid_a100d-20c", 5, vcpus=4) + _vms(g, "1g.10gb", 1, vcpus=4)
    packing = pack(vms, _lab(catalog))
    modes = sorted(u.mode for u in packing.gpus)
    assert modes == ["mig", "time-sliced", "time-sliced"]  # 4 + 1 time-sliced, MIG apart


def test_max_gpus_limits_a_scenario(catalog):
    g = catalog.get("A100-PCIE-80GB")
    with pytest.raises(PackError, match="cannot share one A100-PCIE-80GB"):
        pack(_vms(g, "4g.40gb", 2), _lab(catalog), max_gpus=1)


def test_a_scenario_too_big_for_the_free_gpus_is_refused_without_searching(catalog):
    # More compute slices than the GPUs have: refused by the slice count, before the search
    # (a scheduler asks this for every GPU left free; it once searched until the step limit).
    g = catalog.get("A100-PCIE-80GB")
    lab = _lab(catalog, gpus=2, overcommit=8.0, mem=4096)
    with pytest.raises(PackError, match="do not fit on 2 GPU"):
        pack(_vms(g, "1g.10gb", 15, vcpus=4), lab, node_limit=50)


def test_alike_vms_are_not_tried_in_every_order(catalog):
    # 13x 2g.20gb on 4 GPUs: the slices suffice (26 of 28 compute) but at most 3 fit per GPU.
    # The search remembers failed states: under 300 steps (it took over 10,000 trying every
    # order of alike VMs).
    g = catalog.get("A100-PCIE-80GB")
    lab = _lab(catalog, gpus=4, overcommit=8.0, mem=4096)
    with pytest.raises(PackError, match="do not fit on 4 GPU"):
        pack(_vms(g, "2g.20gb", 13, vcpus=4), lab, node_limit=300)


class _CountedHost(Host):
    """A host that counts how often packing reads it: a measure of work, not of time."""

    reads = 0

    def __getattribute__(self, name):
        _CountedHost.reads += 1
        return super().__getattribute__(name)


class _CountedVm(VmRequest):
    reads = 0

    def __getattribute__(self, name):
        _CountedVm.reads += 1
        return super().__getattribute__(name)


def _counted_lab(catalog, hosts: int, gpus: int) -> Lab:
    g = catalog.get("A100-PCIE-80GB")
    return Lab(tuple(_CountedHost(f"esx{i}", (g,) * gpus, 128, 1024) for i in range(hosts)))


def test_packing_a_large_lab_looks_at_each_gpu_and_vm_a_few_times(catalog):
    # 200 VMs on 100 hosts x 8 GPUs: the work grows with GPUs + VMs, not GPUs x VMs (the
    # capacity check and the fresh-GPU candidates once read every GPU's host for every VM:
    # over 300,000 host reads and 4,800 reads per VM here; 5,600 VMs took seconds).
    g = catalog.get("A100-PCIE-80GB")
    lab = _counted_lab(catalog, 100, 8)
    vms = [_CountedVm(f"vm{k:03d}", g.find_vgpu("1g.10gb"), 4, 16) for k in range(200)]
    _CountedHost.reads = _CountedVm.reads = 0
    packing = pack(vms, lab)
    assert len(packing.gpus) == 29  # 7 per GPU, fewest GPUs first
    assert _CountedHost.reads <= 20 * 800
    assert _CountedVm.reads <= 100 * len(vms)


def test_the_exact_search_on_a_large_lab_tries_alike_hosts_once(catalog):
    # 13x 2g.20gb on at most 4 of 800 GPUs: greedy fails, the exact search runs to its step
    # limit. Each step looks at the hosts in use and one host per kind of the others, not at
    # every GPU of the lab (it once read the hosts over 360,000 times for this).
    g = catalog.get("A100-PCIE-80GB")
    lab = _counted_lab(catalog, 100, 8)
    _CountedHost.reads = 0
    with pytest.raises(PackError, match="gave up after 300 steps"):
        pack(_vms(g, "2g.20gb", 13, vcpus=4), lab, max_gpus=4, node_limit=300)
    assert _CountedHost.reads <= 20 * 800


def test_render_map_shows_every_slice(catalog):
    g = catalog.get("A100-PCIE-80GB")
    text = fit(g, _profiles(g, ["4g.40gb", "2g.20gb", "1g.10gb"])).render("GPU0", {0: "vm1"})
    ruler, boxes, names = text.splitlines()
    assert ruler.split() == [str(i) for i in range(8)]
    assert "4g.40gb" in boxes and "2g.20gb" in boxes and "free" in boxes
    assert "vm1" in names
