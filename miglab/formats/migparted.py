"""NVIDIA mig-parted configuration files (``version: v1``), read strictly and written back.

The rules follow mig-parted's own parser (``api/spec/v1/spec.go`` and the MIG profile format
of go-nvlib, https://github.com/NVIDIA/mig-parted):

* top level: ``version`` (must be ``v1``) and ``mig-configs``; any other key is an error;
* ``mig-configs``: a mapping of at least one config name to a list of at least one entry;
* entry: ``devices`` (``all`` or a list of GPU indexes) and ``mig-enabled`` (bool) are required,
  ``mig-devices`` (profile name -> count) is required when ``mig-enabled`` is true and must be
  empty when it is false, ``device-filter`` (a PCI device id like ``0x20B510DE``, optionally
  ``:0xSUBSYSTEM``, or a list of them) is optional; any other key is an error;
* profile names: ``[<C>c.]<G>g.<GB>gb`` with optional ``+attr[,attr]`` or ``-attr`` (``+me``,
  ``+me.all``, ``+gfx``, ``-me``); counts are integers >= 0, not all 0.

Unlike mig-parted, which stops at the first error, every problem is collected and reported as
``FILE: FIELD.PATH: reason`` (for example ``mig-configs.all-1g.10gb[0].mig-devices.1g.10gb``).
A few things mig-parted lets pass are errors here because they can only be mistakes: duplicate
YAML keys, negative or duplicate GPU indexes, and device filters that are not PCI ids (mig-parted
silently never matches them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from miglab.errors import Problems
from miglab.formats import yamlio

__all__ = ["DeviceConfig", "MigPartedSpec", "dump", "load", "profile_name_problem"]

VERSION = "v1"
_TOP_KEYS = ("version", "mig-configs")
_ENTRY_KEYS = ("device-filter", "devices", "mig-enabled", "mig-devices")


@dataclass
class DeviceConfig:
    """One entry of a mig-parted config: which GPUs, MIG on or off, and which MIG devices."""

    devices: str | list[int]  # "all" or GPU indexes
    mig_enabled: bool
    mig_devices: dict[str, int] = field(default_factory=dict)
    device_filter: list[str] | None = None  # PCI ids ("0x20B510DE"); None: every GPU model


@dataclass
class MigPartedSpec:
    """A whole mig-parted configuration file."""

    version: str = VERSION
    configs: dict[str, list[DeviceConfig]] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# YAML loading with duplicate-key detection
# --------------------------------------------------------------------------------------------


def _yaml_load(text: str, problems: Problems) -> tuple[bool, Any]:
    """(parsed, data): parsed is False when the text is not usable YAML (problems say why).
    Duplicate keys, alias bombs and oversized files are refused by miglab's strict reader."""
    if not isinstance(text, str):
        problems.add("", f"expected text, got {type(text).__name__}")
        return False, None
    before = len(problems.items)
    data = yamlio.load_bytes(text.encode("utf-8"), problems.file, problems)
    return len(problems.items) == before, data


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

_DEVICE_ID_PART = re.compile(r"^(?:0[xX][0-9A-Fa-f_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)$")
_DIGITS = re.compile(r"^[0-9]+$")


def profile_name_problem(name: str) -> str | None:
    """Why ``name`` is not in MIG profile format (as go-nvlib parses it), or None if it is."""
    if not isinstance(name, str):
        return f"a profile name must be a string, got {type(name).__name__}"
    if name == "":
        return "the profile name is empty"
    plus = name.split("+", 1)
    minus = name.split("-", 1)
    if len(plus) == 2 and len(minus) == 2:
        return f"{name!r} has both '+' and '-' attributes"
    parts = plus if len(plus) == 2 else minus
    fields_problem = _profile_fields_problem(parts[0])
    if fields_problem:
        return f"{name!r} is not [<C>c.]<G>g.<GB>gb: {fields_problem}"
    if len(parts) == 2:
        attr_problem = _profile_attributes_problem(parts[1])
        if attr_problem:
            return f"bad attributes in {name!r}: {attr_problem}"
    return None


def _profile_fields_problem(text: str) -> str | None:
    split = text.split(".", 2)
    if len(split) == 3:
        suffixes = ("c", "g", "gb")
    elif len(split) == 2:
        suffixes = ("g", "gb")
    else:
        return "expected 2 or 3 '.'-separated fields"
    for part, suffix in zip(split, suffixes, strict=True):
        if not part.endswith(suffix):
            return f"missing {suffix!r} in {part!r}"
        if not _DIGITS.match(part[: -len(suffix)]):
            return f"malformed number in {part!r}"
    return None


def _profile_attributes_problem(text: str) -> str | None:
    attrs = text.split(",")
    if len(attrs) != len(set(attrs)):
        return "an attribute is repeated"
    for attr in attrs:
        if attr == "":
            return "empty attribute"
        if attr[0].isdigit():
            return f"attribute {attr!r} begins with a digit"
        if attr[0] == "." or attr[-1] == ".":
            return f"attribute {attr!r} begins or ends with a dot"
        if not re.fullmatch(r"[A-Za-z0-9.]+", attr):
            return f"attribute {attr!r} has a character other than a letter, digit or dot"
    return None


def _device_filter_problem(value: str) -> str | None:
    parts = value.split(":")
    if len(parts) > 2:
        return f"{value!r}: expected <devicevendor> or <devicevendor>:<subdevicevendor>"
    for part in parts:
        if not _DEVICE_ID_PART.match(part) or part.endswith("_"):
            return f"{value!r} is not a PCI device id like '0x20B510DE'"
        if int(part, 0) >= 2**32:
            return f"{value!r} does not fit in 32 bits"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _entry(raw: Any, path: str, problems: Problems) -> DeviceConfig | None:
    if not isinstance(raw, dict):
        problems.add(path, f"must be a mapping, got {_type_name(raw)}")
        return None
    ok = True
    for key in raw:
        if key not in _ENTRY_KEYS:
            problems.add(f"{path}.{key}", f"unknown key (expected one of {', '.join(_ENTRY_KEYS)})")
            ok = False
    for key in ("devices", "mig-enabled"):
        if key not in raw:
            problems.add(f"{path}.{key}", "missing required key")
            ok = False

    devices: str | list[int] = "all"
    if "devices" in raw:
        value = raw["devices"]
        if isinstance(value, str):
            if value != "all":
                problems.add(f"{path}.devices", f"the only string allowed is 'all', got {value!r}")
                ok = False
        elif isinstance(value, list):
            seen: set[int] = set()
            for i, index in enumerate(value):
                if not _is_int(index):
                    problems.add(
                        f"{path}.devices[{i}]", f"must be a GPU index, got {_type_name(index)}"
                    )
                    ok = False
                elif index < 0:
                    problems.add(f"{path}.devices[{i}]", f"negative GPU index {index}")
                    ok = False
                elif index in seen:
                    problems.add(f"{path}.devices[{i}]", f"GPU index {index} is listed twice")
                    ok = False
                else:
                    seen.add(index)
            devices = list(value)
        else:
            problems.add(
                f"{path}.devices",
                f"must be 'all' or a list of GPU indexes, got {_type_name(value)}",
            )
            ok = False

    enabled = False
    if "mig-enabled" in raw:
        value = raw["mig-enabled"]
        if isinstance(value, bool):
            enabled = value
        else:
            problems.add(f"{path}.mig-enabled", f"must be true or false, got {_type_name(value)}")
            ok = False

    mig_devices: dict[str, int] = {}
    if "mig-devices" in raw:
        value = raw["mig-devices"]
        if not isinstance(value, dict):
            problems.add(
                f"{path}.mig-devices",
                f"must be a mapping of profile: count, got {_type_name(value)}",
            )
            ok = False
        else:
            for name, count in value.items():
                where = f"{path}.mig-devices.{name}"
                name_problem = profile_name_problem(name)
                if name_problem:
                    problems.add(where, name_problem)
                    ok = False
                if not _is_int(count):
                    problems.add(where, f"the count must be an integer, got {_type_name(count)}")
                    ok = False
                elif count < 0:
                    problems.add(where, f"negative count {count}")
                    ok = False
                if not name_problem and _is_int(count):
                    mig_devices[name] = count
            if ok and enabled and value and not any(c > 0 for c in mig_devices.values()):
                problems.add(f"{path}.mig-devices", "all counts are 0")
                ok = False
            if isinstance(raw.get("mig-enabled"), bool) and not enabled and value:
                problems.add(f"{path}.mig-devices", "MIG devices listed while mig-enabled is false")
                ok = False
    elif enabled:
        problems.add(f"{path}.mig-devices", "missing: required when mig-enabled is true")
        ok = False

    device_filter: list[str] | None = None
    if "device-filter" in raw:
        value = raw["device-filter"]
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            problems.add(
                f"{path}.device-filter",
                f"must be a PCI device id or a list of them, got {_type_name(value)}",
            )
            ok = False
        elif not items:
            problems.add(f"{path}.device-filter", "empty list: leave the key out to match any GPU")
            ok = False
        else:
            for i, item in enumerate(items):
                where = f"{path}.device-filter"
                if not isinstance(value, str):
                    where += f"[{i}]"
                if not isinstance(item, str):
                    problems.add(where, f"must be a PCI device id string, got {_type_name(item)}")
                    ok = False
                    continue
                reason = _device_filter_problem(item)
                if reason:
                    problems.add(where, reason)
                    ok = False
            device_filter = list(items)

    if not ok:
        return None
    return DeviceConfig(
        devices=devices, mig_enabled=enabled, mig_devices=mig_devices, device_filter=device_filter
    )


def _spec(data: Any, problems: Problems) -> MigPartedSpec | None:
    if data is None:
        problems.add("", "empty document: expected 'version: v1' and 'mig-configs'")
        return None
    if not isinstance(data, dict):
        problems.add("", f"the document must be a mapping, got {_type_name(data)}")
        return None
    for key in data:
        if key not in _TOP_KEYS:
            problems.add(str(key), f"unknown key (expected one of {', '.join(_TOP_KEYS)})")
    version = data.get("version")
    if "version" not in data:
        problems.add("version", "missing required key (must be 'v1')")
    elif version != VERSION:
        problems.add("version", f"unknown version {version!r} (only 'v1' is supported)")

    configs: dict[str, list[DeviceConfig]] = {}
    if "mig-configs" in data:
        raw_configs = data["mig-configs"]
        if not isinstance(raw_configs, dict):
            problems.add(
                "mig-configs", f"must be a mapping of config names, got {_type_name(raw_configs)}"
            )
        elif not raw_configs:
            problems.add("mig-configs", "at least one config is required")
        else:
            for name, raw_entries in raw_configs.items():
                path = f"mig-configs.{name}"
                if not isinstance(name, str) or not name:
                    problems.add(path, "a config name must be a non-empty string")
                    continue
                if not isinstance(raw_entries, list):
                    problems.add(path, f"must be a list of entries, got {_type_name(raw_entries)}")
                    continue
                if not raw_entries:
                    problems.add(path, "at least one entry is required")
                    continue
                entries = [_entry(e, f"{path}[{i}]", problems) for i, e in enumerate(raw_entries)]
                configs[name] = [e for e in entries if e is not None]
    if problems:
        return None  # the caller raises them all
    return MigPartedSpec(version=VERSION, configs=configs)


def load(text: str, file: str = "<mig-parted>") -> MigPartedSpec:
    """Parse and check a mig-parted config file; raise ValidationError with every problem."""
    problems = Problems(file)
    parsed, data = _yaml_load(text, problems)
    spec = _spec(data, problems) if parsed else None
    problems.raise_if_any()
    assert spec is not None
    return spec


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


class _Quoted(str):
    """A string always written double-quoted (names that YAML could read as something else)."""


class _Flow(list):
    """A list written in flow style: ``[0, 1]``."""


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)  # indent lists under their key


_Dumper.add_representer(
    _Quoted, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", str(v), style='"')
)
_Dumper.add_representer(
    _Flow, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True)
)


def _entry_document(entry: DeviceConfig) -> dict:
    doc: dict[str, Any] = {}
    if entry.device_filter is not None:
        filters = [_Quoted(f) for f in entry.device_filter]
        doc["device-filter"] = filters[0] if len(filters) == 1 else _Flow(filters)
    doc["devices"] = entry.devices if isinstance(entry.devices, str) else _Flow(entry.devices)
    doc["mig-enabled"] = entry.mig_enabled
    if entry.mig_enabled or entry.mig_devices:
        doc["mig-devices"] = {_Quoted(k): v for k, v in entry.mig_devices.items()}
    return doc


def dump(spec: MigPartedSpec) -> str:
    """Write ``spec`` as a mig-parted config file; ``load(dump(spec)) == spec``.

    The text is checked with :func:`load` before it is returned, so an invalid spec raises
    ValidationError (file ``<dump>``) instead of producing a file mig-parted would refuse.
    """
    doc: dict[str, Any] = {"version": spec.version}
    if spec.configs:
        doc["mig-configs"] = {
            _Quoted(name): [_entry_document(e) for e in entries]
            for name, entries in spec.configs.items()
        }
    text = yaml.dump(
        doc,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=2**31 - 1,
    )
    load(text, file="<dump>")
    return text
