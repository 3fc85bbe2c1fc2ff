# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/bert/
# Offline/__init__.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: OfflineGPUBaseConfig and NVIDIA's MaxP k_99
# Custom-harness classes of the H100 / H200 / A100 80GB PCIe single- and eight-GPU systems, with
# their real values (the HighAccuracy, Triton, MaxQ, ARM and MIG classes are left out). The
# custom systems' configs are in custom.py beside this file.
import os
import sys

sys.path.insert(0, os.getcwd())

from code.common.constants import Benchmark, Scenario  # noqa: E402, F401
from code.common.systems.system_list import KnownSystem  # noqa: E402

from configs.bert import GPUBaseConfig  # noqa: E402
from configs.configuration import (  # noqa: E402
    AccuracyTarget,
    ConfigRegistry,
    HarnessType,
    PowerSetting,
)


class OfflineGPUBaseConfig(GPUBaseConfig):
    scenario = Scenario.Offline

    gpu_copy_streams = 2
    gpu_inference_streams = 2


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_PCIe_80GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.H100_PCIe_80GBx1
    use_small_tile_gemm_plugin = False
    gpu_batch_size = {"bert": 1280}
    offline_expected_qps = 5700
    workspace_size = 7516192768


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_NVL_94GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.H100_NVL_94GBx1
    use_small_tile_gemm_plugin = False
    gpu_batch_size = {"bert": 1280}
    offline_expected_qps = 5700
    workspace_size = 7516192768


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_PCIe_80GBx8(H100_PCIe_80GBx1):
    system = KnownSystem.H100_PCIe_80GBx8
    offline_expected_qps = 46000


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_NVL_94GBx8(H100_NVL_94GBx1):
    system = KnownSystem.H100_NVL_94GBx8
    offline_expected_qps = 46000


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_SXM_80GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.H100_SXM_80GBx1
    use_small_tile_gemm_plugin = False
    gpu_batch_size = {"bert": 1280}
    gpu_copy_streams = 2
    gpu_inference_streams = 1
    offline_expected_qps = 9400
    workspace_size = 7516192768


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class H200_SXM_141GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.H200_SXM_141GBx1
    use_small_tile_gemm_plugin = False
    gpu_batch_size = {"bert": 1280}
    gpu_copy_streams = 2
    gpu_inference_streams = 1
    offline_expected_qps = 9400
    workspace_size = 128000000000
    vboost_slider = 1


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class A100_PCIe_80GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.A100_PCIe_80GBx1
    use_small_tile_gemm_plugin = True
    gpu_batch_size = {"bert": 1024}
    offline_expected_qps = 3400
    workspace_size = 7516192768


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class A100_PCIe_80GBx8(A100_PCIe_80GBx1):
    system = KnownSystem.A100_PCIe_80GBx8
    offline_expected_qps = 27200
