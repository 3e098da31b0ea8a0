"""Kubeflow Trainer's objects as jupyter_dw reads and writes them: the namespace's TrainJobs
(watched by the session like RayJobs) and the training runtimes a TrainJob refers to.

Its own module rather than more of :mod:`.session`: the session keeps the watch caches and
their health; this module knows which resource is which and what a missing one means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import ray
from .errors import KubeApiError
from .resources import CLUSTER_TRAINING_RUNTIME, TRAIN_JOB, TRAINING_RUNTIME, Resource
from .session import KubeSession

Object = dict[str, Any]


@dataclass(frozen=True)
class TrainerAccess:
    """One session's TrainJobs and training runtimes. Every method blocks; each raises
    ``NotInstalled`` when Kubeflow Trainer's TrainJob CRD is not served."""

    session: KubeSession

    def trainjobs(self, timeout: float | None = None) -> list[Object]:
        """The namespace's TrainJobs from the watch cache (``KubeForbidden`` naming ``list``
        or ``watch trainjobs.trainer.kubeflow.org`` when they cannot be read)."""
        self.session.wait_ready(timeout)
        self.session.discovery.require_trainjobs()
        return self.session.watched_jobs(TRAIN_JOB, timeout)

    def trainjob(self, name: str, timeout: float | None = None) -> Object:
        """One TrainJob: from the cache, else (not seen yet) from the API server.
        ``KubeNotFound`` when it does not exist."""
        self.trainjobs(timeout)
        cached = self.cached(name)
        if cached is not None:
            return cached
        return ray.get_raycluster(self.session.api, self.session.namespace, name, TRAIN_JOB)

    def cached(self, name: str) -> Object | None:
        """TrainJob ``name`` as the cache holds it now (no waiting, no I/O)."""
        return self.session.cached_job(TRAIN_JOB, name)

    def create(self, obj: Object) -> Object:
        """Create TrainJob ``obj`` (server-side dry run first: Kueue's and Trainer's webhooks
        judge it before anything exists; the idempotency key honoured)."""
        self.session.wait_ready()
        return self.session.create_job(self.session.discovery.require_trainjobs(), obj)

    def delete(self, name: str) -> Object:
        """Delete TrainJob ``name`` (background propagation: its JobSet, Jobs, pods and
        Workload follow). ``KubeNotFound`` when absent."""
        self.session.wait_ready()
        return self.session.delete_object(self.session.discovery.require_trainjobs(), name)

    def runtime(self, kind: str, name: str) -> Object | None:
        """The ``ClusterTrainingRuntime`` (or, ``kind`` ``TrainingRuntime``, the namespace's)
        named ``name``; None when there is none. ``KubeForbidden`` names ``get`` on it."""
        self.session.wait_ready()
        self.session.discovery.require_trainjobs()
        resource: Resource = (
            TRAINING_RUNTIME if kind == TRAINING_RUNTIME.kind else CLUSTER_TRAINING_RUNTIME
        )
        namespace = self.session.namespace if resource.namespaced else None
        try:
            return self.session.api.get(resource.path(namespace, name))
        except KubeApiError as err:
            if err.api_status == 404:
                return None
            raise
