"""Issue 19: the simulated lab's SUT models a time-sliced vGPU. A GPU shared by N busy VMs gives
each about 1/N of it (NVIDIA's best-effort scheduler, NVIDIA vGPU user guide, "vGPU scheduling
policies"), as a MIG k-g instance gets k/7; an L40S's full-GPU rate is a published MLPerf result
(SIMULATED like the others), not the A100/H100/H200-class model constant."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from miglab.mlperf.guest.sut.slice_model import (
    BOARD_RATES,
    FULL_GPU_RATE,
    SliceModelEngine,
    engine_for,
    full_gpu_rate,
    gpu_vgpus,
)

# MLCommons inference_results_v4.0 @ 3c4a1cf1, closed/Dell/results/R760xa_L40Sx4_TRT, Offline,
# performance/run_1/mlperf_log_summary.txt, "Dell PowerEdge R760xa (4x L40S, TensorRT)":
# ResNet50 175746, BERT-99 13538.2, BERT-99.9 7308.19 samples/s on 4 GPUs.
L40S_RESNET50 = 175746 / 4
L40S_BERT99 = 13538.2 / 4
L40S_BERT999 = 7308.19 / 4


def test_the_l40s_rates_are_the_published_results_per_gpu():
    assert BOARD_RATES["nvidia_l40s"]["resnet50"] == pytest.approx(L40S_RESNET50)
    assert BOARD_RATES["nvidia_l40s"]["bert-99"] == pytest.approx(L40S_BERT99)
    assert BOARD_RATES["nvidia_l40s"]["bert-99.9"] == pytest.approx(L40S_BERT999)
    assert full_gpu_rate("resnet50", "nvidia_l40s-24c") == pytest.approx(L40S_RESNET50)
    assert full_gpu_rate("resnet50", "NVIDIA_L40S-48C") == pytest.approx(L40S_RESNET50)
    # a board without a published rate of its own keeps the model constant
    assert full_gpu_rate("resnet50", "grid_a100d-7-80c") == FULL_GPU_RATE["resnet50"]
    assert full_gpu_rate("resnet50", None) == FULL_GPU_RATE["resnet50"]


def test_a_time_sliced_gpu_shared_by_n_vms_gives_each_a_nth():
    alone = SliceModelEngine("resnet50", 7, shared_by=1, time_sliced=True)
    halves = [SliceModelEngine("resnet50", 7, shared_by=2, time_sliced=True) for _ in range(2)]
    quarters = [SliceModelEngine("resnet50", 7, shared_by=4, time_sliced=True) for _ in range(4)]
    assert alone.rate == FULL_GPU_RATE["resnet50"]
    assert halves[0].rate == pytest.approx(FULL_GPU_RATE["resnet50"] / 2)
    assert sum(e.rate for e in halves) == pytest.approx(alone.rate)
    assert sum(e.rate for e in quarters) == pytest.approx(alone.rate)
    assert "SIMULATED time-sliced vGPU" in halves[0].device
    assert "1/2 of the GPU" in halves[0].device and "SIMULATED" in halves[0].model


def test_the_rate_of_an_l40s_vgpu_shared_by_two():
    e = SliceModelEngine("resnet50", 7, shared_by=2, time_sliced=True, full_rate=L40S_RESNET50)
    assert e.nominal_samples_per_second == pytest.approx(L40S_RESNET50 / 2)
    assert f"{L40S_RESNET50:.0f} x 1/2" in e.model


@pytest.mark.parametrize(("shared_by", "full_rate"), [(0, None), (-1, None), (2, 0.0)])
def test_refuses_a_share_or_rate_it_cannot_model(shared_by, full_rate):
    with pytest.raises(ValueError):
        SliceModelEngine("resnet50", 7, shared_by=shared_by, full_rate=full_rate)


@pytest.mark.parametrize(
    ("placement", "count"),
    [({"gpu": "0000:3b:00.0", "gpu_vgpus": 3}, 3), ({"gpu": "0000:3b:00.0"}, None),
     (None, None), ({"gpu_vgpus": 0}, None), ({"gpu_vgpus": True}, None),
     ({"gpu_vgpus": "2"}, None), ("x", None)],
)  # fmt: skip
def test_gpu_vgpus_reads_the_placement(placement, count):
    assert gpu_vgpus(placement) == count


def _engine(meta):
    return engine_for("resnet50", meta, sample_count=1024, max_batch=32)


def test_engine_for_a_time_sliced_vm_takes_its_share_from_the_placement():
    """What the reference backend builds from a run's metadata: the vGPU type says the board
    (and that it is time-sliced), the controller's placement how many vGPUs share its GPU."""
    meta = {
        "profile": "nvidia_l40s-24c",
        "vgpu_type": "nvidia_l40s-24c",
        "placement": {"gpu": "0000:5e:00.0", "mig_slot": None, "gpu_vgpus": 2},
    }
    e = _engine(meta)
    assert e.rate == pytest.approx(L40S_RESNET50 / 2)
    assert e.time_sliced and e.shared_by == 2
    # the same type alone on its GPU gets all of it
    alone = _engine({**meta, "placement": {"gpu": "0000:5e:00.0", "gpu_vgpus": 1}})
    assert alone.rate == pytest.approx(L40S_RESNET50)
    # without a count (no placement read): the whole GPU, and the device says it is not known
    unknown = _engine({"profile": "nvidia_l40s-12c", "vgpu_type": "nvidia_l40s-12c"})
    assert unknown.rate == pytest.approx(L40S_RESNET50)
    assert "not known" in unknown.device


def test_engine_for_a_mig_slice_is_unchanged():
    e = _engine({"profile": "3g.40gb", "vgpu_type": "grid_a100d-3-40c",
                 "placement": {"gpu": "0000:3b:00.0", "mig_slot": 4}})  # fmt: skip
    assert e.rate == pytest.approx(FULL_GPU_RATE["resnet50"] * 3 / 7)
    assert not e.time_sliced
    assert "SIMULATED MIG slice (3 of 7 compute slices)" in e.device
    # a count on a MIG slice is no time slicing: the slice is the VM's alone
    assert _engine({"profile": "3g.40gb", "placement": {"gpu_vgpus": 3}}).rate == e.rate
    assert _engine({}).rate == FULL_GPU_RATE["resnet50"]  # no vGPU said: the whole GPU


def test_the_reference_backend_builds_the_engine_from_the_runs_metadata():
    from miglab.mlperf.guest.backends.reference import ReferenceBackend

    s = SimpleNamespace(meta={"profile": "nvidia_l40s-12c", "vgpu_type": "nvidia_l40s-12c",
                              "placement": {"gpu": "0000:3b:00.0", "gpu_vgpus": 4}})  # fmt: skip
    info = SimpleNamespace(name="resnet50")
    eff = {"performance_sample_count": 64}
    engine = ReferenceBackend._slice_model_engine(None, s, info, eff, 8)
    assert engine.rate == pytest.approx(L40S_RESNET50 / 4)
    assert engine.sample_count == 64 and engine.max_batch == 8


def test_a_run_of_a_time_sliced_vgpu_is_valid_and_says_its_share(tmp_path):
    """The command a simulated L40S guest runs: 24c, two vGPUs on its GPU, Offline; the expected
    QPS is the model's rate, and the run says what was modelled."""
    pytest.importorskip("mlperf_loadgen")
    placement = json.dumps({"gpu": "0000:5e:00.0", "mig_slot": None, "gpu_vgpus": 2})
    res = subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.run", "--backend", "reference",
         "--sut", "slice-model", "--benchmark", "resnet50", "--scenario", "Offline",
         "--profile", "nvidia_l40s-24c", "--vgpu-type", "nvidia_l40s-24c",
         "--placement", placement, "--out", str(tmp_path / "vm1"), "--run", "1",
         "--simulated-lab", "--min-duration-ms", "300", "--min-query-count", "1"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    meta_path = next(tmp_path.glob("vm1/resnet50/Offline/performance/run_1/miglab_run.json"))
    meta = json.loads(meta_path.read_text())
    assert meta["loadgen"]["valid"] is True
    assert "SIMULATED time-sliced vGPU (1/2 of the GPU" in meta["device"]["name"]
    assert meta["raw_throughput"] == pytest.approx(L40S_RESNET50 / 2)
    assert meta["placement"]["gpu_vgpus"] == 2
