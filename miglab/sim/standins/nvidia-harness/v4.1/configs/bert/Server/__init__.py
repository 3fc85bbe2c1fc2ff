# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/configs/bert/
# Server/__init__.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: ServerGPUBaseConfig and NVIDIA's MaxP k_99
# Custom-harness classes of the H100 / H200 single-GPU systems and the A100 80GB PCIe eight-GPU
# system (the round has no single-GPU A100 80GB PCIe or H100 NVL Server class), with their real
# values. The custom systems' configs are in custom.py beside this file.
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


class ServerGPUBaseConfig(GPUBaseConfig):
    scenario = Scenario.Server
    use_graphs = True
    gpu_copy_streams = 1
    gpu_inference_streams = 2
    use_small_tile_gemm_plugin = True


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class H200_SXM_141GBx1(ServerGPUBaseConfig):
    system = KnownSystem.H200_SXM_141GBx1
    use_small_tile_gemm_plugin = False
    use_graphs = False
    gpu_batch_size = {"bert": 128}
    gpu_copy_streams = 2
    gpu_inference_streams = 2
    server_target_qps = 7200
    server_num_issue_query_threads = 1
    workspace_size = 7516192768
    vboost_slider = 1


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_PCIe_80GBx1(ServerGPUBaseConfig):
    system = KnownSystem.H100_PCIe_80GBx1
    use_small_tile_gemm_plugin = False
    use_graphs = False
    graphs_max_seqlen = 200
    gpu_batch_size = {"bert": 256}
    server_target_qps = 4560
    server_num_issue_query_threads = 1
    workspace_size = 7516192768
    soft_drop = 0.99


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class H100_SXM_80GBx1(ServerGPUBaseConfig):
    system = KnownSystem.H100_SXM_80GBx1
    use_small_tile_gemm_plugin = False
    use_graphs = False
    gpu_batch_size = {"bert": 128}
    gpu_copy_streams = 2
    gpu_inference_streams = 2
    server_target_qps = 7000
    server_num_issue_query_threads = 1
    workspace_size = 7516192768


@ConfigRegistry.register(HarnessType.Custom, AccuracyTarget.k_99, PowerSetting.MaxP)
class A100_PCIe_80GBx8(ServerGPUBaseConfig):
    system = KnownSystem.A100_PCIe_80GBx8
    active_sms = 60
    gpu_batch_size = {"bert": 64}
    graphs_max_seqlen = 200
    server_num_issue_query_threads = 1
    server_target_qps = 23000.0
    soft_drop = 1.0
