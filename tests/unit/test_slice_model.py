"""Issue 17 item 4: the simulated lab's SUT models a MIG slice (a service rate proportional to the
profile's compute slices, SIMULATED) instead of racing the other VMs for the host's cores."""

from __future__ import annotations

import json
import subprocess
import sys

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


def test_a_run_of_the_slice_model_is_valid_and_says_what_it_was(tmp_path):
    """The command the simulated lab's guests run: a 2g slice, Offline; the expected QPS is the
    model's rate (no raw measurement), the run is labelled SIMULATED, no weights, the CPU."""
    pytest.importorskip("mlperf_loadgen")
    res = subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.run", "--backend", "reference",
         "--sut", "slice-model", "--benchmark", "bert-99", "--scenario", "Offline",
         "--profile", "2g.20gb", "--out", str(tmp_path / "vm1"), "--run", "1",
         "--simulated-lab", "--min-duration-ms", "300", "--min-query-count", "1"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    meta_path = next(tmp_path.glob("vm1/bert-99/Offline/performance/run_1/miglab_run.json"))
    meta = json.loads(meta_path.read_text())
    assert meta["loadgen"]["valid"] is True
    assert meta["weights"] == "none" and meta["sut"] == "slice-model"
    assert meta["device"]["kind"] == "cpu"
    assert "SIMULATED MIG slice (2 of 7 compute slices)" in meta["device"]["name"]
    assert meta["raw_throughput"] == pytest.approx(1700.0 * 2 / 7)
