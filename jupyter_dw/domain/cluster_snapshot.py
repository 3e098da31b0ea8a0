"""What a user needs to know about one Ray cluster at one moment: the record
:func:`jupyter_dw.domain.cluster_state.cluster_snapshot` makes from KubeRay's RayCluster and
Kueue's Workload, and the JSON the REST API and the events stream share. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jupyter_dw.domain.kueue_state import CHECK_READY, AdmissionCheckStatus
from jupyter_dw.domain.kueue_words import Summarized
from jupyter_dw.domain.multikueue import Placement
from jupyter_dw.domain.priorities import PreemptedBy
from jupyter_dw.domain.slices import ScaleChange
from jupyter_dw.domain.stop_record import StopRecord
from jupyter_dw.names import DASHBOARD_PORT

ClusterState = Literal[
    "queued",
    "waiting-for-capacity",
    "admitted",
    "starting",
    "stalled",
    "ready",
    "evicted",
    "preempted",
    "suspended",
    "stopped",
    "failed",
    "rejected",
    "deleting",
]


@dataclass(frozen=True)
class Dashboard:
    """Where the Ray dashboard listens: a Service of the cluster's namespace and a port."""

    service: str
    port: int = DASHBOARD_PORT

    def to_json(self) -> dict[str, Any]:
        """``{"service": ..., "port": ...}``."""
        return {"service": self.service, "port": self.port}


@dataclass(frozen=True)
class ClusterSnapshot(Summarized):
    """What a user needs to know about one Ray cluster now, from Kueue and KubeRay together:
    one observation (the notebook's ``dw.ClusterStatus`` widget shows them as they change).

    ``state`` follows a fixed precedence (first match wins) — see ``cluster_snapshot``.
    ``reason``/``message`` are the controllers' own words for that state (Kueue's for
    queued/admitted/evicted/preempted/stopped, KubeRay's for
    starting/failed); None when they gave none. ``quota_reserved``/``admitted`` are the
    Workload's ``QuotaReserved``/``Admitted`` conditions. ``flavors`` lists the flavors
    assigned (first-seen order); ``pod_set_flavors`` maps PodSet → resource → flavor.
    Positions are Kueue's 0-based ``positionInLocalQueue``/``positionInClusterQueue``, set only
    while the Workload waits for quota. Times are RFC 3339 strings as the API gives them.
    """

    name: str
    namespace: str | None
    queue: str | None
    state: ClusterState
    reason: str | None
    message: str | None
    created: str | None
    workload: str | None
    cluster_queue: str | None
    quota_reserved: bool
    admitted: bool
    admitted_at: str | None
    flavors: tuple[str, ...]
    pod_set_flavors: Mapping[str, Mapping[str, str]]
    head_ready: bool
    workers_ready: int
    workers_desired: int
    dashboard: Dashboard
    position_in_local_queue: int | None = None
    position_in_cluster_queue: int | None = None
    preempted_by: PreemptedBy | None = None
    """While ``preempted``: the workload Kueue named as the preemptor (``name`` is filled in
    by the caller, who can look the job UID up among the namespace's RayClusters)."""
    admission_checks: tuple[AdmissionCheckStatus, ...] = ()
    """The Workload's admission checks (e.g. the ProvisioningRequest check asking the cluster
    autoscaler for nodes); empty when its ClusterQueue requires none."""
    workers_admitted: int | None = None
    """Workers whose quota Kueue holds now: the admitted slice's worker pod-set count (None
    before the first admission, or without a Workload)."""
    min_workers: int = 0
    """The worker range the Ray autoscaler may use (the cluster's own, also while pinned)."""
    max_workers: int = 0
    elastic: bool = False
    """An elastic job (annotation ``kueue.x-k8s.io/elastic-job: "true"`` and the Ray
    autoscaler on): Kueue admits its changes of size as Workload slices."""
    pinned_workers: int | None = None
    """A person pinned the size at this many workers (``minReplicas`` raised to N, the
    cluster's own minimum kept in an annotation); the Ray autoscaler may still grow it past N.
    None while the Ray autoscaler owns the whole range."""
    scale: ScaleChange | None = None
    """A change of size in flight (elastic clusters only)."""
    stopped: StopRecord | None = None
    """While ``stopped``: who stopped it, when and why (None for a Workload deactivated by
    other means, e.g. ``kueuectl stop workload``, which leaves no record)."""
    placement: Placement | None = None
    """Where MultiKueue sent it: the worker cluster that runs it (its pods are there, its
    state and worker counts are the worker's, copied back), or those it was offered to while
    it waits; None when MultiKueue does not handle it."""

    @property
    def capacity_provisioned(self) -> bool:
        """Every admission check is Ready (False when there are none)."""
        return bool(self.admission_checks) and all(
            c.state == CHECK_READY for c in self.admission_checks
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON shape the REST API and the events stream share."""
        return {
            "name": self.name,
            "namespace": self.namespace,
            "queue": self.queue,
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "summary": self.summary,
            "created": self.created,
            "workload": self.workload,
            "cluster_queue": self.cluster_queue,
            "quota_reserved": self.quota_reserved,
            "admitted": self.admitted,
            "admitted_at": self.admitted_at,
            "flavors": list(self.flavors),
            "pod_set_flavors": {ps: dict(f) for ps, f in self.pod_set_flavors.items()},
            "head_ready": self.head_ready,
            "workers_ready": self.workers_ready,
            "workers_desired": self.workers_desired,
            "dashboard": self.dashboard.to_json(),
            "position_in_local_queue": self.position_in_local_queue,
            "position_in_cluster_queue": self.position_in_cluster_queue,
            "preempted_by": self.preempted_by.to_json() if self.preempted_by else None,
            "admission_checks": [c.to_json() for c in self.admission_checks],
            "workers_admitted": self.workers_admitted,
            "min_workers": self.min_workers,
            "max_workers": self.max_workers,
            "elastic": self.elastic,
            "pinned_workers": self.pinned_workers,
            "scale": self.scale.to_json() if self.scale else None,
            "stopped": self.stopped.to_json() if self.stopped else None,
            "placement": self.placement.to_json() if self.placement else None,
        }
