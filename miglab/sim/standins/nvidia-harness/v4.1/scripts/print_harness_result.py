# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/scripts/
# print_harness_result.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: after `make run_harness` it prints the
# "Result summaries" of every metadata.json under LOG_DIR (config name, benchmark, "performance" or
# "accuracy": the run's summary string). The real script then compares with NVIDIA's published
# results (build/artifacts), which the stand-in leaves out. Written anew.
"""Print the summaries of the runs under LOG_DIR (stand-in)."""

import glob
import json
import os


def main():
    log_dir = os.environ.get("LOG_DIR", "build/logs/default")
    summaries = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "**", "metadata.json"), recursive=True)):
        with open(path) as f:
            data = json.load(f)
        kind = "performance" if data.get("test_mode") == "PerformanceOnly" else "accuracy"
        by_bench = summaries.setdefault(data["config_name"], {})
        by_bench.setdefault(data["benchmark_full"], {})[kind] = data.get("summary_string", "")
    print(f"\n{'=' * 24} Result summaries: {'=' * 24}\n")
    for config_name, benches in summaries.items():
        print(f"{config_name}:")
        for bench, results in benches.items():
            print(f"    {bench}:")
            for kind, text in results.items():
                print(f"        {kind}: {text}")
        print("")


if __name__ == "__main__":
    main()
