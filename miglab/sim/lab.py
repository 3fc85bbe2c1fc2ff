#!/usr/bin/env python3
"""The built-in simulated lab (``miglab sim up|down|status``): vCenter, ESXi hosts and guest VMs
on one Linux machine, for demos and the end-to-end tests (test infrastructure; needs root and
podman, as ``miglab/sim/build-images.sh``).

What ``up`` starts for a lab inventory (default ``inventories/sim``: one R750xa-like host with
4x A100 80GB PCIe):

* **vCenter**: the project's vcsim (``miglab/sim/vcsim``, VMware's simulator) with the lab's hosts,
  GPUs and vGPU types, TLS with a throwaway CA -- ``.cache/sim/vcsim.json`` holds the connection
  (the inventory's ``miglab_vcenter``);
* **ESXi hosts**: one ESXi shell stand-in container per host (``miglab/sim/standins/esxi``: esxcli,
  vmware -vl, nvidia-smi in ESXi's formats), named like the host, reached over SSH; fresh: no
  NVIDIA driver, MIG off, graphics "shared" -- the hosts phase has real work to do. The NVIDIA
  host driver bundle (a stand-in) lies on its datastore (``.cache/sim/bundles.json``);
* **guest VMs**: for every VM that is powered on in vcsim, a Debian 12 systemd container named
  like the VM (``miglab.sim.daemon``'s guest keeper), started from the **golden image**
  ``localhost/miglab-sim-guest`` -- the guest roles and the MLPerf preparation applied once and
  committed (``golden``), as a real lab clones VMs from a template. The guests have no GPU: the
  MLPerf runs use the reference backend on CPU with tiny models and say so (``simulated``).

**vLCM** (issue 19): with ``miglab_sim_cluster_image: true`` in the inventory the cluster is managed
by a single image (``lifecycleManaged``); the simulator serves the simulated vLCM REST API at
``https://127.0.0.1:PORT/api`` and the bundles folder over plain HTTP (``.cache/sim/vlcm.json``;
each bundle's ``url`` in ``bundles.json``, for ``esxi_vgpu_driver_bundle_url``). Hosts with
``miglab_host_esxi_version: "8.0.3"`` run ESXi 8.0 U3 (stand-in and simulator), and vCenter is
8.0.3 then; their NVIDIA bundles are the ESXi 8 ones.

``down`` stops the simulator and removes every container of the lab (vcsim keeps its state in
memory: the VMs are gone with it). ``status`` prints what runs. ``up`` twice is a no-op: the
simulator binary and the stand-ins are stamped in the project's ``.cache``; the images are the
machine's (podman's storage), so each carries the hash of what it was built from as its label
``miglab.recipe``, and another project on the machine reuses them while that matches.

Faults for the tests: ``MIGLAB_SIM_FAULTS`` (JSON, host name -> lab-file keys of the simulator,
e.g. ``{"esxi-01.sim.miglab.test": {"reboot_never_returns": true}}``) at ``up``; and, in a lab
that is up, the file ``.cache/sim/faults/reboot-hangs`` (``REBOOT_HANGS``): while it exists, a
host that reboots does not come back (it stays ``notResponding``, as an ESXi host hung in its
boot); removing it lets the host finish booting.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

from miglab.adapters.project import cache_dir, default_inventory, project_dir

# What the lab is built from: the package's own files (a checkout's or an installed wheel's).
PACKAGE = Path(str(resources.files("miglab.sim")))
# What it builds and keeps: the project's .cache (the project: the current directory, or
# --project-dir / MIGLAB_PROJECT_DIR, set before this module is imported).
CACHE = cache_dir()
SIM_DIR = CACHE / "sim"
STANDINS = CACHE / "standins"
WHEELHOUSE = CACHE / "mlperf-wheelhouse"
DAEMON = ("-m", "miglab.sim.daemon")  # the simulator + guest keeper process
MAKE_BUNDLE = PACKAGE / "standins" / "esxi" / "make-bundle.py"
GUEST_BASE_IMAGE = "localhost/miglab-sim-guest-base:latest"
GOLDEN_IMAGE = os.environ.get("MIGLAB_SIM_GUEST_IMAGE", "localhost/miglab-sim-guest:latest")
GOLDEN_BUILDER = "miglab-sim-golden"
REBOOT_HANGS = SIM_DIR / "faults" / "reboot-hangs"
GOLDEN_ROLES = ("guest_base", "guest_vgpu_driver", "guest_container_toolkit", "mlperf")
LABEL = "miglab.sim"
RECIPE_LABEL = "miglab.recipe"  # the images' label: what they were built from (see the scripts)
# The simulated hosts' driver bundle (the GRID guest driver stand-in is of the same branch).
HOST_DRIVER = ("535.216.01", "7.0.2")
ESXI_RELEASE = "7.0.3"  # a host's ESXi release unless its miglab_host_esxi_version says
HOST_DRIVER_ESXI_8 = "8.0.0"  # the bundles' ESXi release (NVD-AIE-800) when every host runs 8.x
# The guests' wheelhouse (mlperf_wheelhouse): the runtimes of the reference backend's SUTs, and
# jinja2 and pyyaml for the nvidia backend (its session runs in a virtualenv beside the harness's
# container: its templates, the GPU catalog).
RUNTIME_PACKAGES = ("mlcommons-loadgen", "numpy", "onnxruntime", "onnx", "jinja2", "pyyaml")
# The MLPerf runtime image of the simulated VMs (the mlperf role's mlperf_runtime container): the
# Debian 12 base + its python3 + what the slice-model SUT needs from the wheelhouse, no miglab (the
# role mounts its wheel's code). Its `docker save` archive lies in IMAGES, mounted read-only into
# every guest (miglab.sim.daemon.guest_run_options), where the role loads it.
IMAGES = SIM_DIR / "images"
RUNTIME_IMAGE = "localhost/miglab-sim-mlperf-runtime:latest"
RUNTIME_ARCHIVE = "mlperf-runtime.tar"
RUNTIME_IMAGE_PACKAGES = ("mlcommons-loadgen", "numpy")
# As NGC's CUDA images say what they need (NVIDIA_REQUIRE_CUDA: the driver's CUDA, checked by the
# toolkit's hook and, first, by the role): here the GRID stand-in's 535 branch, CUDA 12.2.
RUNTIME_CONTAINERFILE = """\
# miglab's simulated lab: the MLPerf runtime image (miglab/sim/lab.py build_runtime_image).
ARG BASE
FROM $BASE
# make: NVIDIA's harness runs its steps with make inside its container (the NGC bases have it);
# the simulated lab's stand-in harness builds its image on this one.
RUN apt-get install -y -qq --no-install-recommends make >/dev/null && apt-get clean
COPY site/ /usr/local/lib/python3.11/dist-packages/
ENV NVIDIA_VISIBLE_DEVICES=all \\
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \\
    NVIDIA_REQUIRE_CUDA="cuda>=12.2"
CMD ["python3"]
"""


class SimError(RuntimeError):
    """A step of the simulated lab failed (message says which and why)."""


def log(msg: str) -> None:
    print(f"[sim] {msg}", file=sys.stderr, flush=True)


def _run(
    cmd: list[str],
    *,
    env: dict | None = None,
    check: bool = True,
    quiet: bool = True,
    timeout: float | None = None,
) -> subprocess.CompletedProcess:
    res = subprocess.run(
        cmd,
        capture_output=quiet,
        text=True,
        env=env,
        check=False,
        timeout=timeout,
        cwd=project_dir(),
    )
    if check and res.returncode != 0:
        detail = ((res.stderr or "") + (res.stdout or "")).strip()[-3000:] if quiet else ""
        raise SimError(f"{shlex.join(cmd[:4])}... failed (exit {res.returncode})\n{detail}")
    return res


def _env_from(script_output: str) -> dict[str, str]:
    """The ``export NAME=VALUE`` lines the build scripts print, as a dict."""
    env = {}
    for line in script_output.splitlines():
        if line.startswith("export ") and "=" in line:
            name, value = line[7:].split("=", 1)
            env[name] = shlex.split(value)[0] if value else ""
    return env


# --- building blocks (each stamped or idempotent) -----------------------------------------------
def build_prerequisites() -> dict[str, str]:
    """Base and ESXi stand-in images, the SSH key, the simulator, the NVIDIA stand-ins and the
    MLPerf wheelhouse; returns the environment (CONTAINERS_CONF, images, key)."""
    if os.geteuid() != 0:
        raise SimError("the simulated lab needs root (rootful podman: miglab/sim/build-images.sh)")
    log("images: Debian 12 base + ESXi stand-in (once per recipe)")
    os.environ["MIGLAB_PROJECT_DIR"] = str(project_dir())  # the build scripts' caches too
    out = _run(["bash", str(PACKAGE / "standins" / "esxi" / "build-image.sh")]).stdout
    env = _env_from(out)
    os.environ.update(env)
    log("vCenter simulator (stamped)")
    _run(["bash", str(PACKAGE / "vcsim" / "build.sh")])
    log("NVIDIA stand-ins: GRID guest driver, container toolkit, licence token")
    _run(["bash", str(PACKAGE / "standins" / "build.sh"), str(STANDINS)])
    if not _wheelhouse_complete():
        log(f"MLPerf runtime wheels -> {WHEELHOUSE} (pip download, once)")
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--only-binary=:all:",
                "-d",
                str(WHEELHOUSE),
                *RUNTIME_PACKAGES,
            ],
            timeout=900,
        )
        (WHEELHOUSE / ".complete").write_text(" ".join(RUNTIME_PACKAGES) + "\n")
    build_runtime_image(env)
    os.environ["MIGLAB_SIM_GUEST_IMAGES"] = str(IMAGES)  # the guests' read-only images folder
    return env


def _wheelhouse_complete() -> bool:
    """The wheelhouse holds RUNTIME_PACKAGES (``.complete`` names the packages downloaded)."""
    try:
        done = (WHEELHOUSE / ".complete").read_text().split()
    except OSError:
        return False
    return set(RUNTIME_PACKAGES) <= set(done)


def runtime_image_archive(*, force: bool = False) -> Path:
    """The runtime image's archive alone (the mlperf role's molecule scenario ``container``): the
    Debian 12 base image (miglab/sim/build-images.sh) and the wheelhouse must be there."""
    if not (WHEELHOUSE / ".complete").exists():
        raise SimError(f"no MLPerf wheelhouse in {WHEELHOUSE}: run miglab sim up once")
    base = os.environ.get("MIGLAB_GUEST_IMAGE", "localhost/miglab-debian12:latest")
    return build_runtime_image({"MIGLAB_GUEST_IMAGE": base}, force=force)


def _runtime_recipe(env: dict[str, str], wheels: list[Path]) -> str:
    """Hash of what the runtime image is made from: its Containerfile, the wheels and the base."""
    h = hashlib.sha256(RUNTIME_CONTAINERFILE.encode())
    for w in wheels:
        h.update(w.name.encode() + b"\0")
    base_id = _run(["podman", "image", "inspect", "--format", "{{.Id}}", env["MIGLAB_GUEST_IMAGE"]])
    h.update(base_id.stdout.encode())
    return h.hexdigest()[:16]


def build_runtime_image(env: dict[str, str], *, force: bool = False) -> Path:
    """The simulated VMs' MLPerf runtime image and its `docker save` archive in IMAGES (built again
    only when its recipe changes); the archive's path."""
    wheels = sorted(WHEELHOUSE.glob("*.whl"))
    recipe = _runtime_recipe(env, wheels)
    archive = IMAGES / RUNTIME_ARCHIVE
    stamp = IMAGES / (RUNTIME_ARCHIVE + ".recipe")
    current = _image_recipe(RUNTIME_IMAGE) == recipe
    fresh = archive.is_file() and stamp.is_file() and stamp.read_text().strip() == recipe
    if not force and current and fresh:
        log(f"MLPerf runtime image {RUNTIME_IMAGE} is up to date")
        return archive
    started = time.monotonic()
    IMAGES.mkdir(parents=True, exist_ok=True)
    if force or not current:
        log(f"MLPerf runtime image {RUNTIME_IMAGE}: base + {', '.join(RUNTIME_IMAGE_PACKAGES)}")
        ctx = SIM_DIR / "runtime-context"
        _run(["rm", "-rf", str(ctx)])
        ctx.mkdir(parents=True)
        (ctx / "Containerfile").write_text(RUNTIME_CONTAINERFILE)
        _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--find-links",
              str(WHEELHOUSE), "--target", str(ctx / "site"), *RUNTIME_IMAGE_PACKAGES])  # fmt: skip
        _run(["podman", "build", "-q", "--build-arg", f"BASE={env['MIGLAB_GUEST_IMAGE']}",
              "--label", f"{RECIPE_LABEL}={recipe}", "-t", RUNTIME_IMAGE,
              "-f", str(ctx / "Containerfile"), str(ctx)])  # fmt: skip
    tmp = IMAGES / (RUNTIME_ARCHIVE + ".tmp")
    tmp.unlink(missing_ok=True)
    _run(["podman", "save", "--format", "docker-archive", "-o", str(tmp), RUNTIME_IMAGE])
    tmp.replace(archive)  # a guest that mounted the folder sees the new file
    stamp.write_text(recipe + "\n")
    size, took = archive.stat().st_size / 1e6, time.monotonic() - started
    log(f"MLPerf runtime image archive {archive} ({size:.0f} MB) in {took:.0f} s")
    return archive


def _collection() -> Path:
    """Where Ansible finds miglab.lab (its roles build the golden guest): the checkout's link or
    an installed copy, as the project's ansible.cfg says."""
    from miglab.adapters.ansible_inventory import collection_path

    found = collection_path("miglab.lab")
    if found is None:
        raise SimError(
            "the Ansible collection miglab.lab is not installed "
            "(ansible-galaxy collection install miglab-lab-<version>.tar.gz)"
        )
    return found


def _golden_recipe(env: dict[str, str], inventory: Path) -> str:
    """Hash of what the golden image is made from: the guest roles' settings (defaults, vars, the
    simulated lab's guest variables), the stand-ins, the base image and the SSH key. Task changes
    alone do not rebuild it: the guests phase runs the roles on every VM anyway, so a template one
    change behind costs a few seconds per VM, never a wrong guest."""
    h = hashlib.sha256()
    roles = _collection() / "roles"
    # (name in the hash, path): the names are the checkout's paths, wherever the files are
    parts = [
        *((f"roles/{r}/{d}", roles / r / d) for r in GOLDEN_ROLES for d in ("defaults", "vars")),
        ("inventories/sim/group_vars/guests", inventory.parent / "group_vars" / "guests"),
        ("miglab/sim/guest", PACKAGE / "guest"),
        ("miglab/sim/golden.yml", PACKAGE / "golden.yml"),
    ]
    for name, base in parts:
        if not base.exists():
            continue
        files = sorted(p for p in base.rglob("*") if p.is_file())
        for f in [base] if base.is_file() else files:
            rel = name if f == base else f"{name}/{f.relative_to(base)}"
            h.update(rel.encode() + b"\0" + f.read_bytes())
    h.update((STANDINS / "SHA256SUMS").read_bytes())
    base_id = _run(["podman", "image", "inspect", "--format", "{{.Id}}", env["MIGLAB_GUEST_IMAGE"]])
    h.update(base_id.stdout.encode())
    h.update(Path(env["MIGLAB_ESXI_STANDIN_KEY"] + ".pub").read_bytes())
    return h.hexdigest()[:16]


def _image_recipe(image: str) -> str:
    """The recipe hash an image was built from (its label; "" when it has none or is missing).
    The label, not a file in the project: images are the machine's, shared by its projects."""
    res = _run(["podman", "image", "inspect", "--format", f'{{{{index .Labels "{RECIPE_LABEL}"}}}}',
                image], check=False)  # fmt: skip
    return res.stdout.strip() if res.returncode == 0 else ""


def build_golden(env: dict[str, str], inventory: Path, *, force: bool = False) -> str:
    """The golden guest image: guest base (sshd) + guest roles + MLPerf preparation, committed."""
    recipe = _golden_recipe(env, inventory)
    if not force and _image_recipe(GOLDEN_IMAGE) == recipe:
        log(f"golden guest image {GOLDEN_IMAGE} is up to date")
        return GOLDEN_IMAGE
    started = time.monotonic()
    log(
        f"golden guest image {GOLDEN_IMAGE}: guest roles + MLPerf preparation (a few minutes, once)"
    )
    ctx = SIM_DIR / "golden-context"
    ctx.mkdir(parents=True, exist_ok=True)
    (ctx / "Containerfile").write_bytes((PACKAGE / "guest" / "Containerfile").read_bytes())
    (ctx / "authorized_keys").write_bytes(
        Path(env["MIGLAB_ESXI_STANDIN_KEY"] + ".pub").read_bytes()
    )
    _run(
        [
            "podman",
            "build",
            "-q",
            "--build-arg",
            f"BASE={env['MIGLAB_GUEST_IMAGE']}",
            "-t",
            GUEST_BASE_IMAGE,
            "-f",
            str(ctx / "Containerfile"),
            str(ctx),
        ]
    )
    _run(["podman", "rm", "-f", GOLDEN_BUILDER], check=False)
    _run(
        [
            "podman",
            "run",
            "-d",
            "--name",
            GOLDEN_BUILDER,
            "--hostname",
            GOLDEN_BUILDER,
            "--label",
            f"{LABEL}=golden",
            *_daemon_module().guest_run_options(),
            GUEST_BASE_IMAGE,
            "/sbin/init",
        ]
    )
    inv = SIM_DIR / "golden-inventory.yml"
    inv.write_text(
        json.dumps(
            {
                "all": {
                    "children": {
                        "guests": {"hosts": {GOLDEN_BUILDER: {"miglab_sim_dir": str(SIM_DIR)}}},
                        "miglab_sim_golden": {"hosts": {GOLDEN_BUILDER: {}}},
                    }
                }
            }
        )
        + "\n"
    )
    try:
        res = _ansible_playbook(
            # the lab's hosts.yml as a source: its group_vars/ apply to the golden guest too.
            [
                str(PACKAGE / "golden.yml"),
                "-i",
                str(inventory),
                "-i",
                str(inv),
                "--limit",
                GOLDEN_BUILDER,
            ],
            log_name="golden",
        )
        if res != 0:
            raise SimError(f"the golden guest build failed: see {SIM_DIR / 'golden.log'}")
        # A template carries no machine identity (systemd makes a new one on first boot).
        _run(["podman", "exec", GOLDEN_BUILDER, "sh", "-c", ": > /etc/machine-id"])
        _run(["podman", "stop", "-t", "20", GOLDEN_BUILDER])
        _run(
            [
                "podman",
                "commit",
                "-q",
                "--change",
                'CMD ["/sbin/init"]',
                "--change",
                f"LABEL {RECIPE_LABEL}={recipe}",
                GOLDEN_BUILDER,
                GOLDEN_IMAGE,
            ]
        )
    finally:
        _run(["podman", "rm", "-f", GOLDEN_BUILDER], check=False)
    log(f"golden guest image built in {time.monotonic() - started:.0f} s")
    return GOLDEN_IMAGE


def _ansible_playbook(args: list[str], *, log_name: str) -> int:
    exe = Path(sys.executable).parent / "ansible-playbook"
    from miglab.adapters.project import ansible_env

    env = {**os.environ, **ansible_env(), "ANSIBLE_NOCOLOR": "1"}
    logfile = SIM_DIR / f"{log_name}.log"
    with open(logfile, "w") as out:
        res = subprocess.run(
            [str(exe), *args],
            cwd=project_dir(),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    return res.returncode


def _lab(inventory: Path):
    from miglab.adapters.inventory import load_lab
    from miglab.core.catalog import load_catalog

    return load_lab(inventory, load_catalog())


def start_hosts(inventory: Path, env: dict[str, str]) -> dict:
    """One ESXi stand-in container per lab host, fresh, with the host bundles on its datastore."""
    lab = _lab(inventory)
    releases = {host.name: _esxi_release(host) for host in lab.hosts}
    esxi8 = bool(releases) and all(r.startswith("8.") for r in releases.values())
    bundle_esxi = HOST_DRIVER_ESXI_8 if esxi8 else HOST_DRIVER[1]
    # NVIDIA's two host components (real-lab notes V8): the vGPU Manager and, from R525 on, the
    # GPU Management Daemon, each its own offline bundle of the same driver version.
    bundles = {
        "host_driver": _make_bundle("AIE", bundle_esxi),
        "gpu_mgmt_daemon": _make_bundle("DAEMON", bundle_esxi),
    }
    key_pub = env["MIGLAB_ESXI_STANDIN_KEY"] + ".pub"
    seen = SIM_DIR / "vcenter"  # the simulator writes each host's vGPUs and services there
    seen.mkdir(parents=True, exist_ok=True)
    for host in lab.hosts:
        name = host.name
        if _run(["podman", "container", "exists", name], check=False).returncode == 0:
            _run(["podman", "rm", "-f", "-t", "2", name], check=False)
        _run(
            [
                "podman",
                "run",
                "-d",
                "--name",
                name,
                "--hostname",
                name,
                "--label",
                f"{LABEL}=esxi",
                "-v",
                f"{key_pub}:/root/.ssh/authorized_keys:ro",
                "-v",
                f"{seen}:/var/lib/esxi-standin/vcenter:ro",
                "--ulimit",
                "nofile=20000:20000",
                "--ulimit",
                "nproc=4096:4096",
                # ESXi's root file system and /tmp are small RAM disks (notes V7; stand-in README,
                # "RAM disks"): root's ~/.ansible (Ansible's default remote tmp) and /tmp.
                "--tmpfs",
                "/root/.ansible:size=1m,mode=0700",
                "--tmpfs",
                "/tmp:size=8m,mode=1777",
                env["MIGLAB_ESXI_STANDIN_IMAGE"],
            ]
        )
        counts: dict[str, int] = {}
        for model in host.gpus:
            counts[model.name] = counts.get(model.name, 0) + 1
        gpus = ",".join(f"{m}:{n}" for m, n in counts.items())
        _run(
            [
                "podman",
                "exec",
                name,
                "esxi-standin",
                "init",
                f"gpus={gpus}",
                f"esxi={releases[name]}",
                "acceptance=PartnerSupported",
            ]
        )
        for bundle in bundles.values():
            _run(["podman", "cp", bundle["local"], f"{name}:{bundle['path']}"])
        log(f"ESXi host {name}: stand-in with {gpus} (ESXi {releases[name]}, no NVIDIA driver yet)")
    (SIM_DIR / "bundles.json").write_text(json.dumps(bundles, indent=2) + "\n")
    return bundles["host_driver"]


def _esxi_release(host) -> str:
    """The ESXi release a lab host runs: its ``miglab_host_esxi_version``, else ESXI_RELEASE."""
    return str(getattr(host, "esxi_version", None) or ESXI_RELEASE)


def _make_bundle(flavour: str, esxi: str = HOST_DRIVER[1]) -> dict:
    """A stand-in NVIDIA host bundle of HOST_DRIVER (make-bundle.py), as it lies on a datastore
    (and, in an image-managed lab, as the depot server serves it: ``url``, added by the
    simulator's process, miglab.sim.daemon)."""
    out = _run(
        [
            sys.executable,
            str(MAKE_BUNDLE),
            "--flavour",
            flavour,
            HOST_DRIVER[0],
            esxi,
            str(SIM_DIR / "bundles"),
        ]
    )
    local, checksum = out.stdout.split()[:2]
    return {
        "version": HOST_DRIVER[0],
        "file": Path(local).name,
        "checksum": checksum,
        "local": local,
        "path": f"/vmfs/volumes/datastore1/{Path(local).name}",
    }


def _daemon_alive() -> bool:
    with contextlib.suppress(FileNotFoundError, ValueError, OSError):
        os.kill(int((SIM_DIR / "daemon.pid").read_text()), 0)
        return (SIM_DIR / "vcsim.json").exists()
    return False


def _containers(kind: str | None = None) -> dict[str, str]:
    """Container name -> state (running, exited, ...) of the lab's containers."""
    return _daemon_module().podman_containers(f"{LABEL}={kind}" if kind else LABEL)


def _daemon_module():
    from miglab.sim import daemon

    return daemon


# --- commands ----------------------------------------------------------------------------------
def up(inventory: Path, *, rebuild_golden: bool = False) -> int:
    started = time.monotonic()
    SIM_DIR.mkdir(parents=True, exist_ok=True)
    env = build_prerequisites()
    image = build_golden(env, inventory, force=rebuild_golden)
    if _daemon_alive():
        log("the simulated lab is already up (miglab sim status); nothing to do")
        return status(inventory)
    for name in _containers():  # leftovers of a lab whose simulator died: its VMs are gone
        _run(["podman", "rm", "-f", "-t", "2", name], check=False)
    start_hosts(inventory, env)
    log("vCenter simulator + guest keeper (a container per powered-on VM)")
    _run(
        [
            sys.executable,
            *DAEMON,
            "start",
            "--inventory",
            str(inventory),
            "--out",
            str(SIM_DIR),
            "--reboot-seconds",
            "1",
            "--max-life",
            "0",
            "--guest-image",
            image,
            "--extra",
            json.dumps(_host_faults()),
        ],
        timeout=300,
    )
    (SIM_DIR / "inventory").write_text(str(inventory.resolve()) + "\n")
    log(f"up in {time.monotonic() - started:.0f} s")
    return status(inventory)


def _host_faults() -> dict:
    """The simulator's fault keys per host: MIGLAB_SIM_FAULTS, and the reboot-hangs switch."""
    REBOOT_HANGS.parent.mkdir(parents=True, exist_ok=True)
    REBOOT_HANGS.unlink(missing_ok=True)  # a new lab boots normally
    faults = json.loads(os.environ.get("MIGLAB_SIM_FAULTS") or "{}")
    faults.setdefault("*", {}).setdefault("reboot_hold", str(REBOOT_HANGS))
    return faults


def down() -> int:
    _run([sys.executable, *DAEMON, "stop", "--out", str(SIM_DIR)], check=False)
    names = list(_containers())
    if names:
        _run(["podman", "rm", "-f", "-t", "5", *names], check=False)
    for name in ("guests.json", "bundles.json", "inventory", "vlcm.json"):
        (SIM_DIR / name).unlink(missing_ok=True)
    log(f"down: simulator stopped, {len(names)} container(s) removed")
    return 0


def status(inventory: Path | None = None, *, as_json: bool = False) -> int:
    alive = _daemon_alive()
    conn = json.loads((SIM_DIR / "vcsim.json").read_text()) if alive else {}
    vlcm = {}
    if alive:
        with contextlib.suppress(OSError, ValueError):
            vlcm = json.loads((SIM_DIR / "vlcm.json").read_text())
    info = {
        "up": alive,
        "vcenter": f"https://{conn['hostname']}:{conn['port']}/sdk" if conn else None,
        "vlcm": vlcm.get("api_url"),
        "depots": vlcm.get("depot_url"),
        "hosts": _containers("esxi"),
        "guests": _containers("guest"),
        "state_dir": str(SIM_DIR),
    }
    if as_json:
        print(json.dumps(info, indent=2))
        return 0 if alive else 1
    if not alive:
        print("simulated lab: down (start it with: miglab sim up)")
        return 1
    print(f"simulated lab: up   vCenter {info['vcenter']} (connection in {SIM_DIR / 'vcsim.json'})")
    if info["vlcm"]:
        print(f"  vLCM image-managed cluster: REST {info['vlcm']}, depots {info['depots']}")
    for name, state in info["hosts"].items():
        print(f"  ESXi host  {name:40s} {state}")
    running = sum(1 for s in info["guests"].values() if s == "running")
    print(f"  guest VMs  {running} running, {len(info['guests']) - running} stopped")
    for name, state in sorted(info["guests"].items()):
        print(f"    {name:50s} {state}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="miglab sim", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("up", help="start the simulated lab (builds what it needs once)")
    p.add_argument("-i", "--inventory", default=str(default_inventory() / "hosts.yml"))
    p.add_argument("--rebuild-golden", action="store_true", help="rebuild the golden guest image")
    sub.add_parser("down", help="stop it and remove its containers")
    p = sub.add_parser("status", help="what runs")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("golden", help="only (re)build the golden guest image")
    p.add_argument("--force", action="store_true")
    p = sub.add_parser(
        "runtime-image", help="only (re)build the MLPerf runtime image's archive; print its path"
    )
    p.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "up":
            return up(Path(args.inventory), rebuild_golden=args.rebuild_golden)
        if args.cmd == "down":
            return down()
        if args.cmd == "status":
            return status(as_json=args.json)
        SIM_DIR.mkdir(parents=True, exist_ok=True)
        if args.cmd == "runtime-image":
            print(runtime_image_archive(force=args.force))
            return 0
        build_golden(build_prerequisites(), default_inventory() / "hosts.yml", force=args.force)
        return 0
    except (SimError, subprocess.TimeoutExpired) as exc:
        print(f"error: miglab sim {args.cmd}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
