"""miglab.mlperf.guest.session: a wave's rounds in one guest process, each SUT prepared once;
the barrier's ``ready`` command; the filter that plans a guest's rounds. Real LoadGen and the
tiny ONNX model; verdicts follow from query counts (no timing)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from miglab.mlperf.guest import barrier
from testlib import OFFLINE_COUNTED, ROOT, collection_module, wait_until

SESSION = [sys.executable, "-m", "miglab.mlperf.guest.session", "start"]


@pytest.fixture(autouse=True)
def _stop_sessions(tmp_path):
    """A session a failed test leaves waiting for its start moment stops at once."""
    yield
    (tmp_path / "w.stop").touch()


def _round(tmp_path: Path, n: int, benchmark: str = "resnet50", *extra: str) -> list[str]:
    return [
        "--sut", "onnxruntime", "--model", "tiny-conv", "--benchmark", benchmark,
        "--out", str(tmp_path / "vm1"), "--run", str(n), "--overwrite",
        "--barrier-dir", str(tmp_path / ".barrier" / f"w-{n}"),
        "--pack", str(tmp_path / ".barrier" / f"w-{n}" / "run.tar.gz"),
        *OFFLINE_COUNTED, "--raw-seconds", "0.5", "--warmup-seconds", "0.2", *extra,
    ]  # fmt: skip


def _start(tmp_path: Path, rounds: list[list[str]], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SESSION, "--rounds", json.dumps(rounds), "--stop", str(tmp_path / "w.stop"),
         "--log", str(tmp_path / "w.log"), *extra],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip


def _barrier(*args: str, timeout: float = 300) -> tuple[int, dict]:
    res = subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.guest.barrier", *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )  # fmt: skip
    return res.returncode, json.loads(res.stdout.strip().splitlines()[-1])


def _meta(tmp_path: Path, n: int) -> dict:
    path = tmp_path / "vm1/resnet50/Offline/performance" / f"run_{n}" / "miglab_run.json"
    return json.loads(path.read_text())


def test_a_session_runs_every_round_with_one_prepared_sut(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    res = _start(tmp_path, [_round(tmp_path, 1), _round(tmp_path, 2)])
    assert res.returncode == 0, res.stderr
    answer = json.loads(res.stdout)
    assert answer["rounds"] == 2
    for n in (1, 2):
        folder = tmp_path / ".barrier" / f"w-{n}"
        rc, state = _barrier("ready", str(folder), "--timeout", "120")
        assert (rc, state["state"]) == (0, "ready"), (state, (tmp_path / "w.log").read_text())
        if n == 1:  # the second round waits its turn: pending, its process alive
            assert barrier.read_state(tmp_path / ".barrier" / "w-2") == "pending"
        nxt = str(tmp_path / ".barrier" / "w-2") if n == 1 else ""
        rc, end = _barrier(
            "release", str(folder), f"{time.time() + 0.5}", "--timeout", "120", "--next", nxt
        )
        assert (rc, end["state"], end["rc"]) == (0, "done", 0), end
        assert end["lead_s"] <= 0.5
        if n == 1:  # the SUT is prepared already: the next round is ready as this one ends
            assert (end["next"], end["next_dir"]) == ("ready", nxt), end
        else:
            assert "next" not in end
        assert (folder / "run.tar.gz").is_file()
    first, second = _meta(tmp_path, 1), _meta(tmp_path, 2)
    assert first["loadgen"]["validity"] == second["loadgen"]["validity"] == "VALID"
    # one process, one SUT: prepared (and its raw throughput measured) once
    assert first["pid"] == second["pid"] == answer["pid"]
    assert first["raw"] == second["raw"] and first["setup_s"] == second["setup_s"]
    assert wait_until(lambda: not barrier.pid_alive(answer["pid"]), timeout=60)
    log = (tmp_path / "w.log").read_text()
    assert log.count("preparing onnxruntime SUT") == 1, log


def test_a_stopped_session_fails_the_rounds_it_did_not_run(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    res = _start(tmp_path, [_round(tmp_path, 1), _round(tmp_path, 2)])
    assert res.returncode == 0, res.stderr
    pid = json.loads(res.stdout)["pid"]
    rc, state = _barrier("ready", str(tmp_path / ".barrier" / "w-1"), "--timeout", "120")
    assert rc == 0, state
    (tmp_path / "w.stop").touch()  # what the role's rescue does when a round failed
    assert wait_until(lambda: not barrier.pid_alive(pid), timeout=60)
    for n in (1, 2):
        state = barrier.read_state(tmp_path / ".barrier" / f"w-{n}")
        assert state.startswith("failed: ") and "stopped by the controller" in state, state
    rc, state = _barrier("ready", str(tmp_path / ".barrier" / "w-2"), "--timeout", "5")
    assert rc == 1 and "stopped by the controller" in state["line"]


def test_a_round_the_controller_never_releases_ends_the_session(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    rounds = [_round(tmp_path, 1, "resnet50", "--barrier-timeout", "1"), _round(tmp_path, 2)]
    res = _start(tmp_path, rounds)
    assert res.returncode == 0, res.stderr
    pid = json.loads(res.stdout)["pid"]
    assert wait_until(lambda: not barrier.pid_alive(pid), timeout=120)
    assert barrier.read_state(tmp_path / ".barrier" / "w-1").startswith("failed: no start moment")
    assert "the session ended" in barrier.read_state(tmp_path / ".barrier" / "w-2")


def test_bad_rounds_are_refused_before_anything_starts(tmp_path):
    res = _start(tmp_path, [["--benchmark", "resnet50"], _round(tmp_path, 1), _round(tmp_path, 1)])
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert any("round 1" in line for line in lines), res.stderr
    assert any("round 3" in line and "another round's" in line for line in lines), res.stderr
    assert not (tmp_path / ".barrier").exists() and "Traceback" not in res.stderr
    res = subprocess.run(
        [*SESSION, "--rounds", "{not json", "--stop", "s", "--log", "l"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert res.returncode == 2 and res.stderr.startswith("error: --rounds: not JSON")


def test_ready_names_a_process_that_died_before_its_sut_was_ready(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    (tmp_path / "pid").write_text(dead.stdout)
    barrier.write_state(tmp_path, "pending")
    rc, state = _barrier("ready", str(tmp_path), "--timeout", "30")
    assert rc == 1 and "ended before its SUT was ready" in state["line"]
    rc, state = _barrier("ready", str(tmp_path / "missing"), "--timeout", "1")
    assert rc == 1 and "no barrier folder" in state["line"]


def test_the_cleanup_removes_rounds_of_a_killed_session(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    stale, current = tmp_path / "old-0", tmp_path / "new-0"
    for folder in (stale, current):
        folder.mkdir()
        barrier.write_state(folder, "pending")
    (stale / "pid").write_text(dead.stdout)
    barrier.write_pid(current)
    assert barrier.clean_ended(tmp_path, keep=tmp_path / "other") == [stale]


def _session_rounds():
    mlperf_session_rounds = collection_module("plugins.filter.mlperf").mlperf_session_rounds
    return mlperf_session_rounds


def test_the_rounds_filter_gives_each_round_its_barrier_and_skips_valid_ones(tmp_path):
    rounds_of = _session_rounds()
    matrix = [
        {"benchmark": b, "scenario": "Offline", "run": r}
        for r in (1, 2)
        for b in ("resnet50", "bert-99")
    ]
    opts = {"sut": "onnxruntime", "out": "/g/vm1", "model": "tiny-conv", "overwrite": True}
    rounds = rounds_of(matrix, opts, "/g/.barrier/w-s1-vm1", models={"bert-99": "tiny-mlp"},
                       extra_args=["--threads", "1"])  # fmt: skip
    assert [r["barrier_dir"] for r in rounds] == [f"/g/.barrier/w-s1-vm1-{i}" for i in range(4)]
    first = rounds[1]["argv"]
    assert first[first.index("--model") + 1] == "tiny-mlp" and first[-2:] == ["--threads", "1"]
    assert first[first.index("--pack") + 1] == "/g/.barrier/w-s1-vm1-1/run.tar.gz"
    # resume: a round VALID in every VM of the scenario is skipped, else every VM redoes it
    import shutil

    from testlib import FIXTURES

    valid = (
        FIXTURES / "mlperf/inference_results_v1.1/closed/Dell/results"
        / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
    )  # fmt: skip
    peers = [tmp_path / "vm1", tmp_path / "vm2"]
    for vm in peers:
        shutil.copytree(valid, vm / "resnet50/Offline/performance/run_1")
    shutil.copytree(valid, peers[0] / "resnet50/Offline/performance/run_2")
    rounds = rounds_of(matrix, opts, "/g/w", peer_vm_dirs=[str(p) for p in peers])
    assert [r is None for r in rounds] == [True, False, False, False]
    # a second pass redoes only the rounds whose VMs did not run at once: here none
    again = rounds_of(matrix, opts, "/g/w", peer_vm_dirs=[str(p) for p in peers],
                      redo=["not concurrent"])  # fmt: skip
    assert again == [None] * 4
    log = peers[1] / "resnet50/Offline/performance/run_1/mlperf_log_detail.txt"
    log.write_text(log.read_text().replace("08-07-2021 ", "08-06-2021 "))  # a day earlier
    again = rounds_of(matrix, opts, "/g/w", peer_vm_dirs=[str(p) for p in peers],
                      redo=["not concurrent"])  # fmt: skip
    assert [r is None for r in again] == [False, True, True, True]
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="set per round: run"):
        rounds_of(matrix, {**opts, "run": 1}, "/g/w")


def test_a_round_said_ready_by_the_previous_answer_is_not_asked_again():
    mlperf_known_ready = collection_module("plugins.filter.mlperf").mlperf_known_ready
    answer = {"state": "done", "rc": 0, "next": "ready", "next_dir": "/g/w-1"}
    ended = {"rc": 0, "stdout": json.dumps(answer)}
    assert mlperf_known_ready(ended, "/g/w-1")
    assert not mlperf_known_ready(ended, "/g/w-2")  # another round's answer
    pending = {"rc": 0, "stdout": json.dumps({**answer, "next": "pending"})}
    assert not mlperf_known_ready(pending, "/g/w-1")
    assert not mlperf_known_ready({"rc": 1, "stdout": json.dumps(answer)}, "/g/w-1")
    assert not mlperf_known_ready(None, "/g/w-1")
    assert not mlperf_known_ready({"rc": 0, "stdout": "not json"}, "/g/w-1")
