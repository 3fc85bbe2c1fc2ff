#!/usr/bin/env bash
# Runs `molecule test` for every scenario of every role (roles/*/molecule/*) in two streams side by
# side (ESXi roles; guest roles), each one scenario after the other, stopping at its first failure.
# As root on Debian 12 (podman needs it).
#   bash scripts/molecule-all.sh                        every scenario of every role
#   bash scripts/molecule-all.sh guest_base             every scenario of one role
#   bash scripts/molecule-all.sh guest_vgpu_driver:upgrade   one scenario
# Before the scenarios it builds (once; stamped) the guest image with miglab/sim/build-images.sh and
# the NVIDIA stand-ins with miglab/sim/standins/build.sh (into .cache/standins), and exports what the
# scenarios read: CONTAINERS_CONF, MIGLAB_GUEST_IMAGE, MIGLAB_STANDINS_DIR.
# Roles of a family with a runner of its own (scripts/molecule-<prefix>.sh, e.g. molecule-esxi.sh
# for esxi_*: it builds that family's stand-ins first) have their scenarios run through it.
# Each scenario's output goes to .cache/molecule/logs/<role>-<scenario>.log (and to the terminal too
# when one stream runs: MIGLAB_MOLECULE_STREAMS=1, or the scenarios asked for are of one stream);
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

# Streams: the scenarios of a family with a runner of its own (esxi_*: vCenter simulator and ESXi
# stand-ins) form one stream, all others (guest containers) another. Their containers, ports and
# simulators never overlap, so the streams run side by side, each with its own Ansible home (molecule
# installs the collection there); within a stream, scenarios run one after the other, in order.
# MIGLAB_MOLECULE_STREAMS=1 runs everything in one stream, its output on the terminal.
stream_of() {
  local family=${1%%_*}
  if [ -f "scripts/molecule-$family.sh" ] && [ "$family" != all ]; then echo "$family"; else echo guest; fi
}

# run_stream NAME SUMMARY_FILE SCENARIO...: stops at the stream's first failure (rc 1).
run_stream() {
  local name=$1 summary_file=$2 item role scenario logfile start rc family
  shift 2
  export MIGLAB_MOLECULE_ANSIBLE_HOME=$ROOT/.cache/ansible-home-$name
  for item in "$@"; do
    role=${item%%:*} scenario=${item#*:}
    logfile=$LOGS/$role-$scenario.log
    log "== $role / $scenario"
    start=$(date +%s)
    family=$(stream_of "$role")
    set +e
    if [ "$family" != guest ]; then
      bash "scripts/molecule-$family.sh" "$role:$scenario" >"$logfile.tmp" 2>&1 &
    else
      (cd "roles/$role" && ANSIBLE_HOME=$MIGLAB_MOLECULE_ANSIBLE_HOME \
        molecule test --scenario-name "$scenario") >"$logfile.tmp" 2>&1 &
    fi
    local pid=$!
    if [ "$SERIAL" = 1 ]; then tail -n +1 -f --pid="$pid" "$logfile.tmp"; fi
    wait "$pid"
    rc=$?
    set -e
    mv "$logfile.tmp" "$logfile"
    printf '%-28s %-18s %4ss  rc=%s\n' "$role" "$scenario" "$(($(date +%s) - start))" "$rc" \
      >>"$summary_file"
    if grep -qF "$SENTINEL" "$logfile"; then
      log "FAIL: the licence token's sentinel appears in $logfile"
      rc=1
    fi
    if [ "$rc" -ne 0 ]; then
      log "$role / $scenario failed (rc=$rc); log: $logfile"
      return 1
    fi
  done
}

streams=()
for item in "${scenarios[@]}"; do
  name=$(stream_of "${item%%:*}")
  [[ " ${streams[*]} " == *" $name "* ]] || streams+=("$name")
done
SERIAL=0
if [ "${MIGLAB_MOLECULE_STREAMS:-2}" = 1 ] || [ "${#streams[@]}" = 1 ]; then SERIAL=1; fi

total_start=$(date +%s)
rm -f "$LOGS"/stream-*.summary
pids=() failed=0
for name in "${streams[@]}"; do
  items=()
  for item in "${scenarios[@]}"; do
    if [ "$SERIAL" = 1 ] || [ "$(stream_of "${item%%:*}")" = "$name" ]; then items+=("$item"); fi
  done
  if [ "$SERIAL" = 1 ]; then
    run_stream all "$LOGS/stream-all.summary" "${items[@]}" || failed=1
    break
  fi
  log "stream $name: ${items[*]}"
  run_stream "$name" "$LOGS/stream-$name.summary" "${items[@]}" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
cat "$LOGS"/stream-*.summary >&2
[ "$failed" = 0 ] || die "failed after $(($(date +%s) - total_start)) s"
log "all ${#scenarios[@]} scenarios passed in $(($(date +%s) - total_start)) s"
