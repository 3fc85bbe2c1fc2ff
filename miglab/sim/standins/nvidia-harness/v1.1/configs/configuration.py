# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/
# configuration.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: ConfigRegistry (configs keyed by benchmark,
# scenario, system and WorkloadSetting(harness type, accuracy target, power setting), registered
# by the @ConfigRegistry.register(...) decorator, loaded by importing configs/<benchmark>/
# <Scenario>), its validation rules and error texts (configs/error.py), BenchmarkConfiguration
# (fields = the class's public non-callable attributes) and FieldTrace. Written anew. Config
# files do `from configs.configuration import *`: the names they use are importable from here.
"""Benchmark configurations and their registry (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import ast  # noqa: E402
import inspect  # noqa: E402
import textwrap  # noqa: E402
from code.common.constants import (  # noqa: E402, F401
    G_DEFAULT_HARNESS_TYPES,
    AccuracyTarget,
    Benchmark,
    CPUArch,
    HarnessType,
    PowerSetting,
    Scenario,
    WorkloadSetting,
)
from code.common.fields import get_applicable_fields  # noqa: E402
from code.common.system_list import (  # noqa: E402, F401
    Architecture,
    MIGConfiguration,
    MIGSlice,
    System,
)
from code.common.utils import Tree  # noqa: E402
from collections import namedtuple  # noqa: E402
from importlib import import_module  # noqa: E402

from configs.error import (  # noqa: E402
    ConfigError,
    ConfigFieldError,
    ConfigFieldInheritanceError,
    ConfigFieldInvalidError,
    ConfigFieldInvalidTypeError,
    ConfigFieldMissingError,
    ConfigFieldReassignmentError,
    ConfigInvalidHarnessTypeError,
    ConfigInvalidTypeError,
    ConfigMultipleExtendsError,
)

InvalidConfig = namedtuple("InvalidConfig", ("config_cls", "workload_setting", "error"))


def _class_ast(cls):
    """The syntax tree of ``cls``'s source (dedented) and the line its source starts on."""
    lines, start = inspect.getsourcelines(cls)
    indent = len(lines[0]) - len(lines[0].lstrip())
    return ast.parse(textwrap.dedent("".join(line[indent:] for line in lines))), start


class ConfigRegistry:
    """All registered configs: benchmark -> scenario -> system -> WorkloadSetting -> config."""

    _registry = Tree()
    _permissive_register = False
    _failed_register = []

    @staticmethod
    def load_configs(benchmark, scenario):
        """Import configs/<benchmark>/<Scenario>/ (its classes register themselves); False when
        there is no such module."""
        try:
            import_module(f"configs.{benchmark.value}.{scenario.value}")
            return True
        except ModuleNotFoundError:
            return False

    @classmethod
    def load_module_dryrun(cls, module_path):
        saved = cls._registry
        cls._reset()
        cls._permissive_register = True
        try:
            import_module(module_path)
            loaded, invalid = cls._registry, tuple(cls._failed_register)
        finally:
            cls._reset()
            cls._registry = saved
        return loaded, invalid

    @classmethod
    def _reset(cls):
        cls._registry = Tree()
        cls._failed_register = []
        cls._permissive_register = False

    @classmethod
    def register(cls, harness_type, accuracy_target, power_setting):
        """Class decorator: validate the config and file it under its benchmark, scenario,
        system and this WorkloadSetting (KeyError when one is there already)."""
        setting = WorkloadSetting(harness_type, accuracy_target, power_setting)

        def _register(config):
            try:
                cls.validate(config, setting)
            except ConfigError as exc:
                if not cls._permissive_register:
                    raise
                cls._failed_register.append(InvalidConfig(config, setting, exc))
                return config
            keyspace = [config.benchmark, config.scenario, config.system, setting]
            if cls._registry.get(keyspace) is not None:
                raise KeyError(
                    "Config for {} is already registered.".format("/".join(map(str, keyspace)))
                )
            cls._registry.insert(keyspace, config)
            return config

        return _register

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
        """The config registered for this workload, or None."""
        setting = WorkloadSetting(harness_type, accuracy_target, power_setting)
        return cls._registry.get([benchmark, scenario, system, setting])

    @classmethod
    def available_workload_settings(cls, benchmark, scenario):
        """The WorkloadSettings registered for a benchmark and scenario; None if none."""
        workloads = cls._registry.get([benchmark, scenario])
        return None if workloads is None else list(workloads.keys())

    @classmethod
    def validate(cls, config, workload_setting):
        """Raise the matching configs.error exception unless ``config`` inherits only from
        configs of its benchmark, scenario and GPU (one base at every level), uses a harness its
        benchmark supports, declares only fields the workload takes and every field it needs,
        and assigns no field twice in one class."""
        cls._check_inheritance_constraints(config)
        cls._check_harness_support(config, workload_setting)
        cls._check_field_descriptions(config, workload_setting)
        cls._check_field_reassignment(config)

    @classmethod
    def _check_harness_support(cls, config, workload_setting):
        harness = workload_setting.harness_type
        system = config.system
        if harness in (HarnessType.Custom, HarnessType.LWIS):
            wrong = harness != G_DEFAULT_HARNESS_TYPES[config.benchmark]
        elif harness == HarnessType.HeteroMIG:
            wrong = system.mig_conf is None or system.gpu not in ("A100-SXM-80GB", "A30")
        elif harness == HarnessType.Triton:  # no Triton on ARM servers (Xavier has it)
            wrong = system.cpu_arch == CPUArch.aarch64 and system.arch != Architecture.Xavier
        else:
            wrong = False
        if wrong:
            raise ConfigInvalidHarnessTypeError(config.__name__, harness)

    @classmethod
    def _check_field_descriptions(cls, config, workload_setting, enforce_full=True):
        ids = {
            "action": None,
            "benchmark": None,
            "scenario": None,
            "system": None,
            "workload_setting": workload_setting,
        }
        for name, kind in (("benchmark", Benchmark), ("scenario", Scenario), ("system", System)):
            if not hasattr(config, name):
                if enforce_full:
                    raise ConfigFieldMissingError(config.__name__, name)
            elif type(getattr(config, name)) is not kind:
                raise ConfigFieldInvalidTypeError(config.__name__, name, kind)
            else:
                ids[name] = getattr(config, name)
        required, optional = get_applicable_fields(**ids)
        required = {f.name for f in required}
        possible = required | {f.name for f in optional}
        declared = set(config.all_fields()) - {"action", "harness_type"}
        extra = declared - possible
        if extra:
            raise ConfigFieldInvalidError(config.__name__, list(extra)[0])
        missing = required - declared
        if enforce_full and missing:
            raise ConfigFieldMissingError(config.__name__, list(missing)[0])
        if HarnessType.Triton == workload_setting.harness_type and config.use_triton is not True:
            raise ConfigFieldError(
                f"<config '{config.__name__}'> uses Triton, but use_triton is not set to True"
            )

    @classmethod
    def _check_inheritance_constraints(cls, config):
        parents = inspect.getmro(config)
        if BenchmarkConfiguration not in parents:
            raise ConfigInvalidTypeError(config.__name__)
        for klass in parents[:-2]:  # the last two are BenchmarkConfiguration and object
            tree, _ = _class_ast(klass)
            classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
            if len(classes[0].bases) != 1:
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
                if type(config.system) is not System:
                    raise ConfigFieldInvalidTypeError(config.__name__, "system", System.__name__)
                if hasattr(parent, "system"):
                    if type(parent.system) is not System:
                        raise ConfigFieldInvalidTypeError(
                            parent.__name__, "system", System.__name__
                        )
                    if config.system.gpu != parent.system.gpu:
                        raise ConfigFieldInheritanceError(
                            config.__name__,
                            parent.__name__,
                            "system.gpu",
                            config.system.gpu,
                            parent.system.gpu,
                        )

    @classmethod
    def _check_field_reassignment(cls, config):
        for field, assignments in config.get_field_trace().trace.items():
            for a, b in zip(assignments, assignments[1:], strict=False):
                if a.klass == b.klass:
                    raise ConfigFieldReassignmentError(
                        a.klass.__name__, field, (a.lineno, b.lineno)
                    )


class BenchmarkConfiguration:
    """Base of every config: its fields are its public, non-callable class attributes (a
    ``_name`` is a helper, not a field). Register a config with @ConfigRegistry.register."""

    @classmethod
    def all_fields(cls):
        return tuple(
            name
            for name in dir(cls)
            if not callable(getattr(cls, name)) and not name.startswith("_")
        )

    @classmethod
    def as_dict(cls):
        return {name: getattr(cls, name) for name in cls.all_fields()}

    @classmethod
    def get_field_trace(cls):
        return FieldTrace(cls)


class FieldTrace:
    """For each field, where it is assigned along the config's MRO, nearest first:
    ``{field: [Assignment(klass, lineno, value), ...]}``."""

    def __init__(self, config_cls):
        self.cls_name = config_cls.__name__
        Assignment = namedtuple("Assignment", ["klass", "lineno", "value"])
        fields = set(config_cls.all_fields())
        trace = {}
        for klass in inspect.getmro(config_cls)[:-2]:
            tree, start = _class_ast(klass)
            assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
            for node in reversed(assigns):  # a later assignment wins
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id in fields:
                        trace.setdefault(target.id, []).append(
                            Assignment(klass, start + node.lineno - 1, node.value)
                        )
        self.trace = trace

    def __str__(self):
        return self.dump()

    def dump(self, sort_fields=True, indent=4):
        pad = " " * indent
        lines = [f"FieldTrace({self.cls_name})" + "{"]
        for key in sorted(self.trace) if sort_fields else self.trace:
            lines.append(f"{pad}'{key}': [")
            for a in self.trace[key]:
                lines += [
                    f"{pad * 2}Assignment(",
                    f"{pad * 3}klass={a.klass}",
                    f"{pad * 3}lineno={a.lineno}",
                    f"{pad * 3}value={ast.dump(a.value)}",
                    f"{pad * 2}),",
                ]
            lines.append(f"{pad}]")
        lines.append("}")
        return "\n".join(lines)
