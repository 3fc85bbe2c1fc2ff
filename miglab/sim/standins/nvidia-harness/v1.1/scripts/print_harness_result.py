# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/scripts/
# print_harness_result.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: prints the perf and accuracy summaries of --log_dir
# (default $LOG_DIR) in the same layout. As the real script, it fails (TypeError: 'NoneType'
# object is not iterable) when the run left no perf_harness_summary.json, e.g. when no config
# matched the detected system. Written anew.
"""Print the results of the harness run in LOG_DIR (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import code.common.arguments as common_args  # noqa: E402
from code.common.log_parser import (  # noqa: E402
    get_acc_summary,
    get_perf_summary,
    get_power_summary,
)


def _print_block(title, results):
    print("")
    print(f"======================= {title} =======================")
    print("")
    for config_name in results:  # None when there is no summary: TypeError, as the real one
        print(f"{config_name}:")
        for benchmark in results[config_name]:
            print(f"    {benchmark}: {results[config_name][benchmark]}")
        print("")


def main():
    log_dir = common_args.parse_args(["log_dir"])["log_dir"]
    _print_block("Perf harness results:", get_perf_summary(log_dir))
    results = get_acc_summary(log_dir)
    _print_block("Accuracy results:", results)
    if get_power_summary(log_dir) is not None:
        print("the stand-in harness measures no power")


if __name__ == "__main__":
    main()
