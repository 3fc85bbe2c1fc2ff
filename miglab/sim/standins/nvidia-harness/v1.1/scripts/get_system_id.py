# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/scripts/
# get_system_id.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: prints the detected system's id (get_system() of
# code/common), or its architecture with --gpu_architecture. Run from the harness folder. Written
# anew.
"""Print the system id the harness detects (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import argparse  # noqa: E402
from code.common import get_system  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--gpu_architecture",
        action="store_true",
        help="print the GPU architecture instead of the system id",
    )
    args = parser.parse_args()
    system = get_system()
    print(system.arch.name if args.gpu_architecture else system.get_id())
