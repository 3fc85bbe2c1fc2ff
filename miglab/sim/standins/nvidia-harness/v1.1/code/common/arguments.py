# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# arguments.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: the same flag names, types, choices and defaults
# (LOG_DIR / DATA_DIR / PREPROCESSED_DATA_DIR from the environment), the same argument groups
# and the same rules (parse_args() keeps only the flags it is given and ignores the others;
# apply_overrides() lets a set, truthy flag replace a config's value). Help texts are short
# descriptions of our own.
"""Command-line flags of the harness (RUN_ARGS) and how they override configs (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import argparse  # noqa: E402
from code.common.constants import Scenario  # noqa: E402


def _flag(kind=str, help="", **extra):
    if kind is bool:
        return {"help": help, "action": "store_true", **extra}
    if kind is None:  # a string flag without a declared type
        return {"help": help, **extra}
    return {"help": help, "type": kind, **extra}


_S = None  # string flags without "type" (as the real table declares them)

arguments_dict = {
    # common
    "gpu_batch_size": _flag(int, "GPU batch size of the engine"),
    "dla_batch_size": _flag(int, "DLA batch size of the engine"),
    "batch_size": _flag(int, "batch size of the engine"),
    "verbose": _flag(bool, "verbose output"),
    "verbose_nvtx": _flag(bool, "layer detail in NVTX"),
    "no_child_process": _flag(bool, "build engines in this process"),
    "workspace_size": _flag(int, "TensorRT builder workspace in bytes", default=None),
    # power
    "power": _flag(bool, "measure power"),
    "power_limit": _flag(int, "power limit to set", default=None),
    # data
    "data_dir": _flag(_S, "raw data sets", default=os.environ.get("DATA_DIR", "build/data")),
    "preprocessed_data_dir": _flag(
        _S,
        "preprocessed data sets",
        default=os.environ.get("PREPROCESSED_DATA_DIR", "build/preprocessed_data"),
    ),
    # precision
    "precision": _flag(_S, "precision", choices=["fp32", "fp16", "int8", None], default=None),
    "input_dtype": _flag(_S, "input type", choices=["fp32", "fp16", "int8", None], default=None),
    "input_format": _flag(
        _S, "input layout", choices=["linear", "chw4", "dhwc8", None], default=None
    ),
    "audio_fp16_input": _flag(bool, "fp16 raw audio"),
    # calibration
    "force_calibration": _flag(bool, "recalibrate"),
    "calib_batch_size": _flag(int, "calibration batch size"),
    "calib_max_batches": _flag(int, "calibration batches"),
    "cache_file": _flag(_S, "calibration cache", default=None),
    "calib_data_map": _flag(_S, "calibration data map", default=None),
    # benchmark configuration
    "scenario": _flag(_S, "scenario (engine name)"),
    "dla_core": _flag(_S, "DLA core", default=None),
    "model_path": _flag(_S, "model weights"),
    "active_sms": _flag(int, "percentage of SMs while building engines"),
    "profile": _flag(str, "profiler (internal)"),
    # harness
    "log_dir": _flag(
        _S, "where the logs go", default=os.environ.get("LOG_DIR", "build/logs/default")
    ),
    "use_graphs": _flag(bool, "CUDA graphs"),
    "nopipelined_execution": _flag(bool, "RNN-T"),
    "nobatch_sorting": _flag(bool, "RNN-T"),
    "noenable_audio_processing": _flag(bool, "RNN-T"),
    "nouse_copy_kernel": _flag(bool, "RNN-T"),
    "num_warmups": _flag(int, "RNN-T warmup samples"),
    "max_seq_length": _flag(int, "RNN-T max sequence length"),
    "audio_batch_size": _flag(int, "RNN-T DALI batch"),
    "audio_buffer_num_lines": _flag(int, "RNN-T DALI samples in flight"),
    "dali_batches_issue_ahead": _flag(int, "RNN-T DALI issue ahead"),
    "dali_pipeline_depth": _flag(int, "RNN-T DALI depth"),
    "disable_encoder_plugin": _flag(bool, "RNN-T encoder plugin off"),
    # LWIS
    "devices": _flag(_S, "devices (comma-separated)"),
    "map_path": _flag(_S, "sample map"),
    "tensor_path": _flag(_S, "preprocessed samples"),
    "performance_sample_count": _flag(int, "samples in the performance set"),
    "gpu_copy_streams": _flag(int, "GPU copy streams"),
    "gpu_inference_streams": _flag(int, "GPU inference streams"),
    "dla_copy_streams": _flag(int, "DLA copy streams"),
    "dla_inference_streams": _flag(int, "DLA inference streams"),
    "run_infer_on_copy_streams": _flag(_S, "inference on copy streams"),
    "warmup_duration": _flag(float, "warmup seconds"),
    "use_direct_host_access": _flag(_S, "direct host memory access"),
    "use_deque_limit": _flag(_S, "limit dequeued elements"),
    "deque_timeout_usec": _flag(int, "dequeue timeout (us)"),
    "use_batcher_thread_per_device": _flag(_S, "batcher thread per device"),
    "use_cuda_thread_per_device": _flag(_S, "CUDA thread per device"),
    "start_from_device": _flag(_S, "inputs start in device memory"),
    "end_on_device": _flag(_S, "outputs stay on the device"),
    "max_dlas": _flag(int, "DLAs per device"),
    "coalesced_tensor": _flag(_S, "samples coalesced in one npy"),
    "assume_contiguous": _flag(_S, "query data contiguous"),
    "complete_threads": _flag(int, "response threads per device"),
    "use_same_context": _flag(_S, "one TRT context for all copy streams"),
    # shared
    "mlperf_conf_path": _flag(_S, "mlperf.conf"),
    "user_conf_path": _flag(_S, "user.conf"),
    # LoadGen
    "test_mode": _flag(
        _S,
        "LoadGen test mode",
        choices=["SubmissionRun", "AccuracyOnly", "PerformanceOnly", "FindPeakPerformance"],
    ),
    "min_duration": _flag(int, "minimum test duration (ms)"),
    "max_duration": _flag(int, "maximum test duration (ms)"),
    "min_query_count": _flag(int, "minimum queries"),
    "max_query_count": _flag(int, "maximum queries"),
    "qsl_rng_seed": _flag(int, "QSL seed"),
    "sample_index_rng_seed": _flag(int, "sample index seed"),
    "fast": _flag(bool, "min_duration 60000 ms and min_query_count 1"),
    "logfile_suffix": _flag(_S, "LoadGen log file suffix"),
    "logfile_prefix_with_datetime": _flag(bool, "date in LoadGen log names"),
    "log_copy_detail_to_stdout": _flag(bool, "detail log to stdout"),
    "disable_log_copy_summary_to_stdout": _flag(bool, "no summary on stdout"),
    "log_mode": _flag(
        _S, "LoadGen log mode", choices=["AsyncPoll", "EndOfTestOnly", "Synchronous"]
    ),
    "log_mode_async_poll_interval_ms": _flag(int, "async log poll interval"),
    "log_enable_trace": _flag(_S, "trace log"),
    # Triton
    "use_triton": _flag(bool, "Triton harness"),
    "preferred_batch_size": _flag(_S, "Triton preferred batch sizes"),
    "max_queue_delay_usec": _flag(int, "Triton queue delay"),
    "instance_group_count": _flag(int, "Triton instance groups"),
    "request_timeout_usec": _flag(int, "Triton request timeout"),
    "buffer_manager_thread_count": _flag(int, "Triton buffer threads", default=0),
    "batch_triton_requests": _flag(bool, "Triton batched requests"),
    "gather_kernel_buffer_threshold": _flag(int, "Triton gather kernel threshold"),
    "output_pinned_memory": _flag(bool, "Triton pinned output"),
    "use_concurrent_harness": _flag(bool, "Triton concurrent frontend"),
    "num_concurrent_batchers": _flag(int, "Triton batcher threads"),
    "num_concurrent_issuers": _flag(int, "Triton issuer threads"),
    "dla_num_batchers": _flag(int, "Triton DLA batchers"),
    "dla_num_issuers": _flag(int, "Triton DLA issuers"),
    # Server
    "server_target_qps": _flag(int, "Server target QPS"),
    "server_target_latency_ns": _flag(int, "Server latency bound (ns)"),
    "server_target_latency_percentile": _flag(float, "Server latency percentile"),
    "schedule_rng_seed": _flag(int, "Server arrival seed"),
    "accuracy_log_rng_seed": _flag(int, "accuracy log sampling seed"),
    # SingleStream
    "single_stream_expected_latency_ns": _flag(int, "expected latency"),
    "single_stream_target_latency_percentile": _flag(float, "latency percentile"),
    # Offline
    "offline_expected_qps": _flag(float, "Offline expected samples per second"),
    # main.py
    "action": _flag(
        _S,
        "what to do",
        choices=[
            "generate_engines",
            "run_harness",
            "run_cpu_harness",
            "calibrate",
            "generate_conf_files",
            "run_audit_harness",
            "run_cpu_audit_harness",
            "run_audit_verification",
            "run_cpu_audit_verification",
        ],
    ),
    "benchmarks": _flag(_S, "benchmarks (comma-separated)", default=None),
    "configs": _flag(_S, "config files", default=""),
    "config_ver": _flag(_S, "config version", default="default"),
    "scenarios": _flag(_S, "scenarios (comma-separated)", default=None),
    "no_gpu": _flag(bool, "DLA only"),
    "gpu_only": _flag(bool, "GPU only"),
    "audit_test": _flag(_S, "audit test", choices=["TEST01", "TEST04-A", "TEST04-B", "TEST05"]),
    "system_name": _flag(str, "system name override"),
    # accuracy runners
    "engine_file": _flag(_S, "engine file"),
    "num_samples": _flag(int, "samples"),
    # DLRM
    "sample_partition_path": _flag(_S, "DLRM sample partition"),
    "num_staging_threads": _flag(int, "DLRM staging threads"),
    "num_staging_batches": _flag(int, "DLRM staging batches"),
    "split_threshold": _flag(int, "DLRM split threshold"),
    "max_pairs_per_staging_thread": _flag(int, "DLRM pairs per staging thread"),
    "gpu_num_bundles": _flag(int, "DLRM bundles per GPU", default=2),
    "check_contiguity": _flag(bool, "DLRM contiguity check"),
    "use_jemalloc": _flag(bool, "jemalloc"),
    "use_spin_wait": _flag(bool, "LWIS spin wait"),
    "numa_config": _flag(_S, "NUMA nodes: GPUs and CPUs"),
}

PRECISION_ARGS = ["audio_fp16_input", "input_dtype", "input_format", "precision"]
CALIBRATION_ARGS = [
    "cache_file",
    "calib_batch_size",
    "calib_data_map",
    "calib_max_batches",
    "force_calibration",
    "model_path",
    "verbose",
]
GENERATE_ENGINE_ARGS = [
    "active_sms",
    "dla_batch_size",
    "dla_core",
    "gpu_batch_size",
    "gpu_copy_streams",
    "gpu_inference_streams",
    "max_seq_length",
    "power_limit",
    "verbose_nvtx",
    "workspace_size",
    "disable_encoder_plugin",
    *PRECISION_ARGS,
    *CALIBRATION_ARGS,
]
LOADGEN_ARGS = [
    "accuracy_log_rng_seed",
    "disable_log_copy_summary_to_stdout",
    "log_copy_detail_to_stdout",
    "log_enable_trace",
    "log_mode",
    "log_mode_async_poll_interval_ms",
    "logfile_prefix_with_datetime",
    "logfile_suffix",
    "max_duration",
    "max_query_count",
    "min_duration",
    "min_query_count",
    "qsl_rng_seed",
    "sample_index_rng_seed",
    "schedule_rng_seed",
    "server_target_latency_ns",
    "server_target_latency_percentile",
    "server_target_qps",
    "single_stream_target_latency_percentile",
    "test_mode",
    "fast",
]
LWIS_ARGS = [
    "assume_contiguous",
    "coalesced_tensor",
    "complete_threads",
    "deque_timeout_usec",
    "devices",
    "dla_batch_size",
    "dla_copy_streams",
    "dla_inference_streams",
    "gpu_copy_streams",
    "gpu_inference_streams",
    "max_dlas",
    "run_infer_on_copy_streams",
    "start_from_device",
    "end_on_device",
    "use_batcher_thread_per_device",
    "use_cuda_thread_per_device",
    "use_deque_limit",
    "use_direct_host_access",
    "use_spin_wait",
    "warmup_duration",
]
TRITON_ARGS = [
    "instance_group_count",
    "max_queue_delay_usec",
    "preferred_batch_size",
    "request_timeout_usec",
    "buffer_manager_thread_count",
    "batch_triton_requests",
    "gather_kernel_buffer_threshold",
    "output_pinned_memory",
    "use_concurrent_harness",
    "num_concurrent_batchers",
    "num_concurrent_issuers",
    "dla_num_batchers",
    "dla_num_issuers",
]
SHARED_ARGS = [
    "gpu_batch_size",
    "map_path",
    "mlperf_conf_path",
    "performance_sample_count",
    "tensor_path",
    "use_graphs",
    "user_conf_path",
    "numa_config",
]
OTHER_HARNESS_ARGS = [
    "audio_batch_size",
    "audio_buffer_num_lines",
    "check_contiguity",
    "dali_batches_issue_ahead",
    "dali_pipeline_depth",
    "gpu_num_bundles",
    "log_dir",
    "max_pairs_per_staging_thread",
    "max_seq_length",
    "nobatch_sorting",
    "noenable_audio_processing",
    "nopipelined_execution",
    "nouse_copy_kernel",
    "disable_encoder_plugin",
    "num_staging_batches",
    "num_staging_threads",
    "num_warmups",
    "power_limit",
    "sample_partition_path",
    "use_jemalloc",
    "use_triton",
]
HARNESS_ARGS = [
    "verbose",
    "scenario",
    *PRECISION_ARGS,
    *LOADGEN_ARGS,
    *LWIS_ARGS,
    *TRITON_ARGS,
    *SHARED_ARGS,
    *OTHER_HARNESS_ARGS,
]
SMALL_GEMM_KERNEL_ARGS = [
    "use_small_tile_gemm_plugin",
    "enable_interleaved",
    "gemm_plugin_fairshare_cache_size",
]
BERT_ARGS = ["soft_drop", "graph_specs", "graphs_max_seqlen", "bert_opt_seqlen"]

SCENARIO_METRIC_PREFIXES = ["gpu_", "dla_", "concurrent_"]
OFFLINE_PARAMS = ["offline_expected_qps"]
SINGLE_STREAM_PARAMS = ["single_stream_expected_latency_ns"]
SERVER_PARAMS = []

MAIN_ARGS = [
    "action",
    "audit_test",
    "benchmarks",
    "config_ver",
    "configs",
    "gpu_only",
    "no_child_process",
    "no_gpu",
    "power",
    "power_limit",
    "profile",
    "scenarios",
    "system_name",
]
ACCURACY_ARGS = ["batch_size", "engine_file", "num_samples", "verbose"]


def parse_args(whitelist):
    """The flags of ``whitelist`` from the command line (others ignored), as a dict."""
    parser = argparse.ArgumentParser(allow_abbrev=False)
    for flag in whitelist:
        if flag not in arguments_dict:
            raise IndexError(f"Unknown flag '{flag}'")
        parser.add_argument(f"--{flag}", **arguments_dict[flag])
    return vars(parser.parse_known_args()[0])


def check_args():
    parser = argparse.ArgumentParser(allow_abbrev=False)
    for flag, spec in arguments_dict.items():
        parser.add_argument(f"--{flag}", **spec)
    parser.parse_args()


def apply_overrides(config, keys):
    """A copy of ``config`` where every flag of ``keys`` set (truthy) on the command line wins."""
    merged = dict(config)
    for key, value in parse_args(keys).items():
        if value:
            merged[key] = value
    return merged


def getScenarioMetricArgs(scenario, prefixes=("",)):
    if Scenario.SingleStream == scenario:
        names = SINGLE_STREAM_PARAMS
    elif Scenario.Offline == scenario:
        names = OFFLINE_PARAMS
    elif Scenario.Server == scenario:
        names = SERVER_PARAMS
    else:
        raise RuntimeError(f'Unknown Scenario "{scenario}"')
    return [prefix + name for prefix in prefixes for name in names]


def getScenarioBasedHarnessArgs(scenario, prefixes=("",)):
    return HARNESS_ARGS + getScenarioMetricArgs(scenario, prefixes=prefixes)
