"""``miglab results export``: a results tree as an MLCommons Inference submission tree, one system
per VM, checked with the project's rules.

Sources (read, not copied; mlcommons/inference at commit b66003e10e2db4b8c36a448b0545ec90fcc6e9e9):

* ``tools/submission/submission_checker/constants.py``: the per-round paths
  (``PERFORMANCE_LOG_PATH``, ``MEASUREMENTS_PATH``, ``COMPLIANCE_PATH``, ``TEST01_PERF_PATH``,
  ``SRC_PATH``, ...: v5.0 and v5.1 keep ``measurements/<system>/<benchmark>/<scenario>/`` and
  ``compliance/<system>/...`` beside ``results/``, v6.0 puts them all in
  ``results/<system>/<benchmark>/<scenario>/`` with a ``measurements.json``, and ``code/`` became
  ``src/``) -- :data:`ROUNDS`; ``SYSTEM_DESC_REQUIRED_FIELDS`` and
  ``SYSTEM_DESC_MEANINGFUL_RESPONSE_REQUIRED_FIELDS`` -- :data:`SYSTEM_FIELDS`,
  :data:`MEANINGFUL_FIELDS`; ``SYSTEM_IMP_REQUIRED_FILES`` (the measurements JSON's fields) --
  :data:`MEASUREMENT_FIELDS`; ``REQUIRED_MEASURE_FILES`` (``user.conf``, ``README.md``),
  ``REQUIRED_PERF_FILES``, ``REQUIRED_ACC_FILES``, ``VALID_AVAILABILITIES``, ``ACC_PATTERN``
  (``acc``, ``F1``), ``MAX_ACCURACY_LOG_SIZE``, ``FILE_SIZE_LIMIT_MB``; ``MODEL_CONFIG[round]``
  ``seeds``, ``required-scenarios-*``, ``accuracy-target``, ``dataset-size``, ``model_mapping``
  (``resnet50`` -> ``resnet``), ``models_TEST01`` / ``models_TEST04`` -- :data:`ROUNDS`;
* ``submission_checker/loader.py`` (the measurements file is the one in its folder whose name
  starts with the system's and ends ``_<scenario>.json``), ``checks/system_check.py``,
  ``checks/measurements_checks.py``, ``checks/compliance_check.py`` (``dir_exists_check``),
  ``checks/accuracy_check.py`` (``hash=`` line, truncated accuracy log),
  ``checks/performance_check.py`` (``seeds_check``), ``main.py`` (default ``--version`` v5.1);
* ``tools/submission/submission_checker_old.py`` (the v5.1 round's checker: only ``.md``/``.pdf``
  files beside the division folders; calibration documentation for the closed division);
* ``tools/submission/submission_structure.md`` and
  ``tools/submission/directory_structure_samples/sample_1/`` (AMD's and NVIDIA's systems JSON,
  ``measurements.json``, ``user.conf``);
* a published v1.1 tree, mlcommons/inference_results_v1.1 (commit 912dcdb9):
  ``closed/Dell/systems/R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton.json`` and
  ``closed/Dell/measurements/.../resnet50/Offline/..._Offline.json`` (a MIG system described).

What the export decides (``miglab/mlperf/README.md``, "Export"):

* **one system per VM**: each VM ran its own LoadGen against its own vGPU, so it is a system
  under test of its own (``systems/<vm>.json``); the sum over a scenario's VMs is a lab metric
  (``MIGLAB_EXPORT.md``, "sum over independent LoadGen instances, not an MLPerf result"), never
  a result;
* **which run becomes ``performance/run_1``**: of the VM's runs whose round the lab counted
  (every VM VALID, the runs concurrent), the median by the metric (the lower middle one of an
  even count; ties: the lower run number) -- neither the best nor the worst; when no round was
  counted, the median of the VM's VALID runs, said as a problem;
* **runs that cannot be submitted** (simulated, random or no weights, synthetic inputs, the CPU,
  a failed submission rule or the round's seeds, no VALID run): without
  ``allow_unsubmittable`` nothing is written; with it the tree is written and every such run is
  marked NOT SUBMITTABLE with its reasons (the system's ``sw_notes``, the measurements README,
  ``MIGLAB_EXPORT.md``); the command exits 1 either way;
* what is not recorded is written as :data:`UNKNOWN` and listed, never guessed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from miglab.core.accuracy import TARGETS as ACCURACY_TARGETS
from miglab.core.accuracy import parse_accuracy_text
from miglab.core.compliance import (
    ACCURACY_LOG,
    read_accuracy_log,
    tests_for,
    verify_accuracy,
    verify_performance_test01,
    verify_performance_test04,
)
from miglab.core.mlperf_rules import benchmark_class, combined_problems, measurement_problems
from miglab.core.runs import RunRecord
from miglab.errors import Problem, ValidationError
from miglab.formats.files import MiB, UnreadableFile, read_input_text
from miglab.formats.loadgen import DETAIL_LOG, SUMMARY_LOG, read_detail_log
from miglab.formats.manifest import (
    MANIFEST,
    atomic_copy,
    atomic_write_text,
    is_run_name,
    replace_dir,
    verify_run,
    walk,
)

__all__ = [
    "DEFAULT_ROUND",
    "ROUNDS",
    "UNKNOWN",
    "ExportPlan",
    "Finding",
    "checker_benchmark",
    "check_tree",
    "plan_export",
    "read_system_info",
    "run_summary",
    "write_export",
]

UNKNOWN = "unknown: not recorded by miglab (set it with --system-info)"
EXPORT_README = "MIGLAB_EXPORT.md"  # the checker allows .md files beside the division folders
LAB_METRIC = "sum over independent LoadGen instances, not an MLPerf result"
STATUSES = ("available", "preview", "rdi")  # VALID_AVAILABILITIES
SYSTEM_TYPES = ("datacenter", "edge", "datacenter,edge")
DIVISIONS = ("closed", "open")
MAX_FILE_BYTES = 50 * MiB  # FILE_SIZE_LIMIT_MB
MAX_ACCURACY_LOG_BYTES = 10 * 1024  # MAX_ACCURACY_LOG_SIZE: truncate_accuracy_log.py's job
SYSTEM_INFO_LIMIT = 1 * MiB

# SYSTEM_DESC_REQUIRED_FIELDS, in the checker's order; MEANINGFUL_FIELDS may not be empty.
SYSTEM_FIELDS = (
    "division", "submitter", "status", "system_name", "number_of_nodes",
    "host_processor_model_name", "host_processors_per_node", "host_processor_core_count",
    "host_memory_capacity", "host_storage_capacity", "host_storage_type", "accelerators_per_node",
    "accelerator_model_name", "accelerator_memory_capacity", "framework", "operating_system",
    "system_type", "other_software_stack", "host_processor_frequency", "host_processor_caches",
    "host_memory_configuration", "host_processor_interconnect", "host_networking",
    "host_networking_topology", "accelerator_frequency", "accelerator_host_interconnect",
    "accelerator_interconnect", "accelerator_interconnect_topology",
    "accelerator_memory_configuration", "accelerator_on-chip_memories", "cooling", "hw_notes",
    "sw_notes", "host_network_card_count", "system_type_detail",
)  # fmt: skip
MEANINGFUL_FIELDS = frozenset((
    "division", "submitter", "system_type", "status", "system_name", "number_of_nodes",
    "host_processor_model_name", "host_processors_per_node", "host_processor_core_count",
    "host_memory_capacity", "host_memory_configuration", "host_storage_capacity",
    "host_storage_type", "host_networking", "host_network_card_count", "host_networking_topology",
    "accelerators_per_node", "accelerator_model_name", "accelerator_memory_capacity",
    "accelerator_host_interconnect", "accelerator_memory_configuration",
    "accelerator_interconnect", "cooling", "framework", "operating_system",
    "other_software_stack",
))  # fmt: skip
MEASUREMENT_FIELDS = (
    "input_data_types", "retraining", "starting_weights_filename", "weight_data_types",
    "weight_transformations",
)  # fmt: skip
PERF_FILES = (DETAIL_LOG, SUMMARY_LOG)  # REQUIRED_PERF_FILES
ACC_FILES = (SUMMARY_LOG, DETAIL_LOG, "accuracy.txt", ACCURACY_LOG)  # REQUIRED_ACC_FILES
_HASH_RE = re.compile(r"^hash=([\w\d]+)$")


@dataclass(frozen=True)
class Round:
    """What the submission checker of one round expects, for the benchmarks miglab runs."""

    name: str
    split: bool  # measurements/ and compliance/ beside results/ (v5.x); else all in results/
    code_dir: str  # "code" (v5.x) | "src" (v6.0)
    seeds: dict[str, int]  # MODEL_CONFIG[round]["seeds"]
    required: dict[str, dict[str, tuple[str, ...]]]  # system type -> benchmark -> scenarios
    calibration: bool  # closed division needs documentation/calibration.md


_EDGE = {
    "resnet": ("SingleStream", "MultiStream", "Offline"),
    "bert-99": ("SingleStream", "Offline"),
    "bert-99.9": ("SingleStream", "Offline"),
}
_BOTH = {
    "resnet": ("SingleStream", "MultiStream", "Offline", "Server"),
    "bert-99": ("SingleStream", "Offline"),
    "bert-99.9": ("SingleStream", "Offline"),
}
ROUNDS = {
    "v5.0": Round(
        "v5.0", True, "code",
        {"qsl_rng_seed": 6023615788873153749, "sample_index_rng_seed": 15036839855038426416,
         "schedule_rng_seed": 9933818062894767841},
        {"datacenter": {"resnet": ("Server", "Offline")}, "edge": _EDGE, "datacenter,edge": _BOTH},
        False,
    ),
    "v5.1": Round(
        "v5.1", True, "code",
        {"qsl_rng_seed": 1780908523862526354, "sample_index_rng_seed": 14771362308971278857,
         "schedule_rng_seed": 18209322760996052031},
        {"datacenter": {}, "edge": _EDGE, "datacenter,edge": _BOTH},
        True,
    ),
    "v6.0": Round(
        "v6.0", False, "src",
        {"qsl_rng_seed": 2465351861681999779, "sample_index_rng_seed": 14276810075590677512,
         "schedule_rng_seed": 3936089224930324775},
        {"datacenter": {}, "edge": _EDGE, "datacenter,edge": _BOTH},
        True,
    ),
}  # fmt: skip
DEFAULT_ROUND = "v5.1"  # the submission checker's default --version
# dataset-size (the accuracy targets, the same in v5.0, v5.1 and v6.0: miglab.core.accuracy)
DATASET_SIZE = {"resnet": 50000, "bert-99": 10833, "bert-99.9": 10833}


def checker_benchmark(name: str | None) -> str | None:
    """The checker's benchmark name (``MODEL_CONFIG`` ``models``) of a miglab benchmark:
    ``resnet50`` -> ``resnet``, ``bert-99`` -> ``bert-99``; None when miglab knows no mapping."""
    cls = benchmark_class(name)
    return cls if cls in ACCURACY_TARGETS else None


# --- findings ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """One reason the exported tree would not pass. ``path``: relative to the export (or the
    input run it is about); ``blocking``: the measurement itself cannot be submitted (a new run
    is needed, no edit of the tree helps)."""

    path: str
    what: str
    blocking: bool = False

    def __str__(self) -> str:
        tag = "NOT SUBMITTABLE: " if self.blocking else ""
        return f"{self.path}: {tag}{self.what}"

    def as_json(self) -> dict:
        return {"path": self.path, "problem": self.what, "blocking": self.blocking}


# --- the plan -------------------------------------------------------------------------------------
@dataclass
class Pick:
    """The run exported for one system, benchmark and MLPerf scenario, and why this one."""

    system: str
    benchmark: str  # the checker's name
    scenario: str
    record: RunRecord
    why: str
    source_scenario_dir: Path  # <vm>/<benchmark>/<Scenario> in the input
    lab: str  # "<campaign> <lab scenario>"
    unsubmittable: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "system": self.system,
            "benchmark": self.benchmark,
            "scenario": self.scenario,
            "run_dir": self.record.run_dir,
            "value": self.record.value,
            "metric": self.record.metric,
            "why": self.why,
            "lab": self.lab,
            "unsubmittable": self.unsubmittable,
        }


@dataclass
class ExportPlan:
    """Everything the export writes (``files``: relative path -> source file or text), what
    it found, and the lab metrics it reports beside the tree."""

    round: Round
    division: str
    submitter: str
    system_type: str
    files: dict[str, Path | str] = field(default_factory=dict)
    systems: dict[str, dict] = field(default_factory=dict)
    picks: list[Pick] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    lab_metrics: list[dict] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"{self.division}/{self.submitter}"

    @property
    def blocking(self) -> list[Finding]:
        return [f for f in self.findings if f.blocking]

    def scenario_dirs(self, system: str, bench: str, scen: str) -> dict[str, str]:
        """``results``, ``measurements`` and ``compliance`` folders of one result."""
        tail = f"{system}/{bench}/{scen}"
        res = f"{self.base}/results/{tail}"
        if self.round.split:
            return {
                "results": res,
                "measurements": f"{self.base}/measurements/{tail}",
                "compliance": f"{self.base}/compliance/{tail}",
            }
        return {"results": res, "measurements": res, "compliance": res}

    def as_json(self) -> dict:
        return {
            "round": self.round.name,
            "division": self.division,
            "submitter": self.submitter,
            "system_type": self.system_type,
            "systems": sorted(self.systems),
            "picks": [p.as_json() for p in self.picks],
            "findings": [f.as_json() for f in self.findings],
            "lab_metrics": self.lab_metrics,
        }


# --- inputs ---------------------------------------------------------------------------------------
def read_system_info(path: str | Path) -> dict:
    """``--system-info FILE``: a JSON object of system-description fields for every exported
    system (host CPU, memory, storage, OS, cooling, ...), optionally with a ``measurements``
    object of measurements-JSON fields; ValidationError for anything else."""
    p = str(path)
    try:
        text = read_input_text(path, limit=SYSTEM_INFO_LIMIT)
    except UnreadableFile as exc:
        raise ValidationError([Problem(p, "", exc.reason)]) from None
    try:
        data = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (ValueError, RecursionError) as exc:
        raise ValidationError([Problem(p, "", f"not JSON: {str(exc)[:100]}")]) from None
    if not isinstance(data, dict):
        raise ValidationError([Problem(p, "", "must be a JSON object of system fields")])
    problems = []
    for k, v in data.items():
        if k == "measurements":
            if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
                problems.append(Problem(p, k, "must be an object of text fields"))
            continue
        if k in ("division", "submitter"):
            problems.append(Problem(p, k, "comes from --division / --submitter, not this file"))
        elif isinstance(v, bool) or not isinstance(v, (str, int, float)):
            problems.append(Problem(p, k, "must be text or a number"))
    if problems:
        raise ValidationError(problems)
    return data


def _campaign_facts(path: str | Path | None) -> dict:
    """From a campaign YAML: the GPU model and each lab scenario's VM size; from ``miglab plan
    --json``: the profiles only (through the aggregate's reader)."""
    from miglab.mlperf.results.aggregate import campaign_context

    if not path:
        return {}
    ctx = campaign_context(path)
    facts: dict = {"plan": ctx.get("plan")}
    if Path(path).suffix != ".json":
        from miglab.core.campaign import load_campaign

        c = load_campaign(path)
        facts["gpu"] = c.gpu.name
        facts["vm"] = {sid: (s.vm.vcpus, s.vm.memory_gb) for sid, s in c.scenarios.items()}
        facts["campaign"] = c.name
    return facts


def _refuse_links(root: Path) -> None:
    """A symbolic link anywhere in the input is bad input: never followed, never copied."""
    links: list[Problem] = []
    for here, _dirs, _files, names in walk(root):
        links += [
            Problem(str(here / n), "", "a symbolic link: refused, never followed") for n in names
        ]
    if links:
        raise ValidationError(links)


# --- naming ---------------------------------------------------------------------------------------
def _safe(name: str) -> str:
    """A path component the checker and git take: letters, digits, ``.``, ``_``, ``-``."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "system"
    return out[:120]


def system_name(campaign: str, lab_scenario: str, vm: str, recorded_vm: str | None) -> str:
    """The system of one VM: its VM name (``<campaign>-<scenario>-vm2``)."""
    if recorded_vm:
        return _safe(recorded_vm)
    if vm.startswith(f"{campaign}-"):
        return _safe(vm)
    return _safe(f"{campaign}-{lab_scenario}-{vm}")


def _profile_memory_gb(profile: str | None, vgpu: str | None) -> str | None:
    m = re.search(r"\.(\d+)gb", profile or "")
    if m:
        return f"{m.group(1)} GB"
    m = re.search(r"-(\d+)[CQ]$", (vgpu or "").strip(), re.IGNORECASE)
    return f"{m.group(1)} GB" if m else None


# --- system and measurements descriptions --------------------------------------------------------
def system_description(
    rec: RunRecord,
    *,
    name: str,
    division: str,
    submitter: str,
    status: str,
    system_type: str,
    lab: dict,
    info: dict | None = None,
    unsubmittable: list[str] | None = None,
) -> dict:
    """The ``systems/<system>.json`` of one VM from its run record (``miglab_run.json``: device,
    profile, vGPU type, placement) and the campaign; what neither says is :data:`UNKNOWN`
    (``info``, the ``--system-info`` fields, wins over both)."""
    m = rec.meta
    d = m.device or {}
    x = m.extra
    cpu = d.get("kind") == "cpu"
    vgpu = d.get("vgpu_type") or m.vgpu_type
    gpu = lab.get("gpu")
    profile = m.profile or lab.get("profile")
    if cpu:
        accel = "none: the run used the CPU (" + str(d.get("name") or "model not recorded") + ")"
    else:
        parts = [f"NVIDIA {gpu}" if gpu else None, f"MIG {profile}" if profile else None]
        accel = " ".join(p for p in parts if p) or str(d.get("name") or "")
        if vgpu:
            accel += f" (vGPU {vgpu})"
        if not gpu:
            accel += f"; physical GPU: {UNKNOWN}"
    vcpus, mem = lab.get("vm_size") or (None, None)
    sw = [
        f"mlcommons-loadgen {x['loadgen_package']}" if x.get("loadgen_package") else None,
        f"NVIDIA vGPU guest driver {d['driver']}" if d.get("driver") else None,
        f"CUDA {d['cuda']}" if d.get("cuda") else None,
        "VMware vSphere (ESXi)",
    ]
    sut = x.get("sut")
    framework = f"miglab {m.backend or 'reference'} backend" + (f", {sut}" if sut else "")
    placement = m.placement or {}
    where = []
    if placement.get("gpu"):
        where.append(f"physical GPU {placement['gpu']}")
    if placement.get("mig_slot") is not None:
        where.append(f"MIG start slot {placement['mig_slot']}")
    others = lab.get("vms", 1) - 1
    hw_notes = (
        "Virtualised: one VMware vSphere VM with one NVIDIA vGPU"
        + (f" backed by the MIG GPU instance {profile}" if profile else "")
        + (f" ({', '.join(where)})" if where else "")
        + (
            f"; it ran at the same time as {others} other VM(s) of lab scenario "
            f"{lab.get('scenario')} ({lab.get('profiles') or 'profiles not recorded'}) on the same "
            "host, each a system of its own with its own LoadGen"
            if others > 0
            else ""
        )
    )
    sw_notes = (
        f"Run by miglab (github miglab, python -m miglab.mlperf.run --backend {m.backend or '?'}"
        f"{' --sut ' + sut if sut else ''}) in the VM's guest OS; LoadGen ran in the VM"
    )
    if unsubmittable:
        sw_notes = "NOT SUBMITTABLE: " + "; ".join(unsubmittable) + ". " + sw_notes
    out = {
        "division": division,
        "submitter": submitter,
        "status": status,
        "system_name": f"{name} (VMware vSphere VM, NVIDIA vGPU{' ' + vgpu if vgpu else ''})",
        "number_of_nodes": 1,
        "host_processor_model_name": (d.get("name") if cpu and d.get("name") else UNKNOWN),
        "host_processors_per_node": UNKNOWN,
        "host_processor_core_count": (
            f"{vcpus} vCPUs (VM)"
            if vcpus
            else (str(d["cpus"]) if cpu and d.get("cpus") else UNKNOWN)
        ),
        "host_memory_capacity": f"{mem} GB (VM)" if mem else UNKNOWN,
        "host_storage_capacity": UNKNOWN,
        "host_storage_type": UNKNOWN,
        "accelerators_per_node": 0 if cpu else 1,
        "accelerator_model_name": accel,
        "accelerator_memory_capacity": (
            "N/A" if cpu else (_profile_memory_gb(profile, vgpu) or UNKNOWN)
        ),
        "framework": framework,
        "operating_system": UNKNOWN,
        "system_type": system_type,
        "other_software_stack": ", ".join(s for s in sw if s),
        "host_processor_frequency": "",
        "host_processor_caches": "",
        "host_memory_configuration": UNKNOWN,
        "host_processor_interconnect": "",
        # LoadGen runs in the VM beside the SUT: no network between them
        "host_networking": "N/A (LoadGen runs in the VM)",
        "host_networking_topology": "N/A",
        "accelerator_frequency": "",
        "accelerator_host_interconnect": UNKNOWN,
        "accelerator_interconnect": "N/A (one vGPU per system)",
        "accelerator_interconnect_topology": "",
        "accelerator_memory_configuration": UNKNOWN,
        "accelerator_on-chip_memories": "",
        "cooling": UNKNOWN,
        "hw_notes": hw_notes,
        "sw_notes": sw_notes,
        "host_network_card_count": "N/A",
        "system_type_detail": "VMware vSphere VM with an NVIDIA vGPU"
        + (" (MIG-backed)" if profile else ""),
    }
    for k, v in (info or {}).items():
        if k != "measurements":
            out[k] = v
    return out


def measurements_description(rec: RunRecord, info: dict | None = None) -> dict:
    """``<system>_<impl>_<Scenario>.json`` (SYSTEM_IMP_REQUIRED_FILES) from the run record."""
    m, x = rec.meta, rec.meta.extra
    precision = x.get("precision") if isinstance(x.get("precision"), str) else None
    model = x.get("model") if isinstance(x.get("model"), str) else None
    known_precision = precision in ("fp32", "fp16", "bf16", "fp8", "int8")
    transforms = []
    if model and "BatchNorm folded" in model:
        transforms.append("BatchNorm folded into the convolutions")
    if precision == "fp16" or precision == "bf16":
        transforms.append(f"fp32 weights cast to {precision} at load time")
    elif precision == "fp8":
        transforms.append("quantization to FP8 e4m3 (per-channel weight scales)")
    if m.weights == "random":
        weights = "none: random weights (not a submission)"
    elif m.weights == "none":
        weights = "none: no model weights (a service-rate model, not a submission)"
    else:
        weights = x.get("weights_file") if isinstance(x.get("weights_file"), str) else UNKNOWN
    out = {
        "input_data_types": (
            x["input_data_types"] if isinstance(x.get("input_data_types"), str) else UNKNOWN
        ),
        "retraining": "No",
        "starting_weights_filename": weights,
        "weight_data_types": precision if known_precision else UNKNOWN,
        "weight_transformations": ", ".join(transforms)
        if transforms
        else ("none" if precision == "fp32" else UNKNOWN),
    }
    if model:
        out["model_description"] = model  # informative, as recorded
    out.update((info or {}).get("measurements") or {})
    return out


# LoadGen's effective_* key -> (mlperf.conf key, scale) for the settings file the run used
_CONF_KEYS = (
    ("effective_min_duration_ms", "min_duration", 1),
    ("effective_max_duration_ms", "max_duration", 1),
    ("effective_min_query_count", "min_query_count", 1),
    ("effective_max_query_count", "max_query_count", 1),
    ("effective_qsl_rng_seed", "qsl_rng_seed", 1),
    ("effective_sample_index_rng_seed", "sample_index_rng_seed", 1),
    ("effective_schedule_rng_seed", "schedule_rng_seed", 1),
    ("effective_target_latency_ns", "target_latency", 1e-6),  # mlperf.conf says milliseconds
    ("effective_target_latency_percentile", "target_latency_percentile", 100),
    ("effective_performance_sample_count", "performance_sample_count_override", 1),
)


def _conf_value(v, scale) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if scale == 1:
        return str(v)
    s = v * scale
    return str(int(s)) if float(s).is_integer() else f"{s:g}"


def conf_files(rec: RunRecord, scenario: str) -> tuple[str, str]:
    """(user.conf, mlperf.conf) text written from what the run's detail log says LoadGen used
    (miglab's runner keeps the settings, not the files: see each file's header)."""
    s = rec.settings
    version = rec.loadgen_version or "?"
    qps_key = "offline_expected_qps" if scenario == "Offline" else "target_qps"
    user = [
        "# Written by miglab results export from the run's mlperf_log_detail.txt: the settings a",
        "# user sets, as LoadGen used them (miglab's runner passes them on its command line or in",
        "# a config file it does not keep).",
    ]
    if s.get("effective_target_qps") is not None and scenario in ("Offline", "Server"):
        user.append(f"*.{scenario}.{qps_key} = {_conf_value(s['effective_target_qps'], 1)}")
    psc = s.get("effective_performance_sample_count")
    if psc:
        user.append(f"*.{scenario}.performance_sample_count_override = {psc}")
    conf = [
        f"# Not LoadGen's mlperf.conf file: LoadGen {version} carries its mlperf.conf inside",
        "# itself. These are the settings the run used (LoadGen's built-in mlperf.conf and the",
        "# user's settings together), as its mlperf_log_detail.txt records them (effective_*).",
    ]
    for key, conf_key, scale in _CONF_KEYS:
        if key in s:
            conf.append(f"*.{scenario}.{conf_key} = {_conf_value(s[key], scale)}")
    return "\n".join(user) + "\n", "\n".join(conf) + "\n"


def measurements_readme(pick: Pick, plan: ExportPlan, accuracy_src: str | None) -> str:
    r, m = pick.record, pick.record.meta
    x = m.extra
    settings = x.get("settings") if isinstance(x.get("settings"), dict) else {}
    cmd = (
        f"python -m miglab.mlperf.run --backend {m.backend or 'reference'}"
        f"{' --sut ' + x['sut'] if isinstance(x.get('sut'), str) else ''}"
        f" --benchmark {r.benchmark or pick.benchmark} --scenario {pick.scenario}"
        f" --out results/<campaign>/<scenario>/<vm> --run N"
    )
    lines = [
        f"# {pick.system}: {pick.benchmark} {pick.scenario}",
        "",
    ]
    if pick.unsubmittable:
        lines += ["**NOT SUBMITTABLE**: " + "; ".join(pick.unsubmittable) + ".", ""]
    lines += [
        f"Measured by miglab in one VM of lab scenario {pick.lab}: {plan_lab_text(pick)}.",
        "",
        "## How to reproduce",
        "",
        "The whole lab (every VM of the scenario at once, from the campaign file):",
        "",
        "```bash",
        "miglab run CAMPAIGN.yml            # builds the VMs, runs MLPerf in all of them at once",
        f"miglab results export results/ --submission OUT --round {plan.round.name} "
        f"--division {plan.division} --submitter {plan.submitter}",
        "```",
        "",
        "One run in the VM's guest (what the mlperf role runs there):",
        "",
        "```bash",
        cmd,
        "```",
        "",
        "## What was exported",
        "",
        f"- performance/run_1: `{r.run_dir}` ({pick.why}); "
        f"{r.metric} = {r.value} (LoadGen {r.loadgen_version or '?'})",
        f"- accuracy: {('`' + accuracy_src + '`') if accuracy_src else 'no accuracy run'}",
        "- user.conf and mlperf.conf: written from the run's detail log (LoadGen's mlperf.conf "
        "is built into LoadGen; miglab keeps no copy of the config files"
        + (
            f"; the run read `{settings.get('user_conf') or settings.get('mlperf_conf')}`"
            if settings.get("user_conf") or settings.get("mlperf_conf")
            else ""
        )
        + ")",
        f"- weights: {m.weights or 'not recorded'}; inputs: {m.inputs or 'not recorded'}; "
        f"simulated: {m.simulated}",
        "",
    ]
    return "\n".join(lines)


def plan_lab_text(pick: Pick) -> str:
    return pick.record.meta.vm or pick.system


# --- planning -------------------------------------------------------------------------------------
def _median_pick(cands: list[RunRecord], runs: dict[int, RunRecord]) -> RunRecord:
    by_n = {id(r): n for n, r in runs.items()}
    ordered = sorted(cands, key=lambda r: (float(r.value), by_n[id(r)]))
    return ordered[(len(ordered) - 1) // 2]


def _copy_files(plan: ExportPlan, src: Path, dst: str, names) -> list[str]:
    """Plan copies of ``names`` from ``src`` to ``dst``; the names that are not there."""
    missing = []
    for n in names:
        p = src / n
        if p.is_file():
            plan.files[f"{dst}/{n}"] = p
        else:
            missing.append(n)
    return missing


def _accuracy_run(scenario_dir: Path) -> Path | None:
    """The accuracy run exported: the lowest ``accuracy/run_<n>`` holding accuracy.txt, else the
    lowest one at all."""
    acc = scenario_dir / "accuracy"
    if not acc.is_dir():
        return None
    runs = sorted(
        (p for p in acc.iterdir() if p.is_dir() and is_run_name(p.name)),
        key=lambda p: int(p.name.removeprefix("run_")),
    )
    with_txt = [p for p in runs if (p / "accuracy.txt").is_file()]
    return (with_txt or runs or [None])[0]


def plan_export(
    results_dir: str | Path,
    *,
    division: str = "closed",
    submitter: str = "miglab",
    round_name: str = DEFAULT_ROUND,
    status: str = "available",
    system_type: str = "datacenter",
    campaign: str | Path | None = None,
    system_info: dict | None = None,
    min_overlap: float | None = None,
) -> ExportPlan:
    """What ``miglab results export`` writes for ``results_dir``; nothing is written here.
    ValidationError for bad input (a missing tree, a symbolic link in it, an unknown round)."""
    from miglab.mlperf.results.aggregate import aggregate_results

    bad = []
    if round_name not in ROUNDS:
        bad.append(Problem("<command line>", "--round", f"one of {', '.join(ROUNDS)}"))
    if division not in DIVISIONS:
        bad.append(Problem("<command line>", "--division", f"one of {', '.join(DIVISIONS)}"))
    if status not in STATUSES:
        bad.append(Problem("<command line>", "--status", f"one of {', '.join(STATUSES)}"))
    if system_type not in SYSTEM_TYPES:
        bad.append(Problem("<command line>", "--system-type", f"one of {', '.join(SYSTEM_TYPES)}"))
    if not submitter or _safe(submitter) != submitter:
        bad.append(Problem("<command line>", "--submitter", "letters, digits, '.', '_', '-' only"))
    if bad:
        raise ValidationError(bad)
    root = Path(results_dir)
    if root.is_dir():
        _refuse_links(root)
    facts = _campaign_facts(campaign)
    kwargs = {"plan": facts.get("plan")}
    if min_overlap is not None:
        kwargs["min_overlap"] = min_overlap
    agg = aggregate_results(root, **kwargs)
    rnd = ROUNDS[round_name]
    plan = ExportPlan(rnd, division, submitter, system_type)
    for p in agg.problems:
        plan.findings.append(Finding(str(p).split(": ", 1)[0], "not exported: " + str(p)))

    for g in agg.groups:
        bench = checker_benchmark(g.benchmark)
        counted = {t.run for t in g.runs if t.included}
        if g.included and g.mean is not None:
            plan.lab_metrics.append(
                {
                    "campaign": g.campaign,
                    "scenario": g.scenario,
                    "benchmark": g.benchmark,
                    "mlperf_scenario": g.mlperf_scenario,
                    "vms": len(g.vms),
                    "profiles": g.scenario_profiles,
                    "metric": g.metric,
                    "unit": g.unit,
                    "combine": g.combine,
                    "runs_counted": g.count,
                    "mean": g.mean,
                    "stdev": g.stdev,
                    "kind": LAB_METRIC
                    if g.combine == "sum"
                    else "worst over independent LoadGen instances, not an MLPerf result",
                    "why_not_a_result": combined_problems(len(g.vms), g.combine),
                }
            )
        for vm in g.vms:
            runs = {n: vr.record for n, vr in g.vm_runs.get(vm, {}).items() if vr.record}
            where = f"{g.campaign}/{g.scenario}/{vm}/{g.benchmark}/{g.mlperf_scenario}"
            if bench is None:
                plan.findings.append(
                    Finding(
                        where,
                        f"benchmark {g.benchmark!r}: miglab knows "
                        "no MLPerf benchmark name for it; not exported",
                    )
                )
                continue
            valid = {n: r for n, r in runs.items() if r.valid and r.mode == "PerformanceOnly"}
            if not valid:
                plan.findings.append(
                    Finding(where, "no VALID performance run: nothing exported", blocking=True)
                )
                continue
            chosen = [r for n, r in valid.items() if n in counted]
            if chosen:
                rec = _median_pick(chosen, valid)
                why = (
                    f"the median of the {len(chosen)} run(s) of this VM the lab counted"
                    if len(chosen) > 1
                    else "the one run of this VM the lab counted"
                )
            else:
                rec = _median_pick(list(valid.values()), valid)
                why = f"the median of this VM's {len(valid)} VALID run(s); no round was counted"
                plan.findings.append(
                    Finding(
                        rec.run_dir,
                        "no round of this VM was counted by the lab (not every VM VALID, or "
                        "not concurrent): the system notes say it ran beside the scenario's "
                        "other VMs",
                    )
                )
            name = system_name(g.campaign, g.scenario, vm, rec.meta.vm)
            run_dir = Path(rec.run_dir)
            pick = Pick(
                name,
                bench,
                g.mlperf_scenario,
                rec,
                why,
                run_dir.parent.parent,
                f"{g.campaign} {g.scenario}",
            )
            pick.unsubmittable = _unsubmittable(rec, rnd)
            if (run_dir / MANIFEST).is_file():
                issues = verify_run(run_dir)
                if issues:
                    pick.unsubmittable.append(
                        f"the run folder does not match its {MANIFEST}: " + str(issues[0])
                    )
            plan.findings += [Finding(rec.run_dir, u, blocking=True) for u in pick.unsubmittable]
            vm_size = (facts.get("vm") or {}).get(g.scenario)
            lab = {
                "gpu": facts.get("gpu"),
                "vm_size": vm_size,
                "profile": g.profiles.get(vm),
                "vms": len(g.vms),
                "scenario": g.scenario,
                "profiles": g.scenario_profiles,
            }
            if name not in plan.systems:
                plan.systems[name] = system_description(
                    rec,
                    name=name,
                    division=division,
                    submitter=submitter,
                    status=status,
                    system_type=system_type,
                    lab=lab,
                    info=system_info,
                    unsubmittable=pick.unsubmittable,
                )
            elif pick.unsubmittable and "NOT SUBMITTABLE" not in plan.systems[name]["sw_notes"]:
                plan.systems[name]["sw_notes"] = (
                    "NOT SUBMITTABLE: "
                    + "; ".join(pick.unsubmittable)
                    + ". "
                    + plan.systems[name]["sw_notes"]
                )
            plan.picks.append(pick)
            _plan_files(plan, pick, system_info)
    for name, desc in plan.systems.items():
        plan.files[f"{plan.base}/systems/{name}.json"] = json.dumps(desc, indent=2) + "\n"
    for bench in sorted({p.benchmark for p in plan.picks}):
        plan.files[f"{plan.base}/{rnd.code_dir}/{bench}/README.md"] = _code_readme(bench, plan)
    plan.files[EXPORT_README] = export_readme(plan)
    return plan


def _unsubmittable(rec: RunRecord, rnd: Round) -> list[str]:
    """Why the run itself cannot be submitted: what it measured (miglab_run.json), the
    submission rules on its log, the round's LoadGen seeds."""
    out = list(rec.submission_reasons)
    m = rec.meta
    for why in measurement_problems(
        simulated=m.simulated,
        weights=m.weights,
        inputs=m.inputs,
        device_kind=(m.device or {}).get("kind"),
    ):
        if why not in out:
            out.append(why)
    for key, want in rnd.seeds.items():
        got = rec.seeds.get(key)
        if got != want:
            out.append(
                f"{key} {got} is not the {rnd.name} round's {want} (LoadGen "
                f"{rec.loadgen_version or '?'}'s mlperf.conf is another round's)"
            )
    return out


def _plan_files(plan: ExportPlan, pick: Pick, info: dict | None) -> None:
    dirs = plan.scenario_dirs(pick.system, pick.benchmark, pick.scenario)
    rec, src = pick.record, pick.source_scenario_dir
    run_dir = Path(rec.run_dir)
    perf = f"{dirs['results']}/performance/run_1"
    _copy_files(plan, run_dir, perf, PERF_FILES)
    if (run_dir / ACCURACY_LOG).is_file():
        plan.files[f"{perf}/{ACCURACY_LOG}"] = run_dir / ACCURACY_LOG
    acc_run = _accuracy_run(src)
    if acc_run is not None:
        _copy_files(plan, acc_run, f"{dirs['results']}/accuracy", ACC_FILES)
        for f in _check_accuracy(acc_run, str(acc_run), pick.benchmark, True):
            pick.unsubmittable.append(f"accuracy: {f.what}")
            plan.findings.append(f)
    meas = dirs["measurements"]
    user, conf = conf_files(rec, pick.scenario)
    for name, text in (("user.conf", user), ("mlperf.conf", conf)):
        kept = run_dir / name
        plan.files[f"{meas}/{name}"] = kept if kept.is_file() else text  # the file itself if kept
    plan.files[f"{meas}/README.md"] = measurements_readme(
        pick, plan, str(acc_run) if acc_run else None
    )
    impl = _safe(f"{rec.meta.backend or 'miglab'}-{rec.meta.extra.get('sut') or 'sut'}")
    meas_name = (
        "measurements.json"
        if not plan.round.split
        else (f"{pick.system}_{impl}_{pick.scenario}.json")
    )
    plan.files[f"{meas}/{meas_name}"] = (
        json.dumps(measurements_description(rec, info), indent=2) + "\n"
    )
    for test in tests_for(pick.benchmark):
        tdir = src / test
        if not tdir.is_dir():
            continue
        dst = f"{dirs['compliance']}/{test}"
        _copy_files(plan, tdir / "performance" / "run_1", f"{dst}/performance/run_1", PERF_FILES)
        if (tdir / "accuracy" / ACCURACY_LOG).is_file():
            plan.files[f"{dst}/accuracy/{ACCURACY_LOG}"] = tdir / "accuracy" / ACCURACY_LOG
        # verify_*.txt are redone against the exported run_1 by write_export (the input's were
        # made against the input's run_1, which may be another run)


def _code_readme(bench: str, plan: ExportPlan) -> str:
    import miglab

    sut = sorted(
        {
            str(p.record.meta.extra.get("sut"))
            for p in plan.picks
            if p.benchmark == bench and p.record.meta.extra.get("sut")
        }
    )
    return (
        f"# {bench}: miglab's reference backend\n\n"
        f"The implementation is miglab {getattr(miglab, '__version__', '?')}'s `reference` backend "
        f"(`miglab/mlperf/guest/backends/reference.py`, SUT {', '.join(sut) or '?'} in "
        "`miglab/mlperf/guest/sut/`), run by `python -m miglab.mlperf.run`.\n\n"
        "MLCommons asks for the source code here: copy miglab's source tree (or the wheel the "
        "lab's guests installed) into this folder before submitting.\n"
    )


def export_readme(plan: ExportPlan) -> str:
    """``MIGLAB_EXPORT.md`` beside the division folder: what this tree is, the run picked per
    system, the lab metrics (not results) and, once checked, the problems."""
    lines = [
        f"# miglab export: MLPerf Inference {plan.round.name} layout, {plan.division} division",
        "",
        "One system per VM: each VM ran its own LoadGen on its own vGPU. ",
    ]
    if plan.blocking:
        lines += [
            "",
            "**NOT SUBMITTABLE**: some runs cannot be submitted (listed below with the reasons); "
            "they were exported with --allow-unsubmittable for the lab's own use.",
        ]
    lines += ["", "## Runs exported as performance/run_1", ""]
    lines += [
        "| system | benchmark | scenario | run | value | why this run | submittable |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in plan.picks:
        lines.append(
            f"| {p.system} | {p.benchmark} | {p.scenario} | `{p.record.run_dir}` | "
            f"{p.record.value} {p.record.unit or ''} | {p.why} | "
            f"{'no: ' + '; '.join(p.unsubmittable) if p.unsubmittable else 'by its run'} |"
        )
    lines += [
        "",
        f"## Lab metrics ({LAB_METRIC})",
        "",
        "A scenario's total adds what several independent LoadGen instances measured at the "
        "same time, one per VM. MLPerf reports what one LoadGen measured of one system: these "
        "totals are lab figures, not MLPerf results, and are not in the submission tree.",
        "",
        "| campaign | scenario | benchmark | MLPerf scenario | VMs | profiles | runs | mean "
        "total |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in plan.lab_metrics:
        lines.append(
            f"| {m['campaign']} | {m['scenario']} | {m['benchmark']} | {m['mlperf_scenario']} | "
            f"{m['vms']} | {m['profiles'] or '?'} | {m['runs_counted']} | "
            f"{m['mean']:.6g} {m['unit'] or ''} ({m['combine']}) |"
        )
    lines += [
        "",
        "## Before submitting",
        "",
        f"- `{plan.round.code_dir}/<benchmark>/`: holds a README pointing to miglab; MLCommons "
        "asks for the implementation's source code there.",
        "- `accuracy/mlperf_log_accuracy.json`: MLCommons' `truncate_accuracy_log.py` truncates "
        "it and adds the `hash=` line to `accuracy.txt`.",
        "- Run MLCommons' submission checker (`python3 -m tools.submission.submission_checker."
        f"main --input <this folder> --version {plan.round.name}`).",
    ]
    if plan.findings:
        lines += ["", "## Problems (the tree would not pass MLCommons' checker)", ""]
        lines += [f"- {f}" for f in plan.findings]
    return "\n".join(lines) + "\n"


# --- writing --------------------------------------------------------------------------------------
def _inside(a: Path, b: Path) -> bool:
    a, b = a.resolve(), b.resolve()
    return a == b or b in a.parents


def write_export(plan: ExportPlan, dest: str | Path, *, results_dir: str | Path, force=False):
    """Write the plan's tree to ``dest`` as a whole: built in a folder beside it, verified
    against the round's rules, then renamed into place (an existing ``dest`` is replaced only
    with ``force``). The problems found are added to ``plan.findings`` and returned."""
    dest = Path(dest)
    src = Path(results_dir)
    if _inside(dest, src) or _inside(src, dest):
        raise ValidationError(
            [Problem(str(dest), "", f"must be outside the results tree {src} (and not hold it)")]
        )
    if dest.is_symlink():
        raise ValidationError([Problem(str(dest), "", "a symbolic link: refused")])
    if dest.exists():
        if not dest.is_dir():
            raise ValidationError([Problem(str(dest), "", "exists and is not a folder")])
        if any(dest.iterdir()) and not force:
            raise ValidationError(
                [Problem(str(dest), "", "exists and is not empty (--force replaces it)")]
            )
    dest.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{dest.name}.export-", dir=dest.parent))
    try:
        for rel, what in sorted(plan.files.items(), key=lambda kv: kv[0]):
            if rel == EXPORT_README:
                continue  # written last, with the problems
            target = stage / rel
            if isinstance(what, Path):
                atomic_copy(what, target)
            else:
                atomic_write_text(target, what)
        _write_verifications(plan, stage)
        plan.findings += check_tree(stage, plan)
        atomic_write_text(stage / EXPORT_README, export_readme(plan))
        aside = dest.parent / f".{dest.name}.replaced-{os.getpid()}"
        if dest.exists() and not any(dest.iterdir()):
            dest.rmdir()
        replace_dir(stage, dest, aside)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return plan.findings


def _write_verifications(plan: ExportPlan, stage: Path) -> None:
    """``TEST0x/verify_performance.txt`` and ``verify_accuracy.txt`` as MLCommons' scripts print
    them, against the exported ``performance/run_1`` and ``accuracy/``."""
    for p in plan.picks:
        dirs = plan.scenario_dirs(p.system, p.benchmark, p.scenario)
        res, comp = stage / dirs["results"], stage / dirs["compliance"]
        for test in tests_for(p.benchmark):
            tdir = comp / test
            if not tdir.is_dir():
                continue
            try:
                ref = read_detail_log(res / "performance" / "run_1" / DETAIL_LOG)
                got = read_detail_log(tdir / "performance" / "run_1" / DETAIL_LOG)
            except Exception as exc:  # noqa: BLE001 - a missing log is a failed verification
                text = f"Verifying performance.\nTEST FAIL: {exc}\n"
            else:
                fn = verify_performance_test01 if test == "TEST01" else verify_performance_test04
                text = fn(ref, got).text
            atomic_write_text(tdir / "verify_performance.txt", text)
            if test == "TEST01":
                try:
                    verdict = verify_accuracy(
                        read_accuracy_log(res / "accuracy" / ACCURACY_LOG),
                        read_accuracy_log(tdir / "accuracy" / ACCURACY_LOG),
                    )
                    text = verdict.text
                except ValueError as exc:
                    text = f"TEST FAIL: {exc}\n"
                atomic_write_text(tdir / "verify_accuracy.txt", text)


# --- checking -------------------------------------------------------------------------------------
def _nonempty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def check_tree(root: str | Path, plan: ExportPlan) -> list[Finding]:
    """The round's checks over an exported tree (``root``: the submission folder), as miglab
    can make them: the systems JSON, the measurements files and fields, the performance and
    accuracy files, the accuracy target and dataset size, the compliance verdicts, the
    scenarios the round requires (closed division), file sizes. The rules on the performance
    logs themselves were applied to the runs (:func:`plan_export`)."""
    root = Path(root)
    out: list[Finding] = []
    rnd = plan.round
    closed = plan.division == "closed"
    for name in sorted(plan.systems):
        rel = f"{plan.base}/systems/{name}.json"
        try:
            desc = json.loads((root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            out.append(Finding(rel, f"unreadable: {exc}"))
            continue
        for k in SYSTEM_FIELDS:
            v = desc.get(k)
            if k not in desc:
                out.append(Finding(rel, f"{k}: missing"))
            elif k in MEANINGFUL_FIELDS and v in ("", None):
                out.append(Finding(rel, f"{k}: empty, the checker needs a value"))
            elif isinstance(v, str) and UNKNOWN in v:
                out.append(Finding(rel, f"{k}: not recorded by miglab; fill it in"))
        if str(desc.get("status", "")).lower() not in STATUSES:
            out.append(Finding(rel, f"status: {desc.get('status')!r} is not one of {STATUSES}"))
    by_bench: dict[tuple[str, str], set[str]] = {}
    for p in plan.picks:
        by_bench.setdefault((p.system, p.benchmark), set()).add(p.scenario)
        dirs = plan.scenario_dirs(p.system, p.benchmark, p.scenario)
        res, meas = dirs["results"], dirs["measurements"]
        for n in PERF_FILES:
            if not _nonempty(root / res / "performance" / "run_1" / n):
                out.append(
                    Finding(f"{res}/performance/run_1/{n}", "missing (the input run has none)")
                )
        for n in ("user.conf", "README.md"):
            if not _nonempty(root / meas / n):
                out.append(Finding(f"{meas}/{n}", "missing or empty"))
        jsons = [
            f
            for f in (root / meas).glob("*.json")
            if f.name.startswith(p.system)
            and f.name.endswith(f"_{p.scenario}.json")
            or f.name == "measurements.json"
        ]
        if not jsons:
            out.append(Finding(meas, "no measurements JSON"))
        for f in jsons:
            data = json.loads(f.read_text(encoding="utf-8"))
            for k in MEASUREMENT_FIELDS:
                v = data.get(k)
                if not v:
                    out.append(Finding(f"{meas}/{f.name}", f"{k}: missing or empty"))
                elif UNKNOWN in str(v):
                    out.append(
                        Finding(f"{meas}/{f.name}", f"{k}: not recorded by miglab; fill it in")
                    )
        out += _check_accuracy(root / res / "accuracy", f"{res}/accuracy", p.benchmark, False)
        if closed:
            for test in tests_for(p.benchmark):
                tdir = f"{dirs['compliance']}/{test}"
                if not (root / tdir).is_dir():
                    out.append(
                        Finding(
                            tdir,
                            f"missing: {test} is required for {p.benchmark} "
                            "(python -m miglab.mlperf.run --compliance "
                            f"{test})",
                        )
                    )
                    continue
                files = ["verify_performance.txt", "performance/run_1/" + DETAIL_LOG]
                if test == "TEST01":
                    files.append("verify_accuracy.txt")
                for n in files:
                    f = root / tdir / n
                    if not f.is_file():
                        out.append(Finding(f"{tdir}/{n}", "missing"))
                    elif (
                        n.startswith("verify_")
                        and "TEST PASS"
                        not in f.read_text(encoding="utf-8", errors="replace").splitlines()
                    ):
                        out.append(
                            Finding(
                                f"{tdir}/{n}",
                                "TEST FAIL against the exported performance/run_1 and accuracy",
                            )
                        )
    if closed:
        for (system, bench), scens in sorted(by_bench.items()):
            required = rnd.required.get(plan.system_type, {}).get(bench)
            where = f"{plan.base}/results/{system}/{bench}"
            if required is None:
                out.append(
                    Finding(
                        where,
                        f"{bench} is not a {plan.system_type} benchmark of "
                        f"the {rnd.name} round's closed division (the checker's "
                        "required scenarios); --division open, or another "
                        "--round/--system-type",
                    )
                )
                continue
            missing = [s for s in required if s not in scens]
            extra = sorted(scens - set(required))
            if missing:
                out.append(
                    Finding(
                        where,
                        f"{rnd.name} {plan.system_type} requires the "
                        f"scenario(s) {', '.join(missing)} as well",
                    )
                )
            if extra:
                out.append(
                    Finding(
                        where,
                        f"scenario(s) {', '.join(extra)} are not "
                        f"{plan.system_type} scenarios of {bench} in {rnd.name}",
                    )
                )
        if rnd.calibration and not any(
            (root / plan.base / d / "calibration.md").is_file() for d in ("", "documentation")
        ):
            out.append(
                Finding(
                    f"{plan.base}/documentation/calibration.md",
                    "missing: the closed "
                    "division asks how the weights were calibrated or quantized "
                    "(or that they were not)",
                )
            )
    for here, _dirs, files, _links in walk(root):
        for n in files:
            if (here / n).stat().st_size > MAX_FILE_BYTES:
                out.append(
                    Finding(str((here / n).relative_to(root)), "over 50 MB: the checker refuses it")
                )
    return out


def _check_accuracy(d: Path, acc: str, bench: str, blocking: bool) -> list[Finding]:
    """The accuracy folder ``d`` (shown as ``acc``) against the round's rules: ``blocking``
    the findings no edit fixes (below the target, not the whole dataset: the plan checks the
    input's accuracy run for them), else the others (files, the checker's line, truncation)."""
    if not d.is_dir():
        if blocking:
            return []
        return [
            Finding(
                acc,
                "missing: no accuracy run (<vm>/<benchmark>/<Scenario>/accuracy/"
                "run_<n>/ in the results tree)",
            )
        ]
    out = (
        []
        if blocking
        else [Finding(f"{acc}/{n}", "missing") for n in ACC_FILES if not (d / n).is_file()]
    )
    txt = d / "accuracy.txt"
    if txt.is_file():
        metric, target = ACCURACY_TARGETS[bench].metric, ACCURACY_TARGETS[bench].value
        text = txt.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        score = parse_accuracy_text(text, bench)
        if score is None and not blocking:
            out.append(Finding(f"{acc}/accuracy.txt", f"no {metric} line the checker reads"))
        elif score is not None and score < target and blocking:
            out.append(
                Finding(
                    f"{acc}/accuracy.txt",
                    f"{metric} {score} below the target {target:.5f}",
                    blocking=True,
                )
            )
        if not blocking and not any(_HASH_RE.match(line) for line in lines):
            out.append(
                Finding(
                    f"{acc}/accuracy.txt",
                    "no hash= line: run MLCommons' truncate_accuracy_log.py over the tree",
                )
            )
    log = d / ACCURACY_LOG
    if not blocking and log.is_file() and log.stat().st_size > MAX_ACCURACY_LOG_BYTES:
        out.append(
            Finding(
                f"{acc}/{ACCURACY_LOG}",
                "not truncated: run MLCommons' truncate_accuracy_log.py over the tree",
            )
        )
    if blocking and (d / DETAIL_LOG).is_file():
        try:
            total = read_detail_log(d / DETAIL_LOG).get("qsl_reported_total_count")
        except Exception:  # noqa: BLE001 - an unreadable log is listed by the tree check
            total = None
        if total is not None and total != DATASET_SIZE[bench]:
            out.append(
                Finding(
                    f"{acc}/{DETAIL_LOG}",
                    f"the accuracy run covered {total} "
                    f"samples, not the dataset's {DATASET_SIZE[bench]}",
                    blocking=True,
                )
            )
    return out


def run_summary(plan: ExportPlan) -> dict:
    """The export as data (``--json``): the plan, the problems, the lab metrics."""
    data = plan.as_json()
    data["ok"] = not plan.findings
    return data
