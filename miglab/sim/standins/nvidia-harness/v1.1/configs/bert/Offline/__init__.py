# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/
# bert/Offline/__init__.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: the real header (imports) and
# NVIDIA's BERT Offline configs of the A100 80GB PCIe (A100_PCIe_80GBx1, x8 and
# their HighAccuracy variants) and the scenario's base configs,
# with their values; the configs of NVIDIA's other systems are left out. miglab appends its
# VM's configs at the end of this file.
# ruff: noqa: E402, E501, F401, F403, F405, I001

import os
import sys

sys.path.insert(0, os.getcwd())

from code.common.constants import Benchmark, Scenario
from code.common.system_list import System, Architecture, MIGConfiguration, MIGSlice
from configs.configuration import *
from configs.bert import GPUBaseConfig, CPUBaseConfig


class OfflineGPUBaseConfig(GPUBaseConfig):
    scenario = Scenario.Offline

    gpu_copy_streams = 2
    gpu_inference_streams = 2
    enable_interleaved = False


class OfflineCPUBaseConfig(CPUBaseConfig):
    scenario = Scenario.Offline

    max_queue_delay_usec = 100


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class A100_PCIe_80GBx1(OfflineGPUBaseConfig):
    system = System("A100-PCIe-80GB", Architecture.Ampere, 1)
    use_small_tile_gemm_plugin = True
    gemm_plugin_fairshare_cache_size = 120
    gpu_batch_size = 1024
    offline_expected_qps = 3400
    workspace_size = 7516192768


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99_9, PowerSetting.MaxP)
class A100_PCIe_80GBx1_HighAccuracy(A100_PCIe_80GBx1):
    precision = "fp16"
    offline_expected_qps = 1750


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class A100_PCIe_80GBx8(A100_PCIe_80GBx1):
    system = System("A100-PCIe-80GB", Architecture.Ampere, 8)
    offline_expected_qps = 27200


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99_9, PowerSetting.MaxP)
class A100_PCIe_80GBx8_HighAccuracy(A100_PCIe_80GBx8):
    precision = "fp16"
    offline_expected_qps = 12800
