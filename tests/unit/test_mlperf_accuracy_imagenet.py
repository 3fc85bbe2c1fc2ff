"""ResNet50 accuracy on ImageNet (issue 17, item 6): the MLCommons preprocessing, the ONNX
model's class offset and int64 output, per-query loading, ``accuracy.txt`` in the submission
checker's format, and an AccuracyOnly run gated by the target.

Everything is made here: a few JPEGs (Pillow), a ``val_map.txt``, a tiny ONNX model shaped like
the MLCommons one (NCHW float input, ``ArgMax:0`` int64 over 1001 classes with background at
0, plus a softmax). Expected numbers are computed independently (block means for an integer
resize, loops for area weights, the checker's regexes copied from its source).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from miglab.core.accuracy import accuracy_text, judge, parse_accuracy_text
from miglab.mlperf.guest.datasets.base import DatasetError, read_accuracy_entries
from miglab.mlperf.guest.datasets.imagenet import (
    ImagenetSource,
    center_crop_offsets,
    preprocess_pytorch,
    preprocess_vgg,
    read_val_map,
    resize_area,
    resized_size_pytorch,
    resized_size_vgg,
)

# tools/submission/submission_checker/constants.py ACC_PATTERN["acc"] (mlcommons/inference
# b66003e10e2db4b8c36a448b0545ec90fcc6e9e9), copied: the test must not take it from the code
CHECKER_ACC = r"^(?:\{\"accuracy|accuracy)[\": ]*=?\s*([\d\.]+).*"
VGG_MEANS = np.array([123.68, 116.78, 103.94], dtype=np.float32)
# one colour per image; each image's class in val_map.txt
COLOURS = [(250, 10, 10), (10, 250, 10), (10, 10, 250), (240, 240, 20)]
CLASSES = [3, 17, 998, 0]


def write_jpeg(path, size, colour=None, seed=0):
    """A JPEG of ``size`` (w, h): a solid colour, or seeded noise."""
    w, h = size
    if colour is None:
        data = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    else:
        data = np.empty((h, w, 3), dtype=np.uint8)
        data[:] = colour
    Image.fromarray(data).save(path, quality=95)
    return path


@pytest.fixture
def imagenet(tmp_path):
    """A folder of four JPEGs (sizes that resize by odd factors) and its val_map.txt."""
    folder = tmp_path / "val"
    folder.mkdir()
    sizes = [(500, 375), (333, 500), (256, 300), (640, 480)]
    lines = []
    for k, (colour, size) in enumerate(zip(COLOURS, sizes, strict=True)):
        name = f"ILSVRC2012_val_{k + 1:08d}.JPEG"
        write_jpeg(folder / name, size, colour)
        lines.append(f"{name} {CLASSES[k]}")
    (folder / "val_map.txt").write_text("\n".join(lines) + "\n")
    return folder


# --- sizes, crops, resizing ------------------------------------------------------------------
def test_resize_sizes_and_crop_offsets_follow_the_reference():
    # resize_with_aspectratio: shorter side int(100 * 224 / 87.5) = 256, longer truncated
    assert resized_size_vgg(500, 375) == (341, 256)
    assert resized_size_vgg(333, 500) == (256, 384)
    assert resized_size_pytorch(500, 375) == (341, 256)
    # the reference truncates (int), torchvision rounds half to even (round)
    assert center_crop_offsets(343, 256) == (59, 16)
    assert center_crop_offsets(343, 256, torchvision=True) == (60, 16)
    assert center_crop_offsets(341, 256, torchvision=True) == (58, 16)


def _area_by_loops(img, width, height):
    """INTER_AREA by its definition: every output pixel the area-weighted mean of the source
    pixels it covers (float, not rounded)."""
    h, w = img.shape[:2]
    sy, sx = h / height, w / width
    out = np.zeros((height, width, img.shape[2]))
    for y in range(height):
        for x in range(width):
            acc = np.zeros(img.shape[2])
            for yy in range(h):
                oy = max(0.0, min(yy + 1, (y + 1) * sy) - max(yy, y * sy))
                if oy == 0:
                    continue
                for xx in range(w):
                    ox = max(0.0, min(xx + 1, (x + 1) * sx) - max(xx, x * sx))
                    acc += oy * ox * img[yy, xx]
            out[y, x] = acc / (sy * sx)
    return out


def test_area_resize_is_the_area_weighted_mean():
    img = np.random.default_rng(1).integers(0, 256, (7, 11, 3), dtype=np.uint8)
    got = resize_area(img, 4, 3)
    want = _area_by_loops(img.astype(np.float64), 4, 3)
    assert got.dtype == np.uint8 and got.shape == (3, 4, 3)
    assert np.abs(got.astype(np.float64) - want).max() <= 0.5 + 1e-9


def test_area_resize_by_an_integer_factor_rounds_block_sums_half_up():
    img = np.random.default_rng(2).integers(0, 256, (8, 6, 3), dtype=np.uint8)
    sums = img.astype(np.int64).reshape(4, 2, 3, 2, 3).sum(axis=(1, 3))
    assert np.array_equal(resize_area(img, 3, 4), ((sums + 2) // 4).astype(np.uint8))


def test_area_resize_matches_opencv_when_installed():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(3)
    for shape, size in (((375, 500, 3), (341, 256)), ((200, 150, 3), (256, 341))):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        ours = resize_area(img, *size).astype(int)
        theirs = cv2.resize(img, size, interpolation=cv2.INTER_AREA).astype(int)
        assert np.abs(ours - theirs).max() <= 1


# --- preprocessing -------------------------------------------------------------------------
def test_vgg_preprocessing_numbers(tmp_path):
    """512 x 768 shrinks by exactly 2 to 256 x 384: block means, crop at (16, 80), means off,
    NCHW -- computed here without the module's resizer."""
    path = write_jpeg(tmp_path / "a.jpg", (512, 768), seed=4)
    rgb = np.asarray(Image.open(path).convert("RGB"))
    sums = rgb.astype(np.int64).reshape(384, 2, 256, 2, 3).sum(axis=(1, 3))
    resized = ((sums + 2) // 4).astype(np.float32)
    want = (resized[80:304, 16:240] - VGG_MEANS).transpose(2, 0, 1)
    got = preprocess_vgg(rgb, "NCHW", resizer="numpy")
    assert got.shape == (3, 224, 224) and got.dtype == np.float32
    assert np.array_equal(got, want)
    assert np.array_equal(preprocess_vgg(rgb, "NHWC", resizer="numpy"), want.transpose(1, 2, 0))


def test_pytorch_preprocessing_numbers(tmp_path):
    """torchvision's steps: Pillow bilinear to shorter side 256, crop at round(), /255,
    ImageNet mean and std, NCHW."""
    path = write_jpeg(tmp_path / "b.jpg", (343, 300), seed=5)
    image = Image.open(path).convert("RGB")
    resized = np.asarray(image.resize((292, 256), Image.BILINEAR), dtype=np.float64)
    left, top = round((292 - 224) / 2), round((256 - 224) / 2)
    crop = resized[top : top + 224, left : left + 224] / 255.0
    want = ((crop - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]).transpose(2, 0, 1)
    got = preprocess_pytorch(image, "NCHW")
    assert got.shape == (3, 224, 224) and got.dtype == np.float32
    assert np.allclose(got, want, atol=1e-5)


# --- the dataset ---------------------------------------------------------------------------
def test_val_map_is_read_in_order_and_bad_lines_are_named(tmp_path):
    good = tmp_path / "val_map.txt"
    good.write_text("a.JPEG 65\nb.JPEG\t970\n\n")
    assert read_val_map(good) == [("a.JPEG", 65), ("b.JPEG", 970)]
    for text, why in (("a.JPEG cat\n", ":1: not"), ("a.JPEG 1000\n", ":1: not"), ("", "no images")):
        good.write_text(text)
        with pytest.raises(DatasetError, match=why):
            read_val_map(good)
    good.write_text("../etc/passwd 1\n")
    with pytest.raises(DatasetError, match="outside the image folder"):
        read_val_map(good)


def test_missing_images_are_refused_not_skipped(imagenet):
    (imagenet / "ILSVRC2012_val_00000002.JPEG").unlink()
    with pytest.raises(DatasetError, match="1 image.* missing, e.g. ILSVRC2012_val_00000002"):
        ImagenetSource(imagenet)


def test_samples_are_loaded_per_query_into_host_memory_and_cached(imagenet, tmp_path):
    cache = tmp_path / "cache"
    src = ImagenetSource(imagenet, cache_dir=cache, resizer="numpy", threads=2)
    assert src.count == 4 and list(src.labels()) == CLASSES
    assert src.loaded == 0  # nothing read until LoadGen asks
    src.load([0, 2])
    assert src.loaded == 2 and src.loads == 2
    batch = src.batch([2, 0])
    assert batch["images"].shape == (2, 3, 224, 224)
    src.unload([0, 2])
    assert src.loaded == 0
    cached = sorted(p.name for p in (cache / "imagenet" / "vgg-NCHW-numpy").iterdir())
    assert cached == ["ILSVRC2012_val_00000001.JPEG.npy", "ILSVRC2012_val_00000003.JPEG.npy"]
    # a second source reads the cache, not the JPEG
    again = ImagenetSource(imagenet, cache_dir=cache, resizer="numpy")
    again._preprocess = lambda path: pytest.fail(f"decoded {path} again")
    assert np.array_equal(again.batch([0])["images"][0], batch["images"][1])


def test_accuracy_log_int64_classes_are_read_as_int64(tmp_path):
    """The ONNX SUT logs int64 classes: read as int32 each would be two values (the old bug)."""
    log = tmp_path / "mlperf_log_accuracy.json"
    entries = [
        {"seq_id": k, "qsl_idx": k, "data": np.array([c], dtype=np.int64).tobytes().hex().upper()}
        for k, c in enumerate([3, 17, 5, 0])
    ]
    entries.append(dict(entries[0], seq_id=9))  # a repeated sample counts once
    log.write_text(json.dumps(entries))
    got = read_accuracy_entries(log, "int64")
    assert {k: int(v[0]) for k, v in got.items()} == {0: 3, 1: 17, 2: 5, 3: 0}
    with pytest.raises(DatasetError, match="holds 8 bytes, not 1 x int32"):
        read_accuracy_entries(log, "int32")


def test_top1_scoring_and_accuracy_txt_in_the_checkers_format(imagenet, tmp_path):
    src = ImagenetSource(imagenet)
    log = tmp_path / "mlperf_log_accuracy.json"
    preds = [3, 17, 5, 0]  # three of four right
    log.write_text(
        json.dumps(
            [
                {"qsl_idx": k, "data": np.array([p], dtype=np.int64).tobytes().hex()}
                for k, p in enumerate(preds)
            ]
        )
    )
    scores = src.score(log, "int64")
    assert scores == {"samples": 4, "good": 3, "total": 4, "top1": 0.75}
    text = accuracy_text("resnet50", scores)
    assert text == "accuracy=75.000%, good=3, total=4\n"
    assert float(re.match(CHECKER_ACC, text.splitlines()[0]).group(1)) == 75.0
    assert parse_accuracy_text(text, "resnet50") == 75.0
    verdict = judge("resnet50", 75.0)
    assert verdict["target"] == pytest.approx(76.46 * 0.99) and verdict["passed"] is False
    assert judge("resnet", 75.7)["passed"] is True


# --- the ONNX Runtime SUT: offset, output type, per-query feeding -----------------------------
def _class_model(path, centroids: dict[int, np.ndarray], argmax_output=True):
    """An ONNX model shaped like the MLCommons ResNet50: input N x 3 x 224 x 224 float,
    ``ArgMax:0`` (int64, N) over 1001 logits and ``softmax_tensor:0``. It takes each image's
    channel means and answers the model class whose centroid is nearest (logit 2 m.c - |c|^2)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = np.zeros((3, 1001), dtype=np.float32)
    b = np.full(1001, -1e9, dtype=np.float32)
    for cls, c in centroids.items():
        w[:, cls] = 2 * c
        b[cls] = -float(c @ c)
    nodes = [
        helper.make_node("GlobalAveragePool", ["input_tensor:0"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["means"], axis=1),
        helper.make_node("Gemm", ["means", "w", "b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["softmax_tensor:0"], axis=1),
    ]
    outputs = [helper.make_tensor_value_info("softmax_tensor:0", TensorProto.FLOAT, ["N", 1001])]
    if argmax_output:
        nodes.append(helper.make_node("ArgMax", ["logits"], ["ArgMax:0"], axis=1, keepdims=0))
        outputs.insert(0, helper.make_tensor_value_info("ArgMax:0", TensorProto.INT64, ["N"]))
    graph = helper.make_graph(
        nodes,
        "resnet_like",
        [helper.make_tensor_value_info("input_tensor:0", TensorProto.FLOAT, ["N", 3, 224, 224])],
        outputs,
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _centroids(imagenet, model_class_of=lambda label: label + 1):
    """Each image's preprocessed channel means, keyed by the model class it should get (the
    MLCommons model's class = ImageNet class + 1)."""
    src = ImagenetSource(imagenet, resizer="numpy")
    return {
        model_class_of(int(src.labels()[k])): src.read(k)["images"].mean(axis=(1, 2))
        for k in range(src.count)
    }


def test_onnx_argmax_output_is_shifted_by_minus_one_to_imagenet_classes(imagenet, tmp_path):
    pytest.importorskip("onnxruntime")
    from miglab.mlperf.guest.sut.onnxrt import OnnxRuntimeEngine

    model = _class_model(tmp_path / "m.onnx", _centroids(imagenet))
    src = ImagenetSource(imagenet, resizer="numpy")
    engine = OnnxRuntimeEngine(model, sample_count=4, source=src, task="classify")
    out = engine.wait(engine.submit(np.arange(4)))
    assert out.dtype == np.int64 and list(out) == CLASSES  # model said CLASSES + 1
    assert engine.log_dtype == "int64"
    # a 1001-logit output without ArgMax: argmax - 1 too; 1000 logits: no offset
    model2 = _class_model(tmp_path / "m2.onnx", _centroids(imagenet), argmax_output=False)
    e2 = OnnxRuntimeEngine(model2, sample_count=4, source=src, task="classify")
    assert list(e2.wait(e2.submit(np.arange(4)))) == CLASSES
    e3 = OnnxRuntimeEngine(model, sample_count=4, source=src, task="classify", label_offset=0)
    assert list(e3.wait(e3.submit(np.arange(4)))) == [c + 1 for c in CLASSES]


def test_onnx_sut_feeds_one_batch_at_a_time(imagenet, tmp_path):
    """What reaches ONNX Runtime (the device) is the batch's rows, never the set."""
    pytest.importorskip("onnxruntime")
    from miglab.mlperf.guest.sut.onnxrt import OnnxRuntimeEngine

    model = _class_model(tmp_path / "m.onnx", _centroids(imagenet))
    src = ImagenetSource(imagenet, resizer="numpy")
    engine = OnnxRuntimeEngine(model, sample_count=4, source=src, task="classify")
    moved = []

    class RecordingSession:
        def __init__(self, real):
            self.real = real

        def run(self, names, feed):
            moved.append({k: v.shape for k, v in feed.items()})
            return self.real.run(names, feed)

    engine.session = RecordingSession(engine.session)
    src.load([1, 3])  # LoadGen's load_samples_to_ram
    engine.wait(engine.submit(np.array([3])))
    engine.wait(engine.submit(np.array([1, 3])))
    assert moved == [{"input_tensor:0": (1, 3, 224, 224)}, {"input_tensor:0": (2, 3, 224, 224)}]
    assert src.loaded == 2  # host memory holds what LoadGen loaded, no more


# --- end to end: python -m miglab.mlperf.run, AccuracyOnly --------------------------------------
def run_cmd(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.run", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _accuracy_run(imagenet, tmp_path, model, *extra):
    return run_cmd(
        "--sut", "onnxruntime", "--model", model, "--benchmark", "resnet50",
        "--mode", "AccuracyOnly", "--dataset-path", imagenet, "--cache-dir", tmp_path / "cache",
        "--out", tmp_path / "vm1", "--raw-seconds", "0", "--target-qps", "100",
        "--performance-sample-count", "4", "--threads", "1", *extra,
    )  # fmt: skip


def test_accuracy_only_run_files_accuracy_txt_and_passes_the_target(imagenet, tmp_path):
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    model = _class_model(tmp_path / "m.onnx", _centroids(imagenet))
    p = _accuracy_run(imagenet, tmp_path, model)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ACCURACY PASS resnet50 Offline: acc = 100.000 % (target 75.695 %)")
    run = tmp_path / "vm1" / "resnet50" / "Offline" / "accuracy" / "run_1"
    names = {f.name for f in run.iterdir()}
    assert {
        "accuracy.txt",
        "mlperf_log_accuracy.json",
        "mlperf_log_detail.txt",
        "mlperf_log_summary.txt",
        "miglab_run.json",
        "MANIFEST.sha256",
    } <= names
    text = (run / "accuracy.txt").read_text()
    assert text == "accuracy=100.000%, good=4, total=4\n"
    assert re.match(CHECKER_ACC, text)
    meta = json.loads((run / "miglab_run.json").read_text())
    acc = meta["accuracy"]
    assert acc["passed"] is True and acc["metric"] == "acc" and acc["value"] == 100.0
    assert acc["log_dtype"] == "int64" and acc["good"] == 4 and acc["samples"] == 4
    log = run / "mlperf_log_accuracy.json"
    import hashlib

    assert acc["log_sha256"] == hashlib.sha256(log.read_bytes()).hexdigest()
    assert all(len(e["data"]) == 16 for e in json.loads(log.read_text()))  # 8 bytes: int64
    assert meta["loadgen"]["valid"] is True and meta["loadgen"]["validity"] == "PASS"
    assert meta["dataset"]["preprocessing"] == "vgg" and meta["dataset"]["layout"] == "NCHW"
    assert meta["inputs"] == "real"
    assert "MANIFEST.sha256" not in (run / "MANIFEST.sha256").read_text()


def test_accuracy_run_needs_no_target_qps_nor_a_sample_count_the_set_holds(imagenet, tmp_path):
    """What the role's accuracy round passes (no raw throughput, no target QPS, the benchmark's
    performance sample count 1024): Offline AccuracyOnly issues every sample in one query, and a
    set smaller than 1024 samples is the QSL's performance set, as the reference's QSL does
    (found on an H200 with 64 images: both stopped the run before)."""
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    model = _class_model(tmp_path / "m.onnx", _centroids(imagenet))
    p = run_cmd(
        "--sut", "onnxruntime", "--model", model, "--benchmark", "resnet50",
        "--mode", "AccuracyOnly", "--dataset-path", imagenet, "--out", tmp_path / "vm1",
        "--raw-seconds", "0", "--threads", "1",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "performance_sample_count 1024 > the 4 samples of the dataset: 4" in p.stderr
    run = tmp_path / "vm1" / "resnet50" / "Offline" / "accuracy" / "run_1"
    assert (run / "accuracy.txt").read_text() == "accuracy=100.000%, good=4, total=4\n"
    detail = (run / "mlperf_log_detail.txt").read_text()
    assert '"key": "effective_performance_sample_count", "value": 4,' in detail


def test_accuracy_below_the_target_fails_the_run(imagenet, tmp_path):
    """Without the -1 offset (the old decoding) every class is off by one: 0 %, exit 1."""
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    model = _class_model(tmp_path / "m.onnx", _centroids(imagenet))
    p = _accuracy_run(imagenet, tmp_path, model, "--label-offset", "0")
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith("ACCURACY FAIL resnet50 Offline: acc = 0.000 %")
    assert "accuracy 0.000 % is below the target 75.695 % (acc, 76.46 x 0.99)" in p.stderr
    run = tmp_path / "vm1" / "resnet50" / "Offline" / "accuracy" / "run_1"
    meta = json.loads((run / "miglab_run.json").read_text())
    assert meta["accuracy"]["passed"] is False and meta["loadgen"]["valid"] is False
    assert (run / "accuracy.txt").read_text().startswith("accuracy=0.000%, good=0, total=4")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--squad-json", "x.json", "--vocab", "v.txt"], "resnet50 takes ImageNet"),
        (["--dataset", "d.npz"], "--dataset and --dataset-path: give one dataset"),
        (["--dataset-count", "0"], "sample count must be at least 1"),
    ],
)
def test_bad_dataset_options_are_one_error_line(imagenet, tmp_path, extra, message):
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    model = _class_model(tmp_path / "m.onnx", _centroids(imagenet))
    args = [
        "--sut", "onnxruntime", "--model", model, "--benchmark", "resnet50",
        "--mode", "AccuracyOnly", "--out", tmp_path / "vm1", "--raw-seconds", "0",
    ]  # fmt: skip
    if extra[0] == "--dataset":
        np.savez(tmp_path / "d.npz", images=np.zeros((1, 3, 224, 224), np.float32))
        extra = ["--dataset", tmp_path / "d.npz"]
    if extra[0] != "--squad-json":
        args += ["--dataset-path", imagenet]
    p = run_cmd(*args, *extra)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and message in lines[-1], p.stderr
    assert "Traceback" not in p.stderr


def test_aggregate_and_report_judge_accuracy_runs(imagenet, tmp_path):
    """The results side reads accuracy.txt with the checker's pattern and judges it against the
    target itself: a passing and a failing AccuracyOnly run beside one performance run."""
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    from miglab.mlperf.results.aggregate import aggregate_results
    from miglab.mlperf.results.report import write_report

    model = _class_model(tmp_path / "m.onnx", _centroids(imagenet))
    vm = tmp_path / "results" / "lab" / "s1" / "vm1"
    common = ["--sut", "onnxruntime", "--model", model, "--benchmark", "resnet50",
              "--dataset-path", imagenet, "--out", vm, "--raw-seconds", "0",
              "--performance-sample-count", "4", "--threads", "1"]  # fmt: skip
    perf = run_cmd(*common, "--min-duration-ms", "0", "--min-query-count", "64",
                   "--target-qps", "1000")  # fmt: skip
    assert perf.returncode == 0, perf.stderr
    good = run_cmd(*common, "--mode", "AccuracyOnly", "--target-qps", "100")
    bad = run_cmd(*common, "--mode", "AccuracyOnly", "--target-qps", "100", "--run", "2",
                  "--label-offset", "0")  # fmt: skip
    assert (good.returncode, bad.returncode) == (0, 1), good.stderr + bad.stderr
    agg = aggregate_results(tmp_path / "results")
    rows = [(r.run, r.metric, r.value, r.verdict) for r in agg.accuracy]
    assert rows == [(1, "acc", 100.0, "PASS"), (2, "acc", 0.0, "FAIL")]
    assert agg.as_json()["accuracy"][1]["target"] == pytest.approx(75.6954)
    assert len(agg.groups) == 1 and agg.groups[0].mlperf_scenario == "Offline"  # not counted
    write_report(agg, tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Accuracy" in md
    assert "| s1 | vm1 | resnet50 | Offline | run_2 | acc | 0.000 % | 75.695 % | FAIL |" in md
