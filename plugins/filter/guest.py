"""Filters miglab.lab.*: the guest roles' decisions on the controller (the logic is the guest
modules' shared code, plugins/module_utils/miglab_guest.py and miglab_cuda.py, and miglab's
parser of ``nvidia-smi -q``, miglab.formats.nvsmi)."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError
from ansible_collections.miglab.lab.plugins.module_utils.miglab_cuda import (
    CudaError,
    cuda_base_image,
    cuda_image_problem,
    driver_cuda_version,
    nvml_brand,
)
from ansible_collections.miglab.lab.plugins.module_utils.miglab_guest import (
    deb_name_version,
    debs_to_install,
)
from ansible_collections.miglab.lab.plugins.plugin_utils.values import plain, require

try:
    from miglab.errors import ValidationError
    from miglab.formats import nvsmi

    IMPORT_ERROR = None
except ImportError as exc:  # reported when a filter that needs it is used
    nvsmi = ValidationError = None
    IMPORT_ERROR = exc


def deb_packages(debs):
    """A .deb list -> the package names their Debian file names give (for ``dpkg-query -W``)."""
    names = []
    for item in plain(debs or []):
        if not isinstance(item, dict):
            raise AnsibleFilterError("deb_packages: each item must be a dict with src or url")
        nv = deb_name_version(str(item.get("src") or item.get("url") or ""))
        if nv is not None:
            names.append(nv[0])
    return names


def deb_pending(debs, dpkg_query_stdout):
    """The items of a .deb list not installed at their file name's version (install order)."""
    return debs_to_install(plain(debs or []), str(dpkg_query_stdout or ""))


def cuda_driver(nvidia_smi_q):
    """A guest's ``nvidia-smi -q`` output -> what its driver offers containers:
    ``{driver_version, cuda_version, product_brand, brand}`` (``brand``: libnvidia-container's
    name of the first GPU's brand; ``cuda_version``: the reported one, else the branch's)."""
    lib = require(nvsmi, "cuda", IMPORT_ERROR)
    try:
        gpu = lib.parse_query(str(nvidia_smi_q or ""), "nvidia-smi -q")[0]
    except ValidationError as exc:
        raise AnsibleFilterError(f"cuda_driver: {exc}") from None
    return {
        "driver_version": gpu["driver_version"],
        "cuda_version": driver_cuda_version(gpu["driver_version"], gpu["cuda_version"]),
        "product_brand": gpu["product_brand"],
        "brand": nvml_brand(gpu["product_brand"]),
    }


def cuda_verify_image(driver):
    """NVIDIA's base image for the CUDA a driver offers (``cuda_driver``'s dict); "" if none."""
    return cuda_base_image(plain(driver or {}).get("cuda_version")) or ""


def cuda_image_refusal(image_env, image, driver, variable="the image"):
    """Why the NVIDIA runtime refuses ``image`` (``image_env``: its ``Config.Env``, a list or its
    JSON) on a guest with ``driver`` (``cuda_driver``'s dict), naming ``variable`` in the
    advice; "" when it runs it."""
    env = plain(image_env)
    if isinstance(env, str):
        try:
            env = json.loads(env) if env.strip() else []
        except ValueError as exc:
            raise AnsibleFilterError(f"cuda_image_refusal: not JSON: {exc}") from None
    info = plain(driver or {})
    try:
        return cuda_image_problem(
            str(image),
            env or [],
            driver_version=info.get("driver_version"),
            cuda_version=info.get("cuda_version"),
            brand=info.get("brand"),
            variable=str(variable),
        )
    except CudaError as exc:
        raise AnsibleFilterError(f"cuda_image_refusal: {exc}") from None


class FilterModule:
    def filters(self):
        return {
            "deb_packages": deb_packages,
            "deb_pending": deb_pending,
            "cuda_driver": cuda_driver,
            "cuda_verify_image": cuda_verify_image,
            "cuda_image_refusal": cuda_image_refusal,
        }
