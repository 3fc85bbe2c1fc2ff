"""What the guest-side code runs in, for ``miglab_run.json``'s ``runtime``.

The mlperf role runs it in a container of the campaign's image (``mlperf_runtime: container``)
and says so through the container's environment (``MIGLAB_MLPERF_RUNTIME``, ``..._IMAGE``,
``..._IMAGE_ID``: plugins/filter/mlperf_runtime.py), or from a virtualenv in the guest (no such
variables). Only the standard library is used.
"""

from __future__ import annotations

import os
import platform
import sys


def runtime_record(environ=None) -> dict:
    """``{"kind": "container"|"venv", "container": bool, "image", "image_id", "python"}``
    (image and image id only in a container)."""
    env = os.environ if environ is None else environ
    kind = env.get("MIGLAB_MLPERF_RUNTIME") or (
        "venv" if sys.prefix != sys.base_prefix else "python"
    )
    record: dict = {"kind": kind, "container": kind == "container"}
    if kind == "container":
        record["image"] = env.get("MIGLAB_MLPERF_IMAGE") or None
        record["image_id"] = env.get("MIGLAB_MLPERF_IMAGE_ID") or None
    record["python"] = (
        f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})"
    )
    return record
