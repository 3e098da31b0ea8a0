"""The server's events socket read back as the typed messages a kernel's own change feed makes
(:mod:`jupyter_dw.core.feed`), so live views cannot tell which one feeds them. It keeps what the
deltas need (the queues, the Workloads) and, after a reconnection, tells what the new snapshot
changed.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..core.feed import (
    Cause,
    ClusterChanged,
    HealthChanged,
    JobChanged,
    Message,
    PositionsChanged,
    QueuesChanged,
    WorkloadChanged,
)
from ..core.queues import QueueList
from ..domain.freshness import WatchHealth
from ..domain.job_kind import JobKind
from ..domain.json_decode import decode, error_from_json
from ..domain.kinds import KINDS
from ..domain.usage import QueueHolding
from ..domain.workloads import WorkloadInfo

Object = dict[str, Any]
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
RESYNC = "Snapshot"
"""The ``cause.kind`` of a message made from a new snapshot (after a reconnection)."""


def _info_class(kind: JobKind[Any, Any]) -> Any:
    """The record class of ``kind``'s jobs (its ``JobKind[Request, Info]`` argument)."""
    for base in getattr(type(kind), "__orig_bases__", ()):
        if typing.get_origin(base) is JobKind:
            return typing.get_args(base)[1]
    return Any


JOB_RECORDS: Mapping[str, tuple[str, Any]] = {
    kind.word: (kind.plural, _info_class(kind)) for kind in KINDS
}
"""Each kind's message type (its word) → its snapshot key (plural) and record class."""


def _cause(data: Object) -> Cause:
    cause = data.get("cause") or {}
    if "kind" not in cause:  # a queues message carries its cause's fields at the top
        cause = data
    return Cause(str(cause.get("kind")), str(cause.get("name")), str(cause.get("event")))


def _error(data: Object | None, status: int = 500) -> Any:
    return error_from_json(status, data) if data else None


class ServerFeed:
    """One socket's messages in, typed messages out (:meth:`messages`)."""

    def __init__(self) -> None:
        self.snapshots = 0
        """Snapshots read (the first one, and one per reconnection)."""
        self._queues: QueueList | None = None
        self._snapshot: Object = {}
        self._workloads: dict[str, WorkloadInfo] = {}
        self._readers: dict[str, Callable[[Object], list[Message]]] = {
            "snapshot": self._on_snapshot,
            "queues": self._on_queues,
            "queue": self._on_queue,
            "cluster": self._on_cluster,
            "workload": self._on_workload,
            "positions": self._on_positions,
            "health": self._on_health,
            **{word: self._on_job for word in JOB_RECORDS},
        }

    def messages(self, data: Object) -> list[Message]:
        """The typed messages ``data`` makes (none for those live views do not read: a
        cluster's Ray jobs and logs, which a kernel asks for itself)."""
        reader = self._readers.get(str(data.get("type")))
        return reader(data) if reader is not None else []

    # -- the snapshot ------------------------------------------------------------------------

    def _on_snapshot(self, data: Object) -> list[Message]:
        before, self._snapshot = self._snapshot, data
        self.snapshots += 1
        self._queues = decode(QueueList, data["queues"]) if data.get("queues") else None
        self._workloads = {w["name"]: decode(WorkloadInfo, w) for w in data.get("workloads") or ()}
        if self.snapshots == 1:
            # The views read their state after the socket opened (the runtime waits for it).
            return []
        return self._resync(before, data)

    def _resync(self, before: Object, now: Object) -> list[Message]:
        """What changed between two snapshots, as the messages a change would have made."""
        out: list[Message] = []
        if before.get("health") != now.get("health") and now.get("health"):
            out.append(HealthChanged(decode(WatchHealth, now["health"])))
        if (before.get("queues"), before.get("queues_error")) != (
            now.get("queues"),
            now.get("queues_error"),
        ):
            cause = Cause(RESYNC, "queues", MODIFIED)
            out.append(QueuesChanged(cause, self._queues, _error(now.get("queues_error"))))
        holdings = now.get("holdings") or {}
        for event, name, record in _differences(before.get("clusters"), now.get("clusters")):
            info = None if record is None else _cluster_info(record)
            queue = record.get("queue") if record else None
            holding = (
                (queue, decode(QueueHolding, holdings[queue]))
                if queue and queue in holdings
                else None
            )
            cause = Cause(RESYNC, name, event)
            out.append(ClusterChanged(event, name, cause, info, (), holding))
        for event, name, record in _differences(before.get("workloads"), now.get("workloads")):
            workload = self._workloads.get(name)
            queue = (record or {}).get("queue")
            cause = Cause(RESYNC, name, event)
            out.append(WorkloadChanged(event, name, queue, cause, workload))
        for word, (plural, info_class) in JOB_RECORDS.items():
            for event, name, record in _differences(before.get(plural), now.get(plural)):
                job = decode(info_class, record) if record is not None else None
                out.append(JobChanged(word, event, name, Cause(RESYNC, name, event), job))
        return out

    # -- one change --------------------------------------------------------------------------

    def _on_queues(self, data: Object) -> list[Message]:
        self._queues = decode(QueueList, data["queues"]) if data.get("queues") else None
        return [QueuesChanged(_cause(data), self._queues, _error(data.get("queues_error")))]

    def _on_queue(self, data: Object) -> list[Message]:
        if self._queues is None:
            return []
        records = {r["name"]: r for r in data.get("queues") or ()}
        whole = self._queues.to_json()
        whole["queues"] = [records.get(q["name"], q) for q in whole["queues"]]
        self._queues = decode(QueueList, whole)
        return [QueuesChanged(_cause(data), self._queues, None, tuple(records))]

    def _on_cluster(self, data: Object) -> list[Message]:
        state = data.get("state")
        holding = data.get("holding")
        return [
            ClusterChanged(
                str(data["event"]),
                str(data["name"]),
                _cause(data),
                _cluster_info(state) if state else None,
                tuple(data.get("milestones") or ()),
                (
                    (holding["queue"], decode(QueueHolding, holding))
                    if isinstance(holding, dict)
                    else None
                ),
            )
        ]

    def _on_workload(self, data: Object) -> list[Message]:
        name = str(data["name"])
        record = data.get("workload")
        workload = decode(WorkloadInfo, record) if record else None
        if workload is None:
            self._workloads.pop(name, None)
        else:
            self._workloads[name] = workload
        return [
            WorkloadChanged(str(data["event"]), name, data.get("queue"), _cause(data), workload)
        ]

    def _on_positions(self, data: Object) -> list[Message]:
        moved = []
        for name, (in_local, in_cluster) in (data.get("positions") or {}).items():
            known = self._workloads.get(name)
            if known is None:
                continue
            known = replace(
                known, position_in_local_queue=in_local, position_in_cluster_queue=in_cluster
            )
            self._workloads[name] = known
            moved.append(known)
        return [PositionsChanged(data.get("queue"), _cause(data), tuple(moved))] if moved else []

    def _on_health(self, data: Object) -> list[Message]:
        return [HealthChanged(decode(WatchHealth, data))]

    def _on_job(self, data: Object) -> list[Message]:
        word = str(data["type"])
        _, info_class = JOB_RECORDS[word]
        record = data.get(word)
        job = decode(info_class, record) if record else None
        return [JobChanged(word, str(data["event"]), str(data["name"]), _cause(data), job)]


def _cluster_info(record: Object) -> Any:
    from ..core.cluster_results import ClusterInfo

    return decode(ClusterInfo, record)


def _differences(
    before: list[Object] | None, now: list[Object] | None
) -> list[tuple[str, str, Object | None]]:
    """``(event, name, record now)`` of each record added, changed or removed."""
    old = {r["name"]: r for r in before or ()}
    new = {r["name"]: r for r in now or ()}
    out: list[tuple[str, str, Object | None]] = []
    for name, record in new.items():
        if name not in old:
            out.append((ADDED, name, record))
        elif old[name] != record:
            out.append((MODIFIED, name, record))
    out.extend((DELETED, name, None) for name in old if name not in new)
    return out
