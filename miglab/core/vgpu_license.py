"""Whether a vGPU guest holds its NVIDIA licence, from its ``nvidia-smi -q`` (read by
:func:`miglab.formats.nvsmi.parse_query`, the one parser of that output).

NVIDIA Virtual GPU Client Licensing User Guide: on a licensed client each vGPU's
``vGPU Software Licensed Product / License Status`` reads ``Licensed (Expiry: <date> GMT)`` (older
guests just ``Licensed``); ``Unlicensed (Unrestricted)`` during the grace period,
``Unlicensed (Restricted)`` once throttled. A GPU without that section runs no vGPU guest driver
(pass-through, or a data-centre driver)."""

from __future__ import annotations

import re

from miglab.formats.nvsmi import parse_query

__all__ = ["LICENSED_PRODUCT_SECTION", "license_problem", "read_license"]

LICENSED_PRODUCT_SECTION = "vGPU Software Licensed Product"
_STATUS_RE = re.compile(r"^(?P<state>[^(]+?)\s*(?:\((?P<detail>[^)]*)\))?$")


def read_license(text: str, file: str = "nvidia-smi -q") -> dict:
    """``{"driver_version", "cuda_version", "gpus": [...]}``; per GPU ``bus_id``,
    ``product_name``, ``virtualization_mode``, ``licensed_product``, ``license_status``
    (verbatim), ``license_state`` (``Licensed``/``Unlicensed``), ``license_detail``
    (``Expiry: ...``, ``Unrestricted``, ...), ``license_expiry`` and ``licensed`` (bool).
    ValidationError when the text is not ``nvidia-smi -q`` output or lists no GPU."""
    gpus = parse_query(text, file)
    return {
        "driver_version": gpus[0]["driver_version"],
        "cuda_version": gpus[0]["cuda_version"],
        "gpus": [_licence(g) for g in gpus],
    }


def _licence(gpu: dict) -> dict:
    status = gpu["license_status"]
    row = {
        "bus_id": gpu["pci_bus_id"],
        "product_name": gpu["product_name"],
        "virtualization_mode": gpu["virtualization_mode"],
        "licensed_product": gpu["licensed_product"],
        "license_status": status,
        "license_state": None,
        "license_detail": None,
        "license_expiry": None,
        "licensed": False,
    }
    if status is None:
        return row
    m = _STATUS_RE.match(status)
    state, detail = (m.group("state"), m.group("detail")) if m else (status, None)
    row.update(license_state=state, license_detail=detail, licensed=state == "Licensed")
    if detail and detail.startswith("Expiry:"):
        row["license_expiry"] = detail.split(":", 1)[1].strip()
    return row


def license_problem(query: dict) -> str | None:
    """``None`` when every GPU reports a vGPU licence, else one line saying what is missing."""
    gpus = query.get("gpus") or []
    if not gpus:
        return "nvidia-smi -q lists no GPU"
    problems = []
    for g in gpus:
        name = f"GPU {g['bus_id']} ({g.get('product_name') or 'unknown product'})"
        if g.get("license_status") is None:
            problems.append(
                f"{name} has no '{LICENSED_PRODUCT_SECTION}' section (not a vGPU guest driver?)"
            )
        elif not g.get("licensed"):
            problems.append(f"{name} License Status is '{g['license_status']}'")
    return "; ".join(problems) or None
