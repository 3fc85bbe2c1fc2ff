#!/usr/bin/env python3
"""Time README's main command (`bash scripts/demo.sh`) on the built-in simulated lab: a first run
in a fresh clone (its own .cache: images, simulator, stand-ins, golden guest, wheelhouse are built
by the run itself) and a repeat run, and write bench/RESULTS-main-job.md.

    python bench/bench_main_job.py [--clone DIR] [--campaign FILE] [--keep] [--results FILE]
    .venv/bin/python bench/bench_main_job.py --smoke --clone DIR --results FILE   # seconds

What a fresh clone cannot undo on this machine: Debian packages installed earlier (podman, Go,
...) and pip's download cache; the result says so. The simulated lab of the checkout this is run
from is stopped first (one simulated lab per machine: its containers are named like the hosts).

``--smoke`` (the test suite's) runs this script's own steps -- the clone, the two timed commands
with their logs, the summary line and the campaign name from the logs and ``miglab plan --json``,
the results file -- with two cheap commands instead of ``scripts/demo.sh``: ``miglab validate``
and ``miglab plan`` of the campaign in the clone, run by this interpreter on the clone's code
(``python -m miglab.cli`` in the clone: its own venv is not built). It never stops or starts a
simulated lab, builds nothing, and removes nothing it did not make (``--clone`` must not exist).
Logs go beside ``--results`` (``<stem>-logs/``). What it does not cover: setup, images, the
simulator, the main job itself and the report copy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "RESULTS-main-job.md"


def run(cmd: list[str], cwd: Path, log: Path) -> tuple[int, float]:
    started = time.monotonic()
    with open(log, "w") as out:
        rc = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False)
    return rc.returncode, time.monotonic() - started


def recap(log: Path, last_line: bool = False) -> str:
    """The run's `done in ...` line (``last_line``: else the log's last line), for a table cell."""
    text = log.read_text(errors="replace")
    done = re.findall(r"^done in .*$", text, re.M)
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    line = done[-1] if done else lines[-1] if last_line and lines else "(no summary line)"
    return line.replace("|", "\\|")


def smoke(args) -> int:
    """Clone, then time `miglab validate` and `miglab plan` in the clone (see the docstring)."""
    if not args.results:
        raise SystemExit("--smoke needs --results FILE (it never rewrites bench/RESULTS*.md)")
    out = Path(args.results)
    tmp = None
    if args.clone:
        clone = Path(args.clone)
        if clone.exists():
            raise SystemExit(f"--smoke: {clone} exists (the smoke run removes only its own)")
    else:
        tmp = Path(tempfile.mkdtemp(prefix="miglab-bench-smoke-"))
        clone = tmp / "clone"
    logs = out.parent / f"{out.stem}-logs"
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True
        ).stdout.strip()
        logs.mkdir(parents=True, exist_ok=True)
        # The clone's code with this interpreter's packages: `python -m` puts the clone first.
        miglab = [sys.executable, "-m", "miglab.cli"]
        os.environ["PYTHONPATH"] = str(clone)
        where = subprocess.run(
            [sys.executable, "-c", "import miglab; print(miglab.__file__)"],
            cwd=clone, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        if not Path(where).resolve().is_relative_to(clone.resolve()):
            raise SystemExit(f"--smoke: miglab comes from {where}, not from the clone {clone}")
        rc1, t1 = run([*miglab, "validate", args.campaign], clone, logs / "first-run.log")
        rc2, t2 = run([*miglab, "plan", args.campaign], clone, logs / "repeat-run.log")
        name = json.loads(
            subprocess.run(
                [*miglab, "plan", args.campaign, "--json"],
                cwd=clone, capture_output=True, text=True, check=False,
            ).stdout or "{}"
        ).get("campaign", "(no campaign name)")  # fmt: skip
    finally:
        if tmp is not None and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        "# README's main command on the simulated lab (smoke run: not the main command)",
        "",
        f"Command: `python bench/bench_main_job.py --smoke --campaign {args.campaign}` "
        f"({time.strftime('%Y-%m-%d')}, commit {commit}, {platform.platform()}, "
        f"{os.cpu_count()} CPUs).",
        "It clones the repository, then runs `miglab validate` and `miglab plan` of the campaign "
        f"in the clone (its code, this interpreter: {sys.executable}) instead of "
        "`bash scripts/demo.sh`: no setup, no simulated lab, no report.",
        "",
        "| run | exit | wall time | target | summary |",
        "| --- | --- | --- | --- | --- |",
        f"| first (smoke: `miglab validate`) | {rc1} | {t1:.1f} s | - | "
        f"{recap(logs / 'first-run.log', last_line=True)} |",
        f"| repeat (smoke: `miglab plan`) | {rc2} | {t2:.1f} s | - | "
        f"{recap(logs / 'repeat-run.log', last_line=True)} |",
        "",
        f"Campaign (from `miglab plan --json` in the clone): {name}. Logs: `{logs}`.",
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(out.read_text())
    return 0 if rc1 == 0 and rc2 == 0 else 1


def split_lines(clone: Path) -> list[str]:
    """The newest `miglab run`'s split by part (bench/job_split.py on its job events)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from job_split import load, split

    runs = sorted(
        (clone / "artifacts").glob("*/artifacts/*/job_events"), key=lambda p: p.stat().st_mtime
    )
    if not runs:
        return []
    per_task, parts, total = split(load(runs[-1].parent))
    out = [
        f"From ansible-runner's job events (`python bench/job_split.py {runs[-1].parent}`): "
        f"{sum(n for _, n in per_task.values())} tasks, {total:.0f} s from the first task's "
        "start to the playbook's end; each task counts until the next one starts.",
        "",
        "| part | seconds |",
        "| --- | ---: |",
    ]
    out += [f"| {k} | {v:.0f} |" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])]
    out += ["", "| slowest tasks (role: task) | runs | seconds |", "| --- | ---: | ---: |"]
    top = sorted(per_task.items(), key=lambda kv: -kv[1][0])[:15]
    out += [f"| {name} | {n} | {secs:.0f} |" for name, (secs, n) in top]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clone", help="default /tmp/miglab-bench-clone (--smoke: a temporary one)")
    ap.add_argument("--campaign", default="campaigns/r750xa-a100-80gb-mig.yml")
    ap.add_argument("--keep", action="store_true", help="leave the clone's simulated lab up")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="clone + `miglab validate` and `miglab plan` in it: no setup, no simulated lab",
    )
    ap.add_argument("--results", help="write the result here (default RESULTS-main-job.md)")
    args = ap.parse_args()
    if args.smoke:
        return smoke(args)
    args.clone = args.clone or "/tmp/miglab-bench-clone"

    clone = Path(args.clone)
    subprocess.run([str(ROOT / ".venv/bin/miglab"), "sim", "down"], cwd=ROOT, check=False)
    if clone.exists():
        subprocess.run(["bash", "-c", f"cd {clone} && .venv/bin/miglab sim down"], check=False)
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True
    ).stdout.strip()
    logs = ROOT / "bench" / "results-main-job"
    logs.mkdir(parents=True, exist_ok=True)
    # The images are the machine's and a project reuses them while their recipe label matches:
    # the first run is made to rebuild them, as on a fresh machine.
    env_note = "podman images rebuilt by the first run (MIGLAB_REBUILD_IMAGES=1)"
    os.environ["MIGLAB_REBUILD_IMAGES"] = "1"
    rc1, t1 = run(["bash", "scripts/demo.sh", args.campaign], clone, logs / "first-run.log")
    os.environ.pop("MIGLAB_REBUILD_IMAGES")
    first_split = split_lines(clone)
    rc2, t2 = run(["bash", "scripts/demo.sh", args.campaign], clone, logs / "repeat-run.log")
    report = clone / "results" / Path(args.campaign).stem / "report"
    name = json.loads(
        subprocess.run(
            [str(clone / ".venv/bin/miglab"), "plan", args.campaign, "--json"],
            cwd=clone, capture_output=True, text=True, check=False,
        ).stdout or "{}"
    ).get("campaign", Path(args.campaign).stem)  # fmt: skip
    report = clone / "results" / name / "report"
    table = ""
    if (report / "report.md").is_file():
        shutil.copytree(report, logs / "report", dirs_exist_ok=True)
        table = (report / "report.md").read_text()
    if not args.keep:
        subprocess.run([str(clone / ".venv/bin/miglab"), "sim", "down"], cwd=clone, check=False)

    cpus = os.cpu_count()
    lines = [
        "# README's main command on the simulated lab",
        "",
        f"Command: `python bench/bench_main_job.py --campaign {args.campaign}` "
        f"({time.strftime('%Y-%m-%d')}, commit {commit}, {platform.platform()}, {cpus} CPUs).",
        "It clones the repository, then runs `bash scripts/demo.sh` twice in the clone.",
        "Not fresh on this machine: Debian packages and pip's cache from earlier runs; "
        f"{env_note}.",
        "",
        "| run | exit | wall time | target | summary |",
        "| --- | --- | --- | --- | --- |",
        f"| first (setup, images, simulator, golden guest, all phases, report) | {rc1} | "
        f"{t1 / 60:.1f} min | <= 15 min | {recap(logs / 'first-run.log')} |",
        f"| repeat (unchanged lab, runs VALID already) | {rc2} | {t2 / 60:.1f} min | < 1 min | "
        f"{recap(logs / 'repeat-run.log')} |",
        "",
        "Logs: `bench/results-main-job/first-run.log`, `repeat-run.log`; the report: "
        "`bench/results-main-job/report/`.",
        "",
    ]
    if first_split:
        lines += ["## Where the first run's `miglab run` spent its time", "", *first_split, ""]
    if table:
        lines += ["## The report (as generated)", "", table]
    out = Path(args.results) if args.results else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())
    return 0 if rc1 == 0 and rc2 == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
