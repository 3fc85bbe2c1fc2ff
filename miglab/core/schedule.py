"""How long a campaign takes, and which scenarios can run at the same time.

Each campaign scenario is one job: create its VMs, then ``runs x benchmarks x MLPerf scenarios``
MLPerf runs, each at least LoadGen's minimum duration plus setup. Jobs run at once only on
different GPUs and only while the hosts' CPUs are not over-committed by the sharing (a scenario
alone on a host may use the host's configured over-commit; two sharing a host may not exceed its
logical CPUs) and reserved memory fits. List scheduling in campaign order (the baseline first)
gives the plan; the lower bound is the largest of the longest job, GPU-seconds / GPUs and
CPU-seconds / logical CPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from miglab.core.campaign import Campaign, Scenario
from miglab.core.placement import Lab, PackError, Packing, pack


@dataclass
class Job:
    scenario: Scenario
    duration_s: int
    runs: int  # MLPerf runs in this job (each VM runs them at once)
    start_s: int = 0
    packing: Packing | None = None

    @property
    def end_s(self) -> int:
        return self.start_s + self.duration_s


@dataclass
class Schedule:
    jobs: list[Job]
    serial_s: int
    makespan_s: int
    lower_bound_s: int
    parallel: bool

    def waves(self) -> list[list[Job]]:
        """Jobs grouped by start time."""
        out: dict[int, list[Job]] = {}
        for j in self.jobs:
            out.setdefault(j.start_s, []).append(j)
        return [out[k] for k in sorted(out)]


def job_duration(c: Campaign) -> tuple[int, int]:
    """(seconds, MLPerf runs) of one scenario of the campaign."""
    runs = c.mlperf.runs * len(c.mlperf.benchmarks) * len(c.mlperf.scenarios)
    per_run = c.mlperf.min_duration_s + c.schedule.run_setup_s
    return c.schedule.scenario_setup_s + runs * per_run, runs


def ordered(c: Campaign) -> list[Scenario]:
    """Baseline first, then the file's order."""
    base = c.scenarios[c.mlperf.baseline]
    return [base] + [s for s in c.scenarios.values() if s is not base]


def plan_schedule(c: Campaign, lab: Lab) -> Schedule:
    duration, runs = job_duration(c)
    slots = {(h.name, i) for h in lab.hosts for i, g in enumerate(h.gpus) if g is c.gpu}
    hosts = {h.name: h for h in lab.hosts}
    pending = [Job(s, duration, runs) for s in ordered(c)]
    done: list[Job] = []
    running: list[Job] = []
    t = 0
    while pending:
        busy = set().union(*(j.packing.gpu_slots for j in running)) if running else set()
        used_vcpu = {h: 0 for h in hosts}
        used_mem = {h: 0 for h in hosts}
        for j in running:
            for h, v in j.packing.host_vcpus.items():
                used_vcpu[h] += v
            for h, m in j.packing.host_memory_gb.items():
                used_mem[h] += m
        started = False
        for job in list(pending):
            if running and not c.schedule.parallel:
                break
            # Alone on a host a job may use the host's over-commit; sharing, only free CPUs.
            vcpu_limit = {
                h: (hosts[h].vcpu_capacity if used_vcpu[h] == 0 else hosts[h].cpus - used_vcpu[h])
                for h in hosts
            }
            mem_limit = {h: hosts[h].memory_capacity_gb - used_mem[h] for h in hosts}
            try:
                packing = pack(
                    job.scenario.vm_requests(c.name),
                    lab,
                    allowed_gpus=slots - busy,
                    host_vcpu_limit=vcpu_limit,
                    host_memory_limit=mem_limit,
                    max_gpus=job.scenario.max_gpus,
                )
            except PackError:
                if not running:
                    raise
                continue
            job.start_s = t
            job.packing = packing
            running.append(job)
            pending.remove(job)
            started = True
            break  # recompute what is free
        if started:
            continue
        # Nothing more fits now: advance to the next finish.
        nxt = min(j.end_s for j in running)
        t = nxt
        for j in [j for j in running if j.end_s <= t]:
            running.remove(j)
            done.append(j)
    done.extend(running)
    done.sort(key=lambda j: (j.start_s, list(c.scenarios).index(j.scenario.id)))
    serial = duration * len(done)
    makespan = max((j.end_s for j in done), default=0)
    gpu_seconds = sum(j.duration_s * len(j.packing.gpus) for j in done)
    # A job holds at least min(its vCPUs, the host's CPUs) of each host it uses while it runs.
    cpu_seconds = sum(
        j.duration_s * sum(min(v, hosts[h].cpus) for h, v in j.packing.host_vcpus.items())
        for j in done
    )
    lower = max(
        max((j.duration_s for j in done), default=0),
        math.ceil(gpu_seconds / max(len(slots), 1)),
        math.ceil(cpu_seconds / max(sum(h.cpus for h in lab.hosts), 1)),
    )
    return Schedule(done, serial, makespan, lower, c.schedule.parallel)


def fmt_duration(seconds: float) -> str:
    """The one duration format of miglab's output: ``1h02m``, ``3m05s``, ``42s``."""
    h, rem = divmod(int(seconds), 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m"
    return f"{m}m{s:02d}s" if m else f"{s}s"
