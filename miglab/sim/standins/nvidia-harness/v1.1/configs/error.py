# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/error.py
# of github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549: the
# same exception classes and message texts, written anew.
"""Errors the ConfigRegistry raises for configs it refuses to register (stand-in)."""


class ConfigError(Exception):
    """A config class itself is wrong."""


class ConfigInvalidTypeError(ConfigError):
    def __init__(self, config_name):
        super().__init__(f"<config '{config_name}'> does not inherit from BenchmarkConfiguration")


class ConfigMultipleExtendsError(ConfigError):
    def __init__(self, config_name):
        super().__init__(
            f"<config '{config_name}'> extends multiple base classes, which is disallowed."
        )


class ConfigFieldError(Exception):
    """A field of a config is wrong."""


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


class ConfigFieldReassignmentError(ConfigFieldError):
    def __init__(self, config_name, field_name, line_nos):
        lines = ",".join(str(n) for n in line_nos)
        super().__init__(
            f"<config '{config_name}'>.{field_name} defined multiple times on lines {lines}"
        )


class ConfigInvalidHarnessTypeError(ConfigError):
    def __init__(self, config_name, harness_type):
        super().__init__(
            f"<config '{config_name}'> attempted to register unsupported harness type "
            f"'{harness_type}'."
        )
