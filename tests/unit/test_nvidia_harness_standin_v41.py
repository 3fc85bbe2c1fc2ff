"""The stand-in of NVIDIA's harness, round v4.1 (miglab/sim/standins/nvidia-harness/v4.1), in a
VM with a MIG-backed vGPU: no docker, no GPU. A fake ``nvidia-smi`` first on PATH prints what
a vGPU guest shows (``--query-gpu=gpu_name,pci.device_id,uuid,memory.total,power.limit,
power.max_limit,mig.mode.current --format=csv,noheader``: the vGPU type, the board's PCI id, the
vGPU's framebuffer, ``[N/A]`` power, MIG mode ``Enabled``; ``-L``: the GPU and its MIG device)
and a fake ``sudo`` runs its command (the harness sets the Hopper boost slider with it).

What is checked is the round's real behaviour as the stand-in reproduces it: detection finds
nothing until miglab's custom_list.py entry is installed (NVIDIA's own entries do not match a
vGPU), then picks miglab's entry (the MIG device's, as MIG mode is Enabled); and the whole flow,
NvidiaBackend with launch "inside" driving the stand-in's make targets, writes the LoadGen logs
where v4.1 writes them and miglab collects a VALID run.
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

from miglab.formats.run_meta import RUN_META
from miglab.mlperf.guest.backends.nvidia import NvidiaBackend, NvidiaSettings
from miglab.mlperf.guest.backends.nvidia.v4_1 import V4_1

ROOT = Path(__file__).resolve().parents[2]
STANDINS = ROOT / "miglab" / "sim" / "standins" / "nvidia-harness"
SOURCE = "github.com/mlcommons/inference_results_v4.1"
COMMIT = "198fc46799b3328b36ee4bcbdebfa2db5a8e6183"

# What nvidia-smi shows in a VM, per vGPU (values as the GRID stand-in and published guests show)
H100_1G = {
    "name": "NVIDIA H100-1-10C",
    "pci": "0x233110DE",
    "uuid": "GPU-5f1c2d3e-0000-4a4a-8b8b-0123456789ab",
    "mib": 10240,
    "mode": "Enabled",
    "mig": "1g.10gb",
    "mig_uuid": "MIG-7e6d5c4b-1111-4b4b-9c9c-0123456789ab",
    "compute_cap": "9.0",
    "arch": "Hopper",
}
H200_2G_NO_MIG_MODE = {
    "name": "NVIDIA H200X-2-35C",
    "pci": "0x233510DE",
    "uuid": "GPU-5f1c2d3e-0000-4a4a-8b8b-0123456789ac",
    "mib": 35840,
    "mode": "Disabled",
    "arch": "Hopper",
}
FAKE_NVIDIA_SMI = r"""#!{python}
# Test double of nvidia-smi in a VM with one vGPU, described by $FAKE_VGPU (JSON).
import json, os, sys
g = json.load(open(os.environ["FAKE_VGPU"]))
a = sys.argv[1:]
if not a:
    v = g.get("driver", "550.127.05")
    print("| NVIDIA-SMI %s       Driver Version: %s     CUDA Version: 12.4 |" % (v, v))
elif a == ["-L"]:
    for i in range(g.get("count", 1)):
        print("GPU %d: %s (UUID: %s%d)" % (i, g["name"], g["uuid"][:-1], i))
        if g.get("mig"):
            print("  MIG %-12sDevice  0: (UUID: %s%d)" % (g["mig"], g["mig_uuid"][:-1], i))
elif a[0].startswith("--query-gpu="):
    values = {{
        "gpu_name": g["name"], "name": g["name"], "pci.device_id": g["pci"],
        "uuid": g["uuid"], "memory.total": "%d MiB" % g["mib"], "power.limit": "[N/A]",
        "power.max_limit": "[N/A]", "mig.mode.current": g["mode"],
    }}
    if "compute_cap" in g:
        values["compute_cap"] = g["compute_cap"]
    names = a[0].split("=", 1)[1].split(",")
    for n in names:
        if n not in values:
            print('Field "%s" is not a valid field to query.' % n)
            sys.exit(2)
    for i in range(g.get("count", 1)):
        values["uuid"] = "%s%d" % (g["uuid"][:-1], i)
        print(", ".join(values[n] for n in names))
elif a == ["-q"]:
    print("    Product Architecture                  : %s" % g["arch"])
elif a[0] == "boost-slider" and "--vboost" in a:
    with open(os.environ["FAKE_VBOOST_LOG"], "a") as f:
        f.write(a[-1] + "\n")
    print("Successfully set vboost slider with value %s for GPU 0" % a[-1])
else:
    sys.exit(2)
"""


def _assemble(dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location("_assemble_v41b", STANDINS / "assemble.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.assemble("v4.1", dest)
    return dest


@pytest.fixture
def vm(tmp_path, monkeypatch):
    """A harness tree and a PATH whose nvidia-smi / sudo are the VM's test doubles; returns a
    function that sets the vGPU nvidia-smi shows."""
    tree = _assemble(tmp_path / "harness")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_NVIDIA_SMI.format(python=sys.executable))
    sudo = bin_dir / "sudo"
    sudo.write_text('#!/bin/sh\nexec "$@"\n')
    for f in (smi, sudo):
        f.chmod(f.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    desc = tmp_path / "vgpu.json"
    monkeypatch.setenv("FAKE_VGPU", str(desc))
    monkeypatch.setenv("FAKE_VBOOST_LOG", str(tmp_path / "vboost.log"))
    # the harness's python3 is this interpreter (it has mlperf_loadgen when the suite does)
    path = [str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("MLPINF_CUSTOM_DEFINITION_PATH", raising=False)
    monkeypatch.delenv("LOG_DIR", raising=False)

    def show(vgpu: dict) -> Path:
        desc.write_text(json.dumps(vgpu))
        return tree

    show(H100_1G)
    return show


def _py(tree: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["python3", *args], cwd=tree, capture_output=True, text=True, timeout=120, check=False
    )


def _detect(tree: Path) -> list[str]:
    res = _py(tree, *V4_1.detect_command[1:])
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


# --- the files ------------------------------------------------------------------------------------
def test_every_file_says_it_is_a_standin_and_names_its_source():
    root = STANDINS / "v4.1"
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert len(files) > 25
    for path in files:
        lines = path.read_text().splitlines()
        head = "\n".join(lines[1:4] if path.name == "VERSION" else lines[:4])
        first = lines[1] if path.name == "VERSION" else lines[0]
        assert first.startswith("# STAND-IN"), path
        assert "not NVIDIA software" in head, path
        assert SOURCE in "\n".join(lines[:6]) and COMMIT in "\n".join(lines[:6]), path
    # the real Makefile targets and layout the backend uses
    make = (root / "Makefile").read_text() + (root / "Makefile.docker").read_text()
    for target in ("generate_engines:", "run_harness:", "build_docker:", "docker_add_user:"):
        assert f"\n{target}" in make
    assert "launch_docker:" in make and "$(DOCKER_COMMAND)" in make and "MIG_CONF" in make
    assert "docker/$(ENV)/Dockerfile" in make
    # the container has no miglab: standard library, mlperf_loadgen and numpy only
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert "import miglab" not in text and "from miglab" not in text, path


def test_first_version_line_is_the_round():
    assert (STANDINS / "v4.1" / "VERSION").read_text().splitlines()[0] == "v4.1"


# --- detection ------------------------------------------------------------------------------------
def test_a_vgpu_matches_no_known_system_without_miglabs_entry(vm):
    tree = vm(H100_1G)
    res = _py(tree, "-m", "scripts.get_system_id")
    assert res.returncode == 0 and res.stdout.strip() == "None", res.stderr
    # main.py: the real message, and exit status 0
    res = _py(tree, "-m", "code.main", "--benchmarks=resnet50", "--action=generate_engines")
    assert res.returncode == 0, res.stderr
    assert "Detected system did not match any known systems. Exiting." in res.stderr
    # what it detected: the vGPU's MIG device (MIG mode Enabled drops the GPU itself)
    assert "MIG(name='NVIDIA H100-1-10C MIG-1g.10gb'" in res.stderr
    assert "max_power_limit=None, pci_id='0x233110DE', compute_sm=90, num_gpcs=1" in res.stderr
    assert not (tree / "build" / "engines").exists()


def test_detection_picks_miglabs_entry_after_install(vm):
    tree = vm(H100_1G)
    s = V4_1.vm_system("H100-PCIE-80GB", "1g.10gb", 1, "R760xa")
    V4_1.install_system(tree, s)
    gpu_key, mig_key = V4_1.keys(s)
    assert _detect(tree) == [f"KnownSystem.{mig_key}", s.system_id]
    assert _py(tree, "-m", "scripts.get_system_id").stdout.strip() == f"KnownSystem.{mig_key}"
    # NVIDIA's entries come first in KnownSystem, miglab's last
    res = _py(
        tree,
        "-c",
        "from code.common.systems.system_list import KnownSystem as K; "
        "print(' '.join(m.name for m in K))",
    )
    names = res.stdout.split()
    assert names[0] == "GH200_96GB_ARMx1" and names[-2:] == [gpu_key, mig_key]
    assert names.index("H100_PCIe_80GBx1") < names.index(gpu_key)


def test_a_guest_without_mig_mode_matches_the_gpu_entry(vm):
    tree = vm(H200_2G_NO_MIG_MODE)
    s = V4_1.vm_system("H200-SXM", "2g.35gb")
    assert _detect(tree) == ["None", "None"]
    V4_1.install_system(tree, s)
    # no compute_cap field: the SM comes from the board's PCI id (0x2335: Hopper)
    assert _detect(tree) == [f"KnownSystem.{V4_1.keys(s)[0]}", s.system_id]


def test_mig_mode_enabled_without_the_mig_device_line_matches_nothing(vm):
    tree = vm({k: v for k, v in H100_1G.items() if k != "mig"})
    V4_1.install_system(tree, V4_1.vm_system("H100-PCIE-80GB", "1g.10gb"))
    assert _detect(tree) == ["None", "None"]


def test_a_media_extension_mig_line_breaks_v41s_parser(vm):
    # "MIG 1g.10gb+me" does not fit the real regex "MIG\s+(\d+)g.(\d+)gb\s+Device": the real
    # parser then fails on None.group, as the stand-in does
    tree = vm({**H100_1G, "mig": "1g.10gb+me"})
    res = _py(tree, "-m", "scripts.get_system_id")
    assert res.returncode != 0
    assert "AttributeError: 'NoneType' object has no attribute 'group'" in res.stderr


def test_configs_register_and_engines_go_where_v41_puts_them(vm):
    tree = vm(H100_1G)
    s = V4_1.vm_system("H100-PCIE-80GB", "1g.10gb")
    V4_1.install(tree, s, ["resnet50", "bert-99"], ["Offline", "Server"])
    res = _py(
        tree,
        "-m",
        "code.main",
        "--benchmarks=resnet50,bert",
        "--scenarios=Offline,Server",
        "--action=generate_engines",
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"Detected system ID: KnownSystem.{V4_1.keys(s)[1]}" in res.stderr
    engines = tree / "build" / "engines" / s.system_id
    found = sorted(str(p.relative_to(engines)) for p in engines.rglob("*.plan"))
    assert found == [
        "bert/Offline/bert-Offline-gpu-bert-b128-int8.custom_k_99_MaxP.plan",
        "bert/Server/bert-Server-gpu-bert-b32-int8.custom_k_99_MaxP.plan",
        "resnet50/Offline/resnet50-Offline-gpu-resnet50-b256-int8.lwis_k_99_MaxP.plan",
        "resnet50/Server/resnet50-Server-gpu-resnet50-b16-int8.lwis_k_99_MaxP.plan",
    ]
    plan = json.loads(next(engines.rglob("resnet50-Offline-*.plan")).read_text())
    assert plan["standin"].startswith("STAND-IN") and plan["batch_size"] == 256


def test_a_config_inheriting_nvidias_class_is_refused(vm):
    # configs/configuration.py: a config may only extend configs of the same accelerator
    tree = vm(H100_1G)
    s = V4_1.vm_system("H100-PCIE-80GB", "1g.10gb")
    V4_1.install(tree, s, ["resnet50"], ["Offline"])
    custom = tree / "configs" / "resnet50" / "Offline" / "custom.py"
    text = custom.read_text().replace("X1_MIG(OfflineGPUBaseConfig):", "X1_MIG(H100_PCIe_80GBx1):")
    custom.write_text(text)
    res = _py(tree, "-m", "code.main", "--benchmarks=resnet50", "--action=generate_engines")
    assert res.returncode != 0
    assert (
        "<config 'VH100_PCIE_80GB_1G_10GBX1_MIG'>.system.gpu=AcceleratorConfiguration("
        in res.stderr
    )
    assert "but inherits <config 'H100_PCIe_80GBx1'>.system.gpu=" in res.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_makefile_checks_of_the_real_round(vm):
    tree = vm(H100_1G)
    run = {"cwd": tree, "capture_output": True, "text": True, "timeout": 60, "check": False}
    # Makefile.const: ARCH is `uname -p` ("unknown" on Debian): only x86_64 / aarch64 go on
    res = subprocess.run(["make", "info", "ARCH=unknown"], **run)
    assert res.returncode != 0
    assert "Not supported for docker context other than x86_64, aarch64 or Jetson Orin" in (
        res.stderr
    )
    res = subprocess.run(["make", "info", *V4_1.make_vars()], **run)
    assert res.returncode == 0, res.stderr
    assert "VERSION=v4.1" in res.stdout and "SM=90" in res.stdout
    # the driver check, with the round's (outdated) text
    vm({**H100_1G, "driver": "510.47.03"})
    res = subprocess.run(["make", "info", *V4_1.make_vars()], **run)
    assert res.returncode != 0
    assert "MLPerf Inference v3.1 code requires NVIDIA Driver Version >= 515.xx" in res.stderr
    res = subprocess.run(["make", "info", "SKIP_DRIVER_CHECK=1", *V4_1.make_vars()], **run)
    assert res.returncode == 0, res.stderr


# --- the whole flow, NvidiaBackend driving the stand-in's make targets ---------------------------
def _have_make_and_loadgen() -> str | None:
    if shutil.which("make") is None:
        return "needs GNU make"
    if importlib.util.find_spec("mlperf_loadgen") is None:
        return "needs MLPerf LoadGen (mlcommons-loadgen) in this Python"
    return None


@pytest.mark.skipif(_have_make_and_loadgen() is not None, reason=str(_have_make_and_loadgen()))
def test_two_vgpus_are_one_system_of_two_mig_devices_served_together(vm, tmp_path):
    tree = vm({**H100_1G, "name": "NVIDIA H100-3-40C", "mig": "3g.40gb", "count": 2})
    s = V4_1.vm_system("H100-PCIE-80GB", "3g.40gb", 2)
    V4_1.install(tree, s, ["resnet50"], ["Offline"])
    assert _detect(tree) == [f"KnownSystem.{V4_1.keys(s)[1]}", "vH100-PCIe-80GB_3g.40gbx2"]
    args = ["--benchmarks=resnet50", "--scenarios=Offline"]
    res = _py(tree, "-m", "code.main", *args, "--action=generate_engines")
    assert res.returncode == 0, res.stderr
    run = [*args, "--min_duration=500", "--min_query_count=1", "--offline_expected_qps=14000"]
    env = {**os.environ, "LOG_DIR": str(tmp_path / "logs")}
    opts = {"cwd": tree, "env": env, "capture_output": True, "text": True, "timeout": 120}
    cmd = ["python3", "-m", "code.main", *run, "--action=run_harness"]
    res = subprocess.run(cmd, **opts, check=False)  # no `make build` yet: no harness binary
    assert res.returncode != 0 and "Run harness failed!" in res.stderr
    assert "RuntimeError: File ./build/bin/harness_default does not exist." in res.stdout
    subprocess.run(["make", "build_harness", *V4_1.make_vars()], **opts, check=True)
    res = subprocess.run(cmd, **opts, check=False)
    assert res.returncode == 0, res.stdout[-3000:]
    (md,) = (tmp_path / "logs").rglob("metadata.json")
    data = json.loads(md.read_text())
    assert md.parent.relative_to(tmp_path / "logs").parts == (
        "vH100-PCIe-80GB_3g.40gbx2_TRT",
        "resnet50",
        "Offline",
    )
    # two 3/7 slices: 2 x 16000 x 3 / 7 samples/s
    assert (data["standin_compute_slices"], data["standin_devices"]) == (3, 2)
    assert data["standin_rate"] == pytest.approx(2 * 16000 * 3 / 7)


@pytest.mark.skipif(_have_make_and_loadgen() is not None, reason=str(_have_make_and_loadgen()))
def test_whole_flow_inside_h100_resnet50_offline(vm, tmp_path):
    tree = vm(H100_1G)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    be = NvidiaBackend()
    be.prepare(
        NvidiaSettings(
            harness_dir=str(tree),
            round="v4.1",
            launch="inside",
            gpu="H100-PCIE-80GB",
            profile="nvidia_h100-1-10c",
            prefix="R760xa",
            make_vars=(f"MLPERF_SCRATCH_PATH={scratch}",),
            min_duration_ms=1000,
            min_query_count=1,
            target_qps=2500,  # above the modelled 1g rate (16000/7): the run lasts > 1 s
            timeout_s=300,
            meta={"vm": "camp-s1-vm1", "scenario": "s1"},
        )
    )
    sid = "R760xa_vH100-PCIe-80GB_1g.10gbx1"
    assert be.system_id == sid
    assert [c[:2] for c in be.commands] == [
        ["make", "build"],
        ["python3", "-c"],
        ["make", "generate_engines"],
    ]
    out = tmp_path / "results" / "camp" / "s1" / "vm1"
    run_dir = be.run("resnet50", "Offline", "PerformanceOnly", out, 1)
    assert run_dir == out / "resnet50" / "Offline" / "performance" / "run_1"
    meta = json.loads((run_dir / RUN_META).read_text())
    assert meta["loadgen"]["valid"] is True, meta["loadgen"]
    assert meta["harness"]["round"] == "v4.1" and meta["harness"]["system_id"] == sid
    assert meta["harness"]["command"][:2] == ["make", "run_harness"]
    # v4.1's layout: build/logs/<%Y.%m.%d-%H.%M.%S>/<system id>_TRT/resnet50/Offline/
    log_dir = Path(meta["harness_log_dir"])
    assert log_dir.relative_to(tree / "build" / "logs").parts[1:] == (
        f"{sid}_TRT",
        "resnet50",
        "Offline",
    )
    assert (log_dir / "metadata.json").is_file() and (log_dir.parents[2] / "stdout.txt").is_file()
    md = json.loads((log_dir / "metadata.json").read_text())
    assert md["config_name"] == f"{sid}_TRT-lwis_k_99_MaxP-Offline"
    assert md["result_validity"] == "VALID" and md["standin_compute_slices"] == 1
    # Hopper: the harness set the boost slider before the run and reset it after
    assert (tmp_path / "vboost.log").read_text().split() == ["0", "0"]
    for name in ("mlperf_log_detail.txt", "mlperf_log_summary.txt"):
        assert (run_dir / name).is_file()
