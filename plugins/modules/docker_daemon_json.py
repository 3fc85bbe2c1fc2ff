#!/usr/bin/python
"""Ansible module miglab.lab.docker_daemon_json: merge keys into Docker's daemon.json."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: docker_daemon_json
short_description: Merge settings into Docker's daemon.json without dropping other keys
description:
  - Reads Docker's C(daemon.json), merges O(settings) into it (recursively for JSON objects;
    lists and scalars replace the current value) and writes it back only when the merged
    configuration differs from the current one. Keys the settings do not name are kept, so
    for example the C(nvidia) runtime added by the NVIDIA container toolkit survives a later
    Docker role run.
  - Compares parsed JSON, not text, so a file written by another tool (C(nvidia-ctk) indents
    and orders keys its own way) is not rewritten just to reformat it.
  - A missing or empty file counts as C({}). A file that is not a JSON object is never
    overwritten; the module fails and says why.
  - Does not restart Docker; notify a handler when RV(ignore:changed) is true.
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
options:
  path:
    description: Path of daemon.json.
    type: path
    default: /etc/docker/daemon.json
  settings:
    description: Keys to merge in.
    type: dict
    default: {}
  nvidia_runtime:
    description:
      - >-
        Add the NVIDIA container runtime the way C(nvidia-ctk runtime configure --runtime=docker)
        does (C(runtimes.<name> = {"args": [], "path": <path>}), plus C(default-runtime) and
        C(features.cdi) when asked), merged after O(settings).
    type: dict
    suboptions:
      name:
        description: Runtime name.
        type: str
        default: nvidia
      path:
        description: Runtime executable (name on Docker's PATH or absolute path).
        type: str
        default: nvidia-container-runtime
      set_as_default:
        description: Make it Docker's default runtime.
        type: bool
        default: false
      cdi:
        description: Enable CDI devices in Docker (C(features.cdi)).
        type: bool
        default: false
  remove:
    description:
      - Keys to delete after merging; a dotted path (C(runtimes.nvidia)) deletes a nested key.
    type: list
    elements: str
    default: []
  mode:
    description: Permissions of the file when it is written.
    type: raw
    default: "0644"
  backup:
    description: Keep a timestamped copy of the previous file when it changes.
    type: bool
    default: false
notes:
  - The parent folder is created (mode 0755) when missing.
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: full
"""

EXAMPLES = r"""
- name: Docker logs rotate; other daemon.json keys are kept
  miglab.lab.docker_daemon_json:
    settings:
      log-driver: json-file
      log-opts: {max-size: 50m, max-file: "3"}
  notify: Restart docker

- name: Add the NVIDIA runtime like nvidia-ctk runtime configure --runtime=docker
  miglab.lab.docker_daemon_json:
    nvidia_runtime:
      name: nvidia
      set_as_default: false
"""

RETURN = r"""
config:
  description: The configuration after the merge (what the file holds, or would hold in check mode).
  returned: success
  type: dict
previous:
  description: The configuration before the merge (C({}) when the file was missing or empty).
  returned: success
  type: dict
backup_file:
  description: Path of the backup, when O(backup) made one.
  returned: changed and backup
  type: str
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.miglab.lab.plugins.module_utils.miglab_guest import (  # noqa: E402
    GuestError,
    daemon_json_diff,
    dump_daemon_json,
    load_daemon_json,
    merge_daemon_json,
    nvidia_runtime_settings,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "default": "/etc/docker/daemon.json"},
            "settings": {"type": "dict", "default": {}},
            "nvidia_runtime": {
                "type": "dict",
                "options": {
                    "name": {"type": "str", "default": "nvidia"},
                    "path": {"type": "str", "default": "nvidia-container-runtime"},
                    "set_as_default": {"type": "bool", "default": False},
                    "cdi": {"type": "bool", "default": False},
                },
            },
            "remove": {"type": "list", "elements": "str", "default": []},
            "mode": {"type": "raw", "default": "0644"},
            "backup": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    path = module.params["path"]
    exists = os.path.exists(path)
    if exists and not os.path.isfile(path):
        module.fail_json(msg=f"{path} exists and is not a regular file")
    text = None
    if exists:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    try:
        current = load_daemon_json(text, path)
    except GuestError as exc:
        module.fail_json(msg=str(exc))
    settings = dict(module.params["settings"])
    nvidia = module.params["nvidia_runtime"]
    if nvidia:
        settings = merge_daemon_json(settings, nvidia_runtime_settings(**nvidia))
    merged = merge_daemon_json(current, settings, module.params["remove"])
    changed = merged != current
    result = {"changed": changed, "config": merged, "previous": current}
    if changed and module._diff:
        result["diff"] = daemon_json_diff(current if exists else None, merged)
    if changed and not module.check_mode:
        folder = os.path.dirname(path) or "."
        if not os.path.isdir(folder):
            os.makedirs(folder, mode=0o755)
        if exists and module.params["backup"]:
            result["backup_file"] = module.backup_local(path)
        tmp = os.path.join(folder, f".{os.path.basename(path)}.miglab-{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(dump_daemon_json(merged))
        module.atomic_move(tmp, path)
    if not module.check_mode and os.path.exists(path):
        file_args = module.load_file_common_arguments({"path": path, "mode": module.params["mode"]})
        result["changed"] = module.set_fs_attributes_if_different(file_args, result["changed"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
