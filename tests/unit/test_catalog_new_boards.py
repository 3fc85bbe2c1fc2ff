"""The catalog's boards without MIG (L40S, L4, A40, A16, A10): they load, their names resolve, their
time-sliced types fit the GPU, and every board's version data (vgpu.since, vgpu.type_since) is
well formed."""

from __future__ import annotations

import pytest

from miglab.core.catalog import Catalog, TimeSlicedType, UnknownName, model_from_dict
from miglab.core.vgpu_versions import Availability

# board: (product name, PCI device id, memory GiB, vSphere type prefix, C-series sizes in GiB,
#         MMIO GB or None when NVIDIA documents none) -- NVIDIA AI Enterprise 6 type tables
BOARDS = {
    "L40S": ("NVIDIA L40S", "0x26b9", 48, "nvidia_l40s", [4, 6, 8, 12, 16, 24, 48], None),
    "L4": ("NVIDIA L4", "0x27b8", 24, "nvidia_l4", [4, 6, 8, 12, 24], 64),
    "A40": ("NVIDIA A40", "0x2235", 48, "nvidia_a40", [4, 6, 8, 12, 16, 24, 48], 128),
    "A16": ("NVIDIA A16", "0x25b6", 16, "nvidia_a16", [4, 8, 16], 64),
    "A10": ("NVIDIA A10", "0x2236", 24, "nvidia_a10", [4, 6, 8, 12, 24], 64),
}


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_board_loads_without_mig(catalog, name):
    product, pci, memory, prefix, sizes, mmio = BOARDS[name]
    g = catalog.get(name)
    assert g.product_names == (product,) and g.pci_device_ids == (pci,)
    assert g.memory_gib == memory and g.mmio_gb == mmio
    assert g.profiles == () and g.mig_backed == {} and g.memory_slices == g.compute_slices == 0
    assert g.type_prefix == prefix
    assert [t.framebuffer_gib for t in g.time_sliced] == sizes
    assert all(t.name == f"{prefix}-{int(t.framebuffer_gib)}c" for t in g.time_sliced)


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_board_names_resolve(catalog, name):
    product, pci, _, _, _, _ = BOARDS[name]
    g = catalog.get(name)
    for alias in (product, product.removeprefix("NVIDIA "), pci, pci.upper(), name.lower()):
        assert catalog.get(alias) is g, alias


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_time_sliced_types_fit_the_gpu(catalog, name):
    g = catalog.get(name)
    for t in g.time_sliced:
        assert t.framebuffer_gib * t.max_per_gpu <= g.memory_gib, t.name
    assert g.time_sliced[-1].framebuffer_gib == g.memory_gib
    assert g.time_sliced[-1].max_per_gpu == 1


@pytest.mark.parametrize(
    "written", ["nvidia_l40s-48c", "NVIDIA_L40S-48C", "L40S-48C", "48c", "NVIDIA L40S-48C"]
)
def test_l40s_type_names_resolve(catalog, written):
    t = catalog.get("L40S").find_vgpu(written)
    assert isinstance(t, TimeSlicedType) and t.name == "nvidia_l40s-48c"
    assert t.framebuffer_gib == 48 and t.max_per_gpu == 1


def test_l40s_small_types(catalog):
    g = catalog.get("L40S")
    assert g.find_vgpu("4c").max_per_gpu == 12  # NVIDIA's cap of 12 C-series vGPUs per GPU
    assert g.find_vgpu("L40S-24C").max_per_gpu == 2
    with pytest.raises(UnknownName):
        g.find_vgpu("nvidia_l40s-1c")
    with pytest.raises(UnknownName):
        g.find_vgpu("1g.6gb")  # no MIG
    with pytest.raises(UnknownName):
        g.profile("nvidia_l40s-48c")  # a time-sliced type is no MIG profile


def test_another_boards_type_is_not_ours(catalog):
    with pytest.raises(UnknownName):
        catalog.get("L4").find_vgpu("nvidia_l40s-24c")
    with pytest.raises(UnknownName):
        catalog.get("A10").find_vgpu("grid_a100-10c")


def test_a16_is_modelled_per_gpu(catalog):
    g = catalog.get("A16")
    assert g.memory_gib == 16 and g.find_vgpu("A16-16C").max_per_gpu == 1


def test_loader_accepts_a_gpu_without_mig_or_vgpu_data():
    g = model_from_dict({"name": "X1", "memory_gib": 8})
    assert g.profiles == () and g.mig_backed == {} and g.time_sliced == () and g.mmio_gb is None
    assert g.since == Availability() and g.type_since == {}
    cat = Catalog([g])
    assert cat.get("x1") is g
    with pytest.raises(UnknownName):
        g.find_vgpu("1c")


def test_every_type_since_names_a_type_of_its_board(catalog):
    for g in catalog:
        types = {t.lower() for t in g.mig_backed.values()} | {t.name.lower() for t in g.time_sliced}
        assert set(g.type_since) <= types, g.name
        for a in [g.since, *g.type_since.values()]:
            assert a.source or not a.known, g.name


def test_the_vsphere_8u3_types_need_8u3(catalog):
    # NVIDIA's footnote: the CME and double-memory 1g types run on ESXi only from vSphere 8.0 U3
    for board, vgpu in [
        ("A100-PCIE-80GB", "grid_a100d-1-10cme"),
        ("A100-PCIE-80GB", "1g.20gb"),
        ("A100-PCIE-40GB", "1g.10gb"),
        ("A30", "nvidia_a30-2-12cme"),
        ("H100-NVL", "nvidia_h100l-1-24c"),
        ("H200-NVL", "1g.18gb+me"),
    ]:
        assert catalog.get(board).availability(vgpu).vsphere_min == (8, 0, 3), (board, vgpu)
    assert catalog.get("A100-PCIE-80GB").availability("1g.10gb").vsphere_min is None
    assert catalog.get("A100-PCIE-40GB").availability("1g.5gb").vsphere_min is None


def test_type_since_overrides_the_board(catalog):
    h = catalog.get("H100-NVL")
    own = h.availability("nvidia_h100l-1-12cme")
    assert own.vsphere_min == (8, 0, 3) and own.vgpu_software_min == (15, 0)
    assert h.availability("3g.47gb").vsphere_min is None
    assert h.availability("3g.47gb").vgpu_software_min == (15, 0)
    assert catalog.get("A10").availability("nvidia_a10-24c").vgpu_software_min == (12, 2)


@pytest.mark.parametrize(
    "vgpu, words",
    [
        ({"since": {"vsphere": "eight"}}, "is not an ESXi release"),
        ({"since": {"vgpu_software": "R550"}}, "is not an NVIDIA vGPU software release"),
        ({"since": {"esxi": "8.0"}}, "unknown key"),
        ({"since": "8.0"}, "must be a mapping"),
        ({"type_since": {"nvidia_x-9c": {"vsphere": "8.0.3"}}}, "is not a vGPU type of it"),
    ],
)
def test_bad_version_data_is_refused(vgpu, words):
    data = {
        "name": "X1",
        "memory_gib": 8,
        "vgpu": {"type_prefix": "nvidia_x", "time_sliced": [], **vgpu},
    }
    with pytest.raises(ValueError, match=words):
        model_from_dict(data)
