"""Aggregate concurrent MLPerf runs: one total per scenario run, statistics over runs, improvement.

The results tree is submission-style, one level per VM::

    results/<campaign>/<scenario>/<vm>/<benchmark>/<MLPerf scenario>/performance/run_<n>/
        mlperf_log_detail.txt   (or mlperf_log_summary.txt; optional miglab_run.json)

``aggregate_results(DIR)`` accepts ``results/`` (several campaigns) or ``results/<campaign>``.
For each (campaign scenario, benchmark, MLPerf scenario) and run number *n*:

* every VM of the scenario (every ``<vm>`` folder under it, and the VMs of the plan when one is
  given) must have a run *n* that LoadGen calls VALID, with no error lines, in the same test mode
  and with the same metric;
* the VMs' run windows must overlap. The window source is the best one all VMs have: LoadGen's
  ``power_begin``/``power_end`` (the timed part of the run), else the runner's ``started_at``/
  ``finished_at`` from ``miglab_run.json``, else ``test_datetime`` + first/last ``time_ms``. The
  overlap fraction is (time all VMs ran at once) / (first start to last end); a run is summed
  only when it is above zero and at least ``min_overlap``. LoadGen stamps times with the guest's
  clock, so the guests' clocks (and time zones) must agree: miglab's runners sync them;
* then throughputs are summed over the VMs (latency metrics: the worst VM is the scenario's
  figure). A run that fails any check is excluded and each reason is reported with its VM.

Over the included runs: count, mean, sample standard deviation, min, max, spread
((max - min) / mean) and the improvement of the mean over the baseline scenario's mean for the
same benchmark and MLPerf scenario, in percent (for latency metrics a lower latency is a
positive improvement).
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from miglab.core.runs import RunRecord, parse_run
from miglab.errors import Problem, ValidationError
from miglab.formats.loadgen import find_run_logs, has_run_log

__all__ = [
    "Aggregate",
    "Group",
    "RunTotal",
    "RoundCheck",
    "ScenarioPlan",
    "aggregate_results",
    "check_round",
    "campaign_context",
    "normalize_plan",
]

WINDOW_SOURCES = ("power", "runner", "log")
RUN_DIR_RE = re.compile(r"^run_(\d+)$")


def natural_key(s: str):
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", str(s))]


# --- plan --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScenarioPlan:
    """What a scenario should have: vGPU profiles and counts, and VM names when known."""

    vgpus: dict[str, int]
    vms: dict[str, str] = field(default_factory=dict)  # VM name -> profile

    @property
    def vm_count(self) -> int:
        return sum(self.vgpus.values())

    def describe(self) -> str:
        return " + ".join(f"{n}x {p}" for p, n in self.vgpus.items())

    def profile_of(self, vm_dir: str) -> str | None:
        for name, prof in self.vms.items():
            if name == vm_dir or name.endswith("-" + vm_dir):
                return prof
        if len(self.vgpus) == 1:
            return next(iter(self.vgpus))
        return None


def normalize_plan(plan, source: str = "plan") -> dict[str, ScenarioPlan]:
    """Accept ``{scenario: {profile: n}}``, ``{scenario: {"vgpus": {...}}}`` or ``miglab plan
    --json`` output; raise ValidationError on anything else."""
    problems: list[Problem] = []
    out: dict[str, ScenarioPlan] = {}
    if plan is None:
        return out
    if isinstance(plan, dict) and isinstance(plan.get("scenarios"), list):
        for i, s in enumerate(plan["scenarios"]):
            if not isinstance(s, dict) or not isinstance(s.get("id"), str):
                problems.append(Problem(source, f"scenarios[{i}]", "needs an 'id'"))
                continue
            vg = s.get("vgpus") or {}
            vms = {
                v["name"]: v.get("profile")
                for v in s.get("vms") or []
                if isinstance(v, dict) and isinstance(v.get("name"), str)
            }
            out[s["id"]] = _scenario_plan(vg, f"scenarios[{i}].vgpus", source, problems, vms)
    elif isinstance(plan, dict):
        for sid, body in plan.items():
            vg = body.get("vgpus") if isinstance(body, dict) and "vgpus" in body else body
            out[str(sid)] = _scenario_plan(vg, f"{sid}.vgpus", source, problems, {})
    else:
        problems.append(Problem(source, "", "a plan must be a mapping of scenario -> vgpus"))
    if problems:
        raise ValidationError(problems)
    return out


def _scenario_plan(vg, field_, source, problems, vms) -> ScenarioPlan:
    if not isinstance(vg, dict) or not all(
        isinstance(k, str) and isinstance(n, int) and not isinstance(n, bool) and n > 0
        for k, n in vg.items()
    ):
        problems.append(Problem(source, field_, "must map vGPU profiles to positive counts"))
        return ScenarioPlan({})
    return ScenarioPlan(dict(vg), {k: v for k, v in vms.items() if isinstance(v, str)})


def campaign_context(path: str | Path) -> dict:
    """A campaign YAML file -> ``baseline``, ``plan``, ``runs``, ``campaign`` (keyword arguments
    of :func:`aggregate_results`); ``miglab plan --json`` output (``.json``) gives the plan only
    (its VM names and profiles)."""
    p = Path(path)
    if not p.is_file():
        raise ValidationError([Problem(str(p), "", "no such file")])
    if p.suffix == ".json":
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValidationError([Problem(str(p), "", f"not JSON: {exc.msg}")]) from None
        ctx = {"plan": normalize_plan(data, str(p))}
        if isinstance(data, dict) and isinstance(data.get("campaign"), str):
            ctx["campaign"] = data["campaign"]
        return ctx
    from miglab.core.campaign import load_campaign

    c = load_campaign(p)
    plan = {}
    for sid, s in c.scenarios.items():
        vms = {r.name: r.vgpu.name for r in s.vm_requests(c.name)}
        plan[sid] = ScenarioPlan({v.name: n for v, n in s.vgpus}, vms)
    return {"plan": plan, "baseline": c.mlperf.baseline, "runs": c.mlperf.runs, "campaign": c.name}


# --- results -----------------------------------------------------------------------------------
@dataclass
class VmRun:
    vm: str
    run: int
    record: RunRecord | None
    problem: str | None = None  # why the logs could not be read


@dataclass
class RunTotal:
    """One run *n* of a scenario: all its VMs at once."""

    run: int
    values: dict[str, float]  # VM -> value (VMs whose run is usable)
    included: bool
    total: float | None
    reasons: list[str]
    overlap_fraction: float | None
    window_source: str | None
    window: tuple[datetime, datetime] | None  # first start .. last end
    submission_valid: bool
    submission_reasons: list[str]

    def as_json(self) -> dict:
        return {
            "run": self.run,
            "included": self.included,
            "total": self.total,
            "values": self.values,
            "reasons": self.reasons,
            "overlap_fraction": self.overlap_fraction,
            "window_source": self.window_source,
            "window": None if self.window is None else [t.isoformat() for t in self.window],
            "submission_valid": self.submission_valid,
            "submission_reasons": self.submission_reasons,
        }


@dataclass
class Group:
    """One (campaign, scenario, benchmark, MLPerf scenario) over all its runs."""

    campaign: str
    scenario: str
    benchmark: str
    mlperf_scenario: str
    vms: list[str]
    profiles: dict[str, str | None]
    scenario_profiles: str | None
    expected_vms: int | None
    metric: str | None
    unit: str | None
    higher_is_better: bool | None
    combine: str  # "sum" | "max"
    runs: list[RunTotal]
    vm_runs: dict[str, dict[int, VmRun]]
    simulated: bool | None
    weights: list[str]
    backends: list[str]
    loadgen_versions: list[str]
    notes: list[str] = field(default_factory=list)
    baseline: str | None = None
    baseline_mean: float | None = None
    improvement_pct: float | None = None

    @property
    def included(self) -> list[RunTotal]:
        return [r for r in self.runs if r.included]

    @property
    def totals(self) -> list[float]:
        return [r.total for r in self.included if r.total is not None]

    @property
    def count(self) -> int:
        return len(self.totals)

    @property
    def mean(self) -> float | None:
        t = self.totals
        return statistics.fmean(t) if t else None

    @property
    def stdev(self) -> float | None:
        t = self.totals
        return statistics.stdev(t) if len(t) >= 2 else None

    @property
    def min(self) -> float | None:
        return min(self.totals) if self.totals else None

    @property
    def max(self) -> float | None:
        return max(self.totals) if self.totals else None

    @property
    def spread_pct(self) -> float | None:
        m = self.mean
        return None if not m else (self.max - self.min) / m * 100.0

    @property
    def cv_pct(self) -> float | None:
        m, s = self.mean, self.stdev
        return None if not m or s is None else s / m * 100.0

    @property
    def per_vm_mean(self) -> dict[str, float]:
        out = {}
        for vm in self.vms:
            vals = [r.values[vm] for r in self.included if vm in r.values]
            if vals:
                out[vm] = statistics.fmean(vals)
        return out

    @property
    def status(self) -> str:
        if not self.runs:
            return "no runs"
        n = len(self.included)
        return "ok" if n == len(self.runs) else ("partial" if n else "invalid")

    @property
    def submission_valid(self) -> bool:
        return bool(self.included) and all(r.submission_valid for r in self.included)

    @property
    def excluded_reasons(self) -> list[str]:
        return [f"run_{r.run}: {x}" for r in self.runs if not r.included for x in r.reasons]

    def key(self) -> tuple:
        return (
            natural_key(self.campaign),
            natural_key(self.scenario),
            self.benchmark,
            self.mlperf_scenario,
        )

    def as_json(self) -> dict:
        return {
            "campaign": self.campaign,
            "scenario": self.scenario,
            "benchmark": self.benchmark,
            "mlperf_scenario": self.mlperf_scenario,
            "vms": self.vms,
            "profiles": self.profiles,
            "scenario_profiles": self.scenario_profiles,
            "expected_vms": self.expected_vms,
            "metric": self.metric,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "combine": self.combine,
            "status": self.status,
            "count": self.count,
            "runs_total": len(self.runs),
            "mean": self.mean,
            "stdev": self.stdev,
            "min": self.min,
            "max": self.max,
            "spread_pct": self.spread_pct,
            "cv_pct": self.cv_pct,
            "per_vm_mean": self.per_vm_mean,
            "baseline": self.baseline,
            "baseline_mean": self.baseline_mean,
            "improvement_pct": self.improvement_pct,
            "submission_valid": self.submission_valid,
            "simulated": self.simulated,
            "weights": self.weights,
            "backends": self.backends,
            "loadgen_versions": self.loadgen_versions,
            "runs": [r.as_json() for r in self.runs],
            "excluded": self.excluded_reasons,
            "notes": self.notes,
        }


CSV_FIELDS = (
    "campaign",
    "scenario",
    "benchmark",
    "mlperf_scenario",
    "vms",
    "profiles",
    "metric",
    "unit",
    "status",
    "runs_included",
    "runs_total",
    "mean",
    "stdev",
    "min",
    "max",
    "spread_pct",
    "per_vm_mean",
    "run_totals",
    "baseline",
    "improvement_pct",
    "submission_valid",
    "simulated",
    "weights",
    "backends",
    "excluded",
)


@dataclass
class Aggregate:
    root: str
    groups: list[Group]
    baseline: str | None
    min_overlap: float
    problems: list[str]  # paths that are not in the results layout, and similar

    def group(self, scenario, benchmark, mlperf_scenario, campaign=None) -> Group | None:
        for g in self.groups:
            if (g.scenario, g.benchmark, g.mlperf_scenario) == (
                scenario,
                benchmark,
                mlperf_scenario,
            ) and (campaign is None or g.campaign == campaign):
                return g
        return None

    @property
    def simulated(self) -> bool | None:
        flags = {g.simulated for g in self.groups}
        if True in flags:
            return True
        return False if flags == {False} else None

    @property
    def random_weights(self) -> bool:
        return any("random" in g.weights for g in self.groups)

    def as_json(self) -> dict:
        return {
            "root": self.root,
            "baseline": self.baseline,
            "min_overlap": self.min_overlap,
            "simulated": self.simulated,
            "random_weights": self.random_weights,
            "groups": [g.as_json() for g in self.groups],
            "problems": self.problems,
        }

    def csv_rows(self) -> list[dict]:
        rows = []
        for g in self.groups:
            rows.append(
                {
                    "campaign": g.campaign,
                    "scenario": g.scenario,
                    "benchmark": g.benchmark,
                    "mlperf_scenario": g.mlperf_scenario,
                    "vms": len(g.vms),
                    "profiles": g.scenario_profiles or "",
                    "metric": g.metric or "",
                    "unit": g.unit or "",
                    "status": g.status,
                    "runs_included": g.count,
                    "runs_total": len(g.runs),
                    "mean": _fmt(g.mean),
                    "stdev": _fmt(g.stdev),
                    "min": _fmt(g.min),
                    "max": _fmt(g.max),
                    "spread_pct": _fmt(g.spread_pct, 3),
                    "per_vm_mean": ";".join(f"{vm}={_fmt(v)}" for vm, v in g.per_vm_mean.items()),
                    "run_totals": ";".join(
                        f"run_{r.run}={_fmt(r.total) if r.included else 'excluded'}" for r in g.runs
                    ),
                    "baseline": g.baseline or "",
                    "improvement_pct": _fmt(g.improvement_pct, 3),
                    "submission_valid": g.submission_valid,
                    "simulated": "" if g.simulated is None else g.simulated,
                    "weights": ";".join(g.weights),
                    "backends": ";".join(g.backends),
                    "excluded": " | ".join(g.excluded_reasons),
                }
            )
        return rows

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(self.csv_rows())
        return buf.getvalue()


def _fmt(v, decimals: int | None = None) -> str:
    """A number for CSV: exact integers as such, else rounded to 6 decimals (or ``decimals``)."""
    if v is None:
        return ""
    if decimals is not None:
        return f"{v:.{decimals}f}"
    if float(v).is_integer():
        return str(int(v))
    return repr(round(float(v), 6))


# --- the walk ----------------------------------------------------------------------------------
def _layout(root: Path, run_dir: Path):
    """(campaign, scenario, vm, benchmark, mlperf scenario, kind, run) or a reason."""
    rel = run_dir.relative_to(root).parts
    if len(rel) == 6:
        campaign, rest = root.resolve().name, rel
    elif len(rel) == 7:
        campaign, rest = rel[0], rel[1:]
    else:
        return None, (
            "not in the results layout <campaign>/<scenario>/<vm>/<benchmark>/"
            "<MLPerf scenario>/performance/run_<n>"
        )
    scenario, vm, bench, mlscen, kind, run = rest
    m = RUN_DIR_RE.match(run)
    if not m:
        return None, f"run folder {run!r} is not run_<n>"
    return (campaign, scenario, vm, bench, mlscen, kind, int(m.group(1))), None


def aggregate_results(
    root: str | Path,
    *,
    baseline: str | None = None,
    plan=None,
    runs: int | None = None,
    campaign: str | None = None,
    min_overlap: float = 0.0,
    require_timestamps: bool = True,
) -> Aggregate:
    """Walk a results tree and aggregate it (see the module docstring).

    ``plan`` (scenario -> vgpus, or a dict of :class:`ScenarioPlan`) names each scenario's
    profiles and expected VM count; ``runs`` the expected number of runs; ``campaign`` limits
    the walk to one campaign of a multi-campaign tree. ``require_timestamps=False`` sums
    multi-VM runs whose concurrency cannot be checked (no common timestamps), saying so.
    """
    root = Path(root)
    if not root.exists():
        raise ValidationError([Problem(str(root), "", "no such directory")])
    if not root.is_dir():
        raise ValidationError([Problem(str(root), "", "not a directory")])
    if not 0.0 <= min_overlap <= 1.0:
        raise ValidationError([Problem("<command line>", "min_overlap", "must be in [0, 1]")])
    if isinstance(plan, dict) and plan and all(isinstance(v, ScenarioPlan) for v in plan.values()):
        plans: dict[str, ScenarioPlan] = plan
    else:
        plans = normalize_plan(plan)
    run_dirs = find_run_logs(root)
    if not run_dirs:
        raise ValidationError(
            [Problem(str(root), "", "no mlperf_log_detail.txt or mlperf_log_summary.txt found")]
        )
    problems: list[str] = []
    # (campaign, scenario) -> VMs ; (campaign, scenario, bench, mlscen) -> vm -> run -> VmRun
    scenario_vms: dict[tuple, set[str]] = {}
    cells: dict[tuple, dict[str, dict[int, VmRun]]] = {}
    for d in run_dirs:
        where, why = _layout(root, d)
        if where is None:
            problems.append(f"{d}: {why}")
            continue
        camp, scen, vm, bench, mlscen, kind, n = where
        if campaign and camp != campaign:
            continue
        scenario_vms.setdefault((camp, scen), set()).add(vm)
        if kind != "performance":
            continue  # accuracy runs are not throughput measurements
        try:
            rec = parse_run(d, benchmark=bench)
            vr = VmRun(vm, n, rec)
        except ValidationError as exc:
            vr = VmRun(vm, n, None, "; ".join(str(p) for p in exc.problems))
        cells.setdefault((camp, scen, bench, mlscen), {}).setdefault(vm, {})[n] = vr
    if not cells:
        raise ValidationError(
            [Problem(str(root), "", "no performance run in the results layout")]
            + [Problem(str(root), "", p) for p in problems[:20]]
        )

    groups: list[Group] = []
    for (camp, scen, bench, mlscen), by_vm in cells.items():
        sp = plans.get(scen)
        groups.append(
            _group(
                camp,
                scen,
                bench,
                mlscen,
                by_vm,
                scenario_vms[(camp, scen)],
                sp,
                runs,
                min_overlap,
                require_timestamps,
            )
        )
    groups.sort(key=Group.key)
    for g in groups:
        _improvement(g, groups, baseline)
    return Aggregate(str(root), groups, baseline, min_overlap, problems)


def _group(camp, scen, bench, mlscen, by_vm, all_vms, sp, runs, min_overlap, require_ts) -> Group:
    notes: list[str] = []
    vms = sorted(all_vms, key=natural_key)
    expected = sp.vm_count if sp else None
    missing_vm_note = None
    if sp and sp.vms:
        unmatched = [n for n in sp.vms if not any(n == vm or n.endswith("-" + vm) for vm in vms)]
        if unmatched:
            missing_vm_note = f"no results from planned VM(s) {', '.join(unmatched)}"
    elif expected is not None and len(vms) < expected:
        missing_vm_note = f"{len(vms)} VM folder(s) found, the plan has {expected} VMs"
    if expected is not None and len(vms) > expected:
        notes.append(f"{len(vms)} VM folders found, the plan has {expected} VMs")
    run_numbers = {n for per in by_vm.values() for n in per}
    if runs:
        run_numbers |= set(range(1, runs + 1))
    records = [vr.record for per in by_vm.values() for vr in per.values() if vr.record]
    metrics = sorted({r.metric for r in records if r.metric})
    first = next((r for r in records if r.metric), None)
    higher = first.higher_is_better if first else None
    combine = "sum" if (first is None or first.throughput) else "max"
    if len(metrics) > 1:
        notes.append(f"VMs report different metrics: {', '.join(metrics)}")

    totals: list[RunTotal] = []
    for n in sorted(run_numbers):
        totals.append(
            _run_total(n, vms, by_vm, first, combine, min_overlap, require_ts, missing_vm_note)
        )
    profiles = {vm: _profile(vm, sp, by_vm.get(vm, {})) for vm in vms}
    metas = [r.meta for r in records]
    sim = {m.simulated for m in metas}
    simulated = True if True in sim else (False if sim == {False} else None)
    if any(m.simulated is None for m in metas) and simulated is not None:
        notes.append("some runs have no miglab_run.json: simulated/real unknown for them")
    return Group(
        campaign=camp,
        scenario=scen,
        benchmark=bench,
        mlperf_scenario=mlscen,
        vms=vms,
        profiles=profiles,
        scenario_profiles=sp.describe() if sp else _describe_profiles(profiles),
        expected_vms=expected,
        metric=first.metric if first else None,
        unit=first.unit if first else None,
        higher_is_better=higher,
        combine=combine,
        runs=totals,
        vm_runs=by_vm,
        simulated=simulated,
        weights=sorted({m.weights for m in metas if m.weights}),
        backends=sorted({m.backend for m in metas if m.backend}),
        loadgen_versions=sorted({r.loadgen_version for r in records if r.loadgen_version}),
        notes=notes,
    )


def _profile(vm: str, sp: ScenarioPlan | None, runs: dict[int, VmRun]) -> str | None:
    if sp:
        p = sp.profile_of(vm)
        if p:
            return p
    for vr in runs.values():
        if vr.record and vr.record.meta.profile:
            return vr.record.meta.profile
    return None


def _describe_profiles(profiles: dict[str, str | None]) -> str | None:
    if not profiles or any(p is None for p in profiles.values()):
        return None
    counts: dict[str, int] = {}
    for p in profiles.values():
        counts[p] = counts.get(p, 0) + 1
    return " + ".join(f"{n}x {p}" for p, n in counts.items())


def _run_total(n, vms, by_vm, first, combine, min_overlap, require_ts, missing_vm_note):
    reasons: list[str] = []
    values: dict[str, float] = {}
    usable: list[RunRecord] = []
    sub_reasons: list[str] = []
    if missing_vm_note:
        reasons.append(missing_vm_note)
    for vm in vms:
        vr = by_vm.get(vm, {}).get(n)
        if vr is None:
            where = f"run_{n} missing" if by_vm.get(vm) else "no logs for this benchmark/scenario"
            reasons.append(f"{vm}: {where}")
            continue
        if vr.record is None:
            reasons.append(f"{vm}: unreadable log: {vr.problem}")
            continue
        r = vr.record
        if r.mode != "PerformanceOnly":
            reasons.append(f"{vm}: test mode {r.mode}, not PerformanceOnly")
            continue
        if not r.valid:
            reasons.append(f"{vm}: " + "; ".join(r.invalid_reasons or ["not valid"]))
            continue
        if first is not None and r.metric != first.metric:
            reasons.append(f"{vm}: metric {r.metric} differs from {first.metric}")
            continue
        values[vm] = float(r.value)
        usable.append(r)
        sub_reasons.extend(f"{vm}: {x}" for x in r.submission_reasons)
    overlap, source, window = None, None, None
    if usable and len(usable) == len(vms):
        overlap, source, window, why = _overlap(usable)
        if len(usable) > 1:
            if source is None:
                if require_ts:
                    reasons.append(why)
                else:
                    reasons_note = f"concurrency not checked: {why}"
                    sub_reasons.append(reasons_note)
            elif overlap <= 0.0:
                reasons.append(why)
            elif overlap < min_overlap:
                reasons.append(
                    f"run windows overlap {overlap:.1%} ({source} timestamps), "
                    f"below the required {min_overlap:.0%}"
                )
    elif not vms:
        reasons.append("no VMs")
    included = not reasons and len(values) == len(vms) and bool(vms)
    total = None
    if included:
        total = sum(values.values()) if combine == "sum" else max(values.values())
    return RunTotal(
        run=n,
        values=values,
        included=included,
        total=total,
        reasons=reasons,
        overlap_fraction=overlap,
        window_source=source,
        window=window,
        submission_valid=included and not sub_reasons,
        submission_reasons=sub_reasons,
    )


@dataclass(frozen=True)
class RoundCheck:
    """Whether one round (run *n* of a benchmark and MLPerf scenario) of a campaign scenario
    would be summed in the report, from its VMs' run folders.

    ``state``: ``complete`` (summed), ``missing`` (a VM has no LoadGen log for it),
    ``not concurrent`` (every VM's run is usable, but they did not run at once: redoing the
    round in all its VMs can fix it) or ``invalid`` (anything else: LoadGen's verdict, an
    unreadable log, another test mode or metric). ``reasons``: the report's words for it.
    """

    state: str
    reasons: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return self.state == "complete"


def check_round(
    vm_run_dirs: dict[str, str | Path], *, min_overlap: float = 0.0, require_timestamps: bool = True
) -> RoundCheck:
    """The report's rule for one round (:func:`aggregate_results`' per-run checks), applied to
    ``vm_run_dirs`` (VM -> its ``.../performance/run_<n>`` folder), so that resuming a campaign
    redoes exactly the rounds the report would not sum."""
    if not vm_run_dirs:
        return RoundCheck("missing", ("no VMs",))
    by_vm: dict[str, dict[int, VmRun]] = {}
    absent = []
    for vm, run_dir in vm_run_dirs.items():
        d = Path(run_dir)
        if not has_run_log(d):
            absent.append(f"{vm}: no LoadGen log")
            continue
        try:
            by_vm[vm] = {1: VmRun(vm, 1, parse_run(d))}
        except ValidationError as exc:
            by_vm[vm] = {1: VmRun(vm, 1, None, "; ".join(str(p) for p in exc.problems))}
    if absent:
        return RoundCheck("missing", tuple(absent))
    records = [per[1].record for per in by_vm.values() if per[1].record]
    first = next((r for r in records if r.metric), None)
    combine = "sum" if (first is None or first.throughput) else "max"
    total = _run_total(
        1, sorted(by_vm, key=natural_key), by_vm, first, combine, min_overlap,
        require_timestamps, None,
    )  # fmt: skip
    if total.included:
        return RoundCheck("complete")
    state = "not concurrent" if len(total.values) == len(by_vm) else "invalid"
    return RoundCheck(state, tuple(total.reasons))


def _overlap(recs: list[RunRecord]):
    """(fraction, source, union window, reason) for records of one run across VMs."""
    for source in WINDOW_SOURCES:
        wins = [r.window(source) for r in recs]
        if all(w is not None for w in wins):
            break
    else:
        return None, None, None, "cannot check that the VMs ran at once: no common timestamps"
    start = max(w[0] for w in wins)
    end = min(w[1] for w in wins)
    first, last = min(w[0] for w in wins), max(w[1] for w in wins)
    union = (last - first).total_seconds()
    inter = (end - start).total_seconds()
    if len(wins) == 1:
        return 1.0, source, (first, last), ""
    frac = max(0.0, inter) / union if union > 0 else (1.0 if inter >= 0 else 0.0)
    why = ""
    if inter <= 0:
        late = max(recs, key=lambda r: r.window(source)[0])
        early = min(recs, key=lambda r: r.window(source)[1])
        why = (
            f"run windows do not overlap ({source} timestamps): {_vm_of(early)} ended "
            f"{early.window(source)[1].isoformat()} before {_vm_of(late)} started "
            f"{late.window(source)[0].isoformat()}"
        )
    return frac, source, (first, last), why


def _vm_of(r: RunRecord) -> str:
    # .../<vm>/<benchmark>/<scenario>/performance/run_<n>
    parts = Path(r.run_dir).parts
    return parts[-5] if len(parts) >= 5 else r.run_dir


def _improvement(g: Group, groups: list[Group], baseline: str | None) -> None:
    if not baseline:
        return
    g.baseline = baseline
    base = next(
        (
            b
            for b in groups
            if (b.campaign, b.scenario, b.benchmark, b.mlperf_scenario)
            == (g.campaign, baseline, g.benchmark, g.mlperf_scenario)
        ),
        None,
    )
    if base is None:
        g.notes.append(f"baseline {baseline} has no {g.benchmark} {g.mlperf_scenario} results")
        return
    bm, m = base.mean, g.mean
    g.baseline_mean = bm
    if bm is None:
        g.notes.append(f"baseline {baseline} has no valid run")
        return
    if m is None or bm == 0:
        return
    if base.metric != g.metric:
        g.notes.append(f"baseline metric {base.metric} differs from {g.metric}")
        return
    g.improvement_pct = (
        (m - bm) / bm * 100.0 if g.higher_is_better is not False else ((bm - m) / bm * 100.0)
    )
