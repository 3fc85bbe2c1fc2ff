"""Where a `miglab run` spent its time, from ansible-runner's job events (no timing of our own).

    python bench/job_split.py ARTIFACTS_RUN_DIR [--top N] [--json]

``ARTIFACTS_RUN_DIR`` is a run's ``artifacts/<id>/artifacts/<id>`` folder (it holds
``job_events/``). A task's wall time is from its start to the next task's start (Ansible runs a
play's tasks one after the other, each on all the batch's hosts at once), so the times add up to
the playbook's wall time. Prints the time per part of the main job and the slowest tasks.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

# (part, test on "role: task name"), first match wins.
PARTS = [
    ("mlperf: wave session start", re.compile(r"^mlperf: Start the wave's session")),
    ("mlperf: waiting for the SUTs (ready)", re.compile(r"^mlperf: Wait until the SUT is ready")),
    (
        "mlperf: start in the guests (old: one process per run)",
        re.compile(r"^mlperf: Start the run"),
    ),
    ("mlperf: release + run + pack", re.compile(r"^mlperf: Release the barrier")),
    ("mlperf: fetch + install", re.compile(r"^mlperf: (Fetch|Put) the run")),
    (
        "mlperf: setup (venv, wheel, packages)",
        re.compile(r"^(mlperf|\w+): .*(wheel|virtualenv|venv|package|pip|Python)", re.I),
    ),
    ("mlperf: other per-round tasks", re.compile(r"^mlperf: ")),
    ("guest roles", re.compile(r"^guest_(base|vgpu_driver|container_toolkit): ")),
    ("ESXi host roles", re.compile(r"^esxi_\w+: ")),
]


def _time(ev: dict) -> datetime:
    return datetime.fromisoformat(ev["created"])


def load(run_dir: Path) -> list[tuple[datetime, str]]:
    """(start, "role: task") of every task start, in order; the playbook's end last."""
    starts, end = [], None
    for path in sorted(
        (run_dir / "job_events").glob("*.json"), key=lambda p: int(p.name.split("-")[0])
    ):
        ev = json.loads(path.read_text())
        data = ev.get("event_data") or {}
        if ev.get("event") in ("playbook_on_task_start", "playbook_on_handler_task_start"):
            role = (data.get("role") or "").split(".")[-1]
            starts.append((_time(ev), f"{role or '-'}: {data.get('task') or data.get('name')}"))
        elif ev.get("event") == "playbook_on_stats":
            end = _time(ev)
    if not starts:
        raise SystemExit(f"{run_dir}: no task starts in job_events/")
    starts.append((end or starts[-1][0], "(end)"))
    return starts


def split(starts: list[tuple[datetime, str]]) -> tuple[dict, dict, float]:
    per_task: dict = defaultdict(lambda: [0.0, 0])
    for (t0, name), (t1, _) in zip(starts, starts[1:], strict=False):
        per_task[name][0] += (t1 - t0).total_seconds()
        per_task[name][1] += 1
    parts: dict = defaultdict(float)
    for name, (secs, _) in per_task.items():
        part = next((p for p, rx in PARTS if rx.search(name)), "everything else")
        parts[part] += secs
    total = (starts[-1][0] - starts[0][0]).total_seconds()
    return dict(per_task), dict(parts), total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    per_task, parts, total = split(load(a.run_dir))
    if a.json:
        print(json.dumps({"total_s": total, "parts": parts, "tasks": per_task}, indent=2))
        return 0
    print(f"tasks: {sum(n for _, n in per_task.values())}, wall time {total:.0f} s\n")
    print("| part | seconds |\n| --- | ---: |")
    for part, secs in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"| {part} | {secs:.0f} |")
    print("\n| slowest tasks (role: task) | runs | seconds |\n| --- | ---: | ---: |")
    for name, (secs, n) in sorted(per_task.items(), key=lambda kv: -kv[1][0])[: a.top]:
        print(f"| {name} | {n} | {secs:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
