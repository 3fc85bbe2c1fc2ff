# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/__init__.py
# of github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549: the
# benchmark -> engine builder and harness name -> harness class maps (module paths and class
# names as in the real tree; only ResNet50 and BERT have stand-ins) and get_benchmark() /
# get_harness(), written anew. Note: this package shadows Python's own `code` module, as the
# real one does; the harness's scripts put the harness folder first on sys.path.
"""NVIDIA's harness code (stand-in): which builder and harness serve a benchmark."""

import os
import sys

sys.path.insert(0, os.getcwd())

from code.common import logging  # noqa: E402
from code.common.arguments import apply_overrides  # noqa: E402
from code.common.constants import Benchmark  # noqa: E402
from collections import namedtuple  # noqa: E402
from importlib import import_module  # noqa: E402

ModuleLocation = namedtuple("ModuleLocation", ("module_path", "cls_name"))
G_BENCHMARK_CLASS_MAP = {
    Benchmark.ResNet50: ModuleLocation("code.resnet50.tensorrt.ResNet50", "ResNet50"),
    Benchmark.SSDResNet34: ModuleLocation("code.ssd-resnet34.tensorrt.SSDResNet34", "SSDResNet34"),
    Benchmark.SSDMobileNet: ModuleLocation(
        "code.ssd-mobilenet.tensorrt.SSDMobileNet", "SSDMobileNet"
    ),
    Benchmark.BERT: ModuleLocation("code.bert.tensorrt.bert_var_seqlen", "BERTBuilder"),
    Benchmark.RNNT: ModuleLocation("code.rnnt.tensorrt.rnn-t_builder", "RNNTBuilder"),
    Benchmark.DLRM: ModuleLocation("code.dlrm.tensorrt.dlrm", "DLRMBuilder"),
    Benchmark.UNET3D: ModuleLocation("code.3d-unet.tensorrt.3d-unet", "UnetBuilder"),
}
G_HARNESS_CLASS_MAP = {
    "triton_cpu_harness": ModuleLocation("code.common.server_harness_cpu", "TritonHarnessCPU"),
    "triton_harness": ModuleLocation("code.common.server_harness", "TritonHarness"),
    "bert_harness": ModuleLocation("code.bert.tensorrt.harness", "BertHarness"),
    "dlrm_harness": ModuleLocation("code.dlrm.tensorrt.harness", "DLRMHarness"),
    "rnnt_harness": ModuleLocation("code.rnnt.tensorrt.harness", "RNNTHarness"),
    "lwis_harness": ModuleLocation("code.common.lwis_harness", "LWISHarness"),
    "profiler_harness": ModuleLocation("code.internal.profiler", "ProfilerHarness"),
}


def get_cls(module_loc):
    """The class a ModuleLocation names (ModuleNotFoundError for a benchmark without one here:
    the stand-in has ResNet50 and BERT only)."""
    return getattr(import_module(module_loc.module_path), module_loc.cls_name)


def _benchmark_of(conf):
    benchmark = conf["benchmark"]
    if not isinstance(benchmark, Benchmark):
        logging.warning(
            "'benchmark' in config is not Benchmark Enum member. This behavior is deprecated."
        )
        benchmark = Benchmark.get_match(benchmark)
        if benchmark is None:
            raise ValueError(
                f"'benchmark' in config is not of supported type '{type(conf['benchmark'])}'"
            )
    return benchmark


def get_benchmark(conf):
    """The engine builder of the config's benchmark, initialised with the config."""
    benchmark = _benchmark_of(conf)
    if benchmark not in G_BENCHMARK_CLASS_MAP:
        raise ValueError(f"Unknown benchmark: {benchmark}")
    cls = get_cls(G_BENCHMARK_CLASS_MAP[benchmark])
    # (the enum on the left, as NVIDIA's code advises: its __eq__ knows the aliases)
    if Benchmark.BERT == benchmark:  # noqa: SIM300 - BERT's engines take the streams
        conf = apply_overrides(conf, ["gpu_inference_streams"])
    return cls(conf)


def get_harness(config, profile):
    """The harness for the config (Triton, BERT's, DLRM's, RNN-T's or LWIS) and the config."""
    benchmark = _benchmark_of(config)
    if config.get("use_cpu"):
        key, server = "triton_cpu_harness", "triton"
    elif config.get("use_triton"):
        key, server = "triton_harness", "triton"
    elif Benchmark.BERT == benchmark:  # noqa: SIM300
        key, server = "bert_harness", "custom"
    elif Benchmark.DLRM == benchmark:  # noqa: SIM300
        key, server = "dlrm_harness", "custom"
    elif Benchmark.RNNT == benchmark:  # noqa: SIM300
        key, server = "rnnt_harness", "custom"
    else:
        key, server = "lwis_harness", "lwis"
    config["inference_server"] = server
    harness = get_cls(G_HARNESS_CLASS_MAP[key])(config, benchmark)
    if profile is not None:
        try:
            harness = get_cls(G_HARNESS_CLASS_MAP["profiler_harness"])(harness, profile)
        except BaseException:
            logging.info("Could not load profiler: Are you an internal user?")
    return harness, config
