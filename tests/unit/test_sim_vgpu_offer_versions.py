"""The simulated vCenter offers a host only the vGPU types of its ESXi release (NVIDIA AI
Enterprise's vGPU type tables, footnote: MIG types with media engines and A100 80GB's 1g.20gb on
ESXi only from vSphere 8.0 U3), and validation refuses such a type for the default simulated lab
(ESXi 7.0.3) before anything is touched."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from miglab.adapters.inventory import load_checked, load_lab
from miglab.core.catalog import load_catalog
from miglab.errors import ValidationError
from miglab.sim.vcenter import lab_json

ME_TYPE = "grid_a100d-1-10cme"


@pytest.fixture(scope="module")
def sim_lab():
    return load_lab("inventories/sim/hosts.yml")


def offered(lab, esxi):
    host = dataclasses.replace(lab.hosts[0], esxi_version=esxi)
    lab = dataclasses.replace(lab, hosts=(host,))
    return lab_json(lab, load_catalog())["hosts"][0]["vgpu_types"]


def test_the_default_simulated_lab_says_it_runs_esxi_7_0_3(sim_lab):
    assert {h.esxi_version for h in sim_lab.hosts} == {"7.0.3"}


@pytest.mark.parametrize(("esxi", "has"), [("7.0.3", False), ("8.0.2", False), ("8.0.3", True)])
def test_vsphere_8_0_u3_types_are_offered_only_from_8_0_3(sim_lab, esxi, has):
    types = offered(sim_lab, esxi)
    assert (ME_TYPE in types) is has
    assert ("grid_a100d-1-20c" in types) is has
    assert "grid_a100d-1-10c" in types  # older types everywhere


def test_validation_refuses_a_type_the_default_lab_does_not_offer(tmp_path):
    campaign = tmp_path / "campaign.yml"
    campaign.write_text(
        textwrap.dedent(
            """\
            version: 1
            name: me-types
            gpu: A100-PCIE-80GB
            vm: {vcpus: 32, memory_gb: 64}
            mlperf: {benchmarks: [resnet50], scenarios: [Offline], runs: 1, baseline: s1}
            scenarios:
              s1: {vgpus: {1g.10gb+me: 1}}
            """
        )
    )
    with pytest.raises(ValidationError) as exc:
        load_checked(campaign, "inventories/sim/hosts.yml")
    assert "needs vSphere 8.0 U3 or later" in str(exc.value)
    assert "runs 7.0.3" in str(exc.value)
