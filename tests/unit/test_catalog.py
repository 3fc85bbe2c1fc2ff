"""The GPU catalog: every data file loads, is self-consistent, and names resolve."""

from __future__ import annotations

import pytest

from miglab.core.catalog import MigProfile, TimeSlicedType, UnknownName

REQUIRED = [
    "A100-PCIE-40GB",
    "A100-SXM4-40GB",
    "A100-PCIE-80GB",
    "A100-SXM4-80GB",
    "A30",
    "H100-PCIE-80GB",
    "H100-SXM5-80GB",
    "H100-NVL",
    "H200-NVL",
    "H200-SXM",
]


def test_every_required_gpu_is_in_the_catalog(catalog):
    # the MIG GPUs below; boards without MIG (L40S, ...) are tested in test_catalog_new_boards.py
    assert set(REQUIRED) <= set(catalog.names())


@pytest.mark.parametrize("name", REQUIRED)
def test_gpu_entry_is_consistent(catalog, name):
    g = catalog.get(name)
    assert g.product_names and all(p.startswith("NVIDIA ") or "-" in p for p in g.product_names)
    assert g.pci_device_ids and all(i.startswith("0x") and len(i) == 6 for i in g.pci_device_ids)
    assert g.memory_slices in (4, 8) and g.compute_slices in (4, 7)
    assert g.mmio_gb and g.mmio_gb & (g.mmio_gb - 1) == 0, "MMIO sizes are powers of two"
    ids = [p.id for p in g.profiles]
    assert len(ids) == len(set(ids)), "profile ids are unique"
    full = max(g.profiles, key=lambda p: p.slices)
    assert full.slices == g.compute_slices and full.placement_size == g.memory_slices
    for p in g.profiles:
        assert p.max_instances >= 1 and p.max_instances <= g.compute_slices
        assert p.placements, p.name
        assert all(s >= 0 and s + p.placement_size <= g.memory_slices for s in p.placements)
        assert 0 < p.memory_gib <= full.memory_gib
        assert p.name.split("g.")[0] == str(p.slices), "name says its compute slices"
    for prof, vgpu in g.mig_backed.items():
        assert g.profile(prof).name == prof
        # vCenter shows the driver's type name lower-cased: "GRID A100D-..." -> grid_a100d-...,
        # "NVIDIA H100XM-..." -> nvidia_h100xm-...
        assert vgpu.startswith(("grid_", "nvidia_")) and vgpu == vgpu.lower()
        assert vgpu.startswith(g.type_prefix + "-")
        assert g.find_vgpu(vgpu).name == prof
    for t in g.time_sliced:
        assert (
            t.name.startswith(g.type_prefix + "-")
            and t.framebuffer_gib * t.max_per_gpu <= g.memory_gib + 1
        )


def test_names_resolve_case_insensitively(catalog):
    g = catalog.get("A100-PCIE-80GB")
    for alias in ["a100-pcie-80gb", "NVIDIA A100 80GB PCIe", "0x20B5", "a100d"]:
        assert catalog.get(alias) is g
    assert catalog.get("NVIDIA H200").name == "H200-SXM"


@pytest.mark.parametrize(
    "written, expected",
    [
        ("2g.20gb", "2g.20gb"),
        ("MIG 2g.20gb", "2g.20gb"),
        ("grid_a100d-2-20c", "2g.20gb"),
        ("A100D-2-20C", "2g.20gb"),
        ("nvidia-2-20c", "2g.20gb"),
        ("grid_a100d-7-80c", "7g.80gb"),
        ("grid_a100d-1-10cme", "1g.10gb+me"),
        ("grid_a100d-40c", "grid_a100d-40c"),
        ("A100D-40C", "grid_a100d-40c"),
    ],
)
def test_vgpu_names_resolve(catalog, written, expected):
    v = catalog.get("A100-PCIE-80GB").find_vgpu(written)
    assert v.name == expected
    assert isinstance(v, TimeSlicedType if expected.startswith("grid_") else MigProfile)


def test_another_boards_type_is_not_ours(catalog):
    a100 = catalog.get("A100-PCIE-80GB")
    for name in ["grid_h100-7-80c", "H100-7-80C", "grid_a100-7-40c", "a100dx-2-20c"]:
        with pytest.raises(UnknownName):
            a100.find_vgpu(name)
    assert catalog.get("H100-SXM5-80GB").find_vgpu("nvidia_h100xm-1-10c").name == "1g.10gb"


def test_unknown_names_list_what_is_known(catalog):
    with pytest.raises(UnknownName, match="known: .*A100-PCIE-80GB"):
        catalog.get("B200")
    with pytest.raises(UnknownName, match="1g.10gb"):
        catalog.get("A100-PCIE-80GB").profile("5g.50gb")


def test_profiles_json_shape(catalog):
    data = catalog.get("A100-PCIE-80GB").as_json()
    assert data["gpu"] == "A100-PCIE-80GB"
    one = next(p for p in data["profiles"] if p["name"] == "1g.10gb")
    assert one == {
        "name": "1g.10gb",
        "id": 19,
        "slices": 1,
        "memory_gib": one["memory_gib"],
        "max_instances": 7,
        "placements": [0, 1, 2, 3, 4, 5, 6],
        "placement_size": 1,
    }
    assert isinstance(one["memory_gib"], float)
