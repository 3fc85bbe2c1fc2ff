"""nvidia-smi parsers against real captures (tests/fixtures/nvidia-smi, see its README)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from miglab.errors import ValidationError
from miglab.formats.nvsmi import (
    ENGINE_KEYS,
    PROFILE_KEYS,
    QUERY_KEYS,
    parse_mig_profiles,
    parse_query,
    parse_query_gpu_csv,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def summary(capture) -> list[tuple]:
    return [
        (p["name"], p["id"], p["slices"], p["memory_gib"], p["max_instances"], p["sm"])
        for p in capture.profiles
    ]


def placements(capture) -> dict[int, tuple]:
    return {p["id"]: (p["placements"], p["placement_size"]) for p in capture.profiles}


def engines(capture, name) -> tuple:
    e = capture.profile(name)["engines"]
    return tuple(e[k] for k in ("copy", "decoders", "encoders", "jpeg", "ofa"))


H200_PROFILES = [
    ("1g.18gb", 19, 1, 16.0, 7, 16),
    ("1g.18gb+me", 20, 1, 16.0, 1, 16),
    ("1g.35gb", 15, 1, 32.5, 4, 26),
    ("2g.35gb", 14, 2, 32.5, 3, 32),
    ("3g.71gb", 9, 3, 69.75, 2, 60),
    ("4g.71gb", 5, 4, 69.75, 1, 64),
    ("7g.141gb", 0, 7, 140.0, 1, 132),
]
H200_PLACEMENTS = {
    19: ([0, 1, 2, 3, 4, 5, 6], 1),
    20: ([0, 1, 2, 3, 4, 5, 6], 1),
    15: ([0, 2, 4, 6], 2),
    14: ([0, 2, 4], 2),
    9: ([0, 4], 4),
    5: ([0], 4),
    0: ([0], 8),
}


# ---- -lgip / -lgipp: the H200 capture (newer, 81-column layout) ------------------------------


def test_h200_lgip_newer_layout():
    c = parse_mig_profiles(read("h200-mig-lgip.txt"), "h200-mig-lgip.txt")
    assert c.gpu_index == 0 and c.gpu_name is None
    assert summary(c) == H200_PROFILES
    assert all(p["placements"] is None and p["placement_size"] is None for p in c.profiles)
    assert engines(c, "1g.18gb") == (1, 1, 0, 1, 0)
    assert engines(c, "1g.18gb+me") == (1, 1, 0, 1, 1)
    assert engines(c, "7g.141gb") == (8, 7, 0, 7, 1)
    for p in c.profiles:
        assert tuple(p) == PROFILE_KEYS and tuple(p["engines"]) == ENGINE_KEYS


def test_h200_lgipp_alone_has_only_placements():
    c = parse_mig_profiles(read("h200-mig-lgipp.txt"), "h200-mig-lgipp.txt")
    assert c.gpu_index == 0
    assert placements(c) == H200_PLACEMENTS
    for p in c.profiles:
        assert p["name"] is None and p["memory_gib"] is None and p["sm"] is None
        assert set(p["engines"].values()) == {None}


@pytest.mark.parametrize("order", ["lgip+lgipp", "lgipp+lgip"])
def test_h200_merged_either_order(order):
    lgip, lgipp = read("h200-mig-lgip.txt"), read("h200-mig-lgipp.txt")
    text = lgip + lgipp if order == "lgip+lgipp" else lgipp + lgip
    c = parse_mig_profiles(text, "h200.txt")
    assert sorted(summary(c)) == sorted(H200_PROFILES)
    assert placements(c) == H200_PLACEMENTS
    assert c.profile("3g.71gb")["placements"] == [0, 4]
    assert c.profile(0)["name"] == "7g.141gb"


def test_both_placement_spellings_are_read():
    lgipp = read("h200-mig-lgipp.txt")
    assert "Placements:" in lgipp and "Placement :" in lgipp
    c = parse_mig_profiles(lgipp)
    assert c.profile(5)["placements"] == [0] and c.profile(19)["placement_size"] == 1


def test_nvidia_smi_dash_L_lines_name_the_gpu():
    text = (
        "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
        + read("h200-mig-lgip.txt")
        + read("h200-mig-lgipp.txt")
    )
    c = parse_mig_profiles(text)
    assert c.gpu_name == "NVIDIA H200" and len(c.profiles) == 7


def test_several_gpus_keep_the_first_index():
    lgip = read("h200-mig-lgip.txt")
    lgipp = read("h200-mig-lgipp.txt")
    header, rows = lgip.split("|=", 1)
    rows = "|=" + rows
    gpu3 = rows.replace("|   0  MIG", "|   3  MIG")
    # a 2-GPU capture as nvidia-smi prints it (GPU 3 rows after GPU 0 rows) but starting at 3
    text = header + gpu3 + rows.split("\n", 1)[1] + lgipp.replace("GPU  0 ", "GPU  3 ") + lgipp
    c = parse_mig_profiles(text, "two-gpus.txt")
    assert c.gpu_index == 3
    assert summary(c) == H200_PROFILES
    assert placements(c) == H200_PLACEMENTS


# ---- published captures ----------------------------------------------------------------------


def test_a100_sxm4_40gb_user_guide_lgip_and_lgipp():
    c = parse_mig_profiles(
        read("a100-sxm4-40gb-mig-lgip.txt") + read("a100-sxm4-40gb-mig-lgipp.txt"),
        "a100-sxm4-40gb",
    )
    assert summary(c) == [
        ("1g.5gb", 19, 1, 4.75, 7, 14),
        ("1g.5gb+me", 20, 1, 4.75, 1, 14),
        ("1g.10gb", 15, 1, 9.62, 4, 14),
        ("2g.10gb", 14, 2, 9.62, 3, 28),
        ("3g.20gb", 9, 3, 19.5, 2, 42),
        ("4g.20gb", 5, 4, 19.5, 1, 56),
        ("7g.40gb", 0, 7, 39.25, 1, 98),
    ]
    assert placements(c) == {**H200_PLACEMENTS}
    assert engines(c, "7g.40gb") == (7, 5, 0, 1, 1)
    assert engines(c, "1g.5gb") == (1, 0, 0, 0, 0)


def test_a100_pcie_40gb_older_76_column_layout():
    text = read("a100-pcie-40gb-r460-mig-lgip.txt")
    assert max(len(line) for line in text.splitlines()) == 76
    c = parse_mig_profiles(text, "a100-pcie-40gb-r460-mig-lgip.txt")
    assert summary(c) == [
        ("1g.5gb", 19, 1, 4.75, 7, 14),
        ("2g.10gb", 14, 2, 9.75, 3, 28),
        ("3g.20gb", 9, 3, 19.62, 2, 42),
        ("4g.20gb", 5, 4, 19.62, 1, 56),
        ("7g.40gb", 0, 7, 39.5, 1, 98),
    ]
    assert engines(c, "2g.10gb") == (2, 1, 0, 0, 0)


def test_a100_pcie_80gb_partial_capture():
    c = parse_mig_profiles(read("a100-pcie-80gb-mig-lgip-partial.txt"))
    assert summary(c) == [
        ("1g.10gb", 19, 1, 9.5, 7, 14),
        ("1g.10gb+me", 20, 1, 9.5, 1, 14),
        ("2g.20gb", 14, 2, 19.5, 3, 28),
    ]


def test_a30_uses_total_not_free_instances():
    c = parse_mig_profiles(read("a30-mig-lgip.txt") + read("a30-mig-lgipp.txt"), "a30")
    assert "0/4" in read("a30-mig-lgip.txt")  # every instance was in use when captured
    assert summary(c) == [
        ("1g.6gb", 14, 1, 5.81, 4, 14),
        ("1g.6gb+me", 21, 1, 5.81, 1, 14),
        ("2g.12gb", 5, 2, 11.69, 2, 28),
        ("4g.24gb", 0, 4, 23.5, 1, 56),
    ]
    assert placements(c) == {
        14: ([0, 1, 2, 3], 1),
        21: ([0, 1, 2, 3], 1),
        5: ([0, 2], 2),
        0: ([0], 4),
    }
    assert engines(c, "1g.6gb+me") == (1, 1, 0, 1, 1)


def test_indented_capture_and_crlf_are_accepted():
    text = "".join("    " + line + "\r\n" for line in read("h200-mig-lgip.txt").splitlines())
    assert summary(parse_mig_profiles(text)) == H200_PROFILES


def test_newer_suffixes_are_kept():
    row = (
        "|   0  MIG 1g.24gb{sfx:<7}   {pid:>2}     4/4        23.12      No     "
        + "46     1     1   |\n"
    )
    engines_row = "|" + " " * 61 + "1     1     0   |\n"
    border = "+" + "-" * 79 + "+\n"
    head = (
        border
        + "| GPU instance profiles:"
        + " " * 56
        + "|\n"
        + "| GPU   Name               ID    Instances   Memory     P2P    SM    DEC   ENC  |\n"
        + "|                                Free/Total   GiB              CE    JPEG  OFA  |\n"
        + "|"
        + "=" * 79
        + "|\n"
    )
    body = "".join(
        row.format(sfx=sfx, pid=pid) + engines_row + border
        for sfx, pid in (("", 14), ("+me", 21), ("+gfx", 47), ("-me", 67))
    )
    c = parse_mig_profiles(head + body)
    assert [p["name"] for p in c.profiles] == ["1g.24gb", "1g.24gb+me", "1g.24gb+gfx", "1g.24gb-me"]
    assert {p["slices"] for p in c.profiles} == {1}


# ---- -lgip / -lgipp: rejected input ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "hello world\n",
        "version: v1\nmig-configs: {}\n",
        "",
        "\n\n",
    ],
)
def test_garbage_is_a_validation_error_naming_the_file(text):
    with pytest.raises(ValidationError) as err:
        parse_mig_profiles(text, "capture.txt")
    assert str(err.value).startswith("capture.txt: ")


def test_mig_disabled_message_is_rejected():
    # `nvidia-smi mig -lcip` on the H200 with MIG disabled
    with pytest.raises(ValidationError) as err:
        parse_mig_profiles(read("h200-mig-lcip.txt"), "h200-mig-lcip.txt")
    assert str(err.value) == (
        "h200-mig-lcip.txt: line 1: not nvidia-smi mig -lgip/-lgipp output: "
        "'No MIG-enabled devices found.'"
    )


def test_nvidia_smi_summary_table_is_not_a_profile_listing():
    with pytest.raises(ValidationError) as err:
        parse_mig_profiles(read("h200-nvidia-smi.txt"), "h200-nvidia-smi.txt")
    assert "h200-nvidia-smi.txt: line 1:" in str(err.value)


def test_bad_row_reports_its_line():
    lines = read("h200-mig-lgip.txt").splitlines()
    lines[5] = lines[5].replace("16.00", "16.0x")
    with pytest.raises(ValidationError) as err:
        parse_mig_profiles("\n".join(lines), "bad.txt")
    assert [p.field for p in err.value.problems] == ["line 6"]
    assert "memory" in err.value.problems[0].reason


def test_duplicate_profile_rows_are_rejected():
    lgipp = read("h200-mig-lgipp.txt")
    with pytest.raises(ValidationError, match="listed twice"):
        parse_mig_profiles(lgipp + lgipp.splitlines()[0] + "\n", "dup.txt")


def test_trailing_garbage_after_a_valid_capture_is_rejected():
    text = read("h200-mig-lgip.txt") + "Segmentation fault\n"
    with pytest.raises(ValidationError) as err:
        parse_mig_profiles(text, "x.txt")
    assert err.value.problems[0].field == f"line {len(text.splitlines())}"


# ---- --query-gpu CSV -------------------------------------------------------------------------


def test_query_gpu_csv_with_header_and_units():
    rows = parse_query_gpu_csv(read("h200-query-gpu.csv"), "h200-query-gpu.csv")
    assert rows == [
        {
            "name": "NVIDIA H200",
            "pci.device_id": "0x233510DE",
            "pci.sub_device_id": "0x18BF10DE",
            "pci.bus_id": "00000000:00:06.0",
            "driver_version": "580.159.04",
            "mig.mode.current": "Disabled",
            "mig.mode.pending": "Disabled",
            "memory.total": "143771",
            "serial": "0000000000000",
            "uuid": "GPU-00000000-0000-0000-0000-000000000000",
        }
    ]


def test_query_gpu_csv_noheader_nounits_matches_the_header_form():
    fields = [
        "name",
        "pci.device_id",
        "pci.bus_id",
        "driver_version",
        "mig.mode.current",
        "mig.mode.pending",
        "memory.total",
    ]
    rows = parse_query_gpu_csv(read("h200-query-gpu-noheader-nounits.csv"), "x.csv", fields=fields)
    full = parse_query_gpu_csv(read("h200-query-gpu.csv"))[0]
    assert rows == [{k: full[k] for k in fields}]


def test_query_gpu_csv_not_available_and_several_gpus():
    text = (
        "index, name, mig.mode.current, memory.total [MiB]\n"
        "0, NVIDIA A100 80GB PCIe, Enabled, 81920 MiB\n"
        "1, NVIDIA L40S, [N/A], 46068 MiB\n"
    )
    rows = parse_query_gpu_csv(text)
    assert [r["mig.mode.current"] for r in rows] == ["Enabled", None]
    assert [r["memory.total"] for r in rows] == ["81920", "46068"]


@pytest.mark.parametrize(
    "text, fields, field",
    [
        ("hello world\n", None, "line 1"),
        ("name, memory.total [MiB]\nNVIDIA H200\n", None, "line 2"),
        ("name, memory.total [MiB]\n", None, ""),
        ('Field "bogus" is not a valid field to query.\n', None, "line 1"),
        ("NVIDIA H200, 1\n", ["name", "not a field"], "fields"),
    ],
)
def test_query_gpu_csv_errors(text, fields, field):
    with pytest.raises(ValidationError) as err:
        parse_query_gpu_csv(text, "q.csv", fields=fields)
    assert err.value.problems[0].file == "q.csv"
    assert err.value.problems[0].field == field


# ---- -q / -q -x ------------------------------------------------------------------------------

H200_QUERY = {
    "pci_bus_id": "00000000:00:06.0",
    "product_name": "NVIDIA H200",
    "product_brand": "NVIDIA",
    "product_architecture": "Hopper",
    "driver_version": "580.159.04",
    "cuda_version": "13.0",
    "mig_mode_current": "Disabled",
    "mig_mode_pending": "Disabled",
    "virtualization_mode": "Pass-Through",
    "host_vgpu_mode": None,
    "pci_device_id": "0x233510DE",
    "device_id": "0x2335",
    "vendor_id": "0x10DE",
    "pci_sub_system_id": "0x18BF10DE",
    "fb_memory_total_mib": 143771,
    "serial": "0000000000000",
    "uuid": "GPU-00000000-0000-0000-0000-000000000000",
    "licensed_product": None,  # pass-through: no vGPU licence section
    "license_status": None,
}


def test_query_text():
    gpus = parse_query(read("h200-q.txt"), "h200-q.txt")
    assert gpus == [H200_QUERY]
    assert tuple(gpus[0]) == QUERY_KEYS


def test_query_xml_gives_the_same_dict():
    assert parse_query(read("h200-q.xml"), "h200-q.xml") == [H200_QUERY]


def test_query_text_with_two_gpus_and_a_vgpu_host():
    one = read("h200-q.txt")
    head, gpu = one.split("GPU 00000000:00:06.0\n", 1)
    second = re.sub(
        r"(Host VGPU Mode\s+: )N/A", r"\1SR-IOV", gpu.replace("Pass-Through", "Host VGPU")
    )
    text = head + "GPU 00000000:00:06.0\n" + gpu + "GPU 00000000:81:00.0\n" + second
    gpus = parse_query(text)
    assert [g["pci_bus_id"] for g in gpus] == ["00000000:00:06.0", "00000000:81:00.0"]
    assert gpus[1]["virtualization_mode"] == "Host VGPU"
    assert gpus[1]["host_vgpu_mode"] == "SR-IOV"


@pytest.mark.parametrize(
    "name", ["h200-mig-lgip.txt", "h200-query-gpu.csv", "h200-nvidia-smi.txt", "h200-version.txt"]
)
def test_query_rejects_other_nvidia_smi_output(name):
    with pytest.raises(ValidationError) as err:
        parse_query(read(name), name)
    assert str(err.value).startswith(f"{name}: ")


@pytest.mark.parametrize(
    "text",
    [
        "<html><body>nope</body></html>",
        "<nvidia_smi_log><gpu",
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><nvidia_smi_log/>',
        "<nvidia_smi_log></nvidia_smi_log>",
    ],
)
def test_query_rejects_bad_xml(text):
    with pytest.raises(ValidationError) as err:
        parse_query(text, "q.xml")
    assert str(err.value).startswith("q.xml: ")


def test_query_gpu_without_product_name_is_rejected():
    text = "==============NVSMI LOG==============\n\nGPU 00000000:00:06.0\n    Foo : bar\n"
    with pytest.raises(ValidationError, match=r"gpu\[0\]\.product_name"):
        parse_query(text, "q.txt")
