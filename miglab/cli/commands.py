"""The ``miglab`` command: thin argument parsing around the core; bad input exits 2."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from miglab import __version__
from miglab.errors import (
    EXIT_BUSY,
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    ValidationError,
)


def _console(stderr: bool = False):
    from rich.console import Console

    width = None if sys.stdout.isatty() else 140
    return Console(stderr=stderr, width=width, highlight=False, soft_wrap=False)


def _print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def _warn(warnings) -> None:
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


# --- validate / plan -----------------------------------------------------------------------------
def _load(args):
    from miglab.adapters.inventory import load_checked

    return load_checked(args.campaign, args.inventory)


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
    from miglab.adapters.project import default_inventory, project_dir
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
        with LabLock(
            lock_path(inventory, project_dir() / ".cache" / "locks"), inventory, command
        ) as lk:
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
                    args.playbook,
                    inventory,
                    extravars,
                    args.tags,
                    args.check,
                    folder,
                    envvars,
                    rounds_total=_rounds(campaign, lab),
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
    """MLPerf rounds of the whole campaign: waves x (benchmarks x MLPerf scenarios x runs)."""
    from miglab.core.planning import plan_campaign

    waves = {s["wave"] for s in plan_campaign(campaign, lab).as_json()["scenarios"]}
    m = campaign.mlperf
    return len(waves) * len(m.benchmarks) * len(m.scenarios) * m.runs


def _has_runs(folder: Path) -> bool:
    return folder.is_dir() and any(folder.glob("*/*/*/*/performance/run_*"))


def _run_with_progress(run_playbook, playbook, inventory, extravars, tags, check, folder, envvars,
                       rounds_total=0, extra_args=(), cancel=None):  # fmt: skip
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True)
    kwargs = dict(tags=tags, check=check, private_dir=folder, envvars=envvars,
                  rounds_total=rounds_total, extra_args=extra_args, cancel=cancel)  # fmt: skip
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
    from miglab.adapters.project import default_inventory, project_dir

    inventory = str(Path(args.inventory) if args.inventory else default_inventory())
    holder = read(lock_path(inventory, project_dir() / ".cache" / "locks"))
    print(f"lab {inventory}: " + (f"in use by {holder.describe()}" if holder else "idle"))
    runs = sorted((project_dir() / "artifacts").glob("*/artifacts/run/status"))
    for status in runs[-5:]:
        folder = status.parent.parent.parent
        print(f"  {folder.name}: {status.read_text().strip()}")
    return EXIT_OK


# --- gpu ----------------------------------------------------------------------------------------
def cmd_gpu_list(args) -> int:
    from miglab.core.catalog import load_catalog

    cat = load_catalog()
    rows = [
        {
            "gpu": m.name,
            "product_names": list(m.product_names),
            "pci_device_ids": list(m.pci_device_ids),
            "mig_profiles": len(m.profiles),
            "mmio_gb": m.mmio_gb,
        }
        for m in cat
    ]
    if args.json:
        _print_json(rows)
        return EXIT_OK
    from rich.table import Table

    t = Table(
        "catalog name",
        "nvidia-smi name",
        "PCI id",
        "MIG profiles",
        "VM MMIO GB",
        box=None,
        pad_edge=False,
    )
    for r in rows:
        t.add_row(
            r["gpu"],
            ", ".join(r["product_names"]),
            ", ".join(r["pci_device_ids"]),
            str(r["mig_profiles"]),
            str(r["mmio_gb"]),
        )
    _console().print(t)
    return EXIT_OK


def _print_profiles(model, as_json: bool) -> int:
    if as_json:
        _print_json(model.as_json())
        return EXIT_OK
    from rich.table import Table

    t = Table(
        "profile",
        "id",
        "compute",
        "memory GiB",
        "max",
        "placements",
        "size",
        "vGPU type",
        title=f"{model.name} ({', '.join(model.product_names) or model.source})",
        box=None,
        pad_edge=False,
        title_justify="left",
    )
    for p in model.profiles:
        t.add_row(
            p.name,
            str(p.id),
            str(p.slices),
            f"{p.memory_gib:.2f}",
            str(p.max_instances),
            "{" + ",".join(map(str, p.placements)) + "}",
            str(p.placement_size),
            model.mig_backed.get(p.name, "-"),
        )
    _console().print(t)
    return EXIT_OK


def cmd_gpu_profiles(args) -> int:
    from miglab.core.catalog import UnknownName, load_catalog
    from miglab.errors import Problem

    try:
        model = load_catalog().get(args.gpu)
    except UnknownName as exc:
        raise ValidationError([Problem("<command line>", "GPU", str(exc))]) from None
    return _print_profiles(model, args.json)


def cmd_gpu_import_mig(args) -> int:
    from miglab.core.importers import model_from_capture_file

    model = model_from_capture_file(Path(args.file), name=args.name)
    return _print_profiles(model, args.json)


def cmd_gpu_inspect(args) -> int:
    from miglab.core.importers import inspect_gpus
    from miglab.errors import Problems

    problems = Problems(args.file)
    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.add("", f"cannot read: {exc}")
        problems.raise_if_any()
    gpus = inspect_gpus(text, args.file)
    if args.json:
        _print_json(gpus)
        return EXIT_OK
    from rich.table import Table

    t = Table(
        "GPU",
        "bus id",
        "nvidia-smi name",
        "catalog",
        "driver",
        "MIG current",
        "MIG pending",
        "virtualization",
        box=None,
        pad_edge=False,
    )
    for g in gpus:
        t.add_row(
            str(g["index"]),
            g["pci_bus_id"] or "-",
            g["product_name"] or "-",
            g["catalog"] or "(not in catalog)",
            g["driver_version"] or "-",
            g["mig_mode_current"] or "-",
            (g["mig_mode_pending"] or "-")
            + (" (reboot/reset pending)" if g["mig_change_pending"] else ""),
            g["virtualization_mode"] or "-",
        )
    _console().print(t)
    return EXIT_OK


def cmd_gpu_fit(args) -> int:
    from miglab.core.catalog import UnknownName, load_catalog
    from miglab.core.placement import explain_no_fit, fit
    from miglab.errors import Problem

    problems = []
    try:
        model = load_catalog().get(args.gpu)
    except UnknownName as exc:
        raise ValidationError([Problem("<command line>", "GPU", str(exc))]) from None
    profiles = []
    for i, name in enumerate(args.profiles):
        try:
            profiles.append(model.profile(name))
        except UnknownName as exc:
            problems.append(Problem("<command line>", f"PROFILE[{i}]", str(exc)))
    if problems:
        raise ValidationError(problems)
    layout = fit(model, profiles)
    if layout is None:
        msg = explain_no_fit(model, profiles)
        if args.json:
            _print_json({"gpu": model.name, "fits": False, "reason": msg})
        else:
            print(f"does not fit on one {model.name}: {msg}")
        return EXIT_FAIL
    if args.json:
        _print_json({"gpu": model.name, "fits": True, **layout.summary()})
    else:
        print(layout.render("GPU"))
        s = layout.summary()
        print(
            f"free: {s['free_compute_slices']} compute slices, memory slices "
            f"{s['free_memory_slices']}, stranded compute slices: "
            f"{s['stranded_compute_slices']}; can still add: "
            + (", ".join(f"{n}x {k}" for k, n in s["addable"].items()) or "nothing")
        )
    return EXIT_OK


def cmd_gpu_mig_parted(args) -> int:
    from miglab.core.migparted_export import campaign_to_mig_parted
    from miglab.core.planning import plan_campaign
    from miglab.formats.migparted import dump

    campaign, lab = _load(args)
    text = dump(campaign_to_mig_parted(plan_campaign(campaign, lab)))
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_gpu_from_mig_parted(args) -> int:
    from miglab.core.migparted_export import mig_parted_to_campaign

    sys.stdout.write(mig_parted_to_campaign(Path(args.file), gpu=args.gpu, name=args.name))
    return EXIT_OK


# --- parser -------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="miglab",
        description="Plan, build and benchmark MIG-backed vGPU labs on VMware vSphere.",
    )
    ap.add_argument("--version", action="version", version=f"miglab {__version__}")
    ap.add_argument(
        "--project-dir",
        metavar="DIR",
        help="the project folder: inventories, campaigns, results, artifacts, caches "
        "(default: MIGLAB_PROJECT_DIR, else the current directory)",
    )
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def campaign_cmd(name, help_, func):
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("campaign", metavar="CAMPAIGN", help="campaign YAML file")
        p.add_argument(
            "-i",
            "--inventory",
            metavar="INVENTORY",
            help="Ansible YAML inventory of the lab (default: inventories/sim)",
        )
        p.set_defaults(func=func)
        return p

    campaign_cmd(
        "validate", "check a campaign (and that it fits the lab); exit 2 when invalid", cmd_validate
    )
    p = campaign_cmd("plan", "where every VM lands, GPU maps, capacity left, schedule", cmd_plan)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")

    p = campaign_cmd("run", "run the main job (site.yml) for a campaign on the lab", cmd_run)
    p.add_argument(
        "--tags",
        type=lambda v: [t for t in v.split(",") if t],
        help="only these phases: validate,hosts,vms,guests,mlperf,report",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="skip MLPerf runs whose VALID results are already collected",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="move the campaign's earlier results aside (results/<campaign>.<time>) and redo all",
    )
    p.add_argument(
        "--results-dir", metavar="DIR", help="the results tree (default <checkout>/results)"
    )
    p.add_argument("--check", action="store_true", help="check mode: change nothing")
    p.add_argument(
        "-e",
        "--extra-vars",
        action="append",
        default=[],
        metavar="VARS",
        help="extra variables for the playbooks, as for ansible-playbook (key=value, YAML/JSON, "
        "or @file); repeatable",
    )
    p.add_argument("--playbook", default="site.yml", help=argparse.SUPPRESS)
    sim = sub.add_parser("sim", help="the built-in simulated lab: vCenter, ESXi hosts, guest VMs")
    ssub = sim.add_subparsers(dest="sim_command", required=True, metavar="SIM_COMMAND")
    p = ssub.add_parser("up", help="start it (builds images, simulator, golden guest once)")
    p.add_argument(
        "-i", "--inventory", metavar="HOSTS", help="lab hosts (inventories/sim/hosts.yml)"
    )
    p.add_argument("--rebuild-golden", action="store_true", help="rebuild the golden guest image")
    p.set_defaults(func=cmd_sim)
    p = ssub.add_parser("down", help="stop it and remove its containers (the results stay)")
    p.set_defaults(func=cmd_sim)
    p = ssub.add_parser("status", help="what runs: vCenter, ESXi hosts, guest VMs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sim)

    p = sub.add_parser("status", help="is the lab in use; the last runs")
    p.add_argument("-i", "--inventory", metavar="INVENTORY")
    p.set_defaults(func=cmd_status)

    gpu = sub.add_parser("gpu", help="GPU catalog, MIG placement, nvidia-smi and mig-parted files")
    gsub = gpu.add_subparsers(dest="gpu_command", required=True, metavar="GPU_COMMAND")
    p = gsub.add_parser("list", help="GPU models in the catalog")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_list)
    p = gsub.add_parser("profiles", help="MIG profiles of a GPU model")
    p.add_argument("gpu", metavar="GPU", help="catalog name, alias, nvidia-smi name or PCI id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_profiles)
    p = gsub.add_parser("import-mig", help="read `nvidia-smi mig -lgip`/`-lgipp` output")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--name", help="GPU name to give the imported model")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_import_mig)
    p = gsub.add_parser(
        "inspect",
        help="GPUs, driver and MIG mode from `nvidia-smi -q` or "
        "`--query-gpu ... --format=csv` output",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_inspect)
    p = gsub.add_parser("fit", help="do these MIG profiles fit on one GPU? (exit 1 when not)")
    p.add_argument("gpu", metavar="GPU")
    p.add_argument("profiles", metavar="PROFILE", nargs="+")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_fit)
    p = gsub.add_parser("mig-parted", help="export a campaign's MIG layouts as a mig-parted file")
    p.add_argument("campaign", metavar="CAMPAIGN")
    p.add_argument("-i", "--inventory", metavar="INVENTORY")
    p.add_argument("-o", "--output", metavar="FILE")
    p.set_defaults(func=cmd_gpu_mig_parted)
    p = gsub.add_parser(
        "from-mig-parted", help="turn a mig-parted config file into a campaign skeleton"
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("--gpu", help="GPU model when the file has no device-filter")
    p.add_argument("--name", default="from-mig-parted", help="campaign name")
    p.set_defaults(func=cmd_gpu_from_mig_parted)
    from miglab.cli.results import register as register_results

    register_results(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.project_dir:
        from miglab.adapters.project import ENV

        folder = Path(args.project_dir)
        if not folder.is_dir():
            print(f"error: {args.project_dir}: --project-dir: not a folder", file=sys.stderr)
            return EXIT_INVALID
        os.environ[ENV] = str(folder.resolve())
    try:
        return args.func(args)
    except ValidationError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug, not bad input: say so in one line unless debugging
        if os.environ.get("MIGLAB_DEBUG"):
            raise
        print(
            f"internal error: {type(exc).__name__}: {exc} (set MIGLAB_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
