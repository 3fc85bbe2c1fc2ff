# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/main.py of
# github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549, written
# anew with the same flow, log lines and error texts:
#   - the system is detected first ("Detected System ID: <id>"; get_system()'s errors stop it);
#   - flags: --action (generate_engines, run_harness, ...), --benchmarks, --scenarios,
#     --harness_type, --accuracy_target, --power_setting, --config_ver, --system_name... (unknown
#     flags are left to the later stages, as the real parse_known_args does); a bad name:
#     "'<name>' is not a valid benchmark name." / "... scenario name.";
#   - configs/<benchmark>/<Scenario>/ is imported (its classes register themselves); a benchmark
#     and scenario with no config at all is skipped silently, and one without a config for the
#     detected system logs "No registered config for <bench>.<Scenario>.<system id> for
#     WorkloadSetting(<harness>_<accuracy>_<power>)" and is skipped, exit status 0;
#   - generate_engines: "Building engines for <bench> benchmark in <Scenario> scenario...", the
#     builder writes the engine, "Time taken to generate engines: <s> seconds"; a failure:
#     "Building engines failed!";
#   - run_harness: removes a leftover audit.config, prints the config ("<key> : <value>"), runs
#     the harness ("Result: <key>: <value>, Result is VALID"; a failure: the traceback and
#     "Run harness failed!"), adds the result to <log dir>/perf_harness_summary.json under
#     "<system name>-<config_ver>-<Scenario>", checks accuracy into accuracy_summary.json
#     ("No accuracy results in PerformanceOnly mode." for a performance run).
# Not reproduced: MPS and power-limit scoping, calibration, audit tests, Triton; AccuracyOnly runs
# LoadGen but cannot be scored (no model outputs): it fails with a stand-in message.
"""NVIDIA's MLPerf Inference harness, main program (stand-in: no TensorRT; see the header)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import argparse  # noqa: E402
import code.common.arguments as common_args  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from code import get_benchmark, get_harness  # noqa: E402
from code.common import auditing, get_system, logging  # noqa: E402
from code.common.arguments import apply_overrides  # noqa: E402
from code.common.constants import (  # noqa: E402
    G_DEFAULT_HARNESS_TYPES,
    AccuracyTarget,
    Action,
    Benchmark,
    HarnessType,
    PowerSetting,
    Scenario,
    WorkloadSetting,
    config_ver_to_workload_setting,
)
from code.common.fields import MainArgs  # noqa: E402
from code.common.system_list import Architecture  # noqa: E402

from configs.configuration import ConfigRegistry  # noqa: E402

# MLPerf's accuracy targets (99 % / 99.9 % of these), as the real check_accuracy() lists them
ACCURACY_TARGETS = {
    Benchmark.BERT: 90.874,
    Benchmark.DLRM: 80.25,
    Benchmark.RNNT: 100.0 - 7.45225,
    Benchmark.ResNet50: 76.46,
    Benchmark.SSDMobileNet: 22.0,
    Benchmark.SSDResNet34: 20.0,
    Benchmark.UNET3D: 0.853,
}


def handle_generate_engine(config, gpu=True, dla=True, equiv_engine_setting=None):
    benchmark, scenario = config["benchmark"], config["scenario"]
    logging.info(
        f"Building engines for {benchmark.valstr()} benchmark in {scenario.valstr()} scenario..."
    )
    start = time.time()
    config = apply_overrides(config, common_args.GENERATE_ENGINE_ARGS)
    if dla and "dla_batch_size" in config:
        config["batch_size"] = config["dla_batch_size"]
        logging.info("Building DLA engine for " + config["config_name"])
        get_benchmark(config).build_engines()
    if gpu and "gpu_batch_size" in config:
        config["batch_size"] = config["gpu_batch_size"]
        config["dla_core"] = None
        logging.info("Building GPU engine for " + config["config_name"])
        get_benchmark(config).build_engines()
    logging.info(
        f"Finished building engines for {benchmark.valstr()} benchmark in {scenario.valstr()} "
        "scenario."
    )
    print(f"Time taken to generate engines: {time.time() - start} seconds")


def launch_handle_generate_engine(*args, **kwargs):
    """The real harness builds in a child process and reports its failure so; the stand-in
    builds here and reports a failure the same way."""
    try:
        handle_generate_engine(*args, **kwargs)
    except Exception:
        traceback.print_exc()
        raise RuntimeError("Building engines failed!") from None


def check_accuracy(log_file, config, is_compliance=False):
    if not os.path.exists(log_file):
        return "Cannot find accuracy JSON file."
    with open(log_file) as f:
        head = f.read(8)
    if not head or ("[" in head and "]" in head):
        return "No accuracy results in PerformanceOnly mode."
    threshold = ACCURACY_TARGETS[config["benchmark"]] * float(config["accuracy_level"][:-1]) / 100
    raise RuntimeError(
        "STAND-IN harness: no model, so no accuracy: the accuracy script of "
        f"{config['benchmark'].valstr()} is not run (threshold {threshold:.3f}); AccuracyOnly "
        "runs are not simulated"
    )


def handle_run_harness(config, gpu=True, dla=True, profile=None, power=False):
    benchmark, scenario = config["benchmark"], config["scenario"]
    logging.info(
        f"Running harness for {benchmark.valstr()} benchmark in {scenario.valstr()} scenario..."
    )
    config = apply_overrides(config, common_args.getScenarioBasedHarnessArgs(scenario))
    if not dla:
        config["dla_batch_size"] = None
    if not gpu:
        config["gpu_batch_size"] = None
    harness, config = get_harness(config, profile)
    for key, value in config.items():
        print(f"{key} : {value}")

    result = ""
    passed = True
    try:
        result = harness.run_harness()
        logging.info(f"Result: {result}")
    except Exception:
        traceback.print_exc(file=sys.stdout)
        passed = False
    if not passed:
        raise RuntimeError("Run harness failed!")

    log_dir = config["log_dir"]
    name = "-".join([harness.get_system_name(), config["config_ver"], scenario.valstr()])
    _add_to_summary(os.path.join(log_dir, "perf_harness_summary.json"), name, benchmark, result)
    accuracy = check_accuracy(
        os.path.join(harness.get_full_log_dir(), "mlperf_log_accuracy.json"), config
    )
    _add_to_summary(os.path.join(log_dir, "accuracy_summary.json"), name, benchmark, accuracy)


def _add_to_summary(path, config_name, benchmark, value):
    data = {}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    data.setdefault(config_name, {})[benchmark.valstr()] = value
    with open(path, "w") as f:
        json.dump(data, f)


def dispatch_action(main_args, benchmark_conf, conf_ver, equiv_engine_setting=None):
    action = Action.get_match(main_args["action"])
    need_gpu = not main_args["no_gpu"]
    need_dla = not main_args["gpu_only"]
    if not need_gpu and not need_dla:
        raise RuntimeError("Cannot set --gpu_only and --no_gpu concurrently.")
    if action == "generate_engines":
        if equiv_engine_setting is not None:
            logging.info(f"config_ver={conf_ver} can re-use engine from {equiv_engine_setting}")
        launch_handle_generate_engine(benchmark_conf, gpu=need_gpu, dla=need_dla)
    elif action == "run_harness":
        auditing.cleanup()
        handle_run_harness(
            benchmark_conf, need_gpu, need_dla, main_args.get("profile"), main_args["power"]
        )
    else:
        raise RuntimeError(
            f"STAND-IN harness: action {main_args['action']!r} is not simulated "
            "(generate_engines and run_harness are)"
        )


def populate_config_registry(benchmarks, scenarios):
    for benchmark in benchmarks:
        for scenario in scenarios:
            ConfigRegistry.load_configs(benchmark, scenario)


def _pick(enum, names, what):
    if names is None:
        return list(enum)
    picked = []
    for name in names.split(","):
        member = enum.get_match(name)
        if member is None:
            raise RuntimeError(f"'{name}' is not a valid {what} name.")
        picked.append(member)
    return picked


def main(main_args, system, load_config_fn=populate_config_registry):
    system_id = system.get_id()
    benchmarks = _pick(Benchmark, main_args["benchmarks"], "benchmark")
    scenarios = _pick(Scenario, main_args["scenarios"], "scenario")
    load_config_fn(benchmarks, scenarios)

    for benchmark in benchmarks:
        for scenario in scenarios:
            if ConfigRegistry.available_workload_settings(benchmark, scenario) is None:
                continue
            harness_name = main_args["harness_type"]
            harness_type = (
                G_DEFAULT_HARNESS_TYPES[benchmark]
                if harness_name == "auto"
                else HarnessType.get_match(harness_name)
            )
            settings = [
                WorkloadSetting(
                    harness_type=harness_type,
                    accuracy_target=AccuracyTarget(main_args["accuracy_target"]),
                    power_setting=PowerSetting.get_match(main_args["power_setting"]),
                )
            ]
            if main_args.get("config_ver") is not None:
                vers = main_args["config_ver"].split(",")
                if "default" in vers:
                    vers = ["default", *sorted(set(vers) - {"default"})]
                settings = [config_ver_to_workload_setting(benchmark, v) for v in vers]
                if "all" in vers:
                    settings = ConfigRegistry.available_workload_settings(benchmark, scenario)

            for setting in settings:
                config = ConfigRegistry.get(benchmark, scenario, system, **setting.as_dict())
                if config is None:
                    logging.warning(
                        f"No registered config for {benchmark.value.name}."
                        f"{scenario.value.name}.{system_id} for "
                        f"WorkloadSetting({setting.shortname()})"
                    )
                    continue
                conf = config.as_dict()
                conf["config_name"] = f"{system_id}_{benchmark.valstr()}_{scenario.valstr()}"
                conf["config_ver"] = setting.shortname()
                conf["accuracy_level"] = (
                    "99%" if setting.accuracy_target == AccuracyTarget.k_99 else "99.9%"
                )
                conf["optimization_level"] = "plugin-enabled"
                conf["inference_server"] = str(setting.harness_type.value)
                conf["system_id"] = system_id
                conf["benchmark"] = benchmark
                conf["scenario"] = scenario
                if main_args.get("system_name") is not None:
                    conf["system_name"] = main_args["system_name"]
                conf["use_cpu"] = system.arch == Architecture.Intel_CPU_x86_64
                dispatch_action(main_args, conf, setting.shortname())


def parse_main_args(custom=None):
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    for arg in MainArgs:
        arg.value.add_to_argparser(parser, allow_argparse_default=True)
    return vars(parser.parse_known_args(args=custom)[0])


if __name__ == "__main__":
    system = get_system()
    logging.info("Detected System ID: " + system.get_id())
    main(parse_main_args(), system)
