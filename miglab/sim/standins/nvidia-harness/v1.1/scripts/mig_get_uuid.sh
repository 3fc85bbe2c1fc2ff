# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/scripts/
# mig_get_uuid.sh of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: prints the UUID of a random MIG instance that
# `nvidia-smi -L` lists (launch_docker uses it with MIG_CONF other than OFF and ALL). Written anew.
count=$(nvidia-smi -L | grep -c MIG)
pick=$(( (RANDOM % count) + 1 ))
line=$(nvidia-smi -L | grep MIG | sed 's/)//g' | sed -n "${pick}p")
echo "${line#*UUID: }"
