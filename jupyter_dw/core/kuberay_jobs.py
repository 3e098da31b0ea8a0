"""KubeRay RayJobs (a Ray program that brings its own cluster) as every surface shows them:
validated, fitted, created, listed with their Kueue and KubeRay state, deleted. Not to be
confused with :mod:`.ray_jobs`: Ray's own jobs on a running cluster.

The same core as Ray clusters: the job's cluster is parsed by :class:`ClusterService`'s
parser and policy, fitted by its :meth:`~ClusterService.fit_scene` from the pod sets Kueue
builds for a RayJob (:meth:`ValidatedRayJob.pod_sets`), and its state is its Workload's (the
:class:`WorkloadService` record, with positions) joined with KubeRay's status. Every method
blocks.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..domain.cluster_spec import SpecError
from ..domain.kueue_model import default_local_queue
from ..domain.rayjob_spec import ValidatedRayJob, rayjob_name_error
from ..domain.rayjob_state import RayJobInfo, rayjob_info
from ..domain.workloads import WorkloadInfo, is_replaced_slice
from ..k8s.errors import KubeForbidden, KubeRejected
from ..k8s.session import KubeSession
from ..names import IDEMPOTENCY_KEY_ANNOTATION
from .cluster_results import Deleted, FitResult
from .clusters import (
    ClusterService,
    InvalidName,
    InvalidSpec,
    check_idempotency_key,
    new_idempotency_key,
    priority_names,
    require_mapping,
)
from .listing import ByName
from .settings import refuse_writes
from .workloads import WorkloadService

Object = dict[str, Any]


def check_rayjob_name(name: str) -> str:
    """``name`` if it can be a RayJob's name, else :class:`InvalidName` (400, nothing sent)."""
    problem = rayjob_name_error(name) if isinstance(name, str) else "must be a string"
    if problem is not None:
        raise InvalidName(
            f"Invalid RayJob name {name!r}",
            problem,
            "RayJob names are DNS-1035 labels of at most 47 characters.",
            {"name": problem},
        )
    return name


@dataclass(frozen=True)
class RayJobList(ByName["RayJobInfo"]):
    """The ``GET rayjobs`` answer: every RayJob of ``namespace``, sorted by name."""

    namespace: str
    positions_visible: bool
    rayjobs: tuple[RayJobInfo, ...]

    def _entries(self) -> tuple[RayJobInfo, ...]:
        return self.rayjobs

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {
            "namespace": self.namespace,
            "positions_visible": self.positions_visible,
            "rayjobs": [j.to_json() for j in self.rayjobs],
        }


@dataclass(frozen=True)
class KubeRayJobService:
    """The namespace's RayJobs for one session (answers from its watch caches)."""

    session: KubeSession
    clusters: ClusterService

    @property
    def _workloads(self) -> WorkloadService:
        return WorkloadService(self.session)

    # -- answers -------------------------------------------------------------------------

    def fit(self, data: Any, ask_positions: bool = True) -> FitResult:
        """Would this RayJob fit its queue now? Counts what Kueue will hold for it on the
        running version (the submitter included; see :meth:`ValidatedRayJob.pod_sets`), and
        when it does not fit now, the most workers that would (:meth:`FitScene.suggest`, as
        for clusters). ``name`` and ``entrypoint`` may be omitted here (``spec.entrypoint`` is
        then empty)."""
        require_mapping(data)
        request = dict(data)
        named = request.get("name") is not None
        if not named:
            request["name"] = "fit-check"
        # The command asks no quota: a form is judged before it has one.
        given_entrypoint = request.get("entrypoint") is not None
        if not given_entrypoint:
            request["entrypoint"] = "fit-check"
        state = self.session.queue_state()
        choice = default_local_queue(state.local_queues, self.session.namespace)
        job = self._job(
            request,
            [lq.name for lq in state.local_queues],
            choice.queue.name if choice else None,
            priority_names(state),
        )
        scene = self.clusters.fit_scene(state, job.queue, job.priority, ask_positions)
        counted = self.clusters.elastic.autoscaler_quota().counted
        verdict = scene.assess(job.pod_sets(sidecar_counted=counted))
        # As for a cluster, with the submitter counted as Kueue counts it.
        suggestion = scene.suggest(
            verdict,
            job.cluster.workers,
            lambda n: job.with_workers(n).pod_sets(sidecar_counted=counted),
        )
        omitted_queue = not (isinstance(data.get("queue"), str) and data["queue"].strip())
        return FitResult(
            assessment=verdict,
            spec=job if given_entrypoint else replace(job, entrypoint=""),
            named=named,
            default_queue=choice.reason if choice and omitted_queue else None,
            suggestion=suggestion,
        )

    def list(self) -> RayJobList:
        """Every RayJob of the namespace, sorted by name."""
        objects = self.session.ray_jobs()
        return RayJobList(
            self.session.namespace,
            self.session.positions_visible,
            tuple(sorted(self._infos(objects), key=lambda j: j.name)),
        )

    def get(self, name: str) -> RayJobInfo:
        """RayJob ``name`` (``KubeNotFound`` when there is none)."""
        [info] = self._infos([self.session.ray_job(check_rayjob_name(name))])
        return info

    def describe_many(self, names: Iterable[str]) -> dict[str, RayJobInfo]:
        """The cached RayJobs ``names`` (those not cached are left out). For the change feed."""
        found = [job for name in names if (job := self.session.cached_ray_job(name))]
        return {info.name: info for info in self._infos(found)}

    # -- writes --------------------------------------------------------------------------

    def create(self, data: Any, idempotency_key: str | None = None) -> RayJobInfo:
        """Validate, dry-run and create a RayJob (suspended until Kueue admits it). Raises
        what :meth:`ClusterService.create` raises, for a RayJob."""
        refuse_writes(self.clusters.config_errors)
        key = check_idempotency_key(idempotency_key) or new_idempotency_key()
        require_mapping(data)
        self.session.wait_ready()
        self.session.discovery.require_rayjobs()
        try:
            state = self.session.queue_state()
        except KubeForbidden:
            known, default, priorities = None, None, None
        else:
            known = [lq.name for lq in state.local_queues]
            choice = default_local_queue(state.local_queues, self.session.namespace)
            default = choice.queue.name if choice else None
            priorities = priority_names(state)
        job = self._job(data, known, default, priorities)
        served = self.session.discovery.ray_auth_options is not False
        obj = job.to_rayjob(
            self.session.namespace,
            owner=self.session.identity.username,
            auth_options_served=served,
        )
        obj["metadata"].setdefault("annotations", {})[IDEMPOTENCY_KEY_ANNOTATION] = key
        try:
            created = self.session.create_rayjob(obj)
        except KubeRejected as err:
            if not err.errors:
                err.errors = {"request": err.reason or err.error}
            raise
        [info] = self._infos([self.session.cached_ray_job(job.name) or created])
        return info

    def delete(self, name: str) -> Deleted:
        """Delete RayJob ``name`` (``KubeNotFound`` when absent); its cluster, submitter and
        Workload follow in the background."""
        self.session.delete_rayjob(check_rayjob_name(name))
        return Deleted(name, self.session.namespace)

    # -- internals -----------------------------------------------------------------------

    def _job(
        self,
        data: Mapping[str, Any],
        queues: builtins.list[str] | None,
        default_queue: str | None,
        priorities: builtins.list[str] | None,
    ) -> ValidatedRayJob:
        def parse_cluster(request: Mapping[str, Any]) -> Any:
            try:
                return self.clusters.validate_spec(request, None, None, None)
            except InvalidSpec as err:
                raise SpecError(err.errors or {}) from err

        try:
            return ValidatedRayJob.from_request(
                data, parse_cluster, queues, default_queue, priorities
            )
        except SpecError as err:
            details = "; ".join(f"{field}: {message}" for field, message in err.errors.items())
            raise InvalidSpec(
                "Invalid RayJob spec",
                details,
                "Fix the fields listed in 'errors'; nothing was created.",
                err.errors,
            ) from err

    def _infos(self, rayjobs: Iterable[Object]) -> builtins.list[RayJobInfo]:
        """Each RayJob with its Workload's record (positions asked once per queue)."""
        jobs = builtins.list(rayjobs)
        names: dict[str, str] = {}
        for job in jobs:
            uid = str((job.get("metadata") or {}).get("uid") or "")
            current = [w for w in self.session.workloads_of_job(uid) if not is_replaced_slice(w)]
            if current:
                names[uid] = str(current[-1]["metadata"]["name"])
        records: dict[str, WorkloadInfo] = self._workloads.describe_many(names.values())
        return [
            rayjob_info(
                job, records.get(names.get(str((job.get("metadata") or {}).get("uid")), ""))
            )
            for job in jobs
        ]
