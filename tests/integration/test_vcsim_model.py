"""The vSphere simulator models the GPU lab: proven through pyVmomi as miglab's modules use it."""

from __future__ import annotations

import importlib.util
import json
import os
import ssl
import subprocess
import sys

import pytest
from pyVim.connect import Disconnect, SmartConnect
from pyVim.task import WaitForTask
from pyVmomi import vim, vmodl

from miglab.adapters.inventory import load_lab
from miglab.core.catalog import load_catalog
from miglab.sim import vcenter as vcsim_lab
from testlib import ROOT, wait_until

HOST = "esxi-01.sim.miglab.test"
VGPU = "grid_a100d-2-20c"


# --- helpers -------------------------------------------------------------------------------------
@pytest.fixture
def si_of():
    """si_of(sim) -> a logged-in ServiceInstance, logged out after the test."""
    sessions = []

    def connect(sim):
        si = sim.connect()
        sessions.append(si)
        return si

    yield connect
    for si in sessions:
        Disconnect(si)


def find(si, kind, name=None):
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
    try:
        objs = list(view.view)
    finally:
        view.Destroy()
    if name is None:
        return objs
    return next(o for o in objs if o.name == name)


def retrieve(si, obj, *paths):
    """Properties read with one PropertyCollector.RetrieveContents call (not pyVmomi's Fetch)."""
    pc = si.RetrieveContent().propertyCollector
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=obj)],
        propSet=[vmodl.query.PropertyCollector.PropertySpec(type=type(obj), pathSet=list(paths))],
    )
    (content,) = pc.RetrieveContents([spec])
    return {p.name: p.val for p in content.propSet}


def task_fault(task):
    with pytest.raises(vmodl.MethodFault) as exc:
        WaitForTask(task)
    return exc.value


def vgpu_vm_spec(name, vgpu=VGPU, memory_mb=16384, lock=True):
    return vim.vm.ConfigSpec(
        name=name,
        guestId="ubuntu64Guest",
        numCPUs=8,
        memoryMB=memory_mb,
        firmware="efi",
        memoryReservationLockedToMax=lock,
        files=vim.vm.FileInfo(vmPathName="[datastore1]"),
        extraConfig=[
            vim.option.OptionValue(key="pciPassthru.use64bitMMIO", value="TRUE"),
            vim.option.OptionValue(key="pciPassthru.64bitMMIOSizeGB", value="128"),
        ],
        deviceChange=[
            vim.vm.device.VirtualDeviceSpec(
                operation="add",
                device=vim.vm.device.VirtualPCIPassthrough(
                    key=-100,
                    backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=vgpu),
                ),
            )
        ],
    )


def create_vm(si, spec, host_name=HOST):
    dc = find(si, vim.Datacenter, "dc1")
    cluster = find(si, vim.ClusterComputeResource, "cluster1")
    host = find(si, vim.HostSystem, host_name)
    task = dc.vmFolder.CreateVM_Task(config=spec, pool=cluster.resourcePool, host=host)
    WaitForTask(task)
    return task.info.result


def set_shared_direct(si, host):
    """sharedDirect, in effect after a reboot in maintenance mode (the lab's real procedure)."""
    host.configManager.graphicsManager.UpdateGraphicsConfig(
        vim.host.GraphicsConfig(
            hostDefaultGraphicsType="sharedDirect", sharedPassthruAssignmentPolicy="performance"
        )
    )
    # evacuatePoweredOffVms false, as miglab asks: the API's default (true) does not succeed
    # without DRS while powered-off VMs are registered on the host (real-lab notes V4)
    WaitForTask(host.EnterMaintenanceMode_Task(timeout=0, evacuatePoweredOffVms=False))
    WaitForTask(host.RebootHost_Task(force=False))
    assert wait_until(lambda: host.runtime.connectionState == "connected")
    WaitForTask(host.ExitMaintenanceMode_Task(timeout=0))


# --- the lab file --------------------------------------------------------------------------------
def test_lab_json_from_the_sim_inventory():
    catalog = load_catalog()
    lab = vcsim_lab.lab_json(load_lab(ROOT / "inventories" / "sim"), catalog)
    names = (lab["datacenter"], lab["cluster"], lab["datastore"], lab["network"])
    assert names == ("dc1", "cluster1", "datastore1", "VM Network")
    (host,) = lab["hosts"]
    assert (host["name"], host["cpus"], host["memory_gb"]) == (HOST, 128, 1024)
    assert [g["pci_id"] for g in host["gpus"]] == [
        "0000:3b:00.0",
        "0000:5e:00.0",
        "0000:86:00.0",
        "0000:af:00.0",
    ]
    assert {(g["device_id"], g["name"], g["memory_mb"]) for g in host["gpus"]} == {
        ("0x20b5", "NVIDIA A100 80GB PCIe", 81920)
    }
    assert {"grid_a100d-1-10c", VGPU, "grid_a100d-7-80c", "grid_a100d-20c"} <= set(
        host["vgpu_types"]
    )
    assert (host["graphics_type"], host["assignment_policy"]) == ("shared", "performance")
    json.dumps(lab)  # a JSON document


# --- login and TLS -------------------------------------------------------------------------------
def test_login_and_wrong_password(vcsim, si_of):
    si = si_of(vcsim)
    about = si.content.about
    assert (about.apiVersion, about.version) == ("7.0.3.0", "7.0.3")
    assert si.content.sessionManager.currentSession.userName == vcsim.username
    with pytest.raises(vim.fault.InvalidLogin):
        SmartConnect(
            host=vcsim.host,
            port=vcsim.port,
            user=vcsim.username,
            pwd=vcsim.password + "-wrong",
            sslContext=vcsim.ssl_context(),
        )


def test_tls_verifies_against_the_ca_only(vcsim):
    import socket

    with (
        socket.create_connection((vcsim.host, vcsim.port), timeout=10) as sock,
        vcsim.ssl_context().wrap_socket(sock, server_hostname=vcsim.host) as tls,
    ):
        assert tls.version()
    with pytest.raises(ssl.SSLCertVerificationError):
        SmartConnect(
            host=vcsim.host,
            port=vcsim.port,
            user=vcsim.username,
            pwd=vcsim.password,
            sslContext=ssl.create_default_context(),  # the system's CAs: not ours
        )


# --- hosts and GPUs ------------------------------------------------------------------------------
def test_host_hardware_and_nvidia_pci_devices(vcsim, si_of):
    si = si_of(vcsim)
    (host,) = find(si, vim.HostSystem)
    assert host.name == HOST
    assert host.parent.name == "cluster1"
    cpu = host.hardware.cpuInfo
    assert (cpu.numCpuThreads, cpu.numCpuCores, cpu.numCpuPackages) == (128, 64, 2)
    assert host.hardware.memorySize == 1024 * 2**30
    assert host.summary.hardware.numCpuThreads == 128
    assert host.config.product.version == "7.0.3"
    gpus = [d for d in host.hardware.pciDevice if d.vendorId == 0x10DE]
    assert [(d.id, d.deviceId, d.deviceName, d.vendorName) for d in gpus] == [
        (pci, 0x20B5, "NVIDIA A100 80GB PCIe", "NVIDIA Corporation")
        for pci in ("0000:3b:00.0", "0000:5e:00.0", "0000:86:00.0", "0000:af:00.0")
    ]
    assert (gpus[0].bus, gpus[0].slot, gpus[0].function) == (0x3B, 0, 0)
    assert host.capability.rebootSupported and host.capability.maintenanceModeSupported
    assert host.runtime.connectionState == "connected" and host.runtime.powerState == "poweredOn"
    assert [d.name for d in host.datastore] == ["datastore1"]
    assert [n.name for n in host.network] == ["VM Network"]


def test_shared_gpu_types_and_capabilities(vcsim, si_of):
    si = si_of(vcsim)
    host = find(si, vim.HostSystem, HOST)
    lab_types = vcsim.lab["hosts"][0]["vgpu_types"]
    assert list(host.config.sharedPassthruGpuTypes) == lab_types
    caps = {c.vgpu: c for c in host.config.sharedGpuCapabilities}
    assert list(caps) == lab_types
    cap = caps[VGPU]
    assert cap.diskSnapshotSupported and cap.migrateSupported and cap.suspendSupported
    gm = host.configManager.graphicsManager
    assert list(gm.sharedPassthruGpuTypes) == lab_types
    info = gm.graphicsInfo
    assert [(g.pciId, g.graphicsType, g.vendorName) for g in info] == [
        # the session lab's hosts are in Shared Direct: only then are types offered (V9)
        (g["pci_id"], "sharedDirect", "NVIDIA Corporation")
        for g in vcsim.lab["hosts"][0]["gpus"]
    ]
    assert info[0].memorySizeInKB == 81920 * 1024 and info[0].deviceName == "NVIDIA A100 80GB PCIe"
    assert [(g.pciId, g.graphicsType) for g in host.config.graphicsInfo] == [
        (g.pciId, g.graphicsType) for g in info
    ]


def test_graphics_manager_update_and_readback(vcsim_factory, si_of):
    sim = vcsim_factory(reboot_seconds=0.2)
    si = si_of(sim)
    host = find(si, vim.HostSystem, HOST)
    gm = host.configManager.graphicsManager
    assert gm.graphicsConfig.hostDefaultGraphicsType == "shared"
    gm.UpdateGraphicsConfig(
        vim.host.GraphicsConfig(
            hostDefaultGraphicsType="sharedDirect",
            sharedPassthruAssignmentPolicy="consolidation",
        )
    )
    cfg = retrieve(si, gm, "graphicsConfig")["graphicsConfig"]
    assert (cfg.hostDefaultGraphicsType, cfg.sharedPassthruAssignmentPolicy) == (
        "sharedDirect",
        "consolidation",
    )
    assert host.config.graphicsConfig.hostDefaultGraphicsType == "sharedDirect"
    gm.RefreshGraphicsManager()
    # As on ESXi: the new type is active only after a reboot (or an xorg restart).
    assert {g.graphicsType for g in gm.graphicsInfo} == {"shared"}
    assert gm.IsSharedGraphicsActive()
    with pytest.raises(vmodl.fault.InvalidArgument):
        gm.UpdateGraphicsConfig(
            vim.host.GraphicsConfig(
                hostDefaultGraphicsType="direct", sharedPassthruAssignmentPolicy="performance"
            )
        )
    host.configManager.serviceSystem.RestartService("xorg")
    assert {g.graphicsType for g in gm.graphicsInfo} == {"sharedDirect"}
    assert not gm.IsSharedGraphicsActive()


# --- maintenance mode and reboot -----------------------------------------------------------------
def test_maintenance_mode(vcsim_factory, si_of):
    si = si_of(vcsim_factory())
    host = find(si, vim.HostSystem, HOST)
    WaitForTask(host.EnterMaintenanceMode_Task(timeout=0))
    assert host.runtime.inMaintenanceMode
    WaitForTask(host.ExitMaintenanceMode_Task(timeout=0))
    assert not host.runtime.inMaintenanceMode


def test_reboot_goes_away_and_comes_back(vcsim_factory, si_of, tmp_path):
    # While the hold file exists the host stays away: what it shows then is read with no race
    # against the reboot's timer, however slow this machine is.
    hold = tmp_path / "reboot-hangs"
    hold.touch()
    lab = vcsim_lab.default_lab()
    lab["hosts"][0]["reboot_hold"] = str(hold)
    sim = vcsim_factory(lab, reboot_seconds=0.1)
    si = si_of(sim)
    host = find(si, vim.HostSystem, HOST)
    booted = host.runtime.bootTime
    fault = task_fault(host.RebootHost_Task(force=False))
    assert isinstance(fault, vim.fault.InvalidState) and "maintenance mode" in fault.msg

    host.configManager.graphicsManager.UpdateGraphicsConfig(
        vim.host.GraphicsConfig(
            hostDefaultGraphicsType="sharedDirect", sharedPassthruAssignmentPolicy="performance"
        )
    )
    WaitForTask(host.EnterMaintenanceMode_Task(timeout=0))
    WaitForTask(host.RebootHost_Task(force=False))
    assert host.runtime.connectionState == "notResponding"
    assert host.runtime.powerState == "unknown"
    fault = task_fault(host.ExitMaintenanceMode_Task(timeout=0))
    assert isinstance(fault, vmodl.fault.HostNotConnected)

    hold.unlink()
    assert wait_until(lambda: host.runtime.connectionState == "connected")
    assert host.runtime.powerState == "poweredOn"
    assert host.runtime.inMaintenanceMode  # a reboot keeps maintenance mode
    assert host.runtime.bootTime > booted
    gm = host.configManager.graphicsManager
    assert {g.graphicsType for g in gm.graphicsInfo} == {"sharedDirect"}
    WaitForTask(host.ExitMaintenanceMode_Task(timeout=0))


def test_a_rebooted_host_comes_back_once_its_standin_has_booted(vcsim_factory, si_of, tmp_path):
    """The reboot link (boot_ack_dir): vCenter shows a rebooted host connected only after the
    host has booted, so the stand-in must have taken its boot (``<name>.up``) first. Before, the
    host came back on a timer and the link sent the stand-in its boot when it saw the host away:
    on a loaded machine esxi_mig's scenario read the MIG modes before that (still pending)."""
    boots = tmp_path / "boots"
    boots.mkdir()
    lab = vcsim_lab.default_lab()
    lab["hosts"][0]["boot_ack_dir"] = str(boots)
    si = si_of(vcsim_factory(lab, reboot_seconds=0))
    host = find(si, vim.HostSystem, HOST)
    booted = host.runtime.bootTime
    WaitForTask(host.EnterMaintenanceMode_Task(timeout=0))
    for number in (1, 2):
        WaitForTask(host.RebootHost_Task(force=False))
        down = boots / f"{HOST}.down"
        assert down.read_text().strip() == str(number)
        assert host.runtime.connectionState == "notResponding"  # no timer brings it back
        (boots / f"{HOST}.up").write_text(f"{number}\n")
        assert wait_until(lambda: host.runtime.connectionState == "connected")
        assert host.runtime.bootTime > booted
        booted = host.runtime.bootTime
    WaitForTask(host.ExitMaintenanceMode_Task(timeout=0))


def test_forced_reboot_powers_off_the_vms(vcsim_factory, si_of):
    sim = vcsim_factory(reboot_seconds=0.2)
    si = si_of(sim)
    host = find(si, vim.HostSystem, HOST)
    files = vim.vm.FileInfo(vmPathName="[datastore1]")
    vm = create_vm(si, vim.vm.ConfigSpec(name="plain", files=files))
    WaitForTask(vm.PowerOnVM_Task())
    # real-lab notes V4: without DRS the task waits for its timeout and fails naming no VM
    fault = task_fault(host.EnterMaintenanceMode_Task(timeout=1, evacuatePoweredOffVms=False))
    assert isinstance(fault, vim.fault.Timedout) and "plain" not in fault.msg
    WaitForTask(host.RebootHost_Task(force=True))
    assert vm.runtime.powerState == "poweredOff"
    assert wait_until(lambda: host.runtime.connectionState == "connected")


def test_reboot_never_returns(vcsim_factory, si_of):
    lab = vcsim_lab.default_lab()
    lab["hosts"][0].update(reboot_never_returns=True, maintenance_mode=True)
    sim = vcsim_factory(lab, reboot_seconds=0.1)
    si = si_of(sim)
    host = find(si, vim.HostSystem, HOST)
    assert host.runtime.inMaintenanceMode
    WaitForTask(host.RebootHost_Task(force=False))
    # No timer to wait out: with the fault the simulator never schedules the host's return.
    assert host.runtime.connectionState == "notResponding"
    with pytest.raises(vmodl.fault.HostNotConnected):
        host.configManager.graphicsManager.RefreshGraphicsManager()
    fault = task_fault(host.RebootHost_Task(force=True))
    assert isinstance(fault, vmodl.fault.HostNotConnected)
    dc = find(si, vim.Datacenter, "dc1")
    spec = vim.vm.ConfigSpec(name="nowhere", files=vim.vm.FileInfo(vmPathName="[datastore1]"))
    fault = task_fault(
        dc.vmFolder.CreateVM_Task(config=spec, pool=host.parent.resourcePool, host=host)
    )
    assert isinstance(fault, vmodl.fault.HostNotConnected)


# --- VMs with vGPUs ------------------------------------------------------------------------------
def test_create_vm_with_efi_extraconfig_and_vgpu(vcsim_factory, si_of):
    si = si_of(vcsim_factory())
    vm = create_vm(si, vgpu_vm_spec("mlperf-s3-vm1"))
    props = retrieve(
        si,
        vm,
        "config.firmware",
        "config.extraConfig",
        "config.memoryReservationLockedToMax",
        "config.memoryAllocation",
        "config.hardware.device",
        "runtime.host",
    )
    assert props["config.firmware"] == "efi"
    extra = {o.key: o.value for o in props["config.extraConfig"]}
    assert extra["pciPassthru.use64bitMMIO"] == "TRUE"
    assert extra["pciPassthru.64bitMMIOSizeGB"] == "128"
    assert props["config.memoryReservationLockedToMax"] is True
    assert props["config.memoryAllocation"].reservation == 16384
    devices = props["config.hardware.device"]
    (dev,) = [d for d in devices if isinstance(d, vim.vm.device.VirtualPCIPassthrough)]
    assert isinstance(dev.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)
    assert dev.backing.vgpu == VGPU
    assert dev.deviceInfo.summary == f"NVIDIA GRID vGPU {VGPU}"
    assert props["runtime.host"].name == HOST

    spec = vim.vm.ConfigSpec(
        extraConfig=[vim.option.OptionValue(key="pciPassthru.64bitMMIOSizeGB", value="256")]
    )
    WaitForTask(vm.ReconfigVM_Task(spec=spec))
    extra = {o.key: o.value for o in vm.config.extraConfig}
    assert extra["pciPassthru.64bitMMIOSizeGB"] == "256"
    WaitForTask(vm.Destroy_Task())
    assert not [v for v in find(si, vim.VirtualMachine) if v.name == "mlperf-s3-vm1"]


def test_power_on_checks_vgpu_type_graphics_mode_and_reservation(vcsim_factory, si_of):
    sim = vcsim_factory(reboot_seconds=0.1)
    si = si_of(sim)
    host = find(si, vim.HostSystem, HOST)
    gm = host.configManager.graphicsManager

    vm = create_vm(si, vgpu_vm_spec("vm1"))
    fault = task_fault(vm.PowerOnVM_Task())  # the GPUs are still in "shared" mode
    # in "shared" mode the host offers no vGPU type (real-lab notes V9)
    assert isinstance(fault, vim.fault.GenericVmConfigFault) and "not offered" in fault.msg

    set_shared_direct(si, host)
    WaitForTask(vm.PowerOnVM_Task())
    assert vm.runtime.powerState == "poweredOn"
    assert [len(g.vm) for g in gm.graphicsInfo] == [1, 0, 0, 0]
    assert gm.graphicsInfo[0].vm[0] == vm

    bad = create_vm(si, vgpu_vm_spec("vm-bad-type", vgpu="grid_h200-1-18c"))
    fault = task_fault(bad.PowerOnVM_Task())
    assert isinstance(fault, vim.fault.GenericVmConfigFault) and "not offered" in fault.msg

    unreserved = create_vm(si, vgpu_vm_spec("vm-unreserved", lock=False))
    fault = task_fault(unreserved.PowerOnVM_Task())
    assert "memory reservation" in fault.msg

    fault = task_fault(
        vm.ReconfigVM_Task(
            spec=vim.vm.ConfigSpec(
                deviceChange=[
                    vim.vm.device.VirtualDeviceSpec(
                        operation="add",
                        device=vim.vm.device.VirtualPCIPassthrough(
                            backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=VGPU)
                        ),
                    )
                ]
            )
        )
    )
    assert isinstance(fault, vim.fault.InvalidPowerState)

    big = [create_vm(si, vgpu_vm_spec(f"big{i}", vgpu="grid_a100d-7-80c")) for i in range(4)]
    for v in big[:3]:
        WaitForTask(v.PowerOnVM_Task())  # performance policy: one per free GPU
    fault = task_fault(big[3].PowerOnVM_Task())
    assert isinstance(fault, vim.fault.InsufficientResourcesFault)
    WaitForTask(vm.PowerOffVM_Task())
    WaitForTask(big[3].PowerOnVM_Task())
    assert sorted(len(g.vm) for g in gm.graphicsInfo) == [1, 1, 1, 1]


def test_latency_flag_is_accepted_and_calls_still_succeed(vcsim_factory, si_of):
    """How much the latency flag slows a call is bench/bench_vsphere.py's to measure (timing
    belongs in bench/); here: a simulator started with it serves the delayed method."""
    sim = vcsim_factory(delays={"CreateVM_Task": 50})
    si = si_of(sim)
    dc = find(si, vim.Datacenter, "dc1")
    pool = find(si, vim.ClusterComputeResource, "cluster1").resourcePool
    spec = vim.vm.ConfigSpec(name="slow", files=vim.vm.FileInfo(vmPathName="[datastore1]"))
    WaitForTask(dc.vmFolder.CreateVM_Task(config=spec, pool=pool))
    assert [v.name for v in find(si, vim.VirtualMachine) if v.name == "slow"] == ["slow"]


# --- community.vmware against the simulator ------------------------------------------------------
PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/community.vmware.vmware:
      hostname: "{host}"
      port: {port}
      username: "{username}"
      password: "{password}"
      validate_certs: true
  tasks:
    - name: Host graphics to sharedDirect
      community.vmware.vmware_host_graphics:
        esxi_hostname: ["{esxi}"]
        graphic_type: sharedDirect
        assigment_policy: performance
        restart_xorg: true
    - name: A VM as miglab makes them
      community.vmware.vmware_guest:
        datacenter: dc1
        cluster: cluster1
        folder: /dc1/vm
        name: "{{{{ item }}}}"
        guest_id: ubuntu64Guest
        state: present
        hardware:
          num_cpus: 8
          memory_mb: 16384
          boot_firmware: efi
          memory_reservation_lock: true
        disk: [{{size_gb: 10, type: thin, datastore: datastore1}}]
        networks: [{{name: VM Network}}]
        advanced_settings:
          - {{key: pciPassthru.use64bitMMIO, value: "TRUE"}}
          - {{key: pciPassthru.64bitMMIOSizeGB, value: "128"}}
      loop: [ansible-vm1, ansible-vm1]
      register: created
    - name: Its vGPU
      community.vmware.vmware_guest_vgpu:
        datacenter: dc1
        name: ansible-vm1
        vgpu: {vgpu}
        state: present
    - name: Powered on
      community.vmware.vmware_guest_powerstate:
        name: ansible-vm1
        state: powered-on
    - name: Report
      ansible.builtin.debug:
        msg: "CHANGED={{{{ created.results | map(attribute='changed') | list | to_json }}}}"
"""


def test_community_vmware_vmware_guest(vcsim_factory, si_of, tmp_path):
    try:
        found = importlib.util.find_spec("ansible_collections.community.vmware") is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        pytest.skip("community.vmware is not installed (pip install ansible requests)")
    sim = vcsim_factory()
    (tmp_path / "play.yml").write_text(
        PLAYBOOK.format(
            host=sim.host,
            port=sim.port,
            username=sim.username,
            password=sim.password,
            esxi=HOST,
            vgpu=VGPU,
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        SSL_CERT_FILE=str(sim.ca_file),  # validate_certs: true, against the throwaway CA
        REQUESTS_CA_BUNDLE=str(sim.ca_file),
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_STDOUT_CALLBACK="default",
    )
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    res = subprocess.run(
        [playbook, "-i", "localhost,", "-c", "local", "play.yml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "CHANGED=[true, false]" in res.stdout  # created, then idempotent

    si = si_of(sim)
    vm = find(si, vim.VirtualMachine, "ansible-vm1")
    assert vm.config.firmware == "efi"
    assert vm.runtime.powerState == "poweredOn"
    extra = {o.key: o.value for o in vm.config.extraConfig}
    assert extra["pciPassthru.use64bitMMIO"] == "TRUE"
    vgpus = [d.backing.vgpu for d in vm.config.hardware.device if hasattr(d.backing, "vgpu")]
    assert vgpus == [VGPU]
