"""playbooks/guests.yml and the guest roles' structure: argument specs match the documented
defaults, secrets are only touched by no_log tasks, the playbook parses and lists every role."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = ("guest_base", "guest_vgpu_driver", "guest_container_toolkit")
SECRETS = re.compile(
    r"guest_vgpu_driver_license_(token|token_src|server_address|backup_server_address)\b"
)
QUOTED = re.compile(r"'[^'\n]*'")  # a Jinja string literal: a name quoted in a message is no use


def ansible(*args: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    )
    return subprocess.run(
        list(args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def load(path: Path):
    return yaml.safe_load(path.read_text())


def test_playbook_syntax_and_tasks():
    r = ansible("ansible-playbook", "--syntax-check", "playbooks/guests.yml")
    assert r.returncode == 0, r.stdout + r.stderr
    r = ansible("ansible-playbook", "--list-tasks", "playbooks/guests.yml")
    assert r.returncode == 0, r.stdout + r.stderr
    for role in ROLES:
        assert f"miglab.lab.{role} : " in r.stdout, role


def test_playbook_gathers_facts_once():
    (play,) = load(ROOT / "playbooks" / "guests.yml")
    assert play["gather_facts"] is True
    assert [r["role"] for r in play["roles"]] == [f"miglab.lab.{role}" for role in ROLES]
    for role in ROLES:
        (first, *_) = load(ROOT / "roles" / role / "tasks" / "main.yml")
        assert first["ansible.builtin.setup"]["gather_subset"] == ["min"]
        assert first["when"] == "ansible_facts['distribution'] is not defined"


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_match_defaults(role):
    spec = load(ROOT / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]["main"]
    options = spec["options"]
    defaults = load(ROOT / "roles" / role / "defaults" / "main.yml")
    assert all(name.startswith(f"{role}_") for name in list(options) + list(defaults))
    required = {name for name, o in options.items() if o.get("required")}
    assert set(defaults) == set(options) - required, set(defaults) ^ (set(options) - required)
    documented = (ROOT / "roles" / role / "defaults" / "main.yml").read_text()
    for name in required:
        assert f"# {name}:" in documented, f"{name} is required; defaults/main.yml shows an example"
    for name, value in defaults.items():
        o = options[name]
        assert o.get("description"), name
        if isinstance(value, str) and "{{" in value:
            continue  # computed from facts / the distribution's vars
        if "default" in o:
            assert o["default"] == value, name
        if "choices" in o:
            assert value in o["choices"], name


@pytest.mark.parametrize("role", ROLES)
def test_meta_and_platforms(role):
    meta = load(ROOT / "roles" / role / "meta" / "main.yml")["galaxy_info"]
    assert meta["role_name"] == role and meta["namespace"] == "miglab"
    # the platforms and the distribution files: tests/unit/test_guest_support.py


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if "block" in node:
            yield from _tasks(node["block"])
            yield from _tasks(node.get("rescue", []))
        else:
            yield node


def test_secrets_only_in_no_log_tasks():
    touching = []
    for path in (ROOT / "roles").glob("guest_*/tasks/*.yml"):
        for task in _tasks(load(path)):
            text = json.dumps({k: v for k, v in task.items() if k not in ("when", "name")})
            if SECRETS.search(QUOTED.sub("''", text)):
                touching.append(task["name"])
                assert task.get("no_log") is True, f"{path.name}: {task['name']}"
            if "gridd.conf.j2" in json.dumps(task):
                touching.append(task["name"])
                assert task.get("no_log") is True and task.get("diff") is False
    assert len(touching) == 4, touching  # inputs check, token content, token file, gridd.conf
    spec = load(ROOT / "roles" / "guest_vgpu_driver" / "meta" / "argument_specs.yml")
    for name in ("license_token", "license_server_address", "license_backup_server_address"):
        assert spec["argument_specs"]["main"]["options"][f"guest_vgpu_driver_{name}"]["no_log"]
    template = (ROOT / "roles" / "guest_vgpu_driver" / "templates" / "gridd.conf.j2").read_text()
    assert "license_token" not in template  # the token goes to its own file only
