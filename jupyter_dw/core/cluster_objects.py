"""How a Ray cluster's objects relate: its Workloads, pods, KubeRay's warnings, a RayCluster by UID.
Queries over the session's cache indexes, answered from the caches as they are now
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from typing import Any

from ..domain.job_kind import JobKind
from ..k8s.cache_set import (
    BY_INVOLVED_UID,
    BY_JOB,
    BY_JOB_UID,
    BY_RAY_CLUSTER,
    BY_UID,
    pods_cache,
)
from ..k8s.resources import EVENT, POD, RAY_CLUSTER, WORKLOAD
from ..k8s.session import KubeSession
from ..k8s.watch_cache import Object


def _uid(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def workloads_of_job(session: KubeSession, job_uid: str) -> list[Object]:
    """The cached Workloads of the job whose ``metadata.uid`` is ``job_uid`` (Kueue's
    ``kueue.x-k8s.io/job-uid`` label; empty when not readable)."""
    return session.indexed(WORKLOAD, BY_JOB_UID, job_uid)


def slices_of(session: KubeSession, raycluster: Object) -> list[Object]:
    """Every Workload Kueue made for ``raycluster`` (an elastic cluster's chain of slices,
    replaced ones included); empty when there is none or Workloads are not readable."""
    return workloads_of_job(session, _uid(raycluster))


def ray_pods(session: KubeSession, name: str) -> list[Object]:
    """The cached pods of RayCluster ``name`` (label ``ray.io/cluster``); empty when pods are
    not readable."""
    return session.indexed(POD, BY_RAY_CLUSTER, name)


def job_pods(session: KubeSession, kind: JobKind[Any, Any], name: str) -> list[Object]:
    """The cached pods of job ``name`` of ``kind``, a kind whose pods are its own (its
    ``pod_label``: a TrainJob's JobSet's name label); empty when pods are not readable or the
    kind is not served."""
    return session.indexed(pods_cache(kind), BY_JOB, name)


def kuberay_warnings(session: KubeSession, raycluster: Object) -> list[Object]:
    """The cached Warning events about ``raycluster`` (by its UID); empty when events are not
    readable."""
    return session.indexed(EVENT, BY_INVOLVED_UID, _uid(raycluster))


def ray_cluster_by_uid(session: KubeSession, uid: str) -> Object | None:
    """The cached RayCluster whose ``metadata.uid`` is ``uid``, None when none is held."""
    found = session.indexed(RAY_CLUSTER, BY_UID, uid)
    return found[0] if found else None
