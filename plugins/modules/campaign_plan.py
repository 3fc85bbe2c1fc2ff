#!/usr/bin/python
"""Ansible module miglab.lab.campaign_plan: validate a campaign and return its plan (an action
plugin, plugins/action/campaign_plan.py: it reads the lab inventory with ansible-core itself, which
runs only in the controller's process)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: campaign_plan
short_description: Validate a miglab campaign and plan where every VM and vGPU lands
description:
  - Reads a miglab campaign file and the lab's Ansible YAML inventory, validates both strictly
    (the same checks as C(miglab validate)) and returns the plan of C(miglab plan --json)
    (VM placements per scenario with host, GPU, MIG profile, vGPU type and start slice,
    capacity left, and the campaign schedule).
  - Never changes anything; runs the same in check mode.
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
options:
  campaign:
    description: Path of the campaign YAML file.
    type: path
    required: true
  inventory:
    description:
      - Path of the lab's Ansible YAML inventory file or folder (group C(esxi_hosts) with
        C(miglab_host_*) variables).
    type: path
    required: true
notes:
  - Requires the C(miglab) Python package on the controller.
  - An action plugin, run in the controller's own process; the lab inventory is read with
    ansible-core's inventory and variable managers, as C(ansible-playbook) reads it.
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Validate and plan the seed campaign on the simulated lab
  miglab.lab.campaign_plan:
    campaign: campaigns/r750xa-a100-80gb-mig.yml
    inventory: inventories/sim
  register: miglab_plan

- name: Show where the VMs of scenario s6 land
  ansible.builtin.debug:
    msg: "{{ miglab_plan.plan.scenarios | selectattr('id', 'equalto', 's6') | first }}"
"""

RETURN = r"""
plan:
  description: The campaign plan, as printed by C(miglab plan --json).
  returned: success
  type: dict
  contains:
    campaign:
      description: Campaign name.
      type: str
    gpu:
      description: Catalog name of the campaign's GPU model.
      type: str
    scenarios:
      description: One entry per campaign scenario, with C(vms), C(gpus), C(hosts) and schedule.
      type: list
      elements: dict
    schedule:
      description: Serial and planned makespan and lower bound, in seconds.
      type: dict
validation_warnings:
  description: Validation warnings (for example an MMIO size below NVIDIA's documented value).
  returned: always
  type: list
  elements: str
problems:
  description: One C(FILE FIELD reason) line per problem when validation failed.
  returned: failure
  type: list
  elements: str
"""
