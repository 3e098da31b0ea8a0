"""The Workload records one viewer was last told, the waiting ones indexed by LocalQueue.
The index keeps a change's cost the size of its queue, not of the namespace
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..domain.workloads import WorkloadInfo


class ShownWorkloads:
    """``{name: record}`` as told to one viewer, and the waiting names per queue. Not
    thread-safe: a feed is used one call at a time."""

    def __init__(self) -> None:
        self._records: dict[str, WorkloadInfo] = {}
        self._waiting: dict[str | None, set[str]] = {}

    def reset(self, records: Iterable[WorkloadInfo]) -> None:
        """Forget everything; hold ``records`` (a snapshot)."""
        self._records.clear()
        self._waiting.clear()
        for info in records:
            self.put(info)

    def get(self, name: str) -> WorkloadInfo | None:
        return self._records.get(name)

    def put(self, info: WorkloadInfo) -> None:
        """Hold ``info`` as what the viewer was told of its Workload."""
        self.pop(info.name)
        self._records[info.name] = info
        if info.waiting:
            self._waiting.setdefault(info.queue, set()).add(info.name)

    def pop(self, name: str) -> WorkloadInfo | None:
        """Forget Workload ``name``; what was held, if anything."""
        info = self._records.pop(name, None)
        if info is not None and info.waiting:
            names = self._waiting.get(info.queue)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._waiting[info.queue]
        return info

    def waiting_queues(self) -> set[str]:
        """The LocalQueues in which the viewer was told of a waiting Workload."""
        return {q for q in self._waiting if q}

    def waiting_in(self, queue: str | None) -> list[str]:
        """The waiting Workloads the viewer was told of in ``queue``, by name."""
        return sorted(self._waiting.get(queue, ()))

    def __bool__(self) -> bool:
        return bool(self._records)

    def any_waiting(self) -> bool:
        return bool(self._waiting)

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)
