"""The namespace's LocalQueues with their quota and headroom, as every surface shows them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..domain.multikueue import Dispatcher, dispatchers_seen
from ..domain.quota import queue_summaries
from ..k8s.resources import WORKLOAD
from ..k8s.session import KubeSession
from ..k8s.watch_cache import WatchCache
from .queue_results import QueueList
from .queue_state import QueueState, queue_state


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
