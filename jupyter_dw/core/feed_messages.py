"""What the change feed tells its viewers: the first snapshot, then one message per change,
each with the JSON the events socket sends. Data only (no session): a kernel reading through
its server reads the socket's messages back as these without the feed itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..domain.freshness import WatchHealth
from ..domain.job_kind import JobKind
from ..domain.usage import QueueHolding
from ..domain.workload_rows import QueueShown
from ..domain.workloads import WorkloadInfo
from .cluster_results import ClusterInfo
from .errors import DWError
from .queue_results import QueueList
from .rows_feed import RowsChanged

Object = dict[str, Any]
Change = tuple[str, str, Object]
"""``(plural, event_type, object)`` as the session's listeners get it."""


def error_json(err: DWError | None) -> dict[str, Any] | None:
    """An error as a message carries it (None: no error)."""
    return err.to_json() if err is not None else None


@dataclass(frozen=True)
class Cause:
    """The object whose change caused a message."""

    kind: str
    name: str
    event: str

    def to_json(self) -> dict[str, str]:
        """``{"kind", "name", "event"}``."""
        return {"kind": self.kind, "name": self.name, "event": self.event}


def kind_json(kind: JobKind[Any, Any]) -> dict[str, str]:
    """What a surface needs of a workload kind to show its jobs: its records are the snapshot's
    ``<plural>`` and the ``<word>`` messages' ``<word>``, its REST collection ``<plural>``, and
    a Workload it owns names its ``kind`` and ``group``."""
    return {"plural": kind.plural, "word": kind.word, "kind": kind.kind, "group": kind.group}


@dataclass(frozen=True)
class Snapshot:
    """Everything at once: the first thing a viewer gets. A part that cannot be read is
    None, with its error instead."""

    namespace: str | None
    queues: QueueList | None
    queues_error: DWError | None
    clusters: tuple[ClusterInfo, ...] | None
    clusters_error: DWError | None
    positions_visible: bool
    health: WatchHealth | None = None
    workloads: tuple[WorkloadInfo, ...] | None = None
    workloads_error: DWError | None = None
    jobs: Mapping[str, tuple[Sequence[Any] | None, DWError | None]] = field(default_factory=dict)
    """Each workload kind's records (None when not served, or with its error), by the kind's
    plural (``rayjobs``, ``trainjobs``): listed as ``rayjobs``, ``rayjobs_error``, ..."""
    kinds: Sequence[JobKind[Any, Any]] = ()
    """The workload kinds of ``jobs``, in the surfaces' order, listed as ``kinds``: what the
    sidebar lists, shows, deletes and follows a kind's jobs by (:func:`kind_json`)."""
    holdings: Mapping[str, QueueHolding] | None = None
    """What this identity's clusters hold and use, by LocalQueue (:mod:`.holdings`); None
    when the clusters cannot be read."""
    queue_rows: tuple[QueueShown, ...] | None = None
    """A reader of queue rows only (``?workloads=rows``, :mod:`.rows_feed`): each LocalQueue
    holding any Workload as it is shown, instead of ``workloads`` (then None). Listed as
    ``workloads`` (the rows, queue by queue) and ``queue_rows`` (``{queue: {"count",
    "mine"}}``)."""

    def to_json(self) -> dict[str, Any]:
        """The events socket's ``snapshot`` message."""
        return {**self._to_json(), **self._rows_json()}

    def _rows_json(self) -> dict[str, Any]:
        if self.queue_rows is None:
            return {}
        return {
            "workloads": [info.to_json() for shown in self.queue_rows for info in shown.rows],
            "queue_rows": {
                shown.queue: {"count": shown.count, "mine": sorted(shown.mine)}
                for shown in self.queue_rows
            },
        }

    def _to_json(self) -> dict[str, Any]:
        return {
            "health": self.health.to_json() if self.health else None,
            "type": "snapshot",
            "namespace": self.namespace,
            "queues": self.queues.to_json() if self.queues else None,
            "queues_error": error_json(self.queues_error),
            "clusters": [c.to_json() for c in self.clusters] if self.clusters is not None else None,
            "clusters_error": error_json(self.clusters_error),
            "workloads": (
                [w.to_json() for w in self.workloads] if self.workloads is not None else None
            ),
            "workloads_error": error_json(self.workloads_error),
            "kinds": [kind_json(kind) for kind in self.kinds],
            **{
                key: value
                for plural, (records, error) in self.jobs.items()
                for key, value in (
                    (plural, [j.to_json() for j in records] if records is not None else None),
                    (f"{plural}_error", error_json(error)),
                )
            },
            "positions_visible": self.positions_visible,
            "holdings": (
                {queue: h.to_json() for queue, h in self.holdings.items()}
                if self.holdings is not None
                else None
            ),
        }


@dataclass(frozen=True)
class QueuesChanged:
    """A LocalQueue, ClusterQueue, Cohort or ResourceFlavor changed: the queues now.

    ``changed`` names the LocalQueues whose records differ from the answer this viewer was
    told last, when nothing else did (no queue came or went): the socket then sends only
    those records (a ``queue`` message); None: the whole answer (a ``queues`` message). A
    view in the same process reads ``queues`` whole either way (no copy is made)."""

    cause: Cause
    queues: QueueList | None
    error: DWError | None
    changed: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The events socket's ``queue`` message (``changed`` given: those records only), or
        its ``queues`` message (the whole answer, or its error)."""
        if self.changed is not None and self.queues is not None:
            return {
                "type": "queue",
                **self.cause.to_json(),
                "queues": self.queues.records_json(self.changed),
            }
        return {
            "type": "queues",
            **self.cause.to_json(),
            "queues": self.queues.to_json() if self.queues else None,
            "queues_error": error_json(self.error),
        }


@dataclass(frozen=True)
class ClusterChanged:
    """Ray cluster ``name`` changed (``cluster`` None once it is gone); ``crossed`` are the
    milestones passed since this feed last reported it."""

    event: str
    name: str
    cause: Cause
    cluster: ClusterInfo | None
    crossed: tuple[str, ...]
    holding: tuple[str, QueueHolding] | None = None
    """``(queue, what this identity's clusters in it hold and use)`` after the change, for
    the cluster's LocalQueue (None when it names none)."""

    def to_json(self) -> dict[str, Any]:
        """The events socket's ``cluster`` message."""
        return {
            "type": "cluster",
            "event": self.event,
            "name": self.name,
            "cause": self.cause.to_json(),
            "state": self.cluster.to_json() if self.cluster else None,
            "milestones": list(self.crossed),
            "holding": (
                {"queue": self.holding[0], **self.holding[1].to_json()}
                if self.holding is not None
                else None
            ),
        }


@dataclass(frozen=True)
class WorkloadChanged:
    """Workload ``name`` changed, whatever job owns it (``workload`` None once it is gone or no
    longer listed: an elastic job's slice replaced by a newer one), or a change of its queue
    moved its position (``cause`` says which)."""

    event: str
    name: str
    queue: str | None
    cause: Cause
    workload: WorkloadInfo | None

    def to_json(self) -> dict[str, Any]:
        """The events socket's ``workload`` message."""
        return {
            "type": "workload",
            "event": self.event,
            "name": self.name,
            "queue": self.queue,
            "cause": self.cause.to_json(),
            "workload": self.workload.to_json() if self.workload else None,
        }


@dataclass(frozen=True)
class PositionsChanged:
    """Waiting Workloads of LocalQueue ``queue`` moved in Kueue's order, and nothing else of
    them changed: their records now (``workloads``, positions included; one message per
    queue and change, however many moved)."""

    queue: str | None
    cause: Cause
    workloads: tuple[WorkloadInfo, ...]

    def to_json(self) -> dict[str, Any]:
        """The events socket's ``positions`` message: ``{name: [position in the LocalQueue,
        in the ClusterQueue]}`` (each null while not known) of each Workload that moved."""
        return {
            "type": "positions",
            "queue": self.queue,
            "cause": self.cause.to_json(),
            "positions": {
                w.name: [w.position_in_local_queue, w.position_in_cluster_queue]
                for w in self.workloads
            },
        }


@dataclass(frozen=True)
class JobChanged:
    """A job of a workload kind (a RayJob, a TrainJob) changed, or its Workload did: ``kind`` is
    the kind's word (``rayjob``, ``trainjob``), ``job`` its record (None once it is gone)."""

    kind: str
    event: str
    name: str
    cause: Cause
    job: Any

    def to_json(self) -> dict[str, Any]:
        """The events socket's ``rayjob`` or ``trainjob`` message."""
        return {
            "type": self.kind,
            "event": self.event,
            "name": self.name,
            "cause": self.cause.to_json(),
            self.kind: self.job.to_json() if self.job is not None else None,
        }


@dataclass(frozen=True)
class HealthChanged:
    """The health of the watches (or of Kueue's controller) changed."""

    health: WatchHealth

    def to_json(self) -> dict[str, Any]:
        """The events socket's ``health`` message."""
        return {"type": "health", **self.health.to_json()}


Message = (
    QueuesChanged
    | ClusterChanged
    | WorkloadChanged
    | PositionsChanged
    | JobChanged
    | HealthChanged
    | RowsChanged
)
