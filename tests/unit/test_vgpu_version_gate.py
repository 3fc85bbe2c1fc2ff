"""The vGPU version gate: vSphere and NVIDIA vGPU software releases parsed and compared, the lab
inventory's miglab_host_esxi_version and host driver version, and the refusal of a vGPU type the
lab's hosts do not offer (one line per problem, file and field), at the boundaries."""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml

from miglab.adapters.inventory import load_checked, load_lab
from miglab.core.campaign import load_campaign, parse_campaign, vgpu_version_gate
from miglab.core.placement import Host, Lab
from miglab.core.vgpu_versions import (
    VGPU_BRANCHES,
    Availability,
    driver_branch,
    format_vsphere,
    parse_vgpu_release,
    parse_vsphere,
    vgpu_release_of_driver,
)
from miglab.errors import ValidationError
from testlib import run_cli

CAMPAIGN = textwrap.dedent("""\
    version: 1
    name: gate
    gpu: A100-PCIE-80GB
    mlperf: {benchmarks: [resnet50], scenarios: [Offline], runs: 1, baseline: a}
    scenarios:
      a: {vgpus: {2g.20gb: 1}}
      b: {vgpus: {grid_a100d-1-10cme: 1, 2g.20gb: 1}}
""")


def _inventory(esxi=None, driver=None, gpu="A100-PCIE-80GB") -> str:
    extra = f"\n          miglab_host_esxi_version: {esxi}" if esxi is not None else ""
    drv = f"\n      vars:\n        esxi_vgpu_driver_version: {driver}" if driver else ""
    return (
        "all:\n  children:\n    esxi_hosts:\n      hosts:\n        esxi-01:\n"
        f"          miglab_host_gpus: [{{model: {gpu}, count: 2}}]\n"
        "          miglab_host_cpus: 128\n          miglab_host_memory_gb: 1024"
        + extra
        + drv
        + "\n"
    )


def _files(tmp_path, campaign=CAMPAIGN, **inv):
    c = tmp_path / "campaign.yml"
    c.write_text(campaign)
    i = tmp_path / "hosts.yml"
    i.write_text(_inventory(**inv))
    return c, i


# --- releases -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, release",
    [
        ("8.0.3", (8, 0, 3)),
        ("8.0", (8, 0, 0)),
        ("8.0 U3", (8, 0, 3)),
        ("8.0u2", (8, 0, 2)),
        ("8.0 Update 1", (8, 0, 1)),
        ("7.0.3.00100", (7, 0, 3)),
        (8.0, (8, 0, 0)),
        (" 9.0.0 ", (9, 0, 0)),
    ],
)
def test_vsphere_releases_parse(text, release):
    assert parse_vsphere(text) == release


@pytest.mark.parametrize("bad", ["8", "eight", "8.0.3a", "", "v8.0", True, None, [8, 0]])
def test_bad_vsphere_releases(bad):
    with pytest.raises(ValueError):
        parse_vsphere(bad)


def test_release_formats():
    assert format_vsphere((8, 0, 3)) == "8.0 U3" and format_vsphere((8, 0, 0)) == "8.0"
    assert parse_vgpu_release("17.4") == (17, 4) and parse_vgpu_release("16") == (16, None)
    with pytest.raises(ValueError):
        parse_vgpu_release("R550")


@pytest.mark.parametrize(
    "driver, release",
    [
        ("535.216.01", 16),
        ("550.127.06", 17),
        ("570.211.01", 18),
        ("580.65.05", 19),
        ("525.60.12", 15),
        ("470.161.02", 13),
        ("460.32.03", 12),
        ("418.66", 8),
        ("510.47.03", 14),
        ("450.80.02", None),  # R450: no source for its vGPU release here
        ("{{ x }}", None),
        ("latest", None),
        (None, None),
    ],
)
def test_driver_version_tells_the_vgpu_release(driver, release):
    assert vgpu_release_of_driver(driver) == release


def test_branch_table_is_consistent():
    branches = [b for b, _ in VGPU_BRANCHES.values()]
    assert branches == sorted(branches) and len(set(branches)) == len(branches)
    assert all(src for _, src in VGPU_BRANCHES.values())
    assert driver_branch("550.127.06") == 550 and driver_branch("55.1") is None


@pytest.mark.parametrize(
    "esxi, ok",
    [("8.0.2", False), ("8.0.3", True), ("8.0 U3", True), ("9.0", True), ("7.0.3", False)],
)
def test_vsphere_boundary(esxi, ok):
    assert Availability(vsphere_min=(8, 0, 3)).vsphere_ok(esxi) is ok


@pytest.mark.parametrize(
    "minimum, driver, ok",
    [
        ((15, 0), "470.161.02", False),  # vGPU 13
        ((15, 0), "525.60.12", True),  # 15.x >= 15.0
        ((15, 0), "535.216.01", True),
        ((12, 2), "460.32.03", None),  # 12.x: the minor release decides, not known
        ((12, 2), "470.161.02", True),
        ((12, 2), "418.66", False),
        ((15, 0), "450.80.02", None),  # branch without a known release
        ((15, 0), None, None),
    ],
)
def test_vgpu_software_boundary(minimum, driver, ok):
    assert Availability(vgpu_software_min=minimum).vgpu_software_ok(driver) is ok


def test_unknown_minimum_is_not_judged():
    a = Availability()
    assert not a.known and a.vsphere_ok("6.7") is None and a.vgpu_software_ok("418.66") is None


# --- the inventory --------------------------------------------------------------------------------
def test_host_versions_are_read(tmp_path):
    (tmp_path / "hosts.yml").write_text(_inventory(esxi='"8.0.3"', driver='"550.127.06"'))
    (h,) = load_lab(tmp_path / "hosts.yml").hosts
    assert h.esxi_version == "8.0.3" and h.vgpu_driver_version == "550.127.06"


def test_host_versions_default_to_unknown(tmp_path):
    (tmp_path / "hosts.yml").write_text(_inventory())
    (h,) = load_lab(tmp_path / "hosts.yml").hosts
    assert h.esxi_version is None and h.vgpu_driver_version is None


def test_a_driver_version_ansible_cannot_fill_in_now_is_unknown(tmp_path):
    # like inventories/sim before `miglab sim up`: a lookup of a file that is not there yet
    driver = "\"{{ lookup('ansible.builtin.file', '/nonexistent/bundles.json') }}\""
    (tmp_path / "hosts.yml").write_text(_inventory(esxi='"8.0.3"', driver=driver))
    (h,) = load_lab(tmp_path / "hosts.yml").hosts
    assert h.vgpu_driver_version is None and h.esxi_version == "8.0.3"


@pytest.mark.parametrize("bad", ['"eight"', '"8"', "true", "[8, 0]", '"8.0.3 GA"'])
def test_bad_esxi_version_names_file_and_field(tmp_path, bad):
    inv = tmp_path / "hosts.yml"
    inv.write_text(_inventory(esxi=bad))
    with pytest.raises(ValidationError) as exc:
        load_lab(inv)
    (p,) = exc.value.problems
    assert p.file == str(inv)
    assert p.field == "all.children.esxi_hosts.hosts.esxi-01.miglab_host_esxi_version"
    assert "is not an ESXi release" in p.reason


def test_the_sim_lab_still_loads(sim_lab):
    (h,) = sim_lab.hosts
    assert h.esxi_version == "7.0.3"  # inventories/sim says what the simulator runs


# --- the gate -------------------------------------------------------------------------------------
def test_refused_below_8u3_one_line_per_problem(tmp_path):
    c, i = _files(tmp_path, esxi='"8.0.2"')
    with pytest.raises(ValidationError) as exc:
        load_checked(c, i)
    lines = [str(p) for p in exc.value.problems]
    assert lines == [
        f"{c}: scenarios.b.vgpus.grid_a100d-1-10cme: vGPU type grid_a100d-1-10cme needs "
        "vSphere 8.0 U3 or later; host esxi-01 runs 8.0.2 (miglab_host_esxi_version)"
    ]


@pytest.mark.parametrize("esxi", ['"8.0.3"', '"8.0 U3"', '"9.0"'])
def test_accepted_from_8u3(tmp_path, esxi):
    c, i = _files(tmp_path, esxi=esxi)
    campaign, _ = load_checked(c, i)
    assert not [w for w in campaign.warnings if "not checked" in w]


def test_unknown_esxi_release_is_not_refused_but_said(tmp_path):
    c, i = _files(tmp_path)
    campaign, _ = load_checked(c, i)
    notes = [w for w in campaign.warnings if "not checked" in w]
    assert notes == [
        f"{c}: scenarios.b.vgpus.grid_a100d-1-10cme: vGPU type grid_a100d-1-10cme needs "
        "vSphere 8.0 U3 or later: not checked on host esxi-01: its ESXi release is not known "
        "(set miglab_host_esxi_version)"
    ]


def test_types_without_a_minimum_are_not_judged(tmp_path):
    campaign = CAMPAIGN.replace("b: {vgpus: {grid_a100d-1-10cme: 1, 2g.20gb: 1}}", "")
    c, i = _files(tmp_path, campaign=campaign, esxi='"7.0.2"')
    loaded, _ = load_checked(c, i)
    assert not [w for w in loaded.warnings if "not checked" in w]


def test_field_is_the_key_the_file_wrote(tmp_path):
    campaign = CAMPAIGN.replace("grid_a100d-1-10cme", "1g.10gb+me")
    c, i = _files(tmp_path, campaign=campaign, esxi='"8.0.2"')
    with pytest.raises(ValidationError) as exc:
        load_checked(c, i)
    (p,) = exc.value.problems
    assert p.field == "scenarios.b.vgpus.1g.10gb+me"
    assert "vGPU type grid_a100d-1-10cme needs vSphere 8.0 U3" in p.reason


H100 = textwrap.dedent("""\
    version: 1
    name: gate-h100
    gpu: H100-PCIE-80GB
    mlperf: {benchmarks: [resnet50], scenarios: [Offline], runs: 1, baseline: a}
    scenarios:
      a: {vgpus: {3g.40gb: 2}}
""")


@pytest.mark.parametrize(
    "driver, refused",
    [('"470.161.02"', True), ('"525.60.12"', False), ('"535.216.01"', False)],
)
def test_vgpu_software_gate_from_the_host_driver(tmp_path, driver, refused):
    c, i = _files(tmp_path, campaign=H100, gpu="H100-PCIE-80GB", driver=driver)
    if not refused:
        load_checked(c, i)
        return
    with pytest.raises(ValidationError) as exc:
        load_checked(c, i)
    (p,) = exc.value.problems
    assert p.field == "scenarios.a.vgpus.3g.40gb"
    assert p.reason == (
        "vGPU type nvidia_h100-3-40c needs NVIDIA vGPU software 15.0 or later; host esxi-01's "
        "driver 470.161.02 is vGPU 13 (esxi_vgpu_driver_version)"
    )


def test_unknown_driver_release_is_said(tmp_path):
    c, i = _files(tmp_path, campaign=H100, gpu="H100-PCIE-80GB", driver='"450.80.02"')
    campaign, _ = load_checked(c, i)
    (note,) = [w for w in campaign.warnings if "not checked" in w]
    assert "vGPU software release of host driver 450.80.02 is not known" in note


def test_every_host_with_the_gpu_is_judged(catalog):
    gpu, other = catalog.get("A100-PCIE-80GB"), catalog.get("L40S")
    lab = Lab(
        (
            Host("old", (gpu,), 64, 512, esxi_version="8.0.2"),
            Host("new", (gpu,), 64, 512, esxi_version="8.0.3"),
            Host("elsewhere", (other,), 64, 512, esxi_version="7.0.2"),
            Host("unknown", (gpu,), 64, 512),
        )
    )
    campaign = parse_campaign(yaml.safe_load(CAMPAIGN), "c.yml", catalog)
    problems, notes = vgpu_version_gate(campaign, lab)
    assert [(f, r.rsplit("; ", 1)[1]) for f, r in problems] == [
        ("scenarios.b.vgpus.grid_a100d-1-10cme", "host old runs 8.0.2 (miglab_host_esxi_version)")
    ]
    assert len(notes) == 1 and "not checked on host unknown:" in notes[0]


def test_cli_exits_2_naming_file_and_field(tmp_path):
    c, i = _files(tmp_path, esxi='"8.0.2"')
    for command in ("validate", "plan"):
        res = run_cli(command, c, "-i", i)
        assert res.returncode == 2, res.stderr
        lines = res.stderr.strip().splitlines()
        assert lines == [
            f"error: {c}: scenarios.b.vgpus.grid_a100d-1-10cme: vGPU type grid_a100d-1-10cme "
            "needs vSphere 8.0 U3 or later; host esxi-01 runs 8.0.2 (miglab_host_esxi_version)"
        ]
        assert res.stdout == ""


def test_plan_says_what_was_not_checked(tmp_path):
    c, i = _files(tmp_path)
    res = run_cli("plan", c, "-i", i, "--json")
    assert res.returncode == 0, res.stderr
    assert "not checked on host esxi-01" in res.stderr
    assert any("not checked on host esxi-01" in w for w in json.loads(res.stdout)["warnings"])


def test_load_campaign_with_a_lab_applies_the_gate(tmp_path):
    c, i = _files(tmp_path, esxi='"8.0.2"')
    with pytest.raises(ValidationError):
        load_campaign(c, load_lab(i))
