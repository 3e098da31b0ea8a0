"""Kueue's queue positions of waiting Workloads, from the visibility API: one board per session.
Shared by every reader, it asks again only for a LocalQueue a change marked and never makes a
live view wait. What a position costs and how a lagging answer is settled:
docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..domain.pending_ties import keep_tie_order
from ..domain.workloads import queue_order
from ..k8s.errors import KubeUnreachable
from ..k8s.listeners import Listeners
from ..k8s.resources import CLUSTER_QUEUE, LOCAL_QUEUE, WORKLOAD
from ..k8s.session import KubeSession
from ..k8s.watch_events import DELETED

log = logging.getLogger(__name__)

Object = dict[str, Any]
Schedule = Callable[[float, Callable[[], None]], None]
"""``schedule(delay, call)``: run ``call()`` on another thread after ``delay`` seconds."""

RECHECK_DELAYS = (0.5, 1.0, 2.0, 4.0)
"""Seconds before each check of an answer that lists more Workloads than Kueue counts (7.5 s
in all: Kueue writes a LocalQueue's count within a second or two of its list changing)."""

_ANY_CLUSTER_QUEUE = ""
"""The mark of a ClusterQueue change that concerns LocalQueues whose ClusterQueue the board
does not know (no LocalQueue cache): they count every ClusterQueue's change."""


@dataclass(frozen=True)
class _Held:
    """A LocalQueue's last answer: ``tick`` when its call started (marks up to it are in it),
    ``version`` (counts answers that differed from the one before), its items."""

    tick: int
    version: int
    items: tuple[Object, ...]


class PositionBoard:
    """The visibility API's pending Workloads per LocalQueue, asked again only after a change
    that can move them (docs/explanation/kueue-mapping.md). Thread-safe; its reads block."""

    def __init__(self, session: KubeSession, schedule: Schedule | None = None) -> None:
        self.session = session
        self._schedule = schedule or _later
        self.calls = 0
        """Visibility-API calls made so far."""
        self._lock = threading.Condition()
        self._tick = 0
        self._queue_marks: dict[str, int] = {}
        self._cluster_queue_marks: dict[str, int] = {}
        self._cluster_queue_of: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        """Each LocalQueue's last ``status.pendingWorkloads``."""
        self._order: dict[str, tuple[str, tuple[Any, ...] | None]] = {}
        self._held: dict[str, _Held] = {}
        self._reading: dict[str, int] = {}
        self._rechecks: dict[str, int] = {}
        """LocalQueues with a check scheduled, and how many were made for the disagreement."""
        self._listeners: Listeners[Callable[[str], None]] = Listeners()
        self._asking: set[str] = set()
        """LocalQueues a background read is scheduled or running for."""
        self._held_only = threading.local()
        # Registered when the core is made, before any feed: a change is marked before a
        # feed reads positions for it (listeners run in the order they were added).
        self._remove = session.add_listener(self._on_change)

    def add_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(queue)`` (on the reading thread) whenever a read changed the pending
        list held for LocalQueue ``queue``, whoever asked; returns a remover."""
        return self._listeners.add(listener)

    @property
    def answering_held_only(self) -> bool:
        """Whether reads on this thread are inside :meth:`held_only` (a live view's): other
        sources a view reads (usage) then answer from what they hold too."""
        return bool(getattr(self._held_only, "on", False))

    @contextlib.contextmanager
    def held_only(self) -> Iterator[None]:
        """Reads on this thread, inside the block, answer with what the board holds and never
        wait for the visibility API: a LocalQueue marked since its answer is asked again in the
        background, and the listeners are told when its list changed."""
        before = getattr(self._held_only, "on", False)
        self._held_only.on = True
        try:
            yield
        finally:
            self._held_only.on = before

    # -- marks (on the caches' threads) --------------------------------------------------

    def _on_change(self, plural: str, event_type: str, obj: Object) -> None:
        if plural == WORKLOAD.plural:
            self._workload_changed(event_type, obj)
        elif plural == CLUSTER_QUEUE.plural:
            name = str((obj.get("metadata") or {}).get("name") or "")
            with self._lock:
                self._mark_cluster_queue(name)
                self._mark_cluster_queue(_ANY_CLUSTER_QUEUE)
        elif plural == LOCAL_QUEUE.plural:
            self._local_queue_changed(event_type, obj)

    def _workload_changed(self, event_type: str, obj: Object) -> None:
        """Mark the Workload's queue when it starts or stops waiting, or its place in Kueue's
        order can have changed; a change of anything else moves no position."""
        metadata = obj.get("metadata") or {}
        key = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
        now = queue_order(obj) if event_type != DELETED else ("", None)
        with self._lock:
            before = self._order.pop(key, ("", None))
            if event_type != DELETED:
                self._order[key] = now
            if before == now:
                return
            for queue, order in (before, now):
                if queue and order is not None:
                    self._mark_queue(queue)

    def _local_queue_changed(self, event_type: str, obj: Object) -> None:
        """A LocalQueue made, deleted or moved to another ClusterQueue is read again; so is
        one whose count of pending Workloads moved past what the answer held lists.

        Its Workloads' own changes mark it, but this session's watch may see a Workload come
        or leave before Kueue's queue manager has: a read then gets the list as it was (a
        deleted Workload still in it, a new one, such as a scale-up's slice, not yet in it).
        Kueue writes the LocalQueue's ``pendingWorkloads`` from its queue manager, so a count
        that fell below the answer held, or rose above it, says the answer is behind, and the
        change of that count is the moment to ask again. A count that moves towards the answer
        asks nothing: Kueue's count of new Workloads often comes after the list that has them
        already."""
        name = str((obj.get("metadata") or {}).get("name") or "")
        with self._lock:
            if event_type == DELETED:
                self._cluster_queue_of.pop(name, None)
                self._held.pop(name, None)
                self._counts.pop(name, None)
                return
            cluster_queue = str((obj.get("spec") or {}).get("clusterQueue") or "")
            count = (obj.get("status") or {}).get("pendingWorkloads")
            before = self._counts.get(name)
            if isinstance(count, int) and not isinstance(count, bool):
                self._counts[name] = count
            if self._cluster_queue_of.get(name) != cluster_queue:
                self._cluster_queue_of[name] = cluster_queue
                self._tick += 1
                self._queue_marks[name] = self._tick
            elif before is not None and _count_says_behind(
                self._held.get(name), before, self._counts[name]
            ):
                self._mark_queue(name)

    def _mark_queue(self, queue: str) -> None:
        """Every LocalQueue of ``queue``'s ClusterQueue (positions in the ClusterQueue move
        for all of them); ``queue`` alone when its ClusterQueue is not known."""
        cluster_queue = self._cluster_queue_of.get(queue)
        if cluster_queue:
            self._mark_cluster_queue(cluster_queue)
        else:
            self._tick += 1
            self._queue_marks[queue] = self._tick

    def _mark_cluster_queue(self, name: str) -> None:
        self._tick += 1
        self._cluster_queue_marks[name] = self._tick

    def _needed(self, queue: str) -> int:
        """The tick an answer about ``queue`` must be at least as new as."""
        cluster_queue = self._cluster_queue_of.get(queue, _ANY_CLUSTER_QUEUE)
        return max(self._queue_marks.get(queue, 0), self._cluster_queue_marks.get(cluster_queue, 0))

    # -- reads -------------------------------------------------------------------------

    def entries(self, queues: Iterable[str | None], fresh: bool = False) -> dict[str, Object]:
        """``{workload name: pendingworkloads item}`` of the LocalQueues ``queues``. With
        ``fresh`` each queue is asked now; else only those a change marked since their last
        answer. None asked when positions are not visible; a queue whose call does not
        answer ends the asking (one timeout is enough)."""
        entries: dict[str, Object] = {}
        for queue in sorted({q for q in queues if q}):
            try:
                held = self._read(queue, fresh)
            except KubeUnreachable:
                break  # not answering (a timeout each): no positions this time, ask no more
            for item in held.items if held is not None else ():
                name = (item.get("metadata") or {}).get("name")
                if name:
                    entries[str(name)] = item
        return entries

    def refresh(self, queues: Iterable[str | None]) -> dict[str, int]:
        """Bring the marked ones of ``queues`` up to date; ``{queue: version}`` (a version
        differs from an earlier one only when the queue's pending list did)."""
        versions: dict[str, int] = {}
        for queue in sorted({q for q in queues if q}):
            try:
                held = self._read(queue, fresh=False)
            except KubeUnreachable:
                break
            if held is not None:
                versions[queue] = held.version
        return versions

    @property
    def settled(self) -> bool:
        """Whether the board has no visibility call under way or scheduled (a read, a
        background ask of a live view, a check): what a benchmark's idle window waits for."""
        with self._lock:
            return not (self._reading or self._asking or self._rechecks)

    def versions(self) -> dict[str, int]:
        """``{queue: version}`` of every queue held now (no call)."""
        with self._lock:
            return {queue: held.version for queue, held in self._held.items()}

    def _read(self, queue: str, fresh: bool) -> _Held | None:
        """``queue``'s answer as new as its marks (``fresh``: asked now). One call at a time
        per queue: a reader that finds a call under way that started after the queue's last
        mark waits for its answer instead of asking again."""
        if not fresh and getattr(self._held_only, "on", False):
            return self._held_now(queue)
        with self._lock:
            while not fresh:
                held, needed = self._held.get(queue), self._needed(queue)
                if held is not None and held.tick >= needed:
                    return held
                reading = self._reading.get(queue)
                if reading is None or reading < needed:
                    break
                self._lock.wait()
            start = self._tick
            self._reading[queue] = max(start, self._reading.get(queue, -1))
            visible = self.session.positions_visible
            if visible:
                self.calls += 1
        if not visible:
            with self._lock:
                self._done(queue, start)
            return None
        self._watch_queues()
        try:
            items = tuple(self.session.pending_workloads(queue) or ())
        except BaseException:
            with self._lock:
                self._done(queue, start)
            raise
        changed = False
        with self._lock:
            held = self._held.get(queue)
            # Kueue 0.14 swaps ties on every answer: keep the order of the list held.
            items = keep_tie_order(held.items if held is not None else (), items)
            if held is None or held.tick <= start:
                changed = held is None or _order(held.items) != _order(items)
                version = (held.version if held is not None else 0) + changed
                held = self._held[queue] = _Held(start, version, items)
            self._done(queue, start)
            if queue not in self._rechecks and _behind(held, self._counts.get(queue)):
                self._rechecks[queue] = 0
                self._schedule(RECHECK_DELAYS[0], lambda: self._recheck(queue))
        if changed:
            # Whoever read it: a live view that answered with the list held before hears of
            # the new one (a REST answer's read must not leave the sockets behind).
            for listener in self._listeners.now():
                listener(queue)
        return held

    def _held_now(self, queue: str) -> _Held | None:
        """What the board holds for ``queue`` (None: nothing yet); asked again in the
        background when a change marked it since."""
        if not self.session.positions_visible:
            return None
        self._watch_queues()
        with self._lock:
            held = self._held.get(queue)
            stale = held is None or held.tick < self._needed(queue)
            if stale and queue not in self._asking:
                self._asking.add(queue)
                self._schedule(0.0, lambda: self._ask_in_background(queue))
        return held

    def _watch_queues(self) -> None:
        """Have the LocalQueue and ClusterQueue watches open whenever positions are read.

        A kernel opens only the watches what it shows needs, and a cluster's status needs
        neither; but the board does: a LocalQueue's count says when an answer is behind (a
        new Workload seen here before Kueue's queue manager has it), and a ClusterQueue's
        status when Workloads of other namespaces move the positions. Without them a
        position read too early would never be asked again. Asked at every read, like every
        lazy watch, not once: a session started again, or a watch newly allowed, has new
        caches that open on their first use."""
        for kind in (LOCAL_QUEUE, CLUSTER_QUEUE):
            self.session.cache(kind)  # started if the session watches lazily; None: not read

    def _ask_in_background(self, queue: str) -> None:
        """Read ``queue`` until the answer is as new as its marks (each read that changes its
        list tells the listeners)."""
        while True:
            try:
                now = self._read(queue, fresh=False)
            except Exception as err:  # the next change asks again
                log.debug("jupyter_dw: reading the positions of %s failed: %s", queue, err)
                now = None
            with self._lock:
                done = now is None or now.tick >= self._needed(queue)
                if done:
                    self._asking.discard(queue)
            if done:
                return

    def _recheck(self, queue: str) -> None:
        """Ask again about ``queue`` while its answer lists more than Kueue counts (scheduled by
        :meth:`_read`, which tells the listeners when the list changed)."""
        with self._lock:
            attempt = self._rechecks.get(queue, 0) + 1
            held = self._held.get(queue)
            if not _behind(held, self._counts.get(queue)):
                self._rechecks.pop(queue, None)
                return
            self._rechecks[queue] = attempt
            self._tick += 1  # this queue only: the others' answers agreed with their counts
            self._queue_marks[queue] = self._tick
        try:
            now = self._read(queue, fresh=False)
        except Exception as err:  # a check of ours: the next change asks again
            log.debug("jupyter_dw: re-checking the positions of %s failed: %s", queue, err)
            now = held
        with self._lock:
            again = attempt < len(RECHECK_DELAYS) and _behind(now, self._counts.get(queue))
            if again:
                self._schedule(RECHECK_DELAYS[attempt], lambda: self._recheck(queue))
            else:
                self._rechecks.pop(queue, None)

    def _done(self, queue: str, start: int) -> None:
        if self._reading.get(queue) == start:
            del self._reading[queue]
        self._lock.notify_all()


VISIBILITY_PAGE = 1000
"""Kueue's visibility API answers at most this many pending Workloads (its default ``limit``,
which we do not change): a longer list is cut there."""


def _behind(held: _Held | None, pending: int | None) -> bool:
    """Whether an answer held lists more Workloads than Kueue counts pending in the LocalQueue
    (no answer or no count: nothing to compare). One that lists fewer is not checked again:
    that is the moment after a Workload left, before Kueue writes its count."""
    return held is not None and pending is not None and len(held.items) > _listable(pending)


def _count_says_behind(held: _Held | None, before: int, now: int) -> bool:
    """Whether a LocalQueue's count moving from ``before`` to ``now`` passed the answer held:
    it fell below the number listed (one listed has left) or rose above it (one not listed
    has come)."""
    if held is None:
        return False
    listed = len(held.items)
    return (now < before and listed > _listable(now)) or (now > before and listed < _listable(now))


def _listable(pending: int) -> int:
    """How many of ``pending`` Workloads one visibility answer lists."""
    return min(pending, VISIBILITY_PAGE)


def _later(delay: float, call: Callable[[], None]) -> None:
    timer = threading.Timer(delay, call)
    timer.daemon = True  # a check never keeps a process alive
    timer.start()


def _order(items: tuple[Object, ...]) -> list[tuple[Any, ...]]:
    """What a reader sees of a pending list: names and positions, in order."""
    return [
        (
            (item.get("metadata") or {}).get("name"),
            item.get("positionInLocalQueue"),
            item.get("positionInClusterQueue"),
            item.get("priority"),
        )
        for item in items
    ]
