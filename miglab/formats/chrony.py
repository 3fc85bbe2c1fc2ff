"""chrony's view of the clock: ``chronyc tracking`` and its CSV form ``chronyc -c tracking``.

Sources (docs/research/issue16-guest-facts.md, "Clock sync"): chrony's ``doc/chronyc.adoc``
(mlichvar/chrony @8f2db839de0c4c8683ec460819c1ee77a718c770) documents the report and its
example; the format string is ``process_cmd_tracking`` in ``client.c`` (the same at tags 3.5,
4.2 and 4.5)::

    Reference ID    : %R (%s)              hex ID (name or IP address)
    Stratum         : %u
    Ref time (UTC)  : %T
    System time     : %.9O of NTP time     "<|x|> seconds slow" when x > 0, else "fast"
    Last offset     : %+.9f seconds
    RMS offset      : %.9f seconds
    Frequency       : %.3F                 "<|f|> ppm fast" when f > 0, else "slow"
    Residual freq   : %+.3f ppm
    Skew            : %.3f ppm
    Root delay      : %.9f seconds
    Root dispersion : %.9f seconds
    Update interval : %.1f seconds
    Leap status     : %L                   Normal, Insert second, Delete second, Not synchronised

With ``-c`` the same 14 values are one line separated by commas, without units: the reference
time in seconds since the epoch, ``%O`` and ``%F`` as signed numbers (``%.9f``, ``%.3f``) -- so
field 5, the system time, is positive when the system clock is *slow* (behind chrony's estimate
of true time). chronyc.adoc bounds the clock's error (assuming the stratum-1 computer is
correct) by ``|system_time_offset| + root_dispersion + 0.5 * root_delay``.

The reference ID ``7F7F0101`` is chrony's local mode (no external source). A value that does not
read is an error naming its field, never echoing a long text. Only the standard library is used.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["LOCAL_REF_ID", "ChronyError", "Tracking", "parse_tracking", "parse_tracking_csv"]

LOCAL_REF_ID = "7F7F0101"
LEAP_STATUSES = ("Normal", "Insert second", "Delete second", "Not synchronised")
CSV_FIELDS = (
    "Reference ID",
    "Reference name",
    "Stratum",
    "Ref time",
    "System time",
    "Last offset",
    "RMS offset",
    "Frequency",
    "Residual freq",
    "Skew",
    "Root delay",
    "Root dispersion",
    "Update interval",
    "Leap status",
)


class ChronyError(ValueError):
    """chronyc's output does not read as the documented report."""


@dataclass(frozen=True)
class Tracking:
    """One ``chronyc tracking`` report. ``system_time_s`` keeps chrony's sign: positive when the
    system clock is slow (behind chrony's estimate of true time)."""

    ref_id: str  # 8 hex digits, upper case
    ref_name: str  # name or IP address (CSV: the IP address; chronyc does no DNS lookup)
    stratum: int
    ref_time: str  # as printed: "Fri Jan 27 09:49:17 2017" (text) or epoch seconds (CSV)
    system_time_s: float
    last_offset_s: float
    rms_offset_s: float
    frequency_ppm: float  # positive: the clock would run fast without correction
    residual_freq_ppm: float
    skew_ppm: float
    root_delay_s: float
    root_dispersion_s: float
    update_interval_s: float
    leap: str

    @property
    def offset_s(self) -> float:
        """The system clock minus chrony's estimate of true time (positive: ahead)."""
        return -self.system_time_s

    @property
    def uncertainty_s(self) -> float:
        """How far true time may be from chrony's estimate: root dispersion + half the root
        delay (chronyc.adoc's bound, less the system time offset that :attr:`offset_s` is)."""
        return self.root_dispersion_s + 0.5 * self.root_delay_s

    @property
    def reference(self) -> str:
        return f"{self.ref_id} ({self.ref_name})" if self.ref_name else self.ref_id

    @property
    def unusable(self) -> str | None:
        """Why this report gives no offset to a shared time source; None when it does."""
        if self.leap == "Not synchronised":
            return "chrony is not synchronised (Leap status: Not synchronised)"
        if self.ref_id == LOCAL_REF_ID:
            return "chrony runs in local mode (Reference ID 7F7F0101): no shared time source"
        if self.ref_id == "00000000":
            return "chrony has no reference (Reference ID 00000000)"
        return None


def _number(field: str, text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ChronyError(f"{field}: not a number: {text[:40]!r}") from None
    if not math.isfinite(v):
        raise ChronyError(f"{field}: not a finite number: {text[:40]!r}")
    return v


def _ref_id(text: str) -> str:
    if not re.fullmatch(r"[0-9A-Fa-f]{8}", text):
        raise ChronyError(f"Reference ID: not 8 hex digits: {text[:40]!r}")
    return text.upper()


def _stratum(text: str) -> int:
    if not text.isdigit() or not text.isascii() or int(text) > 255:
        raise ChronyError(f"Stratum: not a stratum (0-255): {text[:40]!r}")
    return int(text)


def _leap(text: str) -> str:
    if text not in LEAP_STATUSES:
        raise ChronyError(f"Leap status: not one of {', '.join(LEAP_STATUSES)}: {text[:40]!r}")
    return text


def parse_tracking_csv(text: str) -> Tracking:
    """``chronyc -c tracking``'s line (the first non-empty line of ``text``)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ChronyError("empty output: no tracking report")
    fields = lines[0].strip().split(",")
    if len(fields) != len(CSV_FIELDS):
        raise ChronyError(
            f"{len(fields)} comma-separated fields, the tracking report has {len(CSV_FIELDS)}"
        )
    num = {name: fields[i] for i, name in enumerate(CSV_FIELDS)}
    _number("Ref time", num["Ref time"])
    return Tracking(
        ref_id=_ref_id(num["Reference ID"]),
        ref_name=num["Reference name"],
        stratum=_stratum(num["Stratum"]),
        ref_time=num["Ref time"],
        system_time_s=_number("System time", num["System time"]),
        last_offset_s=_number("Last offset", num["Last offset"]),
        rms_offset_s=_number("RMS offset", num["RMS offset"]),
        frequency_ppm=_number("Frequency", num["Frequency"]),
        residual_freq_ppm=_number("Residual freq", num["Residual freq"]),
        skew_ppm=_number("Skew", num["Skew"]),
        root_delay_s=_number("Root delay", num["Root delay"]),
        root_dispersion_s=_number("Root dispersion", num["Root dispersion"]),
        update_interval_s=_number("Update interval", num["Update interval"]),
        leap=_leap(num["Leap status"]),
    )


_LINE = re.compile(r"^([A-Za-z][A-Za-z ()]*?)\s*:\s?(.*?)\s*$")
_REF = re.compile(r"^([0-9A-Fa-f]{8})(?: \((.*)\))?$")


def _unit(field: str, text: str, unit: str, words: tuple[str, str] | None = None) -> float:
    """``"<number> <unit>"``, or ``"<|x|> <unit> <word>"`` signed by ``words`` (positive,
    negative): ``%O`` and ``%F`` print a magnitude and a word for the sign."""
    parts = text.split()
    if len(parts) < 2 or parts[1] != unit:
        raise ChronyError(f"{field}: not '<number> {unit}': {text[:40]!r}")
    v = _number(field, parts[0])
    if words is None:
        if len(parts) != 2:
            raise ChronyError(f"{field}: not '<number> {unit}': {text[:40]!r}")
        return v
    word = parts[2] if len(parts) > 2 else ""
    if word not in words:
        raise ChronyError(f"{field}: not '<number> {unit} {'|'.join(words)}': {text[:40]!r}")
    return v if word == words[0] else -v


def parse_tracking(text: str) -> Tracking:
    """``chronyc tracking``'s text report (the CSV line of ``-c`` is read too)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group(1) not in values:
            values[m.group(1)] = m.group(2)
    if "Reference ID" not in values:
        if text.strip() and "," in text.strip().splitlines()[0]:
            return parse_tracking_csv(text)
        raise ChronyError("no 'Reference ID' line: not a chronyc tracking report")
    text_fields = [f for f in CSV_FIELDS if f not in ("Reference name", "Ref time")]
    missing = [f for f in text_fields if f not in values] + (
        [] if "Ref time (UTC)" in values else ["Ref time (UTC)"]
    )
    if missing:
        raise ChronyError(f"no {', '.join(repr(f) for f in missing)} line(s)")
    ref = _REF.match(values["Reference ID"])
    if not ref:
        raise ChronyError(f"Reference ID: not 'HEX (name)': {values['Reference ID'][:40]!r}")
    system = values["System time"]
    if not system.endswith(" of NTP time"):
        raise ChronyError(f"System time: not '... of NTP time': {system[:40]!r}")
    return Tracking(
        ref_id=_ref_id(ref.group(1)),
        ref_name=ref.group(2) or "",
        stratum=_stratum(values["Stratum"]),
        ref_time=values["Ref time (UTC)"],
        system_time_s=_unit(
            "System time", system.removesuffix(" of NTP time"), "seconds", ("slow", "fast")
        ),
        last_offset_s=_unit("Last offset", values["Last offset"], "seconds"),
        rms_offset_s=_unit("RMS offset", values["RMS offset"], "seconds"),
        frequency_ppm=_unit("Frequency", values["Frequency"], "ppm", ("fast", "slow")),
        residual_freq_ppm=_unit("Residual freq", values["Residual freq"], "ppm"),
        skew_ppm=_unit("Skew", values["Skew"], "ppm"),
        root_delay_s=_unit("Root delay", values["Root delay"], "seconds"),
        root_dispersion_s=_unit("Root dispersion", values["Root dispersion"], "seconds"),
        update_interval_s=_unit("Update interval", values["Update interval"], "seconds"),
        leap=_leap(values["Leap status"]),
    )
