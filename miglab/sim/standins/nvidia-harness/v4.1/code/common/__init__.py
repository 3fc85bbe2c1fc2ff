# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# __init__.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: Python's logging set up at import with the real
# format "[<time> <file>:<line> <LEVEL>] <message>" (DEBUG when VERBOSE is not 0), the round read
# from ./VERSION (first line; the harness runs from its folder), run_command (a shell command,
# its output lines, CalledProcessError on failure) and dict_get. Written anew.
"""Harness-wide helpers (stand-in)."""

import logging
import os
import subprocess
import sys
from pathlib import Path

logging.basicConfig(
    level=(logging.INFO if os.environ.get("VERBOSE", "0") == "0" else logging.DEBUG),
    format="[%(asctime)s %(filename)s:%(lineno)d %(levelname)s] %(message)s",
)

with open(Path("VERSION").absolute()) as _fh:
    __MLPERF_INF_VERSION__ = _fh.readline().strip("\n")


def run_command(cmd, get_output=False, tee=True, custom_env=None, verbose=True):
    """Run ``cmd`` in a shell. Without ``get_output``: its exit status (raises on failure).
    With it: its stdout lines (printed too when ``tee``); raises CalledProcessError on failure."""
    if verbose:
        logging.info(f"Running command: {cmd}")
    if not get_output:
        return subprocess.check_call(cmd, shell=True, env=custom_env)
    proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE, env=custom_env)
    lines = []
    for raw in iter(proc.stdout.readline, b""):
        text = raw.decode("utf-8")
        if tee:
            sys.stdout.write(text)
            sys.stdout.flush()
        lines.append(text.rstrip("\n"))
    status = proc.wait()
    if status != 0:
        raise subprocess.CalledProcessError(status, cmd)
    return lines


def dict_get(d, key, default=None):
    """``d[key]``, or ``default`` when the key is missing or None."""
    value = d.get(key, default)
    return default if value is None else value
