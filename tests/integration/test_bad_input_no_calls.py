"""``miglab run`` on bad input makes no call to vCenter: it validates the campaign and the lab
inventory first and stops with exit code 2 before it starts ansible-runner.

How this is proven, with two independent witnesses:

1. The lab's vCenter is a simulator of this module's own (miglab/sim/vcsim, VMware's vcsim)
   reached only through a **counting TCP proxy**: the inventory's ``miglab_vcenter``, the
   inventory plugin's configuration (``vms.campaign_vms.yml``, which logs in as soon as Ansible
   parses the inventory) and the ``VMWARE_*`` environment all name the proxy's port. Every
   vCenter call opens a connection first -- a login, a failed login, an anonymous
   ``RetrieveServiceContent``, even a TLS handshake that goes wrong -- so the proxy's count of
   accepted connections is the number of times anything tried to talk to vCenter. (A session
   count alone would miss failed logins and calls without a session.)
2. The **simulator's own records**, read over a separate session opened directly (not through the
   proxy): its events (vcsim posts a ``UserLoginSessionEvent`` for every login and a
   ``UserLogoutSessionEvent`` for every logout, with increasing keys) and the keys of the sessions
   it holds (``SessionManager.sessionList``).

A control runs what Ansible would run first -- ``ansible-inventory`` on the same inventory and
environment -- and both witnesses must see it (a connection through the proxy, a login event).
Then, for each bad input, the proxy must have accepted no connection, the simulator must have
posted no event and hold the same sessions as before. No ESXi host is contacted either:
``miglab run`` did not start Ansible at all (no ansible-runner folder under ``artifacts/``, no
results folder).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from testlib import FIXTURES, ROOT, CountingProxy, ansible_env

pytestmark = pytest.mark.integration

CORPUS = FIXTURES / "bad-inputs"
GOOD_CAMPAIGN = CORPUS / "good" / "campaign.yml"
SIM_HOSTS = ROOT / "inventories" / "sim" / "hosts.yml"  # the simulator's default lab


class SimulatorRecords:
    """What the simulator itself recorded, read over a session of our own (direct, not through
    the proxy): the latest event's key and the keys of the open sessions."""

    def __init__(self, sim):
        from pyVmomi import vim

        self._vim = vim
        self.si = sim.connect()

    def _events(self) -> list:
        content = self.si.RetrieveContent()
        return list(content.eventManager.QueryEvents(self._vim.event.EventFilterSpec()))

    def snapshot(self) -> dict:
        """The latest event's key and the open sessions' keys."""
        sessions = self.si.RetrieveContent().sessionManager.sessionList
        return {
            "latest_event": max((e.key for e in self._events()), default=0),
            "sessions": sorted(s.key for s in sessions),
        }

    def events_since(self, snapshot: dict) -> list[str]:
        """Type names of the events posted after ``snapshot`` (of the latest page)."""
        return [type(e).__name__ for e in self._events() if e.key > snapshot["latest_event"]]

    def close(self) -> None:
        from pyVim.connect import Disconnect

        with contextlib.suppress(Exception):
            Disconnect(self.si)


@pytest.fixture(scope="module")
def lab(vcsim_binary, tmp_path_factory):
    """A simulator of this module's own, the counting proxy in front of it, and a lab inventory
    folder whose every vCenter setting points at the proxy (so does the environment)."""
    from miglab.sim import vcenter as vcsim_lab

    with vcsim_lab.Vcsim(binary=vcsim_binary) as sim:
        proxy = CountingProxy(sim.port)
        records = SimulatorRecords(sim)
        folder = tmp_path_factory.mktemp("bad-input-no-calls") / "lab"
        (folder / "group_vars" / "all").mkdir(parents=True)
        shutil.copy(SIM_HOSTS, folder / "hosts.yml")
        (folder / "group_vars" / "all" / "vcenter.yml").write_text(
            "miglab_vcenter:\n"
            f"  hostname: 127.0.0.1\n  port: {proxy.port}\n  username: {sim.username}\n"
            f"  password: {sim.password}\n  validate_certs: true\n  ca_bundle: {sim.ca_file}\n"
            "miglab_datacenter: dc1\nmiglab_datastore: datastore1\nmiglab_network: VM Network\n"
        )
        (folder / "vms.campaign_vms.yml").write_text(
            f"plugin: miglab.lab.campaign_vms\ncampaign: {GOOD_CAMPAIGN}\nlab: hosts.yml\n"
            f"query_vcenter: true\nhostname: 127.0.0.1\nport: {proxy.port}\n"
            f"username: {sim.username}\nca_bundle: {sim.ca_file}\n"
        )
        env = {
            "VMWARE_HOST": "127.0.0.1",
            "VMWARE_PORT": str(proxy.port),
            "VMWARE_USER": sim.username,
            "VMWARE_PASSWORD": sim.password,
            "VMWARE_CA_BUNDLE": sim.ca_file,
        }
        try:
            yield Lab(sim, proxy, records, folder, env)
        finally:
            records.close()
            proxy.close()


@dataclass
class Lab:
    sim: object
    proxy: CountingProxy
    records: SimulatorRecords
    folder: Path
    env: dict


def _run(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=ROOT, env=ansible_env(env), capture_output=True, text=True, timeout=300
    )


def test_control_both_witnesses_see_what_ansible_would_do(lab):
    """What Ansible does first with this inventory -- the campaign_vms plugin logs in to read
    the VMs' power states -- is seen by the proxy and by the simulator."""
    before, connections = lab.records.snapshot(), lab.proxy.count
    exe = shutil.which("ansible-inventory", path=str(Path(sys.executable).parent))
    res = _run([exe or "ansible-inventory", "-i", str(lab.folder), "--list"], lab.env)
    assert res.returncode == 0, res.stdout + res.stderr
    hostvars = json.loads(res.stdout)["_meta"]["hostvars"]
    vms = {h: v for h, v in hostvars.items() if h.startswith("bad-inputs-good-")}
    assert len(vms) == 5 and all("miglab_vm_power_state" in v for v in vms.values())
    assert lab.proxy.count > connections
    assert "vim.event.UserLoginSessionEvent" in lab.records.events_since(before)


# --- bad inputs: the campaign, or an edit of the lab folder; (file, field) of the problem --------
def _edit(folder: Path, rel: str, old: str, new: str) -> Path:
    f = folder / rel
    text = f.read_text()
    assert old in text, (rel, old)
    f.write_text(text.replace(old, new, 1))
    return f


def host_cpus_zero(folder: Path, port: int):
    f = _edit(folder, "hosts.yml", "miglab_host_cpus: 128", "miglab_host_cpus: 0")
    return f, "all.children.esxi_hosts.hosts.esxi-01.sim.miglab.test.miglab_host_cpus"


def vcenter_unknown_key(folder: Path, port: int):
    f = _edit(folder, VCENTER, "  validate_certs:", "  validate_cert: true\n  validate_certs:")
    return f, "miglab_vcenter.validate_cert"


def vcenter_hostname_url(folder: Path, port: int):
    url = f"https://127.0.0.1:{port}/sdk"  # the proxy itself: a careless reader would connect
    return _edit(
        folder, VCENTER, "hostname: 127.0.0.1", f"hostname: {url}"
    ), "miglab_vcenter.hostname"


def bundle_url_smb(folder: Path, port: int):
    f = folder / "group_vars" / "esxi_hosts.yml"
    f.write_text("esxi_vgpu_driver_bundle_url: smb://fileserver/nvidia/bundle.zip\n")
    return f, "esxi_vgpu_driver_bundle_url"


VCENTER = "group_vars/all/vcenter.yml"
CAMPAIGNS = CORPUS / "campaigns"
BAD = [
    ("mig-layout", CAMPAIGNS / "c20-mig-8x-1g-one-gpu.yml", None, "scenarios.s3.vgpus"),
    ("over-commit", CAMPAIGNS / "c26-overcommit-vcpus.yml", None, "scenarios.s3.vgpus"),
    ("unknown-key", CAMPAIGNS / "c05-unknown-top-key.yml", None, "nmae"),
    ("duplicate-key", CAMPAIGNS / "c08-duplicate-top-key.yml", None, "name"),
    ("type", CAMPAIGNS / "c12-type-vcpus-string.yml", None, "vm.vcpus"),
    ("non-utf8", CAMPAIGNS / "c37-non-utf8.yml", None, "(top)"),
    ("billion-laughs", CAMPAIGNS / "c40-billion-laughs.yml", None, "(top)"),
    ("host-value", GOOD_CAMPAIGN, host_cpus_zero, None),
    ("vcenter-unknown-key", GOOD_CAMPAIGN, vcenter_unknown_key, None),
    ("vcenter-hostname-url", GOOD_CAMPAIGN, vcenter_hostname_url, None),
    ("bundle-url", GOOD_CAMPAIGN, bundle_url_smb, None),
]


@pytest.mark.parametrize("case_id, campaign, edit, field", BAD, ids=[b[0] for b in BAD])
def test_bad_input_never_reaches_vcenter(lab, tmp_path, case_id, campaign, edit, field):
    folder = tmp_path / "lab"
    shutil.copytree(lab.folder, folder)
    file = campaign
    if edit:
        file, field = edit(folder, lab.proxy.port)
    artifacts = ROOT / "artifacts"
    prepared = set(artifacts.glob("*-bad-inputs-good")) if artifacts.is_dir() else set()
    connections, seen = lab.proxy.count, lab.records.snapshot()

    res = _run(
        [sys.executable, "-m", "miglab.cli", "run", str(campaign), "-i", str(folder)]
        + ["--results-dir", str(tmp_path / "results")],
        lab.env,
    )

    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    assert res.stdout == "" and "Traceback" not in out, out
    lines = res.stderr.splitlines()
    assert lines and all(line.startswith("error: ") for line in lines), lines
    assert any(line.startswith(f"error: {file}: {field}: ") for line in lines), lines
    assert lab.sim.password not in out
    # Nothing reached vCenter (no connection through the proxy, nothing new in the simulator's
    # events or sessions) and nothing started (no ansible-runner folder, no results).
    assert lab.proxy.count == connections, "a connection to vCenter was opened"
    assert lab.records.events_since(seen) == [], "the simulator recorded a call"
    assert lab.records.snapshot() == seen, "the simulator holds another session"
    assert not (tmp_path / "results").exists()
    after = set(artifacts.glob("*-bad-inputs-good")) if artifacts.is_dir() else set()
    assert after == prepared, "miglab run prepared an ansible-runner folder"
