"""``miglab results parse|aggregate|verify`` and ``miglab report``: the results side of the MLPerf
plugin.

:func:`register` adds the commands to the ``miglab`` command's subparsers (this module never
imports :mod:`miglab.cli.commands`, which imports it); exit codes as ``miglab``'s: 0 ok, 2 bad
input (one ``error: FILE: FIELD: reason`` line per problem); ``results verify`` exits 1 when a
file does not match its run's manifest, ``report`` when it cannot write its files. A run that
cannot be read or is INVALID is not bad input: it is listed, with its reason, among the others.
JSON output is always JSON (no bare NaN).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from miglab.core.clock import DEFAULT_BOUND_S
from miglab.core.runs import MIN_OVERLAP
from miglab.errors import EXIT_FAIL, EXIT_OK, Problem, ValidationError


def _print_json(data) -> None:
    from miglab.core.runs import json_dumps

    sys.stdout.write(json_dumps(data) + "\n")


def _line(text) -> str:
    from miglab.mlperf.results.aggregate import one_line

    return one_line(text)


def _escaping_stdout() -> None:
    """A file name that is not UTF-8 prints escaped instead of ending the command."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


# --- results parse ------------------------------------------------------------------------------
def cmd_results_parse(args) -> int:
    from miglab.core.runs import parse_paths
    from miglab.mlperf.results.aggregate import device_label
    from miglab.mlperf.results.report import format_value

    _escaping_stdout()
    records = parse_paths(args.paths)
    if args.json:
        _print_json([r.as_json() for r in records])
        return EXIT_OK
    for r in records:
        print(_line(r.path))
        print(
            f"  {r.benchmark or '?'} {r.scenario or '?'} {r.mode or '?'}: "
            f"{r.metric or 'no metric'} = {format_value(r.value, r.unit)}"
            + (f" {r.unit}" if r.unit and r.unit != "ns" and r.value is not None else "")
        )
        if r.valid:
            print("  LoadGen: VALID")
        else:
            print("  LoadGen: NOT VALID: " + "; ".join(r.invalid_reasons))
        print(
            "  submission rules: "
            + ("met" if r.submission_valid else "not met: " + "; ".join(r.submission_reasons))
        )
        es = r.early_stopping
        es_text = (
            "n/a"
            if not es
            else ("met" if es.get("early_stopping_met") else "NOT met")
            + (f" ({es['early_stopping_result']})" if es.get("early_stopping_result") else "")
        )
        print(
            f"  loadgen {r.loadgen_version or '?'}; min_duration {r.min_duration_ms} ms; "
            f"early stopping: {es_text}"
        )
        w = r.window_power or r.window_runner or r.window_log
        if w:
            print(
                f"  window {w[0].isoformat(sep=' ', timespec='milliseconds')} - "
                f"{w[1].isoformat(sep=' ', timespec='milliseconds')} "
                f"({r.duration_s:.1f} s)"
            )
        if r.meta.files:
            print(
                f"  run: simulated={r.meta.simulated} backend={r.meta.backend} "
                f"weights={r.meta.weights} inputs={r.meta.inputs}"
            )
            print(f"  device: {_line(device_label(r.meta, detail=True))}")
        for n in r.notes:
            print(f"  note: {_line(n)}")
    return EXIT_OK


# --- results verify -----------------------------------------------------------------------------
def cmd_results_verify(args) -> int:
    from miglab.formats.manifest import verify_tree

    _escaping_stdout()
    report = verify_tree(args.results_dir)  # ValidationError (exit 2) for a missing folder
    if args.json:
        _print_json(report.as_json())
    else:
        for issue in report.issues:
            print(issue)
    n = len(report.runs)
    if report.ok:
        if not args.json:
            print(f"ok: {n} run folder(s), {report.files} file(s) match their manifests")
        return EXIT_OK
    print(
        f"{len(report.issues)} problem(s) in {args.results_dir} ({n} run folder(s) checked)",
        file=sys.stderr,
    )
    return EXIT_FAIL


# --- results aggregate / report -------------------------------------------------------------------
def _aggregate(args):
    from miglab.mlperf.results.aggregate import (
        MAX_RUNS,
        aggregate_results,
        campaign_context,
        normalize_plan,
        read_json_input,
    )

    if args.runs is not None and not 1 <= args.runs <= MAX_RUNS:
        raise ValidationError(
            [Problem("<command line>", "--runs", f"must be from 1 to {MAX_RUNS}, got {args.runs}")]
        )
    ctx: dict = {}
    if getattr(args, "campaign", None):
        ctx = campaign_context(args.campaign)
    if getattr(args, "plan", None):
        ctx["plan"] = normalize_plan(read_json_input(args.plan), str(args.plan))
    if args.baseline:
        ctx["baseline"] = args.baseline
    if args.runs:
        ctx["runs"] = args.runs
    return aggregate_results(
        args.results_dir,
        baseline=ctx.get("baseline"),
        plan=ctx.get("plan"),
        runs=ctx.get("runs"),
        min_overlap=args.min_overlap,
        require_timestamps=not args.allow_unchecked_overlap,
        clock_bound=args.clock_bound,
    )


def cmd_results_aggregate(args) -> int:
    from miglab.mlperf.results.report import format_value

    _escaping_stdout()
    agg = _aggregate(args)
    if args.json:
        _print_json(agg.as_json())
        return EXIT_OK
    if args.csv:
        sys.stdout.write(agg.to_csv())
        return EXIT_OK
    for g in agg.groups:
        imp = "" if g.improvement_pct is None else f"  {g.improvement_pct:+.2f} % vs {g.baseline}"
        sd = "" if g.stdev is None else f" +- {format_value(g.stdev, g.unit)}"
        print(
            f"{g.campaign} {g.scenario} {g.benchmark} {g.mlperf_scenario}: "
            f"{len(g.vms)} VM(s) [{g.scenario_profiles or '?'}] "
            f"total {format_value(g.mean, g.unit)}{sd} {g.unit or ''} "
            f"({g.count}/{len(g.runs)} runs {g.status}){imp}"
        )
        for label in g.measured:
            print(f"  measured: {_line(label)}")
        if g.included:
            print(
                "  submission rules: "
                + ("met" if g.submission_valid else "not met: " + "; ".join(g.submission_reasons))
            )
        for x in g.excluded_reasons:
            print(f"  excluded {_line(x)}")
        for n in g.notes:
            print(f"  note: {_line(n)}")
    for p in agg.problems:
        print(f"warning: {_line(p)}", file=sys.stderr)
    return EXIT_OK


def cmd_report(args) -> int:
    from miglab.mlperf.results.report import write_report

    _escaping_stdout()
    agg = _aggregate(args)
    out = Path(args.output) if args.output else Path(args.results_dir) / "report"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where the folder should be, no permission: bad input
        raise ValidationError(
            [Problem(str(out), "", f"cannot be the output folder: {exc.strerror or exc}")]
        ) from None
    try:
        written = write_report(agg, out)
    except OSError as exc:  # a full disk: it ran and failed
        print(f"error: {out}: cannot write the report: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAIL
    names = ["report.md", "report.html", "results.csv", "results.json"]
    names += [n for n in written if n.endswith(".png")]
    changed = set(written.changed)
    for name in names:  # "wrote" only for files rewritten (playbooks/report.yml's changed_when)
        print(f"{'wrote' if name in changed else 'unchanged'} {written[name]}")
    for p in agg.problems:
        print(f"warning: {_line(p)}", file=sys.stderr)
    return EXIT_OK


# --- results export -----------------------------------------------------------------------------
def cmd_results_export(args) -> int:
    """Plan the submission tree, refuse runs that cannot be submitted (unless
    --allow-unsubmittable), write it, check it: one line per problem, exit 1 when there is one."""
    from miglab.mlperf.results.submission import (
        plan_export,
        read_system_info,
        run_summary,
        write_export,
    )

    _escaping_stdout()
    info = read_system_info(args.system_info) if args.system_info else None
    plan = plan_export(
        args.results_dir,
        division=args.division,
        submitter=args.submitter,
        round_name=args.round,
        status=args.status,
        system_type=args.system_type,
        campaign=args.campaign,
        system_info=info,
    )
    refused = bool(plan.blocking) and not args.allow_unsubmittable
    if not refused:
        try:
            write_export(plan, args.submission, results_dir=args.results_dir, force=args.force)
        except OSError as exc:  # a full disk, no permission: it ran and failed
            print(f"error: {args.submission}: cannot write: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_FAIL
    if args.json:
        data = run_summary(plan)
        data["written"] = not refused
        _print_json(data)
    else:
        for f in plan.findings:
            print(_line(str(f)))
    n, systems = len(plan.picks), len(plan.systems)
    if refused:
        print(
            f"refused: {len({f.path for f in plan.blocking})} run(s) cannot be submitted "
            "(NOT SUBMITTABLE lines); nothing written. --allow-unsubmittable exports them "
            "marked with their reasons",
            file=sys.stderr,
        )
        return EXIT_FAIL
    where = f"{args.submission} ({plan.round.name}, {plan.division}/{plan.submitter})"
    if plan.findings:
        what = "NOT SUBMITTABLE, " if plan.blocking else ""
        print(
            f"wrote {n} result(s) of {systems} system(s) to {where}: {what}"
            f"{len(plan.findings)} problem(s); the tree would not pass MLCommons' checker",
            file=sys.stderr,
        )
        return EXIT_FAIL
    print(f"ok: wrote {n} result(s) of {systems} system(s) to {where}", file=sys.stderr)
    return EXIT_OK


def _aggregate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--campaign",
        metavar="FILE",
        help="campaign YAML (or `miglab plan --json` output): baseline, profiles, runs",
    )
    p.add_argument("--plan", metavar="FILE", help="JSON: scenario -> {profile: count}, or a plan")
    p.add_argument("--baseline", metavar="SCENARIO", help="scenario improvements are against")
    p.add_argument("--runs", type=int, metavar="N", help="expected runs per scenario (1 to 100)")
    p.add_argument(
        "--min-overlap",
        type=float,
        default=MIN_OVERLAP,
        metavar="F",
        help="least fraction (0-1) of a run's span that all VMs must run at once to count as "
        f"concurrent (default {MIN_OVERLAP:g})",
    )
    p.add_argument(
        "--clock-bound",
        type=float,
        default=DEFAULT_BOUND_S,
        metavar="S",
        help="flag a run whose guests' clock offsets to the controller differ by more than S "
        f"seconds (default {DEFAULT_BOUND_S:g})",
    )
    p.add_argument(
        "--allow-unchecked-overlap",
        action="store_true",
        help="sum multi-VM runs whose logs have no timestamps (said in the output)",
    )


def register(subparsers) -> None:
    """Add ``results parse|aggregate|verify`` and ``report`` to miglab's subparsers."""
    res = subparsers.add_parser(
        "results", help="MLPerf LoadGen logs: parse runs, aggregate concurrent VMs, verify"
    )
    rsub = res.add_subparsers(dest="results_command", required=True, metavar="RESULTS_COMMAND")
    p = rsub.add_parser(
        "parse",
        help="one record per LoadGen run (log files, run folders or trees)",
        description="Read mlperf_log_detail.txt (or mlperf_log_summary.txt) of each run.",
    )
    p.add_argument("paths", metavar="PATH", nargs="+")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p.set_defaults(func=cmd_results_parse)
    p = rsub.add_parser(
        "aggregate",
        help="total throughput per scenario run, statistics over runs, improvement",
        description="Aggregate results/<campaign>/<scenario>/<vm>/<benchmark>/<MLPerf scenario>"
        "/performance/run_<n>/ trees.",
    )
    p.add_argument("results_dir", metavar="DIR")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--csv", action="store_true")
    _aggregate_options(p)
    p.set_defaults(func=cmd_results_aggregate)
    p = rsub.add_parser(
        "verify",
        help="check every run folder against its MANIFEST.sha256",
        description="Check a results tree (or one run folder): every .../performance/run_<n>/ "
        "must have a MANIFEST.sha256 that matches its files (each path once, inside the run "
        "folder); leftovers of an interrupted write or fetch, symbolic links (never followed), "
        "FIFOs or devices, and run folders not named run_<n> are reported. Exit 0: all good; "
        "1: problems (one line each); 2: no such DIR.",
    )
    p.add_argument("results_dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(func=cmd_results_verify)
    _register_export(rsub)

    p = subparsers.add_parser(
        "report",
        help="Markdown, HTML, CSV, JSON and PNG charts of a results tree",
        description="Aggregate a results tree and write report.md, report.html, results.csv, "
        "results.json and one bar chart per benchmark and MLPerf scenario.",
    )
    p.add_argument("results_dir", metavar="RESULTS_DIR")
    p.add_argument(
        "-o", "--output", metavar="OUT", help="output folder (default RESULTS_DIR/report)"
    )
    _aggregate_options(p)
    p.set_defaults(func=cmd_report)


def _register_export(rsub) -> None:
    from miglab.mlperf.results.submission import (
        DEFAULT_ROUND,
        DIVISIONS,
        ROUNDS,
        STATUSES,
        SYSTEM_TYPES,
    )

    p = rsub.add_parser(
        "export",
        help="write an MLCommons submission tree (one system per VM) and check it",
        description="Write RESULTS_DIR's runs as an MLPerf Inference submission tree: a system "
        "per VM (systems/<vm>.json from miglab_run.json and the campaign), the median counted "
        "run of each VM as performance/run_1, its accuracy run, its compliance tests (verified "
        "again against the exported run), user.conf, mlperf.conf and README.md from the run's "
        "log; then check the tree with the round's rules. Sums over VMs are lab metrics "
        "(MIGLAB_EXPORT.md), never results. Runs that cannot be submitted (simulated, random "
        "weights, synthetic inputs, CPU, a failed rule) are refused unless "
        "--allow-unsubmittable. Exit 0: the tree passes; 1: problems (one line each) or "
        "refused; 2: bad input.",
    )
    p.add_argument("results_dir", metavar="RESULTS_DIR")
    p.add_argument("--submission", required=True, metavar="DIR", help="the tree to write")
    p.add_argument("--division", choices=DIVISIONS, default="closed")
    p.add_argument("--submitter", default="miglab", metavar="NAME", help="default: miglab")
    p.add_argument(
        "--round",
        choices=sorted(ROUNDS),
        default=DEFAULT_ROUND,
        help=f"the checker version whose layout and rules apply (default {DEFAULT_ROUND})",
    )
    p.add_argument("--status", choices=STATUSES, default="available", help="systems' status")
    p.add_argument("--system-type", choices=SYSTEM_TYPES, default="datacenter")
    p.add_argument(
        "--campaign",
        metavar="FILE",
        help="campaign YAML (GPU model, VM size, profiles) or `miglab plan --json` output",
    )
    p.add_argument(
        "--system-info",
        metavar="FILE",
        help="JSON object of system-description fields for every system (host CPU, memory, "
        "OS, ...), optionally with a 'measurements' object",
    )
    p.add_argument(
        "--allow-unsubmittable",
        action="store_true",
        help="write runs that cannot be submitted too, marked NOT SUBMITTABLE (exit 1 still)",
    )
    p.add_argument("--force", action="store_true", help="replace a non-empty DIR")
    p.add_argument("--json", action="store_true", help="print the export and its problems as JSON")
    p.set_defaults(func=cmd_results_export)
