"""The campaign file: what lab to build and which MLPerf scenarios to run, strictly validated.

A campaign names one GPU model, VM defaults, MLPerf settings and scenarios; each scenario is a
set of vGPUs, one VM per vGPU, all running MLPerf at once. ``load_campaign`` checks the whole file
(keys, types, counts, profile names, baseline, fit on the lab) and raises one
:class:`~miglab.errors.ValidationError` listing every problem; nothing else in miglab runs on a
campaign that did not pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from miglab.core import schema
from miglab.core.catalog import (
    Catalog,
    GpuModel,
    MigProfile,
    TimeSlicedType,
    UnknownName,
    load_catalog,
)
from miglab.core.placement import Host, Lab, PackError, VmRequest, pack
from miglab.core.vgpu_versions import (
    DRIVER_VAR,
    ESXI_VAR,
    Availability,
    format_vgpu_release,
    format_vsphere,
    vgpu_release_of_driver,
)
from miglab.errors import Problems, ValidationError
from miglab.formats import yamlio
from miglab.formats.loadgen import SCENARIOS

SUPPORTED_VERSIONS = (1,)
MLPERF_BENCHMARKS = (
    "resnet50",
    "retinanet",
    "ssd-resnet34",
    "ssd-mobilenet",
    "bert-99",
    "bert-99.9",
    "rnnt",
    "3d-unet-99",
    "3d-unet-99.9",
    "dlrm-99",
    "dlrm-99.9",
    "dlrm-v2-99",
    "dlrm-v2-99.9",
    "gptj-99",
    "gptj-99.9",
    "llama2-70b-99",
    "llama2-70b-99.9",
    "stable-diffusion-xl",
)
MLPERF_SCENARIOS = SCENARIOS  # LoadGen's (miglab.formats.loadgen): one list
MLPERF_MIN_DURATION_S = 600  # LoadGen's min_duration for datacenter performance runs (mlperf.conf)
MAX_SECONDS = 7 * 24 * 3600  # a sanity bound on durations: a week per run or setup is a typo
NAME_PATTERN = r"[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?"
SCENARIO_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}"
# <campaign>/qps_search/<profile>/...: the searched target QPS per MIG profile (mlperf role)
RESERVED_SCENARIO_IDS = ("qps_search",)
QPS_SEARCH_KEYS = ("min_duration_ms", "min_query_count", "tolerance", "max_trials")
# How the guests run MLPerf (miglab.mlperf.guest.backends): miglab's reference SUTs, or NVIDIA's
# closed-division harness of a round (miglab.mlperf.guest.backends.nvidia.ROUNDS; a unit test
# keeps the two lists equal) -- v1.1 has no Hopper GPUs, v4.1 does.
MLPERF_BACKENDS = ("reference", "nvidia")
HARNESS_ROUNDS = {"v1.1": ("ampere", "turing"), "v4.1": ("ampere", "ada", "hopper")}
HARNESS_KEYS = ("round", "dir", "source", "prefix", "launch", "make_vars")
HARNESS_LAUNCHES = ("docker", "inside")


@dataclass(frozen=True)
class VmSpec:
    vcpus: int = 32
    memory_gb: int = 64
    mmio_gb: int | None = None  # None: NVIDIA's documented size for the GPU (catalog)


@dataclass(frozen=True)
class QpsSearchSpec:
    """The target-QPS search's short runs (``mlperf.qps_search``; the guest's defaults)."""

    min_duration_ms: int = 10_000
    min_query_count: int = 1_000
    tolerance: float = 0.02
    max_trials: int = 12

    def as_json(self) -> dict:
        return {
            "min_duration_ms": self.min_duration_ms,
            "min_query_count": self.min_query_count,
            "tolerance": self.tolerance,
            "max_trials": self.max_trials,
        }


@dataclass(frozen=True)
class HarnessSpec:
    """``mlperf.harness`` (backend nvidia): which round of NVIDIA's harness, and where."""

    round: str
    dir: str  # the harness folder (closed/NVIDIA) in the guests
    source: str | None = None  # a controller folder copied to ``dir`` (None: already there)
    prefix: str = ""  # system name prefix (R750xa)
    launch: str = "docker"  # docker: steps in the harness's container; inside: miglab is in it
    make_vars: tuple[tuple[str, str], ...] = ()  # NAME=value for every make call

    def as_json(self) -> dict:
        return {
            "round": self.round,
            "dir": self.dir,
            "source": self.source,
            "prefix": self.prefix,
            "launch": self.launch,
            "make_vars": dict(self.make_vars),
        }


@dataclass(frozen=True)
class MlperfSpec:
    benchmarks: tuple[str, ...]
    scenarios: tuple[str, ...]
    runs: int
    baseline: str
    min_duration_s: int = MLPERF_MIN_DURATION_S
    # None: no search; else the short runs' settings (search once per MIG profile)
    qps_search: QpsSearchSpec | None = None
    accuracy: bool = False  # an AccuracyOnly round per VM, benchmark and scenario
    compliance: tuple[str, ...] = ()  # TEST01, TEST04
    backend: str = "reference"  # MLPERF_BACKENDS
    harness: HarnessSpec | None = None  # backend nvidia

    def compliance_pairs(self) -> list[tuple[str, str]]:
        """(test, benchmark) for every benchmark each compliance test applies to."""
        from miglab.core.compliance import audit_config

        out = []
        for test in self.compliance:
            for b in self.benchmarks:
                try:
                    audit_config(test, b)
                except ValueError:
                    continue
                out.append((test, b))
        return out


@dataclass(frozen=True)
class ScheduleSpec:
    parallel: bool = True  # run independent scenarios at once on different GPUs
    run_setup_s: int = 180  # per MLPerf run: harness start, warm-up, log collection
    scenario_setup_s: int = 900  # per scenario: create, boot and configure its VMs


@dataclass(frozen=True)
class Scenario:
    id: str
    vgpus: tuple[tuple[MigProfile | TimeSlicedType, int], ...]
    vm: VmSpec
    max_gpus: int | None = None
    description: str = ""
    # vGPU name (MIG profile or time-sliced type) -> the key the file wrote it with (its field)
    vgpu_keys: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def vm_count(self) -> int:
        return sum(n for _, n in self.vgpus)

    def vm_requests(self, campaign: str) -> list[VmRequest]:
        out = []
        k = 0
        for vgpu, n in self.vgpus:
            for _ in range(n):
                k += 1
                out.append(
                    VmRequest(f"{campaign}-{self.id}-vm{k}", vgpu, self.vm.vcpus, self.vm.memory_gb)
                )
        return out

    def describe(self) -> str:
        return " + ".join(f"{n}x {v.name}" for v, n in self.vgpus)


@dataclass(frozen=True)
class Campaign:
    file: str
    version: int
    name: str
    gpu: GpuModel
    vm: VmSpec
    mlperf: MlperfSpec
    scenarios: dict[str, Scenario]
    schedule: ScheduleSpec = field(default_factory=ScheduleSpec)
    description: str = ""
    warnings: tuple[str, ...] = ()

    def mmio_gb(self, scenario: Scenario) -> int:
        return scenario.vm.mmio_gb or self.gpu.mmio_gb or 64


def load_campaign(
    path: str | Path, lab: Lab | None = None, catalog: Catalog | None = None
) -> Campaign:
    """Read and validate a campaign file; with ``lab``, also check every scenario fits it."""
    catalog = catalog or load_catalog()
    file = str(path)
    problems = Problems(file)
    data = yamlio.load_file(path, problems)
    problems.raise_if_any()
    return parse_campaign(data, file, catalog, lab, base_dir=Path(path).parent)


def parse_campaign(
    data, file: str, catalog: Catalog, lab: Lab | None = None, base_dir: Path | None = None
) -> Campaign:
    p = Problems(file)
    warnings: list[str] = []
    top = schema.mapping(
        data,
        "",
        p,
        required=["version", "name", "gpu", "mlperf", "scenarios"],
        optional=["description", "vm", "schedule", "gpu_capture"],
    )
    if top is None:
        p.raise_if_any()
    version = top.get("version")
    if "version" in top and (isinstance(version, bool) or version not in SUPPORTED_VERSIONS):
        p.add("version", f"unsupported version {version!r}; this miglab reads version 1")
        p.raise_if_any()  # nothing else can be trusted under an unknown version
    name = (
        schema.string(
            top.get("name"),
            "name",
            p,
            pattern=NAME_PATTERN,
            hint="lower-case letters, digits and '-', at most 40 characters (it prefixes VM names)",
        )
        if "name" in top
        else None
    )
    description = top.get("description", "")
    if not isinstance(description, str):
        p.add("description", "must be a string")
    gpu = _gpu(top, p, catalog, base_dir)

    vm_default = _vm(top.get("vm", {}), "vm", p, VmSpec()) if "vm" in top else VmSpec()
    if vm_default is None:
        vm_default = VmSpec()

    scenarios: dict[str, Scenario] = {}
    raw_scen = top.get("scenarios")
    if "scenarios" in top:
        if not isinstance(raw_scen, dict) or not raw_scen:
            p.add(
                "scenarios",
                f"must be a non-empty mapping of scenario ids, got {schema.type_name(raw_scen)}",
            )
        else:
            for sid, body in raw_scen.items():
                if sid in RESERVED_SCENARIO_IDS:
                    p.add(
                        f"scenarios.{sid}",
                        f"{sid!r} is reserved: the results tree keeps the searched target QPS in "
                        f"<campaign>/{sid}/; name the scenario differently",
                    )
                    continue
                s = _scenario(sid, body, p, gpu, vm_default, catalog)
                if s:
                    scenarios[s.id] = s

    mlperf = (
        _mlperf(top.get("mlperf"), p, raw_scen if isinstance(raw_scen, dict) else {})
        if "mlperf" in top
        else None
    )
    sched = _schedule(top.get("schedule"), p) if "schedule" in top else ScheduleSpec()
    _harness_problems(gpu if isinstance(gpu, GpuModel) else None, mlperf, scenarios, p)
    p.raise_if_any()

    if mlperf is not None and mlperf.harness is not None and mlperf.harness.source:
        mlperf = replace(mlperf, harness=_harness_source(mlperf.harness, Path(file).parent, p))
        p.raise_if_any()
    campaign = Campaign(
        file, version, name, gpu, vm_default, mlperf, scenarios, sched, description or ""
    )
    warnings.extend(_compliance_warnings(campaign))
    warnings.extend(_mmio_warnings(campaign))
    warnings.extend(_vgpu_type_warnings(campaign))
    if lab is not None:
        check_fits(campaign, lab)
        warnings.extend(version_notes(campaign, lab))
    return replace(campaign, warnings=tuple(warnings))


CAPTURE_PROBLEMS = 10  # a capture's problems shown in the campaign's: the first ones, then a count


def _gpu(top: dict, p: Problems, catalog: Catalog, base_dir: Path | None) -> GpuModel | None:
    if "gpu_capture" in top:
        # A GPU missing from the catalog, described by a real nvidia-smi mig -lgip/-lgipp capture.
        from miglab.core.importers import model_from_capture_file

        cap = top["gpu_capture"]
        if schema.string(cap, "gpu_capture", p) is None:
            return None
        cap_path = Path(cap) if Path(cap).is_absolute() else (base_dir or Path(".")) / cap
        wanted = top.get("gpu")
        if isinstance(wanted, str):
            try:
                catalog.get(wanted)
                p.add(
                    "gpu",
                    f"{wanted!r} is already in the catalog: drop gpu_capture, or name "
                    "the captured GPU differently",
                )
                return None
            except UnknownName:
                pass
        try:
            model = model_from_capture_file(cap_path, name=str(top.get("gpu") or cap_path.stem))
        except ValidationError as exc:
            for prob in exc.problems[:CAPTURE_PROBLEMS]:
                where = f"{prob.file}: {prob.field}" if prob.field else prob.file
                p.add("gpu_capture", f"{where}: {prob.reason}")
            if len(exc.problems) > CAPTURE_PROBLEMS:
                more = len(exc.problems) - CAPTURE_PROBLEMS
                p.add("gpu_capture", f"{cap_path}: ... and {more} more problems in the capture")
            return None
        catalog.add(model)
        return model
    raw = top.get("gpu")
    if raw is None:
        return None
    if schema.string(raw, "gpu", p) is None:
        return None
    try:
        return catalog.get(raw)
    except UnknownName as exc:
        p.add("gpu", str(exc))
        return None


def _vm(raw, path: str, p: Problems, base: VmSpec) -> VmSpec | None:
    if schema.mapping(raw, path, p, optional=["vcpus", "memory_gb", "mmio_gb"]) is None:
        return None
    vcpus = schema.integer(raw.get("vcpus", base.vcpus), f"{path}.vcpus", p, minimum=1, maximum=768)
    mem = schema.integer(
        raw.get("memory_gb", base.memory_gb), f"{path}.memory_gb", p, minimum=1, maximum=24576
    )
    mmio = raw.get("mmio_gb", base.mmio_gb)
    if mmio is not None:
        mmio = schema.integer(mmio, f"{path}.mmio_gb", p, minimum=1, maximum=16384)
        if mmio is not None and mmio & (mmio - 1):
            p.add(
                f"{path}.mmio_gb",
                f"{mmio} is not a power of two (ESXi sizes the 64-bit MMIO "
                "window in powers of two GB)",
            )
    if vcpus is None or mem is None:
        return None
    return VmSpec(vcpus, mem, mmio)


def _scenario(
    sid, body, p: Problems, gpu: GpuModel | None, vm_default: VmSpec, catalog: Catalog
) -> Scenario | None:
    path = f"scenarios.{sid}"
    if not isinstance(sid, str) or not re.fullmatch(SCENARIO_ID_PATTERN, sid):
        p.add(path, f"scenario id {sid!r} must be letters, digits, '_' or '-' (at most 32)")
        return None
    if (
        schema.mapping(
            body, path, p, required=["vgpus"], optional=["vm", "max_gpus", "description"]
        )
        is None
    ):
        return None
    vm = vm_default
    if "vm" in body:
        vm = _vm(body["vm"], f"{path}.vm", p, vm_default) or vm_default
    max_gpus = None
    if "max_gpus" in body:
        max_gpus = schema.integer(body["max_gpus"], f"{path}.max_gpus", p, minimum=1)
    raw = body.get("vgpus")
    if raw is None and "vgpus" in body:
        p.add(f"{path}.vgpus", "must be a mapping of profile: count, got nothing (null)")
        return None
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw:
        p.add(
            f"{path}.vgpus",
            f"must be a non-empty mapping of profile: count, got {schema.type_name(raw)}",
        )
        return None
    vgpus: list[tuple[MigProfile | TimeSlicedType, int]] = []
    seen: dict[str, str] = {}
    for prof, count in raw.items():
        fpath = f"{path}.vgpus.{prof}"
        n = schema.integer(count, fpath, p, minimum=1, maximum=4096)
        if gpu is None:
            continue
        try:
            v = gpu.find_vgpu(str(prof))
        except UnknownName as exc:
            other = _other_gpu(str(prof), gpu, catalog)
            p.add(
                fpath,
                f"{prof!r} is a vGPU of {other}, not of the campaign's GPU {gpu.name}"
                if other
                else str(exc),
            )
            continue
        if v.name in seen:
            p.add(fpath, f"same vGPU as {seen[v.name]!r}: {v.name} is listed twice")
            continue
        seen[v.name] = str(prof)
        if n:
            vgpus.append((v, n))
    if gpu is None or len(vgpus) != len(raw):
        return None
    kinds = {isinstance(v, MigProfile) for v, _ in vgpus}
    if len(kinds) > 1 and max_gpus == 1:
        p.add(f"{path}.vgpus", "mixes MIG-backed and time-sliced vGPUs, which cannot share a GPU")
    vgpus.sort(
        key=lambda x: (
            isinstance(x[0], TimeSlicedType),
            -getattr(x[0], "placement_size", 0),
            x[0].name,
        )
    )
    return Scenario(sid, tuple(vgpus), vm, max_gpus, str(body.get("description", "")), dict(seen))


def _other_gpu(name: str, gpu: GpuModel, catalog: Catalog) -> str | None:
    """The catalog GPU whose vGPU type (or board prefix) ``name`` names, when not ``gpu``."""
    if len(name) > schema.HINT_MAX_LEN:  # no vGPU type is that long (and the search is slow)
        return None
    lowered = name.lower()
    matches = []
    for model in catalog:
        if model is gpu or not model.board_prefix:
            continue
        if re.search(rf"(^|[_ -]){re.escape(model.board_prefix)}-", lowered):
            try:
                model.find_vgpu(name)
            except UnknownName:
                continue
            matches.append(model)
    if not matches:
        return None
    return max(matches, key=lambda m: len(m.board_prefix)).name


def _mlperf(raw, p: Problems, scenarios: dict) -> MlperfSpec | None:
    path = "mlperf"
    if (
        schema.mapping(
            raw,
            path,
            p,
            required=["benchmarks", "scenarios", "runs", "baseline"],
            optional=[
                "min_duration_s",
                "qps_search",
                "accuracy",
                "compliance",
                "backend",
                "harness",
            ],
        )
        is None
    ):
        return None
    benches = (
        schema.choice_list(raw.get("benchmarks"), f"{path}.benchmarks", p, MLPERF_BENCHMARKS)
        if "benchmarks" in raw
        else None
    )
    scens = (
        schema.choice_list(raw.get("scenarios"), f"{path}.scenarios", p, MLPERF_SCENARIOS)
        if "scenarios" in raw
        else None
    )
    runs = (
        schema.integer(raw.get("runs"), f"{path}.runs", p, minimum=1, maximum=100)
        if "runs" in raw
        else None
    )
    baseline = raw.get("baseline")
    if "baseline" in raw:
        if not isinstance(baseline, str):
            p.add(f"{path}.baseline", f"must be a scenario id, got {schema.type_name(baseline)}")
        elif baseline not in scenarios:
            p.add(
                f"{path}.baseline",
                f"scenario {baseline!r} is not defined under scenarios "
                f"(defined: {', '.join(map(str, scenarios)) or 'none'})",
            )
    dur = schema.integer(
        raw.get("min_duration_s", MLPERF_MIN_DURATION_S),
        f"{path}.min_duration_s",
        p,
        minimum=1,
        maximum=MAX_SECONDS,
    )
    search = (
        _qps_search(raw["qps_search"], f"{path}.qps_search", p) if "qps_search" in raw else None
    )
    accuracy = schema.boolean(raw.get("accuracy", False), f"{path}.accuracy", p)
    tests = _compliance(raw, path, p, benches, accuracy) if "compliance" in raw else ()
    backend, harness = _backend(raw, path, p, search, tests)
    if None in (benches, scens, runs, dur, accuracy, tests, backend) or not isinstance(
        baseline, str
    ):
        return None
    if search is False or harness is False:
        return None
    return MlperfSpec(
        tuple(benches),
        tuple(scens),
        runs,
        baseline,
        dur,
        search or None,
        accuracy,
        tuple(tests),
        backend,
        harness,
    )


def _backend(raw: dict, path: str, p: Problems, search, tests):
    """``mlperf.backend`` and ``mlperf.harness``: (backend, HarnessSpec | None | False); backend
    None when wrong. The nvidia backend needs a harness; its runs take their target QPS from the
    harness's configs and it does not run miglab's compliance rounds."""
    backend = raw.get("backend", "reference")
    if backend not in MLPERF_BACKENDS:
        p.add(
            f"{path}.backend",
            f"unknown backend {backend!r} (known: {', '.join(MLPERF_BACKENDS)})",
        )
        return None, None
    if backend != "nvidia":
        if "harness" in raw:
            p.add(f"{path}.harness", "is for backend nvidia (NVIDIA's harness)")
            return backend, False
        return backend, None
    if search:
        p.add(
            f"{path}.qps_search",
            "the nvidia backend takes its target QPS from the harness's configs (miglab writes "
            "them for each vGPU profile): remove qps_search",
        )
    if tests:
        p.add(
            f"{path}.compliance",
            "the nvidia backend's compliance tests are the harness's own (make "
            "run_audit_harness), which miglab does not drive yet: remove compliance",
        )
    if "harness" not in raw:
        p.add(f"{path}.harness", "backend nvidia needs a harness: {round: v1.1 or v4.1, dir: ...}")
        return backend, False
    return backend, _harness(raw["harness"], f"{path}.harness", p)


def _harness(raw, path: str, p: Problems) -> HarnessSpec | bool:
    if schema.mapping(raw, path, p, required=["round", "dir"], optional=HARNESS_KEYS) is None:
        return False
    ok = True
    rnd = raw.get("round")
    if rnd not in HARNESS_ROUNDS:
        p.add(f"{path}.round", f"unknown round {rnd!r} (known: {', '.join(HARNESS_ROUNDS)})")
        ok = False
    folder = schema.string(raw.get("dir"), f"{path}.dir", p)
    if folder and not folder.startswith("/"):
        p.add(f"{path}.dir", f"must be an absolute path in the guests, got {folder!r}")
        folder = None
    source = schema.string(raw["source"], f"{path}.source", p) if "source" in raw else ""
    prefix = raw.get("prefix", "")
    if not isinstance(prefix, str) or not re.fullmatch(r"[A-Za-z0-9_-]{0,32}", prefix):
        p.add(f"{path}.prefix", f"must be letters, digits, - or _ (at most 32), got {prefix!r}")
        ok = False
    launch = raw.get("launch", "docker")
    if launch not in HARNESS_LAUNCHES:
        p.add(f"{path}.launch", f"must be one of {', '.join(HARNESS_LAUNCHES)}, got {launch!r}")
        ok = False
    make_vars = raw.get("make_vars", {})
    pairs = []
    if not isinstance(make_vars, dict):
        p.add(
            f"{path}.make_vars", f"must be a mapping NAME: value, got {schema.type_name(make_vars)}"
        )
        ok = False
    else:
        for k, v in make_vars.items():
            if not isinstance(k, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                p.add(f"{path}.make_vars", f"{k!r} is not a make variable name")
                ok = False
            elif not isinstance(v, (str, int, float)) or isinstance(v, bool):
                p.add(
                    f"{path}.make_vars.{k}",
                    f"must be a string or number, got {schema.type_name(v)}",
                )
                ok = False
            else:
                pairs.append((k, str(v)))
    if not ok or folder is None or source is None:
        return False
    return HarnessSpec(rnd, folder, source or None, prefix, launch, tuple(pairs))


def _harness_source(h: HarnessSpec, base_dir: Path, p: Problems) -> HarnessSpec:
    """``mlperf.harness.source``: relative to the campaign's folder; a harness folder (its
    Makefile) on the controller, checked before anything is touched."""
    src = Path(h.source).expanduser()
    src = (base_dir / src) if not src.is_absolute() else src
    if not (src / "Makefile").is_file():
        p.add(
            "mlperf.harness.source",
            f"{src}: not a harness folder (no Makefile; closed/NVIDIA of "
            f"mlcommons/inference_results_{h.round})",
        )
    return replace(h, source=str(src.resolve()))


def _harness_problems(
    gpu: GpuModel | None, mlperf: MlperfSpec | None, scenarios: dict, p: Problems
) -> None:
    """A round's harness knows only some GPU architectures (v1.1 has no Hopper), and v4.1 cannot
    read a MIG device with media extensions: its ``NVIDIA_SMI_MIG_REGEX`` (``MIG (\\d+)g.(\\d+)gb
    Device ...``, code/common/systems/accelerator.py) does not match ``MIG 1g.10gb+me Device 0``
    and detection stops with an AttributeError (the stand-in reproduces it)."""
    if gpu is None or mlperf is None or mlperf.harness is None:
        return
    archs = HARNESS_ROUNDS[mlperf.harness.round]
    if gpu.architecture.lower() not in archs:
        newer = [r for r, a in HARNESS_ROUNDS.items() if gpu.architecture.lower() in a]
        p.add(
            "mlperf.harness.round",
            f"NVIDIA's {mlperf.harness.round} harness has no {gpu.architecture.title()} GPU "
            f"({gpu.name})" + (f": use round {newer[-1]}" if newer else ""),
        )
    if mlperf.harness.round == "v4.1":
        for sid, sc in scenarios.items():
            for vgpu, _ in sc.vgpus:
                if isinstance(vgpu, MigProfile) and "+" in vgpu.name:
                    p.add(
                        f"scenarios.{sid}.vgpus.{vgpu.name}",
                        "NVIDIA's v4.1 harness cannot detect a MIG device with media "
                        f"extensions ({vgpu.name}: its nvidia-smi -L parser stops on '+me'): "
                        "use the profile without them",
                    )


def _qps_search(raw, path: str, p: Problems) -> QpsSearchSpec | bool | None:
    """``mlperf.qps_search``: true (the default short runs), false, or a mapping of them; None
    for no search, False when the value is wrong (its problems recorded)."""
    if isinstance(raw, bool):
        return QpsSearchSpec() if raw else None
    if not isinstance(raw, dict):
        p.add(path, f"must be true, false or a mapping of {', '.join(QPS_SEARCH_KEYS)}, "
                    f"got {schema.type_name(raw)}")  # fmt: skip
        return False
    if schema.mapping(raw, path, p, optional=QPS_SEARCH_KEYS) is None:
        return False
    d = QpsSearchSpec()
    dur = schema.integer(
        raw.get("min_duration_ms", d.min_duration_ms),
        f"{path}.min_duration_ms",
        p,
        minimum=100,
        maximum=MLPERF_MIN_DURATION_S * 1000,
    )
    queries = schema.integer(
        raw.get("min_query_count", d.min_query_count),
        f"{path}.min_query_count",
        p,
        minimum=1,
        maximum=10_000_000,
    )
    tol = schema.number(
        raw.get("tolerance", d.tolerance), f"{path}.tolerance", p, minimum=0.001, maximum=0.5
    )
    trials = schema.integer(
        raw.get("max_trials", d.max_trials), f"{path}.max_trials", p, minimum=1, maximum=50
    )
    if None in (dur, queries, tol, trials) or any(k not in QPS_SEARCH_KEYS for k in raw):
        return False
    return QpsSearchSpec(dur, queries, tol, trials)


def _compliance(raw: dict, path: str, p: Problems, benches, accuracy) -> list[str] | None:
    """``mlperf.compliance``: TEST01 / TEST04, each applying to at least one benchmark of the
    campaign; TEST01 verifies against accuracy/run_1, so it needs ``mlperf.accuracy: true``."""
    from miglab.core.compliance import APPLIES, TESTS, audit_config

    tests = schema.choice_list(raw.get("compliance"), f"{path}.compliance", p, TESTS)
    if tests is None:
        return None
    ok = True
    for i, test in enumerate(tests):
        where = f"{path}.compliance[{i}]"
        if benches:
            applies = []
            for b in benches:
                try:
                    audit_config(test, b)
                    applies.append(b)
                except ValueError:
                    pass
            if not applies:
                p.add(
                    where,
                    f"{test} applies to none of mlperf.benchmarks ({', '.join(benches)}): "
                    f"MLPerf has it for {', '.join(APPLIES[test])} only",
                )
                ok = False
        if test == "TEST01" and accuracy is False:
            p.add(
                where,
                "TEST01 is verified against accuracy/run_1: set mlperf.accuracy: true (the "
                "AccuracyOnly runs need real weights and the dataset)",
            )
            ok = False
    return tests if ok else None


def _compliance_warnings(c: Campaign) -> list[str]:
    """A compliance test that applies to only some of the benchmarks: a note for the others."""
    if c.mlperf is None or not c.mlperf.compliance:
        return []
    pairs = set(c.mlperf.compliance_pairs())
    return [
        f"{c.file}: mlperf.compliance: {test} is not for {b} (MLPerf exempts it): "
        f"run for the other benchmarks only"
        for test in c.mlperf.compliance
        for b in c.mlperf.benchmarks
        if (test, b) not in pairs
    ]


def _schedule(raw, p: Problems) -> ScheduleSpec:
    path = "schedule"
    d = ScheduleSpec()
    if (
        schema.mapping(raw, path, p, optional=["parallel", "run_setup_s", "scenario_setup_s"])
        is None
    ):
        return d
    par = schema.boolean(raw.get("parallel", d.parallel), f"{path}.parallel", p)
    rs = schema.integer(
        raw.get("run_setup_s", d.run_setup_s),
        f"{path}.run_setup_s",
        p,
        minimum=0,
        maximum=MAX_SECONDS,
    )
    ss = schema.integer(
        raw.get("scenario_setup_s", d.scenario_setup_s),
        f"{path}.scenario_setup_s",
        p,
        minimum=0,
        maximum=MAX_SECONDS,
    )
    if None in (par, rs, ss):
        return d
    return ScheduleSpec(par, rs, ss)


def _mmio_warnings(c: Campaign) -> list[str]:
    out = []
    need = c.gpu.mmio_gb
    if not need:
        return out
    if c.vm.mmio_gb and c.vm.mmio_gb < need:
        out.append(
            f"{c.file}: vm.mmio_gb: {c.vm.mmio_gb} GB is below the {need} GB NVIDIA "
            f"documents for a VM with a vGPU on {c.gpu.name}"
        )
    for s in c.scenarios.values():
        if s.vm.mmio_gb and s.vm.mmio_gb < need and s.vm.mmio_gb != c.vm.mmio_gb:
            out.append(
                f"{c.file}: scenarios.{s.id}.vm.mmio_gb: {s.vm.mmio_gb} GB is below the "
                f"{need} GB NVIDIA documents for {c.gpu.name}"
            )
    return out


def _vgpu_type_warnings(c: Campaign) -> list[str]:
    out = []
    for s in c.scenarios.values():
        for v, _ in s.vgpus:
            if c.gpu.vgpu_type(v) is None:
                out.append(
                    f"{c.file}: scenarios.{s.id}.vgpus.{v.name}: no vSphere vGPU type is "
                    f"known for {v.name} on {c.gpu.name}; it can be planned, not built"
                )
    return out


def check_fits(campaign: Campaign, lab: Lab) -> dict:
    """Pack every scenario on the lab on its own; raises ValidationError naming each misfit."""
    p = Problems(campaign.file)
    packings = {}
    lab_models = {g.name for h in lab.hosts for g in h.gpus}
    if campaign.gpu.name not in lab_models:
        p.add(
            "gpu",
            f"the lab ({lab.source}) has no {campaign.gpu.name} "
            f"(it has: {', '.join(sorted(lab_models))})",
        )
        p.raise_if_any()
    for fld, reason in vgpu_version_gate(campaign, lab)[0]:
        p.add(fld, reason)
    slots = {(h.name, i) for h in lab.hosts for i, g in enumerate(h.gpus) if g is campaign.gpu}
    for s in campaign.scenarios.values():
        try:
            packings[s.id] = pack(
                s.vm_requests(campaign.name), lab, allowed_gpus=slots, max_gpus=s.max_gpus
            )
        except PackError as exc:
            p.add(f"scenarios.{s.id}.vgpus", f"does not fit: {exc}")
    p.raise_if_any()
    return packings


# --- the vGPU version gate ------------------------------------------------------------------------
def vgpu_version_gate(campaign: Campaign, lab: Lab) -> tuple[list[tuple[str, str]], list[str]]:
    """Every vGPU of the campaign against the releases of every host that carries its GPU (the
    planner may put a scenario's VMs on any of them): (problems as (field, reason), notes).

    A problem: a host's vSphere release (``miglab_host_esxi_version``) or NVIDIA vGPU software
    release (read from ``esxi_vgpu_driver_version``) is older than the catalog's minimum for the
    type (:meth:`GpuModel.availability`). A note: a minimum the catalog knows that could not be
    checked on a host (its release not known, or only a minor release the driver branch cannot
    tell would decide). Types without a known minimum are not judged."""
    problems: list[tuple[str, str]] = []
    unchecked: dict[tuple[str, str, str], list[str]] = {}
    gpu = campaign.gpu
    hosts = [h for h in lab.hosts if any(g is gpu for g in h.gpus)]
    for s in campaign.scenarios.values():
        for v, _ in s.vgpus:
            avail = gpu.availability(v)
            if not avail.known:
                continue
            type_name = gpu.vgpu_type(v) or v.name
            fld = f"scenarios.{s.id}.vgpus.{s.vgpu_keys.get(v.name, v.name)}"
            for h in hosts:
                for need, problem, why in _host_gate(type_name, avail, h):
                    if problem:
                        problems.append((fld, f"{need}; {problem}"))
                    else:
                        unchecked.setdefault((fld, need, why), []).append(h.name)
    notes = [
        f"{campaign.file}: {fld}: {need}: not checked on host {', '.join(names)}: {why}"
        for (fld, need, why), names in unchecked.items()
    ]
    return problems, notes


def version_notes(campaign: Campaign, lab: Lab) -> list[str]:
    """The gate's notes (minimums it could not check), for the campaign's warnings."""
    return vgpu_version_gate(campaign, lab)[1]


def _host_gate(type_name: str, avail: Availability, host: Host):
    """(what the type needs, the problem or None, why it was not checked or None) for each
    minimum of ``avail`` on ``host``."""
    if avail.vsphere_min is not None:
        need = f"vGPU type {type_name} needs vSphere {format_vsphere(avail.vsphere_min)} or later"
        try:
            ok = avail.vsphere_ok(host.esxi_version)
        except ValueError:  # not a release (validated in the inventory; a Host built by hand)
            ok = None
        if ok is False:
            yield need, f"host {host.name} runs {host.esxi_version} ({ESXI_VAR})", None
        elif ok is None:
            yield need, None, f"its ESXi release is not known (set {ESXI_VAR})"
    if avail.vgpu_software_min is not None:
        wanted = format_vgpu_release(avail.vgpu_software_min).removesuffix(".x")
        need = f"vGPU type {type_name} needs NVIDIA vGPU software {wanted} or later"
        driver = host.vgpu_driver_version
        release = vgpu_release_of_driver(driver)
        ok = avail.vgpu_software_ok(driver)
        if ok is False:
            yield need, f"host {host.name}'s driver {driver} is vGPU {release} ({DRIVER_VAR})", None
        elif ok is None:
            if driver is None:
                why = f"its host driver version is not known ({DRIVER_VAR})"
            elif release is None:
                why = f"the vGPU software release of host driver {driver} is not known"
            else:
                why = f"host driver {driver} is vGPU {release}.x; its minor release decides"
            yield need, None, why
