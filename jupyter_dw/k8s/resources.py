"""Every Kubernetes API group, version, plural and kind jupyter_dw uses, named once.
A new API version is a change here plus discovery; Kueue's version is discovered
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from jupyter_dw.domain.job_kind import JobKind
from jupyter_dw.domain.kinds import KINDS
from jupyter_dw.domain.kinds.rayjob import RAYJOB
from jupyter_dw.domain.kinds.trainjob import TRAINJOB
from jupyter_dw.names import (
    ADMISSION_CHECK_KIND,
    CLUSTER_QUEUE_KIND,
    CLUSTER_TRAINING_RUNTIME_KIND,
    COHORT_KIND,
    KUEUE_GROUP,
    LOCAL_QUEUE_KIND,
    MULTIKUEUE_CLUSTER_KIND,
    MULTIKUEUE_CONFIG_KIND,
    POD_KIND,
    RAY_GROUP,
    RAY_VERSION,
    RAYCLUSTER_KIND,
    RESOURCE_FLAVOR_KIND,
    TRAINER_GROUP,
    TRAINER_VERSION,
    TRAINING_RUNTIME_KIND,
    VISIBILITY_GROUP,
    WORKLOAD_KIND,
    WORKLOAD_PRIORITY_CLASS_KIND,
    qualified,
)

from ..domain.errors import InvalidRequest

KUEUE_VERSIONS = ("v1beta2", "v1beta1")
"""Kueue API versions jupyter_dw reads, most preferred first (the domain model reads both)."""
COHORT_VERSIONS = (*KUEUE_VERSIONS, "v1alpha1")
"""Cohort objects were ``v1alpha1`` before they moved to the main Kueue versions."""

VISIBILITY_VERSIONS = ("v1beta2", "v1beta1")


@dataclass(frozen=True)
class ResourceKind:
    """An API resource whose version is chosen at run time (by discovery)."""

    group: str
    plural: str
    kind: str
    namespaced: bool

    def at(self, version: str) -> Resource:
        """This kind served at ``version``."""
        return Resource(self.group, version, self.plural, self.kind, self.namespaced)

    @property
    def qualified(self) -> str:
        """``plural.group`` as RBAC and error messages spell it (``pods`` for the core group)."""
        return qualified(self.plural, self.group)


@dataclass(frozen=True)
class Resource:
    """An API resource at a fixed version, able to build its REST paths."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def qualified(self) -> str:
        """``plural.group`` as RBAC and error messages spell it (``pods`` for the core group)."""
        return qualified(self.plural, self.group)

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` field of objects of this resource (``v1`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        """``/api/v1`` for the core group, ``/apis/<group>/<version>`` otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path of the collection (no ``name``) or of one object.

        ``namespace`` None on a namespaced resource means "all namespaces".
        """
        parts = [self.group_version_path]
        if self.namespaced and namespace is not None:
            parts += ["namespaces", path_segment(namespace, "namespace")]
        parts.append(self.plural)
        if name is not None:
            parts.append(path_segment(name, "name"))
            if subresource:
                parts.append(path_segment(subresource, "subresource"))
        return "/".join(parts)


# Segments an HTTP client removes or merges (RFC 3986 dot segments) or that end a path early:
# "rayclusters/." would reach the API server as "rayclusters/" -- the whole collection.
_UNSAFE_SEGMENTS = frozenset({"", ".", ".."})


def path_segment(value: str, what: str) -> str:
    """``value`` quoted as one path segment; :class:`InvalidRequest` (400, nothing sent) when
    it is empty, a dot segment or holds ``/``, which would make the path name another object
    or the collection. Every Kubernetes path is built through here."""
    if not isinstance(value, str) or value in _UNSAFE_SEGMENTS or "/" in value:
        raise InvalidRequest(
            f"Invalid {what} {value!r}",
            f"a {what} in a Kubernetes path may not be empty, '.', '..' or contain '/'",
            "Use the object's Kubernetes name.",
            {what: f"{value!r} is not a valid {what}"},
        )
    return quote(value, safe="")


# Kueue (version chosen by discovery)
LOCAL_QUEUE = ResourceKind(KUEUE_GROUP, "localqueues", LOCAL_QUEUE_KIND, namespaced=True)
CLUSTER_QUEUE = ResourceKind(KUEUE_GROUP, "clusterqueues", CLUSTER_QUEUE_KIND, namespaced=False)
RESOURCE_FLAVOR = ResourceKind(
    KUEUE_GROUP, "resourceflavors", RESOURCE_FLAVOR_KIND, namespaced=False
)
WORKLOAD = ResourceKind(KUEUE_GROUP, "workloads", WORKLOAD_KIND, namespaced=True)
COHORT = ResourceKind(KUEUE_GROUP, "cohorts", COHORT_KIND, namespaced=False)
WORKLOAD_PRIORITY_CLASS = ResourceKind(
    KUEUE_GROUP, "workloadpriorityclasses", WORKLOAD_PRIORITY_CLASS_KIND, namespaced=False
)
ADMISSION_CHECK = ResourceKind(KUEUE_GROUP, "admissionchecks", ADMISSION_CHECK_KIND, False)
MULTIKUEUE_CONFIG = ResourceKind(KUEUE_GROUP, "multikueueconfigs", MULTIKUEUE_CONFIG_KIND, False)
MULTIKUEUE_CLUSTER = ResourceKind(
    KUEUE_GROUP, "multikueueclusters", MULTIKUEUE_CLUSTER_KIND, namespaced=False
)

# Kueue visibility API (aggregated; served by the Kueue process itself)
VISIBILITY_LOCAL_QUEUE = ResourceKind(VISIBILITY_GROUP, "localqueues", LOCAL_QUEUE_KIND, True)
VISIBILITY_CLUSTER_QUEUE = ResourceKind(
    VISIBILITY_GROUP, "clusterqueues", CLUSTER_QUEUE_KIND, namespaced=False
)
PENDING_WORKLOADS_SUBRESOURCE = "pendingworkloads"


def kind_resource(kind: JobKind[Any, Any]) -> Resource:
    """The resource of a workload kind (:mod:`jupyter_dw.domain.kinds`), namespaced."""
    return Resource(kind.group, kind.version, kind.plural, kind.kind, namespaced=True)


JOB_RESOURCES: tuple[tuple[JobKind[Any, Any], Resource], ...] = tuple(
    (kind, kind_resource(kind)) for kind in KINDS
)
"""Every workload kind with its resource."""

# KubeRay
RAY_CLUSTER = Resource(RAY_GROUP, RAY_VERSION, "rayclusters", RAYCLUSTER_KIND, namespaced=True)
RAY_JOB = kind_resource(RAYJOB)

# Kubeflow Trainer v2
TRAIN_JOB = kind_resource(TRAINJOB)
CLUSTER_TRAINING_RUNTIME = Resource(
    TRAINER_GROUP,
    TRAINER_VERSION,
    "clustertrainingruntimes",
    CLUSTER_TRAINING_RUNTIME_KIND,
    namespaced=False,
)
TRAINING_RUNTIME = Resource(
    TRAINER_GROUP, TRAINER_VERSION, "trainingruntimes", TRAINING_RUNTIME_KIND, namespaced=True
)

# Core and authorization/authentication APIs
POD = Resource("", "v1", "pods", POD_KIND, namespaced=True)
SECRET = Resource("", "v1", "secrets", "Secret", namespaced=True)
EVENT = Resource("", "v1", "events", "Event", namespaced=True)
POD_METRICS = Resource("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", namespaced=True)
"""metrics-server's pod usage (no watch: read once per ``usage_interval``)."""
SELF_SUBJECT_ACCESS_REVIEW = Resource(
    "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False
)
SELF_SUBJECT_RULES_REVIEW = Resource(
    "authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False
)
SELF_SUBJECT_REVIEW = Resource(
    "authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False
)


def by_kind(kind: str) -> Resource:
    """The fixed-version resource of ``kind`` (``RayCluster``, ``ClusterTrainingRuntime``): what
    a workload kind names in ``watched_with`` and ``Environment.referenced``."""
    for resource in (RAY_CLUSTER, CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME, POD, SECRET, EVENT):
        if resource.kind == kind:
            return resource
    raise KeyError(f"no resource of kind {kind!r}")
