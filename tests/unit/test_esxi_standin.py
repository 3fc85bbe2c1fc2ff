"""The ESXi shell stand-in (miglab/sim/standins/esxi) prints what miglab.core.esxi reads from a real
host,
and keeps a host's state across commands: install, boot, MIG modes, GPU reset."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from miglab.core import esxi
from miglab.formats import esxcli, nvsmi
from testlib import ROOT

STANDIN = ROOT / "miglab" / "sim" / "standins" / "esxi"
QUERY = ["--query-gpu=" + ",".join(esxi.NVSMI_QUERY_FIELDS), "--format=csv"]


@pytest.fixture
def host(tmp_path):
    """Run a stand-in command: host("esxcli", "software", "vib", "list") -> CompletedProcess."""
    env = {
        "ESXI_STANDIN_STATE": str(tmp_path / "state" / "state.json"),
        "ESXI_STANDIN_NVSMI_LINK": str(tmp_path / "nvidia-smi"),
        "ESXI_STANDIN_NVSMI_TARGET": "/bin/true",
        "PATH": "/usr/bin:/bin",
    }

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(STANDIN / "esxi_standin.py"), *args],
            env={**env, **run.env},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    run.tmp = tmp_path
    run.env = {}  # more environment for later calls
    return run


def bundle(tmp_path, driver="535.154.02", esxi_release="7.0.2", **kw) -> tuple[str, str]:
    sys.path.insert(0, str(STANDIN))
    try:
        import importlib

        make = importlib.import_module("make-bundle")
    finally:
        sys.path.pop(0)
    path, checksum = make.write(driver, esxi_release, tmp_path / "bundles", **kw)
    return str(path), checksum


def facts(host, with_bundle: str | None = None) -> dict:
    nv = host("nvidia-smi", *QUERY)
    f = {
        "vmware_vl": host("vmware", "-vl").stdout,
        "acceptance": host("esxcli", "software", "acceptance", "get").stdout,
        "components": host("esxcli", "software", "component", "list").stdout,
        "vibs": host("esxcli", "software", "vib", "list").stdout,
        "nvidia_smi": {"rc": nv.returncode, "stdout": nv.stdout, "stderr": nv.stderr},
        "bundle_vibs": None,
    }
    if with_bundle:
        f["bundle_vibs"] = host(
            "esxcli", "software", "sources", "vib", "list", "-d", with_bundle
        ).stdout
    return f


WANT = {"version": "535.154.02", "guest_driver_version": "535.154.05"}


def test_outputs_parse_like_real_ones(host):
    assert host("esxi-standin", "init", "gpus=A100-PCIE-80GB:2").returncode == 0
    assert esxcli.parse_vmware_version(host("vmware", "-vl").stdout)["version"] == "7.0.3"
    assert esxcli.parse_acceptance(host("esxcli", "software", "acceptance", "get").stdout)
    vibs = esxcli.parse_vib_list(host("esxcli", "software", "vib", "list").stdout)
    assert {"atlantic", "esx-base"} <= {v["name"] for v in vibs}
    comps = esxcli.parse_component_list(host("esxcli", "software", "component", "list").stdout)
    assert comps[0]["display_version"] == "7.0 Update 3c"
    nv = host("nvidia-smi", *QUERY)
    assert nv.returncode == 127  # no driver, no nvidia-smi
    assert esxi.nvsmi_state({"rc": nv.returncode, "stderr": nv.stderr})["state"] == "absent"


def test_esxi8_tables_have_the_newer_columns(host):
    host("esxi-standin", "init", "esxi=8.0.0")
    path, _ = bundle(host.tmp, esxi_release="8.0.0")
    host("esxcli", "software", "component", "apply", "-d", path)
    comps = esxcli.parse_component_list(host("esxcli", "software", "component", "list").stdout)
    nvd = [c for c in comps if c["name"] == "NVD-AIE-800"][0]
    assert (nvd["release_date"], nvd["platforms"]) == ("11-03-2023", "host")
    vibs = esxcli.parse_vib_list(host("esxcli", "software", "vib", "list").stdout)
    assert all(v["platforms"] == "host" for v in vibs)
    result = esxcli.parse_install_result(
        host("esxcli", "software", "component", "apply", "-d", path).stdout
    )
    assert result["skipped"] == ["NVD-AIE-800_535.154.02-1OEM.800.1.0.20613240"]


def test_install_boot_and_verify_through_the_plan(host):
    host("esxi-standin", "init", "gpus=A100-PCIE-80GB:1")
    path, _ = bundle(host.tmp)
    plan = esxi.plan_driver(facts(host, path), WANT)
    assert (plan["action"], plan["problems"], plan["bundle"]["status"]) == ("install", [], "New")

    res = host("esxcli", "software", "component", "apply", "-d", path)
    assert res.returncode == 0
    assert esxcli.parse_install_result(res.stdout)["installed"] == [
        "NVD-AIE-702_535.154.02-1OEM.702.0.0.17630552"
    ]
    assert Path(host.tmp / "nvidia-smi").is_symlink()  # the driver brings nvidia-smi
    plan = esxi.plan_driver(facts(host, path), WANT)
    assert plan["action"] == "reboot" and plan["loaded"]["state"] == "not_loaded"

    host("esxi-standin", "boot-request", "vcenter")  # applied by the next command
    after = esxi.verify_driver(facts(host), WANT)
    assert after["ok"], after["problems"]
    state = host("esxi-standin", "show").stdout
    assert '"reboots": 1' in state


def test_upgrade_runs_the_old_driver_until_the_reboot(host):
    host("esxi-standin", "init")
    old, _ = bundle(host.tmp, driver="535.129.03")
    new, _ = bundle(host.tmp)
    host("esxi-standin", "preinstall", "--loaded", old)
    assert "Update" in host("esxcli", "software", "sources", "vib", "list", "-d", new).stdout
    assert esxi.plan_driver(facts(host, new), WANT)["action"] == "upgrade"
    res = host("esxcli", "software", "component", "apply", "-d", new)
    assert esxcli.parse_install_result(res.stdout)["removed"] == [
        "NVD-AIE-702_535.129.03-1OEM.702.0.0.17630552"
    ]
    nv = host("nvidia-smi", *QUERY)
    assert esxi.nvsmi_state({"rc": nv.returncode, "stdout": nv.stdout})["state"] == "mismatch"
    host("esxi-standin", "reboot")
    assert esxi.verify_driver(facts(host), WANT)["ok"]


def test_refusals_print_esxcli_errors(host):
    host("esxi-standin", "init", "acceptance=VMwareCertified")
    path, _ = bundle(host.tmp)
    res = host("esxcli", "software", "component", "apply", "-d", path)
    err = esxcli.parse_esxcli_error(res.stdout)
    assert res.returncode == 1 and err["error"] == "AcceptanceLevelError"
    assert "acceptance level is accepted" in err["message"]
    res = host("esxcli", "software", "sources", "vib", "list", "-d", "/vmfs/volumes/ds/none.zip")
    assert esxcli.parse_esxcli_error(res.stdout)["error"] == "MetadataDownloadError"
    assert host("esxcli", "software", "nope", "list").returncode == 1


def test_mig_modes_pending_reset_reboot(host):
    """V10: on ESXi an Ampere GPU's new MIG mode stays pending ("Not Supported", reboot or reset
    asked for), nvidia-smi -r refuses it and only a reboot makes it effective; an idle Hopper GPU
    switches at once, a pending Hopper mode is made effective by a reset."""
    host("esxi-standin", "init", "gpus=A100-PCIE-80GB:2,H100-PCIE-80GB:1,L40S:1", "in_use=1")
    path, _ = bundle(host.tmp)
    host("esxi-standin", "preinstall", "--loaded", path)

    def query():
        nv = host("nvidia-smi", *QUERY)
        return {"rc": nv.returncode, "stdout": nv.stdout}

    wanted = {0: True, 1: True, 2: True}
    plan = esxi.plan_mig(query(), wanted)
    assert plan["enable"] == [0, 1, 2]
    out = host("nvidia-smi", "-i", "0,1,2", "-mig", "1").stdout
    # the two lines of an A100 ESXi capture (real-lab notes V10)
    assert (
        "Warning: MIG mode is in pending enable state for GPU 00000000:3B:00.0:Not Supported\n"
        "Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU "
        "00000000:3B:00.0\n"
    ) in out
    assert "Enabled MIG Mode for GPU 00000000:86:00.0" in out  # idle Hopper: at once
    assert out.endswith("All done.\n")
    # a reset is allowed and no VM uses the GPUs, but Ampere on ESXi needs the reboot
    plan = esxi.plan_mig(query(), wanted, {"0000:3b:00.0": [], "0000:5e:00.0": []}, True)
    assert (plan["activate"], plan["activation"], plan["reset"]) == ([0, 1], "reboot", [])
    res = host("nvidia-smi", "-i", "0", "-r")
    assert res.returncode != 0
    assert res.stdout == "Resetting GPU 00000000:3B:00.0 is not supported.\n"
    assert esxi.plan_mig(query(), wanted)["activate"] == [0, 1]  # still pending
    host("esxi-standin", "reboot")
    assert esxi.verify_mig(query(), wanted)["ok"]
    assert "does not support MIG" in esxi.plan_mig(query(), {3: True})["problems"][0]
    assert "Not Supported" in host("nvidia-smi", "-i", "3", "-mig", "1").stdout


def test_hopper_pending_mode_is_reset(host):
    """V10: a Hopper GPU that was busy when its mode was set keeps it pending; once idle, a GPU
    reset makes it effective (the path NVIDIA documents for Hopper), and plan_mig picks it."""
    import json

    host("esxi-standin", "init", "gpus=H100-PCIE-80GB:1")
    path, _ = bundle(host.tmp)
    host("esxi-standin", "preinstall", "--loaded", path)
    state_file = host.tmp / "state" / "state.json"
    state = json.loads(state_file.read_text())
    state["gpus"][0]["mig_pending"] = True  # set while a VM used it, the VM gone since
    state_file.write_text(json.dumps(state))
    nv = host("nvidia-smi", *QUERY)
    plan = esxi.plan_mig({"rc": nv.returncode, "stdout": nv.stdout}, {0: True},
                         {"0000:3b:00.0": []}, True)  # fmt: skip
    assert (plan["activation"], plan["reset"]) == ("reset", [0])
    assert "was successfully reset" in host("nvidia-smi", "-i", "0", "-r").stdout
    nv = host("nvidia-smi", *QUERY)
    assert esxi.verify_mig({"rc": nv.returncode, "stdout": nv.stdout}, {0: True})["ok"]


def test_query_and_list_formats(host):
    host("esxi-standin", "init", "gpus=A100-PCIE-80GB:1", "mig=0")
    path, _ = bundle(host.tmp)
    host("esxi-standin", "preinstall", "--loaded", path)
    gpus = nvsmi.parse_query(host("nvidia-smi", "-q").stdout)
    assert gpus[0]["product_name"] == "NVIDIA A100 80GB PCIe"
    assert (gpus[0]["mig_mode_current"], gpus[0]["mig_mode_pending"]) == ("Enabled", "Enabled")
    assert (gpus[0]["virtualization_mode"], gpus[0]["host_vgpu_mode"]) == ("Host VGPU", "SR-IOV")
    assert gpus[0]["device_id"] == "0x20B5" and gpus[0]["driver_version"] == "535.154.02"
    rows = nvsmi.parse_query_gpu_csv(
        host("nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits").stdout,
        fields=["name", "memory.total"],
    )
    assert rows == [{"name": "NVIDIA A100 80GB PCIe", "memory.total": "81920"}]
    assert "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-" in host("nvidia-smi", "-L").stdout
    assert "MIG M." in host("nvidia-smi").stdout
    assert "is not a valid field" in host("nvidia-smi", "--query-gpu=bogus", "--format=csv").stdout


def test_bundles_are_reproducible(tmp_path):
    a = bundle(tmp_path / "a")
    b = bundle(tmp_path / "b")
    assert Path(a[0]).name == Path(b[0]).name
    assert Path(a[0]).name.startswith("NVD-AIE-702_535.154.02-1OEM.702.0.0.17630552_")
    assert a[1] == b[1] and a[1].startswith("sha256:")


def test_the_vgpu_managers_view_of_the_vgpus_vcenter_runs(host):
    """Real-lab notes V2: the vGPU manager, not vCenter, knows each vGPU's GPU instance and start
    slot (`nvidia-smi vgpu -q`, `nvidia-smi mig -lgi`); the stand-in shows what the simulated
    vCenter placed (its host_state_dir file), in NVIDIA's layouts, which miglab reads back."""
    import json
    import socket

    from miglab.formats.nvsmi_vgpu import vgpu_slots

    path, _ = bundle(host.tmp)
    host("esxi-standin", "init", "gpus=A100-PCIE-80GB:2", "mig=0,1")
    host("esxi-standin", "preinstall", "--loaded", path)
    vcenter = host.tmp / "vcenter"
    vcenter.mkdir()
    host.env = {"ESXI_STANDIN_VCENTER_DIR": str(vcenter)}
    empty = host("nvidia-smi", "mig", "-lgi")
    assert empty.returncode == 6 and "No GPU instances found" in empty.stdout
    vgpu = {"vm_uuid": "", "vgpu_type": "grid_a100d-4-40c", "gpu_instance_id": 1,
            "placement_start": 0, "placement_size": 4}  # fmt: skip
    state = {
        "host": socket.gethostname(),
        "gpus": [
            {
                "pci_id": "0000:3b:00.0",
                "vgpus": [
                    {**vgpu, "vm": "s6-vm1"},
                    {
                        **vgpu,
                        "vm": "s6-vm2",
                        "vgpu_type": "grid_a100d-2-20c",
                        "gpu_instance_id": 2,
                        "placement_start": 4,
                        "placement_size": 2,
                    },
                ],
            },  # fmt: skip
            {"pci_id": "0000:5e:00.0", "vgpus": []},
        ],
    }
    (vcenter / f"{socket.gethostname()}.json").write_text(json.dumps(state))
    q, lgi = host("nvidia-smi", "vgpu", "-q"), host("nvidia-smi", "mig", "-lgi")
    assert q.returncode == 0 and lgi.returncode == 0, q.stdout + lgi.stdout
    assert "VM Name                       : s6-vm2" in q.stdout
    assert "vGPU Name                     : GRID A100D-2-20C" in q.stdout
    assert "GPU 00000000:5E:00.0\n    Active vGPUs                      : 0" in q.stdout
    assert "|   0  MIG 2g.20gb         14        2          4:2     |" in lgi.stdout
    assert {len(line) for line in lgi.stdout.splitlines()} == {57}
    index = host("nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader").stdout
    assert vgpu_slots(q.stdout, lgi.stdout, index) == {
        "s6-vm1": {"gpu": "00000000:3B:00.0", "mig_slot": 0, "vgpu": "GRID A100D-4-40C"},
        "s6-vm2": {"gpu": "00000000:3B:00.0", "mig_slot": 4, "vgpu": "GRID A100D-2-20C"},
    }


def test_v11_gpus_in_passthrough_mode_are_invisible_to_nvidia_smi(host):
    """Real-lab notes V11 (Denneman 2023; vSphere PciPassthruInfo): a GPU vCenter has in
    DirectPath I/O mode is not the host driver's, so nvidia-smi lists only the others, numbered
    from 0; with every GPU passed through it finds no device."""
    import json
    import socket

    path, _ = bundle(host.tmp)
    host("esxi-standin", "init", "gpus=A100-PCIE-80GB:2")
    host("esxi-standin", "preinstall", "--loaded", path)
    vcenter = host.tmp / "vcenter"
    vcenter.mkdir()
    host.env = {"ESXI_STANDIN_VCENTER_DIR": str(vcenter)}
    view = vcenter / f"{socket.gethostname()}.json"

    def passthrough(*flags: bool) -> None:
        gpus = [
            {"pci_id": pci, "vgpus": [], "passthrough": on}
            for pci, on in zip(("0000:3b:00.0", "0000:5e:00.0"), flags, strict=True)
        ]
        view.write_text(json.dumps({"host": socket.gethostname(), "gpus": gpus}))

    both = host("nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader")
    assert both.stdout.splitlines() == ["0, 00000000:3B:00.0", "1, 00000000:5E:00.0"]
    passthrough(True, False)
    one = host("nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader")
    assert one.returncode == 0 and one.stdout.splitlines() == ["0, 00000000:5E:00.0"]
    assert host("nvidia-smi", "-L").stdout.count("GPU ") == 1
    passthrough(True, True)
    none = host("nvidia-smi", "-L")
    assert none.returncode == 6 and none.stdout == "No devices were found\n"
    passthrough(False, False)
    assert host("nvidia-smi", "-L").stdout.count("GPU ") == 2


def _standin_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("esxi_standin", STANDIN / "esxi_standin.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_lgi_profiles_are_the_catalogs():
    """The stand-in names a vGPU type's GPU instance profile from the type's name (the container
    has no catalog): for every model it plays, that is the catalog's mig_backed profile and id."""
    from miglab.core.catalog import load_catalog

    standin, catalog = _standin_module(), load_catalog()
    checked = 0
    for name, (_, _, mig, *_rest) in standin.GPU_MODELS.items():
        if not mig:
            continue
        model = catalog.get(name)
        gpu = standin._complete({"gpus": [{"model": name}]})["gpus"][0]
        for p in model.profiles:
            if p.name in model.mig_backed:
                assert standin._profile_of(gpu, model.mig_backed[p.name]) == (p.name, p.id)
                checked += 1
    assert checked >= 20


def test_vgpu_query_and_lgi_details(host):
    """Real-lab notes V2 (what the host's vGPU manager shows): time-sliced vGPUs have no GPU
    instance (N/A, not in -lgi), GPUs with MIG off are not in -lgi, ``-i`` selects GPUs, vGPU ids
    are distinct and stable, and no state file (molecule) or a broken one means no vGPUs; without
    a loaded driver both commands fail as every nvidia-smi command does there."""
    import json
    import socket

    from miglab.formats.nvsmi_vgpu import parse_mig_lgi, parse_vgpu_query

    path, _ = bundle(host.tmp)
    host("esxi-standin", "init", "gpus=A100-PCIE-80GB:3", "mig=0,2")
    host("esxi-standin", "preinstall", path)  # installed, not loaded yet
    vcenter = host.tmp / "vcenter"
    vcenter.mkdir()
    host.env = {"ESXI_STANDIN_VCENTER_DIR": str(vcenter)}
    for cmd in (("vgpu", "-q"), ("mig", "-lgi")):
        r = host("nvidia-smi", *cmd)
        assert r.returncode == 9 and "couldn't communicate with the NVIDIA driver" in r.stdout
    host("esxi-standin", "reboot")

    q = host("nvidia-smi", "vgpu", "-q")  # no file: every GPU, none active
    assert q.returncode == 0
    assert [line for line in q.stdout.splitlines() if not line.startswith(" ")] == [
        "GPU 00000000:3B:00.0",
        "GPU 00000000:5E:00.0",
        "GPU 00000000:86:00.0",
    ]
    assert q.stdout.count("Active vGPUs                      : 0") == 3
    assert host("nvidia-smi", "mig", "-lgi").stdout == "No GPU instances found: Not Found\n"

    def vg(vm, t, gi=-1, start=-1, size=-1):
        return {"vm": vm, "vm_uuid": "", "vgpu_type": t, "gpu_instance_id": gi,
                "placement_start": start, "placement_size": size}  # fmt: skip

    state = {
        "host": socket.gethostname(),
        "gpus": [
            {"pci_id": "0000:3b:00.0", "name": "NVIDIA A100 80GB PCIe",
             "vgpus": [vg("s7-vm1", "grid_a100d-2-20c", 1, 0, 2),
                       vg("s7-vm2", "grid_a100d-2-20c", 2, 2, 2)]},
            {"pci_id": "0000:5e:00.0", "name": "NVIDIA A100 80GB PCIe",
             "vgpus": [vg("ts-1", "grid_a100d-20c"), vg("ts-2", "grid_a100d-20c")]},
            {"pci_id": "0000:86:00.0", "name": "NVIDIA A100 80GB PCIe",
             "vgpus": [vg("whole", "grid_a100d-7-80c", 0, 0, 8)]},
        ],
    }  # fmt: skip
    (vcenter / f"{socket.gethostname()}.json").write_text(json.dumps(state))
    q = host("nvidia-smi", "vgpu", "-q").stdout
    vgpus = parse_vgpu_query(q)
    assert [(v["vm"], v["gpu_instance_id"]) for v in vgpus] == [
        ("s7-vm1", 1),
        ("s7-vm2", 2),
        ("ts-1", None),
        ("ts-2", None),
        ("whole", 0),
    ]
    assert "GPU Instance ID               : N/A" in q
    assert "            Total                     : 20480 MiB" in q
    ids = [line.split(":")[1].strip() for line in q.splitlines() if "vGPU ID" in line]
    assert len(set(ids)) == 5 and all(i.isdigit() and int(i) < 2**32 for i in ids)
    vm_ids = [line.split(":")[1].strip() for line in q.splitlines() if "VM ID" in line]
    assert len(set(vm_ids)) == 5
    assert host("nvidia-smi", "vgpu", "-q").stdout == q  # stable

    lgi = host("nvidia-smi", "mig", "-lgi").stdout
    assert [(g["gpu"], g["profile"], g["profile_id"], g["gpu_instance_id"], g["start"], g["size"])
            for g in parse_mig_lgi(lgi)] == [(0, "2g.20gb", 14, 1, 0, 2),
                                             (0, "2g.20gb", 14, 2, 2, 2),
                                             (2, "7g.80gb", 0, 0, 0, 8)]  # fmt: skip
    assert "|   2  MIG 7g.80gb          0        0          0:8     |" in lgi

    one = host("nvidia-smi", "vgpu", "-q", "-i", "2").stdout
    assert (
        one.startswith("GPU 00000000:86:00.0\n") and "VM Name                       : whole" in one
    )
    assert "s7-vm1" not in one
    only2 = host("nvidia-smi", "mig", "-lgi", "-i", "2").stdout
    assert "7g.80gb" in only2 and "2g.20gb" not in only2
    r = host("nvidia-smi", "mig", "-lgi", "-i", "1")  # MIG off on GPU 1: not listed
    assert r.returncode == 6 and r.stdout == "No GPU instances found: Not Found\n"

    (vcenter / f"{socket.gethostname()}.json").write_text("{not json")
    assert (
        host("nvidia-smi", "vgpu", "-q").stdout.count("Active vGPUs                      : 0") == 3
    )
