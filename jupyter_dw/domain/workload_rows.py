"""Which of a LocalQueue's Workloads a queue view shows before "Show all".
The first :data:`WORKLOADS_SHOWN` in Kueue's order and every one of this identity's
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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

    def put(self, name: str, info: WorkloadInfo | None) -> None:
        """Workload ``name`` is now ``info`` (None: gone); its queues' rows chosen again."""
        before = self._queue_of.pop(name, None)
        if before is not None:
            self._infos[before].pop(name, None)
        if info is not None:
            self._hold(info)
        for queue in {before, info.queue if info else None} - {None}:
            assert queue is not None
            self._choose(queue)

    def expand(self, queues: Iterable[str]) -> None:
        """Show every row of ``queues`` (and only the first ones and ours of the others)."""
        wanted = frozenset(queues)
        changed, self.expanded = wanted ^ self.expanded, wanted
        for queue in changed & self._infos.keys():
            self._choose(queue)

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
