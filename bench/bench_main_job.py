#!/usr/bin/env python3
"""Time README's main command (`bash scripts/demo.sh`) on the built-in simulated lab: a first run
in a fresh clone (its own .cache: images, simulator, stand-ins, golden guest, wheelhouse are built
by the run itself) and a repeat run, and write bench/RESULTS-main-job.md.

    python bench/bench_main_job.py [--clone DIR] [--campaign FILE] [--keep]

What a fresh clone cannot undo on this machine: Debian packages installed earlier (podman, Go,
...) and pip's download cache; the result says so. The simulated lab of the checkout this is run
from is stopped first (one simulated lab per machine: its containers are named like the hosts).
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "RESULTS-main-job.md"


def run(cmd: list[str], cwd: Path, log: Path) -> tuple[int, float]:
    started = time.monotonic()
    with open(log, "w") as out:
        rc = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False)
    return rc.returncode, time.monotonic() - started


def recap(log: Path) -> str:
    text = log.read_text(errors="replace")
    done = re.findall(r"^done in .*$", text, re.M)
    return done[-1] if done else "(no summary line)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clone", default="/tmp/miglab-bench-clone")
    ap.add_argument("--campaign", default="campaigns/r750xa-a100-80gb-mig.yml")
    ap.add_argument("--keep", action="store_true", help="leave the clone's simulated lab up")
    args = ap.parse_args()

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
    # The clone builds its own images: no stamp is shared, so this is the first run's work.
    env_note = "podman image localhost/miglab-debian12 rebuilt by the clone (its own stamps)"
    os.environ["MIGLAB_REBUILD_IMAGES"] = "1"
    rc1, t1 = run(["bash", "scripts/demo.sh", args.campaign], clone, logs / "first-run.log")
    os.environ.pop("MIGLAB_REBUILD_IMAGES")
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
        f"| repeat (unchanged lab, runs VALID already) | {rc2} | {t2 / 60:.1f} min | <= 4 min | "
        f"{recap(logs / 'repeat-run.log')} |",
        "",
        "Logs: `bench/results-main-job/first-run.log`, `repeat-run.log`; the report: "
        "`bench/results-main-job/report/`.",
        "",
    ]
    if table:
        lines += ["## The report (as generated)", "", table]
    OUT.write_text("\n".join(lines) + "\n")
    print(OUT.read_text())
    return 0 if rc1 == 0 and rc2 == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
