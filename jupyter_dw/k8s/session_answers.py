"""The session's answers: what the watch caches hold, related through their indexes
(a RayCluster's Workloads, pods and KubeRay's warnings), what the visibility API says of
positions, a RayCluster's Ray token, and the writes whose next read must already show them
(create and delete wait briefly for their own watch event). Blocking; async callers run it
in an executor. :class:`~jupyter_dw.k8s.session.KubeSession` is the class callers use.
"""

from __future__ import annotations

import time
from typing import Any

from jupyter_dw.domain.ray_auth import (
    RayToken,
    TokenUnavailable,
    ray_auth_of,
    token_from_secret,
    token_secret_name,
)
from jupyter_dw.domain.validation import dns1123_subdomain_error

from . import ray
from .cache_set import BY_INVOLVED_UID, BY_JOB_UID, BY_RAY_CLUSTER, BY_UID
from .errors import InvalidRequest, KubeApiError, KubeForbidden, KubeNotFound
from .queue_state import QueueState
from .resources import (
    CLUSTER_QUEUE,
    COHORT,
    EVENT,
    LOCAL_QUEUE,
    PENDING_WORKLOADS_SUBRESOURCE,
    POD,
    RAY_CLUSTER,
    RAY_JOB,
    RESOURCE_FLAVOR,
    SECRET,
    VISIBILITY_CLUSTER_QUEUE,
    VISIBILITY_LOCAL_QUEUE,
    WORKLOAD,
    WORKLOAD_PRIORITY_CLASS,
    Resource,
)
from .session_state import SessionState
from .watch_cache import Object

CACHE_CATCH_UP_SECONDS = 5.0
"""How long a create waits for its own watch event before answering anyway."""


class SessionAnswers(SessionState):
    """Reads from the caches and the writes that keep them current (see the module)."""

    # -- answers -------------------------------------------------------------------------

    def queue_state(self, timeout: float | None = None, *, naming: str | None = None) -> QueueState:
        """The parsed LocalQueues, ClusterQueues and Cohorts from the caches (what the queue
        service builds its answers from, :mod:`jupyter_dw.core.queues`).

        Waits up to ``timeout`` (the request timeout) for the caches to be ready, and raises
        what :meth:`wait_ready` raises. Parsed once per change: until a cache changes, every
        caller gets the same (immutable) :class:`QueueState`.

        ``naming``: a LocalQueue a request names. When the cache does not hold it, one
        ``get`` asks whether it exists (made a moment ago, its watch event still on the way:
        a queue made and used at once must not be refused), and the cache is waited for.
        """
        state = self._queue_state(timeout)
        if naming is None or any(lq.name == naming for lq in state.local_queues):
            return state
        if dns1123_subdomain_error(naming) is not None:
            return state  # no object can have this name: the caller's check says why
        resource = self.discovery.kueue(LOCAL_QUEUE)
        if resource is None:
            return state
        try:
            found = self.api.get(resource.path(self.namespace, naming))
        except (KubeForbidden, InvalidRequest):
            return state  # not ours to read, or no name at all: the caller's check answers
        except KubeApiError as err:
            if err.api_status != 404:
                raise
            return state  # there is none: the caller's check says so
        self._catch_up(LOCAL_QUEUE.plural, naming, str(found["metadata"]["resourceVersion"]))
        return self._queue_state(timeout)

    def _queue_state(self, timeout: float | None) -> QueueState:
        deadline = time.monotonic() + (self.request_timeout if timeout is None else timeout)
        self.wait_ready(max(0.0, deadline - time.monotonic()))
        self.discovery.require_kueue()
        # Waiting and raising stay per call: only parsing is shared between calls.
        caches = (
            self._synced_cache(LOCAL_QUEUE, deadline, required=True),
            self._synced_cache(CLUSTER_QUEUE, deadline),
            self._synced_cache(COHORT, deadline),
            self._synced_cache(RESOURCE_FLAVOR, deadline),
            self._synced_cache(WORKLOAD_PRIORITY_CLASS, deadline),
        )
        cohorts_served = self.discovery.cohort_version is not None
        return self._queue_memo.state(cohorts_served, caches)

    # -- Ray clusters --------------------------------------------------------------------

    def ray_clusters(self, timeout: float | None = None) -> list[Object]:
        """The namespace's RayClusters from the watch cache (waits for its first sync).

        Raises ``NotInstalled`` without KubeRay and ``KubeForbidden`` when RayClusters cannot
        be listed and watched. Also waits (within the same ``timeout``) for the Workload, pod
        and event caches, so :meth:`slices_of`, :meth:`ray_pods` and
        :meth:`kuberay_warnings` answer from a full view.
        """
        deadline = time.monotonic() + (self.request_timeout if timeout is None else timeout)
        self.wait_ready(max(0.0, deadline - time.monotonic()))
        self.discovery.require_kuberay()
        cache = self._synced_cache(RAY_CLUSTER, deadline, required=True)
        assert cache is not None
        self._synced_cache(WORKLOAD, deadline)
        self._synced_cache(POD, deadline)
        self._synced_cache(EVENT, deadline)  # KubeRay's refusals: a stalled state at once
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
            return ray.get_raycluster(self.api, self.namespace, name)
        except KubeForbidden as err:
            # May list and watch but not get: the synced cache's answer stands.
            raise ray.not_found(self.namespace, name) from err

    def find_ray_cluster(self, name: str) -> Object | None:
        """RayCluster ``name``, or None when there is none: from a synced cache, else one
        ``get`` (a miss in the cache may be a create not seen yet). Needs only ``get
        rayclusters`` (the dashboard proxy's least privilege; a 403 names that). Blocking."""
        self.wait_ready()
        self.discovery.require_kuberay()
        cache = self._cache_set.watching(RAY_CLUSTER.plural)
        if cache is not None and cache.synced:
            cached = cache.get(name, self.namespace)
            if cached is not None:
                return cached
        try:
            return ray.get_raycluster(self.api, self.namespace, name)
        except KubeNotFound:
            return None

    def cached_ray_cluster(self, name: str) -> Object | None:
        """RayCluster ``name`` as the cache holds it now (no waiting, no I/O)."""
        cache = self._cache_set.watching(RAY_CLUSTER.plural)
        return cache.get(name, self._namespace or "") if cache is not None else None

    def ray_cluster_by_uid(self, uid: str) -> Object | None:
        """The cached RayCluster with ``metadata.uid`` ``uid`` (no waiting, no I/O)."""
        cache = self._cache_set.watching(RAY_CLUSTER.plural)
        found = cache.by_index(BY_UID, uid) if cache is not None else []
        return found[0] if found else None

    def slices_of(self, raycluster: Object) -> list[Object]:
        """Every Workload Kueue made for ``raycluster`` (an elastic cluster's chain of slices,
        replaced ones included), from the Workload cache's index; empty when there is none or
        Workloads are not readable."""
        uid = (raycluster.get("metadata") or {}).get("uid")
        return self.workloads_of_job(str(uid)) if uid else []

    def workloads_of_job(self, job_uid: str) -> list[Object]:
        """The cached Workloads of the job whose ``metadata.uid`` is ``job_uid`` (Kueue's
        ``kueue.x-k8s.io/job-uid`` label; no waiting, no I/O; empty when not readable)."""
        cache = self._cache_set.watching(WORKLOAD.plural)
        return cache.by_index(BY_JOB_UID, job_uid) if cache is not None and job_uid else []

    def workloads(self, timeout: float | None = None) -> list[Object]:
        """Every Workload of the namespace from the watch cache (waits for its first sync).

        Raises ``NotInstalled`` without Kueue and ``KubeForbidden`` when Workloads cannot be
        listed and watched."""
        deadline = time.monotonic() + (self.request_timeout if timeout is None else timeout)
        self.wait_ready(max(0.0, deadline - time.monotonic()))
        self.discovery.require_kueue()
        cache = self._synced_cache(WORKLOAD, deadline, required=True)
        assert cache is not None
        return cache.snapshot()

    def cached_workload(self, name: str) -> Object | None:
        """Workload ``name`` as the cache holds it now (no waiting, no I/O)."""
        cache = self._cache_set.watching(WORKLOAD.plural)
        return cache.get(name, self._namespace or "") if cache is not None else None

    def cached_ray_clusters(self) -> list[Object]:
        """Every RayCluster the cache holds now (no waiting, no I/O; empty when not read)."""
        cache = self._cache_set.watching(RAY_CLUSTER.plural)
        return cache.snapshot() if cache is not None else []

    def patch_raycluster(self, name: str, operations: list[dict[str, Any]]) -> Object:
        """Apply a JSON patch to RayCluster ``name`` (``KubeNotFound`` when absent; a failed
        ``test`` operation is ``KubeRejected``, nothing changed)."""
        self.wait_ready()
        self.discovery.require_kuberay()
        return ray.patch_raycluster(self.api, self.namespace, name, operations)

    def ray_pods(self, name: str) -> list[Object]:
        """The cached pods of RayCluster ``name`` (label ``ray.io/cluster``); empty when pods
        are not readable."""
        cache = self._cache_set.watching(POD.plural)
        return cache.by_index(BY_RAY_CLUSTER, name) if cache is not None else []

    def kuberay_warnings(self, raycluster: Object) -> list[Object]:
        """The cached Warning events about ``raycluster`` (by its UID); empty when events are
        not readable."""
        cache = self._cache_set.watching(EVENT.plural)
        uid = (raycluster.get("metadata") or {}).get("uid")
        return cache.by_index(BY_INVOLVED_UID, str(uid)) if cache is not None and uid else []

    def ray_token(self, raycluster: Object) -> RayToken:
        """The Ray token of ``raycluster`` (``authOptions.mode: token``) from the Secret KubeRay
        made for it: one ``get`` (never a list or watch of Secrets), used only when its
        controller owner is this RayCluster's UID. Raises :class:`TokenUnavailable` (no such
        Secret yet, owned by something else, no token in it) or ``KubeForbidden`` naming
        ``get secrets``. Blocking.

        A cluster with Kubernetes-delegated auth (``enableK8sTokenAuth``) has no Secret: Ray
        asks the API server about the caller's own Kubernetes token, so the token is this
        session's bearer token (the workbench's identity, whose RBAC Ray then checks)."""
        name = str((raycluster.get("metadata") or {}).get("name") or "")
        if ray_auth_of(raycluster).mode == "k8s":
            own = self.api.bearer_token()
            if own is None:
                raise TokenUnavailable(
                    "no_bearer_token",
                    f"RayCluster {name} delegates Ray authentication to Kubernetes, which "
                    "checks a bearer token; this server authenticates to Kubernetes otherwise "
                    "(a client certificate)",
                )
            return RayToken(own)
        secret_name = token_secret_name(name)
        try:
            secret = self.api.get(SECRET.path(self.namespace, secret_name))
        except KubeApiError as err:
            if err.api_status != 404:
                raise
            raise TokenUnavailable(
                "secret_missing",
                f"no Secret {secret_name} with RayCluster {name}'s token yet: KubeRay makes it "
                "when it accepts the cluster",
            ) from None
        return token_from_secret(secret, raycluster)

    @property
    def positions_visible(self) -> bool:
        """Whether Kueue's visibility API is served and this identity may read it."""
        return bool(
            self.ready
            and self.discovery.visibility_version
            and self.allowed("get", VISIBILITY_LOCAL_QUEUE, PENDING_WORKLOADS_SUBRESOURCE)
        )

    def pending_workloads(self, local_queue: str) -> list[Object] | None:
        """The pending Workloads of ``local_queue`` with their positions (one visibility API
        call), or None when positions cannot be known (see :func:`ray.pending_workloads`)."""
        if not self.positions_visible:
            return None  # not served, or the start-time access review said no: don't ask
        version = self.discovery.visibility_version
        assert version is not None
        return ray.pending_workloads(self.api, version, self.namespace, local_queue)

    def cluster_queue_pending_workloads(self, cluster_queue: str) -> list[Object] | None:
        """Every pending Workload of ``cluster_queue``, all namespaces (one visibility API
        call), or None when this identity may not ask or Kueue cannot tell."""
        allowed = self.allowed("get", VISIBILITY_CLUSTER_QUEUE, PENDING_WORKLOADS_SUBRESOURCE)
        version = self.discovery.visibility_version if self.ready else None
        if not (version and allowed):
            return None
        return ray.cluster_queue_pending_workloads(self.api, version, cluster_queue)

    def create_raycluster(self, obj: Object) -> Object:
        """Create ``obj`` in the namespace (server-side dry run first): see
        :func:`ray.create_raycluster`. Waits briefly until the watch cache holds it, so the
        next read (``GET clusters``, the events socket) already shows it."""
        self.wait_ready()
        return self._create_cached(self.discovery.require_kuberay(), obj)

    def _create_cached(self, resource: Resource, obj: Object) -> Object:
        created = ray.create_raycluster(self.api, self.namespace, obj, resource)
        cache = self._caches.get(resource.plural)
        name = str((created.get("metadata") or {}).get("name") or "")
        if cache is not None and cache.started:
            cache.wait_until(
                lambda _: cache.get(name, self.namespace) is not None, CACHE_CATCH_UP_SECONDS
            )
        return created

    # -- RayJobs ---------------------------------------------------------------------------

    def ray_jobs(self, timeout: float | None = None) -> list[Object]:
        """The namespace's RayJobs from the watch cache (waits for its first sync, and for the
        RayCluster and Workload caches, so a job's cluster and Workload answer too).

        Raises ``NotInstalled`` without KubeRay's RayJob CRD and ``KubeForbidden`` when
        RayJobs cannot be listed and watched."""
        deadline = time.monotonic() + (self.request_timeout if timeout is None else timeout)
        self.wait_ready(max(0.0, deadline - time.monotonic()))
        self.discovery.require_rayjobs()
        cache = self._synced_cache(RAY_JOB, deadline, required=True)
        assert cache is not None
        self._synced_cache(RAY_CLUSTER, deadline)
        self._synced_cache(WORKLOAD, deadline)
        return cache.snapshot()

    def ray_job(self, name: str, timeout: float | None = None) -> Object:
        """One RayJob: from the cache, else (not seen yet) from the API server. Raises
        ``KubeNotFound`` when it does not exist."""
        self.ray_jobs(timeout)
        cached = self.cached_ray_job(name)
        if cached is not None:
            return cached
        try:
            return ray.get_raycluster(self.api, self.namespace, name, RAY_JOB)
        except KubeForbidden as err:
            raise ray.not_found(self.namespace, name, RAY_JOB) from err

    def cached_ray_job(self, name: str) -> Object | None:
        """RayJob ``name`` as the cache holds it now (no waiting, no I/O)."""
        cache = self._cache_set.watching(RAY_JOB.plural)
        return cache.get(name, self._namespace or "") if cache is not None else None

    def create_rayjob(self, obj: Object) -> Object:
        """Create RayJob ``obj`` (dry run first, idempotency key honoured, like
        :meth:`create_raycluster`); waits briefly for the cache to hold it."""
        self.wait_ready()
        return self._create_cached(self.discovery.require_rayjobs(), obj)

    def delete_rayjob(self, name: str) -> Object:
        """Delete RayJob ``name`` (background propagation: its RayCluster, submitter Job and
        Workload follow). Raises ``KubeNotFound`` when absent."""
        self.wait_ready()
        return self.delete_object(self.discovery.require_rayjobs(), name)

    def delete_object(self, resource: Resource, name: str) -> Object:
        """Delete ``name`` of ``resource`` in the namespace (background propagation; its
        owned objects follow). Waits briefly until its watch cache shows the deletion (gone,
        or marked for deletion while finalizers run), so the next read does not show it as
        it was. Raises ``KubeNotFound`` when absent."""
        answer = ray.delete_raycluster(self.api, self.namespace, name, resource)
        cache = self._caches.get(resource.plural)
        if cache is not None and cache.started:

            def shown(_: object) -> bool:
                held = cache.get(name, self.namespace)
                return held is None or bool((held.get("metadata") or {}).get("deletionTimestamp"))

            cache.wait_until(shown, CACHE_CATCH_UP_SECONDS)
        return answer

    # -- any watched job kind (TrainJobs: jupyter_dw.k8s.trainer) ---------------------------

    def watched_jobs(self, resource: Resource, timeout: float | None = None) -> list[Object]:
        """The namespace's ``resource`` objects from their watch cache (waits for its first
        sync and the Workload cache's). ``KubeForbidden`` names the list/watch missing; the
        caller checks that the resource is served."""
        deadline = time.monotonic() + (self.request_timeout if timeout is None else timeout)
        self.wait_ready(max(0.0, deadline - time.monotonic()))
        cache = self._synced_cache(resource, deadline, required=True)
        assert cache is not None
        self._synced_cache(WORKLOAD, deadline)
        return cache.snapshot()

    def cached_job(self, resource: Resource, name: str) -> Object | None:
        """``resource`` object ``name`` as its cache holds it now (no waiting, no I/O)."""
        cache = self._cache_set.watching(resource.plural)
        return cache.get(name, self._namespace or "") if cache is not None else None

    def create_job(self, resource: Resource, obj: Object) -> Object:
        """Create ``obj`` of ``resource`` (dry run first, idempotency key honoured, like
        :meth:`create_raycluster`); waits briefly for its cache to hold it."""
        self.wait_ready()
        return self._create_cached(resource, obj)

    def wait_for_ray_cluster(self, name: str, resource_version: str) -> None:
        """Wait briefly until the RayCluster cache holds ``name`` at ``resource_version`` or
        later (a write's own watch event), so the next read shows the write."""
        self._catch_up(RAY_CLUSTER.plural, name, resource_version)

    def _catch_up(self, plural: str, name: str, resource_version: str) -> None:
        """Wait briefly until the cache of ``plural`` holds ``name`` at ``resource_version``
        or later (an object the API server already has, which the watch has yet to bring)."""
        cache = self._caches.get(plural)
        if cache is None or not cache.started:
            return

        def caught_up(_: object) -> bool:
            held = cache.get(name, self.namespace)
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

    def delete_raycluster(self, name: str) -> Object:
        """Delete RayCluster ``name`` (background propagation: its Workload, pods and Services
        go with it by owner references). Raises ``KubeNotFound`` when absent."""
        self.wait_ready()
        self.discovery.require_kuberay()
        return self.delete_object(RAY_CLUSTER, name)
