"""The one core of every Kueue-managed job jupyter_dw makes besides a RayCluster (a RayJob, a
TrainJob): a request parsed against the namespace's queues, fitted from the pod sets Kueue
will build for it, created with an idempotency key, and read back joined with its Workload.

A job kind is a parser, a manifest and its pod sets (its domain module), plus how its objects
are read and written (its k8s access): :class:`PodSetJobService` holds the rest once. Every
method blocks.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, TypeVar

from ..domain.cluster_spec import REQUEST_ERROR_KEY, SpecError
from ..domain.fit import FitVerdict, PodSetRequest
from ..domain.fit_suggestion import Suggestion
from ..domain.kueue_model import default_local_queue
from ..domain.workloads import WorkloadInfo, is_replaced_slice
from ..k8s.errors import KubeForbidden, KubeRejected
from ..k8s.resources import Resource
from ..k8s.session import KubeSession
from ..names import IDEMPOTENCY_KEY_ANNOTATION
from .cluster_objects import workloads_of_job
from .cluster_results import FitResult
from .clusters import (
    FIT_NAME,
    ClusterService,
    FitScene,
    InvalidSpec,
    check_idempotency_key,
    new_idempotency_key,
    priority_names,
    requested_queue,
    require_mapping,
)
from .queue_state import QueueState, queue_state
from .settings import refuse_writes
from .usage import TRAINJOB
from .workloads import WorkloadService

Object = dict[str, Any]
Spec = TypeVar("Spec")
Info = TypeVar("Info")


@dataclass(frozen=True)
class QueueChoices:
    """What a request's ``queue`` and ``priority`` are checked against (None: unreadable,
    Kueue will judge), and why the default queue is the default."""

    queues: builtins.list[str] | None
    default_queue: str | None
    default_reason: str | None
    priorities: builtins.list[str] | None


Parse = Callable[[Mapping[str, Any], QueueChoices], Spec]
"""Parses a request (raises ``SpecError``), given the queue choices."""


@dataclass(frozen=True)
class PodSetJobService(Generic[Spec]):
    """Fit, create and read one kind of Kueue-managed job (see the module's docstring)."""

    session: KubeSession
    clusters: ClusterService

    what = "job"
    """The kind in messages: ``"RayJob"``, ``"TrainJob"``."""
    message = "job"
    """The events socket's word for one record (``"rayjob"``, ``"trainjob"``): the ``type`` of
    its change messages and the key of the record in them; the snapshot lists them as
    ``<message>s``."""
    resource: ClassVar[Resource]
    """The kind's own resource: a change of one of its objects changes its record."""

    # -- what every kind answers (the change feed reads any kind through these) -----------

    def served(self) -> bool:
        """Whether the API server serves this kind (its CRD is installed)."""
        raise NotImplementedError

    def records(self) -> Sequence[Any]:
        """Every job of this kind in the namespace, as ``GET <kind>s`` lists them."""
        raise NotImplementedError

    def describe_many(self, names: Iterable[str]) -> Mapping[str, Any]:
        """The cached jobs ``names`` by name (those not cached are left out)."""
        raise NotImplementedError

    @property
    def _workloads(self) -> WorkloadService:
        return WorkloadService(self.session, self.clusters.positions)

    def choices(self, data: Mapping[str, Any], *, unreadable_ok: bool) -> QueueChoices:
        """The namespace's queues and priority classes (the queue ``data`` names looked for
        if just made); all None when LocalQueues cannot be read and ``unreadable_ok`` (a
        create: Kueue judges the queue), else the 403."""
        try:
            state = queue_state(self.session, naming=requested_queue(data), default=True)
        except KubeForbidden:
            if not unreadable_ok:
                raise
            return QueueChoices(None, None, None, None)
        return self.choices_in(state)

    def choices_in(self, state: QueueState) -> QueueChoices:
        """:meth:`choices` from a queue state already read."""
        choice = default_local_queue(state.local_queues, self.session.namespace)
        return QueueChoices(
            [lq.name for lq in state.local_queues],
            choice.queue.name if choice else None,
            choice.reason if choice else None,
            priority_names(state),
        )

    def parsed(self, parse: Parse[Spec], data: Mapping[str, Any], choices: QueueChoices) -> Spec:
        """``parse(data, choices)``; a ``SpecError`` becomes :class:`InvalidSpec` (400,
        nothing created) listing every bad field."""
        try:
            return parse(data, choices)
        except SpecError as err:
            details = "; ".join(f"{field}: {message}" for field, message in err.errors.items())
            raise InvalidSpec(
                f"Invalid {self.what} spec",
                details,
                "Fix the fields listed in 'errors'; nothing was created.",
                err.errors,
            ) from err

    def fit_job(
        self,
        data: Any,
        parse: Parse[Spec],
        pod_sets: Callable[[Spec], Sequence[PodSetRequest]],
        ask_positions: bool = True,
        *,
        placeholders: Mapping[str, str] | None = None,
        suggest: Callable[[FitScene, FitVerdict, Spec], Suggestion | None] | None = None,
    ) -> FitResult:
        """Would this job fit its queue now? Judged by :meth:`ClusterService.fit_scene`, the
        one place any workload is judged, from ``pod_sets`` (what Kueue will build). ``name``
        may be omitted here, and so may each of ``placeholders`` (fields that ask no quota,
        such as a command a form has not been given yet: filled for the check, given back
        empty in ``spec``). ``suggest(scene, verdict, job)``: what would fit now, when it
        does not (as for clusters)."""
        require_mapping(data)
        request = dict(data)
        named = request.get("name") is not None
        if not named:
            request["name"] = FIT_NAME
        omitted = [f for f, value in (placeholders or {}).items() if request.get(f) is None]
        for field_name in omitted:
            request[field_name] = (placeholders or {})[field_name]
        state = queue_state(self.session, naming=requested_queue(data))
        choices = self.choices_in(state)
        job = self.parsed(parse, request, choices)
        queue, priority = job.queue, job.priority  # type: ignore[attr-defined]
        scene = self.clusters.fit_scene(state, queue, priority, ask_positions)
        verdict = scene.assess(pod_sets(job))
        omitted_queue = not (isinstance(data.get("queue"), str) and data["queue"].strip())
        shown = replace(job, **dict.fromkeys(omitted, "")) if omitted else job  # type: ignore[type-var]
        return FitResult(
            assessment=verdict,
            spec=shown,  # type: ignore[arg-type]
            named=named,
            default_queue=choices.default_reason if omitted_queue else None,
            suggestion=suggest(scene, verdict, job) if suggest is not None else None,
        )

    def create_job(
        self,
        data: Any,
        idempotency_key: str | None,
        parse: Parse[Spec],
        manifest: Callable[[Spec], Object],
        create: Callable[[Object], Object],
    ) -> tuple[Spec, Object]:
        """Validate, then ``create(manifest(job))`` with the idempotency key (a retry of the
        same action answers with the object it made). Raises what
        :meth:`ClusterService.create` raises."""
        refuse_writes(self.clusters.config_errors)
        key = check_idempotency_key(idempotency_key) or new_idempotency_key()
        require_mapping(data)
        self.session.wait_ready()
        job = self.parsed(parse, data, self.choices(data, unreadable_ok=True))
        obj = manifest(job)
        obj["metadata"].setdefault("annotations", {})[IDEMPOTENCY_KEY_ANNOTATION] = key
        try:
            return job, create(obj)
        except KubeRejected as err:
            if not err.errors:
                err.errors = {REQUEST_ERROR_KEY: err.reason or err.error}
            raise

    def with_usage(self, info: Info, kind: str, name: str | None) -> Info:
        """``info`` with what the job's pods use, from the usage sampler's sample (shared with
        the clusters'), and since when it is idle: ``kind`` the sampler's subject (a RayJob is
        its cluster's, :data:`~.usage.CLUSTER`; a TrainJob its own, :data:`~.usage.TRAINJOB`),
        ``name`` its name (None: no cluster yet). Unchanged with usage off. A live view never
        waits for the metrics API (as for clusters)."""
        usage = self.clusters.usage
        if usage is None:
            return info
        ask = not self.clusters.positions.answering_held_only
        subject = name or ""
        found = (
            usage.trainjob_usage(subject, ask) if kind == TRAINJOB else usage.usage(subject, ask)
        )
        since = usage.idle_since(subject, kind) if name else None
        return replace(info, usage=found, idle_since=since)  # type: ignore[type-var]

    def with_workloads(
        self, jobs: Iterable[Object]
    ) -> builtins.list[tuple[Object, WorkloadInfo | None]]:
        """Each job with its Workload's record (found by Kueue's job-uid label; positions
        asked once per queue)."""
        jobs = builtins.list(jobs)
        names: dict[str, str] = {}
        for job in jobs:
            uid = _uid(job)
            current = [w for w in workloads_of_job(self.session, uid) if not is_replaced_slice(w)]
            if current:
                names[uid] = str(current[-1]["metadata"]["name"])
        records = self._workloads.describe_many(names.values())
        return [(job, records.get(names.get(_uid(job), ""))) for job in jobs]


def _uid(job: Object) -> str:
    return str((job.get("metadata") or {}).get("uid") or "")
