#!/usr/bin/python
"""Documentation of miglab.lab.vgpu_license, an action plugin (plugins/action/vgpu_license.py): it
runs nvidia-smi -q on the guest and reads it on the controller with miglab's one parser."""

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
author: miglab developers (!UNKNOWN)
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
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
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
