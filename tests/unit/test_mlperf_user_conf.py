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

import subprocess
import sys
from pathlib import Path

import pytest

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
