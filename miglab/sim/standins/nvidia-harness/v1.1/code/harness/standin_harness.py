# STAND-IN (miglab's simulated lab), not NVIDIA software. Stands for the harness binaries that
# `make build_harness` compiles from closed/NVIDIA/code/harness/ (harness_default/main_default.cc
# with common/harness_flags.hpp, and harness_bert/main_bert.cc) of
# github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549; `make
# build` writes build/bin/harness_default and build/bin/harness_bert as small scripts that run
# this file. Reproduced: the gflags each binary defines (an unknown one: "ERROR: unknown command
# line flag '<name>'", exit 1), LoadGen's settings from mlperf.conf + user.conf + --test_mode, the
# log output settings (--logfile_outdir/prefix/suffix, summary copied to stdout unless
# --disable_log_copy_summary_to_stdout), the progress lines ("Creating QSL." ... "Finished running
# actual test."), BERT's "Engine Path: <p>". Not reproduced: TensorRT, CUDA, data (map_path and
# tensor_path are not read), warmup. The SUT is the MIG-slice service-rate model of
# code/common/standin_loadgen.py; the slice is the one nvidia-smi shows (the vGPU type's compute
# slices, or its MIG line).
"""Stand-in of NVIDIA's harness binaries: LoadGen + a MIG-slice rate model (no TensorRT)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "code", "common"))

import standin_loadgen  # noqa: E402

STANDIN_ENGINE = "miglab-standin-engine/1"

_LOG_FLAGS = {
    "logfile_outdir": "string",
    "logfile_prefix": "string",
    "logfile_suffix": "string",
    "logfile_prefix_with_datetime": "bool",
    "log_copy_detail_to_stdout": "bool",
    "disable_log_copy_summary_to_stdout": "bool",
    "log_mode": "string",
    "log_mode_async_poll_interval_ms": "uint64",
    "log_enable_trace": "bool",
}
_TEST_FLAGS = {
    "scenario": "string",
    "test_mode": "string",
    "model": "string",
    "mlperf_conf_path": "string",
    "user_conf_path": "string",
    "single_stream_expected_latency_ns": "uint64",
}
# The flags each binary defines (gflags DEFINE_*), with their types.
FLAGS = {
    "harness_default": {
        "gpu_engines": "string",
        "dla_engines": "string",
        "plugins": "string",
        "devices": "string",
        "dla_core": "int32",
        "verbose": "bool",
        "use_spin_wait": "bool",
        "use_device_schedule_spin": "bool",
        "map_path": "string",
        "tensor_path": "string",
        "coalesced_tensor": "bool",
        "use_graphs": "bool",
        "use_direct_host_access": "bool",
        "use_deque_limit": "bool",
        "deque_timeout_usec": "uint64",
        "use_batcher_thread_per_device": "bool",
        "use_cuda_thread_per_device": "bool",
        "start_from_device": "bool",
        "assume_contiguous": "bool",
        "use_same_context": "bool",
        "numa_config": "string",
        "gpu_copy_streams": "uint32",
        "gpu_inference_streams": "uint32",
        "gpu_batch_size": "uint32",
        "dla_copy_streams": "uint32",
        "dla_inference_streams": "uint32",
        "dla_batch_size": "uint32",
        "max_dlas": "uint32",
        "run_infer_on_copy_streams": "bool",
        "complete_threads": "uint32",
        "warmup_duration": "double",
        "response_postprocess": "string",
        "performance_sample_count": "uint64",
        "end_on_device": "bool",
        **_TEST_FLAGS,
        **_LOG_FLAGS,
    },
    "harness_bert": {
        "gpu_engines": "string",
        "devices": "string",
        "gpu_batch_size": "uint32",
        "gpu_inference_streams": "uint32",
        "gpu_copy_streams": "uint32",
        "use_graphs": "bool",
        "graphs_max_seqlen": "uint32",
        "graph_specs": "string",
        "verbose": "bool",
        "load_plugins": "bool",
        "soft_drop": "double",
        "server_num_issue_query_threads": "uint64",
        "map_path": "string",
        "tensor_path": "string",
        "performance_sample_count": "uint64",
        **_TEST_FLAGS,
        **_LOG_FLAGS,
    },
}
_DEFAULTS = {
    "logfile_prefix": "mlperf_log_",
    "logfile_suffix": "",
    "test_mode": "PerformanceOnly",
    "warmup_duration": 5.0,
    "gpu_batch_size": 64,
}


class FlagError(Exception):
    pass


def _convert(name, kind, text):
    if kind == "string":
        return text
    if kind == "bool":
        low = text.lower()
        if low in ("true", "t", "yes", "y", "1"):
            return True
        if low in ("false", "f", "no", "n", "0"):
            return False
        raise FlagError(f"ERROR: illegal value '{text}' specified for bool flag '{name}'")
    try:
        if kind == "double":
            return float(text)
        value = int(text)
    except ValueError:
        raise FlagError(
            f"ERROR: illegal value '{text}' specified for {kind} flag '{name}'"
        ) from None
    if kind.startswith("uint") and value < 0:
        raise FlagError(f"ERROR: illegal value '{text}' specified for {kind} flag '{name}'")
    return value


def parse_flags(binary, argv):
    """gflags' command line: --name=value, --name value, --name / --noname for bools."""
    known = FLAGS[binary]
    values = dict(_DEFAULTS)
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-"):
            continue  # gflags leaves positional arguments to the program (none used)
        body = arg.lstrip("-")
        name, eq, text = body.partition("=")
        if name not in known and name.startswith("no") and known.get(name[2:]) == "bool" and not eq:
            values[name[2:]] = False
            continue
        if name not in known:
            raise FlagError(f"ERROR: unknown command line flag '{name}'")
        kind = known[name]
        if not eq:
            if kind == "bool":
                values[name] = True
                continue
            if i >= len(argv):
                raise FlagError(f"ERROR: flag '{arg}' is missing its argument")
            text = argv[i]
            i += 1
        values[name] = _convert(name, kind, text)
    return values


def _nvidia_smi(args):
    out = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(
            f"nvidia-smi {' '.join(args)} failed (exit {out.returncode}): "
            f"{(out.stderr or out.stdout).strip()}"
        )
    return out.stdout


def visible_gpus():
    """[(name, mig lines of that GPU)] as nvidia-smi shows them (CUDA_VISIBLE_DEVICES by index)."""
    rows = [
        r
        for r in _nvidia_smi(
            ["--query-gpu=gpu_name,pci.device_id,uuid", "--format=csv"]
        ).splitlines()[1:]
        if r.strip()
    ]
    names = [r.split(",")[0].strip() for r in rows]
    migs = {i: [] for i in range(len(names))}
    current = -1
    for line in _nvidia_smi(["-L"]).splitlines():
        if line.startswith("GPU "):
            current += 1
        elif "MIG" in line and current in migs:
            migs[current].append(line)
    gpus = [(names[i], migs.get(i, [])) for i in range(len(names))]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible and all(v.strip().isdigit() for v in visible.split(",")):
        gpus = [gpus[int(v)] for v in visible.split(",") if int(v) < len(gpus)]
    return gpus


def load_engine(path, benchmark, binary):
    """The stand-in engine note at ``path`` (what the real binary deserializes)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        data = b""
    if not data:
        raise RuntimeError(
            f"STAND-IN {binary}: engine {path} is missing or empty; the real binary reads an "
            "empty stream (lwis::GetModelStream) and TensorRT cannot deserialize it"
        )
    try:
        note = json.loads(data)
    except ValueError:
        note = None
    if not isinstance(note, dict) or note.get("format") != STANDIN_ENGINE:
        raise RuntimeError(
            f"STAND-IN {binary}: {path} is not a stand-in engine (a real TensorRT plan cannot "
            "run in miglab's simulated lab)"
        )
    if note.get("benchmark") != benchmark:
        raise RuntimeError(
            f"STAND-IN {binary}: {path} was built for {note.get('benchmark')}, not {benchmark}"
        )
    return note


def main(argv):
    binary = os.path.basename(argv[1]) if len(argv) > 1 else "harness_default"
    if binary not in FLAGS:
        print(f"usage: standin_harness.py {{{'|'.join(FLAGS)}}} FLAGS...", file=sys.stderr)
        return 2
    try:
        flags = parse_flags(binary, argv[2:])
    except FlagError as exc:
        print(exc, file=sys.stderr)
        return 1
    model = flags.get("model") or ("bert" if binary == "harness_bert" else "resnet50")
    scenario = flags.get("scenario") or "Offline"
    engines = [e for e in (flags.get("gpu_engines") or "").split(",") if e]
    if binary == "harness_bert":
        for e in engines:
            print(f"Engine Path: {e}", flush=True)
    try:
        if not engines:
            raise RuntimeError(f"STAND-IN {binary}: no --gpu_engines given")
        notes = [load_engine(e, model, binary) for e in engines]
        gpus = visible_gpus()
        if not gpus:
            raise RuntimeError(f"STAND-IN {binary}: nvidia-smi shows no GPU")
        name, mig_lines = gpus[0]
        gpu_slices = standin_loadgen.gpu_slices_of(name)
        slices = standin_loadgen.compute_slices_of(name, mig_lines) or gpu_slices
        devices = flags.get("devices")
        count = len(devices.split(",")) if devices else len(gpus)
        print("Creating QSL.", flush=True)
        print("Finished Creating QSL.", flush=True)
        print("Setting up SUT.", flush=True)
        print(
            f"STAND-IN SUT: {count}x {name}, {slices} of {gpu_slices} compute slices each, "
            f"engine {notes[0].get('precision')} batch {notes[0].get('batch_size')}",
            flush=True,
        )
        print("Finished setting up SUT.", flush=True)
        print("Starting running actual test.", flush=True)
        result = standin_loadgen.run(
            model,
            scenario,
            flags.get("test_mode") or "PerformanceOnly",
            flags.get("logfile_outdir") or ".",
            compute_slices=slices,
            gpu_slices=gpu_slices,
            devices=count,
            batch_size=int(flags.get("gpu_batch_size") or notes[0].get("batch_size") or 1),
            performance_sample_count=flags.get("performance_sample_count"),
            user_conf=flags.get("user_conf_path"),
            model=model,
            log_prefix=flags.get("logfile_prefix", "mlperf_log_"),
            log_suffix=flags.get("logfile_suffix", ""),
            copy_summary_to_stdout=not flags.get("disable_log_copy_summary_to_stdout", False),
        )
        print("Finished running actual test.", flush=True)
        print(
            f"STAND-IN: {result['samples_completed']} samples in {result['batches']} batches, "
            f"modelled rate {result['rate']:.1f} samples/s",
            flush=True,
        )
    except (RuntimeError, standin_loadgen.StandinError) as exc:
        print(exc, file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
