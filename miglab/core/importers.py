"""Catalog entries from real captures: a GPU missing from the catalog works from its
``nvidia-smi mig -lgip``/``-lgipp`` output.

A capture is read as an operator saves it: several commands' output in one file, prompts and
blank lines between them (:func:`miglab.formats.nvsmi.split_capture`); the sections a reader
knows are read wherever they are, and the ``..._note`` functions also return the one line that
names what was ignored."""

from __future__ import annotations

from pathlib import Path

from miglab.core.catalog import GpuModel, load_catalog, model_from_dict
from miglab.errors import Problem, Problems, ValidationError
from miglab.formats.files import UnreadableFile, read_input_text
from miglab.formats.nvsmi import MigCapture, read_capture_gpus, read_mig_capture

CAPTURE_BYTES = 1_000_000  # nvidia-smi's capture of one GPU is a few KB


def model_from_capture(text: str, file: str, name: str | None = None) -> GpuModel:
    return model_from_capture_note(text, file, name)[0]


def model_from_capture_note(
    text: str, file: str, name: str | None = None
) -> tuple[GpuModel, str | None]:
    """The GPU model of a capture and the note of what it ignored (None: nothing)."""
    cap, note = read_mig_capture(text, file=file)
    return _model_from_mig(cap, file, name), note


def _model_from_mig(cap: MigCapture, file: str, name: str | None) -> GpuModel:
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
    return model_from_capture_file_note(path, name)[0]


def model_from_capture_file_note(
    path: Path, name: str | None = None
) -> tuple[GpuModel, str | None]:
    try:
        text = read_input_text(path, limit=CAPTURE_BYTES)
    except UnreadableFile as exc:
        raise ValidationError([Problem(str(path), "", exc.reason)]) from None
    return model_from_capture_note(text, str(path), name)


def inspect_gpus(text: str, file: str) -> list[dict]:
    return inspect_gpus_note(text, file)[0]


def inspect_gpus_note(text: str, file: str) -> tuple[list[dict], str | None]:
    """GPUs of a capture's ``nvidia-smi -q`` (text or XML), ``--query-gpu=... --format=csv`` and
    ``-L`` sections, with their MIG mode (current/pending) and the catalog model each maps to;
    and the note of what was ignored (None: nothing)."""
    gpus, note = read_capture_gpus(text, file=file)
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
    return out, note
