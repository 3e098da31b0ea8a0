"""The one core of every workload kind jupyter_dw creates besides a RayCluster (a RayJob, a
TrainJob: :mod:`jupyter_dw.domain.kinds`): a request parsed against the namespace's queues,
fitted from the pod sets Kueue will build for it, created with an idempotency key, read back
joined with its Workload and with what its pods use, deleted. :class:`KindService` serves any
:class:`~jupyter_dw.domain.job_kind.JobKind`; every method blocks.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic

from ..domain.cluster_spec import REQUEST_ERROR_KEY, SpecError
from ..domain.fit import PodSetRequest
from ..domain.job_kind import Info, JobKind, MissingReference, QueueChoices, Request
from ..domain.kueue_model import default_local_queue
from ..domain.workloads import is_replaced_slice
from ..k8s.resources import Resource, by_kind, kind_resource
from ..k8s.session import KubeSession
from ..names import IDEMPOTENCY_KEY_ANNOTATION
from .cluster_objects import workloads_of_job
from .cluster_results import FIT_NAME, Deleted, FitResult
from .clusters import (
    ClusterService,
    check_idempotency_key,
    new_idempotency_key,
    priority_names,
    requested_queue,
    require_mapping,
)
from .errors import InvalidName, InvalidSpec, KubeForbidden, KubeNotFound, KubeRejected
from .job_environment import CoreEnvironment
from .kind_results import JobList
from .queue_state import QueueState, queue_state
from .settings import refuse_writes
from .workloads import WorkloadService

Object = dict[str, Any]


@dataclass(frozen=True)
class KindService(Generic[Request, Info]):
    """The namespace's jobs of one ``kind`` for one session (answers from its watch caches)."""

    session: KubeSession
    clusters: ClusterService
    kind: JobKind[Request, Info]

    @property
    def resource(self) -> Resource:
        """The kind's resource: a change of one of its objects changes its record."""
        return kind_resource(self.kind)

    @property
    def env(self) -> CoreEnvironment:
        """What the kind may ask of the core (see :class:`~.job_environment.CoreEnvironment`)."""
        return CoreEnvironment(self.session, self.clusters)

    def served(self) -> bool:
        """Whether the API server serves the kind (its CRD is installed)."""
        return self.session.ready and self.session.discovery.serves(self.kind)

    def records(self) -> tuple[Info, ...]:
        """Every job of the kind (:meth:`list`'s entries)."""
        return self.list().jobs

    # -- answers -------------------------------------------------------------------------

    def fit(self, data: Any, ask_positions: bool = True) -> FitResult:
        """Would this job fit its queue now? Judged by :meth:`ClusterService.fit_scene`, the one
        place any workload is judged, from the pod sets Kueue will build for it. ``name`` may
        be omitted here, and so may the kind's ``fit_placeholders`` (fields that ask no quota:
        filled for the check, given back empty in ``spec``). When it does not fit now, and the
        kind has workers, the most workers that would (as for clusters)."""
        self._require()
        require_mapping(data)
        env = self.env
        request = dict(data)
        named = request.get("name") is not None
        if not named:
            request["name"] = FIT_NAME
        placeholders = self.kind.fit_placeholders
        omitted = [f for f, value in placeholders.items() if request.get(f) is None]
        for field_name in omitted:
            request[field_name] = placeholders[field_name]
        state = queue_state(self.session, naming=requested_queue(data))
        choices = self._choices_in(state)
        job = self._parse(request, choices, env)
        scene = self.clusters.fit_scene(state, job.queue, job.priority, ask_positions)
        verdict = scene.assess(self._pod_sets(job, env))
        workers = self.kind.workers(job)
        suggestion = None
        if workers is not None:
            suggestion = scene.suggest(
                verdict, workers, lambda n: self._pod_sets(self.kind.with_workers(job, n), env)
            )
        omitted_queue = not (isinstance(data.get("queue"), str) and data["queue"].strip())
        shown = replace(job, **dict.fromkeys(omitted, "")) if omitted else job  # type: ignore[type-var]
        return FitResult(
            assessment=verdict,
            spec=shown,
            named=named,
            default_queue=choices.default_reason if omitted_queue else None,
            suggestion=suggestion,
        )

    def list(self) -> JobList[Info]:
        """Every job of the kind in the namespace, sorted by name."""
        self._require()
        objects = self.session.watched_jobs(self.resource, also=self._also)
        return JobList(
            self.session.namespace,
            self.session.positions_visible,
            tuple(sorted(self._infos(objects), key=lambda j: j.name)),
            self.kind.plural,
        )

    def get(self, name: str) -> Info:
        """Job ``name`` (``KubeNotFound`` when there is none)."""
        checked = self._check_name(name)
        self._require()
        [info] = self._infos([self.session.watched_job(self.resource, checked, also=self._also)])
        return info

    def describe_many(self, names: Iterable[str]) -> dict[str, Info]:
        """The cached jobs ``names`` (those not cached are left out). For the change feed."""
        found = [job for name in names if (job := self.session.cached_job(self.resource, name))]
        return {info.name: info for info in self._infos(found)}

    # -- writes --------------------------------------------------------------------------

    def create(self, data: Any, idempotency_key: str | None = None) -> Info:
        """Validate, dry-run (the webhooks of Kueue and of the kind's controller judge it
        before anything exists) and create the job, suspended until Kueue admits it, with an
        idempotency key (a retry of the same action answers with the job it made). Raises what
        :meth:`ClusterService.create` raises; ``NotInstalled`` without the kind's CRD."""
        resource = self._require()
        refuse_writes(self.clusters.config_errors)
        key = check_idempotency_key(idempotency_key) or new_idempotency_key()
        require_mapping(data)
        env = self.env
        job = self._parse(data, self._choices(data), env)
        username = self.session.identity.username
        obj = self.kind.manifest(job, self.session.namespace, username, env)
        obj["metadata"].setdefault("annotations", {})[IDEMPOTENCY_KEY_ANNOTATION] = key
        try:
            created = self.session.create_job(resource, obj)
        except KubeRejected as err:
            if not err.errors:
                err.errors = {REQUEST_ERROR_KEY: err.reason or err.error}
            raise
        [info] = self._infos([self.session.cached_job(resource, job.name) or created])
        return info

    def delete(self, name: str) -> Deleted:
        """Delete job ``name`` (``KubeNotFound`` when absent; background propagation: what it
        made and its Workload follow)."""
        checked = self._check_name(name)
        self.session.delete_object(self._require(), checked)
        return Deleted(checked, self.session.namespace)

    # -- internals -----------------------------------------------------------------------

    @property
    def _also(self) -> tuple[Resource, ...]:
        return tuple(by_kind(kind) for kind in self.kind.watched_with)

    def _require(self) -> Resource:
        # The session asks discovery again before saying the kind is not served: a CRD
        # installed after start-up is found by the first request that needs it.
        return self.session.require(self.kind)

    def _check_name(self, name: Any) -> str:
        """``name`` if it can be the kind's name, else :class:`InvalidName` (400, nothing
        sent)."""
        problem = self.kind.name_error(name) if isinstance(name, str) else "must be a string"
        if problem is not None:
            raise InvalidName(
                f"Invalid {self.kind.kind} name {name!r}",
                problem,
                self.kind.name_rule,
                {"name": problem},
            )
        return name

    def _choices(self, data: Mapping[str, Any]) -> QueueChoices:
        """The namespace's queues and priority classes (the queue ``data`` names looked for if
        just made); all None when LocalQueues cannot be read (Kueue judges the queue)."""
        try:
            state = queue_state(self.session, naming=requested_queue(data), default=True)
        except KubeForbidden:
            return QueueChoices(None, None, None, None)
        return self._choices_in(state)

    def _choices_in(self, state: QueueState) -> QueueChoices:
        choice = default_local_queue(state.local_queues, self.session.namespace)
        return QueueChoices(
            [lq.name for lq in state.local_queues],
            choice.queue.name if choice else None,
            choice.reason if choice else None,
            priority_names(state),
        )

    def _parse(
        self, data: Mapping[str, Any], choices: QueueChoices, env: CoreEnvironment
    ) -> Request:
        """The kind's parse; a ``SpecError`` becomes :class:`InvalidSpec` (400, nothing
        created) listing every bad field."""
        try:
            return self.kind.parse(data, choices, env)
        except SpecError as err:
            details = "; ".join(f"{field}: {message}" for field, message in err.errors.items())
            raise InvalidSpec(
                f"Invalid {self.kind.kind} spec",
                details,
                "Fix the fields listed in 'errors'; nothing was created.",
                err.errors,
            ) from err

    def _pod_sets(self, job: Request, env: CoreEnvironment) -> tuple[PodSetRequest, ...]:
        try:
            return self.kind.pod_sets(job, env)
        except MissingReference as err:
            raise KubeNotFound(err.error, err.reason, err.hint) from err

    @property
    def _workloads(self) -> WorkloadService:
        return WorkloadService(self.session, self.clusters.positions)

    def _infos(self, jobs: Iterable[Object]) -> builtins.list[Info]:
        """Each job with its Workload's record (found by Kueue's job-uid label; positions
        asked once per queue) and what its pods use."""
        jobs = builtins.list(jobs)
        names: dict[str, str] = {}
        for job in jobs:
            uid = _uid(job)
            current = [w for w in workloads_of_job(self.session, uid) if not is_replaced_slice(w)]
            if current:
                names[uid] = str(current[-1]["metadata"]["name"])
        records = self._workloads.describe_many(names.values())
        infos = (self.kind.info(job, records.get(names.get(_uid(job), ""))) for job in jobs)
        return [self._with_usage(info) for info in infos]

    def _with_usage(self, info: Info) -> Info:
        """``info`` with what the job's pods use, from the usage sampler's sample (shared with
        the clusters'), and since when they are idle. The kind's description says whose pods
        they are (:meth:`JobKind.pods`: a RayJob's are its cluster's, a TrainJob's its own, by
        JobSet's label). Unchanged with usage off, or for a kind that does not say. A live
        view never waits for the metrics API (as for clusters)."""
        usage = self.clusters.usage
        pods = self.kind.pods(info) if usage is not None else None
        if usage is None or pods is None:
            return info
        kind, name = pods
        ask = not self.clusters.positions.answering_held_only
        found = usage.usage(name, ask=ask, kind=kind)
        since = usage.idle_since(name, kind) if name else None
        return replace(info, usage=found, idle_since=since)


def _uid(job: Object) -> str:
    return str((job.get("metadata") or {}).get("uid") or "")
