#!/usr/bin/env bash
# Installs everything miglab needs on a fresh Debian 12 machine, as root; safe to re-run.
#   scripts/setup.sh          the controller: Debian packages, virtualenv, miglab + Ansible
#   scripts/setup.sh test     the same plus the test tools (pytest, molecule, ansible-lint, ruff)
#                             the vSphere simulator (miglab/sim/vcsim, built with Debian's Go)
#                             and the podman images of the role tests (miglab/sim/build-images.sh)
# Each step is skipped when its result is already there (stamp files under .cache/setup/).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${MIGLAB_VENV:-$ROOT/.venv}
STAMPS=$ROOT/.cache/setup
PROFILE=${1:-run}
mkdir -p "$STAMPS"

log() { printf '[setup] %s\n' "$*"; }

apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# 1. Debian packages the controller needs.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt_install git ca-certificates openssh-client rsync
  python3 -m venv --help >/dev/null 2>&1 || apt_install python3-venv
fi

# 2. The virtualenv with miglab (editable) and its dependencies.
[ -x "$VENV/bin/python" ] || { log "creating $VENV"; python3 -m venv "$VENV"; }
extras=""
[ "$PROFILE" = test ] && extras="[test]"
want=$(cat "$ROOT/pyproject.toml" <(echo "$extras") | sha256sum | cut -c1-16)
if [ "$(cat "$STAMPS/pip-$PROFILE" 2>/dev/null)" != "$want" ]; then
  log "pip install -e .$extras"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -e "$ROOT$extras"
  echo "$want" >"$STAMPS/pip-$PROFILE"
else
  log "virtualenv up to date ($VENV)"
fi
# 3. Test infrastructure (cached; seconds when up to date): the project's vSphere simulator,
#    and the Debian 12 systemd image (podman) that molecule scenarios and simulated guests use.
if [ "$PROFILE" = test ]; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt_install faketime  # test_clock_skew.py
  export MIGLAB_PROJECT_DIR=$ROOT  # the checkout is the project (caches in its .cache)
  bash "$ROOT/miglab/sim/vcsim/build.sh" >/dev/null
  log "vSphere simulator: $ROOT/.cache/vcsim/miglab-vcsim"
  bash "$ROOT/miglab/sim/build-images.sh"
fi
log "ready: $("$VENV/bin/miglab" --version)"
