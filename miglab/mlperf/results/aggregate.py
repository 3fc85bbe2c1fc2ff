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
  clock, and nothing sets the guests' clocks: each run's ``miglab_run.json`` records the guest's
  clock offset to the controller's, measured just before the run (``clock``; the mlperf role's
  ``mlperf_clock_method``), and each VM's window is moved into the controller's time by it before
  the windows are compared (:func:`miglab.core.clock.to_controller_time`). A run whose VMs'
  offsets disagree by more than ``clock_bound`` seconds (default 0.050), or are known less
  precisely than that, is flagged (``clock.state``, a note of its group), not excluded; a run
  with a VM without a measurement says ``clock not checked`` and compares that VM's window as
  logged (time zones must then agree too);
* then throughputs are summed over the VMs (latency metrics: the worst VM is the scenario's
  figure). A run that fails any check is excluded and each reason is reported with its VM.
  A figure over several VMs is never called submission-valid: it is the sum (or worst) of
  independent LoadGen instances (:func:`~miglab.core.mlperf_rules.combined_problems`); nor is
  one whose runs were simulated, or ran random weights, synthetic inputs or on the CPU
  (``miglab_run.json``; :func:`~miglab.core.mlperf_rules.measurement_problems`).

What each figure measured is said with it: :func:`device_label` (the device each run's
``miglab_run.json`` records) and :func:`measured_label` (device, weights, inputs).

Over the included runs: count, mean, sample standard deviation, min, max, spread
((max - min) / mean) and the improvement of the mean over the baseline scenario's mean for the
same benchmark and MLPerf scenario, in percent (for latency metrics a lower latency is a
positive improvement).

Nothing found is dropped without a word, and nothing unsure is counted:

* a run whose log cannot be read (not a regular file, too big, not a LoadGen log, a bad
  ``miglab_run.json``) or is INVALID (LoadGen's verdict, a number that is not finite or out of
  range, a summary contradicting the detail log) is listed with its reason; the rest is
  aggregated;
* the walk never follows a symbolic link: a symlinked VM, benchmark or run folder is refused
  and listed, and its VM still counts as a VM of the scenario, so the scenario's runs are
  incomplete (never a complete scenario of fewer VMs);
* run folders are ``run_<n>`` exactly (n = 1, 2, ... without leading zeros): ``run_01`` or
  ``run_1 `` is listed and not counted, never merged with ``run_1``;
* ``runs`` is at most :data:`MAX_RUNS` (a campaign's ``mlperf.runs`` allows as many).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from miglab.core.clock import (
    DEFAULT_BOUND_S,
    ClockCheck,
    ClockReading,
    check_clocks,
    to_controller_time,
)
from miglab.core.mlperf_rules import combined_problems
from miglab.core.runs import (
    MIN_OVERLAP,  # noqa: F401 - re-exported
    RunRecord,
    json_dumps,
    parse_run_safely,
)
from miglab.errors import Problem, ValidationError
from miglab.formats.files import MiB, UnreadableFile, read_input_text
from miglab.formats.loadgen import has_run_log, scan_tree
from miglab.formats.manifest import is_run_name
from miglab.formats.run_meta import RunMeta

__all__ = [
    "Aggregate",
    "Group",
    "RunTotal",
    "RoundCheck",
    "ScenarioPlan",
    "aggregate_results",
    "check_round",
    "campaign_context",
    "device_label",
    "measured_label",
    "normalize_plan",
    "one_line",
    "read_json_input",
]

WINDOW_SOURCES = ("power", "runner", "log")
MAX_RUNS = 100  # expected runs per scenario: as many as a campaign's mlperf.runs allows
JSON_LIMIT = 16 * MiB  # a plan (`miglab plan --json`) of hundreds of VMs is a few hundred KB


def _finite(v: float | None) -> float | None:
    return v if v is None or math.isfinite(v) else None


def natural_key(s: str):
    # odd places hold the runs of ASCII digits, even places the text between (a "digit" such as
    # "²" is text: int() cannot read it)
    parts = re.split(r"([0-9]+)", str(s))
    return [int(t) if i % 2 else t.lower() for i, t in enumerate(parts)]


def one_line(text: str) -> str:
    """``text`` with line breaks, other control characters and undecodable bytes of a file name
    escaped: one problem, note or reason is one line of output."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


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


def read_json_input(path: str | Path):
    """A JSON file miglab is given (a plan, ``miglab plan --json`` output): a regular file of at
    most :data:`JSON_LIMIT` bytes, JSON proper (no NaN), not nested absurdly deep;
    ValidationError otherwise."""
    p = Path(path)
    try:
        text = read_input_text(p, limit=JSON_LIMIT)
    except UnreadableFile as exc:
        raise ValidationError([Problem(str(p), "", exc.reason)]) from None

    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise ValidationError([Problem(str(p), "", f"not JSON: {exc.msg}")]) from None
    except RecursionError:
        raise ValidationError(
            [Problem(str(p), "", "not JSON miglab reads: nested too deeply")]
        ) from None
    except ValueError as exc:
        raise ValidationError([Problem(str(p), "", f"not JSON: {str(exc)[:100]}")]) from None


def campaign_context(path: str | Path) -> dict:
    """A campaign YAML file -> ``baseline``, ``plan``, ``runs``, ``campaign`` (keyword arguments
    of :func:`aggregate_results`); ``miglab plan --json`` output (``.json``) gives the plan only
    (its VM names and profiles)."""
    p = Path(path)
    if not os.path.lexists(p):
        raise ValidationError([Problem(str(p), "", "no such file")])
    if p.suffix == ".json":
        data = read_json_input(p)
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


# --- what was measured -----------------------------------------------------------------------
NOT_RECORDED = "device not recorded"


def device_label(meta: RunMeta, detail: bool = False) -> str:
    """What a run measured, in words, from its ``miglab_run.json``: ``vGPU NVIDIA A100D-2-20C``,
    ``GPU NVIDIA H200`` (passthrough or bare metal), ``CPU (SIMULATED lab; <model>)``, ``device
    not recorded``. ``detail`` adds the driver, CUDA version, UUID, CPU count and note."""
    d = meta.device or {}
    kind, name = d.get("kind"), d.get("name")
    sim = "SIMULATED lab" if meta.simulated else None
    if not d:
        return f"{sim}, {NOT_RECORDED}" if sim else NOT_RECORDED
    if kind == "cpu":
        extra = [f"{d['cpus']} logical CPUs"] if detail and d.get("cpus") else []
        label = "CPU (" + "; ".join(x for x in (sim, name, *extra) if x) + ")"
    elif kind == "cuda":
        label = f"vGPU {d['vgpu_type']}" if d.get("vgpu_type") else f"GPU {name}"
        if detail:
            extra = [
                f"{what} {d[k]}"
                for k, what in (("driver", "driver"), ("cuda", "CUDA"), ("uuid", "UUID"))
                if d.get(k)
            ]
            if extra:
                label += f" ({', '.join(extra)})"
        if sim:
            label = f"{sim}: {label}"
    else:  # an older miglab's words, kind unknown
        label = f"{sim}: {name}" if sim else str(name)
    if detail and d.get("note"):
        label += f" [{d['note']}]"
    return label


def measured_label(meta: RunMeta) -> str:
    """Device, weights and inputs of a run: ``CPU (SIMULATED lab; ...), random weights,
    synthetic inputs``; what ``miglab_run.json`` does not say is said as not recorded."""
    weights = f"{meta.weights} weights" if meta.weights else "weights not recorded"
    inputs = f"{meta.inputs} inputs" if meta.inputs else "inputs not recorded"
    return f"{device_label(meta)}, {weights}, {inputs}"


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
    clock: ClockCheck | None = None  # the VMs' clocks; None when no VM's run was usable
    window_corrected: bool = False  # the windows were moved into the controller's time

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
            "window_corrected": self.window_corrected,
            "clock": None if self.clock is None else self.clock.as_json(),
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
    inputs: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # device_label of its runs, distinct
    measured: list[str] = field(default_factory=list)  # measured_label of its runs, distinct
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
        return _finite(statistics.fmean(t)) if t else None

    @property
    def stdev(self) -> float | None:
        t = self.totals
        return _finite(statistics.stdev(t)) if len(t) >= 2 else None

    @property
    def min(self) -> float | None:
        return min(self.totals) if self.totals else None

    @property
    def max(self) -> float | None:
        return max(self.totals) if self.totals else None

    @property
    def spread_pct(self) -> float | None:
        m = self.mean
        return None if not m else _finite((self.max - self.min) / m * 100.0)

    @property
    def cv_pct(self) -> float | None:
        m, s = self.mean, self.stdev
        return None if not m or s is None else _finite(s / m * 100.0)

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
    def submission_reasons(self) -> list[str]:
        """Why the group's figure is not submission-valid, each reason once (without the VM it
        was found in): empty when it is."""
        if not self.included:
            return ["no counted run"]
        out: list[str] = []
        for r in self.included:
            for x in r.submission_reasons:
                vm, sep, rest = x.partition(": ")
                why = rest if sep and vm in self.vms else x
                if why not in out:
                    out.append(why)
        return out

    @property
    def clock_flagged(self) -> list[RunTotal]:
        """The runs whose VMs' clocks disagree (or are uncertain) beyond the bound."""
        return [r for r in self.runs if r.clock is not None and r.clock.flagged]

    @property
    def clock_state(self) -> str:
        """``flagged`` when a run is, else ``not checked`` when a run is, else ``ok``; ``-``
        when no run had usable VMs."""
        states = {r.clock.state for r in self.runs if r.clock is not None}
        for state in ("flagged", "not checked", "ok"):
            if state in states:
                return state
        return "-"

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
            "submission_reasons": self.submission_reasons,
            "simulated": self.simulated,
            "weights": self.weights,
            "inputs": self.inputs,
            "devices": self.devices,
            "measured": self.measured,
            "backends": self.backends,
            "loadgen_versions": self.loadgen_versions,
            "clock": self.clock_state,
            "clock_flagged_runs": [r.run for r in self.clock_flagged],
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
    "submission_reasons",
    "simulated",
    "weights",
    "inputs",
    "devices",
    "backends",
    "clock",
    "excluded",
)


@dataclass
class Aggregate:
    root: str
    groups: list[Group]
    baseline: str | None
    min_overlap: float
    problems: list[str]  # paths that are not in the results layout, and similar
    clock_bound: float = DEFAULT_BOUND_S
    # the target-QPS searches per profile and the compliance tests (never performance runs)
    searches: list = field(default_factory=list)
    compliance: list = field(default_factory=list)
    # the AccuracyOnly runs, judged against their targets (miglab.mlperf.results.accuracy)
    accuracy: list = field(default_factory=list)

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

    @property
    def synthetic_inputs(self) -> bool:
        return any("synthetic" in g.inputs for g in self.groups)

    @property
    def cpu_runs(self) -> bool:
        """Whether a run measured the CPU (``miglab_run.json`` device kind cpu)."""
        return any(
            (vr.record.meta.device or {}).get("kind") == "cpu"
            for g in self.groups
            for per in g.vm_runs.values()
            for vr in per.values()
            if vr.record is not None
        )

    def measured(self) -> dict[str, list[Group]]:
        """Each distinct :func:`measured_label` (device, weights, inputs) -> the groups with a
        run that measured it, in the groups' order."""
        out: dict[str, list[Group]] = {}
        for g in self.groups:
            for label in g.measured:
                out.setdefault(label, []).append(g)
        return out

    def as_json(self) -> dict:
        return {
            "root": self.root,
            "baseline": self.baseline,
            "min_overlap": self.min_overlap,
            "clock_bound_s": self.clock_bound,
            "simulated": self.simulated,
            "random_weights": self.random_weights,
            "synthetic_inputs": self.synthetic_inputs,
            "cpu_runs": self.cpu_runs,
            "measured": [
                {
                    "label": label,
                    "groups": [
                        f"{g.campaign} {g.scenario} {g.benchmark} {g.mlperf_scenario}"
                        for g in groups
                    ],
                }
                for label, groups in self.measured().items()
            ],
            "groups": [g.as_json() for g in self.groups],
            "qps_searches": [r.as_json() for r in self.searches],
            "compliance": [r.as_json() for r in self.compliance],
            "accuracy": [r.as_json() for r in self.accuracy],
            "problems": self.problems,
        }

    def to_json(self) -> str:
        """:meth:`as_json` as JSON text (never a bare NaN)."""
        return json_dumps(self.as_json())

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
                    "submission_reasons": " | ".join(g.submission_reasons),
                    "simulated": "" if g.simulated is None else g.simulated,
                    "weights": ";".join(g.weights),
                    "inputs": ";".join(g.inputs),
                    "devices": ";".join(g.devices),
                    "backends": ";".join(g.backends),
                    "clock": _clock_cell(g),
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


def _clock_cell(g: Group) -> str:
    """The CSV's clock column: ``ok``, ``not checked`` or ``flagged run_2 (312.0 ms)``..."""
    flagged = g.clock_flagged
    if not flagged:
        return g.clock_state
    return "flagged " + ";".join(
        f"run_{r.run}" + (f" ({r.clock.spread_s * 1000:.1f} ms)" if r.clock.spread_s else "")
        for r in flagged
    )


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
_LAYOUT = (
    "not in the results layout <campaign>/<scenario>/<vm>/<benchmark>/"
    "<MLPerf scenario>/performance/run_<n>"
)
_BAD_RUN_NAME = "is not named run_<n> (n = 1, 2, ... without leading zeros): not counted"


def _campaign_level(root: Path, run_dirs: list[Path]) -> bool:
    """Whether ``root`` is one campaign's folder (run folders 6 levels down) rather than a
    results folder of campaigns (7 levels): as most of its run folders say."""
    depths = [len(d.relative_to(root).parts) for d in run_dirs]
    return depths.count(6) >= depths.count(7)


def _place(root: Path, rel: tuple[str, ...], campaign_level: bool):
    """``rel`` (parts below ``root``) -> (campaign, scenario, vm, benchmark, MLPerf scenario,
    kind, run folder) with None for the levels it does not reach; None above a VM folder."""
    if campaign_level:
        camp, rest = root.resolve().name, rel
    elif rel:
        camp, rest = rel[0], rel[1:]
    else:
        return None
    if len(rest) < 2:
        return None
    rest = tuple(rest[:6]) + (None,) * (6 - min(len(rest), 6))
    return (camp, *rest)


def _layout(root: Path, run_dir: Path):
    """(campaign, scenario, vm, benchmark, mlperf scenario, kind, run) or a reason."""
    rel = run_dir.relative_to(root).parts
    if len(rel) == 6:
        campaign, rest = root.resolve().name, rel
    elif len(rel) == 7:
        campaign, rest = rel[0], rel[1:]
    else:
        return None, _LAYOUT
    scenario, vm, bench, mlscen, kind, run = rest
    if not is_run_name(run):
        return None, f"run folder {run!r} {_BAD_RUN_NAME}"
    return (campaign, scenario, vm, bench, mlscen, kind, int(run.removeprefix("run_"))), None


def aggregate_results(
    root: str | Path,
    *,
    baseline: str | None = None,
    plan=None,
    runs: int | None = None,
    campaign: str | None = None,
    min_overlap: float = MIN_OVERLAP,
    require_timestamps: bool = True,
    clock_bound: float = DEFAULT_BOUND_S,
) -> Aggregate:
    """Walk a results tree and aggregate it (see the module docstring).

    ``plan`` (scenario -> vgpus, or a dict of :class:`ScenarioPlan`) names each scenario's
    profiles and expected VM count; ``runs`` the expected number of runs; ``campaign`` limits
    the walk to one campaign of a multi-campaign tree. ``require_timestamps=False`` sums
    multi-VM runs whose concurrency cannot be checked (no common timestamps), saying so.
    ``clock_bound``: seconds the VMs' clock offsets may disagree before a run is flagged.
    """
    root = Path(root)
    if not root.exists():
        raise ValidationError([Problem(str(root), "", "no such directory")])
    if not root.is_dir():
        raise ValidationError([Problem(str(root), "", "not a directory")])
    if not (isinstance(min_overlap, (int, float)) and 0.0 <= min_overlap <= 1.0):
        raise ValidationError([Problem("<command line>", "min_overlap", "must be in [0, 1]")])
    if (
        isinstance(clock_bound, bool)
        or not isinstance(clock_bound, (int, float))
        or not 0.0 < clock_bound <= 3600.0
    ):
        raise ValidationError(
            [Problem("<command line>", "clock_bound", "must be above 0 and at most 3600 seconds")]
        )
    if runs is not None and (
        isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= MAX_RUNS
    ):
        raise ValidationError(
            [Problem("<command line>", "runs", f"must be from 1 to {MAX_RUNS}, got {runs!r}")]
        )
    if isinstance(plan, dict) and plan and all(isinstance(v, ScenarioPlan) for v in plan.values()):
        plans: dict[str, ScenarioPlan] = plan
    else:
        plans = normalize_plan(plan)
    scan = scan_tree(root)
    run_dirs = scan.run_dirs
    if not run_dirs and not scan.refused:
        raise ValidationError(
            [Problem(str(root), "", "no mlperf_log_detail.txt or mlperf_log_summary.txt found")]
        )
    level = _campaign_level(root, run_dirs)
    problems: list[str] = []
    # (campaign, scenario) -> VMs ; (campaign, scenario, bench, mlscen) -> vm -> run -> VmRun
    scenario_vms: dict[tuple, set[str]] = {}
    cells: dict[tuple, dict[str, dict[int, VmRun]]] = {}
    # why a VM has no run of a group: (campaign, scenario, vm[, bench[, mlscen]]) -> reason
    refused: dict[tuple, str] = {}
    odd: dict[tuple, list[str]] = {}  # (campaign, scenario, bench, mlscen, vm) -> odd run folders
    accuracy_runs: list[tuple[Path, tuple]] = []  # AccuracyOnly runs: judged, never counted
    for d in run_dirs:
        where, why = _layout(root, d)
        if where is None:
            problems.append(f"{d}: {why}")
            rel = d.relative_to(root).parts
            at = _place(root, rel, len(rel) == 6)
            if at and why != _LAYOUT and (not campaign or at[0] == campaign):
                camp, scen, vm, bench, mlscen, kind, run = at
                scenario_vms.setdefault((camp, scen), set()).add(vm)
                if kind == "performance":
                    odd.setdefault((camp, scen, bench, mlscen, vm), []).append(repr(run))
            continue
        camp, scen, vm, bench, mlscen, kind, n = where
        if campaign and camp != campaign:
            continue
        scenario_vms.setdefault((camp, scen), set()).add(vm)
        if kind != "performance":
            if kind == "accuracy":
                accuracy_runs.append((d, where))
            continue  # accuracy runs are not throughput measurements
        rec, problem = parse_run_safely(d, benchmark=bench, root=root)
        cells.setdefault((camp, scen, bench, mlscen), {}).setdefault(vm, {})[n] = VmRun(
            vm, n, rec, problem
        )
    for path, why in scan.refused:
        problems.append(f"{path}: {why}")
        at = _place(root, path.relative_to(root).parts, level)
        if not at or (campaign and at[0] != campaign):
            continue
        camp, scen, vm, bench, mlscen, kind, run = at
        scenario_vms.setdefault((camp, scen), set()).add(vm)
        what = "run folder" if run else ("VM folder" if bench is None else "folder")
        if run and kind == "performance" and is_run_name(run):
            n = int(run.removeprefix("run_"))
            cells.setdefault((camp, scen, bench, mlscen), {}).setdefault(vm, {})[n] = VmRun(
                vm, n, None, f"{path}: run folder is {why}"
            )
        elif kind != "accuracy":  # accuracy runs are not counted anyway
            key = tuple(x for x in (camp, scen, vm, bench, mlscen) if x is not None)
            refused.setdefault(key, f"{what} {path.name!r} is {why}")
    if not cells:
        raise ValidationError(
            [Problem(str(root), "", "no performance run in the results layout")]
            + [Problem(str(root), "", p) for p in problems[:20]]
        )

    groups: list[Group] = []
    for (camp, scen, bench, mlscen), by_vm in cells.items():
        sp = plans.get(scen)
        missing: dict[str, str] = {}
        for vm in scenario_vms[(camp, scen)]:
            why = next(
                (
                    refused[k]
                    for k in ((camp, scen, vm, bench, mlscen), (camp, scen, vm, bench))
                    + ((camp, scen, vm),)
                    if k in refused
                ),
                None,
            )
            if why is None and (camp, scen, bench, mlscen, vm) in odd:
                names = ", ".join(odd[(camp, scen, bench, mlscen, vm)])
                why = f"run folder(s) {names} {_BAD_RUN_NAME}"
            if why is not None:
                missing[vm] = why
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
                missing,
                clock_bound,
            )
        )
    groups.sort(key=Group.key)
    for g in groups:
        _improvement(g, groups, baseline)
    from miglab.mlperf.results.rounds import read_compliance, read_searches

    searches = [r for r in read_searches(root, level) if not campaign or r.campaign == campaign]
    tests = [
        r
        for r in read_compliance(root, scan.compliance_dirs, level)
        if not campaign or r.campaign == campaign
    ]
    from miglab.mlperf.results.accuracy import read_accuracy_runs

    return Aggregate(
        str(root), groups, baseline, min_overlap, problems, clock_bound, searches, tests,
        read_accuracy_runs(accuracy_runs),
    )  # fmt: skip


def _group(
    camp,
    scen,
    bench,
    mlscen,
    by_vm,
    all_vms,
    sp,
    runs,
    min_overlap,
    require_ts,
    vm_notes=None,
    clock_bound=DEFAULT_BOUND_S,
) -> Group:
    notes: list[str] = [f"{vm}: {why}" for vm, why in sorted((vm_notes or {}).items())]
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
        total = _run_total(
            n, vms, by_vm, first, combine, min_overlap, require_ts, missing_vm_note, vm_notes,
            clock_bound,
        )  # fmt: skip
        totals.append(total)
    profiles = {vm: _profile(vm, sp, by_vm.get(vm, {})) for vm in vms}
    metas = [r.meta for r in records]
    sim = {m.simulated for m in metas}
    simulated = True if True in sim else (False if sim == {False} else None)
    if any(m.simulated is None for m in metas) and simulated is not None:
        notes.append("some runs have no miglab_run.json: simulated/real unknown for them")
    notes += [
        f"run_{r.run}: the VMs' clocks are flagged: {r.clock.describe().removeprefix('flagged: ')}"
        for r in totals
        if r.clock is not None and r.clock.flagged
    ]
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
        inputs=sorted({m.inputs for m in metas if m.inputs}),
        devices=sorted({device_label(m) for m in metas}),
        measured=sorted({measured_label(m) for m in metas}),
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


def placement_differs(placement: dict | None) -> str | None:
    """Why a run did not measure the planned layout: its vGPU ran on another GPU or MIG slot
    than the plan's (``miglab_run.json``'s ``placement``); None when it did or is not known."""
    if not placement or not isinstance(placement.get("planned"), dict):
        return None
    planned = placement["planned"]
    gpu, slot = placement.get("gpu"), placement.get("mig_slot")
    if planned.get("gpu") and gpu and str(gpu).lower() != str(planned["gpu"]).lower():
        return f"ran on GPU {gpu}, planned on {planned['gpu']}"
    if planned.get("mig_slot") is not None and slot is not None and slot != planned["mig_slot"]:
        return f"ran at MIG slot {slot}, planned at slot {planned['mig_slot']}"
    return None


def _run_total(
    n,
    vms,
    by_vm,
    first,
    combine,
    min_overlap,
    require_ts,
    missing_vm_note,
    vm_notes=None,
    clock_bound=DEFAULT_BOUND_S,
):
    vm_notes = vm_notes or {}
    reasons: list[str] = []
    values: dict[str, float] = {}
    usable: list[RunRecord] = []
    usable_by_vm: dict[str, RunRecord] = {}
    sub_reasons: list[str] = []
    if missing_vm_note:
        reasons.append(missing_vm_note)
    for vm in vms:
        vr = by_vm.get(vm, {}).get(n)
        if vr is None:
            where = f"run_{n} missing" if by_vm.get(vm) else "no logs for this benchmark/scenario"
            if vm in vm_notes:
                where = vm_notes[vm] if not by_vm.get(vm) else f"{where} ({vm_notes[vm]})"
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
        moved = placement_differs(r.meta.placement)
        if moved:
            reasons.append(f"{vm}: {moved}")
            continue
        values[vm] = float(r.value)
        usable.append(r)
        usable_by_vm[vm] = r
        sub_reasons.extend(f"{vm}: {x}" for x in r.submission_reasons)
    overlap, source, window = None, None, None
    clock = None
    offsets: dict[str, float] = {}  # run folder -> the VM's clock offset
    if usable:
        clock = check_clocks({vm: _clock_reading(r) for vm, r in usable_by_vm.items()}, clock_bound)
        offsets = {usable_by_vm[vm].run_dir: off for vm, off in clock.offsets.items()}
    if usable and len(usable) == len(vms):
        overlap, source, window, why = _overlap(usable, offsets)
        if len(usable) > 1:
            if source is None:
                if require_ts:
                    reasons.append(why)
                else:
                    reasons_note = f"concurrency not checked: {why}"
                    sub_reasons.append(reasons_note)
            elif overlap <= 0.0:
                reasons.append(f"not concurrent: {why}")
            elif overlap < min_overlap:
                corrected = ", in the controller's time" if any(offsets.values()) else ""
                reasons.append(
                    f"not concurrent: run windows overlap {overlap:.1%} ({source} "
                    f"timestamps{corrected}), below the required {min_overlap:.0%}"
                )
    elif not vms:
        reasons.append("no VMs")
    included = not reasons and len(values) == len(vms) and bool(vms)
    total = None
    if included:
        total = sum(values.values()) if combine == "sum" else max(values.values())
        sub_reasons.extend(combined_problems(len(values), combine))
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
        clock=clock,
        window_corrected=source is not None and any(offsets.values()),
    )


def _clock_reading(r: RunRecord) -> ClockReading | None:
    """The run's ``clock`` (checked by :mod:`miglab.formats.run_meta` when it was read)."""
    data = r.meta.clock
    return ClockReading.from_json(data) if isinstance(data, dict) else None


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
    vm_run_dirs: dict[str, str | Path],
    *,
    min_overlap: float = MIN_OVERLAP,
    require_timestamps: bool = True,
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
        rec, problem = parse_run_safely(d)
        by_vm[vm] = {1: VmRun(vm, 1, rec, problem)}
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


def _overlap(recs: list[RunRecord], offsets: dict[str, float] | None = None):
    """(fraction, source, union window, reason) for records of one run across VMs; each VM's
    window moved into the controller's time by its clock offset (``offsets``: run folder ->
    seconds)."""
    offsets = offsets or {}

    def window(r: RunRecord, source: str):
        w = r.window(source)
        return None if w is None else to_controller_time(w, offsets.get(r.run_dir))

    for source in WINDOW_SOURCES:
        wins = [window(r, source) for r in recs]
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
        late = max(recs, key=lambda r: window(r, source)[0])
        early = min(recs, key=lambda r: window(r, source)[1])
        corrected = ", in the controller's time" if any(offsets.values()) else ""
        why = (
            f"run windows do not overlap ({source} timestamps{corrected}): {_vm_of(early)} ended "
            f"{window(early, source)[1].isoformat()} before {_vm_of(late)} started "
            f"{window(late, source)[0].isoformat()}"
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
    g.improvement_pct = _finite(
        (m - bm) / bm * 100.0 if g.higher_is_better is not False else ((bm - m) / bm * 100.0)
    )
