"""``KubeSession``: the one object every surface shares to see Kueue from this identity.

At start it reads credentials, discovers the APIs, asks who it is and what it may do, and
starts a watch cache per readable resource: the namespace's LocalQueues, Workloads,
RayClusters and Ray pods (label ``ray.io/cluster``), and the cluster's ClusterQueues, Cohorts,
ResourceFlavors and WorkloadPriorityClasses when the identity may read them. A service account
cannot watch its own permissions, so discovery (one aggregated GET) and the access check (one
SelfSubjectRulesReview) run again every ``refresh_interval`` seconds and at once after a 403,
or a 404 for a whole resource, from an API group we use (:meth:`KubeSession.refresh`): a Role
granted or Kueue installed later starts the caches it allows, a permission revoked stops them,
without a restart.

Reads (:meth:`KubeSession.ray_clusters`, :meth:`KubeSession.synced_cache`,
:meth:`KubeSession.indexed`, ...) come from those caches, never from a list per request; the
caches index Workloads by ``kueue.x-k8s.io/job-uid``, RayClusters by UID and pods by
RayCluster, so relating them is a lookup, not a scan. Writes
(:meth:`KubeSession.create_raycluster`, :meth:`KubeSession.delete_raycluster`) and the
visibility API's positions go to the API server. Everything here is thread-based and
blocking; async callers run it in an executor.

The queries that relate cached objects into domain answers are not here but in the core:
the parsed queues (``jupyter_dw.core.queue_state``), a cluster's Workloads, pods and
KubeRay's warnings (``jupyter_dw.core.cluster_objects``) and its Ray token
(``jupyter_dw.core.ray_token``). This package is the connection, the caches with their
indexes, raw API calls and writes.

Watch health (:meth:`KubeSession.watch_health`): each cache's
:class:`~jupyter_dw.domain.freshness.Freshness`; a cache stopped because its permission was
revoked stays listed as ``stale`` naming the permission, until it is granted again. Kueue's
controller is ``stale`` while Kueue does not answer: its visibility API answers 503 (probed
at every re-check, and every ``KUEUE_PROBE_INTERVAL`` seconds while it is down) or a call
failed in one of Kueue's webhooks; the Workloads the caches hold are then Kueue's last word.
Listeners added with :meth:`KubeSession.add_health_listener` hear of every change.

This module connects, re-checks and stops; the rest is in modules of one job each:
``session_state`` (what is known once connected), ``session_answers`` (the reads and
writes), ``cache_set`` (the set of watch caches, their indexes and listeners) and
``kueue_health``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from jupyter_dw.domain.freshness import STALE, WatchHealth

from ..domain.errors import DWError
from .access import NEEDED_PERMISSIONS, check_access, recheck_access, who_am_i
from .auth import Credentials, load_credentials
from .cache_set import CacheSet, SessionListener, served, wanted_caches
from .client import DEFAULT_TIMEOUT, FailedCall, KubeApi
from .discovery import discover
from .elastic import NOT_PROBED, ElasticJobs, probe_elastic_jobs
from .errors import KubeError, NotReady
from .kueue_health import KueueHealth, kueue_failure
from .listeners import Listeners
from .resources import LOCAL_QUEUE, RAY_CLUSTER
from .session_answers import SessionAnswers
from .watch_cache import DEFAULT_IDLE_TIMEOUT, Backoff

__all__ = ["KubeSession", "SessionListener"]

log = logging.getLogger(__name__)

DEFAULT_REFRESH_INTERVAL = 60.0
"""Seconds between two re-checks of discovery and permissions when nothing asks sooner."""
MIN_REFRESH_GAP = 2.0
"""A 403 or 404 asks for a re-check at once, but at most one per this many seconds."""
LOSS_GRACE = 10.0
"""Seconds an API must stay missing from discovery before the session believes it is gone."""
NEEDED_GROUPS = frozenset(p.group for p in NEEDED_PERMISSIONS)
"""API groups whose 403 or missing resource (404) means permissions or APIs changed."""

HealthListener = Callable[[], None]
"""Called (on any thread) when the health of a cache or of Kueue's controller changed."""


class KubeSession(SessionAnswers):
    """Credentials, identity, discovery and watch caches for one namespace.

    ``namespace`` None means the service account's namespace, else the kubeconfig context's
    (``default`` if it names none). ``request_timeout`` bounds each API call and how long a
    request waits for the caches' first sync.

    Typical use::

        session = KubeSession()
        session.start_background()          # returns at once
        session.ray_clusters()              # waits for the first sync, then answers
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
        self._start_error: DWError | None = None
        self._stopping = False
        self._health_listeners: Listeners[HealthListener] = Listeners()
        self._cache_set = CacheSet(
            self._lock,
            self._health_changed,
            backoff=backoff,
            idle_timeout=watch_idle_timeout,
            lazy=lazy_watches,
        )
        self._refresh_wake = threading.Event()
        self._refresh_stop = threading.Event()
        self._refresh_exact = threading.Event()  # a 403 asked: review each permission
        self.refreshes = 0
        """How many re-checks ran after start (for diagnostics and tests)."""
        self._reset_state()

    def _reset_state(self) -> None:
        self._api = None
        self._namespace = None
        self._discovery = None
        self._identity = None
        self._access = {}
        self._cache_set.reset()
        self._kueue = KueueHealth(self._health_changed)
        self._last_refresh = 0.0
        self._elastic: ElasticJobs = NOT_PROBED
        self._elastic_asked_at = -1  # self._kueue.returns when the dry run last ran
        self._loss_since: float | None = None  # when re-checks began to see APIs gone

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
            except DWError as err:  # a bad path segment (namespace) too, not only Kubernetes
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
        except DWError as err:
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
        access = recheck_access(api, namespace)
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
        """Ask Kueue (a dry-run create) whether it admits elastic RayClusters: once per
        connection, then again only when a re-check can learn something new (see
        :meth:`_elastic_worth_asking`)."""
        discovery = self._discovery
        asked_at = self._kueue.returns
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
                self._elastic, self._elastic_asked_at = found, asked_at

    def _elastic_worth_asking(self, changed: bool) -> bool:
        """Whether the dry run can say something new: the APIs or permissions changed, the
        last one could not tell, or Kueue came back (a restart may have turned the feature
        gate) since it ran. Otherwise its answer stands and costs no request."""
        return (
            changed
            or self._elastic.enabled is None
            or self._elastic_asked_at != self._kueue.returns
        )

    @property
    def elastic_jobs(self) -> ElasticJobs:
        """What the last dry run told of Kueue's elastic jobs (see :mod:`.elastic`)."""
        return self._elastic

    def _sync_caches(self, api: KubeApi) -> None:
        """Make the caches match what discovery serves and the access reviews allow:
        create (and start, unless watching lazily) the newly allowed ones, stop those no
        longer allowed or served, replace one whose served version changed."""
        with self._lock:  # change the set and bind listeners atomically w.r.t. add_listener
            if self._stopping or self._api is not api:
                return
            assert self._discovery is not None
            discovery = self._discovery
            started, stopped, revoked_changed = self._cache_set.update(
                api,
                self._namespace,
                wanted_caches(discovery, self._denied),
                lambda resource: served(discovery, resource),
                self._access,
            )
        for cache in stopped:
            log.info("jupyter_dw: no longer watching %s", cache.name)
            cache.stop()
        if not self._lazy_watches:
            for cache in started:
                cache.start()
        if started or stopped or revoked_changed:
            self._health_changed()

    # -- following permission and API changes --------------------------------------------

    def refresh(self, exact: bool = False) -> bool:
        """Run discovery and the access check again now, then start the caches newly
        allowed and stop those no longer allowed. True when anything changed.

        Runs by itself every ``refresh_interval`` seconds and soon after a 403 or a missing
        resource; raises :class:`KubeError` when the API server cannot answer (the previous
        answers stay). Costs one aggregated discovery GET (plus the RayCluster schema's
        OpenAPI index), one SelfSubjectRulesReview (:func:`~.access.recheck_access`) and
        the Kueue probe; ``exact`` (after a 403) reviews each permission instead.
        """
        with self._lock:
            api, namespace, previous = self._api, self._namespace, self._access
        if api is None or namespace is None or not self._started.is_set():
            return False
        try:
            discovery = discover(api)
            if exact:
                access = check_access(api, namespace)
            else:
                access = recheck_access(api, namespace, previous)
        finally:
            self._last_refresh = time.monotonic()
        with self._lock:
            if self._stopping or self._api is not api:
                return False
            if self._discovery is not None and self._discovery.loses(discovery):
                # A kube-apiserver that has just restarted answers discovery without its CRDs'
                # groups for seconds: believe a loss once it lasted LOSS_GRACE (re-checking
                # every MIN_REFRESH_GAP meanwhile).
                now = time.monotonic()
                self._loss_since = self._loss_since or now
                if now - self._loss_since < LOSS_GRACE:
                    discovery = self._discovery
                    self._refresh_wake.set()
                else:
                    self._loss_since = None
            else:
                self._loss_since = None
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
        # Kept at every re-check: nothing else notices Kueue's process stopping while nobody
        # calls it (its Workloads are served by the API server, not by Kueue).
        self._kueue.probe(api, discovery, self.request_timeout)
        if self._elastic_worth_asking(changed):
            self._probe_elastic(api)
        return changed

    # -- Kueue's controller --------------------------------------------------------------

    def _probe_kueue_quietly(self) -> None:
        with self._lock:
            api, discovery = self._api, self._discovery
        if api is None or discovery is None:
            return
        try:
            self._kueue.probe(api, discovery, self.request_timeout)
        except Exception:  # the probe must never stop the re-check thread
            log.exception("jupyter_dw: checking whether Kueue answers failed")

    # -- watch health --------------------------------------------------------------------

    def watch_health(self) -> WatchHealth:
        """Each open cache's health (one not opened yet, watching lazily, is not listed; one
        stopped by a revoked permission is, as ``stale``) and Kueue controller's."""
        return WatchHealth(self._cache_set.health(), self._kueue.freshness)

    def add_health_listener(self, listener: HealthListener) -> Callable[[], None]:
        """Call ``listener()`` whenever :meth:`watch_health` changes; returns a remover."""
        return self._health_listeners.add(listener)

    def _health_changed(self) -> None:
        for listener in self._health_listeners.now():
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
            if not self._kueue.live:  # Kueue is away: ask often whether it is back
                probe_wait = self._kueue.probe_due_in()
                if probe_wait <= 0:
                    self._probe_kueue_quietly()
                    continue
                wait = min(wait, probe_wait)
            if wait > 0:
                # Asked already: wait out the gap (or a stop). Else: the interval, or a request.
                (stop if asked else self._refresh_wake).wait(wait)
                continue
            self._refresh_wake.clear()
            exact = self._refresh_exact.is_set()
            self._refresh_exact.clear()
            try:
                self.refresh(exact=exact)
            except Exception as err:  # keep following the cluster whatever one re-check hit
                if stop.is_set():
                    return  # stopped mid-check: the client was closed under us
                if isinstance(err, DWError):
                    log.info("jupyter_dw: re-checking permissions and APIs failed: %s", err)
                else:
                    log.exception("jupyter_dw: re-checking permissions and APIs failed")

    def _on_api_failure(self, failure: FailedCall) -> None:
        """A 403, or a 404 for a resource (not an object), from an API group we use: the
        permissions or the installed APIs may have changed, re-check soon."""
        kueue_down = kueue_failure(failure)
        if kueue_down is not None:
            was_live = self._kueue.live
            self._kueue.set(STALE, kueue_down)
            if was_live:  # the re-check thread then asks every KUEUE_PROBE_INTERVAL
                self._refresh_wake.set()
        if failure.group not in NEEDED_GROUPS:
            return
        if failure.status == 403:
            # The rules review cannot tell a RoleBinding's rule from a ClusterRoleBinding's
            # (see recheck_access): after a refusal, ask about each permission exactly.
            self._refresh_exact.set()
        if failure.status == 403 or (failure.status == 404 and failure.object_name is None):
            self._refresh_wake.set()

    def _stop_caches(self) -> None:
        self._cache_set.stop_all()

    def add_listener(self, listener: SessionListener) -> Callable[[], None]:
        """Call ``listener(plural, event_type, obj)`` on every cache change (on the cache's
        thread). Applies to caches started later too. Returns a remover."""
        return self._cache_set.add_listener(listener)
