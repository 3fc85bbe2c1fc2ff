# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/bert/
# tensorrt/harness.py (BertHarness) of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: executable ./build/bin/harness_bert, file checks
# disabled (a missing engine is only noted; the binary then fails to load it), the engine name
# bert-<Scenario>-gpu-<precision>_S_384_B_<batch>_P_<gpu_inference_streams>_vs[_il].<ver>.plan,
# the flags it passes, then " --scenario <Scenario> --model bert". Written anew.
"""BERT's harness (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import code.common.arguments as common_args  # noqa: E402
from code.common import args_to_string  # noqa: E402
from code.common.harness import BaseBenchmarkHarness  # noqa: E402


class BertHarness(BaseBenchmarkHarness):
    def __init__(self, args, benchmark):
        self.enable_interleaved = False
        self.is_int8 = args["precision"] == "int8"
        if self.is_int8 and "enable_interleaved" in args:
            self.enable_interleaved = args["enable_interleaved"]
        super().__init__(args, benchmark, skip_file_checks=True)
        self.flag_builder_custom_args = [
            *common_args.LOADGEN_ARGS,
            *common_args.SHARED_ARGS,
            "gpu_inference_streams",
            "gpu_copy_streams",
            "gpu_batch_size",
            "graphs_max_seqlen",
            "soft_drop",
            "server_num_issue_query_threads",
            "devices",
            "graph_specs",
        ]

    def _get_harness_executable(self):
        return "./build/bin/harness_bert"

    def _build_custom_flags(self, flag_dict):
        return (
            f"{args_to_string(flag_dict)} --scenario {self.scenario.valstr()} --model {self.name}"
        )

    def _get_engine_fpath(self, device_type, batch_size):
        profiles = self.args.get("gpu_inference_streams", 1)
        il = "_il" if self.enable_interleaved else ""
        return (
            f"{self.engine_dir}/{self.name}-{self.scenario.valstr()}-{device_type}-"
            f"{self.precision}_S_384_B_{batch_size}_P_{profiles}_vs{il}.{self.config_ver}.plan"
        )
