"""The simulated lab's reboot link (miglab.sim.daemon.boot_the_standin): a reboot the simulator
wrote (``<host>.down``) boots the host's stand-in container, and only then is it acknowledged
(``<host>.up``), which lets the simulator show the host connected again."""

from __future__ import annotations

import subprocess

from miglab.sim import daemon


def test_a_reboot_boots_the_standin_once_and_then_acknowledges_it(tmp_path, monkeypatch):
    calls = []

    def fake_run(argv, **kw):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0 if len(calls) > 1 else 1, "", "no container")

    monkeypatch.setattr(daemon.subprocess, "run", fake_run)
    host = "esxi-01"
    assert not daemon.boot_the_standin(tmp_path, host)  # nothing rebooted yet
    (tmp_path / f"{host}.down").write_text("1\n")
    assert not daemon.boot_the_standin(tmp_path, host)  # the stand-in refused: no ack
    assert not (tmp_path / f"{host}.up").exists()
    assert daemon.boot_the_standin(tmp_path, host)  # tried again, booted, acknowledged
    assert (tmp_path / f"{host}.up").read_text() == "1\n"
    assert not daemon.boot_the_standin(tmp_path, host)  # once per reboot
    assert calls[-1][:2] == ["podman", "exec"] and calls[-1][-2:] == ["boot-request", "vcenter"]
    assert len(calls) == 2
