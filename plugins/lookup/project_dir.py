"""Lookup miglab.lab.project_dir: the miglab project folder on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
name: project_dir
author: miglab developers (!UNKNOWN)
version_added: "0.1.0"
short_description: The miglab project folder, where results, artifacts and caches live
description:
  - Returns the project folder of the run on the controller, the one C(miglab) uses, which is
    E(MIGLAB_PROJECT_DIR) when set (C(miglab --project-dir) and C(miglab run) set it), else the
    current directory C(ansible-playbook) was started in.
  - Never derived from where the playbook or the collection is installed, so an installed
    collection (C(ansible-playbook miglab.lab.site)) writes into the project, not into itself.
  - With terms, returns those paths inside the project folder, one per term.
options:
  _terms:
    description: Paths relative to the project folder; without terms, the folder itself.
    type: list
    elements: str
    required: false
"""

EXAMPLES = r"""
- name: The results tree of the project
  ansible.builtin.set_fact:
    miglab_results_dir: "{{ lookup('miglab.lab.project_dir', 'results') }}"
"""

RETURN = r"""
_raw:
  description: The project folder, or the given paths inside it (absolute).
  type: list
  elements: path
"""

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        try:
            from miglab.adapters.project import project_dir
        except ImportError as exc:
            raise AnsibleLookupError(
                f"the miglab Python package is required on the controller: {exc}"
            ) from exc
        root = project_dir()
        if not terms:
            return [str(root)]
        for term in terms:
            if not isinstance(term, str) or term.startswith("/"):
                raise AnsibleLookupError(f"project_dir: {term!r}: give a path inside the project")
        return [str(root / term) for term in terms]
