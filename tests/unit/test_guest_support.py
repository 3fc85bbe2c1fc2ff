"""The supported guest systems are what is tested (issue 16, G5): every guest role's meta/main.yml
lists exactly miglab.core.guest_support.SUPPORTED_GUESTS, each of them has a molecule scenario
run on an image of it, and the roles' distribution check accepts those and refuses the rest with
a message that names the supported ones."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from miglab.core.guest_support import SUPPORTED_GUESTS, oldest_guest_python, version_tuple
from testlib import ROOT, ansible_env

CHECK = "Check that the guest's distribution is supported"
# Roles with a distribution check of their own (mlperf installs into what guest_base prepared).
CHECKED_ROLES = ("guest_base", "guest_vgpu_driver", "guest_container_toolkit")


def load(path: Path):
    return yaml.safe_load(path.read_text())


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always"):
            yield from _tasks(node.get(key, []))


def _guest_roles() -> set[str]:
    """The roles the playbooks run on the guests (plays on the guests or the campaign's VMs)."""
    roles = set()
    for playbook in (ROOT / "playbooks").glob("*.yml"):
        for play in load(playbook) or []:
            if not re.search(r"\bguests\b|\bmiglab_vms\b", str(play.get("hosts", ""))):
                continue
            names = [r["role"] if isinstance(r, dict) else r for r in play.get("roles", [])]
            for task in _tasks(play.get("tasks", [])):
                for action in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
                    if action in task:
                        names.append(task[action]["name"])
            roles |= {n.removeprefix("miglab.lab.") for n in names}
    return roles


GUEST_ROLES = sorted(_guest_roles())


def _supported_platforms() -> dict[str, list[str]]:
    platforms = defaultdict(list)
    for g in SUPPORTED_GUESTS:
        platforms[g.distribution].append(g.codename)
    return dict(platforms)


def _scenario_images(role: str) -> set[str]:
    """The images (no tag; ``${VAR:-default}`` read as its default) the role's scenarios run on."""
    images = set()
    for path in (ROOT / "roles" / role / "molecule").glob("*/molecule.yml"):
        for platform in load(path)["platforms"]:
            image = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", platform["image"])
            images.add(image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image)
    return images


def test_the_guest_roles_are_found():
    assert GUEST_ROLES == ["guest_base", "guest_container_toolkit", "guest_vgpu_driver", "mlperf"]


@pytest.mark.parametrize("role", GUEST_ROLES)
def test_meta_lists_exactly_the_supported_systems(role):
    meta = load(ROOT / "roles" / role / "meta" / "main.yml")["galaxy_info"]
    platforms = {p["name"]: p["versions"] for p in meta["platforms"]}
    assert platforms == _supported_platforms()


@pytest.mark.parametrize("role", GUEST_ROLES)
def test_every_supported_system_has_a_molecule_scenario(role):
    images = _scenario_images(role)
    assert images, f"{role} has no molecule scenario"
    supported = {g.image for g in SUPPORTED_GUESTS}
    assert images <= supported, f"{role}'s scenarios run on {images - supported}, not supported"
    assert not [g.label for g in SUPPORTED_GUESTS if g.image not in images]


def test_each_image_is_built_from_its_system():
    """miglab/sim/build-images.sh debootstraps the guest image: its default name and its Debian
    suite are those of a supported system (a second system needs a builder of its own here)."""
    script = (ROOT / "miglab" / "sim" / "build-images.sh").read_text()
    image = re.search(r"^IMAGE=\$\{MIGLAB_GUEST_IMAGE:-([^}:]+):latest\}$", script, re.M)
    suite = re.search(r"^SUITE=(\w+)$", script, re.M)
    assert image and suite
    built = {(image.group(1), "Debian", suite.group(1))}
    assert {(g.image, g.distribution, g.codename) for g in SUPPORTED_GUESTS} == built


def test_the_supported_pythons_meet_the_package():
    """The mlperf role installs miglab's wheel into a venv made from the guest's python3: pip
    refuses a python3 below the package's requires-python (Ubuntu 22.04's 3.10, for one)."""
    text = (ROOT / "pyproject.toml").read_text()
    minimum = re.search(r'^requires-python = ">=([\d.]+)"$', text, re.M).group(1)
    assert version_tuple(oldest_guest_python()) >= version_tuple(minimum)


@pytest.mark.parametrize("role", CHECKED_ROLES)
def test_distribution_files_only_for_supported_systems(role):
    vars_dir = ROOT / "roles" / role / "vars"
    names = {p.stem for p in vars_dir.glob("*.yml")} - {"main"}
    assert names == {g.distribution for g in SUPPORTED_GUESTS}
    supported = load(vars_dir / "main.yml")[f"__{role}_supported_systems"]
    assert supported == [g.label for g in SUPPORTED_GUESTS]


@pytest.mark.parametrize("role", CHECKED_ROLES)
def test_the_check_comes_before_the_distribution_files(role):
    """An unsupported guest has no vars/<distribution>.yml: loading it first would fail with
    "Could not find file" instead of the check's message."""
    names = [t.get("name") for t in load(ROOT / "roles" / role / "tasks" / "main.yml")]
    assert names.index(CHECK) < names.index("Load the variables of the distribution")


CASES = [
    ("Debian", "12", "12.11", True),
    ("Debian", "13", "13.1", False),
    ("Ubuntu", "20", "20.04", False),
    ("Ubuntu", "22", "22.04", False),
    ("Ubuntu", "24", "24.04", False),
    ("Rocky", "9", "9.4", False),
]


def test_the_check_accepts_the_supported_systems_and_refuses_the_rest(tmp_path):
    """Each role's check task, run as written (with its vars/main.yml) on local hosts that report
    the facts of each system: the supported pass, the others are refused by a message naming the
    supported systems (and nothing but the check runs: no role is applied)."""
    facts = ("distribution", "distribution_major_version", "distribution_version")
    hosts, plays = {}, []
    for role in CHECKED_ROLES:
        check = next(t for t in load(ROOT / "roles" / role / "tasks" / "main.yml")
                     if t.get("name") == CHECK)  # fmt: skip
        names = []
        for i, case in enumerate(CASES):
            names.append(f"{role}-{i}")
            hosts[names[-1]] = {
                "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                "fake": dict(zip(facts, case[:3], strict=False)),
            }  # fmt: skip
        refused = {"ansible.builtin.copy": {
            "content": "{{ ansible_failed_result.msg }}", "mode": "0644",
            "dest": f"{tmp_path}/{{{{ inventory_hostname }}}}.refused",
        }}  # fmt: skip
        plays.append({
            "name": role, "hosts": ",".join(names), "gather_facts": False,
            "vars_files": [str(ROOT / "roles" / role / "vars" / "main.yml")],
            "tasks": [
                {"ansible.builtin.set_fact": {f: f"{{{{ fake.{f} }}}}" for f in facts}
                 | {"cacheable": True}},
                {"block": [check], "rescue": [refused]},
            ],
        })  # fmt: skip
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": hosts}}))
    (tmp_path / "check.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    res = subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "inventory.json"), str(tmp_path / "check.yml")],
        cwd=ROOT, env=ansible_env({"ANSIBLE_HOME": str(tmp_path / "home")}),
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    supported = ", ".join(g.label for g in SUPPORTED_GUESTS)
    for role in CHECKED_ROLES:
        for i, (dist, _, version, ok) in enumerate(CASES):
            refused = tmp_path / f"{role}-{i}.refused"
            assert refused.exists() != ok, (role, dist, version)
            if not ok:
                assert refused.read_text() == (
                    f"{role} supports only the guest systems its tests run on ({supported}), "
                    f"not {dist} {version}"
                )
