# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/main.py
# (with code/common/fields.py's get_effective_values / apply_helper_and_legacy_fields) of
# github.com/mlcommons/inference_results_v4.1 @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183,
# written anew with the real flow: `python3 -m code.main $(RUN_ARGS) --action=<generate_engines|
# run_harness>`; the system is detected at import; one that matched no KnownSystem logs
# "Detected system did not match any known systems. Exiting. <DETECTED_SYSTEM>" and exits with
# status 0; otherwise "Detected system ID: KnownSystem.<member>", then for each --benchmarks /
# --scenarios pair (an unknown name: "'<name>' is not a valid benchmark name.") the registered
# config of the matched system (configs/<benchmark>/<Scenario>/__init__.py and custom.py) for the
# workload setting (default harness, accuracy 0.99, MaxP; none: the warning "No registered config
# for <benchmark>.<scenario>.<system id> for WorkloadSetting(<shortname>)"), its applicable fields
# overridden by RUN_ARGS, and the action.
"""NVIDIA's MLPerf Inference harness entry point (stand-in)."""

from code.common import logging
from code.common.constants import (
    G_DEFAULT_HARNESS_TYPES,
    AccuracyTarget,
    Action,
    Benchmark,
    HarnessType,
    PowerSetting,
    Scenario,
    WorkloadSetting,
)
from code.common.fields import command_line_overrides, get_applicable_fields, parse_main_args
from code.common.harness import BaseBenchmarkHarness, run_harness_action
from code.common.systems.system_list import DETECTED_SYSTEM, MATCHED_SYSTEM, match_known_system

from configs.configuration import ConfigRegistry


def _names(value, enum, what):
    if value is None:
        return list(enum)
    found = []
    for name in value.split(","):
        member = enum.get_match(name)
        if member is None:
            raise RuntimeError(f"'{name}' is not a valid {what} name.")
        found.append(member)
    return found


def effective_config(config_dict, workload_setting, system_name=None):
    """The applicable fields (config, else default), RUN_ARGS on top, and the helper keys."""
    system = config_dict["system"]
    required, optional = get_applicable_fields(
        config_dict["benchmark"], config_dict["scenario"], match_known_system(system)
    )
    fields = required + optional
    conf = {}
    for f in fields:
        if f.name in config_dict:
            conf[f.name] = config_dict[f.name]
        elif f.default is not None:
            conf[f.name] = f.default
    conf.update(command_line_overrides(fields))
    conf["system"] = system
    conf["system_id"] = system.get_id()
    benchmark, scenario = conf["benchmark"], conf["scenario"]
    conf["config_name"] = f"{conf['system_id']}_{benchmark.valstr()}_{scenario.valstr()}"
    conf["workload_setting"] = workload_setting
    conf["optimization_level"] = "plugin-enabled"
    if len(system.accelerator_conf.get_accelerators()) == 0:
        raise NotImplementedError("CPU-only system is not supported")
    if system_name is not None:
        conf["system_name"] = system_name
    conf["config_ver"] = workload_setting.shortname()
    k99 = workload_setting.accuracy_target == AccuracyTarget.k_99
    conf["accuracy_level"] = "99%" if k99 else "99.9%"
    conf["inference_server"] = str(workload_setting.harness_type.value)
    return conf


def main(main_args, system):
    system_id = system.get_id()
    benchmarks = _names(main_args["benchmarks"], Benchmark, "benchmark")
    scenarios = _names(main_args["scenarios"], Scenario, "scenario")
    for benchmark in benchmarks:
        for scenario in scenarios:
            ConfigRegistry.load_configs(benchmark, scenario)
    action = Action.get_match(main_args["action"])
    for benchmark in benchmarks:
        for scenario in scenarios:
            if ConfigRegistry.available_workload_settings(benchmark, scenario) is None:
                continue
            if main_args["harness_type"] == "auto":
                harness_type = G_DEFAULT_HARNESS_TYPES[benchmark]
            else:
                harness_type = HarnessType.get_match(main_args["harness_type"])
            workload = WorkloadSetting(
                harness_type=harness_type,
                accuracy_target=AccuracyTarget(main_args["accuracy_target"]),
                power_setting=PowerSetting.get_match(main_args["power_setting"]),
            )
            config = ConfigRegistry.get(benchmark, scenario, system, **workload.as_dict())
            if config is None:
                logging.warning(
                    f"No registered config for {benchmark.value.name}.{scenario.value.name}."
                    f"{system_id} for WorkloadSetting({workload.shortname()})"
                )
                continue
            config_dict = config.as_dict()
            config_dict["system"] = system
            conf = effective_config(config_dict, workload, main_args.get("system_name"))
            if action == Action.GenerateEngines:
                BaseBenchmarkHarness(conf, benchmark).generate_engines()
            elif action == Action.RunHarness:
                run_harness_action(conf, workload)
            else:
                logging.info(f"Action {action} is not currently supported")


if __name__ == "__main__":
    if MATCHED_SYSTEM is None:
        logging.info(f"Detected system did not match any known systems. Exiting. {DETECTED_SYSTEM}")
    else:
        logging.info(f"Detected system ID: {MATCHED_SYSTEM}")
        main(parse_main_args(), DETECTED_SYSTEM)
