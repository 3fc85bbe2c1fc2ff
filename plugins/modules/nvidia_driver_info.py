#!/usr/bin/python
"""Ansible module miglab.lab.nvidia_driver_info: installed / loaded NVIDIA driver of a guest."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_info
short_description: The NVIDIA (GRID) driver a guest has installed and loaded; reboot needed?
description:
  - Reads the installed driver version from C(nvidia-installer --version) (what the C(.run)
    installer put on the system; falls back to C(nvidia-smi --version)), the loaded kernel
    module's version from C(/sys/module/nvidia/version) or C(/proc/driver/nvidia/version), and
    whether C(nouveau) is loaded (C(/sys/module/nouveau), a PCI device bound to C(nouveau) --
    the test C(nvidia-installer) makes -- or C(lsmod)).
  - RV(users) lists the processes that hold an NVIDIA device file open (what C(lsof /dev/nvidia*)
    shows) with the systemd unit or Docker container each belongs to; while any runs, the
    C(nvidia) module is in use and the driver's installer refuses to replace it.
  - RV(reboot_required) is true when C(nouveau) is loaded while an NVIDIA driver is installed,
    or when the loaded NVIDIA module's version differs from the installed driver (or
    C(nvidia-smi) says C(Driver/library version mismatch)).
  - With O(installer), also reads the version a driver C(.run) file would install
    (C(sh FILE --version)), to check an artifact before installing it.
  - Changes nothing.
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
options:
  installer:
    description: Path (on the guest) of an C(NVIDIA-Linux-*.run) file whose version to read.
    type: path
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Read the installed GRID driver
  miglab.lab.nvidia_driver_info:
  register: driver

- name: Install only when the version differs
  ansible.builtin.command: sh /var/tmp/NVIDIA-Linux-x86_64-535.216.01-grid.run --silent --dkms
  when: driver.installed_version != '535.216.01'
  changed_when: true
"""

RETURN = r"""
installed_version:
  description: Installed driver version, or null when no NVIDIA driver is installed.
  returned: always
  type: str
  sample: 535.216.01
loaded_version:
  description: Version of the loaded C(nvidia) kernel module, or null when none is loaded.
  returned: always
  type: str
nouveau_loaded:
  description: Whether the C(nouveau) kernel module is loaded.
  returned: always
  type: bool
reboot_required:
  description: Whether a reboot is needed before the installed driver can run.
  returned: always
  type: bool
reboot_reason:
  description: Why a reboot is needed (empty when it is not).
  returned: always
  type: str
installer_version:
  description: Version the O(installer) file installs.
  returned: when O(installer) is set
  type: str
library_mismatch:
  description: Whether C(nvidia-smi) failed with C(Driver/library version mismatch) (a loaded
    kernel module older or newer than the installed driver's libraries).
  returned: always
  type: bool
users:
  description: Processes holding C(/dev/nvidia*) open, by pid; C(unit) is the systemd service and
    C(container) the Docker container id they run in, when they do.
  returned: always
  type: list
  elements: dict
  sample: [{pid: 812, comm: nvidia-gridd, unit: nvidia-gridd.service, container: null}]
gridd_installed:
  description: Whether C(nvidia-gridd) (the licensing daemon of the GRID guest driver) is installed.
  returned: always
  type: bool
"""

import glob  # noqa: E402
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.miglab.lab.plugins.module_utils.miglab_guest import (  # noqa: E402
    driver_users,
    needs_reboot,
    parse_installer_version,
    parse_kernel_module_version,
    parse_lsmod,
    parse_nvidia_smi_version,
)

MODULE_FILES = ("/sys/module/nvidia/version", "/proc/driver/nvidia/version")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def installed_version(module: AnsibleModule) -> str | None:
    installer = module.get_bin_path("nvidia-installer")
    if installer:
        rc, out, err = module.run_command([installer, "--version"])
        version = parse_installer_version(out + err) if rc == 0 else None
        if version:
            return version
    smi = module.get_bin_path("nvidia-smi")
    if smi:
        rc, out, err = module.run_command([smi, "--version"])
        if rc == 0:
            return parse_nvidia_smi_version(out)
    return None


def nouveau_loaded(module: AnsibleModule) -> bool:
    if os.path.isdir("/sys/module/nouveau"):
        return True
    for link in glob.glob("/sys/bus/pci/devices/*/driver"):
        try:
            if os.path.basename(os.readlink(link)) == "nouveau":
                return True
        except OSError:
            continue
    lsmod = module.get_bin_path("lsmod")
    if lsmod:
        rc, out, _err = module.run_command([lsmod])
        return rc == 0 and "nouveau" in parse_lsmod(out)
    return False


def library_mismatch(module: AnsibleModule) -> bool:
    smi = module.get_bin_path("nvidia-smi")
    if not smi:
        return False
    rc, out, err = module.run_command([smi, "-L"])
    return rc != 0 and "Driver/library version mismatch" in out + err


def main() -> None:
    module = AnsibleModule(
        argument_spec={"installer": {"type": "path"}},
        supports_check_mode=True,
    )
    result: dict = {"changed": False}
    result["installed_version"] = installed_version(module)
    loaded = None
    for path in MODULE_FILES:
        text = _read(path)
        if text:
            loaded = parse_kernel_module_version(text)
            if loaded:
                break
    result["loaded_version"] = loaded
    result["nouveau_loaded"] = nouveau_loaded(module)
    result["library_mismatch"] = bool(result["installed_version"]) and library_mismatch(module)
    result["users"] = driver_users()
    reboot, reason = needs_reboot(
        installed=result["installed_version"],
        loaded=loaded,
        nouveau_loaded=result["nouveau_loaded"],
        library_mismatch=result["library_mismatch"],
    )
    result["reboot_required"] = reboot
    result["reboot_reason"] = reason
    result["gridd_installed"] = bool(module.get_bin_path("nvidia-gridd"))
    installer = module.params["installer"]
    if installer:
        if not os.path.isfile(installer):
            module.fail_json(msg=f"driver installer {installer} does not exist", **result)
        rc, out, err = module.run_command(["sh", installer, "--version"])
        version = parse_installer_version(out + err)
        if rc != 0 or not version:
            module.fail_json(
                msg=f"{installer} --version did not print 'nvidia-installer:  version X' "
                f"(rc {rc}); is it an NVIDIA driver .run file?",
                stdout=out[-2000:],
                stderr=err[-2000:],
                **result,
            )
        result["installer_version"] = version
    module.exit_json(**result)


if __name__ == "__main__":
    main()
