"""README's core loop under load: the places where races hide, run with a busy loop on every CPU.

- the simulated lab's guest keeper while VMs are created, powered on and destroyed (a VM being
  created shows in the property collector before its name does: the keeper died of that once,
  ``KeyError: 'name'``, in the first `bash scripts/demo.sh` of a fresh clone);
- the two-phase MLPerf start barrier with several runs at once, released as the mlperf role does
  it (one ``python -m miglab.mlperf.guest.barrier release`` per run);
- the lab lock, taken by many `miglab run`-like processes at one moment, with and without a
  stale lock of a dead run to take over.

Every verdict here is about what the code did (who held the lock, what the keeper saw, which run
started when), never about how fast it did it; waits have deadlines.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime

import pytest
from pyVim.task import WaitForTask
from pyVmomi import vim

from testlib import ROOT, SERVER_COUNTED, cpu_hog, wait_ready, wait_until

STANDINS = ROOT / "miglab" / "sim" / "standins" / "esxi"


# --- the guest keeper --------------------------------------------------------------------------
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("podman"), reason="the guest keeper needs root and podman"
)
def test_guest_keeper_survives_vms_created_and_destroyed_under_load(vcsim_factory, tmp_path):
    from miglab.sim import daemon as vcsim_daemon

    image = os.environ.get("MIGLAB_GUEST_IMAGE", "localhost/miglab-debian12:latest")
    if subprocess.run(["podman", "image", "exists", image], check=False).returncode != 0:
        pytest.skip(f"no image {image} (miglab/sim/build-images.sh builds it)")
    sim = vcsim_factory()
    si = sim.connect()
    keeper = vcsim_daemon.GuestKeeper(si, image, tmp_path)
    errors: list[BaseException] = []
    stop = threading.Event()

    def keep():
        while not stop.is_set():
            try:
                keeper._last = 0.0  # poll as often as it can: more chances to meet the race
                keeper.poll()
            except BaseException as exc:  # noqa: BLE001 - the verdict of the test
                errors.append(exc)
                return
            time.sleep(0.01)

    content = si.RetrieveContent()
    dc = next(e for e in content.rootFolder.childEntity if isinstance(e, vim.Datacenter))
    view = content.viewManager.CreateContainerView(
        content.rootFolder, [vim.ClusterComputeResource], True
    )
    pool = view.view[0].resourcePool
    view.Destroy()
    prefix = f"load-{os.getpid()}-"
    powered = [f"{prefix}on-{i}" for i in range(2)]
    thread = threading.Thread(target=keep, daemon=True)
    try:
        with cpu_hog():
            thread.start()
            for rnd in range(6):
                made = []
                for i in range(5):
                    name = f"{prefix}{rnd}-{i}"
                    if rnd < len(powered) and i == 0:
                        name = powered[rnd]
                    spec = vim.vm.ConfigSpec(
                        name=name, files=vim.vm.FileInfo(vmPathName="[datastore1]")
                    )
                    task = dc.vmFolder.CreateVM_Task(config=spec, pool=pool)
                    WaitForTask(task)
                    made.append(task.info.result)
                for vm in made:
                    if vm.name in powered:
                        WaitForTask(vm.PowerOnVM_Task())
                for vm in made:
                    if vm.name not in powered:
                        WaitForTask(vm.Destroy_Task())
                assert not errors, errors
            # the powered-on VMs got their guest, then lose it when destroyed
            assert wait_until(
                lambda: set(powered) <= set(vcsim_daemon.podman_containers(keeper.LABEL))
            ), vcsim_daemon.podman_containers(keeper.LABEL)
            vms = [v for v in dc.vmFolder.childEntity if v.name in powered]
            for vm in vms:
                WaitForTask(vm.PowerOffVM_Task())
                WaitForTask(vm.Destroy_Task())
            assert wait_until(
                lambda: not set(powered) & set(vcsim_daemon.podman_containers(keeper.LABEL))
            ), vcsim_daemon.podman_containers(keeper.LABEL)
    finally:
        stop.set()
        thread.join(timeout=60)
        keeper.close()
        for name in powered:
            subprocess.run(
                ["podman", "rm", "-f", "-t", "0", name], capture_output=True, check=False
            )
    assert not errors, errors
    assert not [n for n in keeper._known if n.startswith(prefix)], keeper._known


# --- the start barrier -------------------------------------------------------------------------
def test_start_barrier_releases_every_run_together_under_load(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    from miglab.mlperf.results.aggregate import aggregate_results

    root = tmp_path / "load-lab"
    vms = [f"vm{i}" for i in range(1, 5)]
    barriers = [root / ".barrier" / f"s9-{vm}" for vm in vms]
    with cpu_hog():
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "miglab.mlperf.run", "--sut", "onnxruntime",
                 "--model", "tiny-conv", "--benchmark", "resnet50", "--scenario", "Server",
                 "--out", str(root / "s9" / vm), "--run", "1", "--barrier-dir", str(b),
                 "--vm", f"load-lab-s9-{vm}", "--lab-scenario", "s9", *SERVER_COUNTED],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            for vm, b in zip(vms, barriers, strict=True)
        ]  # fmt: skip
        try:
            # the controller's moment, written by one release call per run, as the role does
            wait_ready(barriers, procs)
            start_at = time.time() + 2.0
            releases = [
                subprocess.Popen(
                    [sys.executable, "-m", "miglab.mlperf.guest.barrier", "release", str(b),
                     f"{start_at}", "--timeout", "300"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                )
                for b in barriers
            ]  # fmt: skip
            answers = [json.loads(r.communicate(timeout=320)[0]) for r in releases]
            outs = [p.communicate(timeout=60) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
    assert [a["state"] for a in answers] == ["done"] * len(vms), answers
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, out + err
        assert out.startswith("VALID resnet50 Server"), out
    # started together under a CPU hog: they overlap (how much is the machine's business, so no
    # minimum here; the 90 % default is tested on fixed logs)
    agg = aggregate_results(root, baseline="s9", min_overlap=0.0)
    assert not agg.problems, agg.problems
    (run,) = agg.group("s9", "resnet50", "Server").runs
    assert run.included and run.overlap_fraction > 0, run.reasons
    for vm in vms:
        meta = json.loads(
            (root / "s9" / vm / "resnet50/Server/performance/run_1/miglab_run.json").read_text()
        )
        assert (
            meta["barrier"]["start_at"] == datetime.fromtimestamp(start_at).astimezone().isoformat()
        )


# --- the lab lock ------------------------------------------------------------------------------
CONTENDER = r"""
import os, sys, time
from pathlib import Path
from miglab.adapters.lock import LabBusy, LabLock

lock, inside, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
try:
    with LabLock(lock, "sim", f"contender {os.getpid()}"):
        try:  # only one holder may be inside at a time
            fd = os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            print("TWO HOLDERS"); sys.exit(5)
        os.close(fd)
        time.sleep(0.05)
        os.unlink(inside)
    print("held"); sys.exit(0)
except LabBusy as exc:
    print("busy:", exc); sys.exit(3)
"""


@pytest.mark.parametrize("stale", [False, True], ids=["free", "stale-lock-of-a-dead-run"])
def test_lab_lock_has_one_holder_when_many_take_it_at_once_under_load(tmp_path, stale):
    from miglab.adapters.lock import lock_path

    lock = lock_path("inventories/sim", tmp_path / "locks")
    lock.parent.mkdir()
    if stale:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        lock.write_text(json.dumps({"pid": dead.pid, "host": os.uname().nodename,
                                    "started": 0, "command": "a run that crashed"}))  # fmt: skip
    inside, go = tmp_path / "inside", tmp_path / "go"
    with cpu_hog():
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CONTENDER, str(lock), str(inside), str(go)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            )
            for _ in range(12)
        ]  # fmt: skip
        time.sleep(0.5)  # a head start for the imports; the verdict does not depend on it
        go.touch()
        outs = [p.communicate(timeout=120) for p in procs]
    codes = [p.returncode for p in procs]
    assert 5 not in codes, outs
    assert set(codes) <= {0, 3}, outs
    assert codes.count(0) >= 1, outs
    for p, (out, _) in zip(procs, outs, strict=True):
        if p.returncode == 3:
            assert "is in use by pid" in out and "contender" in out, out
    assert not lock.exists() and not inside.exists()
    assert not [p for p in lock.parent.iterdir() if p.name.endswith(".tmp")]
