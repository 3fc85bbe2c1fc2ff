#!/usr/bin/python
"""Ansible module miglab.lab.vgpu_license: wait until nvidia-smi -q reports the vGPU licensed."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vgpu_license
short_description: Wait until every vGPU of a guest reports its NVIDIA licence as acquired
description:
  - Runs C(nvidia-smi -q) on the guest every O(interval) seconds until each GPU's
    C(vGPU Software Licensed Product / License Status) reads C(Licensed), as the NVIDIA Virtual
    GPU Client Licensing User Guide documents for a licensed client, or until O(timeout)
    seconds have passed.
  - On timeout it fails with one clear message naming each GPU's last licence status and what
    to check (client configuration token, C(gridd.conf) C(ServerAddress), reachability of the
    license server, C(journalctl -u nvidia-gridd)). It never reads or returns the token or the
    licensing settings.
  - In check mode it looks once and never fails for a missing licence (the driver or the
    licensing settings may not have been applied).
  - Changes nothing.
version_added: "0.1.0"
author: miglab developers
options:
  timeout:
    description: Seconds to wait for the licence before failing.
    type: int
    default: 300
  interval:
    description: Seconds between two C(nvidia-smi -q) runs.
    type: int
    default: 5
  nvidia_smi:
    description: The C(nvidia-smi) command (name on PATH or full path).
    type: str
    default: nvidia-smi
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Wait up to 5 minutes for the vGPU licence
  miglab.lab.vgpu_license:
    timeout: 300
  register: licence

- name: Show the licence expiry
  ansible.builtin.debug:
    msg: "{{ licence.gpus | map(attribute='license_expiry') }}"
"""

RETURN = r"""
licensed:
  description: Whether every GPU reports C(Licensed).
  returned: always
  type: bool
driver_version:
  description: C(Driver Version) of the last C(nvidia-smi -q).
  returned: when nvidia-smi ran
  type: str
gpus:
  description:
    - Per GPU C(bus_id), C(product_name), C(virtualization_mode), C(licensed_product),
      C(license_status) (verbatim), C(license_state), C(license_expiry), C(licensed).
  returned: when nvidia-smi ran
  type: list
  elements: dict
attempts:
  description: How many times C(nvidia-smi -q) ran.
  returned: always
  type: int
waited_s:
  description: Seconds spent waiting.
  returned: always
  type: float
"""

import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.miglab.lab.plugins.module_utils.miglab_guest import (  # noqa: E402
    GuestError,
    license_problem,
    parse_nvidia_smi_query,
)

HINT = (
    "Check the client configuration token in /etc/nvidia/ClientConfigToken/ (NVIDIA License "
    "System) or ServerAddress/ServerPort in /etc/nvidia/gridd.conf (legacy license server), "
    "FeatureType, that the license server is reachable from this guest, and "
    "'journalctl -u nvidia-gridd'."
)


def poll(module: AnsibleModule, smi: str) -> tuple[dict | None, str | None]:
    """(parsed nvidia-smi -q, None) or (None / parsed, problem)."""
    rc, out, err = module.run_command([smi, "-q"])
    if rc != 0:
        detail = (err or out).strip().splitlines()
        return None, f"nvidia-smi -q exited {rc}: {detail[-1] if detail else 'no output'}"
    try:
        query = parse_nvidia_smi_query(out)
    except GuestError as exc:
        return None, str(exc)
    return query, license_problem(query)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "timeout": {"type": "int", "default": 300},
            "interval": {"type": "int", "default": 5},
            "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
        },
        supports_check_mode=True,
    )
    timeout = max(0, module.params["timeout"])
    interval = max(1, module.params["interval"])
    smi = module.get_bin_path(module.params["nvidia_smi"])
    result: dict = {"changed": False, "licensed": False, "attempts": 0, "waited_s": 0.0}
    if not smi:
        if module.check_mode:
            module.exit_json(msg="nvidia-smi is not installed (yet); nothing to check", **result)
        module.fail_json(
            msg=f"{module.params['nvidia_smi']} not found: is the GRID guest driver installed?",
            **result,
        )
    start = time.monotonic()
    while True:
        query, problem = poll(module, smi)
        result["attempts"] += 1
        result["waited_s"] = round(time.monotonic() - start, 1)
        if query is not None:
            result["driver_version"] = query["driver_version"]
            result["gpus"] = query["gpus"]
        if problem is None:
            result["licensed"] = True
            module.exit_json(**result)
        if module.check_mode:
            module.exit_json(msg=f"not licensed (check mode, not waiting): {problem}", **result)
        if time.monotonic() - start + interval > timeout:
            break
        time.sleep(interval)
    module.fail_json(
        msg=f"vGPU licence not acquired within {timeout} s: {problem}. {HINT}",
        **result,
    )


if __name__ == "__main__":
    main()
