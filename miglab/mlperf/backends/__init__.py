"""MLPerf backends: ways of running MLPerf Inference in a guest, behind one interface.

* ``reference`` - MLPerf LoadGen from PyPI driving miglab's own SUTs (PyTorch on a GPU, ONNX
  Runtime on the CPU): :mod:`miglab.mlperf.backends.reference`.

``python -m miglab.mlperf.run`` is the command the guests run.
"""

from __future__ import annotations

from miglab.mlperf.backends.base import (
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

BACKENDS = ("reference",)


def get_backend(name: str) -> Backend:
    """A new backend called ``name``; BackendError when there is none."""
    if name == "reference":
        from miglab.mlperf.backends.reference import ReferenceBackend

        return ReferenceBackend()
    raise BackendError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
