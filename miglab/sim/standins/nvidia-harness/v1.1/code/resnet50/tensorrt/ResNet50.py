# STAND-IN (miglab's simulated lab), not NVIDIA software. Stands for closed/NVIDIA/code/resnet50/
# tensorrt/ResNet50.py (class ResNet50, a TensorRTEngineBuilder) of
# github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549: same
# module path, class name and engine name; no ONNX model, no TensorRT (code/common/builder.py).
"""ResNet50's engine builder (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

from code.common import dict_get  # noqa: E402
from code.common.builder import TensorRTEngineBuilder  # noqa: E402
from code.common.constants import Benchmark  # noqa: E402


class ResNet50(TensorRTEngineBuilder):
    def __init__(self, args):
        super().__init__(
            args, Benchmark.ResNet50, workspace_size=dict_get(args, "workspace_size", 1 << 30)
        )
        self.model_path = dict_get(args, "model_path", "build/models/ResNet50/resnet50_v1.onnx")
