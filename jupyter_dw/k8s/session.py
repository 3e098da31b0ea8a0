"""``KubeSession``: the one object every surface shares to see Kueue from this identity.

At start it reads credentials, discovers the APIs, asks who it is and what it may do, and
starts a watch cache per readable resource: the namespace's LocalQueues, Workloads,
RayClusters and Ray pods (label ``ray.io/cluster``), and the cluster's ClusterQueues, Cohorts,
ResourceFlavors and WorkloadPriorityClasses when the identity may read them. A service account
cannot watch its own permissions, so discovery and the access reviews run again every
``refresh_interval`` seconds and at once after a 403, or a 404 for a whole resource, from an
API group we use (:meth:`KubeSession.refresh`): a Role granted or Kueue installed later starts
the caches it allows, a permission revoked stops them, without a restart. Answers
(:meth:`KubeSession.queue_state`, :meth:`KubeSession.ray_clusters`,
:meth:`KubeSession.slices_of`, ...) come from those caches, never from a list per request;
the caches index Workloads by ``kueue.x-k8s.io/job-uid``, RayClusters by UID and pods by
RayCluster, so relating them is a lookup, not a scan. Writes (:meth:`KubeSession.create_raycluster`,
:meth:`KubeSession.delete_raycluster`) and the visibility API's positions go to the API
server. Everything here is thread-based and blocking; async callers run it in an executor.

Watch health (:meth:`KubeSession.watch_health`): each cache's
:class:`~jupyter_dw.domain.freshness.Freshness`; a cache stopped because its permission was
revoked stays listed as ``stale`` naming the permission, until it is granted again. Kueue's
controller is ``stale`` while Kueue does not answer: its visibility API answers 503 (probed
at every re-check, and every ``KUEUE_PROBE_INTERVAL`` seconds while it is down) or a call
failed in one of Kueue's webhooks; the Workloads the caches hold are then Kueue's last word.
Listeners added with :meth:`KubeSession.add_health_listener` hear of every change.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

from jupyter_dw.domain.freshness import LIVE, STALE, Freshness, WatchHealth
from jupyter_dw.domain.kueue_model import (
    ClusterQueueQuota,
    CohortQuota,
    KueueObjectError,
    LocalQueueInfo,
)
from jupyter_dw.domain.priorities import PriorityClass
from jupyter_dw.domain.quota import QuotaTree
from jupyter_dw.domain.ray_auth import (
    RayToken,
    TokenUnavailable,
    ray_auth_of,
    token_from_secret,
    token_secret_name,
)
from jupyter_dw.domain.scheduling import FlavorTraits
from jupyter_dw.domain.validation import dns1123_subdomain_error
from jupyter_dw.names import JOB_UID_LABEL, RAY_CLUSTER_LABEL

from . import ray
from .access import (
    NEEDED_PERMISSIONS,
    AccessResult,
    Identity,
    Permission,
    check_access,
    who_am_i,
)
from .auth import Credentials, load_credentials
from .client import DEFAULT_TIMEOUT, FailedCall, KubeApi
from .discovery import Discovery, discover
from .elastic import NOT_PROBED, ElasticJobs, probe_elastic_jobs
from .errors import (
    InvalidRequest,
    KubeApiError,
    KubeConfigError,
    KubeError,
    KubeForbidden,
    KubeNotFound,
    KubeUnauthorized,
    NotReady,
)
from .projection import Projection, slim, slim_pod
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
    TRAIN_JOB,
    VISIBILITY_CLUSTER_QUEUE,
    VISIBILITY_GROUP,
    VISIBILITY_LOCAL_QUEUE,
    WORKLOAD,
    WORKLOAD_PRIORITY_CLASS,
    Resource,
    ResourceKind,
)
from .watch_cache import (
    DEFAULT_IDLE_TIMEOUT,
    ApiListWatch,
    Backoff,
    IndexFunc,
    Object,
    WatchCache,
    label_index,
    uid_index,
)

log = logging.getLogger(__name__)

CACHE_CATCH_UP_SECONDS = 5.0
"""How long a create waits for its own watch event before answering anyway."""

DEFAULT_REFRESH_INTERVAL = 60.0
"""Seconds between two re-checks of discovery and permissions when nothing asks sooner."""
MIN_REFRESH_GAP = 2.0
"""A 403 or 404 asks for a re-check at once, but at most one per this many seconds."""
NEEDED_GROUPS = frozenset(p.group for p in NEEDED_PERMISSIONS)
"""API groups whose 403 or missing resource (404) means permissions or APIs changed."""

KUEUE_PROBE_INTERVAL = 2.0
"""Seconds between two checks whether Kueue answers again, while it does not."""

SessionListener = Callable[[str, str, Object], None]
"""Called with ``(plural, event_type, object)`` for every change in any cache."""
HealthListener = Callable[[], None]
"""Called (on any thread) when the health of a cache or of Kueue's controller changed."""

NAMESPACED_KINDS = (LOCAL_QUEUE, WORKLOAD)
CLUSTER_KINDS = (CLUSTER_QUEUE, COHORT, RESOURCE_FLAVOR, WORKLOAD_PRIORITY_CLASS)

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


def _involved_uid(obj: Object) -> list[str]:
    uid = (obj.get("involvedObject") or {}).get("uid")
    return [str(uid)] if uid else []


_INDEXES: dict[str, dict[str, IndexFunc]] = {
    WORKLOAD.plural: {BY_JOB_UID: label_index(JOB_UID_LABEL)},
    RAY_CLUSTER.plural: {BY_UID: uid_index},
    POD.plural: {BY_RAY_CLUSTER: label_index(RAY_CLUSTER_LABEL)},
    EVENT.plural: {BY_INVOLVED_UID: _involved_uid},
}
_PROJECTIONS: dict[str, Projection] = {
    # Only a pod's metadata and status are read; every other cache keeps all but
    # managedFields (see .projection and tests/unit/test_projection.py).
    POD.plural: slim_pod,
}
_FIELD_SELECTORS: dict[str, str] = {
    # KubeRay's warnings about RayClusters only (InvalidRayClusterSpec, ...): a namespace's
    # events are many, these are few.
    EVENT.plural: f"involvedObject.kind={RAY_CLUSTER.kind},type=Warning",
}


@dataclass(frozen=True)
class QueueState:
    """The namespace's LocalQueues and, when readable, all ClusterQueues and Cohorts.

    ``cluster_queues`` None: this identity may not read ClusterQueues (quota hidden).
    ``cohorts`` None: Cohort objects are served but not readable; empty when there are none.
    ``flavors`` None: ResourceFlavors are not readable (every flavor is assumed usable).
    ``priority_classes`` None: WorkloadPriorityClasses are not readable (names not checked).

    One instance answers every caller until a cache changes (:meth:`KubeSession.queue_state`),
    so it is immutable: tuples and a read-only mapping.
    """

    local_queues: tuple[LocalQueueInfo, ...]
    cluster_queues: tuple[ClusterQueueQuota, ...] | None
    cohorts: tuple[CohortQuota, ...] | None
    flavors: Mapping[str, FlavorTraits] | None = None
    priority_classes: tuple[PriorityClass, ...] | None = None

    @cached_property
    def quota_tree(self) -> QuotaTree | None:
        """The ClusterQueues and Cohorts linked as Kueue links them (headroom, limits); None
        when ClusterQueues are not readable. Built once per state: the queue summaries, a fit
        and the change feed share it."""
        if self.cluster_queues is None:
            return None
        return QuotaTree(self.cluster_queues, self.cohorts or ())


QueueInputs = tuple[bool, tuple[tuple["WatchCache", int] | None, ...]]
"""What a :class:`QueueState` is parsed from: whether Cohorts are served, then per cache
(LocalQueues, ClusterQueues, Cohorts, ResourceFlavors, WorkloadPriorityClasses) the cache
object and its generation, or None when it is not read."""


class KubeSession:
    """Credentials, identity, discovery and watch caches for one namespace.

    ``namespace`` None means the service account's namespace, else the kubeconfig context's
    (``default`` if it names none). ``request_timeout`` bounds each API call and how long a
    request waits for the caches' first sync.

    Typical use::

        session = KubeSession()
        session.start_background()          # returns at once
        session.queue_state()               # waits for the first sync, then answers
        session.stop()
    """

    def __init__(
        self,
        *,
        namespace: str | None = None,
        service_account_dir: str | None = None,
        kube_context: str | None = None,
        request_timeout: float = DEFAULT_TIMEOUT,
        credentials: Credentials | None = None,
        environ: Mapping[str, str] | None = None,
        backoff: Backoff | None = None,
        lazy_watches: bool = False,
        refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
        watch_idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        if refresh_interval <= 0:
            raise ValueError(f"refresh_interval must be positive, got {refresh_interval}")
        if watch_idle_timeout <= 0:
            raise ValueError(f"watch_idle_timeout must be positive, got {watch_idle_timeout}")
        self.refresh_interval = refresh_interval
        self.watch_idle_timeout = watch_idle_timeout
        self._configured_namespace = namespace or None
        self._service_account_dir = service_account_dir
        self._kube_context = kube_context or None
        self.request_timeout = request_timeout
        self._credentials = credentials
        self._environ = environ
        self._backoff = backoff
        self._lazy_watches = lazy_watches
        self._lock = threading.RLock()
        self._start_lock = threading.Lock()
        self._started = threading.Event()
        self._starter: threading.Thread | None = None
        self._start_error: KubeError | None = None
        self._stopping = False
        self._listeners: list[_Registration] = []
        self._health_listeners: list[HealthListener] = []
        self._refresh_wake = threading.Event()
        self._refresh_stop = threading.Event()
        self.refreshes = 0
        """How many re-checks ran after start (for diagnostics and tests)."""
        self._reset_state()

    def _reset_state(self) -> None:
        self._api: KubeApi | None = None
        self._namespace: str | None = None
        self._discovery: Discovery | None = None
        self._identity: Identity | None = None
        self._access: dict[Permission, AccessResult] = {}
        self._caches: dict[str, WatchCache] = {}
        self._cache_specs: dict[str, tuple[Resource, str | None]] = {}
        self._revoked: dict[str, Freshness] = {}
        self._kueue_health = Freshness()
        self._last_kueue_probe = 0.0
        self._last_refresh = 0.0
        self._elastic: ElasticJobs = NOT_PROBED
        # The last queue_state() answer, its inputs and its parsed objects. Replaced whole
        # (one assignment, atomic), never mutated: readers on any thread see a matching triple
        # without a lock.
        self._queue_memo: tuple[QueueInputs, QueueState, _Parsed] | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Connect and start the caches; blocks until the caches are started (not synced).

        Idempotent. Raises :class:`KubeError` (no credentials, unreachable, forbidden).
        """
        # One start at a time; _lock stays free meanwhile so readers never wait on I/O.
        with self._start_lock:
            if self._started.is_set():
                return
            with self._lock:
                self._stopping = False
            try:
                self._connect()
            except KubeError as err:
                with self._lock:
                    self._start_error = err
                    self._stop_caches()
                    self._reset_state()
                raise
            with self._lock:
                if self._stopping:  # stop() ran while we were connecting
                    self._stop_caches()
                    if self._api is not None:
                        self._api.close()
                    self._reset_state()
                    return
                self._start_error = None
                self._started.set()
                self._start_refresher()

    def start_background(self) -> None:
        """Start on a daemon thread and return at once (a failed start is retried by the
        next :meth:`wait_ready`)."""
        with self._lock:
            if self._started.is_set() or (self._starter and self._starter.is_alive()):
                return
            self._start_error = None
            self._starter = threading.Thread(
                target=self._start_quietly, name="dw-session-start", daemon=True
            )
            self._starter.start()

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until started, at most ``timeout`` seconds (default ``request_timeout``).

        A start that failed earlier is retried first. Raises the start's :class:`KubeError`,
        or :class:`NotReady` when start-up is still running at the deadline.
        """
        timeout = self.request_timeout if timeout is None else timeout
        if self._started.is_set():
            return
        with self._lock:
            if self._starter is None or self._start_error is not None:
                self.start_background()  # never started, or the last attempt failed
            starter = self._starter
        assert starter is not None
        starter.join(timeout)
        if self._started.is_set():
            return
        if self._start_error is not None:
            raise self._start_error
        raise NotReady(
            "Still connecting to Kubernetes",
            f"start-up did not finish within {timeout:g}s",
            "Try again in a moment.",
        )

    def stop(self) -> None:
        """Stop every cache and release connections (the session can be started again)."""
        with self._lock:
            self._stopping = True
            self._refresh_stop.set()
            self._refresh_wake.set()
            self._stop_caches()
            if self._api is not None:
                self._api.close()
            self._reset_state()
            self._started.clear()

    def _start_quietly(self) -> None:
        try:
            self.start()
        except KubeError as err:
            log.warning("jupyter_dw could not connect to Kubernetes: %s", err)
        except Exception as err:  # unexpected: keep it visible to requests as a KubeError
            log.exception("jupyter_dw start-up failed")
            with self._lock:
                self._start_error = KubeError("Start-up failed", f"{type(err).__name__}: {err}")

    def _connect(self) -> None:
        credentials = self._credentials or load_credentials(
            self._service_account_dir, self._kube_context, self._environ
        )
        api = KubeApi(credentials, timeout=self.request_timeout, on_failure=self._on_api_failure)
        namespace = self._configured_namespace or credentials.namespace or "default"
        discovery = discover(api)
        identity = who_am_i(api)
        access = check_access(api, namespace)
        self._credentials = credentials
        self._api, self._namespace = api, namespace
        self._discovery, self._identity, self._access = discovery, identity, access
        self._last_refresh = time.monotonic()
        log.info(
            "jupyter_dw: %s as %s in namespace %s; Kueue %s, KubeRay %s",
            credentials.description,
            identity.username or "unknown identity",
            namespace,
            discovery.kueue_version or "not installed",
            discovery.ray_version or "not installed",
        )
        self._sync_caches(api)
        self._probe_elastic(api)

    def _probe_elastic(self, api: KubeApi) -> None:
        """Ask Kueue (a dry-run create) whether it admits elastic RayClusters; once per
        connection and again at every re-check of permissions."""
        discovery = self._discovery
        if discovery is None or not discovery.kuberay_installed or discovery.kueue_version is None:
            found = ElasticJobs(None, "unknown", "Kueue or KubeRay is not installed")
        elif self.allowed("create", RAY_CLUSTER) is False:
            found = ElasticJobs(None, "unknown", "cannot tell: may not create rayclusters")
        else:
            cache = self._caches.get(LOCAL_QUEUE.plural)
            queues = cache.snapshot() if cache is not None and cache.synced else []
            queue = next((str(q["metadata"]["name"]) for q in queues if q.get("metadata")), None)
            found = probe_elastic_jobs(api, self._namespace or "default", queue)
        with self._lock:
            if self._api is api:
                self._elastic = found

    @property
    def elastic_jobs(self) -> ElasticJobs:
        """What the last dry run told of Kueue's elastic jobs (see :mod:`.elastic`)."""
        return self._elastic

    def _wanted_caches(self) -> dict[str, tuple[Resource, str | None]]:
        """``{plural: (resource, label selector)}`` of every cache that discovery and the
        access reviews allow now."""
        discovery = self._discovery
        assert discovery is not None
        wanted: dict[str, tuple[Resource, str | None]] = {}
        for kind in (*NAMESPACED_KINDS, *CLUSTER_KINDS):
            resource = discovery.kueue(kind)
            if resource is not None and not self._denied(kind):
                wanted[resource.plural] = (resource, None)
        if discovery.kuberay_installed:
            if not self._denied(RAY_CLUSTER):
                wanted[RAY_CLUSTER.plural] = (RAY_CLUSTER, None)
            if discovery.rayjobs_served and not self._denied(RAY_JOB):
                wanted[RAY_JOB.plural] = (RAY_JOB, None)
            if not self._denied(POD):
                # Only Ray's pods: the namespace may hold many others (the workbench itself).
                wanted[POD.plural] = (POD, RAY_CLUSTER_LABEL)
            if not self._denied(EVENT):
                wanted[EVENT.plural] = (EVENT, None)  # field selector: _FIELD_SELECTORS
        if discovery.trainjobs_served and not self._denied(TRAIN_JOB):
            wanted[TRAIN_JOB.plural] = (TRAIN_JOB, None)
        return wanted

    def _sync_caches(self, api: KubeApi) -> None:
        """Make the caches match :meth:`_wanted_caches`: create (and start, unless watching
        lazily) the newly allowed ones, stop those no longer allowed or served, replace one
        whose served version changed."""
        started: list[WatchCache] = []
        stopped: list[WatchCache] = []
        with self._lock:  # publish caches and bind listeners atomically w.r.t. add_listener
            if self._stopping or self._api is not api:
                return
            wanted = self._wanted_caches()
            revoked_before = dict(self._revoked)
            for plural in [p for p in self._caches if self._cache_specs.get(p) != wanted.get(p)]:
                cache = self._caches.pop(plural)
                stopped.append(cache)
                resource, _ = self._cache_specs.pop(plural)
                if plural not in wanted and cache.started and self._served(resource):
                    # Still served, no longer allowed: what the UI showed of it is now old.
                    self._revoked[plural] = Freshness().moved_to(
                        STALE, self._revocation_reason(resource), time.time()
                    )
            for plural in wanted:
                self._revoked.pop(plural, None)
            for plural, (resource, selector) in wanted.items():
                if plural in self._caches:
                    continue
                cache = WatchCache(
                    ApiListWatch(
                        api,
                        resource,
                        self._namespace if resource.namespaced else None,
                        label_selector=selector,
                        field_selector=_FIELD_SELECTORS.get(resource.plural),
                        idle_timeout=self.watch_idle_timeout,
                    ),
                    backoff=self._backoff,
                    indexes=_INDEXES.get(resource.plural),
                    on_health=lambda _health: self._health_changed(),
                    projection=_PROJECTIONS.get(resource.plural, slim),
                )
                for registration in self._listeners:
                    registration.removers.append(
                        cache.add_listener(_bind(registration.listener, resource.plural))
                    )
                self._caches[plural] = cache
                self._cache_specs[plural] = (resource, selector)
                started.append(cache)
        for cache in stopped:
            log.info("jupyter_dw: no longer watching %s", cache.name)
            cache.stop()
        if not self._lazy_watches:
            for cache in started:
                cache.start()
        if started or stopped or revoked_before != self._revoked:
            self._health_changed()

    def _served(self, resource: Resource) -> bool:
        discovery = self._discovery
        if discovery is None:
            return False
        if resource == RAY_JOB:
            return discovery.rayjobs_served
        if resource == TRAIN_JOB:
            return discovery.trainjobs_served
        if resource.group == RAY_CLUSTER.group or resource.plural in (POD.plural, EVENT.plural):
            return discovery.kuberay_installed
        kind = ResourceKind(resource.group, resource.plural, resource.kind, resource.namespaced)
        return discovery.kueue(kind) == resource

    def _revocation_reason(self, resource: Resource) -> str:
        denied = [
            p.name
            for p, r in self._access.items()
            if (p.group, p.resource) == (resource.group, resource.plural)
            and p.verb in ("list", "watch")
            and not r.allowed
        ]
        what = " and ".join(denied) or f"list {resource.qualified}"
        return f"forbidden: this identity may no longer {what}"

    # -- following permission and API changes --------------------------------------------

    def refresh(self) -> bool:
        """Run discovery and the access reviews again now, then start the caches newly
        allowed and stop those no longer allowed. True when anything changed.

        Runs by itself every ``refresh_interval`` seconds and soon after a 403 or a missing
        resource; raises :class:`KubeError` when the API server cannot answer (the previous
        answers stay).
        """
        with self._lock:
            api, namespace = self._api, self._namespace
        if api is None or namespace is None or not self._started.is_set():
            return False
        try:
            discovery = discover(api)
            access = check_access(api, namespace)
        finally:
            self._last_refresh = time.monotonic()
        with self._lock:
            if self._stopping or self._api is not api:
                return False
            before = {p: r.allowed for p, r in self._access.items()}
            after = {p: r.allowed for p, r in access.items()}
            changed = discovery != self._discovery or before != after
            old_discovery = self._discovery
            self._discovery, self._access = discovery, access
            self.refreshes += 1
        if changed:
            granted = [p.name for p, ok in after.items() if ok and not before.get(p)]
            revoked = [p.name for p, ok in after.items() if not ok and before.get(p)]
            log.info(
                "jupyter_dw: permissions or APIs changed: granted %s; revoked %s; Kueue %s -> "
                "%s; KubeRay %s -> %s",
                ", ".join(granted) or "none",
                ", ".join(revoked) or "none",
                old_discovery.kueue_version if old_discovery else None,
                discovery.kueue_version,
                old_discovery.ray_version if old_discovery else None,
                discovery.ray_version,
            )
        self._sync_caches(api)
        self._probe_kueue(api, discovery)
        self._probe_elastic(api)
        return changed

    # -- Kueue's controller --------------------------------------------------------------

    def _probe_kueue(self, api: KubeApi, discovery: Discovery) -> None:
        """Ask Kueue's visibility API (served by Kueue's own process through the API server)
        whether Kueue answers; a 503 means it does not. Other failures tell nothing about Kueue
        (the API server itself is away: the caches say so)."""
        self._last_kueue_probe = time.monotonic()
        version = discovery.visibility_version
        if version is None:
            self._set_kueue_health(LIVE, None)  # cannot tell: assume it works
            return
        try:
            api.get(f"/apis/{VISIBILITY_GROUP}/{version}", timeout=min(self.request_timeout, 10))
        except KubeError as err:
            status = getattr(err.__cause__, "status", None)
            if status == 503:
                self._set_kueue_health(STALE, _kueue_down_reason(err.reason or str(err)))
            return
        self._set_kueue_health(LIVE, None)

    def _set_kueue_health(self, state: str, reason: str | None) -> None:
        with self._lock:
            before = self._kueue_health
            self._kueue_health = before.moved_to(state, reason, time.time())
            changed = self._kueue_health.state != before.state
        if changed:
            log.info("jupyter_dw: Kueue's controller is %s (%s)", state, reason or "answers")
            self._health_changed()

    def _probe_kueue_quietly(self) -> None:
        with self._lock:
            api, discovery = self._api, self._discovery
        if api is None or discovery is None:
            return
        try:
            self._probe_kueue(api, discovery)
        except Exception:  # the probe must never stop the re-check thread
            log.exception("jupyter_dw: checking whether Kueue answers failed")

    # -- watch health --------------------------------------------------------------------

    def watch_health(self) -> WatchHealth:
        """Each open cache's health (one not opened yet, watching lazily, is not listed; one
        stopped by a revoked permission is, as ``stale``) and Kueue controller's."""
        with self._lock:
            caches = {
                plural: cache.health for plural, cache in self._caches.items() if cache.started
            }
            caches.update(self._revoked)
            return WatchHealth(caches, self._kueue_health)

    def add_health_listener(self, listener: HealthListener) -> Callable[[], None]:
        """Call ``listener()`` whenever :meth:`watch_health` changes; returns a remover."""
        with self._lock:
            self._health_listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._health_listeners:
                    self._health_listeners.remove(listener)

        return remove

    def _health_changed(self) -> None:
        with self._lock:
            listeners = list(self._health_listeners)
        for listener in listeners:
            try:
                listener()
            except Exception:  # a broken listener must not break a cache or the re-check
                log.exception("jupyter_dw: health listener failed")

    def _start_refresher(self) -> None:
        """Start the re-check thread of this start (the previous one, if any, has stopped)."""
        self._refresh_stop = threading.Event()
        self._refresh_wake.clear()
        threading.Thread(
            target=self._refresh_loop,
            args=(self._refresh_stop,),
            name="dw-session-refresh",
            daemon=True,
        ).start()

    def _refresh_loop(self, stop: threading.Event) -> None:
        """Re-check every ``refresh_interval``, or sooner when :meth:`_on_api_failure` asks,
        but never twice within ``MIN_REFRESH_GAP``. Waits on events: no polling."""
        while not stop.is_set():
            asked = self._refresh_wake.is_set()
            gap = min(MIN_REFRESH_GAP, self.refresh_interval) if asked else self.refresh_interval
            wait = self._last_refresh + gap - time.monotonic()
            if not self._kueue_health.live:  # Kueue is away: ask often whether it is back
                probe_wait = self._last_kueue_probe + KUEUE_PROBE_INTERVAL - time.monotonic()
                if probe_wait <= 0:
                    self._probe_kueue_quietly()
                    continue
                wait = min(wait, probe_wait)
            if wait > 0:
                # Asked already: wait out the gap (or a stop). Else: the interval, or a request.
                (stop if asked else self._refresh_wake).wait(wait)
                continue
            self._refresh_wake.clear()
            try:
                self.refresh()
            except Exception as err:  # keep following the cluster whatever one re-check hit
                if stop.is_set():
                    return  # stopped mid-check: the client was closed under us
                if isinstance(err, KubeError):
                    log.info("jupyter_dw: re-checking permissions and APIs failed: %s", err)
                else:
                    log.exception("jupyter_dw: re-checking permissions and APIs failed")

    def _on_api_failure(self, failure: FailedCall) -> None:
        """A 403, or a 404 for a resource (not an object), from an API group we use: the
        permissions or the installed APIs may have changed, re-check soon."""
        kueue_down = _kueue_failure(failure)
        if kueue_down is not None:
            was_live = self._kueue_health.live
            self._set_kueue_health(STALE, kueue_down)
            if was_live:  # the re-check thread then asks every KUEUE_PROBE_INTERVAL
                self._refresh_wake.set()
        if failure.group not in NEEDED_GROUPS:
            return
        if failure.status == 403 or (failure.status == 404 and failure.object_name is None):
            self._refresh_wake.set()

    def _stop_caches(self) -> None:
        for cache in self._caches.values():
            cache.stop()

    # -- state ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """True once :meth:`start` has succeeded (caches may still be syncing)."""
        return self._started.is_set()

    @property
    def namespace(self) -> str:
        """The namespace in use (after start)."""
        self._require_started()
        assert self._namespace is not None
        return self._namespace

    @property
    def discovery(self) -> Discovery:
        """What the cluster serves (after start)."""
        self._require_started()
        assert self._discovery is not None
        return self._discovery

    @property
    def identity(self) -> Identity:
        """Who the API server says we are (after start)."""
        self._require_started()
        assert self._identity is not None
        return self._identity

    @property
    def api(self) -> KubeApi:
        """The API client (after start), for calls no cache answers."""
        self._require_started()
        assert self._api is not None
        return self._api

    @property
    def access(self) -> dict[Permission, AccessResult]:
        """Verdicts on every needed permission, as last checked (at start, then re-checked
        every ``refresh_interval`` and after a 403)."""
        return dict(self._access)

    def cache(self, kind: Kind) -> WatchCache | None:
        """The watch cache of ``kind``, None if not served or not readable (started now if
        the session watches lazily)."""
        return self._watching(kind.plural)

    def _watching(self, plural: str) -> WatchCache | None:
        """The cache of ``plural``, started if it was not yet (``lazy_watches``: a kernel
        opens only the watches that what it shows needs)."""
        cache = self._caches.get(plural)
        if cache is not None and self._lazy_watches:
            cache.start()  # idempotent
        return cache

    @property
    def watched(self) -> list[str]:
        """The plurals whose watches are open."""
        return [plural for plural, cache in self._caches.items() if cache.started]

    def allowed(self, verb: str, kind: Kind, subresource: str = "") -> bool | None:
        """The last verdict for ``verb`` on ``kind`` (None if it was not checked)."""
        for permission, result in self._access.items():
            if (permission.verb, permission.group, permission.resource) == (
                verb,
                kind.group,
                kind.plural,
            ) and permission.subresource == subresource:
                return result.allowed
        return None

    def add_listener(self, listener: SessionListener) -> Callable[[], None]:
        """Call ``listener(plural, event_type, obj)`` on every cache change (on the cache's
        thread). Applies to caches started later too. Returns a remover."""
        registration = _Registration(listener)
        with self._lock:
            self._listeners.append(registration)
            for plural, cache in self._caches.items():
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
        # The key holds the cache objects themselves: a permission revoked or granted, or an
        # API version changed, replaces or drops a cache (a new one restarts at generation 0).
        # A cache gone stale keeps its objects and generation; it answers as it would without
        # the memo, and watch_health() says it is stale.
        memo = self._queue_memo
        current = (cohorts_served, tuple((c, c.generation) if c else None for c in caches))
        if memo is not None and memo[0] == current:
            return memo[1]
        parser = _Parser(memo[2] if memo is not None else {})
        inputs, state = _parse_queue_state(cohorts_served, caches, parser)
        # Two threads may both parse after a change; each triple stored is consistent, and an
        # older one stored last is only parsed again on the next call.
        self._queue_memo = (inputs, state, parser.parsed)
        return state

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
        cache = self._watching(RAY_CLUSTER.plural)
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
        cache = self._watching(RAY_CLUSTER.plural)
        return cache.get(name, self._namespace or "") if cache is not None else None

    def ray_cluster_by_uid(self, uid: str) -> Object | None:
        """The cached RayCluster with ``metadata.uid`` ``uid`` (no waiting, no I/O)."""
        cache = self._watching(RAY_CLUSTER.plural)
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
        cache = self._watching(WORKLOAD.plural)
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
        cache = self._watching(WORKLOAD.plural)
        return cache.get(name, self._namespace or "") if cache is not None else None

    def cached_ray_clusters(self) -> list[Object]:
        """Every RayCluster the cache holds now (no waiting, no I/O; empty when not read)."""
        cache = self._watching(RAY_CLUSTER.plural)
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
        cache = self._watching(POD.plural)
        return cache.by_index(BY_RAY_CLUSTER, name) if cache is not None else []

    def kuberay_warnings(self, raycluster: Object) -> list[Object]:
        """The cached Warning events about ``raycluster`` (by its UID); empty when events are
        not readable."""
        cache = self._watching(EVENT.plural)
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
        cache = self._watching(RAY_JOB.plural)
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
        cache = self._watching(resource.plural)
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

    @property
    def credentials(self) -> Credentials:
        """The credentials in use (after start)."""
        self._require_started()
        assert self._credentials is not None
        return self._credentials

    @property
    def namespace_source(self) -> str:
        """Where the namespace came from: ``config``, or the credentials' source."""
        return "config" if self._configured_namespace else self.credentials.source

    def cache_health(self) -> dict[str, tuple[bool, str | None]]:
        """Per watched plural: ``(synced, last error)``."""
        return {
            plural: (cache.synced, str(cache.last_error) if cache.last_error else None)
            for plural, cache in self._caches.items()
        }

    # -- internals -----------------------------------------------------------------------

    def _require_started(self) -> None:
        if not self._started.is_set():
            raise NotReady("Not connected to Kubernetes yet", None, "Start the session first.")

    def _denied(self, kind: Kind) -> bool:
        return not (self.allowed("list", kind) and self.allowed("watch", kind))

    def _synced_cache(
        self, kind: Kind, deadline: float, required: bool = False
    ) -> WatchCache | None:
        cache = self._watching(kind.plural)
        if cache is None:
            if required:
                raise self._forbidden(kind)
            return None
        if cache.wait_synced(max(0.0, deadline - time.monotonic()), give_up=_permanent):
            return cache
        error = cache.last_error
        if not required and isinstance(error, KubeForbidden):
            # Readable at start, forbidden now (RBAC changed): degrade like never readable.
            log.info("%s no longer readable: %s", kind.qualified, error)
            return None
        if isinstance(error, KubeError):
            raise error
        raise NotReady(
            f"The {kind.qualified} cache has not synced yet",
            str(error) if error else f"first list still running after {self.request_timeout:g}s",
            "Try again in a moment.",
        )

    def _forbidden(self, kind: Kind) -> KubeForbidden:
        denied = [
            p.name
            for p, r in self._access.items()
            if p.resource == kind.plural and p.group == kind.group and p.verb in ("list", "watch")
            if not r.allowed
        ]
        what = " and ".join(denied) or f"list {kind.qualified}"
        # Kueue ships a ClusterRole for namespace users of its own APIs; KubeRay ships none.
        example = (
            " (for example with the kueue-batch-user-role ClusterRole in a RoleBinding)"
            if kind.group == LOCAL_QUEUE.group
            else " (a Role and RoleBinding)"
        )
        return KubeForbidden(
            f"Forbidden: this identity may not {what}",
            f"SelfSubjectAccessReview denied {what} in namespace {self._namespace} "
            f"to {self._identity.username if self._identity else 'this identity'}",
            f"Ask a cluster administrator to allow '{what}' in namespace {self._namespace}"
            f"{example}.",
            denied=denied[0] if denied else f"list {kind.qualified}",
        )


def _parse_queue_state(
    cohorts_served: bool, caches: tuple[WatchCache | None, ...], parse: _Parser
) -> tuple[QueueInputs, QueueState]:
    """Parse the queue caches' snapshots (LocalQueues, ClusterQueues, Cohorts,
    ResourceFlavors, WorkloadPriorityClasses; None: not read). Each snapshot is read with its
    generation, so the inputs returned name exactly what was parsed even while the caches
    move on; ``parse`` reuses what the previous parse made of objects that did not change."""
    snapshots = [c.versioned_snapshot() if c is not None else None for c in caches]
    inputs: QueueInputs = (
        cohorts_served,
        tuple(
            (cache, snapshot[0]) if cache is not None and snapshot is not None else None
            for cache, snapshot in zip(caches, snapshots, strict=True)
        ),
    )
    local_queues, cluster_queues, cohorts, flavors, priorities = (
        snapshot[1] if snapshot is not None else None for snapshot in snapshots
    )
    assert local_queues is not None
    if cohorts is not None:
        parsed_cohorts: tuple[CohortQuota, ...] | None = parse(cohorts, CohortQuota.from_object)
    else:
        # Not served: there are no Cohort objects to count. Served but unreadable: None,
        # and the summaries say headroom may miss quota set on Cohort objects.
        parsed_cohorts = None if cohorts_served else ()
    by_value = sorted(
        parse(priorities or [], PriorityClass.from_object), key=lambda c: (-c.value, c.name)
    )
    state = QueueState(
        local_queues=parse(local_queues, LocalQueueInfo.from_object),
        cluster_queues=(
            parse(cluster_queues, ClusterQueueQuota.from_object)
            if cluster_queues is not None
            else None
        ),
        cohorts=parsed_cohorts,
        flavors=(
            MappingProxyType({f.name: f for f in parse(flavors, FlavorTraits.from_object)})
            if flavors is not None
            else None
        ),
        priority_classes=tuple(by_value) if priorities is not None else None,
    )
    return inputs, state


@dataclass(eq=False)
class _Registration:
    """One :meth:`KubeSession.add_listener` call and how to unbind it from every cache."""

    listener: SessionListener
    removers: list[Callable[[], None]] = field(default_factory=list)


def _kueue_down_reason(detail: str) -> str:
    return (
        f"Kueue is not answering ({detail}): Workloads keep their last known state until it is back"
    )


def _kueue_failure(failure: FailedCall) -> str | None:
    """Why ``failure`` shows Kueue's process is down (its visibility API answering 503, one of
    its webhooks unreachable), or None."""
    if failure.status == 503 and failure.group == VISIBILITY_GROUP:
        return _kueue_down_reason(f"its visibility API answers 503: {failure.message}")
    message = failure.message
    if "failed calling webhook" in message and "kueue" in message.lower():
        return _kueue_down_reason(f"its webhook cannot be called: {message}")
    return None


def _permanent(error: BaseException) -> bool:
    """Failures that retrying will not fix soon: stop waiting for a sync on them."""
    return isinstance(error, KubeForbidden | KubeUnauthorized | KubeConfigError)


def _bind(listener: SessionListener, plural: str) -> Callable[[str, Object], None]:
    return lambda event_type, obj: listener(plural, event_type, obj)


_Parsed = dict[int, tuple[Object, Any]]
"""``id(object dict) -> (that dict, what it parsed to)``; the dict is held so its id stays its."""


class _Parser:
    """Parses cache objects, reusing what the previous parse made of the very same dict: a
    cache replaces an object's dict when the object changes, so after one change one object
    is parsed again, not every one. :attr:`parsed` holds what this parser saw, for the next."""

    def __init__(self, earlier: _Parsed) -> None:
        self._earlier = earlier
        self.parsed: _Parsed = {}

    def __call__(self, objects: list[Object], parse: Callable[[Object], Any]) -> tuple[Any, ...]:
        values = []
        for obj in objects:
            held = self._earlier.get(id(obj))
            if held is not None and held[0] is obj:
                value = held[1]
            else:
                try:
                    value = parse(obj)
                except KueueObjectError as err:  # one malformed object must not hide the others
                    log.warning("skipping an unreadable Kueue object: %s", err)
                    continue
            self.parsed[id(obj)] = (obj, value)
            values.append(value)
        return tuple(values)
