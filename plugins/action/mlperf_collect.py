"""Action miglab.lab.mlperf_collect: fetch a run's tarball from the guest, install it into the
controller's results tree (checked against its manifest) and read its verdict -- one task per
run and guest. Documentation: plugins/modules/mlperf_collect.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

ARGS = {
    "src": {"type": "path", "required": True},
    "dest": {"type": "path", "required": True},
    "stage": {"type": "path", "required": True},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGS)[1]
        if self._task.check_mode:
            result.update(skipped=True, msg="check mode: nothing fetched")
            return result
        try:
            from ansible_collections.miglab.lab.plugins.filter.mlperf import mlperf_run_status

            from miglab.formats.manifest import FetchRefused, install_fetched
        except ImportError as exc:
            raise AnsibleActionFail(
                f"miglab.lab.mlperf_collect needs the miglab Python package on the controller "
                f"(pip install -e <miglab checkout>): {exc}"
            ) from exc
        fetched = self._fetch(args["src"], args["stage"], task_vars)
        if fetched.get("failed"):
            return {**result, **fetched}
        try:
            installed = install_fetched(args["stage"], args["dest"])
        except FetchRefused as exc:
            raise AnsibleActionFail(str(exc)) from None
        except OSError as exc:
            raise AnsibleActionFail(
                f"cannot install the fetched run at {args['dest']}: {exc}"
            ) from None
        result.update(
            changed=True,
            dest=installed["dest"],
            wrote_manifest=installed["wrote_manifest"],
            status=mlperf_run_status(args["dest"]),
        )
        return result

    def _fetch(self, src: str, stage: str, task_vars) -> dict:
        """The tarball to ``stage`` with ansible.builtin.fetch (its checksums, become, retries)."""
        task = self._task.copy()
        task.args = {"src": src, "dest": stage, "flat": True, "fail_on_missing": True}
        fetch = self._shared_loader_obj.action_loader.get(
            "ansible.legacy.fetch",
            task=task,
            connection=self._connection,
            play_context=self._play_context,
            loader=self._loader,
            templar=self._templar,
            shared_loader_obj=self._shared_loader_obj,
        )
        return fetch.run(task_vars=task_vars)
