"""The ``mlcflow`` backend: MLCommons' automation (``mlcr run-mlperf,inference,...``) in a guest.

MLCommons' own way of running MLPerf Inference is the ``mlcflow`` package (PyPI; its ``mlc`` and
``mlcr`` commands) with the scripts of github.com/mlcommons/mlperf-automations. miglab drives it
as a third backend, with no network, from a local checkout of those scripts::

    pip install mlcflow                                  # into the guest's own venv, not miglab's
    MLC_REPOS=$HOME/MLC/repos mlc add repo /opt/mlperf-automations   # registers the checkout
    mlcr run-mlperf,inference,_performance-only --model=resnet50 --implementation=reference \\
        --framework=onnxruntime --device=cpu --scenario=Offline --category=datacenter \\
        --division=open --execution_mode=valid --hw_name=miglab --quiet \\
        --results_dir=<work>/results/<run> --rerun  <pre-staged inputs>

``mlc add repo PATH`` registers an existing folder (mlcflow 1.3.8, ``mlc/repo_action.py``): it
appends the path to ``$MLC_REPOS/repos.json`` (a JSON list of folders, default
``~/MLC/repos``), which :meth:`MlcflowBackend.prepare` reads. Were no script repo registered,
``mlcr`` would clone ``mlcommons@mlperf-automations`` from GitHub on its own
(``mlc/script_action.py``), so prepare refuses first.

Offline, each download step of the dependency tree has to be pre-staged; the flags that do it
(:func:`prestaged_args`, measured in ``docs/research/issue18-mlcflow.md``) are passed in
:attr:`MlcflowSettings.adr` / :attr:`~MlcflowSettings.inputs` / :attr:`~MlcflowSettings.env`
(``--adr.<dependency name>.<key>=``, ``--<input>=``, ``--env.<NAME>=``) and pip needs a local
wheelhouse (``PIP_FIND_LINKS`` in :attr:`~MlcflowSettings.process_env`).

Where the logs land (mlperf-automations ``script/generate-mlperf-inference-user-conf/
customize.py``)::

    <results_dir>/<test|fast|valid>_results/<hw_name>-<implementation>-<device>-<framework>-
        v<framework version>-<run config>/<model>/<scenario, lower case>/performance/run_1/
                                                                      .../accuracy/

Performance is always ``run_1`` and an existing run is skipped ("Run files exist, skipping
run..."), so each miglab run gets a fresh ``--results_dir`` (and ``--rerun``); its LoadGen logs are
then copied into miglab's tree with ``miglab_run.json`` (backend ``mlcflow``, the command, the
mlperf-automations commit) by the nvidia backend's ``collect_logs``.

``mlcr`` resolves its whole dependency tree before LoadGen starts (about 10 s with everything
cached), so :meth:`MlcflowBackend.prepare` makes one short test run per benchmark and scenario
(``_find-performance``, ``--execution_mode=test``) to fill MLC's cache; the start barrier still
releases mlcr, not LoadGen, and the start offset is that resolution time.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from miglab.mlperf.guest.backends.base import (
    MODES,
    SCENARIOS,
    Backend,
    BackendError,
    benchmark_info,
    progress,
)

__all__ = [
    "EXECUTION_MODES",
    "MLCR_MODELS",
    "MODE_VARIATIONS",
    "MlcflowBackend",
    "MlcflowSettings",
    "find_mlcr_logs",
    "mlcflow_version",
    "mlcr_command",
    "mlcr_failure",
    "prestaged_args",
    "registered_repos",
    "repo_commit",
]

SOURCE_REPO = "github.com/mlcommons/mlperf-automations"
APP_SCRIPT = "script/run-mlperf-inference-app"  # the script behind run-mlperf,inference
MODE_VARIATIONS = {"PerformanceOnly": "_performance-only", "AccuracyOnly": "_accuracy-only"}
MODE_FOLDERS = {"PerformanceOnly": ("performance", "run_1"), "AccuracyOnly": ("accuracy",)}
EXECUTION_MODES = ("test", "fast", "valid")  # -> <mode>_results/
DEVICES = ("cpu", "cuda", "rocm")
# miglab benchmark -> mlcr --model (also the model folder of the results tree)
MLCR_MODELS = {"resnet50": "resnet50", "bert-99": "bert-99", "bert-99.9": "bert-99.9"}
# inputs miglab sets itself: not in MlcflowSettings.inputs
OWN_INPUTS = frozenset(
    {
        "model",
        "implementation",
        "framework",
        "device",
        "scenario",
        "category",
        "division",
        "execution_mode",
        "hw_name",
        "results_dir",
        "rerun",
        "quiet",
        "docker",
        "mode",
    }
)


@dataclass
class MlcflowSettings:
    """What the mlcflow backend needs. ``repo`` is the local checkout of mlperf-automations,
    registered in ``mlc_repos`` (``$MLC_REPOS``, default ``~/MLC/repos``) with ``mlc add repo``."""

    repo: str = ""
    mlcr: str = "mlcr"  # the command (a name on PATH or a path, e.g. /opt/mlc/bin/mlcr)
    mlc_repos: str | None = None
    implementation: str = "reference"  # reference, nvidia, intel, ... (mlcr --implementation)
    framework: str = "onnxruntime"  # onnxruntime, pytorch, tensorrt, ... (mlcr --framework)
    device: str = "cpu"  # cpu, cuda, rocm (mlcr --device)
    category: str = "datacenter"
    division: str = "open"
    execution_mode: str = "valid"  # test, fast, valid
    hw_name: str = "miglab"  # the first part of mlcr's SUT folder name
    variations: tuple[str, ...] = ()  # more tags for the app, e.g. ("_r6.0",)
    adr: dict = field(default_factory=dict)  # "inference-src.env.MLC_GIT_URL" -> "/opt/inference"
    inputs: dict = field(default_factory=dict)  # "imagenet_path" -> "/data/imagenet"
    env: dict = field(default_factory=dict)  # "MLC_..." -> value (--env.MLC_...=value)
    extra_args: tuple[str, ...] = ()  # appended to every mlcr command as they are
    process_env: dict = field(default_factory=dict)  # mlcr's environment (PIP_FIND_LINKS, ...)
    work_dir: str | None = None  # mlcr's cwd and results (default <tmp>/miglab-mlcflow)
    benchmarks: tuple[str, ...] = ("resnet50",)  # what prepare warms up
    scenarios: tuple[str, ...] = ("Offline",)
    warmup: bool = True
    min_duration_ms: int | None = None
    min_query_count: int | None = None
    max_query_count: int | None = None
    target_qps: float | None = None
    timeout_s: float | None = None
    weights: str = "real"  # what miglab_run.json says was measured ("random" for stand-ins)
    inputs_kind: str = "real"
    overwrite: bool = False
    meta: dict = field(default_factory=dict)


def prestaged_args(
    *,
    inference_src: str | None = None,
    loadgen_src: str | None = None,
    compiler: str | None = "gcc",
    model_file: str | None = None,
    model_checksum: bool = True,
    imagenet_path: str | None = None,
    results_repo: str | None = None,
) -> tuple[dict, dict]:
    """``(adr, inputs)`` for :class:`MlcflowSettings` that replace the download steps measured
    offline (docs/research/issue18-mlcflow.md): a local git repo (folder or file:// URL) for
    mlcommons/inference (run and LoadGen build) and for the NVIDIA code's results repo, the
    compiler picked by tag (else ``get,compiler`` may choose to download LLVM), a local model
    file for the ``model-downloader`` (its md5 is still checked unless ``model_checksum`` is
    False, for a stand-in) and the ImageNet validation folder."""
    adr: dict = {}
    inputs: dict = {}
    if inference_src:
        adr["inference-src.env.MLC_GIT_URL"] = inference_src
    if loadgen_src or inference_src:
        adr["inference-src-loadgen.env.MLC_GIT_URL"] = loadgen_src or inference_src
    if compiler:
        adr["compiler.tags"] = compiler
    if model_file:
        adr["model-downloader.env.MLC_DOWNLOAD_LOCAL_FILE_PATH"] = model_file
        if not model_checksum:
            adr["model-downloader.env.MLC_DOWNLOAD_CHECKSUM"] = ""
    if results_repo:
        adr["inference-results-repo.env.MLC_GIT_URL"] = results_repo
    if imagenet_path:
        inputs["imagenet_path"] = imagenet_path
    return adr, inputs


def _opt(name: str, value) -> str:
    return f"--{name}={value}"


def mlcr_command(
    s: MlcflowSettings,
    benchmark: str,
    scenario: str,
    mode: str,
    results_dir: str | Path,
    *,
    warmup: bool = False,
) -> list[str]:
    """The ``mlcr run-mlperf,inference,...`` command for one run (``warmup``: a short test run
    in performance mode, ``_find-performance``)."""
    name = benchmark_info(benchmark).name
    if name not in MLCR_MODELS:
        raise BackendError(f"{benchmark}: the mlcflow backend supports {', '.join(MLCR_MODELS)}")
    if scenario not in SCENARIOS:
        raise BackendError(f"unsupported MLPerf scenario {scenario!r} (use {', '.join(SCENARIOS)})")
    if mode not in MODES:
        raise BackendError(f"unsupported mode {mode!r} (use {', '.join(MODES)})")
    own = sorted(OWN_INPUTS & {k.replace("-", "_") for k in s.inputs})
    if own:
        raise BackendError(f"mlcflow inputs set by miglab itself: {', '.join(own)}")
    tags = ["run-mlperf", "inference", "_find-performance" if warmup else MODE_VARIATIONS[mode]]
    tags += [v if v.startswith("_") else f"_{v}" for v in s.variations]
    cmd = [
        *shlex.split(s.mlcr),
        ",".join(tags),
        _opt("model", MLCR_MODELS[name]),
        _opt("implementation", s.implementation),
        _opt("framework", s.framework),
        _opt("device", s.device),
        _opt("scenario", scenario),
        _opt("category", s.category),
        _opt("division", s.division),
        _opt("execution_mode", "test" if warmup else s.execution_mode),
        _opt("hw_name", s.hw_name),
        _opt("results_dir", results_dir),
        "--rerun",
        "--quiet",
    ]
    if not warmup:
        for key, value in (
            ("min_duration", s.min_duration_ms),
            ("min_query_count", s.min_query_count),
            ("max_query_count", s.max_query_count),
            ("target_qps", s.target_qps),
        ):
            if value is not None:
                cmd.append(_opt(key, f"{value:g}" if isinstance(value, float) else value))
    cmd += [_opt(k, v) for k, v in sorted(s.inputs.items())]
    cmd += [_opt(f"adr.{k}", v) for k, v in sorted(s.adr.items())]
    cmd += [_opt(f"env.{k}", v) for k, v in sorted(s.env.items())]
    cmd += list(s.extra_args)
    return cmd


def find_mlcr_logs(
    results_dir: str | Path,
    benchmark: str,
    scenario: str,
    mode: str,
    execution_mode: str | None = None,
) -> list[Path]:
    """The folders under ``results_dir`` where mlcr's LoadGen logs for one benchmark, scenario
    and mode are (``<x>_results/<SUT>/<model>/<scenario lower>/performance/run_1`` or
    ``.../accuracy``), holding ``mlperf_log_detail.txt``, newest first."""
    from miglab.formats.loadgen import DETAIL_LOG

    model = MLCR_MODELS.get(benchmark_info(benchmark).name, benchmark)
    if mode not in MODE_FOLDERS:
        raise BackendError(f"unsupported mode {mode!r} (use {', '.join(MODES)})")
    root = Path(results_dir)
    top = f"{execution_mode}_results" if execution_mode else "*_results"
    pattern = "/".join((top, "*", model, scenario.lower(), *MODE_FOLDERS[mode], DETAIL_LOG))
    found = [p.parent for p in root.glob(pattern) if p.is_file() and not p.is_symlink()]
    return sorted(found, key=lambda d: (d / DETAIL_LOG).stat().st_mtime, reverse=True)


def default_mlc_repos() -> Path:
    """``$MLC_REPOS``, else ``~/MLC/repos`` (mlcflow's ``Action.__init__``)."""
    env = os.environ.get("MLC_REPOS", "").strip()
    return Path(env) if env else Path.home() / "MLC" / "repos"


def registered_repos(mlc_repos: str | Path) -> list[Path]:
    """The folders ``mlc_repos/repos.json`` registers; BackendError when it cannot be read."""
    path = Path(mlc_repos) / "repos.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackendError(
            f"{path}: no such file (no MLC repos there: run 'mlc add repo <checkout>' with "
            "MLC_REPOS set)"
        ) from None
    except (OSError, ValueError) as exc:
        raise BackendError(f"{path}: cannot read: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise BackendError(f"{path}: not a JSON list of folders")
    return [Path(x.strip()) for x in data if x.strip()]


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def check_repo(repo: str | Path) -> str:
    """The alias of the mlperf-automations checkout at ``repo`` (its ``meta.yaml``);
    BackendError when it is not one."""
    root = Path(repo)
    meta = root / "meta.yaml"
    if not root.is_dir():
        raise BackendError(f"{root}: no such folder (the mlperf-automations checkout)")
    if not (root / APP_SCRIPT / "meta.yaml").is_file():
        raise BackendError(
            f"{root}: no {APP_SCRIPT}/meta.yaml (not an mlperf-automations checkout)"
        )
    alias = None
    if meta.is_file():
        m = re.search(r"^alias:\s*(\S+)", meta.read_text(encoding="utf-8"), flags=re.M)
        alias = m.group(1).strip("'\"") if m else None
    if not alias:
        raise BackendError(f"{meta}: no 'alias:' (mlc would not load this repo)")
    return alias


def repo_commit(repo: str | Path) -> str | None:
    """``git rev-parse HEAD`` of the checkout; None when git cannot say."""
    try:
        r = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = r.stdout.strip()
    return out if r.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", out) else None


def mlcflow_version(mlcr: str, env: dict | None = None) -> str | None:
    """mlcflow's version from ``mlc --version`` beside ``mlcr``; None when it cannot be read."""
    parts = shlex.split(mlcr)
    exe = shutil.which(parts[0]) if parts else None
    if not exe:
        return None
    mlc = Path(exe).with_name("mlc")
    if not mlc.is_file():
        return None
    try:
        r = subprocess.run(
            [str(mlc), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\bmlcflow\s+(\d[\w.+-]*)", r.stdout + r.stderr)
    return m.group(1) if m else None


def mlcr_failure(log_text: str) -> str:
    """What a failed mlcr run says went wrong: its ``Failed script:`` and ``Error :`` lines."""
    script = re.findall(r"Failed script:\s*(.+)", log_text)
    errors = re.findall(r"^Error\s*:\s*(.+)$", log_text, flags=re.M)
    parts = []
    if script:
        parts.append(f"script {script[-1].strip()}")
    if errors:
        parts.append(errors[-1].strip())
    return ": ".join(parts) if parts else "no error line in its output"


class MlcflowBackend(Backend):
    """MLCommons' ``mlcr run-mlperf,inference`` driven per run (see the module docstring)."""

    name = "mlcflow"

    def __init__(self, runner: Callable | None = None):
        self.settings: MlcflowSettings | None = None
        self._run = runner or subprocess.run
        self.commands: list[list[str]] = []
        self.repo_commit: str | None = None
        self.mlcflow_version: str | None = None
        self.device: dict | None = None
        self.work_dir: Path | None = None
        self.compliance: str | None = None  # set by the runner; refused (mlcr runs its own)
        self.barrier: dict | None = None

    def _env(self) -> dict:
        """mlcr's environment: ours, ``process_env``, ``MLC_REPOS`` and the folder of ``mlcr``
        first on PATH (the reference implementation's ``run_local.sh`` runs ``python3`` from
        PATH, which must be the venv mlcflow and the packages it installed are in)."""
        s = self.settings
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in (s.process_env or {}).items()})
        if s.mlc_repos:
            env["MLC_REPOS"] = str(s.mlc_repos)
        exe = shutil.which(shlex.split(s.mlcr)[0], path=env.get("PATH"))
        if exe:
            env["PATH"] = os.pathsep.join((str(Path(exe).parent), env.get("PATH", "")))
        return env

    def _mlcr(self, cmd: list[str], log: Path) -> None:
        s = self.settings
        self.commands.append(cmd)
        progress(" ".join(shlex.quote(c) for c in cmd))
        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(log, "w", encoding="utf-8") as fh:
                rc = self._run(
                    cmd,
                    cwd=self.work_dir,
                    env=self._env(),
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    check=False,
                    timeout=s.timeout_s,
                ).returncode
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(f"{cmd[0]}: {exc} (log: {log})") from exc
        if rc != 0:
            text = log.read_text(encoding="utf-8", errors="replace")
            raise BackendError(f"mlcr failed (exit {rc}) in {mlcr_failure(text)} (log: {log})")

    def prepare(self, settings: MlcflowSettings) -> None:
        s = settings
        if s.execution_mode not in EXECUTION_MODES:
            raise BackendError(
                f"execution_mode {s.execution_mode!r}: use {', '.join(EXECUTION_MODES)}"
            )
        if s.device not in DEVICES:
            raise BackendError(
                f"device {s.device!r}: mlcr takes {', '.join(DEVICES)} (pick a GPU with "
                "CUDA_VISIBLE_DEVICES in process_env)"
            )
        from miglab.formats.run_meta import INPUTS, WEIGHTS

        if s.weights not in WEIGHTS or s.inputs_kind not in INPUTS:
            raise BackendError(
                f"weights {s.weights!r} / inputs_kind {s.inputs_kind!r}: use one of "
                f"{', '.join(WEIGHTS)} / {', '.join(INPUTS)}"
            )
        for sc in s.scenarios:
            if sc not in SCENARIOS:
                raise BackendError(f"unsupported scenario {sc!r} (use {', '.join(SCENARIOS)})")
        for b in s.benchmarks:
            if benchmark_info(b).name not in MLCR_MODELS:
                raise BackendError(f"{b}: the mlcflow backend supports {', '.join(MLCR_MODELS)}")
        exe = shlex.split(s.mlcr)[0] if s.mlcr.strip() else ""
        if not exe or not shutil.which(exe):
            raise BackendError(
                f"{exe or 'mlcr'}: not found (pip install mlcflow, then set mlcr to its path)"
            )
        if not s.repo:
            raise BackendError("no mlperf-automations checkout given (repo)")
        alias = check_repo(s.repo)
        repos_dir = Path(s.mlc_repos) if s.mlc_repos else default_mlc_repos()
        if not any(_same(Path(s.repo), r) for r in registered_repos(repos_dir)):
            raise BackendError(
                f"{s.repo} is not registered in {repos_dir / 'repos.json'} (run: "
                f"MLC_REPOS={repos_dir} mlc add repo {s.repo}); without it mlcr clones "
                f"{alias} from GitHub"
            )
        self.settings = s
        self.work_dir = Path(s.work_dir or Path(tempfile.gettempdir()) / "miglab-mlcflow")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.repo_commit = repo_commit(s.repo)
        self.mlcflow_version = mlcflow_version(s.mlcr, self._env())
        from miglab.mlperf.guest.device import describe

        try:
            self.device = describe(s.device) if s.device != "rocm" else {"kind": "rocm"}
        except Exception as exc:  # noqa: BLE001 - the record is best effort here
            self.device = {"kind": s.device, "note": f"not described: {exc}"}
        progress(
            f"mlcflow {self.mlcflow_version or '?'}, {alias} at {s.repo} "
            f"@ {self.repo_commit or '?'} (MLC_REPOS={repos_dir})"
        )
        if s.warmup:
            for b in s.benchmarks:
                for sc in s.scenarios:
                    stamp = time.strftime("%Y%m%d-%H%M%S")
                    res = self.work_dir / "warmup" / f"{benchmark_info(b).name}_{sc}_{stamp}"
                    cmd = mlcr_command(s, b, sc, "PerformanceOnly", res, warmup=True)
                    self._mlcr(cmd, res / "mlcr.log")

    def run(
        self, benchmark: str, scenario: str, mode: str, out_dir: str | Path, run_index: int
    ) -> Path:
        from miglab.mlperf.guest.backends.nvidia import collect_logs
        from miglab.mlperf.guest.backends.reference import now_iso

        s = self.settings
        if s is None or self.work_dir is None:
            raise BackendError("prepare() was not called")
        if self.compliance:
            raise BackendError(
                f"compliance test {self.compliance} with the mlcflow backend: mlcr runs them "
                "itself (--compliance=yes), which miglab does not drive yet"
            )
        name = benchmark_info(benchmark).name
        stamp = time.strftime("%Y%m%d-%H%M%S")
        res = self.work_dir / "results" / f"{name}_{scenario}_{mode}_run{run_index}_{stamp}"
        base, n = res, 1
        while res.exists():  # a fresh folder: mlcr skips a run whose files exist
            n += 1
            res = base.with_name(f"{base.name}~{n}")
        cmd = mlcr_command(s, benchmark, scenario, mode, res)
        log = res / "mlcr.log"
        started = now_iso()
        t0 = time.time()
        self._mlcr(cmd, log)
        finished = now_iso()
        found = find_mlcr_logs(res, benchmark, scenario, mode, s.execution_mode)
        if not found:
            raise BackendError(
                f"mlcr wrote no LoadGen logs under {res}/{s.execution_mode}_results/<SUT>/"
                f"{MLCR_MODELS[name]}/{scenario.lower()}/{'/'.join(MODE_FOLDERS[mode])}/ "
                f"(log: {log})"
            )
        meta = {
            "backend": "mlcflow",
            "weights": s.weights,
            "inputs": s.inputs_kind,
            "started_at": started,
            "finished_at": finished,
            "wall_s": round(time.time() - t0, 3),
            "device": self.device,
            "mlcflow": {
                "command": cmd,
                "version": self.mlcflow_version,
                "mlperf_automations": {
                    "path": os.path.abspath(s.repo),
                    "commit": self.repo_commit,
                    "source": SOURCE_REPO,
                },
                "implementation": s.implementation,
                "framework": s.framework,
                "execution_mode": s.execution_mode,
                "results_dir": str(res),
                "log_dir": str(found[0]),
                "console_log": str(log),
            },
            **(s.meta or {}),
        }
        if self.barrier:
            meta["barrier"] = self.barrier
        if self.clock:
            meta["clock"] = self.clock
        return collect_logs(
            found[0], out_dir, name, scenario, run_index, mode, meta, overwrite=s.overwrite
        )
