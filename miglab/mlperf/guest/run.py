"""``python -m miglab.mlperf.run``: one MLPerf Inference run in this guest, laid out for collection.

    python -m miglab.mlperf.run --backend reference --sut onnxruntime|torch \\
        --benchmark resnet50 --scenario Offline --out DIR --run N \\
        [--user-conf F] [--min-duration-ms N] [--start-at EPOCH_SECONDS] ...

``DIR`` is the VM's folder of the results tree (``results/<campaign>/<scenario>/<vm>``); the logs
go to ``DIR/<benchmark>/<scenario>/performance/run_<N>/`` (``accuracy/`` for AccuracyOnly) with
``miglab_run.json`` beside them. Everything slow (model, inputs, CUDA graphs, the raw-throughput
measurement) happens first; then, with ``--start-at``, the command sleeps until that wall-clock
time, so that every VM of a scenario starts LoadGen at the same moment (the barrier).

Exit status: 0 when LoadGen says VALID; 1 when the run finished but is not VALID (one line on
stderr says why); 2 when the run could not be made (bad option, missing file, AccuracyOnly
without real weights and data, a CUDA device asked for and none visible -- never measured on the
CPU instead: one ``error:`` line); 3 when the SUT failed during the run.
Progress goes to stderr; the last line on stdout is the result.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path

from miglab.errors import EXIT_FAIL, EXIT_INVALID, EXIT_OK
from miglab.mlperf.guest import barrier as barrier_lib
from miglab.mlperf.guest import clock as clock_lib
from miglab.mlperf.guest.backends import BACKENDS, BackendError, get_backend
from miglab.mlperf.guest.backends.base import MODES, SCENARIOS, progress


def _placement(text: str) -> dict:
    """``--placement``: a JSON object (what the controller read after power-on)."""
    try:
        value = json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not JSON") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m miglab.mlperf.run",
        description="Run one MLPerf Inference benchmark with LoadGen and lay its logs out for "
        "the miglab collector.",
    )
    p.add_argument("--backend", default="reference", choices=BACKENDS)
    p.add_argument(
        "--sut",
        choices=("torch", "onnxruntime", "slice-model"),
        help="the reference backend's SUT (required there; the nvidia backend runs NVIDIA's)",
    )
    p.add_argument("--benchmark", required=True, help="resnet50, bert-99 (bert), bert-99.9")
    p.add_argument("--scenario", default="Offline", choices=SCENARIOS)
    p.add_argument("--mode", default="PerformanceOnly", choices=MODES)
    p.add_argument("--out", required=True, help="the VM's results folder")
    p.add_argument("--run", type=int, default=1, help="run number (run_<N>)")
    p.add_argument(
        "--compliance",
        choices=("TEST01", "TEST04"),
        help="an MLPerf compliance test: its audit.config is written beside the logs and read "
        "by LoadGen; the logs go to <benchmark>/<scenario>/TEST0x/ and are verified against "
        "performance/run_1 (and, TEST01, accuracy/run_1): verify_*.txt, exit 1 on TEST FAIL",
    )
    g = p.add_argument_group("model and data (nothing is downloaded)")
    g.add_argument("--model", help="onnxruntime: an .onnx file, or tiny-conv / tiny-mlp")
    g.add_argument("--weights", help="torch: ResNet50 state_dict, BERT state_dict or HF folder")
    g.add_argument(
        "--weights-kind",
        choices=("real", "random"),
        help="say what the weights are (default: torch random unless --weights; "
        "onnxruntime real, tiny models random)",
    )
    g.add_argument(
        "--dataset",
        help="preprocessed samples (.npz: one array per model input, optional labels)",
    )
    g.add_argument(
        "--dataset-path",
        help="ResNet50: the ImageNet 2012 validation folder (JPEGs and val_map.txt), "
        "preprocessed as the MLCommons reference",
    )
    g.add_argument("--val-map", help="ImageNet: the image list (default DATASET_PATH/val_map.txt)")
    g.add_argument("--squad-json", help="BERT: SQuAD v1.1 dev (dev-v1.1.json)")
    g.add_argument("--vocab", help="BERT: the model's vocab.txt (WordPiece vocabulary)")
    g.add_argument(
        "--cache-dir",
        help="keep preprocessed images / tokenized features here and reuse them (default: "
        "none, preprocessed again each run)",
    )
    g.add_argument(
        "--preprocessing",
        choices=("vgg", "pytorch"),
        help="ImageNet: vgg (the MLCommons ONNX model's; onnxruntime's default) or pytorch "
        "(torchvision's; torch's default)",
    )
    g.add_argument(
        "--dataset-count",
        type=int,
        help="use the first N samples only (a short accuracy check; the result says subset)",
    )
    g.add_argument(
        "--label-offset",
        type=int,
        help="onnxruntime ResNet50: add this to the model's class (default -1 for an ArgMax "
        "or 1001-class output, the MLCommons model's background class; else 0)",
    )
    g.add_argument(
        "--device",
        help="cuda, cuda:N or cpu (default: torch cuda, onnxruntime cpu); a CUDA device this VM "
        "does not have stops the run (exit 2), never a run on the CPU instead",
    )
    g = p.add_argument_group("LoadGen settings")
    g.add_argument(
        "--mlperf-conf",
        help="a mlperf.conf applied on top of LoadGen's built-in one (LoadGen takes one config "
        "file: not with --user-conf)",
    )
    g.add_argument("--user-conf", help="user.conf (read by LoadGen once per process)")
    g.add_argument("--min-duration-ms", type=int)
    g.add_argument("--max-duration-ms", type=int)
    g.add_argument("--min-query-count", type=int)
    g.add_argument("--max-query-count", type=int)
    g.add_argument("--target-qps", type=float, help="Offline expected / Server target QPS")
    g.add_argument("--target-latency-ms", type=float, help="Server latency bound")
    g.add_argument("--performance-sample-count", type=int)
    g = p.add_argument_group("SUT")
    g.add_argument("--batch-size", type=int, help="Offline batch (and raw-throughput batch)")
    g.add_argument("--server-batch-size", type=int, help="Server: largest dynamic batch")
    g.add_argument("--server-timeout-ms", type=float, help="Server: batching timeout")
    g.add_argument("--max-inflight", type=int, default=2, help="Server: batches on the device")
    g.add_argument("--batch-sizes", help="torch: CUDA graph batch sizes, comma-separated")
    g.add_argument("--compile", action="store_true", help="torch: torch.compile the model")
    g.add_argument("--no-cuda-graphs", action="store_true")
    g.add_argument(
        "--attention",
        choices=("auto", "flash", "efficient", "cudnn", "math"),
        help="torch: scaled-dot-product attention backend (default: PyTorch's choice)",
    )
    g.add_argument(
        "--fast-gelu",
        action="store_true",
        help="torch BERT: tanh-approximate GELU fused into the GEMM (changes numerics)",
    )
    g.add_argument(
        "--precision",
        choices=("fp16", "fp8"),
        help="torch: fp16 (default) or fp8 (BERT only: the encoder's GEMMs in FP8 e4m3 on "
        "Hopper; a precision change, opt-in; recorded in miglab_run.json)",
    )
    g.add_argument("--threads", type=int, help="onnxruntime: intra-op threads")
    g.add_argument("--raw-seconds", type=float, default=5.0, help="raw throughput (0: skip)")
    g.add_argument("--warmup-seconds", type=float, default=2.0)
    g.add_argument(
        "--auto-target-factor",
        type=float,
        default=1.1,
        help="Offline without a target QPS: this many times the raw throughput",
    )
    g.add_argument("--seed", type=int, default=0)
    g = p.add_argument_group(
        "search runs (short LoadGen runs, not results; miglab.mlperf.guest.qps_search)"
    )
    g.add_argument(
        "--qps-search",
        action="store_true",
        help="instead of a run: Server, search the highest VALID target QPS (bisection over "
        "short runs); Offline, calibrate the expected QPS; write <out>/<benchmark>/<scenario>/"
        "qps_search.json, which this VM's later runs use when no target QPS is set",
    )
    g.add_argument("--search-min-duration-ms", type=int, default=10_000)
    g.add_argument("--search-min-query-count", type=int, default=1_000)
    g.add_argument("--search-tolerance", type=float, default=0.02, help="relative (0.02: 2 %%)")
    g.add_argument("--search-max-trials", type=int, default=12)
    g.add_argument("--search-start-qps", type=float, help="default: the raw throughput")
    g = p.add_argument_group(
        "NVIDIA's harness (--backend nvidia; miglab.mlperf.guest.backends.nvidia)"
    )
    g.add_argument("--harness-dir", help="the harness folder (closed/NVIDIA: Makefile, code/)")
    g.add_argument("--harness-round", default="v1.1", help="its round: v1.1 or v4.1")
    g.add_argument(
        "--harness-launch",
        choices=("docker", "inside"),
        default="docker",
        help="docker: each step in the harness's container (make launch_docker); inside: this "
        "process runs in that container already",
    )
    g.add_argument(
        "--harness-steps",
        default="docker,build,detect,generate_engines",
        help="prepare's steps, comma-separated (default docker,build,detect,generate_engines)",
    )
    g.add_argument(
        "--harness-make-var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable for every make call (MLPERF_SCRATCH_PATH=..., NO_DOCKER_PULL=1); repeat",
    )
    g.add_argument("--harness-run-args", default="", help="appended to RUN_ARGS")
    g.add_argument("--gpu", help="the VM's GPU board as the catalog names it (A100-PCIE-80GB)")
    g.add_argument("--vgpu-count", type=int, default=1, help="vGPUs of --profile in the VM")
    g.add_argument("--system-prefix", default="", help="system name prefix (R750xa)")
    g.add_argument("--nvidia-smi-name", help="the GPU name nvidia-smi -L prints in the VM")
    g.add_argument("--harness-timeout", type=float, help="seconds a make step may take")
    g = p.add_argument_group(
        "MLCommons' automation (--backend mlcflow; miglab.mlperf.guest.backends.mlcflow)"
    )
    g.add_argument("--mlcr", default="mlcr", help="the mlcr command (in mlcflow's own venv)")
    g.add_argument("--mlc-repo", help="the mlperf-automations checkout, registered (mlc add repo)")
    g.add_argument("--mlc-repos", help="MLC_REPOS (default $MLC_REPOS or ~/MLC/repos)")
    g.add_argument("--mlc-implementation", default="reference")
    g.add_argument("--mlc-framework", default="onnxruntime")
    g.add_argument("--mlc-execution-mode", choices=("test", "fast", "valid"), default="valid")
    g.add_argument("--mlc-variation", action="append", default=[], help="more tags, e.g. _r6.0")
    g.add_argument("--mlc-adr", action="append", default=[], metavar="NAME.KEY=VALUE")
    g.add_argument("--mlc-input", action="append", default=[], metavar="NAME=VALUE")
    g.add_argument("--mlc-env", action="append", default=[], metavar="NAME=VALUE")
    g.add_argument("--mlc-process-env", action="append", default=[], metavar="NAME=VALUE")
    g.add_argument("--mlc-work-dir", help="mlcr's working folder and results")
    g.add_argument("--mlc-timeout", type=float, help="seconds one mlcr call may take")
    g = p.add_argument_group("the lab")
    g.add_argument(
        "--start-at",
        type=float,
        help="start LoadGen at this wall-clock time (seconds since the epoch): the barrier",
    )
    g.add_argument(
        "--barrier-dir",
        help="a two-phase start barrier with the controller: once the SUT is ready, write "
        "DIR/state ('ready'; 'failed: ...' on an error), then wait for DIR/go, which holds the "
        "start moment (epoch seconds) the controller picked once every VM was ready; at the end "
        "DIR/state says 'done <exit status>' (see miglab.mlperf.guest.barrier)",
    )
    g.add_argument(
        "--pack",
        metavar="TARBALL",
        help="once the run has ended, pack its folder into this .tar.gz (written atomically), "
        "for the controller to fetch",
    )
    g.add_argument(
        "--barrier-timeout",
        type=float,
        default=900.0,
        help="seconds to wait for DIR/go (default 900)",
    )
    g.add_argument("--vm", help="VM name for miglab_run.json")
    g.add_argument("--lab-scenario", help="the campaign scenario id (s1, s6, ...)")
    g.add_argument("--profile", help="the VM's MIG profile")
    g.add_argument("--vgpu-type", help="the VM's vGPU type")
    g.add_argument("--notes", help="free text for miglab_run.json")
    g.add_argument(
        "--placement",
        type=_placement,
        help="where the VM's vGPU runs and where the plan put it, as JSON "
        '({"gpu": PCI id, "mig_slot": N, "planned": {"gpu": ..., "mig_slot": ...}}), for '
        "miglab_run.json",
    )
    g.add_argument(
        "--simulated-lab",
        action="store_true",
        help="the VM is a simulated one (miglab's built-in lab: a container, no GPU); the "
        "results say simulated and every report marks them",
    )
    g.add_argument("--overwrite", action="store_true", help="replace an existing run folder")
    g = p.add_argument_group(
        "the guest's clock (measured once the SUT is ready, before the start barrier; "
        "miglab_run.json's clock, see miglab.mlperf.guest.clock)"
    )
    g.add_argument(
        "--clock",
        choices=("off", *clock_lib.METHODS),
        default="off",
        help="how: the controller's miglab responder, an NTP server both query, or chrony on "
        "both (default off: not measured)",
    )
    clock_lib.add_measure_options(g, prefix="clock-")
    return p


def _meta(a) -> dict:
    from miglab.mlperf.guest.runtime import runtime_record

    return {
        "vm": a.vm,
        "scenario": a.lab_scenario,
        "profile": a.profile,
        "vgpu_type": a.vgpu_type,
        "placement": a.placement,
        "notes": a.notes,
        # None keeps the backend's own verdict (False for a real run).
        "simulated": True if a.simulated_lab else None,
        "runtime": runtime_record(),  # container (image, id) or venv: the mlperf role's
    }


def nvidia_settings_from_args(a):
    """``--backend nvidia``'s settings (NVIDIA's harness for this VM's vGPU)."""
    from miglab.mlperf.guest.backends.nvidia import NvidiaSettings

    missing = [
        opt
        for opt, value in (
            ("--harness-dir", a.harness_dir),
            ("--gpu", a.gpu),
            ("--profile", a.profile),
        )
        if not value
    ]
    if missing:
        raise BackendError(f"--backend nvidia needs {', '.join(missing)}")
    if a.sut:
        raise BackendError("--sut is the reference backend's: the nvidia backend runs NVIDIA's SUT")
    bad = [v for v in a.harness_make_var if "=" not in v or not v.split("=", 1)[0].isidentifier()]
    if bad:
        raise BackendError(f"--harness-make-var: not NAME=VALUE: {', '.join(bad)}")
    return NvidiaSettings(
        harness_dir=a.harness_dir,
        round=a.harness_round,
        launch=a.harness_launch,
        gpu=a.gpu,
        profile=a.vgpu_type or a.profile,
        count=a.vgpu_count,
        prefix=a.system_prefix,
        nvidia_smi_name=a.nvidia_smi_name,
        benchmarks=(a.benchmark,),
        scenarios=(a.scenario,),
        steps=tuple(x.strip() for x in a.harness_steps.split(",") if x.strip()),
        make_vars=tuple(a.harness_make_var),
        extra_run_args=a.harness_run_args,
        min_duration_ms=a.min_duration_ms,
        min_query_count=a.min_query_count,
        target_qps=a.target_qps,
        timeout_s=a.harness_timeout,
        overwrite=a.overwrite,
        meta=_meta(a),
    )


def _pairs(values, opt) -> dict:
    out = {}
    for v in values:
        k, sep, val = v.partition("=")
        if not sep or not k:
            raise BackendError(f"{opt}: not NAME=VALUE: {v}")
        out[k] = val
    return out


def mlcflow_settings_from_args(a):
    """``--backend mlcflow``'s settings (MLCommons' mlcr from a local checkout)."""
    from miglab.mlperf.guest.backends.mlcflow import MlcflowSettings

    if not a.mlc_repo:
        raise BackendError("--backend mlcflow needs --mlc-repo")
    if a.sut:
        raise BackendError("--sut is the reference backend's: mlcflow runs MLCommons' SUTs")
    return MlcflowSettings(
        repo=a.mlc_repo,
        mlcr=a.mlcr,
        mlc_repos=a.mlc_repos,
        implementation=a.mlc_implementation,
        framework=a.mlc_framework,
        device=a.device or "cpu",
        execution_mode=a.mlc_execution_mode,
        variations=tuple(a.mlc_variation),
        adr=_pairs(a.mlc_adr, "--mlc-adr"),
        inputs=_pairs(a.mlc_input, "--mlc-input"),
        env=_pairs(a.mlc_env, "--mlc-env"),
        process_env=_pairs(a.mlc_process_env, "--mlc-process-env"),
        work_dir=a.mlc_work_dir,
        benchmarks=(a.benchmark,),
        scenarios=(a.scenario,),
        min_duration_ms=a.min_duration_ms,
        min_query_count=a.min_query_count,
        max_query_count=a.max_query_count,
        target_qps=a.target_qps,
        timeout_s=a.mlc_timeout,
        weights=a.weights_kind or "real",
        overwrite=a.overwrite,
        meta=_meta(a),
    )


def settings_from_args(a):
    if a.backend == "nvidia":  # first: the reference backend needs numpy, a harness VM has none
        return nvidia_settings_from_args(a)
    if a.backend == "mlcflow":
        return mlcflow_settings_from_args(a)
    from miglab.mlperf.guest.backends.reference import ReferenceSettings

    if not a.sut:
        raise BackendError("--sut is required with the reference backend")
    sizes = None
    if a.batch_sizes:
        try:
            sizes = tuple(int(x) for x in a.batch_sizes.split(",") if x.strip())
        except ValueError:
            raise BackendError(
                f"--batch-sizes: not a list of integers: {a.batch_sizes!r}"
            ) from None
    return ReferenceSettings(
        benchmark=a.benchmark,
        scenario=a.scenario,
        mode=a.mode,
        sut=a.sut,
        model=a.model,
        weights=a.weights,
        weights_kind=a.weights_kind,
        dataset=a.dataset,
        dataset_path=a.dataset_path,
        val_map=a.val_map,
        squad_json=a.squad_json,
        vocab=a.vocab,
        cache_dir=a.cache_dir,
        preprocessing=a.preprocessing,
        dataset_count=a.dataset_count,
        label_offset=a.label_offset,
        device=a.device,
        mlperf_conf=a.mlperf_conf,
        user_conf=a.user_conf,
        min_duration_ms=a.min_duration_ms,
        max_duration_ms=a.max_duration_ms,
        min_query_count=a.min_query_count,
        max_query_count=a.max_query_count,
        target_qps=a.target_qps,
        target_latency_ms=a.target_latency_ms,
        performance_sample_count=a.performance_sample_count,
        batch_size=a.batch_size,
        server_batch_size=a.server_batch_size,
        server_timeout_ms=a.server_timeout_ms,
        max_inflight=a.max_inflight,
        batch_sizes=sizes,
        compile=a.compile,
        cuda_graphs=not a.no_cuda_graphs,
        attention=a.attention,
        fast_gelu=a.fast_gelu,
        precision=a.precision,
        threads=a.threads,
        raw_seconds=a.raw_seconds,
        warmup_seconds=a.warmup_seconds,
        auto_target_factor=a.auto_target_factor,
        seed=a.seed,
        overwrite=a.overwrite,
        meta=_meta(a),
    )


def wait_for(start_at: float) -> dict:
    """Sleep until ``start_at`` (epoch seconds); how late we were if it had passed."""
    now = time.time()
    if start_at > now:
        progress(f"waiting {start_at - now:.1f} s for the start barrier")
        while True:
            left = start_at - time.time()
            if left <= 0:
                break
            time.sleep(min(left, 0.5) if left > 0.01 else left)
    late = max(0.0, time.time() - start_at)
    if late > 1.0:
        progress(f"warning: the start barrier had passed {late:.1f} s before this SUT was ready")
    return {
        "start_at": datetime.fromtimestamp(start_at).astimezone().isoformat(),
        "late_s": round(late, 3),
    }


class NoStartMoment(BackendError):
    """The controller did not release the barrier within its timeout."""


def await_go(folder: Path, timeout: float, stop: Path | None = None) -> float:
    """Say ready in ``folder``, then wait for the controller's go file; its start moment."""
    progress(f"ready; waiting for the start moment ({folder / 'go'})")
    try:
        return barrier_lib.await_go(folder, timeout, stop=stop)
    except barrier_lib.BarrierTimeout as exc:
        raise NoStartMoment(str(exc)) from None


def measure_clock(a: argparse.Namespace) -> dict | None:
    """The guest's clock against the controller's (``--clock``), for ``miglab_run.json``; None
    with ``--clock off``. A failed measurement is recorded as such and the run goes on."""
    if a.clock == "off":
        return None
    if a.clock != "responder" and a.clock_controller is None:
        # miglab_run.json's offset is always to the controller, never to a reference alone
        reading = clock_lib.ClockReading.failed(
            a.clock, "no --clock-controller: the controller's own measurement is needed"
        )
    else:
        reading = clock_lib.measure(
            a.clock, a.clock_server, a.clock_port, a.clock_samples, a.clock_timeout,
            a.clock_controller,
        )  # fmt: skip
    if reading.error:
        progress(f"warning: clock not measured ({a.clock}): {reading.error}")
    else:
        progress(
            f"clock: {reading.offset_s * 1000:+.3f} ms against the controller "
            f"(+-{reading.uncertainty_s * 1000:.3f} ms, {a.clock} {reading.reference})"
        )
    return reading.as_json()


def pack(run_dir: Path, tarball: str | Path) -> Path:
    """``run_dir`` as ``tarball`` (``run_<n>/...``), written atomically."""
    import tarfile

    from miglab.formats.manifest import atomic_write_with

    def fill(f):
        with tarfile.open(fileobj=f, mode="w:gz") as tar:
            tar.add(run_dir, arcname=run_dir.name)

    Path(tarball).parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_with(tarball, fill)


class SutPool:
    """Prepared backends, by their settings: a wave's session (:mod:`miglab.mlperf.guest.session`)
    prepares each benchmark's SUT once and runs every round with it. ``keep`` bounds how many stay
    prepared at once (the least recently used is closed first); a single run keeps one."""

    def __init__(self, keep: int = 1):
        self.keep = max(1, int(keep))
        self._ready: dict[str, object] = {}

    @staticmethod
    def key(backend: str, settings) -> str:
        import json
        from dataclasses import asdict

        return json.dumps([backend, asdict(settings)], sort_keys=True, default=str)

    def get(self, backend: str, settings):
        """The backend prepared with ``settings``; prepared now unless it already is."""
        k = self.key(backend, settings)
        if k in self._ready:
            self._ready[k] = self._ready.pop(k)  # most recently used last
            return self._ready[k]
        while len(self._ready) >= self.keep:
            self._ready.pop(next(iter(self._ready))).close()
        b = get_backend(backend)
        try:
            b.prepare(settings)
        except BaseException:
            b.close()
            raise
        self._ready[k] = b
        return b

    def __len__(self) -> int:
        return len(self._ready)

    def close(self) -> None:
        while self._ready:
            self._ready.pop(next(iter(self._ready))).close()


def result_line(meta: dict, scenario: str, mode: str) -> str:
    """The one-line summary of a run's ``miglab_run.json``."""
    res = meta.get("loadgen") or {}
    value = res.get("value")
    line = (
        f"{res.get('validity') or 'NO RESULT'} {meta['benchmark']} {scenario} {mode}: "
        f"{res.get('metric')} = {value if value is not None else '-'}"
    )
    if meta.get("fidelity"):
        line += f" (raw {meta['raw_throughput']:.1f}, fidelity {meta['fidelity']:.4f})"
    if meta.get("accuracy"):
        acc = meta["accuracy"]
        if acc.get("metric") and acc.get("value") is not None:
            what = f"{acc['metric']} = {acc['value']:.3f} % (target {acc['target']:.3f} %)"
        elif acc.get("top1") is not None:
            what = f"top1 = {acc['top1']}"
        else:
            what = acc.get("note", "")
        subset = " [subset]" if acc.get("subset") else ""
        line = f"ACCURACY {res.get('validity')} {meta['benchmark']} {scenario}: {what}{subset}"
    if scenario == "Server" and res.get("p99_latency_ms") is not None:
        line += f" p99 {res['p99_latency_ms']:.2f} ms"
    return line


def write_verification(scenario_dir: Path, test: str) -> bool:
    """Verify ``scenario_dir/<test>`` (:func:`miglab.core.compliance.verify`) and write its
    ``verify_*.txt``; whether every check says TEST PASS."""
    from miglab.core import compliance as compliance_lib
    from miglab.formats.manifest import atomic_write_text

    verdicts = compliance_lib.verify(scenario_dir, test)
    for name, v in verdicts.items():
        atomic_write_text(compliance_lib.compliance_dir(scenario_dir, test) / name, v.text)
        last = next((line for line in reversed(v.lines) if line), "")
        print(f"{test} {name}: {last}", flush=True)
    return all(v.passed for v in verdicts.values())


def search_round(backend, a: argparse.Namespace) -> str:
    """A search round (``--qps-search``): the target QPS found and the JSON file written."""
    from miglab.mlperf.guest import qps_search

    if a.mode != "PerformanceOnly":
        raise BackendError("--qps-search runs PerformanceOnly search runs")
    opts = qps_search.SearchOptions(
        min_duration_ms=a.search_min_duration_ms,
        min_query_count=a.search_min_query_count,
        tolerance=a.search_tolerance,
        max_trials=a.search_max_trials,
        start_qps=a.search_start_qps,
    )
    search = qps_search.search_server if a.scenario == "Server" else qps_search.calibrate_offline
    path = search(backend, a.benchmark, a.out, opts)
    qps = json.loads(path.read_text(encoding="utf-8")).get("target_qps")
    return f"target {qps:.1f} QPS -> {path}"


def run_round(a: argparse.Namespace, pool: SutPool, stop: Path | None = None) -> int:
    """One run (parsed options ``a``) with a backend from ``pool``; its exit status (see the
    module's docstring). ``stop`` (a session's round): a file whose appearance ends the wait for
    the start moment; the session, not the round, cleans the earlier barrier folders."""
    import json

    barrier = Path(a.barrier_dir) if a.barrier_dir else None
    try:
        if barrier is not None:
            barrier.mkdir(parents=True, exist_ok=True)
            barrier_lib.write_pid(barrier)
            if stop is None:
                barrier_lib.clean_ended(barrier.parent, keep=barrier)
        settings = settings_from_args(a)
        backend = pool.get(a.backend, settings)
        backend.barrier = None
        backend.compliance = a.compliance
        backend.clock = measure_clock(a)
        start_at = a.start_at
        if barrier is not None:
            start_at = await_go(barrier, a.barrier_timeout, stop)
        if start_at is not None:
            backend.barrier = wait_for(start_at)
        if getattr(a, "qps_search", False):
            found = search_round(backend, a)
        else:
            run_dir = backend.run(a.benchmark, a.scenario, a.mode, a.out, a.run)
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if barrier is not None:
            barrier_lib.write_state(barrier, f"failed: {' '.join(str(exc).split())}")
        if isinstance(exc, NoStartMoment) and stop is not None:
            raise  # a session: the controller is gone, the later rounds need not wait
        return EXIT_INVALID
    except BaseException as exc:  # the controller must not wait for a dead SUT
        if barrier is not None and barrier.is_dir():
            barrier_lib.write_state(barrier, f"failed: {type(exc).__name__}: {exc}")
        raise
    if getattr(a, "qps_search", False):
        print(f"QPS search {a.benchmark} {a.scenario}: {found}", flush=True)
        if barrier is not None:
            barrier_lib.write_state(barrier, f"done {EXIT_OK}")
        return EXIT_OK
    meta = json.loads((run_dir / "miglab_run.json").read_text(encoding="utf-8"))
    res = meta.get("loadgen") or {}
    print(f"{result_line(meta, a.scenario, a.mode)} -> {run_dir}", flush=True)
    rc = EXIT_OK
    if not res.get("valid"):
        reasons = res.get("reasons") or ["LoadGen did not say VALID"]
        print(f"not valid: {'; '.join(str(r) for r in reasons)}", file=sys.stderr)
        rc = EXIT_FAIL
    if a.compliance and not write_verification(run_dir.parent.parent.parent, a.compliance):
        rc = EXIT_FAIL
    try:
        if a.pack:
            pack(run_dir, a.pack)
    except OSError as exc:
        print(f"error: cannot pack {run_dir} into {a.pack}: {exc}", file=sys.stderr)
        if barrier is not None:
            barrier_lib.write_state(barrier, f"failed: cannot pack the run's logs: {exc}")
        return EXIT_FAIL
    if barrier is not None:
        barrier_lib.write_state(barrier, f"done {rc}")
    return rc


def main(argv=None) -> int:
    a = build_parser().parse_args(argv)
    if a.scenario == "Server":
        sys.setswitchinterval(0.001)  # batcher and completion threads get the GIL sooner
    pool = SutPool(keep=1)
    try:
        return run_round(a, pool)
    finally:
        pool.close()


if __name__ == "__main__":
    sys.exit(main())
