"""miglab's run metadata, ``miglab_run.json``: what a runner writes beside LoadGen's logs (SUT,
device, weights, inputs, placement, the guest's clock offset, start and end). It is read from
the run directory and its parents up to the campaign directory (nearest wins); see
``miglab/mlperf/README.md``.

A ``miglab_run.json`` that is a symbolic link, not a regular file, larger than
:data:`RUN_META_LIMIT`, not JSON (``NaN`` and ``Infinity`` are not JSON: the problem names their
field) or nested more than :data:`MAX_DEPTH` deep is a problem of its run, never followed or half
read; so is a known key of the wrong type, a ``clock`` object that is not exactly a
measurement or an error (:func:`check_clock`), and a ``device`` that is not exactly a record of
a CUDA device or a CPU (:func:`check_device`).

Only the standard library is used.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from miglab.errors import Problem, Problems, ValidationError
from miglab.formats.files import MiB, UnreadableFile, read_input_text

__all__ = ["RUN_META", "RunMeta", "check_clock", "check_device", "read_run_meta"]

RUN_META = "miglab_run.json"
RUN_META_LIMIT = 1 * MiB  # a runner writes a few KB
MAX_DEPTH = 32  # nesting of its JSON (the runners write 3 levels)
RUN_META_FIELDS = {
    "schema": str,
    "simulated": bool,
    "backend": str,
    "weights": str,
    "inputs": str,
    "benchmark": str,
    "scenario": str,
    "vm": str,
    "profile": str,
    "vgpu_type": str,
    "run": int,
    "placement": dict,
    "clock": dict,
    "device": dict,  # or, written by an older miglab, a string (what it ran on, in words)
    "started_at": str,
    "finished_at": str,
    "notes": str,
}
# ``clock``: the guest's clock against the controller's, measured before the run
# (miglab.mlperf.guest.clock; see README.md beside miglab/mlperf). Either a measurement or an error.
CLOCK_METHODS = ("responder", "ntp", "chrony")
CLOCK_NUMBERS = ("offset_s", "uncertainty_s", "to_reference_s", "controller_to_reference_s")
CLOCK_MEASURED = ("offset_s", "uncertainty_s", "reference", "samples", "measured_at")
CLOCK_KEYS = ("method", "error", *CLOCK_MEASURED, "to_reference_s", "controller_to_reference_s")
CLOCK_MAX_OFFSET_S = 1e6  # 11.6 days: a guest further off is no clock miglab compares
WEIGHTS = ("real", "random", "none")  # none: a model without weights (the slice model)
INPUTS = ("real", "synthetic")
# ``device``: what the run measured, as the guest saw it (miglab.mlperf.guest.device): a CUDA
# device from nvidia-smi ({kind: cuda, name, vgpu_type, uuid, driver, cuda}) or the CPU ({kind:
# cpu, name: its model, cpus}); ``note`` says what could not be read.
DEVICE_KINDS = ("cuda", "cpu")
DEVICE_GPU_KEYS = ("vgpu_type", "uuid", "driver", "cuda")
DEVICE_KEYS = ("kind", "name", *DEVICE_GPU_KEYS, "cpus", "note")
DEVICE_TEXT_MAX = 200
_DEVICE_PATTERNS = {
    "uuid": (re.compile(r"(?:GPU|MIG)-[!-~]+"), "a GPU-... or MIG-... UUID"),
    "driver": (re.compile(r"[0-9]+(?:\.[0-9]+){1,3}"), "a driver version such as 535.216.01"),
    "cuda": (re.compile(r"[0-9]+\.[0-9]+"), "a CUDA version such as 12.2"),
}


@dataclass(frozen=True)
class RunMeta:
    """``miglab_run.json``: what produced a run (see README.md beside this module)."""

    files: tuple[str, ...] = ()
    simulated: bool | None = None
    backend: str | None = None
    weights: str | None = None  # "real" | "random"
    inputs: str | None = None  # "real" | "synthetic"
    benchmark: str | None = None
    scenario: str | None = None
    vm: str | None = None
    profile: str | None = None
    vgpu_type: str | None = None
    run: int | None = None
    # where the vGPU ran and where the plan put it: {"gpu": PCI id, "mig_slot": start or None,
    # "planned": {"gpu", "mig_slot"}, "pinned": bool}
    placement: dict | None = None
    # the guest's clock against the controller's: {"method", "offset_s", "uncertainty_s",
    # "reference", "samples", "measured_at"} or {"method", "error"} (see _check_clock)
    clock: dict | None = None
    # what the run measured: {"kind": "cuda" | "cpu", "name", ...} (see _check_device); an older
    # miglab's text is {"kind": "cuda" | "cpu" | None, "name": the text}
    device: dict | None = None
    started_at: datetime | None = None  # timezone-aware
    finished_at: datetime | None = None
    notes: str | None = None
    extra: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        out = {
            "files": list(self.files),
            "simulated": self.simulated,
            "backend": self.backend,
            "weights": self.weights,
            "inputs": self.inputs,
        }
        keys = (
            "benchmark", "scenario", "vm", "profile", "vgpu_type", "run", "placement", "clock",
            "device", "notes",
        )  # fmt: skip
        for k in keys:
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        for k in ("started_at", "finished_at"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k).isoformat()
        if self.extra:
            out["extra"] = self.extra
        return out


def _parse_iso(s: str) -> datetime | None:
    try:
        d = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    return d if d.tzinfo is not None else None


def read_run_meta(run_dir: str | Path, levels: int = 6, root: str | Path | None = None) -> RunMeta:
    """Merge ``miglab_run.json`` from ``run_dir`` and up to ``levels`` parents (nearest wins),
    never above ``root`` (the results tree) when it is given."""
    d = Path(run_dir)
    chain = [d, *list(d.parents)[:levels]]
    if root is not None:
        top = Path(root)
        chain = [f for f in chain if f == top or f.is_relative_to(top)]
    merged: dict = {}
    files: list[str] = []
    for folder in reversed(chain):  # farthest first, so nearer files override
        f = folder / RUN_META
        if not os.path.lexists(f):
            continue
        merged.update(_load_run_meta_file(f))
        files.append(str(f))
    if not files:
        return RunMeta()
    known = {k: merged.pop(k) for k in list(merged) if k in RUN_META_FIELDS}
    for k in ("started_at", "finished_at"):
        if k in known:
            known[k] = _parse_iso(known[k])
    known.pop("schema", None)
    if isinstance(known.get("device"), str):
        known["device"] = legacy_device(known["device"])
    return RunMeta(files=tuple(reversed(files)), extra=merged, **known)


class _NotJson:
    """A ``NaN``, ``Infinity`` or overflowing number where the file has it: refused once the
    file is read, naming its field."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


def _not_json_constant(name: str) -> _NotJson:
    return _NotJson(f"{name} is not JSON (a number must be finite)")


def _finite_float(text: str) -> float | _NotJson:
    v = float(text)
    if not math.isfinite(v):
        return _NotJson(f"{text[:40]} is beyond a double")
    return v


def _not_json_at(value) -> tuple[str, str] | None:
    """(field path, reason) of the first :class:`_NotJson` in ``value``; None when none."""
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        v, where = stack.pop()
        if isinstance(v, _NotJson):
            return where, v.reason
        if isinstance(v, dict):
            stack.extend((x, f"{where}.{k}" if where else str(k)) for k, x in reversed(v.items()))
        elif isinstance(v, list):
            stack.extend((x, f"{where}[{i}]") for i, x in reversed(list(enumerate(v))))
    return None


def _depth(value) -> int:
    depth, stack = 0, [(value, 1)]
    while stack and depth <= MAX_DEPTH:
        v, d = stack.pop()
        depth = max(depth, d)
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return depth


def _check_placement(value: dict, p: Problems) -> None:
    """``placement``: ``gpu`` a string or null, ``mig_slot`` an integer or null, the same two in
    ``planned``; ``pinned`` a boolean."""
    for where, part in (("placement", value), ("placement.planned", value.get("planned"))):
        if part is None and where != "placement":
            continue
        if not isinstance(part, dict):
            p.add(where, "must be an object")
            continue
        gpu, slot = part.get("gpu"), part.get("mig_slot")
        if gpu is not None and not isinstance(gpu, str):
            p.add(f"{where}.gpu", f"must be a PCI id string, got {type(gpu).__name__}")
        if slot is not None and (isinstance(slot, bool) or not isinstance(slot, int)):
            p.add(f"{where}.mig_slot", f"must be an integer, got {type(slot).__name__}")
    if "pinned" in value and not isinstance(value["pinned"], bool):
        p.add("placement.pinned", "must be true or false")


def _type_name(v) -> str:
    return "null" if v is None else type(v).__name__


def _check_clock(value: dict, p: Problems) -> None:
    """``clock``: a measurement (``method``, ``offset_s``, ``uncertainty_s``, ``reference``,
    ``samples``, ``measured_at``; ntp and chrony add ``to_reference_s`` and
    ``controller_to_reference_s``) or why there is none (``method``, ``error``, optional
    ``measured_at``); no other key."""
    for k in value:
        if k not in CLOCK_KEYS:
            p.add(f"clock.{k}", f"unknown key (a clock has {', '.join(CLOCK_KEYS)})")
    method = value.get("method")
    if "method" not in value:
        p.add("clock.method", f"missing (one of {', '.join(CLOCK_METHODS)})")
    elif method not in CLOCK_METHODS:
        shown = repr(method)[:40] if isinstance(method, str) else _type_name(method)
        p.add("clock.method", f"must be one of {', '.join(CLOCK_METHODS)}, got {shown}")
    if "error" in value:
        if not isinstance(value["error"], str) or not value["error"].strip():
            p.add("clock.error", f"must be a non-empty string, got {_type_name(value['error'])}")
        for k in CLOCK_NUMBERS + ("reference", "samples"):
            if k in value:
                p.add(f"clock.{k}", "must not be given with clock.error (nothing was measured)")
    else:
        for k in CLOCK_MEASURED:
            if k not in value:
                p.add(f"clock.{k}", "missing (a measurement has " + ", ".join(CLOCK_MEASURED) + ")")
    for k in CLOCK_NUMBERS:
        if k not in value or "error" in value:
            continue
        v = value[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            p.add(f"clock.{k}", f"must be a number of seconds, got {_type_name(v)}")
        elif not math.isfinite(v) or abs(v) > CLOCK_MAX_OFFSET_S:
            p.add(f"clock.{k}", f"must be a finite number of seconds up to {CLOCK_MAX_OFFSET_S:g}")
        elif k == "uncertainty_s" and v < 0:
            p.add("clock.uncertainty_s", f"must be 0 or more, got {v}")
    ref = value.get("reference")
    if "reference" in value and (not isinstance(ref, str) or not ref.strip()):
        p.add("clock.reference", f"must be a non-empty string, got {_type_name(ref)}")
    n = value.get("samples")
    if "samples" in value and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        p.add("clock.samples", f"must be an integer of 1 or more, got {_type_name(n)} {n!r}"[:80])
    at = value.get("measured_at")
    if "measured_at" in value and (not isinstance(at, str) or _parse_iso(at) is None):
        shown = repr(at)[:60] if isinstance(at, str) else _type_name(at)
        p.add("clock.measured_at", f"must be an ISO 8601 time with a time zone, got {shown}")


def legacy_device(text: str) -> dict:
    """An older miglab's ``device`` (what the SUT ran on, in words: ``CPU (<model>, ...)`` or
    ``<GPU name> (<memory> GiB, cuda <n>)``) as a record: its kind where the words say it."""
    kind = "cpu" if text.startswith("CPU") else ("cuda" if "cuda" in text else None)
    return {"kind": kind, "name": text}


def _check_device(value, p: Problems) -> None:
    """``device``: an object with ``kind`` (cuda, cpu) and ``name`` (non-empty text); a CUDA
    device may have ``vgpu_type``, ``uuid``, ``driver``, ``cuda`` (text or null); a CPU ``cpus``
    (an integer of 1 or more); either a ``note``; no other key. A string (an older miglab's
    words) is taken as it is."""
    if isinstance(value, str):
        if not value.strip() or len(value) > DEVICE_TEXT_MAX:
            p.add("device", f"must be a non-empty text of at most {DEVICE_TEXT_MAX} characters")
        return
    if not isinstance(value, dict):
        p.add("device", f"must be an object, got {_type_name(value)}")
        return
    for k in value:
        if k not in DEVICE_KEYS:
            p.add(f"device.{k}", f"unknown key (a device has {', '.join(DEVICE_KEYS)})")
    kind = value.get("kind")
    if "kind" not in value:
        p.add("device.kind", f"missing (one of {', '.join(DEVICE_KINDS)})")
    elif kind not in DEVICE_KINDS:
        shown = repr(kind)[:40] if isinstance(kind, str) else _type_name(kind)
        p.add("device.kind", f"must be one of {', '.join(DEVICE_KINDS)}, got {shown}")
    for k in ("name", *DEVICE_GPU_KEYS, "note"):
        if k not in value or (value[k] is None and k != "name"):
            if k == "name":
                p.add("device.name", "missing (what the run measured, e.g. the GPU's name)")
            continue
        v = value[k]
        if not isinstance(v, str) or not v.strip() or len(v) > DEVICE_TEXT_MAX:
            p.add(
                f"device.{k}",
                f"must be a non-empty text of at most {DEVICE_TEXT_MAX} characters, got "
                + (repr(v)[:40] if isinstance(v, str) else _type_name(v)),
            )
            continue
        pattern = _DEVICE_PATTERNS.get(k)
        if pattern is not None and not pattern[0].fullmatch(v):
            p.add(f"device.{k}", f"must be {pattern[1]}, got {v[:60]!r}")
        if kind == "cpu" and k in DEVICE_GPU_KEYS:
            p.add(f"device.{k}", "a CPU has none (only a cuda device has vgpu_type, uuid, ...)")
    if "cpus" in value and value["cpus"] is not None:
        n = value["cpus"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            p.add("device.cpus", f"must be an integer of 1 or more, got {_type_name(n)} {n!r}"[:80])
        elif kind == "cuda":
            p.add("device.cpus", "a cuda device has none (cpus is a CPU's)")


def check_device(value, source: str) -> None:
    """Raise ValidationError (``source: device.FIELD: reason`` lines) unless ``value`` is a
    valid ``device`` record (an object; :func:`_check_device`)."""
    p = Problems(source)
    if isinstance(value, dict):
        _check_device(value, p)
    else:
        p.add("device", f"must be an object, got {_type_name(value)}")
    p.raise_if_any()


def check_clock(value, source: str) -> None:
    """Raise ValidationError (``source: clock.FIELD: reason`` lines) unless ``value`` is a
    valid ``clock`` object."""
    p = Problems(source)
    if isinstance(value, dict):
        _check_clock(value, p)
    else:
        p.add("clock", f"must be an object, got {_type_name(value)}")
    p.raise_if_any()


def _load_run_meta_file(f: Path) -> dict:
    p = Problems(str(f))
    if f.is_symlink():
        target = os.readlink(f)
        raise ValidationError(
            [Problem(str(f), "", f"a symbolic link (to {target!r}): refused, not followed")]
        )
    try:
        text = read_input_text(f, limit=RUN_META_LIMIT)
    except UnreadableFile as exc:
        raise ValidationError([Problem(str(f), "", exc.reason)]) from None
    try:
        data = json.loads(text, parse_constant=_not_json_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            [Problem(str(f), "", f"not JSON: {exc.msg} at line {exc.lineno}")]
        ) from None
    except RecursionError:
        raise ValidationError(
            [Problem(str(f), "", f"not JSON miglab reads: nested more than {MAX_DEPTH} deep")]
        ) from None
    except ValueError as exc:  # an integer of too many digits
        raise ValidationError([Problem(str(f), "", f"not JSON: {str(exc)[:100]}")]) from None
    if _depth(data) > MAX_DEPTH:
        raise ValidationError(
            [Problem(str(f), "", f"not JSON miglab reads: nested more than {MAX_DEPTH} deep")]
        )
    bad = _not_json_at(data)
    if bad is not None:
        raise ValidationError([Problem(str(f), *bad)])
    if not isinstance(data, dict):
        raise ValidationError([Problem(str(f), "", "must be a JSON object")])
    for k, typ in RUN_META_FIELDS.items():
        if k not in data or data[k] is None:
            continue
        v = data[k]
        if k == "device":
            _check_device(v, p)
            continue
        if typ is int and (isinstance(v, bool) or not isinstance(v, int)):
            p.add(k, f"must be an integer, got {type(v).__name__}")
        elif typ is not int and not isinstance(v, typ):
            p.add(k, f"must be a {typ.__name__}, got {type(v).__name__}")
    if isinstance(data.get("weights"), str) and data["weights"] not in WEIGHTS:
        p.add("weights", f"must be one of {', '.join(WEIGHTS)}, got {data['weights']!r}")
    if isinstance(data.get("inputs"), str) and data["inputs"] not in INPUTS:
        p.add("inputs", f"must be one of {', '.join(INPUTS)}, got {data['inputs']!r}")
    if isinstance(data.get("placement"), dict):
        _check_placement(data["placement"], p)
    if isinstance(data.get("clock"), dict):
        _check_clock(data["clock"], p)
    for k in ("started_at", "finished_at"):
        if isinstance(data.get(k), str) and _parse_iso(data[k]) is None:
            p.add(k, f"must be an ISO 8601 time with a time zone, got {data[k]!r}")
    p.raise_if_any()
    return {k: v for k, v in data.items() if v is not None}
