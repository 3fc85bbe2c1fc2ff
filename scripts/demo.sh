#!/usr/bin/env bash
# README's main command: the main job on the built-in simulated lab, setup included.
# Today (foundation issue): validate and plan the seed campaign, as a user would and through
# `ansible-playbook site.yml`. Later phases (hosts, VMs, guests, MLPerf, report) join site.yml.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh
export PATH="$ROOT/.venv/bin:$PATH"
CAMPAIGN=${1:-campaigns/r750xa-a100-80gb-mig.yml}

miglab validate "$CAMPAIGN"
miglab plan "$CAMPAIGN"
ansible-playbook site.yml -e "miglab_campaign=$ROOT/$CAMPAIGN"
