"""Issue 19: a vLCM image-managed vSphere 8 cluster in the simulated lab.

The simulator plays vCenter 8.0.3 with ESXi 8.0.3 hosts (lab-file keys ``vcenter_version``,
``esxi_version``) and a cluster whose ``lifecycleManaged`` is true (``cluster_image_managed``), as
pyVmomi reads them; the simulated vLCM REST server (miglab/sim/vlcm) answers on the simulator's
own HTTPS port under ``/api`` (``-rest-upstream``), verified against the simulator's CA. The lab
inventory's ``miglab_sim_cluster_image`` turns it on; the depot server serves the lab's bundles
(``url`` in bundles.json). Last, one remediation end to end: depots pulled from the depot server,
a draft committed, the apply enters maintenance mode, installs the image in an ESXi stand-in
container (``miglab-vlcm-it-*``, skipped without podman or its image), reboots it through vCenter
(the reboot link boots the stand-in) and exits maintenance mode."""

from __future__ import annotations

import base64
import functools
import importlib
import json
import os
import secrets
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from miglab.sim import daemon, vlcm_lab
from miglab.sim import vcenter as vcsim_lab
from testlib import ROOT

STANDIN = ROOT / "miglab" / "sim" / "standins" / "esxi"
STANDIN_IMAGE = os.environ.get("MIGLAB_ESXI_STANDIN_IMAGE", "localhost/miglab-esxi-standin:latest")
TASK_DEADLINE_S = 300  # a safety net only: every wait below ends on a state, not on a delay


def _host(name: str, esxi_version: str | None = "8.0.3"):
    """A lab host as lab_json reads it (miglab.core.placement.Host's fields; no GPU)."""
    return SimpleNamespace(name=name, gpus=(), cpus=16, memory_gb=64, esxi_version=esxi_version)


def _lab(*hosts) -> SimpleNamespace:
    return SimpleNamespace(hosts=tuple(hosts))


class Rest:
    """A small vSphere Automation API client: the simulator's /api over HTTPS, its CA only."""

    def __init__(self, sim) -> None:
        self.base = sim.api_url
        self.ctx = ssl.create_default_context(cafile=sim.ca_file)
        self.sid: str | None = None
        self.user, self.password = sim.username, sim.password

    def call(self, method: str, path: str, body=None, auth: str | None = None):
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
        elif self.sid:
            headers["vmware-api-session-id"] = self.sid
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=60) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            return exc.code, json.loads(raw) if raw else None

    def login(self) -> str:
        status, sid = self.call("POST", "/session", auth=f"{self.user}:{self.password}")
        assert status == 201, sid
        self.sid = sid
        return sid

    def ok(self, method: str, path: str, body=None):
        status, reply = self.call(method, path, body)
        assert 200 <= status < 300, (method, path, status, reply)
        return reply

    def task(self, path: str, body=None) -> dict:
        """Start a task operation and wait until it is SUCCEEDED or FAILED; its TaskInfo."""
        task = self.ok("POST", path, body)
        deadline = time.monotonic() + TASK_DEADLINE_S
        while True:
            info = self.ok("GET", f"/cis/tasks/{task}")
            if info["status"] in ("SUCCEEDED", "FAILED"):
                return info
            assert time.monotonic() < deadline, info
            time.sleep(0.1)


# --- the simulator: versions and lifecycleManaged ------------------------------------------------
def test_lab_json_passes_versions_and_the_cluster_image():
    lab = vcsim_lab.lab_json(_lab(_host("a"), _host("b", None)), cluster_image_managed=True)
    assert lab["vcenter_version"] == "8.0.3"  # a host runs ESXi 8
    assert lab["cluster_image_managed"] is True
    assert [h.get("esxi_version") for h in lab["hosts"]] == ["8.0.3", None]
    old = vcsim_lab.lab_json(_lab(_host("a", None)))
    assert "vcenter_version" not in old and "cluster_image_managed" not in old  # as before


def test_an_image_managed_vsphere_8_cluster_as_pyvmomi_reads_it(vcsim_factory):
    lab = vcsim_lab.lab_json(_lab(_host("esxi-8.sim.miglab.test")), cluster_image_managed=True)
    sim = vcsim_factory(lab)
    si = sim.connect()
    about = si.content.about
    assert (about.version, about.apiVersion, about.build) == ("8.0.3", "8.0.3.0", "24022515")
    assert about.fullName == "VMware vCenter Server 8.0.3 build-24022515"
    from pyVmomi import vim

    view = si.content.viewManager.CreateContainerView(
        si.content.rootFolder, [vim.ClusterComputeResource], True
    )
    (cluster,) = view.view
    assert cluster.lifecycleManaged is True
    (host,) = cluster.host
    product = host.config.product
    assert (product.version, product.build, product.apiVersion) == ("8.0.3", "24022510", "8.0.3.0")
    assert product.fullName == "VMware ESXi 8.0.3 build-24022510"
    assert host.summary.config.product.version == "8.0.3"


def test_a_baseline_cluster_stays_vcenter_7_and_not_lifecycle_managed(vcsim_factory):
    sim = vcsim_factory(vcsim_lab.lab_json(_lab(_host("esxi-7.sim.miglab.test", None))))
    si = sim.connect()
    assert si.content.about.version == "7.0.3"
    from pyVmomi import vim

    view = si.content.viewManager.CreateContainerView(
        si.content.rootFolder, [vim.ClusterComputeResource], True
    )
    assert view.view[0].lifecycleManaged is False
    assert view.view[0].host[0].config.product.version == "7.0.3"
    assert sim.api_url is None and sim.vlcm_lab is None  # no REST server


def test_a_host_newer_than_its_vcenter_is_refused(vcsim_binary):
    lab = vcsim_lab.lab_json(_lab(_host("esxi-8.sim.miglab.test")), vcenter_version="7.0.3")
    with pytest.raises(RuntimeError, match="newer than vcenter_version"):
        vcsim_lab.Vcsim(lab, binary=vcsim_binary).start()
    lab = vcsim_lab.lab_json(_lab(_host("esxi-9.sim.miglab.test", "9.0.0")))
    with pytest.raises(RuntimeError, match="not a known release"):
        vcsim_lab.Vcsim(lab, binary=vcsim_binary).start()


# --- the REST API through the simulator's HTTPS port ---------------------------------------------
def test_rest_through_the_simulators_https_port(vcsim_factory):
    lab = vcsim_lab.lab_json(_lab(_host("esxi-8.sim.miglab.test")), cluster_image_managed=True)
    sim = vcsim_factory(lab)
    assert sim.api_url == f"https://127.0.0.1:{sim.port}/api"
    rest = Rest(sim)
    status, reply = rest.call("POST", "/session", auth=f"{sim.username}:wrong")
    assert status == 401 and reply["error_type"] == "UNAUTHENTICATED"
    rest.login()
    (cluster,) = rest.ok("GET", "/vcenter/cluster?names=cluster1")
    si = sim.connect()
    from pyVmomi import vim

    view = si.content.viewManager.CreateContainerView(
        si.content.rootFolder, [vim.ClusterComputeResource], True
    )
    moid = view.view[0]._moId
    assert cluster == {
        "cluster": moid,
        "name": "cluster1",
        "ha_enabled": False,
        "drs_enabled": False,
    }
    (host,) = rest.ok("GET", f"/vcenter/host?clusters={moid}")
    assert host == {
        "host": view.view[0].host[0]._moId,
        "name": "esxi-8.sim.miglab.test",
        "connection_state": "CONNECTED",
        "power_state": "POWERED_ON",
    }
    assert rest.ok("GET", f"/esx/settings/clusters/{moid}/enablement/software") == {"enabled": True}
    # the plain-HTTP REST server itself is on the loopback only; the client used vcsim's port
    assert sim.rest_url.startswith("http://127.0.0.1:") and str(sim.port) not in sim.rest_url


def test_the_inventory_setting_and_the_depot_server(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  children:\n    esxi_hosts:\n      hosts:\n        esxi-01.sim.miglab.test: {}\n"
        "      vars:\n        miglab_sim_cluster_image: true\n"
    )
    assert vcsim_lab.sim_settings(inv) == {"cluster_image": True}
    inv.write_text(inv.read_text().replace("true", "false"))
    assert vcsim_lab.sim_settings(inv) == {"cluster_image": False}

    bundles = tmp_path / "bundles"
    bundles.mkdir()
    (bundles / "NVD-AIE-800_x.zip").write_bytes(b"zip bytes")
    listing = tmp_path / "bundles.json"
    listing.write_text(
        json.dumps(
            {
                "host_driver": {"file": "NVD-AIE-800_x.zip", "version": "x"},
                "gone": {"file": "not-there.zip"},
            }
        )
    )
    depots = vlcm_lab.DepotServer(bundles)
    depots.start()
    try:
        out = vlcm_lab.record_bundle_urls(listing, depots)
        url = out["host_driver"]["url"]
        assert url == f"http://127.0.0.1:{depots.port}/NVD-AIE-800_x.zip"
        assert "url" not in out["gone"]
        assert json.loads(listing.read_text()) == out
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert resp.read() == b"zip bytes"
    finally:
        depots.stop()


# --- one remediation end to end, against an ESXi stand-in container -------------------------------
def _podman_ready() -> str | None:
    if os.geteuid() != 0 or not shutil.which("podman"):
        return "needs root and podman"
    res = subprocess.run(["podman", "image", "exists", STANDIN_IMAGE], check=False)
    if res.returncode != 0:
        return f"no {STANDIN_IMAGE} (bash miglab/sim/standins/esxi/build-image.sh)"
    return None


def _make_bundles(folder: Path, driver: str) -> dict[str, Path]:
    sys.path.insert(0, str(STANDIN))
    try:
        make = importlib.import_module("make-bundle")
    finally:
        sys.path.pop(0)
    return {
        flavour: make.write(driver, "8.0.0", folder, flavour=flavour)[0]
        for flavour in ("AIE", "DAEMON")
    }


@pytest.fixture
def standin_container(tmp_path):
    """An ESXi 8.0.3 stand-in container named miglab-vlcm-it-<random> (this checkout's
    esxi_standin.py mounted over the image's), removed afterwards."""
    why = _podman_ready()
    if why:
        pytest.skip(why)
    env = dict(os.environ)
    conf = subprocess.run(
        ["bash", str(ROOT / "miglab" / "sim" / "build-images.sh"), "--env"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    for line in conf.stdout.splitlines():  # podman's containers.conf (runc) as the lab uses it
        if line.startswith("export CONTAINERS_CONF=") and Path(line.split("=", 1)[1]).is_file():
            env["CONTAINERS_CONF"] = line.split("=", 1)[1]
    name = f"miglab-vlcm-it-{secrets.token_hex(4)}"
    run = subprocess.run(
        ["podman", "run", "-d", "--name", name, "--hostname", name,
         "-v", f"{STANDIN / 'esxi_standin.py'}:/opt/esxi-standin/esxi_standin.py:ro",
         STANDIN_IMAGE],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    if run.returncode != 0:
        subprocess.run(["podman", "rm", "-f", name], capture_output=True, check=False, env=env)
        pytest.skip(f"cannot start a stand-in container: {run.stderr.strip()[-500:]}")
    try:
        init = subprocess.run(
            ["podman", "exec", name, "esxi-standin", "init", "gpus=A100-PCIE-80GB:1",
             "esxi=8.0.3", "acceptance=PartnerSupported"],
            capture_output=True, text=True, check=False, env=env,
        )  # fmt: skip
        assert init.returncode == 0, init.stderr
        yield name
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "2", name], capture_output=True, check=False)


def _components(name: str) -> dict:
    res = subprocess.run(
        ["podman", "exec", name, "esxi-standin", "components"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(res.stdout)


def test_one_apply_end_to_end(standin_container, tmp_path, vcsim_factory):
    name = standin_container
    boots = tmp_path / "boots"
    boots.mkdir()
    bundles = _make_bundles(tmp_path / "bundles", "550.127.06")
    lab = vcsim_lab.lab_json(
        _lab(_host(name)),
        cluster_image_managed=True,
        host_extra={"*": {"boot_ack_dir": str(boots), "reboot_seconds": 0.2}},
    )
    # the reboot link (miglab.sim.daemon's keeper in the lab) run by the backend: no keeper here
    backend = vlcm_lab.LabBackend(boot_link=functools.partial(daemon.boot_the_standin, boots))
    sim = vcsim_factory(lab, vlcm_backend=backend, depot_dir=tmp_path / "bundles")
    rest = Rest(sim)
    rest.login()
    (cluster,) = rest.ok("GET", "/vcenter/cluster?names=cluster1")
    cid = cluster["cluster"]
    base = f"/esx/settings/clusters/{cid}/software"
    software = rest.ok("GET", base)
    assert software["base_image"]["version"] == "8.0.3-0.0.24022510"  # the host's, read in it
    assert software["components"] == {}

    # vCenter pulls the bundles from the lab's web server
    for path in bundles.values():
        info = rest.task(
            "/esx/settings/depots/offline?vmw-task=true",
            {"source_type": "PULL", "location": sim.depot_url + path.name, "description": "it"},
        )
        assert info["status"] == "SUCCEEDED", info
    content = {c["name"]: c for c in rest.ok("GET", "/esx/settings/depot-content/components")}
    assert set(content) == {"NVD-AIE-800", "nvd-gpu-mgmt-daemon"}

    # the desired image: both NVIDIA components
    draft = rest.ok("POST", f"{base}/drafts")
    want = {
        "NVD-AIE-800": "550.127.06-1OEM.800.1.0.20613240",
        "nvd-gpu-mgmt-daemon": "550.127.06-0.0.0000",
    }
    rest.ok(
        "PATCH",
        f"{base}/drafts/{draft}/software/components",
        {"components_to_set": want, "components_to_delete": []},
    )
    info = rest.task(f"{base}/drafts/{draft}?action=commit&vmw-task=true", {"message": "it"})
    assert info["status"] == "SUCCEEDED", info

    info = rest.task(f"{base}?action=scan&vmw-task=true")
    assert info["status"] == "SUCCEEDED", info
    assert info["result"]["status"] == "NON_COMPLIANT"
    assert info["result"]["impact"] == "REBOOT_REQUIRED"

    si = sim.connect()
    from pyVmomi import vim

    view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.HostSystem], True)
    (host,) = view.view
    booted = host.runtime.bootTime
    info = rest.task(f"{base}?action=apply&vmw-task=true", {"accept_eula": True})
    assert info["status"] == "SUCCEEDED", info
    result = info["result"]
    assert result["status"]["status"] == "OK", result
    assert result["successful_hosts"] == [host._moId]

    # the stand-in holds exactly the image, booted with it; vCenter rebooted the host and it left
    # maintenance mode
    comps = _components(name)
    assert {k: v["version"] for k, v in comps["components"].items()} == want
    assert comps["driver_running"] == "550.127.06" and comps["reboot_required"] is False
    assert host.runtime.bootTime > booted
    assert host.runtime.inMaintenanceMode is False
    assert str(host.runtime.connectionState) == "connected"
    info = rest.task(f"{base}?action=scan&vmw-task=true")
    assert info["result"]["status"] == "COMPLIANT", info["result"]

    # drift (a component removed behind vLCM's back) is found and remediated again
    res = subprocess.run(
        ["podman", "exec", name, "esxi-standin", "image-apply",
         "/does/not/matter"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 1  # a missing zip changes nothing
    subprocess.run(
        ["podman", "exec", name, "esxi-standin", "image-apply"], capture_output=True, check=True
    )
    assert _components(name)["components"] == {}
    info = rest.task(f"{base}?action=scan&vmw-task=true")
    assert info["result"]["status"] == "NON_COMPLIANT"
    info = rest.task(f"{base}?action=apply&vmw-task=true", {"accept_eula": True})
    assert info["status"] == "SUCCEEDED", info
    assert {k: v["version"] for k, v in _components(name)["components"].items()} == want


def test_the_simulators_process_serves_vlcm_for_an_image_managed_inventory(vcsim_binary, tmp_path):
    """miglab.sim.daemon (the simulated lab's and molecule's simulator process) with the inventory's
    miglab_sim_cluster_image: the REST server behind the simulator, the bundles folder served,
    vlcm.json and the bundles' URLs in bundles.json."""
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  children:\n    esxi_hosts:\n      hosts:\n"
        "        miglab-vlcm-it-daemon.sim.miglab.test:\n"
        "          miglab_host_gpus: [{model: A100-PCIE-80GB, count: 1}]\n"
        "          miglab_host_cpus: 16\n          miglab_host_memory_gb: 64\n"
        "      vars:\n        miglab_sim_cluster_image: true\n"
    )
    out = tmp_path / "sim"
    (out / "bundles").mkdir(parents=True)
    (out / "bundles" / "b.zip").write_bytes(b"bundle")
    (out / "bundles.json").write_text(json.dumps({"host_driver": {"file": "b.zip"}}))

    def run_daemon(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "miglab.sim.daemon", *args],
            cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip

    res = run_daemon("start", "--inventory", str(inv), "--out", str(out), "--max-life", "120")
    try:
        assert res.returncode == 0, res.stdout + res.stderr
        conn = json.loads((out / "vcsim.json").read_text())
        info = json.loads((out / "vlcm.json").read_text())
        assert info["api_url"] == f"https://127.0.0.1:{conn['port']}/api"
        assert info["cluster"] == "cluster1"
        assert info["depot_dir"] == str((out / "bundles").absolute())
        url = json.loads((out / "bundles.json").read_text())["host_driver"]["url"]
        assert url == info["depot_url"] + "b.zip"
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert resp.read() == b"bundle"
        sim = SimpleNamespace(
            api_url=info["api_url"],
            ca_file=conn["ca_bundle"],
            username=conn["username"],
            password=conn["password"],
        )
        rest = Rest(sim)
        rest.login()
        (cluster,) = rest.ok("GET", "/vcenter/cluster")
        enabled = rest.ok("GET", f"/esx/settings/clusters/{cluster['cluster']}/enablement/software")
        assert enabled == {"enabled": True}
    finally:
        run_daemon("stop", "--out", str(out))
    assert not (out / "vlcm.json").exists() and not (out / "vcsim.json").exists()
