#!/usr/bin/python
"""Ansible module miglab.lab.nvidia_driver_users: stop and restart what holds the NVIDIA driver."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_users
short_description: Stop the services and containers holding the NVIDIA driver, and restart them
description:
  - NVIDIA's installer cannot replace a kernel module that is in use; it stops with C(An NVIDIA
    kernel module 'nvidia' appears to already be loaded in your kernel) (up to R535) or warns and
    aborts (from R545). The module is in use while a process holds C(/dev/nvidia*) open (the
    licensing daemon C(nvidia-gridd), the persistence daemon C(nvidia-persistenced), CUDA
    programs, containers started with the NVIDIA runtime).
  - With O(state=stopped) the module finds those processes (as C(lsof /dev/nvidia*) does), stops
    the Docker containers they run in (C(docker stop)) and the systemd services they belong to
    (C(systemctl stop)), checks that nothing holds the driver any more, and returns what it
    stopped in RV(stopped). A process that is neither in a container nor in a service (a shell,
    a program started by hand) is not killed; the module fails and names it.
  - With O(state=started) it starts again what O(users) names (services first, so the driver is
    loaded again, then containers), the RV(stopped) of the earlier call.
  - Check mode reports what would be stopped or started.
version_added: "0.1.0"
author: miglab developers (!UNKNOWN)
options:
  state:
    description: C(stopped) stops the driver's users; C(started) starts the ones in O(users).
    type: str
    choices: [stopped, started]
    default: stopped
  users:
    description: With O(state=started), the RV(stopped) value of the O(state=stopped) call.
    type: dict
    default: {}
  stop_timeout:
    description: Seconds C(docker stop) gives a container before it kills it.
    type: int
    default: 30
attributes:
  check_mode:
    description: Can run in check mode and report what would change, changing nothing.
    support: full
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Stop what holds the NVIDIA driver before an upgrade
  miglab.lab.nvidia_driver_users:
    state: stopped
  register: driver_users

- name: Start it again after the upgrade
  miglab.lab.nvidia_driver_users:
    state: started
    users: "{{ driver_users.stopped }}"
"""

RETURN = r"""
stopped:
  description: What was stopped (O(state=stopped)), to give back as O(users).
  returned: always
  type: dict
  sample: {units: [nvidia-gridd.service, nvidia-persistenced.service], containers: [3f5c...]}
started:
  description: What was started (O(state=started)).
  returned: always
  type: dict
users:
  description: The processes that held the driver before this call (pid, comm, unit, container).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.miglab.lab.plugins.module_utils.miglab_guest import (  # noqa: E402
    driver_users,
)


def describe(users: list) -> str:
    return ", ".join(f"{u['pid']} ({u['comm']})" for u in users)


class DriverUsers:
    """Stops or starts the users of the NVIDIA driver; ``ensure()`` returns the result."""

    def __init__(self, module: AnsibleModule) -> None:
        self.module = module
        self.params = module.params

    def run(self, argv: list) -> None:
        rc, out, err = self.module.run_command(argv)
        if rc != 0:
            self.module.fail_json(msg=f"{' '.join(argv)} failed (rc {rc}): {(err or out).strip()}")

    def ensure(self) -> dict:
        users = driver_users()
        if self.params["state"] == "started":
            return self.start(users)
        return self.stop(users)

    def stop(self, users: list) -> dict:
        others = [u for u in users if not u["unit"] and not u["container"]]
        if others:
            self.module.fail_json(
                msg=f"processes outside a systemd service or a Docker container hold the NVIDIA "
                f"driver: {describe(others)}; the installer cannot replace a module in use: stop "
                f"them (or reboot the guest) and run again",
                users=users,
            )
        units = sorted({u["unit"] for u in users if u["unit"]})
        containers = sorted({u["container"] for u in users if u["container"]})
        stopped = {"units": units, "containers": containers}
        result = {
            "changed": bool(units or containers),
            "stopped": stopped,
            "started": {},
            "users": users,
        }
        if self.module.check_mode or not result["changed"]:
            return result
        if containers:
            self.run(
                [self.docker(), "stop", "--time", str(self.params["stop_timeout"]), *containers]
            )
        if units:
            self.run([self.systemctl(), "stop", *units])
        left = driver_users()
        if left:
            self.module.fail_json(
                msg=f"the NVIDIA driver is still held after stopping "
                f"{', '.join(units + containers)}: {describe(left)}",
                stopped=stopped,
                users=left,
            )
        return result

    def start(self, users: list) -> dict:
        wanted = self.params["users"] or {}
        units = list(wanted.get("units") or [])
        containers = list(wanted.get("containers") or [])
        started = {"units": units, "containers": containers}
        result = {
            "changed": bool(units or containers),
            "stopped": {},
            "started": started,
            "users": users,
        }
        if self.module.check_mode or not result["changed"]:
            return result
        if units:  # first: they load the driver again, which the containers then use
            self.run([self.systemctl(), "start", *units])
        if containers:
            self.run([self.docker(), "start", *containers])
        return result

    def docker(self) -> str:
        return self.module.get_bin_path("docker", required=True)

    def systemctl(self) -> str:
        return self.module.get_bin_path("systemctl", required=True)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["stopped", "started"], "default": "stopped"},
            "users": {"type": "dict", "default": {}},
            "stop_timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    module.exit_json(**DriverUsers(module).ensure())


if __name__ == "__main__":
    main()
