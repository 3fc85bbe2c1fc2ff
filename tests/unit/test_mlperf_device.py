"""Issue 17 item 1, the device a run measures: the mlperf role's GPU defaults (the simulated lab
and the role's own containers set the CPU on purpose), the refusal of a CUDA run in a guest that
has no CUDA device (never a silent run on the CPU), the device record read from nvidia-smi (real
captures, and the GRID stand-in's nvidia-smi run in place), and ``miglab_run.json``'s strict
``device`` schema.

torch is not installed here: the tests that need it put a small stand-in ``torch`` module in
place (``sys.modules`` in-process, a package on PYTHONPATH for the command); ONNX Runtime is the
real one (the CPU build: no CUDA execution provider).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from miglab.errors import ValidationError
from miglab.formats.nvsmi import read_gpu_device
from miglab.formats.run_meta import check_device, read_run_meta
from miglab.mlperf.guest import device as device_lib
from miglab.mlperf.guest.backends import BackendError
from testlib import FIXTURES, ROOT

SMI = FIXTURES / "nvidia-smi"
STANDIN_SMI = ROOT / "miglab" / "sim" / "standins" / "grid-driver" / "nvidia-smi"
# the real text of nvidia-smi without a driver (the GRID stand-in prints it, exit 9)
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that "
    "the latest NVIDIA driver is installed and running."
)


def load(path: Path):
    return yaml.safe_load(path.read_text())


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def no_driver_smi(tmp_path, monkeypatch) -> Path:
    """An nvidia-smi that cannot reach a driver (what a VM without its vGPU says)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = executable(bindir / "nvidia-smi", f'#!/bin/sh\necho "{NO_DRIVER}"\necho\nexit 9\n')
    monkeypatch.setattr(device_lib, "NVIDIA_SMI", str(smi))
    return bindir


@pytest.fixture
def standin_smi(tmp_path, monkeypatch) -> Path:
    """The GRID stand-in's nvidia-smi (a vGPU guest's view: NVIDIA H200X-141C, driver 535.216.01,
    CUDA 12.2, built from the real H200 capture), run in place."""
    share = tmp_path / "share"
    share.mkdir()
    (share / "nvidia-smi-q.txt").write_bytes((SMI / "h200-q.txt").read_bytes())
    (share / "nvidia-smi.txt").write_bytes((SMI / "h200-nvidia-smi.txt").read_bytes())
    (share / "manifest.json").write_text(
        json.dumps({"version": "535.216.01", "cuda": "12.2", "built": "x", "standin": True})
    )
    smi = executable(
        tmp_path / "nvidia-smi",
        "#!/bin/sh\n"
        f"MIGLAB_STANDIN_SHARE='{share}' MIGLAB_STANDIN_STATE='{tmp_path / 'state.json'}' "
        f"exec '{sys.executable}' '{STANDIN_SMI}' \"$@\"\n",
    )
    monkeypatch.setattr(device_lib, "NVIDIA_SMI", str(smi))
    return smi


def fake_torch(available: bool, count: int = 1, cuda: str | None = "12.4"):
    """A stand-in ``torch`` module with what the device check reads."""
    t = types.ModuleType("torch")
    t.__version__ = "2.5.1" if cuda else "2.5.1+cpu"
    t.version = types.SimpleNamespace(cuda=cuda)
    t.cuda = types.SimpleNamespace(
        is_available=lambda: available, device_count=lambda: count if available else 0
    )
    return t


# --- the role: GPU by default in a real lab, the CPU only where a lab says so -------------------
def test_role_defaults_measure_the_vgpu():
    defaults = load(ROOT / "roles/mlperf/defaults/main.yml")
    spec = load(ROOT / "roles/mlperf/meta/argument_specs.yml")["argument_specs"]["main"]
    options = spec["options"]
    assert (defaults["mlperf_sut"], defaults["mlperf_device"]) == ("torch", "cuda")
    assert defaults["mlperf_simulated"] is False
    names = {re.split(r"[<>=!~ ]", pkg)[0] for pkg in defaults["mlperf_packages"]}
    assert {"torch", "torchvision", "transformers", "mlcommons-loadgen"} <= names
    # the LoadGen range the code calls correctly (issue 17, L1), as pyproject.toml says
    assert "mlcommons-loadgen>=5.0.6" in defaults["mlperf_packages"]
    assert "onnxruntime" not in defaults["mlperf_packages"]
    # every role variable is documented, with the same default
    assert set(defaults) == set(options), set(defaults) ^ set(options)
    for name, value in defaults.items():
        o = options[name]
        assert o.get("description"), name
        if "default" in o and not (isinstance(value, str) and "{{" in value):
            assert o["default"] == value, name
        if "choices" in o:
            assert value in o["choices"], name


def test_simulated_lab_sets_the_cpu_on_purpose():
    from miglab.mlperf.guest.backends.reference import SUTS
    from miglab.sim.lab import RUNTIME_PACKAGES

    sim = load(ROOT / "inventories/sim/group_vars/guests/roles.yml")
    assert sim["mlperf_simulated"] is True  # every run and the report say SIMULATED
    # a SUT of the CPU, on the CPU, both set there (not the role's torch on cuda)
    assert sim["mlperf_device"] == "cpu"
    assert sim["mlperf_sut"] in SUTS and sim["mlperf_sut"] != "torch"
    # what `miglab sim up` downloads: the reference SUTs' runtimes, and the nvidia backend's
    harness = sim.get("mlperf_harness_packages", ["jinja2", "pyyaml"])
    assert set(sim["mlperf_packages"]) | set(harness) == set(RUNTIME_PACKAGES)
    converge = load(ROOT / "roles/mlperf/molecule/default/converge.yml")[0]["vars"]
    # a fixed-rate SUT, so the two VMs' windows overlap whatever the machine's load
    assert (converge["mlperf_sut"], converge["mlperf_device"]) == ("slice-model", "cpu")


@pytest.mark.parametrize("lab", ["example-r750xa", "example-h200"])
def test_example_real_labs_get_the_gpu_defaults(lab):
    names = ("mlperf_sut", "mlperf_device", "mlperf_simulated", "mlperf_packages")
    files = sorted((ROOT / "inventories" / lab).rglob("*.yml"))
    assert files
    for f in files:
        text = f.read_text()
        assert not [n for n in names if n in text], f  # nothing overrides the role's defaults


# --- the refusal ---------------------------------------------------------------------------
def test_torch_without_cuda_is_refused_in_one_line(monkeypatch, no_driver_smi):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(False, cuda=None))
    with pytest.raises(device_lib.NoCudaDevice) as exc:
        device_lib.require_cuda("torch", "cuda")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("no CUDA device visible in this VM: torch.cuda.is_available() is False")
    assert "built for CUDA none: a CPU-only build" in msg
    assert f"nvidia-smi says: {NO_DRIVER} (exit 9)" in msg
    assert msg.endswith(
        "refusing to measure the CPU; set mlperf_device: cpu (python -m miglab.mlperf.run "
        "--device cpu) to run on the CPU on purpose"
    )
    assert isinstance(exc.value, BackendError)  # the run command: exit 2, one error: line


def test_torch_with_cuda_passes_and_counts_devices(monkeypatch, no_driver_smi):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(True, count=1))
    device_lib.require_cuda("torch", "cuda")
    device_lib.require_cuda("torch", "cuda:0")
    with pytest.raises(device_lib.NoCudaDevice, match=r"no CUDA device 1 in this VM: torch sees 1"):
        device_lib.require_cuda("torch", "cuda:1")


def test_cpu_on_purpose_checks_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # importing torch would fail
    device_lib.require_cuda("torch", "cpu")
    device_lib.require_cuda("onnxruntime", "cpu")


def test_torch_absent_is_said(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(BackendError, match="the torch SUT needs torch, which is not installed"):
        device_lib.require_cuda("torch", "cuda")


@pytest.mark.parametrize("bad", ["gpu", "cuda:", "cuda:x", "cuda:١", "tpu:0"])
def test_device_option_is_checked(bad):
    with pytest.raises(BackendError, match="use cuda, cuda:N or cpu"):
        device_lib.parse_device(bad)
    assert device_lib.parse_device("CUDA:2") == ("cuda", 2)
    assert device_lib.parse_device(None, default="cpu") == ("cpu", None)


def test_onnxruntime_without_cuda_provider_is_refused(no_driver_smi):
    ort = pytest.importorskip("onnxruntime")
    assert "CUDAExecutionProvider" not in ort.get_available_providers()  # the CPU build here
    with pytest.raises(device_lib.NoCudaDevice) as exc:
        device_lib.require_cuda("onnxruntime", "cuda")
    msg = str(exc.value)
    assert msg.startswith(
        "no CUDA device visible in this VM: ONNX Runtime has no CUDA execution provider (it has "
    )
    assert "CPUExecutionProvider" in msg and "install onnxruntime-gpu" in msg
    assert "refusing to measure the CPU" in msg


def test_onnxruntime_session_that_fell_back_to_the_cpu_is_refused(no_driver_smi):
    class Session:
        def get_providers(self):
            return ["CPUExecutionProvider"]

    with pytest.raises(device_lib.NoCudaDevice, match="could not start its CUDA execution"):
        device_lib.require_cuda_session(Session())


def _run_cmd(tmp_path, *args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "miglab.mlperf.run", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_run_command_refuses_onnxruntime_on_cuda_and_writes_nothing(tmp_path, no_driver_smi):
    """``--device cuda`` with the onnxruntime SUT in a guest without a CUDA provider: exit 2, one
    line, no run folder (before this, the device was ignored and the CPU measured)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("mlperf_loadgen")
    env = dict(os.environ, PATH=f"{no_driver_smi}:{os.environ['PATH']}")
    p = _run_cmd(
        tmp_path, "--sut", "onnxruntime", "--model", "tiny-conv", "--device", "cuda",
        "--benchmark", "resnet50", "--out", tmp_path / "vm1", "--raw-seconds", "0",
        "--target-qps", "100", "--min-duration-ms", "100", "--min-query-count", "1",
        env=env,
    )  # fmt: skip
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: no CUDA device visible in this VM: ONNX Runtime has no CUDA execution provider"
    )
    assert f"nvidia-smi says: {NO_DRIVER} (exit 9)" in lines[0]
    assert p.stdout == "" and not (tmp_path / "vm1").exists()


def test_run_command_refuses_torch_without_cuda(tmp_path, no_driver_smi):
    """The torch SUT (the role's default) in a guest whose torch sees no GPU: exit 2 and the line
    naming what to set, before anything is loaded."""
    pytest.importorskip("mlperf_loadgen")
    pkg = tmp_path / "site" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import types\n__version__ = '2.5.1+cpu'\nversion = types.SimpleNamespace(cuda=None)\n"
        "cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)\n"
    )
    env = dict(
        os.environ,
        PATH=f"{no_driver_smi}:{os.environ['PATH']}",
        PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), *sys.path]),
    )
    p = _run_cmd(
        tmp_path, "--sut", "torch", "--device", "cuda", "--benchmark", "resnet50",
        "--out", tmp_path / "vm1", env=env,
    )  # fmt: skip
    assert p.returncode == 2, p.stdout + p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith(
        "error: no CUDA device visible in this VM: torch.cuda.is_available() is False"
    )
    assert "set mlperf_device: cpu" in line and not (tmp_path / "vm1").exists()


# --- the device record ---------------------------------------------------------------------
def test_gpu_record_from_real_h200_captures():
    record = read_gpu_device(
        (SMI / "h200-query-gpu.csv").read_text(), (SMI / "h200-q.txt").read_text(), fields=None
    )
    assert record == {
        "kind": "cuda",
        "name": "NVIDIA H200",
        "vgpu_type": None,  # passthrough: Virtualization Mode is Pass-Through
        "uuid": "GPU-00000000-0000-0000-0000-000000000000",
        "driver": "580.159.04",
        "cuda": "13.0",
    }
    assert read_gpu_device(None, (SMI / "h200-q.xml").read_text()) == record


def test_vgpu_type_is_the_product_name_of_a_vgpu_guest():
    """A real vGPU guest's nvidia-smi -q (GRID V100D-8C, driver 535.216.01)."""
    record = read_gpu_device(None, (SMI / "v100d-vgpu-guest-q.txt").read_text())
    assert record == {
        "kind": "cuda",
        "name": "GRID V100D-8C",
        "vgpu_type": "GRID V100D-8C",
        "uuid": "GPU-57abc772-1dd3-11b2-8fae-e31710b8f307",
        "driver": "535.216.01",
        "cuda": "12.2",
    }
    check_device(record, "x")  # what the guest writes is what the reader accepts


def test_gpu_record_picks_the_gpu_by_uuid_or_says_it_is_not_there():
    csv_text = (SMI / "h200-query-gpu.csv").read_text()
    zero = "GPU-00000000-0000-0000-0000-000000000000"
    assert read_gpu_device(csv_text, None, fields=None, uuid=zero)["uuid"] == zero
    with pytest.raises(ValidationError) as exc:
        read_gpu_device(csv_text, None, fields=None, uuid="GPU-11111111-0000-0000-0000-0")
    assert str(exc.value.problems[0]) == (
        "nvidia-smi: --query-gpu: no GPU with UUID GPU-11111111-0000-0000-0000-0 (1 listed)"
    )
    with pytest.raises(ValidationError, match="no GPU 1: 1 listed"):
        read_gpu_device(csv_text, None, fields=None, index=1)
    with pytest.raises(ValidationError, match="no nvidia-smi output"):
        read_gpu_device(None, None)


def test_describe_reads_the_guests_nvidia_smi(standin_smi):
    """The guest's record, from the GRID stand-in's nvidia-smi (its --query-gpu and -q)."""
    record = device_lib.describe("cuda")
    assert record == {
        "kind": "cuda",
        "name": "NVIDIA H200X-141C",
        "vgpu_type": "NVIDIA H200X-141C",
        "uuid": "GPU-00000000-0000-0000-0000-000000000000",
        "driver": "535.216.01",
        "cuda": "12.2",
    }
    check_device(record, "x")
    # torch's UUID for the device picks nvidia-smi's row; one nvidia-smi does not list is said
    other = device_lib.describe("cuda", uuid="GPU-9a48c30d-4e93-df4c-5c50-04ae00c11a75", name="X")
    assert other["name"] == "X" and other["uuid"] == "GPU-9a48c30d-4e93-df4c-5c50-04ae00c11a75"
    assert "no GPU with UUID" in other["note"]
    check_device(other, "x")


def test_describe_without_nvidia_smi_says_so(no_driver_smi):
    record = device_lib.describe("cuda:0", name="NVIDIA H200")
    assert record["kind"] == "cuda" and record["name"] == "NVIDIA H200"
    assert record["note"].startswith("nvidia-smi --query-gpu: NVIDIA-SMI has failed")
    check_device(record, "x")


def test_describe_cpu():
    record = device_lib.describe("cpu")
    assert record["kind"] == "cpu" and record["cpus"] >= 1 and record["name"]
    assert record["name"] == device_lib.cpu_name()
    check_device(record, "x")


# --- miglab_run.json's device ----------------------------------------------------------------
def test_run_meta_reads_the_device(tmp_path):
    record = read_gpu_device(None, (SMI / "v100d-vgpu-guest-q.txt").read_text())
    (tmp_path / "miglab_run.json").write_text(json.dumps({"device": record}))
    m = read_run_meta(tmp_path)
    assert m.device == record and "device" not in m.extra
    assert m.as_json()["device"] == record


def test_run_meta_reads_an_older_miglabs_device_text():
    """The words an older miglab wrote (a real run on the H200, bench/results-gpu)."""
    run = ROOT / "bench/results-gpu/results/h200/single/vm1/resnet50/Offline/performance/run_1"
    m = read_run_meta(run)
    assert m.device == {"kind": "cuda", "name": "NVIDIA H200 (140 GiB, cuda 0)"}


@pytest.mark.parametrize(
    ("device", "problems"),
    [
        (["cuda"], [("device", "must be an object, got list")]),
        ({"name": "x"}, [("device.kind", "missing (one of cuda, cpu)")]),
        (
            {"kind": "tpu", "name": "x"},
            [("device.kind", "must be one of cuda, cpu, got 'tpu'")],
        ),
        (
            {"kind": "cuda"},
            [("device.name", "missing (what the run measured, e.g. the GPU's name)")],
        ),
        (
            {"kind": "cuda", "name": ""},
            [("device.name", "must be a non-empty text of at most 200 characters, got ''")],
        ),
        (
            {"kind": "cuda", "name": "A100", "uuid": "57abc772"},
            [("device.uuid", "must be a GPU-... or MIG-... UUID, got '57abc772'")],
        ),
        (
            {"kind": "cuda", "name": "A100", "driver": "r535"},
            [("device.driver", "must be a driver version such as 535.216.01, got 'r535'")],
        ),
        (
            {"kind": "cuda", "name": "A100", "cuda": 12.2},
            [("device.cuda", "must be a non-empty text of at most 200 characters, got float")],
        ),
        (
            {"kind": "cpu", "name": "Xeon", "uuid": "GPU-1"},
            [("device.uuid", "a CPU has none (only a cuda device has vgpu_type, uuid, ...)")],
        ),
        (
            {"kind": "cpu", "name": "Xeon", "cpus": 0},
            [("device.cpus", "must be an integer of 1 or more, got int 0")],
        ),
        (
            {"kind": "cuda", "name": "A100", "cpus": 8},
            [("device.cpus", "a cuda device has none (cpus is a CPU's)")],
        ),
        (
            {"kind": "cuda", "name": "A100", "gpu": "x"},
            [
                (
                    "device.gpu",
                    "unknown key (a device has kind, name, vgpu_type, uuid, driver, cuda, "
                    "cpus, note)",
                )
            ],
        ),
    ],
)
def test_run_meta_refuses_a_bad_device_field_by_field(tmp_path, device, problems):
    f = tmp_path / "miglab_run.json"
    f.write_text(json.dumps({"device": device}))
    with pytest.raises(ValidationError) as exc:
        read_run_meta(tmp_path)
    assert [(p.file, p.field, p.reason) for p in exc.value.problems] == [
        (str(f), field, reason) for field, reason in problems
    ]
