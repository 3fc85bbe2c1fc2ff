# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/error.py
# of github.com/mlcommons/inference_results_v4.1 @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: the
# config errors ConfigRegistry raises, with the real messages. Written anew.
"""Errors of BenchmarkConfigurations (stand-in)."""


class ConfigError(Exception):
    pass


class ConfigInvalidTypeError(ConfigError):
    def __init__(self, config_name):
        super().__init__(f"<config '{config_name}'> does not inherit from BenchmarkConfiguration")


class ConfigMultipleExtendsError(ConfigError):
    def __init__(self, config_name):
        super().__init__(
            f"<config '{config_name}'> extends multiple base classes, which is disallowed."
        )


class ConfigFieldError(Exception):
    pass


class ConfigFieldMissingError(ConfigFieldError):
    def __init__(self, config_name, field_name):
        super().__init__(f"<config '{config_name}'> is missing mandatory Field '{field_name}'")


class ConfigFieldInvalidError(ConfigFieldError):
    def __init__(self, config_name, field_name):
        super().__init__(f"<config '{config_name}'> contains unsupported Field '{field_name}'")


class ConfigFieldInvalidTypeError(ConfigFieldError):
    def __init__(self, config_name, field_name, expected_type):
        super().__init__(f"<config '{config_name}'>.{field_name} is not of type '{expected_type}'")


class ConfigFieldInheritanceError(ConfigFieldError):
    def __init__(self, config_name, parent_name, field_name, new_value, old_value):
        super().__init__(
            f"<config '{config_name}'>.{field_name}={new_value}, but inherits "
            f"<config '{parent_name}'>.{field_name}={old_value}"
        )


class ConfigInvalidHarnessTypeError(ConfigError):
    def __init__(self, config_name, harness_type):
        super().__init__(
            f"<config '{config_name}'> attempted to register unsupported harness type "
            f"'{harness_type}'."
        )
