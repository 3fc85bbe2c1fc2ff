"""Human-readable rendering of a campaign plan (tables and GPU slice maps) with rich."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from miglab.core.planning import CampaignPlan
from miglab.core.schedule import fmt_duration


def _short(vm_name: str, campaign: str) -> str:
    return vm_name[len(campaign) + 1 :] if vm_name.startswith(campaign + "-") else vm_name


def _gpus(packing, hosts: int) -> str:
    """GPU labels of a scenario: "GPU0,GPU1" on a one-host lab, else "host/GPU0"."""
    if hosts == 1:
        return ",".join(f"GPU{g.index}" for g in packing.gpus)
    return ", ".join(f"{g.host.split('.')[0]}/GPU{g.index}" for g in packing.gpus)


def print_plan(plan: CampaignPlan, out: Console) -> None:
    c, lab, sch = plan.campaign, plan.lab, plan.schedule
    gpus = sum(len(h.gpus) for h in lab.hosts)
    out.print(Text.assemble((f"Campaign {c.name}", "bold"), f"  ({c.file})"))
    out.print(
        f"GPU {c.gpu.name}; lab {lab.source}: {len(lab.hosts)} host(s), {gpus} GPU(s), "
        f"{sum(h.cpus for h in lab.hosts)} logical CPUs, "
        f"{sum(h.memory_gb for h in lab.hosts)} GB"
    )
    out.print(
        f"MLPerf: {', '.join(c.mlperf.benchmarks)} x {', '.join(c.mlperf.scenarios)} x "
        f"{c.mlperf.runs} runs; baseline {c.mlperf.baseline}"
    )
    waves = sch.waves()
    for wave_no, wave in enumerate(waves, start=1):
        for job in wave:
            s, pk = job.scenario, job.packing
            out.print()
            out.print(
                Text.assemble(
                    (f"Scenario {s.id}", "bold"),
                    f": {s.describe()} -- {s.vm_count} VM(s) on {len(pk.gpus)} GPU(s); "
                    f"wave {wave_no}, {fmt_duration(job.start_s)} -> {fmt_duration(job.end_s)}",
                )
            )
            t = Table(
                "VM",
                "host",
                "GPU",
                "profile",
                "vGPU type",
                "start slice",
                "vCPUs",
                "memory GB (reserved)",
                "MMIO GB",
                box=None,
                pad_edge=False,
            )
            for p in pk.placements:
                t.add_row(
                    p.vm.name,
                    p.host,
                    str(p.gpu_index),
                    p.vm.vgpu.name,
                    p.vgpu_type or "-",
                    "-" if p.start is None else str(p.start),
                    str(p.vm.vcpus),
                    str(p.vm.memory_gb),
                    str(c.mmio_gb(s)),
                )
            out.print(t)
            for g in pk.gpus:
                label = f"  {g.host.split('.')[0]}/GPU{g.index}"
                if g.mig is not None:
                    names = {}
                    for p in pk.placements:
                        if p.host == g.host and p.gpu_index == g.index and p.start is not None:
                            names[p.start] = _short(p.vm.name, c.name).rsplit("-", 1)[-1]
                    out.print(g.mig.render(label, names), markup=False)
                    summ = g.mig.summary()
                    add = ", ".join(f"{n}x {k}" for k, n in summ["addable"].items()) or "nothing"
                    indent = " " * (len(label) + 1)
                    out.print(
                        f"{indent}left: {summ['free_compute_slices']} compute slice(s), "
                        f"memory slices {summ['free_memory_slices']} "
                        f"({summ['free_memory_gib']} GiB), stranded compute slices: "
                        f"{summ['stranded_compute_slices']}",
                        markup=False,
                    )
                    out.print(f"{indent}can still add (each alone): {add}", markup=False)
                else:
                    out.print(
                        f"{label}: time-sliced {g.time_sliced.name}, {len(g.vms)}/"
                        f"{g.time_sliced.max_per_gpu} vGPUs"
                    )
            for h, v in pk.host_vcpus.items():
                host = lab.host(h)
                out.print(
                    f"  host {h}: {v} vCPUs on {host.cpus} logical CPUs "
                    f"(limit {host.vcpu_capacity}), {pk.host_memory_gb[h]} of "
                    f"{host.memory_capacity_gb} GB reservable memory"
                )
    out.print()
    t = Table(
        "wave",
        "start",
        "end",
        "scenarios (GPUs)",
        box=None,
        pad_edge=False,
        title="Schedule",
        title_justify="left",
    )
    for wave_no, wave in enumerate(waves, start=1):
        t.add_row(
            str(wave_no),
            fmt_duration(wave[0].start_s),
            fmt_duration(max(j.end_s for j in wave)),
            ", ".join(f"{j.scenario.id} ({_gpus(j.packing, len(lab.hosts))})" for j in wave),
        )
    out.print(t)
    first = sch.jobs[0]
    out.print(
        f"each scenario: {first.runs} MLPerf runs x >= {c.mlperf.min_duration_s} s "
        f"+ {c.schedule.run_setup_s} s setup, + {c.schedule.scenario_setup_s} s to "
        f"build its VMs = {fmt_duration(first.duration_s)}"
    )
    _print_assignment(plan.as_json().get("vgpu_assignment") or {}, out)
    mode = "parallel" if sch.parallel else "serial (schedule.parallel: false)"
    out.print(
        Text(
            f"serial {fmt_duration(sch.serial_s)}  |  planned {fmt_duration(sch.makespan_s)}"
            f" ({mode})  |  lower bound {fmt_duration(sch.lower_bound_s)}",
            style="bold",
        )
    )


def _print_assignment(assignment: dict, out: Console) -> None:
    """Per host: the GPU assignment policy the hosts phase sets, and the waves that land as
    planned only with pinned vGPUs."""
    unpinned, pinned = assignment.get("unpinned", {}), assignment.get("pinned", {})
    for host, a in unpinned.items():
        line = f"vGPU placement, host {host}: assignment policy {a['policy']}"
        if a["unserved_waves"]:
            line += (
                f"; wave(s) {', '.join(map(str, a['unserved_waves']))} land as planned only "
                "with pinned vGPUs "
                "(miglab_vgpu_gpu_pin: true)"
            )
        out.print(line, markup=False)
        for problem in pinned.get(host, {}).get("problems", []):
            out.print(f"  even pinned: {problem}", markup=False)
