"""Adapter: run the project's playbooks through ansible-runner; runner events become progress.

Each invocation gets its own artifacts folder (``artifacts/<time>-<campaign>/``) holding
ansible-runner's job events and stdout, so every run can be inspected afterwards.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from miglab.adapters.project import ansible_env as project_ansible_env
from miglab.adapters.project import project_dir

PHASES = ("validate", "hosts", "vms", "guests", "mlperf", "report", "teardown")
# Phase of a play, from words of its name (runner events carry no play tags).
PLAY_PHASES = (
    ("validate the campaign", "validate"),
    ("mig modes", "hosts"),
    ("esxi host", "hosts"),
    ("create the campaign's vms", "vms"),
    ("benchmark", "guests"),
    ("report", "report"),
    ("remove the campaign's vms", "teardown"),
    ("mig off", "teardown"),
)
# Phase of a task inside the benchmark play, from its role.
ROLE_PHASES = {"guest_base": "guests", "guest_vgpu_driver": "guests",
               "guest_container_toolkit": "guests", "mlperf": "mlperf"}  # fmt: skip


@dataclass
class Progress:
    """What the run has done so far, from runner events (events as data)."""

    phase: str = ""
    play: str = ""
    task: str = ""
    host: str = ""
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    mlperf_done: int = 0
    mlperf_total: int = 0
    # Campaign-wide: one round = one run (benchmark x MLPerf scenario x run) of one wave, all its
    # VMs at once; rounds_total comes from the plan (waves x matrix), set by the caller.
    rounds_done: int = 0
    rounds_skipped: int = 0
    rounds_total: int = 0
    rounds_started: float | None = None
    failures: list[str] = field(default_factory=list)
    changed_by_play: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def feed(self, event: dict) -> None:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind == "playbook_on_play_start":
            self.play = data.get("play", "")
            name = self.play.lower()
            self.phase = next((ph for words, ph in PLAY_PHASES if words in name), self.phase)
        elif kind == "playbook_on_task_start":
            self.task = data.get("task", "")
            role = str(data.get("role") or "").rsplit(".", 1)[-1]
            self.phase = ROLE_PHASES.get(role, self.phase)
            if self.phase == "mlperf" and self.rounds_started is None:
                self.rounds_started = time.monotonic()  # the pace counts from the first round
        elif kind in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable"):
            self.host = data.get("host", "")
            res = data.get("res") or {}
            if kind == "runner_on_ok":
                self.ok += 1
                if res.get("changed"):
                    self.changed += 1
                    self.changed_by_play[self.play] = self.changed_by_play.get(self.play, 0) + 1
            elif kind == "runner_on_failed" and not data.get("ignore_errors"):
                self.failed += 1
                self.failures.append(f"{self.host}: {self.task}: {_why(res)}".strip())
            elif kind == "runner_on_unreachable":
                self.unreachable += 1
                self.failures.append(f"{self.host}: unreachable: {res.get('msg', '')}")
            prog = res.get("miglab_progress")
            if isinstance(prog, dict):
                self._progress(prog)

    def _progress(self, prog: dict) -> None:
        if "skipped" in prog:  # a whole wave already VALID
            self.rounds_skipped += int(prog["skipped"])
            return
        self.mlperf_done = int(prog.get("done", self.mlperf_done))
        self.mlperf_total = int(prog.get("total", self.mlperf_total))
        self.rounds_done += 1

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def eta_s(self) -> float | None:
        """Seconds left for the MLPerf rounds, from the pace of the rounds done so far."""
        left = self.rounds_total - self.rounds_done - self.rounds_skipped
        if not self.rounds_total or not self.rounds_done or self.rounds_started is None:
            return None
        pace = (time.monotonic() - self.rounds_started) / self.rounds_done
        return max(0.0, left * pace)

    def line(self) -> str:
        runs = ""
        if self.rounds_total:
            done = self.rounds_done + self.rounds_skipped
            runs = f" | MLPerf rounds {done}/{self.rounds_total}"
            eta = self.eta_s()
            if eta is not None:
                runs += f", ETA {int(eta) // 60}m{int(eta) % 60:02d}s"
        elif self.mlperf_total:
            runs = f" | MLPerf runs {self.mlperf_done}/{self.mlperf_total}"
        return (
            f"[{self.phase or '...'}] {self.play} / {self.task} ({self.host}){runs} | "
            f"ok {self.ok} changed {self.changed} failed {self.failed}"
        )


def _why(res: dict) -> str:
    """A failed task's message; a command's bare "non-zero return code" gets its last stderr
    line (e.g. "No space left on device")."""
    msg = str(res.get("msg", "") or "")
    stderr = str(res.get("stderr", "") or "").strip()
    if stderr and msg in ("", "non-zero return code"):
        last = stderr.splitlines()[-1].strip()
        msg = f"{msg}: {last}" if msg else last
    return msg


@dataclass
class PlaybookRun:
    rc: int
    status: str
    artifacts: Path
    progress: Progress


def artifacts_dir(campaign: str, base: Path | None = None) -> Path:
    base = base or project_dir() / "artifacts"
    folder = base / f"{time.strftime('%Y%m%d-%H%M%S')}-{campaign}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run_playbook(
    playbook: str,
    inventory: str,
    extravars: dict,
    *,
    tags: list[str] | None = None,
    check: bool = False,
    private_dir: Path,
    on_event=None,
    envvars: dict | None = None,
    rounds_total: int = 0,
    extra_args: list[str] | tuple[str, ...] = (),
    cancel=None,
    forks: int | None = None,
) -> PlaybookRun:
    """``extra_args``: ``-e`` values as ansible-playbook takes them; ``cancel``: a callable that
    says when to stop the playbook (ansible-runner's cancel callback); ``forks``: hosts Ansible
    runs at once (unset: the Ansible settings')."""
    import ansible_runner

    progress = Progress(rounds_total=rounds_total)

    def handler(event: dict) -> bool:
        progress.feed(event)
        if on_event:
            on_event(progress, event)
        return True  # keep the event in the artifacts

    root = project_dir()
    envvars = {
        **project_ansible_env(root),
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "ANSIBLE_NOCOLOR": "1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        **(envvars or {}),
    }
    import shlex

    args = ["--check", "--diff"] if check else []
    for value in extra_args:
        args += ["-e", value]
    cmdline = shlex.join(args) if args else None
    r = ansible_runner.run(
        private_data_dir=str(private_dir),
        project_dir=str(root),
        playbook=playbook,
        inventory=str(Path(inventory).resolve()),
        extravars=extravars,
        tags=",".join(tags) if tags else None,
        cmdline=cmdline,
        envvars=envvars,
        event_handler=handler,
        cancel_callback=cancel,
        forks=forks,
        quiet=True,
        ident="run",
    )
    return PlaybookRun(r.rc, r.status, private_dir / "artifacts" / "run", progress)
