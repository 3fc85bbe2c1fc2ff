"""The mlperf role's controller-side filters (plugins/filter/mlperf.py): thin over miglab.mlperf.

Logs are copies of the real published Dell run (tests/fixtures/mlperf, see its README.md); the
INVALID one flips result_validity as LoadGen writes a short run.
"""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from testlib import FIXTURES, collection_module

DELL_OFFLINE = (
    FIXTURES
    / "mlperf/inference_results_v1.1/closed/Dell/results"
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
)


@pytest.fixture(scope="module")
def filters():
    filt = collection_module("plugins.filter.mlperf")
    found = filt.FilterModule().filters()
    assert all(name.startswith("mlperf_") for name in found)
    return found


def copy_run(vm_dir, validity=None):
    dst = vm_dir / "resnet50/Offline/performance/run_1"
    dst.mkdir(parents=True)
    text = (DELL_OFFLINE / "mlperf_log_detail.txt").read_text()
    if validity:
        out = []
        for line in text.splitlines(keepends=True):
            if line.startswith(":::MLLOG") and '"result_validity"' in line:
                rec = json.loads(line[len(":::MLLOG ") :])
                rec["value"] = validity
                line = ":::MLLOG " + json.dumps(rec) + "\n"
            out.append(line)
        text = "".join(out)
    (dst / "mlperf_log_detail.txt").write_text(text)
    return dst


def test_run_args_in_runner_order(filters):
    argv = filters["mlperf_run_args"](
        {
            "backend": "reference",
            "sut": "onnxruntime",
            "benchmark": "resnet50",
            "scenario": "Offline",
            "run": 2,
            "out": "/r/c/s1/vm1",
            "start_at": 1700000000,
            "model": "tiny-conv",
            "weights": "",
            "min_duration_ms": None,
            "overwrite": True,
        },
        ["--threads", 1],
    )
    assert argv == [
        "--backend", "reference", "--sut", "onnxruntime", "--benchmark", "resnet50",
        "--scenario", "Offline", "--out", "/r/c/s1/vm1", "--run", "2", "--model", "tiny-conv",
        "--start-at", "1700000000", "--overwrite", "--threads", "1",
    ]  # fmt: skip
    # the command line parses with the runner's own parser
    from miglab.mlperf.guest.run import build_parser

    a = build_parser().parse_args(argv)
    assert (a.run, a.start_at, a.overwrite, a.threads) == (2, 1700000000.0, True, 1)


def test_run_args_for_nvidias_harness(filters):
    """--backend nvidia: the harness's options (a make variable per flag); the reference SUT's
    options (the simulated lab sets the slice model) are left out, and --sut is not needed."""
    opts = {
        "backend": "nvidia",
        "sut": "slice-model",
        "device": "cpu",
        "model": "tiny-conv",
        "benchmark": "resnet50",
        "scenario": "Offline",
        "run": 1,
        "out": "/r/c/s1/vm1",
        "profile": "2g.20gb",
        "harness_dir": "/opt/harness",
        "harness_round": "v1.1",
        "harness_make_var": ["MLPERF_SCRATCH_PATH=/scratch", "NO_DOCKER_PULL=1"],
        "gpu": "A100-PCIE-80GB",
    }
    argv = filters["mlperf_run_args"](opts)
    assert "--sut" not in argv and "--device" not in argv and "--model" not in argv
    assert argv[argv.index("--harness-make-var") :][:4] == [
        "--harness-make-var", "MLPERF_SCRATCH_PATH=/scratch",
        "--harness-make-var", "NO_DOCKER_PULL=1",
    ]  # fmt: skip
    from miglab.mlperf.guest.run import build_parser, settings_from_args

    s = settings_from_args(build_parser().parse_args(argv))
    assert s.make_vars == ("MLPERF_SCRATCH_PATH=/scratch", "NO_DOCKER_PULL=1")
    assert (s.harness_dir, s.gpu, s.profile) == ("/opt/harness", "A100-PCIE-80GB", "2g.20gb")


@pytest.mark.parametrize(
    "opts, message",
    [
        ({"sut": "torch", "benchmark": "bert", "scenario": "Offline", "out": "/o"}, "missing"),
        ({"benchmark": "bert", "scenario": "Offline", "out": "/o", "run": 1}, "missing.*sut"),
        ({"sut": "x", "benchmark": "b", "scenario": "s", "out": "/o", "run": 1, "x": 1}, "unknown"),
    ],
)
def test_run_args_refuses_bad_options(filters, opts, message):
    with pytest.raises(AnsibleFilterError, match=message):
        filters["mlperf_run_args"](opts)


def test_run_status_valid_invalid_missing(filters, tmp_path):
    good = copy_run(tmp_path / "vm1")
    bad = copy_run(tmp_path / "vm2", validity="INVALID")
    status = filters["mlperf_run_status"](good)
    assert status["exists"] and status["valid"] and status["value"] == 136656
    assert status["line"] == "VALID resnet50 Offline: result_samples_per_second = 136656"
    status = filters["mlperf_run_status"](bad)
    assert status["exists"] and not status["valid"]
    assert status["line"].startswith("INVALID resnet50 Offline") and "not valid" in status["line"]
    status = filters["mlperf_run_status"](tmp_path / "vm3/resnet50/Offline/performance/run_1")
    assert not status["exists"] and not status["valid"]
    assert filters["mlperf_run_valid"](str(good)) is True
    assert filters["mlperf_run_valid"](str(bad)) is False


def test_matrix_runs_outermost(filters):
    m = filters["mlperf_matrix"](["resnet50", "bert-99"], ["Offline"], 2)
    assert [(x["run"], x["benchmark"]) for x in m] == [
        (1, "resnet50"),
        (1, "bert-99"),
        (2, "resnet50"),
        (2, "bert-99"),
    ]
    assert filters["mlperf_matrix"]("resnet50", "Server", "1") == [
        {"benchmark": "resnet50", "scenario": "Server", "run": 1}
    ]
    with pytest.raises(AnsibleFilterError):
        filters["mlperf_matrix"](["resnet50"], ["Offline"], "many")


def test_verify_run_manifest(filters, tmp_path):
    from miglab.formats.manifest import write_manifest

    run = copy_run(tmp_path / "vm1")
    check = filters["mlperf_verify_run"](str(run))
    assert (check["manifest"], check["ok"], check["problems"]) == (False, False, [])
    assert check["line"] == f"no MANIFEST.sha256 in {run}"
    write_manifest(run)
    check = filters["mlperf_verify_run"](str(run))
    assert (check["manifest"], check["ok"], check["problems"]) == (True, True, [])
    (run / "mlperf_log_detail.txt").write_text("tampered\n")
    check = filters["mlperf_verify_run"](str(run))
    assert check["manifest"] and not check["ok"]
    assert check["problems"] == [
        f"{run / 'mlperf_log_detail.txt'}: checksum differs from MANIFEST.sha256"
    ]
    assert check["line"].startswith(f"1 problem(s) in {run}: ")


# --- clock sync (issue 16) ------------------------------------------------------------------------
def test_clock_options_per_method(filters):
    opts = filters["mlperf_clock_options"]
    assert opts("off") == {"clock": "off"}
    # responder: the controller's own address toward a guest reached at an IP address; a guest
    # reached by name (the simulated lab's containers) finds the controller itself
    r = opts("responder", port=12123, samples=8, timeout=2, host="127.0.0.1")
    assert r == {
        "clock": "responder",
        "clock_samples": 8,
        "clock_timeout": 2,
        "clock_server": "127.0.0.1",
        "clock_port": 12123,
    }
    assert opts("responder", host="miglab-mlperf-vm1")["clock_server"] is None
    assert opts("responder", server="192.0.2.5", host="127.0.0.1")["clock_server"] == "192.0.2.5"
    # ntp: the controller's own measurement rides along, or why there is none
    said = {"method": "ntp", "offset_s": 0.001, "uncertainty_s": 0.002, "reference": "x:123",
            "samples": 8, "measured_at": "2026-01-01T00:00:00+00:00"}  # fmt: skip
    n = opts("ntp", server="ntp.example.org", controller={"rc": 0, "stdout": json.dumps(said)})
    assert n["clock_server"] == "ntp.example.org" and json.loads(n["clock_controller"]) == said
    c = opts("chrony", controller={"rc": 1, "stdout": "", "stderr": "Traceback ...\nboom"})
    assert json.loads(c["clock_controller"]) == {
        "method": "chrony",
        "error": "the controller measured nothing: boom",
    }


def test_session_rounds_carry_the_clock_options(filters):
    rounds = filters["mlperf_session_rounds"](
        [{"benchmark": "resnet50", "scenario": "Offline", "run": 1}],
        {"sut": "onnxruntime", "out": "/r/c/s1/vm1", "clock": "responder", "clock_port": 12123,
         "clock_server": None, "clock_samples": 8},
        "/r/.barrier/w-s1-vm1",
    )  # fmt: skip
    argv = rounds[0]["argv"]
    assert argv[argv.index("--clock") + 1] == "responder"
    assert argv[argv.index("--clock-port") + 1] == "12123"
    assert "--clock-server" not in argv
    # every option the role passes is one python -m miglab.mlperf.run takes
    from miglab.mlperf.guest.run import build_parser

    a = build_parser().parse_args(argv)
    assert (a.clock, a.clock_port, a.clock_samples, a.clock_server) == ("responder", 12123, 8, None)
