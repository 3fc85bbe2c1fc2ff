"""Action miglab.lab.campaign_plan: validate a campaign and return its plan, in the controller's
process (the lab inventory is read with ansible-core, which a module's process cannot import).
Documentation: plugins/modules/campaign_plan.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

ARGS = {
    "campaign": {"type": "path", "required": True},
    "inventory": {"type": "path", "required": True},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGS)[1]
        try:
            from miglab.adapters.inventory import load_checked
            from miglab.core.planning import plan_campaign
            from miglab.errors import ValidationError
        except ImportError as exc:
            raise AnsibleActionFail(
                "the miglab Python package is required on the controller "
                f"(pip install -e <miglab checkout>): {exc}"
            ) from exc
        try:
            campaign, lab = load_checked(args["campaign"], args["inventory"])
            plan = plan_campaign(campaign, lab).as_json()
        except ValidationError as exc:
            lines = [str(p) for p in exc.problems]
            result.update(failed=True, msg="invalid input:\n" + "\n".join(lines), problems=lines)
            return result
        for warning in campaign.warnings:
            Display().warning(warning)
        result.update(changed=False, plan=plan, validation_warnings=list(campaign.warnings))
        return result
