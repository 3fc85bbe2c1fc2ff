"""A campaign's MIG layouts as an NVIDIA mig-parted file, and mig-parted files as campaigns.

On vSphere the vGPU manager creates the GPU instances when a VM with a MIG-backed vGPU powers on;
the export serves bare-metal reproduction and review (``nvidia-mig-parted assert -f FILE -c ID``
checks a host against one scenario). One config per campaign scenario (per host when a scenario
spans several), one entry per group of GPUs with the same layout, each with a ``device-filter``
naming the GPU model's PCI id so the file cannot be applied to another GPU by accident.

The file follows mig-parted's v1 spec as its Go types define it, read from
https://github.com/NVIDIA/mig-parted at commit bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d:
``api/spec/v1/spec.go`` (``Spec{version, mig-configs}``, ``MigConfigSpec{device-filter: string |
[]string, devices: "all" | []int, mig-enabled: bool, mig-devices: map[string]int}``),
``api/spec/v1/helpers.go`` (how a device-filter and ``devices`` select GPUs),
``pkg/types/device.go`` (a filter is ``0xDDDDVVVV`` device+vendor, optionally ``:0xSSSSVVVV``)
and ``pkg/types/mig_config.go`` (counts >= 0, not all 0).

The import reads a file as mig-parted applies it to one GPU model: an entry whose
``device-filter`` names other GPUs is left out, a config none of whose entries is for the model,
that uses a profile the model lacks, or that enables no MIG device, is skipped (one summary line
says how many and why), every other config becomes a scenario.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from miglab.core.catalog import GpuModel, MigProfile, UnknownName, load_catalog
from miglab.core.placement import fit
from miglab.core.planning import CampaignPlan
from miglab.errors import Problems
from miglab.formats.files import INPUT_BYTES, UnreadableFile, read_input_text
from miglab.formats.migparted import DeviceConfig, MigPartedSpec, load

NVIDIA_VENDOR = 0x10DE


def device_filter(model: GpuModel) -> list[str]:
    """mig-parted's device filter: 16-bit device id then NVIDIA's vendor id 10DE."""
    return [f"0x{pid[2:].upper()}10DE" for pid in model.pci_device_ids]


def campaign_to_mig_parted(plan: CampaignPlan) -> MigPartedSpec:
    spec = MigPartedSpec()
    model = plan.campaign.gpu
    spec.configs["all-disabled"] = [DeviceConfig("all", False, {}, device_filter(model))]
    for job in plan.schedule.jobs:
        by_host: dict[str, list] = {}
        for use in job.packing.gpus:
            by_host.setdefault(use.host, []).append(use)
        for host, uses in by_host.items():
            name = (
                job.scenario.id if len(by_host) == 1 else f"{job.scenario.id}-{host.split('.')[0]}"
            )
            groups: dict[tuple, list[int]] = {}
            for use in uses:
                if use.mig is None:
                    key = ("time-sliced",)
                else:
                    key = tuple(sorted(Counter(i.profile.name for i in use.mig.instances).items()))
                groups.setdefault(key, []).append(use.index)
            entries = []
            for key, indexes in groups.items():
                if key == ("time-sliced",):
                    entries.append(DeviceConfig(sorted(indexes), False, {}, device_filter(model)))
                else:
                    entries.append(
                        DeviceConfig(sorted(indexes), True, dict(key), device_filter(model))
                    )
            spec.configs[name] = entries
    return spec


# --- import ---------------------------------------------------------------------------------------

# why a config is skipped, in the order the summary line names them
OTHER_GPUS = "other-gpus"
NO_PROFILE = "no-profile"
NO_FIT = "no-fit"
EMPTY = "empty"


def filter_device_ids(filters: list[str]) -> list[int]:
    """The 16-bit PCI device ids of NVIDIA GPUs a ``device-filter`` names (mig-parted's
    ``NewDeviceIDFromString``: ``0xDDDDVVVV``, any base ``strconv.ParseUint(s, 0, 32)`` reads,
    optionally ``:`` and a subsystem id, which only narrows the match to some boards)."""
    out = []
    for f in filters:
        try:
            raw = int(f.split(":")[0], 0)
        except ValueError:
            continue  # the loader refuses these; mig-parted never matches them
        if raw & 0xFFFF == NVIDIA_VENDOR:
            out.append(raw >> 16)
    return out


def names_model(entry: DeviceConfig, model: GpuModel) -> bool | None:
    """Whether ``entry``'s device-filter names ``model``; None when it has no filter (any GPU)."""
    if not entry.device_filter:
        return None
    ours = {int(pid, 16) for pid in model.pci_device_ids}
    return any(d in ours for d in filter_device_ids(entry.device_filter))


@dataclass
class ConfigVerdict:
    """What one mig-parted config is on one GPU model: its vGPUs, or why it is skipped."""

    name: str
    vgpus: dict[str, int] = field(default_factory=dict)  # profile name -> VMs
    skipped: str | None = None  # OTHER_GPUS, NO_PROFILE, NO_FIT, EMPTY
    missing: list[str] = field(default_factory=list)  # NO_PROFILE: the profiles it lacks
    detail: str = ""  # NO_FIT: why not


def judge_config(name: str, entries: list[DeviceConfig], model: GpuModel) -> ConfigVerdict:
    """Apply one config to ``model`` as mig-parted would: its entries for the model (by
    device-filter, or without one); one GPU's worth of vGPUs for ``devices: all``."""
    verdict = ConfigVerdict(name)
    ours = [e for e in entries if names_model(e, model) is not False]
    if not ours:
        verdict.skipped = OTHER_GPUS
        return verdict
    by_name = {p.name: p for p in model.profiles}
    vgpus: Counter = Counter()
    for entry in ours:
        if not entry.mig_enabled:
            continue
        gpus = 1 if entry.devices == "all" else len(entry.devices)
        layout: list[MigProfile] = []
        for prof, n in entry.mig_devices.items():
            if n <= 0:
                continue
            if prof not in by_name:
                if prof not in verdict.missing:
                    verdict.missing.append(prof)
                continue
            layout += [by_name[prof]] * n
            vgpus[prof] += n * gpus
        if layout and not verdict.missing and gpus and fit(model, layout) is None:
            counts = ", ".join(f"{n}x {p}" for p, n in Counter(p.name for p in layout).items())
            verdict.detail = f"{counts} do not fit on one {model.name}"
    if verdict.missing:
        verdict.skipped = NO_PROFILE
    elif verdict.detail:
        verdict.skipped = NO_FIT
    elif not +vgpus:
        verdict.skipped = EMPTY
    else:
        order = {p.name: k for k, p in enumerate(model.profiles)}
        verdict.vgpus = dict(
            sorted((+vgpus).items(), key=lambda kv: (-by_name[kv[0]].placement_size, order[kv[0]]))
        )
    return verdict


def verdict_reason(verdict: ConfigVerdict, model: GpuModel) -> str:
    """Why a skipped config does not apply, in words (for ``--config``)."""
    return {
        OTHER_GPUS: "its device-filter names other GPUs (PCI ids of "
        f"{model.name}: {', '.join(device_filter(model))})",
        NO_PROFILE: f"it uses profiles {model.name} does not have ({', '.join(verdict.missing)}; "
        f"{model.name} has {', '.join(p.name for p in model.profiles)})",
        NO_FIT: verdict.detail,
        EMPTY: "it disables MIG or lists no MIG device",
    }[verdict.skipped or EMPTY]


def skip_summary(verdicts: list[ConfigVerdict], model: GpuModel) -> str | None:
    """One line: how many configs were skipped and why; None when none was."""
    skipped = [v for v in verdicts if v.skipped]
    if not skipped:
        return None
    count = Counter(v.skipped for v in skipped)

    def says(n: int, one: str, many: str) -> str:
        return f"{n} {one if n == 1 else many}"

    parts = []
    if count[OTHER_GPUS]:
        parts.append(
            says(count[OTHER_GPUS], "has a device-filter", "have a device-filter")
            + " that names other GPUs"
        )
    if count[NO_PROFILE]:
        missing = list(dict.fromkeys(p for v in skipped for p in v.missing))
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        parts.append(
            says(count[NO_PROFILE], "uses profiles", "use profiles")
            + f" {model.name} does not have ({shown})"
        )
    if count[NO_FIT]:
        parts.append(says(count[NO_FIT], "does not fit", "do not fit") + f" on one {model.name}")
    if count[EMPTY]:
        parts.append(says(count[EMPTY], "disables MIG or is empty", "disable MIG or are empty"))
    return f"skipped {len(skipped)} of {len(verdicts)} configs: {', '.join(parts)}"


@dataclass
class ImportedCampaign:
    """``from-mig-parted``'s result: the campaign skeleton and the one line about skipped
    configs (None when every config became a scenario)."""

    text: str
    model: str
    scenarios: dict[str, str]  # scenario id -> mig-parted config name
    skipped: str | None = None


def mig_parted_to_campaign(
    path: Path,
    gpu: str | None = None,
    name: str = "from-mig-parted",
    config: str | None = None,
) -> ImportedCampaign:
    """A campaign skeleton with one scenario per mig-parted config that applies to the GPU
    model (``gpu``, or the one catalog model the file's device-filters name); ``config`` picks
    one config. Raises ValidationError (file and field) when nothing can be imported."""
    problems = Problems(str(path))
    try:
        text = read_input_text(path, limit=INPUT_BYTES)
    except UnreadableFile as exc:
        problems.add("", exc.reason)
        problems.raise_if_any()
    spec = load(text, str(path))
    if not spec.configs:
        problems.add("mig-configs", "missing: the file has no config")
        problems.raise_if_any()
    catalog = load_catalog()
    model = None
    if gpu:
        try:
            model = catalog.get(gpu)
        except UnknownName as exc:
            problems.add("--gpu", str(exc))
            problems.raise_if_any()
    configs = spec.configs
    if config is not None:
        if config not in configs:
            problems.add("--config", _unknown_config(config, configs, model))
            problems.raise_if_any()
        configs = {config: configs[config]}
    if model is None:
        model = _model_named_by_filters(configs, catalog, problems)
    verdicts = [judge_config(cname, entries, model) for cname, entries in configs.items()]
    if config is not None and verdicts[0].skipped:
        problems.add(
            f"mig-configs.{config}",
            f"does not apply to {model.name}: {verdict_reason(verdicts[0], model)}",
        )
        problems.raise_if_any()
    summary = skip_summary(verdicts, model) if config is None else None
    scenarios: dict[str, dict] = {}
    sources: dict[str, str] = {}
    for v in verdicts:
        if v.skipped:
            continue
        sid = _scenario_id(v.name, scenarios)
        scenarios[sid] = {"vgpus": v.vgpus}
        sources[sid] = v.name
    if not scenarios:
        problems.add("mig-configs", f"no config applies to {model.name}: {summary}")
        problems.raise_if_any()
    campaign = {
        "version": 1,
        "name": name,
        "gpu": model.name,
        "vm": {"vcpus": 32, "memory_gb": 64},
        "mlperf": {
            "benchmarks": ["resnet50", "bert-99"],
            "scenarios": ["Offline"],
            "runs": 3,
            "baseline": next(iter(scenarios)),
        },
        "scenarios": scenarios,
    }
    header = (
        f"# Campaign skeleton for {model.name} from mig-parted file {path}\n"
        "# (one scenario per config that applies to the GPU; a config for `devices: all` becomes\n"
        "# one GPU's worth of vGPUs). Review vm/mlperf.\n"
    )
    if summary:
        header += f"# {summary}\n"
    return ImportedCampaign(
        header + yaml.safe_dump(campaign, sort_keys=False, default_flow_style=None),
        model.name,
        sources,
        summary,
    )


def _unknown_config(config: str, configs: dict, model: GpuModel | None) -> str:
    """``--config``'s problem: the configs that apply to ``model`` (all without one), as many
    names as a problem line holds."""
    names = list(map(str, configs))
    if model is not None:
        names = [n for n in names if not judge_config(n, configs[n], model).skipped]
        known = f"the configs for {model.name} ({len(names)} of {len(configs)})"
    else:
        known = f"the file's configs ({len(names)})"
    shown: list[str] = []
    for n in names:
        if sum(len(x) + 2 for x in shown) + len(n) > 250:
            shown.append("...")
            break
        shown.append(n)
    return f"unknown config {config!r}; {known}: {', '.join(shown) or 'none'}"


def _model_named_by_filters(configs: dict, catalog, problems: Problems) -> GpuModel:
    """The one catalog GPU model the configs' device-filters name; else a --gpu problem."""
    named: dict[str, GpuModel] = {}
    for entries in configs.values():
        for entry in entries:
            for device in filter_device_ids(entry.device_filter or []):
                try:
                    model = catalog.get(f"0x{device:04x}")
                except UnknownName:
                    continue
                named.setdefault(model.name, model)
    if len(named) == 1:
        return next(iter(named.values()))
    if named:
        problems.add(
            "--gpu",
            f"the file's device-filters name {len(named)} GPU models of the catalog "
            f"({', '.join(sorted(named))}): give --gpu MODEL",
        )
    else:
        problems.add("--gpu", "no device-filter names a GPU model of the catalog: give --gpu MODEL")
    problems.raise_if_any()
    raise AssertionError("unreachable")


def _scenario_id(config_name: str, taken: dict) -> str:
    """A campaign scenario id from a mig-parted config name (ids allow [A-Za-z0-9_-], 32 chars)."""
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", config_name).strip("-_")[:32] or "config"
    sid, k = base, 1
    while sid in taken:
        k += 1
        sid = f"{base[: 31 - len(str(k))]}-{k}"
    return sid
