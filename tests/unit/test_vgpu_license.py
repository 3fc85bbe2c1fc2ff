"""A vGPU guest's licence from its real `nvidia-smi -q` (miglab.core.vgpu_license over
miglab.formats.nvsmi, the one parser of that output; the action miglab.lab.vgpu_license uses it)."""

from __future__ import annotations

import pytest

from miglab.core.vgpu_license import license_problem, read_license
from miglab.errors import ValidationError
from testlib import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "nvidia-smi"

# A real vGPU guest's `nvidia-smi -q`, from the top to the licence block (provenance:
# tests/fixtures/nvidia-smi/README.md).
V100D_GUEST_Q = (FIXTURES / "v100d-vgpu-guest-q.txt").read_text()


def with_status(status: str, text: str = V100D_GUEST_Q) -> str:
    return text.replace("Licensed (Expiry: 2025-3-19 7:29:4 GMT)", status)


# ---------------------------------------------------------------------------------------------
# nvidia-smi -q
# ---------------------------------------------------------------------------------------------


def test_real_vgpu_guest_licensed():
    q = read_license(V100D_GUEST_Q)
    assert q["driver_version"] == "535.216.01"
    assert q["cuda_version"] == "12.2"
    (gpu,) = q["gpus"]
    assert gpu["bus_id"] == "00000000:02:00.0"
    assert gpu["product_name"] == "GRID V100D-8C"  # not the licensed product's name
    assert gpu["virtualization_mode"] == "VGPU"
    assert gpu["licensed_product"] == "NVIDIA Virtual Compute Server"
    assert gpu["license_status"] == "Licensed (Expiry: 2025-3-19 7:29:4 GMT)"
    assert gpu["license_state"] == "Licensed"
    assert gpu["license_expiry"] == "2025-3-19 7:29:4 GMT"
    assert gpu["licensed"] is True
    assert license_problem(q) is None


@pytest.mark.parametrize(
    ("status", "state", "detail"),
    [
        ("Unlicensed (Unrestricted)", "Unlicensed", "Unrestricted"),  # grace period
        ("Unlicensed (Restricted)", "Unlicensed", "Restricted"),  # throttled
        ("Unlicensed", "Unlicensed", None),
    ],
)
def test_unlicensed_states(status, state, detail):
    q = read_license(with_status(status))
    gpu = q["gpus"][0]
    assert (gpu["license_state"], gpu["license_detail"], gpu["licensed"]) == (state, detail, False)
    assert gpu["license_expiry"] is None
    assert (
        license_problem(q) == f"GPU 00000000:02:00.0 (GRID V100D-8C) License Status is '{status}'"
    )


def test_licensed_without_expiry():
    # Older guests print just "Licensed" (a vgpu-mgr write-up's `nvidia-smi -a` excerpt).
    q = read_license(with_status("Licensed"))
    assert q["gpus"][0]["licensed"] is True
    assert q["gpus"][0]["license_expiry"] is None


def test_two_vgpus_one_unlicensed():
    second = V100D_GUEST_Q.split("Attached vGPUs")[1].split("\n", 1)[1]
    second = with_status("Unlicensed (Unrestricted)", second).replace("02:00.0", "02:01.0")
    q = read_license(V100D_GUEST_Q + second)
    assert [g["licensed"] for g in q["gpus"]] == [True, False]
    assert license_problem(q).startswith("GPU 00000000:02:01.0 (GRID V100D-8C) License Status")


def test_real_passthrough_capture_has_no_licence_section():
    q = read_license((FIXTURES / "h200-q.txt").read_text())
    assert q["driver_version"] == "580.159.04"
    assert q["cuda_version"] == "13.0"
    (gpu,) = q["gpus"]
    assert (gpu["product_name"], gpu["virtualization_mode"]) == ("NVIDIA H200", "Pass-Through")
    assert gpu["license_status"] is None
    assert "has no 'vGPU Software Licensed Product' section" in license_problem(q)


@pytest.mark.parametrize(
    "text", ["", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."]
)
def test_not_query_output(text):
    with pytest.raises(ValidationError, match="not nvidia-smi -q output"):
        read_license(text)


def test_no_gpus_is_a_problem():
    with pytest.raises(ValidationError, match="no GPU in this nvidia-smi -q output"):
        read_license(V100D_GUEST_Q.split("GPU 0000")[0])
    assert license_problem({"gpus": []}) == "nvidia-smi -q lists no GPU"


# --- the action miglab.lab.vgpu_license on this machine, with a scripted nvidia-smi ------------
FAKE_SMI = """#!{python}
import pathlib, sys
state = pathlib.Path({state!r})
calls = int(state.read_text()) if state.exists() else 0
state.write_text(str(calls + 1))
if {fail_rc}:
    print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    sys.exit({fail_rc})
text = pathlib.Path({fixture!r}).read_text()
if calls < {licensed_after}:
    text = text.replace("Licensed (Expiry: 2025-3-19 7:29:4 GMT)", "Unlicensed (Unrestricted)")
print(text)
"""
PLAY = """- hosts: localhost
  gather_facts: false
  tasks:
    - name: Wait for the licence
      miglab.lab.vgpu_license:
        nvidia_smi: "{smi}"
        timeout: {timeout}
        interval: 1
      register: licence
      ignore_errors: true
    - name: Keep the result
      ansible.builtin.copy:
        content: "{{{{ licence | to_json }}}}"
        dest: "{result}"
      check_mode: false
"""


def _licence_play(tmp_path, *, licensed_after=0, fail_rc=0, timeout=30, smi=None, check=False):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from testlib import ROOT

    fake = tmp_path / "nvidia-smi"
    fake.write_text(FAKE_SMI.format(python=sys.executable, state=str(tmp_path / "calls"),
                                    fixture=str(FIXTURES / "v100d-vgpu-guest-q.txt"),
                                    licensed_after=licensed_after, fail_rc=fail_rc))  # fmt: skip
    fake.chmod(0o755)
    result = tmp_path / "result.json"
    result.unlink(missing_ok=True)
    (tmp_path / "play.yml").write_text(PLAY.format(smi=smi or fake, timeout=timeout, result=result))
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n")
    bindir = Path(sys.executable).parent
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=f"{bindir}:{os.environ.get('PATH', '')}")  # fmt: skip
    res = subprocess.run(
        [str(bindir / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", *(["--check"] if check else []),
         str(tmp_path / "play.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr  # the wait ignores its errors
    return json.loads(result.read_text())


def test_the_action_waits_until_every_vgpu_is_licensed(tmp_path):
    result = _licence_play(tmp_path, licensed_after=2)
    assert not result.get("failed"), result
    assert result["licensed"] is True and result["attempts"] == 3
    assert result["driver_version"] == "535.216.01"
    assert result["gpus"][0]["license_expiry"] == "2025-3-19 7:29:4 GMT"


def test_the_action_fails_clearly_when_the_licence_never_comes(tmp_path):
    result = _licence_play(tmp_path, licensed_after=99, timeout=2)
    assert result["failed"] is True and result["licensed"] is False
    msg = result["msg"]
    assert msg.startswith("vGPU licence not acquired within 2 s: GPU 00000000:02:00.0 (GRID ")
    assert "License Status is 'Unlicensed (Unrestricted)'" in msg
    assert "journalctl -u nvidia-gridd" in msg
    assert result["attempts"] >= 2 and result["gpus"][0]["license_state"] == "Unlicensed"


def test_the_action_says_why_nvidia_smi_gave_nothing_to_read(tmp_path):
    result = _licence_play(tmp_path, fail_rc=9, timeout=1)
    assert result["failed"] is True
    assert "nvidia-smi -q exited 9: NVIDIA-SMI has failed" in result["msg"]
    result = _licence_play(tmp_path, smi=tmp_path / "missing-smi")
    assert result["failed"] is True
    assert (
        result["msg"]
        == f"{tmp_path / 'missing-smi'} not found: is the GRID guest driver installed?"
    )
    result = _licence_play(tmp_path, smi=tmp_path / "missing-smi", check=True)
    assert not result.get("failed") and result["licensed"] is False  # check mode: nothing yet
