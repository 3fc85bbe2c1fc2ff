"""Secrets: a vault-encrypted vCenter password works in a real module call against the vCenter
simulator, is never printed (not even with -vvv), and a wrong vault password is one clear error.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testlib import BIN, ROOT, ansible_env

pytestmark = pytest.mark.integration

PLAY = """\
- name: Use vCenter with a vault-encrypted password
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Make sure a VM is absent (logs in, looks, changes nothing)
      miglab.lab.vgpu_vm:
        hostname: "{{ miglab_vcenter.hostname }}"
        port: "{{ miglab_vcenter.port }}"
        username: "{{ miglab_vcenter.username }}"
        password: "{{ miglab_vcenter.password }}"
        validate_certs: true
        ca_bundle: "{{ miglab_vcenter.ca_bundle }}"
        datacenter: dc1
        state: absent
        vms:
          - {name: vault-test-vm, host: esxi-01.sim.miglab.test, vcpus: 2, memory_gb: 4, vgpus: []}
      register: absent

    - name: It logged in and changed nothing
      ansible.builtin.assert:
        that: [absent is not changed, absent is not failed]
"""


def _vault_string(password_file: Path, secret: str) -> str:
    res = subprocess.run(
        [str(BIN / "ansible-vault"), "encrypt_string", "--vault-password-file",
         str(password_file), "--name", "password", secret],
        capture_output=True, text=True, check=True, env=ansible_env({}),
    )  # fmt: skip
    return res.stdout


def test_a_vault_encrypted_vcenter_password_works_and_is_never_printed(vcsim_binary, tmp_path):
    from miglab.sim import vcenter as vcsim_lab

    with vcsim_lab.Vcsim(binary=vcsim_binary) as sim:
        vault_pw = tmp_path / "vault-password"
        vault_pw.write_text("miglab-test-vault\n")
        encrypted = _vault_string(vault_pw, sim.password)
        assert sim.password not in encrypted
        inv = tmp_path / "lab"
        (inv / "group_vars" / "all").mkdir(parents=True)
        (inv / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n")
        (inv / "group_vars" / "all" / "vcenter.yml").write_text(
            "miglab_vcenter:\n"
            f"  hostname: 127.0.0.1\n  port: {sim.port}\n  username: {sim.username}\n"
            f"  ca_bundle: {sim.ca_file}\n"
            + "".join(f"  {line}\n" for line in encrypted.splitlines())
        )
        (tmp_path / "play.yml").write_text(PLAY)

        def play(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [str(BIN / "ansible-playbook"), "-i", str(inv / "hosts.yml"), *args,
                 "-e", f"ansible_python_interpreter={BIN / 'python'}", str(tmp_path / "play.yml")],
                cwd=ROOT, capture_output=True, text=True, timeout=300, env=ansible_env({}),
            )  # fmt: skip

        res = play("--vault-password-file", str(vault_pw), "-vvv")
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert "failed=0" in res.stdout
        assert sim.password not in res.stdout + res.stderr
        wrong = tmp_path / "wrong-password"
        wrong.write_text("not-the-password\n")
        res = play("--vault-password-file", str(wrong))
        assert res.returncode != 0
        assert "Decryption failed" in res.stdout + res.stderr
        assert "Traceback" not in res.stdout + res.stderr
        assert sim.password not in res.stdout + res.stderr
