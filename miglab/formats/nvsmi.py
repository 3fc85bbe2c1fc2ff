"""Parsers for real ``nvidia-smi`` output.

Three inputs are understood, each checked in full before anything is returned; every problem is
reported as ``FILE: FIELD: reason`` through :class:`~miglab.errors.ValidationError`, where FIELD is
``line N`` (1-based) for line-oriented text:

* ``nvidia-smi mig -lgip`` and ``nvidia-smi mig -lgipp`` (either, or both concatenated in either
  order; ``nvidia-smi -L`` lines may be mixed in and name the GPU) -> :func:`parse_mig_profiles`
* ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` -> :func:`parse_query_gpu_csv`
* ``nvidia-smi -q`` and ``nvidia-smi -q -x`` -> :func:`parse_query`

and, from the last two, the record of the GPU a run measured (``miglab_run.json``'s ``device``)
-> :func:`read_gpu_device`.

A capture as an operator saves it -- several commands' output in one file, with shell prompts,
command lines and blank lines between them -- is cut into sections by :func:`split_capture`;
:func:`read_mig_capture` and :func:`read_capture_gpus` read the sections they know wherever they
are and say in one line which lines they ignored.

Only the standard library is used.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from miglab.errors import Problem, Problems, ValidationError

__all__ = [
    "CaptureSection",
    "MigCapture",
    "parse_mig_profiles",
    "parse_query",
    "parse_query_gpu_csv",
    "read_capture_gpus",
    "read_gpu_device",
    "read_mig_capture",
    "split_capture",
]

# --------------------------------------------------------------------------------------------
# nvidia-smi mig -lgip / -lgipp
# --------------------------------------------------------------------------------------------

PROFILE_KEYS = (
    "name",
    "id",
    "slices",
    "memory_gib",
    "max_instances",
    "placements",
    "placement_size",
    "engines",
    "sm",
)
ENGINE_KEYS = ("copy", "decoders", "encoders", "jpeg", "ofa")

# Column titles of the -lgip table, mapped to profile / engine keys.
_ROW1_COLUMNS = {"SM": "sm", "DEC": "decoders", "ENC": "encoders", "CE": "copy"}
_ROW2_COLUMNS = {"CE": "copy", "JPEG": "jpeg", "OFA": "ofa", "DEC": "decoders", "ENC": "encoders"}

_BORDER_RE = re.compile(r"^\+[-=+]*\+$")
_RULE_RE = re.compile(r"^\|=+\|$")
_LGIPP_RE = re.compile(
    r"^GPU\s+(?P<gpu>\d+)\s+Profile\s+ID\s+(?P<id>\d+)\s+Placements?\s*:\s*"
    r"\{(?P<starts>[0-9,\s]*)\}\s*:\s*(?P<size>\d+)$"
)
_LIST_GPU_RE = re.compile(r"^GPU\s+(?P<gpu>\d+):\s+(?P<name>.+?)\s+\(UUID:\s*(?P<uuid>[^)]*)\)$")
_LIST_MIG_RE = re.compile(r"^MIG\s+\S+\s+Device\s+\d+:\s+\(UUID:\s*[^)]*\)$")
_PROFILE_NAME_RE = re.compile(r"^(?:\d+c\.)?(?P<g>\d+)g\.\d+gb(?:[+-][A-Za-z0-9.,]+)?$")
_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)?$")
_SKIP: dict = {"skip": True}  # marks the second row of a profile of a GPU that is not kept


@dataclass
class MigCapture:
    """GPU instance profiles of one GPU, as listed by ``nvidia-smi mig -lgip`` / ``-lgipp``.

    ``gpu_name`` is only known when ``nvidia-smi -L`` lines were part of the capture.
    Each profile is a dict with the keys of :data:`PROFILE_KEYS`; ``engines`` is a dict with the
    keys of :data:`ENGINE_KEYS`. A value the capture does not show is ``None``.
    """

    gpu_name: str | None
    gpu_index: int
    profiles: list[dict] = field(default_factory=list)

    def profile(self, name_or_id: str | int) -> dict:
        """The profile with this name ("1g.10gb") or id (19); KeyError if absent."""
        for p in self.profiles:
            if p["id"] == name_or_id or (p["name"] is not None and p["name"] == name_or_id):
                return p
        raise KeyError(name_or_id)


def _empty_profile(profile_id: int) -> dict:
    return {
        "name": None,
        "id": profile_id,
        "slices": None,
        "memory_gib": None,
        "max_instances": None,
        "placements": None,
        "placement_size": None,
        "engines": dict.fromkeys(ENGINE_KEYS),
        "sm": None,
    }


def _cells(line: str) -> list[str]:
    """Whitespace-separated cells of a ``| ... |`` table line."""
    return line.strip("|").split()


def _int_or_none(token: str) -> int | None:
    if token in ("N/A", "-"):
        return None
    return int(token)


class _LgipTable:
    """State of one ``GPU instance profiles:`` table while it is being read."""

    def __init__(self) -> None:
        self.header1: list[str] | None = None  # column titles after the fixed ones, row 1
        self.header2: list[str] | None = None  # column titles after Free/Total GiB, row 2
        self.ruled = False  # the ===== line was seen: data rows follow
        self.pending: dict | None = None  # profile whose second row may follow


NOT_A_CAPTURE = (
    "not nvidia-smi mig -lgip/-lgipp output: no 'GPU instance profiles:' table, no "
    "'GPU N Profile ID' line and no nvidia-smi -L line in it (its content is not shown)"
)


# nvidia-smi's own output that is no profile listing (MIG off, no GPU, its summary table): shown
# line by line as before, since it is nvidia-smi's text, not a file of someone else's
_NVSMI_OUTPUT_RE = re.compile(
    r"^(No MIG-enabled devices found\.?|No devices were found|Failed to initialize NVML.*"
    r"|\|\s*NVIDIA-SMI \S+.*)$"
)


def _looks_like_capture(line: str) -> bool:
    return (
        line.strip("|").strip() == "GPU instance profiles:"
        or bool(_LGIPP_RE.match(line))
        or bool(_LIST_GPU_RE.match(line))
        or bool(_NVSMI_OUTPUT_RE.match(line))
    )


def parse_mig_profiles(text: str, file: str = "<capture>") -> MigCapture:
    """Parse ``nvidia-smi mig -lgip`` and/or ``-lgipp`` output into a :class:`MigCapture`.

    Profiles are merged by profile id, in order of first appearance. When several GPUs are
    listed only the first GPU index met in the text is kept (``gpu_index``).
    """
    problems = Problems(file)
    profiles: dict[int, dict] = {}
    names: dict[int, str] = {}
    seen_lgip: set[int] = set()
    seen_lgipp: set[int] = set()
    gpu_index: int | None = None
    table: _LgipTable | None = None

    def want(gpu: int) -> bool:
        nonlocal gpu_index
        if gpu_index is None:
            gpu_index = gpu
        return gpu == gpu_index

    def get(profile_id: int) -> dict:
        if profile_id not in profiles:
            profiles[profile_id] = _empty_profile(profile_id)
        return profiles[profile_id]

    if not isinstance(text, str):
        raise ValidationError([Problem(file, "", "expected text, got " + type(text).__name__)])
    lines = text.splitlines()
    if not any(_looks_like_capture(line.strip()) for line in lines):
        # A campaign may name any readable file as its capture: one that is no capture at all
        # (/etc/passwd, a file with a password) is refused without a word of what it holds.
        raise ValidationError([Problem(file, "", NOT_A_CAPTURE)])

    for number, raw in enumerate(lines, start=1):
        where = f"line {number}"
        line = raw.strip()
        if not line:
            continue

        if table is not None and line.strip("|").strip() == "GPU instance profiles:":
            table = None  # a second listing starts (its rows are checked against the first)
        if table is not None:
            if _BORDER_RE.match(line):
                if table.pending is not None:
                    table.pending = None
                elif table.ruled is False and table.header1 is not None:
                    problems.add(where, "border line inside the table header")
                continue
            if _RULE_RE.match(line):
                if table.header1 is None or table.header2 is None:
                    problems.add(where, "'=====' line before the column titles of the table")
                table.ruled = True
                continue
            if line.startswith("|") and line.endswith("|"):
                cells = _cells(line)
                if not table.ruled:
                    _read_lgip_header(table, cells, where, problems)
                    continue
                _read_lgip_row(table, cells, where, problems, want, get, seen_lgip)
                continue
            table = None  # the table ended; fall through to the other line kinds

        if line == "+" + "-" * (len(line) - 2) + "+" and len(line) > 2:
            continue  # top border of a table whose title follows
        if line.startswith("|") and line.endswith("|"):
            cells = line.strip("|").strip()
            if cells == "GPU instance profiles:":
                table = _LgipTable()
                continue
            problems.add(where, f"table line outside a 'GPU instance profiles:' table: {raw!r}")
            continue

        m = _LGIPP_RE.match(line)
        if m:
            gpu = int(m["gpu"])
            if not want(gpu):
                continue
            profile_id = int(m["id"])
            if profile_id in seen_lgipp:
                problems.add(where, f"profile id {profile_id} is listed twice by -lgipp")
                continue
            seen_lgipp.add(profile_id)
            starts_text = m["starts"].replace(" ", "")
            try:
                starts = [int(s) for s in starts_text.split(",")] if starts_text else []
            except ValueError:
                problems.add(where, f"placement list is not a list of integers: {m['starts']!r}")
                continue
            p = get(profile_id)
            p["placements"] = starts
            p["placement_size"] = int(m["size"])
            continue

        m = _LIST_GPU_RE.match(line)
        if m:
            names[int(m["gpu"])] = m["name"]
            continue
        if _LIST_MIG_RE.match(line):
            continue

        problems.add(where, f"not nvidia-smi mig -lgip/-lgipp output: {raw.strip()!r}")

    if not problems and not profiles:
        problems.add("", "no GPU instance profiles found (not nvidia-smi mig -lgip/-lgipp output)")
    problems.raise_if_any()
    assert gpu_index is not None
    return MigCapture(
        gpu_name=names.get(gpu_index), gpu_index=gpu_index, profiles=list(profiles.values())
    )


def _read_lgip_header(table: _LgipTable, cells: list[str], where: str, problems: Problems) -> None:
    """Column titles: 'GPU Name ID Instances Memory P2P SM DEC ENC' then 'Free/Total GiB CE ...'."""
    if cells[:2] == ["GPU", "Name"]:
        fixed = ["GPU", "Name", "ID", "Instances", "Memory", "P2P"]
        if cells[: len(fixed)] != fixed:
            problems.add(where, f"unexpected column titles: {' '.join(cells)!r}")
            return
        table.header1 = cells[len(fixed) :]
        return
    if cells[:2] == ["Free/Total", "GiB"]:
        table.header2 = cells[2:]
        return
    problems.add(where, f"unexpected line in the table header: {' '.join(cells)!r}")


def _read_lgip_row(table, cells, where, problems, want, get, seen) -> None:
    """One data row of the -lgip table: the profile row, or the engines row under it."""
    header1 = table.header1 or []
    header2 = table.header2 or []
    if len(cells) >= 2 and cells[1] == "MIG":
        # GPU  MIG <name>  ID  free/total  GiB  P2P  <header1 columns...>
        expected = 7 + len(header1)
        if len(cells) != expected:
            problems.add(where, f"expected {expected} cells in a profile row, got {len(cells)}")
            table.pending = None
            return
        gpu_t, _, name, id_t, inst_t, mem_t, _p2p, *rest = cells
        if not (gpu_t.isdigit() and id_t.isdigit()):
            problems.add(where, "GPU index and profile ID must be integers")
            table.pending = None
            return
        if not want(int(gpu_t)):
            table.pending = _SKIP  # swallow this GPU's second row
            return
        slices_m = _PROFILE_NAME_RE.match(name)
        if not slices_m:
            problems.add(where, f"not a MIG profile name: {name!r}")
        inst = inst_t.split("/")
        if len(inst) != 2 or not all(part.isdigit() for part in inst):
            problems.add(where, f"instances must be FREE/TOTAL, got {inst_t!r}")
            inst = ["", ""]
        if not _NUMBER_RE.match(mem_t):
            problems.add(where, f"memory must be a number of GiB, got {mem_t!r}")
        profile_id = int(id_t)
        if profile_id in seen:
            problems.add(where, f"profile id {profile_id} is listed twice by -lgip")
            table.pending = _SKIP
            return
        seen.add(profile_id)
        p = get(profile_id)
        p["name"] = name
        p["slices"] = int(slices_m["g"]) if slices_m else None
        p["memory_gib"] = float(mem_t) if _NUMBER_RE.match(mem_t) else None
        p["max_instances"] = int(inst[1]) if inst[1] else None
        for title, token in zip(header1, rest, strict=True):
            key = _ROW1_COLUMNS.get(title)
            if key is None:
                continue
            try:
                value = _int_or_none(token)
            except ValueError:
                problems.add(where, f"{title} must be an integer, got {token!r}")
                continue
            if key == "sm":
                p["sm"] = value
            else:
                p["engines"][key] = value
        table.pending = p
        return
    if table.pending is None:
        problems.add(where, f"unexpected row in the profile table: {' '.join(cells)!r}")
        return
    if table.pending is _SKIP:
        table.pending = None
        return  # second row of a skipped GPU's profile
    if len(cells) != len(header2):
        problems.add(where, f"expected {len(header2)} cells in the engines row, got {len(cells)}")
        table.pending = None
        return
    for title, token in zip(header2, cells, strict=True):
        key = _ROW2_COLUMNS.get(title)
        if key is None:
            continue
        try:
            table.pending["engines"][key] = _int_or_none(token)
        except ValueError:
            problems.add(where, f"{title} must be an integer, got {token!r}")
    table.pending = None


# --------------------------------------------------------------------------------------------
# nvidia-smi --query-gpu=... --format=csv
# --------------------------------------------------------------------------------------------

_FIELD_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_HEADER_CELL_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_.]*)(?:\s+\[(?P<unit>[^\]]+)\])?$")
_NOT_AVAILABLE = {"[N/A]", "N/A", "[Not Supported]"}


def parse_query_gpu_csv(
    text: str, file: str = "<capture>", fields: list[str] | None = None
) -> list[dict]:
    """Parse ``nvidia-smi --query-gpu=... --format=csv`` output: one dict per GPU.

    With a header line (the default), keys are the header names without their units
    ("memory.total [MiB]" -> "memory.total") and a value's trailing unit is dropped when the header
    names it ("143771 MiB" -> "143771"), so ``csv`` and ``csv,nounits`` give the same dicts.
    For ``noheader`` output pass ``fields``, the names given to ``--query-gpu``. Values are strings,
    stripped; "[N/A]" (and "N/A", "[Not Supported]") become None; "Enabled"/"Disabled" stay.
    """
    problems = Problems(file)
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        problems.add("", "empty: no nvidia-smi --query-gpu CSV output")
        problems.raise_if_any()

    units: list[str | None]
    if fields is None:
        number, header = lines[0]
        names: list[str] = []
        units = []
        for cell in header.split(","):
            m = _HEADER_CELL_RE.match(cell.strip())
            if not m:
                problems.add(
                    f"line {number}",
                    f"not a --query-gpu CSV header (field name expected, got {cell.strip()!r})",
                )
                continue
            names.append(m["name"])
            units.append(m["unit"])
        problems.raise_if_any()
        rows = lines[1:]
    else:
        for name in fields:
            if not isinstance(name, str) or not _FIELD_NAME_RE.match(name):
                problems.add("fields", f"not a --query-gpu field name: {name!r}")
        problems.raise_if_any()
        names = list(fields)
        units = [None] * len(names)
        rows = lines

    if len(set(names)) != len(names):
        problems.add("", "a field is named twice in the header")
    result: list[dict] = []
    for number, line in rows:
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(names):
            problems.add(
                f"line {number}", f"expected {len(names)} comma-separated values, got {len(values)}"
            )
            continue
        row: dict = {}
        for name, unit, value in zip(names, units, values, strict=True):
            if value in _NOT_AVAILABLE:
                row[name] = None
                continue
            if unit and value.endswith(" " + unit):
                value = value[: -len(unit) - 1].rstrip()
            row[name] = value
        result.append(row)
    if not problems and not result:
        problems.add("", "no GPU rows in the --query-gpu CSV output")
    problems.raise_if_any()
    return result


# --------------------------------------------------------------------------------------------
# nvidia-smi -q / -q -x
# --------------------------------------------------------------------------------------------

QUERY_KEYS = (
    "pci_bus_id",
    "product_name",
    "product_brand",
    "product_architecture",
    "driver_version",
    "cuda_version",
    "mig_mode_current",
    "mig_mode_pending",
    "virtualization_mode",
    "host_vgpu_mode",
    "pci_device_id",
    "device_id",
    "vendor_id",
    "pci_sub_system_id",
    "fb_memory_total_mib",
    "serial",
    "uuid",
    # a vGPU guest's licence (NVIDIA Virtual GPU Client Licensing User Guide): its section
    # "vGPU Software Licensed Product" (None outside a vGPU guest; text form only)
    "licensed_product",
    "license_status",
)

_GPU_SECTION_RE = re.compile(
    r"^GPU\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$"
)
_KV_RE = re.compile(r"^(?P<key>\S.*?)\s+:\s?(?P<value>.*)$")
_HEX32_RE = re.compile(r"^(?:0x)?(?P<hex>[0-9A-Fa-f]{8})$")
_MIB_RE = re.compile(r"^(?P<n>\d+)\s*MiB$")

# (path inside a GPU section of `nvidia-smi -q`) -> result key
_TEXT_PATHS = {
    ("Product Name",): "product_name",
    ("Product Brand",): "product_brand",
    ("Product Architecture",): "product_architecture",
    ("MIG Mode", "Current"): "mig_mode_current",
    ("MIG Mode", "Pending"): "mig_mode_pending",
    ("GPU Virtualization Mode", "Virtualization Mode"): "virtualization_mode",
    ("GPU Virtualization Mode", "Host VGPU Mode"): "host_vgpu_mode",
    ("PCI", "Device Id"): "pci_device_id",
    ("PCI", "Sub System Id"): "pci_sub_system_id",
    ("FB Memory Usage", "Total"): "fb_memory_total_mib",
    ("Serial Number",): "serial",
    ("GPU UUID",): "uuid",
    ("vGPU Software Licensed Product", "Product Name"): "licensed_product",
    ("vGPU Software Licensed Product", "License Status"): "license_status",
}
# element path inside <gpu> of `nvidia-smi -q -x` -> result key
_XML_PATHS = {
    "product_name": "product_name",
    "product_brand": "product_brand",
    "product_architecture": "product_architecture",
    "mig_mode/current_mig": "mig_mode_current",
    "mig_mode/pending_mig": "mig_mode_pending",
    "gpu_virtualization_mode/virtualization_mode": "virtualization_mode",
    "gpu_virtualization_mode/host_vgpu_mode": "host_vgpu_mode",
    "pci/pci_device_id": "pci_device_id",
    "pci/pci_sub_system_id": "pci_sub_system_id",
    "fb_memory_usage/total": "fb_memory_total_mib",
    "serial": "serial",
    "uuid": "uuid",
}


def parse_query(text: str, file: str = "<capture>") -> list[dict]:
    """Parse ``nvidia-smi -q`` (or ``-q -x``) output: one dict per GPU with :data:`QUERY_KEYS`.

    ``pci_device_id`` is the 32-bit id as printed ("0x233510DE"), ``device_id`` its upper 16 bits
    ("0x2335") and ``vendor_id`` the lower ("0x10DE"). "N/A" values become None;
    ``fb_memory_total_mib`` is an int. Sections this parser does not know are ignored.
    """
    stripped = text.lstrip()
    if stripped.startswith("<"):
        gpus = _parse_query_xml(text, file)
    else:
        gpus = _parse_query_text(text, file)
    problems = Problems(file)
    for n, gpu in enumerate(gpus):
        _finish_gpu(gpu, f"gpu[{n}]", problems)
    problems.raise_if_any()
    return gpus


def _new_gpu(bus_id: str, driver: str | None, cuda: str | None) -> dict:
    gpu = dict.fromkeys(QUERY_KEYS)
    gpu["pci_bus_id"] = bus_id
    gpu["driver_version"] = driver
    gpu["cuda_version"] = cuda
    return gpu


def _finish_gpu(gpu: dict, where: str, problems: Problems) -> None:
    """Normalise raw strings: N/A -> None, ids to 0x-prefixed upper hex, MiB to int."""
    for key in QUERY_KEYS:
        if isinstance(gpu[key], str):
            gpu[key] = gpu[key].strip()
            if gpu[key] in ("N/A", "", "None") and key not in ("product_name", "pci_bus_id"):
                gpu[key] = None
    if gpu["product_name"] in (None, ""):
        problems.add(f"{where}.product_name", "missing: not nvidia-smi -q output")
    for key in ("pci_device_id", "pci_sub_system_id"):
        value = gpu[key]
        if value is None:
            continue
        m = _HEX32_RE.match(value)
        if not m:
            problems.add(f"{where}.{key}", f"not a 32-bit PCI id: {value!r}")
            gpu[key] = None
            continue
        gpu[key] = "0x" + m["hex"].upper()
    if gpu["pci_device_id"] is not None:
        gpu["device_id"] = gpu["pci_device_id"][:6]
        gpu["vendor_id"] = "0x" + gpu["pci_device_id"][6:]
    total = gpu["fb_memory_total_mib"]
    if total is not None:
        m = _MIB_RE.match(str(total))
        if not m:
            problems.add(f"{where}.fb_memory_total_mib", f"not a MiB amount: {total!r}")
            gpu["fb_memory_total_mib"] = None
        else:
            gpu["fb_memory_total_mib"] = int(m["n"])


def _parse_query_text(text: str, file: str) -> list[dict]:
    problems = Problems(file)
    driver = cuda = None
    gpus: list[dict] = []
    current: dict | None = None
    stack: list[tuple[int, str]] = []  # (indent, section title) inside the current GPU
    saw_banner = False

    for raw in text.splitlines():
        if not raw.strip():
            continue
        line = raw.rstrip()
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if body.startswith("=") and "NVSMI LOG" in body:
            saw_banner = True
            continue
        m = _GPU_SECTION_RE.match(body)
        if indent == 0 and m:
            current = _new_gpu(m["bus"], driver, cuda)
            gpus.append(current)
            stack = []
            continue
        kv = _KV_RE.match(body)
        if indent == 0:
            current = None
            stack = []
            if kv:
                if kv["key"] == "Driver Version":
                    driver = kv["value"].strip()
                elif kv["key"] == "CUDA Version":
                    cuda = kv["value"].strip()
            continue
        if current is None:
            continue  # an indented section outside any GPU (e.g. units): not ours
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = tuple(title for _, title in stack)
        if kv:
            key = _TEXT_PATHS.get(path + (kv["key"].strip(),))
            if key is not None and current[key] is None:
                current[key] = kv["value"]
        else:
            stack.append((indent, body))

    if not gpus:
        if saw_banner:
            problems.add("", "no 'GPU <bus id>' section: no GPU in this nvidia-smi -q output")
        else:
            problems.add("", "not nvidia-smi -q output (no NVSMI LOG banner, no GPU section)")
    problems.raise_if_any()
    return gpus


def _parse_query_xml(text: str, file: str) -> list[dict]:
    problems = Problems(file)
    if "<!ENTITY" in text:
        problems.add("", "XML entity declarations are not accepted")
        problems.raise_if_any()
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        line, _column = getattr(exc, "position", (0, 0))
        problems.add(f"line {line}" if line else "", f"not well-formed XML: {exc}")
        problems.raise_if_any()
    if root.tag != "nvidia_smi_log":
        problems.add("", f"not nvidia-smi -q -x output (root element <{root.tag}>)")
        problems.raise_if_any()
    driver = (root.findtext("driver_version") or "").strip() or None
    cuda = (root.findtext("cuda_version") or "").strip() or None
    gpus: list[dict] = []
    for n, element in enumerate(root.findall("gpu")):
        bus = element.get("id")
        if not bus:
            bus = (element.findtext("pci/pci_bus_id") or "").strip()
        if not bus:
            problems.add(f"gpu[{n}]", "no PCI bus id (<gpu id=...>)")
            continue
        gpu = _new_gpu(bus, driver, cuda)
        for path, key in _XML_PATHS.items():
            value = element.findtext(path)
            if value is not None:
                gpu[key] = value.strip()
        gpus.append(gpu)
    if not gpus and not problems:
        problems.add("", "no <gpu> element in this nvidia-smi -q -x output")
    problems.raise_if_any()
    return gpus


# --------------------------------------------------------------------------------------------
# the GPU a run measured (miglab_run.json's device)
# --------------------------------------------------------------------------------------------

# What the guest asks for: ``nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader``
DEVICE_QUERY_FIELDS = ("name", "uuid", "driver_version")


def read_gpu_device(
    query_csv: str | None = None,
    query_q: str | None = None,
    *,
    index: int = 0,
    uuid: str | None = None,
    fields: list[str] | None = list(DEVICE_QUERY_FIELDS),  # noqa: B006 - read only
    file: str = "nvidia-smi",
) -> dict:
    """The record of one GPU as the guest's nvidia-smi shows it: ``{"kind": "cuda", "name",
    "vgpu_type", "uuid", "driver", "cuda"}`` (a value nvidia-smi does not show is None).

    ``query_csv`` is ``nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader``
    (``fields`` names its columns; None: the output has a header line), ``query_q`` is
    ``nvidia-smi -q`` (or ``-q -x``); either may be None, not both. The GPU is the one whose UUID
    is ``uuid`` (what CUDA calls the device, when known), else the ``index``-th listed.

    ``vgpu_type`` is the Product Name of a GPU whose ``Virtualization Mode`` is ``VGPU``: in a
    vGPU guest nvidia-smi names the GPU by its vGPU type (``GRID V100D-8C``, ``NVIDIA
    A100D-2-20C``); None in passthrough or on bare metal. ``cuda`` is the driver's CUDA version
    (``CUDA Version`` of ``-q``). Raises ValidationError when the output cannot be read or holds
    no such GPU.
    """
    problems = Problems(file)
    if query_csv is None and query_q is None:
        problems.add("", "no nvidia-smi output to read")
        problems.raise_if_any()
    rows = parse_query_gpu_csv(query_csv, file, fields=fields) if query_csv is not None else None
    gpus = parse_query(query_q, file) if query_q is not None else None
    row = _pick(rows, uuid, index, "--query-gpu", problems)
    gpu = _pick(gpus, (row or {}).get("uuid") or uuid, index, "-q", problems)
    problems.raise_if_any()
    row, gpu = row or {}, gpu or {}
    vgpu = gpu.get("virtualization_mode") == "VGPU"
    name = row.get("name") or gpu.get("product_name")
    return {
        "kind": "cuda",
        "name": name,
        "vgpu_type": gpu.get("product_name") if vgpu else None,
        "uuid": row.get("uuid") or gpu.get("uuid"),
        "driver": row.get("driver_version") or gpu.get("driver_version"),
        "cuda": gpu.get("cuda_version"),
    }


def _pick(items, uuid, index, what, problems) -> dict | None:
    """The item of ``items`` whose ``uuid`` is ``uuid`` (when given), else the ``index``-th."""
    if items is None:
        return None
    if uuid:
        for item in items:
            if str(item.get("uuid") or "").lower() == uuid.lower():
                return item
        problems.add(what, f"no GPU with UUID {uuid} ({len(items)} listed)")
        return None
    if 0 <= index < len(items):
        return items[index]
    problems.add(what, f"no GPU {index}: {len(items)} listed")
    return None


# --------------------------------------------------------------------------------------------
# a capture as an operator saves it: several commands' output in one file
# --------------------------------------------------------------------------------------------

# A shell prompt (``$``, ``#``, ``user@host:~$``, ESXi's ``[root@esxi:~]``), then nvidia-smi
# (through sudo or a path) and its arguments; a line of just ``nvidia-smi ...`` is one too.
_COMMAND_RE = re.compile(
    r"^(?:\[[^\]]{0,200}\]\s?[#$>%]?|[\w.@:~/()+-]{0,200}[#$>%])?\s*"
    r"(?:sudo(?:\s+-\S+)*\s+)?(?:\S*/)?nvidia-smi(?:\.exe)?(?P<args>\s.*)?$"
)
_FLAG_RE = re.compile(r"^(?P<flag>-{1,2}[A-Za-z][A-Za-z0-9-]*)(?:=(?P<value>.*))?$")
_SHELL_OPERATORS = ("|", ";", "&", ">", "<", "2>")
_DATE_RE = re.compile(
    r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +"
    r"\d{1,2} \d\d:\d\d:\d\d \d{4}$"
)
_TABLE_LINE_RE = re.compile(r"^[|+].*[|+]$")
_LOOSE_LGIPP_RE = re.compile(r"^GPU\s+\d+\s+Profile\s+ID\b")
_NVSMI_LOG_RE = re.compile(r"^=+\s*NVSMI LOG\s*=+$")
_VERSION_RE = re.compile(r"^(?:NVIDIA-SMI|NVML|DRIVER|CUDA|VBIOS)\s+[Vv]ersion\s*:")
_NOT_QUERY_KEY_RE = re.compile(r"^(?:NVIDIA-SMI|NVML|DRIVER|VBIOS)\s+version\s*:")
_XML_START = ("<?xml", "<!DOCTYPE nvidia_smi_log", "<nvidia_smi_log")
# nvidia-smi's own one-line messages, as they are named in a note (never the file's text)
_MESSAGES = (
    ("No MIG-enabled devices found.", re.compile(r"^No MIG-enabled devices found\.?$")),
    ("No devices were found", re.compile(r"^No devices were found\.?$")),
    ("No supported devices in vGPU mode", re.compile(r"^No supported devices in vGPU mode\.?$")),
    ("Failed to initialize NVML", re.compile(r"^Failed to initialize NVML\b")),
    ("NVIDIA-SMI has failed", re.compile(r"^NVIDIA-SMI has failed\b")),
)
# titled tables of `nvidia-smi mig` and the summary table, by title
_TABLE_TITLES = {
    "GPU instance profiles:": ("lgip", "nvidia-smi mig -lgip"),
    "Compute instance profiles:": ("table", "nvidia-smi mig -lcip"),
    "GPU instances:": ("table", "nvidia-smi mig -lgi"),
    "Compute instances:": ("table", "nvidia-smi mig -lci"),
    "Processes:": ("table", "nvidia-smi (processes)"),
}
# --query-gpu field names that have no dot (most have one: pci.bus_id, memory.total, ...)
_PLAIN_QUERY_FIELDS = frozenset(
    [
        "name",
        "uuid",
        "serial",
        "index",
        "count",
        "driver_version",
        "vbios_version",
        "pstate",
        "timestamp",
        "compute_mode",
        "compute_cap",
        "persistence_mode",
        "display_mode",
        "display_active",
        "accounting.mode",
        "gpu_name",
        "gpu_bus_id",
        "gpu_serial",
        "gpu_uuid",
    ]
)
_KIND_WHAT = {
    "lgip": "nvidia-smi mig -lgip",
    "lgipp": "nvidia-smi mig -lgipp",
    "list": "nvidia-smi -L",
    "query": "nvidia-smi -q",
    "query_xml": "nvidia-smi -q -x",
    "csv": "nvidia-smi --query-gpu",
    "summary": "nvidia-smi",
    "version": "nvidia-smi --version",
}
NOTE_ITEMS = 12  # line ranges named in the "ignored" note; then a count


@dataclass(frozen=True)
class CaptureSection:
    """One command's output in a capture: lines ``first``..``last`` (1-based, the command line
    included when there is one; the output itself starts at ``start``).

    ``kind``: lgip, lgipp, list (``-L``), query (``-q``), query_xml (``-q -x``), csv
    (``--query-gpu``), summary (the plain ``nvidia-smi`` table), table (another ``nvidia-smi
    mig`` table), message (one of nvidia-smi's one-line messages), version, command (a command
    line without output) or unknown. ``what`` names it in a note: fixed words and the command's
    flags, never the file's text. ``fields``: the ``--query-gpu`` fields of a ``noheader`` CSV,
    as its command line names them.
    """

    kind: str
    first: int
    start: int
    last: int
    what: str
    fields: tuple[str, ...] | None = None


def _command(line: str) -> tuple[str, tuple[str, ...] | None, bool] | None:
    """(label, --query-gpu fields, noheader) of an nvidia-smi command line; None if none."""
    m = _COMMAND_RE.match(line)
    if not m:
        return None
    tokens = (m["args"] or "").split()
    words = ["nvidia-smi"]
    fields: tuple[str, ...] | None = None
    noheader = False
    for n, token in enumerate(tokens):
        if token.startswith(_SHELL_OPERATORS):
            break
        f = _FLAG_RE.match(token)
        if f:
            flag, value = f["flag"], f["value"]
            if value is None and flag in ("--query-gpu", "--format") and n + 1 < len(tokens):
                value = tokens[n + 1]
            if flag == "--query-gpu" and value:
                names = tuple(v.strip() for v in value.split(",") if v.strip())
                fields = names if all(_FIELD_NAME_RE.match(v) for v in names) else None
            if flag == "--format" and value:
                noheader = "noheader" in value.split(",")
                continue
            words.append(flag)
        elif n == 0 and re.fullmatch(r"[a-z][a-z-]{0,30}", token):
            words.append(token)  # a subcommand: mig, vgpu, topo, ...
    return " ".join(words[:8]), fields, noheader


def _table_title(line: str) -> str | None:
    """The title of a titled table's first line ("| GPU instance profiles: |")."""
    if not (line.startswith("|") and line.endswith("|")):
        return None
    inner = line[1:-1].strip()
    if inner.startswith("NVIDIA-SMI "):
        return "NVIDIA-SMI"
    if inner.endswith(":") and "|" not in inner and len(inner) < 80:
        return inner
    return None


def _csv_names(line: str) -> list[str] | None:
    """The field names of a --query-gpu CSV header line; None if it is none."""
    names = []
    for cell in line.split(","):
        m = _HEADER_CELL_RE.match(cell.strip())
        if not m:
            return None
        names.append(m["name"])
    known = [n for n in names if "." in n.strip(".") or n in _PLAIN_QUERY_FIELDS]
    if not known or (len(names) == 1 and names[0] not in _PLAIN_QUERY_FIELDS):
        return None
    return names


def split_capture(text: str) -> list[CaptureSection]:
    """Cut a capture into sections, in file order; blank lines belong to none."""
    raw = text.splitlines()
    lines = [line.strip() for line in raw]
    n = len(lines)

    def opens_table(j: int) -> bool:
        if j >= n:
            return False
        if _table_title(lines[j]) is not None:
            return True
        return bool(_BORDER_RE.match(lines[j])) and j + 1 < n and _table_title(lines[j + 1])

    def table_end(i: int) -> int:
        title = i if _table_title(lines[i]) else i + 1
        j = i + 1
        while j < n and _TABLE_LINE_RE.match(lines[j]):
            if j != title and opens_table(j):
                break
            j += 1
        return j

    def csv_rows(i: int, count: int) -> int:
        j = i
        while j < n and lines[j] and _command(lines[j]) is None:
            if len(lines[j].split(",")) != count:
                break
            j += 1
        return j

    def starts(i: int, cmd) -> tuple[str, int, str | None, tuple[str, ...] | None] | None:
        """(kind, end, title-or-message, fields) of a known section starting at line i."""
        line = lines[i]
        if (
            _DATE_RE.match(line)
            and opens_table(i + 1)
            and _table_title(lines[i + 2] if i + 2 < n else "") == "NVIDIA-SMI"
        ):
            return ("summary", _summary_end(i + 1), None, None)
        if opens_table(i):
            title = _table_title(line) or _table_title(lines[i + 1])
            if title == "NVIDIA-SMI":
                return ("summary", _summary_end(i), None, None)
            return ("table", table_end(i), title, None)
        if _LOOSE_LGIPP_RE.match(line):
            j = i
            while j < n and _LOOSE_LGIPP_RE.match(lines[j]):
                j += 1
            return ("lgipp", j, None, None)
        if _LIST_GPU_RE.match(line) or _LIST_MIG_RE.match(line):
            j = i
            while j < n and (_LIST_GPU_RE.match(lines[j]) or _LIST_MIG_RE.match(lines[j])):
                j += 1
            return ("list", j, None, None)
        if _NVSMI_LOG_RE.match(line):
            return ("query", _query_end(i), None, None)
        if line.startswith(_XML_START):
            j = i
            while j < n and "</nvidia_smi_log>" not in lines[j]:
                if j > i and _command(lines[j]) is not None:
                    j -= 1
                    break
                j += 1
            return ("query_xml", min(j + 1, n), None, None)
        if _VERSION_RE.match(line):
            j = i
            while j < n and _VERSION_RE.match(lines[j]):
                j += 1
            return ("version", j, None, None)
        for message, pattern in _MESSAGES:
            if pattern.match(line):
                return ("message", i + 1, message, None)
        if cmd is not None and cmd[1] and cmd[2]:  # --query-gpu=... --format=csv,noheader
            j = csv_rows(i, len(cmd[1]))
            if j > i:
                return ("csv", j, None, cmd[1])
        names = _csv_names(line)
        if names is not None:
            j = csv_rows(i + 1, len(names))
            if j > i + 1 or (cmd is not None and cmd[1]):
                return ("csv", j, None, None)
        return None

    def _summary_end(i: int) -> int:
        j = table_end(i)
        k = j
        while k < n and not lines[k]:
            k += 1
        if k < n and opens_table(k):
            title = _table_title(lines[k]) or _table_title(lines[k + 1])
            if title == "Processes:":
                return table_end(k)
        return j

    def _query_end(i: int) -> int:
        last = i
        j = i + 1
        while j < n:
            if not lines[j]:
                j += 1
                continue
            if _command(lines[j]) is not None:
                break
            if not raw[j][:1].isspace() and not _GPU_SECTION_RE.match(lines[j]):
                # a top-level "Key : value" of -q ("CUDA Version : 13.0" is one, --version's
                # "NVIDIA-SMI version : ..." is not), or the end of the -q output
                if not _KV_RE.match(lines[j]) or _NOT_QUERY_KEY_RE.match(lines[j]):
                    break
                if (starts(j, None) or ("version",))[0] != "version":
                    break
            last = j
            j += 1
        return last + 1

    sections: list[CaptureSection] = []
    pending: tuple[int, tuple] | None = None  # (line index, _command(...)) awaiting its output

    def add(kind: str, i: int, end: int, what: str, fields=None) -> None:
        nonlocal pending
        first = pending[0] if pending is not None else i
        sections.append(CaptureSection(kind, first + 1, i + 1, end, what, fields))
        pending = None

    i = 0
    while i < n:
        line = lines[i]
        if not line:
            i += 1
            continue
        cmd = _command(line)
        if cmd is not None:
            if pending is not None:
                j = pending[0]
                sections.append(CaptureSection("command", j + 1, j + 1, j + 1,
                                               f"{pending[1][0]} (no output)"))  # fmt: skip
            pending = (i, cmd)
            i += 1
            continue
        label = pending[1][0] if pending is not None else None
        found = starts(i, pending[1] if pending is not None else None)
        if found is None:
            j = i + 1
            while j < n and lines[j] and _command(lines[j]) is None and starts(j, None) is None:
                j += 1
            add("unknown", i, j, f"{label}: output not recognised" if label else "not recognised")
            i = j
            continue
        kind, end, detail, fields = found
        if kind == "table":
            kind, what = _TABLE_TITLES.get(detail or "", ("table", "a table not recognised"))
        elif kind == "message":
            what = f"{label}: {detail}" if label else str(detail)
        else:
            what = _KIND_WHAT[kind]
        add(kind, i, end, what, fields)
        i = end
    if pending is not None:
        j = pending[0]
        sections.append(
            CaptureSection("command", j + 1, j + 1, j + 1, f"{pending[1][0]} (no output)")
        )
    return sections


def _lines_text(lines: list[str], sections: list[CaptureSection]) -> str:
    """The capture with every line outside the output of ``sections`` blanked: parsers read only
    those sections and still report the file's own line numbers."""
    keep = [False] * len(lines)
    for s in sections:
        for k in range(s.start - 1, s.last):
            keep[k] = True
    return "\n".join(line if k else "" for line, k in zip(lines, keep, strict=True)) + "\n"


def _span(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def ignored_note(sections: list[CaptureSection], used: set[int]) -> str | None:
    """One line naming the sections not in ``used`` (indices), neighbours of one kind merged:
    "ignored: lines 1-21 (nvidia-smi), line 40 (nvidia-smi mig -lcip: No MIG-enabled devices
    found.)"; None when nothing was ignored."""
    items: list[list] = []
    previous = -2
    for k, s in enumerate(sections):
        if k in used:
            continue
        if items and previous == k - 1 and items[-1][2] == s.what:
            items[-1][1] = s.last
        else:
            items.append([s.first, s.last, s.what])
        previous = k
    if not items:
        return None
    shown = [f"{_span(a, b)} ({what})" for a, b, what in items[:NOTE_ITEMS]]
    if len(items) > NOTE_ITEMS:
        shown.append(f"and {len(items) - NOTE_ITEMS} more")
    return "ignored: " + ", ".join(shown)


def _nothing_known(file: str, sections: list[CaptureSection], wanted: str) -> ValidationError:
    """The one problem of a capture without the sections a reader needs."""
    known = [s for s in sections if s.kind not in ("unknown", "command")]
    if not known:
        reason = f"no {wanted} in it, nor any other nvidia-smi output (its content is not shown)"
    else:
        held = [f"{s.what} ({_span(s.first, s.last)})" for s in known[:NOTE_ITEMS]]
        if len(known) > NOTE_ITEMS:
            held.append(f"and {len(known) - NOTE_ITEMS} more")
        reason = f"no {wanted} in it; it holds: " + ", ".join(held)
    return ValidationError([Problem(file, "", reason)])


def _mig_key(capture: MigCapture) -> tuple:
    return (capture.gpu_index, repr(capture.profiles))


def read_mig_capture(text: str, file: str = "<capture>") -> tuple[MigCapture, str | None]:
    """The MIG profiles of a capture (:func:`parse_mig_profiles` on its ``-lgip``/``-lgipp``
    sections, wherever they are) and the note of what was ignored (None: nothing).

    The GPU is named by ``nvidia-smi -L`` lines, else by the ``name`` of a ``--query-gpu`` CSV
    or the Product Name of ``nvidia-smi -q`` (the GPU of the listed index). A listing repeated
    unchanged is ignored as a copy. A problem in a section that is read is an error naming its
    line; a capture without ``-lgip``/``-lgipp`` output is refused in one problem.
    """
    if not isinstance(text, str):
        raise ValidationError([Problem(file, "", "expected text, got " + type(text).__name__)])
    lines = text.splitlines()
    sections = split_capture(text)
    if not any(s.kind in ("lgip", "lgipp") for s in sections):
        raise _nothing_known(file, sections, "nvidia-smi mig -lgip or -lgipp output")
    used: set[int] = set()
    seen: dict[tuple, CaptureSection] = {}
    for k, s in enumerate(sections):
        if s.kind == "list":
            used.add(k)
        if s.kind not in ("lgip", "lgipp"):
            continue
        try:
            key = (s.kind, *_mig_key(_section_call(parse_mig_profiles, lines, s, file)))
        except ValidationError:
            used.add(k)  # its problems are reported below, with the others
            continue
        if key in seen:
            sections[k] = CaptureSection(
                s.kind, s.first, s.start, s.last,
                f"{s.what}: a copy of {_span(seen[key].first, seen[key].last)}",
            )  # fmt: skip
            continue
        seen[key] = s
        used.add(k)
    capture = parse_mig_profiles(_lines_text(lines, [sections[k] for k in sorted(used)]), file)
    if capture.gpu_name is None:
        for k, s in enumerate(sections):
            name = _gpu_name(lines, s, capture.gpu_index, file)
            if name:
                capture.gpu_name = name
                used.add(k)
                break
    return capture, ignored_note(sections, used)


def _gpu_name(lines: list[str], s: CaptureSection, index: int, file: str) -> str | None:
    """The name of GPU ``index`` in a --query-gpu CSV or -q section; None if it has none."""
    try:
        if s.kind == "csv":
            rows = _section_call(parse_query_gpu_csv, lines, s, file, fields=_fields(s))
            by_index = [r for r in rows if r.get("index") == str(index)]
            row = by_index[0] if by_index else (rows[index] if index < len(rows) else {})
            return row.get("name")
        if s.kind in ("query", "query_xml"):
            gpus = _query_section(lines, s, file)
            return gpus[index]["product_name"] if index < len(gpus) else None
    except ValidationError:
        return None
    return None


def _fields(s: CaptureSection) -> list[str] | None:
    return list(s.fields) if s.fields is not None else None


def _section_call(call, lines: list[str], s: CaptureSection, file: str, **kw):
    """``call(text, file, **kw)`` on one section's output alone (linear in the section, however
    many sections the file has), its problems naming the file's lines."""
    try:
        return call("\n".join(lines[s.start - 1 : s.last]) + "\n", file, **kw)
    except ValidationError as exc:
        shifted = []
        for p in exc.problems:
            m = re.fullmatch(r"line (\d+)", p.field)
            field = f"line {int(m[1]) + s.start - 1}" if m else p.field
            shifted.append(Problem(p.file, field, p.reason))
        raise ValidationError(shifted) from None


def _query_section(lines: list[str], s: CaptureSection, file: str) -> list[dict]:
    """parse_query of one -q / -q -x section, problems naming the file's lines."""
    return _section_call(parse_query, lines, s, file)


_GPU_KEYS = (
    "pci_bus_id",
    "product_name",
    "driver_version",
    "mig_mode_current",
    "mig_mode_pending",
    "virtualization_mode",
    "device_id",
    "uuid",
)
_BUS_RE = re.compile(
    r"^(?P<d>[0-9A-Fa-f]{1,8}):(?P<b>[0-9A-Fa-f]{2}):(?P<s>[0-9A-Fa-f]{2})\.(?P<f>[0-7])$"
)


def _bus_key(bus: str | None) -> tuple | None:
    m = _BUS_RE.match(bus or "")
    return (int(m["d"], 16), m["b"].upper(), m["s"].upper(), m["f"]) if m else None


def read_capture_gpus(text: str, file: str = "<capture>") -> tuple[list[dict], str | None]:
    """The GPUs of a capture -- ``nvidia-smi -q`` (text or XML), ``--query-gpu`` CSV (with a
    header, or ``noheader`` after its command line) and ``-L`` sections, wherever they are --
    each a dict of :data:`_GPU_KEYS`, and the note of what was ignored (None: nothing).

    One GPU's records from several sections are merged (by PCI bus id, else UUID, else
    position): ``-q`` first, then the CSV, then ``-L`` fill what is still unknown. A capture
    without such a section is refused in one problem.
    """
    if not isinstance(text, str):
        raise ValidationError([Problem(file, "", "expected text, got " + type(text).__name__)])
    lines = text.splitlines()
    sections = split_capture(text)
    order = {"query": 0, "query_xml": 0, "csv": 1, "list": 2}
    picked = sorted(
        (k for k, s in enumerate(sections) if s.kind in order),
        key=lambda k: (order[sections[k].kind], k),
    )
    if not picked:
        raise _nothing_known(file, sections, "nvidia-smi -q, -q -x, --query-gpu CSV or -L output")
    problems: list[Problem] = []
    merged: list[dict] = []
    for k in picked:
        try:
            records = _gpu_records(lines, sections[k], file)
        except ValidationError as exc:
            problems.extend(exc.problems)
            continue
        _merge_gpus(merged, records)
    if problems:
        raise ValidationError(problems)
    return merged, ignored_note(sections, set(picked))


def _gpu_records(lines: list[str], s: CaptureSection, file: str) -> list[dict]:
    if s.kind in ("query", "query_xml"):
        return [{key: gpu.get(key) for key in _GPU_KEYS} for gpu in _query_section(lines, s, file)]
    if s.kind == "csv":
        rows = _section_call(parse_query_gpu_csv, lines, s, file, fields=_fields(s))
        return [
            {
                "pci_bus_id": row.get("pci.bus_id"),
                "product_name": row.get("name"),
                "driver_version": row.get("driver_version"),
                "mig_mode_current": row.get("mig.mode.current"),
                "mig_mode_pending": row.get("mig.mode.pending"),
                "virtualization_mode": row.get("virtualization_mode"),
                "device_id": (row.get("pci.device_id") or "")[:6].lower() or None,
                "uuid": row.get("uuid"),
            }
            for row in rows
        ]
    records = []
    for line in lines[s.start - 1 : s.last]:
        m = _LIST_GPU_RE.match(line.strip())
        if m:
            records.append({**dict.fromkeys(_GPU_KEYS), "product_name": m["name"],
                            "uuid": m["uuid"].strip() or None})  # fmt: skip
    return records


def _merge_gpus(merged: list[dict], records: list[dict]) -> None:
    """Add ``records`` (one section's GPUs) to ``merged``: a GPU already there (same PCI bus id,
    else same UUID, else same position when both list as many GPUs) gets the values it lacks;
    any other is appended."""
    by_bus: dict[tuple, dict] = {}
    by_uuid: dict[str, dict] = {}

    def index(gpu: dict) -> None:
        bus = _bus_key(gpu["pci_bus_id"])
        if bus is not None:
            by_bus.setdefault(bus, gpu)
        if gpu["uuid"]:
            by_uuid.setdefault(gpu["uuid"].lower(), gpu)

    for gpu in merged:
        index(gpu)
    same_count = len(records) == len(merged)
    for position, rec in enumerate(records):
        bus = _bus_key(rec["pci_bus_id"])
        target = by_bus.get(bus) if bus is not None else None
        if target is None and rec["uuid"]:
            target = by_uuid.get(rec["uuid"].lower())
        if target is None and same_count:
            target = merged[position]
        if target is not None and bus is not None:
            other = _bus_key(target["pci_bus_id"])
            if other is not None and other != bus:
                target = None  # another GPU
        if target is None:
            target = dict(rec)
            merged.append(target)
        else:
            for key, value in rec.items():
                if target.get(key) is None and value is not None:
                    target[key] = value
        index(target)
