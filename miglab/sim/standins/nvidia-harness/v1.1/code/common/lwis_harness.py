# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# lwis_harness.py (LWISHarness) of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: executable ./build/bin/harness_default, flags from
# the LoadGen, LWIS and shared argument groups, jemalloc preloaded for Server, max_dlas=0 for a
# GPU-only run, then " --scenario <Scenario> --model <benchmark>". Written anew.
"""The LWIS harness (ResNet50 and the other vision benchmarks), stand-in."""

import os
import sys

sys.path.insert(0, os.getcwd())

import code.common.arguments as common_args  # noqa: E402
from code.common import args_to_string  # noqa: E402
from code.common.constants import Benchmark, Scenario  # noqa: E402
from code.common.harness import BaseBenchmarkHarness  # noqa: E402

response_postprocess_map = {Benchmark.SSDResNet34: "coco", Benchmark.SSDMobileNet: "coco"}


class LWISHarness(BaseBenchmarkHarness):
    def __init__(self, args, benchmark):
        super().__init__(args, benchmark)
        self.use_jemalloc = Scenario.Server == self.scenario
        self.flag_builder_custom_args = (
            common_args.LOADGEN_ARGS + common_args.LWIS_ARGS + common_args.SHARED_ARGS
        )

    def _get_harness_executable(self):
        return "./build/bin/harness_default"

    def _build_custom_flags(self, flag_dict):
        if self.has_dla:
            flag_dict["dla_engines"] = self.dla_engine
        if self.has_gpu and not self.has_dla:
            flag_dict["max_dlas"] = 0
        elif self.has_dla and not self.has_gpu:
            flag_dict["max_dlas"] = 1
        elif not self.has_gpu:
            raise ValueError("Cannot specify --no_gpu and --gpu_only at the same time")
        argstr = (
            f"{args_to_string(flag_dict)} --scenario {self.scenario.valstr()} --model {self.name}"
        )
        if self.name in response_postprocess_map:
            argstr += " --response_postprocess " + response_postprocess_map[self.name]
        return argstr
