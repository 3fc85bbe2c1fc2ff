"""Issue 17 item 9, what a figure is called: the report is no "MLPerf results" (not verified by
MLCommons), it says per figure what was measured (device, weights, inputs: a banner per distinct
combination, a device column), and the submission verdict is never "yes" for random weights,
synthetic inputs, a CPU run, a simulated lab or a sum over independent LoadGen instances -- in
the core's verdict (``RunRecord``, ``RunTotal``, ``Group``), not only in the rendering.

The logs are Dell's real MLPerf v1.1 R750xa MIG ResNet50 Offline detail log (600 s, LoadGen
VALID, submission rules met as a log), copied unedited; each test adds the ``miglab_run.json``
it is about.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from miglab.core.mlperf_rules import combined_problems, measurement_problems
from miglab.core.runs import parse_run
from miglab.mlperf.results.aggregate import aggregate_results, device_label, measured_label
from miglab.mlperf.results.report import write_report
from testlib import FIXTURES

OFFLINE = (
    FIXTURES
    / "mlperf/inference_results_v1.1/closed/Dell/results"
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
    / "mlperf_log_detail.txt"
)
TITLE = "MLPerf Inference runs (not verified by MLCommons)"
VGPU = {
    "kind": "cuda",
    "name": "NVIDIA A100D-2-20C",
    "vgpu_type": "NVIDIA A100D-2-20C",
    "uuid": "GPU-57abc772-1dd3-11b2-8fae-e31710b8f307",
    "driver": "535.216.01",
    "cuda": "12.2",
}
CPU = {"kind": "cpu", "name": "Intel(R) Xeon(R) Platinum 8480+", "cpus": 16}
REAL = {"simulated": False, "weights": "real", "inputs": "real", "device": VGPU}
SIM = {"simulated": True, "weights": "random", "inputs": "synthetic", "device": CPU}
SUM3 = (
    "the sum of 3 independent LoadGen instances (one per VM), not one LoadGen run of one system "
    "under test"
)


def run(root: Path, scen: str, vm: str, meta: dict | None, n: int = 1) -> Path:
    d = root / scen / vm / "resnet50" / "Offline" / "performance" / f"run_{n}"
    d.mkdir(parents=True)
    shutil.copy(OFFLINE, d / "mlperf_log_detail.txt")
    if meta is not None:
        (d / "miglab_run.json").write_text(json.dumps({"backend": "reference", **meta}))
    return d


# --- the verdict, in the core ------------------------------------------------------------------
def test_measurement_problems():
    assert measurement_problems() == []
    real = {"simulated": False, "weights": "real", "inputs": "real", "device_kind": "cuda"}
    assert measurement_problems(**real) == []
    sim = {"simulated": True, "weights": "random", "inputs": "synthetic", "device_kind": "cpu"}
    assert measurement_problems(**sim) == [
        "simulated lab: no real accelerator was measured",
        "random weights: no accuracy run can back the figure",
        "synthetic inputs: not the benchmark's dataset",
        "measured on the CPU, not on an accelerator",
    ]
    assert combined_problems(1) == []
    assert combined_problems(3) == [SUM3]
    assert combined_problems(2, "max")[0].startswith("the worst of 2 independent LoadGen")


@pytest.mark.parametrize(
    ("meta", "why"),
    [
        ({**REAL, "weights": "random"}, "random weights: no accuracy run can back the figure"),
        ({**REAL, "inputs": "synthetic"}, "synthetic inputs: not the benchmark's dataset"),
        ({**REAL, "device": CPU}, "measured on the CPU, not on an accelerator"),
        ({**REAL, "simulated": True}, "simulated lab: no real accelerator was measured"),
    ],
)
def test_a_valid_600_s_log_is_no_submission_when_its_metadata_says_so(tmp_path, meta, why):
    d = run(tmp_path, "s1", "vm1", meta)
    r = parse_run(d)
    assert r.valid and not r.submission_valid
    assert r.submission_reasons == [why]
    assert r.as_json()["submission_valid"] is False


def test_real_weights_inputs_and_gpu_keep_the_logs_verdict(tmp_path):
    r = parse_run(run(tmp_path, "s1", "vm1", REAL))
    assert r.submission_valid and r.submission_reasons == []
    assert r.meta.device == VGPU


def test_group_verdict_one_vm_and_a_sum_over_vms(tmp_path):
    root = tmp_path / "camp"
    run(root, "s1", "vm1", REAL)
    for vm in ("vm1", "vm2", "vm3"):
        run(root, "s6", vm, REAL)
    agg = aggregate_results(root, baseline="s1")
    s1, s6 = agg.group("s1", "resnet50", "Offline"), agg.group("s6", "resnet50", "Offline")
    assert s1.submission_valid and s1.submission_reasons == []
    (r,) = s6.runs
    assert r.included and r.total == 3 * 136656
    assert not r.submission_valid and r.submission_reasons == [SUM3]
    assert not s6.submission_valid and s6.submission_reasons == [SUM3]
    data = agg.as_json()
    g6 = next(g for g in data["groups"] if g["scenario"] == "s6")
    assert g6["submission_valid"] is False and g6["submission_reasons"] == [SUM3]
    assert g6["devices"] == ["vGPU NVIDIA A100D-2-20C"]


def test_group_reasons_are_said_once_without_the_vm(tmp_path):
    root = tmp_path / "camp"
    for vm in ("vm1", "vm2"):
        run(root, "s2", vm, SIM)
    g = aggregate_results(root).group("s2", "resnet50", "Offline")
    assert g.submission_reasons == [
        "simulated lab: no real accelerator was measured",
        "random weights: no accuracy run can back the figure",
        "synthetic inputs: not the benchmark's dataset",
        "measured on the CPU, not on an accelerator",
        "the sum of 2 independent LoadGen instances (one per VM), not one LoadGen run of one "
        "system under test",
    ]


# --- labels ------------------------------------------------------------------------------------
def test_device_and_measured_labels(tmp_path):
    sim = parse_run(run(tmp_path, "s1", "vm1", SIM)).meta
    assert device_label(sim) == "CPU (SIMULATED lab; Intel(R) Xeon(R) Platinum 8480+)"
    assert device_label(sim, detail=True).endswith("; 16 logical CPUs)")
    assert measured_label(sim) == (
        "CPU (SIMULATED lab; Intel(R) Xeon(R) Platinum 8480+), random weights, synthetic inputs"
    )
    real = parse_run(run(tmp_path, "s2", "vm1", REAL)).meta
    assert measured_label(real) == "vGPU NVIDIA A100D-2-20C, real weights, real inputs"
    assert device_label(real, detail=True) == (
        "vGPU NVIDIA A100D-2-20C (driver 535.216.01, CUDA 12.2, "
        "UUID GPU-57abc772-1dd3-11b2-8fae-e31710b8f307)"
    )
    passthrough = {**REAL, "device": {"kind": "cuda", "name": "NVIDIA H200"}}
    assert device_label(parse_run(run(tmp_path, "s3", "vm1", passthrough)).meta) == (
        "GPU NVIDIA H200"
    )
    none = parse_run(run(tmp_path, "s4", "vm1", None)).meta
    assert measured_label(none) == (
        "device not recorded, weights not recorded, inputs not recorded"
    )


# --- the report --------------------------------------------------------------------------------
@pytest.fixture
def mixed(tmp_path):
    """s1: one simulated CPU VM; s6: three vGPU VMs with real weights and inputs."""
    root = tmp_path / "results" / "camp"
    run(root, "s1", "vm1", SIM)
    for vm in ("vm1", "vm2", "vm3"):
        run(root, "s6", vm, REAL)
    return write_report(aggregate_results(root, baseline="s1"), tmp_path / "report")


def test_report_title_is_not_mlperf_results(mixed):
    md = mixed["report.md"].read_text()
    html = mixed["report.html"].read_text()
    data = json.loads(mixed["results.json"].read_text())
    assert md.startswith(f"# {TITLE}\n")
    assert f"<title>{TITLE}</title>" in html and f"<h1>{TITLE}</h1>" in html
    assert data["title"] == TITLE and data["verified_by_mlcommons"] is False
    for text in (md, html):
        assert "MLPerf Inference results" not in text
        assert "Not verified by MLCommons Association." in text


def test_report_banner_per_device_weights_and_inputs(mixed):
    md = mixed["report.md"].read_text()
    sim = "CPU (SIMULATED lab; Intel(R) Xeon(R) Platinum 8480+), random weights, synthetic inputs"
    real = "vGPU NVIDIA A100D-2-20C, real weights, real inputs"
    # at the top, naming the figures each is about
    assert f"> **MEASURED: {sim} (s1 resnet50 Offline).**" in md
    assert f"> **MEASURED: {real} (s6 resnet50 Offline).**" in md
    # and next to the figures: above the section's tables
    section = md[md.index("## camp: resnet50 Offline") :]
    assert section.index(f"**Measured: {sim} (s1).**") < section.index("| scenario |")
    assert f"**Measured: {real} (s6).**" in section
    html = mixed["report.html"].read_text()
    assert f"<p class='banner'>MEASURED: {real} (s6 resnet50 Offline).</p>" in html
    data = json.loads(mixed["results.json"].read_text())
    assert data["measured"] == [
        {"label": sim, "groups": ["camp s1 resnet50 Offline"]},
        {"label": real, "groups": ["camp s6 resnet50 Offline"]},
    ]
    assert f"MEASURED: {sim} (s1 resnet50 Offline)." in data["banners"]
    assert data["cpu_runs"] is True and data["synthetic_inputs"] is True


def test_report_device_columns_and_submission_cells(mixed):
    md = mixed["report.md"].read_text().splitlines()
    head = next(line for line in md if line.startswith("| scenario | VMs |"))
    assert head.endswith("| valid runs | device | submission rules |")
    s1 = next(line for line in md if line.startswith("| s1 (baseline) |")).split(" | ")
    assert s1[-2] == "CPU (SIMULATED lab; Intel(R) Xeon(R) Platinum 8480+)"
    assert s1[-1] == (
        "no (simulated lab: no real accelerator was measured; random weights: no accuracy run "
        "can back the figure; synthetic inputs: not the benchmark's dataset; measured on the "
        "CPU, not on an accelerator) |"
    )
    s6 = next(line for line in md if line.startswith("| s6 |")).split(" | ")
    assert s6[-2] == "vGPU NVIDIA A100D-2-20C"
    assert s6[-1] == f"no ({SUM3}) |"  # real weights, inputs, GPU: still a sum of three
    assert not [line for line in md if line.endswith("| yes |")]
    runs_head = next(line for line in md if line.startswith("| scenario | run | total |"))
    assert runs_head.endswith("| why not | device |")
    assert any(
        line.startswith("| s6 | 1 | 409,968 |") and line.endswith("| vGPU NVIDIA A100D-2-20C |")
        for line in md
    )
    place = next(line for line in md if line.startswith("| s6 | vm2 |"))
    assert place.endswith(
        "| vGPU NVIDIA A100D-2-20C (driver 535.216.01, CUDA 12.2, "
        "UUID GPU-57abc772-1dd3-11b2-8fae-e31710b8f307) |"
    )


def test_one_real_gpu_vm_with_real_data_may_say_yes(tmp_path):
    root = tmp_path / "camp"
    run(root, "s1", "vm1", REAL)
    written = write_report(aggregate_results(root), tmp_path / "report")
    md = written["report.md"].read_text()
    row = next(line for line in md.splitlines() if line.startswith("| s1 |"))
    assert row.endswith("| vGPU NVIDIA A100D-2-20C | yes |")
    assert "> **MEASURED: vGPU NVIDIA A100D-2-20C, real weights, real inputs (every run).**" in md
    rows = written["results.csv"].read_text().splitlines()
    assert "devices" in rows[0] and "vGPU NVIDIA A100D-2-20C" in rows[1]


def test_cli_says_what_was_measured(tmp_path):
    from contextlib import redirect_stdout
    from io import StringIO

    from miglab.cli.commands import main

    root = tmp_path / "camp"
    d = run(root, "s1", "vm1", SIM)
    for vm in ("vm1", "vm2", "vm3"):
        run(root, "s6", vm, REAL)
    out = StringIO()
    with redirect_stdout(out):
        assert main(["results", "aggregate", str(root)]) == 0
    text = out.getvalue()
    assert "  measured: vGPU NVIDIA A100D-2-20C, real weights, real inputs\n" in text
    assert f"  submission rules: not met: {SUM3}\n" in text
    out = StringIO()
    with redirect_stdout(out):
        assert main(["results", "parse", str(d)]) == 0
    text = out.getvalue()
    cpu = "CPU (SIMULATED lab; Intel(R) Xeon(R) Platinum 8480+; 16 logical CPUs)"
    assert f"  device: {cpu}\n" in text
    assert "  run: simulated=True backend=reference weights=random inputs=synthetic\n" in text
    assert "not met: simulated lab: no real accelerator was measured; random weights" in text
