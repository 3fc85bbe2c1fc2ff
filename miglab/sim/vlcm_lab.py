"""The simulated vLCM wired into the simulated lab (test infrastructure, issue 19).

:class:`LabBackend` is the :class:`~miglab.sim.vlcm.backend.HostBackend` of the simulated lab: it
reads clusters and hosts from the vCenter simulator through pyVmomi (managed object ids as the REST
ids: ``domain-c7``, ``host-21``), enters and exits maintenance mode and reboots a host through
vCenter as miglab's roles do (``miglab.adapters.vsphere.hosts``; the simulator's reboot link then
boots the host's stand-in container), and reads and changes the installed software in the host's
ESXi stand-in container (``podman exec HOST esxi-standin components | image-apply ZIP...``, the
depot zips copied in with ``podman cp``).

:class:`DepotServer` serves a folder over plain HTTP on the loopback (the lab's offline bundles:
vCenter pulls a depot from a URL). :class:`VlcmLab` runs the REST server
(:class:`~miglab.sim.vlcm.server.VlcmServer`) and the depot server together; ``miglab.sim.vcenter``
's ``Vcsim`` starts one for an image-managed cluster and hands the simulator ``-rest-upstream``, so
``https://<vcenter>/api/...`` reaches it on the simulator's own port and certificate::

    with Vcsim(lab_json(lab, cluster_image_managed=True), depot_dir=bundles) as sim:
        sim.api_url      # https://127.0.0.1:PORT/api (the simulator's CA: sim.ca_file)
        sim.depot_url    # http://127.0.0.1:PORT2/ (the bundles folder)
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from miglab.sim.vlcm.backend import HostOpError

# The stand-in's command inside its container, and where depot zips are staged there for an apply
# (the container's disk: /tmp is a small RAM disk in the simulated lab, as on ESXi).
STANDIN = "/opt/esxi-standin/bin/esxi-standin"
STAGE = "/var/lib/esxi-standin/vlcm-stage"
# vSphere's connection and power states as the REST API spells them (vcenter/host HostSummary).
CONNECTION_STATES = {
    "connected": "CONNECTED",
    "disconnected": "DISCONNECTED",
    "notResponding": "NOT_RESPONDING",
}
POWER_STATES = {"poweredOn": "POWERED_ON", "poweredOff": "POWERED_OFF", "standBy": "STANDBY"}


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise HostOpError(f"cannot run {cmd[0]}: {exc}") from None
    except subprocess.TimeoutExpired:
        raise HostOpError(f"{' '.join(cmd[:4])}... did not finish within {timeout:.0f} s") from None


class LabBackend:
    """The simulated lab's hosts for the vLCM server (see the module's docstring).

    ``connect``: a function returning a logged-in pyVmomi ServiceInstance of the simulator
    (``Vcsim.connect``), called on first use and again when the session is gone; ``bind`` sets it
    later (the simulator starts after the REST server, whose port it needs). ``container_of``:
    host name -> its stand-in container (default: the same name, as ``miglab sim up`` and the ESXi
    molecule scenarios name them). ``boot_link``: with it, a reboot also runs the reboot link
    itself while it waits, ``boot_link(host_name)`` (e.g. ``functools.partial(
    miglab.sim.daemon.boot_the_standin, boots)``); leave it out where the daemon's keeper runs it
    (the simulated lab, molecule)."""

    def __init__(
        self,
        connect: Callable[[], Any] | None = None,
        *,
        container_of: Callable[[str], str] | None = None,
        podman: str = "podman",
        boot_link: Callable[[str], Any] | None = None,
        maintenance_timeout_s: int = 300,
        reboot_timeout_s: float = 600,
        command_timeout_s: float = 120,
        poll_s: float = 0.2,
    ) -> None:
        self._connect = connect
        self.container_of = container_of or (lambda name: name)
        self.podman = podman
        self.boot_link = boot_link
        self.maintenance_timeout_s = maintenance_timeout_s
        self.reboot_timeout_s = reboot_timeout_s
        self.command_timeout_s = command_timeout_s
        self.poll_s = poll_s
        self._si = None
        self._lock = threading.Lock()

    def bind(self, connect: Callable[[], Any]) -> None:
        """Set the connection function unless one was given (``Vcsim`` calls it)."""
        if self._connect is None:
            self._connect = connect

    # --- vCenter ------------------------------------------------------------------------------
    def _service(self, fresh: bool = False):
        with self._lock:
            if self._si is None or fresh:
                if self._connect is None:
                    raise HostOpError("the vLCM backend has no vCenter connection (bind() it)")
                try:
                    self._si = self._connect()
                except Exception as exc:  # noqa: BLE001 - what vCenter says, as a host error
                    raise HostOpError(f"cannot connect to vCenter: {exc}") from None
            return self._si

    def _call(self, fn: Callable[[Any], Any]):
        """fn(si); once more with a new session when vCenter says the old one is gone."""
        from pyVmomi import vim

        try:
            return fn(self._service())
        except vim.fault.NotAuthenticated:
            return fn(self._service(fresh=True))

    def _host(self, si, host: str):
        from pyVmomi import vim

        return vim.HostSystem(host, stub=si._stub)

    def _host_name(self, host: str) -> str:
        from pyVmomi import vmodl

        try:
            return self._call(lambda si: self._host(si, host).name)
        except vmodl.fault.ManagedObjectNotFound:
            raise HostOpError(f"host {host} not found") from None

    def clusters(self) -> list[dict]:
        from pyVmomi import vim

        from miglab.adapters.vsphere import props

        def read(si):
            out = []
            for obj, p in props.collect(
                si, vim.ClusterComputeResource, ["name", "lifecycleManaged", "configurationEx"]
            ):
                cfg = p.get("configurationEx")
                drs = getattr(getattr(cfg, "drsConfig", None), "enabled", False)
                ha = getattr(getattr(cfg, "dasConfig", None), "enabled", False)
                out.append(
                    {
                        "cluster": obj._moId,
                        "name": p.get("name", ""),
                        "image_managed": bool(p.get("lifecycleManaged")),
                        "drs_enabled": bool(drs),
                        "ha_enabled": bool(ha),
                    }
                )
            return sorted(out, key=lambda c: c["name"])

        return self._call(read)

    def hosts(self, cluster: str) -> list[dict]:
        from pyVmomi import vim, vmodl

        from miglab.adapters.vsphere import props

        def read(si):
            root = vim.ClusterComputeResource(cluster, stub=si._stub)
            fields = ["name", "runtime.connectionState", "runtime.powerState"]
            out = []
            for obj, p in props.collect(si, vim.HostSystem, fields, root):
                conn = str(p.get("runtime.connectionState", ""))
                entry = {
                    "host": obj._moId,
                    "name": p.get("name", ""),
                    "connection_state": CONNECTION_STATES.get(conn, conn.upper()),
                }
                # HostSummary: power_state only for a connected host
                power = POWER_STATES.get(str(p.get("runtime.powerState", "")))
                if conn == "connected" and power:
                    entry["power_state"] = power
                out.append(entry)
            return sorted(out, key=lambda h: h["name"])

        try:
            return self._call(read)
        except vmodl.fault.ManagedObjectNotFound:
            return []

    def enter_maintenance(self, host: str) -> None:
        self._maintenance(host, True)

    def exit_maintenance(self, host: str) -> None:
        self._maintenance(host, False)

    def _maintenance(self, host: str, enabled: bool) -> None:
        from miglab.adapters.vsphere import hosts as vhosts
        from miglab.adapters.vsphere.connection import VsphereError

        def change(si):
            h = self._host(si, host)
            vhosts.ensure_maintenance(h, enabled, False, timeout_s=self.maintenance_timeout_s)

        try:
            self._call(change)
        except VsphereError as exc:
            raise HostOpError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a vSphere fault: vCenter's words
            raise HostOpError(_fault_text(exc)) from None

    def reboot(self, host: str) -> None:
        """RebootHost_Task, then wait until vCenter shows the host connected again with a newer
        boot time (or after it was seen away), as ``miglab.adapters.vsphere.hosts
        .reboot_and_wait``; with ``boot_link`` the reboot link runs in the wait."""
        from miglab.adapters.vsphere.connection import VsphereError
        from miglab.adapters.vsphere.tasks import wait

        name = self._host_name(host)
        try:
            h = self._call(lambda si: self._host(si, host))
            booted = h.runtime.bootTime
            start = time.monotonic()
            wait(h.RebootHost_Task(force=False), 300, f"{name}: reboot")
            went_down = False
            while time.monotonic() - start < self.reboot_timeout_s:
                if self.boot_link is not None:
                    self.boot_link(name)
                runtime = h.runtime
                if str(runtime.connectionState) != "connected":
                    went_down = True
                elif went_down or (
                    runtime.bootTime is not None and (booted is None or runtime.bootTime > booted)
                ):
                    return
                time.sleep(self.poll_s)
        except VsphereError as exc:
            raise HostOpError(str(exc)) from None
        except HostOpError:
            raise
        except Exception as exc:  # noqa: BLE001 - a vSphere fault: vCenter's words
            raise HostOpError(_fault_text(exc)) from None
        raise HostOpError(
            f"{name}: did not reconnect within {self.reboot_timeout_s:.0f} s after the reboot"
        )

    # --- the host's stand-in container ---------------------------------------------------------
    def _standin(self, container: str, *args: str) -> str:
        res = _run([self.podman, "exec", container, STANDIN, *args], timeout=self.command_timeout_s)
        if res.returncode != 0:
            text = " ".join((res.stdout + " " + res.stderr).split())
            raise HostOpError(f"{container}: esxi-standin {args[0]} failed: {text[:2000]}")
        return res.stdout

    def _software(self, host: str) -> dict:
        container = self.container_of(self._host_name(host))
        out = self._standin(container, "components")
        try:
            return json.loads(out)
        except ValueError:
            raise HostOpError(
                f"{container}: esxi-standin components: not JSON: {out[:200]}"
            ) from None

    def base_image(self, host: str) -> dict:
        return dict(self._software(host)["base_image"])

    def installed_components(self, host: str) -> dict[str, dict]:
        return {k: dict(v) for k, v in self._software(host)["components"].items()}

    def apply_components(self, host: str, components: dict[str, str]) -> None:
        """Copy the zips into the host's container, ``esxi-standin image-apply`` them, check that
        exactly these components are installed."""
        from miglab.adapters.vsphere.connection import VsphereError

        name = self._host_name(host)
        try:
            state = str(self._call(lambda si: self._host(si, host).runtime.connectionState))
        except VsphereError as exc:
            raise HostOpError(str(exc)) from None
        if state != "connected":
            raise HostOpError(f"Host {name} is not connected ({state})")
        container = self.container_of(name)
        staged = []
        res = _run([self.podman, "exec", container, "mkdir", "-p", STAGE], self.command_timeout_s)
        if res.returncode != 0:
            raise HostOpError(f"{container}: cannot stage the depots: {res.stderr.strip()}")
        try:
            for i, (component, path) in enumerate(sorted(components.items())):
                if not Path(path).is_file():
                    raise HostOpError(f"the depot of component {component} is missing: {path}")
                target = f"{STAGE}/{i}-{Path(path).name}"
                res = _run(
                    [self.podman, "cp", str(path), f"{container}:{target}"],
                    self.command_timeout_s,
                )
                if res.returncode != 0:
                    raise HostOpError(
                        f"{container}: cannot copy {Path(path).name}: {res.stderr.strip()}"
                    )
                staged.append(target)
            self._standin(container, "image-apply", *staged)
        finally:
            _run([self.podman, "exec", container, "rm", "-rf", STAGE], self.command_timeout_s)
        have = set(self.installed_components(host))
        if have != set(components):
            raise HostOpError(
                f"{name}: after the apply the host has {sorted(have)}, "
                f"the image says {sorted(components)}"
            )


def _fault_text(exc: Exception) -> str:
    from miglab.adapters.vsphere.tasks import fault_text

    with contextlib.suppress(Exception):
        text = fault_text(exc)
        if text:
            return text
    return str(getattr(exc, "msg", "") or exc) or type(exc).__name__


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no access log on stderr
        pass


class DepotServer:
    """A folder served read-only over plain HTTP on 127.0.0.1 (``url``: ``http://127.0.0.1:P/``),
    as the web server an operator puts offline depots on for vCenter to pull."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.port: int | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def file_url(self, name: str) -> str:
        return self.url + urllib.parse.quote(name)

    def start(self) -> int:
        if self._httpd is None:
            handler = functools.partial(_QuietHandler, directory=str(self.folder))
            self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
            self._httpd.daemon_threads = True
            self.port = self._httpd.server_address[1]
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, name="depot-http", daemon=True
            )
            self._thread.start()
        return self.port

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join()


class VlcmLab:
    """The vLCM REST server (``rest_url``, plain HTTP on the loopback: the simulator proxies
    ``/api/`` to it) and, with ``depot_dir``, the depot server (``depot_url``), in this process."""

    def __init__(
        self,
        backend,
        username: str,
        password: str,
        state_dir: str | Path,
        *,
        depot_dir: str | Path | None = None,
        base_image: dict | None = None,
    ) -> None:
        from miglab.sim.vlcm.server import VlcmServer

        self.backend = backend
        self.server = VlcmServer(backend, username, password, state_dir, base_image=base_image)
        self.depots = DepotServer(depot_dir) if depot_dir else None

    def start(self) -> VlcmLab:
        try:
            if self.depots is not None:
                self.depots.start()
            self.server.start()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    @property
    def depot_url(self) -> str | None:
        return self.depots.url if self.depots is not None else None

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.server.stop()
        if self.depots is not None:
            self.depots.stop()

    def __enter__(self) -> VlcmLab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def record_bundle_urls(bundles_json: str | Path, depots: DepotServer) -> dict:
    """Add ``"url"`` (the depot server's URL of the file) to every bundle of a ``bundles.json``
    (``miglab sim up``'s: name -> {"file", "local", ...}) whose file the depot server serves;
    written atomically; returns the bundles."""
    path = Path(bundles_json)
    bundles = json.loads(path.read_text())
    for entry in bundles.values():
        if (
            isinstance(entry, dict)
            and entry.get("file")
            and (depots.folder / entry["file"]).is_file()
        ):
            entry["url"] = depots.file_url(entry["file"])
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(bundles, indent=2) + "\n")
    os.replace(tmp, path)
    return bundles
