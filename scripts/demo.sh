#!/usr/bin/env bash
# README's main command: the main job on the built-in simulated lab, setup included.
#   bash scripts/demo.sh [CAMPAIGN]      (default: the seed, campaigns/r750xa-a100-80gb-mig.yml)
# 1. setup: Debian packages, virtualenv, miglab + Ansible (scripts/setup.sh);
# 2. `miglab sim up`: vCenter simulator, ESXi host stand-in, golden guest image (built once);
# 3. `miglab run CAMPAIGN --resume`: site.yml through ansible-runner -- validate, ESXi hosts
#    (driver, MIG, graphics), VMs, guests, MLPerf wave by wave, report. Runs already VALID are
#    kept, so running this again only rewrites what changed (nothing, on an unchanged lab).
# The report: results/<campaign>/report/report.md (+ .html, .csv, .json, PNG charts).
# `miglab sim down` stops the simulated lab (results stay).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh
export PATH="$ROOT/.venv/bin:$PATH"
CAMPAIGN=${1:-campaigns/r750xa-a100-80gb-mig.yml}

miglab validate "$CAMPAIGN"
miglab sim up
miglab run "$CAMPAIGN" --resume
