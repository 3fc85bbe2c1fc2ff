"""The plan of a campaign on a lab: placements per scenario, capacity left, schedule (as data)."""

from __future__ import annotations

from dataclasses import dataclass

from miglab.core.campaign import Campaign
from miglab.core.catalog import Catalog
from miglab.core.placement import Lab
from miglab.core.power_on import host_policies
from miglab.core.schedule import Schedule, plan_schedule


@dataclass
class CampaignPlan:
    campaign: Campaign
    lab: Lab
    schedule: Schedule

    def largest_wave_vms(self) -> int:
        """VMs of the wave with the most: Ansible must run that many hosts at once (forks), or
        the start barrier releases a wave's VMs in turns and their runs do not overlap."""
        return max(
            (sum(len(job.packing.placements) for job in wave) for wave in self.schedule.waves()),
            default=0,
        )

    def as_json(self) -> dict:
        c, lab, sch = self.campaign, self.lab, self.schedule
        scenarios = []
        for wave_no, wave in enumerate(sch.waves(), start=1):
            for job in wave:
                s, pk = job.scenario, job.packing
                scenarios.append(
                    {
                        "id": s.id,
                        "vgpus": {v.name: n for v, n in s.vgpus},
                        "wave": wave_no,
                        "start_s": job.start_s,
                        "end_s": job.end_s,
                        "vms": [
                            {
                                "name": p.vm.name,
                                "host": p.host,
                                "gpu": p.gpu_index,
                                "profile": p.vm.vgpu.name,
                                "vgpu_type": p.vgpu_type,
                                "start_slice": p.start,
                                "vcpus": p.vm.vcpus,
                                "memory_gb": p.vm.memory_gb,
                                "memory_reservation_gb": p.vm.memory_gb,
                                "mmio_gb": c.mmio_gb(s),
                            }
                            for p in pk.placements
                        ],
                        "gpus": [
                            {
                                "host": g.host,
                                "index": g.index,
                                "mode": g.mode,
                                **(
                                    g.mig.summary()
                                    if g.mig
                                    else {"type": g.time_sliced.name, "vgpus": len(g.vms)}
                                ),
                            }
                            for g in pk.gpus
                        ],
                        "hosts": {
                            h: {"vcpus": pk.host_vcpus[h], "memory_gb": pk.host_memory_gb[h]}
                            for h in pk.host_vcpus
                        },
                    }
                )
        out = {
            "campaign": c.name,
            "file": c.file,
            "gpu": c.gpu.name,
            "mlperf": {
                "benchmarks": list(c.mlperf.benchmarks),
                "scenarios": list(c.mlperf.scenarios),
                "runs": c.mlperf.runs,
                "baseline": c.mlperf.baseline,
                "min_duration_s": c.mlperf.min_duration_s,
                "qps_search": c.mlperf.qps_search.as_json() if c.mlperf.qps_search else None,
                "accuracy": c.mlperf.accuracy,
                "compliance": list(c.mlperf.compliance),
                "backend": c.mlperf.backend,
                "harness": c.mlperf.harness.as_json() if c.mlperf.harness else None,
            },
            "lab": {
                "source": lab.source,
                "hosts": [
                    {
                        "name": h.name,
                        "gpus": [g.name for g in h.gpus],
                        "cpus": h.cpus,
                        "memory_gb": h.memory_gb,
                        "vcpu_capacity": h.vcpu_capacity,
                        "memory_capacity_gb": h.memory_capacity_gb,
                    }
                    for h in lab.hosts
                ],
            },
            "warnings": list(c.warnings),
            "scenarios": scenarios,
            "schedule": {
                "parallel": sch.parallel,
                "mlperf_runs_per_scenario": sch.jobs[0].runs if sch.jobs else 0,
                "scenario_duration_s": sch.jobs[0].duration_s if sch.jobs else 0,
                "serial_s": sch.serial_s,
                "makespan_s": sch.makespan_s,
                "lower_bound_s": sch.lower_bound_s,
            },
        }
        # Which assignment policy makes vSphere put every vGPU where the plan says, per host,
        # and the waves that need pinned vGPUs without it (miglab.core.power_on).
        models = Catalog({id(g): g for h in lab.hosts for g in h.gpus}.values())
        out["vgpu_assignment"] = {
            "unpinned": host_policies(out, models),
            "pinned": host_policies(out, models, pin=True),
        }
        return out


def vm_spec(plan_vm: dict) -> dict:
    """A planned VM (``CampaignPlan.as_json()['scenarios'][i]['vms'][j]``) as the VM spec of the
    vSphere layer (module ``miglab.lab.vgpu_vm``'s ``vms`` items): name, host, vCPUs, memory,
    MMIO size, its one vGPU and the planned GPU and MIG start slot."""
    missing = [k for k in ("name", "host", "vgpu_type", "vcpus", "memory_gb") if k not in plan_vm]
    if missing:
        raise ValueError(f"planned VM {plan_vm.get('name', '?')}: no {', '.join(missing)}")
    spec = {
        "name": str(plan_vm["name"]),
        "host": str(plan_vm["host"]),
        "vcpus": int(plan_vm["vcpus"]),
        "memory_gb": int(plan_vm["memory_gb"]),
        "vgpus": [str(plan_vm["vgpu_type"])],
    }
    if plan_vm.get("mmio_gb"):
        spec["mmio_gb"] = int(plan_vm["mmio_gb"])
    # Where the plan put its vGPU: vSphere picks the GPU at power-on, the module reports and
    # checks where it landed (and pins it with gpu_pin).
    if plan_vm.get("gpu") is not None:
        spec["gpu"] = int(plan_vm["gpu"])
    if plan_vm.get("start_slice") is not None:
        spec["mig_slot"] = int(plan_vm["start_slice"])
    return spec


def plan_campaign(campaign: Campaign, lab: Lab) -> CampaignPlan:
    return CampaignPlan(campaign, lab, plan_schedule(campaign, lab))
