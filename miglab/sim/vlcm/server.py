"""The simulated vCenter's vSphere Automation REST endpoint for vLCM (``/api``), on a loopback port.

    with VlcmServer(backend, "administrator@vsphere.local", "secret", state_dir) as srv:
        port = srv.port      # plain HTTP on 127.0.0.1; the vCenter simulator proxies /api/ here

Endpoints, bodies and which behaviour follows VMware's reference or is this simulator's assumption:
README.md next to this file. Long-running operations (depot import, draft commit, scan, apply) are
cis tasks worked by a background thread: clients poll ``/api/cis/tasks/{task}``."""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from miglab.sim.vlcm import compliance as cmp
from miglab.sim.vlcm.backend import HostBackend, HostOpError
from miglab.sim.vlcm.state import Store

# The base image of a cluster whose hosts cannot tell theirs (no host yet): ESXi 8.0 Update 3 GA.
DEFAULT_BASE_IMAGE = {
    "version": "8.0.3-0.0.24022510",
    "display_name": "ESXi",
    "display_version": "8.0 U3",
    "release_date": "2024-06-25T00:00:00.000Z",
}
MANIFEST = "standin-depot.json"
FETCH_TIMEOUT_S = 120
STOP_JOIN_S = 30
HTTP_STATUS = {
    "INVALID_ARGUMENT": 400,
    "ALREADY_EXISTS": 400,
    "NOT_ALLOWED_IN_CURRENT_STATE": 400,
    "UNAUTHENTICATED": 401,
    "NOT_FOUND": 404,
    "ERROR": 500,
}
SETTINGS = "/esx/settings"
CLUSTER = SETTINGS + "/clusters/(?P<cluster>[^/]+)"
DRAFT = CLUSTER + "/software/drafts/(?P<draft>[^/]+)"


def now() -> str:
    t = datetime.datetime.now(datetime.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def message(ident: str, text: str, *args: str) -> dict:
    return {"id": ident, "default_message": text, "args": [str(a) for a in args]}


def error_body(error_type: str, text: str, ident: str = "") -> dict:
    ident = ident or "com.vmware.vapi.std.errors." + error_type.lower()
    return {"error_type": error_type, "messages": [message(ident, text)]}


class ApiError(Exception):
    """A vAPI standard error: the reply's status and body."""

    def __init__(self, error_type: str, text: str, ident: str = ""):
        super().__init__(text)
        self.error_type, self.text, self.ident = error_type, text, ident

    @property
    def status(self) -> int:
        return HTTP_STATUS[self.error_type]

    def body(self) -> dict:
        return error_body(self.error_type, self.text, self.ident)


def not_found(text: str) -> ApiError:
    return ApiError("NOT_FOUND", text)


def invalid(text: str) -> ApiError:
    return ApiError("INVALID_ARGUMENT", text)


class TaskFailed(Exception):
    """Ends a task FAILED with this message (and, where given, a partial result)."""

    def __init__(self, text: str, result: object = None):
        super().__init__(text)
        self.text, self.result = text, result


class Task:
    """One cis task (CisTaskInfo); ``info()`` is what GET /api/cis/tasks/{task} returns."""

    def __init__(self, tid: str, service: str, operation: str, description: dict, user: str):
        self.id = tid
        self.lock = threading.Lock()
        self.service, self.operation, self.description, self.user = (
            service,
            operation,
            description,
            user,
        )
        self.status = "PENDING"
        self.total, self.completed = 1, 0
        self.message = message("miglab.vlcm.task.queued", "Queued")
        self.result: object = None
        self.error: dict | None = None
        self.start_time: str | None = None
        self.end_time: str | None = None

    def progress(
        self, *, total: int | None = None, completed: int | None = None, text: str = "", args=()
    ):
        with self.lock:
            if total is not None:
                self.total = total
            if completed is not None:
                self.completed = max(self.completed, completed)
            if text:
                self.message = message(f"{self.service}.{self.operation}.progress", text, *args)

    def info(self) -> dict:
        with self.lock:
            info = {
                "status": self.status,
                "description": self.description,
                "service": self.service,
                "operation": self.operation,
                "cancelable": False,
                "user": self.user,
                "progress": {
                    "total": self.total,
                    "completed": self.completed,
                    "message": self.message,
                },
            }
            if self.start_time:
                info["start_time"] = self.start_time
            if self.end_time:
                info["end_time"] = self.end_time
            if self.result is not None:
                info["result"] = copy.deepcopy(self.result)
            if self.error is not None:
                info["error"] = self.error
            return info


def _fields(body, struct: str, types: dict[str, type | tuple], required=()) -> dict:
    """Check a request body against a structure: an object, known fields, their JSON types."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise invalid(f"Expected a JSON object ({struct}) as the request body.")
    for name in body:
        if name not in types:
            raise invalid(f"Unknown field '{name}' in {struct}.")
    for name in required:
        if body.get(name) is None:
            raise invalid(f"Missing required field '{name}' in {struct}.")
    for name, value in body.items():
        if value is not None and not isinstance(value, types[name]):
            want = types[name]
            want = want if isinstance(want, tuple) else (want,)
            kinds = {str: "a string", bool: "a boolean", list: "a list", dict: "an object"}
            raise invalid(
                f"Field '{name}' of {struct} must be {' or '.join(kinds[t] for t in want)}."
            )
    return body


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _many(query: dict[str, list[str]], name: str) -> set[str] | None:
    """A set filter (``names=a&names=b``; a comma list is accepted too), None when not given."""
    if name not in query:
        return None
    return {v for raw in query[name] for v in raw.split(",") if v}


def _release_date(manifest: dict) -> str | None:
    for key, fmt in (("release_date", "%m-%d-%Y"), ("creation_date", "%Y-%m-%d")):
        try:
            day = datetime.datetime.strptime(str(manifest.get(key)), fmt)
        except ValueError:
            continue
        return day.strftime("%Y-%m-%dT00:00:00.000Z")
    return None


class Request:
    def __init__(self, user: str | None, query: dict[str, list[str]], body, headers):
        self.user, self.query, self.body, self.headers = user, query, body, headers


class _Route:
    def __init__(self, method: str, action: str | None, pattern: str, func: str, **kw):
        self.method, self.action, self.func = method, action, func
        self.regex = re.compile(pattern.replace("{name}", "(?P<name>[^/]+)"))
        self.auth = kw.get("auth", True)
        self.task = kw.get("task", False)


ROUTES = [
    _Route("POST", None, "/session", "session_create", auth=False),
    _Route("GET", None, "/session", "session_get"),
    _Route("DELETE", None, "/session", "session_delete"),
    _Route("GET", None, "/vcenter/cluster", "cluster_list"),
    _Route("GET", None, "/vcenter/host", "host_list"),
    _Route("GET", None, CLUSTER + "/enablement/software", "enablement_get"),
    _Route("GET", None, CLUSTER + "/software", "software_get"),
    _Route("POST", "scan", CLUSTER + "/software", "software_scan", task=True),
    _Route("POST", "apply", CLUSTER + "/software", "software_apply", task=True),
    _Route("GET", None, CLUSTER + "/software/components", "components_list"),
    _Route("GET", None, CLUSTER + "/software/components/(?P<component>[^/]+)", "component_get"),
    _Route("GET", None, CLUSTER + "/software/compliance", "compliance_get"),
    _Route("GET", None, CLUSTER + "/software/reports/last-apply-result", "last_apply_get"),
    _Route("GET", None, CLUSTER + "/software/drafts", "drafts_list"),
    _Route("POST", None, CLUSTER + "/software/drafts", "draft_create"),
    _Route("GET", None, DRAFT, "draft_get"),
    _Route("DELETE", None, DRAFT, "draft_delete"),
    _Route("POST", "commit", DRAFT, "draft_commit", task=True),
    _Route("GET", None, DRAFT + "/software/components", "draft_components_list"),
    _Route("PATCH", None, DRAFT + "/software/components", "draft_components_update"),
    _Route("GET", None, DRAFT + "/software/components/(?P<component>[^/]+)", "draft_component_get"),
    _Route("PUT", None, DRAFT + "/software/components/(?P<component>[^/]+)", "draft_component_set"),
    _Route(
        "DELETE",
        None,
        DRAFT + "/software/components/(?P<component>[^/]+)",
        "draft_component_delete",
    ),
    _Route("GET", None, SETTINGS + "/depots/offline", "depots_list"),
    _Route("POST", None, SETTINGS + "/depots/offline", "depot_create", task=True),
    _Route("GET", None, SETTINGS + "/depots/offline/(?P<depot>[^/]+)", "depot_get"),
    _Route("DELETE", None, SETTINGS + "/depots/offline/(?P<depot>[^/]+)", "depot_delete"),
    _Route("GET", None, SETTINGS + "/depot-content/components", "content_list"),
    _Route(
        "GET",
        None,
        SETTINGS + "/depot-content/components/{name}/versions/(?P<version>[^/]+)",
        "content_version_get",
    ),
    _Route("GET", None, "/cis/tasks/(?P<task>[^/]+)", "task_get"),
]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "miglab-vlcm-sim"

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self):
        try:
            raw = self._body()
        except ValueError:
            status, body = 400, error_body("INVALID_ARGUMENT", "Malformed request body framing.")
            self.close_connection = True
        else:
            status, body = self.server.app.handle(self.command, self.path, self.headers, raw)
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if status != 204:
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


class VlcmServer:
    """The simulated vLCM REST endpoint (see the module's docstring).

    ``backend``: the lab's hosts (:class:`~miglab.sim.vlcm.backend.HostBackend`); ``username`` /
    ``password``: what POST /api/session accepts (Basic auth); ``state_dir``: where state.json
    and the imported depots' zips live (a restarted server keeps images, commits, depots, drafts,
    the last scan and apply); ``base_image``: the desired base image an image-managed cluster
    starts with (the backend's base_image() shape), else its first connected host's."""

    def __init__(
        self,
        backend: HostBackend,
        username: str,
        password: str,
        state_dir: str | Path,
        *,
        base_image: dict | None = None,
    ):
        self.backend = backend
        self._username, self._password = username, password
        self.store = Store(Path(state_dir))
        self._base_image = dict(base_image) if base_image else None
        self._sessions: dict[str, dict] = {}
        self._tasks: dict[str, Task] = {}
        self._threads: list[threading.Thread] = []
        self._applying: dict[str, str] = {}
        self._lock = threading.Lock()  # guards _applying
        self._tasks_lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._serve_thread: threading.Thread | None = None
        self.port: int | None = None

    # -- life cycle ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> int:
        if self._httpd is not None:
            return self.port
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.app = self
        self._httpd, self.port = httpd, httpd.server_address[1]
        self._serve_thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name="vlcm-http", daemon=True
        )
        self._serve_thread.start()
        return self.port

    def stop(self) -> None:
        """Stop serving; waits (at most STOP_JOIN_S in all) for running tasks, which stop between
        hosts (an apply in progress ends FAILED)."""
        self._stopping.set()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._serve_thread is not None:
            self._serve_thread.join()
        deadline = time.monotonic() + STOP_JOIN_S
        for t in list(self._threads):
            t.join(timeout=max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> VlcmServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- dispatch -----------------------------------------------------------------------------

    def handle(self, method: str, target: str, headers, raw: bytes) -> tuple[int, object]:
        """One request: (HTTP status, JSON body or None for 204). Never raises."""
        try:
            return self._handle(method, target, headers, raw)
        except ApiError as exc:
            return exc.status, exc.body()
        except HostOpError as exc:
            return 500, error_body("ERROR", str(exc) or "A host operation failed.")
        except Exception:
            print(f"vlcm-sim: {method} {target} failed:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            return 500, error_body(
                "ERROR",
                "Internal error of the simulated vSphere Lifecycle Manager (see its log).",
            )

    def _handle(self, method: str, target: str, headers, raw: bytes) -> tuple[int, object]:
        split = urllib.parse.urlsplit(target)
        if not split.path.startswith("/api/"):
            raise not_found(f"No resource at {split.path}.")
        path = split.path[len("/api") :]
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        action = _one(query, "action")
        matches = [(r, m) for r in ROUTES if (m := r.regex.fullmatch(path))]
        if not matches:
            raise not_found(f"No resource at {split.path}.")
        found = [(r, m) for r, m in matches if r.method == method and r.action == action]
        if not found:
            what = f"{method} {split.path}" + (f"?action={action}" if action else "")
            raise not_found(f"No operation {what}.")
        route, match = found[0]
        user = None
        if route.auth:
            session = self._sessions.get(headers.get("vmware-api-session-id") or "")
            if session is None:
                raise ApiError("UNAUTHENTICATED", "This method requires authentication.")
            session["last_accessed_time"] = now()
            user = session["user"]
        if route.task and (_one(query, "vmw-task") or "").lower() != "true":
            raise invalid(f"{split.path}: this operation is served as a task only (vmw-task=true).")
        body = None
        if raw.strip():
            try:
                body = json.loads(raw)
            except ValueError as exc:
                raise invalid(f"The request body is not valid JSON: {exc}.") from None
        params = {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()}
        return getattr(self, route.func)(Request(user, query, body, headers), **params)

    # -- sessions -----------------------------------------------------------------------------

    def session_create(self, req: Request):
        auth = req.headers.get("Authorization") or ""
        scheme, _, encoded = auth.partition(" ")
        try:
            user, sep, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            user, sep, password = "", "", ""
        if not (
            scheme.lower() == "basic"
            and sep
            and secrets.compare_digest(user.encode(), self._username.encode())
            and secrets.compare_digest(password.encode(), self._password.encode())
        ):
            raise ApiError(
                "UNAUTHENTICATED", "Authentication required: wrong user name or password."
            )
        token = secrets.token_hex(16)
        self._sessions[token] = {
            "user": self._username,
            "created_time": now(),
            "last_accessed_time": now(),
        }
        return 201, token

    def session_get(self, req: Request):
        session = self._sessions.get(req.headers.get("vmware-api-session-id"), {})
        return 200, dict(session)

    def session_delete(self, req: Request):
        self._sessions.pop(req.headers.get("vmware-api-session-id"), None)
        return 204, None

    # -- inventory ----------------------------------------------------------------------------

    def cluster_list(self, req: Request):
        names, ids = _many(req.query, "names"), _many(req.query, "clusters")
        out = []
        for c in self.backend.clusters():
            if (names is None or c["name"] in names) and (ids is None or c["cluster"] in ids):
                out.append(
                    {
                        "cluster": c["cluster"],
                        "name": c["name"],
                        "ha_enabled": bool(c.get("ha_enabled")),
                        "drs_enabled": bool(c.get("drs_enabled")),
                    }
                )
        return 200, out

    def host_list(self, req: Request):
        ids, names, hosts = (_many(req.query, k) for k in ("clusters", "names", "hosts"))
        out = []
        for c in self.backend.clusters():
            if ids is not None and c["cluster"] not in ids:
                continue
            for h in self.backend.hosts(c["cluster"]):
                if (names is None or h["name"] in names) and (hosts is None or h["host"] in hosts):
                    out.append(
                        {k: h.get(k) for k in ("host", "name", "connection_state", "power_state")}
                    )
        return 200, out

    def _cluster(self, cid: str) -> dict:
        for c in self.backend.clusters():
            if c["cluster"] == cid:
                return c
        raise not_found(f"Cluster {cid} not found.")

    def _managed(self, cid: str) -> dict:
        """The cluster's state (created with its initial image on first use); 404 when the
        cluster is unknown or not managed by a single image."""
        c = self._cluster(cid)
        if not c.get("image_managed"):
            raise not_found(
                f"Cluster {cid} ({c['name']}) is not managed by a single image (it uses baselines)."
            )
        with self.store.lock:
            st = self.store.data["clusters"].get(cid)
        if st is not None:
            return st
        base = self._initial_base(cid)
        with self.store.lock:
            st = self.store.data["clusters"].get(cid)
            if st is None:
                st = {
                    "image": {"base_image": base, "components": {}},
                    "commit": "1",
                    "commits": {
                        "1": {
                            "author": "vpxd",
                            "message": "Initial image: the hosts' base image",
                            "creation_time": now(),
                        }
                    },
                    "drafts": {},
                    "compliance": None,
                    "last_apply": None,
                }
                self.store.data["clusters"][cid] = st
                self.store.save()
            return st

    def _initial_base(self, cid: str) -> dict:
        if self._base_image:
            return dict(self._base_image)
        for h in self.backend.hosts(cid):
            if h.get("connection_state") == "CONNECTED":
                try:
                    return dict(self.backend.base_image(h["host"]))
                except HostOpError:
                    continue
        return dict(DEFAULT_BASE_IMAGE)

    def enablement_get(self, req: Request, cluster: str):
        return 200, {"enabled": bool(self._cluster(cluster).get("image_managed"))}

    # -- depots -------------------------------------------------------------------------------

    def _depot_versions(self):
        """(depot id, record) in import order."""
        with self.store.lock:
            depots = self.store.data["depots"]
            order = sorted(depots, key=lambda d: int(re.sub(r"\D", "", d) or 0))
            return [(d, copy.deepcopy(depots[d])) for d in order]

    def _find(self, name: str, version: str) -> tuple[str, dict] | None:
        for did, rec in self._depot_versions():
            c = rec["component"]
            if c["name"] == name and c["version"] == version:
                return did, rec
        return None

    def _details(self, name: str, version: str) -> dict | None:
        found = self._find(name, version)
        return found[1]["component"] if found else None

    def _latest(self, name: str) -> str | None:
        versions = [
            r["component"]["version"]
            for _, r in self._depot_versions()
            if r["component"]["name"] == name
        ]
        return max(versions, key=cmp.version_key, default=None)

    def depots_list(self, req: Request):
        return 200, {
            did: {k: rec.get(k) for k in ("description", "source_type", "location")}
            for did, rec in self._depot_versions()
        }

    def _depot(self, depot: str) -> dict:
        with self.store.lock:
            rec = self.store.data["depots"].get(depot)
            if rec is None:
                raise not_found(f"Depot {depot} not found.")
            return copy.deepcopy(rec)

    def depot_get(self, req: Request, depot: str):
        rec = self._depot(depot)
        return 200, {
            k: rec.get(k) for k in ("create_time", "description", "source_type", "location")
        }

    def depot_delete(self, req: Request, depot: str):
        rec = self._depot(depot)
        with self.store.lock:
            self.store.data["depots"].pop(depot, None)
            self.store.save()
        shutil.rmtree(self.store.dir / Path(rec["file"]).parent, ignore_errors=True)
        return 204, None

    def depot_create(self, req: Request):
        spec = _fields(
            req.body,
            "Offline.CreateSpec",
            {"source_type": str, "location": str, "description": str, "file_id": str},
            required=("source_type",),
        )
        if spec["source_type"] == "PUSH":
            raise invalid("source_type PUSH (a file upload) is not simulated: use PULL.")
        if spec["source_type"] != "PULL":
            raise invalid(f"Field 'source_type' must be PULL or PUSH, not {spec['source_type']}.")
        if not spec.get("location"):
            raise invalid("Missing required field 'location' in Offline.CreateSpec (PULL).")
        location, description = spec["location"], spec.get("description") or ""
        return self._start(
            req,
            "com.vmware.esx.settings.depots.offline",
            "create",
            message("com.vmware.esx.settings.depots.offline.create", "Import offline depot"),
            lambda task: self._import_depot(task, location, description),
        )

    def _import_depot(self, task: Task, location: str, description: str) -> dict:
        task.progress(text=f"Downloading {location}")
        split = urllib.parse.urlsplit(location)
        if split.scheme not in ("http", "https"):
            raise TaskFailed(
                f"Cannot download the depot from {location}: only http and https locations "
                "are supported."
            )
        incoming = self.store.dir / "depots"
        incoming.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".incoming-", suffix=".zip", dir=incoming)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            try:
                with opener.open(location, timeout=FETCH_TIMEOUT_S) as resp, open(tmp, "wb") as f:
                    shutil.copyfileobj(resp, f)
            except urllib.error.HTTPError as exc:
                raise TaskFailed(
                    f"Cannot download the depot from {location}: HTTP {exc.code} {exc.reason}."
                ) from None
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", exc)
                raise TaskFailed(f"Cannot download the depot from {location}: {reason}.") from None
            component, release = self._read_manifest(tmp, location)
            name = Path(urllib.parse.unquote(split.path)).name
            if not re.fullmatch(r"[A-Za-z0-9._+-]+\.zip", name):
                name = "depot.zip"
            with self.store.lock:
                existing = [
                    d for d, r in self.store.data["depots"].items() if r["location"] == location
                ]
                did = existing[0] if existing else f"depot-{self.store.next_id('depot')}"
                final = incoming / did / name
                shutil.rmtree(final.parent, ignore_errors=True)
                final.parent.mkdir(parents=True)
                tmp.replace(final)
                self.store.data["depots"][did] = {
                    "description": description,
                    "source_type": "PULL",
                    "location": location,
                    "create_time": now(),
                    "file": str(final.relative_to(self.store.dir)),
                    "component": component,
                    "release_date": release,
                }
                self.store.save()
        finally:
            tmp.unlink(missing_ok=True)
        task.progress(completed=1, text=f"Imported {component['name']} {component['version']}")
        return {"depot": did}

    @staticmethod
    def _read_manifest(path: Path, location: str) -> tuple[dict, str | None]:
        bad = f"The depot at {location} is not a valid offline bundle"
        try:
            with zipfile.ZipFile(path) as z:
                raw = z.read(MANIFEST)
        except zipfile.BadZipFile:
            raise TaskFailed(f"{bad}: it is not a zip file.") from None
        except KeyError:
            raise TaskFailed(
                f"{bad}: it has no {MANIFEST} (this simulator reads miglab stand-in bundles, "
                "not VMware's metadata.zip)."
            ) from None
        try:
            manifest = json.loads(raw)
            component = manifest["component"]
            missing = [
                k
                for k in ("name", "version", "display_name", "display_version", "vendor")
                if not isinstance(component.get(k), str) or not component[k]
            ]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise TaskFailed(f"{bad}: its {MANIFEST} does not describe a component.") from None
        if missing:
            raise TaskFailed(f"{bad}: its {MANIFEST} lacks {', '.join(missing)}.")
        keep = ("name", "version", "display_name", "display_version", "vendor", "acceptance_level")
        return {k: component[k] for k in keep if k in component}, _release_date(manifest)

    def _version_summary(self, rec: dict) -> dict:
        c = rec["component"]
        return {
            "version": c["version"],
            "display_version": c["display_version"],
            "summary": c["display_name"],
            "category": "ENHANCEMENT",
            "urgency": "IMPORTANT",
            "kb": "",
            "release_date": rec.get("release_date"),
        }

    def content_list(self, req: Request):
        names, vendors, versions = (_many(req.query, k) for k in ("names", "vendors", "versions"))
        grouped: dict[str, dict] = {}
        for _, rec in self._depot_versions():
            c = rec["component"]
            if (
                (names is not None and c["name"] not in names)
                or (vendors is not None and c["vendor"] not in vendors)
                or (versions is not None and c["version"] not in versions)
            ):
                continue
            entry = grouped.setdefault(
                c["name"],
                {"name": c["name"], "display_name": c["display_name"], "vendor": c["vendor"]},
            )
            entry.setdefault("_versions", {}).setdefault(c["version"], self._version_summary(rec))
        out = []
        for name in sorted(grouped):
            entry = grouped[name]
            found = entry.pop("_versions")
            entry["versions"] = [found[v] for v in sorted(found, key=cmp.version_key)]
            out.append(entry)
        return 200, out

    def content_version_get(self, req: Request, name: str, version: str):
        found = self._find(name, version)
        if found is None:
            raise not_found(f"Component {name} version {version} is not in any imported depot.")
        rec = found[1]
        summary = self._version_summary(rec)
        summary.pop("version")
        summary.update(
            display_name=rec["component"]["display_name"],
            vendor=rec["component"]["vendor"],
            description=rec["component"]["display_name"],
            contact="",
        )
        return 200, summary

    # -- the desired image --------------------------------------------------------------------

    def _software_info(self, image: dict) -> dict:
        return {
            "base_image": cmp.base_image_info(image["base_image"]),
            "add_on": None,
            "components": self._components(image["components"]),
            "solutions": {},
            "hardware_support": None,
        }

    def _components(self, components: dict[str, str]) -> dict:
        return {
            name: cmp.component_info(version, self._details(name, version))
            for name, version in sorted(components.items())
        }

    def _image(self, cluster: str) -> tuple[dict, str]:
        st = self._managed(cluster)
        with self.store.lock:
            return copy.deepcopy(st["image"]), st["commit"]

    def software_get(self, req: Request, cluster: str):
        return 200, self._software_info(self._image(cluster)[0])

    def components_list(self, req: Request, cluster: str):
        return 200, self._components(self._image(cluster)[0]["components"])

    def component_get(self, req: Request, cluster: str, component: str):
        components = self._image(cluster)[0]["components"]
        if component not in components:
            raise not_found(f"Component {component} is not in the image of cluster {cluster}.")
        return 200, self._components({component: components[component]})[component]

    def compliance_get(self, req: Request, cluster: str):
        st = self._managed(cluster)
        with self.store.lock:
            result = copy.deepcopy(st["compliance"])
        if result is None:
            raise not_found(f"No compliance result for cluster {cluster}: scan it first.")
        return 200, result

    def last_apply_get(self, req: Request, cluster: str):
        st = self._managed(cluster)
        with self.store.lock:
            result = copy.deepcopy(st["last_apply"])
        if result is None:
            raise not_found(f"No apply result for cluster {cluster}.")
        return 200, result

    # -- drafts -------------------------------------------------------------------------------

    def _draft(self, cluster: str, draft: str) -> dict:
        st = self._managed(cluster)
        with self.store.lock:
            d = st["drafts"].get(draft)
        if d is None:
            raise not_found(f"Draft {draft} of cluster {cluster} not found.")
        return d

    def _metadata(self, d: dict) -> dict:
        valid = all(self._find(n, v) for n, v in d["components"].items())
        return {
            "owner": d["owner"],
            "status": "VALID" if valid else "INVALID",
            "creation_time": d["creation_time"],
        }

    def drafts_list(self, req: Request, cluster: str):
        st = self._managed(cluster)
        owners = _many(req.query, "owners")
        with self.store.lock:
            drafts = copy.deepcopy(st["drafts"])
        return 200, {
            did: {"metadata": self._metadata(d)}
            for did, d in sorted(drafts.items(), key=lambda kv: int(kv[0]))
            if owners is None or d["owner"] in owners
        }

    def draft_create(self, req: Request, cluster: str):
        st = self._managed(cluster)
        with self.store.lock:
            mine = [did for did, d in st["drafts"].items() if d["owner"] == req.user]
            if mine:
                raise ApiError(
                    "ALREADY_EXISTS",
                    f"There is already a draft ({mine[0]}) created by user {req.user} for "
                    f"cluster {cluster}.",
                )
            did = str(self.store.next_id("draft"))
            image = copy.deepcopy(st["image"])
            st["drafts"][did] = {
                "owner": req.user,
                "creation_time": now(),
                "modified_time": now(),
                "base_image": image["base_image"],
                "components": image["components"],
            }
            self.store.save()
        return 201, did

    def draft_get(self, req: Request, cluster: str, draft: str):
        d = self._draft(cluster, draft)
        with self.store.lock:
            d = copy.deepcopy(d)
        return 200, {"metadata": self._metadata(d), "software": self._software_info(d)}

    def draft_delete(self, req: Request, cluster: str, draft: str):
        st = self._managed(cluster)
        self._draft(cluster, draft)
        with self.store.lock:
            st["drafts"].pop(draft, None)
            self.store.save()
        return 204, None

    def draft_components_list(self, req: Request, cluster: str, draft: str):
        d = self._draft(cluster, draft)
        with self.store.lock:
            components = dict(d["components"])
        return 200, self._components(components)

    def draft_component_get(self, req: Request, cluster: str, draft: str, component: str):
        d = self._draft(cluster, draft)
        with self.store.lock:
            version = d["components"].get(component)
        if version is None:
            raise not_found(f"Component {component} is not in draft {draft}.")
        return 200, self._components({component: version})[component]

    def _version_for(self, name: str, version: str | None) -> str:
        if version is not None:
            return version
        latest = self._latest(name)
        if latest is None:
            raise invalid(f"Component {name} is not in any imported depot: give its version.")
        return latest

    def draft_components_update(self, req: Request, cluster: str, draft: str):
        spec = _fields(
            req.body,
            "Components.UpdateSpec",
            {"components_to_set": dict, "components_to_delete": list},
        )
        to_set = spec.get("components_to_set") or {}
        to_delete = spec.get("components_to_delete") or []
        for name, version in to_set.items():
            if version is not None and not isinstance(version, str):
                raise invalid(f"components_to_set: the version of {name} must be a string.")
        if not all(isinstance(n, str) for n in to_delete):
            raise invalid("components_to_delete must be a list of component names.")
        d = self._draft(cluster, draft)
        versions = {name: self._version_for(name, v) for name, v in to_set.items()}
        with self.store.lock:
            d["components"].update(versions)
            for name in to_delete:
                d["components"].pop(name, None)
            d["modified_time"] = now()
            self.store.save()
        return 204, None

    def draft_component_set(self, req: Request, cluster: str, draft: str, component: str):
        if req.body is not None and not isinstance(req.body, str):
            raise invalid("The request body must be the component's version, a JSON string.")
        d = self._draft(cluster, draft)
        version = self._version_for(component, req.body)
        with self.store.lock:
            d["components"][component] = version
            d["modified_time"] = now()
            self.store.save()
        return 204, None

    def draft_component_delete(self, req: Request, cluster: str, draft: str, component: str):
        d = self._draft(cluster, draft)
        with self.store.lock:
            if component not in d["components"]:
                raise not_found(f"Component {component} is not in draft {draft}.")
            del d["components"][component]
            d["modified_time"] = now()
            self.store.save()
        return 204, None

    def draft_commit(self, req: Request, cluster: str, draft: str):
        spec = _fields(req.body, "Drafts.CommitSpec", {"message": str})
        self._draft(cluster, draft)
        return self._start(
            req,
            "com.vmware.esx.settings.clusters.software.drafts",
            "commit",
            message(
                "com.vmware.esx.settings.clusters.software.drafts.commit",
                "Commit software draft",
            ),
            lambda task: self._commit(task, cluster, draft, spec.get("message") or "", req.user),
        )

    def _commit(self, task: Task, cluster: str, draft: str, text: str, user: str) -> str:
        st = self._managed(cluster)
        task.progress(text=f"Validating draft {draft}")
        with self.store.lock:
            d = copy.deepcopy(st["drafts"].get(draft))
        if d is None:
            raise TaskFailed(f"Draft {draft} of cluster {cluster} no longer exists.")
        missing = [f"{n} {v}" for n, v in sorted(d["components"].items()) if not self._find(n, v)]
        if missing:
            raise TaskFailed(
                "The draft is not valid: component "
                + ", ".join(missing)
                + " is not found in any imported depot."
            )
        with self.store.lock:
            if draft not in st["drafts"]:
                raise TaskFailed(f"Draft {draft} of cluster {cluster} no longer exists.")
            commit = str(max(int(c) for c in st["commits"]) + 1)
            st["commits"][commit] = {"author": user, "message": text, "creation_time": now()}
            st["commit"] = commit
            st["image"] = {"base_image": d["base_image"], "components": d["components"]}
            del st["drafts"][draft]
            self.store.save()
        task.progress(completed=1, text=f"Committed {commit}")
        return commit

    # -- scan and apply -----------------------------------------------------------------------

    def _host_compliance(self, host: str, image: dict, commit: str) -> dict:
        base = self.backend.base_image(host)
        installed = self.backend.installed_components(host)
        return cmp.host_compliance(image, self._details, base, installed, commit, now())

    def _scan(self, cluster: str, image: dict, commit: str, task: Task | None = None) -> dict:
        hosts = self.backend.hosts(cluster)
        if task:
            task.progress(total=len(hosts))
        results, unavailable, names, notes = {}, [], {}, []
        for i, h in enumerate(hosts):
            hid, names[hid] = h["host"], h["name"]
            if task:
                task.progress(text=f"Scanning host {h['name']}")
            if h.get("connection_state") != "CONNECTED":
                unavailable.append(hid)
            else:
                try:
                    results[hid] = self._host_compliance(hid, image, commit)
                except HostOpError as exc:
                    unavailable.append(hid)
                    notes.append(cmp.notification(now(), "miglab.vlcm.scan.host", str(exc)))
            if task:
                task.progress(completed=i + 1)
        result = cmp.cluster_compliance(
            results, names, unavailable, commit, now(), cmp.notifications(warnings=notes)
        )
        st = self._managed(cluster)
        with self.store.lock:
            st["compliance"] = result
            self.store.save()
        return result

    def software_scan(self, req: Request, cluster: str):
        _fields(req.body, "Software.Scan", {})
        image, commit = self._image(cluster)
        return self._start(
            req,
            "com.vmware.esx.settings.clusters.software",
            "scan",
            message(
                "com.vmware.esx.settings.clusters.software.scan",
                "Check compliance of the cluster with its image",
            ),
            lambda task: self._scan(cluster, image, commit, task),
        )

    def software_apply(self, req: Request, cluster: str):
        spec = _fields(
            req.body,
            "Software.ApplySpec",
            {"accept_eula": bool, "hosts": list, "commit": str},
        )
        st = self._managed(cluster)
        with self.store.lock:
            commits = set(st["commits"])
        if spec.get("commit") is not None and spec["commit"] not in commits:
            raise not_found(f"Commit {spec['commit']} of cluster {cluster} not found.")
        hosts = self.backend.hosts(cluster)
        if spec.get("hosts") is not None:
            known = {h["host"] for h in hosts}
            unknown = [h for h in spec["hosts"] if h not in known]
            if unknown:
                raise invalid(f"Field 'hosts': {', '.join(map(str, unknown))} not in {cluster}.")
            hosts = [h for h in hosts if h["host"] in set(spec["hosts"])]
        with self._lock:
            running = self._applying.get(cluster)
            if running:
                raise ApiError(
                    "NOT_ALLOWED_IN_CURRENT_STATE",
                    f"Another apply ({running}) is running on cluster {cluster}.",
                )
            tid = self._start(
                req,
                "com.vmware.esx.settings.clusters.software",
                "apply",
                message(
                    "com.vmware.esx.settings.clusters.software.apply",
                    "Remediate the cluster's hosts to its image",
                ),
                lambda task: self._apply(task, cluster, hosts),
            )
            # Set before the task can end: its thread clears it under this same lock.
            self._applying[cluster] = tid[1]
        return tid

    def _apply(self, task: Task, cluster: str, hosts: list[dict]) -> dict:
        try:
            return self._rollout(task, cluster, hosts)
        finally:
            with self._lock:
                self._applying.pop(cluster, None)

    def _rollout(self, task: Task, cluster: str, hosts: list[dict]) -> dict:
        image, commit = self._image(cluster)
        started = now()
        task.progress(total=len(hosts))
        host_status: dict[str, dict] = {}
        done: dict[str, list[str]] = {"OK": [], "SKIPPED": [], "ERROR": []}
        failure = None
        for i, h in enumerate(hosts):
            hid = h["host"]
            begin = now()
            if self._stopping.is_set():
                failure = "The simulated vCenter stopped during remediation."
                break
            steps = {"n": 0}
            try:
                status = self._remediate(task, h, image, commit, steps)
                notes = cmp.notifications()
            except HostOpError as exc:
                status, failure = "ERROR", str(exc) or f"Remediation of host {h['name']} failed."
                notes = cmp.notifications(
                    errors=[cmp.notification(now(), "miglab.vlcm.apply.host", failure)]
                )
            host_status[hid] = {
                "status": status,
                "progress": {
                    "total": steps["n"],
                    "completed": steps["n"] if status != "ERROR" else steps["n"] - 1,
                    "message": message("miglab.vlcm.apply.host", f"{status}: {h['name']}"),
                },
                "start_time": begin,
                "end_time": now(),
                "notifications": notes,
            }
            done[status].append(hid)
            task.progress(completed=i + 1)
            if failure:
                break
        if failure:
            overall = "ERROR"
        elif len(done["SKIPPED"]) == len(hosts):
            overall = "SKIPPED"
        else:
            overall = "OK"
        result = {
            "status": {
                "status": overall,
                "start_time": started,
                "end_time": now(),
                "notifications": cmp.notifications(
                    errors=[cmp.notification(now(), "miglab.vlcm.apply", failure)]
                    if failure
                    else []
                ),
            },
            "commit": commit,
            "host_info": {h["host"]: {"name": h["name"], "is_vsan_witness": False} for h in hosts},
            "host_status": host_status,
            "successful_hosts": sorted(done["OK"]),
            "failed_hosts": sorted(done["ERROR"]),
            "skipped_hosts": sorted(done["SKIPPED"]),
        }
        st = self._managed(cluster)
        with self.store.lock:
            st["last_apply"] = result
            self.store.save()
        try:
            self._scan(cluster, image, commit)
        except Exception:
            print("vlcm-sim: the scan after apply failed:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
        if failure:
            raise TaskFailed(failure, result)
        task.progress(text="Remediation finished")
        return result

    def _remediate(self, task: Task, h: dict, image: dict, commit: str, steps: dict) -> str:
        """One host: "SKIPPED" (compliant) or "OK"; HostOpError when a step fails."""
        hid, name = h["host"], h["name"]

        def step(text: str, call: Callable[[], None] | None = None):
            steps["n"] += 1
            task.progress(text=text)
            if call:
                call()

        step(f"Checking host {name}")
        if h.get("connection_state") != "CONNECTED":
            raise HostOpError(
                f"Host {name} is not connected ({h.get('connection_state')}): cannot remediate it."
            )
        before = self._host_compliance(hid, image, commit)
        if before["status"] == "COMPLIANT":
            return "SKIPPED"
        base = before["base_image"]
        if base["status"] != "COMPLIANT":
            raise HostOpError(
                f"Cannot remediate host {name}: its base image {base['current']['version']} "
                f"differs from the image's {base['target']['version']}; base image remediation "
                "is not simulated."
            )
        paths = {}
        for comp, version in sorted(image["components"].items()):
            found = self._find(comp, version)
            if found is None:
                raise HostOpError(
                    f"Cannot remediate host {name}: component {comp} {version} of the image is "
                    "not in any imported depot."
                )
            paths[comp] = str(self.store.dir / found[1]["file"])
        step(
            f"Entering maintenance mode on host {name}", lambda: self.backend.enter_maintenance(hid)
        )
        step(
            f"Installing the image's components on host {name}",
            lambda: self.backend.apply_components(hid, paths),
        )
        if before["impact"] == "REBOOT_REQUIRED":
            step(f"Rebooting host {name}", lambda: self.backend.reboot(hid))
        step(f"Exiting maintenance mode on host {name}", lambda: self.backend.exit_maintenance(hid))
        step(f"Checking compliance of host {name}")
        after = self._host_compliance(hid, image, commit)
        if after["status"] != "COMPLIANT":
            raise HostOpError(f"Host {name} is not compliant with the image after remediation.")
        return "OK"

    # -- tasks --------------------------------------------------------------------------------

    def _start(self, req: Request, service: str, operation: str, description: dict, work):
        """Register a task and start its thread; the reply to the request: (202, task id)."""
        tid = f"{secrets.token_hex(16)}:{service}"
        task = Task(tid, service, operation, description, req.user)
        with self._tasks_lock:
            self._tasks[tid] = task
        thread = threading.Thread(
            target=self._run_task, args=(task, work), name=f"vlcm-{operation}", daemon=True
        )
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return 202, tid

    def _run_task(self, task: Task, work) -> None:
        with task.lock:
            task.status, task.start_time = "RUNNING", now()
        try:
            result = work(task)
        except TaskFailed as exc:
            with task.lock:
                task.status, task.result = "FAILED", exc.result
                task.error = error_body("ERROR", exc.text, f"{task.service}.{task.operation}")
        except ApiError as exc:
            with task.lock:
                task.status, task.error = "FAILED", exc.body()
        except HostOpError as exc:
            with task.lock:
                task.status = "FAILED"
                task.error = error_body("ERROR", str(exc), f"{task.service}.{task.operation}")
        except Exception:
            print(f"vlcm-sim: task {task.id} failed:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            with task.lock:
                task.status = "FAILED"
                task.error = error_body(
                    "ERROR",
                    "Internal error of the simulated vSphere Lifecycle Manager (see its log).",
                )
        else:
            with task.lock:
                task.status, task.result = "SUCCEEDED", result
                task.completed = task.total
        with task.lock:
            task.end_time = now()

    def task_get(self, req: Request, task: str):
        with self._tasks_lock:
            t = self._tasks.get(task)
        if t is None:
            raise not_found(f"Task {task} not found.")
        return 200, t.info()
