"""Campaign files: the seed is valid; every kind of bad input is one clear line, exit code 2."""

from __future__ import annotations

import textwrap

import pytest

from miglab.core.campaign import load_campaign
from miglab.errors import ValidationError
from testlib import ROOT, SEED, run_cli

GOOD = textwrap.dedent("""\
    version: 1
    name: t
    gpu: A100-PCIE-80GB
    vm: {vcpus: 32, memory_gb: 64}
    mlperf: {benchmarks: [resnet50], scenarios: [Offline], runs: 1, baseline: a}
    scenarios:
      a: {vgpus: {7g.80gb: 1}}
      b: {vgpus: {2g.20gb: 3, 1g.10gb: 1}}
""")


def _write(tmp_path, text, name="c.yml"):
    p = tmp_path / name
    p.write_text(text) if isinstance(text, str) else p.write_bytes(text)
    return p


def test_seed_campaign_is_valid_and_fits(sim_lab):
    c = load_campaign(SEED, sim_lab)
    assert list(c.scenarios) == [f"s{i}" for i in range(1, 9)]
    assert [c.scenarios[s].vm_count for s in c.scenarios] == [1, 1, 1, 1, 1, 3, 4, 7]
    assert c.mlperf.baseline == "s1" and c.mlperf.runs == 3
    assert c.vm.mmio_gb == 64


def test_h200_example_campaign_is_valid():
    from miglab.adapters.inventory import load_lab

    path = ROOT / "campaigns" / "h200-sxm-mig.yml"
    lab = load_lab(ROOT / "inventories" / "example-h200")
    c = load_campaign(path, lab)
    assert c.gpu.name == "H200-SXM"


def test_vgpu_type_names_are_accepted(tmp_path, sim_lab):
    text = GOOD.replace("7g.80gb: 1", "grid_a100d-7-80c: 1").replace(
        "2g.20gb: 3", "nvidia-2-20c: 3"
    )
    c = load_campaign(_write(tmp_path, text), sim_lab)
    assert c.scenarios["b"].describe() == "3x 2g.20gb + 1x 1g.10gb"


def test_scenario_vm_override(tmp_path, sim_lab):
    text = GOOD.replace(
        "b: {vgpus: {2g.20gb: 3, 1g.10gb: 1}}",
        "b: {vgpus: {2g.20gb: 3, 1g.10gb: 1}, vm: {vcpus: 8}}",
    )
    c = load_campaign(_write(tmp_path, text), sim_lab)
    assert c.scenarios["b"].vm.vcpus == 8 and c.scenarios["b"].vm.memory_gb == 64


BAD = [
    # (description, edit of GOOD or whole text, expected field, expected words)
    ("unknown key", GOOD.replace("name: t", "name: t\nnmae: x"), "nmae", "unknown key"),
    ("misspelt nested key", GOOD.replace("runs: 1", "run: 1"), "mlperf.run", "did you mean 'runs'"),
    ("duplicate key", GOOD.replace("name: t", "name: t\nname: u"), "name", "duplicate key"),
    ("duplicate scenario", GOOD + "  a: {vgpus: {1g.10gb: 1}}\n", "scenarios.a", "duplicate key"),
    ("wrong type", GOOD.replace("vcpus: 32", "vcpus: many"), "vm.vcpus", "must be an integer"),
    ("bool is no int", GOOD.replace("runs: 1", "runs: true"), "mlperf.runs", "must be an integer"),
    (
        "count < 1",
        GOOD.replace("1g.10gb: 1", "1g.10gb: 0"),
        "scenarios.b.vgpus.1g.10gb",
        "at least 1",
    ),
    ("runs < 1", GOOD.replace("runs: 1", "runs: 0"), "mlperf.runs", "at least 1"),
    ("unknown gpu", GOOD.replace("A100-PCIE-80GB", "B300"), "gpu", "unknown GPU"),
    (
        "unknown profile",
        GOOD.replace("7g.80gb", "8g.90gb"),
        "scenarios.a.vgpus.8g.90gb",
        "not a MIG profile",
    ),
    (
        "profile of another gpu",
        GOOD.replace("7g.80gb", "nvidia_h100xm-7-80c"),
        "scenarios.a.vgpus.nvidia_h100xm-7-80c",
        "of H100-SXM5-80GB",
    ),
    ("does not fit", GOOD.replace("7g.80gb: 1", "7g.80gb: 5"), "scenarios.a.vgpus", "does not fit"),
    (
        "does not share one gpu",
        GOOD.replace("a: {vgpus: {7g.80gb: 1}}", "a: {vgpus: {4g.40gb: 2}, max_gpus: 1}"),
        "scenarios.a.vgpus",
        "maximum of 1",
    ),
    (
        "baseline undefined",
        GOOD.replace("baseline: a", "baseline: zz"),
        "mlperf.baseline",
        "not defined",
    ),
    (
        "unsupported version",
        GOOD.replace("version: 1", "version: 2"),
        "version",
        "unsupported version",
    ),
    (
        "version as string",
        GOOD.replace("version: 1", "version: 'v1'"),
        "version",
        "unsupported version",
    ),
    ("empty file", "", "(top)", "empty"),
    ("not yaml", "version: [1\nname: {", "(top)", "not valid YAML"),
    ("not a mapping", "- 1\n- 2\n", "(top)", "must be a mapping"),
    (
        "unknown benchmark",
        GOOD.replace("[resnet50]", "[resnet-50]"),
        "mlperf.benchmarks[0]",
        "did you mean 'resnet50'",
    ),
    (
        "unknown mlperf scenario",
        GOOD.replace("[Offline]", "[Offlin]"),
        "mlperf.scenarios[0]",
        "did you mean 'Offline'",
    ),
    ("missing required", GOOD.replace("gpu: A100-PCIE-80GB\n", ""), "gpu", "is required"),
    ("bad name", GOOD.replace("name: t", "name: My Lab!"), "name", "not valid"),
    (
        "mmio not power of two",
        GOOD.replace("memory_gb: 64}", "memory_gb: 64, mmio_gb: 100}"),
        "vm.mmio_gb",
        "power of two",
    ),
    (
        "empty scenarios",
        GOOD.rsplit("scenarios:", 1)[0] + "scenarios: {}\n",
        "scenarios",
        "non-empty mapping",
    ),
    (
        "null vgpus",
        GOOD.replace("{vgpus: {7g.80gb: 1}}", "{vgpus: }"),
        "scenarios.a.vgpus",
        "got nothing",
    ),
    (
        "vcpus over a host",
        GOOD.replace("vcpus: 32", "vcpus: 200"),
        "scenarios.a.vgpus",
        "fits on no GPU/host",
    ),
    ("non-utf8", GOOD.encode() + b"# \xff\xfe\n", "(top)", "not UTF-8"),
    (
        "alias bomb",
        "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
        "(top)",
        "alias bomb",
    ),
]


@pytest.mark.parametrize("desc, text, field, words", BAD, ids=[b[0] for b in BAD])
def test_bad_campaign_is_reported_with_file_and_field(tmp_path, sim_lab, desc, text, field, words):
    path = _write(tmp_path, text)
    with pytest.raises(ValidationError) as info:
        load_campaign(path, sim_lab)
    lines = [str(p) for p in info.value.problems]
    assert any(line.startswith(f"{path}: {field}: ") and words in line for line in lines), lines


@pytest.mark.parametrize(
    "desc, text, field, words", BAD[:8] + BAD[-3:], ids=[b[0] for b in BAD[:8] + BAD[-3:]]
)
def test_cli_exits_2_with_one_line_per_problem(tmp_path, desc, text, field, words):
    path = _write(tmp_path, text)
    for command in ("validate", "plan"):
        res = run_cli(command, path)
        assert res.returncode == 2, res.stderr
        assert "Traceback" not in res.stderr + res.stdout
        lines = res.stderr.strip().splitlines()
        assert lines and all(line.startswith(f"error: {path}: ") for line in lines), lines
        assert any(f": {field}: " in line and words in line for line in lines)
        assert res.stdout == ""


def test_all_problems_are_reported_at_once(tmp_path, sim_lab):
    text = (
        GOOD.replace("vcpus: 32", "vcpus: -1")
        .replace("runs: 1", "runs: x")
        .replace("7g.80gb", "9g.99gb")
    )
    with pytest.raises(ValidationError) as info:
        load_campaign(_write(tmp_path, text), sim_lab)
    fields = {p.field for p in info.value.problems}
    assert {"vm.vcpus", "mlperf.runs", "scenarios.a.vgpus.9g.99gb"} <= fields


def test_missing_file(tmp_path):
    res = run_cli("validate", tmp_path / "nope.yml")
    assert res.returncode == 2 and "file not found" in res.stderr


def test_mmio_below_nvidia_documented_size_warns(sim_lab):
    c = load_campaign(SEED, sim_lab)
    need = c.gpu.mmio_gb
    if need > 64:
        assert any("vm.mmio_gb" in w and str(need) in w for w in c.warnings)
    else:
        assert not c.warnings


def test_gpu_from_a_capture_works_without_the_catalog(tmp_path):
    """A GPU missing from the catalog, described by real nvidia-smi output (H200 capture)."""
    from testlib import FIXTURES

    nvs = FIXTURES / "nvidia-smi"
    capture = tmp_path / "gpu.txt"
    capture.write_text(
        (nvs / "h200-mig-lgip.txt").read_text() + (nvs / "h200-mig-lgipp.txt").read_text()
    )
    campaign = tmp_path / "c.yml"
    campaign.write_text(
        GOOD.replace("gpu: A100-PCIE-80GB", "gpu: LAB-GPU-X\ngpu_capture: gpu.txt")
        .replace("7g.80gb", "7g.141gb")
        .replace("2g.20gb", "2g.35gb")
        .replace("1g.10gb", "1g.18gb")
    )
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  children:\n    esxi_hosts:\n      hosts:\n        h1:\n"
        "          miglab_host_gpus: [{model: LAB-GPU-X, count: 2}]\n"
        "          miglab_host_cpus: 64\n          miglab_host_memory_gb: 512\n"
    )
    res = run_cli("plan", campaign, "-i", inventory, "--json")
    assert res.returncode == 0, res.stderr
    assert "no vSphere vGPU type is known" in res.stderr
    import json

    plan = json.loads(res.stdout)
    assert plan["gpu"] == "LAB-GPU-X"
    b = next(s for s in plan["scenarios"] if s["id"] == "b")
    assert sorted(v["start_slice"] for v in b["vms"]) == [0, 2, 4, 6]


def test_campaign_and_inventory_problems_are_reported_together(tmp_path):
    campaign = _write(tmp_path, GOOD.replace("runs: 1", "runs: 0"))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n    esxi_hosts:\n      hosts:\n        h1: {}\n")
    res = run_cli("validate", campaign, "-i", inventory)
    assert res.returncode == 2
    assert f"error: {campaign}: mlperf.runs" in res.stderr
    assert f"error: {inventory}: " in res.stderr and "miglab_host_gpus: is required" in res.stderr
