#!/usr/bin/env bash
# Runs the ESXi host roles' molecule scenarios (roles/esxi_*/molecule/*), one after the other,
# stopping at the first failure. As root on Debian 12 (podman).
#   bash scripts/molecule-esxi.sh                          all of them
#   bash scripts/molecule-esxi.sh esxi_mig                 every scenario of one role
#   bash scripts/molecule-esxi.sh esxi_vgpu_driver:failures   one scenario
#   MOLECULE_COMMAND=converge bash scripts/molecule-esxi.sh esxi_mig   another molecule command
# First (stamped, seconds when up to date): the Debian 12 image (miglab/sim/build-images.sh), the
# ESXi shell stand-in image (miglab/sim/standins/esxi/build-image.sh) and the vCenter simulator
# (miglab/sim/vcsim/build.sh). Logs: .cache/molecule/logs/<role>-<scenario>.log.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$ROOT/.venv/bin:$PATH"
# Molecule installs the collection it tests into $ANSIBLE_HOME/collections (~/.ansible by default),
# where a later ansible-lint would find that copy before the checkout's: keep it in the checkout.
export ANSIBLE_HOME="${MIGLAB_MOLECULE_ANSIBLE_HOME:-$ROOT/.cache/ansible-home}"
LOGS=$ROOT/.cache/molecule/logs
mkdir -p "$LOGS"
log() { printf '[molecule-esxi] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

command -v molecule >/dev/null || die "molecule not found: run 'bash scripts/setup.sh test' first"
ansible-galaxy collection list containers.podman 2>/dev/null | grep -q '^containers\.podman ' ||
  die "the Ansible collection containers.podman is missing: pip install 'ansible>=9' into .venv"

export MIGLAB_PROJECT_DIR=$ROOT  # the checkout is the project (caches in its .cache)
eval "$(bash miglab/sim/standins/esxi/build-image.sh)"
bash miglab/sim/vcsim/build.sh >/dev/null
export ANSIBLE_NOCOLOR=1 PY_COLORS=0 ANSIBLE_FORCE_COLOR=0

all=(esxi_vgpu_driver:default esxi_vgpu_driver:failures esxi_vgpu_driver:image esxi_mig:default esxi_graphics:default
  esxi_maintenance:default)
scenarios=()
if [ $# -eq 0 ]; then
  scenarios=("${all[@]}")
else
  for arg in "$@"; do
    for item in "${all[@]}"; do
      if [ "$item" = "$arg" ] || [ "${item%%:*}" = "$arg" ]; then scenarios+=("$item"); fi
    done
  done
fi
((${#scenarios[@]})) || die "no scenario matches: $* (known: ${all[*]})"

total_start=$(date +%s)
summary=()
for item in "${scenarios[@]}"; do
  role=${item%%:*} scenario=${item#*:}
  logfile=$LOGS/$role-$scenario.log
  log "== $role / $scenario"
  start=$(date +%s)
  set +e
  (cd "roles/$role" && molecule "${MOLECULE_COMMAND:-test}" --scenario-name "$scenario") 2>&1 | tee "$logfile"
  rc=${PIPESTATUS[0]}
  set -e
  summary+=("$(printf '%-18s %-10s %4ss  rc=%s' "$role" "$scenario" "$(($(date +%s) - start))" "$rc")")
  if [ "$rc" -ne 0 ]; then
    printf '%s\n' "${summary[@]}" >&2
    die "$role / $scenario failed (rc=$rc); log: $logfile"
  fi
done
printf '%s\n' "${summary[@]}" >&2
log "all ${#scenarios[@]} scenarios passed in $(($(date +%s) - total_start)) s"
