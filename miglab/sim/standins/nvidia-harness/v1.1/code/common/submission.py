# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows generate_measurements_entry()
# and generate_user_conf() of closed/NVIDIA/code/common/submission.py of
# github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549:
# measurements/<system name>/<benchmark>/<Scenario>/ gets user.conf (lines
# "*.<Scenario>.<LoadGen key> = <value>": target_qps from offline_expected_qps /
# server_target_qps, performance_sample_count_override, and min/max query count and duration,
# latency settings when set; each written setting is taken out of the binary's flags), mlperf.conf
# and README.md; TENSORRT_VERSION is "" in this round. Differences: mlperf.conf is a note (the real
# one is copied from the LoadGen clone build/inference/mlperf.conf; the stand-in binary uses
# LoadGen's built-in mlperf.conf), and calibration_process.adoc and the system JSON are not
# written. Written anew.
"""The measurements/ entry of a run: user.conf and friends (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import textwrap  # noqa: E402
from code.common.constants import Scenario  # noqa: E402

TENSORRT_VERSION = ""
TRITON_VERSION = ""

# flag -> LoadGen's user.conf key
options_map = {
    "single_stream_expected_latency_ns": "target_latency",
    "single_stream_target_latency_percentile": "target_latency_percentile",
    "offline_expected_qps": "target_qps",
    "server_target_qps": "target_qps",
    "server_target_latency_percentile": "target_latency_percentile",
    "server_target_latency_ns": "target_latency",
}
# LoadGen's unit / the flag's unit
parameter_scaling_map = {"target_latency": 1 / 1000000.0, "target_latency_percentile": 100.0}


def generate_measurements_entry(
    system_name, short_benchmark_name, full_benchmark_name, scenario, input_dtype, precision, flags
):
    folder = f"measurements/{system_name}/{full_benchmark_name}/{scenario.valstr()}"
    os.makedirs(folder, exist_ok=True)
    flags["performance_sample_count_override"] = flags["performance_sample_count"]
    mlperf_conf = os.path.join(folder, "mlperf.conf")
    flags.setdefault("mlperf_conf_path", mlperf_conf)
    generate_mlperf_conf(mlperf_conf)
    user_conf = os.path.join(folder, "user.conf")
    flags.setdefault("user_conf_path", user_conf)
    generate_user_conf(user_conf, scenario, flags)
    generate_readme(os.path.join(folder, "README.md"), short_benchmark_name, scenario)


def generate_mlperf_conf(path):
    with open(path, "w") as f:
        f.write(
            "# STAND-IN (miglab's simulated lab): the real harness copies LoadGen's mlperf.conf\n"
            "# here from build/inference/mlperf.conf; the stand-in harness binary uses the\n"
            "# mlperf.conf built into the mlperf_loadgen module of its image.\n"
        )


def generate_user_conf(path, scenario, flags):
    common_required = ["performance_sample_count_override"]
    required = {
        Scenario.SingleStream: [*common_required],
        Scenario.Offline: ["offline_expected_qps", *common_required],
        Scenario.Server: ["server_target_qps", *common_required],
    }
    common_optional = ["min_query_count", "max_query_count", "min_duration", "max_duration"]
    optional = {
        Scenario.SingleStream: ["single_stream_target_latency_percentile", *common_optional],
        Scenario.Offline: [*common_optional],
        Scenario.Server: [
            "server_target_latency_percentile",
            "server_target_latency_ns",
            *common_optional,
        ],
    }

    def line(param):
        key = options_map.get(param, param)
        value = flags[param]
        if key in parameter_scaling_map:
            value = value * parameter_scaling_map[key]
        flags[param] = None  # now in user.conf, not a flag of the binary
        return f"*.{scenario.valstr()}.{key} = {value}\n"

    with open(path, "w") as f:
        for param in required[scenario]:
            f.write(line(param))  # KeyError when the config lacks it, as the real one
        for param in optional[scenario]:
            if param in flags:
                f.write(line(param))


def generate_readme(path, short_benchmark_name, scenario):
    text = textwrap.dedent(
        f"""\
        To run this benchmark, first follow the setup steps in `closed/NVIDIA/README.md`. Then to generate the TensorRT engines and run the harness:

        ```
        make generate_engines RUN_ARGS="--benchmarks={short_benchmark_name} --scenarios={scenario.valstr()}"
        make run_harness RUN_ARGS="--benchmarks={short_benchmark_name} --scenarios={scenario.valstr()} --test_mode=AccuracyOnly"
        make run_harness RUN_ARGS="--benchmarks={short_benchmark_name} --scenarios={scenario.valstr()} --test_mode=PerformanceOnly"
        ```

        For more details, please refer to `closed/NVIDIA/README.md`."""  # noqa: E501
    )
    with open(path, "w") as f:
        f.write(text)
