# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/bert/
# __init__.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: NVIDIA's BERT base configs GPUBaseConfig and
# CPUBaseConfig with their values.
# ruff: noqa: E402, E501, F401, I001

import os
import sys

sys.path.insert(0, os.getcwd())

from code.common.constants import Benchmark
from configs.configuration import BenchmarkConfiguration


class GPUBaseConfig(BenchmarkConfiguration):
    benchmark = Benchmark.BERT

    tensor_path = "${PREPROCESSED_DATA_DIR}/squad_tokenized/input_ids.npy,${PREPROCESSED_DATA_DIR}/squad_tokenized/segment_ids.npy,${PREPROCESSED_DATA_DIR}/squad_tokenized/input_mask.npy"
    precision = "int8"
    input_dtype = "int32"
    input_format = "linear"
    use_graphs = False
    bert_opt_seqlen = 384
    coalesced_tensor = True


class CPUBaseConfig(BenchmarkConfiguration):
    benchmark = Benchmark.BERT

    tensor_path = "${PREPROCESSED_DATA_DIR}/squad_tokenized/input_ids.npy,${PREPROCESSED_DATA_DIR}/squad_tokenized/input_mask.npy,${PREPROCESSED_DATA_DIR}/squad_tokenized/segment_ids.npy"
    input_dtype = "fp32"
    precision = "fp32"
    use_triton = True
    model_name = "bert_int8_openvino"
    bert_opt_seqlen = 384
    coalesced_tensor = True
