"""Catalog entries from real captures: a GPU missing from the catalog works from its
``nvidia-smi mig -lgip``/``-lgipp`` output."""

from __future__ import annotations

from pathlib import Path

from miglab.core.catalog import GpuModel, load_catalog, model_from_dict
from miglab.errors import Problem, Problems, ValidationError
from miglab.formats.files import UnreadableFile, read_input_text
from miglab.formats.nvsmi import parse_mig_profiles

CAPTURE_BYTES = 1_000_000  # nvidia-smi's capture of one GPU is a few KB


def model_from_capture(text: str, file: str, name: str | None = None) -> GpuModel:
    cap = parse_mig_profiles(text, file=file)
    p = Problems(file)
    for k, prof in enumerate(cap.profiles):
        for key in (
            "name",
            "slices",
            "memory_gib",
            "max_instances",
            "placements",
            "placement_size",
        ):
            if prof.get(key) is None:
                source = "-lgipp" if key.startswith("placement") else "-lgip"
                p.add(
                    f"profiles[{k}] (id {prof.get('id')}).{key}",
                    f"missing: the capture needs `nvidia-smi mig {source}` output too",
                )
            elif key == "placements" and not prof[key]:
                p.add(
                    f"profiles[{k}] (id {prof.get('id')}).placements",
                    "empty: the -lgipp line lists no placement for this profile",
                )
    p.raise_if_any()
    known = None
    if cap.gpu_name:
        try:
            known = load_catalog().get(cap.gpu_name)
        except LookupError:
            known = None
    profiles = [{**prof, "engines": prof.get("engines") or {}} for prof in cap.profiles]
    memory_slices = max(max(pr["placements"]) + pr["placement_size"] for pr in profiles)
    compute_slices = max(pr["slices"] for pr in profiles)
    full = max(profiles, key=lambda pr: (pr["slices"], pr["placement_size"]))
    data = {
        "name": name or (known.name if known else cap.gpu_name) or Path(file).stem,
        "product_names": [cap.gpu_name] if cap.gpu_name else [],
        "memory_gib": full["memory_gib"],
        "mig": {
            "memory_slices": memory_slices,
            "compute_slices": compute_slices,
            "engines": full.get("engines") or {},
            "profiles": profiles,
        },
        "vgpu": {
            "mmio_gb": known.mmio_gb if known else None,
            "type_prefix": known.type_prefix if known else None,
            "mig_backed": dict(known.mig_backed) if known else {},
        },
    }
    return model_from_dict(data, source=file)


def model_from_capture_file(path: Path, name: str | None = None) -> GpuModel:
    try:
        text = read_input_text(path, limit=CAPTURE_BYTES)
    except UnreadableFile as exc:
        raise ValidationError([Problem(str(path), "", exc.reason)]) from None
    return model_from_capture(text, str(path), name)


def inspect_gpus(text: str, file: str) -> list[dict]:
    """GPUs of an ``nvidia-smi -q`` (text or XML) or ``--query-gpu=... --format=csv`` capture,
    with their MIG mode (current/pending) and the catalog model each maps to."""
    from miglab.formats.nvsmi import parse_query, parse_query_gpu_csv

    stripped = text.lstrip()
    if stripped.startswith(("<?xml", "<nvidia_smi_log")) or "NVSMI LOG" in text[:400]:
        gpus = parse_query(text, file=file)
    else:
        gpus = [
            {
                "pci_bus_id": row.get("pci.bus_id"),
                "product_name": row.get("name"),
                "driver_version": row.get("driver_version"),
                "mig_mode_current": row.get("mig.mode.current"),
                "mig_mode_pending": row.get("mig.mode.pending"),
                "virtualization_mode": row.get("virtualization_mode"),
                "device_id": (row.get("pci.device_id") or "")[:6].lower() or None,
            }
            for row in parse_query_gpu_csv(text, file=file)
        ]
    catalog = load_catalog()
    out = []
    for index, gpu in enumerate(gpus):
        model = None
        for key in (gpu.get("device_id"), gpu.get("product_name")):
            if key:
                try:
                    model = catalog.get(key).name
                    break
                except LookupError:
                    continue
        current, pending = gpu.get("mig_mode_current"), gpu.get("mig_mode_pending")
        out.append(
            {
                "index": index,
                "pci_bus_id": gpu.get("pci_bus_id"),
                "product_name": gpu.get("product_name"),
                "catalog": model,
                "driver_version": gpu.get("driver_version"),
                "mig_mode_current": current,
                "mig_mode_pending": pending,
                "mig_change_pending": bool(current and pending and current != pending),
                "virtualization_mode": gpu.get("virtualization_mode"),
            }
        )
    return out
