#!/usr/bin/env python3
"""The simulated lab's vCenter simulator process (also the ESXi molecule scenarios'), with the
reboot link to the ESXi stand-in containers and the guest keeper.

    python -m miglab.sim.daemon start --inventory LAB.yml --out DIR [--reboot-seconds S]
                                      [--extra JSON] [--max-life S] [--guest-image IMAGE]
                                      [--depot-dir DIR]
    python -m miglab.sim.daemon stop --out DIR

``start`` runs the simulator (miglab/sim/vcsim through miglab/sim/vcenter.py) for the hosts of a
miglab lab inventory -- the same file the campaign plan reads, so hosts, GPUs and PCI ids agree --
in a background process, and returns once DIR/vcsim.json holds the connection (``hostname``,
``port``, ``username``, ``password``, ``validate_certs``, ``ca_bundle``; the role variable
``miglab_vcenter`` as is). Running twice is a no-op while it runs. ``--extra`` adds lab-file keys
per host (``{"esxi-gone": {"reboot_never_returns": true}}``).

The link: vCenter reboots a host with RebootHost_Task; the matching stand-in container (same name
as the host) must then "boot" before vCenter shows the host connected again, as a real host is
connected only once it has booted. The simulator writes ``DIR/boots/<host>.down`` (the reboot's
number) and keeps the host away until ``DIR/boots/<host>.up`` holds that number; the keeper
(every 0.1 s) runs ``podman exec HOST esxi-standin boot-request`` for such a reboot, then writes
the number. No timing is involved: however slow the machine, a role that waits for the host finds
the stand-in booted (before, a 1 s timer brought the host back and the keeper had to notice the
away phase in time; a loaded machine once read the MIG modes still pending).

With ``--guest-image`` (the simulated lab, ``miglab/sim/lab.py``) it also gives every VM that is
powered on in the simulator a guest: a systemd container of that image named like the VM (label
``miglab.sim=guest``), started when the VM powers on, stopped when it powers off (its disk, the
container, stays) and removed when the VM is deleted. ``DIR/guests.json`` says which guest runs.

An image-managed cluster (the inventory's ``miglab_sim_cluster_image: true``, issue 19): the
process also runs the simulated vLCM's REST server (``miglab.sim.vlcm_lab``; the simulator serves
it as ``https://127.0.0.1:PORT/api``) and a plain-HTTP server of ``--depot-dir`` (default
``DIR/bundles``, where ``miglab sim up`` writes the lab's bundles) for vCenter to pull depots from.
``DIR/vlcm.json`` says where (``api_url``, ``rest_url``, ``depot_url``, ``depot_dir``,
``cluster``); ``DIR/bundles.json``, when there, gets each served bundle's ``url``. The vLCM state
(``DIR/vlcm``) starts afresh with each simulator, as its hosts do.

The process stops on ``stop``, SIGTERM, after ``--max-life`` seconds (default 1800, 0: never) or
when none of the host containers exists any more (a scenario destroyed without its cleanup); the
simulator stops with it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from miglab.sim import vgpu_view


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _pid(out: Path) -> int | None:
    with contextlib.suppress(FileNotFoundError, ValueError):
        pid = int((out / "daemon.pid").read_text())
        return pid if _alive(pid) else None
    return None


def start(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if _pid(out) and (out / "vcsim.json").exists():
        print((out / "vcsim.json").read_text(), end="")
        return 0
    (out / "vcsim.json").unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "miglab.sim.daemon", "run", "--inventory", args.inventory,
           "--out", str(out),
           "--reboot-seconds", str(args.reboot_seconds), "--extra", args.extra,
           "--max-life", str(args.max_life), "--guest-image", args.guest_image,
           "--depot-dir", args.depot_dir]  # fmt: skip
    with open(out / "daemon.log", "ab") as log:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    (out / "daemon.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + 120  # includes building the simulator when it is out of date
    while time.monotonic() < deadline:
        if (out / "vcsim.json").exists():
            print((out / "vcsim.json").read_text(), end="")
            return 0
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    print((out / "daemon.log").read_text()[-4000:], file=sys.stderr)
    print("vcsim_daemon: the simulator did not start", file=sys.stderr)
    with contextlib.suppress(OSError):
        proc.terminate()
    return 1


def stop(args) -> int:
    out = Path(args.out)
    pid = _pid(out)
    if pid:
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if not _alive(pid):
                break
            time.sleep(0.1)
    (out / "daemon.pid").unlink(missing_ok=True)
    (out / "vcsim.json").unlink(missing_ok=True)
    (out / VLCM_JSON).unlink(missing_ok=True)
    return 0


KEEPER_LAB_GONE = 3  # the keeper's exit status when no stand-in host container is left


def run(args) -> int:
    """The simulator's process: the vCenter simulator, and the keeper (reboot link + guest
    keeper) as a child process it restarts whenever it dies, so a keeper bug never takes the
    simulator down (``DIR/keeper.json``: its pid and how often it was restarted)."""
    from miglab.adapters.inventory import load_lab
    from miglab.core.catalog import load_catalog
    from miglab.sim import vcenter as vcsim_lab

    out = Path(args.out)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    vcsim_lab.build()
    catalog = load_catalog()
    extra = json.loads(args.extra or "{}")
    boots = out / BOOTS
    shutil.rmtree(boots, ignore_errors=True)  # a new simulator numbers its reboots from 1 again
    boots.mkdir(parents=True)
    extra.setdefault("*", {}).setdefault("boot_ack_dir", str(boots))
    # Each host's running vGPUs (as its vGPU manager knows them) and services, written by the
    # simulator; the ESXi stand-ins mount the folder (nvidia-smi vgpu -q / mig -lgi, SSH on or
    # off). The folder stays (containers have it mounted); a new simulator replaces the files.
    seen = out / HOSTS_SEEN
    seen.mkdir(parents=True, exist_ok=True)
    for old in seen.glob("*.json"):
        old.unlink(missing_ok=True)
    extra["*"].setdefault("host_state_dir", str(seen))
    image_managed = vcsim_lab.sim_settings(args.inventory)["cluster_image"]
    lab = vcsim_lab.lab_json(
        load_lab(args.inventory, catalog),
        catalog,
        host_extra=extra,
        cluster_image_managed=image_managed,
    )
    names = [h["name"] for h in lab["hosts"]]
    (out / VLCM_JSON).unlink(missing_ok=True)
    vlcm_state = out / VLCM_STATE
    shutil.rmtree(vlcm_state, ignore_errors=True)  # a new vCenter: no image, depot or task yet
    depot_dir = Path(args.depot_dir) if args.depot_dir else out / "bundles"
    sim_args = {"vlcm_state_dir": vlcm_state, "depot_dir": depot_dir.absolute()}
    with vcsim_lab.Vcsim(lab, reboot_seconds=args.reboot_seconds, **sim_args) as sim:
        ca = out / "ca.pem"
        shutil.copyfile(sim.ca_file, ca)
        conn = {
            "hostname": sim.host,
            "port": sim.port,
            "username": sim.username,
            "password": sim.password,
            "validate_certs": True,
            "ca_bundle": str(ca),
        }
        tmp = out / "vcsim.json.tmp"
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # it holds the password
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(conn, indent=2) + "\n")
        if sim.vlcm:
            _write_vlcm_json(out, sim, lab)
        tmp.replace(out / "vcsim.json")
        print(f"vcsim {sim.url} for {', '.join(names)}", flush=True)
        if sim.vlcm:
            print(f"vLCM {sim.api_url} (REST {sim.rest_url}, depots {sim.depot_url})", flush=True)
        keep_cmd = [sys.executable, "-m", "miglab.sim.daemon", "keep", "--out", str(out),
                    "--hosts", json.dumps(names), "--guest-image", args.guest_image]  # fmt: skip
        restarts = 0
        keeper = _spawn_keeper(keep_cmd, out, restarts)
        started = time.monotonic()
        try:
            while not stopping and (
                not args.max_life or time.monotonic() - started < args.max_life
            ):
                rc = keeper.poll()
                if rc == KEEPER_LAB_GONE:
                    print("no stand-in container left: stopping", flush=True)
                    break
                if rc is not None:
                    restarts += 1
                    print(f"{time.strftime('%H:%M:%S')} keeper exited (status {rc}): restarting"
                          f" ({restarts})", flush=True)  # fmt: skip
                    time.sleep(min(restarts, 5))  # a keeper that cannot start: not a busy loop
                    keeper = _spawn_keeper(keep_cmd, out, restarts)
                time.sleep(0.2)
        finally:
            keeper.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                keeper.wait(timeout=30)
    (out / "vcsim.json").unlink(missing_ok=True)
    (out / VLCM_JSON).unlink(missing_ok=True)
    return 0


def _write_vlcm_json(out: Path, sim, lab: dict) -> None:
    """Where the simulated vLCM and the depot server are (``DIR/vlcm.json``), and each served
    bundle's URL in ``DIR/bundles.json`` (``miglab sim up``'s), both before vcsim.json appears."""
    from miglab.sim.vlcm_lab import record_bundle_urls

    depots = sim.vlcm_lab.depots
    info = {
        "api_url": sim.api_url,
        "rest_url": sim.rest_url,
        "depot_url": sim.depot_url,
        "depot_dir": str(depots.folder) if depots else None,
        "cluster": lab.get("cluster", "cluster1"),
    }
    tmp = out / (VLCM_JSON + ".tmp")
    tmp.write_text(json.dumps(info, indent=2) + "\n")
    tmp.replace(out / VLCM_JSON)
    if depots is not None and (out / "bundles.json").is_file():
        try:
            record_bundle_urls(out / "bundles.json", depots)
        except (OSError, ValueError) as exc:  # the lab still runs; the log says why
            print(f"bundles.json: no URLs recorded: {exc}", flush=True)


def _spawn_keeper(cmd: list[str], out: Path, restarts: int) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)  # its output: the daemon's log
    tmp = out / "keeper.json.tmp"
    tmp.write_text(json.dumps({"pid": proc.pid, "restarts": restarts}) + "\n")
    tmp.replace(out / "keeper.json")
    return proc


def keep(args) -> int:
    """The keeper (a child of ``run``): every 0.1 s, a host the simulator rebooted gets its
    stand-in booted (``boot_the_standin``); with ``--guest-image``, the guest keeper. Exits
    KEEPER_LAB_GONE when no host container is left (checked every 30 s)."""
    from pyVim.connect import SmartConnect

    out = Path(args.out)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    conn = json.loads((out / "vcsim.json").read_text())
    ctx = ssl.create_default_context(cafile=conn["ca_bundle"])
    si = SmartConnect(host=conn["hostname"], port=conn["port"], user=conn["username"],
                      pwd=conn["password"], sslContext=ctx, httpConnectionTimeout=60)  # fmt: skip
    names = json.loads(args.hosts)
    boots = out / BOOTS
    guests = GuestKeeper(si, args.guest_image, out) if args.guest_image else None
    checked = time.monotonic()
    try:
        while not stopping:
            if guests:
                try:
                    guests.poll()
                except Exception as exc:  # noqa: BLE001 - one bad poll must not end the lab
                    print(f"{time.strftime('%H:%M:%S')} guest keeper: poll failed: {exc!r}",
                          flush=True)  # fmt: skip
            for name in names:
                boot_the_standin(boots, name)
            if time.monotonic() - checked > 30:  # containers gone: the scenario is over
                checked = time.monotonic()
                if not any(_container_exists(n) for n in names):
                    return KEEPER_LAB_GONE
            time.sleep(0.1)
    finally:
        if guests:
            guests.close()
    return 0


# Options every simulated VM's container runs with: systemd as PID 1; Docker works inside
# (privileged, private cgroup namespace, /var/lib/docker on tmpfs) as in guest_base's scenario.
GUEST_RUN_OPTIONS = (
    "--systemd=always",
    "--privileged",
    "--cgroupns=private",
    "--tmpfs=/var/lib/docker:rw,exec,size=4g",
    "--ulimit",
    "nofile=20000:20000",
    "--ulimit",
    "nproc=4096:4096",
)
# The lab's image archives (the MLPerf runtime image's, miglab/sim/lab.py), read-only in every
# guest like an attached disk: the guests' Docker starts empty (/var/lib/docker is a tmpfs) and
# the mlperf role loads the image from there (mlperf_image_archive). The controller's folder: the
# environment's MIGLAB_SIM_GUEST_IMAGES (set by miglab sim up).
GUEST_IMAGES_DIR = "/var/lib/miglab-sim/images"


def guest_run_options() -> tuple[str, ...]:
    """GUEST_RUN_OPTIONS, and the lab's image archives mounted read-only when there are some."""
    images = os.environ.get("MIGLAB_SIM_GUEST_IMAGES", "")
    mount = (f"--volume={images}:{GUEST_IMAGES_DIR}:ro",) if images else ()
    return GUEST_RUN_OPTIONS + mount


class GuestKeeper:
    """One guest container per powered-on VM of the simulator (the simulated lab's guests).

    ``poll()`` (at most every 0.5 s) reads every VM's power state in one property-collector call
    and hands the differences to a small thread pool: power on -> start (or first run) the VM's
    container, power off -> stop it, VM gone -> remove it. A container that stops by itself
    (killed: the fault of a VM dying mid-benchmark) powers its VM off in the simulator, as vCenter
    shows a VM whose VMX process died; the next power-on starts the container again.
    """

    LABEL = "miglab.sim=guest"

    def __init__(self, si, image: str, out: Path) -> None:
        from pyVmomi import vim, vmodl

        self.image, self.out = image, out
        self._vim, self._vmodl = vim, vmodl
        self._si = si
        view = si.content.viewManager.CreateContainerView(
            si.content.rootFolder, [vim.VirtualMachine], True
        )
        traverse = vmodl.query.PropertyCollector.TraversalSpec(
            name="view", path="view", skip=False, type=vim.view.ContainerView
        )
        self._spec = vmodl.query.PropertyCollector.FilterSpec(
            objectSet=[
                vmodl.query.PropertyCollector.ObjectSpec(obj=view, skip=True, selectSet=[traverse])
            ],
            propSet=[
                vmodl.query.PropertyCollector.PropertySpec(
                    type=vim.VirtualMachine, pathSet=["name", "runtime.powerState"]
                )
            ],
        )
        # VM name -> last power state acted on. A keeper restarted after a crash starts from the
        # containers already there: each is converged to its VM's state, or removed with no VM.
        self._known: dict[str, str] = dict.fromkeys(podman_containers(self.LABEL), "unknown")
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="guest")
        self._busy: dict[str, object] = {}
        self._lock = threading.Lock()
        self._last = 0.0
        self._last_crash_check = 0.0
        self._refs: dict[str, object] = {}
        self._write_state()

    def poll(self) -> None:
        if time.monotonic() - self._last < 0.5:
            return
        self._last = time.monotonic()
        states = {}
        for obj in self._si.content.propertyCollector.RetrieveContents([self._spec]):
            props = {p.name: p.val for p in obj.propSet}
            if "name" not in props:  # a VM being created or destroyed: not all there yet
                continue
            states[props["name"]] = str(props.get("runtime.powerState", ""))
            self._refs[props["name"]] = obj.obj
        self._power_off_crashed(states)
        for name, state in states.items():
            if self._known.get(name) != state and self._idle(name):
                self._known[name] = state
                self._submit(name, self._start if state == "poweredOn" else self._stop)
        for name in [n for n in self._known if n not in states]:
            if self._idle(name):
                del self._known[name]
                self._submit(name, self._remove)

    def _power_off_crashed(self, states: dict[str, str]) -> None:
        """A powered-on VM whose container has exited (killed): power the VM off (every 2 s)."""
        if time.monotonic() - self._last_crash_check < 2.0:
            return
        self._last_crash_check = time.monotonic()
        on = [n for n, st in states.items() if st == "poweredOn" and self._known.get(n) == st]
        if not on:
            return
        containers = podman_containers(self.LABEL)
        for name in on:
            if self._idle(name) and containers.get(name, "running") not in ("running", "created"):
                try:
                    self._refs[name].PowerOffVM_Task()
                    what = f"container {containers[name]}: VM powered off (it died)"
                except Exception as exc:  # noqa: BLE001 - logged; retried on the next check
                    what = f"container {containers[name]}: power-off failed: {exc}"
                print(f"{time.strftime('%H:%M:%S')} guest {name}: {what}", flush=True)

    def _idle(self, name: str) -> bool:
        fut = self._busy.get(name)
        return fut is None or fut.done()

    def _submit(self, name: str, action) -> None:
        self._busy[name] = self._pool.submit(self._run, name, action)

    def _run(self, name: str, action) -> None:
        try:
            what = action(name)
        except Exception as exc:  # noqa: BLE001 - logged; the next change retries
            what = f"failed: {exc}"
        print(f"{time.strftime('%H:%M:%S')} guest {name}: {what}", flush=True)
        self._write_state()

    def _start(self, name: str) -> str:
        vgpus = self._write_hardware(name)
        if _container_exists(name):
            _podman("start", name)
            return f"started{vgpus}"
        # privileged + private cgroup namespace + /var/lib/docker on tmpfs: Docker runs inside
        # (as in the guest_base molecule scenario); systemd is PID 1 like in a VM.
        _podman(
            "run",
            "-d",
            "--name",
            name,
            "--hostname",
            name,
            "--label",
            self.LABEL,
            *guest_run_options(),
            f"--volume={self._hardware_dir(name)}:{vgpu_view.GUEST_DIR}:ro",
            self.image,
            "/sbin/init",
        )
        return f"created from {self.image}{vgpus}"

    def _hardware_dir(self, name: str) -> Path:
        if not name or name in (".", "..") or "/" in name:
            raise ValueError(f"VM name {name!r} cannot name a folder")
        return (
            self.out.absolute() / HARDWARE / name
        )  # podman takes a relative one for a volume name

    def _write_hardware(self, name: str) -> str:
        """The VM's virtual hardware description (miglab.sim.vgpu_view), replaced before every
        start: a powered-off VM may have been given another vGPU. Read from the simulator as
        vCenter shows it; when it cannot be read the old file goes (the guest's nvidia-smi then
        shows its default vGPU) and the container starts all the same."""
        folder = self._hardware_dir(name)
        try:
            devices = self._refs[name].config.hardware.device
            types = vgpu_view.vgpu_types_of(devices)
            vgpu_view.write_description(folder, vgpu_view.describe_vm(name, types))
        except Exception as exc:  # noqa: BLE001 - the VM still starts; the log says why
            folder.mkdir(parents=True, exist_ok=True)
            (folder / vgpu_view.FILE).unlink(missing_ok=True)
            return f" (no vGPU description: {type(exc).__name__}: {str(exc)[:200]})"
        return f" (vGPU: {', '.join(types)})" if types else " (no vGPU)"

    def _stop(self, name: str) -> str:
        if not _container_exists(name):
            return "no container"
        _podman("stop", "-t", "10", name)
        return "stopped"

    def _remove(self, name: str) -> str:
        _podman("rm", "-f", "-t", "5", name)
        with contextlib.suppress(ValueError):
            shutil.rmtree(self._hardware_dir(name), ignore_errors=True)
        return "removed"

    def _write_state(self) -> None:
        with self._lock:
            guests = podman_containers(self.LABEL)
            tmp = self.out / "guests.json.tmp"
            tmp.write_text(json.dumps(guests, indent=2, sort_keys=True) + "\n")
            tmp.replace(self.out / "guests.json")

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def podman_containers(label: str) -> dict[str, str]:
    """Name -> state (running, exited, ...) of the containers with this label."""
    res = subprocess.run(
        ["podman", "ps", "-a", "--filter", f"label={label}", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        rows = json.loads(res.stdout or "[]")
    except json.JSONDecodeError:
        return {}
    return {(r.get("Names") or ["?"])[0]: str(r.get("State", "")) for r in rows}


def _podman(*args: str) -> None:
    res = subprocess.run(["podman", *args], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"podman {args[0]}: {res.stderr.strip() or res.returncode}")


BOOTS = "boots"  # the reboot link's folder under --out (the simulator's boot_ack_dir)
# Each VM's virtual hardware description (miglab.sim.vgpu_view), <out>/hardware/<vm>/vgpu.json,
# mounted read-only in the VM's container at vgpu_view.GUEST_DIR.
HARDWARE = "hardware"
HOSTS_SEEN = "vcenter"  # what vCenter shows of each host (vGPUs, services): host_state_dir
VLCM_JSON = "vlcm.json"  # where the simulated vLCM and the depot server listen (image clusters)
VLCM_STATE = "vlcm"  # the simulated vLCM's state folder under --out


def _read_number(path: Path) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return 0


def boot_the_standin(boots: Path, name: str) -> bool:
    """The reboot link for one host: when the simulator has rebooted it (``<name>.down`` holds a
    reboot number above ``<name>.up``), the stand-in container boots (``esxi-standin
    boot-request``), then ``<name>.up`` gets the number and the simulator shows the host
    connected again. True when a boot was done. A stand-in that cannot take it (its container
    gone) is tried again on the next round; its host stays away meanwhile."""
    down = _read_number(boots / f"{name}.down")
    if down <= _read_number(boots / f"{name}.up"):
        return False
    res = subprocess.run(
        ["podman", "exec", name, "/opt/esxi-standin/bin/esxi-standin", "boot-request", "vcenter"],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        print(f"{time.strftime('%H:%M:%S')} {name} rebooted: boot request failed: "
              f"{res.stderr.strip()}", flush=True)  # fmt: skip
        return False
    tmp = boots / f"{name}.up.tmp"
    tmp.write_text(f"{down}\n")
    tmp.replace(boots / f"{name}.up")
    print(f"{time.strftime('%H:%M:%S')} {name} rebooted ({down}): stand-in booted", flush=True)
    return True


def _container_exists(name: str) -> bool:
    res = subprocess.run(["podman", "container", "exists", name], check=False)
    return res.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("start", "run"):
        p = sub.add_parser(name)
        p.add_argument("--inventory", required=True)
        p.add_argument("--out", required=True)
        p.add_argument("--reboot-seconds", type=float, default=1.0)
        p.add_argument("--extra", default="{}")
        p.add_argument("--max-life", type=float, default=1800)
        p.add_argument("--guest-image", default="")
        p.add_argument(
            "--depot-dir", default="", help="folder served for vLCM depots (default OUT/bundles)"
        )
    sub.add_parser("stop").add_argument("--out", required=True)
    p = sub.add_parser("keep")
    p.add_argument("--out", required=True)
    p.add_argument("--hosts", required=True, help="JSON list of the stand-in hosts' names")
    p.add_argument("--guest-image", default="")
    args = ap.parse_args()
    return {"start": start, "stop": stop, "run": run, "keep": keep}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
