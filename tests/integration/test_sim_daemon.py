"""The simulated lab's simulator process (miglab.sim.daemon): the keeper (reboot link + guest
keeper) is a child process the simulator's process restarts whenever it dies, so a keeper crash
never takes the vCenter simulator down (a fresh clone's first demo once lost its lab that way)."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys

import pytest
from pyVim.connect import Disconnect, SmartConnect

from testlib import ROOT, wait_until

pytestmark = pytest.mark.integration


def _daemon(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "miglab.sim.daemon", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def _keeper(out) -> dict:
    try:
        return json.loads((out / "keeper.json").read_text())
    except (OSError, ValueError):
        return {}


def test_a_killed_keeper_is_restarted_and_the_simulator_stays_up(vcsim_binary, tmp_path):
    out = tmp_path / "sim"
    res = _daemon("start", "--inventory", str(ROOT / "inventories" / "sim" / "hosts.yml"),
                  "--out", str(out), "--max-life", "120")  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    try:
        conn = json.loads((out / "vcsim.json").read_text())
        assert wait_until(lambda: _keeper(out).get("pid")), "no keeper started"
        first = _keeper(out)
        assert first["restarts"] == 0
        os.kill(first["pid"], signal.SIGKILL)  # the keeper dies, as from a bug in its poll
        assert wait_until(lambda: _keeper(out).get("restarts") == 1), _keeper(out)
        assert _keeper(out)["pid"] != first["pid"]
        # The simulator is still up: a new session logs in and sees vCenter.
        context = ssl.create_default_context(cafile=conn["ca_bundle"])
        si = SmartConnect(host=conn["hostname"], port=conn["port"], user=conn["username"],
                          pwd=conn["password"], sslContext=context)  # fmt: skip
        try:
            assert si.content.about.apiType == "VirtualCenter"
        finally:
            Disconnect(si)
        assert "keeper exited (status -9): restarting (1)" in (out / "daemon.log").read_text()
    finally:
        assert _daemon("stop", "--out", str(out)).returncode == 0


def _cmdlines() -> list[str]:
    out = []
    for proc in os.listdir("/proc"):
        if proc.isdigit():
            try:
                with open(f"/proc/{proc}/cmdline", "rb") as f:
                    out.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass  # it ended meanwhile
    return out


def test_the_simulators_password_is_on_no_command_line_and_in_0600_files_only(
    vcsim_binary, tmp_path
):
    """Every local user sees command lines (ps) and reads world-readable files: the simulator
    gets its password from a 0600 file (-password-file), vcsim.json holding the connection is
    0600. Before, the password was vcsim's -password argument and vcsim.json was 0644."""
    out = tmp_path / "sim"
    res = _daemon("start", "--inventory", str(ROOT / "inventories" / "sim" / "hosts.yml"),
                  "--out", str(out), "--max-life", "120")  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    try:
        conn_file = out / "vcsim.json"
        password = json.loads(conn_file.read_text())["password"]
        assert (conn_file.stat().st_mode & 0o777) == 0o600
        assert not [c for c in _cmdlines() if password in c]
        assert any("miglab-vcsim" in c and "-password-file" in c for c in _cmdlines())
    finally:
        assert _daemon("stop", "--out", str(out)).returncode == 0
