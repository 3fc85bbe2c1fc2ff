# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# result_parser.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: the result key of each scenario and reading keys
# from the ":::MLLOG {json}" lines of <log dir>/mlperf_log_detail.txt. Written anew.
"""Values from LoadGen's detail log (stand-in)."""

import json
import os
import sys

sys.path.insert(0, os.getcwd())

from code.common.constants import Scenario  # noqa: E402

MLPERF_LOG_PREFIX = ":::MLLOG"

scenario_loadgen_log_keys = {
    Scenario.Offline: "result_samples_per_second",
    Scenario.Server: "result_scheduled_samples_per_sec",
    Scenario.SingleStream: "result_90.00_percentile_latency_ns",
}


def from_loadgen_by_keys(log_dir, keys, return_list=False):
    """``{key: value}`` (the last one, or all as a list) for ``keys`` in the detail log;
    FileNotFoundError when there is none."""
    with open(os.path.join(log_dir, "mlperf_log_detail.txt")) as f:
        lines = f.read().strip().split("\n")
    results = {}
    for line in lines:
        if not line.startswith(MLPERF_LOG_PREFIX):
            continue
        entry = json.loads(line[len(MLPERF_LOG_PREFIX) + 1 :])
        key = entry["key"]
        if key not in keys:
            continue
        if return_list:
            results.setdefault(key, []).append(entry["value"])
        else:
            results[key] = entry["value"]
    return results
