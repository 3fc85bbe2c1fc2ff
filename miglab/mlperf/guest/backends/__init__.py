"""MLPerf backends: ways of running MLPerf Inference in a guest, behind one interface.

* ``reference`` - MLPerf LoadGen from PyPI driving miglab's own SUTs (PyTorch on a GPU, ONNX
  Runtime on the CPU): :mod:`miglab.mlperf.guest.backends.reference`.
* ``nvidia`` - NVIDIA's closed-division v1.1 harness (make targets) with a generated system entry
  and configs for the VM's vGPU: :mod:`miglab.mlperf.guest.backends.nvidia`.

``python -m miglab.mlperf.run`` is the command the guests run.
"""

from __future__ import annotations

from miglab.mlperf.guest.backends.base import (
    BENCHMARKS,
    Backend,
    BackendError,
    benchmark_info,
    run_dir_for,
)

__all__ = [
    "BACKENDS",
    "BENCHMARKS",
    "Backend",
    "BackendError",
    "benchmark_info",
    "get_backend",
    "run_dir_for",
]

BACKENDS = ("reference", "nvidia")


def get_backend(name: str) -> Backend:
    """A new backend called ``name``; BackendError when there is none."""
    if name == "reference":
        from miglab.mlperf.guest.backends.reference import ReferenceBackend

        return ReferenceBackend()
    if name == "nvidia":
        from miglab.mlperf.guest.backends.nvidia import NvidiaBackend

        return NvidiaBackend()
    raise BackendError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
