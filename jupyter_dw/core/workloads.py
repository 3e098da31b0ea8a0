"""Every Kueue Workload of the namespace, whatever job owns it, as every surface shows it.
:class:`WorkloadService` joins the domain's records with the cache and the positions; every
method blocks. Costs and permissions: docs/explanation/architecture.md.
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..domain.workloads import (
    WorkloadInfo,
    created_by,
    kind_filter_problem,
    matches,
    owner_of,
    queue_filter_problem,
    sorted_workloads,
    workload_info,
)
from ..k8s.resources import JOB_RESOURCES, RAY_CLUSTER, WORKLOAD, Resource
from ..k8s.session import KubeSession
from ..k8s.watch_events import DELETED
from .cluster_objects import workloads_of_job
from .errors import DWError, InvalidFilter
from .positions import PositionBoard
from .record_memo import RecordMemo
from .workload_results import WorkloadList

Object = dict[str, Any]
log = logging.getLogger(__name__)

OUR_KINDS: dict[tuple[str, str], Resource] = {
    (r.kind, r.group): r for r in (RAY_CLUSTER, *(r for _, r in JOB_RESOURCES))
}
"""The owner kinds jupyter_dw creates (``(kind, API group)``): RayClusters and every workload
kind; their objects carry who made them."""


def check_filters(queue: str | None, kind: str | None) -> None:
    """Raise :class:`InvalidFilter` naming each malformed filter (None: not filtered)."""
    errors: dict[str, str] = {}
    if queue is not None and (problem := queue_filter_problem(queue)):
        errors["queue"] = problem
    if kind is not None and (problem := kind_filter_problem(kind)):
        errors["kind"] = problem
    if errors:
        raise InvalidFilter(
            "Invalid workload filter",
            "; ".join(f"{name}: {problem}" for name, problem in errors.items()),
            "Filter by a LocalQueue name (queue=team-a) and an owner kind as Kind.group "
            "(kind=Job.batch, kind=RayCluster.ray.io).",
            errors,
        )


@dataclass(frozen=True)
class WorkloadService:
    """The namespace's Workloads for one session: answers come from its watch cache."""

    session: KubeSession
    positions: PositionBoard = None  # type: ignore[assignment]  # made from session when None
    """The session's queue positions (one board shared by every service of a core)."""

    records: RecordMemo[WorkloadInfo | None] = None  # type: ignore[assignment]
    """Records per Workload version and position, shared by every reader (made when None)."""

    def __post_init__(self) -> None:
        if self.positions is None:
            object.__setattr__(self, "positions", PositionBoard(self.session))
        if self.records is None:
            object.__setattr__(self, "records", RecordMemo(workload_info))

    def forget_deleted(self, plural: str, event_type: str, obj: Object) -> None:
        """Session listener: a deleted Workload's records leave the memo (the core registers
        it once; a memo never read again for an object would hold it for good)."""
        if plural == WORKLOAD.plural and event_type == DELETED:
            uid = (obj.get("metadata") or {}).get("uid")
            if uid:
                self.records.forget(str(uid))

    def list(
        self,
        queue: str | None = None,
        kind: str | None = None,
        timeout: float | None = None,
        *,
        fresh: bool = True,
    ) -> WorkloadList:
        """Every Workload of the namespace (an elastic job's replaced slices left out), those
        of LocalQueue ``queue`` and of owner kind ``kind`` (``Kind.group``) when given.
        Positions are asked of the visibility API now; with ``fresh`` False (a live view's
        snapshot) they are the board's, asked again only for queues a change marked.

        Raises :class:`InvalidFilter` for a malformed filter (before anything is read),
        ``NotInstalled`` without Kueue and ``KubeForbidden`` when Workloads cannot be listed
        and watched."""
        check_filters(queue, kind)
        objects = self.session.workloads(timeout)
        infos = [i for i in self._infos(objects, fresh) if matches(i, queue, kind)]
        return WorkloadList(
            namespace=self.session.namespace,
            positions_visible=self.session.positions_visible,
            workloads=tuple(sorted_workloads(infos)),
            queue=queue,
            kind=kind,
        )

    def follow_owners(self, timeout: float | None = None) -> None:
        """Open and sync the watches of :data:`OUR_KINDS` that this identity may read (a
        kernel opens watches lazily), so that :meth:`made_by_me` can answer."""
        deadline = time.monotonic() + (self.session.request_timeout if timeout is None else timeout)
        for resource in OUR_KINDS.values():
            try:
                self.session.synced_cache(resource, deadline)
            except DWError as err:  # not known as ours then; the Workloads still show
                log.info("jupyter_dw: %s not followed: %s", resource.plural, err)

    def made_by_me(self, info: WorkloadInfo) -> bool:
        """Whether ``info``'s job is a RayCluster, RayJob or TrainJob this identity created
        through jupyter_dw (from the watch caches: no I/O). Without a known username, any one
        created through jupyter_dw counts, as in the sidebar."""
        owner = info.owner
        resource = OUR_KINDS.get((owner.kind, owner.api_group)) if owner else None
        if owner is None or resource is None:
            return False
        obj = self.session.cached_job(resource, owner.name)
        maker = created_by(obj) if obj is not None else None
        username = self.session.identity.username
        return maker is not None and (username is None or maker == username)

    def mine(self, names: Iterable[str]) -> builtins.list[str]:
        """Which of Workloads ``names`` :meth:`made_by_me` (their owners followed first): a
        kernel reading through its server asks once for the Workloads it shows."""
        self.follow_owners()
        wanted = set(names)
        return sorted(
            w.name
            for w in self.list(fresh=False).workloads
            if w.name in wanted and self.made_by_me(w)
        )

    def describe(self, name: str) -> WorkloadInfo | None:
        """Workload ``name`` as the cache holds it now (None when it does not, or it is a
        replaced slice), with its position when it waits. For the change feed."""
        return self.describe_many([name]).get(name)

    def describe_many(self, names: Iterable[str]) -> dict[str, WorkloadInfo]:
        """:meth:`describe` for several cached Workloads, with the positions the board holds:
        the visibility API is asked again only for a LocalQueue a change marked."""
        found = [w for name in names if (w := self.session.cached_workload(name)) is not None]
        return {info.name: info for info in self._infos(found)}

    def _infos(self, objects: Iterable[Object], fresh: bool = False) -> builtins.list[WorkloadInfo]:
        """Records of ``objects`` (replaced slices left out), positions added to the waiting
        ones (``fresh``: asked of the visibility API now, once per LocalQueue) and preemptors
        named."""
        pairs = [(obj, info) for obj in objects if (info := self._record(obj)) is not None]
        entries = self.positions.entries([i.queue for _, i in pairs if i.waiting], fresh)
        return [
            self._name_preemptor(
                (self._record(obj, entries[info.name]) or info) if info.name in entries else info
            )
            for obj, info in pairs
        ]

    def _record(self, obj: Object, pending: Object | None = None) -> WorkloadInfo | None:
        """:func:`workload_info`, derived once per Workload version and position."""
        if pending is None:
            return self.records.get(obj, None, None)
        where = (pending.get("metadata") or {}).get("name")
        place = (where, pending.get("positionInLocalQueue"), pending.get("positionInClusterQueue"))
        return self.records.get(obj, pending, place)

    def _name_preemptor(self, info: WorkloadInfo) -> WorkloadInfo:
        """``preempted_by.name``: the preemptor's job, when its Workload is in the namespace
        (a lookup in the Workload cache's job-UID index)."""
        preempted_by = info.preempted_by
        if preempted_by is None or preempted_by.job_uid is None:
            return info
        for workload in workloads_of_job(self.session, preempted_by.job_uid):
            owner = owner_of(workload)
            if owner is not None:
                return replace(info, preempted_by=replace(preempted_by, name=owner.name))
        return info
