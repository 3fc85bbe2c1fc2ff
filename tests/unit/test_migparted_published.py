"""`miglab gpu from-mig-parted` on mig-parted's own published files (issue 20, part 1).

The files are copies kept under tests/fixtures/mig-parted (their commit and URL in its README):
``config-default.yaml`` (``deployments/systemd/``, the file the GPU operator ships: configs for
every MIG GPU) and ``config.yaml`` (``examples/``, written for A100 40GB). mig-parted applies a
config only to the GPUs its ``device-filter`` names (or every GPU when it has none); the import
does the same for one catalog model and says in one line what it skipped and why.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from miglab.adapters.inventory import load_checked
from miglab.core.migparted_export import mig_parted_to_campaign
from miglab.errors import ValidationError
from miglab.formats.migparted import load
from testlib import FIXTURES, run_cli

MP = FIXTURES / "mig-parted"
DEFAULT = MP / "config-default.yaml"
EXAMPLE = MP / "config.yaml"
A100 = "A100-PCIE-80GB"
H100 = "H100-PCIE-80GB"  # the catalog's H100 80GB PCIe ("H100 80GB" in the issue)

# the configs of config-default.yaml for the 80GB A100/H100 boards (same profile names on both)
DEFAULT_80GB = {
    "all-1g-10gb": {"1g.10gb": 7},
    "all-1g-10gb-me": {"1g.10gb+me": 1},
    "all-1g-20gb": {"1g.20gb": 4},
    "all-2g-20gb": {"2g.20gb": 3},
    "all-3g-40gb": {"3g.40gb": 2},
    "all-4g-40gb": {"4g.40gb": 1},
    "all-7g-80gb": {"7g.80gb": 1},
    "all-balanced": {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2},
}
DEFAULT_SKIPPED = (
    "skipped 73 of 81 configs: 1 has a device-filter that names other GPUs, "
    "70 use profiles {gpu} does not have (1g.5gb, 1g.5gb+me, 2g.10gb, 3g.20gb, 4g.20gb, ...), "
    "2 disable MIG or are empty"
)
EXAMPLE_SKIPPED = (
    "skipped 8 of 9 configs: 6 use profiles {gpu} does not have "
    "(1g.5gb, 1g.5gb+me, 2g.10gb, 3g.20gb), 2 disable MIG or are empty"
)
EXPECTED = {
    (DEFAULT, A100): (DEFAULT_80GB, DEFAULT_SKIPPED),
    (DEFAULT, H100): (DEFAULT_80GB, DEFAULT_SKIPPED),
    (EXAMPLE, A100): ({"all-1g-10gb": {"1g.10gb": 4}}, EXAMPLE_SKIPPED),
    (EXAMPLE, H100): ({"all-1g-10gb": {"1g.10gb": 4}}, EXAMPLE_SKIPPED),
}
CASES = list(EXPECTED)
IDS = [f"{f.stem}-{g}" for f, g in CASES]


def inventory(tmp_path: Path, gpu: str, count: int = 4, esxi: str = "8.0.3") -> Path:
    """A one-host lab with ``count`` GPUs of ``gpu`` on ESXi ``esxi`` (the campaign must fit some
    lab; 8.0.3 offers every vGPU type, so the version gate runs and passes)."""
    path = tmp_path / "hosts.yml"
    path.write_text(
        "all:\n  children:\n    esxi_hosts:\n      hosts:\n        gpu-01.lab.example:\n"
        f"          miglab_host_gpus: [{{model: {gpu}, count: {count}}}]\n"
        f'          miglab_host_esxi_version: "{esxi}"\n'
        "          miglab_host_cpus: 256\n          miglab_host_memory_gb: 2048\n"
        "      vars: {miglab_host_cpu_overcommit: 2.0}\n"
    )
    return path


def one_line_errors(res, file) -> list[str]:
    """The command failed as a user error: exit 2, no traceback, every stderr line one
    ``error: FILE: FIELD: reason``; returns the lines."""
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    lines = res.stderr.splitlines()
    assert lines and all(line.startswith(f"error: {file}: ") for line in lines), lines
    return lines


def test_the_fixture_is_mig_parted_default_config():
    spec = load(DEFAULT.read_text(), str(DEFAULT))
    assert len(spec.configs) == 81
    balanced = spec.configs["all-balanced"]
    assert len(balanced) == 12 and all(e.device_filter for e in balanced)
    assert spec.configs["all-1g.10gb"][0].device_filter[3] == "0x20B210DE"


@pytest.mark.parametrize("file, gpu", CASES, ids=IDS)
def test_published_file_imports_for_the_gpu(file, gpu):
    scenarios, skipped = EXPECTED[(file, gpu)]
    result = mig_parted_to_campaign(file, gpu=gpu)
    doc = yaml.safe_load(result.text)
    assert doc["gpu"] == gpu and result.model == gpu
    assert {sid: body["vgpus"] for sid, body in doc["scenarios"].items()} == scenarios
    assert result.skipped == skipped.format(gpu=gpu)
    assert result.scenarios["all-1g-10gb"] == "all-1g.10gb"  # id -> mig-parted config name


@pytest.mark.parametrize("file, gpu", CASES, ids=IDS)
def test_published_file_result_validates(file, gpu, tmp_path):
    res = run_cli("gpu", "from-mig-parted", file, "--gpu", gpu, "--name", "published")
    assert res.returncode == 0, res.stderr
    # one summary line, nothing else, on stderr
    assert res.stderr.splitlines() == [EXPECTED[(file, gpu)][1].format(gpu=gpu)]
    campaign = tmp_path / "campaign.yml"
    campaign.write_text(res.stdout)
    lab = inventory(tmp_path, gpu)
    checked = run_cli("validate", campaign, "-i", lab)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(EXPECTED[(file, gpu)][0])} scenarios" in checked.stdout
    loaded, _ = load_checked(campaign, lab)
    assert loaded.gpu.name == gpu


def test_on_esxi_7_0_3_the_version_gate_refuses_the_configs_that_need_8_0_u3(tmp_path):
    """The import does not know the lab; validation does: a 7.0.3 host offers neither the CME
    nor the double-memory 1g type (NVIDIA AI Enterprise's footnote), so exactly those two configs
    are refused, one line each."""
    res = run_cli("gpu", "from-mig-parted", DEFAULT, "--gpu", A100, "--name", "published")
    campaign = tmp_path / "campaign.yml"
    campaign.write_text(res.stdout)
    checked = run_cli("validate", campaign, "-i", inventory(tmp_path, A100, esxi="7.0.3"))
    assert checked.returncode == 2
    lines = [line for line in checked.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 2, checked.stderr
    assert "scenarios.all-1g-10gb-me" in lines[0] and "needs vSphere 8.0 U3" in lines[0]
    assert "scenarios.all-1g-20gb" in lines[1] and "runs 7.0.3" in lines[1]


@pytest.mark.parametrize("gpu", [A100, H100])
def test_config_picks_one_config(gpu):
    res = run_cli("gpu", "from-mig-parted", DEFAULT, "--gpu", gpu, "--config", "all-balanced")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""  # the other configs were not asked for: nothing "skipped"
    doc = yaml.safe_load(res.stdout)
    assert doc["scenarios"] == {"all-balanced": {"vgpus": DEFAULT_80GB["all-balanced"]}}
    assert doc["mlperf"]["baseline"] == "all-balanced"


def test_config_picks_the_entry_of_a_config_for_the_gpu():
    # all-1g.10gb: 7x on the 80GB boards, 4x on the 40GB ones (two filtered entries)
    big = mig_parted_to_campaign(DEFAULT, gpu=A100, config="all-1g.10gb")
    small = mig_parted_to_campaign(DEFAULT, gpu="A100-PCIE-40GB", config="all-1g.10gb")
    assert yaml.safe_load(big.text)["scenarios"] == {"all-1g-10gb": {"vgpus": {"1g.10gb": 7}}}
    assert yaml.safe_load(small.text)["scenarios"] == {"all-1g-10gb": {"vgpus": {"1g.10gb": 4}}}


def test_config_without_gpu_takes_the_model_its_filters_name():
    res = run_cli("gpu", "from-mig-parted", DEFAULT, "--config", "all-1g.35gb")
    assert res.returncode == 0, res.stderr  # H200 141GB and GB300 (not in the catalog)
    assert yaml.safe_load(res.stdout)["gpu"] == "H200-SXM"


def test_unknown_config_names_the_known_ones():
    res = run_cli("gpu", "from-mig-parted", DEFAULT, "--gpu", A100, "--config", "all-1g.9gb")
    [line] = one_line_errors(res, DEFAULT)
    assert line == (
        f"error: {DEFAULT}: --config: unknown config 'all-1g.9gb'; the configs for "
        "A100-PCIE-80GB (8 of 81): all-1g.10gb, all-1g.10gb.me, all-1g.20gb, all-2g.20gb, "
        "all-3g.40gb, all-4g.40gb, all-7g.80gb, all-balanced"
    )
    res = run_cli("gpu", "from-mig-parted", EXAMPLE, "--config", "nope")
    [line] = one_line_errors(res, EXAMPLE)
    assert line.endswith(
        "--config: unknown config 'nope'; the file's configs (9): all-disabled, all-enabled, "
        "all-1g.5gb, all-1g.5gb.me, all-1g.10gb, all-2g.10gb, all-3g.20gb, all-balanced, "
        "custom-config"
    )


@pytest.mark.parametrize(
    "config, reason",
    [
        ("all-1g.5gb", "it uses profiles A100-PCIE-80GB does not have (1g.5gb; A100-PCIE-80GB"),
        ("all-1g.35gb", "its device-filter names other GPUs (PCI ids of A100-PCIE-80GB: "),
        ("all-disabled", "it disables MIG or lists no MIG device"),
        ("all-enabled", "it disables MIG or lists no MIG device"),
    ],
)
def test_config_that_does_not_apply_exits_2(config, reason):
    res = run_cli("gpu", "from-mig-parted", DEFAULT, "--gpu", A100, "--config", config)
    [line] = one_line_errors(res, DEFAULT)
    assert line.startswith(
        f"error: {DEFAULT}: mig-configs.{config}: does not apply to A100-PCIE-80GB: {reason}"
    )


def test_without_gpu_a_file_for_many_gpus_asks_for_one():
    [line] = one_line_errors(run_cli("gpu", "from-mig-parted", DEFAULT), DEFAULT)
    assert line.startswith(f"error: {DEFAULT}: --gpu: the file's device-filters name 10 GPU")
    assert line.endswith(": give --gpu MODEL")
    [line] = one_line_errors(run_cli("gpu", "from-mig-parted", EXAMPLE), EXAMPLE)
    assert line == (
        f"error: {EXAMPLE}: --gpu: no device-filter names a GPU model of the catalog: "
        "give --gpu MODEL"
    )


def test_unknown_gpu_exits_2():
    res = run_cli("gpu", "from-mig-parted", DEFAULT, "--gpu", "B9000")
    [line] = one_line_errors(res, DEFAULT)
    assert line.startswith(f"error: {DEFAULT}: --gpu: unknown GPU 'B9000'")


def test_no_config_applies_exits_2_with_the_summary():
    [line] = one_line_errors(run_cli("gpu", "from-mig-parted", EXAMPLE, "--gpu", "A30"), EXAMPLE)
    assert line.startswith(
        f"error: {EXAMPLE}: mig-configs: no config applies to A30: skipped 9 of 9 configs: "
    )


def test_a_bad_entry_is_one_line_with_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(DEFAULT.read_text().replace('"1g.10gb": 7', '"1g.10gb": seven', 1))
    [line] = one_line_errors(run_cli("gpu", "from-mig-parted", bad, "--gpu", A100), bad)
    assert line == (
        f"error: {bad}: mig-configs.all-1g.10gb[0].mig-devices.1g.10gb: "
        "the count must be an integer, got a string"
    )


# --- the rules, on a small file ----------------------------------------------------------------

RULES = """\
version: v1
mig-configs:
  mixed:                      # a filtered entry for the A100 80GB and one for every GPU
    - device-filter: ["0x20B010DE", "0x20B510DE"]
      devices: [0, 1]
      mig-enabled: true
      mig-devices: {"3g.40gb": 2}
    - devices: [2]
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
    - devices: [3]
      mig-enabled: false
  subsystem:                  # a subsystem id narrows the match to some boards: still this GPU
    - device-filter: "0x20B510DE:0x153310DE"
      devices: all
      mig-enabled: true
      mig-devices: {"7g.80gb": 1}
  other-entry-lacks:          # an entry without a filter using a profile this GPU lacks
    - device-filter: "0x20B510DE"
      devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 1}
    - devices: [1]
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
  too-many:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 8}
  zero-and-none:
    - devices: []
      mig-enabled: true
      mig-devices: {"1g.10gb": 1}
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 0, "2g.20gb": 1}
  foreign:
    - device-filter: ["0x233010DE", "0x20B210DE"]
      devices: all
      mig-enabled: false
  compute-instances:          # mig-parted's [C]c. form: no such vGPU
    - devices: all
      mig-enabled: true
      mig-devices: {"1c.3g.40gb": 1}
"""


def test_rules_of_applying_a_config(tmp_path):
    f = tmp_path / "rules.yaml"
    f.write_text(RULES)
    result = mig_parted_to_campaign(f, gpu=A100)
    doc = yaml.safe_load(result.text)
    assert doc["scenarios"] == {
        # devices [0, 1]: two GPUs' worth; devices [3], MIG off: nothing
        "mixed": {"vgpus": {"3g.40gb": 4, "1g.10gb": 7}},
        "subsystem": {"vgpus": {"7g.80gb": 1}},
        # devices: [] names no GPU; a count of 0 is no vGPU
        "zero-and-none": {"vgpus": {"2g.20gb": 1}},
    }
    assert result.skipped == (
        "skipped 4 of 7 configs: 1 has a device-filter that names other GPUs, "
        "2 use profiles A100-PCIE-80GB does not have (1g.5gb, 1c.3g.40gb), "
        "1 does not fit on one A100-PCIE-80GB"
    )
    # on an H100 the A100's entry of "mixed" is left out, the one for every GPU stays
    h100 = mig_parted_to_campaign(f, gpu=H100, config="mixed")
    assert yaml.safe_load(h100.text)["scenarios"] == {"mixed": {"vgpus": {"1g.10gb": 7}}}


def test_rules_result_validates(tmp_path):
    f = tmp_path / "rules.yaml"
    f.write_text(RULES)
    campaign = tmp_path / "c.yml"
    campaign.write_text(mig_parted_to_campaign(f, gpu=A100).text)
    loaded, _ = load_checked(campaign, inventory(tmp_path, A100))
    assert sorted(loaded.scenarios) == ["mixed", "subsystem", "zero-and-none"]


def test_a_config_that_does_not_fit_says_why(tmp_path):
    f = tmp_path / "rules.yaml"
    f.write_text(RULES)
    with pytest.raises(ValidationError) as err:
        mig_parted_to_campaign(f, gpu=A100, config="too-many")
    assert str(err.value) == (
        f"{f}: mig-configs.too-many: does not apply to A100-PCIE-80GB: "
        "8x 1g.10gb do not fit on one A100-PCIE-80GB"
    )
