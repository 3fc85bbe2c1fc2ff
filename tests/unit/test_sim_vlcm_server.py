"""The simulated vCenter's vLCM REST endpoint (miglab/sim/vlcm, issue 19) against a fake host
backend: sessions, inventory, offline depots pulled over HTTP (stand-in bundles from
make-bundle.py), drafts and commits, scan (drift included), the rolling apply and its idempotence,
a host failure stopping the rollout, and state that survives a restart. Tasks are polled with a
deadline; nothing here depends on timing."""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import threading
import time
import urllib.error
import urllib.request
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from miglab.sim.vlcm import HostBackend, HostOpError, VlcmServer
from testlib import ROOT

USER, PASSWORD = "administrator@vsphere.local", "s3cret!"
CLUSTER, LEGACY = "domain-c7", "domain-c9"
HOSTS = ["host-21", "host-22", "host-23"]
BASE = {
    "version": "8.0.3-0.0.24022510",
    "display_name": "ESXi",
    "display_version": "8.0 U3",
    "release_date": "2024-06-25T00:00:00.000Z",
}
DRIVER = "535.154.02"
AIE = "NVD-AIE-800"
AIE_VERSION = f"{DRIVER}-1OEM.800.1.0.20613240"
DAEMON = "nvd-gpu-mgmt-daemon"
DEADLINE_S = 30
MUTATING = ("enter_maintenance", "apply_components", "reboot", "exit_maintenance")


# -- the fake lab -------------------------------------------------------------------------------


class FakeBackend:
    """Hosts in memory. ``calls``: (operation, host) in order; ``fail[(op, host)]``: raise
    HostOpError; ``gates[(op, host)]``: (entered, release) events that hold the operation;
    ``max_in_maintenance``: the most hosts in maintenance mode at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.cluster_list = [
            {
                "cluster": CLUSTER,
                "name": "cluster1",
                "image_managed": True,
                "drs_enabled": True,
                "ha_enabled": False,
            },
            {
                "cluster": LEGACY,
                "name": "legacy",
                "image_managed": False,
                "drs_enabled": False,
                "ha_enabled": False,
            },
        ]
        self.host_list = {
            CLUSTER: [self._host(h, f"esxi-0{i + 1}.lab.local") for i, h in enumerate(HOSTS)],
            LEGACY: [self._host("host-31", "esxi-31.lab.local")],
        }
        every = [h["host"] for hs in self.host_list.values() for h in hs]
        self.base = {h: dict(BASE) for h in every}
        self.installed: dict[str, dict[str, dict]] = {h: {} for h in every}
        self.maintenance: set[str] = set()
        self.max_in_maintenance = 0
        self.calls: list[tuple[str, str]] = []
        self.applied: dict[str, dict[str, str]] = {}
        self.fail: dict[tuple[str, str], str] = {}
        self.gates: dict[tuple[str, str], tuple[threading.Event, threading.Event]] = {}
        self.broken: Exception | None = None

    @staticmethod
    def _host(hid: str, name: str) -> dict:
        return {
            "host": hid,
            "name": name,
            "connection_state": "CONNECTED",
            "power_state": "POWERED_ON",
        }

    def _op(self, op: str, host: str) -> None:
        with self.lock:
            self.calls.append((op, host))
        gate = self.gates.get((op, host))
        if gate:
            gate[0].set()
            assert gate[1].wait(DEADLINE_S)
        if (op, host) in self.fail:
            raise HostOpError(self.fail[(op, host)])

    def mutating(self) -> list[tuple[str, str]]:
        with self.lock:
            return [c for c in self.calls if c[0] in MUTATING]

    def clusters(self) -> list[dict]:
        if self.broken:
            raise self.broken
        return [dict(c) for c in self.cluster_list]

    def hosts(self, cluster: str) -> list[dict]:
        return [dict(h) for h in self.host_list.get(cluster, [])]

    def base_image(self, host: str) -> dict:
        return dict(self.base[host])

    def installed_components(self, host: str) -> dict[str, dict]:
        with self.lock:
            return json.loads(json.dumps(self.installed[host]))

    def enter_maintenance(self, host: str) -> None:
        self._op("enter_maintenance", host)
        with self.lock:
            self.maintenance.add(host)
            self.max_in_maintenance = max(self.max_in_maintenance, len(self.maintenance))

    def apply_components(self, host: str, components: dict[str, str]) -> None:
        self._op("apply_components", host)
        assert host in self.maintenance
        new = {}
        for name, path in components.items():
            with zipfile.ZipFile(path) as z:
                c = json.loads(z.read("standin-depot.json"))["component"]
            assert c["name"] == name
            new[name] = {k: c[k] for k in ("version", "display_name", "display_version", "vendor")}
        with self.lock:
            self.applied[host] = dict(components)
            self.installed[host] = new

    def reboot(self, host: str) -> None:
        self._op("reboot", host)

    def exit_maintenance(self, host: str) -> None:
        self._op("exit_maintenance", host)
        with self.lock:
            self.maintenance.discard(host)


# -- a small client -----------------------------------------------------------------------------


class Client:
    def __init__(self, url: str):
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self.token: str | None = None

    def call(self, method: str, path: str, body=None, *, raw: bytes | None = None, headers=None):
        """(status, parsed JSON or None)."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("vmware-api-session-id", self.token)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with self.opener.open(req, timeout=DEADLINE_S) as resp:
                status, text = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read()
        return status, (json.loads(text) if text else None)

    def login(self, user=USER, password=PASSWORD):
        basic = base64.b64encode(f"{user}:{password}".encode()).decode()
        status, token = self.call(
            "POST", "/api/session", headers={"Authorization": "Basic " + basic}
        )
        if status == 201:
            self.token = token
        return status, token

    def ok(self, method: str, path: str, body=None, expect=200):
        status, reply = self.call(method, path, body)
        assert status == expect, (status, reply)
        return reply

    def wait(self, task: str) -> dict:
        """Poll the task until it ends (deadline DEADLINE_S)."""
        end = time.monotonic() + DEADLINE_S
        while time.monotonic() < end:
            info = self.ok("GET", f"/api/cis/tasks/{task}")
            if info["status"] in ("SUCCEEDED", "FAILED"):
                return info
            time.sleep(0.02)
        raise AssertionError(f"task {task} still {info['status']} after {DEADLINE_S} s")

    def task(self, method: str, path: str, body=None) -> dict:
        return self.wait(self.ok(method, path, body, expect=202))


def software(path: str = "") -> str:
    return f"/api/esx/settings/clusters/{CLUSTER}/software{path}"


# -- fixtures -----------------------------------------------------------------------------------


@functools.cache
def make_bundle():
    path = ROOT / "miglab" / "sim" / "standins" / "esxi" / "make-bundle.py"
    spec = importlib.util.spec_from_file_location("miglab_make_bundle", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002
        pass


@pytest.fixture
def depot_site(tmp_path):
    """(folder, base URL): a local web server for depot zips."""
    www = tmp_path / "www"
    www.mkdir()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def bundle(www: Path, driver=DRIVER, flavour="AIE") -> str:
    path, _ = make_bundle().write(driver, "8.0.0", www, flavour=flavour, payload_bytes=4096)
    return path.name


@pytest.fixture
def backend():
    return FakeBackend()


@pytest.fixture
def state_dir(tmp_path):
    return tmp_path / "state"


@pytest.fixture
def server(backend, state_dir):
    srv = VlcmServer(backend, USER, PASSWORD, state_dir)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server):
    c = Client(server.url)
    assert c.login()[0] == 201
    return c


def import_depot(client: Client, url: str) -> str:
    info = client.task(
        "POST",
        "/api/esx/settings/depots/offline?vmw-task=true",
        {"source_type": "PULL", "location": url, "description": "NVIDIA"},
    )
    assert info["status"] == "SUCCEEDED", info
    return info["result"]["depot"]


def commit(client: Client, to_set: dict, to_delete=()) -> dict:
    draft = client.ok("POST", software("/drafts"), expect=201)
    client.ok(
        "PATCH",
        software(f"/drafts/{draft}/software/components"),
        {"components_to_set": to_set, "components_to_delete": list(to_delete)},
        expect=204,
    )
    return client.task(
        "POST", software(f"/drafts/{draft}?action=commit&vmw-task=true"), {"message": "driver"}
    )


def image_with_driver(client: Client, depot_site) -> None:
    www, url = depot_site
    import_depot(client, f"{url}/{bundle(www)}")
    assert commit(client, {AIE: AIE_VERSION})["status"] == "SUCCEEDED"


# -- tests --------------------------------------------------------------------------------------


def test_the_fake_is_a_host_backend(backend):
    assert isinstance(backend, HostBackend)


def test_every_call_but_login_needs_a_session(server):
    c = Client(server.url)
    status, err = c.call("GET", "/api/vcenter/cluster")
    assert status == 401 and err["error_type"] == "UNAUTHENTICATED"
    assert c.login(password="wrong")[0] == 401
    assert c.login(user="root")[0] == 401
    assert c.call("POST", "/api/session", headers={"Authorization": "Basic %%%"})[0] == 401
    status, token = c.login()
    assert status == 201 and isinstance(token, str) and token
    assert c.ok("GET", "/api/session")["user"] == USER
    c.ok("DELETE", "/api/session", expect=204)
    assert c.call("GET", "/api/vcenter/cluster")[0] == 401


def test_inventory_and_enablement(client):
    assert client.ok("GET", "/api/vcenter/cluster?names=cluster1") == [
        {"cluster": CLUSTER, "name": "cluster1", "ha_enabled": False, "drs_enabled": True}
    ]
    assert client.ok("GET", "/api/vcenter/cluster?names=nope") == []
    hosts = client.ok("GET", f"/api/vcenter/host?clusters={CLUSTER}")
    assert [h["host"] for h in hosts] == HOSTS
    assert hosts[0] == {
        "host": "host-21",
        "name": "esxi-01.lab.local",
        "connection_state": "CONNECTED",
        "power_state": "POWERED_ON",
    }
    path = "/api/esx/settings/clusters/{}/enablement/software"
    assert client.ok("GET", path.format(CLUSTER)) == {"enabled": True}
    assert client.ok("GET", path.format(LEGACY)) == {"enabled": False}


def test_a_cluster_not_managed_by_an_image_has_no_software(client):
    for method, path in (
        ("GET", "/software"),
        ("GET", "/software/components"),
        ("POST", "/software/drafts"),
        ("POST", "/software?action=scan&vmw-task=true"),
        ("GET", "/software/compliance"),
    ):
        status, err = client.call(method, f"/api/esx/settings/clusters/{LEGACY}{path}")
        assert status == 404 and err["error_type"] == "NOT_FOUND", (path, err)
        assert "not managed by a single image" in err["messages"][0]["default_message"]
    status, err = client.call("GET", "/api/esx/settings/clusters/domain-c404/software")
    assert status == 404 and err["error_type"] == "NOT_FOUND"


def test_the_initial_image_is_the_hosts_base_image_without_components(client):
    info = client.ok("GET", software())
    assert info["base_image"]["version"] == BASE["version"]
    assert info["base_image"]["details"]["display_version"] == "8.0 U3"
    assert info["components"] == {} and info["add_on"] is None
    status, err = client.call("GET", software("/compliance"))
    assert status == 404 and err["error_type"] == "NOT_FOUND"


def test_bad_requests_get_vapi_errors(client):
    status, err = client.call(
        "POST", "/api/esx/settings/depots/offline?vmw-task=true", raw=b"{not json"
    )
    assert status == 400 and err["error_type"] == "INVALID_ARGUMENT"
    status, err = client.call(
        "POST",
        "/api/esx/settings/depots/offline?vmw-task=true",
        {"source_type": "PULL", "location": "http://x/y.zip", "colour": "red"},
    )
    assert status == 400 and "'colour'" in err["messages"][0]["default_message"]
    status, err = client.call(
        "POST", "/api/esx/settings/depots/offline", {"source_type": "PULL", "location": "x"}
    )
    assert status == 400 and "vmw-task" in err["messages"][0]["default_message"]
    draft = client.ok("POST", software("/drafts"), expect=201)
    status, err = client.call(
        "PATCH", software(f"/drafts/{draft}/software/components"), {"components_to_add": {}}
    )
    assert status == 400 and "'components_to_add'" in err["messages"][0]["default_message"]
    for path in (
        software("/drafts/999"),
        "/api/cis/tasks/no-such-task",
        "/api/esx/settings/depots/offline/depot-9",
        "/api/no/such/thing",
    ):
        status, err = client.call("GET", path)
        assert status == 404 and err["error_type"] == "NOT_FOUND", path


def test_an_internal_error_is_a_short_500_without_traceback(client, backend, capsys):
    backend.broken = RuntimeError("backend bug")
    status, err = client.call("GET", "/api/vcenter/cluster")
    assert status == 500 and err["error_type"] == "ERROR"
    assert "Traceback" not in json.dumps(err) and "backend bug" not in json.dumps(err)
    assert "Traceback" in capsys.readouterr().err
    # A HostOpError is what vCenter would say: its message is the reply's, also in a task.
    backend.broken = HostOpError("cannot connect to vCenter: refused")
    status, err = client.call("GET", "/api/vcenter/cluster")
    assert status == 500 and err["messages"][0]["default_message"] == str(backend.broken)
    assert "Traceback" not in capsys.readouterr().err


def test_an_imported_depot_lists_its_component(client, depot_site):
    www, url = depot_site
    location = f"{url}/{bundle(www)}"
    depot = import_depot(client, location)
    assert client.ok("GET", "/api/esx/settings/depots/offline") == {
        depot: {"description": "NVIDIA", "source_type": "PULL", "location": location}
    }
    content = client.ok("GET", "/api/esx/settings/depot-content/components")
    assert [c["name"] for c in content] == [AIE]
    assert content[0]["vendor"] == "NVIDIA"
    assert content[0]["display_name"] == "NVIDIA AI Enterprise vGPU driver for VMWare ESX-8.0.0"
    (version,) = content[0]["versions"]
    assert version["version"] == AIE_VERSION and version["display_version"] == DRIVER
    assert version["release_date"].startswith("2023-11-03")
    # A second bundle (the daemon) adds a component; a filter by name finds one.
    import_depot(client, f"{url}/{bundle(www, flavour='DAEMON')}")
    names = [c["name"] for c in client.ok("GET", "/api/esx/settings/depot-content/components")]
    assert names == sorted([AIE, DAEMON])
    only = client.ok("GET", f"/api/esx/settings/depot-content/components?names={DAEMON}")
    assert [c["name"] for c in only] == [DAEMON]


def test_a_depot_that_cannot_be_read_fails_its_task(client, depot_site):
    www, url = depot_site
    with zipfile.ZipFile(www / "vmware-style.zip", "w") as z:
        z.writestr("metadata.zip", b"")
    (www / "plain.zip").write_bytes(b"not a zip")
    for location, words in (
        (f"{url}/missing.zip", "HTTP 404"),
        (f"{url}/vmware-style.zip", "standin-depot.json"),
        (f"{url}/plain.zip", "not a zip file"),
        ("ftp://example.invalid/x.zip", "only http and https"),
    ):
        info = client.task(
            "POST",
            "/api/esx/settings/depots/offline?vmw-task=true",
            {"source_type": "PULL", "location": location},
        )
        assert info["status"] == "FAILED", info
        text = info["error"]["messages"][0]["default_message"]
        assert words in text and location in text, text
    assert client.ok("GET", "/api/esx/settings/depots/offline") == {}


def test_a_committed_draft_becomes_the_image(client, depot_site):
    www, url = depot_site
    import_depot(client, f"{url}/{bundle(www)}")
    draft = client.ok("POST", software("/drafts"), expect=201)
    assert client.ok("GET", software("/drafts"))[draft]["metadata"]["owner"] == USER
    client.ok(
        "PATCH",
        software(f"/drafts/{draft}/software/components"),
        {"components_to_set": {AIE: AIE_VERSION}},
        expect=204,
    )
    listed = client.ok("GET", software(f"/drafts/{draft}/software/components"))
    assert listed[AIE]["version"] == AIE_VERSION
    info = client.ok("GET", software(f"/drafts/{draft}"))
    assert info["metadata"]["status"] == "VALID"
    assert info["software"]["components"][AIE]["details"]["vendor"] == "NVIDIA"
    task = client.task("POST", software(f"/drafts/{draft}?action=commit&vmw-task=true"), {})
    assert task["status"] == "SUCCEEDED", task
    assert task["result"] == "2"  # commit 1 is the initial image
    image = client.ok("GET", software())
    assert image["components"][AIE]["version"] == AIE_VERSION
    assert image["components"][AIE]["details"]["display_version"] == DRIVER
    assert client.ok("GET", software("/components")) == image["components"]
    # A committed draft is gone (VMware: "deleted, when the draft is committed successfully").
    assert client.call("GET", software(f"/drafts/{draft}"))[0] == 404


def test_one_draft_per_user_and_cluster(client):
    draft = client.ok("POST", software("/drafts"), expect=201)
    status, err = client.call("POST", software("/drafts"))
    assert status == 400 and err["error_type"] == "ALREADY_EXISTS"
    client.ok("DELETE", software(f"/drafts/{draft}"), expect=204)
    client.ok("POST", software("/drafts"), expect=201)


def test_committing_a_version_no_depot_holds_fails(client, depot_site):
    www, url = depot_site
    import_depot(client, f"{url}/{bundle(www)}")
    task = commit(client, {AIE: "999.99.99-1OEM.800.1.0.20613240"})
    assert task["status"] == "FAILED"
    text = task["error"]["messages"][0]["default_message"]
    assert AIE in text and "999.99.99" in text
    assert client.ok("GET", software())["components"] == {}


def test_scan_apply_rolls_one_host_at_a_time_and_a_second_apply_skips(client, backend, depot_site):
    image_with_driver(client, depot_site)
    scan = client.task("POST", software("?action=scan&vmw-task=true"))
    assert scan["status"] == "SUCCEEDED"
    result = scan["result"]
    assert result["status"] == "NON_COMPLIANT" and result["impact"] == "REBOOT_REQUIRED"
    assert result["non_compliant_hosts"] == HOSTS and result["commit"] == "2"
    comp = result["hosts"]["host-21"]["components"][AIE]
    assert comp["status"] == "NON_COMPLIANT" and comp["current"] is None
    assert comp["target"]["version"] == AIE_VERSION
    assert client.ok("GET", software("/compliance")) == result

    apply = client.task("POST", software("?action=apply&vmw-task=true"), {"accept_eula": True})
    assert apply["status"] == "SUCCEEDED", apply
    assert apply["progress"]["total"] == 3 and apply["progress"]["completed"] == 3
    assert apply["result"]["successful_hosts"] == HOSTS
    assert apply["result"]["status"]["status"] == "OK"
    assert {h: s["status"] for h, s in apply["result"]["host_status"].items()} == dict.fromkeys(
        HOSTS, "OK"
    )
    assert backend.mutating() == [(op, h) for h in HOSTS for op in MUTATING]
    assert backend.max_in_maintenance == 1 and not backend.maintenance
    zip_path = backend.applied["host-22"][AIE]
    assert Path(zip_path).is_file() and Path(zip_path).name.startswith(AIE)
    assert all(backend.installed[h][AIE]["version"] == AIE_VERSION for h in HOSTS)

    rescan = client.task("POST", software("?action=scan&vmw-task=true"))["result"]
    assert rescan["status"] == "COMPLIANT" and rescan["impact"] == "NO_IMPACT"
    assert rescan["compliant_hosts"] == HOSTS

    before = len(backend.mutating())
    again = client.task("POST", software("?action=apply&vmw-task=true"), {"accept_eula": True})
    assert again["status"] == "SUCCEEDED"
    assert again["result"]["skipped_hosts"] == HOSTS
    assert {s["status"] for s in again["result"]["host_status"].values()} == {"SKIPPED"}
    assert len(backend.mutating()) == before


def test_apply_is_a_running_task_until_the_hosts_are_done(client, backend, depot_site):
    image_with_driver(client, depot_site)
    entered, release = threading.Event(), threading.Event()
    backend.gates[("reboot", "host-21")] = (entered, release)
    tid = client.ok("POST", software("?action=apply&vmw-task=true"), {}, expect=202)
    assert entered.wait(DEADLINE_S)
    info = client.ok("GET", f"/api/cis/tasks/{tid}")
    assert info["status"] == "RUNNING" and "start_time" in info and "end_time" not in info
    assert info["progress"]["total"] == 3 and info["progress"]["completed"] == 0
    assert "Rebooting" in info["progress"]["message"]["default_message"]
    status, err = client.call("POST", software("?action=apply&vmw-task=true"), {})
    assert status == 400 and err["error_type"] == "NOT_ALLOWED_IN_CURRENT_STATE"
    release.set()
    assert client.wait(tid)["status"] == "SUCCEEDED"


def test_drift_is_non_compliant_and_apply_removes_it(client, backend, depot_site):
    image_with_driver(client, depot_site)
    client.task("POST", software("?action=apply&vmw-task=true"), {})
    # Someone installs the daemon with esxcli on one host: not in the image.
    backend.installed["host-22"][DAEMON] = {
        "version": f"{DRIVER}-0.0.0000",
        "display_name": "NVIDIA GPU Management Daemon",
        "display_version": DRIVER,
        "vendor": "NVIDIA",
    }
    scan = client.task("POST", software("?action=scan&vmw-task=true"))["result"]
    assert scan["status"] == "NON_COMPLIANT" and scan["non_compliant_hosts"] == ["host-22"]
    assert scan["impact"] == "REBOOT_REQUIRED"
    extra = scan["hosts"]["host-22"]["components"][DAEMON]
    assert extra["status"] == "NON_COMPLIANT" and extra["target"] is None
    assert extra["current"]["version"] == f"{DRIVER}-0.0.0000"
    calls = len(backend.mutating())
    apply = client.task("POST", software("?action=apply&vmw-task=true"), {})
    assert apply["status"] == "SUCCEEDED"
    assert apply["result"]["successful_hosts"] == ["host-22"]
    assert apply["result"]["skipped_hosts"] == ["host-21", "host-23"]
    assert backend.mutating()[calls:] == [(op, "host-22") for op in MUTATING]
    assert set(backend.applied["host-22"]) == {AIE}
    assert set(backend.installed["host-22"]) == {AIE}
    assert client.ok("GET", software("/compliance"))["status"] == "COMPLIANT"


def test_a_component_not_from_nvidia_needs_maintenance_mode_but_no_reboot(
    client, backend, depot_site
):
    www, url = depot_site
    manifest = {
        "component": {
            "name": "Intel-i40en",
            "display_name": "Intel NIC driver",
            "version": "2.5.1.0-1OEM.800.1.0.20613240",
            "display_version": "2.5.1.0",
            "vendor": "Intel",
        }
    }
    with zipfile.ZipFile(www / "Intel-i40en.zip", "w") as z:
        z.writestr("standin-depot.json", json.dumps(manifest))
    import_depot(client, f"{url}/Intel-i40en.zip")
    assert commit(client, {"Intel-i40en": None})["status"] == "SUCCEEDED"  # None: latest
    assert client.ok("GET", software())["components"]["Intel-i40en"]["version"].startswith("2.5")
    scan = client.task("POST", software("?action=scan&vmw-task=true"))["result"]
    assert scan["impact"] == "MAINTENANCE_MODE_REQUIRED"
    assert client.task("POST", software("?action=apply&vmw-task=true"), {})["status"] == (
        "SUCCEEDED"
    )
    assert [op for op, _ in backend.mutating()] == [
        op for _ in HOSTS for op in MUTATING if op != "reboot"
    ]


def test_a_host_failure_fails_the_task_and_stops_the_rollout(client, backend, depot_site):
    image_with_driver(client, depot_site)
    backend.fail[("enter_maintenance", "host-21")] = (
        "Host esxi-01.lab.local cannot enter maintenance mode: powered-on VMs and DRS is off."
    )
    apply = client.task("POST", software("?action=apply&vmw-task=true"), {})
    assert apply["status"] == "FAILED"
    assert "cannot enter maintenance mode" in apply["error"]["messages"][0]["default_message"]
    result = apply["result"]
    assert result["status"]["status"] == "ERROR" and result["failed_hosts"] == ["host-21"]
    assert result["host_status"]["host-21"]["status"] == "ERROR"
    assert "host-22" not in result["host_status"]
    assert backend.mutating() == [("enter_maintenance", "host-21")]
    assert client.ok("GET", software("/reports/last-apply-result")) == result


def test_a_different_base_image_is_not_remediated(client, backend):
    assert client.ok("GET", software())["base_image"]["version"] == BASE["version"]
    backend.base["host-21"] = dict(BASE, version="8.0.2-0.0.21203435", display_version="8.0 U2")
    scan = client.task("POST", software("?action=scan&vmw-task=true"))["result"]
    assert scan["non_compliant_hosts"] == ["host-21"]
    assert scan["hosts"]["host-21"]["base_image"]["status"] == "NON_COMPLIANT"
    apply = client.task("POST", software("?action=apply&vmw-task=true"), {})
    assert apply["status"] == "FAILED"
    text = apply["error"]["messages"][0]["default_message"]
    assert "base image remediation is not simulated" in text
    assert apply["result"]["host_status"]["host-21"]["status"] == "ERROR"
    assert backend.mutating() == []


def test_the_state_survives_a_restart(backend, state_dir, depot_site):
    www, url = depot_site
    with VlcmServer(backend, USER, PASSWORD, state_dir) as first:
        c = Client(first.url)
        c.login()
        depot = import_depot(c, f"{url}/{bundle(www)}")
        assert commit(c, {AIE: AIE_VERSION})["status"] == "SUCCEEDED"
        draft = c.ok("POST", software("/drafts"), expect=201)
        scan = c.task("POST", software("?action=scan&vmw-task=true"))["result"]
    assert json.loads((state_dir / "state.json").read_text())["format"] == 1
    with VlcmServer(backend, USER, PASSWORD, state_dir) as second:
        c = Client(second.url)
        assert c.call("GET", software())[0] == 401  # sessions do not survive
        c.login()
        assert c.ok("GET", software())["components"][AIE]["version"] == AIE_VERSION
        assert list(c.ok("GET", "/api/esx/settings/depots/offline")) == [depot]
        assert list(c.ok("GET", software("/drafts"))) == [draft]
        assert c.ok("GET", software("/compliance")) == scan
        # The zip is kept in the state folder: apply works without the web server.
        apply = c.task("POST", software("?action=apply&vmw-task=true"), {})
        assert apply["status"] == "SUCCEEDED" and apply["result"]["commit"] == "2"
