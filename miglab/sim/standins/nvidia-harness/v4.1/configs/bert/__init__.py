# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/bert/
# __init__.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: BERT's GPUBaseConfig, with the real values.
import os
import sys

sys.path.insert(0, os.getcwd())

from code.common.constants import Benchmark  # noqa: E402

from configs.configuration import BenchmarkConfiguration  # noqa: E402


class GPUBaseConfig(BenchmarkConfiguration):
    benchmark = Benchmark.BERT

    tensor_path = (
        "build/preprocessed_data/squad_tokenized/input_ids.npy,"
        "build/preprocessed_data/squad_tokenized/segment_ids.npy,"
        "build/preprocessed_data/squad_tokenized/input_mask.npy"
    )
    precision = "int8"
    input_dtype = "int32"
    input_format = "linear"
    use_graphs = False
    bert_opt_seqlen = 384
    coalesced_tensor = True
