"""V8 (real-lab notes): NVIDIA's host software on ESXi is two components, the vGPU Manager and the
GPU Management Daemon (nvd-gpu-mgmt-daemon, its own bundle). The ESXi stand-in first: the daemon's
bundle (make-bundle.py --flavour DAEMON, reproducible), listed once installed, its init script
(/etc/init.d/nvdGpuMgmtDaemon start|stop|status, started at boot), ``vmkload_mod -l`` listing
``nvidia`` while the driver runs, and an update refused while the daemon runs. Then miglab's plan
and verify (miglab.core.esxi.driver / .daemon) on what the stand-in prints."""

from __future__ import annotations

import pytest

from miglab.core import esxi
from miglab.core.esxi import daemon as gmd
from testlib import ROOT, esxi_standin_host, load_script

STANDIN = ROOT / "miglab" / "sim" / "standins" / "esxi"
QUERY = ["--query-gpu=" + ",".join(esxi.NVSMI_QUERY_FIELDS), "--format=csv"]
SCRIPT = "nvdGpuMgmtDaemon"


@pytest.fixture
def host(tmp_path):
    run = esxi_standin_host(tmp_path, "7.0.2", "gpus=A100-PCIE-80GB:1")
    run.script = tmp_path / "init.d" / SCRIPT
    return run


def _facts(host, daemon_bundle: str | None = None) -> dict:
    nv = host("nvidia-smi", *QUERY)
    st = host(SCRIPT, "status")
    f = {
        "vmware_vl": host("vmware", "-vl").stdout,
        "acceptance": host("esxcli", "software", "acceptance", "get").stdout,
        "components": host("esxcli", "software", "component", "list").stdout,
        "vibs": host("esxcli", "software", "vib", "list").stdout,
        "nvidia_smi": {"rc": nv.returncode, "stdout": nv.stdout, "stderr": nv.stderr},
        "vmkload": host("vmkload_mod", "-l").stdout,
        "daemon_status": {"rc": st.returncode, "stdout": st.stdout, "stderr": st.stderr},
    }
    if daemon_bundle:
        f["daemon_bundle_vibs"] = host(
            "esxcli", "software", "sources", "vib", "list", "-d", daemon_bundle
        ).stdout
    return f


def test_v8_daemon_bundle_is_reproducible_and_named_like_nvidias(tmp_path):
    make = load_script(STANDIN / "make-bundle.py", "miglab_make_bundle")
    a = make.write("550.54.16", "8.0.0", tmp_path / "a", flavour="DAEMON")
    b = make.write("550.54.16", "8.0.0", tmp_path / "b", flavour="DAEMON")
    assert a[1] == b[1] and a[0].name == b[0].name
    assert a[0].name.startswith("nvd-gpu-mgmt-daemon_550.54.16-0.0.0000_")
    assert gmd.bundle_file_version(a[0].name) == "550.54.16"
    assert make.write("550.54.16", "8.0.0", tmp_path / "a")[1] != a[1]  # the manager's differs


def test_v8_daemon_installed_listed_started_at_boot(host):
    assert host(SCRIPT, "status").returncode == 127  # no script before the daemon's VIB
    assert not host.script.exists()
    assert "nvidia" not in host("vmkload_mod", "-l").stdout
    for flavour in ("AIE", "DAEMON"):
        res = host(
            "esxcli", "software", "component", "apply", "-d", host.bundle("550.54.16", flavour)
        )
        assert res.returncode == 0, res.stdout + res.stderr
    assert "Reboot Required: true" in res.stdout  # the daemon's (the 525.147.01 capture)
    comps = host("esxcli", "software", "component", "list").stdout
    assert "nvd-gpu-mgmt-daemon" in comps and "550.54.16-0.0.0000" in comps
    assert "nvdgpumgmtdaemon" in host("esxcli", "software", "vib", "list").stdout
    assert host.script.is_symlink()
    st = host(SCRIPT, "status")
    assert (st.returncode, st.stdout) == (3, f"{SCRIPT} is not running.\n")
    assert host(SCRIPT, "start").returncode == 1  # no nvidia module before the reboot
    host("esxi-standin", "reboot")
    st = host(SCRIPT, "status")
    assert (st.returncode, st.stdout) == (0, f"{SCRIPT} is running.\n")
    mods = host("vmkload_mod", "-l").stdout.splitlines()
    assert [line.split() for line in mods if line.startswith("nvidia")] == [["nvidia", "5", "8420"]]
    assert host(SCRIPT, "stop").stdout == f"{SCRIPT} stopped.\n"
    assert host(SCRIPT, "start").returncode == 0 and host(SCRIPT, "status").returncode == 0


def test_v8_manager_update_refused_while_the_daemon_runs(host):
    for flavour in ("AIE", "DAEMON"):
        host("esxi-standin", "preinstall", "--loaded", host.bundle("535.129.03", flavour))
    assert host(SCRIPT, "status").returncode == 0
    new = host.bundle("535.154.02")
    res = host("esxcli", "software", "component", "apply", "-d", new)
    assert res.returncode == 1 and res.stdout.startswith("[InstallationError]"), res.stdout
    assert "535.129.03-1OEM" in host("esxcli", "software", "component", "list").stdout
    # the daemon's own update is refused too; both go through once it is stopped
    assert (
        host(
            "esxcli", "software", "vib", "install", "-d", host.bundle("535.154.02", "DAEMON")
        ).returncode
        == 1
    )
    assert host(SCRIPT, "stop").returncode == 0
    assert host("esxcli", "software", "component", "apply", "-d", new).returncode == 0
    assert (
        host(
            "esxcli", "software", "component", "apply", "-d", host.bundle("535.154.02", "DAEMON")
        ).returncode
        == 0
    )
    host("esxi-standin", "reboot")
    assert host(SCRIPT, "status").returncode == 0


# --- miglab's plan and verify on the stand-in's output ---------------------------------------
WANT = {"version": "535.154.02", "guest_driver_version": "535.154.05", "daemon_policy": "auto"}


def test_v8_plan_requires_the_daemon_from_r525_unless_optional(host):
    plan = esxi.plan_driver(_facts(host), WANT)
    assert plan["daemon"]["action"] == "skip" and plan["daemon"]["required"]
    assert any("esxi_vgpu_driver_daemon_bundle_path" in p for p in plan["problems"])
    plan = esxi.plan_driver(_facts(host), {**WANT, "daemon_policy": "optional"})
    assert plan["problems"] == [] and plan["notes"][-1].startswith("WARNING: the NVIDIA GPU")
    old = esxi.plan_driver(_facts(host), {**WANT, "version": "470.63"})
    assert not old["daemon"]["required"]


def test_v8_plan_fresh_host_installs_both_then_verify(host):
    d = host.bundle("535.154.02", "DAEMON")
    want = {**WANT, "daemon_bundle": d.rsplit("/", 1)[-1]}
    plan = esxi.plan_driver(_facts(host, d), want)
    assert plan["problems"] == [], plan["problems"]
    assert (plan["action"], plan["daemon"]["action"], plan["daemon"]["stop_first"]) == (
        "install", "install", False,
    )  # fmt: skip
    for b in (host.bundle("535.154.02"), d):
        host("esxcli", "software", "component", "apply", "-d", b)
    before = esxi.verify_driver(_facts(host), want)
    assert not before["ok"] and before["module_loaded"] is False
    host("esxi-standin", "reboot")
    after = esxi.verify_driver(_facts(host), want)
    assert after["ok"], after["problems"]
    assert after["daemon"]["status"]["state"] == "running" and after["module_loaded"] is True
    again = esxi.plan_driver(_facts(host, d), want)
    assert (again["action"], again["daemon"]["action"], again["reboot"]) == ("none", "none", False)


def test_v8_plan_update_stops_the_daemon_first(host):
    for flavour in ("AIE", "DAEMON"):
        host("esxi-standin", "preinstall", "--loaded", host.bundle("535.129.03", flavour))
    d = host.bundle("535.154.02", "DAEMON")
    want = {**WANT, "daemon_bundle": d.rsplit("/", 1)[-1]}
    plan = esxi.plan_driver(_facts(host), want)  # first phase: from the file name
    assert (plan["action"], plan["daemon"]["action"], plan["daemon"]["stop_first"]) == (
        "upgrade", "update", True,
    )  # fmt: skip
    assert "nvdGpuMgmtDaemon stop" in plan["summary"]
    # only the manager changes: the daemon is still stopped first
    same = host.bundle("535.129.03", "DAEMON").rsplit("/", 1)[-1]
    plan = esxi.plan_driver(_facts(host), {**WANT, "daemon_bundle": same})
    assert (plan["daemon"]["action"], plan["daemon"]["stop_first"]) == ("none", True)


def test_v8_verify_fails_on_a_stopped_daemon_and_plan_starts_it(host):
    for flavour in ("AIE", "DAEMON"):
        host("esxi-standin", "preinstall", "--loaded", host.bundle("535.154.02", flavour))
    host(SCRIPT, "stop")
    res = esxi.verify_driver(_facts(host), WANT)
    assert not res["ok"]
    assert any("GPU Management Daemon is not running" in p for p in res["problems"])
    plan = esxi.plan_driver(_facts(host), WANT)
    assert (plan["action"], plan["daemon"]["action"], plan["reboot"]) == ("none", "start", False)


def test_v8_daemon_status_and_module_parsing():
    assert gmd.daemon_status({"rc": 0, "stdout": "nvdGpuMgmtDaemon is running.\n"})["state"] == (
        "running"
    )
    assert gmd.daemon_status({"rc": 0, "stdout": "nvdGpuMgmtDaemon is not running\n"})["state"] == (
        "stopped"
    )
    assert gmd.daemon_status({"rc": 127, "stderr": "sh: not found"})["state"] == "absent"
    assert gmd.daemon_status({"rc": 2, "msg": "No such file or directory"})["state"] == "absent"
    assert gmd.daemon_status(None)["state"] == "unknown"
    assert gmd.nvidia_module_loaded("Name  Used Size (kb)\nnvidia   5    8420\n") is True
    assert gmd.nvidia_module_loaded("Name  Used Size (kb)\nnvidia_foo 1 2\n") is False
    assert gmd.nvidia_module_loaded(None) is None
