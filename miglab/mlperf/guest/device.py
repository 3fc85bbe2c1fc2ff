"""The device a run measures, in the guest: the refusal to measure the CPU when a CUDA device was
asked for and none is visible, and the record of what was measured (``miglab_run.json``'s
``device``).

``--device`` of ``python -m miglab.mlperf.run`` is ``cuda``, ``cuda:N`` or ``cpu``. A CUDA device
is checked before anything is loaded (:func:`require_cuda`): the torch SUT needs
``torch.cuda.is_available()`` (and the device index), the onnxruntime SUT ONNX Runtime's CUDA
execution provider (the ``onnxruntime-gpu`` package; once the session exists, it must run on it:
ONNX Runtime falls back to the CPU when the provider cannot start, :func:`require_cuda_session`).
Otherwise the run stops with :class:`NoCudaDevice`, one line that says what is missing and what
``nvidia-smi -L`` says, never a silent fallback to the CPU: the CPU is measured only on purpose
(``--device cpu``, the mlperf role's ``mlperf_device: cpu``, as in the simulated lab).

The record (:func:`describe`): a CUDA device as the guest's nvidia-smi shows it, ``{"kind":
"cuda", "name", "vgpu_type", "uuid", "driver", "cuda"}`` (``nvidia-smi
--query-gpu=name,uuid,driver_version --format=csv,noheader`` and ``nvidia-smi -q``, read by
:func:`miglab.formats.nvsmi.read_gpu_device`; in a vGPU guest ``vgpu_type`` is the Product Name,
e.g. ``NVIDIA A100D-2-20C``), or the CPU, ``{"kind": "cpu", "name": <model from /proc/cpuinfo>,
"cpus": <logical CPUs>}``. What could not be read is said in ``note``.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from miglab.mlperf.guest.backends.base import BackendError

__all__ = [
    "NoCudaDevice",
    "cpu_name",
    "describe",
    "nvidia_smi_says",
    "parse_device",
    "require_cuda",
    "require_cuda_session",
]

NVIDIA_SMI = "nvidia-smi"
NVIDIA_SMI_TIMEOUT_S = 30.0
ON_PURPOSE = (
    "refusing to measure the CPU; set mlperf_device: cpu (python -m miglab.mlperf.run "
    "--device cpu) to run on the CPU on purpose"
)
ORT_CUDA = "CUDAExecutionProvider"


class NoCudaDevice(BackendError):
    """A CUDA device was asked for and this guest has none to give: the run is not made."""


def parse_device(text: str | None, default: str = "cuda") -> tuple[str, int | None]:
    """``cuda`` -> ("cuda", 0); ``cuda:1`` -> ("cuda", 1); ``cpu`` -> ("cpu", None); None ->
    ``default``'s. BackendError for anything else."""
    t = (text or default).strip().lower()
    if t == "cpu":
        return "cpu", None
    kind, sep, index = t.partition(":")
    if kind == "cuda" and (not sep or (index.isascii() and index.isdigit())):
        return "cuda", int(index) if sep else 0
    raise BackendError(f"--device {text!r}: use cuda, cuda:N or cpu")


def cpu_name() -> str:
    """The CPU's model, as /proc/cpuinfo names it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def _nvidia_smi(*args: str) -> tuple[int | None, str]:
    """(exit status, stdout + stderr) of nvidia-smi; (None, why) when it could not run."""
    try:
        p = subprocess.run(
            [NVIDIA_SMI, *args],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        return None, "not installed (no nvidia-smi on PATH)"
    except subprocess.TimeoutExpired:
        return None, f"no answer within {NVIDIA_SMI_TIMEOUT_S:g} s"
    except OSError as exc:
        return None, f"cannot run: {exc}"
    return p.returncode, (p.stdout or "") + (p.stderr or "")


def nvidia_smi_says() -> str:
    """One line: what ``nvidia-smi -L`` prints (the GPUs it sees, or its error)."""
    rc, out = _nvidia_smi("-L")
    lines = [" ".join(line.split()) for line in out.splitlines() if line.strip()]
    text = "; ".join(lines)[:300] or "nothing"
    if rc is None:
        return text
    return text if rc == 0 else f"{text} (exit {rc})"


def require_cuda(sut: str, device: str) -> None:
    """Stop (:class:`NoCudaDevice`) unless ``sut`` can run on ``device`` when it is a CUDA one;
    nothing to check for ``cpu``. Runs before anything slow is loaded."""
    kind, index = parse_device(device)
    if kind != "cuda":
        return
    if sut == "torch":
        try:
            import torch
        except ImportError:
            raise BackendError(
                "the torch SUT needs torch, which is not installed in this guest (the mlperf "
                "role's mlperf_packages)"
            ) from None
        if not torch.cuda.is_available():
            raise NoCudaDevice(
                "no CUDA device visible in this VM: torch.cuda.is_available() is False "
                f"(torch {getattr(torch, '__version__', '?')}, built for CUDA "
                f"{getattr(torch.version, 'cuda', None) or 'none: a CPU-only build'}; "
                f"nvidia-smi says: {nvidia_smi_says()}); {ON_PURPOSE}"
            )
        count = torch.cuda.device_count()
        if index >= count:
            raise NoCudaDevice(
                f"no CUDA device {index} in this VM: torch sees {count} (nvidia-smi says: "
                f"{nvidia_smi_says()}); {ON_PURPOSE}"
            )
    elif sut == "onnxruntime":
        try:
            import onnxruntime as ort
        except ImportError:
            return  # the SUT says it is missing, with its own error
        providers = list(ort.get_available_providers())
        if ORT_CUDA not in providers:
            raise NoCudaDevice(
                "no CUDA device visible in this VM: ONNX Runtime has no CUDA execution provider "
                f"(it has {', '.join(providers) or 'none'}; install onnxruntime-gpu; nvidia-smi "
                f"says: {nvidia_smi_says()}); {ON_PURPOSE}"
            )


def require_cuda_session(session) -> None:
    """An ONNX Runtime session asked to run on CUDA must run on it: ONNX Runtime falls back to
    the CPU (with a warning only) when the CUDA provider cannot start."""
    used = list(session.get_providers())
    if ORT_CUDA not in used:
        raise NoCudaDevice(
            f"no CUDA device visible in this VM: ONNX Runtime could not start its CUDA execution "
            f"provider (the session runs on {', '.join(used) or 'nothing'}; nvidia-smi says: "
            f"{nvidia_smi_says()}); {ON_PURPOSE}"
        )


def describe(device: str, *, uuid: str | None = None, name: str | None = None) -> dict:
    """The record of what a run on ``device`` measures (see the module docstring). ``uuid`` and
    ``name``: the CUDA device as the framework reports it (``GPU-...``), to pick nvidia-smi's row
    and to name the device when nvidia-smi cannot be read."""
    from miglab.errors import ValidationError
    from miglab.formats.nvsmi import DEVICE_QUERY_FIELDS, read_gpu_device

    kind, index = parse_device(device)
    if kind == "cpu":
        return {"kind": "cpu", "name": cpu_name(), "cpus": os.cpu_count() or 1}
    fields = ",".join(DEVICE_QUERY_FIELDS)
    rc, csv_text = _nvidia_smi(f"--query-gpu={fields}", "--format=csv,noheader")
    rc_q, q_text = _nvidia_smi("-q")
    why = []
    if rc != 0:
        why.append(f"--query-gpu: {_failed(rc, csv_text)}")
    if rc_q != 0:
        why.append(f"-q: {_failed(rc_q, q_text)}")
    record: dict = {}
    if rc == 0 or rc_q == 0:
        try:
            record = read_gpu_device(
                csv_text if rc == 0 else None,
                q_text if rc_q == 0 else None,
                index=index,
                uuid=uuid,
            )
        except ValidationError as exc:
            why.append("; ".join(str(p) for p in exc.problems)[:300])
    out = {"kind": "cuda", **{k: v for k, v in record.items() if v is not None}}
    out["kind"] = "cuda"
    out.setdefault("name", name or "unknown CUDA device")
    if uuid and "uuid" not in out:
        out["uuid"] = uuid
    if why:
        out["note"] = ("nvidia-smi " + "; ".join(why))[:200]
    return out


def _failed(rc: int | None, text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return (first or "no output") + ("" if rc is None else f" (exit {rc})")
