"""``miglab gpu ...``: the GPU catalog, nvidia-smi captures, MIG fits, mig-parted files."""

from __future__ import annotations

import sys
from pathlib import Path

from miglab.cli.common import _console, _load, _print_json
from miglab.errors import (
    EXIT_FAIL,
    EXIT_OK,
    Problem,
    ValidationError,
)
from miglab.formats.files import INPUT_BYTES, UnreadableFile, read_input_text


# --- gpu ----------------------------------------------------------------------------------------
def cmd_gpu_list(args) -> int:
    from miglab.core.catalog import load_catalog

    cat = load_catalog()
    rows = [
        {
            "gpu": m.name,
            "product_names": list(m.product_names),
            "pci_device_ids": list(m.pci_device_ids),
            "mig_profiles": len(m.profiles),
            "mmio_gb": m.mmio_gb,
        }
        for m in cat
    ]
    if args.json:
        _print_json(rows)
        return EXIT_OK
    from rich.table import Table

    t = Table(
        "catalog name",
        "nvidia-smi name",
        "PCI id",
        "MIG profiles",
        "VM MMIO GB",
        box=None,
        pad_edge=False,
    )
    for r in rows:
        t.add_row(
            r["gpu"],
            ", ".join(r["product_names"]),
            ", ".join(r["pci_device_ids"]),
            str(r["mig_profiles"]),
            str(r["mmio_gb"]),
        )
    _console().print(t)
    return EXIT_OK


def _print_profiles(model, as_json: bool) -> int:
    if as_json:
        _print_json(model.as_json())
        return EXIT_OK
    from rich.table import Table

    t = Table(
        "profile",
        "id",
        "compute",
        "memory GiB",
        "max",
        "placements",
        "size",
        "vGPU type",
        title=f"{model.name} ({', '.join(model.product_names) or model.source})",
        box=None,
        pad_edge=False,
        title_justify="left",
    )
    for p in model.profiles:
        t.add_row(
            p.name,
            str(p.id),
            str(p.slices),
            f"{p.memory_gib:.2f}",
            str(p.max_instances),
            "{" + ",".join(map(str, p.placements)) + "}",
            str(p.placement_size),
            model.mig_backed.get(p.name, "-"),
        )
    _console().print(t)
    return EXIT_OK


def cmd_gpu_profiles(args) -> int:
    from miglab.core.catalog import UnknownName, load_catalog

    try:
        model = load_catalog().get(args.gpu)
    except UnknownName as exc:
        raise ValidationError([Problem("<command line>", "GPU", str(exc))]) from None
    return _print_profiles(model, args.json)


def _capture_note(file, note: str | None) -> None:
    """The one line naming what a capture reader ignored (fixed words and line numbers)."""
    if note:
        name = "".join(c if c.isprintable() else "?" for c in str(file))
        print(f"note: {name}: {note}", file=sys.stderr)


def cmd_gpu_import_mig(args) -> int:
    from miglab.core.importers import model_from_capture_file_note

    model, note = model_from_capture_file_note(Path(args.file), name=args.name)
    _capture_note(args.file, note)
    return _print_profiles(model, args.json)


def cmd_gpu_inspect(args) -> int:
    from miglab.core.importers import inspect_gpus_note
    from miglab.errors import Problems

    problems = Problems(args.file)
    try:
        text = read_input_text(args.file, limit=INPUT_BYTES)
    except UnreadableFile as exc:
        problems.add("", exc.reason)
        problems.raise_if_any()
    gpus, note = inspect_gpus_note(text, args.file)
    _capture_note(args.file, note)
    if args.json:
        _print_json(gpus)
        return EXIT_OK
    from rich.table import Table

    t = Table(
        "GPU",
        "bus id",
        "nvidia-smi name",
        "catalog",
        "driver",
        "MIG current",
        "MIG pending",
        "virtualization",
        box=None,
        pad_edge=False,
    )
    for g in gpus:
        t.add_row(
            str(g["index"]),
            g["pci_bus_id"] or "-",
            g["product_name"] or "-",
            g["catalog"] or "(not in catalog)",
            g["driver_version"] or "-",
            g["mig_mode_current"] or "-",
            (g["mig_mode_pending"] or "-")
            + (" (reboot/reset pending)" if g["mig_change_pending"] else ""),
            g["virtualization_mode"] or "-",
        )
    _console().print(t)
    return EXIT_OK


def cmd_gpu_fit(args) -> int:
    from miglab.core.catalog import UnknownName, load_catalog
    from miglab.core.placement import explain_no_fit, fit

    problems = []
    try:
        model = load_catalog().get(args.gpu)
    except UnknownName as exc:
        raise ValidationError([Problem("<command line>", "GPU", str(exc))]) from None
    profiles = []
    for i, name in enumerate(args.profiles):
        try:
            profiles.append(model.profile(name))
        except UnknownName as exc:
            problems.append(Problem("<command line>", f"PROFILE[{i}]", str(exc)))
    if problems:
        raise ValidationError(problems)
    layout = fit(model, profiles)
    if layout is None:
        msg = explain_no_fit(model, profiles)
        if args.json:
            _print_json({"gpu": model.name, "fits": False, "reason": msg})
        else:
            print(f"does not fit on one {model.name}: {msg}")
        return EXIT_FAIL
    if args.json:
        _print_json({"gpu": model.name, "fits": True, **layout.summary()})
    else:
        print(layout.render("GPU"))
        s = layout.summary()
        print(
            f"free: {s['free_compute_slices']} compute slices, memory slices "
            f"{s['free_memory_slices']}, stranded compute slices: "
            f"{s['stranded_compute_slices']}; can still add: "
            + (", ".join(f"{n}x {k}" for k, n in s["addable"].items()) or "nothing")
        )
    return EXIT_OK


def cmd_gpu_mig_parted(args) -> int:
    from miglab.core.migparted_export import campaign_to_mig_parted
    from miglab.core.planning import plan_campaign
    from miglab.formats.migparted import dump

    out = Path(args.output) if args.output else None
    if out is not None and (out.is_dir() or (out.exists() and not out.is_file())):
        kind = "a directory" if out.is_dir() else "not a regular file"
        raise ValidationError([Problem(str(out), "-o", f"is {kind}; give the path of a file")])
    if out is not None and not out.parent.is_dir():
        raise ValidationError([Problem(str(out), "-o", f"folder {out.parent} does not exist")])
    campaign, lab = _load(args)
    text = dump(campaign_to_mig_parted(plan_campaign(campaign, lab)))
    if out is not None:
        tmp = out.with_name(f".{out.name}.tmp")
        try:
            tmp.write_text(text)
            tmp.replace(out)  # never half a file
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise ValidationError(
                [Problem(str(out), "-o", f"cannot write: {exc.strerror}")]
            ) from None
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_gpu_from_mig_parted(args) -> int:
    from miglab.core.migparted_export import mig_parted_to_campaign

    result = mig_parted_to_campaign(
        Path(args.file), gpu=args.gpu, name=args.name, config=args.config
    )
    if result.skipped:
        print(result.skipped, file=sys.stderr)
    sys.stdout.write(result.text)
    return EXIT_OK
