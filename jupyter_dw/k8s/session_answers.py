"""The reads and writes a :class:`~jupyter_dw.k8s.session.KubeSession` answers, over its
:class:`~jupyter_dw.k8s.session_state.SessionState`: the caches' objects, one ``get``, the
visibility and metrics APIs' calls, and writes that wait for their own watch event. No domain
rule: the queries over these reads are in ``jupyter_dw.core``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from . import kuberay, visibility, workload_writes
from .cache_set import Kind
from .errors import KubeForbidden, KubeNotFound
from .events_write import record_event
from .metrics import MetricsRead, read_pod_metrics
from .metrics import forbidden as metrics_forbidden
from .resources import (
    EVENT,
    PENDING_WORKLOADS_SUBRESOURCE,
    POD,
    POD_METRICS,
    RAY_CLUSTER,
    VISIBILITY_CLUSTER_QUEUE,
    VISIBILITY_LOCAL_QUEUE,
    WORKLOAD,
    Resource,
)
from .session_state import SessionState
from .watch_cache import Object


class WaitReady(Protocol):
    """The session's ``wait_ready``: blocks until started, starting it if need be."""

    def __call__(self, timeout: float | None = None) -> None: ...


CACHE_CATCH_UP_SECONDS = 5.0
"""How long a create waits for its own watch event before answering anyway."""


class SessionAnswers:
    """Reads from the caches and the writes that keep them current (see the module), over
    the session's state; ``wait_ready`` is the session's (it starts the session if need be),
    ``kueue_answered`` is called when a visibility API read got Kueue's answer (Kueue's
    process serves it: the session then needs no probe to know Kueue is up)."""

    def __init__(
        self,
        state: SessionState,
        wait_ready: WaitReady,
        kueue_answered: Callable[[], None] = lambda: None,
    ) -> None:
        self._state = state
        self._wait_ready = wait_ready
        self._kueue_answered = kueue_answered

    # -- generic reads ---------------------------------------------------------------------

    def indexed(self, kind: Kind | str, index: str, key: str) -> list[Object]:
        """The objects of ``kind`` (or of the cache of that name: a kind's own pods,
        ``cache_set``'s ``pods_cache``) that the cache's ``index`` maps ``key`` to (the indexes
        are ``cache_set``'s ``BY_*``), as the cache holds them now: no waiting, no I/O; empty
        when ``kind`` is not readable, or ``key`` is empty."""
        cache = self._state.cache_set.watching(kind if isinstance(kind, str) else kind.plural)
        return cache.by_index(index, key) if cache is not None and key else []

    def get_object(self, resource: Resource, name: str) -> Object:
        """One ``get`` of ``name`` of ``resource`` in the namespace, from the API server (for
        what no cache holds, or holds late). Raises what the call raises (``KubeNotFound``,
        ``KubeForbidden``, ...)."""
        return self._state.api.get(resource.path(self._state.namespace, name))

    # -- Ray clusters --------------------------------------------------------------------

    def ray_clusters(self, timeout: float | None = None) -> list[Object]:
        """The namespace's RayClusters from the watch cache (waits for its first sync).

        Raises ``NotInstalled`` without KubeRay and ``KubeForbidden`` when RayClusters cannot
        be listed and watched. Also waits (within the same ``timeout``) for the Workload, pod
        and event caches, so a cluster's Workloads, pods and KubeRay's warnings
        (:mod:`jupyter_dw.core.cluster_objects`) answer from a full view.
        """
        deadline = time.monotonic() + (self._state.request_timeout if timeout is None else timeout)
        self._wait_ready(max(0.0, deadline - time.monotonic()))
        self._state.discovery.require_kuberay()
        cache = self._state.synced_cache(RAY_CLUSTER, deadline, required=True)
        assert cache is not None
        self._state.synced_cache(WORKLOAD, deadline)
        self._state.synced_cache(POD, deadline)
        self._state.synced_cache(EVENT, deadline)  # KubeRay's refusals: a stalled state at once
        return cache.snapshot()

    def ray_cluster(self, name: str, timeout: float | None = None) -> Object:
        """One RayCluster: from the cache, else (not seen yet) from the API server.

        Raises ``KubeNotFound`` when it does not exist.
        """
        self.ray_clusters(timeout)  # waits for the sync, raises what listing would
        cached = self.cached_ray_cluster(name)
        if cached is not None:
            return cached
        # The cache may lag a create made a moment ago: ask before saying "not found".
        try:
            return kuberay.get_raycluster(self._state.api, self._state.namespace, name)
        except KubeForbidden as err:
            # May list and watch but not get: the synced cache's answer stands.
            raise kuberay.not_found(self._state.namespace, name) from err

    def find_ray_cluster(self, name: str) -> Object | None:
        """RayCluster ``name``, or None when there is none: from a synced cache, else one
        ``get`` (a miss in the cache may be a create not seen yet). Needs only ``get
        rayclusters`` (the dashboard proxy's least privilege; a 403 names that). Blocking."""
        self._wait_ready()
        self._state.discovery.require_kuberay()
        cache = self._state.cache_set.watching(RAY_CLUSTER.plural)
        if cache is not None and cache.synced:
            cached = cache.get(name, self._state.namespace)
            if cached is not None:
                return cached
        try:
            return kuberay.get_raycluster(self._state.api, self._state.namespace, name)
        except KubeNotFound:
            return None

    def cached_ray_cluster(self, name: str) -> Object | None:
        """RayCluster ``name`` as the cache holds it now (no waiting, no I/O)."""
        cache = self._state.cache_set.watching(RAY_CLUSTER.plural)
        return cache.get(name, self._state.namespace_or_empty) if cache is not None else None

    def workloads(self, timeout: float | None = None) -> list[Object]:
        """Every Workload of the namespace from the watch cache (waits for its first sync).

        Raises ``NotInstalled`` without Kueue and ``KubeForbidden`` when Workloads cannot be
        listed and watched."""
        deadline = time.monotonic() + (self._state.request_timeout if timeout is None else timeout)
        self._wait_ready(max(0.0, deadline - time.monotonic()))
        self._state.discovery.require_kueue()
        cache = self._state.synced_cache(WORKLOAD, deadline, required=True)
        assert cache is not None
        return cache.snapshot()

    def cached_workload(self, name: str) -> Object | None:
        """Workload ``name`` as the cache holds it now (no waiting, no I/O)."""
        cache = self._state.cache_set.watching(WORKLOAD.plural)
        return cache.get(name, self._state.namespace_or_empty) if cache is not None else None

    def cached_ray_clusters(self) -> list[Object]:
        """Every RayCluster the cache holds now (no waiting, no I/O; empty when not read)."""
        cache = self._state.cache_set.watching(RAY_CLUSTER.plural)
        return cache.snapshot() if cache is not None else []

    def patch_raycluster(self, name: str, operations: list[dict[str, Any]]) -> Object:
        """Apply a JSON patch to RayCluster ``name`` (``KubeNotFound`` when absent; a failed
        ``test`` operation is ``KubeRejected``, nothing changed)."""
        self._wait_ready()
        self._state.discovery.require_kuberay()
        return kuberay.patch_raycluster(self._state.api, self._state.namespace, name, operations)

    def annotate_raycluster(
        self, name: str, annotations: dict[str, str | None], dry_run: bool = False
    ) -> Object:
        """Set (a string) or remove (None) annotations of RayCluster ``name`` (one merge
        patch); a write waits briefly for its own watch event, so the next read shows it."""
        self._wait_ready()
        self._state.discovery.require_kuberay()
        patched = kuberay.annotate_raycluster(
            self._state.api, self._state.namespace, name, annotations, dry_run
        )
        if not dry_run:
            self.catch_up(RAY_CLUSTER.plural, name, _version(patched))
        return patched

    def set_workload_active(self, name: str, active: bool, dry_run: bool = False) -> Object:
        """Deactivate (``active`` False) or reactivate Workload ``name``: see
        :func:`workload_writes.set_workload_active`. A write waits briefly for its own watch
        event, so the next read shows it."""
        self._wait_ready()
        self._state.discovery.require_kueue()
        resource = self._state.discovery.kueue(WORKLOAD)
        assert resource is not None  # require_kueue: Kueue is served
        patched = workload_writes.set_workload_active(
            self._state.api, resource, self._state.namespace, name, active, dry_run
        )
        if not dry_run:
            self.catch_up(WORKLOAD.plural, name, _version(patched))
        return patched

    @property
    def positions_visible(self) -> bool:
        """Whether Kueue's visibility API is served and this identity may read it."""
        return bool(
            self._state.ready
            and self._state.discovery.visibility_version
            and self._state.allowed("get", VISIBILITY_LOCAL_QUEUE, PENDING_WORKLOADS_SUBRESOURCE)
        )

    def pending_workloads(self, local_queue: str) -> list[Object] | None:
        """The pending Workloads of ``local_queue`` with their positions (one visibility API
        call), or None when positions cannot be known (see :func:`ray.pending_workloads`)."""
        if not self.positions_visible:
            return None  # not served, or the start-time access review said no: don't ask
        version = self._state.discovery.visibility_version
        assert version is not None
        return self._heard(
            visibility.pending_workloads(
                self._state.api, version, self._state.namespace, local_queue
            )
        )

    def pod_metrics(self) -> MetricsRead:
        """Every pod's use in the namespace from the metrics API (one call), or why not (no
        call when the access review said no: it is checked again every refresh)."""
        if self._state.allowed("list", POD_METRICS) is False:
            return metrics_forbidden(self._state.namespace)
        return read_pod_metrics(self._state.api, self._state.namespace)

    def cluster_queue_pending_workloads(self, cluster_queue: str) -> list[Object] | None:
        """Every pending Workload of ``cluster_queue``, all namespaces (one visibility API
        call), or None when this identity may not ask or Kueue cannot tell."""
        allowed = self._state.allowed(
            "get", VISIBILITY_CLUSTER_QUEUE, PENDING_WORKLOADS_SUBRESOURCE
        )
        version = self._state.discovery.visibility_version if self._state.ready else None
        if not (version and allowed):
            return None
        return self._heard(
            visibility.cluster_queue_pending_workloads(self._state.api, version, cluster_queue)
        )

    def _heard(self, answer: list[Object] | None) -> list[Object] | None:
        """``answer``, after telling the session Kueue answered when it did (None: it did
        not, or could not tell)."""
        if answer is not None:
            self._kueue_answered()
        return answer

    def create_raycluster(self, obj: Object) -> Object:
        """Create ``obj`` in the namespace (server-side dry run first): see
        :func:`ray.create_raycluster`. Waits briefly until the watch cache holds it, so the
        next read (``GET clusters``, the events socket) already shows it."""
        self._wait_ready()
        return self._create_cached(self._state.discovery.require_kuberay(), obj)

    def _create_cached(self, resource: Resource, obj: Object) -> Object:
        created = kuberay.create_raycluster(self._state.api, self._state.namespace, obj, resource)
        cache = self._state.caches.get(resource.plural)
        name = str((created.get("metadata") or {}).get("name") or "")
        if cache is not None and cache.started:
            cache.wait_until(
                lambda _: cache.get(name, self._state.namespace) is not None, CACHE_CATCH_UP_SECONDS
            )
        return created

    def delete_object(self, resource: Resource, name: str) -> Object:
        """Delete ``name`` of ``resource`` in the namespace (background propagation; its
        owned objects follow). Waits briefly until its watch cache shows the deletion (gone,
        or marked for deletion while finalizers run), so the next read does not show it as
        it was. Raises ``KubeNotFound`` when absent."""
        answer = kuberay.delete_raycluster(self._state.api, self._state.namespace, name, resource)
        cache = self._state.caches.get(resource.plural)
        if cache is not None and cache.started:

            def shown(_: object) -> bool:
                held = cache.get(name, self._state.namespace)
                return held is None or bool((held.get("metadata") or {}).get("deletionTimestamp"))

            cache.wait_until(shown, CACHE_CATCH_UP_SECONDS)
        return answer

    # -- any workload kind (RayJobs, TrainJobs: jupyter_dw.domain.kinds) --------------------

    def watched_jobs(
        self, resource: Resource, timeout: float | None = None, also: tuple[Resource, ...] = ()
    ) -> list[Object]:
        """The namespace's ``resource`` objects from their watch cache (waits for its first
        sync, the Workload cache's and ``also``'s: a RayJob's RayClusters, so what a job made
        answers too). ``KubeForbidden`` names the list/watch missing; the caller checks that
        the resource is served."""
        deadline = time.monotonic() + (self._state.request_timeout if timeout is None else timeout)
        self._wait_ready(max(0.0, deadline - time.monotonic()))
        cache = self._state.synced_cache(resource, deadline, required=True)
        assert cache is not None
        others: tuple[Kind, ...] = (*also, WORKLOAD)
        for other in others:
            self._state.synced_cache(other, deadline)
        return cache.snapshot()

    def watched_job(
        self,
        resource: Resource,
        name: str,
        timeout: float | None = None,
        also: tuple[Resource, ...] = (),
    ) -> Object:
        """One ``resource`` object: from the cache, else (not seen yet) from the API server.
        ``KubeNotFound`` when it does not exist (also when ``get`` is forbidden: the synced
        cache, which list and watch fill, does not hold it)."""
        self.watched_jobs(resource, timeout, also)
        cached = self.cached_job(resource, name)
        if cached is not None:
            return cached
        try:
            return kuberay.get_raycluster(self._state.api, self._state.namespace, name, resource)
        except KubeForbidden as err:
            raise kuberay.not_found(self._state.namespace, name, resource) from err

    def cached_jobs(self, resource: Resource) -> list[Object]:
        """Every ``resource`` object its cache holds now (no waiting, no I/O; empty when not
        read)."""
        cache = self._state.cache_set.watching(resource.plural)
        return cache.snapshot() if cache is not None else []

    def cached_job(self, resource: Resource, name: str) -> Object | None:
        """``resource`` object ``name`` as its cache holds it now (no waiting, no I/O)."""
        cache = self._state.cache_set.watching(resource.plural)
        return cache.get(name, self._state.namespace_or_empty) if cache is not None else None

    def create_job(self, resource: Resource, obj: Object) -> Object:
        """Create ``obj`` of ``resource`` (dry run first, idempotency key honoured, like
        :meth:`create_raycluster`); waits briefly for its cache to hold it."""
        self._wait_ready()
        return self._create_cached(resource, obj)

    def wait_for_ray_cluster(self, name: str, resource_version: str) -> None:
        """Wait briefly until the RayCluster cache holds ``name`` at ``resource_version`` or
        later (a write's own watch event), so the next read shows the write."""
        self.catch_up(RAY_CLUSTER.plural, name, resource_version)

    def catch_up(self, plural: str, name: str, resource_version: str) -> None:
        """Wait briefly until the cache of ``plural`` holds ``name`` at ``resource_version``
        or later (an object the API server already has, which the watch has yet to bring)."""
        cache = self._state.caches.get(plural)
        if cache is None or not cache.started:
            return

        def caught_up(_: object) -> bool:
            held = cache.get(name, self._state.namespace)
            version = str(((held or {}).get("metadata") or {}).get("resourceVersion") or "")
            if version == resource_version:
                return True
            # Kubernetes says resource versions are opaque; etcd's are integers that grow.
            return (
                version.isdigit()
                and resource_version.isdigit()
                and int(version) > int(resource_version)
            )

        cache.wait_until(caught_up, CACHE_CATCH_UP_SECONDS)

    def record_event(self, involved: Object, reason: str, message: str) -> Object:
        """An Event about ``involved`` in the namespace (needs ``create events``)."""
        self._wait_ready()
        return record_event(self._state.api, self._state.namespace, involved, reason, message)

    def delete_raycluster(self, name: str) -> Object:
        """Delete RayCluster ``name`` (background propagation: its Workload, pods and Services
        go with it by owner references). Raises ``KubeNotFound`` when absent."""
        self._wait_ready()
        self._state.discovery.require_kuberay()
        return self.delete_object(RAY_CLUSTER, name)


def _version(obj: Object) -> str:
    """An object's ``metadata.resourceVersion`` ("" when absent)."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
