"""MLPerf backends: ways of running MLPerf Inference in a guest, behind one interface.

* ``reference`` - MLPerf LoadGen from PyPI driving miglab's own SUTs (PyTorch on a GPU, ONNX
  Runtime on the CPU): :mod:`miglab.mlperf.guest.backends.reference`.
* ``nvidia`` - NVIDIA's closed-division harness of a round (v1.1, v4.1; make targets) with a
  generated system entry and configs for the VM's vGPU: :mod:`miglab.mlperf.guest.backends.nvidia`.
* ``mlcflow`` - MLCommons' ``mlcr run-mlperf,inference`` from a local, registered
  mlperf-automations checkout, offline with pre-staged inputs:
  :mod:`miglab.mlperf.guest.backends.mlcflow`.

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

BACKENDS = ("reference", "nvidia", "mlcflow")


def get_backend(name: str) -> Backend:
    """A new backend called ``name``; BackendError when there is none."""
    if name == "reference":
        from miglab.mlperf.guest.backends.reference import ReferenceBackend

        return ReferenceBackend()
    if name == "nvidia":
        from miglab.mlperf.guest.backends.nvidia import NvidiaBackend

        return NvidiaBackend()
    if name == "mlcflow":
        from miglab.mlperf.guest.backends.mlcflow import MlcflowBackend

        return MlcflowBackend()
    raise BackendError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
