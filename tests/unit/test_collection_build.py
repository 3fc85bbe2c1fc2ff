"""The collection tarball (`ansible-galaxy collection build`) holds the collection only: no Python
package, no project files, no tests, no links (a link into the package would dangle once
installed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from testlib import ROOT

ALLOWED_TOP = {"MANIFEST.json", "FILES.json", "README.md", "CHANGELOG.md", "meta", "plugins",
               "roles", "playbooks", "docs"}  # fmt: skip


def test_the_tarball_holds_the_collection_only(tmp_path):
    galaxy = shutil.which("ansible-galaxy") or str(Path(sys.executable).parent / "ansible-galaxy")
    res = subprocess.run(
        [galaxy, "collection", "build", "--output-path", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    (tarball,) = tmp_path.glob("miglab-lab-*.tar.gz")
    with tarfile.open(tarball) as tar:
        members = tar.getmembers()
    top = {m.name.split("/")[0] for m in members}
    assert top <= ALLOWED_TOP, sorted(top - ALLOWED_TOP)
    assert not [m.name for m in members if m.issym() or m.islnk()]
    names = {m.name for m in members}
    assert "plugins/module_utils/miglab_guest.py" in names
    assert "meta/runtime.yml" in names
    assert not [n for n in names if "__pycache__" in n or n.startswith("molecule/")]
