"""The ``nvidia`` backend: NVIDIA's closed-division MLPerf Inference harness in a vGPU VM.

The harness (``closed/NVIDIA`` of github.com/mlcommons/inference_results_v<round>, or a
submitter's copy such as Dell's ``closed/Dell``) is driven with its own make targets. With
``launch="docker"`` (the default) miglab runs on the guest and each step runs in the harness's
container, started the harness's own way::

    make build_docker NO_BUILD=1 && make docker_add_user                   # v1.1: the image
    make launch_docker MIG_CONF=OFF DOCKER_COMMAND='make build'
    make launch_docker MIG_CONF=OFF DOCKER_COMMAND='python3 scripts/get_system_id.py'
    make launch_docker MIG_CONF=OFF DOCKER_COMMAND='make generate_engines RUN_ARGS="..."'
    make launch_docker MIG_CONF=OFF \
        DOCKER_COMMAND='make run_harness RUN_ARGS="... --test_mode=PerformanceOnly"'

(``MIG_CONF=OFF``: in a VM the vGPU manager on the host owns MIG; the harness's
``configure_mig`` must not touch it.) With ``launch="inside"`` miglab already runs in that
container and calls ``make`` directly.

Inside a VM with a MIG-backed vGPU nvidia-smi names the GPU by its vGPU type
(``GRID A100D-2-20C``), which the harness does not know, so miglab generates, from the catalog's
description of the vGPU, the round's system entry and config classes
(:mod:`~miglab.mlperf.guest.backends.nvidia.v1_1`, ``...nvidia.v4_1``),
runs the harness's own detection to check that its entry is the one chosen (a bare-metal class of
the same board can match the vGPU's PCI id first), writes the configs for the id detected, and
after each run copies the logs from ``build/logs/<timestamp>/<system id>/<benchmark>/<scenario>/``
into miglab's results tree with ``miglab_run.json`` (backend ``nvidia``, the round, the harness's
command, LoadGen's verdict). A VALID run exits 0 like the reference backend's.

Scaling rule (documented, a starting point to tune, not a measured value): the full-GPU config of
the same board in the round (v1.1: ``A100_PCIe_80GBx1``) is scaled by ``f = profile compute
slices / GPU compute slices`` (1/7 for 1g on an A100) times the number of vGPUs in the VM:
expected QPS (``offline_expected_qps`` / ``server_target_qps``) = round(base x f x count); batch
size = the largest power of two <= base batch x f (at least 1); BERT's TensorRT
``workspace_size`` = base x f rounded up to whole GiB, at least 2 GiB. For 1g.10gb this gives
ResNet50 Offline 256 / 5286 QPS, close to NVIDIA's own ``A100_SXM_80GB_MIG_1x1g10gb`` (256 / 5100).
"""

from __future__ import annotations

import importlib
import os
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from miglab.mlperf.guest.backends.base import (
    MODES,
    SCENARIOS,
    Backend,
    BackendError,
    progress,
)
from miglab.mlperf.guest.backends.nvidia.common import (
    HarnessConfig,
    HarnessRound,
    VmSystem,
    collect_logs,
    find_log_dirs,
)
from miglab.mlperf.guest.backends.nvidia.v1_1 import BASE_CONFIGS, V1_1

__all__ = [
    "BASE_CONFIGS",
    "LAUNCHES",
    "ROUNDS",
    "HarnessConfig",
    "HarnessRound",
    "NvidiaBackend",
    "NvidiaSettings",
    "VmSystem",
    "collect_logs",
    "find_harness_logs",
    "find_log_dirs",
    "get_round",
    "install",
    "render_config",
    "render_system_entry",
    "run_args",
    "scale_config",
    "vm_system",
]

# round -> "module:attribute" of its HarnessRound (imported on first use)
ROUNDS = {"v1.1": "v1_1:V1_1", "v4.1": "v4_1:V4_1"}
LAUNCHES = ("docker", "inside")


def get_round(name: str) -> HarnessRound:
    """The harness round called ``name``; BackendError when miglab has none."""
    spec = ROUNDS.get(name)
    if spec is None:
        raise BackendError(f"unknown harness round {name!r} (known: {', '.join(ROUNDS)})")
    module, attr = spec.split(":")
    mod = importlib.import_module(f"miglab.mlperf.guest.backends.nvidia.{module}")
    return getattr(mod, attr)


# --- v1.1 helpers under their earlier names ------------------------------------------------------
def vm_system(gpu, profile, count=1, prefix="", nvidia_smi_name=None) -> VmSystem:
    return V1_1.vm_system(gpu, profile, count, prefix, nvidia_smi_name)


def scale_config(system: VmSystem, benchmark: str, scenario: str) -> dict:
    return V1_1.scale_config(system, benchmark, scenario)


def render_system_entry(system: VmSystem) -> str:
    return V1_1.render_system_entry(system)


def render_config(system: VmSystem, benchmark: str, scenario: str) -> str:
    return V1_1.render_config(system, benchmark, scenario)


def install(harness_dir, system: VmSystem, benchmarks, scenarios) -> list[Path]:
    return V1_1.install(harness_dir, system, benchmarks, scenarios)


def find_harness_logs(harness_dir, system_id: str, benchmark: str, scenario: str) -> list[Path]:
    return V1_1.find_logs(harness_dir, system_id, benchmark, scenario)


def run_args(benchmark: str, scenario: str, mode: str | None = None, extra: str = "") -> str:
    return V1_1.run_args(benchmark, scenario, mode, extra)


# --- the backend ---------------------------------------------------------------------------------
@dataclass
class NvidiaSettings:
    """What the nvidia backend needs. ``harness_dir``: the folder holding ``Makefile``,
    ``code/`` and ``configs/`` (closed/NVIDIA or closed/Dell) on the guest (``launch`` docker)
    or in the container (``launch`` inside)."""

    harness_dir: str = "."
    round: str = "v1.1"  # the harness's round (ROUNDS)
    launch: str = "docker"  # docker: each step in the harness's container; inside: make here
    gpu: str = "A100-PCIE-80GB"
    profile: str = "7g.80gb"  # MIG profile or vGPU type of the VM's vGPU(s)
    count: int = 1  # vGPUs of that profile in the VM
    prefix: str = ""  # system name prefix (e.g. R750xa)
    nvidia_smi_name: str | None = None  # what nvidia-smi -L prints, when not GRID/NVIDIA <type>
    benchmarks: tuple[str, ...] = ("resnet50",)
    scenarios: tuple[str, ...] = ("Offline",)
    # prepare's steps: docker (the round's image targets), build, detect, generate_engines
    steps: tuple[str, ...] = ("docker", "build", "detect", "generate_engines")
    make: str = "make"
    make_vars: tuple[str, ...] = ()  # NAME=value for every make call (MLPERF_SCRATCH_PATH=...)
    extra_run_args: str = ""  # appended to RUN_ARGS (e.g. --config_ver=...)
    min_duration_ms: int | None = None  # RUN_ARGS --min_duration
    min_query_count: int | None = None  # RUN_ARGS --min_query_count
    target_qps: float | None = None  # RUN_ARGS --offline_expected_qps / --server_target_qps
    timeout_s: float | None = None
    overwrite: bool = False
    meta: dict = field(default_factory=dict)


class NvidiaBackend(Backend):
    """NVIDIA's harness driven by make (see the package docstring)."""

    name = "nvidia"
    barrier: dict | None = None  # the start barrier's record, set by the runner for each run

    def __init__(self, runner: Callable | None = None):
        self.settings: NvidiaSettings | None = None
        self.round: HarnessRound | None = None
        self.system: VmSystem | None = None
        self.system_id: str | None = None  # as the harness detected it
        self._run = runner or subprocess.run
        self.commands: list[list[str]] = []
        self.device: dict | None = None  # the GPU the harness runs on (miglab_run.json's device)
        self.compliance = None

    # --- make ------------------------------------------------------------------------------
    def _make_vars(self) -> list[str]:
        """The round's own variables (unless set), then the settings'."""
        s = self.settings
        given = {v.split("=", 1)[0] for v in s.make_vars}
        return [v for v in self.round.make_vars() if v.split("=", 1)[0] not in given] + list(
            s.make_vars
        )

    def _command(self, target: str, args: str | None = None) -> list[str]:
        s = self.settings
        run_args = [f"RUN_ARGS={args}"] if args is not None else []
        if s.launch == "inside":
            return [*shlex.split(s.make), target, *self._make_vars(), *run_args]
        return self._launch([*shlex.split(s.make), target, *run_args])

    def _launch(self, inner: list[str]) -> list[str]:
        """``make launch_docker`` running ``inner`` in the harness's container."""
        s = self.settings
        return [
            *shlex.split(s.make),
            "launch_docker",
            "MIG_CONF=OFF",
            *self._make_vars(),
            f"DOCKER_COMMAND={shlex.join(inner)}",
        ]

    def _call(self, cmd: list[str], capture: bool = False) -> str:
        s = self.settings
        self.commands.append(cmd)
        progress(" ".join(shlex.quote(c) for c in cmd))
        # make's HOST_VOL defaults to $PWD (the folder launch_docker mounts at /work): the
        # environment's, which a changed cwd alone does not set
        env = {**os.environ, "PWD": str(Path(s.harness_dir).resolve())}
        try:
            res = self._run(
                cmd,
                cwd=s.harness_dir,
                env=env,
                check=False,
                timeout=s.timeout_s,
                **({"capture_output": True, "text": True} if capture else {}),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(f"{' '.join(cmd)}: {exc}") from exc
        if res.returncode != 0:
            tail = ""
            if capture:
                lines = [ln for ln in (res.stderr or res.stdout or "").splitlines() if ln.strip()]
                tail = f": {lines[-1].strip()}" if lines else ""
            raise BackendError(f"{' '.join(cmd)} failed (exit {res.returncode}){tail}")
        return (res.stdout or "") if capture else ""

    def _make(self, target: str, args: str | None = None) -> None:
        self._call(self._command(target, args))

    # --- steps -----------------------------------------------------------------------------
    def detect(self) -> str:
        """The harness's own detection, in its container: the system id it prints (last line).
        Raises when it is not one of miglab's entry's ids: another class matched first."""
        s, r, system = self.settings, self.round, self.system
        inner = list(r.detect_command)
        cmd = inner if s.launch == "inside" else self._launch(inner)
        out = self._call(cmd, capture=True)
        lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
        got = lines[-1] if lines else ""
        if got not in r.expected_ids(system):
            raise BackendError(
                f"the {r.name} harness detects this VM as {got or 'nothing'!r}, not as miglab's "
                f"vGPU system {system.system_id!r}: another system entry matched first (the "
                f"harness takes the first match; a bare-metal entry of the same board matches the "
                f"vGPU's PCI id), or nvidia-smi does not show {' / '.join(system.aliases)}"
            )
        progress(f"the harness detects {got} (miglab's entry for {system.vgpu_type})")
        return got

    def prepare(self, settings: NvidiaSettings) -> None:
        s = settings
        if s.launch not in LAUNCHES:
            raise BackendError(f"unknown launch {s.launch!r} (use {', '.join(LAUNCHES)})")
        if not Path(s.harness_dir).is_dir():
            raise BackendError(f"{s.harness_dir}: no such harness folder")
        for sc in s.scenarios:
            if sc not in SCENARIOS:
                raise BackendError(f"unsupported scenario {sc!r} (use {', '.join(SCENARIOS)})")
        self.settings = s
        self.round = r = get_round(s.round)
        for b in s.benchmarks:
            r.harness_benchmark(b)
        self.system = r.vm_system(s.gpu, s.profile, s.count, s.prefix, s.nvidia_smi_name)
        from miglab.mlperf.guest.device import describe

        self.device = describe("cuda")
        changed = r.install_system(s.harness_dir, self.system)
        progress(
            f"{r.name} system {self.system.system_id} ({', '.join(self.system.aliases)}): "
            f"{len(changed)} harness file(s) written"
        )
        for step in s.steps:
            if step == "docker":
                if s.launch == "docker":
                    for target, *extra in r.docker_steps:
                        self._call([*shlex.split(s.make), target, *extra, *self._make_vars()])
            elif step == "build":
                self._make("build")
            elif step == "detect":
                self.system_id = self.detect()
            elif step == "generate_engines":
                self._install_configs()
                for b in s.benchmarks:
                    for sc in s.scenarios:
                        self._make("generate_engines", self._run_args(b, sc))
            else:
                raise BackendError(f"unknown prepare step {step!r}")
        self._install_configs()

    def _install_configs(self) -> None:
        s, r = self.settings, self.round
        changed = r.install_configs(
            s.harness_dir, self.system, s.benchmarks, s.scenarios, self.system_id
        )
        if changed:
            sid = self.system_id or self.system.system_id
            progress(f"configs for {sid}: {len(changed)} file(s)")

    def _run_args(self, benchmark: str, scenario: str, mode: str | None = None) -> str:
        s = self.settings
        extra = [s.extra_run_args] if s.extra_run_args else []
        if mode is not None:
            if s.min_duration_ms:
                extra.append(f"--min_duration={int(s.min_duration_ms)}")
            if s.min_query_count:
                extra.append(f"--min_query_count={int(s.min_query_count)}")
            if s.target_qps:
                extra.append(self.round.target_qps_arg(scenario, s.target_qps))
        return self.round.run_args(benchmark, scenario, mode, " ".join(extra))

    def run(
        self, benchmark: str, scenario: str, mode: str, out_dir: str | Path, run_index: int
    ) -> Path:
        from miglab.mlperf.guest.clock import now_iso  # stdlib only: a harness VM has no numpy

        s, r, system = self.settings, self.round, self.system
        if s is None or system is None:
            raise BackendError("prepare() was not called")
        if mode not in MODES:
            raise BackendError(f"unsupported mode {mode!r} (use {', '.join(MODES)})")
        if self.compliance:
            raise BackendError(
                f"compliance test {self.compliance} with the nvidia backend: the harness runs "
                "them itself (make run_audit_harness), which miglab does not drive yet"
            )
        sid = self.system_id or system.system_id
        before = set(r.find_logs(s.harness_dir, sid, benchmark, scenario))
        started = now_iso()
        t0 = time.time()
        self._make("run_harness", self._run_args(benchmark, scenario, mode))
        finished = now_iso()
        new = [d for d in r.find_logs(s.harness_dir, sid, benchmark, scenario) if d not in before]
        if not new:
            raise BackendError(
                f"make run_harness wrote no logs under {Path(s.harness_dir) / 'build' / 'logs'}"
                f"/<timestamp>/{sid}/ for {benchmark} {scenario}"
            )
        meta = {
            "profile": system.profile,
            "vgpu_type": system.vgpu_type,
            "started_at": started,
            "finished_at": finished,
            "wall_s": round(time.time() - t0, 3),
            "device": self.device,
            "harness": {
                "round": r.name,
                "dir": os.path.abspath(s.harness_dir),
                "system_id": sid,
                "launch": s.launch,
                "command": self.commands[-1],
                "source": r.source,
            },
            **(s.meta or {}),
        }
        if self.barrier:
            meta["barrier"] = self.barrier
        if self.clock:
            meta["clock"] = self.clock
        return collect_logs(
            new[0], out_dir, benchmark, scenario, run_index, mode, meta, overwrite=s.overwrite
        )
