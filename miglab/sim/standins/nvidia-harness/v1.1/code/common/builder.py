# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows the engine naming and layout of
# closed/NVIDIA/code/common/builder.py (TensorRTEngineBuilder) of
# github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549:
# engines go to ./build/engines/<system id>/<benchmark>/<Scenario>/ named
# <benchmark>-<Scenario>-<gpu|dla>-b<batch>-<precision>.<config_ver>.plan. There is no TensorRT
# here: build_engines() writes a small JSON file that says it is a stand-in (what the stand-in
# harness binary checks and "loads"), not a serialized engine. Written anew.
"""Engine builders of the harness (stand-in: no TensorRT, the engine is a JSON note)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import json  # noqa: E402
import time  # noqa: E402
from code.common import dict_get, logging  # noqa: E402
from code.common.constants import Scenario  # noqa: E402

STANDIN_ENGINE = "miglab-standin-engine/1"


class TensorRTEngineBuilder:
    """What every engine builder knows: where its engine goes and what it is built for."""

    def __init__(self, args, benchmark, workspace_size=(1 << 30)):
        self.args = args
        self.benchmark = benchmark
        self.name = benchmark.valstr()
        self.verbose = dict_get(args, "verbose", default=False)
        self.system_id = args["system_id"]
        self.scenario = args["scenario"]
        self.config_ver = args["config_ver"]
        self.engine_dir = f"./build/engines/{self.system_id}/{self.name}/{self.scenario.valstr()}"
        self.precision = args["precision"]
        self.input_dtype = args.get("input_dtype")
        self.batch_size = dict_get(args, "batch_size", default=1)
        self.workspace_size = workspace_size
        self.device_type = "gpu"
        self.dla_core = args.get("dla_core", None)
        if self.dla_core is not None:
            logging.info(f"Using DLA: Core {self.dla_core}")
            self.device_type = "dla"
        if Scenario.SingleStream == self.scenario:
            self.batch_size = 1
        self.initialized = False

    def initialize(self):
        self.initialized = True

    def _get_engine_fpath(self, device_type, batch_size):
        device_type = self.device_type if device_type is None else device_type
        batch_size = self.batch_size if batch_size is None else batch_size
        return (
            f"{self.engine_dir}/{self.name}-{self.scenario.valstr()}-{device_type}-"
            f"b{batch_size}-{self.precision}.{self.config_ver}.plan"
        )

    def _engine_note(self):
        return {
            "format": STANDIN_ENGINE,
            "standin": "STAND-IN engine written by miglab's simulated lab: not a TensorRT plan",
            "benchmark": self.name,
            "scenario": self.scenario.valstr(),
            "system_id": self.system_id,
            "device_type": self.device_type,
            "batch_size": self.batch_size,
            "precision": self.precision,
            "input_dtype": self.input_dtype,
            "config_ver": self.config_ver,
            "workspace_size": self.workspace_size,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }

    def build_engines(self):
        """Write the engine file (a stand-in's JSON note) where the real engine goes."""
        if not self.initialized:
            self.initialize()
        os.makedirs(self.engine_dir, exist_ok=True)
        engine = self._get_engine_fpath(self.device_type, self.batch_size)
        logging.info(f"Building {engine}")
        with open(engine, "w") as f:
            json.dump(self._engine_note(), f, indent=2)
            f.write("\n")
        logging.info(f"Saved engine to {engine}")

    def calibrate(self):
        raise RuntimeError("the stand-in harness has no TensorRT: nothing to calibrate")
