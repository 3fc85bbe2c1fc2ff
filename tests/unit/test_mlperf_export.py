"""``miglab results export``: a results tree written as an MLCommons submission tree, one system
per VM, checked with the round's rules.

Trees are built from Dell's published MLPerf v1.1 R750xa MIG ResNet50 Offline and Server logs
(``tests/fixtures/mlperf``, provenance in its README). What each test edits, and why:

* the seeds (``effective_*_rng_seed``) are set to the v5.0 round's, as a LoadGen of that round
  would have logged them (the published logs are v1.1's);
* ``result_samples_per_second`` per VM and run, to see which run becomes ``run_1``;
* the compliance runs' ``requested_accuracy_log_sampling_target`` (TEST01) and
  ``requested_performance_issue_same`` (TEST04): what LoadGen logs when it read the test's
  audit.config;
* ``miglab_run.json`` beside each VM's runs: a real vGPU run, or a simulated / random-weights /
  CPU one.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from miglab.cli.commands import main
from miglab.errors import ValidationError
from miglab.mlperf.results.submission import (
    MEANINGFUL_FIELDS,
    ROUNDS,
    SYSTEM_FIELDS,
    UNKNOWN,
    checker_benchmark,
    plan_export,
)
from testlib import FIXTURES, SEED, edit_mllog

DELL = (
    FIXTURES
    / "mlperf/inference_results_v1.1/closed/Dell/results"
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50"
)
V50_SEEDS = {f"effective_{k}": v for k, v in ROUNDS["v5.0"].seeds.items()}
ACC_ENTRIES = [{"seq_id": i, "qsl_idx": i, "data": "0A000000"} for i in range(4)]
REAL = {
    "schema": "miglab-run/1",
    "simulated": False,
    "backend": "reference",
    "sut": "torch",
    "weights": "real",
    "inputs": "real",
    "precision": "fp16",
    "model": "ResNet50 v1.5 (torchvision), BatchNorm folded, channels_last",
    "device": {
        "kind": "cuda",
        "name": "NVIDIA A100D-2-20C",
        "vgpu_type": "NVIDIA A100D-2-20C",
        "driver": "535.216.01",
        "cuda": "12.2",
    },
    "profile": "2g.20gb",
    "placement": {"gpu": "0000:3b:00.0", "mig_slot": 4},
}
# every field miglab cannot know, as a lab would give them (--system-info)
SYSTEM_INFO = {
    "host_processor_model_name": "Intel Xeon Gold 6338",
    "host_processors_per_node": 2,
    "host_storage_capacity": "100 GB (VM disk)",
    "host_storage_type": "VMFS virtual disk",
    "operating_system": "Ubuntu 22.04",
    "host_memory_configuration": "64 GB of the host's 16x 64 GB DDR4",
    "accelerator_host_interconnect": "PCIe Gen4 x16",
    "accelerator_memory_configuration": "HBM2e",
    "cooling": "air",
    "host_processor_core_count": "32 vCPUs (VM)",
    "host_memory_capacity": "64 GB (VM)",
    "accelerator_model_name": "NVIDIA A100-PCIE-80GB MIG 2g.20gb (vGPU A100D-2-20C)",
    "measurements": {
        "input_data_types": "fp16",
        "starting_weights_filename": "resnet50_v1.pth",
    },
}


def _log(mlscen: str, values: dict | None = None) -> str:
    text = (DELL / mlscen / "performance/run_1/mlperf_log_detail.txt").read_text()
    return edit_mllog(text, {**V50_SEEDS, **(values or {})})


def _summary(mlscen: str) -> str:
    return (DELL / mlscen / "performance/run_1/mlperf_log_summary.txt").read_text()


def build(
    root: Path,
    vms=("vm1", "vm2"),
    meta: dict | None = None,
    scenarios=("Offline", "Server"),
    values: dict | None = None,
    accuracy=True,
    compliance=True,
    campaign="lab",
    lab_scenario="s6",
) -> Path:
    """results/<campaign>/<lab_scenario>/<vm>/resnet50/<scenario>/...: 3 runs per VM (Offline
    values from ``values[vm]``), an accuracy run, TEST01 and TEST04; returns the results
    folder."""
    results = root / "results"
    for vm in vms:
        vdir = results / campaign / lab_scenario / vm
        vdir.mkdir(parents=True)
        (vdir / "miglab_run.json").write_text(
            json.dumps({**(meta or REAL), "vm": f"{campaign}-{lab_scenario}-{vm}"})
        )
        for mlscen in scenarios:
            sdir = vdir / "resnet50" / mlscen
            for n in (1, 2, 3):
                d = sdir / "performance" / f"run_{n}"
                d.mkdir(parents=True)
                edits = {}
                if mlscen == "Offline" and values:
                    edits["result_samples_per_second"] = values[vm][n - 1]
                (d / "mlperf_log_detail.txt").write_text(_log(mlscen, edits))
                if not edits:
                    (d / "mlperf_log_summary.txt").write_text(_summary(mlscen))
            if accuracy:
                a = sdir / "accuracy" / "run_1"
                a.mkdir(parents=True)
                (a / "mlperf_log_detail.txt").write_text(_log(mlscen))
                (a / "mlperf_log_summary.txt").write_text(_summary(mlscen))
                (a / "accuracy.txt").write_text(
                    "accuracy=76.500%, good=38250, total=50000\nhash=0123abcd\n"
                )
                (a / "mlperf_log_accuracy.json").write_text(json.dumps(ACC_ENTRIES))
            if compliance:
                for test, key in (
                    ("TEST01", {"requested_accuracy_log_sampling_target": 4096}),
                    ("TEST04", {"requested_performance_issue_same": True}),
                ):
                    t = sdir / test / "performance" / "run_1"
                    t.mkdir(parents=True)
                    (t / "mlperf_log_detail.txt").write_text(_log(mlscen, key))
                    (t / "mlperf_log_summary.txt").write_text(_summary(mlscen))
                    if test == "TEST01":
                        (sdir / test / "accuracy").mkdir()
                        (sdir / test / "accuracy" / "mlperf_log_accuracy.json").write_text(
                            json.dumps(ACC_ENTRIES[:2])
                        )
    return results


def run_main(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def export(results: Path, dest: Path, *extra, info: dict | None = SYSTEM_INFO):
    args = [
        "results",
        "export",
        str(results),
        "--submission",
        str(dest),
        "--round",
        "v5.0",
        "--submitter",
        "Lab",
    ]
    if info is not None:
        f = dest.parent / "system-info.json"
        f.write_text(json.dumps(info))
        args += ["--system-info", str(f)]
    return run_main(*args, *extra)


# --- names ---------------------------------------------------------------------------------------
def test_benchmark_names_are_the_checkers():
    assert checker_benchmark("resnet50") == "resnet"
    assert checker_benchmark("bert-99") == "bert-99"
    assert checker_benchmark("bert") == "bert-99"
    assert checker_benchmark("bert-99.9") == "bert-99.9"
    assert checker_benchmark("gptj-99") is None  # not a benchmark miglab runs: not exported


# --- a tree that passes ---------------------------------------------------------------------------
def test_a_complete_real_run_exports_and_passes(tmp_path):
    results = build(tmp_path)
    dest = tmp_path / "submission"
    rc, out, err = export(results, dest)
    assert rc == 0, out + err
    assert out == ""
    assert "ok: wrote 4 result(s) of 2 system(s)" in err
    desc = json.loads((dest / "closed/Lab/systems/lab-s6-vm1.json").read_text())
    assert "ran at the same time as 1 other VM(s) of lab scenario s6" in desc["hw_notes"]
    base = dest / "closed" / "Lab"
    assert sorted(p.name for p in (base / "systems").iterdir()) == [
        "lab-s6-vm1.json",
        "lab-s6-vm2.json",
    ]
    for scen in ("Offline", "Server"):
        res = base / "results/lab-s6-vm1/resnet" / scen
        assert sorted(p.name for p in (res / "performance/run_1").iterdir()) == [
            "mlperf_log_detail.txt",
            "mlperf_log_summary.txt",
        ]
        assert sorted(p.name for p in (res / "accuracy").iterdir()) == [
            "accuracy.txt",
            "mlperf_log_accuracy.json",
            "mlperf_log_detail.txt",
            "mlperf_log_summary.txt",
        ]
        meas = base / "measurements/lab-s6-vm1/resnet" / scen
        assert sorted(p.name for p in meas.iterdir()) == [
            "README.md",
            f"lab-s6-vm1_reference-torch_{scen}.json",
            "mlperf.conf",
            "user.conf",
        ]
        comp = base / "compliance/lab-s6-vm1/resnet" / scen
        assert (comp / "TEST01/verify_accuracy.txt").read_text().strip().endswith("TEST PASS")
        assert (comp / "TEST01/verify_performance.txt").read_text().strip().endswith("TEST PASS")
        assert (comp / "TEST04/verify_performance.txt").read_text().strip().endswith("TEST PASS")
        assert (comp / "TEST01/performance/run_1/mlperf_log_detail.txt").is_file()
        assert (comp / "TEST01/accuracy/mlperf_log_accuracy.json").is_file()
    assert (base / "code/resnet/README.md").is_file()
    # the lab's sum is beside the tree, named as what it is, and nowhere in it
    readme = (dest / "MIGLAB_EXPORT.md").read_text()
    assert "sum over independent LoadGen instances, not an MLPerf result" in readme
    assert sorted(p.name for p in dest.iterdir()) == ["MIGLAB_EXPORT.md", "closed"]
    # nothing of miglab's own files or a staging folder left
    assert not list(dest.rglob("miglab_run.json")) and not list(dest.rglob("MANIFEST.sha256"))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_systems_json_has_every_field_the_checker_requires(tmp_path):
    # the seed campaign's s4: one 2g.20gb VM
    camp = "r750xa-a100-80gb-mig"
    results = build(
        tmp_path, vms=("vm1",), scenarios=("Offline",), campaign=camp, lab_scenario="s4"
    )
    dest = tmp_path / "submission"
    export(results, dest, "--campaign", str(SEED), info=None)
    system = f"{camp}-s4-vm1"
    desc = json.loads((dest / f"closed/Lab/systems/{system}.json").read_text())
    assert set(SYSTEM_FIELDS) <= set(desc)
    assert all(desc[k] not in ("", None) for k in MEANINGFUL_FIELDS)
    assert desc["division"] == "closed" and desc["submitter"] == "Lab"
    assert desc["status"] == "available" and desc["system_type"] == "datacenter"
    assert desc["accelerators_per_node"] == 1 and desc["number_of_nodes"] == 1
    assert (
        desc["accelerator_model_name"]
        == "NVIDIA A100-PCIE-80GB MIG 2g.20gb (vGPU NVIDIA A100D-2-20C)"
    )
    assert desc["accelerator_memory_capacity"] == "20 GB"
    assert desc["host_processor_core_count"] == "32 vCPUs (VM)"  # the seed campaign's VM size
    assert desc["host_memory_capacity"] == "64 GB (VM)"
    assert "Virtualised" in desc["hw_notes"] and "0000:3b:00.0" in desc["hw_notes"]
    assert "other VM" not in desc["hw_notes"]  # s4 has one VM
    assert "LoadGen ran in the VM" in desc["sw_notes"]
    assert "driver 535.216.01" in desc["other_software_stack"]
    assert desc["operating_system"] == UNKNOWN  # not recorded: marked, never guessed
    meas = json.loads(
        (dest / f"closed/Lab/measurements/{system}/resnet/Offline"
         / f"{system}_reference-torch_Offline.json").read_text()
    )  # fmt: skip
    assert meas["weight_data_types"] == "fp16" and meas["retraining"] == "No"
    assert "BatchNorm folded" in meas["weight_transformations"]
    assert meas["starting_weights_filename"] == UNKNOWN


def test_unknown_fields_are_listed_one_line_each(tmp_path):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",))
    rc, out, _ = export(results, tmp_path / "submission", info=None)
    assert rc == 1
    lines = out.splitlines()
    assert (
        "closed/Lab/systems/lab-s6-vm1.json: operating_system: not recorded by miglab; "
        "fill it in" in lines
    )
    assert any("Offline.json: input_data_types: not recorded" in line for line in lines)
    # v5.0 datacenter: ResNet needs Server too
    assert (
        "closed/Lab/results/lab-s6-vm1/resnet: v5.0 datacenter requires the scenario(s) "
        "Server as well" in lines
    )


def test_run_1_is_the_median_of_the_counted_runs(tmp_path):
    values = {"vm1": [136000, 140000, 138000], "vm2": [50000, 52000, 51000]}
    results = build(tmp_path, values=values, scenarios=("Offline",))
    dest = tmp_path / "submission"
    plan = plan_export(results, round_name="v5.0", submitter="Lab", system_info=SYSTEM_INFO)
    picked = {p.system: p for p in plan.picks}
    assert picked["lab-s6-vm1"].record.value == 138000
    assert picked["lab-s6-vm1"].record.run_dir.endswith("run_3")
    assert picked["lab-s6-vm2"].record.value == 51000
    assert "median of the 3 run(s)" in picked["lab-s6-vm1"].why
    # the multi-VM totals are lab metrics, never a result
    (metric,) = plan.lab_metrics
    assert metric["vms"] == 2 and metric["kind"].startswith("sum over independent LoadGen")
    assert metric["why_not_a_result"]
    export(results, dest)
    log = dest / "closed/Lab/results/lab-s6-vm1/resnet/Offline/performance/run_1"
    assert '"value": 138000' in (log / "mlperf_log_detail.txt").read_text()


def test_v6_layout_puts_everything_under_results(tmp_path):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",))
    dest = tmp_path / "submission"
    rc, out, _ = export(
        results, dest, "--round", "v6.0", "--division", "open", "--allow-unsubmittable"
    )
    base = dest / "open/Lab"
    res = base / "results/lab-s6-vm1/resnet/Offline"
    assert {p.name for p in res.iterdir()} >= {
        "measurements.json", "user.conf", "mlperf.conf", "README.md", "performance", "accuracy",
        "TEST01", "TEST04",
    }  # fmt: skip
    assert (base / "src/resnet/README.md").is_file()
    assert not (base / "measurements").exists() and not (base / "compliance").exists()
    # the v5.0 seeds are not v6.0's
    assert rc == 1 and "is not the v6.0 round's" in out


def test_conf_files_say_what_they_are(tmp_path):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",))
    dest = tmp_path / "submission"
    export(results, dest)
    meas = dest / "closed/Lab/measurements/lab-s6-vm1/resnet/Offline"
    user = (meas / "user.conf").read_text()
    conf = (meas / "mlperf.conf").read_text()
    assert "*.Offline.offline_expected_qps = 155600" in user
    assert "*.Offline.performance_sample_count_override = 2048" in user
    assert conf.startswith("# Not LoadGen's mlperf.conf file")
    assert "*.Offline.min_duration = 600000" in conf
    assert f"*.Offline.qsl_rng_seed = {ROUNDS['v5.0'].seeds['qsl_rng_seed']}" in conf
    readme = (meas / "README.md").read_text()
    assert "miglab results export" in readme and "python -m miglab.mlperf.run" in readme


# --- runs that cannot be submitted ----------------------------------------------------------------
@pytest.mark.parametrize(
    "meta,why",
    [
        ({**REAL, "simulated": True}, "simulated lab"),
        ({**REAL, "weights": "random"}, "random weights"),
        ({**REAL, "inputs": "synthetic"}, "synthetic inputs"),
        ({**REAL, "device": {"kind": "cpu", "name": "Intel Xeon", "cpus": 8}}, "on the CPU"),
    ],
)
def test_unsubmittable_runs_are_refused_without_the_flag(tmp_path, meta, why):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",), meta=meta)
    dest = tmp_path / "submission"
    rc, out, err = export(results, dest)
    assert rc == 1
    assert any("NOT SUBMITTABLE" in line and why in line for line in out.splitlines())
    assert "refused" in err and "nothing written" in err
    assert not dest.exists()


def test_unsubmittable_runs_are_exported_marked_with_the_flag(tmp_path):
    meta = {
        **REAL,
        "simulated": True,
        "weights": "none",
        "device": {"kind": "cpu", "name": "Intel Xeon", "cpus": 8},
    }
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",), meta=meta)
    dest = tmp_path / "submission"
    rc, out, err = export(results, dest, "--allow-unsubmittable", info=None)
    assert rc == 1 and "NOT SUBMITTABLE" in err
    desc = json.loads((dest / "closed/Lab/systems/lab-s6-vm1.json").read_text())
    assert desc["sw_notes"].startswith("NOT SUBMITTABLE: ")
    assert desc["accelerators_per_node"] == 0
    assert "CPU" in desc["accelerator_model_name"]
    readme = (dest / "closed/Lab/measurements/lab-s6-vm1/resnet/Offline/README.md").read_text()
    assert "**NOT SUBMITTABLE**" in readme and "simulated lab" in readme
    assert "**NOT SUBMITTABLE**" in (dest / "MIGLAB_EXPORT.md").read_text()
    meas = json.loads(
        (dest / "closed/Lab/measurements/lab-s6-vm1/resnet/Offline"
         / "lab-s6-vm1_reference-torch_Offline.json").read_text()
    )  # fmt: skip
    assert meas["starting_weights_filename"].startswith("none")


def test_seeds_of_another_round_are_not_submittable(tmp_path):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",))
    rc, out, _ = export(results, tmp_path / "submission", "--round", "v5.1")
    assert rc == 1
    assert "qsl_rng_seed" in out and "is not the v5.1 round's" in out


def test_an_accuracy_below_target_is_not_submittable(tmp_path):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",))
    acc = results / "lab/s6/vm1/resnet50/Offline/accuracy/run_1/accuracy.txt"
    acc.write_text("accuracy=70.000%, good=35000, total=50000\nhash=0123abcd\n")
    rc, out, _ = export(results, tmp_path / "submission")
    assert rc == 1 and "acc 70.0 below the target 75.69540" in out


# --- what is missing is listed; the rest is written -----------------------------------------------
def test_missing_accuracy_and_compliance_are_listed(tmp_path):
    results = build(
        tmp_path, vms=("vm1",), scenarios=("Offline", "Server"), accuracy=False, compliance=False
    )
    dest = tmp_path / "submission"
    rc, out, _ = export(results, dest)
    assert rc == 1
    lines = out.splitlines()
    res = "closed/Lab/results/lab-s6-vm1/resnet/Offline"
    assert (
        f"{res}/accuracy: missing: no accuracy run (<vm>/<benchmark>/<Scenario>/accuracy/"
        "run_<n>/ in the results tree)" in lines
    )
    comp = "closed/Lab/compliance/lab-s6-vm1/resnet/Offline"
    assert any(line.startswith(f"{comp}/TEST01: missing: TEST01 is required") for line in lines)
    assert any(line.startswith(f"{comp}/TEST04: missing") for line in lines)
    assert (dest / res / "performance/run_1/mlperf_log_detail.txt").is_file()


def test_a_failed_compliance_test_is_listed(tmp_path):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",))
    t = results / "lab/s6/vm1/resnet50/Offline/TEST04/performance/run_1/mlperf_log_detail.txt"
    t.write_text(
        _log(
            "Offline",
            {"requested_performance_issue_same": True, "result_samples_per_second": 200000},
        )
    )
    rc, out, _ = export(results, tmp_path / "submission")
    assert rc == 1
    assert "resnet/Offline/TEST04/verify_performance.txt: TEST FAIL against the exported" in out


# --- bad input ------------------------------------------------------------------------------------
def test_bad_inputs_exit_2_with_one_line_each(tmp_path):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",))
    dest = tmp_path / "submission"
    dest.mkdir()
    (dest / "keep.txt").write_text("x")
    rc, out, err = export(results, dest)
    assert rc == 2 and out == ""
    assert err.strip() == f"error: {dest}: (top): exists and is not empty (--force replaces it)"
    assert (dest / "keep.txt").is_file()
    rc, _, err = export(results, results / "inside")
    assert rc == 2 and "must be outside the results tree" in err
    rc, _, err = export(tmp_path / "nope", tmp_path / "out2")
    assert rc == 2 and err.startswith("error: ")
    bad = tmp_path / "bad-info.json"
    bad.write_text('{"submitter": "X", "cooling": [1]}')
    rc, _, err = run_main(
        "results",
        "export",
        str(results),
        "--submission",
        str(tmp_path / "o3"),
        "--system-info",
        str(bad),
    )
    assert rc == 2
    assert err.splitlines() == [
        f"error: {bad}: submitter: comes from --division / --submitter, not this file",
        f"error: {bad}: cooling: must be text or a number",
    ]
    rc, _, err = run_main(
        "results",
        "export",
        str(results),
        "--submission",
        str(tmp_path / "o4"),
        "--submitter",
        "a/b",
    )
    assert rc == 2 and "--submitter" in err and "Traceback" not in err


def test_force_replaces_a_previous_export(tmp_path):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",))
    dest = tmp_path / "submission"
    dest.mkdir()
    (dest / "old.txt").write_text("x")
    export(results, dest, "--force")
    assert not (dest / "old.txt").exists()
    assert (dest / "closed/Lab/systems/lab-s6-vm1.json").is_file()


def test_a_symlink_in_the_input_is_refused(tmp_path):
    results = build(tmp_path, vms=("vm1",), scenarios=("Offline",))
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    acc = results / "lab/s6/vm1/resnet50/Offline/accuracy/run_1"
    (acc / "mlperf_log_accuracy.json").unlink()
    os.symlink(outside, acc / "mlperf_log_accuracy.json")
    dest = tmp_path / "submission"
    with pytest.raises(ValidationError) as exc:
        plan_export(results, round_name="v5.0", submitter="Lab")
    assert "a symbolic link: refused" in str(exc.value)
    rc, out, err = export(results, dest)
    assert rc == 2 and "symbolic link" in err and not dest.exists()


def test_json_output_is_the_plan_and_its_problems(tmp_path):
    results = build(tmp_path, vms=("vm1", "vm2"), scenarios=("Offline",))
    rc, out, _ = export(results, tmp_path / "submission", "--json")
    data = json.loads(out)
    assert rc == 1 and data["written"] and not data["ok"]
    assert data["round"] == "v5.0" and data["systems"] == ["lab-s6-vm1", "lab-s6-vm2"]
    assert {p["system"] for p in data["picks"]} == {"lab-s6-vm1", "lab-s6-vm2"}
    assert data["lab_metrics"][0]["kind"].startswith("sum over independent LoadGen instances")
    assert all(set(f) == {"path", "problem", "blocking"} for f in data["findings"])


@pytest.mark.parametrize("f1,blocked", [(90.88, False), (85.0, True)])
def test_bert_accuracy_is_read_with_the_checkers_f1_pattern(tmp_path, f1, blocked):
    from miglab.mlperf.results.submission import _check_accuracy

    (tmp_path / "accuracy.txt").write_text(json.dumps({"exact_match": 83.67, "f1": f1}) + "\n")
    found = _check_accuracy(tmp_path, "acc", "bert-99", True)
    assert [f.what for f in found] == (["F1 85.0 below the target 89.96526"] if blocked else [])
    # the checker's line is there: only the hash line (truncate_accuracy_log.py) is missing
    assert [f.what for f in _check_accuracy(tmp_path, "acc", "bert-99", False)
            if "accuracy.txt" in f.path] == [
        "no hash= line: run MLCommons' truncate_accuracy_log.py over the tree"
    ]  # fmt: skip
