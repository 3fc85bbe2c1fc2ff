"""V7 (notes): ESXi's root file system and /tmp are small RAM disks, and Ansible stages a copy in
its remote tmp (``~/.ansible/tmp``; root's home is ``/`` on ESXi, so ``/.ansible/tmp`` on the root
RAM disk): a 100+ MB driver bundle copied there fills it. The ESXi stand-in has such RAM disks
(tmpfs, sized like the stand-in bundle, see miglab/sim/standins/esxi/README.md "RAM disks").

First the stand-in: a copy through the default remote tmp fails with "No space left on device".
Then miglab: esxi_vgpu_driver stages a bundle from a URL on the datastore
(``esxi_vgpu_driver_staging_dir``), removes the staging folder, copies nothing the second time,
and changes nothing in check mode. One stand-in container per test, reached over SSH through
``podman exec ... sshd -i`` as the simulated lab reaches its hosts; removed at the end."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testlib import ROOT, ansible_env

STANDIN = ROOT / "miglab" / "sim" / "standins" / "esxi"
# The podman options that make the RAM disks: the same as the simulated lab's (checked below).
RAMDISKS = ["--tmpfs", "/root/.ansible:size=1m,mode=0700", "--tmpfs", "/tmp:size=8m,mode=1777"]
DATASTORE = "/vmfs/volumes/datastore1"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("podman"), reason="the stand-in needs root and podman"
)


def test_the_simulated_lab_starts_its_hosts_with_these_ram_disks():
    from miglab.sim import lab

    source = inspect.getsource(lab.start_hosts)
    assert all(f'"{opt}"' in source for opt in RAMDISKS), RAMDISKS


@pytest.fixture(scope="module")
def standin_env(tmp_path_factory) -> dict[str, str]:
    """The image (built when out of date), CONTAINERS_CONF and an SSH key of this test's own."""
    project = tmp_path_factory.mktemp("project")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIGLAB_")}
    env["MIGLAB_PROJECT_DIR"] = str(project)
    res = subprocess.run(["bash", str(STANDIN / "build-image.sh")], cwd=project, env=env,
                         capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return dict(re.findall(r"^export (\w+)=(\S+)$", res.stdout, re.M))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> tuple[Path, str]:
    sys.path.insert(0, str(STANDIN))
    try:
        import importlib

        make = importlib.import_module("make-bundle")
    finally:
        sys.path.pop(0)
    return make.write("535.154.02", "7.0.2", tmp_path_factory.mktemp("bundles"))


@pytest.fixture
def host(standin_env, tmp_path):
    """A fresh stand-in container; host.play(PLAYBOOK_TEXT, *args) runs ansible-playbook on it."""
    name = f"miglab-v7-{os.getpid()}-{tmp_path.name}"[:60]
    env = ansible_env({"CONTAINERS_CONF": standin_env["CONTAINERS_CONF"]})
    key = standin_env["MIGLAB_ESXI_STANDIN_KEY"]
    started = subprocess.run(
        ["podman", "run", "-d", "--name", name, "--hostname", name,
         "-v", f"{key}.pub:/root/.ssh/authorized_keys:ro",
         "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096",
         *RAMDISKS, standin_env["MIGLAB_ESXI_STANDIN_IMAGE"]],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"esxi_hosts": {"hosts": {name: {
        "ansible_user": "root",
        "ansible_ssh_private_key_file": key,
        # as inventories/sim: ssh runs `sshd -i` inside the container
        "ansible_ssh_common_args": "-o ProxyCommand=\"podman exec -i %h sh -c 'mkdir -p /run/sshd"
                                   " && exec /usr/sbin/sshd -i'\" -o StrictHostKeyChecking=no"
                                   " -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        "ansible_ssh_pipelining": True,
        "ansible_python_interpreter": "/usr/bin/python3",
    }}}}))  # fmt: skip

    def play(text: str, *args: str) -> subprocess.CompletedProcess:
        book = tmp_path / "play.yml"
        book.write_text(text)
        return subprocess.run(
            ["ansible-playbook", "-i", str(inventory), str(book), *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    def sh(script: str) -> str:
        return subprocess.run(["podman", "exec", name, "sh", "-c", script], env=env,
                              capture_output=True, text=True, timeout=60).stdout  # fmt: skip

    play.sh = sh
    play.tmp = tmp_path
    try:
        yield play
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", name], env=env, capture_output=True)


def _recap(res: subprocess.CompletedProcess) -> dict[str, int]:
    m = re.search(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", res.stdout)
    assert m, res.stdout[-3000:] + res.stderr[-3000:]
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, m.groups()), strict=True))


def test_v7_a_bundle_copied_through_the_default_remote_tmp_fills_the_root_ram_disk(host, bundle):
    path, _ = bundle
    assert path.stat().st_size > 2 * (1 << 20)  # the bundle is larger than the root RAM disk
    res = host(f"""
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.copy:
        src: {path}
        dest: {DATASTORE}/{path.name}
        mode: "0644"
""")
    assert res.returncode != 0 and _recap(res)["failed"] == 1, res.stdout[-3000:]
    assert "No space left on device" in res.stdout + res.stderr, res.stdout[-3000:]
    assert host.sh(f"test -e {DATASTORE}/{path.name} || echo absent").strip() == "absent"


ROLE_PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: miglab.lab.esxi_vgpu_driver
        tasks_from: bundle
      vars:
        esxi_vgpu_driver_bundle_url: file://{path}
        esxi_vgpu_driver_bundle_checksum: "{checksum}"
        esxi_vgpu_driver_cache_dir: {cache}
"""


def _role_play(host, bundle) -> tuple[str, str, str]:
    """(playbook, bundle path on the datastore, command listing what is left on the host)"""
    path, checksum = bundle
    play = ROLE_PLAY.format(path=path, checksum=checksum, cache=host.tmp / "cache")
    dest = f"{DATASTORE}/miglab/{path.name}"
    return play, dest, f"find /root/.ansible /tmp {DATASTORE}/miglab -mindepth 1 2>/dev/null"


def test_the_driver_role_stages_a_downloaded_bundle_on_the_datastore(host, bundle):
    play, dest, leftovers = _role_play(host, bundle)
    res = host(play)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert _recap(res)["changed"] >= 1
    want = bundle[1].split(":", 1)[1]
    assert host.sh(f"sha256sum {dest}").split()[:1] == [want]
    assert want == hashlib.sha256(bundle[0].read_bytes()).hexdigest()
    assert host.sh(leftovers).split() == [dest]  # no staging folder left, RAM disks empty

    # the bundle is there with its checksum: nothing is copied again
    res = host(play)
    assert res.returncode == 0 and _recap(res)["changed"] == 0, res.stdout[-3000:]
    assert host.sh(leftovers).split() == [dest]


def test_the_driver_role_in_check_mode_copies_nothing(host, bundle):
    play, dest, leftovers = _role_play(host, bundle)
    res = host(play, "--check")
    assert res.returncode == 0 and _recap(res)["changed"] >= 1, res.stdout[-3000:]
    assert host.sh(leftovers).split() == []  # no bundle, no staging folder
