"""Clock sync (issue 16) with a real clock skew: a "guest" process whose clock libfaketime moves
(``LD_PRELOAD=libfaketime.so.1 FAKETIME=+0.3``: every time it reads, ``time.time()`` and
LoadGen's clocks included, is 0.3 s ahead) measures its offset to miglab's SNTP responder, which
runs in this test's process on 127.0.0.1 with the real clock -- the controller.

libfaketime is Debian's ``faketime`` package (scripts/setup.sh installs it for the tests);
``FAKETIME`` with a leading sign is an offset in seconds from the real time (faketime(1),
"relative" format). Nothing here depends on this machine's speed: an offset is compared with the
skew within the uncertainty the measurement itself reports, plus a generous 50 ms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from miglab.mlperf.results.aggregate import aggregate_results
from testlib import OFFLINE_COUNTED, ROOT, clock_responder

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
MARGIN_S = 0.050

pytestmark = pytest.mark.skipif(
    not LIBFAKETIME.is_file(), reason=f"no {LIBFAKETIME} (apt-get install faketime)"
)


def skewed(seconds: str) -> dict:
    return {**os.environ, "LD_PRELOAD": str(LIBFAKETIME), "FAKETIME": seconds}


@pytest.fixture
def controller():
    """miglab's responder on 127.0.0.1 (an unused port), answering with the real clock."""
    with clock_responder() as port:
        yield port


def test_libfaketime_moves_the_guests_clock():
    # the premise: the guest's clock reads ahead (a start-up cost only makes it read later)
    import time

    before = time.time()
    out = subprocess.run(
        [sys.executable, "-c", "import time; print(time.time())"],
        env=skewed("+5"), capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert float(out) - before >= 5.0


@pytest.mark.parametrize(("skew", "expected"), [("+0.3", 0.3), ("-1.25", -1.25), ("+0", 0.0)])
def test_a_guest_measures_its_skew_against_the_controllers_responder(controller, skew, expected):
    res = subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.guest.clock", "measure", "--method", "responder",
         "--server", "127.0.0.1", "--port", str(controller), "--timeout", "20",
         "--samples", "8"],
        env=skewed(skew), capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout)
    assert set(r) == {"method", "offset_s", "uncertainty_s", "reference", "samples", "measured_at"}
    assert r["method"] == "responder" and r["reference"] == f"127.0.0.1:{controller}"
    assert r["samples"] == 8  # a responder on loopback answers every query asked for
    assert abs(r["offset_s"] - expected) <= r["uncertainty_s"] + MARGIN_S, r


def test_a_skewed_guests_run_records_its_clock_and_is_compared_in_controller_time(
    controller, tmp_path
):
    """Two "VMs" run LoadGen from the same start moment, vm1's clock 0.3 s ahead: each run's
    miglab_run.json records its guest's offset, and the aggregate flags the scenario (300 ms is
    beyond the 50 ms bound) and compares the windows moved into the controller's time."""
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    import time

    start_at = f"{time.time() + 10:.3f}"  # a late SUT only starts late: nothing asserts overlap
    procs = {}
    for vm, skew in (("vm1", "+0.3"), ("vm2", "+0")):
        argv = [
            sys.executable, "-m", "miglab.mlperf.run", "--sut", "onnxruntime",
            "--model", "tiny-conv", "--benchmark", "resnet50", "--run", "1",
            "--out", str(tmp_path / "results/c/s2" / vm), "--vm", vm, "--lab-scenario", "s2",
            *OFFLINE_COUNTED, "--raw-seconds", "0.5", "--warmup-seconds", "0.2",
            "--start-at", start_at, "--clock", "responder", "--clock-server", "127.0.0.1",
            "--clock-port", str(controller), "--clock-timeout", "20",
        ]  # fmt: skip
        procs[vm] = subprocess.Popen(
            argv, env=skewed(skew), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
    for vm, p in procs.items():
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, (vm, err[-2000:])
    meta = {
        vm: json.loads(
            (
                tmp_path
                / "results/c/s2"
                / vm
                / "resnet50/Offline/performance/run_1"
                / "miglab_run.json"
            ).read_text()
        )  # fmt: skip
        for vm in procs
    }
    for vm, expected in (("vm1", 0.3), ("vm2", 0.0)):
        c = meta[vm]["clock"]
        assert c["method"] == "responder", c
        assert abs(c["offset_s"] - expected) <= c["uncertainty_s"] + MARGIN_S, (vm, c)
    (run,) = aggregate_results(tmp_path / "results/c").group("s2", "resnet50", "Offline").runs
    assert run.clock.flagged, run.clock
    assert run.clock.spread_s == pytest.approx(
        meta["vm1"]["clock"]["offset_s"] - meta["vm2"]["clock"]["offset_s"]
    )
    assert run.window_corrected and run.window_source == "power"
