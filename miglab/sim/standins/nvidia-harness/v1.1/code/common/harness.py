# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# harness.py (BaseBenchmarkHarness) of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549, written anew, with the same facts:
# - engines looked for in ./build/engines/<system id>/<benchmark>/<Scenario>/ under the builder's
#   names; a missing engine or harness executable: RuntimeError "File <path> does not exist."
#   (harnesses with skip_file_checks, BERT's, print "Note: File ... does not exist. Attempting to
#   continue regardless, as hard file checks are disabled." instead);
# - LoadGen's logs go to <log_dir>/<system name>/<benchmark>/<Scenario>/, where the system name is
#   the system id (prefixed DGX-A100_ / DGX-Station-A100_ for the A100-SXM ids) + "_TRT" +
#   TENSORRT_VERSION (empty in this round: "<system id>_TRT") and the benchmark folder is the
#   submission name (resnet50, bert-99, bert-99.9);
# - performance_sample_count per benchmark (ResNet50 2048, BERT 10833) unless set;
# - the measurements/ entry (user.conf...) is written and the executable run with the flags;
# - the result string: "<result key>: <value>, Result is <VALID|INVALID>".
"""Base of the harnesses: engines, flags, log folder, result (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import code.common.arguments as common_args  # noqa: E402
from code.common import args_to_string, dict_get, logging, run_command  # noqa: E402
from code.common.constants import G_HIGH_ACC_ENABLED_BENCHMARKS, Benchmark  # noqa: E402
from code.common.result_parser import (  # noqa: E402
    from_loadgen_by_keys,
    scenario_loadgen_log_keys,
)
from code.common.submission import TENSORRT_VERSION, generate_measurements_entry  # noqa: E402

plugin_map = {
    Benchmark.DLRM: ["build/plugins/DLRMInteractionsPlugin/libdlrminteractionsplugin.so"],
    Benchmark.SSDMobileNet: ["build/plugins/NMSOptPlugin/libnmsoptplugin.so"],
    Benchmark.SSDResNet34: ["build/plugins/NMSOptPlugin/libnmsoptplugin.so"],
    Benchmark.UNET3D: [
        "build/plugins/pixelShuffle3DPlugin/libpixelshuffle3dplugin.so",
        "build/plugins/conv3D1X1X1K4Plugin/libconv3D1X1X1K4Plugin.so",
    ],
}

benchmark_qsl_size_map = {
    Benchmark.BERT: 10833,
    Benchmark.DLRM: 204800,
    Benchmark.RNNT: 2513,
    Benchmark.ResNet50: 2048,
    Benchmark.SSDMobileNet: 1024,
    Benchmark.SSDResNet34: 64,
    Benchmark.UNET3D: 16,
}

system_name_map = [("A100-SXM-80GBx4", "DGX-Station-A100"), ("A100-SXM", "DGX-A100")]


class BaseBenchmarkHarness:
    """Runs a harness executable for one benchmark, scenario and system."""

    def __init__(self, args, benchmark, skip_file_checks=False):
        self.args = args
        self.benchmark = benchmark
        self.name = benchmark.valstr()
        self.verbose = dict_get(args, "verbose", default=None)
        if self.verbose:
            logging.info(f"===== Harness arguments for {self.name} =====")
            for key in args:
                logging.info(f"{key}={args[key]}")
        self.system_id = args["system_id"]
        self.scenario = args["scenario"]
        self.config_ver = args["config_ver"]
        self.engine_dir = f"./build/engines/{self.system_id}/{self.name}/{self.scenario.valstr()}"
        self.precision = args["precision"]
        self.has_gpu = dict_get(args, "gpu_batch_size", default=None) is not None
        self.has_dla = dict_get(args, "dla_batch_size", default=None) is not None
        self.generate_conf_files_only = False
        if dict_get(self.args, "generate_conf_files_only", False):
            logging.info("Only generating measurements/ configuration entries")
            self.generate_conf_files_only = True
            self.args["generate_conf_files_only"] = None
        self.skip_file_checks = skip_file_checks or self.generate_conf_files_only
        self.gpu_engine = None
        self.dla_engine = None
        self.enumerate_engines()
        self.executable = self._get_harness_executable()
        self.check_file_exists(self.executable)
        self.use_jemalloc = False
        self.env_vars = os.environ.copy()
        self.flag_builder_custom_args = []

    def _get_harness_executable(self):
        raise NotImplementedError("BaseBenchmarkHarness cannot be called directly")

    def _build_custom_flags(self, flag_dict):
        return flag_dict

    def _handle_harness_result(self, result):
        return result

    def _get_engine_fpath(self, device_type, batch_size):
        return (
            f"{self.engine_dir}/{self.name}-{self.scenario.valstr()}-{device_type}-b{batch_size}-"
            f"{self.precision}.{self.config_ver}.plan"
        )

    def _append_config_ver_name(self, system_name):
        if "maxq" in self.config_ver.lower():
            system_name += "_MaxQ"
        if "hetero" in self.config_ver.lower():
            system_name += "_HeteroMultiUse"
        return system_name

    def get_system_name(self, add_trt=True):
        override = dict_get(self.args, "system_name", default=None)
        if override not in {None, ""}:
            return override
        name = self.system_id
        for keyword, prefix in system_name_map:
            if keyword in self.system_id:
                name = f"{prefix}_{name}"
                break
        if add_trt:
            name = f"{name}_TRT{TENSORRT_VERSION}"
        return self._append_config_ver_name(name)

    def _get_submission_benchmark_name(self):
        full = self.name
        if dict_get(self.args, "accuracy_level", "99%") == "99.9%":
            full += "-99.9"
        elif self.name in G_HIGH_ACC_ENABLED_BENCHMARKS:
            full += "-99"
        return full

    def get_full_log_dir(self):
        return os.path.join(
            self.args["log_dir"],
            self.get_system_name(),
            self._get_submission_benchmark_name(),
            self.scenario.valstr(),
        )

    def enumerate_engines(self):
        if self.has_gpu:
            self.gpu_engine = self._get_engine_fpath("gpu", self.args["gpu_batch_size"])
            self.check_file_exists(self.gpu_engine)
        if self.has_dla:
            self.dla_engine = self._get_engine_fpath("dla", self.args["dla_batch_size"])
            self.check_file_exists(self.dla_engine)

    def check_file_exists(self, f):
        if os.path.isfile(f):
            return
        if self.skip_file_checks:
            print(
                f"Note: File {f} does not exist. Attempting to continue regardless, as hard file "
                "checks are disabled."
            )
        else:
            raise RuntimeError(f"File {f} does not exist.")

    def build_default_flags(self):
        flags = {"verbose": self.verbose}
        if self.name in plugin_map:
            for plugin in plugin_map[self.name]:
                self.check_file_exists(plugin)
            flags["plugins"] = ",".join(plugin_map[self.name])
        log_dir = self.get_full_log_dir()
        os.makedirs(log_dir, exist_ok=True)
        flags["logfile_outdir"] = log_dir
        flags["logfile_prefix"] = "mlperf_log_"
        count = dict_get(self.args, "performance_sample_count", None)
        if count is not None:
            flags["performance_sample_count"] = count
        elif benchmark_qsl_size_map[self.name] > 0:
            flags["performance_sample_count"] = benchmark_qsl_size_map[self.name]
        else:
            flags["performance_sample_count"] = self.args["gpu_batch_size"]
        for arg in self.flag_builder_custom_args:
            value = dict_get(self.args, arg, None)
            if value is not None:
                flags[arg] = value
        return flags

    def build_scenario_specific_flags(self):
        flags = {}
        for arg in common_args.getScenarioMetricArgs(self.scenario):
            value = dict_get(self.args, arg, None)
            if value is None:
                raise ValueError(f"Missing required key {arg}")
            flags[arg] = value
        return flags

    def prepend_ld_preload(self, so_path):
        old = self.env_vars.get("LD_PRELOAD")
        self.env_vars["LD_PRELOAD"] = f"{so_path}:{old}" if old else so_path
        logging.info("Updated LD_PRELOAD: " + self.env_vars["LD_PRELOAD"])

    def run_harness(self):
        flags = self.build_default_flags()
        flags.update(self.build_scenario_specific_flags())
        if self.has_gpu:
            flags["gpu_engines"] = self.gpu_engine
        if flags.get("fast", False):  # --fast: 60 s and one query unless set
            flags.setdefault("min_duration", 60000)
            flags.setdefault("min_query_count", 1)
            flags["fast"] = None
        generate_measurements_entry(
            self.get_system_name(),
            self.name,
            self._get_submission_benchmark_name(),
            self.scenario,
            self.args["input_dtype"],
            self.args["precision"],
            flags,
        )
        if self.generate_conf_files_only:
            return "Generated conf files"
        argstr = self._build_custom_flags(flags)
        if type(argstr) is dict:
            argstr = args_to_string(flags)
        if self.use_jemalloc:
            import platform

            self.prepend_ld_preload(f"/usr/lib/{platform.processor()}-linux-gnu/libjemalloc.so.2")
        run_command(f"{self.executable} {argstr}", get_output=True, custom_env=self.env_vars)
        key = scenario_loadgen_log_keys[self.scenario]
        results = from_loadgen_by_keys(self.get_full_log_dir(), ["result_validity", key])
        if key not in results:
            text = "Cannot find performance result. Maybe you are running in AccuracyOnly mode."
        elif "result_validity" not in results:
            text = f"{key}: {results[key]}, Result validity unknown"
        else:
            text = f"{key}: {results[key]}, Result is {results['result_validity']}"
        return self._handle_harness_result(text)
