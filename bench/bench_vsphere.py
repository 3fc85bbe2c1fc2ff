"""Benchmark: provisioning vGPU VMs with miglab's vgpu_vm vs community.vmware, on vcsim with
realistic per-method latency. Writes bench/RESULTS.md.

    .venv/bin/pip install -e '.[bench]'    # community.vmware comes with the PyPI package `ansible`
    bash miglab/sim/vcsim/build.sh
    .venv/bin/python bench/bench_vsphere.py [--quick] [--results FILE]
    .venv/bin/python bench/bench_vsphere.py --smoke --results FILE    # the test suite's, ~30 s

Both tools run as Ansible would run them (ansible-playbook on localhost, TLS verified), each
against a fresh simulator of the same lab and latency, creating the same VMs: EFI, 32 vCPUs,
64 GB fully reserved, the three pciPassthru settings, a thin disk, a NIC and one MIG-backed vGPU,
left powered off. community.vmware does it the documented way: a loop of vmware_guest, then a
loop of vmware_guest_vgpu. Then each runs again unchanged (the no-op rerun).

``--smoke`` is the same two tools, plays, simulator latency and table on the smallest case (one
host, one GPU, 2 VMs): it shows that the bench still runs, its numbers mean little.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from miglab.core.catalog import load_catalog  # noqa: E402
from miglab.core.placement import Host, Lab  # noqa: E402
from miglab.sim import vcenter as vcsim_lab  # noqa: E402

# Per-method latency (ms) in the range a loaded vCenter 7 shows; reads are cheap, tasks are not.
DELAYS = {
    "CreateVM_Task": 1500,
    "ReconfigVM_Task": 800,
    "RetrieveProperties": 15,
    "RetrievePropertiesEx": 15,
    "CreateContainerView": 10,
    "FindByInventoryPath": 10,
    "Login": 100,
}
VGPU = "grid_a100d-1-10c"


def make_lab(hosts: int, gpus: int) -> dict:
    cat = load_catalog()
    a100 = cat.get("A100-PCIE-80GB")
    lab = Lab(
        tuple(Host(f"esxi-{i:02d}.bench.test", (a100,) * gpus, 128, 2048) for i in range(hosts))
    )
    return vcsim_lab.lab_json(lab, cat, graphics_type="sharedDirect")


def vm_names(hosts: int, per_host: int) -> list[tuple[str, str]]:
    return [
        (f"bench-{h:02d}-{k}", f"esxi-{h:02d}.bench.test")
        for h in range(hosts)
        for k in range(per_host)
    ]


def conn_vars(sim) -> dict:
    return {
        "hostname": sim.host,
        "port": sim.port,
        "username": sim.username,
        "password": sim.password,
    }


def play_miglab(sim, vms) -> str:
    args = {
        **conn_vars(sim),
        "ca_bundle": sim.ca_file,
        "datastore": "datastore1",
        "network": "VM Network",
        "vcpus": 32,
        "memory_gb": 64,
        "mmio_gb": 128,
        "disk_gb": 10,
        "concurrency": 32,
        "vms": [{"name": n, "host": h, "vgpus": [VGPU]} for n, h in vms],
    }
    return json.dumps(
        [
            {
                "name": "miglab",
                "hosts": "localhost",
                "gather_facts": False,
                "tasks": [
                    {"name": "All VMs in one call", "miglab.lab.vgpu_vm": args, "register": "r"},
                    {"ansible.builtin.debug": {"msg": "CHANGED={{ r.changed }}"}},
                ],
            }
        ]
    )


def play_community(sim, vms) -> str:
    common = {**conn_vars(sim), "validate_certs": True, "datacenter": "dc1"}
    items = [{"name": n, "host": h} for n, h in vms]
    return json.dumps(
        [
            {
                "name": "community.vmware",
                "hosts": "localhost",
                "gather_facts": False,
                "tasks": [
                    {
                        "name": "VMs",
                        "community.vmware.vmware_guest": {
                            **common,
                            "folder": "/dc1/vm",
                            "name": "{{ item.name }}",
                            "esxi_hostname": "{{ item.host }}",
                            "guest_id": "ubuntu64Guest",
                            "state": "present",
                            "hardware": {
                                "num_cpus": 32,
                                "memory_mb": 65536,
                                "boot_firmware": "efi",
                                "memory_reservation_lock": True,
                            },
                            "disk": [{"size_gb": 10, "type": "thin", "datastore": "datastore1"}],
                            "networks": [{"name": "VM Network"}],
                            "advanced_settings": [
                                {"key": "pciPassthru.use64bitMMIO", "value": "TRUE"},
                                {"key": "pciPassthru.allowP2P", "value": "TRUE"},
                                {"key": "pciPassthru.64bitMMIOSizeGB", "value": "128"},
                            ],
                        },
                        "loop": items,
                        "register": "a",
                    },
                    {
                        "name": "vGPUs",
                        "community.vmware.vmware_guest_vgpu": {
                            **common,
                            "name": "{{ item.name }}",
                            "vgpu": VGPU,
                            "state": "present",
                        },
                        "loop": items,
                        "register": "b",
                    },
                    {"ansible.builtin.debug": {"msg": "CHANGED={{ a.changed or b.changed }}"}},
                ],
            }
        ]
    )


def run_play(text: str, sim, workdir: Path) -> tuple[float, bool]:
    play = workdir / "play.yml"
    play.write_text(text)
    # An INI inventory file: ansible.cfg's [inventory] enable_plugins has no host_list (so no
    # `-i localhost,`), and any_unparsed_is_failed is on.
    inventory = workdir / "hosts.ini"
    inventory.write_text("localhost ansible_connection=local\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=f"{ROOT / 'collections'}:"
        f"{Path(sys.executable).parent.parent / 'lib'}",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        SSL_CERT_FILE=sim.ca_file,
        REQUESTS_CA_BUNDLE=sim.ca_file,
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
    )
    env.pop("ANSIBLE_COLLECTIONS_PATH")  # the bundled collections are found by default
    env["ANSIBLE_COLLECTIONS_PATH"] = f"{ROOT / 'collections'}"
    cmd = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        "-i",
        str(inventory),
        "-c",
        "local",
        str(play),
    ]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    elapsed = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"playbook failed:\n{res.stdout[-3000:]}\n{res.stderr[-2000:]}")
    return elapsed, "CHANGED=True" in res.stdout


def bench_case(label: str, hosts: int, gpus: int, per_host: int) -> dict:
    vms = vm_names(hosts, per_host)
    row = {"case": label, "vms": len(vms)}
    for tool, builder in (("miglab", play_miglab), ("community", play_community)):
        with (
            tempfile.TemporaryDirectory() as tmp,
            vcsim_lab.Vcsim(make_lab(hosts, gpus), delays=DELAYS) as sim,
        ):
            first, changed1 = run_play(builder(sim, vms), sim, Path(tmp))
            again, changed2 = run_play(builder(sim, vms), sim, Path(tmp))
        row[tool] = {
            "create_s": round(first, 1),
            "noop_s": round(again, 1),
            "changed_first": changed1,
            "changed_rerun": changed2,
        }
        print(
            f"{label}: {tool}: create {first:.1f} s (changed={changed1}), "
            f"no-op rerun {again:.1f} s (changed={changed2})",
            flush=True,
        )
    row["ratio"] = round(row["community"]["create_s"] / row["miglab"]["create_s"], 1)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="only the seed-sized case")
    ap.add_argument(
        "--smoke", action="store_true", help="only a 2-VM case: does the bench still run"
    )
    ap.add_argument("--results", type=Path, help="write the table here (default: RESULTS.md)")
    args = ap.parse_args()
    if args.smoke:
        cases = [("smoke: 1 host x 2 VMs", 1, 1, 2)]
    else:
        cases = [("seed matrix: 8 scenarios", 1, 4, 19)]
    if not (args.quick or args.smoke):
        cases.append(("large lab: 32 hosts x 7 VMs", 32, 1, 7))
    mode = " --smoke" if args.smoke else " --quick" if args.quick else ""
    rows = [bench_case(*c) for c in cases]
    lines = [
        "# vSphere provisioning: miglab vs community.vmware"
        + (" (smoke run)" if args.smoke else ""),
        "",
        f"Command: `.venv/bin/python bench/bench_vsphere.py{mode}` (after "
        "`pip install -e '.[bench]'` and "
        "`bash miglab/sim/vcsim/build.sh`).",
        f"Date {time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; simulator: miglab/sim/vcsim (govmomi 0.24) with "
        f"per-method latency {json.dumps(DELAYS)} ms.",
        "",
        "Each tool creates the VMs (EFI, 32 vCPUs, 64 GB reserved, pciPassthru settings, disk, "
        "NIC, "
        f"one `{VGPU}` vGPU) through ansible-playbook on a fresh simulator, then runs again "
        "unchanged. community.vmware = loop of `vmware_guest` + loop of `vmware_guest_vgpu` "
        "(community.vmware from the PyPI package `ansible`).",
        "",
        "| case | VMs | miglab create s | community.vmware create s | ratio | miglab no-op s | "
        "community.vmware no-op s | reruns changed? |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        m, c = r["miglab"], r["community"]
        lines.append(
            f"| {r['case']} | {r['vms']} | {m['create_s']} | {c['create_s']} | "
            f"{r['ratio']}x | {m['noop_s']} | {c['noop_s']} | miglab "
            f"{m['changed_rerun']}, community {c['changed_rerun']} |"
        )
    out = args.results or ROOT / "bench" / "RESULTS.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
