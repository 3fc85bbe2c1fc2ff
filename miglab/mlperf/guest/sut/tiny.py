"""Tiny ONNX models made with ``onnx.helper`` (seeded random weights), for tests and smoke runs.

``python -m miglab.mlperf.run --sut onnxruntime --model tiny-conv`` writes one into the run's
work folder; nothing is downloaded. They are no MLPerf model: a run on one exercises LoadGen, the
SUT and the results tree only, and its ``miglab_run.json`` says ``weights: random``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["TINY_MODELS", "make_tiny_model"]

TINY_MODELS = ("tiny-conv", "tiny-mlp")


def make_tiny_model(path: str | Path, kind: str = "tiny-conv", seed: int = 0) -> Path:
    """Write a small ONNX model: ``tiny-conv`` (N,3,32,32 -> conv 8x3x3, ReLU, global average
    pool, linear -> N,10) or ``tiny-mlp`` (N,64 -> 128 ReLU -> N,10); batch dimension free."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)

    def init(name, shape, scale=0.1):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name=name
        )

    if kind == "tiny-conv":
        x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 32, 32])
        inits = [init("w_conv", (8, 3, 3, 3)), init("b_conv", (8,)), init("w_fc", (8, 10))]
        inits.append(init("b_fc", (10,)))
        nodes = [
            helper.make_node("Conv", ["input", "w_conv", "b_conv"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("GlobalAveragePool", ["r"], ["p"]),
            helper.make_node("Flatten", ["p"], ["f"], axis=1),
            helper.make_node("Gemm", ["f", "w_fc", "b_fc"], ["logits"]),
        ]
    elif kind == "tiny-mlp":
        x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 64])
        inits = [init("w1", (64, 128)), init("b1", (128,)), init("w2", (128, 10))]
        inits.append(init("b2", (10,)))
        nodes = [
            helper.make_node("Gemm", ["input", "w1", "b1"], ["h"]),
            helper.make_node("Relu", ["h"], ["hr"]),
            helper.make_node("Gemm", ["hr", "w2", "b2"], ["logits"]),
        ]
    else:
        raise ValueError(f"unknown tiny model {kind!r} (use {', '.join(TINY_MODELS)})")
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])
    graph = helper.make_graph(nodes, kind.replace("-", "_"), [x], [y], initializer=inits)
    model = helper.make_model(
        graph, producer_name="miglab", opset_imports=[helper.make_opsetid("", 17)]
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    return out
