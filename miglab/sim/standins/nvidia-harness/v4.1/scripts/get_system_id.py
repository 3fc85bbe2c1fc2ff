# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/scripts/
# get_system_id.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: run as `python3 -m scripts.get_system_id` from the
# harness folder, it prints MATCHED_SYSTEM ("KnownSystem.<member>", or "None" when the system
# matched nothing); --gpu_architecture prints the first accelerator's SM instead. Written anew.
"""Print the KnownSystem the harness detects (stand-in)."""

import argparse
from code.common.systems.system_list import DETECTED_SYSTEM, MATCHED_SYSTEM

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--gpu_architecture",
        help="Print GPU architecture class instead of system id",
        action="store_true",
    )
    args = parser.parse_args()
    if args.gpu_architecture:
        print(DETECTED_SYSTEM.get_compute_sm())
    else:
        print(MATCHED_SYSTEM)
