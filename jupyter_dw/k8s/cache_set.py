"""The session's set of watch caches: which resources to watch given what discovery serves
and the access reviews allow, their indexes, the listeners bound to every cache (also to
caches started later), waiting for a cache's first sync, and each cache's health (one
stopped by a revoked permission stays listed as ``stale``, naming the permission)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_dw.domain.freshness import STALE, Freshness
from jupyter_dw.domain.job_kind import JobKind
from jupyter_dw.names import JOB_UID_LABEL, RAY_CLUSTER_LABEL

from ..domain.errors import DWError
from .access import AccessResult, Permission
from .client import KubeApi
from .discovery import Discovery
from .errors import KubeConfigError, KubeForbidden, KubeUnauthorized, NotReady
from .projection import Projection, slim, slim_pod
from .resources import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    COHORT,
    EVENT,
    JOB_RESOURCES,
    LOCAL_QUEUE,
    MULTIKUEUE_CLUSTER,
    MULTIKUEUE_CONFIG,
    POD,
    RAY_CLUSTER,
    RESOURCE_FLAVOR,
    WORKLOAD,
    WORKLOAD_PRIORITY_CLASS,
    Resource,
    ResourceKind,
)
from .watch_cache import (
    ApiListWatch,
    Backoff,
    IndexFunc,
    InterruptionListener,
    Object,
    WatchCache,
    label_index,
    uid_index,
)

log = logging.getLogger(__name__)

SessionListener = Callable[[str, str, Object], None]
"""Called with ``(plural, event_type, object)`` for every change in any cache."""

NAMESPACED_KINDS = (LOCAL_QUEUE, WORKLOAD)
MULTIKUEUE_KINDS = (ADMISSION_CHECK, MULTIKUEUE_CONFIG, MULTIKUEUE_CLUSTER)
"""What tells which ClusterQueues dispatch to worker clusters, and to which (optional: a
Workload alone still says where it went)."""
CLUSTER_KINDS = (CLUSTER_QUEUE, COHORT, RESOURCE_FLAVOR, WORKLOAD_PRIORITY_CLASS, *MULTIKUEUE_KINDS)

Kind = ResourceKind | Resource
"""A resource as the caches and access checks know it: only ``group`` and ``plural`` count."""

BY_JOB_UID = "job-uid"
"""Workload cache index: the ``kueue.x-k8s.io/job-uid`` label (the job's ``metadata.uid``)."""
BY_UID = "uid"
"""RayCluster cache index: ``metadata.uid``."""
BY_RAY_CLUSTER = "ray-cluster"
"""Pod cache index: the ``ray.io/cluster`` label (the RayCluster's name)."""
BY_INVOLVED_UID = "involved-uid"
"""Event cache index: ``involvedObject.uid`` (the RayCluster's ``metadata.uid``)."""
BY_JOB = "job"
"""A kind's pod cache index (:func:`pods_cache`): its ``pod_label`` (the job's name)."""


def pods_cache(kind: JobKind[Any, Any]) -> str:
    """The name of the cache of a workload kind's own pods (``trainjob-pods``), for a kind
    whose description says the label they carry (:attr:`JobKind.pod_label`): a watch of
    pods of its own, by that label (the ``pods`` cache holds Ray's only); its listeners hear
    changes under this name, not ``pods``."""
    return f"{kind.word}-pods"


POD_KINDS: tuple[tuple[JobKind[Any, Any], Resource], ...] = tuple(
    (kind, resource) for kind, resource in JOB_RESOURCES if kind.pod_label
)
"""The workload kinds whose pods are their own and found by a label, with their resources."""


def _involved_uid(obj: Object) -> list[str]:
    uid = (obj.get("involvedObject") or {}).get("uid")
    return [str(uid)] if uid else []


_INDEXES: dict[str, dict[str, IndexFunc]] = {
    WORKLOAD.plural: {BY_JOB_UID: label_index(JOB_UID_LABEL)},
    RAY_CLUSTER.plural: {BY_UID: uid_index},
    POD.plural: {BY_RAY_CLUSTER: label_index(RAY_CLUSTER_LABEL)},
    EVENT.plural: {BY_INVOLVED_UID: _involved_uid},
    **{pods_cache(kind): {BY_JOB: label_index(str(kind.pod_label))} for kind, _ in POD_KINDS},
}
_PROJECTIONS: dict[str, Projection] = {
    # Only a pod's metadata and status are read; every other cache keeps all but
    # managedFields (see .projection and tests/unit/test_projection.py).
    POD.plural: slim_pod,
    **{pods_cache(kind): slim_pod for kind, _ in POD_KINDS},
}
_FIELD_SELECTORS: dict[str, str] = {
    # KubeRay's warnings about RayClusters only (InvalidRayClusterSpec, ...): a namespace's
    # events are many, these are few.
    EVENT.plural: f"involvedObject.kind={RAY_CLUSTER.kind},type=Warning",
}

Wanted = dict[str, tuple[Resource, str | None]]
"""``{name: (resource, label selector)}`` of the caches to have: a cache's name is its
resource's plural, but for a kind's own pods' (:func:`pods_cache`)."""


def wanted_caches(discovery: Discovery, denied: Callable[[Kind], bool]) -> Wanted:
    """Every cache that ``discovery`` serves and the access reviews allow (``denied``)."""
    wanted: Wanted = {}
    for kind in (*NAMESPACED_KINDS, *CLUSTER_KINDS):
        resource = discovery.kueue(kind)
        if resource is not None and not denied(kind):
            wanted[resource.plural] = (resource, None)
    if discovery.kuberay_installed:
        if not denied(RAY_CLUSTER):
            wanted[RAY_CLUSTER.plural] = (RAY_CLUSTER, None)
        if not denied(POD):
            # Only Ray's pods: the namespace may hold many others (the workbench itself).
            wanted[POD.plural] = (POD, RAY_CLUSTER_LABEL)
        if not denied(EVENT):
            wanted[EVENT.plural] = (EVENT, None)  # field selector: _FIELD_SELECTORS
    for job_kind, job_resource in JOB_RESOURCES:
        if discovery.serves(job_kind) and not denied(job_resource):
            wanted[job_resource.plural] = (job_resource, None)
            if job_kind.pod_label and not denied(POD):
                # What its jobs' pods hold and use (core/usage.py): those pods only.
                wanted[pods_cache(job_kind)] = (POD, job_kind.pod_label)
    return wanted


def served(discovery: Discovery | None, resource: Resource) -> bool:
    """Whether ``resource`` (at this version) is served."""
    if discovery is None:
        return False
    for job_kind, job_resource in JOB_RESOURCES:
        if resource == job_resource:
            return discovery.serves(job_kind)
    if resource.group == RAY_CLUSTER.group or resource.plural in (POD.plural, EVENT.plural):
        return discovery.kuberay_installed
    kind = ResourceKind(resource.group, resource.plural, resource.kind, resource.namespaced)
    return discovery.kueue(kind) == resource


@dataclass(eq=False)
class _Registration:
    """One :meth:`CacheSet.add_listener` call and how to unbind it from every cache."""

    listener: SessionListener
    removers: list[Callable[[], None]] = field(default_factory=list)


class CacheSet:
    """The watch caches of one connection. ``lock`` is the session's: changing the set and
    binding listeners happen atomically with the session's own state. Listeners outlive a
    :meth:`reset` (a session stopped and started again keeps them). ``on_interrupted`` is
    given to every cache (see :class:`~.watch_cache.WatchCache`)."""

    def __init__(
        self,
        lock: threading.RLock,
        on_health: Callable[[], None],
        *,
        backoff: Backoff | None,
        idle_timeout: float,
        lazy: bool,
        on_interrupted: InterruptionListener | None = None,
    ) -> None:
        self._lock = lock
        self._on_health = on_health
        self._on_interrupted = on_interrupted
        self._backoff = backoff
        self._idle_timeout = idle_timeout
        self._lazy = lazy
        self._listeners: list[_Registration] = []
        # What each stopped cache held, by plural, until a cache of it is made again: the
        # listeners saw those objects, so the new cache's first list must tell them what
        # went away meanwhile (a permission revoked and granted back; after an API server
        # restart its authorizer refuses everything for a moment). Kept across :meth:`reset`: a
        # session started again keeps its listeners.
        self._inherited: dict[str, dict[tuple[str, str], Object]] = {}
        self.reset()

    def reset(self) -> None:
        self.caches: dict[str, WatchCache] = {}
        self._specs: Wanted = {}
        self.revoked: dict[str, Freshness] = {}

    def update(
        self,
        api: KubeApi,
        namespace: str | None,
        wanted: Wanted,
        is_served: Callable[[Resource], bool],
        access: Mapping[Permission, AccessResult],
    ) -> tuple[list[WatchCache], list[WatchCache], bool]:
        """Make the set match ``wanted`` (call with the lock held): create the newly allowed
        caches, drop those no longer allowed or served, replace one whose served version
        changed. Returns ``(created, dropped, revoked changed)``; the caller starts and stops
        them outside the lock."""
        started: list[WatchCache] = []
        stopped: list[WatchCache] = []
        revoked_before = dict(self.revoked)
        for plural in [p for p in self.caches if self._specs.get(p) != wanted.get(p)]:
            cache = self.caches.pop(plural)
            stopped.append(cache)
            self._inherited[plural] = cache.objects()
            resource, _ = self._specs.pop(plural)
            if plural not in wanted and cache.started and is_served(resource):
                # Still served, no longer allowed: what the UI showed of it is now old.
                self.revoked[plural] = Freshness().moved_to(
                    STALE, _revocation_reason(resource, access), time.time()
                )
        for plural in wanted:
            self.revoked.pop(plural, None)
        for plural, (resource, selector) in wanted.items():
            if plural in self.caches:
                continue
            cache = WatchCache(
                ApiListWatch(
                    api,
                    resource,
                    namespace if resource.namespaced else None,
                    label_selector=selector,
                    field_selector=_FIELD_SELECTORS.get(plural),
                    idle_timeout=self._idle_timeout,
                ),
                backoff=self._backoff,
                indexes=_INDEXES.get(plural),
                on_health=lambda _health: self._on_health(),
                projection=_PROJECTIONS.get(plural, slim),
                inherited=self._inherited.pop(plural, None),
                on_interrupted=self._on_interrupted,
            )
            for registration in self._listeners:
                registration.removers.append(
                    cache.add_listener(_bind(registration.listener, plural))
                )
            self.caches[plural] = cache
            self._specs[plural] = (resource, selector)
            started.append(cache)
        return started, stopped, revoked_before != self.revoked

    def watching(self, plural: str) -> WatchCache | None:
        """The cache of ``plural``, started if it was not yet (lazy watches: a kernel opens
        only the watches that what it shows needs)."""
        cache = self.caches.get(plural)
        if cache is not None and self._lazy:
            cache.start()  # idempotent
        return cache

    def synced(
        self,
        kind: Kind,
        deadline: float,
        forbidden: Callable[[Kind], KubeForbidden],
        required: bool = False,
        request_timeout: float = 0.0,
    ) -> WatchCache | None:
        """The cache of ``kind`` once synced (by ``deadline``); None when it is not read and
        not ``required`` (``forbidden(kind)`` is raised when it is)."""
        cache = self.watching(kind.plural)
        if cache is None:
            if required:
                raise forbidden(kind)
            return None
        if cache.wait_synced(max(0.0, deadline - time.monotonic()), give_up=_permanent):
            return cache
        error = cache.last_error
        if not required and isinstance(error, KubeForbidden):
            # Readable at start, forbidden now (RBAC changed): degrade like never readable.
            log.info("%s no longer readable: %s", kind.qualified, error)
            return None
        if isinstance(error, DWError):
            raise error
        raise NotReady(
            f"The {kind.qualified} cache has not synced yet",
            str(error) if error else f"first list still running after {request_timeout:g}s",
            "Try again in a moment.",
        )

    def health(self) -> dict[str, Freshness]:
        """Each open cache's health, and each cache stopped by a revoked permission."""
        with self._lock:
            found = {plural: c.health for plural, c in self.caches.items() if c.started}
            found.update(self.revoked)
            return found

    def add_listener(self, listener: SessionListener) -> Callable[[], None]:
        """Call ``listener(plural, event_type, obj)`` on every cache change (on the cache's
        thread). Applies to caches started later too. Returns a remover."""
        registration = _Registration(listener)
        with self._lock:
            self._listeners.append(registration)
            for plural, cache in self.caches.items():
                registration.removers.append(cache.add_listener(_bind(listener, plural)))

        def remove() -> None:
            # Also unbinds it from caches started after it was added (a later start).
            with self._lock:
                if registration in self._listeners:
                    self._listeners.remove(registration)
                removers, registration.removers = registration.removers, []
            for remover in removers:
                remover()

        return remove

    def stop_all(self) -> None:
        for plural, cache in self.caches.items():
            cache.stop()
            self._inherited[plural] = cache.objects()


def _revocation_reason(resource: Resource, access: Mapping[Permission, AccessResult]) -> str:
    denied = [
        p.name
        for p, r in access.items()
        if (p.group, p.resource) == (resource.group, resource.plural)
        and p.verb in ("list", "watch")
        and not r.allowed
    ]
    what = " and ".join(denied) or f"list {resource.qualified}"
    return f"forbidden: this identity may no longer {what}"


def _permanent(error: BaseException) -> bool:
    """Failures that retrying will not fix soon: stop waiting for a sync on them."""
    return isinstance(error, KubeForbidden | KubeUnauthorized | KubeConfigError)


def _bind(listener: SessionListener, plural: str) -> Callable[[str, Object], None]:
    return lambda event_type, obj: listener(plural, event_type, obj)
