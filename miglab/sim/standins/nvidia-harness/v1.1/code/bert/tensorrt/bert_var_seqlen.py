# STAND-IN (miglab's simulated lab), not NVIDIA software. Stands for closed/NVIDIA/code/bert/
# tensorrt/bert_var_seqlen.py (class BERTBuilder) of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: same module path, class name, default workspace
# (5 GiB, "Using workspace size: ..." logged), sequence length 384, profiles = the config's
# gpu_inference_streams, and engine name
# bert-<Scenario>-gpu-<precision>_S_384_B_<batch>_P_<profiles>_vs[_il].<config_ver>.plan;
# no ONNX model, no TensorRT (code/common/builder.py).
"""BERT's engine builder (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

from code.common import dict_get, logging  # noqa: E402
from code.common.builder import TensorRTEngineBuilder  # noqa: E402
from code.common.constants import Benchmark  # noqa: E402


class BERTBuilder(TensorRTEngineBuilder):
    def __init__(self, args):
        workspace_size = dict_get(args, "workspace_size", default=(5 << 30))
        logging.info(f"Using workspace size: {workspace_size}")
        super().__init__(args, Benchmark.BERT, workspace_size=workspace_size)
        self.seq_len = 384
        self.bert_opt_seqlen = dict_get(args, "bert_opt_seqlen", default=self.seq_len)
        self.num_profiles = args.get("gpu_inference_streams", 1)
        self.is_int8 = args["precision"] == "int8"
        self.enable_interleaved = bool(self.is_int8 and args.get("enable_interleaved", False))
        self.use_small_tile_gemm_plugin = args.get("use_small_tile_gemm_plugin", False)
        if self.enable_interleaved and self.use_small_tile_gemm_plugin:
            raise AssertionError("Small-Tile GEMM Plugin doesn't support interleaved format.")

    def _get_engine_fpath(self, device_type, batch_size):
        device_type = self.device_type if device_type is None else device_type
        meta = f"S_{self.seq_len}_B_{self.batch_size}_P_{self.num_profiles}_vs"
        if self.enable_interleaved:
            meta += "_il"
        base = f"{self.name}-{self.scenario.valstr()}-{device_type}-{self.precision}"
        return f"{self.engine_dir}/{base}_{meta}.{self.config_ver}.plan"

    def _engine_note(self):
        note = super()._engine_note()
        note.update(seq_len=self.seq_len, profiles=self.num_profiles)
        return note
