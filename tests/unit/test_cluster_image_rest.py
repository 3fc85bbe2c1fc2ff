"""The module's REST client (LifecycleApi) and flow (ClusterImage) against the simulated vCenter's
vLCM endpoint (miglab.sim.vlcm, modelled on VMware's vSphere Automation API), hosts in memory:
import, image change, host-by-host remediation, a second run that changes nothing, check mode,
esxcli drift remediated back to the image (real-lab notes V16), a refused remediation."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from miglab.adapters.vsphere.cluster_image import ClusterImage
from miglab.adapters.vsphere.connection import ConnectionSpec, VsphereError
from miglab.adapters.vsphere.lifecycle import LifecycleApi
from miglab.core.esxi.image import DAEMON_COMPONENT, Wanted
from miglab.sim.vlcm import VlcmServer


def _server_tests():
    path = Path(__file__).with_name("test_sim_vlcm_server.py")
    spec = importlib.util.spec_from_file_location("miglab_vlcm_server_tests", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


S = _server_tests()
depot_site = S.depot_site  # the fixture: a local web server for depot zips
HOST = "esxi-01.lab.local"


@pytest.fixture
def backend():
    return S.FakeBackend()


@pytest.fixture
def api(backend, tmp_path):
    srv = VlcmServer(backend, S.USER, S.PASSWORD, tmp_path / "state")
    srv.start()
    spec = ConnectionSpec("vcenter.lab.local", S.USER, S.PASSWORD)
    client = LifecycleApi(spec, base_url=srv.url, poll_s=0.05)
    client.login()
    yield client
    client.logout()
    srv.stop()


def bundles(depot_site) -> list[str]:
    www, url = depot_site
    return [f"{url}/{S.bundle(www)}", f"{url}/{S.bundle(www, flavour='DAEMON')}"]


def ensure(api, depots, **kw):
    return ClusterImage(api, Wanted(S.DRIVER), depots=depots, **kw).ensure(HOST)


def test_first_run_imports_changes_the_image_and_remediates_only_this_host(
    api, backend, depot_site
):
    res = ensure(api, bundles(depot_site))
    assert res.changed and res.cluster == S.CLUSTER and res.image_managed
    assert len(res.imported) == 2
    assert res.diff["after"]["components"] == {
        S.AIE: S.AIE_VERSION,
        DAEMON_COMPONENT: f"{S.DRIVER}-0.0.0000",
    }
    assert res.remediated == [HOST]
    assert res.compliance["hosts"][HOST] == "COMPLIANT"
    assert res.compliance["hosts"]["esxi-02.lab.local"] == "NON_COMPLIANT"
    assert [op for op, h in backend.mutating() if h != "host-21"] == []
    assert [op for op, _ in backend.mutating()] == [
        "enter_maintenance",
        "apply_components",
        "reboot",
        "exit_maintenance",
    ]


def test_a_second_run_imports_commits_and_remediates_nothing(api, backend, depot_site):
    depots = bundles(depot_site)
    ensure(api, depots)
    commits = api.call("GET", f"/esx/settings/clusters/{S.CLUSTER}/software")
    backend.calls.clear()
    again = ensure(api, depots)
    assert not again.changed and again.actions == []
    assert backend.mutating() == []
    assert api.call("GET", f"/esx/settings/clusters/{S.CLUSTER}/software") == commits
    assert len(api.offline_depots()) == 2


def test_check_mode_reports_and_changes_nothing(api, backend, depot_site):
    res = ensure(api, bundles(depot_site), check_mode=True)
    assert res.changed and res.remediated == [HOST]
    assert api.offline_depots() == {}
    assert api.software(S.CLUSTER)["components"] == {}
    assert backend.mutating() == []


def test_the_next_host_is_remediated_without_a_new_commit(api, backend, depot_site):
    depots = bundles(depot_site)
    ensure(api, depots)
    backend.calls.clear()
    res = ClusterImage(api, Wanted(S.DRIVER), depots=depots).ensure("esxi-02.lab.local")
    assert res.image_change == [] and res.imported == []
    assert res.remediated == ["esxi-02.lab.local"]
    assert {h for _, h in backend.mutating()} == {"host-22"}


def test_esxcli_drift_is_removed_by_remediation(api, backend, depot_site):
    depots = bundles(depot_site)
    ensure(api, depots)
    # Someone installed another flavour with esxcli on host-21 (V16): drift.
    backend.installed["host-21"]["NVD-VGPU-800"] = {
        "version": S.AIE_VERSION,
        "display_name": "NVIDIA vGPU driver",
        "display_version": S.DRIVER,
        "vendor": "NVIDIA",
    }
    res = ensure(api, depots)
    assert res.remediated == [HOST]
    assert "NVD-VGPU-800" not in backend.installed["host-21"]


def test_a_host_that_cannot_enter_maintenance_mode_fails_with_vcenters_reason(
    api, backend, depot_site
):
    backend.fail[("enter_maintenance", "host-21")] = "powered-on VMs cannot be evacuated"
    with pytest.raises(VsphereError, match="powered-on VMs cannot be evacuated"):
        ensure(api, bundles(depot_site))


def test_a_cluster_without_an_image_is_refused(api):
    with pytest.raises(VsphereError, match="not managed by a vLCM image"):
        ClusterImage(api, Wanted(S.DRIVER)).ensure("esxi-31.lab.local")


def test_a_stale_draft_is_replaced(api, depot_site):
    api.call("POST", f"/esx/settings/clusters/{S.CLUSTER}/software/drafts")
    assert ensure(api, bundles(depot_site)).commit
