"""Round v4.1 of the ``nvidia`` backend without a GPU: the custom system entry, the configs, the
scaling, the installation into a v4.1 tree and the backend's commands.

The generated Python is checked against the v4.1 format of
github.com/mlcommons/inference_results_v4.1 @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183:
``code/common/systems/custom_list.py`` as ``scripts/custom_systems/add_custom_system.py`` writes
it (``custom_systems['<id>'] = SystemConfiguration(host_cpu_conf=..., host_mem_conf=...,
accelerator_conf=AcceleratorConfiguration(layout={GPU(...): n}), numa_conf=None,
system_id="...")`` between the stub's START / END banners) and ``configs/<benchmark>/<Scenario>/
custom.py`` (add_custom_system.py's header, ``from . import *``, ``@ConfigRegistry.register(...)
class <ID>(OfflineGPUBaseConfig): system = KnownSystem.<id>``). The harness tree is miglab's
v4.1 stand-in (miglab/sim/standins/nvidia-harness), which has the real stub and config files'
layout; the harness's own run of that code is in test_nvidia_harness_standin_v41.py.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import platform
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from miglab.core.catalog import load_catalog
from miglab.formats.run_meta import RUN_META
from miglab.mlperf.guest.backends import BackendError
from miglab.mlperf.guest.backends.nvidia import NvidiaBackend, NvidiaSettings, get_round
from miglab.mlperf.guest.backends.nvidia.v4_1 import (
    BASE_CONFIGS,
    CUSTOM_CONFIG_HEADER,
    V4_1,
    key_of,
)

ROOT = Path(__file__).resolve().parents[2]
STANDINS = ROOT / "miglab" / "sim" / "standins" / "nvidia-harness"
FIX = ROOT / "tests" / "fixtures" / "mlperf" / "inference_results_v1.1" / "closed" / "Dell"
RN50_OFFLINE = (
    FIX
    / "results/R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton"
    / "resnet50/Offline/performance/run_1"
)
HOPPER = ("H100-PCIE-80GB", "H100-SXM5-80GB", "H100-NVL", "H200-SXM")
BENCH_SCEN = [(b, s) for b in ("resnet50", "bert-99") for s in ("Offline", "Server")]


def _assemble(dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location("_assemble_v41", STANDINS / "assemble.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.assemble("v4.1", dest)
    return dest


@pytest.fixture
def tree(tmp_path) -> Path:
    return _assemble(tmp_path / "closed" / "NVIDIA")


def _calls(node: ast.Call) -> dict:
    return {k.arg: k.value for k in node.keywords}


def _entries(text: str) -> dict[str, ast.Call]:
    """``custom_systems['<key>'] = SystemConfiguration(...)`` assignments of a custom_list.py."""
    found = {}
    for node in ast.parse(text).body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Subscript)
            and node.targets[0].value.id == "custom_systems"
        ):
            found[node.targets[0].slice.value] = node.value
    return found


# --- the round ------------------------------------------------------------------------------------
def test_round_is_registered_with_v41_facts():
    r = get_round("v4.1")
    assert r is V4_1 and r.name == "v4.1"
    assert r.source == (
        "github.com/mlcommons/inference_results_v4.1 @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183"
    )
    # Makefile.docker: build_docker makes <tag>-latest, docker_add_user the image launched
    assert r.docker_steps == (("build_docker",), ("docker_add_user",))
    assert r.detect_command[:2] == ("python3", "-c")
    assert "from scripts.get_system_id import" in r.detect_command[2]
    assert r.harness_benchmark("resnet50").run_name == "resnet50"
    assert r.harness_benchmark("bert").run_name == "bert"
    assert r.harness_benchmark("bert-99").log_dirs == ("bert-99",)
    assert r.harness_benchmark("resnet50").harness_type == "LWIS"
    assert r.harness_benchmark("bert-99").harness_type == "Custom"
    assert r.run_args("bert-99", "Server", "PerformanceOnly", "--min_duration=1000") == (
        "--benchmarks=bert --scenarios=Server --test_mode=PerformanceOnly --min_duration=1000"
    )


@pytest.mark.parametrize("gpu", [*HOPPER, "A100-PCIE-80GB"])
def test_every_mig_profile_of_the_catalog_maps_to_an_entry(gpu):
    model = load_catalog().get(gpu)
    sm = 80 if gpu.startswith("A100") else 90
    for profile, vgpu in model.mig_backed.items():
        for name in (profile, vgpu):  # the MIG name or the vSphere vGPU type
            s = V4_1.vm_system(gpu, name, 1, "R760xa")
            assert s.system_id == f"R760xa_v{V4_1.gpu_ids[gpu]}_{profile}x1"
            gpu_key, mig_key = V4_1.keys(s)
            assert gpu_key == key_of(s.system_id) and mig_key == gpu_key + "_MIG"
            assert gpu_key.isidentifier() and mig_key.isidentifier()
            entries = _entries(V4_1.render_system_entry(s))
            assert list(entries) == [gpu_key, mig_key]
            type_name = vgpu.split("_", 1)[1].upper()
            for key, call in entries.items():
                kw = _calls(call)
                assert call.func.id == "SystemConfiguration"
                assert list(kw) == [
                    "host_cpu_conf",
                    "host_mem_conf",
                    "accelerator_conf",
                    "numa_conf",
                    "system_id",
                ]
                assert kw["system_id"].value == s.system_id
                (acc,) = kw["accelerator_conf"].keywords[0].value.keys
                akw = _calls(acc)
                assert acc.func.id == ("MIG" if key == mig_key else "GPU")
                assert akw["compute_sm"].value == sm
                assert akw["pci_id"].value == f"0x{model.pci_device_ids[0][2:].upper()}10DE"
                assert ast.unparse(akw["max_power_limit"]) == "MATCH_ANY"
                want = f"NVIDIA {type_name}" if vgpu.startswith("nvidia_") else f"GRID {type_name}"
                assert akw["name"].value.startswith(want)
                if key == mig_key:
                    g, gb = profile.split("+")[0].split("g.")
                    assert akw["name"].value == f"{want} MIG-{g}g.{gb}"
                    assert akw["num_gpcs"].value == int(g)
            for bench, scen in BENCH_SCEN:
                ast.parse(V4_1.render_config(s, bench, scen))


def test_custom_system_entry_and_config_of_an_h100_1g_vgpu():
    s = V4_1.vm_system("H100-PCIE-80GB", "nvidia_h100-1-10c")
    assert (s.system_id, s.aliases[0], s.arch) == (
        "vH100-PCIe-80GB_1g.10gbx1",
        "NVIDIA H100-1-10C",
        "Hopper",
    )
    entry = V4_1.render_system_entry(s)
    assert entry.startswith("# miglab:begin system vH100-PCIe-80GB_1g.10gbx1\n")
    assert entry.endswith("# miglab:end system vH100-PCIe-80GB_1g.10gbx1\n")
    assert (
        "custom_systems['vH100_PCIe_80GB_1g_10gbx1_MIG'] = SystemConfiguration(host_cpu_conf="
        "CPUConfiguration(layout={CPU(name=MATCH_ANY, architecture=CPUArchitecture.x86_64, "
        "core_count=MATCH_ANY, threads_per_core=MATCH_ANY): MATCH_ANY}), host_mem_conf="
        "min_memory_requirement(Memory(quantity=8, byte_suffix=ByteSuffix.GiB)), "
        'accelerator_conf=AcceleratorConfiguration(layout={MIG(name="NVIDIA H100-1-10C '
        'MIG-1g.10gb", accelerator_type=AcceleratorType.Discrete, vram=Memory(quantity=10, '
        'byte_suffix=ByteSuffix.GiB), max_power_limit=MATCH_ANY, pci_id="0x233110DE", '
        "compute_sm=90, num_gpcs=1): 1}), numa_conf=None, "
        'system_id="vH100-PCIe-80GB_1g.10gbx1")\n'
    ) in entry
    # the vGPU as a GPU: memory.total within 5 % of the type's 10 GiB (a guest shows 10235 MiB)
    assert (
        'GPU(name="NVIDIA H100-1-10C", accelerator_type=AcceleratorType.Discrete, '
        "vram=match_float_approximate(Memory(quantity=10, byte_suffix=ByteSuffix.GiB)), "
        'max_power_limit=MATCH_ANY, pci_id="0x233110DE", compute_sm=90): 1}'
    ) in entry
    config = V4_1.render_config(s, "resnet50", "Offline")
    tree = ast.parse(config)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [c.name for c in classes] == [
        "VH100_PCIE_80GB_1G_10GBX1",
        "VH100_PCIE_80GB_1G_10GBX1_MIG",
    ]
    for cls, key in zip(classes, V4_1.keys(s), strict=True):
        assert [b.id for b in cls.bases] == ["OfflineGPUBaseConfig"]
        assert ast.unparse(cls.decorator_list[0]) == (
            "ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)"
        )
        first = cls.body[0]
        assert ast.unparse(first) == f"system = KnownSystem.{key}"
        fields = {t.targets[0].id: ast.literal_eval(t.value) for t in cls.body[1:]}
        assert fields == {"gpu_batch_size": {"resnet50": 256}, "offline_expected_qps": 8143}
    assert "resnet50/Offline/__init__.py::H100_PCIe_80GBx1" in config


def test_scaling_values():
    def fields(gpu, profile, bench, scen, count=1):
        s = V4_1.vm_system(gpu, profile, count)
        return dict(V4_1.scale_config(s, bench, scen)["fields"])

    f = fields("H100-PCIE-80GB", "1g.10gb", "resnet50", "Server")
    assert f["gpu_batch_size"] == {"resnet50": 16} and f["server_target_qps"] == 6714
    assert f["deque_timeout_usec"] == 2000 and f["use_batcher_thread_per_device"] is True
    f = fields("H100-SXM5-80GB", "3g.40gb", "resnet50", "Offline")
    assert f == {"gpu_batch_size": {"resnet50": 512}, "offline_expected_qps": 38571}
    f = fields("H100-SXM5-80GB", "1g.10gb", "resnet50", "Server")
    assert "start_from_device" not in f and f["server_target_qps"] == 10429
    f = fields("H200-SXM", "2g.35gb", "resnet50", "Offline", count=2)
    assert f == {"gpu_batch_size": {"resnet50": 512}, "offline_expected_qps": 51429}
    f = fields("A100-PCIE-80GB", "2g.20gb", "bert-99", "Offline")
    assert f["gpu_batch_size"] == {"bert": 256} and f["offline_expected_qps"] == 971
    assert f["workspace_size"] == 2 * 1024**3 and f["use_small_tile_gemm_plugin"] is True
    f = fields("A100-PCIE-80GB", "7g.80gb", "resnet50", "Server")  # A100_PCIe_80GBx8 / 8
    assert f["gpu_batch_size"] == {"resnet50": 64} and f["server_target_qps"] == 29500
    f = fields("H100-NVL", "2g.24gb", "bert-99", "Server")  # H100_PCIe_80GBx1's values
    assert f["server_target_qps"] == 1303 and f["soft_drop"] == 0.99
    # H200's 128 GB BERT workspace / 7 is more than a 1g.18gb vGPU has: capped at its 16 GiB
    f = fields("H200-SXM", "1g.18gb", "bert-99", "Offline")
    assert f["workspace_size"] == 16 * 1024**3 and f["vboost_slider"] == 1
    assert f["gpu_batch_size"] == {"bert": 128} and f["offline_expected_qps"] == 1343
    f = fields("H200-SXM", "7g.141gb", "bert-99", "Offline")
    assert f["workspace_size"] == 120 * 1024**3  # ceil(128e9 B) in GiB, under 140 GiB
    # every base config names its NVIDIA class
    for (_gpu, bench, scen), base in BASE_CONFIGS.items():
        assert base.source.startswith(f"closed/NVIDIA/configs/{bench.split('-')[0]}/{scen}/")
        assert base.parent == f"{scen}GPUBaseConfig"


@pytest.mark.parametrize(
    ("gpu", "profile", "msg"),
    [
        ("H200-NVL", "1g.18gb", "v4.1 harness has no class of this board"),
        ("A30", "1g.6gb", "v4.1 harness has no class of this board"),
        ("A100-SXM4-80GB", "1g.10gb", "v4.1 harness has no class of this board"),
        ("H100-PCIE-80GB", "nvidia_h100-10c", "not a MIG-backed vGPU type"),
        ("H200-SXM", "nvidia_h200x-141c", "not a MIG-backed vGPU type"),
        ("H100-PCIE-80GB", "5g.50gb", "5g.50gb"),
        ("B200", "1g.23gb", "B200"),
    ],
)
def test_refused_systems(gpu, profile, msg):
    with pytest.raises(BackendError, match=msg):
        V4_1.vm_system(gpu, profile)


def test_unknown_round_and_benchmark():
    with pytest.raises(BackendError, match="unknown harness round 'v9.9'"):
        get_round("v9.9")
    with pytest.raises(BackendError, match="supports resnet50, bert-99"):
        V4_1.harness_benchmark("bert-99.9")


# --- installation into a v4.1 tree --------------------------------------------------------------
def test_install_writes_custom_list_from_the_stub_and_custom_configs(tree):
    stub = (tree / "scripts/custom_systems/stubs/custom_system.py.stub").read_text()
    assert not (tree / "code/common/systems/custom_list.py").exists()
    s = V4_1.vm_system("H100-PCIE-80GB", "1g.10gb", 1, "R760xa")
    changed = V4_1.install(tree, s, ["resnet50", "bert-99"], ["Offline", "Server"])
    rel = sorted(str(p.relative_to(tree)) for p in changed)
    assert rel == [
        "code/common/systems/custom_list.py",
        "configs/bert/Offline/custom.py",
        "configs/bert/Server/custom.py",
        "configs/resnet50/Offline/custom.py",
        "configs/resnet50/Server/custom.py",
    ]
    text = (tree / "code/common/systems/custom_list.py").read_text()
    # the stub's text, the entries between its START and END banners
    head, tail = stub.split("###############################\n\n\n\n", 1)
    assert text.startswith(head) and text.endswith(tail)
    start = text.index("### START OF CUSTOM SYSTEMS ###")
    end = text.index("#### END OF CUSTOM SYSTEMS ####")
    assert start < text.index("custom_systems['R760xa_vH100_PCIe_80GB_1g_10gbx1']") < end
    assert list(_entries(text)) == [
        "R760xa_vH100_PCIe_80GB_1g_10gbx1",
        "R760xa_vH100_PCIe_80GB_1g_10gbx1_MIG",
    ]
    for bench, scen in (("resnet50", "Offline"), ("bert", "Server")):
        custom = (tree / "configs" / bench / scen / "custom.py").read_text()
        assert custom.startswith(CUSTOM_CONFIG_HEADER)
        assert CUSTOM_CONFIG_HEADER == (
            "# Generated file by scripts/custom_systems/add_custom_system.py\n"
            "# Contains configs for all custom systems in code/common/systems/custom_list.py\n"
            "\nfrom . import *\n\n\n"
        )
        ast.parse(custom)
    # idempotent; a second system gets its own blocks; the same system's blocks are replaced
    assert V4_1.install(tree, s, ["resnet50", "bert-99"], ["Offline", "Server"]) == []
    h200 = V4_1.vm_system("H200-SXM", "2g.35gb")
    V4_1.install(tree, h200, ["resnet50"], ["Offline"])
    text = (tree / "code/common/systems/custom_list.py").read_text()
    assert len(_entries(text)) == 4 and text.count("# miglab:begin system") == 2
    offline = (tree / "configs/resnet50/Offline/custom.py").read_text()
    assert offline.count("@ConfigRegistry.register") == 4
    V4_1.install_configs(tree, s, ["resnet50"], ["Offline"], s.system_id)
    assert (tree / "configs/resnet50/Offline/custom.py").read_text() == offline


def test_install_refuses_a_foreign_tree(tmp_path):
    s = V4_1.vm_system("H100-PCIE-80GB", "1g.10gb")
    with pytest.raises(BackendError, match="custom_system.py.stub"):
        V4_1.install_system(tmp_path, s)
    (tmp_path / "code/common/systems").mkdir(parents=True)
    (tmp_path / "code/common/systems/custom_list.py").write_text("custom_systems = dict()\n")
    with pytest.raises(BackendError, match="END OF CUSTOM SYSTEMS"):
        V4_1.install_system(tmp_path, s)
    with pytest.raises(BackendError, match="configs/resnet50/Offline/__init__.py"):
        V4_1.install_configs(tmp_path, s, ["resnet50"], ["Offline"])
    with pytest.raises(BackendError, match="not an id of miglab's system"):
        V4_1.install_configs(tmp_path, s, ["resnet50"], ["Offline"], "KnownSystem.H100x1")


def test_templates_are_package_data():
    pkg = ROOT / "miglab" / "mlperf" / "guest" / "backends" / "nvidia" / "templates" / "v4.1"
    assert sorted(p.name for p in pkg.iterdir()) == ["custom_config.py.j2", "custom_system.py.j2"]


# --- the backend, with make replaced ------------------------------------------------------------
class FakeMake:
    """Records the commands; the detection prints what the v4.1 detect command prints;
    ``run_harness`` writes LoadGen logs where v4.1 does (build/logs/<time>/<id>_TRT/...)."""

    def __init__(self, tree: Path, detected: str):
        self.tree, self.detected = tree, detected
        self.calls: list[list[str]] = []

    def __call__(self, cmd, cwd=None, check=False, timeout=None, **kw):
        self.calls.append(cmd)
        inner = shlex.split(cmd[-1].split("=", 1)[1]) if cmd[1] == "launch_docker" else cmd
        if inner[:2] == ["python3", "-c"]:
            out = f"KnownSystem.{key_of(self.detected)}_MIG\n{self.detected}\n"
            return subprocess.CompletedProcess(cmd, 0, out, "")
        if inner[:2] == ["make", "run_harness"]:
            d = self.tree / "build/logs/2024.08.01-10.00.00" / f"{self.detected}_TRT"
            d = d / "resnet50" / "Offline"
            d.mkdir(parents=True)
            for f in RN50_OFFLINE.iterdir():
                shutil.copy2(f, d / f.name)
            (d / "metadata.json").write_text("{}\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")


def test_backend_commands_and_run(tree, tmp_path):
    s = V4_1.vm_system("H100-SXM5-80GB", "2g.20gb", 1, "R760")
    fake = FakeMake(tree, s.system_id)
    be = NvidiaBackend(runner=fake)
    be.prepare(
        NvidiaSettings(
            harness_dir=str(tree),
            round="v4.1",
            gpu="H100-SXM5-80GB",
            profile="nvidia_h100xm-2-20c",
            prefix="R760",
            make_vars=("MLPERF_SCRATCH_PATH=/scratch",),
        )
    )

    # the round's ARCH (Makefile.const's `uname -p` is "unknown" on Debian), then the settings'
    mv = [f"ARCH={platform.machine()}", "MLPERF_SCRATCH_PATH=/scratch"]
    assert V4_1.make_vars() == mv[:1]

    def launch(*inner):
        return ["make", "launch_docker", "MIG_CONF=OFF", *mv, f"DOCKER_COMMAND={shlex.join(inner)}"]

    assert fake.calls == [
        ["make", "build_docker", *mv],
        ["make", "docker_add_user", *mv],
        launch("make", "build"),
        launch(*V4_1.detect_command),
        launch("make", "generate_engines", "RUN_ARGS=--benchmarks=resnet50 --scenarios=Offline"),
    ]
    assert be.system_id == "R760_vH100-SXM-80GB_2g.20gbx1"
    run_dir = be.run("resnet50", "Offline", "PerformanceOnly", tmp_path / "out", 1)
    meta = json.loads((run_dir / RUN_META).read_text())
    assert meta["harness"]["round"] == "v4.1"
    assert meta["harness"]["system_id"] == "R760_vH100-SXM-80GB_2g.20gbx1"
    assert "_TRT/resnet50/Offline" in meta["harness_log_dir"]
    assert meta["loadgen"]["valid"] is True


def test_backend_refuses_a_detection_of_another_system(tree):
    s = V4_1.vm_system("H100-PCIE-80GB", "1g.10gb")
    fake = FakeMake(tree, "H100-PCIe-80GBx1")
    be = NvidiaBackend(runner=fake)
    with pytest.raises(BackendError, match="detects this VM as 'H100-PCIe-80GBx1'"):
        be.prepare(
            NvidiaSettings(harness_dir=str(tree), round="v4.1", gpu=s.gpu_model, profile="1g.10gb")
        )
