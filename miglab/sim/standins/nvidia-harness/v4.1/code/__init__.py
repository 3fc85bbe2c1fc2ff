# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/__init__.py
# of github.com/mlcommons/inference_results_v4.1 @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: the
# harness's `code` package (run from the harness folder, it shadows the standard library's
# `code` module). The real file maps benchmarks to their TensorRT builders and harness classes;
# the stand-in has none (code/common/harness.py runs the shared LoadGen stand-in instead).
"""NVIDIA MLPerf Inference harness package (stand-in)."""
