# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/resnet50/
# Server/__init__.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: ServerGPUBaseConfig and NVIDIA's MaxP LWIS classes
# of the H100 / H200 single- and eight-GPU systems and the A100 80GB PCIe eight-GPU system (the
# round has no single-GPU A100 80GB PCIe or H100 NVL Server class), with their real values. The
# custom systems' configs are in custom.py beside this file.
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


class ServerGPUBaseConfig(GPUBaseConfig):
    scenario = Scenario.Server
    active_sms = 100


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H200_SXM_141GBx1(ServerGPUBaseConfig):
    system = KnownSystem.H200_SXM_141GBx1
    use_deque_limit = True
    deque_timeout_usec = 3000
    gpu_batch_size = {"resnet50": 256}
    gpu_copy_streams = 2
    gpu_inference_streams = 1
    server_target_qps = 79000
    use_cuda_thread_per_device = True
    use_graphs = True
    start_from_device = True


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H200_SXM_141GBx8(H200_SXM_141GBx1):
    system = KnownSystem.H200_SXM_141GBx8
    gpu_batch_size = {"resnet50": 256}
    gpu_copy_streams = 4
    gpu_inference_streams = 7
    server_target_qps = H200_SXM_141GBx1.server_target_qps * 8


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_SXM_80GBx1(ServerGPUBaseConfig):
    system = KnownSystem.H100_SXM_80GBx1
    use_deque_limit = True
    deque_timeout_usec = 3000
    gpu_batch_size = {"resnet50": 256}
    gpu_copy_streams = 2
    gpu_inference_streams = 1
    server_target_qps = 73000
    use_cuda_thread_per_device = True
    use_graphs = True
    start_from_device = True


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_SXM_80GBx8(H100_SXM_80GBx1):
    system = KnownSystem.H100_SXM_80GBx8
    gpu_batch_size = {"resnet50": 256}
    gpu_copy_streams = 4
    gpu_inference_streams = 7
    server_target_qps = H100_SXM_80GBx1.server_target_qps * 8


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_PCIe_80GBx1(ServerGPUBaseConfig):
    system = KnownSystem.H100_PCIe_80GBx1
    use_deque_limit = True
    deque_timeout_usec = 2000
    gpu_batch_size = {"resnet50": 128}
    gpu_copy_streams = 4
    gpu_inference_streams = 2
    server_target_qps = 47000
    use_cuda_thread_per_device = True
    use_batcher_thread_per_device = True
    use_graphs = True


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_PCIe_80GBx8(H100_PCIe_80GBx1):
    system = KnownSystem.H100_PCIe_80GBx8
    server_target_qps = 46000 * 8
    numa_config = "3:0-15&2:16-31&1:32-47&0:48-63&7:64-79&6:80-95&5:96-111&4:112-127"


@ConfigRegistry.register(HarnessType.LWIS, AccuracyTarget.k_99, PowerSetting.MaxP)
class A100_PCIe_80GBx8(ServerGPUBaseConfig):
    system = KnownSystem.A100_PCIe_80GBx8
    use_deque_limit = True
    deque_timeout_usec = 2000
    gpu_batch_size = {"resnet50": 64}
    gpu_copy_streams = 9
    gpu_inference_streams = 2
    server_target_qps = 236000
    use_cuda_thread_per_device = True
    use_graphs = True
