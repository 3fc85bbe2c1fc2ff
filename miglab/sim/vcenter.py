"""miglab's vSphere simulator from Python (test infrastructure).

``lab_json(lab, catalog)`` turns a :class:`miglab.core.placement.Lab` into the simulator's lab file
(schema: ``miglab/sim/vcsim/README.md``); :class:`Vcsim` writes that file and a throwaway CA and
server certificate, starts ``.cache/vcsim/miglab-vcsim`` (built by ``miglab/sim/vcsim/build.sh``) on
a free loopback port and stops it again::

    from miglab.adapters.inventory import load_lab
    with Vcsim(lab_json(load_lab("inventories/sim"))) as sim:
        si = sim.connect()          # pyVmomi ServiceInstance, TLS verified against sim.ca_file
        ...

The process never outlives its owner: ``stop()`` (also on ``__exit__`` and garbage collection)
terminates, then kills it, and the simulator exits by itself when its standard input, a pipe from
this process, closes.

An image-managed cluster (``lab_json(..., cluster_image_managed=True)``, the inventory's
``miglab_sim_cluster_image: true``) gets the simulated vLCM: ``Vcsim`` starts its REST server (and
a depot server for ``depot_dir``) in this process (``miglab.sim.vlcm_lab``) and the simulator
proxies ``https://127.0.0.1:PORT/api/`` to it (``sim.api_url``).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import ipaddress
import json
import os
import secrets
import select
import shutil
import ssl
import subprocess
import tempfile
import time
import weakref
from importlib import resources
from pathlib import Path
from typing import Any

from miglab.adapters.project import cache_dir, default_inventory, project_dir

# The simulator's sources are the package's; the binary is built into the project's cache.
BUILD_SCRIPT = Path(str(resources.files("miglab.sim"))) / "vcsim" / "build.sh"


def default_binary() -> Path:
    return cache_dir() / "vcsim" / "miglab-vcsim"


# The vCenter release of a lab whose hosts run ESXi 8 (vCenter manages hosts of its release and
# older): vCenter Server 8.0 Update 3 (miglab/sim/vcsim/versions.go).
VCENTER_8 = "8.0.3"
# The lab inventory's simulator settings (sim only): miglab_sim_<key>, on the ESXi hosts.
SIM_PREFIX = "miglab_sim_"

# The simulator's ESXi release when the lab inventory names none (miglab/sim/vcsim: esxiVersion).
DEFAULT_ESXI = "7.0.3"

# PCI bus numbers given to a host's GPUs, in order (those of a 4-GPU Dell PowerEdge first).
GPU_BUSES = (0x3B, 0x5E, 0x86, 0xAF, 0xD8, 0x17, 0x31, 0x4B, 0x65, 0xB1, 0xCA, 0xE3)


class BuildUnavailable(RuntimeError):
    """The simulator cannot be built here: Go or govmomi's sources are missing and cannot be
    installed (not root, no apt-get, or no package repository)."""


def build(quiet: bool = True) -> Path:
    """Run miglab/sim/vcsim/build.sh (fast when up to date); return the binary's path."""
    res = subprocess.run(
        ["bash", str(BUILD_SCRIPT)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "MIGLAB_PROJECT_DIR": str(project_dir())},
    )
    if res.returncode == 3:
        raise BuildUnavailable(res.stderr.strip() or "build-vcsim.sh: Go is unavailable")
    if res.returncode != 0:
        raise RuntimeError(f"build-vcsim.sh failed ({res.returncode}):\n{res.stderr}{res.stdout}")
    if not quiet:
        print(res.stderr, end="")
    return Path(res.stdout.strip().splitlines()[-1])


def gpu_pci_id(index: int) -> str:
    """The PCI address of a host's index-th GPU (0000:3b:00.0 for the first)."""
    if index < len(GPU_BUSES):
        return f"0000:{GPU_BUSES[index]:02x}:00.0"
    return f"0001:{index:02x}:00.0"


def lab_json(
    lab: Any,
    catalog: Any = None,
    *,
    graphics_type: str = "shared",
    assignment_policy: str = "performance",
    datacenter: str = "dc1",
    cluster: str = "cluster1",
    datastore: str = "datastore1",
    network: str = "VM Network",
    host_extra: dict[str, dict] | None = None,
    vcenter_version: str | None = None,
    cluster_image_managed: bool = False,
) -> dict:
    """The simulator's lab file for a miglab ``Lab`` (``miglab.adapters.inventory.load_lab``).

    Each host gets its CPUs and memory, one NVIDIA PCI device per GPU (the catalog's first PCI
    device id and product name, framebuffer ``memory_gib`` x 1024 MiB, MIG compute and memory
    slices), as vGPU types the MIG-backed and time-sliced types of its GPU models, and each
    MIG-backed type's placement rules (the simulator's first-fit start slots). ``catalog``
    (``miglab.core.catalog.load_catalog()``), when given, resolves each GPU model again by name, so
    a
    catalog with newer data wins; models it does not know are used as the lab holds them.
    ``graphics_type`` / ``assignment_policy`` are every host's starting graphics configuration;
    ``host_extra`` adds lab-file keys per host name, ``"*"`` for every host (e.g.
    ``{"*": {"reboot_seconds": 0.5}}``).
    Each host's ``esxi_version`` (the inventory's ``miglab_host_esxi_version``) becomes its
    lab-file ``esxi_version``; ``vcenter_version`` defaults to 8.0.3 when a host runs ESXi 8 (else
    the simulator's 7.0.3); ``cluster_image_managed``: the cluster is managed by a vLCM image.
    """
    extra = host_extra or {}
    hosts = []
    for host in lab.hosts:
        gpus, vgpu_types, placements = [], [], {}
        for i, model in enumerate(host.gpus):
            if catalog is not None:
                with contextlib.suppress(LookupError):
                    model = catalog.get(model.name)
            gpu = {
                "pci_id": gpu_pci_id(i),
                "device_id": (model.pci_device_ids or ("0x0000",))[0],
                "name": (model.product_names or (f"NVIDIA {model.name}",))[0],
                "memory_mb": int(round(model.memory_gib * 1024)),
            }
            if model.compute_slices:
                gpu["mig_compute_slices"] = model.compute_slices
            if model.memory_slices:
                gpu["mig_memory_slices"] = model.memory_slices
            gpus.append(gpu)
            types = [*model.mig_backed.values(), *(t.name for t in model.time_sliced)]
            # A host offers only the vGPU types of its ESXi release (NVIDIA's vGPU type tables:
            # e.g. MIG types with media engines on ESXi only from vSphere 8.0 U3).
            release = getattr(host, "esxi_version", None) or DEFAULT_ESXI
            types = [t for t in types if model.availability(t).vsphere_ok(release) is not False]
            vgpu_types += [t for t in types if t not in vgpu_types]
            for profile in model.profiles:
                vgpu_type = model.mig_backed.get(profile.name)
                # without placement data (an imported model may lack it) the simulator falls
                # back to summing compute slices for that type
                if vgpu_type and profile.placements and profile.placement_size >= 1:
                    placements[vgpu_type] = {
                        "starts": list(profile.placements),
                        "size": profile.placement_size,
                    }
        entry = {
            "name": host.name,
            "cpus": host.cpus,
            "memory_gb": host.memory_gb,
            "gpus": gpus,
            "vgpu_types": vgpu_types,
            "mig_placements": placements,
            "graphics_type": graphics_type,
            "assignment_policy": assignment_policy,
        }
        esxi_version = getattr(host, "esxi_version", None)
        if esxi_version:
            entry["esxi_version"] = str(esxi_version)
        entry.update(copy.deepcopy(extra.get("*", {})))
        entry.update(copy.deepcopy(extra.get(host.name, {})))
        hosts.append(entry)
    if vcenter_version is None and any(
        str(h.get("esxi_version", "")).startswith("8.") for h in hosts
    ):
        vcenter_version = VCENTER_8
    out = {
        "datacenter": datacenter,
        "cluster": cluster,
        "datastore": datastore,
        "network": network,
        "hosts": hosts,
    }
    if vcenter_version:
        out["vcenter_version"] = vcenter_version
    if cluster_image_managed:
        out["cluster_image_managed"] = True
    return out


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def sim_settings(inventory: str | Path) -> dict:
    """The lab inventory's simulator settings, read as Ansible reads the ESXi hosts' variables:
    ``cluster_image`` (``miglab_sim_cluster_image``: the simulated cluster is managed by a vLCM
    image; true when any ESXi host has it true)."""
    from miglab.adapters.ansible_inventory import group_host_vars
    from miglab.adapters.inventory import HOST_GROUP, _inventory_sources

    per_host = group_host_vars(_inventory_sources(Path(inventory)), HOST_GROUP, SIM_PREFIX)
    return {
        "cluster_image": any(
            _truthy(v.get(SIM_PREFIX + "cluster_image")) for v in per_host.values()
        ),
    }


def default_lab() -> dict:
    """The lab file of the built-in simulated lab (inventories/sim)."""
    from miglab.adapters.inventory import load_lab
    from miglab.core.catalog import load_catalog

    catalog = load_catalog()
    return lab_json(load_lab(default_inventory(), catalog), catalog)


def write_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate it signs for 127.0.0.1 / localhost (EC P-256,
    valid for a day); returns (ca.pem, server.pem, server-key.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    valid = {"not_valid_before": now - datetime.timedelta(minutes=5)}
    valid["not_valid_after"] = now + datetime.timedelta(days=1)

    def name(cn: str) -> x509.Name:
        return x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "miglab test"),
                x509.NameAttribute(NameOID.COMMON_NAME, cn),
            ]
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("miglab vcsim throwaway CA")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid["not_valid_before"])
        .not_valid_after(valid["not_valid_after"])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid["not_valid_before"])
        .not_valid_after(valid["not_valid_after"])
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_file, cert_file, key_file = (folder / n for n in ("ca.pem", "server.pem", "server-key.pem"))
    ca_file.write_bytes(ca.public_bytes(pem))
    cert_file.write_bytes(cert.public_bytes(pem))
    key_file.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_file.chmod(0o600)
    return ca_file, cert_file, key_file


def _stop_process(proc: subprocess.Popen, workdir: str | None) -> None:
    """Close stdin, terminate, then kill; remove the work folder (also a weakref finalizer)."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            if stream:
                stream.close()
    if workdir:
        shutil.rmtree(workdir, ignore_errors=True)


class Vcsim:
    """One simulator process (a context manager; ``start()`` / ``stop()`` work too).

    ``lab``: the lab file as a dict (``lab_json``), default the built-in simulated lab. Other
    keywords are lab-file keys set on every host, e.g. ``reboot_never_returns=True``,
    ``graphics_type="sharedDirect"``, ``maintenance_mode=True`` (the simulator rejects unknown
    keys at start).
    ``delays``: per-method latency in ms (``{"CreateVM_Task": 1500}``), ``delay_ms`` for every
    method, ``jitter`` as a coefficient of variation. ``reboot_seconds``: how long a rebooting
    host stays away unless its lab entry says otherwise.

    ``vlcm``: start the simulated vLCM REST server (``miglab.sim.vlcm_lab.VlcmLab``) in this
    process and proxy the simulator's ``/api/`` to it; default: when the lab's cluster is
    image-managed (``cluster_image_managed``). ``vlcm_backend``: its host backend (default a
    ``LabBackend`` on this simulator, stand-in containers named like the hosts),
    ``vlcm_state_dir`` its state folder (default in ``workdir``), ``depot_dir`` a folder the depot
    server serves (``depot_url``; the lab's offline bundles).

    After start: ``url`` (``https://127.0.0.1:PORT/sdk``), ``host``, ``port``, ``username``,
    ``password``, ``ca_file`` (str: the PEM file of the CA that signed the server certificate),
    ``lab`` (the dict as written), ``pid``, ``log_file`` (the simulator's stderr), ``workdir``
    (removed on stop unless ``keep_workdir`` or the environment's ``MIGLAB_VCSIM_KEEP=1``); with
    vLCM ``api_url`` (``https://127.0.0.1:PORT/api``), ``rest_url`` (the REST server itself),
    ``depot_url`` (or None), ``vlcm_lab``.
    """

    def __init__(
        self,
        lab: dict | None = None,
        *,
        binary: str | Path | None = None,
        username: str = "administrator@vsphere.local",
        password: str | None = None,
        delays: dict[str, int] | None = None,
        delay_ms: int = 0,
        jitter: float = 0.0,
        reboot_seconds: float = 2.0,
        start_timeout: float = 30.0,
        keep_workdir: bool | None = None,
        vlcm: bool | None = None,
        vlcm_backend: Any = None,
        vlcm_state_dir: str | Path | None = None,
        depot_dir: str | Path | None = None,
        **host_settings: Any,
    ) -> None:
        self.lab = copy.deepcopy(lab) if lab is not None else default_lab()
        for host in self.lab.get("hosts", []):
            host.update(copy.deepcopy(host_settings))
        self.binary = Path(binary) if binary else default_binary()
        self.username = username
        self.password = password or "Sim-" + secrets.token_urlsafe(12)
        self.delays = dict(delays or {})
        self.delay_ms = delay_ms
        self.jitter = jitter
        self.reboot_seconds = reboot_seconds
        self.start_timeout = start_timeout
        if keep_workdir is None:  # MIGLAB_VCSIM_KEEP=1: keep lab file, certificates and log
            keep_workdir = os.environ.get("MIGLAB_VCSIM_KEEP", "") not in ("", "0")
        self.keep_workdir = keep_workdir
        self.vlcm = bool(self.lab.get("cluster_image_managed")) if vlcm is None else vlcm
        self.vlcm_backend = vlcm_backend
        self.vlcm_state_dir = vlcm_state_dir
        self.depot_dir = depot_dir
        self.vlcm_lab: Any = None
        self.api_url: str | None = None
        self.rest_url: str | None = None
        self.depot_url: str | None = None
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.url: str | None = None
        self.pid: int | None = None
        self.ca_file: str | None = None
        self.workdir: Path | None = None
        self.log_file: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> Vcsim:
        if self._proc is not None:
            raise RuntimeError("already started")
        if not self.binary.is_file():
            raise FileNotFoundError(f"{self.binary} is missing: run miglab/sim/vcsim/build.sh")
        self.workdir = Path(tempfile.mkdtemp(prefix="miglab-vcsim-"))
        lab_file = self.workdir / "lab.json"
        lab_file.write_text(json.dumps(self.lab, indent=2) + "\n")
        ca_file, cert, key = write_certificates(self.workdir)
        # the password in a 0600 file, not on the command line (ps shows that to every user)
        password_file = self.workdir / "password"
        fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.password + "\n")
        self.ca_file = str(ca_file)
        self.log_file = self.workdir / "vcsim.log"
        tmp = self.workdir / "tmp"
        tmp.mkdir()
        cmd = [
            str(self.binary),
            "-lab", str(lab_file),
            "-listen", f"{self.host}:0",
            "-tlscert", str(cert),
            "-tlskey", str(key),
            "-username", self.username,
            "-password-file", str(password_file),
            "-reboot-seconds", str(self.reboot_seconds),
            "-delay", str(self.delay_ms),
            "-delay-jitter", str(self.jitter),
            "-watch-stdin",
        ]  # fmt: skip
        if self.delays:
            cmd += ["-delay-json", json.dumps(self.delays)]
        if self.vlcm:
            cmd += ["-rest-upstream", self._start_vlcm()]
        env = dict(os.environ, TMPDIR=str(tmp))  # the datastore and VM files live there
        try:
            with open(self.log_file, "wb") as log:
                self._proc = subprocess.Popen(
                    cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env
                )
        except BaseException:
            self.stop()  # the vLCM servers, if started
            raise
        workdir = None if self.keep_workdir else str(self.workdir)
        self._finalizer = weakref.finalize(self, _stop_process, self._proc, workdir)
        try:
            info = self._read_ready_line()
        except BaseException:
            self.stop()
            raise
        self.url, self.port, self.pid = info["url"], int(info["port"]), int(info["pid"])
        if self.vlcm:
            self.api_url = f"https://{self.host}:{self.port}/api"
        return self

    def _start_vlcm(self) -> str:
        """The vLCM REST (and depot) server in this process; its URL for -rest-upstream."""
        from miglab.sim.vlcm_lab import LabBackend, VlcmLab

        backend = self.vlcm_backend if self.vlcm_backend is not None else LabBackend()
        if hasattr(backend, "bind"):
            backend.bind(self.connect)  # lazily: the simulator is not up yet
        state_dir = Path(self.vlcm_state_dir or self.workdir / "vlcm")
        state_dir.mkdir(parents=True, exist_ok=True)
        depot_dir = self.depot_dir if self.depot_dir and Path(self.depot_dir).is_dir() else None
        self.vlcm_lab = VlcmLab(
            backend, self.username, self.password, state_dir, depot_dir=depot_dir
        ).start()
        self.rest_url, self.depot_url = self.vlcm_lab.rest_url, self.vlcm_lab.depot_url
        return self.rest_url

    def _read_ready_line(self) -> dict:
        deadline = time.monotonic() + self.start_timeout
        out = self._proc.stdout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"vcsim did not start in {self.start_timeout} s{self._log()}")
            ready, _, _ = select.select([out], [], [], min(left, 0.2))
            if ready:
                line = out.readline()
                if line:
                    return json.loads(line)
            if self._proc.poll() is not None:
                raise RuntimeError(f"vcsim exited with {self._proc.returncode}{self._log()}")

    def _log(self) -> str:
        try:
            text = self.log_file.read_text(errors="replace").strip()
        except OSError:
            return ""
        return f":\n{text[-4000:]}" if text else ""

    def stop(self) -> None:
        if self.vlcm_lab is not None:
            self.vlcm_lab.stop()  # first: its tasks talk to the simulator
            self.vlcm_lab = None
        if self._finalizer is not None:
            self._finalizer()  # runs _stop_process once

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> Vcsim:
        return self if self._proc is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- clients ------------------------------------------------------------------------------
    def ssl_context(self) -> ssl.SSLContext:
        """A verifying SSL context that trusts only this simulator's CA."""
        return ssl.create_default_context(cafile=self.ca_file)

    def connect(self, **kwargs: Any):
        """A pyVmomi ServiceInstance, logged in, TLS verified (``SmartConnect`` keywords win)."""
        from pyVim.connect import SmartConnect

        args = {
            "host": self.host,
            "port": self.port,
            "user": self.username,
            "pwd": self.password,
            "sslContext": self.ssl_context(),
            "httpConnectionTimeout": 60,
        }
        args.update(kwargs)
        return SmartConnect(**args)

    def __repr__(self) -> str:
        return f"Vcsim(url={self.url!r}, pid={self.pid})"
