"""Issue 17 item 4: the simulated lab's SUT models a MIG slice (a service rate proportional to the
profile's compute slices, SIMULATED) instead of racing the other VMs for the host's cores."""

from __future__ import annotations

import numpy as np
import pytest

from miglab.mlperf.guest.sut.slice_model import (
    FULL_GPU_RATE,
    SliceModelEngine,
    compute_slices,
)


@pytest.mark.parametrize(
    ("profile", "slices"),
    [("7g.80gb", 7), ("4g.40gb", 4), ("1g.10gb", 1), ("1g.10gb+me", 1), ("3g.71gb", 3),
     ("grid_a100d-80c", 7), (None, 7), ("", 7)],
)  # fmt: skip
def test_compute_slices_of_a_profile(profile, slices):
    assert compute_slices(profile) == slices


def test_the_rate_is_proportional_to_the_compute_slices():
    full = SliceModelEngine("resnet50", 7)
    ones = [SliceModelEngine("resnet50", 1) for _ in range(7)]
    assert full.nominal_samples_per_second == FULL_GPU_RATE["resnet50"]
    assert sum(e.nominal_samples_per_second for e in ones) == pytest.approx(full.rate)
    assert SliceModelEngine("bert-99", 3).rate == pytest.approx(1700.0 * 3 / 7)
    assert "SIMULATED" in full.device and "SIMULATED" in full.model
    assert full.describe()["weights"] == "none"


def test_batches_queue_like_one_device_stream():
    """A batch is done n/rate after the engine is free: the second waits for the first."""
    e = SliceModelEngine("bert-99", 7)
    first = e.submit(np.arange(17))
    second = e.submit(np.arange(17))
    assert second.handle - first.handle == pytest.approx(17 / e.rate)
    out = e.wait(second)  # sleeps about 20 ms
    assert out.shape == (17, 1)


@pytest.mark.parametrize(("benchmark", "slices"), [("ssd", 7), ("resnet50", 0), ("resnet50", 8)])
def test_refuses_what_it_cannot_model(benchmark, slices):
    with pytest.raises(ValueError):
        SliceModelEngine(benchmark, slices)
