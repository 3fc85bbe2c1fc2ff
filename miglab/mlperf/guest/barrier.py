"""The two-phase start barrier between the controller and the runs in a scenario's guests.

A run (``python -m miglab.mlperf.run --barrier-dir DIR``) keeps its state in ``DIR``:

- ``pid``: the run's process (a wave's session: :mod:`miglab.mlperf.guest.session`);
- ``state``: ``pending`` while a session has earlier rounds to run, ``ready`` once the SUT is
  loaded, then ``done <exit status>`` when the run has ended (its logs written, and packed with
  ``--pack``), or ``failed: <why>``;
- ``go``: written by the controller once every guest is ready: the start moment (epoch seconds).

Two commands, each one call per run and guest instead of the controller polling each guest; each
prints one JSON line (``state``, ``rc``, ``line``):

- ``python -m miglab.mlperf.guest.barrier ready DIR [--timeout S]`` waits until the run's SUT is
  ready; exits 0 when it is, 1 when the run failed, its process vanished or the timeout passed.
- ``python -m miglab.mlperf.guest.barrier release DIR START_AT [--timeout S] [--next DIR2]``
  writes ``go`` and waits until the run has ended; exits 0 when it ended (VALID or not: the logs
  say which), 1 when it failed, its process vanished without a result or it did not end within
  the timeout. Its answer also holds ``lead_s`` (how far ahead of the start moment ``go`` was
  written) and, with ``--next``, ``next``: the state of the session's next round (``ready`` when
  its SUT is, so the controller need not ask again).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from miglab.core.process import pid_alive
from miglab.errors import EXIT_FAIL, EXIT_OK

STATE, GO, PID = "state", "go", "pid"


class BarrierTimeout(Exception):
    pass


class BarrierStopped(Exception):
    """The controller asked the session to stop (its stop file appeared)."""


def write_state(folder: str | Path, text: str) -> None:
    """``folder/state`` replaced atomically: a reader never sees half a line."""
    folder = Path(folder)
    tmp = folder / f"{STATE}.tmp"
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, folder / STATE)


def read_state(folder: str | Path) -> str:
    try:
        return (Path(folder) / STATE).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""


def write_pid(folder: str | Path) -> None:
    (Path(folder) / PID).write_text(f"{os.getpid()}\n", encoding="utf-8")


def clean_ended(parent: str | Path, keep) -> list[Path]:
    """Remove the barrier folders in ``parent`` (earlier rounds in this guest) whose run has
    ended, or whose process is gone (a killed session's later rounds), all but ``keep``: the
    controller fetched their tarballs before this round began. ``keep``: a folder, or several
    (a session's own rounds)."""
    import shutil

    removed = []
    keeps = [keep] if isinstance(keep, (str, Path)) else list(keep)
    kept = {Path(k).resolve() for k in keeps}
    for folder in Path(parent).iterdir():
        if folder.is_dir() and folder.resolve() not in kept:
            state = read_state(folder)
            pid = _pid(folder)
            if state.startswith(("done", "failed")) or (pid is not None and not pid_alive(pid)):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed


def await_go(
    folder: str | Path, timeout: float, poll: float = 0.05, stop: str | Path | None = None
) -> float:
    """Say ready in ``folder``, then wait for the controller's go file; its start moment.
    BarrierStopped when the ``stop`` file appears first."""
    folder = Path(folder)
    write_state(folder, "ready")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if stop is not None and Path(stop).exists():
            raise BarrierStopped(f"stopped by the controller ({stop})")
        try:
            text = (folder / GO).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            time.sleep(poll)
            continue
        try:
            return float(text)
        except ValueError:
            time.sleep(poll)  # being written
    raise BarrierTimeout(f"no start moment from the controller in {timeout:.0f} s ({folder / GO})")


def release(folder: str | Path, start_at: float) -> float:
    """Write the start moment; how many seconds ahead of it it was written (the lead: the
    controller's margin less the time it took to hand the moment to this guest)."""
    folder = Path(folder)
    tmp = folder / f"{GO}.tmp"
    tmp.write_text(f"{start_at}\n", encoding="utf-8")
    os.replace(tmp, folder / GO)
    return round(start_at - time.time(), 3)


def next_state(folder: str | Path, wait: float, poll: float = 0.02) -> str:
    """The state of a session's next round once it is ``ready`` or has failed, else after
    ``wait`` seconds (``pending``: its SUT is still being prepared)."""
    deadline = time.monotonic() + wait
    while True:
        state = read_state(folder)
        if state == "ready" or state.startswith("failed") or time.monotonic() >= deadline:
            return state or "pending"
        time.sleep(poll)


def _pid(folder: Path) -> int | None:
    try:
        return int((folder / PID).read_text().strip())
    except (OSError, ValueError):
        return None


def _watch(folder: Path, timeout: float, poll: float, settle, gone: str, late: str) -> dict:
    """Poll ``folder``'s state until ``settle(state)`` gives an answer; a failed run, a process
    gone without one (``gone``) and the timeout (``late``) end the wait as well."""
    deadline = time.monotonic() + timeout
    gone_since = None
    while True:
        state = read_state(folder)
        if state.startswith("failed"):
            return {"state": "failed", "rc": None, "line": state}
        answer = settle(state)
        if answer is not None:
            return answer
        pid = _pid(folder)
        if pid is not None and not pid_alive(pid):
            # The state may have been written just before the process ended: look once more.
            gone_since = gone_since or time.monotonic()
            if time.monotonic() - gone_since > 1.0:
                line = f"failed: the run's process ({pid}) ended {gone}"
                return {"state": "failed", "rc": None, "line": line}
        if time.monotonic() >= deadline:
            raise BarrierTimeout(f"{late} within {timeout:.0f} s ({folder})")
        time.sleep(poll)


def wait_done(folder: str | Path, timeout: float, poll: float = 0.2) -> dict:
    """Wait until the run in ``folder`` has ended: ``{"state", "rc", "line"}``; ``rc`` is the
    run's exit status, None when it failed without one."""

    def settle(state: str) -> dict | None:
        if not state.startswith("done"):
            return None
        parts = state.split()
        rc = int(parts[1]) if len(parts) > 1 and parts[1].lstrip("-").isdigit() else None
        return {"state": "done", "rc": rc, "line": state}

    return _watch(Path(folder), timeout, poll, settle, "without a result", "the run did not end")


def wait_ready(folder: str | Path, timeout: float, poll: float = 0.1) -> dict:
    """Wait until the run in ``folder`` says ready: ``{"state", "rc", "line"}`` with state
    ``ready``, ``failed`` (or ended: ``done``) -- or BarrierTimeout."""

    def settle(state: str) -> dict | None:
        if state == "ready":
            return {"state": "ready", "rc": None, "line": state}
        if state.startswith("done"):
            return {
                "state": "failed",
                "rc": None,
                "line": f"failed: ended before its start ({state})",
            }
        return None

    return _watch(
        Path(folder), timeout, poll, settle, "before its SUT was ready",
        "the run's SUT was not ready",
    )  # fmt: skip


def _answer(result: dict, ok_state: str) -> int:
    print(json.dumps(result))
    if result["state"] == ok_state:
        return EXIT_OK
    print(result["line"], file=sys.stderr)
    return EXIT_FAIL


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m miglab.mlperf.guest.barrier")
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("ready", help="wait until the run's SUT is ready")
    w.add_argument("dir", metavar="DIR")
    w.add_argument("--timeout", type=float, default=900.0, help="seconds (default 900)")
    r = sub.add_parser("release", help="write the start moment, then wait until the run ended")
    r.add_argument("dir", metavar="DIR")
    r.add_argument("start_at", metavar="START_AT", type=float)
    r.add_argument("--timeout", type=float, default=3600.0, help="seconds (default 3600)")
    r.add_argument(
        "--next",
        metavar="NEXT_DIR",
        help="a session's next round: once the run has ended, say whether its SUT is ready "
        "(the answer's next; the controller then need not ask)",
    )
    r.add_argument("--next-wait", type=float, default=1.0, help="seconds (default 1)")
    a = p.parse_args(argv)
    folder = Path(a.dir)
    if not folder.is_dir():
        line = f"failed: no barrier folder {folder}"
        return _answer({"state": "failed", "rc": None, "line": line}, "")
    try:
        if a.cmd == "ready":
            return _answer(wait_ready(folder, a.timeout), "ready")
        lead = release(folder, a.start_at)
        result = {**wait_done(folder, a.timeout), "lead_s": lead}
        if a.next and result["state"] == "done":
            result.update(next=next_state(a.next, a.next_wait), next_dir=a.next)
        return _answer(result, "done")
    except BarrierTimeout as exc:
        return _answer({"state": "timeout", "rc": None, "line": str(exc)}, "")


if __name__ == "__main__":
    sys.exit(main())
