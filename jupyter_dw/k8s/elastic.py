"""Does this Kueue admit elastic (autoscaling) RayClusters? Asked of Kueue itself.
By a dry-run create through Kueue's webhooks, since a user cannot read its feature gates.
Blocking (docs/explanation/architecture.md).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..domain.cluster_spec import SpecPolicy, ValidatedClusterSpec
from ..domain.cluster_state import behind_elastic_gate
from ..names import ELASTIC_JOB_SCHEDULING_GATE, ELASTIC_PROBE_PREFIX
from .errors import KubeError, KubeForbidden, KubeRejected
from .kuberay import DRY_RUN
from .resources import RAY_CLUSTER

if TYPE_CHECKING:
    from .client import KubeApi

log = logging.getLogger(__name__)

LearnedFrom = Literal["setting", "dry-run", "unknown"]
FEATURE_GATE = "ElasticJobsViaWorkloadSlices"
PROBE_QUEUE = "jupyter-dw-probe"
"""The queue a probe names when the namespace has no LocalQueue (Kueue's webhooks do not look
the queue up; a label is what makes Kueue manage the RayCluster)."""


@dataclass(frozen=True)
class ElasticJobs:
    """Whether Kueue admits elastic RayClusters (``enabled`` None: cannot tell), how that was
    learned, and the evidence in words."""

    enabled: bool | None
    learned_from: LearnedFrom = "unknown"
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"enabled", "learned_from", "detail"}`` (``GET context``)."""
        return {"enabled": self.enabled, "learned_from": self.learned_from, "detail": self.detail}


NOT_PROBED = ElasticJobs(None, "unknown", "not asked yet")


def _probe_object(namespace: str, queue: str) -> dict[str, Any]:
    spec = ValidatedClusterSpec.from_request(
        {
            "name": f"{ELASTIC_PROBE_PREFIX}{uuid.uuid4().hex[:8]}",
            "queue": queue,
            "workers": 0,
            "min_workers": 0,
            "max_workers": 1,
            "head_cpu": "1m",
            "head_memory": "1Mi",
            "worker_cpu": "1m",
            "worker_memory": "1Mi",
        },
        SpecPolicy(elastic_jobs=True),
    )
    return spec.to_raycluster(namespace)


def _gated(obj: dict[str, Any]) -> bool:
    template = ((obj.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}
    return behind_elastic_gate(template.get("spec"))


def probe_elastic_jobs(api: KubeApi, namespace: str, queue: str | None) -> ElasticJobs:
    """Dry-run the create of a small elastic RayCluster in ``namespace`` (queued to ``queue``)
    and read Kueue's answer. Never raises: what cannot be told is ``enabled`` None."""
    obj = _probe_object(namespace, queue or PROBE_QUEUE)
    try:
        answer = api.post(RAY_CLUSTER.path(namespace), obj, query=[DRY_RUN])
    except KubeRejected as err:
        words = err.reason or err.error
        if "multikueue" in words.lower():
            # Kueue (0.19) refuses Ray's autoscaler on a cluster it would send to another
            # cluster: the probe's queue says nothing of the feature gate, nor of other queues.
            return ElasticJobs(
                None,
                "dry-run",
                f"cannot tell: the probe's queue runs its workloads on other clusters "
                f"(MultiKueue), where Kueue refuses autoscaling RayClusters: {words}",
            )
        if "elastic" in words.lower() or "autoscal" in words.lower():
            return ElasticJobs(
                False,
                "dry-run",
                f"Kueue refused an autoscaling RayCluster: {words} (feature gate "
                f"{FEATURE_GATE} off)",
            )
        return ElasticJobs(None, "dry-run", f"the dry run was refused for another reason: {words}")
    except KubeForbidden:
        return ElasticJobs(None, "unknown", "cannot tell: this identity may not create rayclusters")
    except KubeError as err:
        log.info("jupyter_dw: the elastic-jobs dry run failed: %s", err)
        return ElasticJobs(None, "unknown", f"cannot tell: the dry run failed ({err.error})")
    if _gated(answer):
        return ElasticJobs(
            True,
            "dry-run",
            f"Kueue's webhook gated an elastic RayCluster's pods ({ELASTIC_JOB_SCHEDULING_GATE}): "
            f"feature gate {FEATURE_GATE} on",
        )
    return ElasticJobs(
        False,
        "dry-run",
        "Kueue's webhook did not gate an elastic RayCluster's pods: feature gate "
        f"{FEATURE_GATE} off, or Kueue does not manage RayClusters here",
    )
