"""Write the report of an :class:`~miglab.mlperf.results.aggregate.Aggregate`: Markdown, HTML, CSV,
JSON
and PNG bar charts.

``write_report(aggregate, out_dir)`` writes into ``out_dir``:

* ``report.md`` - tables per benchmark and MLPerf scenario (VMs, profiles, total throughput as
  mean of the runs with stdev and min-max, per-VM throughput, spread, improvement over the
  baseline, validity), every run's total with its overlap, each run's guest clock offsets to
  the controller and their check (ok, flagged, not checked), every excluded run with its
  reasons;
* ``report.html`` - the same, self-contained (the charts embedded as data URIs);
* ``results.csv`` and ``results.json`` - the aggregate (``Aggregate.to_csv()``/``as_json()``);
* ``chart-<benchmark>-<scenario>.png`` - one bar per campaign scenario like the seed's Figures 5
  and 7: mean total throughput, min-max error bars, the baseline bar and level marked, the
  improvement over the baseline above each bar.

The report is titled :data:`TITLE`: these are runs miglab made with MLPerf's LoadGen, not
results MLCommons has verified. What was measured is said next to the figures: one banner per
distinct device, weights and inputs (``miglab_run.json``) at the top and again above each
section's tables, a device column in the tables (the Placement table names each VM's device as
nvidia-smi in the guest showed it), and the "submission rules" column says "no (why)" for a
figure that cannot meet them -- a sum over VMs, a simulated lab, random weights, synthetic inputs,
the CPU (:mod:`miglab.core.mlperf_rules`). When the runs were simulated or used random weights,
every output says so at the top (and the charts in their title); so does a run whose guests'
clocks disagree beyond the aggregate's bound (flagged: the clocks are named in the Clocks table).

The output is a function of the results only (no timestamps; PNGs without a Software tag), and
each file is written atomically and only when its bytes change: a second report over the same
results rewrites nothing (``ReportFiles.changed`` is empty).

A bad run never stops the report: unreadable and INVALID runs are listed with their reasons;
a chart draws only finite values (the aggregate has no other), and a chart that still cannot be
drawn is said in the report instead of ending it. ``results.json`` is always JSON (no NaN).
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path

from miglab.core.runs import json_dumps
from miglab.mlperf.results.aggregate import (
    Aggregate,
    Group,
    device_label,
    one_line,
)

__all__ = ["TITLE", "ReportFiles", "format_value", "write_report"]

# Not "MLPerf results": MLCommons' rule for figures it has not reviewed.
TITLE = "MLPerf Inference runs (not verified by MLCommons)"
NOT_VERIFIED = (
    "Not verified by MLCommons Association. These figures are runs of MLPerf Inference's LoadGen "
    "made by miglab in this lab; MLCommons has not reviewed them, and they are not MLPerf results."
)


class ReportFiles(dict):
    """``{name: path}`` of every file of the report, plus which of them were rewritten
    (``changed``) and which already held the same bytes (``unchanged``), in writing order."""

    def __init__(self):
        super().__init__()
        self.changed: list[str] = []
        self.unchanged: list[str] = []

    def put(self, name: str, path: Path, data: bytes) -> None:
        # Imported here: miglab.mlperf imports this module, and the role runs
        # `python -m miglab.formats.manifest` (runpy warns when the package imported it already).
        from miglab.formats.manifest import write_if_changed

        self[name] = path
        (self.changed if write_if_changed(path, data) else self.unchanged).append(name)


def format_value(v: float | None, unit: str | None = None) -> str:
    """Throughput with thousands separators and at most 2 decimals; ns latencies as ms."""
    if v is None or not math.isfinite(v):
        return "-"
    if unit == "ns":
        return f"{v / 1e6:,.3f} ms"
    s = f"{v:,.2f}"
    return s.rstrip("0").rstrip(".") if "." in s else s


def _pct(v: float | None, signed: bool = True) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    return f"{v:+.2f} %" if signed else f"{v:.2f} %"


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "-" for c in s).strip("-") or "x"


def _by_benchmark(agg: Aggregate) -> dict[tuple[str, str, str], list[Group]]:
    out: dict[tuple[str, str, str], list[Group]] = {}
    for g in agg.groups:
        out.setdefault((g.campaign, g.benchmark, g.mlperf_scenario), []).append(g)
    return out


def _banners(agg: Aggregate) -> list[str]:
    lines = []
    sim = [g for g in agg.groups if g.simulated]
    if sim:
        backends = sorted({b for g in sim for b in g.backends}) or ["unknown backend"]
        lines.append(
            "SIMULATED RUNS: the run metadata (miglab_run.json) says these results were simulated "
            f"({', '.join(backends)}); they are not measurements of real GPUs."
        )
    rnd = [g for g in agg.groups if "random" in g.weights]
    if rnd:
        lines.append(
            "RANDOM WEIGHTS: performance runs with random model weights (miglab_run.json "
            "weights=random): throughput only, no accuracy was or could be checked."
        )
    flagged = [f"{g.scenario} {g.benchmark} {g.mlperf_scenario} run_{r.run}"
               for g in agg.groups for r in g.clock_flagged]  # fmt: skip
    if flagged:
        lines.append(
            f"CLOCKS DISAGREE: the guests' clocks were more than {agg.clock_bound * 1000:g} ms "
            f"apart, or not known that precisely, in {_listed(flagged)}; their run windows were "
            "compared in the controller's time (see Clocks)."
        )
    for label, groups in agg.measured().items():
        lines.append(f"MEASURED: {label} ({_scope(groups, agg.groups)}).")
    for label, groups in _runtimes(agg.groups).items():
        lines.append(f"RUNTIME: {label} ({_scope(groups, agg.groups)}).")
    unknown = [g for g in agg.groups if g.simulated is None]
    if unknown and not sim:
        lines.append(
            "Run metadata (miglab_run.json) is missing for some runs: whether they were "
            "simulated, and with which device, weights and inputs, is not recorded."
        )
    return lines


def runtime_label(runtime) -> str | None:
    """A run's ``runtime`` (miglab_run.json, the mlperf role's) in words: ``container IMAGE
    (sha256:0123456789ab)`` or ``virtualenv (CPython 3.11.2)``; None when not recorded."""
    if not isinstance(runtime, dict) or not runtime.get("kind"):
        return None
    if runtime.get("container"):
        image_id = str(runtime.get("image_id") or "")
        short = f" ({image_id[:19]})" if image_id else ""
        return f"container {runtime.get('image') or 'image not recorded'}{short}"
    python = str(runtime.get("python") or "").split(" (")[0]
    kind = "virtualenv" if runtime["kind"] == "venv" else str(runtime["kind"])
    return f"{kind} ({python})" if python else kind


def _runtimes(groups: list[Group]) -> dict[str, list[Group]]:
    """Each distinct runtime the groups' runs recorded -> the groups with such a run."""
    out: dict[str, list[Group]] = {}
    for g in groups:
        labels = {
            label
            for runs in g.vm_runs.values()
            for vr in runs.values()
            if vr.record is not None
            and (label := runtime_label(vr.record.meta.extra.get("runtime")))
        }
        for label in sorted(labels):
            out.setdefault(label, []).append(g)
    return out


def _scope(groups: list[Group], every: list[Group]) -> str:
    """Which figures a banner is about: every one, or the groups named."""
    if len(groups) == len(every):
        return "every run"
    return _listed([f"{g.scenario} {g.benchmark} {g.mlperf_scenario}" for g in groups])


def _measured_lines(groups: list[Group]) -> list[str]:
    """A section's banners: what its figures measured (device, weights, inputs), per distinct
    combination, with the scenarios it holds for when they differ."""
    by: dict[str, list[str]] = {}
    for g in groups:
        for label in g.measured:
            by.setdefault(label, []).append(g.scenario)
    if len(by) == 1:
        return [f"Measured: {next(iter(by))}."]
    return [f"Measured: {label} ({', '.join(scen)})." for label, scen in by.items()]


def _submission_cell(g: Group, shown: int = 6) -> str:
    """``yes``, or ``no (why; why)``: the group's figure against the submission rules."""
    if g.submission_valid:
        return "yes"
    reasons = g.submission_reasons
    more = f"; and {len(reasons) - shown} more (results.json)" if len(reasons) > shown else ""
    return f"no ({'; '.join(reasons[:shown])}{more})"


def _summary_rows(groups: list[Group]) -> list[list[str]]:
    rows = []
    for g in groups:
        rng = (
            "-"
            if g.min is None
            else f"{format_value(g.min, g.unit)} - {format_value(g.max, g.unit)}"
        )
        per_vm = ", ".join(
            f"{vm}{' (' + g.profiles[vm] + ')' if g.profiles.get(vm) else ''}: "
            f"{format_value(v, g.unit)}"
            for vm, v in g.per_vm_mean.items()
        )
        rows.append(
            [
                g.scenario + (" (baseline)" if g.baseline == g.scenario else ""),
                str(len(g.vms)),
                g.scenario_profiles or "?",
                format_value(g.mean, g.unit),
                format_value(g.stdev, g.unit),
                rng,
                per_vm or "-",
                _pct(g.spread_pct, signed=False),
                "baseline" if g.baseline == g.scenario else _pct(g.improvement_pct),
                f"{g.count}/{len(g.runs)} {g.status}",
                "; ".join(g.devices) or "-",
                _submission_cell(g),
            ]
        )
    return rows


SUMMARY_HEAD = [
    "scenario",
    "VMs",
    "profiles",
    "total (mean)",
    "stdev",
    "min - max",
    "per-VM (mean)",
    "spread",
    "vs baseline",
    "valid runs",
    "device",
    "submission rules",
]
RUN_HEAD = [
    "scenario",
    "run",
    "total",
    "per VM",
    "overlap",
    "window (source)",
    "counted",
    "why not",
    "device",
]


def _run_devices(g: Group, n: int) -> str:
    """The devices of run ``n``'s VMs: one label when they agree, else per VM."""
    per_vm = {
        vm: device_label(vr.record.meta)
        for vm in g.vms
        if (vr := g.vm_runs.get(vm, {}).get(n)) is not None and vr.record is not None
    }
    labels = set(per_vm.values())
    if not labels:
        return "-"
    if len(labels) == 1:
        return labels.pop()
    return ", ".join(f"{vm}: {label}" for vm, label in per_vm.items())


def _run_rows(groups: list[Group]) -> list[list[str]]:
    rows = []
    for g in groups:
        for r in g.runs:
            win = "-"
            if r.window:
                win = " - ".join(t.isoformat(sep=" ", timespec="milliseconds") for t in r.window)
                win += f" ({r.window_source})"
            rows.append(
                [
                    g.scenario,
                    str(r.run),
                    format_value(r.total, g.unit) if r.included else "-",
                    ", ".join(f"{vm}: {format_value(v, g.unit)}" for vm, v in r.values.items())
                    or "-",
                    "-" if r.overlap_fraction is None else f"{r.overlap_fraction:.1%}",
                    win,
                    "yes" if r.included else "NO",
                    "; ".join(r.reasons) or "-",
                    _run_devices(g, r.run),
                ]
            )
    return rows


def _listed(items: list[str], shown: int = 5) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


CLOCK_HEAD = ["scenario", "run", "guest clock - controller clock", "spread", "check"]


def _clock_rows(groups: list[Group]) -> list[list[str]]:
    """Each run's clock offsets (measured before the run, ``miglab_run.json`` clock) and check."""
    rows = []
    for g in groups:
        for r in g.runs:
            c = r.clock
            if c is None:
                rows.append([g.scenario, str(r.run), "-", "-", "no usable VM run"])
                continue
            cells = [
                f"{vm}: {c.offsets[vm] * 1000:+.1f} ms (+-{c.uncertainties[vm] * 1000:.1f})"
                if vm in c.offsets
                else f"{vm}: not measured"
                for vm in g.vms
                if vm in r.values
            ]
            spread = "-" if c.spread_s is None else f"{c.spread_s * 1000:.1f} ms"
            check = c.state.upper() if c.flagged else c.state
            if r.window_corrected:
                check += " (windows compared in the controller's time)"
            if c.reasons:
                check += ": " + "; ".join(c.reasons)
            rows.append([g.scenario, str(r.run), ", ".join(cells) or "-", spread, check])
    return rows


PLACEMENT_HEAD = [
    "scenario",
    "VM",
    "profile",
    "GPU",
    "MIG slot",
    "planned",
    "as planned",
    "device (in the guest)",
]


def _placement_rows(groups: list[Group]) -> list[list[str]]:
    """Where each VM's vGPU ran (its latest run's ``placement``), against the plan, and the
    device its latest run measured (its ``device``: nvidia-smi in the guest, or the CPU)."""
    rows = []
    for g in groups:
        for vm in g.vms:
            runs = g.vm_runs.get(vm, {})
            latest = next(
                (r.record for _, r in sorted(runs.items(), reverse=True) if r.record is not None),
                None,
            )
            device = "-" if latest is None else device_label(latest.meta, detail=True)
            placement = next(
                (
                    r.record.meta.placement
                    for _, r in sorted(runs.items(), reverse=True)
                    if r.record is not None and r.record.meta.placement
                ),
                None,
            )
            if placement is None:
                rows.append(
                    [g.scenario, vm, g.profiles.get(vm) or "-", "-", "-", "-", "not recorded",
                     device]
                )  # fmt: skip
                continue
            planned = placement.get("planned") or {}
            same = placement.get("gpu") == planned.get("gpu") and (
                planned.get("mig_slot") is None
                or placement.get("mig_slot") == planned.get("mig_slot")
            )
            slot = placement.get("mig_slot")
            rows.append(
                [
                    g.scenario,
                    vm,
                    g.profiles.get(vm) or "-",
                    str(placement.get("gpu") or "-")
                    + (" (pinned)" if placement.get("pinned") else ""),
                    "-" if slot is None else str(slot),
                    f"{planned.get('gpu') or '-'} slot {planned.get('mig_slot')}",
                    "yes" if same else "NO",
                    device,
                ]
            )
    return rows


SEARCH_HEAD = ["profile", "benchmark", "scenario", "kind", "target QPS found", "trials",
               "latency bound", "searched in", "date", "note"]  # fmt: skip
SEARCH_TEXT = (
    "Search runs, not results (their logs are not kept): per MIG profile, Server's highest "
    "target QPS whose short run stayed VALID (LoadGen VALID, early stopping met, p99 within the "
    "latency bound), Offline's expected QPS from one short calibration run (samples/s x 1.1). "
    "Every VM of the profile ran its full runs at that target."
)
COMPLIANCE_HEAD = ["scenario", "VM", "benchmark", "MLPerf scenario", "test", "verdict", "reason"]
COMPLIANCE_TEXT = (
    "MLPerf compliance tests, verified as MLCommons' scripts do against the VM's "
    "performance/run_1 (TEST01 also accuracy/run_1); never counted as performance runs."
)


def _search_rows(agg: Aggregate) -> list[list[str]]:
    rows = []
    for r in agg.searches:
        bound = f"{r.latency_bound_ms:g} ms (p99)" if r.latency_bound_ms else "-"
        note = r.problem or ("" if r.converged is not False else "not converged")
        rows.append([r.profile, r.benchmark, r.mlperf_scenario,
                     "calibration" if r.kind == "calibration" else "bisection",
                     format_value(r.target_qps), str(r.trials), bound, r.vm or "-",
                     r.date or "-", note])  # fmt: skip
    return rows


ACCURACY_HEAD = ["scenario", "VM", "benchmark", "MLPerf scenario", "run", "metric", "value",
                 "target", "verdict", "reason"]  # fmt: skip
ACCURACY_TEXT = (
    "AccuracyOnly runs: the value accuracy.txt states (read with the submission checker's "
    "pattern) against the benchmark's target (ResNet50 top-1 76.46 % x 0.99, BERT F1 "
    "90.874 % x 0.99 / x 0.999); never counted as performance runs."
)


def _accuracy_rows(agg: Aggregate) -> list[list[str]]:
    return [
        [r.scenario, r.vm, r.benchmark, r.mlperf_scenario, f"run_{r.run}", r.metric or "-",
         "-" if r.value is None else f"{r.value:.3f} %",
         "-" if r.target is None else f"{r.target:.3f} %", r.verdict, r.reason]
        for r in agg.accuracy
    ]  # fmt: skip


def _compliance_rows(agg: Aggregate) -> list[list[str]]:
    return [
        [r.scenario, r.vm, r.benchmark, r.mlperf_scenario, r.test, r.verdict, r.reason]
        for r in agg.compliance
    ]


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def _metric_label(g: Group) -> str:
    if g.unit == "ns":
        return f"{g.metric} (ms, {'worst VM' if g.combine == 'max' else 'total'})"
    return f"{g.metric} ({g.unit}, {'sum over VMs' if g.combine == 'sum' else 'worst VM'})"


def _chart(groups: list[Group], title: str, flags: list[str]) -> bytes | None:
    """One bar per scenario: mean, min-max error bars, baseline marked; the PNG's bytes (None:
    nothing to draw). No metadata that changes between runs."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    drawn = [
        g for g in groups if all(v is not None and math.isfinite(v) for v in (g.mean, g.min, g.max))
    ]
    if not drawn:
        return None
    scale = 1e-6 if drawn[0].unit == "ns" else 1.0
    names = [g.scenario for g in drawn]
    means = [g.mean * scale for g in drawn]
    lo = [(g.mean - g.min) * scale for g in drawn]
    hi = [(g.max - g.mean) * scale for g in drawn]
    base = next((g for g in drawn if g.baseline == g.scenario), None)
    colors = ["#d62728" if g is base else "#1f77b4" for g in drawn]
    # at most 100 inches wide (10000 px): matplotlib refuses images over 2^16 px a side
    fig = Figure(figsize=(min(100.0, max(6.0, 1.1 * len(drawn) + 2)), 4.8), dpi=100)
    ax = fig.subplots()
    ax.bar(names, means, color=colors, yerr=[lo, hi], capsize=5, ecolor="black")
    if base is not None:
        ax.axhline(base.mean * scale, color="#d62728", linestyle="--", linewidth=1)
    top = max(m + h for m, h in zip(means, hi, strict=True)) or 1.0
    for i, g in enumerate(drawn):
        label = (
            f"{g.mean:,.0f}" if g.unit != "ns" and g.mean >= 1000 else format_value(g.mean, g.unit)
        )
        if g.improvement_pct is not None and math.isfinite(g.improvement_pct) and g is not base:
            label += f"\n{g.improvement_pct:+.2f} %"
        elif g is base:
            label += "\nbaseline"
        ax.text(i, means[i] + hi[i] + top * 0.01, label, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(
        range(len(drawn)),
        [
            g.scenario
            + ("\n" + g.scenario_profiles.replace(" + ", "\n") if g.scenario_profiles else "")
            for g in drawn
        ],
        fontsize=7,
    )
    ax.set_ylim(0, top * 1.2)
    ax.yaxis.set_major_formatter(
        FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 10 else f"{v:g}")
    )
    ax.set_ylabel(
        "latency (ms)" if drawn[0].unit == "ns" else f"total throughput ({drawn[0].unit})"
    )
    ax.set_xlabel("scenario (error bars: min - max over runs)")
    ax.set_title(title + (f"\n{' / '.join(flags)}" if flags else ""), fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


CLOCK_TEXT = (
    "Each guest's clock offset to the controller is measured before each run; the VMs' run "
    "windows are compared in the controller's time, and a run whose guests' offsets differ by "
    "more than {bound:g} ms is flagged (Clocks: not checked where a guest has no measurement)."
)


def write_report(
    aggregate: Aggregate, out_dir: str | Path, failures: list[str] | None = None
) -> ReportFiles:
    """Write report.md, report.html, results.csv, results.json and one PNG chart per benchmark
    and MLPerf scenario into ``out_dir`` (created); return the paths by name, and which files
    changed. Each file is replaced atomically, and only when its content changes. ``failures``
    (what went wrong in the run that collected these results) head the report as banners."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = ReportFiles()
    banners = [f"THE CAMPAIGN RUN FAILED: {f}" for f in failures or []] + _banners(aggregate)
    flags = []
    if any(g.simulated for g in aggregate.groups):
        flags.append("SIMULATED")
    if aggregate.cpu_runs:
        flags.append("CPU")
    if aggregate.random_weights:
        flags.append("RANDOM WEIGHTS")
    if aggregate.synthetic_inputs:
        flags.append("SYNTHETIC INPUTS")
    flags.append("not verified by MLCommons")

    sections = []
    chart_problems: list[str] = []
    for (camp, bench, mlscen), groups in _by_benchmark(aggregate).items():
        name = f"chart-{_slug(camp)}-{_slug(bench)}-{_slug(mlscen)}.png"
        title = f"{camp}: {bench} {mlscen}"
        try:
            png = _chart(groups, title, flags)
        except (ValueError, OverflowError, RuntimeError, MemoryError) as exc:
            # matplotlib's refusal (a figure too large, a value it cannot place): the tables
            # and the other charts are still written
            png = None
            chart_problems.append(f"{title}: chart not drawn: {type(exc).__name__}: {exc}"[:300])
        if png is not None:
            written.put(name, out / name, png)
        sections.append((camp, bench, mlscen, groups, name if png is not None else None, png))

    # --- Markdown -----------------------------------------------------------------------------
    md = [f"# {TITLE}", ""]
    for b in banners:
        md += [f"> **{b}**", ""]
    md += [NOT_VERIFIED, ""]
    md += [
        f"Results: `{aggregate.root}`. Baseline scenario: "
        f"{aggregate.baseline or 'none given (no improvements computed)'}. A run counts only when "
        "every VM's LoadGen run is VALID without errors and the VMs' run windows overlap"
        + (
            f" by at least {aggregate.min_overlap:.0%} of the round's span (else the round is "
            "*not concurrent* and not summed)"
            if aggregate.min_overlap
            else ""
        )
        + "; totals are sums over the VMs, statistics are over the counted runs. "
        + CLOCK_TEXT.format(bound=aggregate.clock_bound * 1000),
        "",
    ]
    for camp, bench, mlscen, groups, png_name, _png in sections:
        md += [f"## {camp}: {bench} {mlscen}", "", f"Metric: {_metric_label(groups[0])}.", ""]
        for line in _measured_lines(groups):
            md += [f"**{line}**", ""]
        if png_name is not None:
            md += [f"![{bench} {mlscen}]({png_name})", ""]
        md += [_md_table(SUMMARY_HEAD, _summary_rows(groups)), ""]
        md += ["### Runs", "", _md_table(RUN_HEAD, _run_rows(groups)), ""]
        md += ["### Clocks", "", _md_table(CLOCK_HEAD, _clock_rows(groups)), ""]
        md += ["### Placement", "", _md_table(PLACEMENT_HEAD, _placement_rows(groups)), ""]
        notes = [f"{g.scenario}: {n}" for g in groups for n in g.notes]
        if notes:
            md += ["Notes:", ""] + [f"- {one_line(n)}" for n in notes] + [""]
    if aggregate.searches:
        md += ["## Target QPS search", "", SEARCH_TEXT, ""]
        md += [_md_table(SEARCH_HEAD, _search_rows(aggregate)), ""]
    if aggregate.compliance:
        md += ["## Compliance", "", COMPLIANCE_TEXT, ""]
        md += [_md_table(COMPLIANCE_HEAD, _compliance_rows(aggregate)), ""]
    if aggregate.accuracy:
        md += ["## Accuracy", "", ACCURACY_TEXT, ""]
        md += [_md_table(ACCURACY_HEAD, _accuracy_rows(aggregate)), ""]
    excluded = [
        f"{g.campaign} {g.scenario} {g.benchmark} {g.mlperf_scenario} {x}"
        for g in aggregate.groups
        for x in g.excluded_reasons
    ]
    md += ["## Excluded runs", ""]
    md += (
        [f"- {one_line(x)}" for x in excluded]
        if excluded
        else ["None: every run found was counted."]
    )
    md += [""]
    if aggregate.problems:
        md += ["## Files outside the results layout or refused (not counted)", ""]
        md += [f"- {one_line(p)}" for p in aggregate.problems] + [""]
    if chart_problems:
        md += ["## Charts not drawn", ""] + [f"- {one_line(p)}" for p in chart_problems] + [""]
    written.put("report.md", out / "report.md", _encode("\n".join(md)))

    # --- HTML ---------------------------------------------------------------------------------
    h = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(TITLE)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1400px}"
        "table{border-collapse:collapse;margin:1em 0;font-size:90%}"
        "td,th{border:1px solid #999;padding:3px 6px;text-align:left;vertical-align:top}"
        "th{background:#eee}.banner{background:#fdd;border:2px solid #c00;padding:.6em;"
        "font-weight:bold}</style></head><body>",
        f"<h1>{html.escape(TITLE)}</h1>",
    ]
    h += [f"<p class='banner'>{html.escape(b)}</p>" for b in banners]
    h.append(f"<p><strong>{html.escape(NOT_VERIFIED)}</strong></p>")
    h.append(
        f"<p>Results: <code>{html.escape(aggregate.root)}</code>. Baseline scenario: "
        f"{html.escape(aggregate.baseline or 'none given (no improvements computed)')}. "
        "A run counts only when every VM's LoadGen run is VALID without errors and the VMs' run "
        "windows overlap; totals are sums over the VMs, statistics are over the counted runs. "
        f"{html.escape(CLOCK_TEXT.format(bound=aggregate.clock_bound * 1000))}</p>"
    )
    for camp, bench, mlscen, groups, _png_name, png in sections:
        h.append(f"<h2>{html.escape(f'{camp}: {bench} {mlscen}')}</h2>")
        h.append(f"<p>Metric: {html.escape(_metric_label(groups[0]))}.</p>")
        h += [f"<p class='banner'>{html.escape(line)}</p>" for line in _measured_lines(groups)]
        if png is not None:
            data = base64.b64encode(png).decode("ascii")
            h.append(
                f"<img alt='{html.escape(bench)} {html.escape(mlscen)}' "
                f"src='data:image/png;base64,{data}'>"
            )
        h.append(_html_table(SUMMARY_HEAD, _summary_rows(groups)))
        h.append("<h3>Runs</h3>" + _html_table(RUN_HEAD, _run_rows(groups)))
        h.append("<h3>Clocks</h3>" + _html_table(CLOCK_HEAD, _clock_rows(groups)))
        h.append("<h3>Placement</h3>" + _html_table(PLACEMENT_HEAD, _placement_rows(groups)))
        notes = [f"{g.scenario}: {n}" for g in groups for n in g.notes]
        if notes:
            h.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    if aggregate.searches:
        h.append(f"<h2>Target QPS search</h2><p>{html.escape(SEARCH_TEXT)}</p>")
        h.append(_html_table(SEARCH_HEAD, _search_rows(aggregate)))
    if aggregate.compliance:
        h.append(f"<h2>Compliance</h2><p>{html.escape(COMPLIANCE_TEXT)}</p>")
        h.append(_html_table(COMPLIANCE_HEAD, _compliance_rows(aggregate)))
    if aggregate.accuracy:
        h.append(f"<h2>Accuracy</h2><p>{html.escape(ACCURACY_TEXT)}</p>")
        h.append(_html_table(ACCURACY_HEAD, _accuracy_rows(aggregate)))
    h.append("<h2>Excluded runs</h2>")
    h.append(
        "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in excluded) + "</ul>"
        if excluded
        else "<p>None: every run found was counted.</p>"
    )
    if aggregate.problems:
        h.append("<h2>Files outside the results layout or refused (not counted)</h2><ul>")
        h += [f"<li>{html.escape(p)}</li>" for p in aggregate.problems]
        h.append("</ul>")
    if chart_problems:
        h.append("<h2>Charts not drawn</h2><ul>")
        h += [f"<li>{html.escape(p)}</li>" for p in chart_problems]
        h.append("</ul>")
    h.append("</body></html>")
    written.put("report.html", out / "report.html", _encode("\n".join(h)))

    # --- CSV / JSON ---------------------------------------------------------------------------
    written.put("results.csv", out / "results.csv", _encode(aggregate.to_csv()))
    data = {"title": TITLE, "verified_by_mlcommons": False, **aggregate.as_json()}
    data["banners"] = banners
    data["charts_not_drawn"] = chart_problems
    written.put("results.json", out / "results.json", (json_dumps(data) + "\n").encode())
    return written


def _encode(text: str) -> bytes:
    """UTF-8; a file name that is not UTF-8 (an undecodable byte) is written escaped."""
    return text.encode("utf-8", errors="backslashreplace")
