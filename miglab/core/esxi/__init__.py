"""ESXi host facts and decisions for the ESXi host roles (core: no Ansible, no pyVmomi import).

One module per reason to change: :mod:`.host_facts` (what nvidia-smi on the host says),
:mod:`.driver` (NVIDIA's host driver: versions, branches, plan and verify), :mod:`.mig` (MIG mode
per GPU) and :mod:`.graphics` (the host graphics type); this package names them all.

The roles ``esxi_vgpu_driver``, ``esxi_mig`` and ``esxi_graphics`` run commands on the ESXi host
(``esxcli``, ``vmware -vl``, ``nvidia-smi``) and ask vCenter (miglab's vSphere modules); the raw
output comes here, through the controller-side filters in ``plugins/filter/esxi.py``. Everything
the roles decide is decided here:

* what the host's output says (parsed by :mod:`miglab.formats.esxcli` and
  :mod:`miglab.formats.nvsmi`), including the ``nvidia-smi`` failures that tell "no driver",
  "driver not loaded" and "reboot pending" apart;
* :func:`plan_driver` / :func:`verify_driver`: install, upgrade, downgrade, reboot or nothing, with
  every reason to refuse (bundle contents, acceptance level, ESXi release, guest driver branch)
  found before anything changes;
* :func:`mig_wanted`: which GPUs of a host need MIG mode for a campaign plan;
  :func:`plan_mig` / :func:`verify_mig`: per-GPU MIG mode changes, pending modes and how to make
  them effective (GPU reset or host reboot);
* :func:`graphics_restart_pending`: whether the configured host graphics type is in effect
  (``basic``: no host driver yet); :func:`vgpu_offer_problems`: why a host does not offer a vGPU
  type now (no driver, not Shared Direct, MIG mode);
  :func:`passthrough_problems`: GPUs left in passthrough mode, named before anything changes.

Formats and their public sources: ``tests/fixtures/esxi/README.md``.
"""

from __future__ import annotations

from miglab.core.esxi.driver import (
    VGPU_BRANCHES,
    branch_problem,
    driver_branch,
    installed_driver,
    package_version,
    plan_driver,
    verify_driver,
)
from miglab.core.esxi.graphics import (
    graphics_restart_pending,
    passthrough_problems,
    vgpu_offer_problems,
)
from miglab.core.esxi.host_facts import NVSMI_QUERY_FIELDS, nvsmi_state, pci_id
from miglab.core.esxi.mig import mig_wanted, plan_mig, verify_mig

__all__ = [
    "NVSMI_QUERY_FIELDS",
    "VGPU_BRANCHES",
    "branch_problem",
    "driver_branch",
    "graphics_restart_pending",
    "installed_driver",
    "mig_wanted",
    "nvsmi_state",
    "package_version",
    "passthrough_problems",
    "pci_id",
    "plan_driver",
    "plan_mig",
    "verify_driver",
    "verify_mig",
    "vgpu_offer_problems",
]
