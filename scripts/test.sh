#!/usr/bin/env bash
# The whole test suite, including its own setup (README's test command; CI runs it).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh test
export PATH="$ROOT/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$ROOT/ansible.cfg"

echo "== ruff"
ruff check .
ruff format --check .
echo "== ansible-lint (production profile)"
ansible-lint --offline --profile production
echo "== pytest (unit, vcsim integration, end to end)"
pytest -q "$@"
if [ "${MIGLAB_SKIP_MOLECULE:-0}" != 1 ]; then
  echo "== molecule (every role's scenarios, podman)"
  bash scripts/molecule-all.sh
fi
