"""CUDA on a guest: what its NVIDIA driver offers, and what a container image needs from it.

Shipped to the managed guests as Ansible module_utils and copied into the container toolkit
stand-in's hook (miglab/sim/standins/container-toolkit/build-debs.sh), so it uses only the Python
standard library, imports nothing from the rest of miglab and never imports Ansible; Python 3.8+
(the guests' oldest python3; tests/unit/test_cuda.py checks it with vermin). The controller's
filters (plugins/filter/guest.py) and the stand-in hook run this one copy.

* :data:`CUDA_BY_DRIVER_BRANCH`: the CUDA version each driver branch offers;
  :data:`CUDA_BASE_IMAGES`: NVIDIA's base image for a CUDA version (:func:`cuda_base_image`).
* :func:`image_requirements`: the ``NVIDIA_REQUIRE_*`` requirements of an image's environment
  (``docker image inspect``'s ``Config.Env``), as the NVIDIA container toolkit collects them.
* :func:`requirement_error`: libnvidia-container's check of one requirement (its ``--require``
  language, ported from src/cli/dsl.c), with its exact error messages.
* :func:`cuda_image_problem`: why an image cannot run on a guest, and what to do.
"""

from __future__ import annotations

import re

__all__ = [
    "CLI_REQUIREMENT_ERROR",
    "CUDA_BASE_IMAGES",
    "CUDA_BY_DRIVER_BRANCH",
    "NVML_BRANDS",
    "CudaError",
    "cuda_base_image",
    "cuda_image_problem",
    "driver_cuda_version",
    "dsl_compare_version",
    "image_env",
    "image_requirements",
    "nvml_brand",
    "requirement_error",
    "requirements_error",
]


class CudaError(ValueError):
    """Input that cannot be used (an invalid image environment); the message says why."""


# --------------------------------------------------------------------------------------------
# CUDA: what a guest's driver offers, what a container image needs
# --------------------------------------------------------------------------------------------
# The CUDA version each driver branch offers (what its nvidia-smi prints as "CUDA Version": the
# newest CUDA of the branch's own release). NVIDIA's "CUDA Toolkit and Corresponding Driver
# Versions" table (CUDA Toolkit release notes, docs.nvidia.com/cuda/cuda-toolkit-release-notes/):
# CUDA 11.4.0 GA >= 470.42.01, 12.0 GA >= 525.60.13, 12.2 GA >= 535.54.03, 12.4 GA >= 550.54.14,
# 12.8 GA >= 570.26, 13.0 GA >= 580.65.06. Seen in real nvidia-smi output: 535.216.01 (vGPU guest,
# tests/fixtures/nvidia-smi/v100d-vgpu-guest-q.txt) and 535.183.06 print 12.2, 550.144.03 prints
# 12.4 (theroyallab/tabbyAPI#324), 570.158.01 prints 12.8, 580.159.04 (miglab's H200) 13.0.
CUDA_BY_DRIVER_BRANCH = {
    470: "11.4",
    525: "12.0",
    535: "12.2",
    550: "12.4",
    570: "12.8",
    580: "13.0",
}

# NVIDIA's CUDA base image for a CUDA major.minor: only tags whose Dockerfile is in NVIDIA's image
# sources (gitlab.com/nvidia/container-images/cuda, dist/<version>/<os>/base/Dockerfile, read in
# the copy taehun-kmu/FMCL-Docker @684356f0 for 11.4.3 ubuntu2004, 12.0.1 and 12.2.2 ubuntu2204,
# @53a6a109 for 12.4.1 ubuntu2204). nvcr.io/nvidia/cuda and Docker Hub's nvidia/cuda carry the
# same tags. A newer driver runs any of them (cuda>=X.Y), so R570 and R580 guests get 12.4.1.
CUDA_BASE_IMAGES = {
    "11.4": "nvcr.io/nvidia/cuda:11.4.3-base-ubuntu20.04",
    "12.0": "nvcr.io/nvidia/cuda:12.0.1-base-ubuntu22.04",
    "12.2": "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04",
    "12.4": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
}

_CUDA_RE = re.compile(r"^\d+\.\d+$")
_DRIVER_RE = re.compile(r"^(?P<branch>\d+)(?:\.\d+){1,3}$")


def _cuda_tuple(cuda: str) -> tuple:
    return tuple(int(part) for part in cuda.split("."))


def driver_cuda_version(driver_version: str | None, reported: str | None = None) -> str | None:
    """The CUDA version a driver offers: what its nvidia-smi reports (``CUDA Version``), else its
    branch's from :data:`CUDA_BY_DRIVER_BRANCH`; None when neither is known."""
    text = (reported or "").strip()
    if _CUDA_RE.match(text):
        return text
    m = _DRIVER_RE.match((driver_version or "").strip())
    return CUDA_BY_DRIVER_BRANCH.get(int(m.group("branch"))) if m else None


def cuda_base_image(cuda_version: str | None) -> str | None:
    """NVIDIA's base image for the newest CUDA in :data:`CUDA_BASE_IMAGES` that is not newer than
    ``cuda_version`` (the image runs on that driver); None when there is none."""
    if not _CUDA_RE.match((cuda_version or "").strip()):
        return None
    offered = _cuda_tuple(cuda_version.strip())
    fits = [cuda for cuda in CUDA_BASE_IMAGES if _cuda_tuple(cuda) <= offered]
    return CUDA_BASE_IMAGES[max(fits, key=_cuda_tuple)] if fits else None


# nvidia-smi -q's "Product Brand" -> the brand libnvidia-container compares ``brand=`` with.
# nvidia-smi prints NVML's brand (nvmlDeviceGetBrand); its texts are those of nvml.h's comments on
# nvmlBrandType_t ("NVIDIA Virtual Compute Server" for NVML_BRAND_NVIDIA_VCS, as the real vGPU
# guest capture prints, "NVIDIA" for NVML_BRAND_NVIDIA as the H200 capture prints).
# libnvidia-container (src/driver.c, driver_get_device_brand_1_svc, since 1.9.0: "Update switch
# statement to include new brands from latest nvml.h", nvidia-container-toolkit CHANGELOG.md)
# names them as below (read in the fork ElasticProvisioner/libnvidia-container @2bee8f08; NVIDIA's
# own stored driver.c @94734494 is older and knows only the first six) and anything else
# "Unknown". So a C-series vGPU is brand "VCS", which no CUDA image lists: its NVIDIA_REQUIRE_CUDA
# brand alternatives (tesla, unknown, nvidia, ...) never apply to it.
NVML_BRANDS = {
    "quadro": "Quadro",
    "tesla": "Tesla",
    "nvs": "NVS",
    "grid": "GRID",
    "geforce": "GeForce",
    "titan": "TITAN",
    "nvidia virtual applications": "VApps",
    "nvidia virtual pc": "VPC",
    "nvidia virtual compute server": "VCS",
    "nvidia rtx virtual workstation": "VWS",
    "nvidia cloud gaming": "CloudGaming",
    "quadro rtx": "QuadroRTX",
    "nvidia rtx": "NvidiaRTX",
    "nvidia": "Nvidia",
    "geforce rtx": "GeForceRTX",
    "titan rtx": "TitanRTX",
}


def nvml_brand(product_brand: str | None) -> str | None:
    """libnvidia-container's brand of a GPU whose ``nvidia-smi -q`` says ``Product Brand :
    <product_brand>`` ("Unknown" for a text it does not name); None when it is not known."""
    text = " ".join((product_brand or "").split())
    if not text or text == "N/A":
        return None
    return NVML_BRANDS.get(text.lower(), "Unknown")


# --- NVIDIA_REQUIRE_* ------------------------------------------------------------------------
# Which requirements a container gets: NVIDIA/nvidia-container-toolkit v1.17.8,
# internal/config/image/cuda_image.go (GetRequirements, HasDisableRequire, IsLegacy): every
# NVIDIA_REQUIRE_* variable but NVIDIA_REQUIRE_JETPACK*, none when NVIDIA_DISABLE_REQUIRE is true
# (Go's strconv.ParseBool), and "cuda>=<major.minor>" of CUDA_VERSION for a legacy image (one with
# CUDA_VERSION and no NVIDIA_REQUIRE_CUDA). Each is passed as one --require to nvidia-container-cli,
# which checks them all (AND).
_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_SEMVER_RE = re.compile(
    r"^v(?P<major>0|[1-9]\d*)(?:\.(?P<minor>0|[1-9]\d*)"
    r"(?:\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)?)?$"
)
CLI_REQUIREMENT_ERROR = "nvidia-container-cli: requirement error: "


def image_env(env) -> dict:
    """An image's environment (``Config.Env``: ``KEY=VALUE`` strings, or a dict) as a dict; a
    later entry of a key wins, as in the toolkit. CudaError for an entry without ``=``."""
    if isinstance(env, dict):
        return {str(k): str(v) for k, v in env.items()}
    values: dict = {}
    for entry in env or ():
        key, sep, value = str(entry).partition("=")
        if not sep:
            raise CudaError(f"invalid environment variable: {entry}")
        values[key] = value
    return values


def image_requirements(env) -> list:
    """``[(variable, requirement)]`` that the NVIDIA runtime checks for an image with this
    environment, in the environment's order (empty when NVIDIA_DISABLE_REQUIRE is true)."""
    values = image_env(env)
    if values.get("NVIDIA_DISABLE_REQUIRE", "") in _GO_TRUE:
        return []
    found = [
        (name, value)
        for name, value in values.items()
        if name.startswith("NVIDIA_REQUIRE_") and not name.startswith("NVIDIA_REQUIRE_JETPACK")
    ]
    legacy = values.get("CUDA_VERSION", "")
    if legacy and not values.get("NVIDIA_REQUIRE_CUDA", ""):
        m = _SEMVER_RE.match("v" + (legacy[1:] if legacy.startswith("v") else legacy))
        if not m:
            raise CudaError(
                f"failed to get version: invalid CUDA version {legacy}: invalid version string"
            )
        found.append(("CUDA_VERSION", f"cuda>={m.group('major')}.{m.group('minor') or '0'}"))
    return found


# --- libnvidia-container's requirement language -----------------------------------------------
# A port of NVIDIA/libnvidia-container src/cli/dsl.c (@5823754b: dsl_evaluate, evaluate_rule,
# dsl_compare_version, dsl_compare_string) and the rules of src/cli/configure.c (@09df17a2:
# cuda, driver, arch, brand). A requirement is alternatives separated by spaces (OR), each a
# comma-separated list of NAME OP VALUE terms (AND); names are case-insensitive, brands compare
# case-insensitively, versions number by number. Failing, nvidia-container-cli prints
# "requirement error: " + the message, naming the requirement's first alternative.
_DSL_OPERATORS = ("=", "!=", "<", "<=", ">", ">=")  # dsl.c's table, in its order
_DSL_OPERATOR_CHARS = "<>=!"
_CUDA_REQUIRE_GREATER = "cuda>="


def _leading(text: str, chars: str) -> int:
    """C's strspn."""
    n = 0
    while n < len(text) and text[n] in chars:
        n += 1
    return n


def dsl_compare_version(v1: str, op: str, v2: str):
    """dsl.c's dsl_compare_version: True/False, None where C returns -1 (not a version)."""
    if _leading(v1, "0123456789.") != len(v1) or _leading(v2, "0123456789.") != len(v2):
        return None
    while v1 and v2:
        d1, d2 = _leading(v1, "0123456789"), _leading(v2, "0123456789")
        if not d1 or not d2:
            return None
        n1, n2 = int(v1[:d1]), int(v2[:d2])
        if n1 != n2:
            if op == "=":
                return False
            if op == "!=":
                return True
            return n1 < n2 if op in ("<", "<=") else n1 > n2
        v1 = v1[d1 + _leading(v1[d1:], ".") :]
        v2 = v2[d2 + _leading(v2[d2:], ".") :]
    v1 = v1[_leading(v1, ".0") :]
    v2 = v2[_leading(v2, ".0") :]
    if op == "!=":
        return bool(v1 or v2)
    if op in ("=", "<=", ">="):
        if not v1 and not v2:
            return True
        if op == "=":
            return False
    if op in ("<", "<="):
        return not v1 and bool(v2)
    return bool(v1) and not v2


def _dsl_compare_string(s1: str, op: str, s2: str):
    if op == "=":
        return s1.lower() == s2.lower()
    if op == "!=":
        return s1.lower() != s2.lower()
    return None


def _dsl_rule(name: str, op: str, value: str, ctx: dict):
    """configure.c's check_* functions; None when the name is no rule (invalid expression)."""
    name = name.lower()
    if name in ("cuda", "driver"):
        have = ctx.get("cuda" if name == "cuda" else "driver")
        return True if have is None else dsl_compare_version(have, op, value)
    if name in ("arch", "brand"):
        have = ctx.get(name) if ctx.get("device") else None
        if have is None:  # no device visible (or its value unknown): assumed fine
            return True
        compare = dsl_compare_version if name == "arch" else _dsl_compare_string
        return compare(have, op, value)
    return None


def _dsl_evaluate_rule(expr: str, ctx: dict):
    n = next((i for i, ch in enumerate(expr) if ch in _DSL_OPERATOR_CHARS), len(expr))
    if n == 0:
        return None
    k = _leading(expr[n:], _DSL_OPERATOR_CHARS)
    if k == 0:
        return None
    typed = expr[n : n + k]
    op = next((o for o in _DSL_OPERATORS if len(o) >= k and o[:k] == typed), None)
    value = expr[n + k :]
    if op is None or not value:
        return None
    return _dsl_rule(expr[:n], op, value, ctx)


def requirement_error(
    requirement: str,
    *,
    cuda: str | None = None,
    driver: str | None = None,
    brand: str | None = None,
    arch: str | None = None,
    device: bool = True,
) -> str | None:
    """What nvidia-container-cli says of ``requirement`` on a driver with this CUDA and driver
    version and (``device``: a GPU is requested) this GPU brand and compute capability: None when
    it is satisfied, else its message (``unsatisfied condition: ...`` or ``invalid
    expression``). A None value is unknown and, as in configure.c, satisfies its terms."""
    ctx = {"cuda": cuda, "driver": driver, "brand": brand, "arch": arch, "device": device}
    ret = True
    for alternative in requirement.split(" "):
        if not alternative:
            continue
        whole = True
        for term in alternative.split(","):
            if not term:
                continue
            result = _dsl_evaluate_rule(term, ctx)
            if result is None:
                return "invalid expression"
            ret = result
            if not result:
                whole = False
                break
        if whole:
            break
    if ret:
        return None
    first = requirement.split(" ", 1)[0]
    if first.startswith(_CUDA_REQUIRE_GREATER):
        return (
            f"unsatisfied condition: {first}, please update your driver to a newer version, "
            "or use an earlier cuda container"
        )
    return f"unsatisfied condition: {first}"


def requirements_error(requirements: list, **driver) -> tuple | None:
    """The first ``(variable, message)`` of ``[(variable, requirement)]`` (image_requirements)
    that :func:`requirement_error` refuses with ``driver``'s keywords; None when all pass."""
    for name, requirement in requirements:
        message = requirement_error(requirement, **driver)
        if message:
            return name, message
    return None


def cuda_image_problem(
    image: str,
    env,
    *,
    driver_version: str | None,
    cuda_version: str | None,
    brand: str | None,
    variable: str = "the image",
) -> str:
    """Why the NVIDIA runtime would refuse ``image`` (its environment ``env``) on a guest whose
    driver is ``driver_version`` offering ``cuda_version`` with a GPU of libnvidia-container's
    ``brand``, and what to do, naming ``variable``; "" when it would run it."""
    try:
        failed = requirements_error(
            image_requirements(env), cuda=cuda_version, driver=driver_version, brand=brand
        )
    except CudaError as exc:
        return f"{image}: the NVIDIA runtime cannot read its requirements: {exc}"
    if not failed:
        return ""
    name, message = failed
    offered = cuda_version or "unknown"
    fitting = cuda_base_image(cuda_version)
    like = f" (like {fitting})" if fitting else ""
    return (
        f"{image} cannot run on this guest: nvidia-container-cli refuses it with "
        f"'requirement error: {message}' ({name} of the image), and the NVIDIA driver "
        f"{driver_version or 'unknown'} offers CUDA {offered} (GPU brand {brand or 'unknown'}). "
        f"Set {variable} to an image for CUDA {offered} or older{like}, or leave it empty to "
        "have it chosen from the driver."
    )
