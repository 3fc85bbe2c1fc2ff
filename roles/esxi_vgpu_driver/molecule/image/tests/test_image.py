"""After esxi_vgpu_driver on a vLCM image-managed cluster (issue 19, real-lab notes V16): both hosts
run the driver of the cluster image, installed by vLCM's remediation (not esxcli), the older
esxcli-installed driver of esxi-b is gone, and vLCM's compliance scan says COMPLIANT."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "tests" / "molecule" / "esxi"))
from standin_checks import hostname, standin_state  # noqa: E402

testinfra_hosts = ["ansible://esxi_hosts"]

DRIVER = "550.127.06"


def lifecycle_api():
    from miglab.adapters.vsphere.connection import ConnectionSpec
    from miglab.adapters.vsphere.lifecycle import LifecycleApi

    conn = json.loads(
        (Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "vcsim" / "vcsim.json").read_text()
    )
    spec = ConnectionSpec(
        conn["hostname"], conn["username"], conn["password"], conn["port"], True, conn["ca_bundle"]
    )
    return LifecycleApi(spec, poll_s=0.2)


def test_driver_and_daemon_from_the_image_run(host):
    components = host.check_output("esxcli software component list")
    assert f"{DRIVER}-1OEM.800.1.0.20613240" in components
    assert f"{DRIVER}-0.0.0000" in components
    assert "550.90.05" not in components
    out = host.check_output("nvidia-smi --query-gpu=driver_version --format=csv,noheader")
    assert set(out.split()) == {DRIVER}
    assert host.run("/etc/init.d/nvdGpuMgmtDaemon status").rc == 0


def test_installed_by_remediation_with_one_reboot(host):
    state = standin_state(host)
    assert state["reboots"] == 1, state["log"]
    log = json.dumps(state.get("log", []))
    assert "image-apply" in log, "the driver was not installed through vLCM's remediation"


def test_the_cluster_image_holds_the_driver_and_every_host_is_compliant(host):
    with lifecycle_api() as api:
        where = api.locate_host(hostname(host))
        image = api.software(where["cluster"])["components"]
        assert image["NVD-AIE-800"]["version"].startswith(DRIVER)
        assert image["nvd-gpu-mgmt-daemon"]["version"] == f"{DRIVER}-0.0.0000"
        compliance = api.scan(where["cluster"], timeout=120)
        assert compliance["status"] == "COMPLIANT", compliance
