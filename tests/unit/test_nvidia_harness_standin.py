"""The stand-in of NVIDIA's v1.1 MLPerf Inference harness (miglab/sim/standins/nvidia-harness).

The tree is assembled into tmp_path (assemble.py) and run as the simulated lab runs it: a fake
``nvidia-smi`` on PATH shows what a VM with the MIG-backed vGPU grid_a100d-2-20c shows (the
vGPU type's name and the board's PCI id 0x20B5), and a ``uname`` that answers ``-p`` like the
harness image's Ubuntu does. Checked: the harness's own detection (the issue's problem: NVIDIA's
bare-metal A100_PCIe_80GB class matches the vGPU by PCI id, miglab's entry wins only by sorting
first), the whole flow with miglab's nvidia backend (launch "inside": make build, detection,
generate_engines, run_harness with the real LoadGen against the MIG-slice rate model, logs
collected into the results tree) and the real error texts. Needs no docker; the flow needs make
and mlperf_loadgen (skipped without them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from testlib import ROOT

STANDIN = ROOT / "miglab" / "sim" / "standins" / "nvidia-harness"
GPU = "A100-PCIE-80GB"
PROFILE = "2g.20gb"
MIGLAB_ID = "vA100-PCIe-80GB_2g.20gbx1"
NVIDIA_ID = "A100-PCIe-80GBx1"
GPU_UUID = "GPU-5c0b9d0c-1b2d-4f3a-9e8f-0123456789ab"
MIG_UUID = "MIG-0d2f1a3b-4c5d-5e6f-8a9b-0c1d2e3f4a5b"

# nvidia-smi in a VM with vGPU grid_a100d-2-20c (GRID 535 driver); FAKE_SMI_* change it
FAKE_NVIDIA_SMI = f"""#!/bin/sh
# test double: nvidia-smi in a VM with one MIG-backed vGPU
name="${{FAKE_SMI_NAME:-GRID A100D-2-20C}}"
pci="${{FAKE_SMI_PCI:-0x20B510DE}}"
case "$*" in
  "--query-gpu=gpu_name,pci.device_id,uuid --format=csv")
    echo "name, pci.device_id, uuid"
    echo "$name, $pci, {GPU_UUID}";;
  "-L")
    echo "GPU 0: $name (UUID: {GPU_UUID})"
    if [ -n "$FAKE_SMI_MIG" ]; then
      echo "  MIG 2g.20gb     Device  0: (UUID: {MIG_UUID})"
    fi;;
  "")
    if [ -z "$FAKE_SMI_NO_DRIVER" ]; then
      echo "| NVIDIA-SMI 535.216.01     Driver Version: 535.216.01     CUDA Version: 12.2     |"
    fi;;
  *) echo "fake nvidia-smi: $* is not faked" >&2; exit 2;;
esac
"""
# uname -p: Ubuntu's answer (the machine) unless FAKE_UNAME_P says otherwise (Debian: unknown)
FAKE_UNAME = """#!/bin/sh
# test double: uname -p / -i as the harness image's Ubuntu answers
case "$*" in
  -p|-i) if [ -n "$FAKE_UNAME_P" ]; then echo "$FAKE_UNAME_P"; else exec /bin/uname -m; fi;;
  *) exec /bin/uname "$@";;
esac
"""


def _assembler():
    spec = importlib.util.spec_from_file_location("nvh_assemble", STANDIN / "assemble.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _have_loadgen() -> bool:
    return importlib.util.find_spec("mlperf_loadgen") is not None


needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
needs_loadgen = pytest.mark.skipif(
    not _have_loadgen(), reason="mlperf_loadgen (mlcommons-loadgen) is not importable"
)


@pytest.fixture
def tree(tmp_path):
    out = tmp_path / "harness"
    _assembler().assemble("v1.1", out)
    return out


@pytest.fixture
def vm(tmp_path, monkeypatch):
    """PATH with the fake nvidia-smi, uname and this interpreter as python3."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("nvidia-smi", FAKE_NVIDIA_SMI), ("uname", FAKE_UNAME)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    # python3: this interpreter (a wrapper, not a link: a venv's python finds its packages by
    # the path it is started as)
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    for var in (
        "FAKE_SMI_NAME",
        "FAKE_SMI_PCI",
        "FAKE_SMI_MIG",
        "FAKE_SMI_NO_DRIVER",
        "FAKE_UNAME_P",
        "CUDA_VISIBLE_DEVICES",
        "USE_CPU",
        "LOG_DIR",
        "MLPERF_SCRATCH_PATH",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PWD", str(tmp_path))
    return bin_dir


def _run(cmd, cwd, **env):
    full = dict(os.environ, **env)
    return subprocess.run(cmd, cwd=cwd, env=full, capture_output=True, text=True, timeout=120)


def _system_id(tree, **env):
    res = _run(["python3", "scripts/get_system_id.py"], tree, **env)
    return res.returncode, res.stdout.strip().splitlines()[-1:] or [""], res.stderr


def _vm_system(prefix=""):
    from miglab.mlperf.guest.backends.nvidia.v1_1 import V1_1

    return V1_1, V1_1.vm_system(GPU, PROFILE, 1, prefix)


# --- assemble.py -----------------------------------------------------------------------------


def test_assemble_copies_the_round_and_the_shared_module_idempotently(tmp_path):
    asm = _assembler()
    out = tmp_path / "t"
    written = asm.assemble("v1.1", out)
    assert out / "code" / "common" / "standin_loadgen.py" in written
    assert (out / "code" / "common" / "standin_loadgen.py").read_bytes() == (
        STANDIN / "common" / "standin_loadgen.py"
    ).read_bytes()
    for rel in (
        "Makefile",
        "code/main.py",
        "code/common/system_list.py",
        "scripts/get_system_id.py",
    ):
        assert (out / rel).is_file(), rel
    for src in (STANDIN / "v1.1").rglob("*"):
        if src.is_file() and "__pycache__" not in src.parts:
            dst = out / src.relative_to(STANDIN / "v1.1")
            assert stat.S_IMODE(dst.stat().st_mode) == stat.S_IMODE(src.stat().st_mode), dst
    assert asm.assemble("v1.1", out) == []  # nothing changed: nothing written
    (out / "Makefile").write_text("changed\n")
    assert asm.assemble("v1.1", out) == [out / "Makefile"]
    with pytest.raises(ValueError, match="no stand-in harness round 'v9.9'"):
        asm.assemble("v9.9", out)
    cli = _run(
        [sys.executable, str(STANDIN / "assemble.py"), "v1.1", str(tmp_path / "u")], tmp_path
    )
    assert cli.returncode == 0 and "stand-in harness v1.1" in cli.stdout


def test_every_file_of_the_standin_says_it_is_one():
    files = [
        p
        for p in STANDIN.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]
    assert len(files) > 20
    for p in files:
        text = p.read_text(encoding="utf-8")
        assert "STAND-IN" in "\n".join(text.splitlines()[:3]), p
        if "v1.1" in p.relative_to(STANDIN).parts:  # names the real file @ the round's commit
            assert "912dcdb9163736beca40a1f86e25d1305deab549" in text, p


# --- the harness's own detection: the issue --------------------------------------------------


def test_the_bare_harness_detects_the_vgpu_as_nvidias_bare_metal_system(tree, vm):
    rc, (sid,), err = _system_id(tree)
    assert rc == 0, err
    assert sid == NVIDIA_ID  # PCI id 20B5 matches A100_PCIe_80GB first: the problem


def test_miglabs_entry_is_detected_with_and_without_prefix_and_mig_line(tree, vm):
    round_, system = _vm_system()
    round_.install_system(tree, system)
    assert _system_id(tree)[1] == [MIGLAB_ID]
    assert _system_id(tree, FAKE_SMI_MIG="1")[1] == ["vA100-PCIe-80GB_2g.20gb-MIG_1x2g.20gb"]
    assert system.mig_system_id == "vA100-PCIe-80GB_2g.20gb-MIG_1x2g.20gb"

    _assembler().assemble("v1.1", tree)  # pristine system_list.py again
    round_, prefixed = _vm_system("R750xa")
    round_.install_system(tree, prefixed)
    assert _system_id(tree)[1] == ["R750xa_vA100-PCIe-80GB_2g.20gbx1"]


def test_an_entry_named_after_the_board_loses_to_nvidias_class(tree, vm):
    """The entry as miglab first named it (attribute vA100_PCIe_80GB_2g20gb) sorts after
    A100_PCIe_80GB in dir(KnownSystems): NVIDIA's class matches the PCI id first."""
    sl = tree / "code" / "common" / "system_list.py"
    text = sl.read_text()
    anchor = "    @staticmethod\n    def get_all_system_classes"
    old_entry = (
        '    vA100_PCIe_80GB_2g20gb = SystemClass("vA100-PCIe-80GB_2g.20gb", '
        '["GRID A100D-2-20C"], [], Architecture.Ampere, [1])\n\n'
    )
    sl.write_text(text.replace(anchor, old_entry + anchor))
    assert sorted(["vA100_PCIe_80GB_2g20gb", "A100_PCIe_80GB"])[0] == "A100_PCIe_80GB"
    assert _system_id(tree)[1] == [NVIDIA_ID]
    # the same entry under miglab's name (the vGPU type first) wins
    sl.write_text(
        text.replace(
            anchor, old_entry.replace("vA100_PCIe_80GB_2g20gb", "A100D_2_20C_vGPUx1") + anchor
        )
    )
    assert _system_id(tree)[1] == [MIGLAB_ID]


def test_detection_errors_are_the_real_ones(tree, vm):
    rc, _, err = _system_id(tree, FAKE_SMI_NAME="GRID H100-1-10C", FAKE_SMI_PCI="0x233110DE")
    assert rc == 1
    assert (
        "RuntimeError: Cannot find valid configs for 1x GRID H100-1-10C. Please follow "
        "performance_tuning_guide.md to add support for a new GPU." in err
    )
    # a Debian userland: `uname -p` is "unknown", Python's platform.processor() "", so no class's
    # CPU architecture matches, not even the PCI id's (the real image is Ubuntu: x86_64)
    rc, _, err = _system_id(tree, FAKE_UNAME_P="unknown")
    assert rc == 1 and "Cannot find valid configs for 1x GRID A100D-2-20C." in err


@needs_make
def test_the_makefile_stops_as_the_real_one(tree, vm):
    res = _run(["make", "info"], tree)
    assert res.returncode == 0, res.stderr
    assert "Architecture=x86_64" in res.stdout or "Architecture=aarch64" in res.stdout
    assert "localhost/miglab-sim-mlperf-runtime:latest" in res.stdout
    # Debian's uname -p ("unknown"): every target stops, unless ARCH is given
    res = _run(["make", "info"], tree, FAKE_UNAME_P="unknown")
    assert res.returncode == 2
    assert "MLPerf Inference only supports x86 and aarch64 system now." in res.stderr
    assert _run(["make", "info", "ARCH=x86_64"], tree, FAKE_UNAME_P="unknown").returncode == 0
    # no driver version in nvidia-smi's table
    res = _run(["make", "info"], tree, FAKE_SMI_NO_DRIVER="1")
    assert res.returncode == 2
    assert "MLPerf Inference v1.1 code requires NVIDIA Driver Version >= 465.xx" in res.stderr
    # MIG_CONF outside ALLOWED_MIG_CONFS: the real warning; the fallback to OFF takes for a value
    # from the environment only (make keeps a command line's value over the makefile's)
    warning = "MIG_CONF was not set to a valid value. Default to OFF to be safe."
    res = _run(["make", "info"], tree, MIG_CONF="7")
    assert warning in res.stderr and "MIG_CONF=OFF" in res.stdout
    res = _run(["make", "info", "MIG_CONF=7"], tree)
    assert warning in res.stderr and "MIG_CONF=7" in res.stdout
    # the image targets' command lines (printed, not run: make -n)
    res = _run(["make", "-n", "build_docker", "NO_BUILD=1"], tree)
    assert "docker pull localhost/miglab-sim-mlperf-runtime:latest" in res.stdout
    assert (
        "-t mlperf-inference:" in res.stdout and "-f docker/Dockerfile.x86_64 docker" in res.stdout
    )
    assert "Dockerfile.build" not in res.stdout
    res = _run(["make", "-n", "build_docker", "NO_BUILD=1", "NO_DOCKER_PULL=1"], tree)
    assert "docker pull" not in res.stdout and "docker build" in res.stdout
    res = _run(["make", "-n", "docker_add_user"], tree)
    assert res.stdout.rstrip().endswith("- < docker/Dockerfile.user")
    res = _run(["make", "-n", "launch_docker", "MIG_CONF=OFF", "DOCKER_COMMAND=make build"], tree)
    assert res.returncode == 0, res.stderr
    assert "docker run --gpus=all --rm  -w /work" in res.stdout
    assert f"-v {tree.parent}:/work" in res.stdout  # HOST_VOL: the environment's PWD
    assert "--net host" in res.stdout and res.stdout.rstrip().endswith("make build")


# --- the flow with miglab's backend (launch inside) -------------------------------------------


def _settings(tree, **kw):
    from miglab.mlperf.guest.backends.nvidia import NvidiaSettings

    base = dict(
        harness_dir=str(tree),
        launch="inside",
        gpu=GPU,
        profile=PROFILE,
        benchmarks=("resnet50",),
        scenarios=("Offline",),
        min_duration_ms=1000,
        min_query_count=100,
        target_qps=6000,  # >= the modelled 4571/s of 2 of 7 slices: a VALID Offline run
    )
    base.update(kw)
    return NvidiaSettings(**base)


@needs_make
@needs_loadgen
def test_the_whole_flow_inside_the_container(tree, vm, tmp_path):
    from miglab.mlperf.guest.backends.nvidia import NvidiaBackend

    backend = NvidiaBackend()
    backend.prepare(_settings(tree))
    assert backend.system_id == MIGLAB_ID
    engine = (
        tree / "build" / "engines" / MIGLAB_ID / "resnet50" / "Offline"
        / "resnet50-Offline-gpu-b512-int8.lwis_k_99_MaxP.plan"
    )  # fmt: skip
    note = json.loads(engine.read_text())
    assert note["format"] == "miglab-standin-engine/1" and "STAND-IN" in note["standin"]
    assert (tree / "build" / "bin" / "harness_default").stat().st_mode & 0o111

    out = tmp_path / "results"
    run_dir = backend.run("resnet50", "Offline", "PerformanceOnly", out, 1)
    assert run_dir == out / "resnet50" / "Offline" / "performance" / "run_1"
    for name in ("mlperf_log_detail.txt", "mlperf_log_summary.txt", "miglab_run.json"):
        assert (run_dir / name).is_file(), name
    meta = json.loads((run_dir / "miglab_run.json").read_text())
    assert meta["backend"] == "nvidia"
    assert meta["loadgen"]["valid"] is True, meta["loadgen"]
    assert 3000 < meta["loadgen"]["value"] <= 4572  # 16000 x 2/7 samples/s at most
    h = meta["harness"]
    assert h["round"] == "v1.1" and h["system_id"] == MIGLAB_ID and h["launch"] == "inside"
    assert h["command"][:2] == ["make", "run_harness"]
    assert "--test_mode=PerformanceOnly" in h["command"][-1]
    # where the real harness writes: build/logs/<timestamp>/<system id>_TRT/resnet50/Offline
    src = Path(meta["harness_log_dir"])
    assert src.parent.parent.name == f"{MIGLAB_ID}_TRT" and src.parent.name == "resnet50"
    assert src.parent.parent.parent.parent.name == "logs"
    user_conf = tree / "measurements" / f"{MIGLAB_ID}_TRT" / "resnet50" / "Offline" / "user.conf"
    assert user_conf.read_text().splitlines() == [
        "*.Offline.target_qps = 6000.0",
        "*.Offline.performance_sample_count_override = 2048",
        "*.Offline.min_query_count = 100",
        "*.Offline.min_duration = 1000",
    ]
    summary = json.loads((src.parent.parent.parent / "perf_harness_summary.json").read_text())
    assert list(summary) == [f"{MIGLAB_ID}_TRT-lwis_k_99_MaxP-Offline"]
    assert summary[f"{MIGLAB_ID}_TRT-lwis_k_99_MaxP-Offline"]["resnet50"].endswith(
        "Result is VALID"
    )


@needs_make
def test_with_the_vgpus_mig_line_the_configs_are_written_for_the_mig_id(tree, vm, monkeypatch):
    from miglab.mlperf.guest.backends.nvidia import NvidiaBackend

    monkeypatch.setenv("FAKE_SMI_MIG", "1")
    backend = NvidiaBackend()
    backend.prepare(_settings(tree, steps=("build", "detect", "generate_engines")))
    mig_id = "vA100-PCIe-80GB_2g.20gb-MIG_1x2g.20gb"
    assert backend.system_id == mig_id
    engines = tree / "build" / "engines" / mig_id / "resnet50" / "Offline"
    assert [p.name for p in engines.iterdir()] == [
        "resnet50-Offline-gpu-b512-int8.lwis_k_99_MaxP.plan"
    ]


@needs_make
@needs_loadgen
def test_run_harness_prints_the_result_as_the_real_one(tree, vm):
    round_, system = _vm_system()
    round_.install(tree, system, ["bert-99"], ["Server"])
    assert _run(["make", "build"], tree).returncode == 0
    args = "--benchmarks=bert --scenarios=Server"
    gen = _run(["make", "generate_engines", f"RUN_ARGS={args}"], tree)
    assert gen.returncode == 0, gen.stdout + gen.stderr
    assert "Using workspace size: 5368709120" in gen.stderr  # the builder's default, 5 GiB
    engine = (
        f"./build/engines/{MIGLAB_ID}/bert/Server/"
        "bert-Server-gpu-int8_S_384_B_16_P_2_vs.custom_k_99_MaxP.plan"
    )
    assert f"Building {engine}" in gen.stderr
    res = _run(
        [
            "make",
            "run_harness",
            f"RUN_ARGS={args} --test_mode=PerformanceOnly --min_duration=500 "
            "--min_query_count=50 --server_target_qps=200",
        ],
        tree,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"Engine Path: {engine}" in res.stdout
    assert "Result: result_scheduled_samples_per_sec: " in res.stderr
    assert "======================= Perf harness results: =======================" in res.stdout
    assert f"{MIGLAB_ID}_TRT-custom_k_99_MaxP-Server:" in res.stdout
    assert "    bert: No accuracy results in PerformanceOnly mode." in res.stdout
    logs = list(
        (tree / "build" / "logs").glob(f"*/{MIGLAB_ID}_TRT/bert-99/Server/mlperf_log_detail.txt")
    )
    assert len(logs) == 1


# --- errors with the real texts ---------------------------------------------------------------


@needs_make
@needs_loadgen
def test_a_missing_engine_stops_run_harness(tree, vm, tmp_path):
    from miglab.mlperf.guest.backends.base import BackendError
    from miglab.mlperf.guest.backends.nvidia import NvidiaBackend

    backend = NvidiaBackend()
    backend.prepare(_settings(tree, steps=("build", "detect")))  # no generate_engines
    res = _run(
        [
            "make",
            "run_harness",
            "RUN_ARGS=--benchmarks=resnet50 --scenarios=Offline --test_mode=PerformanceOnly",
        ],
        tree,
    )
    assert res.returncode == 2
    engine = (
        f"./build/engines/{MIGLAB_ID}/resnet50/Offline/"
        "resnet50-Offline-gpu-b512-int8.lwis_k_99_MaxP.plan"
    )
    assert f"RuntimeError: File {engine} does not exist." in res.stderr
    with pytest.raises(BackendError, match="make run_harness .* failed"):
        backend.run("resnet50", "Offline", "PerformanceOnly", tmp_path / "r", 1)


@needs_make
def test_no_config_for_the_detected_system(tree, vm, tmp_path):
    """miglab's entry without its configs: generate_engines only warns (exit 0) and builds
    nothing; run_harness runs nothing and print_harness_result.py fails, as the real ones do."""
    round_, system = _vm_system()
    round_.install_system(tree, system)
    args = "RUN_ARGS=--benchmarks=resnet50 --scenarios=Offline"
    res = _run(["make", "generate_engines", args], tree)
    assert res.returncode == 0, res.stderr
    assert (
        f"No registered config for resnet50.Offline.{MIGLAB_ID} for "
        "WorkloadSetting(lwis_k_99_MaxP)" in res.stderr
    )
    assert not (tree / "build" / "engines").exists()
    res = _run(["make", "run_harness", args + " --test_mode=PerformanceOnly"], tree)
    assert res.returncode == 2
    assert "TypeError: 'NoneType' object is not iterable" in res.stderr


@needs_make
def test_a_config_with_a_field_the_workload_does_not_take_is_refused(tree, vm):
    round_, system = _vm_system()
    round_.install(tree, system, ["resnet50"], ["Offline"])
    conf = tree / "configs" / "resnet50" / "Offline" / "__init__.py"
    conf.write_text(
        conf.read_text().replace("    gpu_copy_streams = 2\n", "    soft_drop = 1.0\n", 2)
    )
    res = _run(
        ["make", "generate_engines", "RUN_ARGS=--benchmarks=resnet50 --scenarios=Offline"], tree
    )
    assert res.returncode == 2
    assert "<config 'A100_PCIe_80GBx1'> contains unsupported Field 'soft_drop'" in res.stderr


@needs_make
def test_the_harness_binary_refuses_flags_it_does_not_define(tree, vm):
    assert _run(["make", "build"], tree).returncode == 0
    res = _run(["./build/bin/harness_default", "--qsl_rng_seed=1"], tree)
    assert res.returncode == 1
    assert "ERROR: unknown command line flag 'qsl_rng_seed'" in res.stderr


# --- common/standin_loadgen.py -----------------------------------------------------------------


def _standin_loadgen():
    spec = importlib.util.spec_from_file_location(
        "standin_loadgen_t", STANDIN / "common" / "standin_loadgen.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_rate_model_is_miglabs_slice_model():
    from miglab.mlperf.guest.sut.slice_model import FULL_GPU_RATE

    sl = _standin_loadgen()
    assert sl.FULL_GPU_RATE["resnet50"] == FULL_GPU_RATE["resnet50"]
    assert sl.FULL_GPU_RATE["bert"] == FULL_GPU_RATE["bert-99"]
    assert sl.service_rate("resnet50", 2) == pytest.approx(16000 * 2 / 7)
    assert sl.service_rate("bert-99", 7) == pytest.approx(1700)
    assert sl.compute_slices_of("GRID A100D-2-20C") == 2
    assert sl.compute_slices_of("NVIDIA A100D-3-40C") == 3
    assert sl.compute_slices_of("GRID A100D-20C") is None  # time-sliced
    assert (
        sl.compute_slices_of("NVIDIA A100 80GB PCIe", ["  MIG 1g.10gb     Device  0: (UUID: x)"])
        == 1
    )
    assert sl.gpu_slices_of("GRID A30-1-6C") == 4
    assert sl.gpu_slices_of("GRID A100D-2-20C") == 7
    with pytest.raises(sl.StandinError, match="compute slices must be 1 to 7"):
        sl.service_rate("resnet50", 8)
    with pytest.raises(sl.StandinError, match="models bert, resnet50 only"):
        sl.benchmark_key("dlrm")


@needs_loadgen
def test_standin_loadgen_runs_loadgen_against_the_slice(tmp_path):
    sl = _standin_loadgen()
    r = sl.run(
        "resnet50",
        "Offline",
        "PerformanceOnly",
        str(tmp_path / "logs"),
        compute_slices=7,
        batch_size=512,
        expected_qps=16000,
        min_duration_ms=300,
        min_query_count=1,
        copy_summary_to_stdout=False,
    )
    assert r["valid"] is True and r["result_validity"] == "VALID", r
    assert r["rate"] == pytest.approx(16000)
    assert 0.8 * 16000 < r["result"] <= 16001
    assert r["samples_completed"] == 5280  # 16000 x 0.3 s x 1.1, LoadGen's Offline query
    assert (tmp_path / "logs" / "mlperf_log_summary.txt").is_file()
    assert r["settings"]["performance_sample_count"] == 1024


@needs_make
def test_server_target_qps_must_be_an_integer(tree, vm):
    """arguments.py declares --server_target_qps an int (--offline_expected_qps a float)."""
    args = "--benchmarks=resnet50 --scenarios=Server --test_mode=PerformanceOnly"
    res = _run(["make", "run_harness", f"RUN_ARGS={args} --server_target_qps=1234.5"], tree)
    assert res.returncode == 2
    assert "error: argument --server_target_qps: invalid int value: '1234.5'" in res.stderr


@needs_make
@needs_loadgen
def test_the_guest_command_exits_0_for_a_valid_harness_run(tree, vm, tmp_path, capsys):
    """``python -m miglab.mlperf.run --backend nvidia``: the harness's steps, its run, and the
    reference backend's exit status -- 0 for VALID, 1 for a run LoadGen calls INVALID (here
    Offline asks for fewer samples than the minimum duration needs: target 100 QPS)."""
    from miglab.mlperf.guest.run import main

    argv = [
        "--backend", "nvidia", "--benchmark", "resnet50", "--scenario", "Offline",
        "--out", str(tmp_path / "out"), "--run", "1", "--harness-dir", str(tree),
        "--harness-launch", "inside", "--gpu", GPU, "--profile", PROFILE,
        "--min-duration-ms", "1000", "--min-query-count", "100", "--target-qps", "6000",
    ]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()[-1]
    assert out.startswith("VALID resnet50 Offline PerformanceOnly: result_samples_per_second")
    run2 = [*argv[:9], "2", *argv[10:-1], "100", "--harness-steps", "detect"]
    assert main(run2) == 1
    meta = json.loads(
        (tmp_path / "out/resnet50/Offline/performance/run_2/miglab_run.json").read_text()
    )
    assert meta["loadgen"]["validity"] == "INVALID"
