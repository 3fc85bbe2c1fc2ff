"""The campaign schedule: durations, concurrency rules and bounds."""

from __future__ import annotations

import dataclasses

from miglab.core.campaign import load_campaign
from miglab.core.schedule import job_duration, plan_schedule
from testlib import SEED


def test_seed_schedule_is_parallel_safe_and_bounded(sim_lab):
    c = load_campaign(SEED, sim_lab)
    sch = plan_schedule(c, sim_lab)
    duration, runs = job_duration(c)
    assert runs == 3 * 2 * 1
    assert duration >= runs * 600
    assert sch.serial_s == 8 * duration
    assert sch.lower_bound_s <= sch.makespan_s < sch.serial_s
    host = sim_lab.hosts[0]
    # At every moment: no GPU is shared between scenarios, and sharing never over-commits CPUs.
    for t in sorted({j.start_s for j in sch.jobs}):
        live = [j for j in sch.jobs if j.start_s <= t < j.end_s]
        slots = [s for j in live for s in j.packing.gpu_slots]
        assert len(slots) == len(set(slots))
        if len(live) > 1:
            assert sum(j.packing.host_vcpus[host.name] for j in live) <= host.cpus
    # The baseline runs first.
    assert sch.jobs[0].scenario.id == c.mlperf.baseline and sch.jobs[0].start_s == 0


def test_serial_schedule_when_asked(sim_lab):
    c = load_campaign(SEED, sim_lab)
    c = dataclasses.replace(c, schedule=dataclasses.replace(c.schedule, parallel=False))
    sch = plan_schedule(c, sim_lab)
    assert sch.makespan_s == sch.serial_s
