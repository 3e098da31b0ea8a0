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
from dataclasses import dataclass
from typing import Any

from ..domain.cluster_spec import SpecError
from ..domain.rayjob_spec import ValidatedRayJob, rayjob_name_error
from ..domain.rayjob_state import RayJobInfo, rayjob_info
from ..k8s.resources import RAY_JOB
from .cluster_results import Deleted, FitResult
from .clusters import InvalidName, InvalidSpec
from .listing import ByName
from .podset_jobs import PodSetJobService, QueueChoices
from .usage import CLUSTER

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
class KubeRayJobService(PodSetJobService[ValidatedRayJob]):
    """The namespace's RayJobs for one session (answers from its watch caches)."""

    what = "RayJob"
    message = "rayjob"
    resource = RAY_JOB

    def served(self) -> bool:
        """Whether KubeRay's RayJob CRD is served."""
        return self.session.ready and self.session.discovery.rayjobs_served

    def records(self) -> tuple[RayJobInfo, ...]:
        """Every RayJob of the namespace (:meth:`list`'s entries)."""
        return self.list().rayjobs

    # -- answers -------------------------------------------------------------------------

    def fit(self, data: Any, ask_positions: bool = True) -> FitResult:
        """Would this RayJob fit its queue now? Counts what Kueue will hold for it on the
        running version (the submitter included; see :meth:`ValidatedRayJob.pod_sets`), and
        when it does not fit now, the most workers that would (:meth:`FitScene.suggest`, as
        for clusters). ``name`` and ``entrypoint`` may be omitted here (``spec.entrypoint`` is
        then empty): the command asks no quota, so a form is judged before it has one."""
        counted = self.clusters.elastic.autoscaler_quota().counted
        return self.fit_job(
            data,
            self._parse,
            lambda job: job.pod_sets(sidecar_counted=counted),
            ask_positions,
            placeholders={"entrypoint": "fit-check"},
            # As for a cluster, with the submitter counted as Kueue counts it.
            suggest=lambda scene, verdict, job: scene.suggest(
                verdict,
                job.cluster.workers,
                lambda n: job.with_workers(n).pod_sets(sidecar_counted=counted),
            ),
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
        self.session.wait_ready()
        self.session.discovery.require_rayjobs()
        served = self.session.discovery.ray_auth_options is not False
        job, created = self.create_job(
            data,
            idempotency_key,
            self._parse,
            lambda job: job.to_rayjob(
                self.session.namespace,
                owner=self.session.identity.username,
                auth_options_served=served,
            ),
            self.session.create_rayjob,
        )
        [info] = self._infos([self.session.cached_ray_job(job.name) or created])
        return info

    def delete(self, name: str) -> Deleted:
        """Delete RayJob ``name`` (``KubeNotFound`` when absent); its cluster, submitter and
        Workload follow in the background."""
        self.session.delete_rayjob(check_rayjob_name(name))
        return Deleted(name, self.session.namespace)

    # -- internals -----------------------------------------------------------------------

    def _parse(self, data: Mapping[str, Any], choices: QueueChoices) -> ValidatedRayJob:
        def parse_cluster(request: Mapping[str, Any]) -> Any:
            try:
                return self.clusters.validate_spec(request, None, None, None)
            except InvalidSpec as err:
                raise SpecError(err.errors or {}) from err

        return ValidatedRayJob.from_request(
            data, parse_cluster, choices.queues, choices.default_queue, choices.priorities
        )

    def _infos(self, rayjobs: Iterable[Object]) -> builtins.list[RayJobInfo]:
        """Each RayJob with its Workload's record (positions asked once per queue) and what
        its cluster's pods use."""
        infos = (rayjob_info(job, record) for job, record in self.with_workloads(rayjobs))
        return [self.with_usage(info, CLUSTER, info.cluster) for info in infos]
