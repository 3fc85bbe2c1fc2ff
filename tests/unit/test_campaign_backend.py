"""Campaign ``mlperf.backend`` / ``mlperf.harness``: NVIDIA's harness as the way MLPerf runs,
strictly validated (one line per problem, naming the field), and handed to the plan."""

from __future__ import annotations

import textwrap

import pytest

from miglab.core.campaign import HARNESS_ROUNDS, MLPERF_BACKENDS, load_campaign
from miglab.errors import ValidationError

BASE = textwrap.dedent("""\
    version: 1
    name: t
    gpu: {gpu}
    mlperf:
      benchmarks: [resnet50, bert-99]
      scenarios: [Offline]
      runs: 1
      baseline: a
    {extra}
    scenarios:
      a: {{vgpus: {{{profile}: 1}}}}
""")
HARNESS = """\
  backend: nvidia
  harness:
    round: {round}
    dir: /opt/nvidia-harness
    source: ./harness/closed/NVIDIA
    prefix: R750xa
    make_vars: {{MLPERF_SCRATCH_PATH: /scratch, NO_DOCKER_PULL: 1}}"""


def _campaign(tmp_path, extra="", gpu="A100-PCIE-80GB", profile="7g.80gb", round="v1.1"):
    harness = tmp_path / "harness" / "closed" / "NVIDIA"
    harness.mkdir(parents=True, exist_ok=True)
    (harness / "Makefile").write_text("run_harness:\n")
    text = BASE.format(gpu=gpu, profile=profile, extra="").rstrip("\n")
    text = text.replace("  baseline: a\n", "  baseline: a\n" + extra.format(round=round) + "\n")
    path = tmp_path / "c.yml"
    path.write_text(text)
    return load_campaign(path)


def _problems(tmp_path, extra, **kw) -> dict[str, str]:
    with pytest.raises(ValidationError) as info:
        _campaign(tmp_path, extra, **kw)
    return {p.field: p.reason for p in info.value.problems}


def test_default_backend_is_reference(tmp_path):
    c = _campaign(tmp_path)
    assert c.mlperf.backend == "reference" and c.mlperf.harness is None


def test_nvidia_backend_with_a_harness(tmp_path):
    c = _campaign(tmp_path, HARNESS)
    h = c.mlperf.harness
    assert c.mlperf.backend == "nvidia"
    assert (h.round, h.dir, h.source, h.prefix, h.launch) == (
        "v1.1",
        "/opt/nvidia-harness",
        str((tmp_path / "harness/closed/NVIDIA").resolve()),  # relative to the campaign's folder
        "R750xa",
        "docker",
    )
    assert dict(h.make_vars) == {"MLPERF_SCRATCH_PATH": "/scratch", "NO_DOCKER_PULL": "1"}
    assert h.as_json()["make_vars"]["NO_DOCKER_PULL"] == "1"


def test_hopper_needs_a_current_round(tmp_path):
    """v1.1 has no Hopper (its Architecture enum: Turing, Xavier, Ampere): an H100/H200 lab is
    refused with the round to use; v4.1 takes it."""
    msgs = _problems(tmp_path, HARNESS, gpu="H100-PCIE-80GB", profile="1g.10gb")
    assert "has no Hopper GPU (H100-PCIE-80GB): use round v4.1" in msgs["mlperf.harness.round"]
    c = _campaign(tmp_path, HARNESS, gpu="H100-PCIE-80GB", profile="1g.10gb", round="v4.1")
    assert c.mlperf.harness.round == "v4.1"


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ("  backend: tensorrt", "mlperf.backend", "unknown backend 'tensorrt'"),
        ("  backend: nvidia", "mlperf.harness", "needs a harness"),
        ("  harness: {{round: v1.1, dir: /x}}", "mlperf.harness", "is for backend nvidia"),
        (HARNESS.replace("round: {round}", "round: v9"), "mlperf.harness.round", "unknown round"),
        (HARNESS.replace("/opt/nvidia-harness", "opt"), "mlperf.harness.dir", "absolute path"),
        (HARNESS.replace("R750xa", "R750 xa"), "mlperf.harness.prefix", "letters, digits"),
        (HARNESS + "\n    launch: ssh", "mlperf.harness.launch", "docker, inside"),
        (HARNESS + "\n    flavour: x", "mlperf.harness.flavour", ""),
        (
            HARNESS.replace("NO_DOCKER_PULL: 1", "NO_DOCKER_PULL: [1]"),
            "mlperf.harness.make_vars.NO_DOCKER_PULL",
            "string or number",
        ),
        (HARNESS + "\n  qps_search: true", "mlperf.qps_search", "harness's configs"),
        (HARNESS.replace("./harness/", "./nope/"), "mlperf.harness.source", "no Makefile"),
        (HARNESS + "\n  compliance: [TEST04]", "mlperf.compliance", "run_audit_harness"),
    ],
)
def test_bad_backend_settings(tmp_path, extra, field, words):
    msgs = _problems(tmp_path, extra)
    assert field in msgs, msgs
    assert words in msgs[field]


def test_rounds_match_the_backend():
    from miglab.mlperf.guest.backends import BACKENDS
    from miglab.mlperf.guest.backends.nvidia import ROUNDS

    assert set(HARNESS_ROUNDS) == set(ROUNDS)
    assert set(MLPERF_BACKENDS) <= set(BACKENDS)


def test_plan_carries_the_harness(tmp_path, sim_lab):
    from miglab.core.planning import plan_campaign

    c = _campaign(tmp_path, HARNESS)
    plan = plan_campaign(c, sim_lab).as_json()
    assert plan["mlperf"]["backend"] == "nvidia"
    assert plan["mlperf"]["harness"]["round"] == "v1.1"


def test_v41_refuses_media_extension_profiles(tmp_path):
    """v4.1's nvidia-smi -L parser stops on a '1g.10gb+me' MIG device (the stand-in reproduces
    the AttributeError): such a scenario is refused before anything is built."""
    msgs = _problems(tmp_path, HARNESS, profile="1g.10gb+me", round="v4.1")
    assert "media extensions" in msgs["scenarios.a.vgpus.1g.10gb+me"], msgs
    assert _campaign(tmp_path, HARNESS, profile="1g.10gb", round="v4.1").mlperf.harness
