"""The Server target-QPS search: the highest target QPS whose short run stays VALID.

A Server result is only meaningful at the highest target QPS that stays VALID: LoadGen's own
verdict, early stopping met and the 99th percentile latency within the benchmark's bound
(15 ms ResNet50, 130 ms BERT: :data:`miglab.core.mlperf_rules.SERVER_LATENCY_BOUND_NS`, from
MLCommons' inference rules, "Scenarios" table, and ``submission_checker.py``); submitters search
for it. :func:`search_highest_valid` does that search over a function that runs one short trial
at a target QPS and says whether it was VALID: an exponential bracket from a start (the SUT's
raw throughput, say), then a bisection to a relative tolerance, within a budget of trials. It
assumes a higher target QPS is never easier to meet; where a trial contradicts that (noise, a
short run), the answer is still the highest target QPS that was seen VALID.

:func:`server_verdict` judges one trial from what its LoadGen log says. Nothing here runs
LoadGen (the guest does: :mod:`miglab.mlperf.guest.qps_search`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from miglab.core.mlperf_rules import SERVER_LATENCY_BOUND_NS, benchmark_class

__all__ = [
    "NoValidQps",
    "SearchResult",
    "Trial",
    "Verdict",
    "latency_bound_ms",
    "search_highest_valid",
    "server_verdict",
]


@dataclass(frozen=True)
class Verdict:
    """One trial's outcome: VALID or not, why not, and its p99 latency (ms) where known."""

    valid: bool
    reason: str = ""
    p99_ms: float | None = None


@dataclass(frozen=True)
class Trial:
    target_qps: float
    valid: bool
    reason: str
    p99_ms: float | None


@dataclass
class SearchResult:
    target_qps: float  # the highest target QPS seen VALID
    trials: list[Trial] = field(default_factory=list)
    converged: bool = False  # bracketed and narrowed to the tolerance within the budget
    bound_hit: bool = False  # VALID at the upper bound: the SUT may do more

    def as_json(self) -> dict:
        return {
            "target_qps": self.target_qps,
            "converged": self.converged,
            "upper_bound_reached": self.bound_hit,
            "trials": [asdict(t) for t in self.trials],
        }


class NoValidQps(ValueError):
    """No trial was VALID, not even at the lowest target QPS tried."""

    def __init__(self, message: str, trials: list[Trial]):
        super().__init__(message)
        self.trials = trials


def latency_bound_ms(benchmark: str | None) -> float | None:
    """The Server p99 latency bound of a benchmark (ms); None where none is known."""
    bound = SERVER_LATENCY_BOUND_NS.get(benchmark_class(benchmark) or "")
    return bound / 1e6 if bound is not None else None


def server_verdict(
    benchmark: str | None,
    *,
    validity: str | None,
    early_stopping_met: bool | None,
    p99_ms: float | None,
    reasons: list[str] | tuple[str, ...] = (),
) -> Verdict:
    """A Server trial's verdict: LoadGen says VALID, early stopping is met (where the log says
    so; None: LoadGen did not log it) and the p99 latency is within the benchmark's bound."""
    why: list[str] = []
    if validity != "VALID":
        why.append(f"LoadGen result is {validity or 'missing'}")
        why += [str(r) for r in reasons if "result_validity" not in str(r)][:2]
    if early_stopping_met is False:
        why.append("early stopping not met")
    bound = latency_bound_ms(benchmark)
    if bound is None:
        why.append(f"no Server latency bound known for {benchmark or '(unknown)'}")
    elif p99_ms is None:
        why.append("no 99th percentile latency")
    elif p99_ms > bound:
        why.append(f"p99 {p99_ms:.3f} ms > {bound:g} ms bound")
    return Verdict(not why, "; ".join(why), p99_ms)


def search_highest_valid(
    run: Callable[[float], Verdict],
    start: float,
    *,
    lower: float | None = None,
    upper: float | None = None,
    tolerance: float = 0.02,
    max_trials: int = 12,
    growth: float = 2.0,
) -> SearchResult:
    """The highest target QPS ``q`` for which ``run(q)`` is VALID.

    From ``start``: up by ``growth`` while VALID (not beyond ``upper``), or down by it while
    not (not below ``lower``, default ``start / 1000``), until a VALID and a not-VALID target
    bracket the answer; then bisection until they are within ``tolerance`` (relative) of each
    other. At most ``max_trials`` calls of ``run``. Raises :class:`NoValidQps` (with the trials)
    when none was VALID."""
    if not start > 0:
        raise ValueError(f"the search needs a start target QPS > 0, not {start!r}")
    if max_trials < 1 or tolerance <= 0 or growth <= 1:
        raise ValueError("max_trials >= 1, tolerance > 0 and growth > 1 are needed")
    lower = start / 1000.0 if lower is None else lower
    if upper is not None and upper < lower:
        raise ValueError(f"upper {upper} < lower {lower}")
    trials: list[Trial] = []

    def trial(q: float) -> bool:
        v = run(q)
        trials.append(Trial(q, bool(v.valid), v.reason or "", v.p99_ms))
        return bool(v.valid)

    def best() -> float | None:
        ok = [t.target_qps for t in trials if t.valid]
        return max(ok) if ok else None

    def lowest_invalid_above(q: float) -> float | None:
        bad = [t.target_qps for t in trials if not t.valid and t.target_qps > q]
        return min(bad) if bad else None

    q = min(max(start, lower), upper) if upper is not None else max(start, lower)
    # bracket
    if trial(q):
        while len(trials) < max_trials and (upper is None or q < upper):
            q = q * growth if upper is None else min(q * growth, upper)
            if not trial(q):
                break
    else:
        while best() is None:
            if q <= lower or len(trials) >= max_trials:
                raise NoValidQps(
                    f"no target QPS was VALID, down to {q:.4g} ({len(trials)} trials; last: "
                    f"{trials[-1].reason or 'not VALID'})",
                    trials,
                )
            q = max(q / growth, lower)
            trial(q)
    # bisect between the highest VALID and the lowest not-VALID target above it
    while len(trials) < max_trials:
        lo = best()
        hi = lowest_invalid_above(lo)
        if hi is None or (hi - lo) <= tolerance * lo:
            break
        trial((lo + hi) / 2.0)
    lo = best()
    hi = lowest_invalid_above(lo)
    bound_hit = upper is not None and lo >= upper
    converged = bound_hit or (hi is not None and (hi - lo) <= tolerance * lo)
    return SearchResult(lo, trials, converged, bound_hit)
