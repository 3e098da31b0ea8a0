"""The namespace's LocalQueues with their quota and headroom, as every surface shows them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..domain.multikueue import Dispatcher, dispatchers_seen
from ..domain.priorities import PriorityClass
from ..domain.quota import QueueSummary, queue_summaries
from ..k8s.resources import WORKLOAD
from ..k8s.session import KubeSession
from ..k8s.watch_cache import WatchCache
from .listing import ByName
from .queue_state import QueueState, queue_state


@dataclass(frozen=True)
class QueueList(ByName["QueueSummary"]):
    """The ``GET queues`` answer: every LocalQueue of ``namespace`` with its quota. A
    sequence of its queues: iterate it, ``len()`` it, index it by position or by name.

    ``quota_visible`` False: ClusterQueues are not readable by this identity (each queue's
    ``hint`` names the permission). ``cohorts_visible`` False: Cohort objects exist but cannot
    be read, so headroom may miss quota set on them. ``priority_classes``: the
    WorkloadPriorityClasses a cluster's ``priority`` may name, highest value first; None when
    this identity may not read them. ``formatted``: JSON already made for some of ``queues``
    (by an equal summary of an earlier answer), so a change formats only what it changed.
    """

    namespace: str
    kueue_api: str | None
    quota_visible: bool
    cohorts_visible: bool
    queues: tuple[QueueSummary, ...]
    priority_classes: tuple[PriorityClass, ...] | None = None
    formatted: Mapping[QueueSummary, dict[str, Any]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def _entries(self) -> tuple[QueueSummary, ...]:
        return self.queues

    def to_json(self) -> dict[str, Any]:
        """The REST shape (quantities as Kubernetes quantity strings).

        Formatted once per answer (a few thousand quantities at 200 queues: most of what an
        unchanged ``GET queues`` would cost); each call still returns its own dicts and
        lists, so a caller may keep or change them.
        """
        return {
            "namespace": self.namespace,
            "kueue_api": self.kueue_api,
            "quota_visible": self.quota_visible,
            "cohorts_visible": self.cohorts_visible,
            # A queue's only containers are itself and its resource rows; the rest are
            # strings, numbers and None: copying those two levels copies everything mutable.
            "queues": [
                {**q, "resources": [dict(r) for r in q["resources"]]} for q in self._queues_json
            ],
            "priority_classes": (
                [c.to_json() for c in self.priority_classes]
                if self.priority_classes is not None
                else None
            ),
        }

    @cached_property
    def _queues_json(self) -> tuple[dict[str, Any], ...]:
        return tuple(self.formatted.get(q) or q.to_json() for q in self.queues)

    def records_json(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """The REST records of the queues called ``names`` (in the answer's order), as
        :meth:`to_json` lists them: what a ``queue`` events message carries."""
        wanted = set(names)
        return [
            {**q, "resources": [dict(r) for r in q["resources"]]}
            for summary, q in zip(self.queues, self._queues_json, strict=True)
            if summary.name in wanted
        ]

    def changed_since(self, before: QueueList) -> tuple[str, ...] | None:
        """The names of the LocalQueues whose records differ from ``before``'s, in this
        answer's order; None when more than records changed (a queue came or went, or the
        answer's other fields: then the whole answer is news)."""
        if (
            self.namespace,
            self.kueue_api,
            self.quota_visible,
            self.cohorts_visible,
            self.priority_classes,
        ) != (
            before.namespace,
            before.kueue_api,
            before.quota_visible,
            before.cohorts_visible,
            before.priority_classes,
        ):
            return None
        if [q.name for q in self.queues] != [q.name for q in before.queues]:
            return None
        return tuple(
            now.name
            for now, then in zip(self.queues, before.queues, strict=True)
            if now is not then and now != then
        )

    def get(self, name: str) -> QueueSummary | None:
        """The queue called ``name``, if there is one."""
        return next((q for q in self.queues if q.name == name), None)

    @property
    def default(self) -> QueueSummary | None:
        """The namespace's default queue, if it has one."""
        return next((q for q in self.queues if q.default), None)


@dataclass
class _LastDelta:
    """The last :meth:`QueueService.changes` asked: every viewer told ``before`` asks the same
    question after a change, and the first answer serves the others."""

    entry: tuple[QueueList, QueueList, tuple[str, ...] | None] | None = None


About = tuple[str, str | None, tuple[tuple[str, Dispatcher], ...]]
"""What an answer is made from besides the queue state: the namespace, Kueue's version and
the MultiKueue checks the Workloads tell of (:meth:`QueueService._dispatchers_seen`)."""


@dataclass
class _LastList:
    """The last :class:`QueueList` and what it was built from. ``entry`` is replaced whole
    (one assignment, atomic), never mutated: readers on any thread see a matching triple."""

    entry: tuple[QueueState, About, QueueList] | None = None


@dataclass
class _LastSeen:
    """What the Workload cache last told of MultiKueue's checks per queue, and the cache and
    its generation it was read at (replaced whole)."""

    entry: tuple[WatchCache, int, Mapping[str, Dispatcher]] | None = None


@dataclass(frozen=True)
class QueueService:
    """Queues for one session: answers come from its watch caches."""

    session: KubeSession
    _last: _LastList = field(default_factory=_LastList, init=False, repr=False, compare=False)
    _delta: _LastDelta = field(default_factory=_LastDelta, init=False, repr=False, compare=False)
    _seen: _LastSeen = field(default_factory=_LastSeen, init=False, repr=False, compare=False)

    def state(self, timeout: float | None = None) -> QueueState:
        """The parsed Kueue objects (waits for the caches' first sync)."""
        return queue_state(self.session, timeout)

    def list(self, timeout: float | None = None) -> QueueList:
        """Every LocalQueue of the namespace with its quota and headroom.

        Raises ``NotInstalled`` without Kueue and ``KubeForbidden`` when LocalQueues cannot
        be listed and watched; hidden quota is not an error. Derived once per change of the
        caches: until one changes, every caller gets the same (immutable) answer.
        """
        state = self.state(timeout)
        # The session hands out one QueueState per change of its caches: the same object
        # means the same inputs. The namespace and Kueue's version are read from discovery,
        # which a re-check may change without any cache changing.
        seen = self._dispatchers_seen(state)
        about = (self.session.namespace, self.session.discovery.kueue_version, seen)
        last = self._last.entry
        if last is not None and last[0] is state and last[1] == about:
            return last[2]
        summaries = queue_summaries(
            state.local_queues,
            state.cluster_queues,
            state.cohorts,
            tree=state.quota_tree,
            dispatchers=state.dispatchers,
            seen=dict(seen),
        )
        # Formatting is most of the cost after a change: reuse the JSON of every summary
        # equal to one of the last answer (a frozen value: equal summaries, equal JSON).
        earlier = last[2].formatted if last is not None else {}
        answer = QueueList(
            namespace=about[0],
            kueue_api=about[1],
            quota_visible=state.cluster_queues is not None,
            cohorts_visible=state.cohorts is not None,
            queues=tuple(summaries),
            priority_classes=state.priority_classes,
            formatted={q: earlier.get(q) or q.to_json() for q in summaries},
        )
        self._last.entry = (state, about, answer)
        return answer

    def _dispatchers_seen(self, state: QueueState) -> tuple[tuple[str, Dispatcher], ...]:
        """By LocalQueue, the MultiKueue check its Workloads were placed by, when the queue's
        own objects cannot tell (AdmissionChecks or ClusterQueues not readable); read from
        the Workload cache once per change of it. Never opens a watch for this: nothing when
        the Workloads are not watched already (a kernel that shows none)."""
        if state.dispatchers is not None and state.cluster_queues is not None:
            return ()
        if WORKLOAD.plural not in self.session.watched:
            return ()
        cache = self.session.cache(WORKLOAD)
        if cache is None or not cache.synced:
            return ()
        last = self._seen.entry
        if last is not None and last[0] is cache and last[1] == cache.generation:
            return tuple(sorted(last[2].items()))
        generation, workloads = cache.versioned_snapshot()
        seen = dispatchers_seen(workloads)
        self._seen.entry = (cache, generation, seen)
        return tuple(sorted(seen.items()))

    def changes(self, before: QueueList, now: QueueList) -> tuple[str, ...] | None:
        """:meth:`QueueList.changed_since`, compared once for every viewer that was told
        ``before`` (the sockets of one server ask the same question after each change)."""
        last = self._delta.entry
        if last is not None and last[0] is before and last[1] is now:
            return last[2]
        changed = now.changed_since(before)
        self._delta.entry = (before, now, changed)
        return changed
