"""Benchmark: how long validation + planning take, from the seed lab to a large one.

Writes bench/RESULTS-plan.md. Run: .venv/bin/python bench/bench_plan.py
Smoke mode (the test suite's, seconds): ``--quick --results FILE``: the seed and the two smallest
generated labs of the full run (2 and 8 hosts x 4 GPUs), 2 repeats each, the table written to FILE.
Each case builds its campaign and inventory in a temporary folder, then times
load_lab + load_campaign (validation, incl. packing every scenario) + plan_campaign (schedule),
best and median of N repeats in fresh processes' worth of cold caches (caches are cleared).
``--only TEXT`` runs the cases whose label starts with TEXT; ``--repeats N`` sets the repeats.

Two kinds of generated case: the seed's eight scenarios scaled out to fill a lab (``N hosts x G
GPUs``), and labs filled to the last MIG slot with 1g.10gb VMs, 7 per GPU, split over scenarios
that run side by side (``... x 7 VMs``): 5,600 VMs on 100 hosts x 8 GPUs, 50,176 on 896 x 8, and
the issue's 4,096 VMs on 1,000 hosts x 64 GPUs.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from miglab.adapters.inventory import load_lab  # noqa: E402
from miglab.core.campaign import load_campaign  # noqa: E402
from miglab.core.catalog import load_catalog  # noqa: E402
from miglab.core.placement import _fit_cached, _max_fill  # noqa: E402
from miglab.core.planning import plan_campaign  # noqa: E402

SEED = ROOT / "campaigns" / "r750xa-a100-80gb-mig.yml"
MIG_1G_PER_GPU = 7  # 1g.10gb instances on one A100 80GB


def write_inventory(folder: Path, hosts: int, gpus: int, cpus: int, memory_gb: int) -> Path:
    inv = {
        "all": {
            "children": {
                "esxi_hosts": {
                    "hosts": {
                        f"esx{i:02d}": {
                            "miglab_host_gpus": [{"model": "A100-PCIE-80GB", "count": gpus}],
                            "miglab_host_cpus": cpus,
                            "miglab_host_memory_gb": memory_gb,
                        }
                        for i in range(hosts)
                    }
                }
            }
        }
    }
    (folder / "hosts.yml").write_text(yaml.safe_dump(inv))
    return folder / "hosts.yml"


def write_campaign(folder: Path, scenarios: dict) -> Path:
    seed = yaml.safe_load(SEED.read_text())
    seed["scenarios"] = scenarios
    seed["mlperf"]["baseline"] = next(iter(scenarios))
    seed["name"] = "large"
    (folder / "c.yml").write_text(yaml.safe_dump(seed))
    return folder / "c.yml"


def large_case(folder: Path, hosts: int, gpus: int) -> tuple[Path, Path]:
    """Each seed scenario scaled out to fill the lab's GPUs: up to 7 VMs per GPU."""
    seed = yaml.safe_load(SEED.read_text())
    per_gpu = {sid: body["vgpus"] for sid, body in seed["scenarios"].items()}
    scenarios = {}
    for sid, vgpus in per_gpu.items():
        scenarios[f"{sid}-x{hosts * gpus}"] = {
            "vgpus": {p: n * hosts * gpus for p, n in vgpus.items()},
            "vm": {"vcpus": 4, "memory_gb": 16},
        }
    inventory = write_inventory(folder, hosts, gpus, cpus=128, memory_gb=1024)
    return write_campaign(folder, scenarios), inventory


def filled_case(
    folder: Path, hosts: int, gpus: int, scenarios: int, vms: int | None = None, **host
) -> tuple[Path, Path]:
    """``vms`` 1g.10gb VMs (default: 7 per GPU, every MIG slot of the lab), split evenly over
    ``scenarios`` scenarios (a scenario has at most 4,096 of one vGPU). They fit side by side."""
    vms = vms or hosts * gpus * MIG_1G_PER_GPU
    assert vms % scenarios == 0 and vms // scenarios <= 4096, (vms, scenarios)
    body = {"vgpus": {"1g.10gb": vms // scenarios}, "vm": {"vcpus": 4, "memory_gb": 16}}
    campaign = write_campaign(folder, {f"fill{k + 1}": body for k in range(scenarios)})
    host = {"cpus": 128, "memory_gb": 1024, **host}
    return campaign, write_inventory(folder, hosts, gpus, **host)


def time_case(campaign: Path, inventory: Path | None, repeats: int) -> tuple[list[float], dict]:
    times = []
    info = {}
    for _ in range(repeats):
        _fit_cached.cache_clear()
        _max_fill.cache_clear()
        load_catalog.cache_clear()
        t0, cpu0 = time.perf_counter(), time.process_time()
        lab = load_lab(inventory)
        t1 = time.perf_counter()
        c = load_campaign(campaign, lab)
        t2 = time.perf_counter()
        plan = plan_campaign(c, lab)
        t3 = time.perf_counter()
        times.append(t3 - t0)
        print(
            f"  load_lab {t1 - t0:.3f} s, load_campaign {t2 - t1:.3f} s, plan {t3 - t2:.3f} s "
            f"(CPU {time.process_time() - cpu0:.3f} s)",
            flush=True,
        )
        info = {
            "scenarios": len(c.scenarios),
            "vms": sum(s.vm_count for s in c.scenarios.values()),
            "gpus": sum(len(h.gpus) for h in lab.hosts),
            "hosts": len(lab.hosts),
            "makespan_h": plan.schedule.makespan_s / 3600,
        }
    return times, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="smoke: the seed, the 2x4 and 8x4 labs, 2 repeats each"
    )
    ap.add_argument("--results", type=Path, help="write the table here (default: RESULTS-plan.md)")
    ap.add_argument("--only", help="run only the cases whose label starts with this text")
    ap.add_argument("--repeats", type=int, help="repeats of every case (default: 5, quick 2)")
    args = ap.parse_args()
    # 2 x 4: few GPUs for the scaled scenarios, so the scheduler often finds no room (it once
    # searched 10 s for that).
    sizes = [(2, 4), (8, 4)] if args.quick else [(2, 4), (8, 4), (32, 4), (32, 8)]
    repeats = args.repeats or (2 if args.quick else 5)
    big_repeats = min(repeats, 3)  # the 50,000-VM case: fewer repeats
    rows = []
    load_before = os.getloadavg()[0]  # other work on the machine makes the times longer
    with tempfile.TemporaryDirectory() as tmp:

        def folder(name: str) -> Path:
            d = Path(tmp) / name
            d.mkdir()
            return d

        cases = [("seed (R750xa, 4 GPUs)", SEED, None, repeats)]
        for hosts, gpus in sizes:
            built = large_case(folder(f"{hosts}x{gpus}"), hosts, gpus)
            cases.append((f"{hosts} hosts x {gpus} GPUs", *built, repeats))
        if not args.quick:
            cases += [
                (
                    "100 hosts x 8 GPUs x 7 VMs",
                    *filled_case(folder("fill-100x8"), 100, 8, scenarios=2),
                    repeats,
                ),
                (
                    "896 hosts x 8 GPUs x 7 VMs",
                    *filled_case(folder("fill-896x8"), 896, 8, scenarios=14),
                    big_repeats,
                ),
                (
                    # the issue's: 4,096 VMs on 64,000 GPUs (hosts sized for 448 VMs each)
                    "1000 hosts x 64 GPUs, 4096 VMs",
                    *filled_case(
                        folder("fill-1000x64"), 1000, 64, 1, 4096, cpus=896, memory_gb=8192
                    ),
                    repeats,
                ),
            ]
        if args.only:
            cases = [c for c in cases if c[0].startswith(args.only)]
        for label, campaign, inventory, n in cases:
            print(f"{label}:", flush=True)
            times, info = time_case(campaign, inventory, repeats=n)
            rows.append((label, info, min(times), statistics.median(times), n))
            print(f"{label}: {info['vms']} VMs, best {min(times) * 1000:.0f} ms", flush=True)
    out = args.results or ROOT / "bench" / "RESULTS-plan.md"
    shown = ["--quick"] if args.quick else []
    shown += [f"--only '{args.only}'"] if args.only else []
    shown += [f"--repeats {args.repeats}"] if args.repeats else []
    command = "`" + " ".join([".venv/bin/python bench/bench_plan.py", *shown]) + "`"
    fewer = sorted({n for *_, n in rows if n != repeats})
    lines = [
        "# Planning speed" + (" (quick smoke run)" if args.quick else ""),
        "",
        f"Command: {command} (validate + pack every scenario + "
        f"schedule, caches cleared before each of {repeats} repeats"
        + "".join(f"; {n} for the cases marked *" for n in fewer)
        + ").",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.python_implementation()} "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}; load average "
        f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (other work "
        "running beside the benchmark makes its times longer).",
        "",
        "| case | scenarios | VMs | GPUs | best s | median s | planned makespan h |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, info, best, med, n in rows:
        mark = " *" if n != repeats else ""
        lines.append(
            f"| {label}{mark} | {info['scenarios']} | {info['vms']} | {info['gpus']} | "
            f"{best:.3f} | {med:.3f} | {info['makespan_h']:.1f} |"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
