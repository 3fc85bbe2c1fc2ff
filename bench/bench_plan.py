"""Benchmark: how long validation + planning take, from the seed lab to a large one.

Writes bench/RESULTS-plan.md. Run: .venv/bin/python bench/bench_plan.py
Smoke mode (the test suite's, seconds): ``--quick --results FILE``: the seed and the smallest
generated lab of the full run (8 hosts x 4 GPUs), 2 repeats each, the table written to FILE.
Each case builds its campaign and inventory in a temporary folder, then times
load_lab + load_campaign (validation, incl. packing every scenario) + plan_campaign (schedule),
best and median of N repeats in fresh processes' worth of cold caches (caches are cleared).
"""

from __future__ import annotations

import argparse
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


def large_case(folder: Path, hosts: int, gpus: int) -> tuple[Path, Path]:
    inv = {
        "all": {
            "children": {
                "esxi_hosts": {
                    "hosts": {
                        f"esx{i:02d}": {
                            "miglab_host_gpus": [{"model": "A100-PCIE-80GB", "count": gpus}],
                            "miglab_host_cpus": 128,
                            "miglab_host_memory_gb": 1024,
                        }
                        for i in range(hosts)
                    }
                }
            }
        }
    }
    seed = yaml.safe_load(SEED.read_text())
    # Each seed scenario scaled out to fill the lab's GPUs: up to 7 VMs per GPU.
    per_gpu = {sid: body["vgpus"] for sid, body in seed["scenarios"].items()}
    scenarios = {}
    for sid, vgpus in per_gpu.items():
        scenarios[f"{sid}-x{hosts * gpus}"] = {
            "vgpus": {p: n * hosts * gpus for p, n in vgpus.items()},
            "vm": {"vcpus": 4, "memory_gb": 16},
        }
    seed["scenarios"] = scenarios
    seed["mlperf"]["baseline"] = next(iter(scenarios))
    seed["name"] = "large"
    (folder / "hosts.yml").write_text(yaml.safe_dump(inv))
    (folder / "c.yml").write_text(yaml.safe_dump(seed))
    return folder / "c.yml", folder / "hosts.yml"


def time_case(campaign: Path, inventory: Path | None, repeats: int) -> tuple[list[float], dict]:
    times = []
    info = {}
    for _ in range(repeats):
        _fit_cached.cache_clear()
        _max_fill.cache_clear()
        load_catalog.cache_clear()
        t0 = time.perf_counter()
        lab = load_lab(inventory)
        c = load_campaign(campaign, lab)
        plan = plan_campaign(c, lab)
        times.append(time.perf_counter() - t0)
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
    args = ap.parse_args()
    # 2 x 4: few GPUs for the scaled scenarios, so the scheduler often finds no room (it once
    # searched 10 s for that).
    sizes = [(2, 4), (8, 4)] if args.quick else [(2, 4), (8, 4), (32, 4), (32, 8)]
    repeats = 2 if args.quick else 5
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("seed (R750xa, 4 GPUs)", SEED, None)]
        for hosts, gpus in sizes:
            d = Path(tmp) / f"{hosts}x{gpus}"
            d.mkdir()
            cases.append((f"{hosts} hosts x {gpus} GPUs", *large_case(d, hosts, gpus)))
        for label, campaign, inventory in cases:
            times, info = time_case(campaign, inventory, repeats=repeats)
            rows.append((label, info, min(times), statistics.median(times)))
            print(f"{label}: {info['vms']} VMs, best {min(times) * 1000:.0f} ms", flush=True)
    out = args.results or ROOT / "bench" / "RESULTS-plan.md"
    command = "`.venv/bin/python bench/bench_plan.py" + (" --quick`" if args.quick else "`")
    lines = [
        "# Planning speed" + (" (quick smoke run)" if args.quick else ""),
        "",
        f"Command: {command} (validate + pack every scenario + "
        f"schedule, caches cleared before each of {repeats} repeats).",
        f"Machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}.",
        "",
        "| case | scenarios | VMs | GPUs | best s | median s | planned makespan h |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, info, best, med in rows:
        lines.append(
            f"| {label} | {info['scenarios']} | {info['vms']} | {info['gpus']} | "
            f"{best:.3f} | {med:.3f} | {info['makespan_h']:.1f} |"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
