"""The namespace's queues as one immutable answer, parsed from the caches once per change.
A query over the session's caches, memoized until a cache changes
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

from ..domain.kueue_model import (
    ClusterQueueQuota,
    CohortQuota,
    KueueObjectError,
    LocalQueueInfo,
    default_local_queue,
)
from ..domain.multikueue import Dispatcher, WorkerCluster, dispatchers, worker_clusters
from ..domain.priorities import PriorityClass
from ..domain.quota import QuotaTree
from ..domain.scheduling import FlavorTraits
from ..domain.validation import dns1123_subdomain_error
from ..k8s.errors import KubeApiError
from ..k8s.resources import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    COHORT,
    LOCAL_QUEUE,
    MULTIKUEUE_CLUSTER,
    MULTIKUEUE_CONFIG,
    RESOURCE_FLAVOR,
    WORKLOAD_PRIORITY_CLASS,
)
from ..k8s.session import KubeSession
from ..k8s.watch_cache import Object, WatchCache
from .errors import DWError, InvalidRequest, KubeForbidden

log = logging.getLogger(__name__)

QUEUE_SOURCES = (
    LOCAL_QUEUE,
    CLUSTER_QUEUE,
    COHORT,
    RESOURCE_FLAVOR,
    WORKLOAD_PRIORITY_CLASS,
    ADMISSION_CHECK,
    MULTIKUEUE_CONFIG,
    MULTIKUEUE_CLUSTER,
)
"""The kinds whose caches the queues are parsed from (a LocalQueue cache is required)."""


def queue_state(
    session: KubeSession,
    timeout: float | None = None,
    *,
    naming: str | None = None,
    default: bool = False,
) -> QueueState:
    """The parsed LocalQueues, ClusterQueues and Cohorts from ``session``'s caches (what the
    queue service builds its answers from, :mod:`jupyter_dw.core.queues`).

    Waits up to ``timeout`` (default: the session's request timeout) for the session's start
    and the caches' first sync, and raises what ``KubeSession.wait_ready`` raises (and
    ``NotInstalled`` without Kueue, ``KubeForbidden`` when LocalQueues cannot be listed and
    watched). Parsed once per change: until a cache changes, every caller of one session gets
    the same (immutable) :class:`QueueState`.

    ``naming``: a LocalQueue a request names. When the cache does not hold it, one ``get``
    asks whether it exists (made a moment ago, its watch event still on the way: a queue made
    and used at once must not be refused), and the cache is waited for. ``default``: a create
    that names none and takes the namespace's default; when the cache shows no default
    LocalQueue, one ``list`` asks for LocalQueues the cache has yet to see, the same way (not
    for a fit, which a form asks for as the user types).
    """
    state = _queue_state(session, timeout)
    if naming is None:
        if default and default_local_queue(state.local_queues, session.namespace) is None:
            return _with_unseen_queues(session, state, timeout)
        return state
    if any(lq.name == naming for lq in state.local_queues):
        return state
    if dns1123_subdomain_error(naming) is not None:
        return state  # no object can have this name: the caller's check says why
    resource = session.discovery.kueue(LOCAL_QUEUE)
    if resource is None:
        return state
    try:
        found = session.get_object(resource, naming)
    except (KubeForbidden, InvalidRequest):
        return state  # not ours to read, or no name at all: the caller's check answers
    except KubeApiError as err:
        if err.api_status != 404:
            raise
        return state  # there is none: the caller's check says so
    session.catch_up(LOCAL_QUEUE.plural, naming, str(found["metadata"]["resourceVersion"]))
    return _queue_state(session, timeout)


def _with_unseen_queues(
    session: KubeSession, state: QueueState, timeout: float | None
) -> QueueState:
    """``state`` once the cache holds every LocalQueue one ``list`` of the API server shows
    (a queue made a moment ago), or as it is when there is none or the list fails."""
    resource = session.discovery.kueue(LOCAL_QUEUE)
    if resource is None:
        return state
    try:
        listed = session.api.get(resource.path(session.namespace))
    except DWError:
        return state  # the list is a second chance, not a new way to fail
    known = {lq.name for lq in state.local_queues}
    unseen = [
        item["metadata"]
        for item in listed.get("items", [])
        if item.get("metadata", {}).get("name") not in known
    ]
    for metadata in unseen:
        session.catch_up(LOCAL_QUEUE.plural, metadata["name"], str(metadata["resourceVersion"]))
    return _queue_state(session, timeout) if unseen else state


def _queue_state(session: KubeSession, timeout: float | None) -> QueueState:
    deadline = time.monotonic() + (session.request_timeout if timeout is None else timeout)
    session.wait_ready(max(0.0, deadline - time.monotonic()))
    session.discovery.require_kueue()
    # Waiting and raising stay per call: only parsing is shared between calls.
    caches = tuple(
        session.synced_cache(kind, deadline, required=kind is LOCAL_QUEUE) for kind in QUEUE_SOURCES
    )
    cohorts_served = session.discovery.cohort_version is not None
    return _memo_of(session).state(cohorts_served, caches)


_MEMOS: weakref.WeakKeyDictionary[KubeSession, QueueStateMemo] = weakref.WeakKeyDictionary()
"""One memo per session, shared by every service and view of it (the queue service reuses
its last answer while it is handed the same :class:`QueueState`); it goes with its session."""
_MEMOS_LOCK = threading.Lock()


def _memo_of(session: KubeSession) -> QueueStateMemo:
    memo = _MEMOS.get(session)
    if memo is None:
        with _MEMOS_LOCK:  # two first callers must share one memo
            memo = _MEMOS.setdefault(session, QueueStateMemo())
    return memo


@dataclass(frozen=True)
class QueueState:
    """The namespace's LocalQueues and, when readable, all ClusterQueues and Cohorts.

    ``cluster_queues`` None: this identity may not read ClusterQueues (quota hidden).
    ``cohorts`` None: Cohort objects are served but not readable; empty when there are none.
    ``flavors`` None: ResourceFlavors are not readable (every flavor is assumed usable).
    ``priority_classes`` None: WorkloadPriorityClasses are not readable (names not checked).
    ``dispatchers``: the AdmissionChecks MultiKueue runs, by name (None: AdmissionChecks are
    not readable; each Workload then tells where it went on its own); ``worker_clusters``:
    the MultiKueueClusters (None: not readable).

    One instance answers every caller until a cache changes (:func:`queue_state`),
    so it is immutable: tuples and a read-only mapping.
    """

    local_queues: tuple[LocalQueueInfo, ...]
    cluster_queues: tuple[ClusterQueueQuota, ...] | None
    cohorts: tuple[CohortQuota, ...] | None
    flavors: Mapping[str, FlavorTraits] | None = None
    priority_classes: tuple[PriorityClass, ...] | None = None
    dispatchers: Mapping[str, Dispatcher] | None = None
    worker_clusters: tuple[WorkerCluster, ...] | None = None

    @property
    def dispatching(self) -> frozenset[str] | None:
        """The names of the AdmissionChecks MultiKueue runs; None when not readable."""
        return frozenset(self.dispatchers) if self.dispatchers is not None else None

    @cached_property
    def quota_tree(self) -> QuotaTree | None:
        """The ClusterQueues and Cohorts linked as Kueue links them (headroom, limits); None
        when ClusterQueues are not readable. Built once per state: the queue summaries, a fit
        and the change feed share it."""
        if self.cluster_queues is None:
            return None
        return QuotaTree(self.cluster_queues, self.cohorts or ())


QueueInputs = tuple[bool, tuple[tuple[WatchCache, int] | None, ...]]
"""What a :class:`QueueState` is parsed from: whether Cohorts are served, then per cache
(LocalQueues, ClusterQueues, Cohorts, ResourceFlavors, WorkloadPriorityClasses,
AdmissionChecks, MultiKueueConfigs, MultiKueueClusters) the cache object and its generation,
or None when it is not read."""

Parsed = dict[int, tuple[Object, Any]]
"""``id(object dict) -> (that dict, what it parsed to)``; the dict is held so its id stays its."""


class QueueStateMemo:
    """The last answer, its inputs and its parsed objects. Replaced whole (one assignment,
    atomic), never mutated: readers on any thread see a matching triple without a lock."""

    def __init__(self) -> None:
        self._memo: tuple[QueueInputs, QueueState, Parsed] | None = None

    def state(self, cohorts_served: bool, caches: tuple[WatchCache | None, ...]) -> QueueState:
        """The :class:`QueueState` of ``caches`` (synced, or None when not read), parsed
        again only when one of them changed.

        The key holds the cache objects themselves: a permission revoked or granted, or an
        API version changed, replaces or drops a cache (a new one restarts at generation 0).
        A cache gone stale keeps its objects and generation; it answers as it would without
        the memo, and the watch health says it is stale."""
        memo = self._memo
        current = (cohorts_served, tuple((c, c.generation) if c else None for c in caches))
        if memo is not None and memo[0] == current:
            return memo[1]
        parser = Parser(memo[2] if memo is not None else {})
        inputs, state = parse_queue_state(cohorts_served, caches, parser)
        # Two threads may both parse after a change; each triple stored is consistent, and an
        # older one stored last is only parsed again on the next call.
        self._memo = (inputs, state, parser.parsed)
        return state


def parse_queue_state(
    cohorts_served: bool, caches: tuple[WatchCache | None, ...], parse: Parser
) -> tuple[QueueInputs, QueueState]:
    """Parse the queue caches' snapshots (LocalQueues, ClusterQueues, Cohorts,
    ResourceFlavors, WorkloadPriorityClasses, AdmissionChecks, MultiKueueConfigs,
    MultiKueueClusters; None: not read). Each snapshot is read with its
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
    local_queues, cluster_queues, cohorts, flavors, priorities, checks, configs, workers = (
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
        # A few objects, rarely changed: read whole on each change of any queue cache.
        dispatchers=(
            MappingProxyType(dispatchers(checks, configs)) if checks is not None else None
        ),
        worker_clusters=worker_clusters(workers) if workers is not None else None,
    )
    return inputs, state


class Parser:
    """Parses cache objects, reusing what the previous parse made of the very same dict: a
    cache replaces an object's dict when the object changes, so after one change one object
    is parsed again, not every one. :attr:`parsed` holds what this parser saw, for the next."""

    def __init__(self, earlier: Parsed) -> None:
        self._earlier = earlier
        self.parsed: Parsed = {}

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
