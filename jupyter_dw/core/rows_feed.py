"""The rows of a queue view, chosen where the Workloads are (the server) for a reader that shows
only them (a kernel's ``QueueBoard``): the events socket's ``?workloads=rows`` mode. The reader
is told each LocalQueue's shown rows and count once, then only the queues whose rows or count
changed, with only the records it was not told (docs/explanation/architecture.md). Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..domain.workload_rows import QueueRows, QueueShown, records_to_tell, shown_of
from ..domain.workloads import WorkloadInfo


@dataclass(frozen=True)
class RowsChanged:
    """LocalQueue ``shown.queue``'s rows or count changed: the queue as the reader is shown it
    now (``count`` 0 once it holds no Workload). ``new`` names the rows whose records the
    reader was not told before (the socket sends only those; the others it holds)."""

    shown: QueueShown
    new: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The events socket's ``rows`` message."""
        new = set(self.new)
        return {
            "type": "rows",
            "queue": self.shown.queue,
            "count": self.shown.count,
            "names": [info.name for info in self.shown.rows],
            "mine": sorted(self.shown.mine),
            "workloads": [info.to_json() for info in self.shown.rows if info.name in new],
        }


class RowsFeed:
    """One reader's queue rows: the Workloads it is told of become, per LocalQueue, the rows
    a queue view shows (:class:`QueueRows`, over the same records: references), and each
    change the :class:`RowsChanged` of the queues it changed. Not thread-safe: one socket's
    sending task calls it, one call at a time."""

    def __init__(self, is_mine: Callable[[WorkloadInfo], bool]) -> None:
        self._rows = QueueRows(is_mine)
        self._told: dict[str, QueueShown] = {}

    def reset(
        self, workloads: Iterable[WorkloadInfo], expanded: Iterable[str] = ()
    ) -> tuple[QueueShown, ...]:
        """Hold ``workloads`` (a snapshot's) with ``expanded`` shown whole: every queue
        holding any, as the reader is told it first."""
        self._rows.expand(expanded)
        self._rows.reset(workloads)
        self._told = {queue: shown_of(self._rows, queue) for queue in self._rows.queues()}
        return tuple(self._told.values())

    @property
    def expanded(self) -> frozenset[str]:
        """The LocalQueues whose every row the reader is shown."""
        return self._rows.expanded

    def put(self, changed: Iterable[tuple[str, WorkloadInfo | None]]) -> list[RowsChanged]:
        """Workloads ``(name, record now or None)`` changed: the queues whose rows changed."""
        queues: set[str] = set()
        for name, info in changed:
            queues |= self._rows.put(name, info)
        return self._tell(queues)

    def expand(self, queues: Iterable[str]) -> list[RowsChanged]:
        """Show every row of ``queues`` only (the reader's ``expand``): the queues whose rows
        changed, an expanded one with all its rows."""
        return self._tell(self._rows.expand(queues))

    def _tell(self, queues: Iterable[str]) -> list[RowsChanged]:
        out = []
        for queue in sorted(queues):
            now = shown_of(self._rows, queue)
            new = records_to_tell(self._told.get(queue), now)
            if new is None:
                continue
            if now.count:
                self._told[queue] = now
            else:
                self._told.pop(queue, None)
            out.append(RowsChanged(now, new))
        return out
