"""miglab installed, outside a checkout, as a new user has it: the wheel in a fresh virtualenv, the
collection tarball installed with ansible-galaxy, a project made by `miglab init` in a temporary
folder. `validate`, `plan`, `ansible-playbook miglab.lab.site --tags validate` and the guests'
wheel work there, and nothing is written into the installed package.

The installation itself: tests/e2e/conftest.py; the simulated lab run from an installed project:
test_sim_lab.py."""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest

from testlib import ROOT, run_args, stdout_if_ok

pytestmark = pytest.mark.e2e

SEED = "campaigns/r750xa-a100-80gb-mig.yml"


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def project(installed):
    package = installed.package
    before = _tree(package)
    yield installed.init("lab1")
    assert _tree(package) == before, "the installed package was written to"


def test_init_writes_the_starter_project_and_a_second_init_changes_nothing(installed, project):
    bindir, env, tmp, _ = installed
    for rel in (
        "ansible.cfg",
        "inventories/sim/hosts.yml",
        "inventories/example-r750xa/hosts.yml",
        SEED,
        "campaigns/h200-sxm-mig.yml",
    ):
        assert (project / rel).is_file(), rel
    # the starter's inventories and campaigns are the checkout's own
    for rel in ("inventories/sim/hosts.yml", SEED):
        assert (project / rel).read_bytes() == (ROOT / rel).read_bytes()
    again = stdout_if_ok(run_args([bindir / "miglab", "init", project], cwd=tmp, env=env))
    assert "0 file(s) written" in again


def test_validate_and_plan_run_in_the_project(installed, project):
    bindir, env, _, _ = installed
    out = stdout_if_ok(run_args([bindir / "miglab", "validate", SEED], cwd=project, env=env))
    assert f"fits lab {project / 'inventories' / 'sim'}" in out
    plan = json.loads(
        stdout_if_ok(run_args([bindir / "miglab", "plan", SEED, "--json"], cwd=project, env=env))
    )
    assert plan["campaign"] == "r750xa-a100-80gb-mig"
    # the same from elsewhere, with --project-dir
    out = stdout_if_ok(
        run_args(
            [bindir / "miglab", "--project-dir", project, "validate", project / SEED],
            cwd=project.parent,
            env=env,
        )
    )
    assert "8 scenarios, 19 VMs" in out


def test_the_main_job_comes_from_the_installed_collection(installed, project):
    bindir, env, tmp, _ = installed
    res = run_args(
        [bindir / "ansible-playbook", "miglab.lab.site", "--tags", "validate"], cwd=project, env=env
    )
    out = stdout_if_ok(res)
    assert "r750xa-a100-80gb-mig: 8 scenarios" in out
    listed = stdout_if_ok(
        run_args(
            [bindir / "ansible-playbook", "miglab.lab.site", "--list-tasks"], cwd=project, env=env
        )
    )
    assert str(tmp / "collections" / "ansible_collections" / "miglab" / "lab") in listed
    assert not (project / "results").exists()  # validate writes nothing


def test_the_guests_wheel_is_made_from_the_installed_files(installed, project):
    bindir, env, tmp, _ = installed
    cache = project / ".cache" / "mlperf"
    args = [bindir / "python", "-m", "miglab.adapters.guest_wheel", "--dest", cache]
    first = Path(stdout_if_ok(run_args(args, cwd=project, env=env)).strip())
    data = first.read_bytes()
    assert Path(stdout_if_ok(run_args(args, cwd=project, env=env)).strip()) == first
    assert first.read_bytes() == data  # same install, same bytes: the copy to guests is idempotent
    with zipfile.ZipFile(first) as zf:
        names = set(zf.namelist())
        record = zf.read("miglab-0.1.0.dist-info/RECORD").decode()
    assert "miglab/mlperf/guest/session.py" in names
    assert "miglab-0.1.0.dist-info/METADATA" in names
    assert not [n for n in names if n.endswith((".pyc", "direct_url.json", "INSTALLER"))]
    assert {line.split(",")[0] for line in record.splitlines()} == names
    target = tmp / "guest-site"
    stdout_if_ok(
        run_args(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-index",
                "--target",
                target,
                first,
            ],
            cwd=tmp,
            env=env,
        )
    )
    code = f"import sys; sys.path.insert(0, {str(target)!r}); import miglab.mlperf.guest.session"
    stdout_if_ok(run_args([sys.executable, "-I", "-c", code], cwd=tmp, env=env))


def test_the_simulated_lab_is_in_the_package_and_keeps_its_state_in_the_project(installed, project):
    bindir, env, _, package = installed
    for rel in (
        "sim/build-images.sh",
        "sim/vcsim/build.sh",
        "sim/vcsim/main.go",
        "sim/golden.yml",
        "sim/guest/Containerfile",
        "sim/standins/esxi/build-image.sh",
        "sim/standins/build.sh",
    ):
        assert (package / rel).is_file(), rel
    res = run_args([bindir / "miglab", "sim", "status", "--json"], cwd=project, env=env)
    assert res.returncode == 1, res.stderr  # down: nothing was started
    assert json.loads(res.stdout)["state_dir"] == str(project / ".cache" / "sim")
