"""miglab's vSphere modules against the project's vcsim lab (real vSphere API, simulated lab)."""

from __future__ import annotations

import ssl

import pytest

from miglab.sim import vcenter as vcsim_lab
from testlib import run_module, vcenter_args

pytestmark = pytest.mark.integration


conn = vcenter_args


def lab_names(sim) -> tuple[str, str, str]:
    return sim.lab["hosts"][0]["name"], sim.lab["datastore"], sim.lab["network"]


def vm_args(sim, name, **kw) -> dict:
    host, ds, net = lab_names(sim)
    args = {
        **conn(sim),
        "name": name,
        "host": host,
        "datastore": ds,
        "network": net,
        "vcpus": 32,
        "memory_gb": 64,
        "vgpus": ["grid_a100d-2-20c"],
    }
    args.update(kw)
    return args


def read_vm(sim, name):
    """The VM as vCenter stores it (independent of miglab's own reading code)."""
    from pyVim.connect import Disconnect, SmartConnect
    from pyVmomi import vim

    ctx = ssl.create_default_context(cafile=sim.ca_file)
    si = SmartConnect(
        host=sim.host, port=sim.port, user=sim.username, pwd=sim.password, sslContext=ctx
    )
    try:
        view = si.content.viewManager.CreateContainerView(
            si.content.rootFolder, [vim.VirtualMachine], True
        )
        for vm in view.view:
            if vm.name == name:
                cfg = vm.config
                return {
                    "vcpus": cfg.hardware.numCPU,
                    "memory_mb": cfg.hardware.memoryMB,
                    "locked": cfg.memoryReservationLockedToMax,
                    "firmware": cfg.firmware,
                    "extra": {o.key: o.value for o in cfg.extraConfig},
                    "vgpus": sorted(
                        d.backing.vgpu
                        for d in cfg.hardware.device
                        if isinstance(d, vim.vm.device.VirtualPCIPassthrough)
                    ),
                    "power": str(vm.runtime.powerState),
                    "host": vm.runtime.host.name,
                }
        return None
    finally:
        Disconnect(si)


def test_create_rerun_reconfigure_absent(vcsim):
    args = vm_args(vcsim, "it-vm1", mmio_gb=64)
    # check mode first: reports the creation, creates nothing
    res = run_module("vgpu_vm", args, check=True, diff=True)
    assert res["changed"] and not res["failed"], res
    assert res["vms"][0]["actions"] == ["create"]
    assert read_vm(vcsim, "it-vm1") is None

    res = run_module("vgpu_vm", args)
    assert res["changed"] and not res["failed"], res.get("msg")
    vm = read_vm(vcsim, "it-vm1")
    assert vm["vcpus"] == 32 and vm["memory_mb"] == 65536 and vm["locked"] is True
    assert vm["firmware"] == "efi"
    assert vm["extra"]["pciPassthru.use64bitMMIO"] == "TRUE"
    assert vm["extra"]["pciPassthru.allowP2P"] == "TRUE"
    assert vm["extra"]["pciPassthru.64bitMMIOSizeGB"] == "64"
    assert vm["vgpus"] == ["grid_a100d-2-20c"]
    # 64 GB is below NVIDIA's documented size for A100 80GB: applied, with a warning
    assert any("64bitMMIOSizeGB=64" in w for w in res.get("warnings", []))

    again = run_module("vgpu_vm", args)
    assert again["changed"] is False and not again["failed"], again

    # one field changes; check mode + diff tell exactly that
    smaller = dict(args, vcpus=16)
    preview = run_module("vgpu_vm", smaller, check=True, diff=True)
    assert preview["changed"] and preview["vms"][0]["actions"] == ["reconfigure: vcpus: 32 -> 16"]
    assert preview["diff"][0]["before"]["vcpus"] == 32
    assert preview["diff"][0]["after"]["vcpus"] == 16
    assert read_vm(vcsim, "it-vm1")["vcpus"] == 32
    assert run_module("vgpu_vm", smaller)["changed"]
    assert read_vm(vcsim, "it-vm1")["vcpus"] == 16

    # add a second vGPU, then remove the first
    two = dict(smaller, vgpus=["grid_a100d-2-20c", "grid_a100d-1-10c"])
    assert run_module("vgpu_vm", two)["changed"]
    assert read_vm(vcsim, "it-vm1")["vgpus"] == ["grid_a100d-1-10c", "grid_a100d-2-20c"]
    one = dict(smaller, vgpus=["grid_a100d-1-10c"])
    assert run_module("vgpu_vm", one)["changed"]
    assert read_vm(vcsim, "it-vm1")["vgpus"] == ["grid_a100d-1-10c"]

    gone = {**conn(vcsim), "name": "it-vm1", "state": "absent"}
    assert run_module("vgpu_vm", gone, check=True)["changed"]
    assert read_vm(vcsim, "it-vm1") is not None
    assert run_module("vgpu_vm", gone)["changed"]
    assert read_vm(vcsim, "it-vm1") is None
    assert run_module("vgpu_vm", gone)["changed"] is False


def test_default_mmio_from_catalog(vcsim):
    res = run_module("vgpu_vm", vm_args(vcsim, "it-mmio"))
    assert not res["failed"], res.get("msg")
    # NVIDIA documents 256 GB for A100 80GB (miglab/core/catalog/gpus/a100-pcie-80gb.yaml)
    assert read_vm(vcsim, "it-mmio")["extra"]["pciPassthru.64bitMMIOSizeGB"] == "256"
    assert not res.get("warnings")
    run_module("vgpu_vm", {**conn(vcsim), "name": "it-mmio", "state": "absent"})


def test_power_on_needs_shared_direct(vcsim_factory):
    vcsim = vcsim_factory(vcsim_lab.default_lab())  # graphics "shared": no vGPU type offered (V9)
    res = run_module("vgpu_vm", vm_args(vcsim, "it-shared", power_state="poweredon"))
    assert res["failed"] and "not offered" in res["msg"], res["msg"]
    # why, before vCenter's bare refusal: the host's GPUs are not in Shared Direct (V9)
    assert "graphics type shared, not Shared Direct" in res["msg"], res["msg"]
    assert read_vm(vcsim, "it-shared") is None  # refused before anything was created


def test_power_on_and_cold_change_needs_permission(vcsim_factory):
    lab = vcsim_lab.default_lab()
    lab["hosts"][0]["graphics_type"] = "sharedDirect"
    vcsim = vcsim_factory(lab)
    args = vm_args(vcsim, "it-power", power_state="poweredon")
    assert run_module("vgpu_vm", args)["changed"]
    assert read_vm(vcsim, "it-power")["power"] == "poweredOn"
    refused = run_module("vgpu_vm", dict(args, vgpus=["grid_a100d-3-40c"]))
    assert refused["failed"] and "allow_power_off" in refused["msg"]
    assert read_vm(vcsim, "it-power")["vgpus"] == ["grid_a100d-2-20c"]
    ok = run_module("vgpu_vm", dict(args, vgpus=["grid_a100d-3-40c"], allow_power_off=True))
    assert ok["changed"] and ok["vms"][0]["actions"][0] == "power off"
    vm = read_vm(vcsim, "it-power")
    assert vm["vgpus"] == ["grid_a100d-3-40c"] and vm["power"] == "poweredOn"
    run_module("vgpu_vm", {**conn(vcsim), "name": "it-power", "state": "absent"})


def test_bad_profile_changes_nothing(vcsim):
    host, ds, net = lab_names(vcsim)
    args = {
        **conn(vcsim),
        "host": host,
        "datastore": ds,
        "network": net,
        "vms": [
            {"name": "it-good", "vgpus": ["grid_a100d-1-10c"]},
            {"name": "it-bad", "vgpus": ["nvidia_h100xm-1-10c"]},
        ],
    }
    res = run_module("vgpu_vm", args)
    assert res["failed"]
    assert "it-bad" in res["msg"] and "nvidia_h100xm-1-10c" in res["msg"]
    assert "H100-SXM5-80GB" in res["msg"] and "not offered now" in res["msg"]
    assert read_vm(vcsim, "it-good") is None and read_vm(vcsim, "it-bad") is None


def test_many_vms_in_one_call_reported_per_vm(vcsim):
    host, ds, net = lab_names(vcsim)
    vms = [{"name": f"it-many-{k}", "vgpus": ["grid_a100d-1-10c"]} for k in range(12)]
    args = {
        **conn(vcsim),
        "host": host,
        "datastore": ds,
        "network": net,
        "vcpus": 4,
        "memory_gb": 8,
        "concurrency": 6,
        "vms": vms,
    }
    res = run_module("vgpu_vm", args)
    assert res["changed"] and not res["failed"], res.get("msg")
    assert [v["name"] for v in res["vms"]] == [v["name"] for v in vms]
    assert all(v["changed"] and v["actions"] == ["create"] for v in res["vms"])
    assert run_module("vgpu_vm", args)["changed"] is False
    gone = {**conn(vcsim), "state": "absent", "vms": [{"name": v["name"]} for v in vms]}
    assert run_module("vgpu_vm", gone)["changed"]


def test_wrong_credentials(vcsim):
    res = run_module("vgpu_vm", dict(vm_args(vcsim, "it-x"), password="wrong-password-123"))
    assert res["failed"] and "login failed" in res["msg"]
    assert "wrong-password-123" not in res["_stdout"]


def test_tls_verification_is_on_by_default(vcsim):
    args = vm_args(vcsim, "it-tls")
    del args["ca_bundle"]
    res = run_module("vgpu_vm", args)
    assert res["failed"] and "not trusted" in res["msg"]
    insecure = run_module("vgpu_vm", dict(args, validate_certs=False), check=True)
    assert not insecure["failed"], insecure.get("msg")


def test_env_fallbacks(vcsim):
    env = {
        "VMWARE_HOST": vcsim.host,
        "VMWARE_PORT": str(vcsim.port),
        "VMWARE_USER": vcsim.username,
        "VMWARE_PASSWORD": vcsim.password,
        "VMWARE_CA_BUNDLE": vcsim.ca_file,
    }
    res = run_module("esxi_gpu_info", {}, env=env)
    assert not res["failed"], res.get("msg")


def test_gpu_info_maps_devices_to_catalog(vcsim):
    res = run_module("esxi_gpu_info", conn(vcsim))
    assert not res["failed"], res.get("msg")
    host = res["hosts"][lab_names(vcsim)[0]]
    assert len(host["gpus"]) == 4
    assert {g["catalog"] for g in host["gpus"]} == {"A100-PCIE-80GB"}
    assert "grid_a100d-2-20c" in host["vgpu_types"]


def test_host_graphics_only_changes_what_is_set(vcsim_factory):
    vcsim = vcsim_factory()  # a lab of its own: this test changes host settings
    host = lab_names(vcsim)[0]
    base = {**conn(vcsim), "esxi_hostname": [host]}
    policy = run_module("esxi_host_graphics", dict(base, assignment_policy="consolidation"))
    assert not policy["failed"], policy.get("msg")
    res = run_module(
        "esxi_host_graphics",
        dict(base, default_graphics_type="sharedDirect"),
        check=True,
        diff=True,
    )
    assert res["changed"]
    assert res["hosts"][host]["after"]["default_graphics_type"] == "sharedDirect"
    info = run_module("esxi_gpu_info", conn(vcsim))["hosts"][host]["graphics_config"]
    assert info["default_graphics_type"] != "sharedDirect" or not res["changed"]
    res = run_module("esxi_host_graphics", dict(base, default_graphics_type="sharedDirect"))
    assert res["changed"] and res["restart_needed"]
    after = res["hosts"][host]["after"]
    # the policy set before was not reverted by a call that did not mention it
    assert after["assignment_policy"] == "consolidation"
    assert after["default_graphics_type"] == "sharedDirect"
    assert (
        run_module("esxi_host_graphics", dict(base, default_graphics_type="sharedDirect"))[
            "changed"
        ]
        is False
    )


def test_maintenance_and_reboot_wait(vcsim_factory):
    vcsim = vcsim_factory()  # a lab of its own: this test reboots the host
    host = lab_names(vcsim)[0]
    base = {**conn(vcsim), "esxi_hostname": host}
    refused = run_module("esxi_host_maintenance", dict(base, state="rebooted"))
    assert refused["failed"] and "maintenance mode" in refused["msg"]
    assert run_module("esxi_host_maintenance", dict(base, state="maintenance"), check=True)[
        "changed"
    ]
    assert run_module("esxi_host_maintenance", dict(base, state="maintenance"))["changed"]
    assert run_module("esxi_host_maintenance", dict(base, state="maintenance"))["changed"] is False
    rebooted = run_module("esxi_host_maintenance", dict(base, state="rebooted", timeout=120))
    assert rebooted["changed"] and not rebooted["failed"], rebooted.get("msg")
    assert rebooted["reboot_seconds"] >= 0  # reported; how long it took depends on the machine
    assert run_module("esxi_host_maintenance", dict(base, state="normal"))["changed"]


def test_host_that_never_returns_is_a_clear_error(vcsim_factory):
    lab = vcsim_lab.default_lab()
    lab["hosts"][0]["reboot_never_returns"] = True
    sim = vcsim_factory(lab)
    host = sim.lab["hosts"][0]["name"]
    base = {**conn(sim), "esxi_hostname": host}
    assert run_module("esxi_host_maintenance", dict(base, state="maintenance"))["changed"]
    res = run_module("esxi_host_maintenance", dict(base, state="rebooted", timeout=8))
    assert res["failed"] and "did not reconnect within 8 s" in res["msg"]


def _two_host_lab():
    from miglab.core.catalog import load_catalog
    from miglab.core.placement import Host, Lab

    cat = load_catalog()
    a100 = cat.get("A100-PCIE-80GB")
    lab = Lab(tuple(Host(f"esxi-0{i}.sim.miglab.test", (a100,) * 2, 64, 512) for i in (1, 2)))
    return vcsim_lab.lab_json(lab, cat, graphics_type="sharedDirect")


def test_clone_from_template_and_move_host(vcsim_factory):
    sim = vcsim_factory(_two_host_lab())
    h1, h2 = (h["name"] for h in sim.lab["hosts"])
    base = {
        **conn(sim),
        "datastore": "datastore1",
        "network": "VM Network",
        "vcpus": 4,
        "memory_gb": 8,
    }
    # a plain VM without vGPU serves as the template (a "golden image")
    assert run_module("vgpu_vm", dict(base, name="it-template", host=h1, vgpus=[]))["changed"]
    clone = dict(
        base,
        name="it-clone",
        host=h1,
        template="it-template",
        vgpus=["grid_a100d-3-40c"],
        power_state="poweredon",
    )
    res = run_module("vgpu_vm", clone)
    assert res["changed"] and not res["failed"], res.get("msg")
    assert res["vms"][0]["actions"] == ["clone from it-template", "power on"]
    vm = read_vm(sim, "it-clone")
    assert vm["vgpus"] == ["grid_a100d-3-40c"] and vm["power"] == "poweredOn"
    assert vm["extra"]["pciPassthru.64bitMMIOSizeGB"] == "256" and vm["locked"] is True
    assert run_module("vgpu_vm", clone)["changed"] is False
    # moving a vGPU VM to another host needs it powered off (no vMotion of a running vGPU here)
    moved = run_module("vgpu_vm", dict(clone, host=h2, allow_power_off=True))
    assert not moved["failed"], moved.get("msg")
    assert moved["vms"][0]["actions"] == ["power off", f"relocate to {h2}", "power on"]
    vm = read_vm(sim, "it-clone")
    assert vm["host"] == h2 and vm["power"] == "poweredOn"
