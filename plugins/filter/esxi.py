"""Filters miglab.lab.esxi_*: the ESXi host roles' parsing and decisions, on the controller.

Thin: each filter hands raw command output (esxcli, vmware -vl, nvidia-smi) or vSphere module
results to :mod:`miglab.formats.esxcli` (parsing) or :mod:`miglab.core.esxi` (decisions) and
returns its plain-data answer. The roles run the commands on the ESXi host; these filters run
where Jinja runs, on the controller, which has the miglab package.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.miglab.lab.plugins.plugin_utils.values import plain, require

try:
    from miglab.core import esxi
    from miglab.errors import ValidationError
    from miglab.formats import esxcli

    IMPORT_ERROR = None
except ImportError as exc:  # reported when a filter is used
    esxi = esxcli = None
    ValidationError = Exception
    IMPORT_ERROR = exc


def _lib():
    return require(esxi, "esxi", IMPORT_ERROR)


def _formats():
    return require(esxcli, "esxi", IMPORT_ERROR)


_plain = plain


def _parse(fn, text, *args):
    try:
        return fn(str(text or ""), *args)
    except ValidationError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def esxi_driver_plan(
    facts,
    version,
    guest_driver_version="",
    branch_policy="same-branch",
    allow_downgrade=False,
    name_pattern=None,
    daemon_policy="auto",
    daemon_bundle="",
):
    """Raw host facts -> the driver plan (miglab.core.esxi.plan_driver), the GPU Management
    Daemon's included (real-lab notes V8)."""
    want = {
        "version": version,
        "guest_driver_version": guest_driver_version,
        "branch_policy": branch_policy,
        "allow_downgrade": bool(allow_downgrade),
        "name_pattern": name_pattern,
        "daemon_policy": daemon_policy,
        "daemon_bundle": daemon_bundle,
    }
    return _lib().plan_driver(_plain(facts), _plain(want))


def esxi_driver_verify(
    facts, version, name_pattern=None, daemon_policy="auto", daemon_bundle="", daemon_version=None
):
    want = {
        "version": version,
        "name_pattern": name_pattern,
        "daemon_policy": daemon_policy,
        "daemon_bundle": daemon_bundle,
        "daemon_version": daemon_version,
    }
    return _lib().verify_driver(_plain(facts), _plain(want))


def esxi_nvsmi_state(result):
    """An nvidia-smi --query-gpu command result -> {state, driver_version, gpus, message}."""
    return _lib().nvsmi_state(_plain(result))


def esxi_mig_wanted(plan, host, explicit=None, disable_unused=False, gpu_count=None):
    return _lib().mig_wanted(
        _plain(plan),
        str(host),
        _plain(explicit),
        bool(disable_unused),
        None if gpu_count is None else int(gpu_count),
    )


def esxi_mig_plan(result, wanted, gpu_vms=None, allow_reset=False, allow_reboot=True):
    return _lib().plan_mig(
        _plain(result), _plain(wanted), _plain(gpu_vms), bool(allow_reset), bool(allow_reboot)
    )


def esxi_mig_verify(result, wanted):
    return _lib().verify_mig(_plain(result), _plain(wanted))


def esxi_gpu_vms(host_info):
    """miglab.lab.esxi_gpu_info's host entry -> {vSphere PCI id: [VM names]}."""
    return {
        str(g.get("pci_id", "")).lower(): list(g.get("vms") or [])
        for g in _plain(host_info or {}).get("graphics_info") or []
    }


def esxi_graphics_pending(host_info):
    return _lib().graphics_restart_pending(_plain(host_info))


def esxi_passthrough_problems(host_info):
    return _lib().passthrough_problems(_plain(host_info))


def esxi_vgpu_offer_problems(host_info, vgpus):
    """Why the host does not offer these vGPU types now (real-lab notes V9), one line each."""
    return _lib().vgpu_offer_problems(_plain(host_info), _plain(vgpus))


def esxi_install_result(text):
    return _parse(_formats().parse_install_result, text)


def esxi_esxcli_error(text):
    """esxcli's [Error] report as "Error: message", or the text itself when it is not one."""
    err = _formats().parse_esxcli_error(str(text or ""))
    return f"{err['error']}: {err['message']}" if err else str(text or "").strip()


def esxi_vib_list(text):
    return _parse(_formats().parse_vib_list, text)


def esxi_component_list(text):
    return _parse(_formats().parse_component_list, text)


def esxi_acceptance(text):
    return _parse(_formats().parse_acceptance, text)


def esxi_version(text):
    return _parse(_formats().parse_vmware_version, text)


def esxi_lifecycle_path(mode, image_managed, esxcli_override=False):
    """The driver role's install path on a host: ``{"path": "image"|"esxcli", "problem",
    "warning"}`` (miglab.core.esxi.image.lifecycle_decision)."""
    _lib()
    from miglab.core.esxi.image import lifecycle_decision

    return lifecycle_decision(str(mode), bool(image_managed), bool(esxcli_override))


class FilterModule:
    def filters(self):
        return {
            "esxi_lifecycle_path": esxi_lifecycle_path,
            "esxi_driver_plan": esxi_driver_plan,
            "esxi_driver_verify": esxi_driver_verify,
            "esxi_nvsmi_state": esxi_nvsmi_state,
            "esxi_mig_wanted": esxi_mig_wanted,
            "esxi_mig_plan": esxi_mig_plan,
            "esxi_mig_verify": esxi_mig_verify,
            "esxi_gpu_vms": esxi_gpu_vms,
            "esxi_graphics_pending": esxi_graphics_pending,
            "esxi_passthrough_problems": esxi_passthrough_problems,
            "esxi_vgpu_offer_problems": esxi_vgpu_offer_problems,
            "esxi_install_result": esxi_install_result,
            "esxi_esxcli_error": esxi_esxcli_error,
            "esxi_vib_list": esxi_vib_list,
            "esxi_component_list": esxi_component_list,
            "esxi_acceptance": esxi_acceptance,
            "esxi_version": esxi_version,
        }
