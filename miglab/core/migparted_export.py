"""A campaign's MIG layouts as an NVIDIA mig-parted file, and mig-parted files as campaigns.

On vSphere the vGPU manager creates the GPU instances when a VM with a MIG-backed vGPU powers on;
the export serves bare-metal reproduction and review (``nvidia-mig-parted assert -f FILE -c ID``
checks a host against one scenario). One config per campaign scenario (per host when a scenario
spans several), one entry per group of GPUs with the same layout, each with a ``device-filter``
naming the GPU model's PCI id so the file cannot be applied to another GPU by accident.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import yaml

from miglab.core.catalog import GpuModel, UnknownName, load_catalog
from miglab.core.planning import CampaignPlan
from miglab.errors import Problems
from miglab.formats.files import INPUT_BYTES, UnreadableFile, read_input_text
from miglab.formats.migparted import DeviceConfig, MigPartedSpec, load


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


def mig_parted_to_campaign(
    path: Path, gpu: str | None = None, name: str = "from-mig-parted"
) -> str:
    """A campaign skeleton (YAML text) with one scenario per MIG-enabling mig-parted config."""
    problems = Problems(str(path))
    try:
        text = read_input_text(path, limit=INPUT_BYTES)
    except UnreadableFile as exc:
        problems.add("", exc.reason)
        problems.raise_if_any()
    spec = load(text, str(path))
    catalog = load_catalog()
    model = None
    if gpu:
        try:
            model = catalog.get(gpu)
        except UnknownName as exc:
            problems.add("--gpu", str(exc))
            problems.raise_if_any()
    scenarios: dict[str, dict] = {}
    for cname, entries in spec.configs.items():
        vgpus: Counter = Counter()
        for k, entry in enumerate(entries):
            path_k = f"mig-configs.{cname}[{k}]"
            if not entry.mig_enabled or not entry.mig_devices:
                continue
            entry_model = _model_for(entry, catalog, problems, path_k)
            if model is None:
                model = entry_model
            if entry_model is not None and entry_model is not model:
                continue  # another GPU model's entry in a multi-model file
            if model is None:
                problems.add(path_k, "no device-filter names the GPU model: give --gpu")
                continue
            gpus = 1 if entry.devices == "all" else len(entry.devices)
            for prof, n in entry.mig_devices.items():
                try:
                    p = model.profile(prof)
                except UnknownName as exc:
                    problems.add(f"{path_k}.mig-devices.{prof}", str(exc))
                    continue
                if n:
                    vgpus[p.name] += n * gpus
        if vgpus:
            by_size = sorted(vgpus.items(), key=lambda kv: -model.profile(kv[0]).placement_size)
            scenarios[_scenario_id(cname, scenarios)] = {"vgpus": dict(by_size)}
    if model is None and not problems:
        problems.add("mig-configs", "no config enables MIG with mig-devices")
    problems.raise_if_any()
    if not scenarios:
        problems.add("mig-configs", f"no config enables MIG devices of {model.name}")
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
        f"# Campaign skeleton from mig-parted file {path} (one scenario per config; a\n"
        "# config for `devices: all` becomes one GPU's worth of vGPUs). Review vm/mlperf.\n"
    )
    return header + yaml.safe_dump(campaign, sort_keys=False, default_flow_style=None)


def _scenario_id(config_name: str, taken: dict) -> str:
    """A campaign scenario id from a mig-parted config name (ids allow [A-Za-z0-9_-], 32 chars)."""
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", config_name).strip("-_")[:32] or "config"
    sid, k = base, 1
    while sid in taken:
        k += 1
        sid = f"{base[:29]}-{k}"
    return sid


def _model_for(entry: DeviceConfig, catalog, problems: Problems, path: str) -> GpuModel | None:
    if not entry.device_filter:
        return None
    for f in entry.device_filter:
        pid = "0x" + f.lower()[2:6]
        try:
            return catalog.get(pid)
        except UnknownName:
            continue
    return None
