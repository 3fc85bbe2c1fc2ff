"""G4 (issue 16): plugins/module_utils/miglab_cuda.py (the CUDA a driver offers, the image for it,
libnvidia-container's requirement check), the guest filters built on it, and the container
toolkit stand-in's runtime and hook, which run the same code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from miglab_cuda import (
    CLI_REQUIREMENT_ERROR,
    CUDA_BASE_IMAGES,
    CUDA_BY_DRIVER_BRANCH,
    CudaError,
    cuda_base_image,
    cuda_image_problem,
    driver_cuda_version,
    dsl_compare_version,
    image_requirements,
    nvml_brand,
    requirement_error,
)

from testlib import ROOT, collection_module

IMAGES = ROOT / "tests" / "fixtures" / "cuda-images"
NVSMI = ROOT / "tests" / "fixtures" / "nvidia-smi"
TOOLKIT = ROOT / "miglab" / "sim" / "standins" / "container-toolkit"
MODULE_UTILS = ROOT / "plugins" / "module_utils"

CUDA_124_REFUSED = (
    "unsatisfied condition: cuda>=12.4, please update your driver to a newer version, "
    "or use an earlier cuda container"
)
# A C-series vGPU guest with the R535 driver (tests/fixtures/nvidia-smi/v100d-vgpu-guest-q.txt).
VGPU_535 = {"cuda": "12.2", "driver": "535.216.01", "brand": "VCS"}


def env(name: str) -> list[str]:
    return (IMAGES / f"cuda-{name}-base-ubuntu22.04.env").read_text().splitlines()


def require_cuda(name: str) -> str:
    return dict(image_requirements(env(name)))["NVIDIA_REQUIRE_CUDA"]


# --- what a driver offers, which image fits ----------------------------------------------------


def test_cuda_per_driver_branch():
    assert CUDA_BY_DRIVER_BRANCH == {
        470: "11.4",
        525: "12.0",
        535: "12.2",
        550: "12.4",
        570: "12.8",
        580: "13.0",
    }
    assert driver_cuda_version("535.216.01") == "12.2"
    assert driver_cuda_version("550.144.03") == "12.4"
    assert driver_cuda_version("580.159.04") == "13.0"
    assert driver_cuda_version("535.216.01", "12.2") == "12.2"
    assert driver_cuda_version("535.216.01", "N/A") == "12.2"  # not reported: the branch's
    assert driver_cuda_version("999.1", None) is None
    assert driver_cuda_version(None, None) is None


@pytest.mark.parametrize(
    ("cuda", "image"),
    [
        ("12.2", "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"),  # R535: the guest
        ("12.3", "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"),
        ("12.4", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"),
        ("12.8", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"),
        ("13.0", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"),
        ("12.0", "nvcr.io/nvidia/cuda:12.0.1-base-ubuntu22.04"),
        ("11.4", "nvcr.io/nvidia/cuda:11.4.3-base-ubuntu20.04"),
        ("11.2", None),
        (None, None),
        ("twelve", None),
    ],
)
def test_the_image_is_chosen_from_the_cuda_the_driver_offers(cuda, image):
    assert cuda_base_image(cuda) == image


def test_every_chosen_image_runs_on_every_branch_that_chooses_it():
    """The image chosen for a branch passes libnvidia-container's check of its own CUDA."""
    for branch, cuda in CUDA_BY_DRIVER_BRANCH.items():
        image = cuda_base_image(cuda)
        assert image, branch
        major_minor = image.split(":")[1].split("-")[0].rsplit(".", 1)[0]
        assert requirement_error(f"cuda>={major_minor}", cuda=cuda) is None
    assert set(CUDA_BASE_IMAGES) <= set(CUDA_BY_DRIVER_BRANCH.values())


@pytest.mark.parametrize(
    ("text", "brand"),
    [
        ("NVIDIA Virtual Compute Server", "VCS"),  # C-series vGPU (real guest capture)
        ("NVIDIA", "Nvidia"),  # H200 (real capture)
        ("Tesla", "Tesla"),
        ("NVIDIA RTX Virtual Workstation", "VWS"),
        ("Quadro RTX", "QuadroRTX"),
        ("Something New", "Unknown"),
        ("N/A", None),
        (None, None),
    ],
)
def test_libnvidia_container_brand_of_nvidia_smi_product_brand(text, brand):
    assert nvml_brand(text) == brand


# --- the requirements an image carries ---------------------------------------------------------


def test_requirements_of_the_real_images():
    assert require_cuda("12.4.1").startswith("cuda>=12.4 brand=tesla,driver>=470,driver<471 ")
    assert "brand=unknown,driver>=535,driver<536" in require_cuda("12.4.1")
    assert require_cuda("12.2.2").startswith("cuda>=12.2 brand=tesla,driver>=470,driver<471 ")
    assert "driver>=535" not in require_cuda("12.2.2")
    assert [name for name, _ in image_requirements(env("12.4.1"))] == ["NVIDIA_REQUIRE_CUDA"]


@pytest.mark.parametrize("value", ["true", "1", "t", "TRUE", "True"])
def test_nvidia_disable_require_skips_the_check(value):
    image = env("12.4.1") + [f"NVIDIA_DISABLE_REQUIRE={value}"]
    assert image_requirements(image) == []
    assert (
        cuda_image_problem(
            "i", image, driver_version="535.216.01", cuda_version="12.2", brand="VCS"
        )
        == ""
    )


@pytest.mark.parametrize("extra", ["NVIDIA_DISABLE_REQUIRE=yes", "NVIDIA_DISABLE_REQUIRE=false",
                                   "NVIDIA_DISABLE_REQUIRES=true"])  # fmt: skip
def test_what_does_not_disable_the_check(extra):
    """Go's strconv.ParseBool decides; the "REQUIRES" spelling of a forum answer is no variable."""
    assert len(image_requirements(env("12.4.1") + [extra])) == 1


def test_legacy_image_jetpack_and_several_variables():
    assert image_requirements(["CUDA_VERSION=11.0.3"]) == [("CUDA_VERSION", "cuda>=11.0")]
    assert image_requirements(["CUDA_VERSION=12"]) == [("CUDA_VERSION", "cuda>=12.0")]
    assert image_requirements(["CUDA_VERSION=12.2", "NVIDIA_REQUIRE_CUDA=cuda>=12.2"]) == [
        ("NVIDIA_REQUIRE_CUDA", "cuda>=12.2")
    ]
    assert image_requirements(
        ["NVIDIA_REQUIRE_JETPACK=csv-mounts=all", "NVIDIA_REQUIRE_ARCH=arch>=7.0", "X=1"]
    ) == [("NVIDIA_REQUIRE_ARCH", "arch>=7.0")]
    with pytest.raises(CudaError, match="invalid CUDA version 12.x"):
        image_requirements(["CUDA_VERSION=12.x"])
    with pytest.raises(CudaError, match="invalid environment variable: NOEQUALS"):
        image_requirements(["NOEQUALS"])


# --- libnvidia-container's check ---------------------------------------------------------------


def test_12_4_1_image_on_an_r535_c_series_vgpu_is_refused():
    """The issue: CUDA 12.2 < 12.4, and brand VCS is none of the image's brand alternatives."""
    assert requirement_error(require_cuda("12.4.1"), **VGPU_535) == CUDA_124_REFUSED


def test_12_4_1_image_on_an_r535_tesla_passes_by_its_brand_alternative():
    assert requirement_error(require_cuda("12.4.1"), **{**VGPU_535, "brand": "Tesla"}) is None
    assert requirement_error(require_cuda("12.4.1"), **{**VGPU_535, "brand": "Nvidia"}) is None
    # libnvidia-container before 1.9.0 named a vGPU brand "Unknown": that passed too
    assert requirement_error(require_cuda("12.4.1"), **{**VGPU_535, "brand": "Unknown"}) is None
    # but not a 536.x driver of that brand
    tesla_536 = {"cuda": "12.2", "driver": "536.25", "brand": "Tesla"}
    assert requirement_error(require_cuda("12.4.1"), **tesla_536) == CUDA_124_REFUSED


def test_12_2_2_image_on_r535_passes_and_12_4_1_on_r550():
    assert requirement_error(require_cuda("12.2.2"), **VGPU_535) is None
    assert (
        requirement_error(require_cuda("12.4.1"), cuda="12.4", driver="550.144.03", brand="VCS")
        is None
    )
    assert (
        requirement_error(require_cuda("12.4.1"), cuda="13.0", driver="580.159.04", brand="Nvidia")
        is None
    )


def test_without_a_visible_gpu_brand_is_not_checked():
    assert requirement_error("brand=tesla", brand="VCS", device=False) is None
    assert requirement_error("brand=tesla", brand="VCS") == "unsatisfied condition: brand=tesla"
    # NVIDIA_VISIBLE_DEVICES=none: any 535.x driver then passes the 12.4.1 image's brand group
    assert requirement_error(require_cuda("12.4.1"), **VGPU_535, device=False) is None


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        # the message names the requirement's first alternative, whichever term failed
        ("brand=tesla,driver>=384", "unsatisfied condition: brand=tesla,driver>=384"),
        ("driver>=600 cuda>=12.4", "unsatisfied condition: driver>=600"),
        ("cuda>=13.0", "unsatisfied condition: cuda>=13.0, please update your driver to a newer "
                       "version, or use an earlier cuda container"),
        ("CUDA>=12.2", None),  # rule names are case-insensitive ...
        ("brand=vcs", None),  # ... and so are brands
        ("brand!=vcs", "unsatisfied condition: brand!=vcs"),
        ("cuda>=12.2,driver<536", None),
        ("cuda>=12.3 driver>=535,driver<536", None),
        ("  cuda>=12.2", None),  # empty alternatives are skipped
        ("", None),
        ("cuda>>12", "invalid expression"),
        ("cuda>=", "invalid expression"),
        (">=12", "invalid expression"),
        ("foo>=1", "invalid expression"),
        ("cuda>=12.x", "invalid expression"),
        ("brand>tesla", "invalid expression"),
    ],
)  # fmt: skip
def test_requirement_language(requirement, message):
    assert requirement_error(requirement, **VGPU_535) == message


@pytest.mark.parametrize(
    ("v1", "op", "v2", "result"),
    [
        ("535.216.01", ">=", "535", True),
        ("535.216.01", "<", "536", True),
        ("535.216.01", "<", "535", False),
        ("12.2", ">=", "12.4", False),
        ("12.10", ">", "12.9", True),
        ("12.0", "=", "12", True),
        ("12.0.0", "<=", "12", True),
        ("12.01", ">", "12", True),  # dsl.c skips ".0" runs: "01" is "1"
        ("12", "!=", "12.0", False),
        ("12.2", "=", "12.2.1", False),
        ("x", ">=", "1", None),
    ],
)
def test_version_comparison_is_dsl_c(v1, op, v2, result):
    assert dsl_compare_version(v1, op, v2) is result


def test_the_problem_says_what_to_do():
    problem = cuda_image_problem(
        "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
        env("12.4.1"),
        driver_version="535.216.01",
        cuda_version="12.2",
        brand="VCS",
        variable="guest_container_toolkit_verify_image",
    )
    assert problem.startswith(
        "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04 cannot run on this guest"
    )
    assert f"'requirement error: {CUDA_124_REFUSED}' (NVIDIA_REQUIRE_CUDA of the image)" in problem
    assert "driver 535.216.01 offers CUDA 12.2 (GPU brand VCS)" in problem
    assert "Set guest_container_toolkit_verify_image to an image for CUDA 12.2 or older" in problem
    assert "(like nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04)" in problem
    assert "or leave it empty" in problem
    ok = cuda_image_problem(
        "i", env("12.2.2"), driver_version="535.216.01", cuda_version="12.2", brand="VCS"
    )
    assert ok == ""


def test_module_utils_is_standalone_and_runs_on_python_3_8():
    """Shipped to guests and into the stand-in hook: standard library only, Python 3.8 (the
    oldest guest python3, as miglab_guest.py)."""
    source = (MODULE_UTILS / "miglab_cuda.py").read_text()
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports == ["from __future__ import annotations", "import re"]
    res = subprocess.run(
        [str(Path(sys.executable).parent / "vermin"), "-t=3.8-", "--violations", "--no-tips",
         str(MODULE_UTILS / "miglab_cuda.py")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


# --- the filters the role calls ----------------------------------------------------------------


@pytest.fixture(scope="module")
def filters():
    return collection_module("plugins.filter.guest").FilterModule().filters()


def test_filters_read_the_driver_from_nvidia_smi_q(filters):
    vgpu = filters["cuda_driver"]((NVSMI / "v100d-vgpu-guest-q.txt").read_text())
    assert vgpu == {
        "driver_version": "535.216.01",
        "cuda_version": "12.2",
        "product_brand": "NVIDIA Virtual Compute Server",
        "brand": "VCS",
    }
    h200 = filters["cuda_driver"]((NVSMI / "h200-q.txt").read_text())
    assert (h200["cuda_version"], h200["brand"]) == ("13.0", "Nvidia")
    assert filters["cuda_verify_image"](vgpu) == "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"
    assert filters["cuda_verify_image"](h200) == "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
    assert filters["cuda_verify_image"]({}) == ""


def test_filter_refuses_the_12_4_1_image_from_its_inspect_json(filters):
    vgpu = filters["cuda_driver"]((NVSMI / "v100d-vgpu-guest-q.txt").read_text())
    refuse = filters["cuda_image_refusal"]
    problem = refuse(
        json.dumps(env("12.4.1")), "img:12.4.1", vgpu, "guest_container_toolkit_verify_image"
    )
    assert CUDA_124_REFUSED in problem
    assert refuse(json.dumps(env("12.2.2")), "img:12.2.2", vgpu) == ""
    assert refuse(env("12.2.2"), "img:12.2.2", vgpu) == ""  # a list works too


# --- the stand-ins run the same code -----------------------------------------------------------


def _bundle(tmp_path: Path, process_env: list[str]) -> Path:
    bundle = tmp_path / "bundle"
    (bundle / "rootfs").mkdir(parents=True)
    spec = {"ociVersion": "1.0.2", "process": {"env": process_env}, "root": {"path": "rootfs"}}
    (bundle / "config.json").write_text(json.dumps(spec))
    return bundle


def _fake_nvidia_smi(tmp_path: Path, capture: str | None) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    if capture:
        smi = bindir / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\ncat '{NVSMI / capture}'\n")
        smi.chmod(0o755)
    return bindir


def _hook(tmp_path, process_env, capture="v100d-vgpu-guest-q.txt"):
    bundle = _bundle(tmp_path, process_env)
    bindir = _fake_nvidia_smi(tmp_path, capture)
    test_env = {
        "MIGLAB_STANDIN_LIB": str(MODULE_UTILS),
        "MIGLAB_STANDIN_PATH": f"{bindir}:/usr/bin:/bin",
        "MIGLAB_STANDIN_CONFIG": str(TOOLKIT / "config.toml"),
    }
    return subprocess.run(
        [sys.executable, str(TOOLKIT / "nvidia-container-runtime-hook"), "prestart"],
        input=json.dumps({"ociVersion": "1.0.2", "pid": 0, "bundle": str(bundle)}),
        capture_output=True, text=True, env=test_env, check=False,
    )  # fmt: skip


def test_hook_refuses_12_4_1_on_the_535_vgpu_with_libnvidia_containers_text(tmp_path):
    res = _hook(tmp_path, env("12.4.1"))
    assert res.returncode == 1
    assert res.stderr == (
        f"Auto-detected mode as 'legacy'\n{CLI_REQUIREMENT_ERROR}{CUDA_124_REFUSED}\n"
    )
    assert res.stdout == ""


def test_hook_runs_12_2_2_and_honours_disable_require(tmp_path):
    res = _hook(tmp_path, env("12.2.2"))
    assert (res.returncode, res.stderr) == (0, "Auto-detected mode as 'legacy'\n")
    res = _hook(tmp_path / "d", env("12.4.1") + ["NVIDIA_DISABLE_REQUIRE=true"])
    assert (res.returncode, res.stderr) == (0, "Auto-detected mode as 'legacy'\n")


def test_hook_leaves_non_gpu_containers_alone(tmp_path):
    no_gpu = [e for e in env("12.4.1") if not e.startswith("NVIDIA_VISIBLE_DEVICES=")]
    assert _hook(tmp_path, no_gpu + ["NVIDIA_VISIBLE_DEVICES=void"]).returncode == 0
    res = _hook(tmp_path / "b", ["PATH=/bin"])
    assert (res.returncode, res.stderr) == (0, "")


def test_hook_without_a_driver_says_what_libnvidia_container_says(tmp_path):
    res = _hook(tmp_path, env("12.2.2"), capture=None)
    assert res.returncode == 1
    assert res.stderr.endswith(
        "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: "
        "cannot open shared object file: no such file or directory\n"
    )


def _runtime(tmp_path: Path, args: list[str], spec_hooks=None):
    bundle = _bundle(tmp_path, ["PATH=/bin"])
    if spec_hooks is not None:
        spec = json.loads((bundle / "config.json").read_text())
        spec["hooks"] = spec_hooks
        (bundle / "config.json").write_text(json.dumps(spec))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    runc = bindir / "runc"
    runc.write_text('#!/bin/sh\necho "runc $*"\n')
    runc.chmod(0o755)
    argv = [a.replace("BUNDLE", str(bundle)) for a in args]
    res = subprocess.run(
        [sys.executable, str(TOOLKIT / "nvidia-container-runtime"), *argv],
        capture_output=True, text=True, env={"PATH": f"{bindir}:/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    return res, json.loads((bundle / "config.json").read_text()), argv


HOOK = {
    "path": "/usr/bin/nvidia-container-runtime-hook",
    "args": ["nvidia-container-runtime-hook", "prestart"],
}


@pytest.mark.parametrize(
    "args",
    [
        ["--root", "/run/r", "--log", "/l.json", "create", "--bundle", "BUNDLE", "id1"],
        ["create", "--bundle=BUNDLE", "id1"],
        ["create", "-b", "BUNDLE", "id1"],
    ],
)
def test_runtime_adds_the_prestart_hook_on_create_then_runs_runc(tmp_path, args):
    res, spec, argv = _runtime(tmp_path, args)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "runc " + " ".join(argv) + "\n"
    assert spec["hooks"] == {"prestart": [HOOK]}


def test_runtime_keeps_dockers_hook_and_other_commands(tmp_path):
    docker_hook = {
        "path": "/usr/bin/nvidia-container-runtime-hook",
        "args": ["x", "prestart"],
        "env": ["A=1"],
    }
    _, spec, _ = _runtime(
        tmp_path, ["create", "--bundle", "BUNDLE", "i"], {"prestart": [docker_hook]}
    )
    assert spec["hooks"] == {"prestart": [docker_hook]}
    res, spec, _ = _runtime(tmp_path / "s", ["--bundle", "create", "start", "i"])
    assert res.stdout == "runc --bundle create start i\n"  # "create" is the bundle's name here
    assert "hooks" not in spec
    assert os.access(TOOLKIT / "nvidia-container-runtime", os.X_OK)
