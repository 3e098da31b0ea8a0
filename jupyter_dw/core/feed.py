"""One change feed for every live surface: the events socket and the kernel's widgets.
It turns the caches' raw changes into the messages a viewer needs, remembering what it last told
that viewer; each message lives beside the rule that sends it. How:
docs/explanation/architecture.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ..domain.cluster_state import ClusterSnapshot, transition
from ..domain.freshness import FRESH, Freshness, WatchHealth
from ..domain.kinds.rayjob import owning_rayjob
from ..domain.usage import CLUSTER, QueueHolding, Subject
from ..domain.workloads import Owner, WorkloadInfo, owner_of
from ..k8s.resources import CLUSTER_QUEUE, EVENT, LOCAL_QUEUE, POD, RAY_CLUSTER, WORKLOAD
from ..k8s.session import KubeSession
from ..k8s.watch_events import DELETED
from ..names import JOB_UID_LABEL, RAY_CLUSTER_LABEL, RAY_GROUP
from .cluster_objects import ray_cluster_by_uid
from .clusters import ClusterInfo, ClusterService
from .errors import DWError
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
from .holdings import holding, holdings
from .kind_service import KindService
from .queue_results import QueueList
from .queue_state import QUEUE_SOURCES, queue_state
from .queues import QueueService
from .shown_workloads import ShownWorkloads
from .workload_results import WorkloadList
from .workloads import WorkloadService

log = logging.getLogger(__name__)

Object = dict[str, Any]
T = TypeVar("T")

QUEUE_KINDS = {k.plural: k.kind for k in QUEUE_SOURCES}
"""Caches whose changes are queue changes (those the queues are parsed from, the priority
classes too), and the kind each names."""
CLUSTER_CAUSES = {k.plural: k.kind for k in (RAY_CLUSTER, WORKLOAD, POD, EVENT)}
"""Caches whose changes are cluster changes, and the ``cause`` kind each names."""
HEALTH = "watch-health"
"""The ``plural`` of a change that is a change of watch health (no object)."""
USAGE = "cluster-usage"
"""The ``plural`` of a change of what a cluster or a job uses (a new usage sample; ``kind``: the
sampler's subject, ``cluster`` or a job kind's ``word``, ``trainjob``; ``name``: its name)."""
POSITIONS = "queue-positions"
"""The ``plural`` of a change the position board found by itself (see :class:`PositionBoard`):
the pending list of LocalQueue ``metadata.name`` changed with no cache change to say so."""
HEALTH_CAUSE_KIND = "WatchHealth"
"""The ``cause.kind`` of a cluster message sent because the cluster's freshness changed."""


class ChangeFeed:
    """What one viewer is told: a :class:`Snapshot`, then messages for each change.

    ``watch_queues``/``watch_clusters`` False leave that part out (a widget that shows one
    cluster needs no queue answers); without ``workloads`` there are no Workload messages.
    """

    def __init__(
        self,
        session: KubeSession,
        queues: QueueService,
        clusters: ClusterService,
        workloads: WorkloadService | None = None,
        *,
        watch_queues: bool = True,
        watch_clusters: bool = True,
        jobs: Sequence[KindService[Any, Any]] = (),
    ) -> None:
        self.session = session
        self.jobs = tuple(jobs)
        self.queues = queues
        self.clusters = clusters
        self.workloads = workloads
        self.watch_queues = watch_queues
        self.watch_clusters = watch_clusters
        self._known: dict[str, ClusterSnapshot] = {}
        self._infos: dict[str, ClusterInfo] | None = None
        """The records last sent of each cluster: what :meth:`holding` sums (None until the
        snapshot, or in a kernel, which takes none, the first cluster message, reads them)."""
        self._workloads = ShownWorkloads()
        self._seeded = False
        self._freshness: dict[str, Freshness] = {}
        self._health: WatchHealth | None = None
        self._positions_seen: dict[str, int] = {}
        """The version of each LocalQueue's pending list this viewer's records were made
        with (see :class:`PositionBoard`): a queue change re-reads only the others."""
        self._queues_told: QueueList | None = None
        """The queues answer this viewer was told last (a change sends what differs)."""

    def listen(self, on_change: Callable[[str, str, Object], None]) -> Callable[[], None]:
        """Register ``on_change`` on the session's caches and on its watch health (called on
        their threads; hand the change to :meth:`messages` in order). Register before reading
        the snapshot, so no change between the two is lost. Returns a remover."""
        remove_changes = self.session.add_listener(on_change)
        remove_health = self.session.add_health_listener(lambda: on_change(HEALTH, "MODIFIED", {}))
        remove_positions = self.clusters.positions.add_listener(
            lambda queue: on_change(POSITIONS, "MODIFIED", {"metadata": {"name": queue}})
        )
        usage = self.clusters.usage if self.watch_clusters else None
        removers = [remove_changes, remove_health, remove_positions]
        if usage is not None:
            # Listen first, then follow: the first sample's changes reach this viewer.

            def usage_changed(subjects: set[Subject]) -> None:
                for kind, name in sorted(subjects):
                    on_change(USAGE, "MODIFIED", {"kind": kind, "metadata": {"name": name}})

            removers.append(usage.add_listener(usage_changed))
            removers.append(usage.follow())

        def remove() -> None:
            for remover in removers:
                remover()

        return remove

    def snapshot(self) -> Snapshot:
        """Queues and clusters now (blocking)."""
        queues, queues_error = _answer(self.queues.list) if self.watch_queues else (None, None)
        self._queues_told = queues
        clusters, clusters_error = (
            _answer(self._live_clusters) if self.watch_clusters else (None, None)
        )
        if clusters is not None:
            self._known = {c.snapshot.name: c.snapshot for c in clusters}
            self._freshness = {c.snapshot.name: c.freshness for c in clusters}
            self._infos = {c.snapshot.name: c for c in clusters}
        # Versions before the list: a pending list that changes meanwhile counts as changed.
        positions_seen = self.clusters.positions.versions()
        workloads, workloads_error = (
            _answer(self._live_workloads) if self.workloads is not None else (None, None)
        )
        if workloads is not None:
            self._workloads.reset(workloads)
            self._positions_seen = positions_seen
            self._seeded = True
        jobs = {
            service.kind.plural: _answer(service.records) if service.served() else (None, None)
            for service in self.jobs
        }
        self._health = self.session.watch_health() if self.session.ready else None
        return Snapshot(
            namespace=self.session.namespace if self.session.ready else None,
            queues=queues,
            queues_error=queues_error,
            clusters=tuple(clusters) if clusters is not None else None,
            clusters_error=clusters_error,
            positions_visible=self.session.positions_visible,
            health=self._health,
            workloads=tuple(workloads) if workloads is not None else None,
            workloads_error=workloads_error,
            jobs=jobs,
            kinds=tuple(service.kind for service in self.jobs),
            holdings=(holdings(clusters, self._username()) if clusters is not None else None),
        )

    def _username(self) -> str | None:
        return self.session.identity.username if self.session.ready else None

    def holding(self, queue: str | None) -> tuple[str, QueueHolding] | None:
        """What this identity's clusters in ``queue`` hold and use, from the records this
        feed last sent (no read once they are known)."""
        infos = self._cluster_infos()
        if queue is None or infos is None:
            return None
        return queue, holding(infos.values(), queue, self._username())

    def _cluster_infos(self) -> dict[str, ClusterInfo] | None:
        if self._infos is None:
            try:
                self._infos = {c.snapshot.name: c for c in self._live_clusters()}
            except DWError as err:
                log.info("jupyter_dw: holdings not known: %s", err)
        return self._infos

    def _live_clusters(self) -> list[ClusterInfo]:
        # The board's positions: its marks follow the same changes this feed does, so an
        # answer it holds is the visibility API's answer now (ten tabs: one call, not ten).
        return self.clusters.entries(fresh=False)

    def _live_workloads(self) -> WorkloadList:
        assert self.workloads is not None
        return self.workloads.list(fresh=False)

    def messages(self, plural: str, event_type: str, obj: Object) -> list[Message]:
        """What one raw change means for this viewer (blocking on the caches, never on the
        visibility API: positions are the board's, and a list it reads again later comes as a
        change of its own, see :meth:`PositionBoard.held_only`; may be nothing)."""
        with self.clusters.positions.held_only():
            return self._messages(plural, event_type, obj)

    def _messages(self, plural: str, event_type: str, obj: Object) -> list[Message]:
        if plural == HEALTH:
            return self._health_messages()
        metadata = obj.get("metadata") or {}
        name = str(metadata.get("name") or "")
        if plural == USAGE:
            return self._usage_messages(str(obj.get("kind") or CLUSTER), name)
        if plural == POSITIONS:
            cause = Cause(LOCAL_QUEUE.kind, name, "MODIFIED")
            return [*self._waiting_clusters_moved(cause), *self._workloads_moved(cause)]
        if plural in QUEUE_KINDS:
            if not self.watch_queues and not self._waiting() and not self._workloads.any_waiting():
                return []
            if not _concerns_namespace(self.session, plural, event_type, obj):
                return []
            cause = Cause(QUEUE_KINDS[plural], name, event_type)
            found: list[Message] = []
            if self.watch_queues:
                found.extend(self._queues_messages(cause))
            return [
                *found,
                *self._waiting_clusters_moved(cause),
                *self._workloads_moved(cause),
            ]
        found = []
        if plural == WORKLOAD.plural and self.workloads is not None:
            found.extend(self._workload_messages(event_type, name, obj))
        found.extend(self._job_messages(plural, event_type, name, obj))
        if plural not in CLUSTER_CAUSES or not self.watch_clusters:
            return found
        cluster = self._cluster_name(plural, obj)
        if cluster is None:
            return found
        raycluster = self.session.cached_ray_cluster(cluster)
        if raycluster is not None and owning_rayjob(raycluster) is not None:
            return found  # a RayJob's own cluster: shown under its RayJob, not as a cluster
        if plural == EVENT.plural and self.session.cached_ray_cluster(cluster) is None:
            return found  # about a RayCluster gone (or not seen yet): its own change says so
        cause = Cause(CLUSTER_CAUSES[plural], name, event_type)
        event = event_type if plural == RAY_CLUSTER.plural else "MODIFIED"
        message = self.cluster_message(cluster, event, cause)
        return [*found, message] if message is not None else found

    def _queues_messages(self, cause: Cause) -> list[Message]:
        """The queues answer now, as what differs from the one this viewer was told: the
        records of the LocalQueues that changed (nothing when none did), or the whole answer
        when a queue came or went, the answer's other fields changed, or it is an error."""
        queues, error = _answer(self.queues.list)
        told, self._queues_told = self._queues_told, queues
        changed = (
            self.queues.changes(told, queues) if told is not None and queues is not None else None
        )
        if changed == ():
            return []
        return [QueuesChanged(cause, queues, error, changed)]

    def _job_messages(self, plural: str, event_type: str, name: str, obj: Object) -> list[Message]:
        """A job's record when it or its Workload changed (its state is both)."""
        for service in self.jobs:
            if plural == service.resource.plural:
                job, event, cause = name, event_type, Cause(service.resource.kind, name, event_type)
            elif plural == WORKLOAD.plural:
                owner = owner_of(obj)
                if owner is None or self._job_kind_of(owner) is not service:
                    continue
                job, event, cause = owner.name, "MODIFIED", Cause(WORKLOAD.kind, name, event_type)
            else:
                continue
            info = service.describe_many([job]).get(job)
            if info is None and plural != service.resource.plural:
                return []  # the job is gone: its own DELETED says so
            return [
                JobChanged(
                    service.kind.word, event if info is not None else DELETED, job, cause, info
                )
            ]
        return []

    def _usage_messages(self, kind: str, name: str) -> list[Message]:
        """The record whose usage changed as a reader sees it: a cluster's, the job's whose
        own cluster it is (a RayJob's), or the job's of the kind whose ``word`` is ``kind``
        (a TrainJob's); nothing when it is gone (its own change says so) or not followed."""
        cause = Cause("PodMetrics", name, "MODIFIED")
        if kind != CLUSTER:
            service = next((s for s in self.jobs if s.kind.word == kind), None)
            return self._job_record(service, name, cause) if service is not None else []
        raycluster = self.session.cached_ray_cluster(name)
        if raycluster is None:
            return []
        owner = owner_of(raycluster)
        service = self._job_kind_of(owner) if owner is not None else None
        if owner is not None and service is not None:
            return self._job_record(service, owner.name, cause)
        if owning_rayjob(raycluster) is not None:
            return []  # shown under its RayJob, which this feed does not follow
        message = self.cluster_message(name, "MODIFIED", cause)
        return [message] if message is not None else []

    @staticmethod
    def _job_record(service: KindService[Any, Any], name: str, cause: Cause) -> list[Message]:
        """Job ``name`` of ``service``'s kind as it is now (nothing once it is gone)."""
        info = service.describe_many([name]).get(name)
        return (
            [] if info is None else [JobChanged(service.kind.word, "MODIFIED", name, cause, info)]
        )

    def seed_workloads(self) -> None:
        """Learn the Workloads there are now, without a snapshot (a kernel's feed, first
        thing on its thread), so waiting ones whose positions move are reported. Blocking;
        at most once, and not after a snapshot."""
        if self.workloads is None or self._seeded:
            return
        positions_seen = self.clusters.positions.versions()
        workloads, _ = _answer(self._live_workloads)
        if workloads is not None:
            self._workloads.reset(workloads)
            self._positions_seen = positions_seen
            self._seeded = True

    def _workload_messages(self, event_type: str, name: str, obj: Object) -> list[Message]:
        """Workload ``name`` now (``DELETED`` with no record once it is gone or no longer
        listed); then each waiting Workload of its queue whose position moved with it (when
        the queue's pending list changed: at most one visibility call, shared by every
        viewer). A record equal to the one this viewer was told sends nothing, one whose
        position alone moved goes with the others' positions: a change of what no record shows
        (an annotation, Kueue's resourceVersion), or the caches' first list of 5,000 Workloads
        reaching a socket opened while they synced, is not news."""
        assert self.workloads is not None
        cause = Cause(WORKLOAD.kind, name, event_type)
        queue = (obj.get("spec") or {}).get("queueName")
        # Positions only for the others waiting in its queue (its own come with its record): a
        # change in a queue where nothing else waits (an admitted one's PodsReady) asks nothing.
        others = [w for w in self._workloads.waiting_in(queue) if w != name]
        moved = self._positions_changed([queue]) if isinstance(queue, str) and others else set()
        others = others if moved else []
        infos = self.workloads.describe_many([name, *others])
        info = infos.pop(name, None)  # None: gone, or a replaced slice
        known = self._workloads.get(name)
        found: list[Message] = []
        if info is None:
            if self._workloads.pop(name) is not None:
                found.append(WorkloadChanged(DELETED, name, queue, cause, None))
        elif known is not None and (info == known or _position_only(known, info)):
            # Its job's record comes with the change itself (see _job_messages).
            return self._moved({name: info, **infos}, cause, own=name)
        else:
            self._workloads.put(info)
            found.append(WorkloadChanged(event_type, name, queue, cause, info))
        return [*found, *self._moved(infos, cause)]

    def _workloads_moved(self, cause: Cause) -> list[Message]:
        """Waiting Workloads whose record changed with a queue (their positions): only those
        of LocalQueues whose pending list changed since this viewer's records were made."""
        if self.workloads is None or not self._workloads.any_waiting():
            return []
        moved = self._positions_changed(self._workloads.waiting_queues())
        names = [n for queue in sorted(moved) for n in self._workloads.waiting_in(queue)]
        return self._moved(self.workloads.describe_many(names), cause) if names else []

    def _positions_changed(self, queues: Iterable[str | None]) -> set[str]:
        """Those of ``queues`` whose pending list differs from the one this viewer last saw
        (the board asks the visibility API again only for queues a change marked)."""
        versions = self.clusters.positions.refresh(queues)
        changed = {q for q, v in versions.items() if self._positions_seen.get(q) != v}
        self._positions_seen.update(versions)
        return changed

    def _moved(
        self, infos: dict[str, WorkloadInfo], cause: Cause, own: str | None = None
    ) -> list[Message]:
        """The records of ``infos`` that differ from those this viewer was told: those whose
        position alone moved in one :class:`PositionsChanged` per LocalQueue (at scale a
        queue change moves hundreds), any other as its own :class:`WorkloadChanged`; then the
        record of each job whose Workload moved (but ``own``'s, the changed Workload's)."""
        changed: list[Message] = []
        by_queue: dict[str | None, list[WorkloadInfo]] = {}
        jobs: list[Message] = []
        for name, info in infos.items():
            known = self._workloads.get(name)
            if info == known:
                continue
            self._workloads.put(info)
            if known is not None and _position_only(known, info):
                by_queue.setdefault(info.queue, []).append(info)
            else:
                changed.append(WorkloadChanged("MODIFIED", name, info.queue, cause, info))
            if name != own:
                jobs.extend(self._owning_job_moved(info, cause))
        positions = [
            PositionsChanged(queue, cause, tuple(moved)) for queue, moved in by_queue.items()
        ]
        return [*changed, *positions, *jobs]

    def _owning_job_moved(self, info: WorkloadInfo, cause: Cause) -> list[Message]:
        """The record of the RayJob or TrainJob whose Workload ``info`` moved: its card shows
        the Workload's position. Without it, a job whose position came only after its own last
        change (the board's answer landing after Kueue's condition write) never showed one."""
        owner = info.owner
        service = self._job_kind_of(owner) if owner is not None else None
        if owner is None or service is None:
            return []
        return self._job_record(service, owner.name, cause)

    def _job_kind_of(self, owner: Owner) -> KindService[Any, Any] | None:
        """The workload kind's service (of :attr:`jobs`) that ``owner`` is, or None."""
        for service in self.jobs:
            if (owner.kind, owner.api_group) == (service.kind.kind, service.kind.group):
                return service
        return None

    def cluster_message(self, cluster: str, event: str, cause: Cause) -> ClusterChanged | None:
        """Cluster ``cluster`` as the caches hold it now (``cluster`` None once it is gone);
        None when the RayCluster cache cannot say (not open, not listed yet, or stopped): a
        cluster the cache does not hold is gone only if the cache is complete."""
        info = self.clusters.describe(cluster)
        known = self._known.get(cluster)
        if info is None:
            rayclusters = self.session.cache(RAY_CLUSTER)
            if rayclusters is None or not rayclusters.synced:
                return None
            self._known.pop(cluster, None)
            self._freshness.pop(cluster, None)
            infos = self._cluster_infos()
            gone = infos.pop(cluster, None) if infos is not None else None
            queue = gone.snapshot.queue if gone is not None else None
            return ClusterChanged(event, cluster, cause, None, (), self.holding(queue))
        crossed = tuple(transition(known, info.snapshot))
        self._known[cluster] = info.snapshot
        self._freshness[cluster] = info.freshness
        infos = self._cluster_infos()
        if infos is not None:
            infos[cluster] = info
        return ClusterChanged(
            event, cluster, cause, info, crossed, self.holding(info.snapshot.queue)
        )

    def _health_messages(self) -> list[Message]:
        """A :class:`HealthChanged` if the health differs from what this viewer was told, and a
        cluster message for each known cluster whose freshness changed."""
        if not self.session.ready:
            return []
        health = self.session.watch_health()
        if health == self._health:
            return []
        self._health = health
        found: list[Message] = [HealthChanged(health)]
        if not self.watch_clusters:
            return found
        for cluster, info in self.clusters.describe_many(list(self._known)).items():
            if info.freshness == self._freshness.get(cluster, FRESH):
                continue
            cause = Cause(HEALTH_CAUSE_KIND, info.freshness.state, "MODIFIED")
            crossed = tuple(transition(self._known.get(cluster), info.snapshot))
            self._known[cluster] = info.snapshot
            self._freshness[cluster] = info.freshness
            found.append(ClusterChanged("MODIFIED", cluster, cause, info, crossed))
        return found

    def _waiting(self) -> list[str]:
        """Clusters with a Workload waiting for quota: their own, or a scale-up's slice."""
        return [
            name
            for name, status in self._known.items()
            if status.state == "queued"
            or (status.scale is not None and status.scale.state == "queued")
        ]

    def _waiting_clusters_moved(self, cause: Cause) -> list[Message]:
        """Waiting clusters whose position changed with a queue.

        A position moves when a workload ahead is admitted or leaves, and that workload may
        be in another namespace: nothing of the waiting cluster changes, only the queues'
        status. So a queue change re-reads the positions of the waiting clusters and reports
        those that moved.
        """
        moved: list[Message] = []
        for cluster, info in self.clusters.describe_many(self._waiting()).items():
            known = self._known.get(cluster)
            if info.snapshot == known:
                continue
            crossed = tuple(transition(known, info.snapshot))
            self._known[cluster] = info.snapshot
            self._freshness[cluster] = info.freshness
            moved.append(ClusterChanged("MODIFIED", cluster, cause, info, crossed))
        return moved

    def _cluster_name(self, plural: str, obj: Object) -> str | None:
        """The RayCluster a RayCluster, Workload or Ray pod belongs to, if known."""
        metadata = obj.get("metadata") or {}
        if plural == RAY_CLUSTER.plural:
            return str(metadata.get("name") or "") or None
        if plural == POD.plural:
            return (metadata.get("labels") or {}).get(RAY_CLUSTER_LABEL)
        if plural == EVENT.plural:  # KubeRay's warnings about a RayCluster (field selector)
            return str((obj.get("involvedObject") or {}).get("name") or "") or None
        uid = (metadata.get("labels") or {}).get(JOB_UID_LABEL)
        raycluster = ray_cluster_by_uid(self.session, str(uid)) if uid else None
        if raycluster is not None:
            return str((raycluster.get("metadata") or {}).get("name"))
        # The RayCluster may be gone already (its Workload is deleted after it): its owner
        # reference still names it.
        for owner in metadata.get("ownerReferences") or []:
            if (
                owner.get("kind") == RAY_CLUSTER.kind
                and str(owner.get("apiVersion", "")).split("/")[0] == RAY_GROUP
            ):
                return str(owner.get("name"))
        return None


def _position_only(before: WorkloadInfo, after: WorkloadInfo) -> bool:
    """Whether ``after`` differs from ``before`` in its positions alone."""
    return (
        replace(
            before,
            position_in_local_queue=after.position_in_local_queue,
            position_in_cluster_queue=after.position_in_cluster_queue,
        )
        == after
    )


def _answer(func: Callable[[], T]) -> tuple[T | None, DWError | None]:
    """``(result, None)``, or ``(None, error)`` when ``func`` raises a DWError."""
    try:
        return func(), None
    except DWError as err:
        return None, err


def _concerns_namespace(session: KubeSession, plural: str, event_type: str, obj: Object) -> bool:
    """Whether a change of a queue object can change the namespace's queues answer.

    Every LocalQueue (the cache holds only the namespace's), Cohort, ResourceFlavor and
    WorkloadPriorityClass counts.
    A ClusterQueue counts when a LocalQueue points to it, or it sits in the same cohort tree as
    one that does (lending and borrowing link them), or it was deleted (its tree is unknown).
    """
    if plural != CLUSTER_QUEUE.plural or event_type == DELETED:
        return True
    name = str((obj.get("metadata") or {}).get("name") or "")
    try:
        state = queue_state(session)
    except DWError:
        return True  # the answer will be this error: worth a message
    used = {lq.cluster_queue for lq in state.local_queues}
    if name in used:
        return True
    tree = state.quota_tree
    if tree is None:
        return False
    path = tree.cohort_path(name) if tree.cluster_queue(name) is not None else ()
    roots = {p[-1] for cq in used if tree.cluster_queue(cq) and (p := tree.cohort_path(cq))}
    return bool(path) and path[-1] in roots
