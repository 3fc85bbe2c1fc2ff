"""Guest clocks against the controller's: what a measurement says, and whether the VMs of a
scenario run can be compared.

LoadGen stamps a run's window with the guest's clock, and the start barrier is a moment of the
controller's clock. Before each round every guest measures ``offset_s``: its clock minus the
controller's (positive: the guest is ahead), with ``uncertainty_s``. A window in guest time
becomes controller time by subtracting the offset (:func:`to_controller_time`); the VMs of a
scenario run are flagged when their offsets disagree by more than a bound (:func:`check_clocks`,
default :data:`DEFAULT_BOUND_S`), or when an offset is known less precisely than the bound.

One NTP exchange (RFC 5905 section 8; RFC 4330 section 5): the client sends at T1 (its clock),
the server receives at T2 and answers at T3 (its clock), the client receives at T4. The server's
clock minus the client's is ``theta = ((T2 - T1) + (T3 - T4)) / 2``, the round trip
``delta = (T4 - T1) - (T3 - T2)``; an asymmetric path puts theta off by at most delta / 2. Of
several exchanges the one with the smallest delay is kept (RFC 5905's clock filter does the
same).

Methods (:data:`METHODS`): ``responder`` -- the guest queries miglab's SNTP responder on the
controller, so the offset is to the controller directly; ``ntp`` and ``chrony`` -- guest and
controller each measure their offset to one shared reference (an NTP server; chrony's current
source), and the guest's offset to the controller is the difference (uncertainties added).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

__all__ = [
    "DEFAULT_BOUND_S",
    "METHODS",
    "ClockCheck",
    "ClockReading",
    "Exchange",
    "best_exchange",
    "check_clocks",
    "relative_to_controller",
    "to_controller_time",
]

METHODS = ("responder", "ntp", "chrony")
DEFAULT_BOUND_S = 0.050


@dataclass(frozen=True)
class Exchange:
    """One request and reply: T1..T4 in seconds (Unix time of the clock that took each)."""

    t1: float
    t2: float
    t3: float
    t4: float

    @property
    def theta(self) -> float:
        """The server's clock minus the client's."""
        return ((self.t2 - self.t1) + (self.t3 - self.t4)) / 2

    @property
    def delay(self) -> float:
        """The round trip, less the server's own time between receive and transmit."""
        return (self.t4 - self.t1) - (self.t3 - self.t2)

    @property
    def client_offset(self) -> float:
        """The client's clock minus the server's (miglab's sign: positive, the client is ahead)."""
        return -self.theta

    @property
    def uncertainty(self) -> float:
        """How far :attr:`theta` may be off on an asymmetric path: half the delay."""
        return max(self.delay, 0.0) / 2


def best_exchange(exchanges: list[Exchange]) -> Exchange | None:
    """The exchange of smallest delay (None when there is none)."""
    return min(exchanges, key=lambda e: e.delay, default=None)


@dataclass(frozen=True)
class ClockReading:
    """One guest's measurement (``miglab_run.json``'s ``clock``), or why there is none
    (``error``). ``offset_s``: the guest's clock minus the controller's -- or, in a reading of
    a reference only (ntp, chrony, before :func:`relative_to_controller`), minus the
    reference's."""

    method: str
    offset_s: float | None = None
    uncertainty_s: float | None = None
    reference: str | None = None
    samples: int | None = None
    measured_at: str | None = None
    error: str | None = None
    to_reference_s: float | None = None  # ntp, chrony: the guest's offset to the reference
    controller_to_reference_s: float | None = None  # and the controller's

    @property
    def measured(self) -> bool:
        return self.error is None and self.offset_s is not None

    def as_json(self) -> dict:
        keys = (
            "method",
            "offset_s",
            "uncertainty_s",
            "reference",
            "samples",
            "measured_at",
            "error",
            "to_reference_s",
            "controller_to_reference_s",
        )
        return {k: getattr(self, k) for k in keys if getattr(self, k) is not None}

    @classmethod
    def from_json(cls, data: dict) -> ClockReading:
        """A ``clock`` object (checked by :mod:`miglab.formats.run_meta` when read from a file)."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    @classmethod
    def failed(cls, method: str, error: str, measured_at: str | None = None) -> ClockReading:
        return cls(method=method, error=" ".join(str(error).split())[:300], measured_at=measured_at)


def relative_to_controller(guest: ClockReading, controller: ClockReading) -> ClockReading:
    """The guest's offset to the controller from both machines' offsets to one reference
    (ntp: the same server; chrony: the same source): the difference, uncertainties added."""
    if not guest.measured:
        return guest
    if not controller.measured:
        why = controller.error or "no offset"
        return ClockReading.failed(
            guest.method, f"the controller's own measurement failed: {why}", guest.measured_at
        )
    if controller.method != guest.method:
        return ClockReading.failed(
            guest.method,
            f"the controller measured with {controller.method}, the guest with {guest.method}",
            guest.measured_at,
        )
    if controller.reference != guest.reference:
        return ClockReading.failed(
            guest.method,
            f"not comparable: the guest's reference is {guest.reference}, the controller's "
            f"{controller.reference}",
            guest.measured_at,
        )
    return ClockReading(
        method=guest.method,
        offset_s=guest.offset_s - controller.offset_s,
        uncertainty_s=(guest.uncertainty_s or 0.0) + (controller.uncertainty_s or 0.0),
        reference=guest.reference,
        samples=guest.samples,
        measured_at=guest.measured_at,
        to_reference_s=guest.offset_s,
        controller_to_reference_s=controller.offset_s,
    )


def to_controller_time(
    window: tuple[datetime, datetime], offset_s: float | None
) -> tuple[datetime, datetime]:
    """A window in a guest's time -> the controller's time: minus the guest's offset."""
    if not offset_s:
        return window
    shift = timedelta(seconds=offset_s)
    return (window[0] - shift, window[1] - shift)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


@dataclass(frozen=True)
class ClockCheck:
    """The clocks of one scenario run's VMs.

    ``state``: ``ok`` (every VM measured, offsets within the bound of each other, each known to
    the bound), ``flagged`` (they disagree by more than the bound, or an offset is less precise
    than it), ``not checked`` (some VM has no measurement, and those measured agree).
    ``offsets``: VM -> offset (measured VMs only); ``spread_s``: the largest pairwise
    disagreement (max - min of the offsets)."""

    state: str
    bound_s: float
    offsets: dict[str, float] = field(default_factory=dict)
    uncertainties: dict[str, float] = field(default_factory=dict)
    spread_s: float | None = None
    reasons: tuple[str, ...] = ()

    @property
    def flagged(self) -> bool:
        return self.state == "flagged"

    def describe(self) -> str:
        """One line: the state, the spread against the bound, the reasons."""
        text = self.state
        if self.spread_s is not None and len(self.offsets) > 1:
            text += f": offsets differ by up to {_ms(self.spread_s)} (bound {_ms(self.bound_s)})"
        if self.reasons:
            text += ("; " if ":" in text else ": ") + "; ".join(self.reasons)
        return text

    def as_json(self) -> dict:
        return {
            "state": self.state,
            "bound_s": self.bound_s,
            "spread_s": self.spread_s,
            "offsets_s": dict(self.offsets),
            "uncertainties_s": dict(self.uncertainties),
            "reasons": list(self.reasons),
        }


def check_clocks(readings: dict[str, ClockReading | None], bound_s: float = DEFAULT_BOUND_S):
    """Judge one scenario run: ``readings`` is VM -> its run's reading (None: not recorded)."""
    offsets: dict[str, float] = {}
    uncertainties: dict[str, float] = {}
    unchecked: list[str] = []
    for vm, r in readings.items():
        if r is None:
            unchecked.append(f"{vm}: not measured (no clock in miglab_run.json)")
        elif not r.measured:
            unchecked.append(f"{vm}: not measured ({r.method}: {r.error or 'no offset'})")
        elif not math.isfinite(r.offset_s):
            unchecked.append(f"{vm}: offset is not a finite number")
        else:
            offsets[vm] = r.offset_s
            uncertainties[vm] = r.uncertainty_s or 0.0
    spread = max(offsets.values()) - min(offsets.values()) if offsets else None
    flags: list[str] = []
    if spread is not None and spread > bound_s:
        hi = max(offsets, key=offsets.__getitem__)
        lo = min(offsets, key=offsets.__getitem__)
        flags.append(
            f"{hi} is {_ms(offsets[hi])}, {lo} {_ms(offsets[lo])} off the controller's clock"
        )
    flags += [
        f"{vm}'s offset is known only to +-{_ms(u)}, more than the bound"
        for vm, u in uncertainties.items()
        if u > bound_s
    ]
    if flags:
        state = "flagged"
    elif unchecked:
        state = "not checked"
    else:
        state = "ok"
    return ClockCheck(
        state=state,
        bound_s=bound_s,
        offsets=offsets,
        uncertainties=uncertainties,
        spread_s=spread,
        reasons=tuple(flags + unchecked),
    )
