# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows cleanup() of
# closed/NVIDIA/code/common/auditing.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549 (the files it removes from the working folder before
# a run, so that a leftover audit.config does not turn a run into a compliance test). The audit
# tests themselves (TEST01/04/05) are not part of the stand-in. Written anew.
"""Compliance-test helpers (stand-in: the cleanup only)."""

import os
from code.common import logging

_LEFTOVERS = (
    "audit.config",
    "verify_accuracy.txt",
    "verify_performance.txt",
    "mlperf_log_accuracy_baseline.json",
    "accuracy.txt",
    "predictions.json",
)


def cleanup():
    for name in _LEFTOVERS:
        if os.path.exists(name):
            logging.info(f"Audit cleanup: Removing file {name}")
            os.remove(name)


def load(audit_test, benchmark):
    raise RuntimeError("the stand-in harness does not run compliance (audit) tests")
