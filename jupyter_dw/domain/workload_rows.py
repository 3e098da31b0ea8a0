"""Which of a LocalQueue's Workloads a queue view shows before "Show all".
The first :data:`WORKLOADS_SHOWN` in Kueue's order and every one of this identity's
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .workloads import WorkloadInfo, sorted_workloads

WORKLOADS_SHOWN = 5
"""Rows of a queue shown before "Show all" (the sidebar's ``WORKLOADS_SHOWN`` too)."""

Row = TypeVar("Row")


def first_and_mine(
    rows: Sequence[Row], is_mine: Callable[[Row], bool], count: int = WORKLOADS_SHOWN
) -> list[Row]:
    """The rows shown of one queue's ``rows`` (in Kueue's order, kept) while it is not
    expanded: the first ``count`` and every one ``is_mine`` says is this identity's."""
    if len(rows) <= count:
        return list(rows)
    return [row for i, row in enumerate(rows) if i < count or is_mine(row)]


class QueueRows:
    """The Workloads of every LocalQueue as one viewer shows them, kept per queue so that a
    change re-sorts and re-chooses only its own queue. Not thread-safe: one feed calls it."""

    def __init__(self, is_mine: Callable[[WorkloadInfo], bool]) -> None:
        self._is_mine = is_mine
        self._infos: dict[str, dict[str, WorkloadInfo]] = {}
        self._shown: dict[str, list[WorkloadInfo]] = {}
        self._queue_of: dict[str, str] = {}
        self.expanded: frozenset[str] = frozenset()

    def reset(self, infos: Iterable[WorkloadInfo]) -> None:
        """Hold ``infos`` (a snapshot) and nothing else."""
        self._infos.clear()
        self._shown.clear()
        self._queue_of.clear()
        for info in infos:
            self._hold(info)
        for queue in list(self._infos):
            self._choose(queue)

    def put(self, name: str, info: WorkloadInfo | None) -> set[str]:
        """Workload ``name`` is now ``info`` (None: gone); its queues' rows chosen again.
        Returns those queues (one, or the two it moved between)."""
        before = self._queue_of.pop(name, None)
        if before is not None:
            self._infos[before].pop(name, None)
        if info is not None:
            self._hold(info)
        queues = {q for q in (before, info.queue if info else None) if q is not None}
        for queue in queues:
            self._choose(queue)
        return queues

    def expand(self, queues: Iterable[str]) -> set[str]:
        """Show every row of ``queues`` (and only the first ones and ours of the others).
        Returns the queues held whose choice was made again."""
        wanted = frozenset(queues)
        changed, self.expanded = wanted ^ self.expanded, wanted
        chosen = set(changed & self._infos.keys())
        for queue in chosen:
            self._choose(queue)
        return chosen

    def shown(self, queue: str) -> tuple[WorkloadInfo, ...]:
        """The rows shown of ``queue`` (none when it holds no Workload)."""
        return tuple(self._shown.get(queue, ()))

    def count(self, queue: str) -> int:
        """How many Workloads ``queue`` holds, shown or not."""
        return len(self._infos.get(queue, ()))

    def queues(self) -> list[str]:
        """The LocalQueues holding any Workload, by name."""
        return sorted(self._infos)

    def is_mine(self, info: WorkloadInfo) -> bool:
        """What this viewer's ``is_mine`` says of ``info``."""
        return self._is_mine(info)

    def rows(self) -> list[WorkloadInfo]:
        """The rows shown, by queue name, each queue in Kueue's order."""
        return [info for queue in sorted(self._shown) for info in self._shown[queue]]

    def counts(self) -> dict[str, int]:
        """How many Workloads each LocalQueue holds, shown or not."""
        return {queue: len(infos) for queue, infos in sorted(self._infos.items())}

    def _hold(self, info: WorkloadInfo) -> None:
        if info.queue is None:  # in no LocalQueue: no queue view shows it
            return
        self._infos.setdefault(info.queue, {})[info.name] = info
        self._queue_of[info.name] = info.queue

    def _choose(self, queue: str) -> None:
        infos = sorted_workloads(self._infos.get(queue, {}).values())
        if not infos:
            self._infos.pop(queue, None)
            self._shown.pop(queue, None)
            return
        self._shown[queue] = (
            infos if queue in self.expanded else first_and_mine(infos, self._is_mine)
        )


@dataclass(frozen=True)
class QueueShown:
    """One LocalQueue as a reader is shown it: its rows (:class:`QueueRows`' choice),
    how many Workloads it holds, and which of the rows are this identity's (so a view that
    did not expand the queue can choose its own rows from an expanded one's)."""

    queue: str
    count: int
    rows: tuple[WorkloadInfo, ...]
    mine: frozenset[str] = frozenset()

    def visible(self, expanded: bool) -> list[WorkloadInfo]:
        """The rows a view shows: all of them when it expanded the queue, else the first
        ones and mine (the same as the rows unless the reader expanded it for another view)."""
        if expanded:
            return list(self.rows)
        return first_and_mine(self.rows, lambda info: info.name in self.mine)


def shown_of(rows: QueueRows, queue: str) -> QueueShown:
    """``queue`` as ``rows`` shows it now."""
    shown = rows.shown(queue)
    mine = frozenset(info.name for info in shown if rows.is_mine(info))
    return QueueShown(queue, rows.count(queue), shown, mine)


def records_to_tell(before: QueueShown | None, now: QueueShown) -> tuple[str, ...] | None:
    """What a reader told ``before`` of a queue must be sent for it to hold ``now``: None
    when nothing differs (no message), else the names of ``now``'s rows whose records it was
    not told, or told otherwise (the rest it reads back from ``before`` by name)."""
    if before is None and now.count == 0:
        return None
    told = {info.name: info for info in before.rows} if before is not None else {}
    names = tuple(
        info.name
        for info in now.rows
        if (old := told.get(info.name)) is None or (old is not info and old != info)
    )
    if before is not None and not names and _same(before, now):
        return None
    return names


def _same(before: QueueShown, now: QueueShown) -> bool:
    """The same rows (by name, in order), count and mine: records equal, not identical."""
    return (before.count, before.mine) == (now.count, now.mine) and [
        info.name for info in before.rows
    ] == [info.name for info in now.rows]
