"""The torch SUT's precision option (``--precision fp8``, issue 6) on the CPU.

The option's plumbing (run command -> settings -> backend checks), the GPU bench's plan and
command line, and, where torch is installed, the per-row FP8 quantization and the FP8 BERT forward
(emulated on the CPU: the same quantized values, multiplied after dequantization) against the fp32
one on a 2-layer BERT. Nothing here needs a GPU; the torch tests skip cleanly without torch.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from miglab.mlperf.guest.backends import BackendError
from miglab.mlperf.guest.backends.reference import ReferenceBackend, ReferenceSettings
from miglab.mlperf.guest.run import build_parser, settings_from_args
from miglab.mlperf.guest.sut.torch_sut import PRECISIONS, check_precision

ROOT = Path(__file__).resolve().parents[2]


def _bench_gpu():
    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "bench" / "bench_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- pure Python ---------------------------------------------------------------------------------
def test_check_precision():
    assert PRECISIONS == ("fp16", "fp8")
    assert check_precision("bert-99", None) == "fp16"
    assert check_precision("resnet50", "fp16") == "fp16"
    assert check_precision("bert-99", "FP8") == "fp8"
    assert check_precision("bert-99.9", "fp8") == "fp8"
    with pytest.raises(ValueError, match="BERT only"):
        check_precision("resnet50", "fp8")
    with pytest.raises(ValueError, match="fast GELU"):
        check_precision("bert-99", "fp8", fast_gelu=True)
    with pytest.raises(ValueError, match="unknown precision"):
        check_precision("bert-99", "int4")


def test_run_command_plumbs_precision():
    base = ["--sut", "torch", "--benchmark", "bert-99", "--out", "x"]
    a = build_parser().parse_args([*base, "--precision", "fp8"])
    assert settings_from_args(a).precision == "fp8"
    assert settings_from_args(build_parser().parse_args(base)).precision is None
    with pytest.raises(SystemExit):
        build_parser().parse_args([*base, "--precision", "int8"])


@pytest.mark.parametrize(
    ("sut", "benchmark", "fast_gelu", "message"),
    [
        ("onnxruntime", "resnet50", False, "torch SUT only"),
        ("torch", "resnet50", False, "BERT only"),
        ("torch", "bert-99", True, "fast GELU"),
    ],
)
def test_backend_refuses_fp8_where_it_cannot_be(sut, benchmark, fast_gelu, message):
    s = ReferenceSettings(
        benchmark=benchmark, sut=sut, precision="fp8", fast_gelu=fast_gelu, device="cpu"
    )
    with pytest.raises(BackendError, match=message):
        ReferenceBackend().prepare(s)


def test_bench_plan_takes_fp8_only_when_faster():
    bench = _bench_gpu()
    p = {"batch": 128, "compile": True, "fast_gelu": False, "server_fast_gelu": True}
    data = {
        "fp8-bs128": {"batch": 128, "raw": 2500.0},
        "fp8-bs256": {"batch": 256, "raw": 2600.0},
        "fp16-bs128": {"batch": 128, "raw": 2030.0},
    }
    bench.choose_fp8(p, data)
    assert p["precision"] == "fp8" and p["batch"] == 256 and p["raw_explore"] == 2600.0
    assert p["server_fast_gelu"] is True  # the Server plan is left alone
    slow = {"batch": 128, "compile": True}
    bench.choose_fp8(
        slow, {"fp8-bs128": {"batch": 128, "raw": 1900.0}, "fp16-bs128": data["fp16-bs128"]}
    )
    assert "precision" not in slow and slow["raw_fp16_compiled"] == 2030.0
    failed = {"batch": 128}
    bench.choose_fp8(failed, {"fp8-bs128": {"batch": 128, "error": "RuntimeError: x"}})
    assert failed == {"batch": 128}


def test_bench_command_passes_precision_to_bert_offline_only(tmp_path):
    bench = _bench_gpu()
    p = {"batch": 256, "compile": True, "precision": "fp8", "server_fast_gelu": True}
    off = bench.lab_cmd(tmp_path, "bert-99", "Offline", "single", "vm1", p)
    assert off[off.index("--precision") + 1] == "fp8" and "--fast-gelu" not in off
    srv = bench.lab_cmd(tmp_path, "bert-99", "Server", "single", "vm1", p)
    assert "--precision" not in srv and "--fast-gelu" in srv
    rn = bench.lab_cmd(tmp_path, "resnet50", "Offline", "single", "vm1", p)
    assert "--precision" not in rn


# --- torch on the CPU --------------------------------------------------------------------------
def test_quantize_rows():
    torch = pytest.importorskip("torch")
    from miglab.mlperf.guest.sut.torch_sut import FP8_MAX, quantize_rows

    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 64, generator=g) * torch.logspace(-3, 3, 8)[:, None]
    x[3] = 0.0
    q, scale = quantize_rows(x)
    assert q.dtype == torch.float8_e4m3fn and q.shape == x.shape
    assert scale.dtype == torch.float32 and scale.shape == (8, 1) and scale.is_contiguous()
    back = q.float() * scale
    assert torch.all(back[3] == 0) and torch.isfinite(back).all()
    # each row uses the full e4m3 range; the error is within e4m3's half step (2**-4 relative)
    assert torch.allclose(q.float().abs().amax(dim=1)[[0, 1, 2, 4, 5, 6, 7]], torch.tensor(FP8_MAX))
    err = (back - x).abs() / x.abs().amax(dim=1, keepdim=True).clamp(min=1e-30)
    assert float(err.max()) <= 2**-4


def test_fp8_bert_forward_on_cpu_is_close_to_fp32():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import numpy as np

    from miglab.mlperf.guest.sut import torch_sut

    saved = dict(torch_sut.BERT_LARGE)
    torch_sut.BERT_LARGE.update(num_hidden_layers=2)
    try:
        kw = {"batch_sizes": [2], "sample_count": 4, "device": "cpu", "cuda_graphs": False}
        ref = torch_sut.TorchEngine("bert-99", **kw)
        fp8 = torch_sut.TorchEngine("bert-99", precision="fp8", **kw)
    finally:
        torch_sut.BERT_LARGE.clear()
        torch_sut.BERT_LARGE.update(saved)
    assert fp8.precision.startswith("fp8") and ref.precision == "fp32"
    d = fp8.describe()
    assert d["precision"] == fp8.precision and "e4m3" in d["fp8_gemms"]
    assert ref.describe()["fp8_gemms"] is None
    encoder = fp8.net.layers[0]
    assert encoder.qkv.wq.dtype == torch.float8_e4m3fn and encoder.fc2.w_scale.shape == (1, 1024)
    idx = torch.tensor([0, 3])
    with torch.inference_mode():
        a, b = ref._forward(idx), fp8._forward(idx)
    rel = float((a - b).norm() / a.norm())
    assert 0 < rel < 0.15  # FP8 changes the numbers, a little
    out = fp8.wait(fp8.submit(np.array([0, 3])))
    assert out.shape == (2, 384, 2) and np.allclose(out, b.numpy(), atol=1e-5)
