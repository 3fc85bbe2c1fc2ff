"""Where a miglab project lives: the current directory, or ``--project-dir`` /
``MIGLAB_PROJECT_DIR``. A project holds what a run reads and writes -- ``ansible.cfg``,
``inventories/``, ``campaigns/``, ``results/``, ``artifacts/``, ``.cache/`` (locks, the simulated
lab) -- and nothing is found from the package's own location, so an installed miglab works in
any folder (a checkout is a project too: run miglab from its root).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "MIGLAB_PROJECT_DIR"


def project_dir() -> Path:
    """The project folder: ``MIGLAB_PROJECT_DIR`` if set, else the current directory."""
    return Path(os.environ.get(ENV) or os.getcwd()).resolve()


def cache_dir() -> Path:
    """The project's caches (the simulator, images' stamps, wheels, locks): ``<project>/.cache``,
    as the simulated lab's build scripts have it too."""
    return project_dir() / ".cache"


def default_inventory() -> Path:
    """The inventory a command uses without ``-i``: the project's simulated lab."""
    return project_dir() / "inventories" / "sim"


def main_playbook(root: Path | None = None) -> str:
    """The main job as ansible-playbook takes it: the project's own ``site.yml`` (a checkout),
    else the installed collection's playbook ``miglab.lab.site``."""
    root = root or project_dir()
    return "site.yml" if (root / "site.yml").is_file() else "miglab.lab.site"


def ansible_env(root: Path | None = None) -> dict[str, str]:
    """The project's Ansible settings for a child process: its ansible.cfg, and the collections
    and roles folders it has (a checkout's ``collections/`` links the checkout as miglab.lab);
    without them Ansible's own defaults apply (an installed collection)."""
    root = root or project_dir()
    # the playbooks' lookup miglab.lab.project_dir reads it: results and caches go to the project
    env = {ENV: str(root)}
    if (root / "ansible.cfg").is_file():
        env["ANSIBLE_CONFIG"] = str(root / "ansible.cfg")
    if (root / "collections").is_dir():
        env["ANSIBLE_COLLECTIONS_PATH"] = str(root / "collections")
    if (root / "roles").is_dir():
        env["ANSIBLE_ROLES_PATH"] = str(root / "roles")
    return env
