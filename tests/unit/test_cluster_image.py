"""NVIDIA's driver through a vLCM cluster image: the decisions (miglab.core.esxi.image) and the
module's flow (miglab.adapters.vsphere.cluster_image) against a fake REST API. Shapes follow
VMware's vSphere Automation API reference (esx/settings; real-lab notes V16)."""

from __future__ import annotations

import pytest

from miglab.adapters.vsphere.cluster_image import ClusterImage
from miglab.adapters.vsphere.connection import VsphereError
from miglab.core.esxi.image import (
    DAEMON_COMPONENT,
    ImageError,
    Wanted,
    host_state,
    lifecycle_decision,
    pick_components,
    plan_image,
    remediation_problems,
)

DRV = "550.127.06"
MGR = "NVD-AIE-800"
MGR_V = f"{DRV}-1OEM.800.1.0.20613240"
DMN_V = f"{DRV}-0.0.0000"


def depot_entry(name, *versions):
    return {
        "name": name,
        "display_name": name,
        "vendor": "NVIDIA",
        "versions": [{"version": v, "display_version": v.split("-")[0]} for v in versions],
    }


DEPOT = [
    depot_entry(MGR, "535.154.02-1OEM.800.1.0.20613240", MGR_V),
    depot_entry(DAEMON_COMPONENT, DMN_V),
    {"name": "bnxtnet", "vendor": "Broadcom", "versions": [{"version": "230.0.1-1"}]},
]


def test_pick_components_finds_the_driver_and_its_daemon():
    assert pick_components(DEPOT, Wanted(DRV)) == {MGR: MGR_V, DAEMON_COMPONENT: DMN_V}
    assert pick_components(DEPOT, Wanted(DRV, daemon=False)) == {MGR: MGR_V}


def test_pick_components_names_what_the_depot_has_when_the_version_is_missing():
    with pytest.raises(ImageError) as exc:
        pick_components(DEPOT, Wanted("570.124.03"))
    assert "no NVIDIA vGPU Manager component of driver 570.124.03" in str(exc.value)
    assert "NVD-AIE-800 550.127.06" in str(exc.value)


def test_two_flavours_of_one_driver_need_a_choice_unless_the_image_has_one():
    depot = DEPOT + [depot_entry("NVD-VGPU-800", MGR_V)]
    with pytest.raises(ImageError, match="several components"):
        pick_components(depot, Wanted(DRV))
    image = {"NVD-VGPU-800": {"version": "535.154.02-1OEM.800.1.0.20613240"}}
    assert pick_components(depot, Wanted(DRV), image)["NVD-VGPU-800"] == MGR_V
    assert MGR in pick_components(depot, Wanted(DRV, component=MGR))


def test_plan_image_sets_what_differs_and_keeps_the_admins_components():
    image = {
        MGR: {"version": "535.154.02-1OEM.800.1.0.20613240"},
        "bnxtnet": {"version": "230.0.1-1"},
    }
    change = plan_image(image, {MGR: MGR_V, DAEMON_COMPONENT: DMN_V}, Wanted(DRV))
    assert change.to_set == {MGR: MGR_V, DAEMON_COMPONENT: DMN_V}
    assert change.to_delete == ()
    assert change.after["bnxtnet"] == "230.0.1-1"
    assert change.as_patch() == {
        "components_to_set": {MGR: MGR_V, DAEMON_COMPONENT: DMN_V},
        "components_to_delete": [],
    }
    assert f"{MGR} 535.154.02-1OEM.800.1.0.20613240 -> {MGR_V}" in change.describe()


def test_plan_image_removes_another_flavour_and_is_empty_when_done():
    image = {"NVD-VGPU-800": {"version": MGR_V}}
    change = plan_image(image, {MGR: MGR_V}, Wanted(DRV, daemon=False))
    assert change.to_delete == ("NVD-VGPU-800",)
    done = plan_image({MGR: {"version": MGR_V}}, {MGR: MGR_V}, Wanted(DRV, daemon=False))
    assert done.empty


def compliance(host_status, components=None, base="COMPLIANT"):
    return {
        "status": host_status,
        "impact": "REBOOT_REQUIRED" if host_status != "COMPLIANT" else "NO_IMPACT",
        "hosts": {
            "host-21": {
                "status": host_status,
                "base_image": {
                    "status": base,
                    "current": {"version": "8.0.2-0.0.22380479"},
                    "target": {"version": "8.0.3-0.0.24022510"},
                },
                "components": components or {},
            }
        },
        "host_info": {"host-21": {"name": "esxi-01"}},
        "unavailable_hosts": [],
    }


def test_host_state_splits_nvidia_components_from_other_drift():
    c = compliance(
        "NON_COMPLIANT",
        {
            MGR: {"status": "NON_COMPLIANT", "current": None, "target": {"version": MGR_V}},
            "bnxtnet": {"status": "NON_COMPLIANT", "current": {"version": "1"}, "target": None},
        },
        base="NON_COMPLIANT",
    )
    s = host_state("host-21", c, Wanted(DRV))
    assert s.name == "esxi-01" and not s.compliant
    assert s.ours == (f"{MGR}: none on the host, image wants {MGR_V}",)
    assert "base image 8.0.2-0.0.22380479 on the host, image wants 8.0.3-0.0.24022510" in s.other
    assert remediation_problems(s, allow_other_drift=False)[0].startswith(
        "esxi-01: remediation would also change base image"
    )
    assert remediation_problems(s, allow_other_drift=True) == []


def test_an_unavailable_host_is_not_remediated():
    c = compliance("COMPLIANT")
    c["hosts"] = {}
    c["unavailable_hosts"] = ["host-21"]
    s = host_state("host-21", c, Wanted(DRV))
    assert s.status == "UNAVAILABLE"
    assert "no compliance data" in remediation_problems(s, True)[0]


@pytest.mark.parametrize(
    ("mode", "managed", "override", "path", "problem"),
    [
        ("auto", True, False, "image", None),
        ("auto", False, False, "esxcli", None),
        ("image", False, False, None, "not managed by a vLCM image"),
        ("esxcli", True, False, None, "real-lab notes V16"),
        ("esxcli", True, True, "esxcli", None),
        ("esxcli", False, False, "esxcli", None),
        ("sometimes", False, False, None, "is not one of"),
    ],
)
def test_lifecycle_decision(mode, managed, override, path, problem):
    d = lifecycle_decision(mode, managed, override)
    assert d["path"] == path
    if problem:
        assert problem in d["problem"]
    else:
        assert d["problem"] is None
    assert bool(d["warning"]) == (managed and path == "esxcli")


class FakeApi:
    """The REST calls ClusterImage makes, against an in-memory vLCM: one cluster, one host."""

    def __init__(self, depot=None, image=None, managed=True, host_components=None):
        self.depot = list(DEPOT if depot is None else depot)
        self.image = dict(image or {})
        self.managed = managed
        self.host = dict(host_components or {})
        self.calls: list[str] = []
        self.remote = {"x.zip": DEPOT}

    def locate_host(self, name):
        return {"cluster": "domain-c7", "cluster_name": "cluster1", "host": "host-21"}

    def locate_cluster(self, name):
        return {"cluster": "domain-c7", "cluster_name": name}

    def image_managed(self, cluster):
        return self.managed

    def software(self, cluster):
        return {"components": {n: {"version": v} for n, v in self.image.items()}}

    def depot_components(self):
        return self.depot

    def import_depot(self, url, description, timeout=0):
        self.calls.append(f"import {url}")
        self.depot = list(self.remote[url])

    def change_image(self, cluster, patch, message):
        self.calls.append("commit")
        self.image.update(patch["components_to_set"])
        for n in patch["components_to_delete"]:
            self.image.pop(n)
        return "commit-2"

    def scan(self, cluster, timeout=0):
        self.calls.append("scan")
        comps = {}
        for n in set(self.image) | set(self.host):
            cur, tgt = self.host.get(n), self.image.get(n)
            comps[n] = {
                "status": "COMPLIANT" if cur == tgt else "NON_COMPLIANT",
                "current": {"version": cur} if cur else None,
                "target": {"version": tgt} if tgt else None,
            }
        ok = all(c["status"] == "COMPLIANT" for c in comps.values())
        return compliance("COMPLIANT" if ok else "NON_COMPLIANT", comps)

    def apply(self, cluster, hosts, timeout=0):
        self.calls.append(f"apply {hosts}")
        self.host = dict(self.image)
        return {"status": {"status": "OK"}, "failed_hosts": []}


def test_ensure_imports_changes_the_image_remediates_and_a_second_run_changes_nothing():
    api = FakeApi(depot=[])
    ci = ClusterImage(api, Wanted(DRV), depots=["x.zip"])
    res = ci.ensure("esxi-01")
    assert res.changed
    assert api.calls == ["import x.zip", "commit", "scan", "apply ['host-21']", "scan"]
    assert res.compliance["hosts"] == {"esxi-01": "COMPLIANT"}
    assert res.diff["after"]["components"] == {MGR: MGR_V, DAEMON_COMPONENT: DMN_V}
    api.calls.clear()
    again = ClusterImage(api, Wanted(DRV), depots=["x.zip"]).ensure("esxi-01")
    assert not again.changed
    assert api.calls == ["scan"]
    assert again.actions == []


def test_check_mode_reports_import_image_change_and_remediation_but_changes_nothing():
    api = FakeApi(depot=[])
    res = ClusterImage(api, Wanted(DRV), depots=["x.zip"], check_mode=True).ensure("esxi-01")
    assert res.changed
    assert res.remediated == ["esxi-01"]
    assert api.calls == ["scan"]
    assert api.image == {} and api.host == {}


def test_check_mode_with_the_depot_present_shows_the_diff():
    api = FakeApi()
    res = ClusterImage(api, Wanted(DRV), check_mode=True).ensure("esxi-01")
    assert res.diff["after"]["components"][MGR] == MGR_V
    assert "commit" not in api.calls


def test_drift_from_esxcli_is_remediated_back_to_the_image():
    # Another flavour was installed with esxcli: the host has it, the image does not (V16).
    api = FakeApi(
        image={MGR: MGR_V, DAEMON_COMPONENT: DMN_V},
        host_components={MGR: MGR_V, "NVD-VGPU-800": MGR_V},
    )
    res = ClusterImage(api, Wanted(DRV)).ensure("esxi-01")
    assert res.remediated == ["esxi-01"]
    assert api.host == api.image


def test_not_image_managed_and_missing_depot_are_clear_errors():
    with pytest.raises(VsphereError, match="not managed by a vLCM image"):
        ClusterImage(FakeApi(managed=False), Wanted(DRV)).ensure("esxi-01")
    with pytest.raises(ImageError, match="no NVIDIA vGPU Manager component"):
        ClusterImage(FakeApi(depot=[]), Wanted(DRV)).ensure("esxi-01")


def test_a_failed_remediation_names_the_host():
    api = FakeApi()
    api.apply = lambda cluster, hosts, timeout=0: {
        "failed_hosts": ["host-21"],
        "host_info": {"host-21": {"name": "esxi-01"}},
        "host_status": {
            "host-21": {
                "status": "ERROR",
                "notifications": {
                    "errors": [{"message": {"default_message": "cannot enter maintenance mode"}}]
                },
            }
        },
    }
    with pytest.raises(VsphereError, match="esxi-01: cannot enter maintenance mode"):
        ClusterImage(api, Wanted(DRV)).ensure("esxi-01")
