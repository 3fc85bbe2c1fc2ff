"""miglab installed, outside a checkout, as a new user has it: the wheel in a fresh virtualenv, the
collection tarball installed with ansible-galaxy, a project made by `miglab init` in a temporary
folder. `validate`, `plan`, `ansible-playbook miglab.lab.site --tags validate` and the guests'
wheel work there, and nothing is written into the installed package.

The virtualenv gets miglab's wheel only; its dependencies (ansible-core, pyVmomi, ...) come from
the test's own environment through a .pth file (the same versions, without a download), and
ansible's commands are made as pip makes console scripts."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from testlib import BIN, ROOT

pytestmark = pytest.mark.e2e

SEED = "campaigns/r750xa-a100-80gb-mig.yml"
ANSIBLE_COMMANDS = {"ansible": "ansible.cli.adhoc", "ansible-playbook": "ansible.cli.playbook",
                    "ansible-galaxy": "ansible.cli.galaxy",
                    "ansible-inventory": "ansible.cli.inventory"}  # fmt: skip


def _run(args, *, cwd, env, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def _ok(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(virtualenv bin folder, environment): miglab's wheel and the collection installed."""
    tmp = tmp_path_factory.mktemp("installed")
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("ANSIBLE_", "MIGLAB_", "VIRTUAL_ENV", "PYTHON"))}  # fmt: skip
    dist = tmp / "dist"
    # the wheel is built from a copy of the tracked files: a build in the checkout would write
    # its build/ folder, which the guests' wheel (built from the checkout) uses meanwhile
    src = tmp / "src"
    tracked = _ok(_run(["git", "ls-files", "-z"], cwd=ROOT, env=clean)).split("\0")
    for rel in filter(None, tracked):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel, follow_symlinks=False)
    _ok(_run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", dist, src],
             cwd=tmp, env=clean, timeout=600))  # fmt: skip
    _ok(_run([BIN / "ansible-galaxy", "collection", "build", "--output-path", dist, ROOT],
             cwd=tmp, env=clean))  # fmt: skip
    (wheel,) = dist.glob("miglab-*.whl")
    (tarball,) = dist.glob("miglab-lab-*.tar.gz")

    venv = tmp / "venv"
    _ok(_run([sys.executable, "-m", "venv", venv], cwd=tmp, env=clean))
    py = venv / "bin" / "python"
    site = Path(_ok(_run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         cwd=tmp, env=clean)).strip())  # fmt: skip
    (site / "miglab-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _ok(_run([py, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", wheel],
             cwd=tmp, env=clean))  # fmt: skip
    for name, module in ANSIBLE_COMMANDS.items():
        script = venv / "bin" / name
        script.write_text(f"#!{py}\nimport sys\nfrom {module} import main\nsys.exit(main())\n")
        script.chmod(0o755)
    env = dict(clean, PATH=f"{venv / 'bin'}:{clean.get('PATH', '')}", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"))  # fmt: skip
    _ok(_run([venv / "bin" / "ansible-galaxy", "collection", "install", "-p",
              tmp / "collections", tarball], cwd=tmp, env=env))  # fmt: skip
    package = Path(_ok(_run([py, "-c", "import miglab; print(miglab.__file__)"], cwd=tmp,
                            env=env)).strip()).parent  # fmt: skip
    assert package.is_relative_to(site), package  # the installed copy, not the checkout
    return venv / "bin", env, tmp, package


@pytest.fixture(scope="module")
def project(installed):
    bindir, env, tmp, package = installed
    before = _tree(package)
    folder = tmp / "lab1"
    out = _ok(_run([bindir / "miglab", "init", folder], cwd=tmp, env=env))
    assert "a miglab project" in out
    yield folder
    assert _tree(package) == before, "the installed package was written to"


def test_init_writes_the_starter_project_and_a_second_init_changes_nothing(installed, project):
    bindir, env, tmp, _ = installed
    for rel in ("ansible.cfg", "inventories/sim/hosts.yml", "inventories/example-r750xa/hosts.yml",
                SEED, "campaigns/h200-sxm-mig.yml"):  # fmt: skip
        assert (project / rel).is_file(), rel
    # the starter's inventories and campaigns are the checkout's own
    for rel in ("inventories/sim/hosts.yml", SEED):
        assert (project / rel).read_bytes() == (ROOT / rel).read_bytes()
    again = _ok(_run([bindir / "miglab", "init", project], cwd=tmp, env=env))
    assert "0 file(s) written" in again


def test_validate_and_plan_run_in_the_project(installed, project):
    bindir, env, _, _ = installed
    out = _ok(_run([bindir / "miglab", "validate", SEED], cwd=project, env=env))
    assert f"fits lab {project / 'inventories' / 'sim'}" in out
    plan = json.loads(_ok(_run([bindir / "miglab", "plan", SEED, "--json"], cwd=project, env=env)))
    assert plan["campaign"] == "r750xa-a100-80gb-mig"
    # the same from elsewhere, with --project-dir
    out = _ok(_run([bindir / "miglab", "--project-dir", project, "validate", project / SEED],
                   cwd=project.parent, env=env))  # fmt: skip
    assert "8 scenarios, 19 VMs" in out


def test_the_main_job_comes_from_the_installed_collection(installed, project):
    bindir, env, tmp, _ = installed
    res = _run([bindir / "ansible-playbook", "miglab.lab.site", "--tags", "validate"],
               cwd=project, env=env)  # fmt: skip
    out = _ok(res)
    assert "r750xa-a100-80gb-mig: 8 scenarios" in out
    listed = _ok(_run([bindir / "ansible-playbook", "miglab.lab.site", "--list-tasks"],
                      cwd=project, env=env))  # fmt: skip
    assert str(tmp / "collections" / "ansible_collections" / "miglab" / "lab") in listed
    assert not (project / "results").exists()  # validate writes nothing


def test_the_guests_wheel_is_made_from_the_installed_files(installed, project):
    bindir, env, tmp, _ = installed
    cache = project / ".cache" / "mlperf"
    args = [bindir / "python", "-m", "miglab.adapters.guest_wheel", "--dest", cache]
    first = Path(_ok(_run(args, cwd=project, env=env)).strip())
    data = first.read_bytes()
    assert Path(_ok(_run(args, cwd=project, env=env)).strip()) == first
    assert first.read_bytes() == data  # same install, same bytes: the copy to guests is idempotent
    with zipfile.ZipFile(first) as zf:
        names = set(zf.namelist())
        record = zf.read("miglab-0.1.0.dist-info/RECORD").decode()
    assert "miglab/mlperf/guest/session.py" in names
    assert "miglab-0.1.0.dist-info/METADATA" in names
    assert not [n for n in names if n.endswith((".pyc", "direct_url.json", "INSTALLER"))]
    assert {line.split(",")[0] for line in record.splitlines()} == names
    target = tmp / "guest-site"
    _ok(_run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
              "--target", target, first], cwd=tmp, env=env))  # fmt: skip
    code = f"import sys; sys.path.insert(0, {str(target)!r}); import miglab.mlperf.guest.session"
    _ok(_run([sys.executable, "-I", "-c", code], cwd=tmp, env=env))


def test_the_simulated_lab_is_in_the_package_and_keeps_its_state_in_the_project(installed, project):
    bindir, env, _, package = installed
    for rel in ("sim/build-images.sh", "sim/vcsim/build.sh", "sim/vcsim/main.go", "sim/golden.yml",
                "sim/guest/Containerfile", "sim/standins/esxi/build-image.sh",
                "sim/standins/build.sh"):  # fmt: skip
        assert (package / rel).is_file(), rel
    res = _run([bindir / "miglab", "sim", "status", "--json"], cwd=project, env=env)
    assert res.returncode == 1, res.stderr  # down: nothing was started
    assert json.loads(res.stdout)["state_dir"] == str(project / ".cache" / "sim")
