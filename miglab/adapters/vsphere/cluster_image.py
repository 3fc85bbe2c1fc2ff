"""NVIDIA's driver through a cluster's vLCM image: detect, import, change the image, scan,
remediate host by host -- the steps of module ``miglab.lab.esxi_cluster_image``.

``ClusterImage(api, wanted, ...).ensure(host_name)`` reads first and changes nothing in check
mode: it reports the image change (a diff of the components) and the hosts it would remediate.
A second run on a compliant cluster imports nothing, commits nothing and remediates nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from miglab.adapters.vsphere.connection import VsphereError
from miglab.core.esxi.image import (
    ImageError,
    Wanted,
    apply_failures,
    depot_has,
    host_state,
    pick_components,
    plan_image,
    remediation_problems,
    summarize,
)


@dataclass
class ImageResult:
    changed: bool = False
    cluster: str = ""
    cluster_name: str = ""
    image_managed: bool = False
    imported: list[str] = field(default_factory=list)
    image_change: list[str] = field(default_factory=list)
    components: dict = field(default_factory=dict)
    commit: str | None = None
    remediated: list[str] = field(default_factory=list)
    compliance: dict = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)
    diff: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class ClusterImage:
    def __init__(
        self,
        api,
        wanted: Wanted,
        *,
        depots: list[str] = (),
        check_mode: bool = False,
        remediate: bool = True,
        allow_other_drift: bool = False,
        task_timeout: float = 7200.0,
        log: Callable[[str], None] | None = None,
    ):
        self.api = api
        self.wanted = wanted
        self.depots = [d for d in depots if d]
        self.check_mode = check_mode
        self.remediate = remediate
        self.allow_other_drift = allow_other_drift
        self.task_timeout = task_timeout
        self.log = log or (lambda _msg: None)

    def query(self, host_name: str | None = None, cluster_name: str | None = None) -> ImageResult:
        where = (
            self.api.locate_host(host_name) if host_name else self.api.locate_cluster(cluster_name)
        )
        res = ImageResult(cluster=where["cluster"], cluster_name=where.get("cluster_name") or "")
        res.image_managed = self.api.image_managed(res.cluster)
        if res.image_managed:
            res.components = (self.api.software(res.cluster) or {}).get("components") or {}
        self._host = where.get("host")
        return res

    def ensure(self, host_name: str | None = None, cluster_name: str | None = None) -> ImageResult:
        res = self.query(host_name, cluster_name)
        if not res.image_managed:
            raise VsphereError(
                f"cluster {res.cluster_name or res.cluster} is not managed by a vLCM image"
            )
        cluster = res.cluster
        # 1. The depot: import NVIDIA's bundles only when vCenter lacks the wanted components.
        depot = self.api.depot_components()
        if not depot_has(depot, self.wanted, res.components):
            if not self.depots:
                pick_components(depot, self.wanted, res.components)  # raises, naming what is there
            for url in self.depots:
                res.actions.append(f"import offline depot {url}")
                res.imported.append(url)
                if not self.check_mode:
                    self.log(f"importing {url} into vCenter's depot")
                    self.api.import_depot(url, "NVIDIA vGPU host driver (miglab)")
            res.changed = True
            if not self.check_mode:
                depot = self.api.depot_components()
        try:
            picked = pick_components(depot, self.wanted, res.components)
        except ImageError:
            if not self.check_mode:
                raise
            # Check mode: the bundles are not imported, so their components cannot be read yet.
            picked = {}
        # 2. The desired image.
        change = plan_image(res.components, picked, self.wanted) if picked else None
        image_changes = bool(change and not change.empty) or not picked
        if change and not change.empty:
            res.image_change = change.describe()
            res.diff = {
                "before": {"components": change.before},
                "after": {"components": change.after},
            }
            res.actions.append("change the cluster image: " + "; ".join(res.image_change))
            res.changed = True
            if not self.check_mode:
                self.log("committing the cluster image: " + "; ".join(res.image_change))
                res.commit = self.api.change_image(
                    cluster, change.as_patch(), "miglab: NVIDIA vGPU driver " + self.wanted.driver
                )
        elif not picked:
            res.actions.append("change the cluster image (with the imported components)")
        # 3. Compliance, then remediation of the host (or every host) that needs it.
        compliance = self.api.scan(cluster, timeout=self.task_timeout)
        res.compliance = summarize(compliance)
        targets = self._targets(compliance, host_name)
        pending = [s for s in targets if not s.compliant]
        if self.check_mode and image_changes:
            # The image is not changed in check mode, so the scan cannot see the change yet.
            pending = targets
        if not self.remediate or not pending:
            return res
        problems = [p for s in pending for p in remediation_problems(s, self.allow_other_drift)]
        if problems:
            raise VsphereError("; ".join(problems) + "; nothing was remediated")
        names = [s.name for s in pending]
        res.actions.append("remediate " + ", ".join(names))
        res.remediated = names
        res.changed = True
        if self.check_mode:
            return res
        self.log("remediating " + ", ".join(names) + " (maintenance mode, install, reboot)")
        result = self.api.apply(cluster, [s.host for s in pending], timeout=self.task_timeout)
        failed = apply_failures(result)
        if failed:
            raise VsphereError("remediation failed: " + "; ".join(failed))
        compliance = self.api.scan(cluster, timeout=self.task_timeout)
        res.compliance = summarize(compliance)
        still = [s.name for s in self._targets(compliance, host_name) if not s.compliant]
        if still:
            raise VsphereError("after remediation still not compliant: " + ", ".join(still))
        return res

    def _targets(self, compliance: dict, host_name: str | None):
        ids = list((compliance.get("hosts") or {}).keys()) + list(
            compliance.get("unavailable_hosts") or ()
        )
        states = [host_state(h, compliance, self.wanted) for h in ids]
        if host_name:
            states = [s for s in states if s.host == self._host or s.name == host_name]
            if not states:
                states = [host_state(self._host, compliance, self.wanted)]
        return states
