"""``miglab validate|plan|run|status|sim``: the campaign on its lab."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from miglab.cli.common import _console, _load, _print_json, _warn
from miglab.errors import (
    EXIT_BUSY,
    EXIT_FAIL,
    EXIT_INVALID,
    EXIT_OK,
)


# --- validate / plan -----------------------------------------------------------------------------
def cmd_validate(args) -> int:
    campaign, lab = _load(args)
    _warn(campaign.warnings)
    vms = sum(s.vm_count for s in campaign.scenarios.values())
    print(
        f"ok: {campaign.file}: campaign {campaign.name!r}, {len(campaign.scenarios)} scenarios, "
        f"{vms} VMs, {campaign.gpu.name}; fits lab {lab.source} "
        f"({len(lab.hosts)} host(s), {sum(len(h.gpus) for h in lab.hosts)} GPU(s))"
    )
    return EXIT_OK


def cmd_plan(args) -> int:
    from miglab.core.planning import plan_campaign

    campaign, lab = _load(args)
    plan = plan_campaign(campaign, lab)
    _warn(campaign.warnings)
    if args.json:
        _print_json(plan.as_json())
        return EXIT_OK
    from miglab.cli.render import print_plan

    print_plan(plan, _console())
    return EXIT_OK


# --- run / status ---------------------------------------------------------------------------------


def cmd_run(args) -> int:
    from miglab.adapters.lock import LabBusy, LabLock, lock_path
    from miglab.adapters.project import cache_dir, default_inventory, main_playbook, project_dir
    from miglab.adapters.runner import artifacts_dir, run_playbook
    from miglab.core.schedule import fmt_duration

    campaign, lab = _load(args)  # validate first: nothing is touched on bad input
    _warn(campaign.warnings)
    inventory = str(Path(args.inventory) if args.inventory else default_inventory())
    results = Path(args.results_dir) if args.results_dir else project_dir() / "results"
    campaign_results = results / campaign.name
    command = "miglab run " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "miglab run"
    if _has_runs(campaign_results) and not (args.resume or args.fresh or args.check):
        print(
            f"error: {campaign_results} holds runs of this campaign already: --resume continues "
            "them (VALID runs are kept), --fresh moves them aside and starts again",
            file=sys.stderr,
        )
        return EXIT_INVALID
    try:
        with LabLock(lock_path(inventory, cache_dir() / "locks"), inventory, command) as lk:
            if lk.took_over:
                print(f"note: cleared a stale lock of {lk.took_over.describe()}", file=sys.stderr)
            if args.fresh and _has_runs(campaign_results):
                aside = campaign_results.with_name(
                    f"{campaign.name}.{time.strftime('%Y%m%d-%H%M%S')}"
                )
                campaign_results.rename(aside)
                print(f"note: earlier runs moved to {aside}", file=sys.stderr)
            folder = artifacts_dir(campaign.name)
            extravars = {
                "miglab_campaign": str(Path(campaign.file).resolve()),
                "miglab_resume": bool(args.resume),
                "miglab_results_dir": str(results.resolve()),
                "miglab_artifacts_dir": str(folder),
            }
            envvars = {"MIGLAB_CAMPAIGN": extravars["miglab_campaign"]}
            with _StopOnSignal() as stop:
                result = _run_with_progress(
                    run_playbook,
                    args.playbook or main_playbook(),
                    inventory,
                    extravars,
                    args.tags,
                    args.check,
                    folder,
                    envvars,
                    rounds_total=_rounds(campaign, lab),
                    forks=_forks(campaign, lab),
                    extra_args=args.extra_vars,
                    cancel=stop.requested,
                )
    except LabBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BUSY
    p = result.progress
    print(f"artifacts: {result.artifacts}")
    failures = list(p.failures)
    if stop.signal is not None:
        failures.insert(0, f"interrupted by {stop.name} during [{p.phase}] {p.play} / {p.task}")
    for failure in failures:
        print(f"failed: {failure}", file=sys.stderr)
    if result.rc != 0 and not args.check and _has_runs(campaign_results):
        _report_failed_run(campaign, campaign_results, failures or [f"ansible rc {result.rc}"])
    report = campaign_results / "report" / "report.md"
    if report.is_file():
        print(f"report: {report}")
    if result.rc == 0:
        print(f"done in {fmt_duration(p.elapsed())}: ok {p.ok}, changed {p.changed}")
        return EXIT_OK
    if stop.signal is not None:
        print(
            f"run interrupted by {stop.name}: `miglab run --resume` continues it", file=sys.stderr
        )
        return 128 + stop.signal
    print(f"run {result.status} (ansible rc {result.rc})", file=sys.stderr)
    return EXIT_FAIL


class _StopOnSignal:
    """Ctrl-C (SIGINT) or SIGTERM during a run: ask ansible-runner to stop the playbook (its
    cancel callback), so that the results collected so far, the report of them and the lab lock
    are dealt with as for a failed run; a second signal stops at once."""

    SIGNALS = ("SIGINT", "SIGTERM")

    def __init__(self) -> None:
        self.signal: int | None = None
        self._old: dict = {}

    @property
    def name(self) -> str:
        return signal.Signals(self.signal).name if self.signal else ""

    def requested(self) -> bool:
        return self.signal is not None

    def _handle(self, signum, frame) -> None:
        if self.signal is not None:
            raise KeyboardInterrupt
        self.signal = signum
        print(
            f"\n{self.name}: stopping the playbook; what was collected stays "
            "(again to stop at once)",
            file=sys.stderr,
            flush=True,
        )

    def __enter__(self):
        for name in self.SIGNALS:
            sig = getattr(signal, name)
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def _report_failed_run(campaign, folder: Path, failures: list[str]) -> None:
    """A run that stopped half way (before its report phase): the report of what was collected,
    headed by what went wrong -- the collected results stay as they are."""
    from miglab.mlperf.results.aggregate import aggregate_results, campaign_context
    from miglab.mlperf.results.report import write_report

    try:
        ctx = campaign_context(campaign.file)
        agg = aggregate_results(
            folder, baseline=ctx.get("baseline"), plan=ctx.get("plan"), runs=ctx.get("runs")
        )
        write_report(agg, folder / "report", failures=failures)
    except Exception as exc:  # noqa: BLE001 - the run's own failure is what matters here
        print(f"warning: no report of the failed run: {exc}", file=sys.stderr)


def _rounds(campaign, lab) -> int:
    """MLPerf rounds of the whole campaign: waves x the mlperf role's matrix (benchmarks x MLPerf
    scenarios x (runs + a search round + an accuracy round + the compliance tests that apply))."""
    from miglab.core.planning import plan_campaign

    waves = {s["wave"] for s in plan_campaign(campaign, lab).as_json()["scenarios"]}
    m = campaign.mlperf
    per_scenario = len(m.benchmarks) * (m.runs + bool(m.qps_search) + m.accuracy)
    return len(waves) * len(m.scenarios) * (per_scenario + len(m.compliance_pairs()))


def _forks(campaign, lab) -> int:
    """Ansible's forks for the run: at least the largest wave's VMs, so the start barrier
    releases all of a wave's VMs at once (with fewer, the rest would start only after the first
    batch's runs ended); more when the project's Ansible settings ask for more."""
    import configparser
    import os

    from miglab.adapters.project import project_dir
    from miglab.core.planning import plan_campaign

    configured = 5  # Ansible's own default
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(os.environ.get("ANSIBLE_CONFIG") or project_dir() / "ansible.cfg")
        configured = cfg.getint("defaults", "forks", fallback=configured)
    except (configparser.Error, ValueError):
        pass
    if os.environ.get("ANSIBLE_FORKS", "").isdigit():
        configured = int(os.environ["ANSIBLE_FORKS"])
    return max(configured, plan_campaign(campaign, lab).largest_wave_vms())


def _has_runs(folder: Path) -> bool:
    return folder.is_dir() and any(folder.glob("*/*/*/*/performance/run_*"))


def _run_with_progress(run_playbook, playbook, inventory, extravars, tags, check, folder, envvars,
                       rounds_total=0, extra_args=(), cancel=None, forks=None):  # fmt: skip
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True, markup=False)  # task and host names print as they are
    kwargs = dict(tags=tags, check=check, private_dir=folder, envvars=envvars,
                  rounds_total=rounds_total, extra_args=extra_args, cancel=cancel,
                  forks=forks)  # fmt: skip
    if not console.is_terminal:  # a log: one line per play, per MLPerf round, per failure
        seen = [0]

        def plain(progress, event):
            kind = event.get("event")
            if kind == "playbook_on_play_start":
                print(f"[{progress.phase}] {progress.play}", file=sys.stderr, flush=True)
            elif kind in ("runner_on_failed", "runner_on_unreachable") and progress.failures:
                print(f"  failed: {progress.failures[-1]}", file=sys.stderr, flush=True)
            done = progress.rounds_done + progress.rounds_skipped
            if done != seen[0]:
                seen[0] = done
                print(f"  {progress.line()}", file=sys.stderr, flush=True)

        return run_playbook(playbook, inventory, extravars, on_event=plain, **kwargs)
    with Live(console=console, refresh_per_second=4, transient=True) as live:
        return run_playbook(
            playbook,
            inventory,
            extravars,
            on_event=lambda progress, event: live.update(progress.line()),
            **kwargs,
        )


def cmd_sim(args) -> int:
    """``miglab sim up|down|status``: the built-in simulated lab (:mod:`miglab.sim.lab`)."""
    from miglab.sim import lab as simlab

    argv = [args.sim_command]
    if args.sim_command == "up":
        argv += ["-i", args.inventory] if args.inventory else []
        argv += ["--rebuild-golden"] if args.rebuild_golden else []
    elif args.sim_command == "status" and args.json:
        argv.append("--json")
    return simlab.main(argv)


def cmd_status(args) -> int:
    from miglab.adapters.lock import lock_path, read
    from miglab.adapters.project import cache_dir, default_inventory, project_dir

    inventory = str(Path(args.inventory) if args.inventory else default_inventory())
    holder = read(lock_path(inventory, cache_dir() / "locks"))
    print(f"lab {inventory}: " + (f"in use by {holder.describe()}" if holder else "idle"))
    runs = sorted((project_dir() / "artifacts").glob("*/artifacts/run/status"))
    for status in runs[-5:]:
        folder = status.parent.parent.parent
        print(f"  {folder.name}: {status.read_text().strip()}")
    return EXIT_OK
