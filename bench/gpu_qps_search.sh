#!/usr/bin/env bash
# Issue 17 on a real GPU: the default (PyTorch CUDA) SUT records its device, the Server target-QPS
# search (L4) and Offline's calibration run before the full runs, which take their targets from the
# stored qps_search.json (no --target-qps). Run on the GPU machine from the repository root, with
# LoadGen installed (bench/RESULTS-gpu.md, "Commands"):
#
#   bash bench/gpu_qps_search.sh OUT BENCHMARK [FULL_RUN_MS] [SEARCH_RUN_MS]
#
# OUT gets results.tgz (the results tree: qps_search.json files, the full runs' logs and
# miglab_run.json) and run.log. Only read-only nvidia-smi queries are made.
set -u -o pipefail
out=${1:?OUT}
bench=${2:?BENCHMARK (resnet50 or bert-99)}
full_ms=${3:-60000}
search_ms=${4:-8000}
work=/tmp/miglab-qps-search
vm=$work/results/h200/single/vm1
rm -rf "$work" && mkdir -p "$vm"
export PYTHONUNBUFFERED=1
log=$out/run-$bench.log

case $bench in
resnet50) sut=(--batch-size 512 --compile --server-batch-size 96 --max-inflight 2 --server-timeout-ms 1.5) ;;
bert-99) sut=(--batch-size 128 --server-batch-size 96 --max-inflight 1 --server-timeout-ms 13.0 --fast-gelu) ;;
*) echo "unknown benchmark $bench" >&2; exit 2 ;;
esac
common=(--backend reference --sut torch --benchmark "$bench" --out "$vm" --device cuda
        --vm h200-single-vm1 --lab-scenario single --overwrite "${sut[@]}")

step() {  # one command, its exit status and wall time in the log
  local t0=$SECONDS rc
  echo "== $*" >>"$log"
  timeout 280 python3 -m miglab.mlperf.run "${common[@]}" "$@" >>"$log" 2>&1
  rc=$?
  echo "== exit $rc after $((SECONDS - t0)) s" >>"$log"
}

{ date -u +%FT%TZ; nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,mig.mode.current,power.limit --format=csv; } >"$log" 2>&1
step --scenario Server --qps-search --search-min-duration-ms "$search_ms" --search-max-trials 8 --raw-seconds 2
step --scenario Server --run 1 --min-duration-ms "$full_ms" --raw-seconds 2
step --scenario Offline --qps-search --search-min-duration-ms "$search_ms" --raw-seconds 2
step --scenario Offline --run 1 --min-duration-ms "$full_ms" --raw-seconds 2
tar -C "$work" -czf "$out/results-$bench.tgz" results
grep -h '^== \|"target_qps"\|VALID' "$log" | tail -30
