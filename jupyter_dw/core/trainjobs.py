"""Kubeflow Trainer TrainJobs as every surface shows them: validated, fitted, created, listed
with their Kueue and Trainer state, deleted.

The same core as RayJobs (:class:`~.podset_jobs.PodSetJobService`): fitted by
:meth:`ClusterService.fit_scene` from the pod sets Kueue 0.19 builds for a TrainJob, which
Trainer's runtime code makes from the ClusterTrainingRuntime it names
(:func:`~jupyter_dw.domain.trainjob_spec.runtime_pod_sets`); its state is its Workload's
joined with Trainer's status. Every method blocks.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..domain.trainjob_spec import ValidatedTrainJob, trainjob_name_error
from ..domain.trainjob_state import TrainJobInfo, trainjob_info
from ..k8s.errors import KubeNotFound
from ..k8s.resources import TRAIN_JOB
from ..k8s.trainer import TrainerAccess
from ..names import CLUSTER_TRAINING_RUNTIME_KIND
from .cluster_results import Deleted, FitResult
from .clusters import InvalidName
from .listing import ByName
from .podset_jobs import PodSetJobService, QueueChoices
from .usage import TRAINJOB

Object = dict[str, Any]


def check_trainjob_name(name: str) -> str:
    """``name`` if it can be a TrainJob's name, else :class:`InvalidName` (400, nothing sent)."""
    problem = trainjob_name_error(name) if isinstance(name, str) else "must be a string"
    if problem is not None:
        raise InvalidName(
            f"Invalid TrainJob name {name!r}",
            problem,
            "TrainJob names are DNS-1035 labels of at most 40 characters.",
            {"name": problem},
        )
    return name


@dataclass(frozen=True)
class TrainJobList(ByName["TrainJobInfo"]):
    """The ``GET trainjobs`` answer: every TrainJob of ``namespace``, sorted by name."""

    namespace: str
    positions_visible: bool
    trainjobs: tuple[TrainJobInfo, ...]

    def _entries(self) -> tuple[TrainJobInfo, ...]:
        return self.trainjobs

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {
            "namespace": self.namespace,
            "positions_visible": self.positions_visible,
            "trainjobs": [j.to_json() for j in self.trainjobs],
        }


@dataclass(frozen=True)
class TrainJobService(PodSetJobService[ValidatedTrainJob]):
    """The namespace's TrainJobs for one session (answers from its watch caches)."""

    what = "TrainJob"
    message = "trainjob"
    resource = TRAIN_JOB

    def served(self) -> bool:
        """Whether Kubeflow Trainer's TrainJob CRD is served."""
        return self.session.ready and self.session.discovery.trainjobs_served

    def records(self) -> tuple[TrainJobInfo, ...]:
        """Every TrainJob of the namespace (:meth:`list`'s entries)."""
        return self.list().trainjobs

    @property
    def trainer(self) -> TrainerAccess:
        """Trainer's objects through this session."""
        return TrainerAccess(self.session)

    # -- answers -------------------------------------------------------------------------

    def fit(self, data: Any, ask_positions: bool = True) -> FitResult:
        """Would this TrainJob fit its queue now? Counts the pod sets Kueue will build from
        its runtime (read with ``get clustertrainingruntimes``). ``name`` may be omitted."""
        self.session.wait_ready()
        self.session.discovery.require_trainjobs()
        return self.fit_job(data, self._parse, self._pod_sets, ask_positions)

    def list(self) -> TrainJobList:
        """Every TrainJob of the namespace, sorted by name."""
        objects = self.trainer.trainjobs()
        return TrainJobList(
            self.session.namespace,
            self.session.positions_visible,
            tuple(sorted(self._infos(objects), key=lambda j: j.name)),
        )

    def get(self, name: str) -> TrainJobInfo:
        """TrainJob ``name`` (``KubeNotFound`` when there is none)."""
        [info] = self._infos([self.trainer.trainjob(check_trainjob_name(name))])
        return info

    def describe_many(self, names: Iterable[str]) -> dict[str, TrainJobInfo]:
        """The cached TrainJobs ``names`` (those not cached are left out)."""
        found = [job for name in names if (job := self.trainer.cached(name))]
        return {info.name: info for info in self._infos(found)}

    # -- writes --------------------------------------------------------------------------

    def create(self, data: Any, idempotency_key: str | None = None) -> TrainJobInfo:
        """Validate, dry-run (Kueue's and Trainer's webhooks) and create a TrainJob, suspended
        until Kueue admits it. Raises what :meth:`ClusterService.create` raises, for a
        TrainJob; ``NotInstalled`` without Kubeflow Trainer."""
        self.session.wait_ready()
        self.session.discovery.require_trainjobs()
        job, created = self.create_job(
            data,
            idempotency_key,
            self._parse,
            lambda job: job.to_trainjob(
                self.session.namespace, owner=self.session.identity.username
            ),
            self.trainer.create,
        )
        [info] = self._infos([self.trainer.cached(job.name) or created])
        return info

    def delete(self, name: str) -> Deleted:
        """Delete TrainJob ``name`` (``KubeNotFound`` when absent); its JobSet, pods and
        Workload follow in the background."""
        self.trainer.delete(check_trainjob_name(name))
        return Deleted(name, self.session.namespace)

    # -- internals -----------------------------------------------------------------------

    def _parse(self, data: Mapping[str, Any], choices: QueueChoices) -> ValidatedTrainJob:
        return ValidatedTrainJob.from_request(
            data,
            choices.queues,
            choices.default_queue,
            choices.priorities,
            self.clusters.policy.allowed_images,
        )

    def _pod_sets(self, job: ValidatedTrainJob) -> Any:
        runtime = self.trainer.runtime(CLUSTER_TRAINING_RUNTIME_KIND, job.runtime)
        if runtime is None:
            raise KubeNotFound(
                f"No ClusterTrainingRuntime named {job.runtime!r}",
                "a TrainJob runs on a runtime its administrator installed",
                "Name one of the cluster's ClusterTrainingRuntimes "
                "(kubectl get clustertrainingruntimes).",
            )
        return job.pod_sets(runtime)

    def _infos(self, trainjobs: Iterable[Object]) -> builtins.list[TrainJobInfo]:
        """Each TrainJob with its Workload's record (positions asked once per queue) and what
        its pods use."""
        infos = (trainjob_info(job, record) for job, record in self.with_workloads(trainjobs))
        return [self.with_usage(info, TRAINJOB, info.name) for info in infos]
