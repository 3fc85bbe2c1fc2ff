"""``python -m miglab.mlperf.guest.session``: a wave's MLPerf runs in one guest process.

    python -m miglab.mlperf.guest.session start --rounds JSON --stop FILE --log FILE \\
        [--keep-suts N]

``JSON`` is a list of rounds, each the options of one ``python -m miglab.mlperf.run`` with its
own ``--barrier-dir``. ``start`` checks every round's options, writes ``pending`` into every
round's barrier folder, leaves a session process running in the background and answers one JSON
line (``pid``, ``rounds``). The session then runs the rounds in order, each at its barrier
(:mod:`miglab.mlperf.guest.barrier`): ready, wait for the controller's start moment, run, pack,
done. Each SUT is prepared once (model, inputs, raw throughput) and kept for the later rounds
that use the same settings -- at most ``--keep-suts`` at once (default: all of the session's),
so a round starts as soon as the previous one has ended instead of after a new process has
loaded its SUT again.

The session ends after its last round; early when ``--stop FILE`` appears (the controller gave
up on this guest: a round failed) or when the controller does not release a round within its
``--barrier-timeout``: the rounds it did not run then say ``failed: ...`` in their barrier
folders. Its progress and results go to ``--log``.

Exit status of ``start``: 0 when the session runs; 2 when the rounds are not valid (one
``error:`` line each).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from miglab.errors import EXIT_FAIL, EXIT_INVALID, EXIT_OK
from miglab.mlperf.guest import barrier as barrier_lib


def parse_rounds(text: str) -> tuple[list[argparse.Namespace], list[str]]:
    """The rounds of ``--rounds`` (JSON) as parsed ``miglab.mlperf.run`` options; errors."""
    from miglab.mlperf.guest.run import build_parser

    try:
        raw = json.loads(text)
    except ValueError as exc:
        return [], [f"--rounds: not JSON ({exc})"]
    if not isinstance(raw, list) or not raw:
        return [], ["--rounds: not a list of rounds (each a list of options)"]
    rounds, errors, seen = [], [], set()
    parser = build_parser()
    parser.exit_on_error = False
    for i, argv in enumerate(raw, 1):
        if not isinstance(argv, list) or not all(isinstance(x, str) for x in argv):
            errors.append(f"--rounds: round {i}: not a list of strings")
            continue
        try:
            a, unknown = parser.parse_known_args(argv)
        except (argparse.ArgumentError, SystemExit) as exc:
            errors.append(f"--rounds: round {i}: {exc}")
            continue
        if unknown:
            errors.append(f"--rounds: round {i}: unknown options {' '.join(unknown)}")
        elif not a.barrier_dir:
            errors.append(f"--rounds: round {i}: no --barrier-dir")
        elif a.barrier_dir in seen:
            errors.append(f"--rounds: round {i}: --barrier-dir {a.barrier_dir} is another round's")
        else:
            seen.add(a.barrier_dir)
            rounds.append(a)
    return rounds, errors


def _fail_rest(rounds: list[argparse.Namespace], why: str) -> None:
    """Every round not run yet says why (the controller's ready check reads it at once)."""
    for a in rounds:
        folder = Path(a.barrier_dir)
        if folder.is_dir() and not barrier_lib.read_state(folder).startswith(("done", "failed")):
            barrier_lib.write_state(folder, f"failed: {why}")


def run_session(rounds: list[argparse.Namespace], stop: Path, keep: int) -> int:
    """Run ``rounds`` in order with one pool of prepared SUTs; the session's exit status."""
    from miglab.mlperf.guest.backends.base import progress
    from miglab.mlperf.guest.run import NoStartMoment, SutPool, run_round

    pool = SutPool(keep=keep or len(rounds))
    default_interval = sys.getswitchinterval()
    try:
        for i, a in enumerate(rounds):
            progress(f"round {i + 1} of {len(rounds)}: {a.benchmark} {a.scenario} run {a.run}")
            # Server: the batcher and completion threads get the GIL sooner.
            sys.setswitchinterval(0.001 if a.scenario == "Server" else default_interval)
            try:
                run_round(a, pool, stop)
            except barrier_lib.BarrierStopped as exc:
                _fail_rest(rounds[i:], str(exc))
                progress(f"stopped: {exc}")
                return EXIT_OK
            except NoStartMoment as exc:
                _fail_rest(rounds[i:], f"the session ended: {exc}")
                progress(f"ended: {exc}")
                return EXIT_FAIL
            except BaseException as exc:
                _fail_rest(rounds[i:], f"the session ended: {type(exc).__name__}: {exc}")
                traceback.print_exc()
                return EXIT_FAIL
        return EXIT_OK
    finally:
        pool.close()


def _daemonize(log: Path) -> int | None:
    """Fork the session into the background (its own session, stdio on ``log``); in the
    caller: the session's pid, once it has written it; in the session: None."""
    read_end, write_end = os.pipe()
    first = os.fork()
    if first:
        os.close(write_end)
        os.waitpid(first, 0)
        with os.fdopen(read_end) as r:
            text = r.read().strip()
        return int(text) if text.isdigit() else -1
    os.close(read_end)
    os.setsid()
    if os.fork():
        os._exit(0)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.close(null)
    os.environ["MIGLAB_SESSION_WRITE_END"] = str(write_end)
    return None


def start(a: argparse.Namespace) -> int:
    rounds, errors = parse_rounds(a.rounds)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if errors:
        return EXIT_INVALID
    stop, log = Path(a.stop), Path(a.log)
    for folder in [stop.parent, log.parent] + [Path(r.barrier_dir) for r in rounds]:
        folder.mkdir(parents=True, exist_ok=True)
    stop.unlink(missing_ok=True)
    # Earlier waves' rounds (ended, or of a session that was killed): their logs were fetched.
    # This session's own stay until the next one starts: the controller fetches each after its end.
    for parent in {Path(r.barrier_dir).parent for r in rounds}:
        barrier_lib.clean_ended(parent, keep=[r.barrier_dir for r in rounds])
    pid = _daemonize(log)
    if pid is None:  # the session
        write_end = int(os.environ.pop("MIGLAB_SESSION_WRITE_END"))
        for r in rounds:
            folder = Path(r.barrier_dir)
            barrier_lib.write_pid(folder)
            barrier_lib.write_state(folder, "pending")
        os.write(write_end, f"{os.getpid()}\n".encode())
        os.close(write_end)
        sys.stdout.flush()
        rc = run_session(rounds, stop, a.keep_suts)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    if pid < 0:
        print(f"error: the session did not start (see {log})", file=sys.stderr)
        return EXIT_FAIL
    print(json.dumps({"pid": pid, "rounds": len(rounds), "log": str(log)}))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m miglab.mlperf.guest.session",
        description="Run a wave's MLPerf rounds in one background process of this guest.",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start", help="check the rounds, start the session, answer its pid")
    s.add_argument("--rounds", required=True, help="JSON: a list of `miglab.mlperf.run` argvs")
    s.add_argument("--stop", required=True, help="the session stops when this file appears")
    s.add_argument("--log", required=True, help="the session's progress and results")
    s.add_argument(
        "--keep-suts",
        type=int,
        default=0,
        help="SUTs kept prepared at once (0, the default: every one the rounds use)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    return start(a)


if __name__ == "__main__":
    sys.exit(main())
