"""The RayJob kind (KubeRay ``ray.io/v1``) and its description, :data:`RAYJOB`. Pure.
Its request validated into the manifest we create and the pod sets Kueue counts (its cluster
parsed as a RayCluster's, with the job's own name, queue and priority), and its state. The rules
it follows, and the order of its states: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.fit import PodSetRequest, pod_sets_for_spec
from jupyter_dw.domain.job_kind import (
    Environment,
    Install,
    JobInfo,
    JobKind,
    QueueChoices,
    Reading,
)
from jupyter_dw.domain.json_decode import DecodeError, decode, decode_fields, decode_key
from jupyter_dw.domain.lenient import mapping, text
from jupyter_dw.domain.request_fields import RequestFields, SpecError, name_parser
from jupyter_dw.domain.usage import CLUSTER, Subject
from jupyter_dw.domain.validation import dns1035_label_error
from jupyter_dw.domain.workloads import WorkloadInfo
from jupyter_dw.names import RAY_GROUP, RAY_VERSION, RAYCLUSTER_KIND, RAYJOB_KIND

SubmissionMode = Literal["K8sJobMode", "SidecarMode"]
SUBMISSION_MODES: tuple[SubmissionMode, ...] = ("K8sJobMode", "SidecarMode")
DEFAULT_SUBMISSION_MODE: SubmissionMode = "K8sJobMode"

MAX_RAYJOB_NAME_LENGTH = 47
"""KubeRay's ``MaxRayJobNameLength``: its cluster's name adds six characters to the job's."""

SUBMITTER_POD_SET = "submitter"
"""Kueue's name for the K8sJobMode submitter Job's pod set."""
SUBMITTER_CPU = Decimal("0.5")
SUBMITTER_MEMORY = Decimal(200 * 2**20)
"""KubeRay's default submitter container requests (``GetDefaultSubmitterContainer``), which
Kueue counts in both modes (0.19; 0.14 in K8sJobMode only)."""

MAX_ENTRYPOINT_LENGTH = 32768
"""A generous bound: the entrypoint is a command line, kept in the object (etcd's limit is
about 1.5 MB for the whole object)."""

RAYJOB_FIELDS: tuple[str, ...] = (
    "name",
    "queue",
    "priority",
    "entrypoint",
    "runtime_env",
    "submission_mode",
    "shutdown_after_finish",
    "ttl_seconds_after_finished",
    "cluster",
)
"""Every field a RayJob request may carry; the same names in REST JSON, Python and ``%dw``."""

CLUSTER_FIELDS_NOT_USED = ("name", "queue", "priority")
"""Fields of the inner cluster that the job's own fields replace."""

ClusterParser = Callable[[Mapping[str, Any]], ValidatedClusterSpec]
"""Parses the inner cluster request (the same parser and policy as ``POST clusters``); raises
``SpecError``."""


@dataclass(frozen=True, kw_only=True)
class ValidatedRayJob:
    """A validated RayJob request, every default applied. ``cluster`` carries the job's name,
    queue and priority (see the module's docstring)."""

    name: str
    queue: str
    priority: str | None
    entrypoint: str
    runtime_env: Mapping[str, Any] | None
    submission_mode: SubmissionMode
    shutdown_after_finish: bool
    ttl_seconds_after_finished: int | None
    cluster: ValidatedClusterSpec

    def __post_init__(self) -> None:
        if self.runtime_env is not None:
            object.__setattr__(self, "runtime_env", MappingProxyType(dict(self.runtime_env)))

    @classmethod
    def from_request(
        cls,
        data: Mapping[str, Any],
        parse_cluster: ClusterParser,
        known_queues: Collection[str] | None = None,
        default_queue: str | None = None,
        known_priorities: Collection[str] | None = None,
    ) -> ValidatedRayJob:
        """Parse, default and validate; raise ``SpecError`` listing every bad field (the
        cluster's as ``cluster.<field>``). ``None`` values count as omitted."""
        return _RayJobParser(parse_cluster, known_queues, default_queue, known_priorities).parse(
            data
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-ready fields; ``from_request`` reads them back."""
        cluster = self.cluster.to_json()
        for name in CLUSTER_FIELDS_NOT_USED:
            cluster.pop(name, None)
        return {
            "name": self.name,
            "queue": self.queue,
            "priority": self.priority,
            "entrypoint": self.entrypoint,
            "runtime_env": dict(self.runtime_env) if self.runtime_env is not None else None,
            "submission_mode": self.submission_mode,
            "shutdown_after_finish": self.shutdown_after_finish,
            "ttl_seconds_after_finished": self.ttl_seconds_after_finished,
            "cluster": cluster,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ValidatedRayJob:
        """What :meth:`to_json` made (its cluster's name, queue and priority are the job's)."""
        own = {name: data[name] for name in CLUSTER_FIELDS_NOT_USED if name in data}
        cluster = {**decode_key(Mapping[str, Any], data, "cluster"), **own}
        try:
            spec = decode(ValidatedClusterSpec, cluster)
        except DecodeError as err:
            raise err.within("cluster") from None
        return decode_fields(cls, data, cluster=spec)

    def to_rayjob(
        self, namespace: str, owner: str | None = None, *, auth_options_served: bool = True
    ) -> dict[str, Any]:
        """The ``ray.io/v1`` RayJob to create in ``namespace``, suspended until Kueue admits it.

        Its metadata is what a RayCluster of this name, queue and priority would carry; its
        ``rayClusterSpec`` is that RayCluster's spec without ``suspend`` (the RayJob is what
        Kueue suspends; KubeRay creates the cluster once the job runs)."""
        raycluster = self.cluster.to_raycluster(
            namespace, owner, auth_options_served=auth_options_served
        )
        cluster_spec = dict(raycluster["spec"])
        cluster_spec.pop("suspend", None)
        spec: dict[str, Any] = {
            "entrypoint": self.entrypoint,
            "submissionMode": self.submission_mode,
            "shutdownAfterJobFinishes": self.shutdown_after_finish,
            # Created suspended: Kueue's webhook would set it; set here, nothing starts early.
            "suspend": True,
            "rayClusterSpec": cluster_spec,
        }
        if self.runtime_env is not None:
            # JSON is YAML: KubeRay parses runtimeEnvYAML as YAML.
            spec["runtimeEnvYAML"] = json.dumps(dict(self.runtime_env), sort_keys=True)
        if self.ttl_seconds_after_finished is not None:
            spec["ttlSecondsAfterFinished"] = self.ttl_seconds_after_finished
        return {
            "apiVersion": f"{RAY_GROUP}/{RAY_VERSION}",
            "kind": RAYJOB_KIND,
            "metadata": raycluster["metadata"],
            "spec": spec,
        }

    def with_workers(self, workers: int) -> ValidatedRayJob:
        """The same job on a cluster of ``workers`` workers (for a fit suggestion)."""
        return replace(self, cluster=self.cluster.with_workers(workers))

    def pod_sets(self, *, sidecar_counted: bool) -> tuple[PodSetRequest, ...]:
        """The pod sets Kueue builds for this RayJob: the cluster's head and workers, then the
        ``submitter`` (K8sJobMode). In SidecarMode the submitter container sits in the head
        pod, and Kueue counts it there when ``sidecar_counted`` (0.19: the same release that
        counts KubeRay's autoscaler sidecar; 0.14 counts neither)."""
        head, *rest = pod_sets_for_spec(self.cluster, sidecar_counted=sidecar_counted)
        if self.submission_mode == "SidecarMode" and sidecar_counted:
            per_pod = dict(head.per_pod)
            per_pod["cpu"] = per_pod.get("cpu", Decimal(0)) + SUBMITTER_CPU
            per_pod["memory"] = per_pod.get("memory", Decimal(0)) + SUBMITTER_MEMORY
            head = replace(head, per_pod=per_pod)
        pod_sets = [head, *rest]
        if self.submission_mode == "K8sJobMode":
            # KubeRay's default submitter template: no tolerations or node selector of ours.
            pod_sets.append(
                PodSetRequest(
                    SUBMITTER_POD_SET, 1, {"cpu": SUBMITTER_CPU, "memory": SUBMITTER_MEMORY}
                )
            )
        return tuple(pod_sets)


class _RayJobParser:
    """Turns one request into a :class:`ValidatedRayJob`, collecting every bad field."""

    def __init__(
        self,
        parse_cluster: ClusterParser,
        known_queues: Collection[str] | None,
        default_queue: str | None,
        known_priorities: Collection[str] | None,
    ) -> None:
        self.parse_cluster = parse_cluster
        self.known_queues = known_queues
        self.default_queue = default_queue
        self.known_priorities = known_priorities
        self.errors: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def parse(self, data: Mapping[str, Any]) -> ValidatedRayJob:
        fields = self.fields = RequestFields(data, RAYJOB_FIELDS)
        self.values, self.errors = fields.values, fields.errors
        name = fields.required("name", _parse_name, "required: give the job a name, e.g. 'train-1'")
        queue = fields.queue(self.known_queues, self.default_queue)
        priority = fields.priority(self.known_priorities)
        entrypoint = fields.required(
            "entrypoint",
            _parse_entrypoint,
            "required: the command that runs the job, e.g. 'python train.py'",
        )
        runtime_env = fields.field("runtime_env", _parse_runtime_env)
        mode = fields.field("submission_mode", _parse_mode, DEFAULT_SUBMISSION_MODE)
        shutdown = fields.field("shutdown_after_finish", _parse_shutdown, True)
        ttl = fields.field("ttl_seconds_after_finished", _parse_ttl)
        cluster = self._cluster(name, queue, priority)
        fields.done()
        assert name is not None and queue is not None and entrypoint is not None
        assert cluster is not None
        return ValidatedRayJob(
            name=name,
            queue=queue,
            priority=priority,
            entrypoint=entrypoint,
            runtime_env=runtime_env,
            submission_mode=mode,
            shutdown_after_finish=shutdown,
            ttl_seconds_after_finished=ttl,
            cluster=cluster,
        )

    def _cluster(
        self, name: str | None, queue: str | None, priority: str | None
    ) -> ValidatedClusterSpec | None:
        raw = self.values.get("cluster", {})
        if not isinstance(raw, Mapping):
            self.errors["cluster"] = (
                f"must be a mapping of cluster fields (as for a Ray cluster), got {raw!r:.80}"
            )
            return None
        request = {k: v for k, v in raw.items() if k not in CLUSTER_FIELDS_NOT_USED}
        # A RayJob's cluster never autoscales: the range is checked here, not by the cluster
        # parser (whose refusal would speak of elastic RayClusters).
        scaling = {k: request.pop(k) for k in ("min_workers", "max_workers") if k in request}
        # The job's name and queue stand in (a placeholder when the job's own are bad, so the
        # cluster's other fields are still checked and reported in the same answer).
        request["name"] = name or "rayjob"
        if queue is not None:
            request["queue"] = queue
        if priority is not None:
            request["priority"] = priority
        try:
            cluster = self.parse_cluster(request)
        except SpecError as err:
            for key, message in err.errors.items():
                if key in ("queue", "priority") and key in self.errors:
                    continue  # already reported as the job's own field
                self.errors[f"cluster.{key}"] = message
            return None
        for key, value in scaling.items():
            if value != cluster.workers:
                self.errors[f"cluster.{key}"] = (
                    f"must equal workers ({cluster.workers}), got {value!r:.40}: a RayJob's "
                    "cluster has a fixed size (Kueue does not admit an autoscaling RayJob)"
                )
        return None if any(k.startswith("cluster.") for k in self.errors) else cluster


_parse_name = name_parser(
    lambda name: dns1035_label_error(name, MAX_RAYJOB_NAME_LENGTH),
    f"KubeRay requires a DNS-1035 label of at most {MAX_RAYJOB_NAME_LENGTH} characters: "
    "it names the job's cluster '<name>-xxxxx'",
)


def _parse_entrypoint(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("must be a non-empty command line, e.g. 'python train.py'")
    if len(raw) > MAX_ENTRYPOINT_LENGTH:
        raise ValueError(
            f"is {len(raw)} characters; at most {MAX_ENTRYPOINT_LENGTH}: put the program in "
            "runtime_env's working_dir and call it"
        )
    return raw


def _parse_runtime_env(raw: object) -> dict[str, Any]:
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) for k in raw):
        raise ValueError(
            "must be a mapping (Ray's runtime_env: pip, env_vars, working_dir, ...), got "
            f"{raw!r:.80}"
        )
    try:
        json.dumps(raw)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"must hold only JSON values (strings, numbers, lists, maps): {err}"
        ) from None
    return dict(raw)


def _parse_mode(raw: object) -> SubmissionMode:
    for mode in SUBMISSION_MODES:
        if raw == mode:
            return mode
    raise ValueError(
        f"must be one of {', '.join(SUBMISSION_MODES)}, got {raw!r:.80} (K8sJobMode submits "
        "from a Kubernetes Job; SidecarMode from a container in the head pod)"
    )


def _parse_shutdown(raw: object) -> bool:
    if raw is True:
        return True
    if raw is False:
        raise ValueError(
            "must be true: Kueue requires a RayJob it admits to delete its cluster when the "
            "job finishes, or the cluster would keep the queue's quota"
        )
    raise ValueError(f"must be true or false, got {raw!r:.80}")


def _parse_ttl(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ValueError(f"must be a whole number of seconds, got {raw!r:.80}")
    if raw < 0 or raw > 2**31 - 1:
        raise ValueError(f"must be between 0 and {2**31 - 1} seconds, got {raw}")
    return raw


# -- its state -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RayJobInfo(JobInfo):
    """One RayJob: Kueue's side (``workload``) and KubeRay's (``deployment_status``,
    ``job_status``, the job's ``cluster`` and Ray's ``job_id``)."""

    final_states: ClassVar[frozenset[str]] = frozenset({"succeeded", "stopped", "failed"})
    """KubeRay's ``IsJobDeploymentTerminal``."""

    submission_mode: str | None
    entrypoint: str | None
    deployment_status: str | None
    job_status: str | None
    job_id: str | None
    cluster: str | None
    start_time: str | None


def owning_rayjob(obj: Mapping[str, Any]) -> str | None:
    """The RayJob that controls ``obj`` (a RayCluster KubeRay made for a job), if any."""
    for owner in mapping(obj.get("metadata")).get("ownerReferences") or []:
        owner = mapping(owner)
        if owner.get("kind") == RAYJOB_KIND and owner.get("controller") is True:
            return text(owner.get("name"))
    return None


def rayjob_info(rayjob: Mapping[str, Any], workload: WorkloadInfo | None) -> RayJobInfo:
    """The state of ``rayjob`` given its Workload's (:meth:`JobKind.info`)."""
    return RAYJOB.info(rayjob, workload)


# -- the description ---------------------------------------------------------------------------


class RayJobKind(JobKind[ValidatedRayJob, RayJobInfo]):
    """KubeRay's RayJob, admitted by Kueue's ``ray.io/rayjob`` integration."""

    group = RAY_GROUP
    version = RAY_VERSION
    kind = RAYJOB_KIND
    plural = "rayjobs"
    install = Install(
        "KubeRay's RayJob",
        "Ask a cluster administrator to install KubeRay's RayJob CRD (ray.io_rayjobs.yaml) "
        "with the KubeRay operator.",
        "kuberay_not_installed",
    )
    watched_with = (RAYCLUSTER_KIND,)
    request_type = ValidatedRayJob
    record_type = RayJobInfo
    word = "rayjob"
    does = "run RayJobs (a job with its own cluster)"
    max_name_length = MAX_RAYJOB_NAME_LENGTH
    follows = "its cluster and Workload follow"
    fields = RAYJOB_FIELDS
    # The command asks no quota, so a form is judged before it has one.
    fit_placeholders = MappingProxyType({"entrypoint": "fit-check"})

    def parse(
        self, data: Mapping[str, Any], choices: QueueChoices, env: Environment
    ) -> ValidatedRayJob:
        return ValidatedRayJob.from_request(
            data, env.parse_cluster, choices.queues, choices.default_queue, choices.priorities
        )

    def manifest(
        self, job: ValidatedRayJob, namespace: str, owner: str | None, env: Environment
    ) -> dict[str, Any]:
        return job.to_rayjob(namespace, owner, auth_options_served=env.auth_options_served())

    def pod_sets(self, job: ValidatedRayJob, env: Environment) -> tuple[PodSetRequest, ...]:
        return job.pod_sets(sidecar_counted=env.sidecar_counted())

    def workers(self, job: ValidatedRayJob) -> int | None:
        return job.cluster.workers

    def with_workers(self, job: ValidatedRayJob, workers: int) -> ValidatedRayJob:
        return job.with_workers(workers)

    def pods(self, info: RayJobInfo) -> Subject | None:
        return CLUSTER, info.cluster or ""

    def ended(self, obj: Mapping[str, Any]) -> Reading | None:
        status = mapping(obj.get("status"))
        deployment = text(status.get("jobDeploymentStatus"))
        reason, message = text(status.get("reason")), text(status.get("message"))
        if deployment == "Complete":
            stopped = text(status.get("jobStatus")) == "STOPPED"
            return ("stopped" if stopped else "succeeded"), reason, message
        if deployment in ("Failed", "ValidationFailed"):
            return "failed", reason or deployment, message
        return None

    def progress(self, obj: Mapping[str, Any], workload: WorkloadInfo) -> Reading:
        status = mapping(obj.get("status"))
        deployment = text(status.get("jobDeploymentStatus"))
        if deployment == "Running" and text(status.get("jobStatus")) == "RUNNING":
            return "running", None, None
        if deployment in (None, "Suspended", "Suspending"):
            return "admitted", workload.reason, workload.message
        return "starting", None, text(status.get("message"))

    def record(self, obj: Mapping[str, Any], **common: Any) -> RayJobInfo:
        spec, status = mapping(obj.get("spec")), mapping(obj.get("status"))
        return RayJobInfo(
            **common,
            submission_mode=text(spec.get("submissionMode")) or DEFAULT_SUBMISSION_MODE,
            entrypoint=text(spec.get("entrypoint")),
            deployment_status=text(status.get("jobDeploymentStatus")),
            job_status=text(status.get("jobStatus")),
            job_id=text(status.get("jobId")),
            cluster=text(status.get("rayClusterName")),
            start_time=text(status.get("startTime")),
            end_time=text(status.get("endTime")),
        )


RAYJOB = RayJobKind()
