"""Helpers for the ESXi scenarios' testinfra tests (test infrastructure): the stand-in's state
and the simulated vCenter's view of a host."""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))  # the miglab package, also outside the virtualenv


def standin_state(host) -> dict:
    """The stand-in's whole state (esxi-standin show)."""
    return json.loads(host.check_output("esxi-standin show"))


def hostname(host) -> str:
    return host.backend.get_hostname()


@contextlib.contextmanager
def vcenter():
    """A pyVmomi session with the scenario's simulated vCenter (vcsim.json from prepare)."""
    from pyVim.connect import Disconnect, SmartConnect

    eph = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
    conn = json.loads((eph / "vcsim" / "vcsim.json").read_text())
    si = SmartConnect(
        host=conn["hostname"],
        port=conn["port"],
        user=conn["username"],
        pwd=conn["password"],
        sslContext=ssl.create_default_context(cafile=conn["ca_bundle"]),
    )
    try:
        yield si
    finally:
        Disconnect(si)


def vcenter_host(name: str) -> dict:
    """miglab's view of one host through vCenter (miglab.adapters.vsphere.hosts.gpu_info)."""
    from miglab.adapters.vsphere.hosts import find_hosts, gpu_info

    with vcenter() as si:
        return gpu_info(find_hosts(si, [name])[name])
