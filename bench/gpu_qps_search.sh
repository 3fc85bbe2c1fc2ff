#!/usr/bin/env bash
# Issue 17 on a real GPU: the default (PyTorch CUDA) SUT records its device, the Server target-QPS
# search (L4) and Offline's calibration run before the full runs, which take their targets from the
# stored qps_search.json (no --target-qps). Run on the GPU machine from the repository root, with
# LoadGen installed (bench/RESULTS-gpu.md, "Commands"):
#
#   bash bench/gpu_qps_search.sh OUT BENCHMARK [FULL_RUN_MS] [SEARCH_RUN_MS] [smoke]
#
# smoke (the test suite's, tests/bench): the same four steps with the simulated lab's slice-model
# SUT on the CPU, to check the script and the command's plumbing, not a GPU.
# OUT gets results.tgz (the results tree: qps_search.json files, the full runs' logs and
# miglab_run.json) and run.log. Only read-only nvidia-smi queries are made.
set -u -o pipefail
out=${1:?OUT}
bench=${2:?BENCHMARK (resnet50 or bert-99)}
full_ms=${3:-60000}
search_ms=${4:-8000}
smoke=${5:-}
work=${MIGLAB_QPS_WORK:-/tmp/miglab-qps-search}
vm=$work/results/h200/single/vm1
rm -rf "$work" && mkdir -p "$vm"
py=${PYTHON:-python3}
failed=0
export PYTHONUNBUFFERED=1
log=$out/run-$bench.log

case $bench in
resnet50) sut=(--batch-size 512 --compile --server-batch-size 96 --max-inflight 2 --server-timeout-ms 1.5) ;;
bert-99) sut=(--batch-size 128 --server-batch-size 96 --max-inflight 1 --server-timeout-ms 13.0 --fast-gelu) ;;
*) echo "unknown benchmark $bench" >&2; exit 2 ;;
esac
device=(--sut torch --device cuda)
if [[ $smoke == smoke ]]; then
  device=(--sut slice-model --device cpu --simulated-lab --min-query-count 1)
  sut=()
fi
common=(--backend reference "${device[@]}" --benchmark "$bench" --out "$vm"
        --vm h200-single-vm1 --lab-scenario single --overwrite "${sut[@]}")

step() {  # one command, its exit status and wall time in the log
  local t0=$SECONDS rc
  echo "== $*" >>"$log"
  timeout 280 "$py" -m miglab.mlperf.run "${common[@]}" "$@" >>"$log" 2>&1
  rc=$?
  ((rc <= 1)) || failed=1  # 1: the run ended, not VALID (in the log); 2, 3: it broke
  echo "== exit $rc after $((SECONDS - t0)) s" >>"$log"
}

{ date -u +%FT%TZ; nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,mig.mode.current,power.limit --format=csv; } >"$log" 2>&1
[[ $smoke == smoke ]] && search=(--search-min-query-count 1) || search=()
step --scenario Server --qps-search --search-min-duration-ms "$search_ms" --search-max-trials 8 --raw-seconds 2 "${search[@]}"
step --scenario Server --run 1 --min-duration-ms "$full_ms" --raw-seconds 2
step --scenario Offline --qps-search --search-min-duration-ms "$search_ms" --raw-seconds 2 "${search[@]}"
step --scenario Offline --run 1 --min-duration-ms "$full_ms" --raw-seconds 2
tar -C "$work" -czf "$out/results-$bench.tgz" results
grep -h '^== \|"target_qps"\|VALID' "$log" | tail -30
exit "$failed"
