"""Issue 19: a campaign for an L40S lab (time-sliced vGPUs, no MIG) runs end to end on the
simulated lab, as a user of the installed miglab runs it: a project made by `miglab init`
(tests/e2e/conftest.py installs the wheel and the collection), which carries the checkout's
inventories/sim-l40s, `miglab sim up -i` that inventory, `miglab run -i` the short campaign
tests/e2e/campaigns/sim-l40s.yml (one VM with a whole L40S, then two VMs time-slicing one).
The lab's cluster is managed by a vLCM image (ESXi/vCenter 8.0.3): the NVIDIA driver goes on
through the cluster image (depot pull, draft, commit, remediation), the host stays compliant, and
a second hosts phase changes nothing.

Only one simulated lab runs at a time (containers named like the lab's hosts, one simulator):
this module's lab lives in its own project and is brought down at the end of the module, like
test_sim_lab.py's, so the modules of a session never overlap and neither needs the other's
inventory. Slow (minutes), needs root and podman.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from miglab.mlperf.guest.sut.slice_model import full_gpu_rate
from testlib import ROOT, play_recap, require_sim_lab

pytestmark = [pytest.mark.e2e, pytest.mark.sim]

INVENTORY = ROOT / "inventories" / "sim-l40s"
CAMPAIGN = ROOT / "tests" / "e2e" / "campaigns" / "sim-l40s.yml"
NAME = "sim-l40s"


class _Lab:
    project: Path
    bindir: Path
    env: dict


LAB = _Lab()


def _run(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([str(LAB.bindir / "miglab"), *args], cwd=LAB.project, env=LAB.env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


@pytest.fixture(scope="module")
def l40s_lab(installed):
    require_sim_lab()
    LAB.project, LAB.bindir, LAB.env = installed.init("siml40s"), installed.bindir, installed.env
    # the starter project carries the L40S lab, as it carries inventories/sim
    hosts = LAB.project / "inventories" / "sim-l40s" / "hosts.yml"
    assert hosts.read_bytes() == (INVENTORY / "hosts.yml").read_bytes()
    try:
        res = _run("sim", "up", "-i", "inventories/sim-l40s/hosts.yml")
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-6000:]
        yield
    finally:  # also when the lab did not come up whole: no simulator or container is left
        _run("sim", "down", timeout=300)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("results-l40s")


@pytest.fixture(scope="module")
def l40s_run(l40s_lab, results):
    res = _run("run", str(CAMPAIGN), "-i", "inventories/sim-l40s", "--results-dir", str(results))
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-6000:]
    return res


def _lifecycle_api():
    from miglab.adapters.vsphere.connection import ConnectionSpec
    from miglab.adapters.vsphere.lifecycle import LifecycleApi

    conn = json.loads((LAB.project / ".cache" / "sim" / "vcsim.json").read_text())
    spec = ConnectionSpec(
        conn["hostname"], conn["username"], conn["password"], conn["port"], True, conn["ca_bundle"]
    )
    return LifecycleApi(spec, poll_s=0.2)


def _metas(results: Path) -> dict[str, dict]:
    runs = results.glob(f"{NAME}/*/*/resnet50/Offline/performance/run_1/miglab_run.json")
    return {p.parts[-6]: json.loads(p.read_text()) for p in runs}


def test_the_l40s_campaign_runs_and_writes_the_report(l40s_run, results):
    report = results / NAME / "report" / "report.md"
    assert f"report: {report}" in l40s_run.stdout
    assert "SIMULATED" in report.read_text()
    metas = _metas(results)
    assert sorted(metas) == [f"{NAME}-s1-vm1", f"{NAME}-s2-vm1", f"{NAME}-s2-vm2"]
    for meta in metas.values():
        assert meta["simulated"] is True and meta["loadgen"]["valid"] is True


def test_time_slicing_gives_each_vm_its_share_of_the_l40s(l40s_run, results):
    """The known answer of the slice model (SIMULATED): the 48c VM has its GPU alone and serves
    the L40S's full rate (a published MLPerf result per GPU); the two 24c VMs share one GPU, as the
    host's vGPU manager says after power-on, so each serves half of it."""
    full = full_gpu_rate("resnet50", "nvidia_l40s-48c")
    metas = _metas(results)
    s1 = metas[f"{NAME}-s1-vm1"]
    s2 = [metas[f"{NAME}-s2-vm1"], metas[f"{NAME}-s2-vm2"]]
    assert s1["vgpu_type"] == "nvidia_l40s-48c" and s1["placement"]["gpu_vgpus"] == 1
    assert s1["raw_throughput"] == pytest.approx(full)
    assert "SIMULATED time-sliced vGPU (1/1 of the GPU" in s1["device"]["name"]
    assert s2[0]["placement"]["gpu"] == s2[1]["placement"]["gpu"]  # one GPU, time-sliced
    for meta in s2:
        assert meta["vgpu_type"] == "nvidia_l40s-24c" and meta["placement"]["gpu_vgpus"] == 2
        assert meta["placement"]["mig_slot"] is None
        assert meta["raw_throughput"] == pytest.approx(full / 2)
        assert "SIMULATED time-sliced vGPU (1/2 of the GPU" in meta["device"]["name"]


def test_the_report_sums_the_shared_gpu_to_one_gpus_throughput(l40s_run, results):
    """Every round counted (its VMs ran at once), and s2's two halves add up to s1's whole GPU
    (within 15 %, as the MIG end-to-end test's s6 and s1)."""
    data = json.loads((results / NAME / "report" / "results.json").read_text())
    groups = {g["scenario"]: g for g in data["groups"] if g["benchmark"] == "resnet50"}
    assert groups["s1"]["count"] == groups["s2"]["count"] == 1, groups
    assert groups["s2"]["mean"] == pytest.approx(groups["s1"]["mean"], rel=0.15), groups
    for g in groups.values():
        for run in g["runs"]:
            assert run["included"] and run["overlap_fraction"] >= 0.9, run


HOST = "esxi-l40s-01.sim.miglab.test"


def test_the_driver_went_on_through_the_cluster_image_and_the_host_is_compliant(l40s_run):
    """Issue 19 / real-lab notes V16: on an image-managed cluster the hosts phase adds NVIDIA's
    components to the cluster image and vLCM remediates the host; esxcli installs nothing."""
    with _lifecycle_api() as api:
        where = api.locate_host(HOST)
        assert api.image_managed(where["cluster"])
        image = api.software(where["cluster"])["components"]
        assert any(n.startswith("NVD-") for n in image), image
        assert "nvd-gpu-mgmt-daemon" in image, image
        compliance = api.scan(where["cluster"], timeout=300)
        assert compliance["status"] == "COMPLIANT", compliance
    state = json.loads(
        subprocess.run(
            ["podman", "exec", HOST, "esxi-standin", "show"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout  # fmt: skip
    )
    log = "\n".join(state["log"])
    assert "image-apply: installed" in log, log[-3000:]
    assert not re.search(r"\b(component|vib) install ", log), log[-3000:]  # no esxcli install
    assert state["loaded_driver"], state


def test_a_second_hosts_phase_changes_nothing(l40s_run):
    res = subprocess.run(
        [str(LAB.bindir / "ansible-playbook"), "miglab.lab.site", "-i", "inventories/sim-l40s",
         "--tags", "validate,hosts"],
        cwd=LAB.project, env={**LAB.env, "MIGLAB_CAMPAIGN": str(CAMPAIGN)}, capture_output=True,
        text=True, timeout=1200,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    assert "image and host compliant, nothing to do" in res.stdout, res.stdout[-6000:]
    recap = play_recap(res.stdout)
    assert recap and all(r["changed"] == 0 and r["failed"] == 0 for r in recap.values()), recap
