"""A user.conf with several LoadGen runs in one process (issue 17, L1).

The real behaviour (mlcommons/inference, loadgen/test_settings_internal.cc, ``TestSettings::
FromConfig``; since PR #1882, commit ecb88016, LoadGen 4.1.7; read at b66003e1, LoadGen 6.0.17):
a function-static ``configCount`` counts the user.conf loads (``conf_type == 1``, the default) of
the process, and every one after the first logs, through ``MLPERF_LOG_ERROR``, the key
``error_invalid_config`` with "Multiple conf files are used. This is not valid for official
submission." -- into the detail log of the next test. LoadGen still says VALID; miglab's collector
counts the error line (and LoadGen's ``num_errors``) and calls the run INVALID. A session
(:mod:`miglab.mlperf.guest.session`) runs every round of a wave in one process: a backend that
loads the user.conf for each run (and in ``prepare``) makes every one of its runs INVALID.

``FromConfig``'s signature: three arguments in 4.0; a fourth ``is_mlperf_conf: bool = False`` from
4.1.7 (PR #1882) to 5.0.5; ``conf_type: int = 1`` (0 the built-in mlperf.conf, 1 a user.conf, 2
LoadGen's own audit.config) from 5.0.6 (PR #1994, commit d6c3a8d9) on -- the PyPI wheels' own
signatures. Runs are short and their verdicts follow from query counts, never from timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from miglab.mlperf.guest.backends import BackendError, reference
from miglab.mlperf.guest.backends.reference import (
    LOADGEN_REQUIREMENT,
    ReferenceSettings,
    check_loadgen,
    load_test_settings,
)
from testlib import ROOT

MULTIPLE = "Multiple conf files are used. This is not valid for official submission."

USER_CONF = """\
# one user.conf for every round of the session
*.*.performance_sample_count_override = 256
resnet50.Offline.target_qps = 1500
resnet50.Server.target_qps = 500
resnet50.Server.target_latency = 60000
"""

# Two LoadGen tests in one process, each with its settings from the same user.conf through the
# documented call (conf_type left at its default, 1), as a harness that runs several tests does.
TWO_TESTS = r"""
import sys
from pathlib import Path
import mlperf_loadgen as lg

out, conf = Path(sys.argv[1]), sys.argv[2]

def issue(queries):
    lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in queries])

for n in (1, 2):
    ts = lg.TestSettings()
    assert ts.FromConfig(conf, "resnet50", "Offline") == 0
    ts.scenario, ts.mode = lg.TestScenario.Offline, lg.TestMode.PerformanceOnly
    ts.min_duration_ms, ts.min_query_count = 0, 1
    (out / f"run_{n}").mkdir(parents=True)
    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(256, 256, lambda s: None, lambda s: None)
    log = lg.LogSettings()
    log.log_output.outdir = str(out / f"run_{n}")
    log.log_output.copy_summary_to_stdout = False
    lg.StartTestWithLogSettings(sut, qsl, ts, log)
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)
"""


@pytest.fixture
def user_conf(tmp_path) -> Path:
    path = tmp_path / "user.conf"
    path.write_text(USER_CONF)
    return path


# --- the real behaviour ------------------------------------------------------------------------
def test_loadgen_logs_an_error_for_every_user_conf_after_the_first_of_a_process(
    tmp_path, user_conf
):
    pytest.importorskip("mlperf_loadgen")
    from miglab.core.runs import parse_run

    res = subprocess.run(
        [sys.executable, "-c", TWO_TESTS, str(tmp_path / "out"), str(user_conf)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    first = parse_run(tmp_path / "out" / "run_1", benchmark="resnet50")
    second = parse_run(tmp_path / "out" / "run_2", benchmark="resnet50")
    assert first.valid and first.errors == [], first.invalid_reasons
    assert first.settings["effective_target_qps"] == 1500  # the user.conf was read
    # the second load of the process: LoadGen logs the error, yet calls the run VALID
    assert second.loadgen_validity == "VALID"
    assert [e.split(": ", 1)[1] for e in second.errors] == [f"error_invalid_config: {MULTIPLE}"]
    assert not second.valid
    assert any(MULTIPLE in r for r in second.invalid_reasons), second.invalid_reasons
    assert any("num_errors" in r for r in second.invalid_reasons), second.invalid_reasons


# --- handled: every round of a session with a user.conf is VALID and uses it --------------------
def _round(tmp_path: Path, n: int, scenario: str, run: int, conf: Path) -> list[str]:
    counts = ["--min-query-count", "4096" if scenario == "Offline" else "1000"]
    return [
        "--sut", "onnxruntime", "--model", "tiny-conv", "--benchmark", "resnet50",
        "--scenario", scenario, "--out", str(tmp_path / "vm1"), "--run", str(run),
        "--device", "cpu", "--overwrite", "--user-conf", str(conf),
        "--barrier-dir", str(tmp_path / ".barrier" / f"w-{n}"),
        "--min-duration-ms", "0", "--threads", "1", "--raw-seconds", "0", *counts,
    ]  # fmt: skip


def _barrier(*args: str) -> tuple[int, dict]:
    res = subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.guest.barrier", *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    return res.returncode, json.loads(res.stdout.strip().splitlines()[-1])


def test_every_round_of_a_session_with_a_user_conf_is_valid_and_uses_it(tmp_path, user_conf):
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    from miglab.core.runs import parse_run

    plan = [("Offline", 1), ("Server", 1), ("Offline", 2)]
    rounds = [_round(tmp_path, n, sc, run, user_conf) for n, (sc, run) in enumerate(plan, 1)]
    stop = tmp_path / "w.stop"
    try:
        res = subprocess.run(
            [sys.executable, "-m", "miglab.mlperf.guest.session", "start",
             "--rounds", json.dumps(rounds), "--stop", str(stop),
             "--log", str(tmp_path / "w.log")],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        pid = json.loads(res.stdout)["pid"]
        for n in range(1, len(plan) + 1):
            folder = str(tmp_path / ".barrier" / f"w-{n}")
            rc, state = _barrier("ready", folder, "--timeout", "120")
            assert (rc, state["state"]) == (0, "ready"), (state, (tmp_path / "w.log").read_text())
            rc, end = _barrier("release", folder, f"{time.time() + 0.5}", "--timeout", "120")
            assert end["state"] == "done", end
    finally:
        stop.touch()
    for scenario, run in plan:
        run_dir = tmp_path / "vm1" / "resnet50" / scenario / "performance" / f"run_{run}"
        meta = json.loads((run_dir / "miglab_run.json").read_text())
        assert meta["pid"] == pid  # one process ran every round
        r = parse_run(run_dir, benchmark="resnet50")
        assert r.valid and r.errors == [], (scenario, run, r.invalid_reasons)
        # the user.conf's values, as LoadGen logged them in effect
        assert r.settings["effective_performance_sample_count"] == 256
        if scenario == "Offline":
            assert r.settings["effective_target_qps"] == 1500
        else:
            assert r.settings["effective_target_qps"] == 500
            assert r.settings["effective_target_latency_ns"] == 60000 * 10**6
        assert meta["settings"]["user_conf"] == str(user_conf)


# --- the settings: LoadGen reads a file once per process, never in this one ---------------------
def test_loadgen_reads_a_config_file_once_per_content_keys_and_scenario(monkeypatch, user_conf):
    lg = pytest.importorskip("mlperf_loadgen")
    reads, in_process = [], []
    real_run, real_from_config = subprocess.run, lg.TestSettings.FromConfig

    def counting_run(cmd, *args, **kwargs):
        reads.append(cmd[-3:])
        return real_run(cmd, *args, **kwargs)

    def recording_from_config(self, *args):
        in_process.append(args)
        return real_from_config(self, *args)

    recording_from_config.__doc__ = real_from_config.__doc__  # the signature check reads it
    monkeypatch.setattr(reference.subprocess, "run", counting_run)
    monkeypatch.setattr(lg.TestSettings, "FromConfig", recording_from_config)
    monkeypatch.setattr(reference, "_CONF_VALUES", {})
    s = ReferenceSettings(benchmark="resnet50", user_conf=str(user_conf))
    for _ in range(3):
        _, eff = load_test_settings(s, "Offline", "PerformanceOnly")
        assert (eff["target_qps"], eff["performance_sample_count"]) == (1500, 256)
    assert len(reads) == 1
    _, eff = load_test_settings(s, "Server", "PerformanceOnly")
    assert (eff["target_qps"], eff["target_latency_ms"]) == (500, 60000)
    _, eff = load_test_settings(ReferenceSettings(benchmark="bert-99", user_conf=str(user_conf)),
                                "Server", "PerformanceOnly")  # fmt: skip
    assert eff["target_qps"] == 1.0  # resnet50's lines are not bert's
    assert len(reads) == 3 and reads[-1][-2:] == ["bert", "bert-99"]
    user_conf.write_text(USER_CONF.replace("1500", "1600"))  # a changed file is read again
    _, eff = load_test_settings(s, "Offline", "PerformanceOnly")
    assert eff["target_qps"] == 1600 and len(reads) == 4
    load_test_settings(ReferenceSettings(benchmark="resnet50"), "Offline", "PerformanceOnly")
    assert len(reads) == 4  # no file: LoadGen's built-in mlperf.conf, here
    # no user.conf load (conf_type 1) in this process: LoadGen counts none, logs no error
    assert in_process and all(args[3] == 0 for args in in_process), in_process


def test_a_config_file_loadgen_cannot_read_is_named(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    bad = tmp_path / "user.conf"
    bad.write_text("resnet50.Offline.target_qps = fast\n")  # LoadGen: -EINVAL
    with pytest.raises(
        BackendError, match=r"user.conf: LoadGen could not read .*FromConfig -> -22"
    ):
        load_test_settings(ReferenceSettings(user_conf=str(bad)), "Offline", "PerformanceOnly")


def test_two_config_files_are_refused(tmp_path, user_conf):
    pytest.importorskip("mlperf_loadgen")
    other = tmp_path / "mlperf.conf"
    other.write_text("*.Offline.min_duration = 1000\n")
    s = ReferenceSettings(mlperf_conf=str(other), user_conf=str(user_conf))
    with pytest.raises(BackendError, match="two config files .*Multiple conf files"):
        load_test_settings(s, "Offline", "PerformanceOnly")
    s = ReferenceSettings(mlperf_conf=str(other))  # one is LoadGen's rule: alone, it is read
    assert load_test_settings(s, "Offline", "PerformanceOnly")[1]["min_duration_ms"] == 1000


# --- the LoadGen versions the code calls correctly ---------------------------------------------
# FromConfig's signatures as the PyPI wheels (cp311, manylinux) of mlcommons-loadgen give them.
SIGNATURES = {
    "4.0": "FromConfig(self: mlperf_loadgen.TestSettings, arg0: str, arg1: str, arg2: str) -> int",
    "5.0.5": "FromConfig(self: mlperf_loadgen.TestSettings, path: str, model: str, scenario: str, "
    "is_mlperf_conf: bool = False) -> int",
    "5.0.6": "FromConfig(self: mlperf_loadgen.TestSettings, path: str, model: str, scenario: str, "
    "conf_type: int = 1) -> int",
}


def _loadgen_with(signature: str) -> SimpleNamespace:
    def from_config(self, *args):
        raise AssertionError("not to be called")

    from_config.__doc__ = f"{signature}\n\nFromConfig."
    return SimpleNamespace(TestSettings=type("TestSettings", (), {"FromConfig": from_config}))


@pytest.mark.parametrize("version", ["4.0", "5.0.5"])
def test_a_loadgen_without_conf_type_is_refused(version):
    with pytest.raises(BackendError, match=f"too old.*install {LOADGEN_REQUIREMENT}"):
        check_loadgen(_loadgen_with(SIGNATURES[version]))


def test_a_loadgen_with_conf_type_is_taken():
    check_loadgen(_loadgen_with(SIGNATURES["5.0.6"]))
    lg = pytest.importorskip("mlperf_loadgen")
    check_loadgen(lg)  # the installed one


def test_the_declared_loadgen_range_is_the_one_the_code_calls():
    assert LOADGEN_REQUIREMENT == "mlcommons-loadgen>=5.0.6"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [d for d in project["dependencies"] if d.startswith("mlcommons-loadgen")]
    assert declared == [LOADGEN_REQUIREMENT]
    ee = (ROOT / "execution-environment.yml").read_text()
    assert [line.strip() for line in ee.splitlines() if "mlcommons-loadgen" in line] == [
        f"- {LOADGEN_REQUIREMENT}"
    ]
