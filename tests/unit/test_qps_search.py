"""The pure Server target-QPS search (miglab.core.qps_search), with deterministic fakes."""

from __future__ import annotations

import pytest

from miglab.core.qps_search import (
    NoValidQps,
    Verdict,
    latency_bound_ms,
    search_highest_valid,
    server_verdict,
)


def valid_up_to(limit: float, calls: list[float] | None = None):
    def run(q: float) -> Verdict:
        if calls is not None:
            calls.append(q)
        ok = q <= limit
        return Verdict(ok, "" if ok else "p99 over the bound", 5.0 if ok else 50.0)

    return run


@pytest.mark.parametrize("start", [1.0, 100.0, 1234.0, 5000.0, 1e6])
def test_finds_the_highest_valid_within_the_tolerance(start):
    r = search_highest_valid(valid_up_to(1234), start, tolerance=0.02, max_trials=40)
    assert r.target_qps <= 1234
    assert r.target_qps >= 1234 / 1.02
    assert r.converged and not r.bound_hit
    assert all(t.valid == (t.target_qps <= 1234) for t in r.trials)
    assert max(t.target_qps for t in r.trials if t.valid) == r.target_qps


def test_the_trial_budget_is_kept():
    calls: list[float] = []
    r = search_highest_valid(valid_up_to(1234, calls), 10.0, tolerance=1e-9, max_trials=7)
    assert len(calls) == len(r.trials) == 7
    assert r.target_qps <= 1234 and not r.converged


def test_nothing_valid_is_a_clear_error():
    with pytest.raises(NoValidQps, match="no target QPS was VALID") as e:
        search_highest_valid(valid_up_to(0.001), 100.0, lower=1.0, max_trials=50)
    assert e.value.trials and not any(t.valid for t in e.value.trials)
    assert min(t.target_qps for t in e.value.trials) == 1.0  # tried down to the lower bound


def test_a_non_monotonic_sut_keeps_the_highest_valid_seen():
    # VALID at and below 1000 and, oddly, at exactly 1500; nothing else
    def run(q):
        return Verdict(q <= 1000 or q == 1500, "", None)

    r = search_highest_valid(run, 750.0, tolerance=0.02, max_trials=20)
    assert r.target_qps == 1500  # 750 ok, 1500 ok, 3000 not: the highest VALID seen
    assert [t.target_qps for t in r.trials[:3]] == [750, 1500, 3000]
    assert all(t.target_qps == 1500 or not t.valid for t in r.trials[2:])


def test_the_upper_bound_is_reported():
    r = search_highest_valid(valid_up_to(1e9), 100.0, upper=300.0, max_trials=10)
    assert r.target_qps == 300.0 and r.bound_hit and r.converged


def test_bad_arguments():
    with pytest.raises(ValueError, match="start"):
        search_highest_valid(valid_up_to(1), 0.0)
    with pytest.raises(ValueError):
        search_highest_valid(valid_up_to(1), 1.0, tolerance=0)


def test_server_verdict_uses_loadgen_early_stopping_and_the_bound():
    assert latency_bound_ms("resnet50") == 15.0 and latency_bound_ms("bert-99") == 130.0
    ok = server_verdict("resnet50", validity="VALID", early_stopping_met=True, p99_ms=14.9)
    assert ok.valid and ok.reason == ""
    late = server_verdict("resnet50", validity="VALID", early_stopping_met=True, p99_ms=15.1)
    assert not late.valid and "15 ms bound" in late.reason
    assert server_verdict("bert-99", validity="VALID", early_stopping_met=None, p99_ms=100).valid
    es = server_verdict("bert-99", validity="VALID", early_stopping_met=False, p99_ms=1)
    assert not es.valid and "early stopping" in es.reason
    bad = server_verdict(
        "resnet50", validity="INVALID", early_stopping_met=True, p99_ms=1, reasons=["x"]
    )
    assert not bad.valid and "INVALID" in bad.reason
    assert not server_verdict("gpt5", validity="VALID", early_stopping_met=True, p99_ms=1).valid
