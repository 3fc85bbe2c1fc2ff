"""Action miglab.lab.vgpu_license: wait until the guest's ``nvidia-smi -q`` reports every vGPU
licensed. The command runs on the guest; its output is read on the controller by miglab's one
``nvidia-smi -q`` parser (miglab.formats.nvsmi, through miglab.core.vgpu_license).
Documentation: plugins/modules/vgpu_license.py."""

from __future__ import annotations

import shlex
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

ARGS = {
    "timeout": {"type": "int", "default": 300},
    "interval": {"type": "int", "default": 5},
    "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
}
HINT = (
    "Check the client configuration token in /etc/nvidia/ClientConfigToken/ (NVIDIA License "
    "System) or ServerAddress/ServerPort in /etc/nvidia/gridd.conf (legacy license server), "
    "FeatureType, that the license server is reachable from this guest, and "
    "'journalctl -u nvidia-gridd'."
)
NOT_FOUND = 127  # the shell's status for a command it cannot find


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGS)[1]
        try:
            from miglab.core.vgpu_license import license_problem, read_license
            from miglab.errors import ValidationError
        except ImportError as exc:
            raise AnsibleActionFail(
                f"the miglab Python package is required on the controller: {exc}"
            ) from exc
        timeout = max(0, args["timeout"])
        interval = max(1, args["interval"])
        smi = shlex.quote(args["nvidia_smi"])
        # nvidia-smi runs whatever check mode says: reading the licence changes nothing
        command = f"command -v {smi} >/dev/null 2>&1 || exit {NOT_FOUND}; LC_ALL=C {smi} -q"
        result.update(changed=False, licensed=False, attempts=0, waited_s=0.0)

        def poll() -> tuple[dict | None, str | None, bool]:
            """(parsed licence, problem, nvidia-smi missing)."""
            res = self._low_level_execute_command(command, sudoable=True)
            rc, out, err = res.get("rc"), res.get("stdout", ""), res.get("stderr", "")
            if rc == NOT_FOUND:
                return None, None, True
            if rc != 0:
                detail = (err or out).strip().splitlines()
                return (
                    None,
                    f"nvidia-smi -q exited {rc}: {detail[-1] if detail else 'no output'}",
                    False,
                )
            try:
                query = read_license(out)
            except ValidationError as exc:
                return None, "; ".join(str(p) for p in exc.problems), False
            return query, license_problem(query), False

        start = time.monotonic()
        while True:
            query, problem, missing = poll()
            if missing and result["attempts"] == 0:
                if self._task.check_mode:
                    result["msg"] = "nvidia-smi is not installed (yet); nothing to check"
                    return result
                result.update(
                    failed=True,
                    msg=f"{args['nvidia_smi']} not found: is the GRID guest driver installed?",
                )
                return result
            if missing:
                problem = f"{args['nvidia_smi']} is gone"
            result["attempts"] += 1
            result["waited_s"] = round(time.monotonic() - start, 1)
            if query is not None:
                result["driver_version"] = query["driver_version"]
                result["gpus"] = query["gpus"]
            if problem is None:
                result["licensed"] = True
                return result
            if self._task.check_mode:
                result["msg"] = f"not licensed (check mode, not waiting): {problem}"
                return result
            if time.monotonic() - start + interval > timeout:
                break
            time.sleep(interval)
        result.update(
            failed=True, msg=f"vGPU licence not acquired within {timeout} s: {problem}. {HINT}"
        )
        return result
