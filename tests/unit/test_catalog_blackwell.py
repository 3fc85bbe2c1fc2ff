"""Blackwell boards (issue 19): NVIDIA publishes their MIG profiles but no placements, so the
catalog carries none of them yet (SOURCES.md section 8). Pinned here: their names do not resolve
and point to `miglab gpu import-mig`, their published `nvidia-smi mig -lgip` values parse, an import
without `-lgipp` is refused, and every MIG board the catalog does carry (a Blackwell entry added
later from a real capture included) has start lists that fit its memory slices."""

from __future__ import annotations

import pytest

from miglab.core.catalog import UnknownName
from miglab.core.importers import model_from_capture
from miglab.core.placement import fit
from miglab.errors import ValidationError
from miglab.formats.nvsmi import parse_mig_profiles

# board: (nvidia-smi product name [ogkm-bw], PCI device id [pciids-bw, mig-parted-bw])
BLACKWELL = {
    "B200": ("NVIDIA B200", "0x2901"),
    "RTX PRO 6000 Blackwell Server Edition": (
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "0x2bb5",
    ),
    "GB200": ("NVIDIA GB200", "0x2941"),
}

# `nvidia-smi mig -lgip` values as published, re-typed row by row:
# (name, id, instances, memory GiB, SM, DEC, ENC, CE, JPEG, OFA)
# B200: the NVIDIA maintainer's output in mig-parted PR #166 (the rows the stored copy holds)
B200_LGIP = [
    ("1g.23gb", 19, 7, "22.00", 18, 1, 0, 2, 1, 0),
    ("1g.23gb+me", 20, 1, "22.00", 18, 1, 0, 2, 1, 1),
    ("1g.45gb", 15, 4, "44.25", 30, 1, 0, 2, 1, 0),
    ("2g.45gb", 14, 3, "44.25", 36, 2, 0, 4, 2, 0),
]
# RTX PRO 6000 Blackwell Server Edition: bigstack-oss/cubecos issue #312 (driver 580.105.06)
RTX_PRO_6000_LGIP = [
    ("1g.24gb", 14, 4, "23.12", 46, 1, 1, 1, 1, 0),
    ("1g.24gb+me", 21, 1, "23.12", 46, 1, 1, 1, 1, 1),
    ("1g.24gb+gfx", 47, 4, "23.12", 46, 1, 1, 1, 1, 0),
    ("2g.48gb", 5, 2, "46.50", 94, 2, 2, 2, 2, 0),
    ("2g.48gb+gfx", 35, 2, "46.50", 94, 2, 2, 2, 2, 0),
    ("2g.48gb+me.all", 64, 1, "46.50", 94, 4, 4, 2, 4, 1),
    ("2g.48gb-me", 66, 2, "46.50", 94, 0, 0, 2, 0, 0),
    ("4g.96gb", 0, 1, "93.38", 188, 4, 4, 4, 4, 1),
]


def _lgip(rows) -> str:
    """An `nvidia-smi mig -lgip` table (81-column layout) holding ``rows`` of GPU 0."""
    bar = "+" + "-" * 79 + "+"
    out = [
        bar,
        "| GPU instance profiles:".ljust(80) + "|",
        "| GPU   Name               ID    Instances   Memory     P2P    SM    DEC   ENC  |",
        "|                                Free/Total   GiB              CE    JPEG  OFA  |",
        "|" + "=" * 79 + "|",
    ]
    for name, pid, n, mem, sm, dec, enc, ce, jpeg, ofa in rows:
        row1 = f"|   0  MIG {name:<18}{pid:>3}     {n}/{n}        {mem:<10} No     "
        out.append(f"{row1}{sm:<6}{dec:<6}{enc:<3}|")
        out.append(f"|{'':<62}{ce:<6}{jpeg:<6}{ofa:<3}|")
        out.append(bar)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("board", sorted(BLACKWELL))
def test_blackwell_board_is_not_in_the_catalog(catalog, board):
    # no placements are published (SOURCES.md section 8): a host with the board is imported from
    # its own capture; when an entry is added from one, it must pass the checks below instead
    product, pci = BLACKWELL[board]
    assert not any(g.architecture == "blackwell" for g in catalog)
    for written in (product, product.removeprefix("NVIDIA "), pci, pci.upper()):
        with pytest.raises(UnknownName, match="import-mig"):
            catalog.get(written)


@pytest.mark.parametrize(
    ("rows", "gpu_slices", "largest"),
    # B200: only the first four -lgip rows are published as text (1g/2g); RTX PRO 6000: all
    [(B200_LGIP, 7, 2), (RTX_PRO_6000_LGIP, 4, 4)],
    ids=["B200", "RTX-PRO-6000-BSE"],
)
def test_published_blackwell_lgip_parses(rows, gpu_slices, largest):
    cap = parse_mig_profiles(_lgip(rows), file="blackwell-lgip")
    assert [p["name"] for p in cap.profiles] == [r[0] for r in rows]
    for name, pid, n, mem, sm, dec, enc, ce, jpeg, ofa in rows:
        p = cap.profile(name)
        assert (p["id"], p["max_instances"], p["memory_gib"], p["sm"]) == (pid, n, float(mem), sm)
        engines = {"copy": ce, "decoders": dec, "encoders": enc, "jpeg": jpeg, "ofa": ofa}
        assert p["engines"] == engines, name
        assert 1 <= p["slices"] <= gpu_slices, name
        assert p["placements"] is None and p["placement_size"] is None  # -lgip has none
    assert max(p["slices"] for p in cap.profiles) == largest


def test_b200_import_without_lgipp_is_refused():
    with pytest.raises(ValidationError, match="-lgipp"):
        model_from_capture(_lgip(B200_LGIP), "b200-lgip.txt", name="B200")


def test_every_mig_board_has_placements_that_fit(catalog):
    mig = [g for g in catalog if g.profiles]
    assert mig
    for g in mig:
        assert g.compute_slices in (4, 7) and g.memory_slices in (4, 8), g.name
        full = max(g.profiles, key=lambda p: (p.slices, p.placement_size))
        assert (full.slices, full.placement_size) == (g.compute_slices, g.memory_slices), g.name
        for p in g.profiles:
            assert p.placements and len(set(p.placements)) == len(p.placements), (g.name, p.name)
            assert p.placement_size >= 1, (g.name, p.name)
            assert all(s >= 0 and s + p.placement_size <= g.memory_slices for s in p.placements)
            # the profile's own maximum fits on one GPU under its start rules
            layout = fit(g, [p] * p.max_instances)
            assert layout is not None, (g.name, p.name, p.max_instances)
        # a layout of one instance per compute slice (7x 1g, or 4x 1g on 4-slice boards)
        one = min(
            (p for p in g.profiles if p.slices == 1 and p.max_instances == g.compute_slices),
            key=lambda p: p.placement_size,
        )
        assert fit(g, [one] * g.compute_slices) is not None, g.name
        assert fit(g, [one] * (g.compute_slices + 1)) is None, g.name
