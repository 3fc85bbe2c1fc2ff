"""The main job end to end on the built-in simulated lab, as a user of the installed miglab runs
it: in a project made by `miglab init` outside the checkout (tests/e2e/conftest.py installs the
wheel and the collection), `miglab sim up`, `miglab run` (the collection's site playbook through
ansible-runner), the report, a second `ansible-playbook miglab.lab.site` that must change
nothing, `miglab run --resume`, faults, and `ansible-playbook miglab.lab.teardown`.

Slow (a few minutes: the golden guest image is built once per project), needs root and podman;
the lab lives in the project's .cache/sim and is stopped at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from testlib import (
    ROOT,
    CountingProxy,
    play_recap,
    require_sim_lab,
    run_module,
    wait_until,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sim]

CAMPAIGN = ROOT / "tests" / "e2e" / "campaigns" / "sim-small.yml"
HOST = "esxi-01.sim.miglab.test"


class _Lab:
    """The project the tests' lab lives in and the installed miglab that runs it (set by the
    sim_lab fixture: every test here uses it)."""

    project: Path
    bindir: Path
    env: dict

    def bin(self, name: str) -> str:
        return str(self.bindir / name)

    def sim(self, *parts: str) -> Path:
        """A path in the lab's state folder (see miglab/sim/lab.py)."""
        return self.project.joinpath(".cache", "sim", *parts)

    def vcenter(self) -> dict:
        return json.loads(self.sim("vcsim.json").read_text())


LAB = _Lab()


def _run(cmd: list[str], timeout: int = 1200, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=LAB.project, env={**LAB.env, **env}, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


@pytest.fixture(scope="module")
def sim_lab(installed):
    require_sim_lab()
    LAB.project, LAB.bindir, LAB.env = installed.init("simlab"), installed.bindir, installed.env
    res = _run([LAB.bin("miglab"), "sim", "up"], timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    yield
    _run([LAB.bin("miglab"), "sim", "down"], timeout=300)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
def first_run(sim_lab, results):
    res = _run(
        [LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(results)], timeout=1800
    )
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-6000:]
    return res


def test_run_builds_the_lab_and_writes_the_report(first_run, results):
    report = results / "sim-small" / "report" / "report.md"
    assert f"report: {report}" in first_run.stdout
    text = report.read_text()
    assert "SIMULATED" in text
    data = json.loads((results / "sim-small" / "report" / "results.json").read_text())
    assert "s1" in json.dumps(data) and "s6" in json.dumps(data)
    # The known answer of the slice model (issue 17, SIMULATED): s6's 4g + 2g + 1g are 7 of 7
    # compute slices, so its total is s1's (7g) within 15 %; every counted run overlapped >= 90 %
    # of its span (multi-VM rounds), and none was dropped as not concurrent.
    groups = {g["scenario"]: g for g in data["groups"] if g["benchmark"] == "resnet50"}
    assert groups["s1"]["count"] == groups["s6"]["count"] == 1, groups
    assert groups["s6"]["mean"] == pytest.approx(groups["s1"]["mean"], rel=0.15), groups
    for g in groups.values():
        for run in g["runs"]:
            assert run["included"] and run["overlap_fraction"] >= 0.9, run
    assert list((results / "sim-small" / "report").glob("*.png"))
    # Every VM of a scenario ran, VALID, and the logs say simulated.
    runs = sorted(results.glob("sim-small/*/*/resnet50/Offline/performance/run_1/miglab_run.json"))
    assert [p.parts[-7] for p in runs] == ["s1", "s6", "s6", "s6"]
    for path in runs:
        meta = json.loads(path.read_text())
        assert meta["simulated"] is True
        assert meta["loadgen"]["valid"] is True
        # where the vGPU ran, read back after power-on, is where the plan put it (notes V1-V2)
        where = meta["placement"]
        assert where["gpu"] == where["planned"]["gpu"] and where["gpu"].startswith("0000:")
        assert where["mig_slot"] == where["planned"]["mig_slot"] is not None
        # each guest measured its clock against the controller's responder, which it reached at
        # its default gateway (the podman bridge): the mlperf role's default, issue 16
        assert meta["clock"]["method"] == "responder" and "error" not in meta["clock"], meta
        # the runtime ran in a container of the lab's image (issue 17: mlperf_runtime container),
        # loaded from the archive miglab sim up mounts into every VM
        runtime = meta["runtime"]
        assert runtime["kind"] == "container" and runtime["container"] is True, runtime
        assert runtime["image"] == "localhost/miglab-sim-mlperf-runtime:latest", runtime
        assert runtime["image_id"].startswith("sha256:"), runtime
    assert "### Placement" in text and "| NO |" not in text
    assert "RUNTIME: container localhost/miglab-sim-mlperf-runtime:latest (sha256:" in text
    # Progress as data on stderr (not a terminal: one line per play and per MLPerf round).
    assert "[validate]" in first_run.stderr and "MLPerf rounds 2/2" in first_run.stderr


def test_no_secret_in_artifacts_results_or_report(first_run, results):
    """The simulated vCenter's password and the licence token's sentinel appear in no file the
    run left behind: ansible-runner's artifacts (events, stdout, env), the results tree, the
    report, the simulated lab's own logs."""
    password = LAB.vcenter()["password"]
    sentinel = (LAB.project / ".cache" / "standins" / "token-sentinel.txt").read_text().strip()
    artifacts = Path(re.search(r"^artifacts: (\S+)$", first_run.stdout, re.M).group(1))
    folders = [artifacts.parents[1], results]
    leaks = []
    checked = 0
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                checked += 1
                data = path.read_bytes()
                leaks += [f"{path}: {name}" for name, secret in
                          (("vCenter password", password), ("licence token", sentinel))
                          if secret.encode() in data]  # fmt: skip
    text = first_run.stdout + first_run.stderr
    leaks += [
        name for name, secret in (("password", password), ("token", sentinel)) if secret in text
    ]
    assert checked > 50 and not leaks, leaks


def test_second_site_run_changes_nothing(first_run, results):
    res = _run(
        [LAB.bin("ansible-playbook"), "miglab.lab.site", "-e", f"miglab_results_dir={results}"],
        MIGLAB_CAMPAIGN=str(CAMPAIGN),
    )
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    recap = play_recap(res.stdout)
    assert recap and all(r["changed"] == 0 and r["failed"] == 0 for r in recap.values()), recap
    assert "every run VALID already: skipped" in res.stdout


def test_resume_redoes_nothing_and_a_plain_rerun_is_refused(first_run, results):
    before = {p: p.stat().st_mtime for p in results.rglob("mlperf_log_detail.txt")}
    res = _run([LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(results)])
    assert res.returncode == 2 and "--resume" in res.stderr
    res = _run([LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(results), "--resume"])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    assert {p: p.stat().st_mtime for p in results.rglob("mlperf_log_detail.txt")} == before


def test_resume_redoes_a_round_whose_vms_did_not_run_at_once(first_run, results):
    """Resume redoes exactly the rounds the report would not sum. Here one VM's resnet50 run of
    s6 is VALID on its own but a year older than its two peers' (every timestamp of its logs
    moved back: deterministic, where a late start depends on the machine's load). Before, each
    VM's own VALID run counted, the wave was skipped and the report could never complete (a CI
    run of f80ce93 ended so). Now that round is redone in all three VMs, nothing else is."""
    s6 = results / "sim-small" / "s6"
    vms = sorted(p for p in s6.iterdir() if p.is_dir())
    assert len(vms) == 3
    year = str(time.gmtime().tm_year)
    earlier = str(int(year) - 1)
    run = vms[1] / "resnet50" / "Offline" / "performance" / "run_1"
    for name in ("mlperf_log_detail.txt", "mlperf_log_summary.txt", "miglab_run.json"):
        f = run / name
        if f.is_file():
            f.write_text(f.read_text().replace(f"-{year} ", f"-{earlier} ")
                         .replace(f"{year}-", f"{earlier}-"))  # fmt: skip
    logs = {p: p.stat().st_mtime for p in results.rglob("mlperf_log_detail.txt")}
    redone = {p for p in logs if p.parts[-5:-1] == ("resnet50", "Offline", "performance", "run_1")
              and p.parts[-6] in {v.name for v in vms}}  # fmt: skip
    assert len(redone) == 3
    res = _run([LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(results), "--resume"])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    after = {p: p.stat().st_mtime for p in results.rglob("mlperf_log_detail.txt")}
    assert {p for p in logs if after[p] != logs[p]} == redone
    verify = _run([LAB.bin("miglab"), "results", "verify", str(results)])
    assert verify.returncode == 0, verify.stdout + verify.stderr


# --- faults: a chain of failed runs, each one also the resume of the fault before it -------------
# The chain starts from a copy of the first run's results without scenario s6 (wave 2): every run
# redoes wave 2 and a fault hits it. A run after a fault must get as far as the next fault (the
# VMs powered on again, MLPerf started in them), and the last one finishes: one resume for the
# chain instead of one per fault (they all redo the same wave). s1's collected files must come
# out byte-identical from every run. The tests depend on their order (pytest keeps file order).
@pytest.fixture(scope="module")
def chain(first_run, results, tmp_path_factory):
    """(results folder, s1's files): on a small tmpfs of its own when one can be mounted (the
    full-disk fault fills it), else in a plain folder (that fault is then skipped)."""
    disk = tmp_path_factory.mktemp("chain")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(disk)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    again = disk / "results"
    shutil.copytree(results, again)
    shutil.rmtree(again / "sim-small" / "s6")
    s1 = {p: p.read_bytes() for p in (again / "sim-small" / "s1").rglob("*") if p.is_file()}
    yield again, s1, (disk if mounted.returncode == 0 else None)
    if mounted.returncode == 0:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _start_run(again: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(again), "--resume",
         *extra],
        cwd=LAB.project, env=LAB.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _live_barriers(vm: str) -> set[str]:
    """The MLPerf start barriers in a guest whose run is alive and ready (its SUT loaded); a
    barrier left "ready" by a run killed earlier does not count. Empty while the guest is down.
    The run's pid is its runtime container's (mlperf_runtime container): checked in there."""
    check = (
        "for d in /var/lib/miglab-mlperf/results/.barrier/*/; do "
        '[ "$(cat "$d/state" 2>/dev/null)" = ready ] && kill -0 "$(cat "$d/pid")" '
        '2>/dev/null && echo "$d"; done; true'
    )
    res = subprocess.run(
        ["podman", "exec", vm, "sh", "-c",
         "for c in $(docker ps -q --filter label=miglab.mlperf.session); do "
         "docker exec \"$c\" sh -c \"$1\"; done; true", "sh", check],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return set(res.stdout.split())


def _wait_for_a_run(vm: str, proc: subprocess.Popen, timeout: float = 600) -> None:
    """Until an MLPerf run of this campaign run has its SUT ready in ``vm``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before the fault: " + proc.stderr.read()
        if _live_barriers(vm):
            return
        time.sleep(0.3)
    raise AssertionError(f"no MLPerf run started in {vm} within {timeout:.0f} s")


def _failed_run_kept_what_it_had(again: Path, s1: dict, out: str, banner: bool = True) -> None:
    """What every failed run leaves: no traceback, s1 byte-identical and verified, and (from
    `miglab run`; ``banner=False`` for a bare ansible-playbook) a report headed by the failure."""
    assert "Traceback" not in out
    report = (again / "sim-small" / "report" / "report.md").read_text()
    assert not banner or "THE CAMPAIGN RUN FAILED" in report
    assert {p: p.read_bytes() for p in s1} == s1
    verify = _run([LAB.bin("miglab"), "results", "verify", str(again / "sim-small" / "s1")])
    assert verify.returncode == 0, verify.stdout + verify.stderr


def _resume_finishes(again: Path, s1: dict) -> None:
    res = _run([LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(again), "--resume"])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    assert {p: p.read_bytes() for p in s1} == s1
    report = (again / "sim-small" / "report" / "report.md").read_text()
    assert "THE CAMPAIGN RUN FAILED" not in report and "LoadGen says INVALID" not in report
    runs = list((again / "sim-small" / "s6").glob("*/resnet50/Offline/performance/run_1"))
    assert len(runs) == 3
    verify = _run([LAB.bin("miglab"), "results", "verify", str(again)])
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_an_invalid_run_fails_the_campaign(chain):
    """Fault: LoadGen calls a run INVALID. Deterministically, on any machine: a minimum duration
    of an hour with a target of 0.001 QPS makes LoadGen issue an Offline query of a few samples,
    which ends long before the hour ("min_duration" not met). The campaign fails, naming it; what
    was collected before stays intact (checksums); the next run redoes only it."""
    again, s1, _ = chain
    never_long_enough = json.dumps(
        {"mlperf_extra_args": ["--threads", "1", "--target-qps", "0.001",
                               "--min-duration-ms", "3600000"]}
    )  # fmt: skip
    res = _run(
        [LAB.bin("ansible-playbook"), "miglab.lab.site", "-e", f"miglab_results_dir={again}",
         "-e", never_long_enough],
        MIGLAB_CAMPAIGN=str(CAMPAIGN),
    )  # fmt: skip
    assert res.returncode != 0
    assert "the campaign is not complete: s6 resnet50" in res.stdout
    assert "INVALID" in res.stdout
    _failed_run_kept_what_it_had(again, s1, res.stdout + res.stderr, banner=False)
    report = (again / "sim-small" / "report" / "report.md").read_text()
    assert "LoadGen says INVALID" in report and "min_duration" in report


def _blockers(state: str) -> dict:
    """Four VMs of someone else, each with a full-GPU vGPU: they take every GPU of the host."""
    conn = LAB.vcenter()
    vms = [
        {"name": f"e2e-blocker-{i}", "host": HOST, "vcpus": 2, "memory_gb": 4,
         "vgpus": ["grid_a100d-7-80c"]}
        for i in range(4)
    ]  # fmt: skip
    args = {**conn, "datastore": "datastore1", "network": "VM Network", "vms": vms}
    if state == "absent":
        args["state"] = "absent"
    else:
        args["power_state"] = "poweredon"
    return run_module("vgpu_vm", args)


def test_a_refused_power_on_fails_the_run_and_names_it(chain):
    """Fault: vCenter refuses to power a wave's VMs on (no GPU has room: other VMs hold them).
    The run stops with a non-zero exit code, names the failure in its output and in the report
    of what was collected; the collected results stay intact; then the GPUs are freed."""
    again, s1, _ = chain
    blocked = _blockers("poweredon")
    assert not blocked["failed"], blocked.get("msg")
    try:
        res = _run(
            [LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(again), "--resume"]
        )
        assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
        assert f"no GPU of host {HOST} can take vGPU" in res.stderr
        _failed_run_kept_what_it_had(again, s1, res.stdout + res.stderr)
        assert "can take vGPU" in (again / "sim-small" / "report" / "report.md").read_text()
    finally:
        freed = _blockers("absent")
    assert not freed["failed"], freed.get("msg")


def test_a_guest_killed_during_a_run_fails_it(chain):
    """Fault: a VM dies in the middle of an MLPerf run (its container is killed; the simulator
    powers the VM off, as vCenter shows a VM whose VMX died). The run fails naming the VM; the
    report says so; s1 stays intact. (The run itself resumes after the refused power-on.)"""
    again, s1, _ = chain
    vm = "sim-small-s6-vm2"
    proc = _start_run(again)
    try:
        _wait_for_a_run(vm, proc)
        subprocess.run(["podman", "kill", vm], check=True, capture_output=True)
        out, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, out[-3000:] + err[-3000:]
    assert f"failed: {vm}: unreachable" in err, err[-3000:]
    _failed_run_kept_what_it_had(again, s1, out + err)
    assert vm in (again / "sim-small" / "report" / "report.md").read_text()


def test_sigint_stops_the_run_and_keeps_the_results(chain):
    """Fault: Ctrl-C (SIGINT) in the middle of a campaign. miglab stops the playbook, says so,
    writes the report of what was collected (headed by the interruption), frees the lab lock and
    exits 130; s1 intact. (The run itself powers the killed VM on again.)"""
    again, s1, _ = chain
    proc = _start_run(again)
    try:
        _wait_for_a_run("sim-small-s6-vm1", proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out[-3000:] + err[-3000:]
    assert "interrupted by SIGINT" in err and "--resume" in err
    _failed_run_kept_what_it_had(again, s1, out + err)
    assert "interrupted by SIGINT" in (again / "sim-small" / "report" / "report.md").read_text()
    status = _run([LAB.bin("miglab"), "status"])
    assert ": idle" in status.stdout, status.stdout


def test_a_full_results_disk_fails_the_run(chain):
    """Fault: the controller's results disk is full (the chain's tmpfs, filled up). The fetched
    run cannot be unpacked: the run fails naming "No space left on device", nothing half-written
    is left, s1 intact; then the space is freed."""
    again, s1, disk = chain
    if disk is None:
        pytest.skip("cannot mount a tmpfs here")
    filler = disk / "filler"
    try:
        # Unbuffered: a buffered file would raise ENOSPC again when it is closed.
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * 65536)
        finally:
            os.close(fd)
        res = _run([LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(again),
                    "--resume"])  # fmt: skip
        assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
        assert "No space left on device" in res.stderr, res.stderr[-3000:]
        assert "Traceback" not in res.stdout + res.stderr
        assert {p: p.read_bytes() for p in s1} == s1
        verify = _run([LAB.bin("miglab"), "results", "verify", str(again / "sim-small")])
        assert "temp-file" not in verify.stdout and "staging" not in verify.stdout, verify.stdout
    finally:
        filler.unlink(missing_ok=True)


def test_vcenter_unreachable_mid_run_fails_it_and_resume_finishes(chain, tmp_path):
    """Fault: vCenter goes away while a wave runs (a proxy in front of the simulator is closed
    once the runs have started). The runs in the guests still finish and are collected; the
    wave's power-off fails with "cannot reach"; exit 1, the report names it. Then the chain's
    resume (vCenter back) finishes: the wave is complete, its VMs are powered off, s1 intact,
    every result verified."""
    again, s1, _ = chain
    conn = LAB.vcenter()
    proxy = CountingProxy(int(conn["port"]))
    via_proxy = tmp_path / "vcenter-via-proxy.json"
    via_proxy.write_text(json.dumps({"miglab_vcenter": {**conn, "port": proxy.port}}))
    proc = _start_run(again, "-e", f"@{via_proxy}")
    try:
        _wait_for_a_run("sim-small-s6-vm1", proc)
        proxy.close()
        out, err = proc.communicate(timeout=900)
    finally:
        proxy.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, out[-3000:] + err[-3000:]
    assert f"cannot reach {conn['hostname']}:{proxy.port}" in err, err[-3000:]
    assert conn["password"] not in out + err
    _failed_run_kept_what_it_had(again, s1, out + err)
    assert "cannot reach" in (again / "sim-small" / "report" / "report.md").read_text()
    _resume_finishes(again, s1)
    status = json.loads(_run([LAB.bin("miglab"), "sim", "status", "--json"]).stdout)
    assert not [g for g, st in status["guests"].items() if g.startswith("sim-small-") and
                st == "running"], status  # fmt: skip


def _host_module(name: str, **args) -> dict:
    conn = LAB.vcenter()
    res = run_module(name, {**conn, "esxi_hostname": HOST, **args})
    assert not res.get("failed"), res.get("msg")
    return res


def test_a_host_that_does_not_come_back_from_its_reboot_stops_the_run(first_run, results, tmp_path):
    """Fault: the ESXi host does not reconnect after a reboot the hosts phase needs (the running
    lab's reboot-hangs switch: while the file exists a rebooting host stays away). The hosts
    phase stops with a clear timeout, says the host stays in maintenance mode, exit 1, the report
    says so; the results are untouched. Once the host is back and out of maintenance mode (the
    operator's part, as the message says), --resume finishes: nothing to redo."""
    again = tmp_path / "results"
    shutil.copytree(results, again)
    files = {p: p.read_bytes() for p in again.rglob("*") if p.is_file() and "report" not in p.parts}
    # The host needs a reboot again: graphics "shared" in effect (configured, then rebooted).
    _host_module("esxi_host_maintenance", state="maintenance")
    _host_module("esxi_host_graphics", default_graphics_type="shared")
    _host_module("esxi_host_maintenance", state="rebooted", timeout=300)
    _host_module("esxi_host_maintenance", state="normal")
    LAB.sim("faults", "reboot-hangs").touch()
    try:
        res = _run(
            [LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(again), "--resume",
             "-e", "esxi_graphics_reboot_timeout=15", "-e", "esxi_mig_reboot_timeout=15",
             "-e", "esxi_vgpu_driver_reboot_timeout=15"],
        )  # fmt: skip
        assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
        out = res.stdout + res.stderr
        assert f"{HOST}: did not reconnect within 15 s after reboot" in out, out[-3000:]
        # The playbook's own output (ansible-runner's artifacts) says so loudly.
        artifacts = Path(re.search(r"^artifacts: (\S+)$", res.stdout, re.M).group(1))
        assert f"{HOST} STAYS IN MAINTENANCE MODE" in (artifacts / "stdout").read_text()
        assert "Traceback" not in out
        report = (again / "sim-small" / "report" / "report.md").read_text()
        assert "THE CAMPAIGN RUN FAILED" in report and "did not reconnect" in report
        assert {p: p.read_bytes() for p in files} == files
    finally:
        LAB.sim("faults", "reboot-hangs").unlink(missing_ok=True)  # the host finishes its boot
    conn = LAB.vcenter()
    args = {**conn, "esxi_hostname": HOST, "state": "normal", "timeout": 300}
    # Until vCenter sees it connected again, leaving maintenance mode fails (HostNotConnected).
    assert wait_until(lambda: not run_module("esxi_host_maintenance", args).get("failed"),
                      timeout=300, step=2)  # fmt: skip
    res = _run([LAB.bin("miglab"), "run", str(CAMPAIGN), "--results-dir", str(again), "--resume"])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    assert {p: p.read_bytes() for p in files} == files
    assert (
        "THE CAMPAIGN RUN FAILED" not in (again / "sim-small" / "report" / "report.md").read_text()
    )


@pytest.mark.parametrize("round_", ["v1.1", "v4.1"])
def test_a_campaign_with_nvidias_harness_runs_end_to_end(first_run, tmp_path, round_):
    """Issue 18: mlperf.backend nvidia. Each VM gets the round's stand-in harness, miglab writes
    the vGPU's system entry and configs, the harness's own detection picks miglab's entry (not
    the bare-metal A100 class that the vGPU's PCI id matches), its steps run in its container
    (make launch_docker), and run_harness's LoadGen logs come back laid out as the reference
    backend's: the report sums the two VMs' concurrent runs."""
    name = f"sim-nvidia-{round_.replace('.', '')}"
    campaign = ROOT / "tests" / "e2e" / "campaigns" / f"{name}.yml"
    out = tmp_path / "results"
    res = _run([LAB.bin("miglab"), "run", str(campaign), "--results-dir", str(out)], timeout=1800)
    assert res.returncode == 0, res.stdout[-8000:] + res.stderr[-4000:]
    runs = sorted(out.glob(f"{name}/s1/*/resnet50/Offline/performance/run_1/miglab_run.json"))
    assert len(runs) == 2, runs
    ids = set()
    for path in runs:
        meta = json.loads(path.read_text())
        assert meta["backend"] == "nvidia" and meta["simulated"] is True, meta
        assert meta["loadgen"]["valid"] is True, meta["loadgen"]
        h = meta["harness"]
        assert h["round"] == round_ and h["launch"] == "docker", h
        assert "make run_harness" in h["command"][-1], h
        ids.add(h["system_id"])
        assert meta["runtime"]["kind"] == "venv", meta["runtime"]  # beside the harness's container
    # miglab's vGPU systems, one per profile, with the campaign's prefix
    assert {i.split("_v", 1)[0] for i in ids} == {"R750xa"}, ids
    assert any("2g.20gb" in i for i in ids) and any("1g.10gb" in i for i in ids), ids
    data = json.loads((out / name / "report" / "results.json").read_text())
    (group,) = [g for g in data["groups"] if g["benchmark"] == "resnet50"]
    assert group["count"] == 1 and group["runs"][0]["included"], group
    # a second run changes nothing and redoes nothing
    again = _run([LAB.bin("miglab"), "run", str(campaign), "--results-dir", str(out), "--resume"])
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-2000:]
    assert "changed 0" in again.stdout, again.stdout[-2000:]  # the wave was skipped
    res = _run([LAB.bin("ansible-playbook"), "miglab.lab.teardown"], MIGLAB_CAMPAIGN=str(campaign))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def test_teardown_removes_the_vms_and_their_guests_and_turns_mig_off(first_run):
    def mig_modes() -> list[str]:
        res = subprocess.run(
            ["podman", "exec", HOST, "nvidia-smi", "--query-gpu=mig.mode.current",
             "--format=csv,noheader"], capture_output=True, text=True, check=True,
        )  # fmt: skip
        return res.stdout.split()

    assert "Enabled" in mig_modes()  # the campaign's GPUs
    res = _run(
        [LAB.bin("ansible-playbook"), "miglab.lab.teardown", "-e", "miglab_teardown_mig=true"],
        MIGLAB_CAMPAIGN=str(CAMPAIGN),
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert set(mig_modes()) == {"Disabled"}, mig_modes()

    # The simulator's guest keeper removes a deleted VM's container (a deadline, not a guess).
    def guests_left() -> list[str]:
        status = json.loads(_run([LAB.bin("miglab"), "sim", "status", "--json"]).stdout)
        return [g for g in status["guests"] if g.startswith("sim-small-")]

    assert wait_until(lambda: not guests_left(), timeout=300, step=1), guests_left()
