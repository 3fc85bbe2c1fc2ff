"""ImageNet 2012 validation for ResNet50 v1.5: a folder of JPEGs and ``val_map.txt``
(``<file name> <class 0..999>`` per line; the QSL's sample ``i`` is line ``i``).

Preprocessing follows the MLCommons reference, mlcommons/inference
``vision/classification_and_detection/python/dataset.py`` and ``imagenet.py`` (commit
b66003e10e2db4b8c36a448b0545ec90fcc6e9e9):

* ``vgg`` (``pre_process_vgg``; the MLCommons ONNX and TensorFlow ResNet50): decode as RGB;
  resize with the aspect ratio kept so that the shorter side is ``int(100 * 224 / 87.5)`` = 256
  and the longer ``int(256 * long / short)`` (``resize_with_aspectratio``), with OpenCV's
  ``INTER_AREA``; center crop 224 x 224 (offsets ``int((side - 224) / 2)``); float32; subtract
  the per-channel means 123.68, 116.78, 103.94 (RGB, 0..255 scale, no division); NCHW for ONNX
  (the reference's ``need_transpose``) or NHWC.
* ``pytorch`` (``pre_process_imagenet_pytorch``; torchvision's ResNet50 weights): Pillow image,
  torchvision ``resize(256, BILINEAR)`` (shorter side 256, longer ``int(256 * long / short)``,
  Pillow's antialiased bilinear), ``center_crop(224)`` (offsets ``int(round((side - 224) / 2))``),
  ``to_tensor`` (/255), ``normalize`` (mean 0.485, 0.456, 0.406; std 0.229, 0.224, 0.225), NCHW.
  Done here with Pillow and numpy: the same arithmetic as torchvision's PIL path, no torch needed.

How the images are read and resized (the reference uses ``cv2.imread`` and ``cv2.resize``):

* JPEG decoding is Pillow's (libjpeg-turbo, like OpenCV's wheels), converted to RGB; grayscale
  and CMYK files become RGB as ``cv2.imread``'s ``IMREAD_COLOR`` makes them BGR (a CMYK
  conversion may differ by a grey level).
* ``INTER_AREA``: with ``opencv-python-headless`` installed (``cv2`` importable) OpenCV itself
  resizes, exactly as the reference. Without it, :func:`resize_area` computes OpenCV's formula in
  numpy: downscaling averages the source pixels each output pixel covers, weighted by the
  covered area (``resizeArea_``; integer factors round half up as ``resizeAreaFast_`` does, the
  rest to nearest even as ``cvRound``); enlarging (an image under 256 pixels on its shorter side)
  uses OpenCV's area-mode bilinear weights. OpenCV computes in float32 and, when enlarging,
  11-bit fixed point, so a pixel may differ by one grey level from it (about 0.4 % of 0..255
  before the mean subtraction); the run's metadata says which resizer ran (``resize``), and the
  cache keeps the two apart. Pillow's own ``BOX`` filter is not used: it gives border pixels
  all-or-nothing weights, not OpenCV's fractional area.

Preprocessed samples are cached as ``.npy`` (as the reference caches them), one per image, under
``<cache dir>/imagenet/<preprocessing>-<layout>-<resizer>/``, written atomically; a later run
loads them instead of decoding again.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from miglab.mlperf.guest.datasets.base import DatasetError, SampleSource, read_accuracy_entries

__all__ = [
    "PREPROCESSING",
    "ImagenetSource",
    "center_crop_offsets",
    "preprocess_pytorch",
    "preprocess_vgg",
    "read_val_map",
    "resize_area",
    "resized_size_pytorch",
    "resized_size_vgg",
]

PREPROCESSING = ("vgg", "pytorch")
LAYOUTS = ("NCHW", "NHWC")
CROP = 224
VGG_MEANS = np.array([123.68, 116.78, 103.94], dtype=np.float32)
TORCH_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
TORCH_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
INPUT_NAME = "images"  # the name of the one input a batch holds (mapped onto the model's)


def read_val_map(path: str | Path) -> list[tuple[str, int]]:
    """``val_map.txt``: ``[(file name, class)]`` in file order; DatasetError naming the first
    bad line (a name and a class 0..999 separated by white space, as the reference splits it)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read the image list ({exc})") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cols = re.split(r"\s+", line.strip())
        if len(cols) != 2 or not cols[1].isdigit() or not 0 <= int(cols[1]) <= 999:
            raise DatasetError(f"{path}:{n}: not '<file> <class 0..999>': {line.strip()[:80]!r}")
        name = cols[0]
        if name.startswith("/") or ".." in Path(name).parts:
            raise DatasetError(f"{path}:{n}: {name!r} is outside the image folder")
        out.append((name, int(cols[1])))
    if not out:
        raise DatasetError(f"{path}: no images listed")
    return out


def resized_size_vgg(width: int, height: int) -> tuple[int, int]:
    """``resize_with_aspectratio(img, 224, 224, scale=87.5)``'s output ``(width, height)``."""
    side = int(100.0 * CROP / 87.5)  # 256
    if height > width:
        return side, int(side * height / width)
    return int(side * width / height), side


def resized_size_pytorch(width: int, height: int) -> tuple[int, int]:
    """torchvision ``resize(img, 256)``'s output ``(width, height)`` (shorter side 256)."""
    short, long = min(width, height), max(width, height)
    new_long = int(256 * long / short)
    return (256, new_long) if width <= height else (new_long, 256)


def center_crop_offsets(width: int, height: int, torchvision: bool = False) -> tuple[int, int]:
    """``(left, top)`` of the 224 x 224 crop: the reference's ``int((side - 224) / 2)``, or
    torchvision's ``int(round((side - 224) / 2.0))``."""
    if torchvision:
        return int(round((width - CROP) / 2.0)), int(round((height - CROP) / 2.0))
    return int((width - CROP) / 2), int((height - CROP) / 2)


def _area_weights(src: int, dst: int) -> np.ndarray:
    """``(dst, src)`` weights of OpenCV's INTER_AREA along one axis when shrinking: output pixel
    ``j`` covers source ``[j * s, (j + 1) * s)``, ``s = src / dst``; each source pixel weighs
    its covered length over ``s``."""
    scale = src / dst
    edges = np.arange(dst + 1, dtype=np.float64) * scale
    lo, hi = edges[:-1, None], edges[1:, None]
    px = np.arange(src, dtype=np.float64)[None, :]
    covered = np.clip(np.minimum(hi, px + 1) - np.maximum(lo, px), 0.0, None)
    return covered / scale


def _area_enlarge_weights(src: int, dst: int) -> np.ndarray:
    """``(dst, src)`` weights of OpenCV's INTER_AREA when not shrinking on both axes
    (``cv::resize``'s ``area_mode`` bilinear: ``sx = floor(dx * s)``, ``fx = (dx + 1) - (sx + 1)
    / s``, 0 when not positive, else its fractional part)."""
    scale = src / dst
    w = np.zeros((dst, src), dtype=np.float64)
    for dx in range(dst):
        sx = int(np.floor(dx * scale))
        fx = (dx + 1) - (sx + 1) / scale
        fx = 0.0 if fx <= 0 else fx - np.floor(fx)
        sx0, sx1 = min(max(sx, 0), src - 1), min(max(sx + 1, 0), src - 1)
        w[dx, sx0] += 1.0 - fx
        w[dx, sx1] += fx
    return w


def resize_area(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """OpenCV's ``cv2.resize(img, (width, height), interpolation=cv2.INTER_AREA)`` of a uint8
    ``HxWxC`` image, computed in numpy (see the module docstring for how close it is)."""
    h, w = img.shape[:2]
    if (w, h) == (width, height):
        return img.copy()
    shrinking = w >= width and h >= height
    weights = _area_weights if shrinking else _area_enlarge_weights
    wy, wx = weights(h, height), weights(w, width)
    x = img.astype(np.float64)
    out = np.einsum("yh,hwc->ywc", wy, x)
    out = np.einsum("xw,ywc->yxc", wx, out)
    # resizeAreaFast_ (integer factors) rounds its integer sums half up; the rest goes through
    # saturate_cast<uchar>, cvRound: half to even
    integer_factors = shrinking and w % width == 0 and h % height == 0
    out = np.floor(out + 0.5) if integer_factors else np.rint(out)
    return np.clip(out, 0, 255).astype(np.uint8)


def _cv2():
    try:
        import cv2  # opencv-python-headless: the reference's resizer, when installed
    except ImportError:
        return None
    return cv2


def decode_rgb(path: str | Path):
    """A JPEG (any format Pillow reads) as an RGB Pillow image."""
    from PIL import Image

    with Image.open(path) as im:
        return im.convert("RGB")


def preprocess_vgg(rgb: np.ndarray, layout: str = "NCHW", resizer: str = "numpy") -> np.ndarray:
    """``pre_process_vgg`` of an RGB uint8 ``HxWx3`` image: float32 224 x 224 x 3 with the means
    subtracted, in ``layout`` (one sample: ``CHW`` or ``HWC``). ``resizer``: ``cv2`` or
    ``numpy`` (:func:`resize_area`)."""
    h, w = rgb.shape[:2]
    new_w, new_h = resized_size_vgg(w, h)
    if resizer == "cv2":
        cv2 = _cv2()
        if cv2 is None:
            raise DatasetError("the cv2 resizer needs opencv-python-headless")
        img = cv2.resize(rgb, (new_w, new_h), interpolation=cv2.INTER_AREA)
    else:
        img = resize_area(rgb, new_w, new_h)
    left, top = center_crop_offsets(new_w, new_h)
    img = np.asarray(img[top : top + CROP, left : left + CROP], dtype=np.float32)
    img -= VGG_MEANS
    return np.ascontiguousarray(img.transpose(2, 0, 1) if layout == "NCHW" else img)


def preprocess_pytorch(image, layout: str = "NCHW") -> np.ndarray:
    """``pre_process_imagenet_pytorch`` of an RGB Pillow image: float32 224 x 224 x 3,
    normalized with ImageNet's mean and std, in ``layout`` (one sample)."""
    from PIL import Image

    new_w, new_h = resized_size_pytorch(*image.size)
    if (new_w, new_h) != image.size:
        image = image.resize((new_w, new_h), Image.BILINEAR)
    left, top = center_crop_offsets(new_w, new_h, torchvision=True)
    image = image.crop((left, top, left + CROP, top + CROP))
    x = np.asarray(image, dtype=np.float32) / 255.0
    x = (x - TORCH_MEAN) / TORCH_STD
    return np.ascontiguousarray(x.transpose(2, 0, 1) if layout == "NCHW" else x)


class ImagenetSource(SampleSource):
    """ImageNet validation images as a QSL (see the module docstring)."""

    name = "imagenet2012-val"

    def __init__(
        self,
        folder: str | Path,
        val_map: str | Path | None = None,
        *,
        preprocessing: str = "vgg",
        layout: str = "NCHW",
        cache_dir: str | Path | None = None,
        count: int | None = None,
        threads: int | None = None,
        resizer: str | None = None,
    ):
        super().__init__()
        if preprocessing not in PREPROCESSING:
            raise DatasetError(
                f"unknown preprocessing {preprocessing!r} (use {', '.join(PREPROCESSING)})"
            )
        if layout not in LAYOUTS:
            raise DatasetError(f"unknown layout {layout!r} (use {', '.join(LAYOUTS)})")
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise DatasetError(f"{folder}: no such image folder")
        self.val_map = Path(val_map) if val_map else self.folder / "val_map.txt"
        entries = read_val_map(self.val_map)
        self.total_listed = len(entries)
        if count is not None:
            if count < 1:
                raise DatasetError(f"sample count must be at least 1, got {count}")
            entries = entries[:count]
        missing = [n for n, _ in entries if not (self.folder / n).is_file()]
        if missing:
            raise DatasetError(
                f"{self.folder}: {len(missing)} image(s) of {self.val_map.name} missing, e.g. "
                + ", ".join(missing[:3])
            )
        self._entries = entries
        self._labels = np.array([c for _, c in entries], dtype=np.int64)
        self.preprocessing = preprocessing
        self.layout = layout
        if preprocessing == "vgg":
            self.resizer = resizer or ("cv2" if _cv2() is not None else "numpy")
        else:
            self.resizer = "pillow"
        variant = f"{preprocessing}-{layout}-{self.resizer}"
        self.cache = Path(cache_dir) / "imagenet" / variant if cache_dir else None
        self.threads = max(1, threads or min(16, os.cpu_count() or 1))

    @property
    def count(self) -> int:
        return len(self._entries)

    def labels(self) -> np.ndarray:
        return self._labels

    def input_names(self) -> tuple[str, ...]:
        return (INPUT_NAME,)

    def _preprocess(self, path: Path) -> np.ndarray:
        image = decode_rgb(path)
        if self.preprocessing == "pytorch":
            return preprocess_pytorch(image, self.layout)
        return preprocess_vgg(np.asarray(image), self.layout, self.resizer)

    def read(self, index: int) -> dict[str, np.ndarray]:
        name = self._entries[index][0]
        src = self.folder / name
        cached = self.cache / f"{name}.npy" if self.cache else None
        if cached is not None and cached.is_file():
            try:
                arr = np.load(cached, allow_pickle=False)
                if arr.shape == self.sample_shape and arr.dtype == np.float32:
                    return {INPUT_NAME: arr}
            except (OSError, ValueError):
                pass  # a damaged cache entry is made again
        try:
            arr = self._preprocess(src)
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{src}: cannot read this image ({exc})") from None
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp.npy")
            np.save(tmp, arr)
            os.replace(tmp, cached)
        return {INPUT_NAME: arr}

    @property
    def sample_shape(self) -> tuple[int, int, int]:
        return (3, CROP, CROP) if self.layout == "NCHW" else (CROP, CROP, 3)

    def load(self, indices) -> None:
        todo = [int(i) for i in indices if int(i) not in self._ram]
        if len(todo) < 2 or self.threads == 1:
            super().load(todo)
            return
        with ThreadPoolExecutor(self.threads) as pool:  # decoding and numpy release the GIL
            for i, sample in zip(todo, pool.map(self.read, todo), strict=True):
                with self._lock:
                    self._ram[i] = sample
                    self.loads += 1

    def score(self, log_path: str | Path, dtype, benchmark: str = "resnet50") -> dict:
        """Top-1 as ``accuracy-imagenet.py`` computes it: each distinct logged sample's class
        (one value of ``dtype``, 0-based: the SUT applied the model's offset) against its
        ``val_map.txt`` class."""
        got = read_accuracy_entries(log_path, dtype)
        good = 0
        for idx, pred in got.items():
            if idx >= self.count:
                raise DatasetError(f"{log_path}: qsl_idx {idx} beyond the {self.count} images")
            good += int(int(pred[0]) == int(self._labels[idx]))
        total = len(got)
        return {
            "samples": total,
            "good": good,
            "total": total,
            "top1": good / total if total else None,
        }

    def describe(self) -> dict:
        return {
            "dataset": self.name,
            "folder": str(self.folder),
            "val_map": str(self.val_map),
            "samples": self.count,
            "listed": self.total_listed,
            "preprocessing": self.preprocessing,
            "layout": self.layout,
            "resize": {
                "cv2": "cv2.INTER_AREA",
                "numpy": "numpy, OpenCV INTER_AREA's formula",
                "pillow": "Pillow BILINEAR (torchvision's PIL path)",
            }[self.resizer],
            "cache": str(self.cache) if self.cache else None,
        }
