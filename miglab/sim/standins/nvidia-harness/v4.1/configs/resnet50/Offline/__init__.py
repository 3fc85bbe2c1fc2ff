# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/resnet50/
# Offline/__init__.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: OfflineGPUBaseConfig and NVIDIA's MaxP LWIS
# classes of the H100 / H200 / A100 80GB PCIe single- and eight-GPU systems, with their real
# values (the Triton, MaxQ, ARM, MIG, Ada and Jetson classes are left out). The custom systems'
# configs are in custom.py beside this file, which ConfigRegistry.load_configs imports.
import os
import sys

sys.path.insert(0, os.getcwd())

from code.common.constants import Benchmark, Scenario  # noqa: E402, F401
from code.common.systems.system_list import KnownSystem  # noqa: E402

from configs.configuration import (  # noqa: E402
    AccuracyTarget,
    ConfigRegistry,
    HarnessType,
    PowerSetting,
)
from configs.resnet50 import GPUBaseConfig  # noqa: E402


class OfflineGPUBaseConfig(GPUBaseConfig):
    scenario = Scenario.Offline

    run_infer_on_copy_streams = False
    use_graphs = False
    gpu_inference_streams = 1
    gpu_copy_streams = 2


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_SXM_80GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.H100_SXM_80GBx1
    gpu_batch_size = {"resnet50": 2048}
    offline_expected_qps = 90000
    start_from_device = True


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_SXM_80GBx8(H100_SXM_80GBx1):
    system = KnownSystem.H100_SXM_80GBx8
    offline_expected_qps = 90000 * 8


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H200_SXM_141GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.H200_SXM_141GBx1
    gpu_batch_size = {"resnet50": 2048}
    offline_expected_qps = 90000
    start_from_device = True


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H200_SXM_141GBx8(H200_SXM_141GBx1):
    system = KnownSystem.H200_SXM_141GBx8
    offline_expected_qps = 750000


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_PCIe_80GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.H100_PCIe_80GBx1
    gpu_batch_size = {"resnet50": 2048}
    offline_expected_qps = 57000


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_NVL_94GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.H100_NVL_94GBx1
    gpu_batch_size = {"resnet50": 2048}
    offline_expected_qps = 57000


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_PCIe_80GBx8(H100_PCIe_80GBx1):
    system = KnownSystem.H100_PCIe_80GBx8
    offline_expected_qps = 450000
    numa_config = "3:0-15&2:16-31&1:32-47&0:48-63&7:64-79&6:80-95&5:96-111&4:112-127"


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_NVL_94GBx8(H100_NVL_94GBx1):
    system = KnownSystem.H100_NVL_94GBx8
    offline_expected_qps = 450000
    numa_config = "3:0-15&2:16-31&1:32-47&0:48-63&7:64-79&6:80-95&5:96-111&4:112-127"


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class A100_PCIe_80GBx1(OfflineGPUBaseConfig):
    system = KnownSystem.A100_PCIe_80GBx1
    gpu_batch_size = {"resnet50": 2048}
    offline_expected_qps = 40000


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class A100_PCIe_80GBx8(A100_PCIe_80GBx1):
    system = KnownSystem.A100_PCIe_80GBx8
    offline_expected_qps = 293000.0
    numa_config = (
        "3:0-15,128-143&2:16-31,144-159&1:32-47,160-175&0:48-63,176-191&7:64-79,192-207&"
        "6:80-95,208-223&5:96-111,224-239&4:112-127,240-255"
    )
