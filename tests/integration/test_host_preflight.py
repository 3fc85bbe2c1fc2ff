"""Pre-flight of the hosts phase: a GPU left in passthrough (DirectPath I/O) mode is named with
how to release it, before anything changes (real-lab notes V11: a passthrough GPU is invisible to
the host driver and nvidia-smi and holds no vGPU; vSphere PciPassthruInfo)."""

from __future__ import annotations

import pytest

from testlib import collection_module, run_module, vcenter_args

pytestmark = pytest.mark.integration


def test_a_gpu_in_passthrough_mode_is_named(vcsim_factory, tmp_path):
    import json

    from pyVmomi import vim

    from miglab.sim import vcenter as vcsim_lab

    lab = vcsim_lab.default_lab()
    lab["hosts"][0]["host_state_dir"] = str(tmp_path)
    sim = vcsim_factory(lab)
    si = sim.connect()
    view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.HostSystem], True)
    host = view.view[0]
    host.configManager.pciPassthruSystem.UpdatePassthruConfig(
        [vim.host.PciPassthruConfig(id="0000:5e:00.0", passthruEnabled=True, applyNow=True)]
    )
    # what the host's driver sees (the ESXi stand-in's nvidia-smi leaves such GPUs out)
    seen = json.loads((tmp_path / f"{host.name}.json").read_text())
    assert {g["pci_id"]: g["passthrough"] for g in seen["gpus"]}["0000:5e:00.0"] is True
    assert {g["pci_id"]: g["passthrough"] for g in seen["gpus"]}["0000:3b:00.0"] is False
    conn = vcenter_args(sim)
    info = run_module("esxi_gpu_info", {**conn, "esxi_hostname": [host.name]})["hosts"][host.name]
    by_id = {g["pci_id"]: g for g in info["gpus"]}
    assert by_id["0000:5e:00.0"]["passthrough_active"] is True
    assert by_id["0000:3b:00.0"]["passthrough_active"] is False
    filters = collection_module("plugins.filter.esxi").FilterModule().filters()
    (problem,) = filters["esxi_passthrough_problems"](info)
    assert problem.startswith(f"{host.name}: GPU 0000:5e:00.0 (NVIDIA A100 80GB PCIe) is in "
                              "passthrough (DirectPath I/O) mode")  # fmt: skip
    assert "Toggle passthrough" in problem and "reboot the host" in problem
