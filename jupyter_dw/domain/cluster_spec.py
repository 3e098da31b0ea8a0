"""A validated Ray cluster: what a user asked for, every default and limit applied.
``ValidatedClusterSpec``, and the names callers use from the modules that make it (one job each,
listed in docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from jupyter_dw.domain.cluster_fields import cpu_text, memory_text
from jupyter_dw.domain.cluster_request import (
    FIELDS,
    MAX_NAME_LENGTH,
    parse_cluster_request,
    ray_cluster_name_error,
)
from jupyter_dw.domain.managed_metadata import owner_label_value
from jupyter_dw.domain.ray_auth import DEFAULT_RAY_AUTH
from jupyter_dw.domain.raycluster_manifest import WORKER_GROUP_NAME, raycluster
from jupyter_dw.domain.request_fields import REQUEST_ERROR_KEY, SpecError
from jupyter_dw.domain.scheduling import Toleration
from jupyter_dw.domain.spec_policy import (
    DEFAULT_AUTOSCALER_CPU,
    DEFAULT_AUTOSCALER_MEMORY,
    DEFAULT_RAY_IMAGE,
    SpecPolicy,
)
from jupyter_dw.names import (
    ELASTIC_JOB_ANNOTATION,
    GPU_RESOURCE,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    OWNER_ANNOTATION,
    OWNER_LABEL,
    QUEUE_LABEL,
    RAYCLUSTER_API_VERSION,
    RAYCLUSTER_KIND,
)


@dataclass(frozen=True, kw_only=True)
class ValidatedClusterSpec:
    """A validated request for a Ray cluster: one head and one group of identical workers,
    every default applied (unlike the notebook's ``dw.ClusterSpec``, the user's request,
    whose None means "the default").

    Build it with ``from_request``; constructing it directly skips validation. Quantities are
    exact ``Decimal`` amounts (cores, bytes). ``workers`` is the number started; the cluster may
    autoscale between ``min_workers`` and ``max_workers`` (only with Kueue elastic jobs).
    """

    name: str
    queue: str
    image: str
    head_cpu: Decimal
    head_memory: Decimal
    workers: int
    min_workers: int
    max_workers: int
    worker_cpu: Decimal
    worker_memory: Decimal
    worker_gpu: int = 0
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict, hash=False)
    priority: str | None = None
    """A WorkloadPriorityClass name (label ``kueue.x-k8s.io/priority-class``); None: Kueue's
    default priority."""
    autoscaler_cpu: Decimal = DEFAULT_AUTOSCALER_CPU
    """The Ray autoscaler sidecar's CPU (only an autoscaling cluster has one; from the
    server's policy, not from the request)."""
    autoscaler_memory: Decimal = DEFAULT_AUTOSCALER_MEMORY
    ray_version: str | None = None
    """The image's Ray version (``spec.rayVersion``): from a Ray image's tag, else the
    request's ``ray_version``. Always set by ``from_request``."""
    ray_auth: str = DEFAULT_RAY_AUTH
    """The server's ``ray_auth`` mode when the spec was made (not a request field)."""

    def __post_init__(self) -> None:
        # Read-only views, so a frozen spec cannot be changed through its mappings.
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))
        object.__setattr__(self, "node_selector", MappingProxyType(dict(self.node_selector)))

    @classmethod
    def from_request(
        cls,
        data: Mapping[str, Any],
        policy: SpecPolicy | None = None,
        known_queues: Collection[str] | None = None,
        default_queue: str | None = None,
        known_priorities: Collection[str] | None = None,
    ) -> ValidatedClusterSpec:
        """Parse, default and validate a request; raise ``SpecError`` listing every bad field.

        ``data`` uses the names in ``FIELDS``; a ``None`` value counts as omitted. Quantities
        may be strings or numbers in Kubernetes quantity syntax. ``known_queues`` are the
        LocalQueue names in the target namespace (``None``: unknown, so not checked);
        ``default_queue`` is used when the request names no queue. ``known_priorities`` are
        the WorkloadPriorityClass names (``None``: not readable, so only the syntax is checked
        and Kueue judges the name).
        """
        return cls(
            **parse_cluster_request(
                data, policy or SpecPolicy(), known_queues, default_queue, known_priorities
            )
        )

    @property
    def autoscaling(self) -> bool:
        """Whether the Ray autoscaler may change the worker count (needs Kueue elastic jobs)."""
        return self.min_workers != self.max_workers

    def with_workers(self, workers: int) -> ValidatedClusterSpec:
        """The same cluster started with ``workers`` workers (fewer, for a fit suggestion): a
        fixed size stays fixed; an autoscaling range keeps its maximum and lowers its minimum
        to ``workers`` when needed."""
        return replace(
            self,
            workers=workers,
            min_workers=min(self.min_workers, workers),
            max_workers=workers if self.max_workers == self.workers else self.max_workers,
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-ready fields with canonical quantity strings; ``from_request`` reads them back."""
        return {
            "name": self.name,
            "queue": self.queue,
            "workers": self.workers,
            "worker_cpu": cpu_text(self.worker_cpu),
            "worker_memory": memory_text(self.worker_memory),
            "worker_gpu": self.worker_gpu,
            "head_cpu": cpu_text(self.head_cpu),
            "head_memory": memory_text(self.head_memory),
            "image": self.image,
            "min_workers": self.min_workers,
            "max_workers": self.max_workers,
            "env": dict(self.env),
            "labels": dict(self.labels),
            "tolerations": [t.to_json() for t in self.tolerations],
            "node_selector": dict(self.node_selector),
            "priority": self.priority,
            "ray_version": self.ray_version,
        }

    def total_requests(self, *, at_max: bool = False) -> dict[str, Decimal]:
        """Resources the whole cluster requests: head plus workers times one worker's requests.

        Keys are ``cpu`` (cores), ``memory`` (bytes) and ``nvidia.com/gpu`` (only when more than
        0). By default this counts ``workers``, which is what Kueue reserves at admission: it
        sizes a worker group's PodSet from ``replicas``, not ``maxReplicas``. With
        ``at_max=True`` it counts ``max_workers``, the most an autoscaling cluster can grow to
        (each step up is a new Workload slice that Kueue must admit). KubeRay's autoscaler
        sidecar is not counted here (the fit adds it where the running Kueue counts it).
        """
        count = self.max_workers if at_max else self.workers
        totals = {
            "cpu": self.head_cpu + count * self.worker_cpu,
            "memory": self.head_memory + count * self.worker_memory,
        }
        gpus = count * self.worker_gpu
        if gpus > 0:
            totals[GPU_RESOURCE] = Decimal(gpus)
        return totals

    def to_raycluster(
        self, namespace: str, owner: str | None = None, *, auth_options_served: bool = True
    ) -> dict[str, Any]:
        """The ``ray.io/v1`` RayCluster to create in ``namespace``, suspended until admitted.

        ``owner`` is the identity creating it (e.g. ``system:serviceaccount:ns:name``): its
        label-safe form goes in the ``jupyter-dw/owner`` label and the full identity in the
        annotation of the same name. ``spec.authOptions`` follows ``ray_auth`` when the
        installed KubeRay's RayCluster schema has it (``auth_options_served``); without it the
        field would be pruned, so it is left out (the cluster then reads as ``none``, with a
        warning). Raises ``ValueError`` for an invalid namespace name.
        """
        return raycluster(self, namespace, owner, auth_options_served=auth_options_served)


__all__ = [
    "DEFAULT_RAY_IMAGE",
    "ELASTIC_JOB_ANNOTATION",
    "FIELDS",
    "GPU_RESOURCE",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "MAX_NAME_LENGTH",
    "OWNER_ANNOTATION",
    "OWNER_LABEL",
    "QUEUE_LABEL",
    "RAYCLUSTER_API_VERSION",
    "RAYCLUSTER_KIND",
    "REQUEST_ERROR_KEY",
    "WORKER_GROUP_NAME",
    "SpecError",
    "SpecPolicy",
    "ValidatedClusterSpec",
    "owner_label_value",
    "ray_cluster_name_error",
]
