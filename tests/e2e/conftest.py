"""The e2e tests' installed miglab: its wheel in a fresh virtualenv and its collection tarball
installed with ansible-galaxy, in a temporary folder outside the checkout, as a new user has it.

The virtualenv gets miglab's wheel only; its dependencies (ansible-core, pyVmomi, ...) come from
the test's own environment through a .pth file (the same versions, without a download), and
ansible's commands are made as pip makes console scripts."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import NamedTuple

import pytest

from testlib import BIN, ROOT, run_args, stdout_if_ok

ANSIBLE_COMMANDS = {
    "ansible": "ansible.cli.adhoc",
    "ansible-playbook": "ansible.cli.playbook",
    "ansible-galaxy": "ansible.cli.galaxy",
    "ansible-inventory": "ansible.cli.inventory",
}


class Installed(NamedTuple):
    bindir: Path  # the virtualenv's bin: miglab, python, ansible-playbook, ...
    env: dict  # an environment without the checkout's ANSIBLE_/MIGLAB_/PYTHON settings
    tmp: Path  # the folder everything lives in
    package: Path  # the installed miglab package (site-packages/miglab)

    def init(self, name: str) -> Path:
        """A project made by `miglab init` in the temporary folder."""
        folder = self.tmp / name
        out = stdout_if_ok(
            run_args([self.bindir / "miglab", "init", folder], cwd=self.tmp, env=self.env)
        )
        assert "a miglab project" in out
        return folder


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """miglab's wheel and the collection, installed outside the checkout (once a session)."""
    tmp = tmp_path_factory.mktemp("installed")
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANSIBLE_", "MIGLAB_", "VIRTUAL_ENV", "PYTHON"))
    }
    dist = tmp / "dist"
    # the wheel is built from a copy of the tracked files: a build in the checkout would write
    # its build/ folder, which the guests' wheel (built from the checkout) uses meanwhile
    src = tmp / "src"
    tracked = stdout_if_ok(run_args(["git", "ls-files", "-z"], cwd=ROOT, env=clean)).split("\0")
    for rel in filter(None, tracked):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel, follow_symlinks=False)
    stdout_if_ok(
        run_args(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", dist, src],
            cwd=tmp,
            env=clean,
            timeout=600,
        )
    )
    stdout_if_ok(
        run_args(
            [BIN / "ansible-galaxy", "collection", "build", "--output-path", dist, ROOT],
            cwd=tmp,
            env=clean,
        )
    )
    (wheel,) = dist.glob("miglab-*.whl")
    (tarball,) = dist.glob("miglab-lab-*.tar.gz")

    venv = tmp / "venv"
    stdout_if_ok(run_args([sys.executable, "-m", "venv", venv], cwd=tmp, env=clean))
    py = venv / "bin" / "python"
    site = Path(
        stdout_if_ok(
            run_args(
                [py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                cwd=tmp,
                env=clean,
            )
        ).strip()
    )
    (site / "miglab-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    stdout_if_ok(
        run_args(
            [py, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", wheel],
            cwd=tmp,
            env=clean,
        )
    )
    for name, module in ANSIBLE_COMMANDS.items():
        script = venv / "bin" / name
        script.write_text(f"#!{py}\nimport sys\nfrom {module} import main\nsys.exit(main())\n")
        script.chmod(0o755)
    env = dict(
        clean,
        PATH=f"{venv / 'bin'}:{clean.get('PATH', '')}",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"),
    )
    stdout_if_ok(
        run_args(
            [
                venv / "bin" / "ansible-galaxy",
                "collection",
                "install",
                "-p",
                tmp / "collections",
                tarball,
            ],
            cwd=tmp,
            env=env,
        )
    )
    package = Path(
        stdout_if_ok(
            run_args([py, "-c", "import miglab; print(miglab.__file__)"], cwd=tmp, env=env)
        ).strip()
    ).parent
    assert package.is_relative_to(site), package  # the installed copy, not the checkout
    return Installed(venv / "bin", env, tmp, package)
