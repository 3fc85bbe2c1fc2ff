"""Fuzzing miglab's readers (issue 14): campaigns, lab inventories, nvidia-smi MIG captures and
LoadGen logs, from random bytes and from mutations of real files. Each reader either returns or
raises ValidationError (what the CLI turns into exit 2): never another exception (the CLI's
``internal error``), never a problem line longer than its cut, never a slow example (hypothesis's
deadline bounds each one).

The seeds are the bad-input corpus's good campaign and lab, a real capture
(tests/fixtures/nvidia-smi) and a real published LoadGen detail log (tests/fixtures/mlperf)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miglab.errors import MAX_PATH, MAX_REASON, ValidationError
from testlib import FIXTURES

pytestmark = pytest.mark.unit

GOOD = FIXTURES / "bad-inputs" / "good"
CAPTURE = (FIXTURES / "nvidia-smi" / "a100-sxm4-40gb-mig-lgip.txt").read_text() + (
    FIXTURES / "nvidia-smi" / "a100-sxm4-40gb-mig-lgipp.txt"
).read_text()
LOG = next(FIXTURES.glob("mlperf/inference_results_v1.1/closed/Dell/results/*/resnet50/"
                         "Offline/performance/run_1/mlperf_log_detail.txt"))  # fmt: skip
FUZZ = settings(max_examples=120, deadline=5000, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
# a problem line: file + field (each at most MAX_PATH, cut text) + reason, escapes included
LINE_MAX = 4 * (2 * MAX_PATH + MAX_REASON)


def _mutations(seed: bytes):
    """Byte-level mutations of ``seed``: cut, spliced, flipped, repeated, random inserts."""
    n = len(seed)
    pos = st.integers(0, n)
    junk = st.binary(min_size=0, max_size=64) | st.sampled_from(
        [b"\x00", b"\xff\xfe", b"&a", b"*a", b"!!python/object:os.system", b"{{ x }}", b"\t",
         b"NaN", b"-inf", b"1e999", b"[" * 200, b"{" * 200, b":", b"- ", b"\r\n", b"'", b'"']
    )  # fmt: skip
    cut = st.tuples(pos, pos).map(lambda ab: seed[: min(ab)] + seed[max(ab) :])
    insert = st.tuples(pos, junk).map(lambda pj: seed[: pj[0]] + pj[1] + seed[pj[0] :])
    repeat = st.tuples(pos, pos, st.integers(2, 50)).map(
        lambda t: seed[: min(t[:2])] + seed[min(t[:2]) : max(t[:2])] * t[2] + seed[max(t[:2]) :]
    )
    return cut | insert | repeat | st.binary(max_size=2048)


def _check(call) -> None:
    try:
        call()
    except ValidationError as exc:
        assert exc.problems, "a ValidationError names its problems"
        assert all(len(str(p)) <= LINE_MAX for p in exc.problems)


@FUZZ
@given(data=_mutations((GOOD / "campaign.yml").read_bytes()))
def test_the_campaign_reader_takes_any_bytes(data):
    from miglab.core.campaign import load_campaign

    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "campaign.yml"
        f.write_bytes(data)
        _check(lambda: load_campaign(f))


@settings(max_examples=40, deadline=10000, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(data=_mutations((GOOD / "lab" / "hosts.yml").read_bytes()))
def test_the_inventory_reader_takes_any_bytes(data):
    from miglab.adapters.inventory import load_lab

    with tempfile.TemporaryDirectory() as tmp:
        lab = Path(tmp) / "lab"
        shutil.copytree(GOOD / "lab", lab)
        (lab / "hosts.yml").write_bytes(data)
        _check(lambda: load_lab(lab, env={}))


@FUZZ
@given(data=_mutations(CAPTURE.encode()))
def test_the_capture_reader_takes_any_text(data):
    from miglab.core.importers import model_from_capture

    _check(lambda: model_from_capture(data.decode("utf-8", errors="replace"), "<fuzz>"))


@FUZZ
@given(data=_mutations(LOG.read_bytes()))
def test_the_loadgen_log_reader_takes_any_bytes(data):
    from miglab.core.runs import parse_run

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run_1"
        run.mkdir()
        (run / "mlperf_log_detail.txt").write_bytes(data)
        _check(lambda: parse_run(run))
