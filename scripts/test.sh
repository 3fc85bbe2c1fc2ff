#!/usr/bin/env bash
# The whole test suite, including its own setup (README's test command; CI runs it).
#   bash scripts/test.sh            setup, lint, unit, integration (+ bench smoke), e2e, molecule
#   bash scripts/test.sh --fast     setup, lint, unit: the few-minute loop
#   bash scripts/test.sh -- ARGS    ARGS go to every pytest call (e.g. -x, -k NAME)
# MIGLAB_SKIP_MOLECULE=1 / MIGLAB_SKIP_SIM=1 skip molecule / the simulated-lab tests.
# The parts run two or three at a time (CPU-bound on a 2-core machine, so each stream keeps a core
# busy): lint then integration beside unit; then the e2e tests beside molecule's two streams (ESXi
# roles, guest roles: scripts/molecule-all.sh); none of them shares a container, a port or a
# simulator. MIGLAB_TEST_PARALLEL=0 runs molecule after the e2e tests instead.
# At the end (and when a part fails) it prints the split: each part's wall time and result.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

fast=0
pytest_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --fast) fast=1 ;;
    --) shift; pytest_args+=("$@"); break ;;
    *) pytest_args+=("$1") ;;
  esac
  shift
done

SUITE_START=$(date +%s)
SPLIT=()
split() {
  local total=$(($(date +%s) - SUITE_START))
  printf '\n== the split (wall time per part, seconds; parts run side by side count once in the total)\n'
  printf '%-34s %8s  %s\n' part seconds result
  local row name secs result
  for row in "${SPLIT[@]}"; do
    IFS='|' read -r name secs result <<<"$row"
    printf '%-34s %8s  %s\n' "$name" "$secs" "$result"
  done
  printf '%-34s %8s  %s\n' total "$total" "$1"
}
record() { SPLIT+=("$1|$2|$([ "$3" = 0 ] && echo ok || echo "FAILED (rc=$3)")"); }
fail() { split FAILED; exit "$1"; }

# part NAME CMD...: runs CMD, records its wall time and result; a failure ends the suite.
part() {
  local name=$1 start rc
  shift
  echo "== $name"
  start=$(date +%s)
  set +e
  "$@"
  rc=$?
  set -e
  record "$name" $(($(date +%s) - start)) "$rc"
  [ "$rc" = 0 ] || fail "$rc"
}

lint() {
  echo "-- ruff"
  ruff check . && ruff format --check . || return 1
  echo "-- import-linter (the package's layers)"
  lint-imports --no-cache || return 1
  echo "-- ansible-lint (production profile)"
  # Its own Ansible home: a copy of miglab.lab in ~/.ansible/collections (molecule of another
  # checkout installs one there) would be linted instead of this checkout's.
  ANSIBLE_HOME="$ROOT/.cache/ansible-home" ansible-lint --offline --profile production || return 1
  echo "-- ansible-test sanity (the collection as Ansible's tooling checks it: scripts/sanity.sh)"
  bash scripts/sanity.sh
}

part setup bash scripts/setup.sh test
export PATH="$ROOT/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$ROOT/ansible.cfg"

# Lint and the unit tests run side by side, then the integration tests beside the rest of the unit
# tests: each keeps about one core busy (ansible-lint, one pytest process) and CI's machine has
# two. Each part's output goes to .cache/test-parts/<part>.log and is printed when both streams end.
PART_LOGS=$ROOT/.cache/test-parts
rm -rf "$PART_LOGS"
mkdir -p "$PART_LOGS"
# logged NAME CMD...: runs CMD, its output in NAME.log, "seconds rc" in NAME.result; returns rc.
logged() {
  local name=$1 start rc
  shift
  start=$(date +%s)
  set +e
  "$@" >"$PART_LOGS/$name.log" 2>&1
  rc=$?
  set -e
  echo "$(($(date +%s) - start)) $rc" >"$PART_LOGS/$name.result"
  return "$rc"
}
unit() { pytest -q --durations=5 tests/unit "${pytest_args[@]}"; }
integration() { pytest -q --durations=5 tests/integration tests/bench "${pytest_args[@]}"; }
echo "== lint, then integration (+ bench smoke), beside unit: logs in $PART_LOGS"
logged unit unit &
unit_pid=$!
set +e
logged lint lint && { [ "$fast" = 1 ] || logged integration integration; }
wait "$unit_pid"
set -e
failed=0
for name in lint unit integration; do
  [ -f "$PART_LOGS/$name.result" ] || continue
  label=$name
  [ "$name" = integration ] && label="integration (+ bench smoke)"
  echo "== $label"
  cat "$PART_LOGS/$name.log"
  read -r secs rc <"$PART_LOGS/$name.result"
  record "$label" "$secs" "$rc"
  [ "$rc" = 0 ] || failed=$rc
done
[ "$failed" = 0 ] || fail "$failed"
if [ "$fast" = 1 ]; then
  split ok
  exit 0
fi

# The e2e tests and molecule use different containers and simulators (names never overlap).
molecule_pid=""
MOLECULE_LOG=$PART_LOGS/molecule.log
if [ "${MIGLAB_SKIP_MOLECULE:-0}" != 1 ] && [ "${MIGLAB_TEST_PARALLEL:-1}" = 1 ]; then
  mkdir -p "$(dirname "$MOLECULE_LOG")"
  echo "== molecule (every role's scenarios, podman), beside the e2e tests: $MOLECULE_LOG"
  logged molecule bash scripts/molecule-all.sh &  # its own wall time in molecule.result
  molecule_pid=$!
fi
set +e
echo "== e2e (ansible-playbook, miglab run on the simulated lab)"
e2e_start=$(date +%s)
pytest -q --durations=20 tests/e2e "${pytest_args[@]}"
e2e_rc=$?
set -e
record e2e $(($(date +%s) - e2e_start)) "$e2e_rc"
if [ -n "$molecule_pid" ]; then
  set +e
  wait "$molecule_pid"
  molecule_rc=$?
  set -e
  echo "-- molecule's summary (per scenario: $ROOT/.cache/molecule/logs/)"
  if [ "$molecule_rc" = 0 ]; then
    grep -E '^\S+ +\S+ +[0-9]+s +rc=|^\[molecule-all\] all ' "$MOLECULE_LOG" || true
  else
    # The failed tasks first (a long tail is cut in CI's log before it gets to them), then the end.
    for log in $(sed -nE 's/^\[molecule-all\] .* failed \(rc=[0-9]+\); log: (.*)$/\1/p' "$MOLECULE_LOG" | sort -u); do
      echo "-- failed tasks in $log"
      grep -E -B2 -A15 '^(fatal|failed): ' "$log" | head -n 80 || true
    done
    tail -n 40 "$MOLECULE_LOG"
  fi
  read -r secs _ <"$PART_LOGS/molecule.result"
  record "molecule (beside e2e)" "$secs" "$molecule_rc"
  [ "$molecule_rc" = 0 ] || fail "$molecule_rc"
fi
[ "$e2e_rc" = 0 ] || fail "$e2e_rc"
if [ "${MIGLAB_SKIP_MOLECULE:-0}" != 1 ] && [ -z "$molecule_pid" ]; then
  part molecule bash scripts/molecule-all.sh
fi
split ok
