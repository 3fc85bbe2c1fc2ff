# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/
# configuration.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183, written anew with the real rules:
#   - ConfigRegistry.load_configs(benchmark, scenario) imports configs.<benchmark>.<Scenario>.custom
#     when that module exists (its package __init__.py, NVIDIA's configs, comes with it), else the
#     package; with MLPINF_CUSTOM_DEFINITION_PATH set, custom_configs.<benchmark>.<Scenario>.custom
#     under that path;
#   - @ConfigRegistry.register(HarnessType, AccuracyTarget, PowerSetting) validates a config and
#     files it under (benchmark, scenario, system, workload setting); registering the same key
#     twice is a KeyError "Config for <keys> is already registered.";
#   - validation: BenchmarkConfiguration among the parents, one base class at every level, the
#     parents' benchmark / scenario and accelerators the same as the config's (a config may only
#     extend configs of the same accelerator), LWIS / Custom only as the benchmark's default
#     harness, benchmark / scenario / system of their enum types, no field the benchmark, scenario
#     or system does not support (start_from_device: NVIDIA's systems only), no required field
#     missing;
#   - BenchmarkConfiguration: the fields are the non-callable class attributes not starting with
#     "_" and not None.
"""Benchmark configurations and their registry (stand-in)."""

import ast
import importlib
import importlib.util
import inspect
import os
import sys
import textwrap

sys.path.insert(0, os.getcwd())

from code.common import logging  # noqa: E402
from code.common.constants import (  # noqa: E402, F401
    G_DEFAULT_HARNESS_TYPES,
    AccuracyTarget,
    Benchmark,
    HarnessType,
    PowerSetting,
    Scenario,
    WorkloadSetting,
)
from code.common.fields import get_applicable_fields  # noqa: E402
from code.common.systems.system_list import KnownSystem, match_known_system  # noqa: E402
from code.common.systems.systems import SystemConfiguration  # noqa: E402

from configs.error import (  # noqa: E402
    ConfigError,
    ConfigFieldError,
    ConfigFieldInheritanceError,
    ConfigFieldInvalidError,
    ConfigFieldInvalidTypeError,
    ConfigFieldMissingError,
    ConfigInvalidHarnessTypeError,
    ConfigInvalidTypeError,
    ConfigMultipleExtendsError,
)


class BenchmarkConfiguration:
    """Base of every config: class attributes are its fields."""

    @classmethod
    def all_fields(cls):
        return tuple(
            a
            for a in dir(cls)
            if not a.startswith("_")
            and not callable(getattr(cls, a))
            and getattr(cls, a) is not None
        )

    @classmethod
    def as_dict(cls):
        return {a: getattr(cls, a) for a in cls.all_fields()}


def _bases_in_source(klass):
    """The base classes a class statement names (the real check reads the source)."""
    source = textwrap.dedent("".join(inspect.getsourcelines(klass)[0]))
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef))
    return node.bases


class ConfigRegistry:
    _registry = {}
    _permissive_register = False
    _failed_register = []

    @staticmethod
    def load_configs(benchmark, scenario, ignore_custom=False):
        base = f"configs.{benchmark.valstr()}.{scenario.valstr()}"
        try:
            if ignore_custom:
                importlib.import_module(base)
                return True
            path = os.environ.get("MLPINF_CUSTOM_DEFINITION_PATH", None)
            if path is None:
                logging.debug(f"Searching for custom configs in {base}.custom")
                if importlib.util.find_spec(f"{base}.custom") is not None:
                    logging.debug(f"Found custom configs in {base}.custom")
                    importlib.import_module(f"{base}.custom")
                else:
                    importlib.import_module(base)
            elif not os.path.exists(path):
                raise FileNotFoundError(f"MLPINF_CUSTOM_DEFINITION_PATH {path} does not exist.")
            else:
                importlib.import_module(base)
                module = f"custom_configs.{benchmark.valstr()}.{scenario.valstr()}.custom"
                sys.path.insert(0, path)
                try:
                    if importlib.util.find_spec(module) is not None:
                        importlib.import_module(module)
                finally:
                    sys.path.remove(path)
            return True
        except ModuleNotFoundError:
            return False

    @classmethod
    def register(cls, harness_type, accuracy_target, power_setting):
        workload = WorkloadSetting(harness_type, accuracy_target, power_setting)

        def _do_register(config):
            try:
                cls.validate(config, workload)
            except (ConfigError, ConfigFieldError) as e:
                if cls._permissive_register:
                    cls._failed_register.append((config, workload, e))
                    return config
                raise
            keys = (config.benchmark, config.scenario, config.system, workload)
            if keys in cls._registry:
                raise KeyError(
                    "Config for {} is already registered.".format("/".join(map(str, keys)))
                )
            cls._registry[keys] = config
            return config

        return _do_register

    @classmethod
    def get(
        cls,
        benchmark,
        scenario,
        system,
        harness_type=HarnessType.Custom,
        accuracy_target=AccuracyTarget.k_99,
        power_setting=PowerSetting.MaxP,
    ):
        if type(system) is SystemConfiguration:
            system = match_known_system(system)
        workload = WorkloadSetting(harness_type, accuracy_target, power_setting)
        return cls._registry.get((benchmark, scenario, system, workload))

    @classmethod
    def available_workload_settings(cls, benchmark, scenario):
        found = [k[3] for k in cls._registry if k[0] == benchmark and k[1] == scenario]
        return found or None

    @classmethod
    def validate(cls, config, workload):
        cls._check_inheritance_constraints(config)
        cls._check_harness_support(config, workload)
        cls._check_field_descriptions(config)

    @classmethod
    def _check_harness_support(cls, config, workload):
        harness = workload.harness_type
        own = G_DEFAULT_HARNESS_TYPES[config.benchmark]
        if harness in (HarnessType.Custom, HarnessType.LWIS) and harness != own:
            raise ConfigInvalidHarnessTypeError(config.__name__, harness)
        if (
            harness == HarnessType.HeteroMIG
            and config.system.value.accelerator_conf.num_migs() == 0
        ):
            raise ConfigInvalidHarnessTypeError(config.__name__, harness)

    @classmethod
    def _check_field_descriptions(cls, config):
        for name, kind in (
            ("benchmark", Benchmark),
            ("scenario", Scenario),
            ("system", KnownSystem),
        ):
            if not hasattr(config, name):
                raise ConfigFieldMissingError(config.__name__, name)
            if type(getattr(config, name)) is not kind:
                raise ConfigFieldInvalidTypeError(config.__name__, name, kind)
        required, optional = get_applicable_fields(config.benchmark, config.scenario, config.system)
        possible = {f.name for f in required} | {f.name for f in optional}
        declared = set(config.all_fields()) - {"action", "harness_type"}
        extra = sorted(declared - possible)
        if extra:
            raise ConfigFieldInvalidError(config.__name__, extra[0])
        missing = sorted({f.name for f in required} - declared)
        if missing:
            raise ConfigFieldMissingError(config.__name__, missing[0])

    @classmethod
    def _check_inheritance_constraints(cls, config):
        parents = inspect.getmro(config)
        if BenchmarkConfiguration not in parents:
            raise ConfigInvalidTypeError(config.__name__)
        for klass in parents[:-2]:  # the last two: BenchmarkConfiguration, object
            if len(_bases_in_source(klass)) != 1:
                raise ConfigMultipleExtendsError(klass.__name__)
        for parent in parents[:-2]:
            for name in ("benchmark", "scenario"):
                if hasattr(parent, name) and getattr(config, name) != getattr(parent, name):
                    raise ConfigFieldInheritanceError(
                        config.__name__,
                        parent.__name__,
                        name,
                        getattr(config, name),
                        getattr(parent, name),
                    )
            if hasattr(config, "system"):
                if type(config.system) is not KnownSystem:
                    raise ConfigFieldInvalidTypeError(
                        config.__name__, "system", KnownSystem.__name__
                    )
                if hasattr(parent, "system"):
                    if type(parent.system) is not KnownSystem:
                        raise ConfigFieldInvalidTypeError(
                            parent.__name__, "system", KnownSystem.__name__
                        )
                    mine = config.system.value.accelerator_conf
                    theirs = parent.system.value.accelerator_conf
                    lost = [
                        a for a in theirs.get_accelerators() if a not in mine.get_accelerators()
                    ]
                    if lost:
                        raise ConfigFieldInheritanceError(
                            config.__name__, parent.__name__, "system.gpu", mine, theirs
                        )
