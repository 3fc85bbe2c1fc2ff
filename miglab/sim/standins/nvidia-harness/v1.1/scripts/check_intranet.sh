# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/scripts/
# check_intranet.sh of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: prints 0 only on NVIDIA's intranet (where its
# internal registry answers), which no miglab lab is; the Makefile then takes the public base
# image. The stand-in asks no server: it prints 6, curl's "could not resolve host".
echo 6
