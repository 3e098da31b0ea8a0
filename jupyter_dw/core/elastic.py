"""What this Kueue does with elastic Ray clusters, for the fit and the create: whether it
admits them at all (the ``elastic_jobs`` setting, else Kueue's answer to a dry run) and
whether it counts KubeRay's autoscaler sidecar in the head pod set's quota (learned from a
real Workload)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from ..domain.slices import counts_autoscaler
from ..k8s.elastic import ElasticJobs
from ..k8s.session import KubeSession
from .cluster_objects import slices_of

ElasticSetting = Literal["auto", "true", "false"]


@dataclass(frozen=True)
class AutoscalerQuota:
    """Whether Kueue counts the autoscaler sidecar (``counted``), and whether that was seen
    on a real Workload or is assumed (counted, the safe side, until one is seen)."""

    counted: bool
    learned_from: Literal["workload", "assumed"]

    def to_json(self) -> dict[str, Any]:
        """``{"counted", "learned_from"}`` (``GET context``)."""
        return {"counted": self.counted, "learned_from": self.learned_from}


ASSUMED = AutoscalerQuota(True, "assumed")


@dataclass
class ElasticSupport:
    """The answers for one session; the sidecar's answer, once seen, is kept (a Kueue does
    not change how it counts while it runs)."""

    session: KubeSession
    setting: ElasticSetting = "auto"
    _learned: AutoscalerQuota | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def jobs(self) -> ElasticJobs:
        """Whether Kueue admits elastic RayClusters: the setting when it says, else the
        session's dry run."""
        if self.setting == "true":
            return ElasticJobs(True, "setting", "the elastic_jobs setting is true")
        if self.setting == "false":
            return ElasticJobs(False, "setting", "the elastic_jobs setting is false")
        return self.session.elastic_jobs

    def allows_autoscaling(self) -> bool:
        """Whether to accept an autoscaling cluster: yes unless Kueue is known to refuse (when
        it cannot be told, Kueue's dry run at create is the judge)."""
        return self.jobs().enabled is not False

    def autoscaler_quota(self) -> AutoscalerQuota:
        """Whether Kueue counts the sidecar, from the first Workload that tells."""
        with self._lock:
            if self._learned is not None:
                return self._learned
        # Only an autoscaling RayCluster's Workloads can tell: look at those (by the Workload
        # index), not at every Workload of the namespace.
        for raycluster in self.session.cached_ray_clusters():
            if (raycluster.get("spec") or {}).get("enableInTreeAutoscaling") is not True:
                continue
            for workload in slices_of(self.session, raycluster):
                found = counts_autoscaler(workload, raycluster)
                if found is not None:
                    with self._lock:
                        self._learned = AutoscalerQuota(found, "workload")
                        return self._learned
        return ASSUMED
