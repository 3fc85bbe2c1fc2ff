"""The simulated lab's podman images are the machine's (podman's storage), not a project's: a
second project on the machine (`miglab init` elsewhere, the e2e tests' installed project) reuses
the Debian 12 base and the ESXi stand-in while their recipe label matches, instead of building
them again and retagging them under the labs and molecule scenarios that use them. Before, each
project kept its own stamp file and a new project rebuilt both images."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from testlib import ROOT

SCRIPT = ROOT / "miglab" / "sim" / "standins" / "esxi" / "build-image.sh"
IMAGES = ("localhost/miglab-debian12:latest", "localhost/miglab-esxi-standin:latest")


def _build(project) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIGLAB_")}
    res = subprocess.run(["bash", str(SCRIPT)], cwd=project, capture_output=True, text=True,
                         env=dict(env, MIGLAB_PROJECT_DIR=str(project)), timeout=1200)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def _image(name: str, field: str) -> str:
    fmt = "{{.Id}}" if field == "id" else '{{index .Labels "miglab.recipe"}}'
    res = subprocess.run(["podman", "image", "inspect", "--format", fmt, name],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return res.stdout.strip()


def test_a_second_project_reuses_the_machines_images(tmp_path):
    if os.geteuid() != 0 or not shutil.which("podman"):
        pytest.skip("the images need root and podman")
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    _build(first)  # builds what is missing or out of date
    before = {name: (_image(name, "id"), _image(name, "recipe")) for name in IMAGES}
    assert all(recipe for _, recipe in before.values()), before
    res = _build(second)
    assert "localhost/miglab-debian12:latest is up to date" in res.stderr, res.stderr
    assert "localhost/miglab-esxi-standin:latest is up to date" in res.stderr, res.stderr
    assert {name: (_image(name, "id"), _image(name, "recipe")) for name in IMAGES} == before
    # each project still has its own caches: containers.conf and the stand-in's SSH key
    for project in (first, second):
        assert (project / ".cache" / "containers" / "containers.conf").is_file()
        assert (project / ".cache" / "esxi-standin" / "id_ed25519.pub").is_file()
