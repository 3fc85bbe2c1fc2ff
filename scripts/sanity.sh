#!/usr/bin/env bash
# `ansible-test sanity` on the collection miglab.lab, the check Ansible's own tooling runs on a
# collection (validate-modules, pylint, import, compile, pep8, yamllint, ansible-doc, ...). It
# runs in the suite's lint part beside the home-grown tests/unit/test_module_docs.py.
#   bash scripts/sanity.sh          every sanity test that has targets here
#   bash scripts/sanity.sh ARGS     ARGS go to ansible-test sanity (--test validate-modules, -v)
# What it does:
# 1. Copies the collection's files (what galaxy.yml's build_ignore keeps, plus tests/sanity/) into
#    .cache/sanity/ansible_collections/miglab/lab: ansible-test only runs in such a path.
# 2. Seeds ansible-test's pip bootstrap. ansible-test installs its pinned tools (pylint,
#    yamllint, voluptuous, ...: ansible_test/_data/requirements/sanity.*.txt) from PyPI into
#    its own virtualenvs (~/.ansible/test/venv, reused while the pins stay the same), whatever
#    --local/--venv says, and starts each with a get-pip script it downloads from
#    ci-files.testing.ansible.com, which is not reachable here. The stand-in it finds in its
#    cache (~/.ansible/test/cache/get_pip_<version>.py) does what get-pip does: it installs the
#    pinned pip with pip's own wheel, fetched from PyPI.
# 3. Runs ansible-test sanity --local with the virtualenv's Python (3.11; only that version
#    exists here, so the import and compile tests cover 3.11 only).
# Accepted findings: tests/sanity/ignore-<ansible-core major.minor>.txt (tests/sanity/README.md).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${MIGLAB_VENV:-$ROOT/.venv}
PY=$VENV/bin/python
export PATH=$VENV/bin:$PATH
log() { printf '[sanity] %s\n' "$*"; }

[ -x "$VENV/bin/ansible-test" ] || {
  log "no ansible-test in $VENV: run scripts/setup.sh first"
  exit 2
}
core=$("$PY" -c 'from ansible.release import __version__ as v; print(".".join(v.split(".")[:2]))')
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ -f "$ROOT/tests/sanity/ignore-$core.txt" ] || {
  log "no tests/sanity/ignore-$core.txt for ansible-core $core: review the findings and add one"
  exit 2
}

# 1. The collection tree.
TREE=$ROOT/.cache/sanity/ansible_collections/miglab/lab
rm -rf "$TREE"
mkdir -p "$TREE"
# A repository of its own: in the checkout's (where .cache is ignored) ansible-test finds no files.
git init -q "$TREE"
"$PY" - "$ROOT" "$TREE" <<'EOF'
import fnmatch, os, shutil, subprocess, sys
import yaml
root, dest = sys.argv[1:3]
with open(os.path.join(root, "galaxy.yml")) as f:
    ignore = yaml.safe_load(f)["build_ignore"] + ["__pycache__", "*.pyc", "*.retry"]
files = subprocess.run(
    ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    check=True, capture_output=True, text=True,
).stdout.split("\0")


def kept(rel):
    if rel.startswith("tests/sanity/"):
        return True
    parts = rel.split("/")
    return not any(
        fnmatch.fnmatch("/".join(parts[:i]), pat) or fnmatch.fnmatch(parts[i - 1], pat)
        for i in range(1, len(parts) + 1)
        for pat in ignore
    )


for rel in files:
    src = os.path.join(root, rel)
    if rel and os.path.isfile(src) and kept(rel):
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, rel))
EOF
# 2. ansible-test's pip bootstrap, seeded in its cache.
pip_version=$("$PY" -c '
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="'"$pyver"'"))["pip"])')
CACHE=$HOME/.ansible/test/cache
GET_PIP=$CACHE/get_pip_${pip_version//./_}.py
WHEEL=$CACHE/pip-$pip_version-py3-none-any.whl
if [ ! -f "$WHEEL" ]; then
  log "pip $pip_version's wheel from PyPI into $CACHE (ansible-test's virtualenvs start with it)"
  mkdir -p "$CACHE"
  "$PY" -m pip download -q --no-deps --only-binary :all: -d "$CACHE" "pip==$pip_version"
fi
if [ ! -f "$GET_PIP" ] || grep -q 'miglab stand-in' "$GET_PIP"; then
  cat >"$GET_PIP.tmp" <<EOF
# miglab stand-in for ansible-test's get-pip-$pip_version.py (scripts/sanity.sh): like get-pip.py,
# runs pip from a bundled copy (the wheel beside this file) to install pip into a new virtualenv.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "${WHEEL##*/}"))
from pip._internal.cli.main import main  # noqa: E402

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--upgrade", "--force-reinstall", "--find-links", os.path.dirname(
    os.path.abspath(__file__)), *args]))
EOF
  mv "$GET_PIP.tmp" "$GET_PIP"
fi

# 3. The tests.
cd "$TREE"
log "ansible-test sanity --local --python $pyver (ansible-core $core) in $TREE"
exec ansible-test sanity --local --python "$pyver" --color no "$@"
