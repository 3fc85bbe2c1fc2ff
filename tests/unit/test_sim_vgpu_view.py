"""Each simulated VM shows its own vGPU: the VM's virtual hardware description
(miglab/sim/vgpu_view.py) that the guest keeper writes from what the simulated vCenter configured,
the GRID driver stand-in's nvidia-smi reading it (run in place, as tests/unit/test_guest.py does),
and the container toolkit stand-in's hook handing it to GPU containers."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyVmomi import vim

from miglab.core.vgpu_license import read_license
from miglab.formats.nvsmi import parse_query, parse_query_gpu_csv
from miglab.sim import daemon, vgpu_view
from testlib import load_script

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "nvidia-smi"
STANDINS = ROOT / "miglab" / "sim" / "standins"
SMI = STANDINS / "grid-driver" / "nvidia-smi"
HOOK = STANDINS / "container-toolkit" / "nvidia-container-runtime-hook"
# the fields NVIDIA's MLPerf harness asks for (code/common/systems/accelerator.py,
# NV_GPU_INFO_QUERY_FIELDS), with csv,noheader
HARNESS_FIELDS = (
    "gpu_name,pci.device_id,uuid,memory.total,power.limit,power.max_limit,mig.mode.current"
)
UUID_RE = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MIG_UUID_RE = re.compile(r"^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# --- the description (pure) ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("vgpu_type", "name"),
    [
        ("grid_a100d-2-20c", "GRID A100D-2-20C"),
        ("nvidia_h100xm-1-10c", "NVIDIA H100XM-1-10C"),
        ("grid_a100d-1-10cme", "GRID A100D-1-10CME"),
        ("nvidia_h200x-141c", "NVIDIA H200X-141C"),
        ("A100D-2-20C", "A100D-2-20C"),
    ],
)
def test_the_guest_drivers_name_of_a_vsphere_vgpu_type(vgpu_type, name):
    assert vgpu_view.nvidia_smi_name(vgpu_type) == name


def test_a_mig_backed_vgpu_is_described_from_the_catalog():
    assert vgpu_view.describe_vgpu("grid_a100d-2-20c") == {
        "vgpu_type": "grid_a100d-2-20c",
        "name": "GRID A100D-2-20C",
        "gpu": "A100-PCIE-80GB",
        "board": "NVIDIA A100 80GB PCIe",
        "architecture": "ampere",
        "pci_device_id": "0x20B510DE",
        "framebuffer_mib": 20480,
        "mig_profile": "2g.20gb",
        "guest_mig_devices": True,
    }
    h100 = vgpu_view.describe_vgpu("nvidia_h100xm-1-10c")
    assert (h100["name"], h100["pci_device_id"], h100["gpu"]) == (
        "NVIDIA H100XM-1-10C",
        "0x233010DE",
        "H100-SXM5-80GB",
    )
    assert (h100["framebuffer_mib"], h100["mig_profile"]) == (10240, "1g.10gb")
    assert vgpu_view.describe_vgpu("grid_a100d-1-10cme")["mig_profile"] == "1g.10gb+me"


def test_a_time_sliced_vgpu_has_its_types_framebuffer_and_no_mig():
    ts = vgpu_view.describe_vgpu("grid_a100d-40c")
    assert (ts["name"], ts["framebuffer_mib"], ts["mig_profile"]) == ("GRID A100D-40C", 40960, None)
    assert ts["guest_mig_devices"] is False and ts["pci_device_id"] == "0x20B510DE"


def test_a_type_no_catalog_gpu_offers_keeps_what_its_name_says():
    assert vgpu_view.describe_vgpu("grid_x9-3-30c") == {
        "vgpu_type": "grid_x9-3-30c",
        "name": "GRID X9-3-30C",
        "gpu": None,
        "board": None,
        "architecture": None,
        "pci_device_id": None,
        "framebuffer_mib": 30720,
        "mig_profile": None,
        "guest_mig_devices": False,
    }


def test_the_vm_description_has_stable_ids_per_vm_and_vgpu():
    one = vgpu_view.describe_vm("s6-vm1", ["grid_a100d-2-20c", "grid_a100d-2-20c"])
    assert one == vgpu_view.describe_vm("s6-vm1", ["grid_a100d-2-20c", "grid_a100d-2-20c"])
    assert (one["schema"], one["vm"]) == (1, "s6-vm1") and "miglab" in one["standin"]
    a, b = one["vgpus"]
    assert (a["index"], b["index"]) == (0, 1)
    assert (a["bus_id"], b["bus_id"]) == ("00000000:02:00.0", "00000000:02:01.0")
    assert all(UUID_RE.match(v["uuid"]) and MIG_UUID_RE.match(v["mig_uuid"]) for v in (a, b))
    other = vgpu_view.describe_vm("s6-vm2", ["grid_a100d-2-20c"])["vgpus"][0]
    assert len({a["uuid"], b["uuid"], other["uuid"]}) == 3
    assert vgpu_view.describe_vm("plain", []) == {
        "schema": 1,
        "standin": vgpu_view.STANDIN,
        "vm": "plain",
        "vgpus": [],
    }
    ts = vgpu_view.describe_vm("ts", ["grid_a100d-80c"])["vgpus"][0]
    assert ts["mig_uuid"] is None


def test_the_vgpus_are_the_vmiop_passthrough_devices_in_device_order():
    vmiop = vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo
    devices = [
        vim.vm.device.VirtualDisk(key=2000),
        vim.vm.device.VirtualPCIPassthrough(key=13000, backing=vmiop(vgpu="grid_a100d-4-40c")),
        vim.vm.device.VirtualPCIPassthrough(
            key=13001,
            backing=vim.vm.device.VirtualPCIPassthrough.DynamicBackingInfo(deviceName="x"),
        ),
        vim.vm.device.VirtualPCIPassthrough(key=13002, backing=vmiop(vgpu="grid_a100d-1-10c")),
    ]
    assert vgpu_view.vgpu_types_of(devices) == ["grid_a100d-4-40c", "grid_a100d-1-10c"]
    assert vgpu_view.vgpu_types_of(None) == []


def test_the_file_is_replaced_in_its_folder(tmp_path):
    """The folder is what the VM's container mounts: it stays, the file in it is replaced."""
    folder = tmp_path / "hardware" / "vm1"
    vgpu_view.write_description(folder, vgpu_view.describe_vm("vm1", ["grid_a100d-2-20c"]))
    inode = folder.stat().st_ino
    path = vgpu_view.write_description(folder, vgpu_view.describe_vm("vm1", ["grid_a100d-3-40c"]))
    assert path == folder / "vgpu.json" and folder.stat().st_ino == inode
    assert json.loads(path.read_text())["vgpus"][0]["name"] == "GRID A100D-3-40C"
    assert sorted(p.name for p in folder.iterdir()) == ["vgpu.json"]
    assert (folder.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o755, 0o644)


# --- the guest keeper writes it before each start ------------------------------------------------
class FakeVm:
    def __init__(self, *vgpus: str):
        vmiop = vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo
        devices = [
            vim.vm.device.VirtualPCIPassthrough(key=13000 + n, backing=vmiop(vgpu=t))
            for n, t in enumerate(vgpus)
        ]
        self.config = vim.vm.ConfigInfo(hardware=vim.vm.VirtualHardware(device=devices))


class GoneVm:
    @property
    def config(self):
        raise vim.fault.NotFound()


@pytest.fixture
def keeper(tmp_path, monkeypatch):
    """A guest keeper without a simulator: the VM objects are given, podman is recorded."""
    k = object.__new__(daemon.GuestKeeper)
    k.image, k.out, k._refs = "localhost/guest:test", tmp_path, {}
    k.calls = []
    exists = set()

    def podman(*args):
        name = args[args.index("--name") + 1] if args[0] == "run" else args[-1]
        seen = tmp_path / "hardware" / name / "vgpu.json"
        # the description is there before podman starts the container
        k.calls.append((args, json.loads(seen.read_text()) if seen.exists() else None))
        if args[0] == "run":
            exists.add(args[args.index("--name") + 1])

    monkeypatch.setattr(daemon, "_podman", podman)
    monkeypatch.setattr(daemon, "_container_exists", lambda name: name in exists)
    monkeypatch.delenv("MIGLAB_SIM_GUEST_IMAGES", raising=False)
    return k


def test_the_keeper_mounts_the_vms_hardware_folder_and_rewrites_it_at_each_start(keeper, tmp_path):
    keeper._refs["vm1"] = FakeVm("grid_a100d-2-20c")
    assert keeper._start("vm1") == "created from localhost/guest:test (vGPU: grid_a100d-2-20c)"
    (args, seen) = keeper.calls[-1]
    folder = tmp_path / "hardware" / "vm1"
    assert f"--volume={folder}:/etc/miglab-sim:ro" in args
    assert args[-2:] == ("localhost/guest:test", "/sbin/init")
    assert seen["vgpus"][0]["name"] == "GRID A100D-2-20C"
    # powered off, given another vGPU, powered on: the same folder, a new file
    keeper._refs["vm1"] = FakeVm("grid_a100d-7-80c")
    assert keeper._start("vm1") == "started (vGPU: grid_a100d-7-80c)"
    (args, seen) = keeper.calls[-1]
    assert args == ("start", "vm1") and seen["vgpus"][0]["name"] == "GRID A100D-7-80C"
    keeper._refs["vm1"] = FakeVm()
    assert keeper._start("vm1") == "started (no vGPU)"
    assert keeper.calls[-1][1]["vgpus"] == []
    assert keeper._remove("vm1") == "removed" and not folder.exists()


def test_a_vm_that_cannot_be_read_starts_without_a_stale_description(keeper, tmp_path):
    keeper._refs["vm2"] = FakeVm("grid_a100d-2-20c")
    keeper._start("vm2")
    keeper._refs["vm2"] = GoneVm()
    what = keeper._start("vm2")
    assert what.startswith("started (no vGPU description: ")
    assert keeper.calls[-1] == (("start", "vm2"), None)
    assert (tmp_path / "hardware" / "vm2").is_dir()  # still there: the container mounts it


@pytest.mark.parametrize("name", ["", ".", "..", "a/b"])
def test_a_vm_name_that_cannot_name_a_folder_is_refused(keeper, name):
    with pytest.raises(ValueError):
        keeper._hardware_dir(name)


# --- the stand-in nvidia-smi reads it ------------------------------------------------------------
@pytest.fixture
def share(tmp_path):
    """The files the GRID stand-in installs to /usr/share/nvidia-standin, driver 550.144.03."""
    share = tmp_path / "share"
    share.mkdir()
    shutil.copy(FIXTURES / "h200-q.txt", share / "nvidia-smi-q.txt")
    shutil.copy(FIXTURES / "h200-nvidia-smi.txt", share / "nvidia-smi.txt")
    manifest(share, "550.144.03", "12.4")
    return share


def manifest(share: Path, version: str, cuda: str) -> None:
    (share / "manifest.json").write_text(
        json.dumps({"version": version, "cuda": cuda, "built": "x", "standin": True})
    )


def describe(tmp_path: Path, vm: str, *types: str, **changes) -> Path:
    desc = vgpu_view.describe_vm(vm, list(types))
    for v in desc["vgpus"]:
        v.update(changes)
    return vgpu_view.write_description(tmp_path / "hardware" / vm, desc)


def smi(share: Path, vgpu: Path | None, *args: str) -> str:
    env = dict(
        os.environ,
        MIGLAB_STANDIN_SHARE=str(share),
        MIGLAB_STANDIN_STATE=str(share / "none.json"),
        MIGLAB_STANDIN_VGPU=str(vgpu or share / "no-vgpu.json"),
    )
    r = subprocess.run(
        [sys.executable, str(SMI), *args], capture_output=True, text=True, env=env, check=True
    )
    return r.stdout


def test_a_mig_backed_vgpu_vm_lists_its_vgpu_and_its_mig_device(share, tmp_path):
    vgpu = describe(tmp_path, "s6-vm1", "grid_a100d-2-20c")
    v = json.loads(vgpu.read_text())["vgpus"][0]
    assert smi(share, vgpu, "-L") == (
        f"GPU 0: GRID A100D-2-20C (UUID: {v['uuid']})\n"
        f"  MIG 2g.20gb     Device  0: (UUID: {v['mig_uuid']})\n"
    )
    assert smi(share, vgpu, f"--query-gpu={HARNESS_FIELDS}", "--format=csv,noheader") == (
        f"GRID A100D-2-20C, 0x20B510DE, {v['uuid']}, 20480 MiB, [N/A], [N/A], Enabled\n"
    )


def test_query_gpu_header_units_and_nounits(share, tmp_path):
    vgpu = describe(tmp_path, "s6-vm1", "grid_a100d-2-20c")
    fields = HARNESS_FIELDS + ",driver_version"
    out = smi(share, vgpu, f"--query-gpu={fields}", "--format=csv")
    assert out.splitlines()[0] == (
        "gpu_name, pci.device_id, uuid, memory.total [MiB], power.limit [W], power.max_limit [W], "
        "mig.mode.current, driver_version"
    )
    (row,) = parse_query_gpu_csv(out)
    assert row["memory.total"] == "20480" and row["power.max_limit"] is None
    assert row["driver_version"] == "550.144.03" and row["mig.mode.current"] == "Enabled"
    nounits = smi(share, vgpu, f"--query-gpu={fields}", "--format=csv,noheader,nounits")
    assert nounits.split(", ")[3:6] == ["20480", "[N/A]", "[N/A]"]
    assert parse_query_gpu_csv(nounits, fields=fields.split(",")) == [row]


def test_the_guest_without_the_mig_device_line(share, tmp_path):
    """guest_mig_devices false: the other behaviour, simulated on purpose."""
    vgpu = describe(tmp_path, "s6-vm1", "grid_a100d-2-20c", guest_mig_devices=False)
    out = smi(share, vgpu, "-L")
    assert out.startswith("GPU 0: GRID A100D-2-20C (UUID: GPU-") and "MIG" not in out


def test_time_sliced_vgpus_mig_mode_by_driver_branch(share, tmp_path):
    vgpu = describe(tmp_path, "ts-vm", "grid_a100d-40c", "grid_a100d-40c")
    uuids = [v["uuid"] for v in json.loads(vgpu.read_text())["vgpus"]]
    assert smi(share, vgpu, "-L") == "".join(
        f"GPU {n}: GRID A100D-40C (UUID: {u})\n" for n, u in enumerate(uuids)
    )
    fields = "index,count,name,mig.mode.current,memory.total"
    assert smi(share, vgpu, f"--query-gpu={fields}", "--format=csv,noheader") == (
        "0, 2, GRID A100D-40C, Disabled, 40960 MiB\n1, 2, GRID A100D-40C, Disabled, 40960 MiB\n"
    )
    manifest(share, "570.133.20", "12.8")
    assert smi(share, vgpu, "--query-gpu=mig.mode.current", "--format=csv,noheader") == (
        "[N/A]\n[N/A]\n"
    )


def test_without_a_description_nvidia_smi_shows_its_default_vgpu(share, tmp_path):
    default = "GPU 0: NVIDIA H200X-141C (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
    assert smi(share, None, "-L") == default
    empty = describe(tmp_path, "plain")
    assert smi(share, empty, "-L") == default
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert smi(share, broken, "-L") == default
    assert smi(share, None, "--query-gpu=name,memory.total,mig.mode.current", "--format=csv") == (
        "name, memory.total [MiB], mig.mode.current\nNVIDIA H200X-141C, 143771 MiB, Disabled\n"
    )

    def q(vgpu):
        return [line for line in smi(share, vgpu, "-q").split("\n") if "Timestamp" not in line]

    assert q(empty) == q(None)


def test_q_shows_each_vgpu_and_reads_back(share, tmp_path):
    vgpu = describe(tmp_path, "two", "grid_a100d-2-20c", "grid_a100d-2-20c")
    described = json.loads(vgpu.read_text())["vgpus"]
    text = smi(share, vgpu, "-q")
    assert "Attached GPUs                                          : 2\n" in text
    gpus = parse_query(text)
    assert [g["product_name"] for g in gpus] == ["GRID A100D-2-20C"] * 2
    assert [g["uuid"] for g in gpus] == [v["uuid"] for v in described]
    assert [g["pci_bus_id"] for g in gpus] == ["00000000:02:00.0", "00000000:02:01.0"]
    assert {
        (g["pci_device_id"], g["fb_memory_total_mib"], g["virtualization_mode"]) for g in gpus
    } == {("0x20B510DE", 20480, "VGPU")}
    lic = read_license(text)
    assert [g["license_status"] for g in lic["gpus"]] == ["Unlicensed (Unrestricted)"] * 2
    block = text.split("GPU 00000000:02:01.0\n")[1]
    for key, value in [
        ("Product Architecture", "Ampere"),
        ("Current", "Enabled"),  # MIG Mode
        ("Max Power Limit", "N/A"),
        ("GPU Current Temp", "N/A"),
        ("Device Id", "0x20B510DE"),
    ]:
        assert re.search(rf"\n\s+{re.escape(key)}\s+: {re.escape(value)}\n", block), key


def test_the_summary_shows_each_vgpu_aligned(share, tmp_path):
    vgpu = describe(tmp_path, "two", "grid_a100d-2-20c", "grid_a100d-40c")
    table = smi(share, vgpu).splitlines()
    assert {len(line) for line in table[1:16]} == {91}
    assert table[8].split("|") == [
        "",
        "   0  GRID A100D-2-20C               On  ",
        "   00000000:02:00.0 Off ",
        "                   On ",
        "",
    ]
    assert table[9].split("|") == [
        "",
        " N/A   N/A    P0            N/A  /  N/A  ",
        "       0MiB /  20480MiB ",
        "     N/A      Default ",
        "",
    ]
    assert table[10].endswith("|              Enabled |")
    assert table[11] == table[15]  # the rule between the two GPUs
    assert table[12].startswith("|   1  GRID A100D-40C ") and "40960MiB" in table[13]
    assert table[14].endswith("|             Disabled |")


# --- containers see it too -----------------------------------------------------------------------
def test_the_description_folder_is_what_nvidia_smi_reads_and_the_hook_mounts(monkeypatch):
    monkeypatch.delenv("MIGLAB_STANDIN_VGPU", raising=False)
    smi_module = load_script(SMI, "standin_nvidia_smi_vgpu")
    read = smi_module.VGPU_FILE
    assert read == f"{vgpu_view.GUEST_DIR}/{vgpu_view.FILE}"
    hook = load_script(HOOK, "standin_hook_vgpu")
    assert vgpu_view.GUEST_DIR in hook.DRIVER_FILES


def test_the_hook_binds_the_vms_description_read_only_into_a_gpu_container(tmp_path, monkeypatch):
    """The guest's /etc/miglab-sim (here under a fake root) is bind-mounted, read-only, into the
    container's root file system next to the driver's files, so nvidia-smi -L in a docker run
    --gpus container reads the same description as the VM."""
    hook = load_script(HOOK, "standin_hook_vgpu_mount")
    guest = tmp_path / "guest"
    sources = tuple(str(guest) + p for p in hook.DRIVER_FILES)
    vgpu_view.write_description(
        Path(sources[-1]), vgpu_view.describe_vm("vm1", ["grid_a100d-2-20c"])
    )
    monkeypatch.setattr(hook, "DRIVER_FILES", sources)
    ran = []
    monkeypatch.setattr(
        hook.subprocess,
        "run",
        lambda cmd, **kw: ran.append(cmd) or subprocess.CompletedProcess(cmd, 0, "", ""),
    )
    rootfs = tmp_path / "rootfs"
    hook.mount_driver(4242, str(rootfs))
    (cmd,) = ran
    assert cmd[:5] == ["nsenter", "--target=4242", "--mount", "--", "sh"]
    src = sources[-1]
    dst = str(rootfs) + src
    assert f"mount --bind '{src}' '{dst}' && mount -o remount,bind,ro '{dst}'" in cmd[-1]
    assert Path(dst).is_dir()  # the mount point made in the container's root
