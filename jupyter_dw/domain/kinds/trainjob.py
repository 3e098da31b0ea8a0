"""The TrainJob kind (Kubeflow Trainer v2) and its description, :data:`TRAINJOB`. Pure.
Its request validated into the manifest we create and the pod sets Kueue counts (from the
runtime's JobSet, as Kueue builds them), and its state. The upstream rules:
docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from jupyter_dw.domain.cluster_fields import (
    parse_allowed_image,
    parse_cpu,
    parse_gpu,
    parse_memory,
)
from jupyter_dw.domain.fit import PodSetRequest
from jupyter_dw.domain.job_kind import (
    Environment,
    Install,
    JobInfo,
    JobKind,
    MissingReference,
    QueueChoices,
    Reading,
)
from jupyter_dw.domain.json_decode import decode_fields, decode_key
from jupyter_dw.domain.lenient import conditions, is_true, mapping, text, words
from jupyter_dw.domain.managed_metadata import managed_metadata
from jupyter_dw.domain.quantity import format_quantity
from jupyter_dw.domain.request_fields import RequestFields, name_parser
from jupyter_dw.domain.scheduling import Toleration
from jupyter_dw.domain.validation import dns1035_label_error, dns1123_subdomain_error
from jupyter_dw.domain.workloads import WorkloadInfo, pod_requests
from jupyter_dw.names import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    GPU_RESOURCE,
    JOBSET_NAME_LABEL,
    TRAINER_GROUP,
    TRAINER_VERSION,
    TRAINJOB_KIND,
)

MAX_TRAINJOB_NAME_LENGTH = 40
"""JobSet's pod names add ``-<replicated job>-<index>-<index>-xxxxx`` to the TrainJob's name
and must stay within 63 characters: 40 leaves room for a step named ``node`` (the PyTorch
runtime's) with up to 9999 nodes."""

MAX_NODES = 10000
MAX_COMMAND_LENGTH = 32768
"""A generous bound on the command's total characters (it is kept in the object)."""

TRAINER_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_ANCESTOR = "trainer"
TRAINER_CONTAINER = "node"
"""Trainer's names: the replicated job labelled as the ``trainer`` step runs the training, in
its container ``node`` (``constants.AncestorTrainer``, ``constants.Node``)."""

TRAINJOB_FIELDS: tuple[str, ...] = (
    "name",
    "queue",
    "priority",
    "runtime",
    "num_nodes",
    "resources_per_node",
    "command",
    "image",
)
"""Every field a TrainJob request may carry; the same names in REST JSON, Python and ``%dw``."""

RESOURCE_KEYS = ("cpu", "memory", "gpu")
"""The keys of ``resources_per_node`` (``gpu``: ``nvidia.com/gpu``)."""


@dataclass(frozen=True, kw_only=True)
class ValidatedTrainJob:
    """A validated TrainJob request. ``num_nodes`` and ``resources_per_node`` None: the
    runtime's own. ``resources_per_node`` is in Kubernetes resource names (``cpu``,
    ``memory``, ``nvidia.com/gpu``), amounts in Kueue's units."""

    name: str
    queue: str
    priority: str | None
    runtime: str
    num_nodes: int | None
    resources_per_node: Mapping[str, Decimal] | None
    command: tuple[str, ...] | None
    image: str | None

    def __post_init__(self) -> None:
        if self.resources_per_node is not None:
            object.__setattr__(
                self, "resources_per_node", MappingProxyType(dict(self.resources_per_node))
            )

    @classmethod
    def from_request(
        cls,
        data: Mapping[str, Any],
        known_queues: Collection[str] | None = None,
        default_queue: str | None = None,
        known_priorities: Collection[str] | None = None,
        allowed_images: tuple[str, ...] = (),
    ) -> ValidatedTrainJob:
        """Parse and validate; raise ``SpecError`` listing every bad field. ``None`` values
        count as omitted."""
        fields = RequestFields(data, TRAINJOB_FIELDS)
        name = fields.required(
            "name", _parse_name, "required: give the TrainJob a name, e.g. 'train-1'"
        )
        queue = fields.queue(known_queues, default_queue)
        priority = fields.priority(known_priorities)
        runtime = fields.required(
            "runtime",
            _parse_runtime,
            "required: the ClusterTrainingRuntime to run on, e.g. 'torch-distributed'",
        )
        num_nodes = fields.field("num_nodes", _parse_nodes)
        resources = fields.field("resources_per_node", _parse_resources)
        command = fields.field("command", _parse_command)
        image = fields.field("image", lambda v: parse_allowed_image(v, allowed_images))
        fields.done()
        return cls(
            name=name,
            queue=queue,
            priority=priority,
            runtime=runtime,
            num_nodes=num_nodes,
            resources_per_node=resources,
            command=command,
            image=image,
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-ready fields in the request's shape; ``from_request`` reads them back."""
        resources = None
        if self.resources_per_node is not None:
            resources = {
                _KEY_OF.get(name, name): _amount_text(name, amount)
                for name, amount in self.resources_per_node.items()
            }
        return {
            "name": self.name,
            "queue": self.queue,
            "priority": self.priority,
            "runtime": self.runtime,
            "num_nodes": self.num_nodes,
            "resources_per_node": resources,
            "command": list(self.command) if self.command is not None else None,
            "image": self.image,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ValidatedTrainJob:
        """What :meth:`to_json` made (``resources_per_node``'s ``gpu`` is ``nvidia.com/gpu``)."""
        shown = decode_key(Mapping[str, Decimal] | None, data, "resources_per_node")
        resources = (
            {_RESOURCE_OF.get(name, name): amount for name, amount in shown.items()}
            if shown is not None
            else None
        )
        return decode_fields(cls, data, resources_per_node=resources)

    def to_trainjob(self, namespace: str, owner: str | None = None) -> dict[str, Any]:
        """The TrainJob to create in ``namespace``, suspended until Kueue admits it."""
        metadata = managed_metadata(self.name, namespace, self.queue, self.priority, owner)
        trainer: dict[str, Any] = {}
        if self.num_nodes is not None:
            trainer["numNodes"] = self.num_nodes
        if self.resources_per_node is not None:
            amounts = {
                name: _amount_text(name, amount) for name, amount in self.resources_per_node.items()
            }
            # Requests and limits alike: GPUs must be limits, and Kueue counts requests.
            trainer["resourcesPerNode"] = {"requests": amounts, "limits": dict(amounts)}
        if self.command is not None:
            trainer["command"] = list(self.command)
        if self.image is not None:
            trainer["image"] = self.image
        spec: dict[str, Any] = {
            "runtimeRef": {
                "apiGroup": TRAINER_GROUP,
                "kind": CLUSTER_TRAINING_RUNTIME_KIND,
                "name": self.runtime,
            },
            # Created suspended: Kueue's webhook would set it; set here, nothing starts early.
            "suspend": True,
        }
        if trainer:
            spec["trainer"] = trainer
        return {
            "apiVersion": f"{TRAINER_GROUP}/{TRAINER_VERSION}",
            "kind": TRAINJOB_KIND,
            "metadata": metadata,
            "spec": spec,
        }

    def pod_sets(self, runtime: Mapping[str, Any]) -> tuple[PodSetRequest, ...]:
        """The pod sets Kueue builds for this TrainJob on ``runtime`` (the runtime object)."""
        return runtime_pod_sets(runtime, self.num_nodes, self.resources_per_node)


def runtime_pod_sets(
    runtime: Mapping[str, Any],
    num_nodes: int | None = None,
    resources_per_node: Mapping[str, Decimal] | None = None,
) -> tuple[PodSetRequest, ...]:
    """What Kueue 0.19 counts for a TrainJob on ``runtime`` (a ClusterTrainingRuntime or
    TrainingRuntime object): one pod set per replicated job of its JobSet template, ``count``
    replicas * parallelism; the trainer step's parallelism is ``num_nodes`` (else the
    runtime's ``mlPolicy.numNodes``, else its own), its ``node`` container's resources
    ``resources_per_node`` when given. Per pod: the containers' requests (limits where a
    request is missing), at least the largest init container's (Kubernetes' rule)."""
    spec = mapping(runtime.get("spec"))
    policy_nodes = mapping(spec.get("mlPolicy")).get("numNodes")
    replicated = (
        mapping(mapping(mapping(spec.get("template")).get("spec"))).get("replicatedJobs") or []
    )
    pod_sets = []
    for job in replicated:
        job = mapping(job)
        job_template = mapping(job.get("template"))
        is_trainer = (
            mapping(mapping(job_template.get("metadata")).get("labels")).get(TRAINER_ANCESTOR_LABEL)
            == TRAINER_ANCESTOR
        )
        job_spec = mapping(job_template.get("spec"))
        pod = mapping(job_spec.get("template"))
        pod_spec = mapping(pod.get("spec"))
        parallelism = int(job_spec.get("parallelism") or 1)
        if is_trainer:
            nodes = num_nodes if num_nodes is not None else policy_nodes
            if isinstance(nodes, int) and not isinstance(nodes, bool):
                parallelism = nodes
        per_pod = _pod_requests(pod_spec, resources_per_node if is_trainer else None)
        count = int(job.get("replicas") or 1) * parallelism
        pod_sets.append(
            PodSetRequest(
                str(job.get("name") or ""),
                count,
                per_pod,
                tuple(
                    Toleration.from_object(mapping(t))
                    for t in pod_spec.get("tolerations") or []
                    if isinstance(t, Mapping)
                ),
                {str(k): str(v) for k, v in mapping(pod_spec.get("nodeSelector")).items()},
            )
        )
    return tuple(pod_sets)


def _pod_requests(
    pod_spec: Mapping[str, Any], trainer_resources: Mapping[str, Decimal] | None
) -> dict[str, Decimal]:
    """One pod's requests by Kubernetes' rule (:func:`~.workloads.pod_requests`), the
    ``node`` container's replaced by ``trainer_resources`` when given (Trainer's builder)."""
    if trainer_resources is None:
        return dict(pod_requests(pod_spec))
    amounts = {name: str(amount) for name, amount in trainer_resources.items()}
    containers = [
        {**mapping(c), "resources": {"requests": amounts}}
        if mapping(c).get("name") == TRAINER_CONTAINER
        else c
        for c in pod_spec.get("containers") or []
    ]
    return dict(pod_requests({**pod_spec, "containers": containers}))


_KEY_OF = {"cpu": "cpu", "memory": "memory", GPU_RESOURCE: "gpu"}
_RESOURCE_OF = {"cpu": "cpu", "memory": "memory", "gpu": GPU_RESOURCE}


def _amount_text(name: str, amount: Decimal) -> str:
    if name == "memory":
        return format_quantity(amount, binary=True)
    if name == "cpu":
        return format_quantity(amount)
    return str(int(amount))


_parse_name = name_parser(
    lambda name: dns1035_label_error(name, MAX_TRAINJOB_NAME_LENGTH),
    f"a DNS-1035 label of at most {MAX_TRAINJOB_NAME_LENGTH} characters: "
    "JobSet names the job's pods '<name>-<step>-<index>-<index>-xxxxx'",
)


_parse_runtime = name_parser(
    dns1123_subdomain_error,
    "the name of a ClusterTrainingRuntime",
    "a ClusterTrainingRuntime's name",
)


def _parse_nodes(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ValueError(f"must be a whole number of nodes, got {raw!r:.80}")
    if not 1 <= raw <= MAX_NODES:
        raise ValueError(f"must be between 1 and {MAX_NODES}, got {raw}")
    return raw


def _parse_resources(raw: object) -> dict[str, Decimal]:
    if not isinstance(raw, Mapping) or not raw:
        raise ValueError(
            "must be a mapping of what each node's training container requests, e.g. "
            f"{{'cpu': 4, 'memory': '16Gi', 'gpu': 1}}, got {raw!r:.80}"
        )
    unknown = [str(k) for k in raw if k not in RESOURCE_KEYS]
    if unknown:
        raise ValueError(
            f"unknown resource {', '.join(map(repr, unknown))}; known: {', '.join(RESOURCE_KEYS)}"
        )
    parsers: dict[str, Callable[[object], Decimal | int]] = {
        "cpu": parse_cpu,
        "memory": parse_memory,
        "gpu": parse_gpu,
    }
    found: dict[str, Decimal] = {}
    for key, value in raw.items():
        try:
            amount = Decimal(parsers[key](value))
        except ValueError as err:
            raise ValueError(f"{key}: {err}") from None
        if amount:
            found[_RESOURCE_OF[key]] = amount
    if not found:
        raise ValueError("must request something: cpu, memory or gpu above 0")
    return found


def _parse_command(raw: object) -> tuple[str, ...]:
    if isinstance(raw, str) or not isinstance(raw, Sequence) or not raw:
        raise ValueError(
            f"must be a non-empty list of strings, e.g. ['torchrun', 'train.py'], got {raw!r:.80}"
        )
    if not all(isinstance(word, str) for word in raw):
        raise ValueError("every word of the command must be a string")
    if sum(len(word) for word in raw) > MAX_COMMAND_LENGTH:
        raise ValueError(f"is longer than {MAX_COMMAND_LENGTH} characters")
    return tuple(raw)


# -- its state -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TrainJobInfo(JobInfo):
    """One TrainJob: Kueue's side (``workload``) and Trainer's: ``jobs_ready``,
    ``jobs_succeeded``, ``jobs_failed`` count the JobSet's child Jobs (Trainer's
    ``jobsStatus``; a step of N nodes is one Job of N pods)."""

    runtime: str | None
    num_nodes: int | None
    jobs_ready: int
    jobs_succeeded: int
    jobs_failed: int


def trainjob_info(trainjob: Mapping[str, Any], workload: WorkloadInfo | None) -> TrainJobInfo:
    """The state of ``trainjob`` given its Workload's (:meth:`JobKind.info`)."""
    return TRAINJOB.info(trainjob, workload)


def _jobs_count(obj: Mapping[str, Any], key: str) -> int:
    """The sum of ``key`` over Trainer's ``jobsStatus`` (a value that is not a count: 0)."""
    jobs = [mapping(j) for j in mapping(obj.get("status")).get("jobsStatus") or []]
    return sum(n for j in jobs if isinstance(n := j.get(key), int) and not isinstance(n, bool))


# -- the description ---------------------------------------------------------------------------


class TrainJobKind(JobKind[ValidatedTrainJob, TrainJobInfo]):
    """Kubeflow Trainer's TrainJob, admitted by Kueue's ``trainer.kubeflow.org/trainjob``
    integration."""

    group = TRAINER_GROUP
    version = TRAINER_VERSION
    kind = TRAINJOB_KIND
    plural = "trainjobs"
    install = Install(
        "Kubeflow Trainer",
        "Ask a cluster administrator to install Kubeflow Trainer v2 (its CRDs and controller, "
        "with JobSet) and enable Kueue's trainer.kubeflow.org/trainjob integration.",
        "trainer_not_installed",
    )
    references = ((TRAINER_GROUP, "clustertrainingruntimes"),)
    request_type = ValidatedTrainJob
    record_type = TrainJobInfo
    pod_label = JOBSET_NAME_LABEL
    word = "trainjob"
    does = "run TrainJobs (Kubeflow Trainer)"
    max_name_length = MAX_TRAINJOB_NAME_LENGTH
    follows = "its JobSet, pods and Workload follow"
    fields = TRAINJOB_FIELDS

    def parse(
        self, data: Mapping[str, Any], choices: QueueChoices, env: Environment
    ) -> ValidatedTrainJob:
        return ValidatedTrainJob.from_request(
            data, choices.queues, choices.default_queue, choices.priorities, env.allowed_images
        )

    def manifest(
        self, job: ValidatedTrainJob, namespace: str, owner: str | None, env: Environment
    ) -> dict[str, Any]:
        return job.to_trainjob(namespace, owner)

    def pod_sets(self, job: ValidatedTrainJob, env: Environment) -> tuple[PodSetRequest, ...]:
        runtime = env.referenced(CLUSTER_TRAINING_RUNTIME_KIND, job.runtime)
        if runtime is None:
            raise MissingReference(
                f"No ClusterTrainingRuntime named {job.runtime!r}",
                "a TrainJob runs on a runtime its administrator installed",
                "Name one of the cluster's ClusterTrainingRuntimes "
                "(kubectl get clustertrainingruntimes).",
            )
        return job.pod_sets(runtime)

    def ended(self, obj: Mapping[str, Any]) -> Reading | None:
        found = conditions(obj)
        for condition, state in (("Complete", "succeeded"), ("Failed", "failed")):
            if is_true(found.get(condition)):
                return (state, *words(found.get(condition)))  # type: ignore[return-value]
        return None

    def progress(self, obj: Mapping[str, Any], workload: WorkloadInfo) -> Reading:
        if mapping(obj.get("spec")).get("suspend") is True:
            return "admitted", workload.reason, workload.message
        if _jobs_count(obj, "ready") > 0:
            return "running", None, None
        return "starting", None, None

    def record(self, obj: Mapping[str, Any], **common: Any) -> TrainJobInfo:
        spec, found = mapping(obj.get("spec")), conditions(obj)
        done = next((found[t] for t in ("Complete", "Failed") if is_true(found.get(t))), None)
        nodes = mapping(spec.get("trainer")).get("numNodes")
        return TrainJobInfo(
            **common,
            runtime=text(mapping(spec.get("runtimeRef")).get("name")),
            num_nodes=nodes if isinstance(nodes, int) else None,
            jobs_ready=_jobs_count(obj, "ready"),
            jobs_succeeded=_jobs_count(obj, "succeeded"),
            jobs_failed=_jobs_count(obj, "failed"),
            end_time=text(done.get("lastTransitionTime")) if done else None,
        )


TRAINJOB = TrainJobKind()
