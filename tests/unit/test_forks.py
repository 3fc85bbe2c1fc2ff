"""Issue 17 item 4: every VM of a wave starts together whatever Ansible's forks are. `miglab run`
sets forks from the largest wave; a direct ansible-playbook run with fewer forks is refused."""

from __future__ import annotations

import pytest
import yaml

from miglab.adapters.inventory import load_checked
from miglab.cli import lab as cli_lab
from miglab.core.planning import plan_campaign
from testlib import ROOT, SEED

H200 = ROOT / "campaigns" / "h200-sxm-mig.yml"


def test_largest_wave_of_the_seed_and_of_the_h200_campaign():
    assert plan_campaign(*load_checked(SEED, ROOT / "inventories" / "sim")).largest_wave_vms() == 7
    # 28 VMs of 1g.18gb in one wave: more than the checkout's forks (16)
    h200 = plan_campaign(*load_checked(H200, ROOT / "inventories" / "example-h200"))
    assert h200.largest_wave_vms() == 28


def test_miglab_run_raises_forks_to_the_largest_wave(monkeypatch):
    monkeypatch.delenv("ANSIBLE_FORKS", raising=False)
    monkeypatch.setenv("ANSIBLE_CONFIG", str(ROOT / "ansible.cfg"))  # forks = 16
    campaign, lab = load_checked(H200, ROOT / "inventories" / "example-h200")
    assert cli_lab._forks(campaign, lab) == 28
    seed = load_checked(SEED, ROOT / "inventories" / "sim")
    assert cli_lab._forks(*seed) == 16  # more configured than needed: kept
    monkeypatch.setenv("ANSIBLE_FORKS", "40")
    assert cli_lab._forks(campaign, lab) == 40


def test_the_benchmark_play_refuses_fewer_forks_than_a_wave_has_vms():
    plays = yaml.safe_load((ROOT / "playbooks" / "benchmark.yml").read_text())
    tasks = {t["name"]: t for t in plays[1]["tasks"]}
    check = tasks["Check that Ansible runs every VM of the wave at once"]
    assert check["ansible.builtin.assert"]["that"] == (
        "ansible_forks | int >= ansible_play_batch | length"
    )
    assert check["run_once"] is True


@pytest.mark.parametrize("text", ["[defaults]\nforks = 3\n", "[defaults]\nforks = many\n", ""])
def test_forks_read_from_the_ansible_settings(tmp_path, monkeypatch, text):
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text(text)
    monkeypatch.delenv("ANSIBLE_FORKS", raising=False)
    monkeypatch.setenv("ANSIBLE_CONFIG", str(cfg))
    assert cli_lab._forks(*load_checked(SEED, ROOT / "inventories" / "sim")) == 7
