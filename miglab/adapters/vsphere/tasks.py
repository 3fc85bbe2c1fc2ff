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
            raise VsphereError(f"{what} failed: {fault_text(info.error)}")
        if time.monotonic() > deadline:
            raise VsphereError(f"{what} did not finish within {timeout_s:.0f} s")
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)


def fault_text(fault) -> str:
    """A task fault as one line: its ``msg`` and the details real vCenters put elsewhere (the
    ``faultMessage[]`` of the fault and of its ``faultCause`` chain), each once. A
    power-on often says only "Module 'DevicePowerOn' power on failed." in ``msg`` (real-lab
    notes V14: vSphere API LocalizedMethodFault / MethodFault.faultMessage)."""
    parts: list[str] = []

    def add(text) -> None:
        text = " ".join(str(text or "").split())
        if text and text not in parts:
            parts.append(text)

    seen = 0
    while fault is not None and seen < 5:  # a fault's cause chain, bounded
        add(getattr(fault, "msg", None))
        for m in getattr(fault, "faultMessage", None) or []:
            add(getattr(m, "message", None) or getattr(m, "key", None))
        fault = getattr(fault, "faultCause", None)
        seen += 1
    return "; ".join(parts)[:1000] or "a fault without a message"
