"""The report: files, a valid PNG, self-contained HTML, the numbers in the tables, the banners.

The results tree is made of copies of Dell's real MLPerf v1.1 R750xa MIG ResNet50 Offline detail
log, edited only in ``result_samples_per_second`` (to give the runs and VMs different values),
and, where said, with a ``miglab_run.json`` added or one VM's ``result_validity`` flipped.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import struct
from contextlib import redirect_stdout

import pytest

from miglab.cli.commands import main
from miglab.mlperf.results.aggregate import aggregate_results, campaign_context
from miglab.mlperf.results.report import format_value, write_report
from testlib import FIXTURES, SEED, run_cli

OFFLINE = (
    FIXTURES
    / "mlperf/inference_results_v1.1/closed/Dell/results"
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
    / "mlperf_log_detail.txt"
)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LAYOUT = {
    "s1": {"vm1": [136656, 135000, 138312]},
    "s6": {
        "vm1": [82000, 81700, 82300],
        "vm2": [41000, 40800, 41200],
        "vm3": [21541, 21500, 21582],
    },
}


def edit_value(text: str, key: str, value) -> str:
    out = []
    done = False
    for line in text.splitlines(keepends=True):
        if not done and line.startswith(":::MLLOG") and f'"key": "{key}"' in line:
            rec = json.loads(line[len(":::MLLOG ") :])
            rec["value"] = value
            line, done = ":::MLLOG " + json.dumps(rec) + "\n", True
        out.append(line)
    assert done
    return "".join(out)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "results" / "seed"
    real = OFFLINE.read_text()
    for scen, vms in LAYOUT.items():
        for vm, values in vms.items():
            for n, v in enumerate(values, start=1):
                d = root / scen / vm / "resnet50" / "Offline" / "performance" / f"run_{n}"
                d.mkdir(parents=True)
                (d / "mlperf_log_detail.txt").write_text(
                    edit_value(real, "result_samples_per_second", v)
                )
    return root


def check_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 400 and height >= 300
    assert data[-8:-4] == b"IEND"
    return data


def test_report_files_and_numbers(tree, tmp_path):
    ctx = campaign_context(SEED)
    agg = aggregate_results(tree, baseline="s1", plan=ctx["plan"], runs=3)
    out = tmp_path / "report"
    written = write_report(agg, out)
    assert set(written) == {
        "report.md",
        "report.html",
        "results.csv",
        "results.json",
        "chart-seed-resnet50-Offline.png",
    }
    assert all(p.is_file() and p.stat().st_size > 0 for p in written.values())
    png = check_png(written["chart-seed-resnet50-Offline.png"])

    md = written["report.md"].read_text()
    assert "![resnet50 Offline](chart-seed-resnet50-Offline.png)" in md
    s1_row = next(line for line in md.splitlines() if line.startswith("| s1 (baseline) |"))
    assert s1_row.split(" | ")[1:10] == [
        "1",
        "1x 7g.80gb",
        "136,656",
        "1,656",
        "135,000 - 138,312",
        "vm1 (7g.80gb): 136,656",
        "2.42 %",
        "baseline",
        "3/3 ok",
    ]
    s6_row = next(line for line in md.splitlines() if line.startswith("| s6 |"))
    cells = s6_row.split(" | ")
    assert cells[1:4] == ["3", "1x 4g.40gb + 1x 2g.20gb + 1x 1g.10gb", "144,541"]
    assert cells[6] == "vm1 (4g.40gb): 82,000, vm2 (2g.20gb): 41,000, vm3 (1g.10gb): 21,541"
    assert cells[8] == "+5.77 %"
    assert "| s6 | 2 | 144,000 | vm1: 81,700, vm2: 40,800, vm3: 21,500 | 100.0% |" in md
    assert "None: every run found was counted." in md
    assert "miglab_run.json) is missing" in md  # no metadata: said so

    html = written["report.html"].read_text()
    assert base64.b64encode(png).decode() in html  # the chart itself is embedded
    assert "src='data:image/png;base64," in html and "src='http" not in html
    assert "<td>144,541</td>" in html and "<td>+5.77 %</td>" in html

    rows = list(csv.DictReader(io.StringIO(written["results.csv"].read_text())))
    assert [(r["scenario"], r["mean"], r["improvement_pct"]) for r in rows] == [
        ("s1", "136656", "0.000"),
        ("s6", "144541", "5.770"),
    ]
    data = json.loads(written["results.json"].read_text())
    s6 = next(g for g in data["groups"] if g["scenario"] == "s6")
    assert s6["per_vm_mean"] == {"vm1": 82000, "vm2": 41000, "vm3": 21541}
    assert s6["profiles"] == {"vm1": "4g.40gb", "vm2": "2g.20gb", "vm3": "1g.10gb"}


def test_simulated_random_weights_are_said_everywhere(tree, tmp_path):
    # added: a miglab_run.json at the campaign level saying simulated, random weights
    (tree / "miglab_run.json").write_text(
        json.dumps({"simulated": True, "backend": "reference", "weights": "random"})
    )
    agg = aggregate_results(tree, baseline="s1")
    written = write_report(agg, tmp_path / "out")
    md = written["report.md"].read_text()
    assert md.startswith(
        "# MLPerf Inference runs (not verified by MLCommons)\n\n> **SIMULATED RUNS:"
    )
    assert "(reference)" in md and "> **RANDOM WEIGHTS:" in md
    html = written["report.html"].read_text()
    assert "<p class='banner'>SIMULATED RUNS:" in html
    data = json.loads(written["results.json"].read_text())
    assert data["simulated"] is True and data["random_weights"] is True
    assert data["banners"][0].startswith("SIMULATED RUNS")


def test_excluded_runs_listed_with_vm_and_reason(tree, tmp_path):
    # edit: vm2's run_1 result_validity flipped to INVALID
    f = tree / "s6/vm2/resnet50/Offline/performance/run_1/mlperf_log_detail.txt"
    f.write_text(edit_value(f.read_text(), "result_validity", "INVALID"))
    written = write_report(aggregate_results(tree, baseline="s1"), tmp_path / "out")
    md = written["report.md"].read_text()
    assert "- seed s6 resnet50 Offline run_1: vm2: LoadGen says INVALID" in md
    s6_row = next(line for line in md.splitlines() if line.startswith("| s6 |"))
    assert "| 2/3 partial |" in s6_row
    assert "| s6 | 1 | - |" in md and "| NO | vm2: LoadGen says INVALID |" in md
    check_png(written["chart-seed-resnet50-Offline.png"])


def test_cli_report(tree, tmp_path):
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["report", str(tree), "-o", str(tmp_path / "r"), "--campaign", str(SEED)])
    assert rc == 0
    assert out.getvalue().splitlines()[0] == f"wrote {tmp_path / 'r' / 'report.md'}"
    md = (tmp_path / "r" / "report.md").read_text()
    assert "Baseline scenario: s1." in md and "+5.77 %" in md
    check_png(tmp_path / "r" / "chart-seed-resnet50-Offline.png")


def test_second_report_rewrites_nothing(tree, tmp_path):
    """Same results, same bytes (no timestamps, PNGs without a Software tag): the second report
    writes nothing; a changed result rewrites what shows it."""
    agg = aggregate_results(tree, baseline="s1")
    first = write_report(agg, tmp_path / "out")
    assert first.changed == list(first) and first.unchanged == []
    before = {n: (p.read_bytes(), p.stat().st_mtime_ns) for n, p in first.items()}
    second = write_report(aggregate_results(tree, baseline="s1"), tmp_path / "out")
    assert second.changed == [] and sorted(second.unchanged) == sorted(first)
    assert {n: (p.read_bytes(), p.stat().st_mtime_ns) for n, p in second.items()} == before
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]
    png = first["chart-seed-resnet50-Offline.png"].read_bytes()
    assert b"Software" not in png and b"tIME" not in png

    d = tree / "s6" / "vm1" / "resnet50" / "Offline" / "performance" / "run_1"
    log = d / "mlperf_log_detail.txt"
    log.write_text(edit_value(log.read_text(), "result_samples_per_second", 90000))
    third = write_report(aggregate_results(tree, baseline="s1"), tmp_path / "out")
    assert set(third.changed) == set(first)  # every output shows s6's numbers


def test_cli_report_twice_prints_unchanged(tree, tmp_path):
    """`miglab report` in two processes (two hash seeds): the second prints no "wrote " (the
    report playbook's changed_when)."""
    out_dir = tmp_path / "r"
    first = run_cli("report", tree, "-o", out_dir, "--campaign", SEED)
    assert first.returncode == 0, first.stderr
    assert [line.split()[0] for line in first.stdout.splitlines()] == ["wrote"] * 5
    second = run_cli("report", tree, "-o", out_dir, "--campaign", SEED)
    assert second.returncode == 0, second.stderr
    assert "wrote " not in second.stdout
    assert second.stdout.splitlines() == [
        line.replace("wrote ", "unchanged ", 1) for line in first.stdout.splitlines()
    ]


def test_format_value():
    assert format_value(136656) == "136,656"
    assert format_value(40002.8) == "40,002.8"
    assert format_value(8475.47) == "8,475.47"
    assert format_value(12981655, "ns") == "12.982 ms"
    assert format_value(None) == "-"


def test_a_failed_run_heads_the_report(tree, tmp_path):
    agg = aggregate_results(tree, baseline="s1", runs=3)
    failure = "r750xa-a100-80gb-mig-s6-vm1: Power the wave's VMs on: cannot power on"
    written = write_report(agg, tmp_path / "report", failures=[failure])
    md = written["report.md"].read_text()
    assert f"THE CAMPAIGN RUN FAILED: {failure}" in md.split("## ")[0]
    assert "THE CAMPAIGN RUN FAILED" in written["report.html"].read_text()
    assert json.loads(written["results.json"].read_text())["banners"][0].endswith(failure)
