# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# harness.py (BaseBenchmarkHarness), code/common/lwis_harness.py, code/bert/tensorrt/harness.py
# and code/actionhandler/run_harness.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183, written anew with the real facts:
#   - engines: build/engines/<system id>/<benchmark>/<Scenario>/<benchmark>-<Scenario>-gpu-
#     <component>-b<batch>-<precision>.<config_ver>.plan, one per gpu_batch_size component; a
#     missing one stops the run with "File <path> does not exist.";
#   - harness binary: ./build/bin/harness_default (LWIS: ResNet50), ./build/bin/harness_bert;
#   - logs: <log_dir>/<system id>_TRT[_MaxQ|_HeteroMultiUse]/<resnet50|bert-99>/<Scenario>/
#     (get_full_log_dir; log_dir from LOG_DIR, which Makefile.const sets to build/logs/<time>),
#     LoadGen's files "mlperf_log_*" there, then metadata.json with the run's result and the
#     summary "<result key>: <value>, Result is <VALID|INVALID>, 10-min runtime requirement met:
#     <bool>" (INVALID whenever the run was shorter than 600000 ms);
#   - performance_sample_count: the config's, else 2048 for ResNet50 and 10833 for BERT;
#   - Hopper (SM 90): `sudo nvidia-smi boost-slider --vboost <vboost_slider, default 0>` before the
#     run and `... --vboost 0` after it; a failing command fails the run.
# STAND-IN difference: no TensorRT, no harness binary process: the run is the REAL LoadGen
# against the shared service-rate model (code/common/standin_loadgen.py, from
# miglab/sim/standins/nvidia-harness/common), sized by the compute slices and the number of the
# detected vGPUs (MIG devices: their GPCs; GPUs: the vGPU type's "-<g>-");
# no measurements/ user.conf is written; the accuracy check is not made (a stand-in SUT returns
# no predictions).
"""Engine paths, log folders and the harness run (stand-in)."""

from __future__ import annotations

import json
import os
from code.common import dict_get, logging, run_command
from code.common.constants import G_HIGH_ACC_ENABLED_BENCHMARKS, VERSION, HarnessType
from code.common.systems.accelerator import MIG
from code.common.systems.system_list import SystemClassifications

HARNESS_METADATA_FILE = "metadata.json"
STANDIN_ENGINE = "STAND-IN engine (miglab simulated lab): no TensorRT plan inside"
# NVIDIA's QSL sizes (harness.py: ResNet50 2048; BERT the submission checker's 10833)
QSL_SIZE = {"resnet50": 2048, "bert-99": 10833, "bert-99.9": 10833}


class BaseBenchmarkHarness:
    def __init__(self, args, benchmark):
        self.args = args
        self.benchmark = benchmark
        self.name = benchmark.valstr()
        self.system_id = args["system_id"]
        self.scenario = args["scenario"]
        self.config_ver = args["config_ver"]
        self.precision = args["precision"]
        self.engine_dir = f"./build/engines/{self.system_id}/{self.name}/{self.scenario.valstr()}"
        lwis = args["workload_setting"].harness_type == HarnessType.LWIS
        self.executable = "./build/bin/harness_default" if lwis else "./build/bin/harness_bert"

    # --- names -------------------------------------------------------------------------------
    def _get_engine_fpath(self, device_type, component, batch):
        scenario = self.scenario.valstr()
        return (
            f"{self.engine_dir}/{self.name}-{scenario}-{device_type}-{component}-b{batch}-"
            f"{self.precision}.{self.config_ver}.plan"
        )

    def engine_paths(self):
        return {
            self._get_engine_fpath("gpu", c, b): (c, b)
            for c, b in dict_get(self.args, "gpu_batch_size", {}).items()
        }

    def get_system_name(self, add_trt=True):
        override = dict_get(self.args, "system_name", None)
        if override not in (None, ""):
            return override
        name = f"{self.system_id}_TRT" if add_trt else self.system_id
        if "maxq" in self.config_ver.lower():
            name += "_MaxQ"
        if "hetero" in self.config_ver.lower():
            name += "_HeteroMultiUse"
        return name

    def _get_submission_benchmark_name(self):
        if dict_get(self.args, "accuracy_level", "99%") == "99.9%":
            return self.name + "-99.9"
        if self.benchmark in G_HIGH_ACC_ENABLED_BENCHMARKS:
            return self.name + "-99"
        return self.name

    def get_full_log_dir(self):
        return os.path.join(
            self.args["log_dir"],
            self.get_system_name(),
            self._get_submission_benchmark_name(),
            self.scenario.valstr(),
        )

    def check_file_exists(self, f):
        if not os.path.isfile(f):
            if dict_get(self.args, "skip_file_checks", False):
                print(f"Note: File {f} does not exist. Attempting to continue regardless.")
                return False
            raise RuntimeError(f"File {f} does not exist.")
        return True

    # --- generate_engines ----------------------------------------------------------------------
    def generate_engines(self):
        for path, (component, batch) in self.engine_paths().items():
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                json.dump(
                    {
                        "standin": STANDIN_ENGINE,
                        "benchmark": self.name,
                        "scenario": self.scenario.valstr(),
                        "component": component,
                        "batch_size": batch,
                        "precision": self.precision,
                        "config_ver": self.config_ver,
                        "system_id": self.system_id,
                    },
                    f,
                    indent=2,
                )
            logging.info(f"Wrote STAND-IN engine {path}")

    # --- run_harness ---------------------------------------------------------------------------
    def _slices(self):
        """(compute slices of one device, GPU slices, devices) of the detected accelerators,
        for the service model."""
        from code.common.standin_loadgen import compute_slices_of, gpu_slices_of

        layout = self.args["system"].accelerator_conf.layout
        accelerator, count = next(iter(layout.items()))
        name = str(accelerator.name)
        total = gpu_slices_of(name)
        if isinstance(accelerator, MIG):
            each = int(accelerator.num_gpcs)
        else:
            each = compute_slices_of(name) or total
        return each, total, count

    def _set_vboost(self, value):
        logging.info(f"setting vboost to {value if value != 0 else 'gpu default'}")
        run_command(f"sudo nvidia-smi boost-slider --vboost {value}")

    def run_harness(self):
        from code.common.standin_loadgen import run

        engines = self.engine_paths()
        for path in engines:
            self.check_file_exists(path)
        self.check_file_exists(self.executable)
        hopper = SystemClassifications.is_hopper()
        if hopper:
            self._set_vboost(dict_get(self.args, "vboost_slider", 0))
        try:
            slices, total, devices = self._slices()
            offline = self.scenario.valstr() == "Offline"
            batch = sum(b for _, b in engines.values()) or 1
            psc = dict_get(
                self.args,
                "performance_sample_count_override",
                dict_get(self.args, "performance_sample_count", None),
            )
            result = run(
                self._get_submission_benchmark_name(),
                self.scenario.valstr(),
                dict_get(self.args, "test_mode", "PerformanceOnly"),
                self.get_full_log_dir(),
                compute_slices=slices,
                gpu_slices=total,
                devices=devices,
                batch_size=batch,
                expected_qps=self.args.get("offline_expected_qps") if offline else None,
                target_qps=None if offline else self.args.get("server_target_qps"),
                min_duration_ms=self.args.get("min_duration"),
                min_query_count=self.args.get("min_query_count"),
                max_duration_ms=self.args.get("max_duration"),
                max_query_count=self.args.get("max_query_count"),
                performance_sample_count=psc or QSL_SIZE[self._get_submission_benchmark_name()],
                server_target_latency_ns=self.args.get("server_target_latency_ns"),
            )
        finally:
            if hopper:
                self._set_vboost(0)
        return self._results(result)

    def _results(self, result):
        from code.common.standin_loadgen import read_detail_log

        key = result["result_key"]
        found = read_detail_log(
            self.get_full_log_dir(),
            ["result_validity", key, "early_stopping_met", "effective_min_duration_ms"],
        )
        data = dict(found)
        data.update(
            {
                "system_name": self.get_system_name(),
                "benchmark_short": self.benchmark.valstr(),
                "benchmark_full": self._get_submission_benchmark_name(),
                "scenario": self.scenario.valstr(),
                "test_mode": dict_get(self.args, "test_mode", "PerformanceOnly"),
                "tensorrt_version": "STAND-IN (no TensorRT)",
                "mlperf_inference_version": VERSION,
                "scenario_key": key,
                "standin": result["standin"],
                "standin_rate": result["rate"],
                "standin_compute_slices": result["compute_slices"],
                "standin_devices": result.get("devices", 1),
            }
        )
        return data


def run_harness_action(benchmark_conf, workload_setting):
    """What RunHarnessHandler does: print the config, run, write metadata.json, log the
    result; any failure: the traceback, then "Run harness failed!"."""
    import sys
    import traceback

    for key, value in benchmark_conf.items():
        print(f"{key} : {value}")
    harness = BaseBenchmarkHarness(benchmark_conf, benchmark_conf["benchmark"])
    try:
        data = harness.run_harness()
        data["config_name"] = "-".join(
            [harness.get_system_name(), workload_setting.shortname(), harness.scenario.valstr()]
        )
        if data["test_mode"] == "AccuracyOnly":
            data["summary_string"] = "Accuracy run detected."
            with open(os.path.join(harness.get_full_log_dir(), "accuracy.txt"), "w") as f:
                f.write("STAND-IN (miglab simulated lab): no accuracy, the SUT returns no data\n")
        else:
            key = data["scenario_key"]
            met = data.get("effective_min_duration_ms", 0) >= 600000
            validity = data.get("result_validity", "UNKNOWN_VALIDITY") if met else "INVALID"
            data["summary_string"] = (
                f"{key}: {data.get(key)}, Result is {validity}, "
                f"10-min runtime requirement met: {met}"
            )
        logging.info(f"Result: {data['summary_string']}")
    except Exception:
        traceback.print_exc(file=sys.stdout)
        raise RuntimeError("Run harness failed!") from None
    with open(os.path.join(harness.get_full_log_dir(), HARNESS_METADATA_FILE), "w") as f:
        json.dump(data, f, indent=4, sort_keys=True)
    return data
