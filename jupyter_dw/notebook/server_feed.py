"""The server's events socket as the typed messages a kernel's own change feed makes, so live
views cannot tell which one feeds them (each message read by :mod:`jupyter_dw.core.feed_json`).
After a reconnection the new snapshot is told as the changes it holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..core.errors import DWError
from ..core.feed_json import FeedState, message_from_json
from ..core.feed_messages import (
    Cause,
    ClusterChanged,
    HealthChanged,
    JobChanged,
    Message,
    QueuesChanged,
    Snapshot,
    WorkloadChanged,
)
from ..core.rows_feed import RowsChanged
from ..domain.json_decode import DecodeError
from ..domain.kinds import KINDS
from ..domain.workload_rows import QueueShown

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
RESYNC = "Snapshot"
"""The ``cause.kind`` of a message told from a new snapshot (after a reconnection)."""
NOT_FEED = frozenset({"jobs", "job_logs"})
"""Messages a kernel does not ask for (a cluster's Ray jobs and logs: it calls for them)."""


class ServerFeed:
    """One socket's messages in, typed messages out (:meth:`messages`)."""

    def __init__(self, before: ServerFeed | None = None) -> None:
        self.snapshots = 0
        """Snapshots read on this feed's socket (the first one, one per reconnection)."""
        self._state = FeedState()
        self._snapshot: Snapshot | None = before._snapshot if before is not None else None
        """What the views were told last (``before``'s: a socket opened again to be sent the
        Workloads too tells its first snapshot against it)."""

    def told_rows(self) -> tuple[Mapping[str, QueueShown] | None, DWError | None]:
        """Each LocalQueue's rows as the views were told, by queue (the same records: a view
        that shows them holds no second copy), or None with the error reading them (None
        too before a snapshot of rows)."""
        snapshot = self._snapshot
        error = snapshot.workloads_error if snapshot is not None else None
        return self._state.rows, error

    def messages(self, data: Mapping[str, Any]) -> list[Message]:
        """The typed messages one socket message makes."""
        if data.get("type") in NOT_FEED:
            return []
        try:
            read = message_from_json(data, self._state)
        except DecodeError as err:  # a delta about what this reader was not told: wait for more
            log.warning("jupyter_dw: a message from the server was not read: %s", err)
            return []
        if isinstance(read, DWError):  # the socket closes after it; the reconnection resyncs
            log.info("jupyter_dw: the server's events socket closes: %s", read)
            return []
        self._state = self._state.after(read)
        if not isinstance(read, Snapshot):
            return [read]
        before, self._snapshot = self._snapshot, read
        self.snapshots += 1
        # The first one needs no telling: views read their state after it came (the runtime
        # waits for it before a subscription returns).
        return [] if before is None else resync(before, read)


def resync(before: Snapshot, now: Snapshot) -> list[Message]:
    """What changed between two snapshots, as the messages the changes would have made."""
    out: list[Message] = []
    if now.health is not None and before.health != now.health:
        out.append(HealthChanged(now.health))
    if _json(before.queues) != _json(now.queues) or before.queues_error != now.queues_error:
        out.append(QueuesChanged(Cause(RESYNC, "queues", MODIFIED), now.queues, now.queues_error))
    holdings = now.holdings or {}
    for event, name, cluster in differences(before.clusters, now.clusters):
        queue = cluster.queue if cluster is not None else None
        holding = (queue, holdings[queue]) if queue is not None and queue in holdings else None
        out.append(ClusterChanged(event, name, Cause(RESYNC, name, event), cluster, (), holding))
    # Workloads told before (a socket without them, opened again with them: what is in them
    # now is read by the view that asked, after this snapshot).
    told = before.workloads is not None
    for event, name, workload in differences(before.workloads, now.workloads) if told else ():
        queue = workload.queue if workload is not None else None
        out.append(WorkloadChanged(event, name, queue, Cause(RESYNC, name, event), workload))
    if before.queue_rows is not None and now.queue_rows is not None:
        out.extend(rows_differences(before.queue_rows, now.queue_rows))
    for kind in KINDS:
        old, new = before.jobs.get(kind.plural), now.jobs.get(kind.plural)
        for event, name, job in differences(old[0] if old else None, new[0] if new else None):
            out.append(JobChanged(kind.word, event, name, Cause(RESYNC, name, event), job))
    return out


def rows_differences(before: Iterable[QueueShown], now: Iterable[QueueShown]) -> list[RowsChanged]:
    """The queues whose rows, count or mine differ between two rows snapshots, as the
    ``rows`` messages that would have told them (a queue gone: count 0)."""
    old = {shown.queue: shown for shown in before}
    new = {shown.queue: shown for shown in now}
    out = []
    for queue in sorted(old.keys() | new.keys()):
        was, shown = old.get(queue), new.get(queue, QueueShown(queue, 0, ()))
        if was is None or _shown_json(was) != _shown_json(shown):
            out.append(RowsChanged(shown, tuple(info.name for info in shown.rows)))
    return out


def _shown_json(shown: QueueShown) -> Any:
    return (shown.count, shown.mine, [info.to_json() for info in shown.rows])


def differences(
    before: Iterable[Any] | None, now: Iterable[Any] | None
) -> list[tuple[str, str, Any]]:
    """``(event, name, record now)`` of each record added, changed or removed (by name)."""
    old: dict[str, Any] = {r.name: r for r in before or ()}
    new: dict[str, Any] = {r.name: r for r in now or ()}
    out: list[tuple[str, str, Any]] = []
    for name, record in new.items():
        if name not in old:
            out.append((ADDED, name, record))
        elif _json(old[name]) != _json(record):
            out.append((MODIFIED, name, record))
    out.extend((DELETED, name, None) for name in old if name not in new)
    return out


def _json(record: Any) -> Any:
    to_json: Callable[[], Any] | None = getattr(record, "to_json", None)
    return to_json() if to_json is not None else record
