#!/usr/bin/env bash
# Runs `molecule test` for every scenario of every role (roles/*/molecule/*), one after the
# other, and stops at the first failure. As root on Debian 12 (podman needs it).
#   bash scripts/molecule-all.sh                        every scenario of every role
#   bash scripts/molecule-all.sh guest_base             every scenario of one role
#   bash scripts/molecule-all.sh guest_vgpu_driver:upgrade   one scenario
# Before the scenarios it builds (once; stamped) the guest image with miglab/sim/build-images.sh and
# the NVIDIA stand-ins with miglab/sim/standins/build.sh (into .cache/standins), and exports what the
# scenarios read: CONTAINERS_CONF, MIGLAB_GUEST_IMAGE, MIGLAB_STANDINS_DIR.
# Roles of a family with a runner of its own (scripts/molecule-<prefix>.sh, e.g. molecule-esxi.sh
# for esxi_*: it builds that family's stand-ins first) have their scenarios run through it.
# Each scenario's output goes to the terminal and to .cache/molecule/logs/<role>-<scenario>.log;
# a log that contains the test licence token's sentinel fails the run (secrets never printed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$ROOT/.venv/bin:$PATH"
# Molecule installs the collection it tests into $ANSIBLE_HOME/collections (~/.ansible by default),
# where a later ansible-lint would find that copy before the checkout's: keep it in the checkout.
export ANSIBLE_HOME="$ROOT/.cache/ansible-home"
LOGS=$ROOT/.cache/molecule/logs
mkdir -p "$LOGS"

log() { printf '[molecule-all] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

command -v molecule >/dev/null || die "molecule not found: run 'bash scripts/setup.sh test' first"
# The podman driver's create/destroy playbooks need containers.podman (>= 1.8.1); the PyPI
# package `ansible` bundles it (Galaxy is not reachable here).
ansible-galaxy collection list containers.podman 2>/dev/null | grep -q '^containers\.podman ' ||
  die "the Ansible collection containers.podman is missing: pip install 'ansible>=9' into .venv"

export MIGLAB_PROJECT_DIR=$ROOT  # the checkout is the project (caches in its .cache)
eval "$(bash miglab/sim/build-images.sh)"
export MIGLAB_STANDINS_DIR=$ROOT/.cache/standins
bash miglab/sim/standins/build.sh "$MIGLAB_STANDINS_DIR" >/dev/null
SENTINEL=$(cat "$MIGLAB_STANDINS_DIR/token-sentinel.txt")
export ANSIBLE_NOCOLOR=1 PY_COLORS=0 ANSIBLE_FORCE_COLOR=0

# Scenarios: default first, then the others in name order, role by role.
scenarios=()
for role_dir in roles/*/; do
  role=$(basename "$role_dir")
  [ -d "$role_dir/molecule" ] || continue
  [ -f "$role_dir/molecule/default/molecule.yml" ] && scenarios+=("$role:default")
  for s in "$role_dir"molecule/*/molecule.yml; do
    [ -f "$s" ] || continue
    name=$(basename "$(dirname "$s")")
    [ "$name" = default ] || scenarios+=("$role:$name")
  done
done
if [ $# -gt 0 ]; then
  wanted=()
  for item in "${scenarios[@]}"; do
    for arg in "$@"; do
      if [ "$item" = "$arg" ] || [ "${item%%:*}" = "$arg" ]; then wanted+=("$item"); fi
    done
  done
  scenarios=("${wanted[@]}")
fi
((${#scenarios[@]})) || die "no scenario matches: $*"

total_start=$(date +%s)
summary=()
for item in "${scenarios[@]}"; do
  role=${item%%:*} scenario=${item#*:}
  logfile=$LOGS/$role-$scenario.log
  log "== $role / $scenario"
  start=$(date +%s)
  set +e
  family=${role%%_*}
  if [ -f "scripts/molecule-$family.sh" ] && [ "$family" != all ]; then
    bash "scripts/molecule-$family.sh" "$role:$scenario" 2>&1 | tee "$logfile"
    rc=${PIPESTATUS[0]}
  else
    (cd "roles/$role" && molecule test --scenario-name "$scenario") 2>&1 | tee "$logfile"
    rc=${PIPESTATUS[0]}
  fi
  set -e
  took=$(($(date +%s) - start))
  summary+=("$(printf '%-28s %-18s %4ss  rc=%s' "$role" "$scenario" "$took" "$rc")")
  if grep -qF "$SENTINEL" "$logfile"; then
    log "FAIL: the licence token's sentinel appears in $logfile"
    rc=1
  fi
  if [ "$rc" -ne 0 ]; then
    printf '%s\n' "${summary[@]}" >&2
    die "$role / $scenario failed (rc=$rc); log: $logfile"
  fi
done
printf '%s\n' "${summary[@]}" >&2
log "all ${#scenarios[@]} scenarios passed in $(($(date +%s) - total_start)) s"
