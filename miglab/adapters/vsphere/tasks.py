"""Waiting for vCenter tasks, with a timeout and the task's own error message."""

from __future__ import annotations

import time

from miglab.adapters.vsphere.connection import VsphereError


def wait(task, timeout_s: float = 600, what: str = "task"):
    """Block until ``task`` finishes; return its result or raise VsphereError with its fault."""
    from pyVmomi import vim

    deadline = time.monotonic() + timeout_s
    delay = 0.05
    while True:
        info = task.info
        if info.state == vim.TaskInfo.State.success:
            return info.result
        if info.state == vim.TaskInfo.State.error:
            fault = info.error
            msg = getattr(fault, "msg", None) or type(fault).__name__
            raise VsphereError(f"{what} failed: {msg}")
        if time.monotonic() > deadline:
            raise VsphereError(f"{what} did not finish within {timeout_s:.0f} s")
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)
