#!/usr/bin/python
"""Ansible module miglab.lab.mlperf_collect (an action plugin: plugins/action/mlperf_collect.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mlperf_collect
short_description: Bring one MLPerf run from a guest into the controller's results tree
description:
  - Fetches the tarball a run packed in the guest (C(python -m miglab.mlperf.run --pack)) with
    M(ansible.builtin.fetch) to O(stage) on the controller, then, on the controller, unpacks it
    into a staging folder beside O(dest) (C(run_<n>.fetch-<UTC time>)), checks it against the
    C(MANIFEST.sha256) the guest wrote (a guest whose miglab writes none gets one written) and
    swaps it in with renames; the folder it replaces is moved aside and removed only once the
    new one is in place. A collected result is never lost or half written.
  - A fetched run that does not match its manifest fails the task; O(dest) is left as it was and
    the staging folder is kept for a look (C(miglab results verify) lists it).
  - Then reads the collected LoadGen logs (RV(status)), as the filter
    C(miglab.lab.mlperf_run_status) does.
  - An action plugin; the controller needs the miglab Python package.
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
options:
  src:
    description: The run's tarball in the guest.
    type: path
    required: true
  dest:
    description: The run's folder in the controller's results tree (C(.../run_<n>)).
    type: path
    required: true
  stage:
    description: Where the fetched tarball is kept on the controller (replaced by each fetch).
    type: path
    required: true
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: none
    details: In check mode nothing is fetched and the task is skipped.
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Collect the run's logs
  miglab.lab.mlperf_collect:
    src: /var/lib/miglab-mlperf/results/.barrier/20261202T030000-s1-vm1-0/run.tar.gz
    dest: results/r750xa-a100-80gb-mig/s1/vm1/resnet50/Offline/performance/run_1
    stage: .cache/mlperf/fetched/vm1/run.tar.gz
  register: collected

- name: Report the run
  ansible.builtin.debug:
    msg: "{{ collected.status.line }}"
"""

RETURN = r"""
dest:
  description: The run's folder on the controller.
  returned: success
  type: str
wrote_manifest:
  description: Whether the controller wrote the run's C(MANIFEST.sha256) (the guest wrote none).
  returned: success
  type: bool
status:
  description: The collected run's LoadGen verdict.
  returned: success
  type: dict
  contains:
    exists:
      description: Whether the folder holds LoadGen logs.
      type: bool
    valid:
      description: Whether LoadGen said VALID (and the logs could be read).
      type: bool
    metric:
      description: The result's metric (e.g. C(result_samples_per_second)).
      type: str
    value:
      description: The result's value.
      type: float
    validity:
      description: LoadGen's C(result_validity).
      type: str
    reasons:
      description: Why the run is not valid.
      type: list
      elements: str
    line:
      description: One line for the run's report.
      type: str
"""
