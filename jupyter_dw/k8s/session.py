"""``KubeSession``: the one object every surface shares to see Kueue from this identity.

It connects, keeps its watch caches matching what discovery serves and the permissions allow
(permissions re-checked every ``refresh_interval`` and after a 403; discovery when a signal
says the APIs may have changed: ``recheck_schedule``), and stops. It owns what it
knows (``session_state``) and the reads and writes it answers (``session_answers``). Why and
how: docs/explanation/architecture.md, "The session".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from jupyter_dw.domain.freshness import STALE, WatchHealth

from ..domain.errors import DWError
from ..domain.job_kind import JobKind
from ..domain.workloads import kueue_decides
from .access import (
    NEEDED_PERMISSIONS,
    AccessResult,
    Identity,
    Permission,
    check_access,
    recheck_access,
    who_am_i,
)
from .auth import Credentials, load_credentials
from .cache_set import CacheSet, Kind, SessionListener, served, wanted_caches
from .client import DEFAULT_TIMEOUT, FailedCall, KubeApi
from .discovery import Discovery, discover
from .elastic import NOT_PROBED, ElasticJobs, probe_elastic_jobs
from .errors import KubeError, NotInstalled, NotReady
from .kueue_health import KueueHealth, kueue_failure
from .listeners import Listeners
from .metrics import MetricsRead
from .recheck_schedule import SECOND_LOOK_SECONDS, RecheckSchedule
from .resources import LOCAL_QUEUE, RAY_CLUSTER, WORKLOAD, Resource
from .session_answers import SessionAnswers
from .session_state import Connection, SessionState
from .watch_cache import DEFAULT_IDLE_TIMEOUT, Backoff, Object, WatchCache

__all__ = ["KubeSession", "SessionListener"]

log = logging.getLogger(__name__)

DEFAULT_REFRESH_INTERVAL = 60.0
"""Seconds between two re-checks of the permissions when nothing asks sooner."""
MIN_REFRESH_GAP = 2.0
"""A 403 or 404 asks for a re-check at once, but at most one per this many seconds."""
LOSS_GRACE = 10.0
"""Seconds an API must stay missing from discovery before the session believes it is gone."""
NEEDED_GROUPS = frozenset(p.group for p in NEEDED_PERMISSIONS)
"""API groups whose 403 or missing resource (404) means permissions or APIs changed."""

Related = tuple[Resource, ...]
"""What a read of jobs waits for besides them (a RayJob's RayClusters)."""

HealthListener = Callable[[], None]
"""Called (on any thread) when the health of a cache or of Kueue's controller changed."""


class KubeSession:
    """Credentials, identity, discovery and watch caches for one namespace.

    ``namespace`` None means the service account's namespace, else the kubeconfig context's
    (``default`` if it names none). ``request_timeout`` bounds each API call and how long a
    request waits for the caches' first sync. ``refresh_interval``: seconds between two
    re-checks of the permissions; ``discovery_refresh_interval``: seconds between two
    re-checks of the served APIs and Kueue's controller whatever the signals (0: on signals
    only, see :mod:`.recheck_schedule`).

    Typical use::

        session = KubeSession()
        session.start_background()          # returns at once
        session.ray_clusters()              # waits for the first sync, then answers
        session.stop()

    The session owns two collaborators: ``_state`` (:class:`SessionState`: the connection
    and the caches, which only the session writes) and ``_answers`` (:class:`SessionAnswers`:
    the reads and writes, over that state). Its public reads hand over to them.
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
        discovery_refresh_interval: float = 0.0,
    ) -> None:
        if refresh_interval <= 0:
            raise ValueError(f"refresh_interval must be positive, got {refresh_interval}")
        if watch_idle_timeout <= 0:
            raise ValueError(f"watch_idle_timeout must be positive, got {watch_idle_timeout}")
        self._schedule = RecheckSchedule(refresh_interval, discovery_refresh_interval)
        self.refresh_interval = refresh_interval
        self.watch_idle_timeout = watch_idle_timeout
        self.request_timeout = request_timeout
        self._service_account_dir = service_account_dir
        self._kube_context = kube_context or None
        self._credentials = credentials  # given, else loaded by the first connect and kept
        self._environ = environ
        self._lazy_watches = lazy_watches
        self._lock = threading.RLock()
        self._start_lock = threading.Lock()
        self._starter: threading.Thread | None = None
        self._start_error: DWError | None = None
        self._stopping = False
        self._health_listeners: Listeners[HealthListener] = Listeners()
        cache_set = CacheSet(
            self._lock,
            self._health_changed,
            backoff=backoff,
            idle_timeout=watch_idle_timeout,
            lazy=lazy_watches,
            on_interrupted=self._watch_interrupted,
        )
        self._state = SessionState(cache_set, request_timeout, namespace or None)
        self._answers = SessionAnswers(self._state, self.wait_ready, self._kueue_answered)
        self._refresh_wake = threading.Event()
        self._refresh_stop = threading.Event()
        self._refresh_exact = threading.Event()  # a 403 asked: review each permission
        self.refreshes = 0
        """How many re-checks ran after start (for diagnostics and tests)."""
        self.discoveries = 0
        """How many of them asked discovery (for diagnostics and tests)."""
        self._reset_state()

    def _reset_state(self) -> None:
        self._state.connection = None
        self._state.cache_set.reset()
        self._kueue = KueueHealth(self._health_changed)
        self._last_refresh = 0.0
        self._elastic: ElasticJobs = NOT_PROBED
        self._elastic_asked_at = -1  # self._kueue.returns when the dry run last ran
        self._loss_since: float | None = None  # when re-checks began to see APIs gone

    def _connection_of(self, api: KubeApi) -> Connection | None:
        """The connection, if it is still the one of ``api`` (a stop or restart replaces it)."""
        connection = self._state.connection
        return connection if connection is not None and connection.api is api else None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Connect and start the caches; blocks until the caches are started (not synced).

        Idempotent. Raises :class:`KubeError` (no credentials, unreachable, forbidden).
        """
        # One start at a time; _lock stays free meanwhile so readers never wait on I/O.
        with self._start_lock:
            if self._state.started.is_set():
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
                    self._disconnect()
                    return
                self._start_error = None
                self._state.started.set()
                self._start_refresher()

    def start_background(self) -> None:
        """Start on a daemon thread and return at once (a failed start is retried by the
        next :meth:`wait_ready`)."""
        with self._lock:
            if self._state.started.is_set() or (self._starter and self._starter.is_alive()):
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
        if self._state.started.is_set():
            return
        with self._lock:
            if self._starter is None or self._start_error is not None:
                self.start_background()  # never started, or the last attempt failed
            starter = self._starter
        assert starter is not None
        starter.join(timeout)
        if self._state.started.is_set():
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
            self._disconnect()
            self._state.started.clear()

    def _disconnect(self) -> None:
        """Stop the caches, close the client and forget the connection (lock held)."""
        self._stop_caches()
        if self._state.connection is not None:
            self._state.connection.api.close()
        self._reset_state()

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
        namespace = self._state.configured_namespace or credentials.namespace or "default"
        discovery = discover(api)
        identity = who_am_i(api)
        access = recheck_access(api, namespace)
        self._credentials = credentials
        with self._lock:
            self._state.connection = Connection(
                credentials, api, namespace, discovery, identity, access
            )
        self._last_refresh = time.monotonic()
        self._schedule.connected(self._kueue.returns)
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
        connection = self._state.connection
        discovery = connection.discovery if connection is not None else None
        asked_at = self._kueue.returns
        if discovery is None or not discovery.kuberay_installed or discovery.kueue_version is None:
            found = ElasticJobs(None, "unknown", "Kueue or KubeRay is not installed")
        elif self._state.allowed("create", RAY_CLUSTER) is False:
            found = ElasticJobs(None, "unknown", "cannot tell: may not create rayclusters")
        else:
            cache = self._state.caches.get(LOCAL_QUEUE.plural)
            queues = cache.snapshot() if cache is not None and cache.synced else []
            queue = next((str(q["metadata"]["name"]) for q in queues if q.get("metadata")), None)
            found = probe_elastic_jobs(api, self._state.namespace_or_empty or "default", queue)
        with self._lock:
            if self._connection_of(api) is not None:
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
            connection = self._connection_of(api)
            if self._stopping or connection is None:
                return
            discovery = connection.discovery
            started, stopped, revoked_changed = self._state.cache_set.update(
                api,
                connection.namespace,
                wanted_caches(discovery, self._state.denied),
                lambda resource: served(discovery, resource),
                connection.access,
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

        Raises :class:`KubeError` when the API server cannot answer (the previous answers
        stay). Costs one aggregated discovery GET (plus the RayCluster schema's OpenAPI
        index) and one SelfSubjectRulesReview (:func:`~.access.recheck_access`); ``exact``
        (after a 403) reviews each permission instead. The re-check that runs by itself
        (every ``refresh_interval``, sooner after a 403 or a signal) asks discovery only when
        :class:`~.recheck_schedule.RecheckSchedule` says so.
        """
        return self._recheck(exact, discover=True, periodic=False)

    def _recheck(self, exact: bool, discover: bool, periodic: bool) -> bool:
        """:meth:`refresh`, asking discovery only when ``discover``; Kueue's controller is
        probed when ``periodic`` or :meth:`_kueue_probe_due`."""
        with self._lock:
            connection = self._state.connection
        if connection is None or not self._state.started.is_set():
            return False
        api = connection.api
        kueue_returns = self._kueue.returns
        fresh, access = self._ask_again(connection, exact, discover)
        if fresh is not None:
            self._schedule.discovered(kueue_returns)
        with self._lock:
            known = self._connection_of(api)
            if self._stopping or known is None:
                return False
            discovery = (
                known.discovery  # as now: another re-check may have replaced it meanwhile
                if fresh is None
                else self._discovery_to_believe(known.discovery, fresh)
            )
            checked = replace(known, discovery=discovery, access=access)
            self._state.connection = checked
            self.refreshes += 1
            self.discoveries += discover
        changed = _changed(known, checked)
        if changed:
            _log_change(known, checked)
        self._sync_caches(api)
        if periodic or self._kueue_probe_due():
            self._kueue.probe(api, discovery, self.request_timeout)
        if self._elastic_worth_asking(changed):
            self._probe_elastic(api)
        return changed

    def _ask_again(
        self, connection: Connection, exact: bool, discover_too: bool
    ) -> tuple[Discovery | None, dict[Permission, AccessResult]]:
        """Discovery (None unless ``discover_too``) and the access verdicts as the API server
        gives them now (I/O)."""
        api, namespace = connection.api, connection.namespace
        try:
            discovery = discover(api) if discover_too else None
            if exact:
                return discovery, check_access(api, namespace)
            return discovery, recheck_access(api, namespace, connection.access)
        finally:
            self._last_refresh = time.monotonic()

    def _discovery_to_believe(self, known: Discovery, fresh: Discovery) -> Discovery:
        """``fresh``, unless it lost API groups ``known`` has and the loss is younger than
        ``LOSS_GRACE``: a kube-apiserver that has just restarted answers discovery without
        its CRDs' groups for seconds. Meanwhile ``known`` stands and the re-check is asked
        again (every ``MIN_REFRESH_GAP``). Lock held."""
        if not known.loses(fresh):
            self._loss_since = None
            return fresh
        now = time.monotonic()
        self._loss_since = self._loss_since or now
        if now - self._loss_since < LOSS_GRACE:
            self._schedule.ask_discovery()
            self._refresh_wake.set()
            return known
        self._loss_since = None
        return fresh

    def _watch_interrupted(self) -> None:
        """A watch ended early or opened again after failures (on a cache's thread): the
        served APIs may have changed (a CRD updated in place, an API server restarted). A
        re-check with discovery runs now and another ``SECOND_LOOK_SECONDS`` later."""
        if self._schedule.watch_interrupted():
            self._refresh_wake.set()
            second_look = threading.Timer(SECOND_LOOK_SECONDS, self._refresh_wake.set)
            second_look.daemon = True  # never keeps a process alive
            second_look.start()

    def require(self, kind: JobKind[Any, Any]) -> Resource:
        """The resource of workload kind ``kind`` (:meth:`Discovery.require`). When discovery
        says it is not served, it is asked again first (a full :meth:`refresh`, at most once
        per ``refresh_interval``): a CRD installed after start-up is found by the first
        request that needs it, with no periodic discovery. Raises ``NotInstalled`` when it
        is still not served."""
        self.wait_ready()
        try:
            return self.discovery.require(kind)
        except NotInstalled:
            if not self._schedule.may_rediscover_now():
                raise
        self.refresh()
        return self.discovery.require(kind)

    # -- Kueue's controller --------------------------------------------------------------

    def _kueue_answered(self) -> None:
        self._kueue.answered()

    def _kueue_probe_due(self) -> bool:
        """Whether a re-check probes Kueue's controller: nothing but the probe notices its
        process stopping while nobody calls it (its Workloads are served by the API server),
        but that matters only while Kueue decides something here, a Workload of the namespace
        that is active and not finished; and a visibility call answered since the last
        re-check already said it runs."""
        if self._kueue.take_answered():
            return False
        cache = self._state.caches.get(WORKLOAD.plural)
        if cache is None or not cache.started:
            return False  # not read: nothing shown depends on Kueue's answers
        return any(kueue_decides(workload) for workload in cache.snapshot())

    def _probe_kueue_quietly(self) -> None:
        with self._lock:
            connection = self._state.connection
        if connection is None:
            return
        try:
            self._kueue.probe(connection.api, connection.discovery, self.request_timeout)
        except Exception:  # the probe must never stop the re-check thread
            log.exception("jupyter_dw: checking whether Kueue answers failed")

    # -- watch health --------------------------------------------------------------------

    @property
    def kueue_probes(self) -> int:
        """How many times this connection probed Kueue's controller (for diagnostics and
        tests)."""
        return self._kueue.probes

    def watch_health(self) -> WatchHealth:
        """Each open cache's health (one not opened yet, watching lazily, is not listed; one
        stopped by a revoked permission is, as ``stale``) and Kueue controller's."""
        return WatchHealth(self._state.cache_set.health(), self._kueue.freshness)

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
        """Re-check every ``refresh_interval``, or sooner when :meth:`_on_api_failure` or
        :meth:`_watch_interrupted` asks, but never twice within ``MIN_REFRESH_GAP``; what a
        re-check asks is :meth:`_recheck_as_planned`'s. Waits on events: no polling."""
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
                self._recheck_as_planned(exact)
            except Exception as err:  # keep following the cluster whatever one re-check hit
                if stop.is_set():
                    return  # stopped mid-check: the client was closed under us
                if isinstance(err, DWError):
                    log.info("jupyter_dw: re-checking permissions and APIs failed: %s", err)
                else:
                    log.exception("jupyter_dw: re-checking permissions and APIs failed")

    def _recheck_as_planned(self, exact: bool) -> None:
        """One re-check: the rules review, and discovery when the schedule says so."""
        with self._lock:
            connection = self._state.connection
        if connection is None:
            return
        plan = self._schedule.plan(connection.discovery, self._kueue.returns)
        self._recheck(exact, plan.discover, plan.periodic)

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
        if failure.status == 404 and failure.object_name is None:
            self._schedule.ask_discovery()  # a resource gone: uninstalled, or moved version
        if failure.status == 403 or (failure.status == 404 and failure.object_name is None):
            self._refresh_wake.set()

    def _stop_caches(self) -> None:
        self._state.cache_set.stop_all()

    def add_listener(self, listener: SessionListener) -> Callable[[], None]:
        """Call ``listener(plural, event_type, obj)`` on every cache change (on the cache's
        thread). Applies to caches started later too. Returns a remover."""
        return self._state.cache_set.add_listener(listener)

    # -- what is known once connected (SessionState) -------------------------------------

    @property
    def ready(self) -> bool:
        """True once :meth:`start` has succeeded (caches may still be syncing)."""
        return self._state.ready

    @property
    def namespace(self) -> str:
        """The namespace in use (after start)."""
        return self._state.namespace

    @property
    def namespace_source(self) -> str:
        """Where the namespace came from: ``config``, or the credentials' source."""
        return "config" if self._state.configured_namespace else self.credentials.source

    @property
    def discovery(self) -> Discovery:
        """What the cluster serves (after start)."""
        return self._state.discovery

    @property
    def identity(self) -> Identity:
        """Who the API server says we are (after start)."""
        return self._state.connected().identity

    @property
    def credentials(self) -> Credentials:
        """The credentials in use (after start)."""
        return self._state.connected().credentials

    @property
    def api(self) -> KubeApi:
        """The API client (after start), for calls no cache answers."""
        return self._state.api

    @property
    def access(self) -> dict[Permission, AccessResult]:
        """Verdicts on every needed permission, as last checked (at start, then re-checked
        every ``refresh_interval`` and after a 403)."""
        return self._state.access

    def allowed(self, verb: str, kind: Kind, subresource: str = "") -> bool | None:
        """The last verdict for ``verb`` on ``kind`` (None if it was not checked)."""
        return self._state.allowed(verb, kind, subresource)

    # -- the caches ----------------------------------------------------------------------

    @property
    def _caches(self) -> dict[str, WatchCache]:
        """The caches by plural (the set itself: :class:`~jupyter_dw.k8s.cache_set.CacheSet`)."""
        return self._state.caches

    def cache(self, kind: Kind) -> WatchCache | None:
        """The watch cache of ``kind``, None if not served or not readable (started now if
        the session watches lazily)."""
        return self._state.cache_set.watching(kind.plural)

    @property
    def watched(self) -> list[str]:
        """The plurals whose watches are open."""
        return [plural for plural, cache in self._state.caches.items() if cache.started]

    def cache_health(self) -> dict[str, tuple[bool, str | None]]:
        """Per watched plural: ``(synced, last error)``."""
        return {
            plural: (cache.synced, str(cache.last_error) if cache.last_error else None)
            for plural, cache in self._state.caches.items()
        }

    def synced_cache(
        self, kind: Kind, deadline: float, required: bool = False
    ) -> WatchCache | None:
        """The cache of ``kind`` once synced (see :meth:`SessionState.synced_cache`)."""
        return self._state.synced_cache(kind, deadline, required)

    # -- reads and writes: SessionAnswers answers them (session_answers.py) --------------

    def indexed(self, kind: Kind | str, index: str, key: str) -> list[Object]:
        return self._answers.indexed(kind, index, key)

    def get_object(self, resource: Resource, name: str) -> Object:
        return self._answers.get_object(resource, name)

    def ray_clusters(self, timeout: float | None = None) -> list[Object]:
        return self._answers.ray_clusters(timeout)

    def ray_cluster(self, name: str, timeout: float | None = None) -> Object:
        return self._answers.ray_cluster(name, timeout)

    def find_ray_cluster(self, name: str) -> Object | None:
        return self._answers.find_ray_cluster(name)

    def cached_ray_cluster(self, name: str) -> Object | None:
        return self._answers.cached_ray_cluster(name)

    def cached_ray_clusters(self) -> list[Object]:
        return self._answers.cached_ray_clusters()

    def workloads(self, timeout: float | None = None) -> list[Object]:
        return self._answers.workloads(timeout)

    def cached_workload(self, name: str) -> Object | None:
        return self._answers.cached_workload(name)

    def watched_jobs(
        self, resource: Resource, timeout: float | None = None, also: Related = ()
    ) -> list[Object]:
        return self._answers.watched_jobs(resource, timeout, also)

    def watched_job(
        self, resource: Resource, name: str, timeout: float | None = None, also: Related = ()
    ) -> Object:
        return self._answers.watched_job(resource, name, timeout, also)

    def cached_jobs(self, resource: Resource) -> list[Object]:
        return self._answers.cached_jobs(resource)

    def cached_job(self, resource: Resource, name: str) -> Object | None:
        return self._answers.cached_job(resource, name)

    @property
    def positions_visible(self) -> bool:
        return self._answers.positions_visible

    def pending_workloads(self, local_queue: str) -> list[Object] | None:
        return self._answers.pending_workloads(local_queue)

    def cluster_queue_pending_workloads(self, cluster_queue: str) -> list[Object] | None:
        return self._answers.cluster_queue_pending_workloads(cluster_queue)

    def pod_metrics(self) -> MetricsRead:
        return self._answers.pod_metrics()

    def create_raycluster(self, obj: Object) -> Object:
        return self._answers.create_raycluster(obj)

    def create_job(self, resource: Resource, obj: Object) -> Object:
        return self._answers.create_job(resource, obj)

    def patch_raycluster(self, name: str, operations: list[dict[str, Any]]) -> Object:
        return self._answers.patch_raycluster(name, operations)

    def annotate_raycluster(
        self, name: str, annotations: dict[str, str | None], dry_run: bool = False
    ) -> Object:
        return self._answers.annotate_raycluster(name, annotations, dry_run)

    def set_workload_active(self, name: str, active: bool, dry_run: bool = False) -> Object:
        return self._answers.set_workload_active(name, active, dry_run)

    def delete_raycluster(self, name: str) -> Object:
        return self._answers.delete_raycluster(name)

    def delete_object(self, resource: Resource, name: str) -> Object:
        return self._answers.delete_object(resource, name)

    def record_event(self, involved: Object, reason: str, message: str) -> Object:
        return self._answers.record_event(involved, reason, message)

    def wait_for_ray_cluster(self, name: str, resource_version: str) -> None:
        self._answers.wait_for_ray_cluster(name, resource_version)

    def catch_up(self, plural: str, name: str, resource_version: str) -> None:
        self._answers.catch_up(plural, name, resource_version)


def _verdicts(connection: Connection) -> dict[Permission, bool]:
    return {p: r.allowed for p, r in connection.access.items()}


def _changed(before: Connection, after: Connection) -> bool:
    """Whether a re-check found the served APIs or the permissions changed."""
    return before.discovery != after.discovery or _verdicts(before) != _verdicts(after)


def _log_change(before: Connection, after: Connection) -> None:
    """One line of what a re-check found: the permissions granted and revoked, and Kueue's
    and KubeRay's versions before and after."""
    was, now = _verdicts(before), _verdicts(after)
    granted = [p.name for p, ok in now.items() if ok and not was.get(p)]
    revoked = [p.name for p, ok in now.items() if not ok and was.get(p)]
    log.info(
        "jupyter_dw: permissions or APIs changed: granted %s; revoked %s; Kueue %s -> "
        "%s; KubeRay %s -> %s",
        ", ".join(granted) or "none",
        ", ".join(revoked) or "none",
        before.discovery.kueue_version,
        after.discovery.kueue_version,
        before.discovery.ray_version,
        after.discovery.ray_version,
    )
