"""The ``nvidia`` backend without a GPU or the harness: generation, installation, log finding.

The generated Python is checked against the v1.1 harness format of
github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549:
``closed/Dell/code/common/system_list.py`` (``KnownSystems`` with ``SystemClass(gpu, aliases,
pci_ids, arch, supported_counts)``, Dell's VMware entry ``R7525_vA100_PCIE_40GB`` matching
"GRID A100-40C" by name with no PCI ids) and ``closed/NVIDIA/configs/{resnet50,bert}/
{Offline,Server}/__init__.py`` (``@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99,
PowerSetting.MaxP) class X(BenchmarkConfiguration): system = System(...)``). The fake harness tree
below holds the lines of those files that the generated code touches; the logs are copies (in a
temporary folder) of the real published logs in tests/fixtures/mlperf, left unmodified.
"""

from __future__ import annotations

import ast
import json
import os
import platform
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from miglab.core.runs import parse_run
from miglab.formats.run_meta import RUN_META, read_run_meta
from miglab.mlperf.guest.backends import BACKENDS, BackendError, get_backend
from miglab.mlperf.guest.backends.nvidia import (
    NvidiaBackend,
    NvidiaSettings,
    collect_logs,
    find_harness_logs,
    install,
    render_config,
    render_system_entry,
    scale_config,
    vm_system,
)

# v1.1's Makefile takes ARCH from `uname -p` ("unknown" on Debian): miglab passes the machine's
ARCH = f"ARCH={platform.machine()}"
FIX = Path(__file__).resolve().parents[1] / "fixtures" / "mlperf" / "inference_results_v1.1"
DELL = FIX / "closed" / "Dell" / "results"
RN50_OFFLINE = (
    DELL / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
)
RN50_SERVER = (
    DELL / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Server/performance/run_1"
)
BERT_OFFLINE = DELL / "R7525_vA100-PCIE-40GBx3_TRT/bert-99/Offline/performance/run_1"

# The parts of v1.1's code/common/system_list.py (Dell's copy) around KnownSystems, verbatim.
SYSTEM_LIST = '''\
from enum import Enum, unique


@unique
class Architecture(Enum):
    Turing = "Turing"
    Xavier = "Xavier"
    Ampere = "Ampere"

    Intel_CPU_x86_64 = "Intel CPU x86_64"

    Unknown = "Unknown"


class SystemClass(object):
    def __init__(self, gpu, aliases, pci_ids, arch, supported_counts, valid_mig_slices=None):
        self.gpu = gpu
        self.aliases = aliases
        self.pci_ids = pci_ids
        self.arch = arch
        self.supported_counts = supported_counts


class KnownSystems(object):
    """
    Global List of supported systems
    """

    R7525_A30 = SystemClass("R7525_A30", ["A30"], ["20B7"], Architecture.Ampere, [3])
    R7525_vA100_PCIE_40GB = SystemClass("R7525_vA100-PCIE-40GB", ["GRID A100-40C"], [], Architecture.Ampere, [3])

    @staticmethod
    def get_all_system_classes():
        return [
            getattr(KnownSystems, attr)
            for attr in dir(KnownSystems)
            if type(getattr(KnownSystems, attr)) == SystemClass
        ]
'''  # noqa: E501

# The head of v1.1's configs/<benchmark>/<Scenario>/__init__.py, verbatim.
CONFIG_HEAD = """\
import os
import sys
sys.path.insert(0, os.getcwd())

from code.common.constants import Benchmark, Scenario
from code.common.system_list import System, Architecture, MIGConfiguration, MIGSlice
from configs.configuration import *
"""
BERT_OFFLINE_HEAD = """\
from configs.bert import GPUBaseConfig, CPUBaseConfig


class OfflineGPUBaseConfig(GPUBaseConfig):
    scenario = Scenario.Offline

    gpu_copy_streams = 2
    gpu_inference_streams = 2
    enable_interleaved = False
"""


@pytest.fixture
def harness(tmp_path) -> Path:
    root = tmp_path / "closed" / "Dell"
    (root / "code" / "common").mkdir(parents=True)
    (root / "code" / "common" / "system_list.py").write_text(SYSTEM_LIST)
    for bench in ("resnet50", "bert"):
        for sc in ("Offline", "Server"):
            d = root / "configs" / bench / sc
            d.mkdir(parents=True)
            head = CONFIG_HEAD + (BERT_OFFLINE_HEAD if (bench, sc) == ("bert", "Offline") else "")
            (d / "__init__.py").write_text(head)
    (root / "Makefile").write_text("# stand-in\n")
    return root


# --- stand-ins for the harness's names, enough to execute the generated code ------------------
class _Enum:
    def __getattr__(self, name):
        return name


class _System:
    def __init__(self, gpu, arch, count, pci_id=None, mig_conf=None):
        self.gpu, self.arch, self.count, self.mig_conf = gpu, arch, count, mig_conf

    def get_id(self):  # v1.1 System.get_id() for x86, no MIG
        return f"{self.gpu}x{self.count}"


class _Registry:
    def __init__(self):
        self.registered = []

    def register(self, harness_type, accuracy_target, power_setting):
        def do(cls):
            self.registered.append((cls, harness_type, accuracy_target, power_setting))
            return cls

        return do


def _exec_config(text: str) -> _Registry:
    reg = _Registry()

    class BenchmarkConfiguration:
        pass

    class GPUBaseConfig(BenchmarkConfiguration):
        benchmark = "BERT"

    ns = {
        "ConfigRegistry": reg,
        "HarnessType": _Enum(),
        "AccuracyTarget": _Enum(),
        "PowerSetting": _Enum(),
        "Benchmark": _Enum(),
        "Scenario": _Enum(),
        "Architecture": _Enum(),
        "System": _System,
        "BenchmarkConfiguration": BenchmarkConfiguration,
        "GPUBaseConfig": GPUBaseConfig,
    }
    body = [ln for ln in text.splitlines() if not ln.startswith(("import ", "from ", "sys."))]
    exec(compile("\n".join(body), "<config>", "exec"), ns)
    return reg


def _class_fields(text: str) -> dict[str, list[str]]:
    out = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            out[node.name] = [
                t.id for s in node.body if isinstance(s, ast.Assign) for t in s.targets
            ]
    return out


def _sys(profile="1g.10gb", count=1, **kw):
    return vm_system("A100-PCIE-80GB", profile, count, **kw)


# --- the system -----------------------------------------------------------------------------------
def test_registered_backend():
    assert "nvidia" in BACKENDS
    assert isinstance(get_backend("nvidia"), NvidiaBackend)


def test_vm_system_names():
    s = _sys("grid_a100d-2-20c")  # a vSphere type name resolves to its MIG profile
    assert s.profile == "2g.20gb" and s.slices == 2 and s.compute_slices == 7
    assert s.type_name == "A100D-2-20C"
    assert s.aliases == ("GRID A100D-2-20C", "NVIDIA A100D-2-20C")
    assert s.gpu_id == "vA100-PCIe-80GB_2g.20gb"
    assert s.system_id == "vA100-PCIe-80GB_2g.20gbx1"
    assert s.class_name == "vA100_PCIe_80GB_2g20gbx1"
    p = _sys("A100D-1-10C", count=2, prefix="R750xa", nvidia_smi_name="GRID A100D-1-10C")
    assert p.system_id == "R750xa_vA100-PCIe-80GB_1g.10gbx2" and p.aliases == ("GRID A100D-1-10C",)


@pytest.mark.parametrize(
    "gpu,profile,msg",
    [
        ("A100-PCIE-80GB", "grid_a100d-10c", "not a MIG-backed"),
        ("A100-PCIE-80GB", "9g.90gb", "9g.90gb"),
        ("H200-SXM", "1g.18gb", "unknown to the v1.1 harness"),
    ],
)
def test_vm_system_refuses(gpu, profile, msg):
    with pytest.raises(BackendError, match=msg):
        vm_system(gpu, profile)


def test_system_entry_compiles_and_matches_dell_format(harness):
    s = _sys("2g.20gb")
    entry = render_system_entry(s)
    assert (
        '    A100D_2_20C_vGPUx1 = SystemClass("vA100-PCIe-80GB_2g.20gb", '
        '["GRID A100D-2-20C", "NVIDIA A100D-2-20C"], [], Architecture.Ampere, [1])'
    ) in entry
    assert "912dcdb9163736beca40a1f86e25d1305deab549" in entry
    install(harness, s, ["resnet50"], ["Offline"])
    text = (harness / "code/common/system_list.py").read_text()
    ns: dict = {}
    exec(compile(text, "system_list.py", "exec"), ns)
    known = ns["KnownSystems"]
    got = known.A100D_2_20C_vGPUx1
    assert (
        got.gpu == "vA100-PCIe-80GB_2g.20gb" and got.pci_ids == [] and got.supported_counts == [1]
    )
    assert "GRID A100D-2-20C" in got.aliases
    assert len(known.get_all_system_classes()) == 3  # Dell's two + ours, still in the class body


# --- the configs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("benchmark", ["resnet50", "bert-99"])
@pytest.mark.parametrize("scenario", ["Offline", "Server"])
def test_config_compiles_and_registers(benchmark, scenario):
    s = _sys("1g.10gb")
    text = render_config(s, benchmark, scenario)
    compile(text, f"configs/{benchmark}/{scenario}/__init__.py", "exec")
    fields = _class_fields(text)["vA100_PCIe_80GB_1g10gbx1"]
    assert len(fields) == len(set(fields)), "v1.1 forbids assigning a field twice in a class"
    bert_offline = (benchmark, scenario) == ("bert-99", "Offline")
    reg = _exec_config(CONFIG_HEAD + (BERT_OFFLINE_HEAD if bert_offline else "") + text)
    ((cls, harness_type, accuracy, power),) = reg.registered
    assert harness_type == ("LWIS" if benchmark == "resnet50" else "Custom")
    assert (accuracy, power) == ("k_99", "MaxP")
    assert cls.system.get_id() == s.system_id
    assert cls.system.arch == "Ampere" and cls.system.count == 1
    assert "@ConfigRegistry.register(HarnessType." in text
    assert "912dcdb9163736beca40a1f86e25d1305deab549" in text
    assert cls.scenario == scenario
    if bert_offline:
        assert "(OfflineGPUBaseConfig):" in text  # the base class v1.1's bert Offline file defines
    else:
        assert "(BenchmarkConfiguration):" in text


def test_scaling_rule():
    one = _sys("1g.10gb")
    # ResNet50 Offline from NVIDIA's A100_PCIe_80GBx1 (2048, 37000 QPS): 1/7
    r = scale_config(one, "resnet50", "Offline")
    assert (r["batch"], r["qps"], r["qps_field"]) == (256, 5286, "offline_expected_qps")
    assert (r["batch"], r["qps"]) != (2048, 37000)
    r = scale_config(one, "resnet50", "Server")
    assert (r["batch"], r["qps"], r["qps_field"]) == (8, 3714, "server_target_qps")
    b = scale_config(one, "bert", "Offline")
    assert (b["batch"], b["qps"]) == (128, 486)
    assert dict(b["fields"])["workspace_size"] == 2 * 1024**3
    full = scale_config(_sys("7g.80gb"), "bert-99", "Offline")
    assert (full["batch"], full["qps"]) == (1024, 3400)  # 7g = NVIDIA's full-GPU values
    assert dict(full["fields"])["workspace_size"] == 7516192768
    three = scale_config(_sys("3g.40gb"), "resnet50", "Offline")
    assert (three["batch"], three["qps"]) == (512, 15857)
    two = scale_config(_sys("1g.10gb", count=2), "resnet50", "Offline")
    assert two["qps"] == 10571  # two vGPUs in one VM: twice the QPS, same per-GPU batch
    with pytest.raises(BackendError, match="no v1.1 base config"):
        scale_config(vm_system("A30", "1g.6gb"), "resnet50", "Offline")
    with pytest.raises(BackendError, match="supports"):
        scale_config(one, "bert-99.9", "Offline")


def test_install_is_idempotent(harness):
    s = _sys("4g.40gb")
    changed = install(harness, s, ["resnet50", "bert-99"], ["Offline", "Server"])
    assert len(changed) == 5
    snapshot = {p: p.read_text() for p in harness.rglob("*.py")}
    assert install(harness, s, ["resnet50", "bert-99"], ["Offline", "Server"]) == []
    assert {p: p.read_text() for p in harness.rglob("*.py")} == snapshot
    for bench in ("resnet50", "bert"):
        for sc in ("Offline", "Server"):
            text = (harness / "configs" / bench / sc / "__init__.py").read_text()
            compile(text, "x", "exec")
            assert text.count("class vA100_PCIe_80GB_4g40gbx1(") == 1
            assert text.startswith(CONFIG_HEAD)
            reg = _exec_config(text)
            assert [c.__name__ for c, *_ in reg.registered] == ["vA100_PCIe_80GB_4g40gbx1"]
    # a second VM type goes next to the first
    install(harness, _sys("1g.10gb"), ["resnet50"], ["Offline"])
    text = (harness / "configs/resnet50/Offline/__init__.py").read_text()
    assert "class vA100_PCIe_80GB_1g10gbx1(" in text and "class vA100_PCIe_80GB_4g40gbx1(" in text
    sl = (harness / "code/common/system_list.py").read_text()
    ns: dict = {}
    exec(compile(sl, "system_list.py", "exec"), ns)
    assert len(ns["KnownSystems"].get_all_system_classes()) == 4


def test_install_refuses_a_foreign_tree(tmp_path):
    with pytest.raises(BackendError, match="no such file"):
        install(tmp_path, _sys(), ["resnet50"], ["Offline"])
    (tmp_path / "code" / "common").mkdir(parents=True)
    (tmp_path / "code" / "common" / "system_list.py").write_text("x = 1\n")
    with pytest.raises(BackendError, match="KnownSystems"):
        install(tmp_path, _sys(), ["resnet50"], ["Offline"])


# --- logs -----------------------------------------------------------------------------------------
def _logs(harness: Path, stamp: str, system_id: str, bench: str, scenario: str, src: Path) -> Path:
    d = harness / "build" / "logs" / stamp / system_id / bench / scenario
    d.mkdir(parents=True)
    for f in src.iterdir():
        shutil.copy2(f, d / f.name)
    return d


def test_find_harness_logs(harness):
    sid = _sys().system_id
    old = _logs(harness, "2021.08.01-09.00.00", sid, "resnet50", "Offline", RN50_OFFLINE)
    new = _logs(harness, "2021.08.02-09.00.00", sid, "resnet50", "Offline", RN50_OFFLINE)
    _logs(harness, "2021.08.03-09.00.00", "A100-PCIe-80GBx1", "resnet50", "Offline", RN50_OFFLINE)
    _logs(harness, "2021.08.03-09.00.00", sid, "resnet50", "Server", RN50_SERVER)
    suffixed = _logs(
        harness, "2021.08.04-09.00.00", sid + "_TRT", "bert-99", "Offline", BERT_OFFLINE
    )
    (harness / "build/logs/2021.08.05-09.00.00" / sid / "resnet50" / "Offline").mkdir(parents=True)
    assert find_harness_logs(harness, sid, "resnet50", "Offline") == [new, old]
    assert find_harness_logs(harness, sid, "resnet50", "Server")[0].parent.parent.parent.name == (
        "2021.08.03-09.00.00"
    )
    assert find_harness_logs(harness, sid, "bert", "Offline") == [suffixed]
    assert find_harness_logs(harness, "other", "resnet50", "Offline") == []
    assert find_harness_logs(harness / "nothing", sid, "resnet50", "Offline") == []


def test_collect_logs_into_results_tree(harness, tmp_path):
    sid = _sys().system_id
    src = _logs(harness, "2021.08.02-09.00.00", sid, "resnet50", "Offline", RN50_OFFLINE)
    out = tmp_path / "results" / "camp" / "s1" / "vm1"
    run_dir = collect_logs(src, out, "resnet50", "Offline", 2, meta={"profile": "1g.10gb"})
    assert run_dir == out / "resnet50" / "Offline" / "performance" / "run_2"
    for f in ("mlperf_log_detail.txt", "mlperf_log_summary.txt"):
        assert (run_dir / f).read_bytes() == (RN50_OFFLINE / f).read_bytes()
    meta = json.loads((run_dir / RUN_META).read_text())
    assert (meta["backend"], meta["weights"], meta["simulated"]) == ("nvidia", "real", False)
    rm = read_run_meta(run_dir)
    assert (rm.backend, rm.weights, rm.profile, rm.run) == ("nvidia", "real", "1g.10gb", 2)
    rec = parse_run(run_dir)
    assert rec.valid and rec.value == 136656 and rec.benchmark == "resnet50"
    from miglab.formats.manifest import verify_run

    assert (run_dir / "MANIFEST.sha256").is_file() and verify_run(run_dir) == []
    with pytest.raises(BackendError, match="already holds"):
        collect_logs(src, out, "resnet50", "Offline", 2)
    with pytest.raises(BackendError, match="no mlperf_log_detail"):
        collect_logs(tmp_path, out, "resnet50", "Offline", 3)


# --- the backend, with make replaced ------------------------------------------------------------
class FakeMake:
    """Records the make commands; ``run_harness`` writes a log folder like the harness does."""

    def __init__(self, harness: Path, system_id: str, fail: str | None = None, write=True):
        self.harness, self.system_id, self.fail, self.write = harness, system_id, fail, write
        self.detected = system_id  # what scripts/get_system_id.py prints
        self.calls: list[tuple[list[str], str]] = []
        self.n = 0

    def __call__(self, cmd, cwd=None, check=False, timeout=None, **kw):
        self.calls.append((cmd, cwd))
        inner = cmd
        if cmd[1] == "launch_docker":  # the step inside the harness's container
            inner = shlex.split(cmd[-1].split("=", 1)[1])
        target = inner[1] if inner[0] == "make" else inner[-1]
        if target == self.fail:
            return subprocess.CompletedProcess(cmd, 2, "", "make: *** [Makefile] Error 1\n")
        if target == "scripts/get_system_id.py":
            return subprocess.CompletedProcess(cmd, 0, f"Launching\n{self.detected}\n", "")
        if target == "run_harness" and self.write:
            self.n += 1
            run_args = next(a for a in inner if a.startswith("RUN_ARGS="))
            args = dict(a.split("=", 1) for a in run_args[len("RUN_ARGS=") :].split())
            bench = {"resnet50": "resnet50", "bert": "bert-99"}[args["--benchmarks"]]
            src = {"resnet50": RN50_OFFLINE, "bert-99": BERT_OFFLINE}[bench]
            _logs(self.harness, f"2021.09.0{self.n}-10.00.00", self.system_id, bench,
                  args["--scenarios"], src)  # fmt: skip
        return subprocess.CompletedProcess(cmd, 0, "", "")


def test_backend_prepare_and_run(harness, tmp_path):
    s = _sys("2g.20gb")
    fake = FakeMake(harness, s.system_id)
    be = NvidiaBackend(runner=fake)
    settings = NvidiaSettings(
        harness_dir=str(harness),
        gpu="A100-PCIE-80GB",
        profile="grid_a100d-2-20c",
        benchmarks=("resnet50", "bert-99"),
        scenarios=("Offline",),
        meta={"vm": "camp-s1-vm1", "scenario": "s1"},
    )
    be.prepare(settings)

    def launch(*inner):
        return [
            "make",
            "launch_docker",
            "MIG_CONF=OFF",
            ARCH,
            f"DOCKER_COMMAND={shlex.join(inner)}",
        ]

    assert [c for c, _ in fake.calls] == [
        ["make", "build_docker", "NO_BUILD=1", ARCH],
        ["make", "docker_add_user", ARCH],
        launch("make", "build"),
        launch("python3", "scripts/get_system_id.py"),
        launch("make", "generate_engines", "RUN_ARGS=--benchmarks=resnet50 --scenarios=Offline"),
        launch("make", "generate_engines", "RUN_ARGS=--benchmarks=bert --scenarios=Offline"),
    ]
    assert all(cwd == str(harness) for _, cwd in fake.calls)
    assert (
        "A100D_2_20C_vGPUx1 = SystemClass(" in (harness / "code/common/system_list.py").read_text()
    )
    out = tmp_path / "results" / "camp" / "s1" / "vm1"
    for n, bench in enumerate(("resnet50", "bert-99"), start=1):
        run_dir = be.run(bench, "Offline", "PerformanceOnly", out, n)
        cmd = fake.calls[-1][0]
        assert cmd[1] == "launch_docker" and "make run_harness" in cmd[-1]
        assert "--test_mode=PerformanceOnly" in cmd[-1]
        meta = json.loads((run_dir / RUN_META).read_text())
        assert meta["backend"] == "nvidia" and meta["weights"] == "real"
        assert meta["vm"] == "camp-s1-vm1" and meta["profile"] == "2g.20gb"
        assert meta["vgpu_type"] == "grid_a100d-2-20c"
        assert meta["harness"]["system_id"] == "vA100-PCIe-80GB_2g.20gbx1"
        assert meta["harness"]["round"] == "v1.1" and meta["harness"]["launch"] == "docker"
        assert meta["loadgen"]["validity"] == "VALID" and meta["loadgen"]["valid"]
        assert meta["started_at"] <= meta["finished_at"]
        rec = parse_run(run_dir)
        assert rec.valid and rec.meta.backend == "nvidia"
    assert parse_run(out / "bert-99" / "Offline" / "performance" / "run_2").value == 8475.47


def test_backend_errors(harness, tmp_path):
    s = _sys()
    be = NvidiaBackend(runner=FakeMake(harness, s.system_id, fail="build"))
    with pytest.raises(BackendError, match="prepare"):
        be.run("resnet50", "Offline", "PerformanceOnly", tmp_path, 1)
    with pytest.raises(BackendError, match="make build ARCH=.* failed"):
        be.prepare(NvidiaSettings(harness_dir=str(harness), profile="1g.10gb", launch="inside"))
    with pytest.raises(BackendError, match="no such harness"):
        be.prepare(NvidiaSettings(harness_dir=str(tmp_path / "none")))
    be = NvidiaBackend(runner=FakeMake(harness, s.system_id, write=False))
    be.prepare(NvidiaSettings(harness_dir=str(harness), profile="1g.10gb", steps=()))
    with pytest.raises(BackendError, match="wrote no logs"):
        be.run("resnet50", "Offline", "PerformanceOnly", tmp_path, 1)


def test_templates_are_package_data():
    import tomllib

    data = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert (
        "templates/*/*.j2"
        in data["tool"]["setuptools"]["package-data"]["miglab.mlperf.guest.backends.nvidia"]
    )
    from importlib import resources

    names = {
        p.name
        for p in resources.files("miglab.mlperf.guest.backends.nvidia")
        .joinpath("templates/v1.1")
        .iterdir()
    }
    assert {"system_entry.py.j2", "config.py.j2"} <= names


def test_detection_refuses_another_system(harness, tmp_path):
    """The harness's own detection names a bare-metal class: miglab stops before any engine."""
    s = _sys("2g.20gb")
    fake = FakeMake(harness, s.system_id)
    fake.detected = "A100-PCIe-80GBx1"
    with pytest.raises(BackendError, match="detects this VM as 'A100-PCIe-80GBx1'"):
        NvidiaBackend(runner=fake).prepare(
            NvidiaSettings(harness_dir=str(harness), profile="2g.20gb")
        )
    assert not any("generate_engines" in " ".join(c) for c, _ in fake.calls)


def test_detected_mig_id_gets_mig_configs(harness, tmp_path):
    """nvidia-smi in the VM lists the MIG device: the harness's id has v1.1's MIG suffix, and the
    configs are written for that id (System(..., mig_conf=...))."""
    s = _sys("2g.20gb")
    fake = FakeMake(harness, s.mig_system_id)
    fake.detected = s.mig_system_id
    be = NvidiaBackend(runner=fake)
    be.prepare(NvidiaSettings(harness_dir=str(harness), profile="2g.20gb", launch="inside"))
    text = (harness / "configs/resnet50/Offline/__init__.py").read_text()
    assert "class vA100_PCIe_80GB_2g20gb_MIG_1x2g20gb(BenchmarkConfiguration):" in text
    assert "MIGConfiguration({0: {MIGSlice(2, 20): 1}})" in text
    assert text.count("# miglab:begin config") == 1
    run_dir = be.run("resnet50", "Offline", "PerformanceOnly", tmp_path / "out", 1)
    meta = json.loads((run_dir / RUN_META).read_text())
    assert meta["harness"]["system_id"] == "vA100-PCIe-80GB_2g.20gb-MIG_1x2g.20gb"


def test_compliance_is_refused(harness, tmp_path):
    s = _sys()
    be = NvidiaBackend(runner=FakeMake(harness, s.system_id))
    be.prepare(NvidiaSettings(harness_dir=str(harness), profile="1g.10gb", steps=()))
    be.compliance = "TEST04"
    with pytest.raises(BackendError, match="run_audit_harness"):
        be.run("resnet50", "Offline", "PerformanceOnly", tmp_path, 1)


def test_run_command_builds_nvidia_settings():
    """``python -m miglab.mlperf.run --backend nvidia``: the harness's settings, not the
    reference SUT's; --sut belongs to the reference backend."""
    from miglab.mlperf.guest.run import build_parser, settings_from_args

    argv = [
        "--backend", "nvidia", "--benchmark", "bert", "--scenario", "Server", "--out", "/o",
        "--harness-dir", "/opt/harness", "--harness-round", "v1.1", "--gpu", "A100-PCIE-80GB",
        "--profile", "2g.20gb", "--vgpu-type", "grid_a100d-2-20c", "--min-duration-ms", "60000",
        "--harness-make-var", "MLPERF_SCRATCH_PATH=/scratch", "--system-prefix", "R750xa",
    ]  # fmt: skip
    s = settings_from_args(build_parser().parse_args(argv))
    assert isinstance(s, NvidiaSettings)
    assert (s.harness_dir, s.round, s.launch, s.prefix) == (
        "/opt/harness",
        "v1.1",
        "docker",
        "R750xa",
    )
    assert (s.benchmarks, s.scenarios, s.profile) == (("bert",), ("Server",), "grid_a100d-2-20c")
    assert s.make_vars == ("MLPERF_SCRATCH_PATH=/scratch",) and s.min_duration_ms == 60000
    assert s.steps == ("docker", "build", "detect", "generate_engines")
    with pytest.raises(BackendError, match="needs --harness-dir, --gpu"):
        settings_from_args(build_parser().parse_args(argv[:8] + ["--profile", "1g.10gb"]))
    with pytest.raises(BackendError, match="--sut is the reference backend's"):
        settings_from_args(build_parser().parse_args([*argv, "--sut", "torch"]))
    with pytest.raises(BackendError, match="--sut is required"):
        settings_from_args(build_parser().parse_args(argv[2:8]))


def test_nvidia_run_args_carry_duration_and_target(harness):
    s = _sys("1g.10gb")
    fake = FakeMake(harness, s.system_id, write=False)
    be = NvidiaBackend(runner=fake)
    be.prepare(
        NvidiaSettings(
            harness_dir=str(harness), profile="1g.10gb", steps=(), launch="inside",
            min_duration_ms=10000, min_query_count=100, target_qps=5000.0,
        )
    )  # fmt: skip
    with pytest.raises(BackendError, match="wrote no logs"):
        be.run("resnet50", "Server", "PerformanceOnly", harness, 1)
    assert fake.calls[-1][0] == [
        "make", "run_harness", ARCH,
        "RUN_ARGS=--benchmarks=resnet50 --scenarios=Server --test_mode=PerformanceOnly "
        "--min_duration=10000 --min_query_count=100 --server_target_qps=5000",
    ]  # fmt: skip


def test_the_nvidia_path_needs_no_numpy():
    """A harness VM's virtualenv holds miglab and jinja2 only (the harness is the container):
    the run command, its settings and the backend import nothing of the reference SUTs'."""
    import sys

    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from miglab.mlperf.guest.run import build_parser, settings_from_args\n"
        "from miglab.mlperf.guest import session\n"
        "a = build_parser().parse_args(['--backend', 'nvidia', '--benchmark', 'resnet50',\n"
        "    '--out', '/o', '--harness-dir', '/h', '--gpu', 'A100-PCIE-80GB',\n"
        "    '--profile', '2g.20gb'])\n"
        "settings_from_args(a)\n"
        "from miglab.mlperf.guest.backends import get_backend\n"
        "get_backend('nvidia')\n"
        "import miglab.mlperf.guest.clock\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_file_miglab_adds_belongs_to_the_harness_folders_owner(tmp_path):
    """The mlperf role gives the harness folder to the user its container runs as; a file the
    session (root) adds there goes to that user too, so the role's next chown changes nothing."""
    from miglab.mlperf.guest.backends.nvidia.common import write_if_changed

    folder = tmp_path / "systems"
    folder.mkdir()
    os.chown(folder, 4321, 4321)
    changed: list[Path] = []
    write_if_changed(folder / "custom_list.py", "custom_systems = {}\n", changed)
    st = (folder / "custom_list.py").stat()
    assert (st.st_uid, st.st_gid) == (4321, 4321) and changed
