"""The GPU catalog: MIG profiles, placements and vGPU types of NVIDIA data-centre GPUs.

Data lives in ``gpus/*.yaml`` (one file per GPU model, every value with its source named in a
comment, see ``SOURCES.md``). This module loads it into frozen dataclasses and resolves the names
users write: catalog keys and aliases, nvidia-smi product names, PCI device ids, MIG profile names
(``2g.20gb``) and vGPU type names (``grid_a100d-2-20c``, ``A100D-2-20C``, ``nvidia-2-20c``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources

import yaml

from miglab.core.vgpu_versions import Availability

ENGINE_KEYS = ("copy", "decoders", "encoders", "jpeg", "ofa")


class UnknownName(LookupError):
    """A GPU, profile or vGPU type name the catalog does not know (message lists what it knows)."""


@dataclass(frozen=True)
class Engines:
    """Hardware engines a GPU instance gets (or a whole GPU has)."""

    copy: int = 0
    decoders: int = 0
    encoders: int = 0
    jpeg: int = 0
    ofa: int = 0

    def as_tuple(self) -> tuple[int, ...]:
        return tuple(getattr(self, k) for k in ENGINE_KEYS)


@dataclass(frozen=True)
class MigProfile:
    """A MIG GPU-instance profile as ``nvidia-smi mig -lgip``/``-lgipp`` describe it."""

    name: str  # "1g.10gb", "1g.10gb+me"
    id: int
    slices: int  # compute slices
    memory_gib: float  # as nvidia-smi reports it
    max_instances: int
    placements: tuple[int, ...]  # allowed start memory slices
    placement_size: int  # memory slices occupied
    engines: Engines = field(default_factory=Engines)

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "id": self.id,
            "slices": self.slices,
            "memory_gib": self.memory_gib,
            "max_instances": self.max_instances,
            "placements": list(self.placements),
            "placement_size": self.placement_size,
        }


@dataclass(frozen=True)
class TimeSlicedType:
    """A time-sliced (non-MIG) C-series vGPU type: GPUs holding it carry only that type."""

    name: str
    framebuffer_gib: float
    max_per_gpu: int


@dataclass(frozen=True, eq=False)  # identity: models are catalog singletons
class GpuModel:
    name: str
    aliases: tuple[str, ...]
    product_names: tuple[str, ...]
    pci_device_ids: tuple[str, ...]
    architecture: str
    memory_gib: float
    memory_slices: int
    compute_slices: int
    engines: Engines
    profiles: tuple[MigProfile, ...]
    mmio_gb: int | None
    type_prefix: str | None
    mig_backed: dict[str, str]  # MIG profile name -> vSphere vGPU type
    time_sliced: tuple[TimeSlicedType, ...]
    source: str = "catalog"
    # the earliest vSphere / vGPU software releases known to offer the board's vGPU types, and
    # per vSphere type name (lower case) a type's own (vgpu.since, vgpu.type_since)
    since: Availability = field(default_factory=Availability)
    type_since: dict[str, Availability] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"GpuModel({self.name})"

    # --- lookups -------------------------------------------------------------------------------
    def profile(self, name: str) -> MigProfile:
        """A MIG profile by MIG name, profile id or MIG-backed vGPU type name."""
        found = self.find_vgpu(name)
        if isinstance(found, MigProfile):
            return found
        raise UnknownName(
            f"{name!r} is not a MIG profile of {self.name} "
            f"(known: {', '.join(p.name for p in self.profiles)})"
        )

    def find_vgpu(self, name: str) -> MigProfile | TimeSlicedType:
        """Resolve what a user wrote for a vGPU into a MIG profile or a time-sliced type."""
        key = str(name).strip().lower()
        by_name = {p.name.lower(): p for p in self.profiles}
        if key in by_name:
            return by_name[key]
        if key.startswith("mig ") and key[4:] in by_name:
            return by_name[key[4:]]
        type_to_profile = {t.lower(): by_name[p.lower()] for p, t in self.mig_backed.items()}
        if key in type_to_profile:
            return type_to_profile[key]
        ts = {t.name.lower(): t for t in self.time_sliced}
        if key in ts:
            return ts[key]
        # NVIDIA's own spelling (A100D-2-20C, this GPU's board prefix only) or a prefix-less one
        # as the seed writes it (nvidia-2-20c, 2-20c); another board's name is not ours.
        board = self.board_prefix
        board_re = f"(?:{re.escape(board)}-)?" if board else ""
        m = re.fullmatch(rf"(?:grid_|nvidia[-_]|grid |nvidia )?{board_re}(\d+)-(\d+)c(me)?", key)
        if m:
            slices, mem, me = m.groups()
            wanted = f"{slices}g.{mem}gb" + ("+me" if me else "")
            if wanted in by_name:
                return by_name[wanted]
        m = re.fullmatch(rf"(?:grid_|nvidia[-_]|grid |nvidia )?{board_re}(\d+)c", key)
        if m:
            for t in self.time_sliced:
                if t.name.lower().endswith(f"-{m.group(1)}c"):
                    return t
        known = [p.name for p in self.profiles] + [t.name for t in self.time_sliced]
        raise UnknownName(
            f"{name!r} is not a MIG profile or vGPU type of {self.name} (known: {', '.join(known)})"
        )

    @property
    def board_prefix(self) -> str:
        """NVIDIA's board prefix of vGPU type names, lower case ("a100d" for A100D-2-20C)."""
        prefix = (self.type_prefix or "").lower()
        for lead in ("grid_", "nvidia_"):
            if prefix.startswith(lead):
                return prefix[len(lead) :]
        return prefix

    def vgpu_type(self, profile: MigProfile | TimeSlicedType) -> str | None:
        """vSphere vGPU type name for a MIG profile (or a time-sliced type's own name); None when
        NVIDIA documents none (e.g. a GPU imported from a capture without vGPU data)."""
        if isinstance(profile, TimeSlicedType):
            return profile.name
        return self.mig_backed.get(profile.name)

    def availability(self, vgpu: MigProfile | TimeSlicedType | str) -> Availability:
        """The earliest vSphere and NVIDIA vGPU software releases known to offer a vGPU of this
        GPU (a MIG profile, a time-sliced type or any name :meth:`find_vgpu` resolves): the
        type's own entry over the board's. Fields left None are not known."""
        if isinstance(vgpu, str):
            vgpu = self.find_vgpu(vgpu)
        name = self.vgpu_type(vgpu)
        own = self.type_since.get(name.lower()) if name else None
        return self.since.merged(own) if own else self.since

    def as_json(self) -> dict:
        return {"gpu": self.name, "profiles": [p.as_json() for p in self.profiles]}


# --- loading -------------------------------------------------------------------------------------
def _engines(raw: dict | None) -> Engines:
    raw = raw or {}
    return Engines(**{k: int(raw.get(k) or 0) for k in ENGINE_KEYS})


def model_from_dict(data: dict, source: str = "catalog") -> GpuModel:
    """Build a GpuModel from a catalog document (the YAML schema 1 layout)."""
    mig = data.get("mig") or {}
    vgpu = data.get("vgpu") or {}
    name = str(data["name"])
    profiles = tuple(
        MigProfile(
            name=str(p["name"]),
            id=int(p["id"]),
            slices=int(p["slices"]),
            memory_gib=float(p["memory_gib"]),
            max_instances=int(p["max_instances"]),
            placements=tuple(int(x) for x in p["placements"]),
            placement_size=int(p["placement_size"]),
            engines=_engines(p.get("engines")),
        )
        for p in mig.get("profiles") or []
    )
    mig_backed = {str(k): str(v) for k, v in (vgpu.get("mig_backed") or {}).items()}
    time_sliced = tuple(
        TimeSlicedType(str(t["name"]), float(t["framebuffer_gib"]), int(t["max_per_gpu"]))
        for t in vgpu.get("time_sliced") or ()
    )
    since = Availability.from_dict(vgpu.get("since"), f"{name}: vgpu.since")
    known_types = {t.lower() for t in mig_backed.values()} | {t.name.lower() for t in time_sliced}
    type_since = {}
    for type_name, raw in (vgpu.get("type_since") or {}).items():
        key = str(type_name).lower()
        if key not in known_types:
            raise ValueError(f"{name}: vgpu.type_since: {type_name!r} is not a vGPU type of it")
        type_since[key] = Availability.from_dict(raw, f"{name}: vgpu.type_since.{type_name}")
    return GpuModel(
        name=name,
        aliases=tuple(str(a) for a in data.get("aliases") or ()),
        product_names=tuple(str(a) for a in data.get("product_names") or ()),
        pci_device_ids=tuple(str(a).lower() for a in data.get("pci_device_ids") or ()),
        architecture=str(data.get("architecture") or ""),
        memory_gib=float(data.get("memory_gib") or 0),
        memory_slices=int(mig.get("memory_slices") or 0),
        compute_slices=int(mig.get("compute_slices") or 0),
        engines=_engines(mig.get("engines")),
        profiles=profiles,
        mmio_gb=int(vgpu["mmio_gb"]) if vgpu.get("mmio_gb") is not None else None,
        type_prefix=vgpu.get("type_prefix"),
        mig_backed=mig_backed,
        time_sliced=time_sliced,
        source=source,
        since=since,
        type_since=type_since,
    )


class Catalog:
    """All known GPU models, looked up case-insensitively by key, alias, product name or PCI id."""

    def __init__(self, models: Iterable[GpuModel]):
        self.models: dict[str, GpuModel] = {}
        self._index: dict[str, GpuModel] = {}
        for m in models:
            self.add(m)

    def add(self, model: GpuModel) -> None:
        self.models[model.name] = model
        keys = [model.name, *model.aliases, *model.product_names, *model.pci_device_ids]
        for k in keys:
            self._index.setdefault(_norm(k), model)
            if k.lower().startswith("nvidia "):
                self._index.setdefault(_norm(k[7:]), model)

    def get(self, name: str) -> GpuModel:
        model = self._index.get(_norm(name))
        if model is None:
            raise UnknownName(
                f"unknown GPU {name!r} (known: {', '.join(sorted(self.models))}; "
                "a GPU missing from the catalog can be imported with `miglab gpu import-mig`)"
            )
        return model

    def __iter__(self):
        return iter(self.models.values())

    def names(self) -> list[str]:
        return sorted(self.models)


def _norm(name: str) -> str:
    return re.sub(r"[\s_]+", "-", str(name).strip().lower())


@functools.lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The catalog shipped in the package (cached: it is read-only data)."""
    models = []
    folder = resources.files(__package__) / "gpus"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            models.append(model_from_dict(yaml.safe_load(entry.read_text()), source=entry.name))
    return Catalog(models)
