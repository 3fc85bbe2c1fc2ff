"""mig-parted config files: strict load, dump, round trip (fixtures: tests/fixtures/mig-parted)."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from miglab.errors import ValidationError
from miglab.formats.migparted import DeviceConfig, MigPartedSpec, dump, load, profile_name_problem

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "mig-parted"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def problems_of(text: str, file: str = "t.yaml") -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as err:
        load(text, file)
    assert all(p.file == file for p in err.value.problems)
    return [(p.field, p.reason) for p in err.value.problems]


def fields_of(text: str) -> list[str]:
    return [f for f, _ in problems_of(text)]


def entry(body: str, name: str = "c") -> str:
    """A one-entry config; ``body`` holds the entry's keys, one per line."""
    lines = body.strip("\n").splitlines()
    first, rest = lines[0], lines[1:]
    text = f"version: v1\nmig-configs:\n  {name}:\n    - {first}\n"
    return text + "".join(f"      {line}\n" for line in rest)


# ---- the real examples -----------------------------------------------------------------------


def test_upstream_example_config():
    spec = load(read("config.yaml"), "config.yaml")
    assert spec.version == "v1"
    assert list(spec.configs) == [
        "all-disabled",
        "all-enabled",
        "all-1g.5gb",
        "all-1g.5gb.me",
        "all-1g.10gb",
        "all-2g.10gb",
        "all-3g.20gb",
        "all-balanced",
        "custom-config",
    ]
    assert spec.configs["all-disabled"] == [DeviceConfig("all", False, {}, None)]
    assert spec.configs["all-enabled"] == [DeviceConfig("all", True, {}, None)]
    assert spec.configs["all-1g.5gb.me"] == [DeviceConfig("all", True, {"1g.5gb+me": 1})]
    assert spec.configs["all-balanced"][0].mig_devices == {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
    custom = spec.configs["custom-config"]
    assert [e.devices for e in custom] == [[0, 1, 2, 3], [4], [5], [6], [7]]
    assert [e.mig_enabled for e in custom] == [False, True, True, True, True]


def test_upstream_dgx_station_example_with_device_filters():
    spec = load(read("dgx-station-80gb-config.yaml"), "dgx-station-80gb-config.yaml")
    assert len(spec.configs) == 9
    first = spec.configs["all-disabled-dgx-station-80"]
    assert [e.device_filter for e in first] == [["0x20B210DE"], ["0x1FB010DE"]]
    assert all(e.mig_devices == {} and not e.mig_enabled for e in first)
    k8s = spec.configs["balanced-k8s-dgx-station-80"]
    assert [e.devices for e in k8s] == [[0], [1], [2], [4], [3]]
    assert k8s[2].mig_devices == {"2g.20gb": 3, "1g.10gb": 1}


@pytest.mark.parametrize("name", ["config.yaml", "dgx-station-80gb-config.yaml"])
def test_upstream_examples_round_trip(name):
    spec = load(read(name), name)
    text = dump(spec)
    assert load(text, "dumped") == spec
    assert dump(load(text)) == text  # dump is stable


def test_dump_layout_follows_upstream_style():
    spec = MigPartedSpec(
        configs={
            "two-a100": [
                DeviceConfig([0, 1], True, {"1g.10gb": 7}, ["0x20B510DE", "0x20B210DE"]),
                DeviceConfig("all", False),
            ]
        }
    )
    assert dump(spec) == (
        "version: v1\n"
        "mig-configs:\n"
        '  "two-a100":\n'
        '    - device-filter: ["0x20B510DE", "0x20B210DE"]\n'
        "      devices: [0, 1]\n"
        "      mig-enabled: true\n"
        "      mig-devices:\n"
        '        "1g.10gb": 7\n'
        "    - devices: all\n"
        "      mig-enabled: false\n"
    )


def test_dump_refuses_an_invalid_spec():
    bad = MigPartedSpec(configs={"c": [DeviceConfig("all", True, {"1g.10gb": -1})]})
    with pytest.raises(ValidationError) as err:
        dump(bad)
    assert str(err.value) == "<dump>: mig-configs.c[0].mig-devices.1g.10gb: negative count -1"


def test_single_device_filter_string_and_subsystem_id():
    spec = load(entry('device-filter: "0x233510DE:0x18BF10DE"\ndevices: all\nmig-enabled: false'))
    assert spec.configs["c"][0].device_filter == ["0x233510DE:0x18BF10DE"]


def test_version_only_is_accepted_like_mig_parted():
    assert load("version: v1\n") == MigPartedSpec("v1", {})


def test_yaml_merge_keys_may_be_overridden():
    text = (
        "version: v1\n"
        "base: &base {devices: all, mig-enabled: false}\n"
        "mig-configs:\n"
        "  c:\n"
        "    - <<: *base\n"
        "      mig-enabled: true\n"
        "      mig-devices: {1g.10gb: 1}\n"
    )
    # the merge itself is fine; only the unknown top-level key "base" is reported
    assert fields_of(text) == ["base"]


# ---- strict rules, one test each -------------------------------------------------------------


def test_rule_version_must_be_v1():
    assert problems_of("version: v2\nmig-configs: {c: [{devices: all, mig-enabled: false}]}\n") == [
        ("version", "unknown version 'v2' (only 'v1' is supported)")
    ]


def test_rule_version_is_required():
    assert fields_of("mig-configs: {c: [{devices: all, mig-enabled: false}]}\n") == ["version"]


def test_rule_version_must_be_a_string():
    assert fields_of("version: 1\n") == ["version"]


def test_rule_unknown_top_level_key():
    assert problems_of("version: v1\nbogus: field\n") == [
        ("bogus", "unknown key (expected one of version, mig-configs)")
    ]


def test_rule_unknown_entry_key():
    assert fields_of(entry("devices: all\nmig-enabled: false\nmig-device: {}")) == [
        "mig-configs.c[0].mig-device"
    ]


def test_rule_devices_is_required():
    assert fields_of(entry("mig-enabled: false")) == ["mig-configs.c[0].devices"]


def test_rule_mig_enabled_is_required():
    assert fields_of(entry("devices: all\nmig-devices: {1g.10gb: 1}")) == [
        "mig-configs.c[0].mig-enabled"
    ]


def test_rule_mig_enabled_must_be_a_boolean():
    assert problems_of(entry('devices: all\nmig-enabled: "true"\nmig-devices: {}')) == [
        ("mig-configs.c[0].mig-enabled", "must be true or false, got a string")
    ]


def test_rule_mig_devices_required_when_enabled():
    assert problems_of(entry("devices: all\nmig-enabled: true")) == [
        ("mig-configs.c[0].mig-devices", "missing: required when mig-enabled is true")
    ]


def test_rule_no_mig_devices_when_disabled():
    assert problems_of(entry("devices: all\nmig-enabled: false\nmig-devices: {1g.10gb: 7}")) == [
        ("mig-configs.c[0].mig-devices", "MIG devices listed while mig-enabled is false")
    ]


def test_rule_negative_count():
    assert problems_of(
        entry("devices: all\nmig-enabled: true\nmig-devices: {1g.10gb: -1}", "all-1g.10gb")
    ) == [("mig-configs.all-1g.10gb[0].mig-devices.1g.10gb", "negative count -1")]


@pytest.mark.parametrize("count", ["1.5", '"7"', "true", "null"])
def test_rule_count_must_be_an_integer(count):
    assert fields_of(
        entry(f"devices: all\nmig-enabled: true\nmig-devices: {{1g.10gb: {count}}}")
    ) == ["mig-configs.c[0].mig-devices.1g.10gb"]


def test_rule_counts_not_all_zero():
    assert problems_of(entry("devices: all\nmig-enabled: true\nmig-devices: {1g.10gb: 0}")) == [
        ("mig-configs.c[0].mig-devices", "all counts are 0")
    ]


@pytest.mark.parametrize(
    "name", ["bogus", "1g.5", "g.5gb", "1g.gb", "1g.5gb+", "1g.5gb+me,me", "1g.5gb*me", "1r.1g.5gb"]
)
def test_rule_profile_name_format(name):
    assert fields_of(entry(f'devices: all\nmig-enabled: true\nmig-devices: {{"{name}": 1}}')) == [
        f"mig-configs.c[0].mig-devices.{name}"
    ]


@pytest.mark.parametrize(
    "name", ["1g.10gb", "1c.3g.40gb", "1g.10gb+me", "1g.24gb+me.all", "1g.24gb+gfx", "1g.24gb-me"]
)
def test_profile_name_formats_mig_parted_accepts(name):
    assert profile_name_problem(name) is None


def test_rule_mig_devices_must_be_a_mapping():
    assert fields_of(entry("devices: all\nmig-enabled: true\nmig-devices: [1g.10gb]")) == [
        "mig-configs.c[0].mig-devices"
    ]


def test_rule_devices_string_must_be_all():
    assert problems_of(entry("devices: bogus\nmig-enabled: false")) == [
        ("mig-configs.c[0].devices", "the only string allowed is 'all', got 'bogus'")
    ]


def test_rule_devices_must_be_all_or_a_list():
    assert fields_of(entry("devices: {}\nmig-enabled: false")) == ["mig-configs.c[0].devices"]


def test_rule_device_indexes_are_non_negative_unique_integers():
    assert fields_of(entry("devices: [0, -1, 0, x, true]\nmig-enabled: false")) == [
        "mig-configs.c[0].devices[1]",
        "mig-configs.c[0].devices[2]",
        "mig-configs.c[0].devices[3]",
        "mig-configs.c[0].devices[4]",
    ]


@pytest.mark.parametrize(
    "value, field",
    [
        ('"A100-SXM4-40GB"', "mig-configs.c[0].device-filter"),
        ('["0x20B510DE", "nope"]', "mig-configs.c[0].device-filter[1]"),
        ("[0x20B510DE]", "mig-configs.c[0].device-filter[0]"),  # YAML reads an int
        ("[]", "mig-configs.c[0].device-filter"),
        ('"0x1:0x2:0x3"', "mig-configs.c[0].device-filter"),
        ('"0x1FFFFFFFF"', "mig-configs.c[0].device-filter"),
        ("{a: b}", "mig-configs.c[0].device-filter"),
    ],
)
def test_rule_device_filter(value, field):
    assert fields_of(entry(f"device-filter: {value}\ndevices: all\nmig-enabled: false")) == [field]


def test_rule_mig_configs_must_not_be_empty():
    assert problems_of("version: v1\nmig-configs: {}\n") == [
        ("mig-configs", "at least one config is required")
    ]


def test_rule_each_config_needs_an_entry():
    assert problems_of("version: v1\nmig-configs:\n  c: []\n") == [
        ("mig-configs.c", "at least one entry is required")
    ]


def test_rule_entries_are_mappings():
    assert fields_of("version: v1\nmig-configs:\n  c: [all]\n") == ["mig-configs.c[0]"]


def test_rule_duplicate_yaml_keys():
    text = (
        "version: v1\n"
        "mig-configs:\n"
        "  c:\n"
        "    - devices: all\n"
        "      mig-enabled: false\n"
        "      mig-enabled: true\n"
        "  c:\n"
        "    - devices: all\n"
        "      mig-enabled: false\n"
    )
    found = dict(problems_of(text))
    assert set(found) == {"mig-configs.c", "mig-configs.c[0].mig-enabled"}
    assert "duplicate key 'c' (lines 3 and 7)" in found["mig-configs.c"]
    assert "duplicate key 'mig-enabled' (lines 5 and 6)" in found["mig-configs.c[0].mig-enabled"]


def test_rule_not_yaml():
    assert problems_of("version: v1\nmig-configs: [\n") == [
        (
            "",
            "not valid YAML at line 3, column 1: expected the node content, but found "
            "'<stream end>'",
        )
    ]


@pytest.mark.parametrize("text", ["", "[1, 2]\n", "just text\n"])
def test_rule_document_must_be_a_mapping(text):
    assert fields_of(text) == [""]


def test_all_problems_are_collected_at_once():
    text = (
        "version: v2\n"
        "bogus: 1\n"
        "mig-configs:\n"
        "  all-1g.10gb:\n"
        "    - devices: [0, -1]\n"
        "      mig-enabled: true\n"
        "      mig-devices: {1g.10gb: -1, bogus: 1}\n"
        "  disabled:\n"
        "    - devices: all\n"
        "      mig-enabled: false\n"
        "      mig-devices: {1g.10gb: 1}\n"
    )
    with pytest.raises(ValidationError) as err:
        load(text, "lab/mig.yaml")
    assert str(err.value).splitlines() == [
        "lab/mig.yaml: bogus: unknown key (expected one of version, mig-configs)",
        "lab/mig.yaml: version: unknown version 'v2' (only 'v1' is supported)",
        "lab/mig.yaml: mig-configs.all-1g.10gb[0].devices[1]: negative GPU index -1",
        "lab/mig.yaml: mig-configs.all-1g.10gb[0].mig-devices.1g.10gb: negative count -1",
        "lab/mig.yaml: mig-configs.all-1g.10gb[0].mig-devices.bogus: 'bogus' is not "
        "[<C>c.]<G>g.<GB>gb: expected 2 or 3 '.'-separated fields",
        "lab/mig.yaml: mig-configs.disabled[0].mig-devices: "
        "MIG devices listed while mig-enabled is false",
    ]


# ---- round trip property ---------------------------------------------------------------------

_names = st.text(
    alphabet=string.ascii_letters + string.digits + "-_.:+ #'\"é",
    min_size=1,
    max_size=24,
)
_profiles = st.builds(
    lambda c, g, gb, sfx: (f"{c}c." if c else "") + f"{g}g.{gb}gb" + sfx,
    st.sampled_from([0, 0, 1, 2, 3]),
    st.integers(1, 8),
    st.integers(1, 200),
    st.sampled_from(["", "", "+me", "+me.all", "+gfx", "-me"]),
)
_filters = (
    st.lists(st.integers(0, 2**32 - 1).map(lambda n: f"0x{n:08X}"), min_size=1, max_size=3)
    | st.none()
)


@st.composite
def _entries(draw):
    enabled = draw(st.booleans())
    devices = draw(st.just("all") | st.lists(st.integers(0, 15), unique=True, max_size=8))
    mig_devices = {}
    if enabled:
        mig_devices = draw(st.dictionaries(_profiles, st.integers(0, 7), max_size=4))
        if mig_devices and not any(mig_devices.values()):
            first = next(iter(mig_devices))
            mig_devices[first] = 1
    return DeviceConfig(devices, enabled, mig_devices, draw(_filters))


_specs = st.builds(
    MigPartedSpec,
    st.just("v1"),
    st.dictionaries(_names, st.lists(_entries(), min_size=1, max_size=4), max_size=5),
)


@settings(max_examples=200, deadline=None)
@given(_specs)
def test_dump_load_round_trip(spec):
    text = dump(spec)
    assert load(text, "<hypothesis>") == spec
    assert isinstance(yaml.safe_load(text), dict)
