"""The events socket's messages (``dw/api/events``) read back into what the change feed
(:mod:`.feed`) hands a view in the same process: a :class:`~.feed.Snapshot`, then one
:data:`~.feed.Message` per message. Two messages are deltas, read against what the reader was
told before (:class:`FeedState`): ``queue`` carries only the LocalQueues that changed,
``positions`` only the moved Workloads' positions, and ``rows`` only the records of a queue's
rows the reader was not told; they become whole records again here, as the in-process feed
gives them. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..domain.freshness import WatchHealth
from ..domain.json_decode import DecodeError, decode, decode_fields, decode_key
from ..domain.kinds import KINDS
from ..domain.quota import QueueSummary
from ..domain.usage import QueueHolding
from ..domain.workload_rows import QueueShown
from ..domain.workloads import WorkloadInfo
from .cluster_results import ClusterInfo
from .errors import DWError, error_from_json
from .feed_messages import (
    Cause,
    ClusterChanged,
    HealthChanged,
    JobChanged,
    Message,
    PositionsChanged,
    QueuesChanged,
    Snapshot,
    WorkloadChanged,
)
from .queue_results import QueueList
from .rows_feed import RowsChanged

_TYPES = frozenset(
    {"snapshot", "error", "health", "queues", "queue", "positions", "workload", "cluster", "rows"}
)
"""The feed's own message types (besides each workload kind's ``word``)."""

Read = Message | Snapshot | DWError
"""What one message of the socket is: the snapshot, a change, or the error it closes with."""


@dataclass(frozen=True)
class FeedState:
    """What a reader of the socket was told last that a delta applies to: the queues answer
    and each Workload's record, by name, or (a reader of queue rows) each LocalQueue's rows.
    :meth:`after` each message read."""

    queues: QueueList | None = None
    workloads: Mapping[str, WorkloadInfo] = field(default_factory=dict)
    rows: Mapping[str, QueueShown] | None = None
    """Each LocalQueue holding any Workload as shown (``?workloads=rows``), else None."""

    def after(self, message: Read) -> FeedState:
        """This state once ``message`` is told."""
        if isinstance(message, Snapshot):
            rows = message.queue_rows
            return FeedState(
                message.queues,
                {w.name: w for w in message.workloads or ()},
                {shown.queue: shown for shown in rows} if rows is not None else None,
            )
        if isinstance(message, RowsChanged):
            told = dict(self.rows or {})
            told.pop(message.shown.queue, None)
            if message.shown.count:
                told[message.shown.queue] = message.shown
            return replace(self, rows=told)
        if isinstance(message, QueuesChanged):
            return replace(self, queues=message.queues)
        if isinstance(message, WorkloadChanged):
            workloads = dict(self.workloads)
            workloads.pop(message.name, None)
            if message.workload is not None:
                workloads[message.name] = message.workload
            return replace(self, workloads=workloads)
        if isinstance(message, PositionsChanged):
            moved = {w.name: w for w in message.workloads}
            return replace(self, workloads={**self.workloads, **moved})
        return self


def message_from_json(data: Any, state: FeedState) -> Read:
    """One message of the events socket (decoded JSON) as the in-process feed gives it;
    ``state`` is what the reader was told before (the deltas apply to it). Raises
    :class:`DecodeError` for a message that is not one of the feed's, or a delta about
    records ``state`` does not hold."""
    kind = decode_key(str, data, "type")
    if kind not in _TYPES and kind not in {k.word for k in KINDS}:
        raise DecodeError(f"not a message of the change feed: type {kind!r}")
    if kind == "snapshot":
        return snapshot_from_json(data)
    if kind == "error":
        return error_from_json(None, data)
    if kind == "health":
        return HealthChanged(decode(WatchHealth, data))
    if kind == "rows":
        return rows_from_json(data, state)
    cause = decode(Cause, data) if kind in ("queues", "queue") else decode_key(Cause, data, "cause")
    if kind == "queues":
        queues = decode_key(QueueList | None, data, "queues")
        return QueuesChanged(cause, queues, _error(data, "queues_error"))
    if kind == "queue":
        if state.queues is None:
            raise DecodeError("a queue message needs the queues answer told before it")
        records = decode_key(tuple[QueueSummary, ...], data, "queues")
        queues = apply_queue_records(state.queues, records)
        return QueuesChanged(cause, queues, None, tuple(r.name for r in records))
    if kind == "positions":
        positions = decode_key(Mapping[str, tuple[int | None, int | None]], data, "positions")
        workloads = apply_positions(state.workloads, positions)
        return PositionsChanged(decode_key(str | None, data, "queue"), cause, workloads)
    if kind == "workload":
        return decode(WorkloadChanged, data)
    if kind == "cluster":
        holding = decode_key(Mapping[str, Any] | None, data, "holding")
        return ClusterChanged(
            event=decode_key(str, data, "event"),
            name=decode_key(str, data, "name"),
            cause=cause,
            cluster=decode_key(ClusterInfo | None, data, "state"),
            crossed=decode_key(tuple[str, ...], data, "milestones"),
            holding=(
                (decode_key(str, holding, "queue"), decode(QueueHolding, holding))
                if holding is not None
                else None
            ),
        )
    for job_kind in KINDS:
        if kind == job_kind.word:
            return JobChanged(
                kind=kind,
                event=decode_key(str, data, "event"),
                name=decode_key(str, data, "name"),
                cause=cause,
                job=decode_key(job_kind.record_type | None, data, kind),
            )
    raise AssertionError(f"message type {kind!r} is listed but not read")  # pragma: no cover


def snapshot_from_json(data: Any) -> Snapshot:
    """The ``snapshot`` message (each workload kind's records under its plural, the kinds
    this package knows of those it lists)."""
    listed = decode_key(tuple[Mapping[str, str], ...], data, "kinds")
    by_plural = {kind.plural: kind for kind in KINDS}
    kinds = tuple(by_plural[k["plural"]] for k in listed if k.get("plural") in by_plural)
    jobs = {
        kind.plural: (
            decode_key(tuple[kind.record_type, ...] | None, data, kind.plural),  # type: ignore[name-defined]
            _error(data, f"{kind.plural}_error"),
        )
        for kind in kinds
    }
    rows = decode(Mapping[str, Mapping[str, Any]] | None, data.get("queue_rows"))
    workloads = decode_key(tuple[WorkloadInfo, ...] | None, data, "workloads")
    return decode_fields(
        Snapshot,
        data,
        workloads=workloads if rows is None else None,
        queue_rows=queue_rows(workloads or (), rows) if rows is not None else None,
        queues_error=_error(data, "queues_error"),
        clusters_error=_error(data, "clusters_error"),
        workloads_error=_error(data, "workloads_error"),
        jobs=jobs,
        kinds=kinds,
    )


def queue_rows(
    workloads: Sequence[WorkloadInfo], rows: Mapping[str, Mapping[str, Any]]
) -> tuple[QueueShown, ...]:
    """A rows snapshot's queues (``queue_rows``: ``{queue: {"count", "mine"}}``) with their
    rows (``workloads``, queue by queue, each in its order)."""
    by_queue: dict[str, list[WorkloadInfo]] = {}
    for info in workloads:
        if info.queue is None or info.queue not in rows:
            raise DecodeError(f"Workload {info.name}'s queue {info.queue!r} is not in queue_rows")
        by_queue.setdefault(info.queue, []).append(info)
    return tuple(
        QueueShown(
            queue,
            decode_key(int, told, "count"),
            tuple(by_queue.get(queue, ())),
            frozenset(decode_key(tuple[str, ...], told, "mine")),
        )
        for queue, told in rows.items()
    )


def rows_from_json(data: Mapping[str, Any], state: FeedState) -> RowsChanged:
    """A ``rows`` message: the queue's rows now, the records not sent read back from those
    ``state`` holds of that queue."""
    if state.rows is None:
        raise DecodeError("a rows message needs a rows snapshot told before it")
    queue = decode_key(str, data, "queue")
    sent = {w.name: w for w in decode_key(tuple[WorkloadInfo, ...], data, "workloads")}
    before = state.rows.get(queue)
    told = {w.name: w for w in before.rows} if before is not None else {}
    names = decode_key(tuple[str, ...], data, "names")
    unknown = [name for name in names if name not in sent and name not in told]
    if unknown:
        raise DecodeError(f"rows of {queue}: {', '.join(unknown)} neither sent nor told before")
    shown = QueueShown(
        queue,
        decode_key(int, data, "count"),
        tuple(sent.get(name) or told[name] for name in names),
        frozenset(decode_key(tuple[str, ...], data, "mine")),
    )
    return RowsChanged(shown, tuple(sent))


def apply_queue_records(before: QueueList, records: Iterable[QueueSummary]) -> QueueList:
    """``before`` with the LocalQueues of ``records`` (a ``queue`` message's) in place of
    those of their names: the queues answer whole again."""
    changed = {record.name: record for record in records}
    unknown = sorted(set(changed) - {q.name for q in before.queues})
    if unknown:
        raise DecodeError(f"LocalQueue(s) {', '.join(unknown)} not in the queues told before")
    return replace(before, queues=tuple(changed.get(q.name, q) for q in before.queues))


def apply_positions(
    before: Mapping[str, WorkloadInfo], positions: Mapping[str, Sequence[int | None]]
) -> tuple[WorkloadInfo, ...]:
    """The records of the Workloads a ``positions`` message moved (``{name: [position in the
    LocalQueue, in the ClusterQueue]}``): ``before``'s, with their positions now."""
    unknown = sorted(set(positions) - set(before))
    if unknown:
        raise DecodeError(f"Workload(s) {', '.join(unknown)} not among the records told before")
    return tuple(
        replace(before[name], position_in_local_queue=local, position_in_cluster_queue=cluster)
        for name, (local, cluster) in positions.items()
    )


def _error(data: Mapping[str, Any], key: str) -> DWError | None:
    error = decode_key(Mapping[str, Any] | None, data, key)
    return error_from_json(None, error) if error is not None else None
