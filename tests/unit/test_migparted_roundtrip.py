"""`miglab gpu mig-parted` (export) against mig-parted's v1 spec, and read back by
`miglab gpu from-mig-parted` to the same layouts (issue 20, part 2).

``go_v1_problems`` restates, independently of miglab's reader, the rules of mig-parted's Go
types at commit bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d of https://github.com/NVIDIA/mig-parted:
``api/spec/v1/spec.go`` (``Spec.UnmarshalJSON``, ``MigConfigSpec.UnmarshalJSON``),
``api/spec/v1/helpers.go`` (``MatchesDeviceFilter``), ``pkg/types/device.go``
(``NewDeviceIDFromString``: ``strconv.ParseUint(s, 0, 32)``, device in the high 16 bits, vendor in
the low) and ``pkg/types/mig_config.go`` (``AssertValidFormat``) with go-nvlib's profile format.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from miglab.adapters.inventory import load_checked
from miglab.core.catalog import load_catalog
from miglab.core.migparted_export import campaign_to_mig_parted, mig_parted_to_campaign
from miglab.core.planning import plan_campaign
from miglab.formats.migparted import dump
from testlib import ROOT, SEED, run_cli

# --- mig-parted's rules, as its Go code states them ---------------------------------------------

_GO_UINT = re.compile(
    r"^(?:0[xX](?:_?[0-9A-Fa-f])+|0[bB](?:_?[01])+|0[oO]?(?:_?[0-7])+|[1-9](?:_?\d)*|0)$"
)
_ATTR = r"[A-Za-z](?:[A-Za-z0-9.]*[A-Za-z0-9])?"
_PROFILE = re.compile(rf"^(?:\d+c\.)?\d+g\.\d+gb(?:\+{_ATTR}(?:,{_ATTR})*|-{_ATTR}(?:,{_ATTR})*)?$")


def _parse_uint32(text: str) -> int | None:
    """Go's strconv.ParseUint(text, 0, 32), or None where it fails."""
    if not _GO_UINT.match(text):
        return None
    digits = text.replace("_", "")
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "0123456789":
        value = int(digits, 8)  # Go's base 0 reads a leading 0 as octal
    else:
        value = int(digits, 0)
    return value if value < 2**32 else None


def go_device_id(text: str) -> tuple[int, int] | None:
    """(device, vendor) of a device-filter as NewDeviceIDFromString reads it, or None."""
    parts = text.split(":")
    if len(parts) > 2 or any(_parse_uint32(p) is None for p in parts):
        return None
    raw = _parse_uint32(parts[0])
    return raw >> 16, raw & 0xFFFF


def _go_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def go_v1_problems(doc) -> list[str]:
    """What mig-parted's v1 reader refuses in ``doc`` (a YAML document as data)."""
    out = []
    if not isinstance(doc, dict):
        return ["not a mapping"]
    if "version" not in doc and doc:
        out.append("missing 'version' field")
    if doc.get("version") != "v1":
        out.append(f"unknown version: {doc.get('version')}")
    out += [f"unexpected field: {k}" for k in doc if k not in ("version", "mig-configs")]
    configs = doc.get("mig-configs")
    if "mig-configs" in doc:
        if not isinstance(configs, dict) or not configs:
            return [*out, "at least one entry in 'mig-configs' is required"]
        for name, entries in configs.items():
            if not isinstance(name, str):
                out.append(f"config name {name!r} is not a string")
            if not isinstance(entries, list) or not entries:
                out.append(f"at least one entry in '{name}' is required")
                continue
            for k, e in enumerate(entries):
                out += [f"{name}[{k}]: {p}" for p in _go_entry_problems(e)]
    return out


def _go_entry_problems(e) -> list[str]:
    if not isinstance(e, dict):
        return ["not a mapping"]
    out = [f"missing required field: {r}" for r in ("devices", "mig-enabled") if r not in e]
    keys = ("device-filter", "devices", "mig-enabled", "mig-devices")
    out += [f"unexpected field: {k}" for k in e if k not in keys]
    if "device-filter" in e:
        f = e["device-filter"]
        items = [f] if isinstance(f, str) else f
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            out.append("device-filter: neither a string nor a list of strings")
        else:  # MatchesDeviceFilter drops what NewDeviceIDFromString cannot read: never matches
            out += [f"device-filter {i!r}: not a device id" for i in items if not go_device_id(i)]
    if "devices" in e:
        d = e["devices"]
        if isinstance(d, str):
            if d != "all":
                out.append(f"invalid string input for 'devices': {d}")
        elif not isinstance(d, list) or not all(_go_int(i) for i in d):
            out.append("devices: neither 'all' nor a list of ints")
    if "mig-enabled" in e and not isinstance(e["mig-enabled"], bool):
        out.append("mig-enabled: not a bool")
    devices = e.get("mig-devices")
    if "mig-devices" in e and devices is not None:
        if not isinstance(devices, dict):
            out.append("mig-devices: not a map[string]int")
        else:
            for prof, n in devices.items():
                if not isinstance(prof, str) or not _PROFILE.match(prof):
                    out.append(f"invalid format for '{prof}'")
                if not _go_int(n) or n < 0:
                    out.append(f"invalid count for '{prof}': {n!r}")
            if devices and not any(_go_int(n) and n > 0 for n in devices.values()):
                out.append("all counts for all MigProfiles are 0")
    if e.get("mig-enabled") is True and devices is None:
        out.append("missing required field 'mig-devices' when 'mig-enabled' is true")
    if e.get("mig-enabled") is False and devices:
        out.append("MIG devices included when 'mig-enabled' is false")
    return out


def go_matches(entry: dict, device: int) -> bool:
    """MatchesDeviceFilter for an NVIDIA GPU with PCI device id ``device``."""
    f = entry.get("device-filter")
    items = [f] if isinstance(f, str) and f else (f or [])
    if not items:
        return True
    return any(go_device_id(i) == (device, 0x10DE) for i in items)


@pytest.mark.parametrize(
    "doc",
    [
        {"version": "v1", "mig-configs": {"c": [{"devices": "0", "mig-enabled": False}]}},
        {"version": "v1", "mig-configs": {"c": [{"devices": [True], "mig-enabled": False}]}},
        {"version": "v1", "mig-configs": {"c": [{"devices": "all", "mig-enabled": "true"}]}},
        {"version": "v1", "mig-configs": {"c": [{"devices": "all", "mig-enabled": True}]}},
        {"version": "v2", "mig-configs": {"c": [{"devices": "all", "mig-enabled": False}]}},
        {"version": "v1", "mig-configs": {}},
        {"version": "v1", "mig-configs": {"c": []}},
        {
            "version": "v1",
            "mig-configs": {
                "c": [{"device-filter": 0x20B510DE, "devices": "all", "mig-enabled": False}]
            },
        },
        {
            "version": "v1",
            "mig-configs": {
                "c": [{"device-filter": "A100", "devices": "all", "mig-enabled": False}]
            },
        },
        {
            "version": "v1",
            "mig-configs": {
                "c": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": "7"}}]
            },
        },
        {
            "version": "v1",
            "mig-configs": {
                "c": [{"devices": "all", "mig-enabled": True, "mig-devices": {"MIG 1g.10gb": 1}}]
            },
        },
        {
            "version": "v1",
            "mig-configs": {
                "c": [{"devices": "all", "mig-enabled": False, "mig-devices": {"1g.10gb": 1}}]
            },
        },
    ],
)
def test_the_go_rules_catch_what_mig_parted_refuses(doc):
    assert go_v1_problems(doc)


def test_the_go_rules_pass_mig_parted_own_files():
    for name in ("config-default.yaml", "config.yaml", "dgx-station-80gb-config.yaml"):
        doc = yaml.safe_load((ROOT / "tests/fixtures/mig-parted" / name).read_text())
        assert go_v1_problems(doc) == [], name


def test_go_device_id_reads_as_strconv_does():
    assert go_device_id("0x20B510DE") == (0x20B5, 0x10DE)
    assert go_device_id("0x20B510DE:0x153310DE") == (0x20B5, 0x10DE)
    assert go_device_id("0x1_0DE") == (0, 0x10DE)
    assert go_device_id("0x1FFFFFFFF") is None and go_device_id("0x1:0x2:0x3") is None


# --- the export, its rules and its round trip ---------------------------------------------------


def lab_file(tmp_path: Path, gpu: str, count: int, hosts: int = 1) -> Path:
    path = tmp_path / "hosts.yml"
    body = "".join(
        f"        gpu-{h:02d}.lab.example:\n"
        f"          miglab_host_gpus: [{{model: {gpu}, count: {count}}}]\n"
        "          miglab_host_cpus: 256\n          miglab_host_memory_gb: 4096\n"
        for h in range(1, hosts + 1)
    )
    path.write_text(
        "all:\n  children:\n    esxi_hosts:\n      hosts:\n"
        + body
        + "      vars: {miglab_host_cpu_overcommit: 4.0}\n"
    )
    return path


def campaign_file(tmp_path: Path, gpu: str, scenarios: dict) -> Path:
    path = tmp_path / "campaign.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "name": "roundtrip",
                "gpu": gpu,
                "vm": {"vcpus": 8, "memory_gb": 32},
                "mlperf": {
                    "benchmarks": ["resnet50"],
                    "scenarios": ["Offline"],
                    "runs": 1,
                    "baseline": next(iter(scenarios)),
                },
                "scenarios": {sid: {"vgpus": v} for sid, v in scenarios.items()},
            },
            sort_keys=False,
        )
    )
    return path


SYNTHETIC = {
    "H100-PCIE-80GB": {
        "one": {"7g.80gb": 1},
        "mixed": {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1},
        "spread": {"3g.40gb": 4, "1g.20gb": 6},  # over several GPUs, two layouts
        "me": {"1g.10gb+me": 1, "1g.10gb": 6},
    },
    "A30": {"halves": {"2g.12gb": 2}, "quarters": {"1g.6gb": 8}, "full": {"4g.24gb": 1}},
    "A100-PCIE-40GB": {"small": {"1g.5gb": 14}, "mix": {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1}},
    "H200-NVL": {"big": {"4g.71gb": 1, "3g.71gb": 1}, "many": {"1g.18gb": 7}},
}


def _cases():
    yield pytest.param(SEED, ROOT / "inventories/example-r750xa", id="seed-A100-PCIE-80GB")
    yield pytest.param(
        ROOT / "campaigns/h200-sxm-mig.yml", ROOT / "inventories/example-h200", id="H200-SXM"
    )
    for gpu in SYNTHETIC:
        yield pytest.param(gpu, 1, id=gpu)
    # 2 hosts of 2 GPUs: "spread" spans both, one config per host
    yield pytest.param("H100-PCIE-80GB", 2, id="H100-PCIE-80GB-two-hosts")


def _inputs(campaign, inventory, tmp_path):
    if isinstance(campaign, Path):
        return campaign, inventory
    hosts = inventory
    lab = lab_file(tmp_path, campaign, 4 // hosts, hosts)
    return campaign_file(tmp_path, campaign, SYNTHETIC[campaign]), lab


def _layouts_of_plan(plan) -> dict[tuple[str, str, int], Counter]:
    out = {}
    for job in plan.schedule.jobs:
        for use in job.packing.gpus:
            if use.mig is not None:
                key = (job.scenario.id, use.host, use.index)
                out[key] = Counter(i.profile.name for i in use.mig.instances)
    return out


@pytest.mark.parametrize("campaign, inventory", list(_cases()))
def test_export_follows_the_v1_spec_and_reads_back(campaign, inventory, tmp_path):
    campaign, inventory = _inputs(campaign, inventory, tmp_path)
    loaded, lab = load_checked(campaign, inventory)
    plan = plan_campaign(loaded, lab)
    text = dump(campaign_to_mig_parted(plan))
    doc = yaml.safe_load(text)

    # mig-parted's own rules, and every entry is for this GPU (by its device-filter)
    assert go_v1_problems(doc) == []
    model = loaded.gpu
    ids = [int(pid, 16) for pid in model.pci_device_ids]
    gpus_per_host = {h.name: len(h.gpus) for h in lab.hosts}
    for name, entries in doc["mig-configs"].items():
        for e in entries:
            assert all(go_matches(e, i) for i in ids), (name, e)
            for other in load_catalog():
                if other is not model:
                    assert not any(go_matches(e, int(p, 16)) for p in other.pci_device_ids)
            if e["devices"] != "all":
                assert e["devices"] == sorted(e["devices"])
                assert all(0 <= i < max(gpus_per_host.values()) for i in e["devices"])

    # the same per-GPU layouts, read from the file as mig-parted applies it
    want = _layouts_of_plan(plan)
    got: dict = {}
    hosts_of = {}
    for job in plan.schedule.jobs:
        hosts = sorted({u.host for u in job.packing.gpus})
        for host in hosts:
            cname = (
                job.scenario.id if len(hosts) == 1 else f"{job.scenario.id}-{host.split('.')[0]}"
            )
            hosts_of[cname] = (job.scenario.id, host)
    for cname, entries in doc["mig-configs"].items():
        if cname == "all-disabled":
            assert entries == [
                {
                    "device-filter": entries[0]["device-filter"],
                    "devices": "all",
                    "mig-enabled": False,
                }
            ]
            continue
        sid, host = hosts_of[cname]
        for e in entries:
            if e["mig-enabled"]:
                for index in e["devices"]:
                    got[(sid, host, index)] = Counter(e["mig-devices"])
    assert got == want

    # from-mig-parted reads it back: one scenario per config, the campaign's vGPUs
    exported = tmp_path / "exported.yaml"
    exported.write_text(text)
    back = mig_parted_to_campaign(exported, gpu=model.name, name="back")
    n = len(doc["mig-configs"])
    assert back.skipped == f"skipped 1 of {n} configs: 1 disables MIG or is empty"
    again = yaml.safe_load(back.text)
    assert again["gpu"] == model.name
    totals: dict[str, Counter] = {}
    for sid, body in again["scenarios"].items():
        source, _ = hosts_of[back.scenarios[sid]]
        totals.setdefault(source, Counter()).update(body["vgpus"])
    for scenario in loaded.scenarios.values():
        expected = Counter({v.name: n for v, n in scenario.vgpus})
        assert totals[scenario.id] == expected, scenario.id
    # and without --gpu: the device-filters name the model
    assert yaml.safe_load(mig_parted_to_campaign(exported).text)["gpu"] == model.name

    # the re-imported campaign validates on the same lab
    # (with small VMs: the skeleton's 32 vCPUs per VM do not all fit the H200 lab)
    again["vm"] = {"vcpus": 8, "memory_gb": 32}
    again_file = tmp_path / "again.yml"
    again_file.write_text(yaml.safe_dump(again, sort_keys=False))
    reloaded, _ = load_checked(again_file, inventory)
    assert reloaded.gpu is model


def test_cli_round_trip_validates(tmp_path):
    gpu = "H100-PCIE-80GB"
    campaign = campaign_file(tmp_path, gpu, SYNTHETIC[gpu])
    lab = lab_file(tmp_path, gpu, 4)
    out = tmp_path / "mig.yaml"
    res = run_cli("gpu", "mig-parted", campaign, "-i", lab, "-o", out)
    assert res.returncode == 0, res.stderr
    res = run_cli("gpu", "from-mig-parted", out, "--gpu", gpu, "--name", "back")
    assert res.returncode == 0, res.stderr
    assert res.stderr == "skipped 1 of 5 configs: 1 disables MIG or is empty\n"
    back = tmp_path / "back.yml"
    back.write_text(res.stdout)
    checked = run_cli("validate", back, "-i", lab)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    doc = yaml.safe_load(res.stdout)
    assert {s: b["vgpus"] for s, b in doc["scenarios"].items()} == SYNTHETIC[gpu]
