"""reboot_and_wait (miglab.adapters.vsphere.hosts) on a host that is back before the first poll.

vCenter sets ``runtime.bootTime`` when a host comes up again (vSphere API: HostRuntimeInfo.
bootTime). A poll that misses the short time a host is away (the simulated lab's 2 s reboot on a
loaded controller: a molecule run of esxi_mig failed so in CI) must still see the reboot; a host
that never reboots must still not be taken for one that is back.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from miglab.adapters.vsphere import hosts
from miglab.adapters.vsphere.connection import VsphereError

BOOTED = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


class FakeHost:
    """Always "connected" when polled; a reboot moves its boot time on (``reboots``) or not."""

    name = "esxi-01"

    def __init__(self, reboots: bool, boot_time=BOOTED):
        self.reboots = reboots
        self.boot_time = boot_time
        self.asked = 0

    @property
    def runtime(self):
        self.asked += 1
        return SimpleNamespace(
            connectionState="connected", inMaintenanceMode=True, bootTime=self.boot_time
        )

    def RebootHost_Task(self, force):  # noqa: N802 (the vSphere API's name)
        if self.reboots:
            self.boot_time = (self.boot_time or BOOTED) + timedelta(minutes=5)
        return "task"


@pytest.fixture(autouse=True)
def no_task_wait(monkeypatch):
    monkeypatch.setattr(hosts, "wait", lambda task, timeout, what: None)
    monkeypatch.setattr(hosts.time, "sleep", lambda s: None)


def test_a_host_back_before_the_first_poll_is_seen_by_its_boot_time():
    host = FakeHost(reboots=True)
    assert hosts.reboot_and_wait(host, timeout_s=60) >= 0
    assert host.asked <= 3  # the maintenance check, the boot time before, one poll


def test_a_host_without_a_boot_time_before_counts_the_first_one_it_gets():
    assert hosts.reboot_and_wait(FakeHost(reboots=True, boot_time=None), timeout_s=60) >= 0


def test_a_host_that_never_reboots_is_not_taken_for_one_that_is_back():
    with pytest.raises(VsphereError, match="accepted the reboot but never went down within 0 s"):
        hosts.reboot_and_wait(FakeHost(reboots=False), timeout_s=60, down_timeout_s=0)


def test_task_faults_show_the_details_real_vcenters_put_in_fault_message():
    """Real-lab notes V14: a power-on fault's msg is often generic; the useful text is in
    faultMessage[] (and the cause chain)."""
    from pyVmomi import vim, vmodl

    from miglab.adapters.vsphere.tasks import fault_text

    cause = vim.fault.InsufficientResourcesFault(msg="No host is compatible with the vGPU")
    fault = vim.fault.GenericVmConfigFault(
        msg="Module 'DevicePowerOn' power on failed.",
        faultMessage=[
            vmodl.LocalizableMessage(
                key="msg.vgpu.noresources", message="Could not initialize plugin for vGPU."
            )
        ],
        faultCause=cause,
    )
    assert fault_text(fault) == (
        "Module 'DevicePowerOn' power on failed.; Could not initialize plugin for vGPU.; "
        "No host is compatible with the vGPU"
    )
    assert fault_text(vim.fault.InvalidState()) == "a fault without a message"


def test_graphics_changes_keep_fields_miglab_does_not_set():
    """Real-lab notes V15: vSphere 8.0 U3's HostGraphicsConfig.DeviceType.vgpuMode (sameSize /
    mixedSize) is an admin's choice; rebuilding the device types without it would reset it."""
    from types import SimpleNamespace

    from pyVmomi import vim

    from miglab.adapters.vsphere.hosts import ensure_graphics

    sent = []
    cfg = vim.host.GraphicsConfig(
        hostDefaultGraphicsType="shared",
        sharedPassthruAssignmentPolicy="performance",
        deviceType=[
            vim.host.GraphicsConfig.DeviceType(
                deviceId="0000:3b:00.0", graphicsType="shared", vgpuMode="mixedSize"
            )
        ],
    )
    manager = SimpleNamespace(graphicsConfig=cfg, UpdateGraphicsConfig=sent.append)
    host = SimpleNamespace(name="h", configManager=SimpleNamespace(graphicsManager=manager))
    out = ensure_graphics(host, "sharedDirect", "consolidation", {"0000:3b:00.0": "sharedDirect"},
                          check_mode=False)  # fmt: skip
    assert out["changed"]
    (new,) = sent
    (dev,) = new.deviceType
    assert (dev.deviceId, dev.graphicsType, dev.vgpuMode) == (
        "0000:3b:00.0",
        "sharedDirect",
        "mixedSize",
    )
    assert new.sharedPassthruAssignmentPolicy == "consolidation"
