"""ESXi's own output, parsed: ``esxcli software vib list`` / ``component list`` / ``sources vib
list`` (the column tables esxcli prints), ``esxcli software acceptance get``, ``vmware -vl``, the
``Installation Result`` of ``component apply`` / ``vib install``, and esxcli's ``[Error]``
messages. Formats and their public sources: ``tests/fixtures/esxi/README.md``; the decisions made
from them: :mod:`miglab.core.esxi`.
"""

from __future__ import annotations

import re

from miglab.errors import Problems

# Host acceptance levels, most trusted first. A host accepts VIBs at its own level or a more
# trusted one (VMware, "Change the Host Acceptance Level", vSphere 7.0 ESXi Installation and Setup).
ACCEPTANCE_LEVELS = ("VMwareCertified", "VMwareAccepted", "PartnerSupported", "CommunitySupported")


# --------------------------------------------------------------------------------------------
# esxcli column tables
# --------------------------------------------------------------------------------------------

# Known column titles of esxcli software tables, as result keys.
_TITLE_KEYS = {
    "Name": "name",
    "Version": "version",
    "Vendor": "vendor",
    "Acceptance Level": "acceptance_level",
    "Install Date": "install_date",
    "Creation Date": "creation_date",
    "Release Date": "release_date",
    "Display Name": "display_name",
    "Display Version": "display_version",
    "Status": "status",
    "Platforms": "platforms",
}
VIB_LIST_COLUMNS = ("name", "version", "vendor", "acceptance_level", "install_date")
COMPONENT_LIST_COLUMNS = (
    "name",
    "display_name",
    "version",
    "display_version",
    "vendor",
    "release_date",
    "acceptance_level",
    "platforms",
)
_RULE_RE = re.compile(r"^-+(?: {1,}-+)*$")


def _key(title: str) -> str:
    return _TITLE_KEYS.get(title) or re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")


def parse_table(
    text: str, file: str = "<esxcli>", columns: tuple[str, ...] | list[str] | None = None
) -> list[dict]:
    """Rows of an esxcli table: a title line, a line of dash runs (one per column, as wide as the
    column), then one line per row. Each column is read at the position of its dash run, so values
    with spaces (``Display Name``) stay whole; keys are the titles in snake_case (``Acceptance
    Level`` -> ``acceptance_level``).

    Output cut by ``grep`` has no title lines: pass ``columns`` (the keys, in order) and each line
    is split at runs of two or more spaces (esxcli separates columns by two spaces at least and no
    value holds two spaces in a row).
    """
    problems = Problems(file)
    if not isinstance(text, str):
        problems.add("", f"expected text, got {type(text).__name__}")
        problems.raise_if_any()
    lines = text.splitlines()
    rule_at = next((i for i, line in enumerate(lines) if _RULE_RE.match(line.rstrip())), None)
    rows: list[dict] = []
    if rule_at is None:
        if columns is None:
            if not text.strip():
                problems.add("", "empty output: no esxcli table")
            else:
                problems.add("", "not an esxcli table: no line of dashes under the column titles")
            problems.raise_if_any()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            cells = re.split(r" {2,}", line.strip())
            if len(cells) == len(columns) - 1 and columns[-1] == "platforms":
                cells.append("")  # ESXi 7: no Platforms column
            if len(cells) != len(columns):
                problems.add(
                    f"line {number}",
                    f"expected {len(columns)} columns ({', '.join(columns)}), got {len(cells)}",
                )
                continue
            rows.append(dict(zip(columns, cells, strict=True)))
        problems.raise_if_any()
        return rows

    if rule_at == 0:
        problems.add("line 1", "line of dashes without column titles above it")
        problems.raise_if_any()
    rule = lines[rule_at].rstrip()
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    header = lines[rule_at - 1]
    keys = []
    for n, (start, _end) in enumerate(spans):
        stop = spans[n + 1][0] if n + 1 < len(spans) else None
        title = header[start:stop].strip()
        if not title:
            problems.add(f"line {rule_at}", f"column {n + 1} has no title")
        keys.append(_key(title))
    problems.raise_if_any()
    for number, line in enumerate(lines[rule_at + 1 :], start=rule_at + 2):
        if not line.strip():
            continue
        row = {}
        for n, (start, _end) in enumerate(spans):
            stop = spans[n + 1][0] if n + 1 < len(spans) else None
            if start > 0 and len(line) > start and line[start - 1] != " ":
                problems.add(f"line {number}", f"value runs into column {keys[n]!r}")
                break
            row[keys[n]] = line[start:stop].strip()
        else:
            rows.append(row)
    problems.raise_if_any()
    return rows


def _require(rows: list[dict], keys: tuple[str, ...], file: str, what: str) -> list[dict]:
    problems = Problems(file)
    if rows:
        missing = [k for k in keys if k not in rows[0]]
        if missing:
            problems.add("", f"not {what}: no column {', '.join(missing)}")
    problems.raise_if_any()
    return rows


def parse_vib_list(text: str, file: str = "<vib list>", columns=None) -> list[dict]:
    """``esxcli software vib list`` (or ``software sources vib list -d DEPOT``, which has
    ``Creation Date`` and ``Status`` columns): one dict per VIB with ``name``, ``version``,
    ``vendor``, ``acceptance_level`` and the other columns printed."""
    rows = parse_table(text, file, columns)
    return _require(rows, ("name", "version", "vendor", "acceptance_level"), file, "a VIB list")


def parse_component_list(text: str, file: str = "<component list>", columns=None) -> list[dict]:
    """``esxcli software component list``: one dict per component with ``name``,
    ``display_name``, ``version``, ``display_version``, ``vendor``, ``acceptance_level``."""
    rows = parse_table(text, file, columns)
    return _require(rows, ("name", "version", "vendor"), file, "a component list")


def parse_acceptance(text: str, file: str = "<acceptance get>") -> str:
    """``esxcli software acceptance get``: the host acceptance level (one word)."""
    problems = Problems(file)
    value = (text or "").strip()
    if value not in ACCEPTANCE_LEVELS:
        problems.add(
            "", f"not an acceptance level: {value!r} (known: {', '.join(ACCEPTANCE_LEVELS)})"
        )
    problems.raise_if_any()
    return value


def acceptance_allows(host_level: str, vib_level: str) -> bool:
    """Whether a host at ``host_level`` installs a VIB at ``vib_level`` (same or more trusted)."""
    return ACCEPTANCE_LEVELS.index(vib_level) <= ACCEPTANCE_LEVELS.index(host_level)


_VMWARE_V_RE = re.compile(r"^VMware ESXi (?P<version>\d+\.\d+\.\d+) build-(?P<build>\d+)$")
_VMWARE_L_RE = re.compile(r"^VMware ESXi (?P<release>\d+\.\d+(?:\.\d+)?) (?P<level>GA|Update \w+)$")


def parse_vmware_version(text: str, file: str = "<vmware -vl>") -> dict:
    """``vmware -vl`` (``-v``: ``VMware ESXi 7.0.3 build-19898904``; ``-l``: ``VMware ESXi 7.0
    Update 3``) -> ``{"product", "version", "build", "level"}`` (``level`` None without ``-l``)."""
    problems = Problems(file)
    out = {"product": "VMware ESXi", "version": None, "build": None, "level": None}
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        m = _VMWARE_V_RE.match(line)
        if m:
            out["version"], out["build"] = m["version"], int(m["build"])
            continue
        m = _VMWARE_L_RE.match(line)
        if m:
            out["level"] = m["level"]
            continue
        problems.add(f"line {number}", f"not vmware -v/-l output: {line!r}")
    if not problems and out["version"] is None:
        problems.add("", "no 'VMware ESXi X.Y.Z build-N' line")
    problems.raise_if_any()
    return out


_RESULT_LIST_KEYS = {
    "Components Installed": "installed",
    "Components Removed": "removed",
    "Components Skipped": "skipped",
    "VIBs Installed": "installed",
    "VIBs Removed": "removed",
    "VIBs Skipped": "skipped",
}


def parse_install_result(text: str, file: str = "<installation result>") -> dict:
    """The ``Installation Result`` block of ``esxcli software component apply`` / ``vib install``
    / ``vib update``: ``{"message", "reboot_required", "installed", "removed", "skipped",
    "kind"}`` (lists of component or VIB ids; ``kind`` is ``component`` or ``vib``)."""
    problems = Problems(file)
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines or lines[0].strip() != "Installation Result":
        problems.add("line 1", "not an esxcli 'Installation Result'")
        problems.raise_if_any()
    out = {
        "message": None,
        "reboot_required": None,
        "installed": [],
        "removed": [],
        "skipped": [],
        "kind": None,
    }
    for number, line in enumerate(lines[1:], start=2):
        key, sep, value = line.strip().partition(":")
        if not sep:
            problems.add(f"line {number}", f"not 'Key: value': {line.strip()!r}")
            continue
        value = value.strip()
        if key == "Message":
            out["message"] = value
        elif key == "Reboot Required":
            out["reboot_required"] = value.lower() == "true"
        elif key in _RESULT_LIST_KEYS:
            out["kind"] = "component" if key.startswith("Components") else "vib"
            out[_RESULT_LIST_KEYS[key]] = [v.strip() for v in value.split(",") if v.strip()]
    if out["reboot_required"] is None:
        problems.add("", "no 'Reboot Required' line")
    problems.raise_if_any()
    return out


_ERROR_RE = re.compile(r"^\[(?P<error>[A-Za-z]+)\]\s*(?P<rest>.*)$")


def parse_esxcli_error(text: str) -> dict | None:
    """esxcli's failure report (``[AcceptanceLevelError]``, ``[MetadataDownloadError]`` ...):
    ``{"error", "message"}``, or None when the text is not one."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return None
    m = _ERROR_RE.match(lines[0])
    if not m:
        if lines[0].startswith("Error:"):
            return {"error": "Error", "message": lines[0][len("Error:") :].strip()}
        return None
    message = " ".join([m["rest"], *lines[1:]]).strip()
    return {"error": m["error"], "message": message}
