"""Helpers shared by the tests: repository paths and the CLI runner."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SEED = ROOT / "campaigns" / "r750xa-a100-80gb-mig.yml"
BIN = Path(sys.executable).parent


def ansible_env(extra: dict | None = None) -> dict:
    """The environment for running Ansible's tools as a user of this checkout: its ansible.cfg,
    the virtualenv's tools first, and no VMWARE_*/ANSIBLE_*/MIGLAB_CAMPAIGN from the caller."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if k != "MIGLAB_CAMPAIGN" and not k.startswith(("VMWARE_", "ANSIBLE_"))
    }
    environ.update(
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        PATH=f"{BIN}:{os.environ.get('PATH', '')}",
    )
    environ.update(extra or {})
    return environ


def collection_module(name: str):
    """``ansible_collections.miglab.lab.<name>`` (a plugin module of the checkout's collection),
    imported through Ansible's collection loader as Ansible imports it: a plain import from
    ``collections/`` would leave a package without the collection's metadata behind, which breaks
    every later import through the loader (so the order the tests run in would matter)."""
    import importlib

    from ansible.plugins.loader import init_plugin_loader
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    if AnsibleCollectionConfig.collection_finder is None:
        init_plugin_loader([str(ROOT / "collections")])
    return importlib.import_module(f"ansible_collections.miglab.lab.{name}")


def load_script(path: Path, name: str):
    """A Python program without the .py suffix (a stand-in under miglab/sim/standins), imported
    as module ``name`` so a test can call its functions."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run the real `miglab` entry point in a subprocess (exit codes and streams as users see)."""
    return subprocess.run(
        [sys.executable, "-m", "miglab.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_args(args, *, cwd, env, timeout=300) -> subprocess.CompletedProcess:
    """Run a command (Paths allowed) and capture its output as text."""
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def stdout_if_ok(res: subprocess.CompletedProcess) -> str:
    """The command's stdout; the test fails with the tail of both streams if it did not exit 0."""
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout


def run_module(
    name: str, args: dict, *, check: bool = False, diff: bool = False, env: dict | None = None
) -> dict:
    """Result dict of ``miglab.lab.<name>`` (``failed``/``changed``/... as Ansible returns),
    plus ``_stdout``: everything the run printed (to check that secrets never appear)."""
    cmdline = " ".join(x for x in ("--check" if check else "", "--diff" if diff else "") if x)
    envvars = {
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "ANSIBLE_NOCOLOR": "1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    }
    envvars.update(env or {})
    import ansible_runner

    with tempfile.TemporaryDirectory(prefix="miglab-runner-") as tmp:
        r = ansible_runner.run(
            private_data_dir=tmp,
            host_pattern="localhost",
            inventory="localhost ansible_connection=local",
            module=f"miglab.lab.{name}",
            module_args=json.dumps(args) if args else None,
            cmdline=cmdline or None,
            envvars=envvars,
            quiet=True,
        )
        result = None
        for event in r.events:
            if event.get("event") in ("runner_on_ok", "runner_on_failed"):
                result = dict(event["event_data"]["res"])
                result.setdefault("failed", event["event"] == "runner_on_failed")
        stdout = r.stdout.read()
        if result is None:
            raise AssertionError(f"no module result; status {r.status}, rc {r.rc}:\n{stdout}")
        result["_stdout"] = stdout
        return result


def edit_mllog(text: str, values: dict | None = None, drop: tuple = ()) -> str:
    """Change the value of the first line of each key in ``values``; drop lines of ``drop``."""
    values = dict(values or {})
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith(":::MLLOG"):
            rec = json.loads(line[len(":::MLLOG ") :])
            if rec["key"] in drop:
                continue
            if rec["key"] in values:
                rec["value"] = values.pop(rec["key"])
                line = ":::MLLOG " + json.dumps(rec) + "\n"
        out.append(line)
    assert not values, f"keys not in the log: {values}"
    return "".join(out)


class CountingProxy:
    """A TCP proxy on 127.0.0.1 in front of ``target_port``; ``count`` is the number of
    connections it accepted. ``close()`` makes the target unreachable through it: new
    connections are refused and open ones cut (the fault "vCenter unreachable")."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.count = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._open: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            with self._lock:
                self.count += 1
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._server.close()
        for s in self._open:
            with contextlib.suppress(OSError):
                s.close()


@contextlib.contextmanager
def cpu_hog(processes: int | None = None):
    """Busy loops on every CPU while the block runs: the load under which races show (a test's
    verdict must not depend on it; only on what the code under test does)."""
    n = processes or os.cpu_count() or 2
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(n)
    ]
    try:
        yield hogs
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()


def wait_ready(barriers: list[Path], procs: list[subprocess.Popen]) -> None:
    """Until every run of a two-phase start barrier says ready (with a deadline, not a guess at
    how long loading takes); a run that ended or failed before is an error."""
    import time

    deadline = time.monotonic() + 300
    while not all((b / "state").is_file() for b in barriers):
        for p in procs:
            assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "the SUTs did not get ready within 300 s"
        time.sleep(0.05)
    states = {str(b): (b / "state").read_text().strip() for b in barriers}
    assert set(states.values()) == {"ready"}, states


def release_together(barriers: list[Path], procs: list[subprocess.Popen], lead_s: float = 0.5):
    """The controller's side of the two-phase start barrier (as the mlperf role does it): once
    every run is ready, one start moment for all, ``lead_s`` from now (epoch seconds)."""
    import time

    wait_ready(barriers, procs)
    start_at = time.time() + lead_s
    for b in barriers:
        (b / "go").write_text(f"{start_at}\n")
    return start_at


# LoadGen settings whose verdict follows from query counts only: no minimum duration (the rule a
# faster or slower machine flips) and a Server latency bound no machine misses (60 s). Server runs
# last as long as their arrival schedule (1,000 queries at 500 QPS: 2 s whatever the machine), so
# runs given one start moment overlap.
COUNTED = ["--min-duration-ms", "0", "--performance-sample-count", "256", "--threads", "1"]
OFFLINE_COUNTED = [*COUNTED, "--min-query-count", "4096"]
SERVER_COUNTED = [*COUNTED, "--min-query-count", "1000", "--target-qps", "500",
                  "--target-latency-ms", "60000", "--raw-seconds", "0"]  # fmt: skip


def wait_until(predicate, timeout: float = 60.0, step: float = 0.05) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass (a deadline, not a guess at
    how long something takes); its last answer."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def vcenter_args(sim) -> dict:
    """The vSphere modules' connection options for a running simulator (``miglab.sim.vcenter``)."""
    return {
        "hostname": sim.host,
        "port": sim.port,
        "username": sim.username,
        "password": sim.password,
        "ca_bundle": sim.ca_file,
    }


@contextlib.contextmanager
def clock_responder(host: str = "127.0.0.1"):
    """miglab's SNTP responder on ``host`` (an unused port, answering with this machine's
    clock) in a thread, for as long as the block runs; yields the port."""
    from miglab.mlperf.guest import clock as guest_clock

    sock = guest_clock.bind(host, 0)
    stop = threading.Event()
    t = threading.Thread(target=guest_clock.serve, args=(sock,), kwargs={"stop": stop.is_set})
    t.start()
    try:
        yield sock.getsockname()[1]
    finally:
        stop.set()
        t.join()
        sock.close()


ESXI_STANDIN = ROOT / "miglab" / "sim" / "standins" / "esxi"


def esxi_standin_host(tmp_path: Path, bundle_esxi: str, *init: str):
    """An ESXi stand-in (esxi_standin.py) on a temporary state file, run as ``run("esxcli",
    ...)``; ``run.bundle(driver, flavour="AIE", **kw)`` writes a stand-in bundle for the ESXi
    release ``bundle_esxi`` (make-bundle.py); ``init``: the arguments of ``esxi-standin init``."""
    env = {
        "ESXI_STANDIN_STATE": str(tmp_path / "state" / "state.json"),
        "ESXI_STANDIN_NVSMI_LINK": str(tmp_path / "nvidia-smi"),
        "ESXI_STANDIN_NVSMI_TARGET": "/bin/true",
        "ESXI_STANDIN_DAEMON_LINK": str(tmp_path / "init.d" / "nvdGpuMgmtDaemon"),
        "ESXI_STANDIN_DAEMON_TARGET": "/bin/true",
        "ESXI_STANDIN_VCENTER_DIR": str(tmp_path / "vcenter"),
        "PATH": "/usr/bin:/bin",
    }

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ESXI_STANDIN / "esxi_standin.py"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def bundle(driver: str, flavour: str = "AIE", **kw) -> str:
        make = load_script(ESXI_STANDIN / "make-bundle.py", "miglab_make_bundle")
        return str(make.write(driver, bundle_esxi, tmp_path / "bundles", flavour=flavour, **kw)[0])

    run.bundle, run.tmp = bundle, tmp_path
    res = run("esxi-standin", "init", *init)
    assert res.returncode == 0, res.stderr
    return run


def require_sim_lab() -> None:
    """Skip unless a simulated lab can run here (root, podman, not MIGLAB_SKIP_SIM=1), then bring
    the checkout's own lab down: it would hold the same simulator, containers and ports."""
    import shutil

    import pytest

    if os.environ.get("MIGLAB_SKIP_SIM", "0") == "1":
        pytest.skip("MIGLAB_SKIP_SIM=1")
    if os.geteuid() != 0 or not shutil.which("podman"):
        pytest.skip("the simulated lab needs root and podman")
    subprocess.run([str(BIN / "miglab"), "sim", "down"], cwd=ROOT, env=ansible_env(),
                   capture_output=True, timeout=300, check=False)  # fmt: skip


def play_recap(stdout: str) -> dict[str, dict[str, int]]:
    """ansible-playbook's PLAY RECAP -> {host: {ok, changed, failed, ...}}."""
    import re

    out = {}
    for m in re.finditer(r"^(\S+)\s+:\s+(.*)$", stdout.split("PLAY RECAP", 1)[-1], re.M):
        out[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return out
