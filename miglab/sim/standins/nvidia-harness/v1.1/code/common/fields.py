# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# fields.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: the same config fields with the same types,
# "required" flags and the actions / benchmarks / scenarios / systems / harnesses / power
# settings each one is allowed in (the facts of the real Fields enum, as a table), the same
# Field.supports() rule and get_applicable_fields(), and main.py's MainArgs flags. Descriptions
# are left out. Written anew.
"""Which config fields a workload takes (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

from code.common.constants import (  # noqa: E402
    AccuracyTarget,
    Action,
    AdHocSystemClassification,
    Benchmark,
    HarnessType,
    PowerSetting,
    Scenario,
)
from dataclasses import dataclass  # noqa: E402
from enum import Enum, unique  # noqa: E402

_HARNESS_ACTIONS = (Action.RunHarness, Action.RunAuditHarness)
_ALL = None  # every member


@dataclass(frozen=True)
class Field:
    name: str
    value_type: type
    required: bool = False
    supported_actions: tuple = tuple(Action)
    supported_benchmarks: tuple = tuple(Benchmark)
    supported_scenarios: tuple = tuple(Scenario)
    supported_systems: tuple = (AdHocSystemClassification.CatchAll,)
    supported_harnesses: tuple = tuple(HarnessType)
    supported_power_settings: tuple = tuple(PowerSetting)
    default: object = None
    argparse_opts: dict | None = None
    no_argparse: bool = False

    def add_to_argparser(self, parser, allow_argparse_default=False):
        if self.no_argparse:
            return
        opts = dict(self.argparse_opts or {})
        if not allow_argparse_default and "default" in opts:
            raise RuntimeError(
                f"Field({self.name}) contains 'default' in argparse_opts, which is disallowed. "
                "If you wish to specify a default value, use the Field.default instead."
            )
        if self.value_type is bool:
            parser.add_argument(f"--{self.name}", action="store_true", **opts)
        else:
            parser.add_argument(f"--{self.name}", type=self.value_type, **opts)

    def supports(self, action, benchmark, scenario, system, workload_setting):
        """True when the workload is within every one of this field's lists (the harness type
        is checked only for harness actions and for action None)."""
        sys_id = system.get_id()
        return (
            (action is None or action in self.supported_actions)
            and benchmark in self.supported_benchmarks
            and scenario in self.supported_scenarios
            and any(elem == sys_id for elem in self.supported_systems)
            and (
                action not in (*_HARNESS_ACTIONS, None)
                or workload_setting.harness_type in self.supported_harnesses
            )
            and workload_setting.power_setting in self.supported_power_settings
        )


# The table: name, type, required, actions, benchmarks, scenarios, systems, harnesses, power
# (None: all). Short names below.
A = Action
B = Benchmark
S = Scenario
C = AdHocSystemClassification
H = HarnessType
GEN = (A.GenerateEngines,)
RUN = (A.RunHarness, A.RunAuditHarness)
RUN_GEN = (A.RunHarness, A.RunAuditHarness, A.GenerateEngines)
CV = (B.ResNet50, B.SSDMobileNet, B.SSDResNet34)
LWIS = (B.ResNet50, B.SSDMobileNet, B.SSDResNet34, B.UNET3D)
GPU = (C.GPUBased,)
XAV = (C.Xavier,)
OV = (C.IntelOpenVino,)
MAXQ = (PowerSetting.MaxQ,)
TRITON = (H.Triton,)

_TABLE = (
    ("gpu_batch_size", int, True, _ALL, _ALL, _ALL, GPU, _ALL, _ALL),
    ("dla_batch_size", int, True, _ALL, CV, (S.Offline,), XAV, _ALL, _ALL),
    ("verbose", bool, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("verbose_nvtx", bool, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("workspace_size", int, False, GEN, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("power_limit", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, MAXQ),
    ("cpu_freq", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, MAXQ),
    ("xavier_gpu_freq", int, False, _ALL, _ALL, _ALL, XAV, _ALL, MAXQ),
    ("xavier_dla_freq", int, False, _ALL, _ALL, _ALL, XAV, _ALL, MAXQ),
    ("xavier_cpu_freq", int, False, _ALL, _ALL, _ALL, XAV, _ALL, MAXQ),
    ("xavier_emc_freq", int, False, _ALL, _ALL, _ALL, XAV, _ALL, MAXQ),
    ("data_dir", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("preprocessed_data_dir", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("precision", str, True, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("input_dtype", str, True, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("input_format", str, True, _ALL, _ALL, _ALL, GPU, _ALL, _ALL),
    ("audio_fp16_input", bool, False, _ALL, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    (
        "force_calibration",
        bool,
        False,
        (A.GenerateEngines, A.Calibrate),
        _ALL,
        _ALL,
        _ALL,
        _ALL,
        _ALL,
    ),
    ("calib_batch_size", int, False, (A.Calibrate,), _ALL, _ALL, _ALL, _ALL, _ALL),
    ("calib_max_batches", int, False, (A.Calibrate,), _ALL, _ALL, _ALL, _ALL, _ALL),
    ("cache_file", str, False, (A.GenerateEngines, A.Calibrate), _ALL, _ALL, _ALL, _ALL, _ALL),
    ("calib_data_map", str, False, (A.Calibrate,), _ALL, _ALL, _ALL, _ALL, _ALL),
    ("benchmark", str, True, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("scenario", str, True, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("system", str, True, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("dla_core", int, False, (A.GenerateEngines, *RUN), CV, (S.Offline,), XAV, _ALL, _ALL),
    ("model_path", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("active_sms", int, False, GEN, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("log_dir", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("use_graphs", bool, False, RUN, _ALL, _ALL, GPU, _ALL, _ALL),
    ("nopipelined_execution", bool, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("nobatch_sorting", bool, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("noenable_audio_processing", bool, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("nouse_copy_kernel", bool, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("num_warmups", int, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("max_seq_length", int, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("audio_batch_size", int, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("audio_buffer_num_lines", int, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("dali_batches_issue_ahead", int, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("dali_pipeline_depth", int, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("disable_encoder_plugin", bool, False, RUN, (B.RNNT,), _ALL, _ALL, _ALL, _ALL),
    ("use_small_tile_gemm_plugin", bool, False, _ALL, (B.BERT, B.DLRM), _ALL, GPU, _ALL, _ALL),
    ("gemm_plugin_fairshare_cache_size", int, False, _ALL, (B.BERT, B.DLRM), _ALL, GPU, _ALL, _ALL),
    ("enable_interleaved", bool, False, _ALL, (B.BERT,), _ALL, GPU, _ALL, _ALL),
    ("devices", str, False, RUN, (*LWIS, B.BERT, B.RNNT), _ALL, _ALL, _ALL, _ALL),
    ("map_path", str, True, RUN, (*LWIS, B.RNNT), _ALL, _ALL, _ALL, _ALL),
    ("tensor_path", str, True, RUN, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("performance_sample_count", int, False, RUN, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("gpu_copy_streams", int, False, RUN_GEN, _ALL, _ALL, GPU, _ALL, _ALL),
    ("gpu_inference_streams", int, False, RUN_GEN, _ALL, _ALL, GPU, _ALL, _ALL),
    ("dla_copy_streams", int, False, RUN, CV, (S.Offline,), XAV, _ALL, _ALL),
    ("dla_inference_streams", int, False, RUN, CV, (S.Offline,), XAV, _ALL, _ALL),
    ("run_infer_on_copy_streams", bool, False, RUN, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("warmup_duration", float, False, RUN, (*LWIS, B.DLRM), _ALL, _ALL, _ALL, _ALL),
    ("use_direct_host_access", bool, False, RUN, LWIS, _ALL, XAV, _ALL, _ALL),
    ("use_deque_limit", bool, False, RUN, LWIS, _ALL, _ALL, _ALL, _ALL),
    ("deque_timeout_usec", int, False, RUN, (*LWIS, B.BERT, B.DLRM), _ALL, _ALL, _ALL, _ALL),
    ("use_batcher_thread_per_device", bool, False, RUN, LWIS, _ALL, _ALL, _ALL, _ALL),
    ("use_cuda_thread_per_device", bool, False, RUN, LWIS, _ALL, GPU, _ALL, _ALL),
    ("start_from_device", bool, False, RUN, _ALL, _ALL, (C.StartFromDeviceEnabled,), _ALL, _ALL),
    ("end_on_device", bool, False, RUN, (B.UNET3D,), _ALL, (C.EndOnDeviceEnabled,), _ALL, _ALL),
    ("max_dlas", int, False, RUN, CV, _ALL, XAV, _ALL, _ALL),
    ("coalesced_tensor", bool, False, RUN, (B.BERT, B.DLRM), _ALL, _ALL, _ALL, _ALL),
    ("assume_contiguous", bool, False, RUN, LWIS, _ALL, _ALL, _ALL, _ALL),
    ("complete_threads", int, False, RUN, (*LWIS, B.DLRM), _ALL, _ALL, _ALL, _ALL),
    ("use_same_context", bool, False, RUN, LWIS, _ALL, _ALL, _ALL, _ALL),
    ("mlperf_conf_path", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("user_conf_path", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("test_mode", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("min_duration", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("max_duration", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("min_query_count", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("max_query_count", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("qsl_rng_seed", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("sample_index_rng_seed", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("use_spin_wait", bool, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("fast", bool, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("logfile_suffix", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("logfile_prefix_with_datetime", bool, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("log_copy_detail_to_stdout", bool, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("disable_log_copy_summary_to_stdout", bool, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("log_mode", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("log_mode_async_poll_interval_ms", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("log_enable_trace", bool, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("use_triton", bool, True, RUN, _ALL, _ALL, _ALL, TRITON, _ALL),
    ("preferred_batch_size", str, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("max_queue_delay_usec", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("instance_group_count", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("request_timeout_usec", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("buffer_manager_thread_count", int, False, _ALL, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("gather_kernel_buffer_threshold", int, False, RUN, _ALL, _ALL, _ALL, TRITON, _ALL),
    ("batch_triton_requests", bool, False, RUN, _ALL, _ALL, _ALL, TRITON, _ALL),
    ("output_pinned_memory", bool, False, RUN, _ALL, _ALL, _ALL, TRITON, _ALL),
    ("use_concurrent_harness", bool, False, RUN, _ALL, _ALL, _ALL, TRITON, _ALL),
    ("num_concurrent_batchers", int, False, RUN, _ALL, _ALL, _ALL, TRITON, _ALL),
    ("num_concurrent_issuers", int, False, RUN, _ALL, _ALL, _ALL, TRITON, _ALL),
    ("dla_num_batchers", int, False, RUN, _ALL, _ALL, XAV, TRITON, _ALL),
    ("dla_num_issuers", int, False, RUN, _ALL, _ALL, XAV, TRITON, _ALL),
    ("server_target_qps", int, False, RUN, _ALL, (S.Server,), _ALL, _ALL, _ALL),
    ("server_target_latency_ns", int, False, RUN, _ALL, (S.Server,), _ALL, _ALL, _ALL),
    ("server_target_latency_percentile", float, False, RUN, _ALL, (S.Server,), _ALL, _ALL, _ALL),
    ("server_num_issue_query_threads", int, False, RUN, _ALL, (S.Server,), _ALL, _ALL, _ALL),
    ("schedule_rng_seed", int, False, RUN, _ALL, (S.Server,), _ALL, _ALL, _ALL),
    ("accuracy_log_rng_seed", int, False, RUN, _ALL, _ALL, _ALL, _ALL, _ALL),
    (
        "single_stream_expected_latency_ns",
        int,
        False,
        RUN,
        _ALL,
        (S.SingleStream,),
        _ALL,
        _ALL,
        _ALL,
    ),
    (
        "single_stream_target_latency_percentile",
        float,
        False,
        RUN,
        _ALL,
        (S.SingleStream,),
        _ALL,
        _ALL,
        _ALL,
    ),
    ("offline_expected_qps", int, False, RUN, _ALL, (S.Offline,), _ALL, _ALL, _ALL),
    ("sample_partition_path", str, False, RUN, (B.DLRM,), _ALL, _ALL, _ALL, _ALL),
    ("enable_interleaved_top_mlp", bool, False, _ALL, (B.DLRM,), _ALL, GPU, _ALL, _ALL),
    ("output_padding_granularity", int, False, _ALL, (B.DLRM,), _ALL, GPU, _ALL, _ALL),
    ("embedding_weights_on_gpu_part", float, False, _ALL, (B.DLRM,), _ALL, GPU, _ALL, _ALL),
    ("num_staging_threads", int, False, RUN, (B.DLRM,), _ALL, _ALL, _ALL, _ALL),
    ("num_staging_batches", int, False, RUN, (B.DLRM,), _ALL, _ALL, _ALL, _ALL),
    ("max_pairs_per_staging_thread", int, False, RUN, (B.DLRM,), _ALL, _ALL, _ALL, _ALL),
    ("split_threshold", int, False, RUN, (B.DLRM,), _ALL, _ALL, _ALL, _ALL),
    ("gpu_num_bundles", int, False, RUN, (B.DLRM,), _ALL, GPU, _ALL, _ALL),
    ("check_contiguity", bool, False, RUN, (B.DLRM,), _ALL, _ALL, _ALL, _ALL),
    ("use_jemalloc", bool, False, RUN, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("bert_opt_seqlen", int, False, GEN, (B.BERT,), _ALL, _ALL, _ALL, _ALL),
    ("graphs_max_seqlen", int, False, GEN, (B.BERT,), _ALL, _ALL, _ALL, _ALL),
    ("graph_specs", str, False, GEN, (B.BERT,), _ALL, _ALL, _ALL, _ALL),
    ("soft_drop", float, False, RUN, (B.BERT,), _ALL, _ALL, _ALL, _ALL),
    ("numa_config", bool, False, RUN, _ALL, _ALL, _ALL, _ALL, _ALL),
    ("batch_size", int, True, _ALL, _ALL, _ALL, OV, _ALL, _ALL),
    ("model_name", str, True, _ALL, _ALL, _ALL, OV, _ALL, _ALL),
    ("num_instances", int, True, _ALL, _ALL, _ALL, OV, _ALL, _ALL),
    ("ov_parameters", dict, True, _ALL, _ALL, _ALL, OV, _ALL, _ALL),
)


def _field(name, kind, required, actions, benchmarks, scenarios, systems, harnesses, powers):
    kw = {"required": required}
    for key, value in (
        ("supported_actions", actions),
        ("supported_benchmarks", benchmarks),
        ("supported_scenarios", scenarios),
        ("supported_systems", systems),
        ("supported_harnesses", harnesses),
        ("supported_power_settings", powers),
    ):
        if value is not None:
            kw[key] = tuple(value)
    return Field(name, kind, **kw)


Fields = unique(Enum("Fields", [(row[0], _field(*row)) for row in _TABLE]))


def get_applicable_fields(action, benchmark, scenario, system, workload_setting):
    """The fields the workload requires, and the other ones it accepts: (required, optional)."""
    required, optional = [], []
    for member in Fields:
        f = member.value
        if f.supports(action, benchmark, scenario, system, workload_setting):
            (required if f.required else optional).append(f)
    return required, optional


_MAIN = (
    Field("action", str, argparse_opts={"choices": Action.as_strings(), "required": True}),
    Field("benchmarks", str),
    Field("scenarios", str),
    Field("gpu_only", bool),
    Field("no_gpu", bool),
    Field("no_child_process", bool),
    Field("power", bool),
    Fields.power_limit.value,
    Fields.cpu_freq.value,
    Fields.xavier_gpu_freq.value,
    Fields.xavier_dla_freq.value,
    Fields.xavier_cpu_freq.value,
    Fields.xavier_emc_freq.value,
    Field("profile", str, argparse_opts={"choices": ["nsys", "nvprof", "ncu"]}),
    Field(
        "audit_test", str, argparse_opts={"choices": ["TEST01", "TEST04-A", "TEST04-B", "TEST05"]}
    ),
    Field("system_name", str),
    Field(
        "harness_type",
        str,
        default="auto",
        argparse_opts={"choices": ["auto", *HarnessType.as_strings()], "default": "auto"},
    ),
    Field(
        "accuracy_target",
        float,
        default=AccuracyTarget.k_99.value,
        argparse_opts={
            "choices": [t.value for t in AccuracyTarget],
            "default": AccuracyTarget.k_99.value,
        },
    ),
    Field(
        "power_setting",
        str,
        default=PowerSetting.MaxP.value.name,
        argparse_opts={
            "choices": PowerSetting.as_strings(),
            "default": PowerSetting.MaxP.value.name,
        },
    ),
    Field("config_ver", str),
)
MainArgs = unique(Enum("MainArgs", [(f.name, f) for f in _MAIN]))
