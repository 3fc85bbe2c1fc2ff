"""vSphere Lifecycle Manager through the vSphere Automation REST API (``https://<vcenter>/api``):
sessions, clusters and hosts, image enablement, the desired image, offline depots, drafts,
compliance scans, remediation and the long-running tasks behind them.

Paths and bodies follow VMware's API reference (``esx/settings``, ``cis/tasks``, ``vcenter``;
the OpenAPI-generated docs of vsphere-automation-sdk-ruby, esx/docs and cis/docs); the decisions
are ``miglab.core.esxi.image``'s. Standard library only (urllib): one HTTPS connection per call,
TLS as the SOAP side verifies it (``ConnectionSpec``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from miglab.adapters.vsphere.connection import ConnectionSpec, VsphereError, ssl_context

SESSION_HEADER = "vmware-api-session-id"


class RestError(VsphereError):
    """A REST call failed; the message carries vCenter's own error text."""

    def __init__(self, message: str, status: int = 0, error_type: str = ""):
        super().__init__(message)
        self.status = status
        self.error_type = error_type


def _error_text(body: bytes) -> tuple[str, str]:
    try:
        data = json.loads(body or b"null")
    except ValueError:
        return "", body[:200].decode("utf-8", "replace")
    if not isinstance(data, dict):
        return "", str(data)[:200]
    msgs = [
        str(m.get("default_message") or m.get("id") or "")
        for m in data.get("messages") or ()
        if isinstance(m, dict)
    ]
    return str(data.get("error_type") or ""), "; ".join(m for m in msgs if m)


class LifecycleApi:
    """A logged-in REST session (``with LifecycleApi(spec) as api: ...``)."""

    def __init__(
        self,
        spec: ConnectionSpec,
        *,
        timeout: float = 120.0,
        poll_s: float = 1.0,
        base_url: str | None = None,  # tests: the simulator's endpoint without vCenter's TLS
    ):
        self.spec = spec
        self.timeout = timeout
        self.poll_s = poll_s
        self.base = (base_url or f"https://{spec.hostname}:{spec.port}").rstrip("/") + "/api"
        self._ctx = ssl_context(spec)
        self._session: str | None = None

    # --- plumbing ------------------------------------------------------------------------------
    def __enter__(self) -> LifecycleApi:
        self.login()
        return self

    def __exit__(self, *exc) -> None:
        self.logout()

    def call(self, method: str, path: str, body=None, query: dict | None = None, *, auth=None):
        url = self.base + path
        if query:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(query, doseq=True)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if auth:
            req.add_header("Authorization", auth)
        elif self._session:
            req.add_header(SESSION_HEADER, self._session)
        try:
            with urllib.request.urlopen(req, context=self._ctx, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            kind, text = _error_text(exc.read())
            where = f"{method} {path.split('?')[0]}"
            raise RestError(
                f"vCenter {self.spec.hostname}: {where}: HTTP {exc.code}"
                + (f" {kind}" if kind else "")
                + (f": {text}" if text else ""),
                exc.code,
                kind,
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise VsphereError(
                f"cannot reach vCenter's REST API at {self.base}: {reason}"
            ) from None
        return json.loads(raw) if raw.strip() else None

    def login(self) -> None:
        token = base64.b64encode(f"{self.spec.username}:{self.spec.password}".encode()).decode()
        try:
            self._session = self.call("POST", "/session", auth=f"Basic {token}")
        except RestError as exc:
            if exc.status == 401:
                raise VsphereError(
                    f"vCenter {self.spec.hostname} refused the REST login of {self.spec.username}"
                ) from None
            raise

    def logout(self) -> None:
        if self._session:
            with contextlib.suppress(VsphereError):
                self.call("DELETE", "/session")
            self._session = None

    def wait(
        self,
        task: str,
        what: str,
        *,
        timeout: float = 3600.0,
        progress: Callable[[dict], None] | None = None,
    ):
        """Poll ``/cis/tasks/{task}`` until it ends; its result, or RestError with its error."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.call("GET", f"/cis/tasks/{task}") or {}
            status = info.get("status")
            if progress:
                progress(info)
            if status == "SUCCEEDED":
                return info.get("result")
            if status == "FAILED":
                err = info.get("error")
                if isinstance(err, dict):
                    _, text = _error_text(json.dumps(err).encode())
                    err = text or json.dumps(err)
                raise RestError(f"{what}: vCenter task {task} failed: {err or 'no reason given'}")
            if time.monotonic() > deadline:
                raise RestError(f"{what}: vCenter task {task} still {status} after {timeout:.0f} s")
            time.sleep(self.poll_s)

    # --- inventory -----------------------------------------------------------------------------
    def clusters(self) -> list[dict]:
        return self.call("GET", "/vcenter/cluster") or []

    def hosts(self, cluster: str) -> list[dict]:
        return self.call("GET", "/vcenter/host", query={"clusters": cluster}) or []

    def locate_host(self, name: str) -> dict:
        """``{"cluster", "cluster_name", "host"}`` of the host named ``name`` in vCenter."""
        for c in self.clusters():
            for h in self.hosts(c["cluster"]):
                if h.get("name") == name:
                    return {
                        "cluster": c["cluster"],
                        "cluster_name": c.get("name"),
                        "host": h["host"],
                    }
        raise VsphereError(f"host {name!r} is in no cluster of vCenter {self.spec.hostname}")

    def locate_cluster(self, name: str) -> dict:
        for c in self.call("GET", "/vcenter/cluster", query={"names": name}) or []:
            return {"cluster": c["cluster"], "cluster_name": c.get("name")}
        raise VsphereError(f"no cluster {name!r} in vCenter {self.spec.hostname}")

    # --- image ---------------------------------------------------------------------------------
    def image_managed(self, cluster: str) -> bool:
        info = self.call("GET", f"/esx/settings/clusters/{cluster}/enablement/software") or {}
        return bool(info.get("enabled"))

    def software(self, cluster: str) -> dict:
        return self.call("GET", f"/esx/settings/clusters/{cluster}/software") or {}

    def depot_components(self) -> list[dict]:
        return self.call("GET", "/esx/settings/depot-content/components") or []

    def offline_depots(self) -> dict:
        return self.call("GET", "/esx/settings/depots/offline") or {}

    def import_depot(self, location: str, description: str, *, timeout: float = 3600.0):
        task = self.call(
            "POST",
            "/esx/settings/depots/offline",
            {"source_type": "PULL", "location": location, "description": description},
            query={"vmw-task": "true"},
        )
        return self.wait(task, f"importing depot {location}", timeout=timeout)

    def change_image(self, cluster: str, patch: dict, message: str, *, timeout: float = 600.0):
        """Draft -> components -> commit; the new commit's id. The draft is deleted on failure."""
        base = f"/esx/settings/clusters/{cluster}/software/drafts"
        try:
            draft = self.call("POST", base)
        except RestError as exc:
            if exc.error_type != "ALREADY_EXISTS":
                raise
            # One draft per user and cluster (VMware's Drafts.create): an earlier run's is left
            # over; drop it, the desired image it was made from may be older.
            for old in self.call("GET", base) or {}:
                self.call("DELETE", f"{base}/{old}")
            draft = self.call("POST", base)
        try:
            self.call("PATCH", f"{base}/{draft}/software/components", patch)
            task = self.call(
                "POST",
                f"{base}/{draft}",
                {"message": message},
                query={"action": "commit", "vmw-task": "true"},
            )
            return self.wait(task, "committing the cluster image", timeout=timeout)
        except VsphereError:
            with contextlib.suppress(VsphereError):
                self.call("DELETE", f"{base}/{draft}")
            raise

    def scan(self, cluster: str, *, timeout: float = 1800.0) -> dict:
        task = self.call(
            "POST",
            f"/esx/settings/clusters/{cluster}/software",
            query={"action": "scan", "vmw-task": "true"},
        )
        return self.wait(task, "the compliance scan", timeout=timeout) or {}

    def apply(
        self,
        cluster: str,
        hosts: list[str] | None,
        *,
        timeout: float = 7200.0,
        progress: Callable[[dict], None] | None = None,
    ) -> dict:
        spec: dict = {"accept_eula": True}
        if hosts:
            spec["hosts"] = list(hosts)
        task = self.call(
            "POST",
            f"/esx/settings/clusters/{cluster}/software",
            spec,
            query={"action": "apply", "vmw-task": "true"},
        )
        return self.wait(task, "remediation", timeout=timeout, progress=progress) or {}
