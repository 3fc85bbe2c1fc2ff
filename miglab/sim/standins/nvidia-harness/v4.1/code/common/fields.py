# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# fields.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: the config fields a ResNet50 / BERT config may
# set (name, type, whether required, which systems may use it), the command-line overrides
# (RUN_ARGS "--<field>=<value>", gpu_batch_size as "component:bs,..."), log_dir's default
# (LOG_DIR, else build/logs/default) and main.py's own arguments. Only the fields of these two
# benchmarks' datacenter configs, written anew.
"""Config fields and command-line arguments (stand-in)."""

from __future__ import annotations

import argparse
import os
import re
from code.common.constants import Benchmark, Scenario
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _anything(_system) -> bool:
    return True


@dataclass(frozen=True)
class Field:
    name: str
    value_type: type = str
    default: Any = None
    benchmarks: tuple[Benchmark, ...] = tuple(Benchmark)
    scenarios: tuple[Scenario, ...] = tuple(Scenario)
    systems: tuple[Callable, ...] = (_anything,)  # SystemClassifications predicates
    required: bool = False
    argparse: bool = True
    choices: tuple[str, ...] = ()

    def supports(self, benchmark, scenario, system) -> bool:
        return (
            benchmark in self.benchmarks
            and scenario in self.scenarios
            and all(f(system) for f in self.systems)
        )


def _fields():
    from code.common.systems.system_list import SystemClassifications as SC

    gpu, rn50, bert = (SC.gpu_based,), (Benchmark.ResNet50,), (Benchmark.BERT,)
    offline, server = (Scenario.Offline,), (Scenario.Server,)
    return [
        Field("system", object, argparse=False, required=True),
        Field("benchmark", object, argparse=False, required=True),
        Field("scenario", object, argparse=False, required=True),
        Field("gpu_batch_size", dict, systems=gpu, required=True),
        Field("input_dtype", str, required=True),
        Field("input_format", str, required=True),
        Field("precision", str, required=True),
        Field("tensor_path", str, required=True),
        Field("map_path", str, benchmarks=rn50),
        Field("gpu_copy_streams", int, systems=gpu),
        Field("gpu_inference_streams", int, systems=gpu),
        Field("use_graphs", bool, default=False, systems=gpu),
        Field("run_infer_on_copy_streams", bool, systems=gpu),
        Field("active_sms", int, systems=gpu),
        Field("use_deque_limit", bool, systems=gpu, benchmarks=rn50),
        Field("deque_timeout_usec", int, systems=gpu, benchmarks=rn50),
        Field("use_cuda_thread_per_device", bool, systems=gpu, benchmarks=rn50),
        Field("use_batcher_thread_per_device", bool, systems=gpu, benchmarks=rn50),
        Field("start_from_device", bool, systems=(SC.start_from_device_enabled,)),
        Field("end_on_device", bool, systems=(SC.end_on_device_enabled,)),
        Field("workspace_size", int, systems=gpu),
        Field("bert_opt_seqlen", int, benchmarks=bert),
        Field("coalesced_tensor", bool, benchmarks=bert),
        Field("enable_interleaved", bool, benchmarks=bert),
        Field("use_small_tile_gemm_plugin", bool, benchmarks=bert),
        Field("gemm_plugin_fairshare_cache_size", int, benchmarks=bert),
        Field("graphs_max_seqlen", int, benchmarks=bert, scenarios=server),
        Field("server_num_issue_query_threads", int, benchmarks=bert, scenarios=server),
        Field("soft_drop", float, benchmarks=bert, scenarios=server),
        Field("use_fp8", bool, benchmarks=bert),
        Field("vboost_slider", int, systems=gpu),
        Field("power_limit", int),
        Field("numa_config", str),
        Field("use_triton", bool),
        Field("offline_expected_qps", float, scenarios=offline, required=True),
        Field("server_target_qps", float, scenarios=server, required=True),
        Field("server_target_latency_ns", int, scenarios=server),
        Field("performance_sample_count", int),
        Field("performance_sample_count_override", int),
        Field(
            "test_mode",
            str,
            default="PerformanceOnly",
            choices=("SubmissionRun", "AccuracyOnly", "PerformanceOnly", "FindPeakPerformance"),
        ),
        Field("min_duration", int),
        Field("max_duration", int),
        Field("min_query_count", int),
        Field("max_query_count", int),
        Field("log_dir", str, default=os.environ.get("LOG_DIR", "build/logs/default")),
        Field("system_name", str),
    ]


def get_applicable_fields(benchmark, scenario, system):
    """(required, optional) Fields of a benchmark / scenario / KnownSystem."""
    fields = [f for f in _fields() if f.supports(benchmark, scenario, system)]
    return [f for f in fields if f.required], [f for f in fields if not f.required]


def command_line_overrides(fields, argv=None):
    """The fields given on the command line (RUN_ARGS), parsed; unknown arguments ignored."""
    parser = argparse.ArgumentParser(allow_abbrev=False)
    for f in fields:
        if not f.argparse:
            continue
        if f.value_type is bool:
            parser.add_argument(f"--{f.name}", action="store_true")
        elif f.value_type is dict:
            parser.add_argument(f"--{f.name}", type=str)
        else:
            opts = {"choices": f.choices} if f.choices else {}
            parser.add_argument(f"--{f.name}", type=f.value_type, **opts)
    found = {}
    for name, value in vars(parser.parse_known_args(argv)[0]).items():
        if not value:
            continue
        if name == "gpu_batch_size":
            if not re.fullmatch(r"^.+:\d+(?:,.+:\d+)*$", value):
                raise ValueError(
                    "Specifying gpu_batch_size or dla_batch_size in RUN_ARGs must follow the "
                    "format of component1:component_bs1,component2:component_bs2,... Wrong "
                    f"input: {value}"
                )
            value = {c: int(b) for c, b in (pair.split(":") for pair in value.split(","))}
        found[name] = value
    return found


def parse_main_args(argv=None):
    """main.py's own arguments (code/common/fields.py MainArgs)."""
    p = argparse.ArgumentParser(allow_abbrev=False)
    p.add_argument("--action", default=None)
    p.add_argument("--benchmarks", default=None)
    p.add_argument("--scenarios", default=None)
    p.add_argument("--harness_type", default="auto")
    p.add_argument("--accuracy_target", type=float, default=0.99)
    p.add_argument("--power_setting", default="MaxP")
    p.add_argument("--config_ver", default=None)
    p.add_argument("--system_name", default=None)
    p.add_argument("--no_gpu", action="store_true")
    p.add_argument("--gpu_only", action="store_true")
    p.add_argument("--no_child_process", action="store_true")
    return vars(p.parse_known_args(argv)[0])
