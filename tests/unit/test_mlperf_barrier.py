"""miglab.mlperf.guest.barrier: the guest side of the two-phase start barrier -- the controller's
release writes the start moment and waits in the guest until the run has ended (one call per
guest, no polling from the controller); a run that dies without a result is named."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from miglab.mlperf.guest import barrier


def _later(seconds, fn):
    t = threading.Timer(seconds, fn)
    t.start()
    return t


def test_release_waits_until_the_run_says_done(tmp_path):
    barrier.write_pid(tmp_path)
    barrier.write_state(tmp_path, "ready")
    _later(0.3, lambda: barrier.write_state(tmp_path, "done 1"))
    barrier.release(tmp_path, 1234.5)
    assert (tmp_path / "go").read_text() == "1234.5\n"
    ended = barrier.wait_done(tmp_path, 10, poll=0.05)
    assert ended == {"state": "done", "rc": 1, "line": "done 1"}


def test_a_failed_run_and_a_vanished_process_are_named(tmp_path):
    barrier.write_state(tmp_path, "failed: SUT crashed")
    assert barrier.wait_done(tmp_path, 5)["line"] == "failed: SUT crashed"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    other = tmp_path / "other"
    other.mkdir()
    (other / "pid").write_text(f"{gone.pid}\n")
    barrier.write_state(other, "ready")
    res = barrier.wait_done(other, 10, poll=0.05)
    assert res["state"] == "failed" and f"({gone.pid}) ended without a result" in res["line"]


def test_a_run_that_does_not_end_times_out(tmp_path):
    barrier.write_pid(tmp_path)  # this process: alive
    barrier.write_state(tmp_path, "ready")
    with pytest.raises(barrier.BarrierTimeout, match="did not end within"):
        barrier.wait_done(tmp_path, 0.3, poll=0.05)


def test_release_cli_answers_one_json_line(tmp_path):
    barrier.write_state(tmp_path, "ready")
    _later(0.5, lambda: barrier.write_state(tmp_path, "done 0"))
    res = subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.guest.barrier", "release", str(tmp_path), "99.5"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    # "done" can only have been read after the run wrote it: release waited for the end
    answer = json.loads(res.stdout)
    assert answer.pop("lead_s") < 0  # the start moment 99.5 (1970) had long passed
    assert answer == {"state": "done", "rc": 0, "line": "done 0"}
    res = subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.guest.barrier", "release", str(tmp_path / "no"), "1"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert res.returncode == 1 and "no barrier folder" in res.stderr


def test_earlier_ended_rounds_are_cleaned_the_current_one_kept(tmp_path):
    ended, running, current = (tmp_path / n for n in ("r1", "r2", "r3"))
    for folder in (ended, running, current):
        folder.mkdir()
    barrier.write_state(ended, "done 0")
    barrier.write_state(running, "ready")
    barrier.write_state(current, "done 0")
    assert barrier.clean_ended(tmp_path, keep=current) == [ended]
    assert running.is_dir() and current.is_dir()
