# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/resnet50/
# __init__.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: ResNet50's GPUBaseConfig, with the real values.
import os
import sys

sys.path.insert(0, os.getcwd())

from code.common.constants import Benchmark  # noqa: E402

from configs.configuration import BenchmarkConfiguration  # noqa: E402


class GPUBaseConfig(BenchmarkConfiguration):
    benchmark = Benchmark.ResNet50
    input_dtype = "int8"
    input_format = "linear"
    precision = "int8"
    map_path = "data_maps/imagenet/val_map.txt"
    tensor_path = "build/preprocessed_data/imagenet/ResNet50/int8_linear"
