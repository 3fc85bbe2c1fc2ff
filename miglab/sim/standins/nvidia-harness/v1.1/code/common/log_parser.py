# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows get_perf_summary(),
# get_acc_summary() and get_power_summary() of closed/NVIDIA/code/common/log_parser.py of
# github.com/mlcommons/inference_results_v1.1 @ 912dcdb9163736beca40a1f86e25d1305deab549: the
# summaries main.py keeps in <log dir>/perf_harness_summary.json and accuracy_summary.json (None
# when absent); power: None without spl.txt (the stand-in measures no power). Written anew.
"""Summaries of a harness run (stand-in)."""

import json
import os


def _load(log_dir, name):
    path = os.path.join(log_dir, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def get_perf_summary(log_dir):
    return _load(log_dir, "perf_harness_summary.json")


def get_acc_summary(log_dir):
    return _load(log_dir, "accuracy_summary.json")


def get_power_summary(log_dir):
    if not os.path.exists(os.path.join(log_dir, "spl.txt")):
        return None
    raise RuntimeError("the stand-in harness measures no power (spl.txt is not its own)")
