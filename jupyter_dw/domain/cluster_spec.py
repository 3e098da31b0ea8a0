"""What a user asks for when creating a Ray cluster, checked, and the RayCluster it becomes.

``ValidatedSpec.from_request`` turns a request (REST JSON, Python keyword arguments, a
``dw.ClusterSpec`` or ``%dw`` options: the field names are the same everywhere) into a
``ValidatedSpec``, applying the defaults and limits of a ``SpecPolicy``. Every problem is
collected and reported per field in a ``SpecError``. ``ValidatedSpec.to_raycluster`` builds the
``ray.io/v1`` RayCluster object that is created suspended and labelled for Kueue, so nothing
runs before Kueue admits it.

Upstream rules this module follows (KubeRay v1.6.2 and Kueue v0.19.2, the versions the tests run):

- KubeRay rejects a RayCluster whose name is not a DNS-1035 label of at most 53 characters
  (``MaxRayClusterNameLength``: 63 minus the longest Service suffix, ``-serve-svc``).
- Kueue reserves quota for each worker group's ``replicas`` (times ``numOfHosts``), not for
  ``maxReplicas``; it rejects ``enableInTreeAutoscaling`` unless the RayCluster is an elastic job
  (annotation ``kueue.x-k8s.io/elastic-job: "true"`` with the ``ElasticJobsViaWorkloadSlices``
  feature gate on), and it reserves the worker group name ``head``.
- Kueue takes the queue from the ``kueue.x-k8s.io/queue-name`` label (a DNS-1123 subdomain) and
  owns ``spec.suspend``: it sets it to false on admission.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import partial
from types import MappingProxyType
from typing import Any

from jupyter_dw.domain.quantity import QuantityError, format_quantity, parse_quantity
from jupyter_dw.domain.ray_auth import (
    DEFAULT_RAY_AUTH,
    MIN_RAY_VERSION,
    RAY_AUTH_MODES,
    RESERVED_ENV,
    RayVersionError,
    auth_options,
    check_ray_version,
    container_env,
    parse_ray_version,
    version_text,
)
from jupyter_dw.domain.scheduling import EFFECTS, OPERATORS, Toleration
from jupyter_dw.domain.validation import (
    DNS1123_LABEL_MAX_LENGTH,
    dns1035_label_error,
    dns1123_label_error,
    dns1123_subdomain_error,
    env_name_error,
    is_label_value,
    label_key_error,
    label_value_error,
)
from jupyter_dw.names import (
    ELASTIC_JOB_ANNOTATION,
    GPU_RESOURCE,
    HEAD_PORTS,
    KUEUE_GROUP,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    OWNER_ANNOTATION,
    OWNER_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    RAY_GROUP,
    RAYCLUSTER_API_VERSION,
    RAYCLUSTER_KIND,
)

# Newest Ray release on PyPI when this was written (2.60.0); the image need not be pullable in
# tests, where pods run on fake nodes.
DEFAULT_RAY_IMAGE = "rayproject/ray:2.60.0"

DEFAULT_AUTOSCALER_CPU = Decimal("0.5")
DEFAULT_AUTOSCALER_MEMORY = Decimal(512 * 2**20)
"""KubeRay's own defaults for the autoscaler sidecar (``BuildAutoscalerContainer``), which
Kueue 0.19 also assumes when ``autoscalerOptions.resources`` is unset."""
AUTOSCALER_PARTS = ("autoscaler_cpu", "autoscaler_memory")

MAX_NAME_LENGTH = 53
"""KubeRay's ``MaxRayClusterNameLength``: 63 minus len("-serve-svc"), its longest suffix."""

MIN_MEMORY = Decimal(2**20)
"""Below 1Mi a memory amount is almost surely a unit mistake ("4" is 4 bytes, not 4 GiB)."""

WORKER_GROUP_NAME = "workers"  # Kueue reserves "head" for the head group's PodSet.
HEAD_CONTAINER_NAME = "ray-head"
WORKER_CONTAINER_NAME = "ray-worker"

_INT32_MAX = 2**31 - 1  # replicas, minReplicas and maxReplicas are int32 in the CRD

FIELDS: tuple[str, ...] = (
    "name",
    "queue",
    "workers",
    "worker_cpu",
    "worker_memory",
    "worker_gpu",
    "head_cpu",
    "head_memory",
    "image",
    "min_workers",
    "max_workers",
    "env",
    "labels",
    "tolerations",
    "node_selector",
    "priority",
    "ray_version",
)
"""Every field a request may carry; the same names in REST JSON, Python and ``%dw`` options."""

REQUEST_ERROR_KEY = "request"
"""``SpecError.errors`` key for a problem with the request as a whole (not a mapping)."""

# Environment variables KubeRay refuses in the head container unless GCS fault tolerance is set
# up through options this form does not offer (utils.ValidateRayClusterSpec).
_KUBERAY_REJECTED_ENV = ("RAY_REDIS_ADDRESS", "REDIS_PASSWORD", "REDIS_USERNAME")
_AUTOSCALER_V2_ENV = "RAY_enable_autoscaler_v2"

_RESERVED_LABELS = {
    QUEUE_LABEL: "it is set from the 'queue' field",
    MANAGED_BY_LABEL: "jupyter-dw sets it to find the clusters it created",
    OWNER_LABEL: "jupyter-dw sets it from the identity that creates the cluster",
    PRIORITY_CLASS_LABEL: "it is set from the 'priority' field (a WorkloadPriorityClass name)",
}
_RESERVED_LABEL_PREFIXES = {
    f"{RAY_GROUP}/": f"the '{RAY_GROUP}/' prefix belongs to KubeRay",
    f"{KUEUE_GROUP}/": f"the '{KUEUE_GROUP}/' prefix belongs to Kueue",
}

_RAY_IMAGE_TAG = re.compile(r"ray(?:-ml|-llm)?:(\d+\.\d+\.\d+)(?:[-@].*)?")
_COUNT_TEXT = re.compile(r"[+-]?[0-9]+")


class SpecError(ValueError):
    """A cluster request that cannot be used; ``errors`` maps each bad field to a message."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors: dict[str, str] = dict(errors)
        details = "; ".join(f"{name}: {message}" for name, message in self.errors.items())
        super().__init__(f"invalid cluster spec: {details}")


class _FieldError(ValueError):
    """One field's problem; its message is shown to the user as it is."""


@dataclass(frozen=True)
class SpecPolicy:
    """Defaults and limits for cluster requests, set by the server's configuration.

    Quantity fields accept anything ``parse_quantity`` does (``"2Gi"``, ``"500m"``, ``4``) and
    are stored as ``Decimal``; counts accept whole numbers. A limit of ``None`` means no limit
    beyond the Kueue quota. ``allowed_images`` holds image prefixes (``"quay.io/team/"``) or
    ``fnmatch`` patterns (any entry containing ``*``, ``?`` or ``[``); empty allows any image.
    ``elastic_jobs`` says Kueue runs with ``ElasticJobsViaWorkloadSlices``, the only way it
    accepts autoscaling RayClusters. An inconsistent policy raises ``ValueError`` at creation,
    so a bad configuration fails when the server starts, not on every request.
    """

    default_image: str = DEFAULT_RAY_IMAGE
    default_head_cpu: Decimal = Decimal(1)
    default_head_memory: Decimal = Decimal(2 * 2**30)
    default_worker_cpu: Decimal = Decimal(1)
    default_worker_memory: Decimal = Decimal(2 * 2**30)
    default_worker_gpu: int = 0
    default_workers: int = 1
    max_workers: int | None = None
    max_head_cpu: Decimal | None = None
    max_head_memory: Decimal | None = None
    max_worker_cpu: Decimal | None = None
    max_worker_memory: Decimal | None = None
    max_worker_gpu: int | None = None
    allowed_images: tuple[str, ...] = ()
    elastic_jobs: bool = False
    autoscaler_cpu: Decimal = DEFAULT_AUTOSCALER_CPU
    """CPU of the Ray autoscaler sidecar an autoscaling cluster's head pod gets (set
    explicitly in ``autoscalerOptions.resources``, so Kueue and the fit count a known amount)."""
    autoscaler_memory: Decimal = DEFAULT_AUTOSCALER_MEMORY
    ray_auth: str = DEFAULT_RAY_AUTH
    """Ray's authentication on new clusters: ``token`` (KubeRay's), ``k8s`` (Kubernetes
    tokens) or ``disabled``; see :mod:`jupyter_dw.domain.ray_auth`."""

    def __post_init__(self) -> None:
        problems: dict[str, str] = {}

        def normalise(name: str, parse: Callable[[Any], Any], optional: bool = False) -> None:
            value = getattr(self, name)
            if optional and value is None:
                return
            try:
                object.__setattr__(self, name, parse(value))
            except ValueError as err:
                problems[name] = str(err)

        # Limits first: the defaults are checked against them.
        for sized in _SIZED.values():
            normalise(sized.limit, sized.parse, optional=True)
        normalise("allowed_images", _parse_allowed_images)
        if problems:
            _raise_policy_problems(problems)  # the defaults below are compared with the limits
        for field_name in _SIZED:
            normalise(f"default_{field_name}", partial(_sized_value, field_name, policy=self))
        normalise("default_image", lambda v: _check_image(_parse_image(v), self.allowed_images))
        normalise("autoscaler_cpu", _parse_cpu)
        normalise("autoscaler_memory", _parse_memory)
        if not isinstance(self.elastic_jobs, bool):
            problems["elastic_jobs"] = f"must be true or false, got {_show(self.elastic_jobs)}"
        if self.ray_auth not in RAY_AUTH_MODES:
            problems["ray_auth"] = (
                f"must be one of {', '.join(RAY_AUTH_MODES)}, got {_show(self.ray_auth)}"
            )
        elif "default_image" not in problems and (
            image_version := _ray_version(self.default_image)
        ):
            try:
                check_ray_version(image_version, self.ray_auth)
            except RayVersionError as err:
                problems["default_image"] = f"{self.default_image!r}: {err}"
        if problems:
            _raise_policy_problems(problems)


def _raise_policy_problems(problems: Mapping[str, str]) -> None:
    details = "; ".join(f"{name}: {message}" for name, message in problems.items())
    raise ValueError(f"invalid SpecPolicy: {details}")


def owner_label_value(identity: str) -> str:
    """A label-safe, deterministic form of ``identity`` for the ``jupyter-dw/owner`` label.

    An identity that is already a valid label value is used as it is. Anything else (``:`` in
    ``system:serviceaccount:ns:name``, ``@`` in an e-mail, more than 63 characters) is made
    readable by replacing invalid characters with ``.`` and suffixed with a hash of the full
    identity, so two identities never share a label value. Use the same function to build the
    selector that lists a user's clusters.
    """
    if identity and is_label_value(identity):
        return identity
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    readable = re.sub(r"[^A-Za-z0-9_.-]+", ".", identity)
    readable = readable[: DNS1123_LABEL_MAX_LENGTH - len(digest) - 1]
    readable = readable.strip("-_.")
    return f"{readable}-{digest}" if readable else digest


@dataclass(frozen=True, kw_only=True)
class ValidatedSpec:
    """A validated request for a Ray cluster: one head and one group of identical workers,
    every default applied (unlike the notebook's ``dw.ClusterSpec``, the user's request,
    whose None means "the default").

    Build it with ``from_request``; constructing it directly skips validation. Quantities are
    exact ``Decimal`` amounts (cores, bytes). ``workers`` is the number started; the cluster may
    autoscale between ``min_workers`` and ``max_workers`` (only with Kueue elastic jobs).
    """

    name: str
    queue: str
    image: str
    head_cpu: Decimal
    head_memory: Decimal
    workers: int
    min_workers: int
    max_workers: int
    worker_cpu: Decimal
    worker_memory: Decimal
    worker_gpu: int = 0
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict, hash=False)
    priority: str | None = None
    """A WorkloadPriorityClass name (label ``kueue.x-k8s.io/priority-class``); None: Kueue's
    default priority."""
    autoscaler_cpu: Decimal = DEFAULT_AUTOSCALER_CPU
    """The Ray autoscaler sidecar's CPU (only an autoscaling cluster has one; from the
    server's policy, not from the request)."""
    autoscaler_memory: Decimal = DEFAULT_AUTOSCALER_MEMORY
    ray_version: str | None = None
    """The image's Ray version (``spec.rayVersion``): from a Ray image's tag, else the
    request's ``ray_version``. Always set by ``from_request``."""
    ray_auth: str = DEFAULT_RAY_AUTH
    """The server's ``ray_auth`` mode when the spec was made (not a request field)."""

    def __post_init__(self) -> None:
        # Read-only views, so a frozen spec cannot be changed through its mappings.
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))
        object.__setattr__(self, "node_selector", MappingProxyType(dict(self.node_selector)))

    @classmethod
    def from_request(
        cls,
        data: Mapping[str, Any],
        policy: SpecPolicy | None = None,
        known_queues: Collection[str] | None = None,
        default_queue: str | None = None,
        known_priorities: Collection[str] | None = None,
    ) -> ValidatedSpec:
        """Parse, default and validate a request; raise ``SpecError`` listing every bad field.

        ``data`` uses the names in ``FIELDS``; a ``None`` value counts as omitted. Quantities
        may be strings or numbers in Kubernetes quantity syntax. ``known_queues`` are the
        LocalQueue names in the target namespace (``None``: unknown, so not checked);
        ``default_queue`` is used when the request names no queue. ``known_priorities`` are
        the WorkloadPriorityClass names (``None``: not readable, so only the syntax is checked
        and Kueue judges the name).
        """
        return _RequestParser(
            policy or SpecPolicy(), known_queues, default_queue, known_priorities
        ).parse(data)

    @property
    def autoscaling(self) -> bool:
        """Whether the Ray autoscaler may change the worker count (needs Kueue elastic jobs)."""
        return self.min_workers != self.max_workers

    def with_workers(self, workers: int) -> ValidatedSpec:
        """The same cluster started with ``workers`` workers (fewer, for a fit suggestion): a
        fixed size stays fixed; an autoscaling range keeps its maximum and lowers its minimum
        to ``workers`` when needed."""
        return replace(
            self,
            workers=workers,
            min_workers=min(self.min_workers, workers),
            max_workers=workers if self.max_workers == self.workers else self.max_workers,
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-ready fields with canonical quantity strings; ``from_request`` reads them back."""
        return {
            "name": self.name,
            "queue": self.queue,
            "workers": self.workers,
            "worker_cpu": _cpu_text(self.worker_cpu),
            "worker_memory": _memory_text(self.worker_memory),
            "worker_gpu": self.worker_gpu,
            "head_cpu": _cpu_text(self.head_cpu),
            "head_memory": _memory_text(self.head_memory),
            "image": self.image,
            "min_workers": self.min_workers,
            "max_workers": self.max_workers,
            "env": dict(self.env),
            "labels": dict(self.labels),
            "tolerations": [t.to_json() for t in self.tolerations],
            "node_selector": dict(self.node_selector),
            "priority": self.priority,
            "ray_version": self.ray_version,
        }

    def total_requests(self, *, at_max: bool = False) -> dict[str, Decimal]:
        """Resources the whole cluster requests: head plus workers times one worker's requests.

        Keys are ``cpu`` (cores), ``memory`` (bytes) and ``nvidia.com/gpu`` (only when more than
        0). By default this counts ``workers``, which is what Kueue reserves at admission: it
        sizes a worker group's PodSet from ``replicas``, not ``maxReplicas``. With
        ``at_max=True`` it counts ``max_workers``, the most an autoscaling cluster can grow to
        (each step up is a new Workload slice that Kueue must admit). KubeRay's autoscaler
        sidecar is not counted here (the fit adds it where the running Kueue counts it).
        """
        count = self.max_workers if at_max else self.workers
        totals = {
            "cpu": self.head_cpu + count * self.worker_cpu,
            "memory": self.head_memory + count * self.worker_memory,
        }
        gpus = count * self.worker_gpu
        if gpus > 0:
            totals[GPU_RESOURCE] = Decimal(gpus)
        return totals

    def to_raycluster(
        self, namespace: str, owner: str | None = None, *, auth_options_served: bool = True
    ) -> dict[str, Any]:
        """The ``ray.io/v1`` RayCluster to create in ``namespace``, suspended until admitted.

        ``owner`` is the identity creating it (e.g. ``system:serviceaccount:ns:name``): its
        label-safe form goes in the ``jupyter-dw/owner`` label and the full identity in the
        annotation of the same name. ``spec.authOptions`` follows ``ray_auth`` when the
        installed KubeRay's RayCluster schema has it (``auth_options_served``); without it the
        field would be pruned, so it is left out (the cluster then reads as ``none``, with a
        warning). Raises ``ValueError`` for an invalid namespace name.
        """
        if not isinstance(namespace, str):
            raise ValueError(f"invalid namespace: must be a string, got {_show(namespace)}")
        problem = dns1123_label_error(namespace)
        if problem is not None:
            raise ValueError(f"invalid namespace: {problem}")
        spec: dict[str, Any] = {}
        ray_version = self.ray_version or _ray_version(self.image)
        if ray_version is not None:
            spec["rayVersion"] = ray_version
        if auth_options_served:
            spec["authOptions"] = auth_options(self.ray_auth)
        # Created suspended: Kueue unsuspends it on admission, so no pod starts before then.
        spec["suspend"] = True
        spec["enableInTreeAutoscaling"] = self.autoscaling
        if self.autoscaling:
            # Explicit, so the quota Kueue 0.19 counts for the sidecar is a known amount.
            amounts = {
                "cpu": _cpu_text(self.autoscaler_cpu),
                "memory": _memory_text(self.autoscaler_memory),
            }
            spec["autoscalerOptions"] = {
                "resources": {"requests": dict(amounts), "limits": dict(amounts)}
            }
            # The sidecar is a Ray process too: with auth off it must be told so as well.
            if sidecar_env := container_env(self.ray_auth):
                spec["autoscalerOptions"]["env"] = sidecar_env
        spec["headGroupSpec"] = self._head_group()
        spec["workerGroupSpecs"] = [self._worker_group()]
        return {
            "apiVersion": RAYCLUSTER_API_VERSION,
            "kind": RAYCLUSTER_KIND,
            "metadata": self._metadata(namespace, owner),
            "spec": spec,
        }

    def _metadata(self, namespace: str, owner: str | None) -> dict[str, Any]:
        labels = dict(self.labels)
        labels[QUEUE_LABEL] = self.queue
        labels[MANAGED_BY_LABEL] = MANAGED_BY_VALUE
        if self.priority:
            labels[PRIORITY_CLASS_LABEL] = self.priority
        annotations: dict[str, str] = {}
        if owner:
            labels[OWNER_LABEL] = owner_label_value(owner)
            annotations[OWNER_ANNOTATION] = owner
        if self.autoscaling:
            annotations[ELASTIC_JOB_ANNOTATION] = "true"
        metadata: dict[str, Any] = {"name": self.name, "namespace": namespace, "labels": labels}
        if annotations:
            metadata["annotations"] = annotations
        return metadata

    def _head_group(self) -> dict[str, Any]:
        container = self._container(HEAD_CONTAINER_NAME, self.head_cpu, self.head_memory, 0)
        container["ports"] = [{"name": name, "containerPort": port} for name, port in HEAD_PORTS]
        return {
            # 0.0.0.0 so the dashboard is reachable through the head Service, not only in-pod.
            "rayStartParams": {"dashboard-host": "0.0.0.0"},
            "template": {"spec": self._pod_spec(container)},
        }

    def _worker_group(self) -> dict[str, Any]:
        container = self._container(
            WORKER_CONTAINER_NAME, self.worker_cpu, self.worker_memory, self.worker_gpu
        )
        return {
            "groupName": WORKER_GROUP_NAME,
            "replicas": self.workers,
            "minReplicas": self.min_workers,
            "maxReplicas": self.max_workers,
            "rayStartParams": {},
            "template": {"spec": self._pod_spec(container)},
        }

    def _pod_spec(self, container: dict[str, Any]) -> dict[str, Any]:
        # Head and workers share the placement: Kueue checks each pod set against the flavors.
        spec: dict[str, Any] = {"containers": [container]}
        if self.tolerations:
            spec["tolerations"] = [t.to_json() for t in self.tolerations]
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        return spec

    def _container(self, name: str, cpu: Decimal, memory: Decimal, gpu: int) -> dict[str, Any]:
        amounts = {"cpu": _cpu_text(cpu), "memory": _memory_text(memory)}
        if gpu > 0:
            amounts[GPU_RESOURCE] = str(gpu)
        container: dict[str, Any] = {
            "name": name,
            "image": self.image,
            # requests == limits: Guaranteed QoS, and Kueue's quota matches what pods may use.
            "resources": {"requests": dict(amounts), "limits": dict(amounts)},
        }
        env = [{"name": key, "value": value} for key, value in self.env.items()]
        env += container_env(self.ray_auth)
        if env:
            container["env"] = env
        return container


class _RequestParser:
    """Turns one request into a ``ValidatedSpec``, collecting a message for every bad field."""

    def __init__(
        self,
        policy: SpecPolicy,
        known_queues: Collection[str] | None,
        default_queue: str | None,
        known_priorities: Collection[str] | None = None,
    ) -> None:
        self.policy = policy
        self.known_queues = known_queues
        self.default_queue = default_queue
        self.known_priorities = known_priorities
        self.errors: dict[str, str] = {}
        self.values: dict[str, Any] = {}
        self.unknown: list[str] = []

    def parse(self, data: Mapping[str, Any]) -> ValidatedSpec:
        if not isinstance(data, Mapping):
            raise SpecError({REQUEST_ERROR_KEY: f"must be a mapping of fields, got {_show(data)}"})
        # None means "not given", so JSON null and unset keyword arguments behave alike.
        self.values = {str(key): value for key, value in data.items() if value is not None}
        self.unknown = [str(key) for key in data if str(key) not in FIELDS]
        policy = self.policy
        name = self._field("name", _parse_name, None)
        if name is None and "name" not in self.values:
            self.errors["name"] = "required: give the cluster a name, e.g. 'my-ray'"
        queue = self._queue()
        image = self._field(
            "image",
            lambda v: _check_image(_parse_image(v), policy.allowed_images),
            policy.default_image,
        )
        head_cpu, head_memory, worker_cpu, worker_memory, worker_gpu = (
            self._field(
                name, partial(_sized_value, name, policy=policy), getattr(policy, f"default_{name}")
            )
            for name in ("head_cpu", "head_memory", "worker_cpu", "worker_memory", "worker_gpu")
        )
        scaling = self._scaling()
        env = self._field("env", _parse_env, {})
        labels = self._field("labels", _parse_labels, {})
        tolerations = self._field("tolerations", _parse_tolerations, ())
        node_selector = self._field("node_selector", _parse_node_selector, {})
        priority = self._field(
            "priority", partial(parse_priority, known=self.known_priorities), None
        )
        ray_version = self._ray_version(image) if image is not None else None
        if scaling is not None and env is not None:
            self._check_autoscaler_env(env, autoscaling=scaling[1] != scaling[2])
        self._reject_unknown_fields()
        if self.errors:
            raise SpecError(self.errors)
        assert queue is not None and scaling is not None  # no errors: each of them parsed
        workers, min_workers, max_workers = scaling
        return ValidatedSpec(
            name=name,
            queue=queue,
            image=image,
            head_cpu=head_cpu,
            head_memory=head_memory,
            workers=workers,
            min_workers=min_workers,
            max_workers=max_workers,
            worker_cpu=worker_cpu,
            worker_memory=worker_memory,
            worker_gpu=worker_gpu,
            env=env,
            labels=labels,
            tolerations=tolerations,
            node_selector=node_selector,
            priority=priority,
            autoscaler_cpu=self.policy.autoscaler_cpu,
            autoscaler_memory=self.policy.autoscaler_memory,
            ray_version=ray_version,
            ray_auth=policy.ray_auth,
        )

    def _field(self, name: str, parse: Callable[[Any], Any], default: Any) -> Any:
        """The parsed value of ``name``, or ``default`` when omitted, or None after an error."""
        if name not in self.values:
            return default
        try:
            return parse(self.values[name])
        except ValueError as err:
            self.errors[name] = str(err)
            return None

    def _ray_version(self, image: str) -> str | None:
        """The Ray version of ``image``: its tag's for a Ray image, else the request's
        ``ray_version`` (then required); checked against what ``ray_auth`` needs."""
        mode = self.policy.ray_auth
        tagged = _ray_version(image)
        given = self.values.get("ray_version")
        if given is not None and not isinstance(given, str):
            self.errors["ray_version"] = f"must be a string such as '2.60.0', got {_show(given)}"
            return None
        if given is not None:
            try:
                wanted = parse_ray_version(given)
            except RayVersionError as err:
                self.errors["ray_version"] = str(err)
                return None
            if tagged is not None and parse_ray_version(tagged) != wanted:
                self.errors["ray_version"] = (
                    f"{given!r} does not match the image's tag: {image!r} runs Ray {tagged}"
                )
                return None
        if tagged is not None:
            try:
                return check_ray_version(tagged, mode)
            except RayVersionError as err:
                field = "image" if "image" in self.values else "ray_version"
                self.errors[field] = f"{image!r}: {err}"
                return None
        if given is None:
            needed = MIN_RAY_VERSION.get(mode)
            oldest = f" ({version_text(needed)} or newer)" if needed else ""
            self.errors["ray_version"] = (
                f"required for image {image!r}: its tag does not say which Ray it runs, and "
                f"KubeRay needs spec.rayVersion; give the image's Ray version{oldest}, "
                "e.g. '2.60.0'"
            )
            return None
        try:
            return check_ray_version(given, mode)
        except RayVersionError as err:
            self.errors["ray_version"] = str(err)
            return None

    def _queue(self) -> str | None:
        raw = self.values.get("queue")
        if isinstance(raw, str) and not raw.strip():
            raw = None  # an empty queue (e.g. `--queue ""`) asks for the default, like omitting it
        try:
            return resolve_queue(raw, self.known_queues, self.default_queue)
        except _FieldError as err:
            self.errors["queue"] = str(err)
            return None

    def _scaling(self) -> tuple[int, int, int] | None:
        """(workers, min_workers, max_workers) after defaults and checks, or None on error."""
        given: dict[str, int | None] = {
            name: self._field(name, _parse_count, None)
            for name in ("workers", "min_workers", "max_workers")
            if name in self.values
        }
        if any(value is None for value in given.values()):
            return None  # a count did not parse: comparing the others would only add noise
        for name, value in given.items():
            try:
                _sized_value("workers", value, policy=self.policy)
            except _FieldError as err:
                self.errors[name] = str(err)
        low, high = given.get("min_workers"), given.get("max_workers")
        workers = given.get("workers")
        if workers is None:
            # Start from the configured default, kept inside the bounds the user gave.
            workers = self.policy.default_workers
            workers = max(workers, low) if low is not None else workers
            workers = min(workers, high) if high is not None else workers
        low = workers if low is None else low
        high = workers if high is None else high
        self._check_bounds(given, workers, low, high)
        if any(name in self.errors for name in given):
            return None
        return workers, low, high

    def _check_bounds(self, given: Collection[str], workers: int, low: int, high: int) -> None:
        if "min_workers" in given and "max_workers" in given and low > high:
            self.errors.setdefault("min_workers", f"{low} is more than max_workers ({high})")
        elif low > workers:
            self.errors.setdefault(
                "min_workers",
                f"{low} is more than workers ({workers}); the cluster starts with 'workers' and "
                "may shrink to min_workers",
            )
        elif high < workers:
            self.errors.setdefault(
                "max_workers",
                f"{high} is less than workers ({workers}); the cluster starts with 'workers' "
                "and may grow to max_workers",
            )
        elif low != high and not self.policy.elastic_jobs:
            message = (
                f"autoscaling between {low} and {high} workers needs Kueue elastic jobs, "
                "which this server does not enable: without them Kueue admits a fixed number "
                "of workers and rejects a RayCluster that uses the Ray autoscaler. Set "
                "min_workers and max_workers equal to workers, or ask an administrator to "
                "enable elastic jobs (Kueue feature gate ElasticJobsViaWorkloadSlices)"
            )
            for name, value in (("min_workers", low), ("max_workers", high)):
                if name in given and value != workers:
                    self.errors.setdefault(name, message)

    def _check_autoscaler_env(self, env: Mapping[str, str], *, autoscaling: bool) -> None:
        # KubeRay refuses autoscaler v2 switched on by env while the autoscaler is off.
        if not autoscaling and env.get(_AUTOSCALER_V2_ENV, "").lower() in ("1", "true"):
            self.errors.setdefault(
                "env",
                f"{_AUTOSCALER_V2_ENV!r} turns on Ray's autoscaler v2, but this cluster does "
                "not autoscale (min_workers == max_workers), and KubeRay rejects that",
            )

    def _reject_unknown_fields(self) -> None:
        for name in self.unknown:
            self.errors[name] = _unknown_field_message(name)


def _show(value: object) -> str:
    """A short repr of a user-supplied value for messages."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _cpu_text(cpu: Decimal) -> str:
    # binary=False: 1024 CPUs is "1024", never "1Ki".
    return format_quantity(cpu, binary=False)


def _memory_text(memory: Decimal) -> str:
    """The shorter of the binary and decimal forms: "2Gi" and "8G", not "7812500Ki"."""
    return min(format_quantity(memory, binary=True), format_quantity(memory, binary=False), key=len)


def _unknown_field_message(name: str) -> str:
    close = difflib.get_close_matches(name, FIELDS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown field{hint}; known fields: {', '.join(FIELDS)}"


def ray_cluster_name_error(name: str) -> str | None:
    """What is wrong with ``name`` as a RayCluster's name (None if nothing): a DNS-1035 label
    of at most :data:`MAX_NAME_LENGTH` characters, the rule KubeRay enforces. Every name that
    comes from a URL or a request is checked with this before it reaches Kubernetes."""
    return dns1035_label_error(name, MAX_NAME_LENGTH)


def _parse_name(raw: object) -> str:
    if not isinstance(raw, str):
        raise _FieldError(f"must be a string, got {_show(raw)}")
    problem = ray_cluster_name_error(raw)
    if problem is None:
        return raw
    message = (
        f"{problem} (KubeRay requires a DNS-1035 label of at most {MAX_NAME_LENGTH} characters: "
        f"it derives Service names such as '<name>-head-svc' from it)"
    )
    suggestion = _suggest_name(raw)
    if suggestion is not None and suggestion != raw:
        message += f"; did you mean {suggestion!r}?"
    raise _FieldError(message)


def _suggest_name(raw: str) -> str | None:
    candidate = re.sub(r"[^a-z0-9]+", "-", raw.lower())
    candidate = re.sub(r"^[^a-z]+", "", candidate)[:MAX_NAME_LENGTH].rstrip("-")
    if not candidate or dns1035_label_error(candidate, MAX_NAME_LENGTH) is not None:
        return None
    return candidate


def resolve_queue(
    raw: object, known_queues: Collection[str] | None, default_queue: str | None
) -> str:
    available = ""
    if known_queues is not None:
        names = sorted(known_queues)
        available = f"; available: {', '.join(names)}" if names else "; it has no LocalQueues"
    if raw is None:
        if not default_queue:
            raise _FieldError(
                f"required: this namespace has no default LocalQueue, so name one{available}"
            )
        queue, source = default_queue, " (the namespace default)"
    elif not isinstance(raw, str):
        raise _FieldError(f"must be a string naming a LocalQueue, got {_show(raw)}")
    else:
        queue, source = raw.strip(), ""
    # The queue goes into a label value (<= 63) and Kueue checks it as a DNS-1123 subdomain.
    problem = dns1123_subdomain_error(queue, DNS1123_LABEL_MAX_LENGTH)
    if problem is not None:
        raise _FieldError(f"not a valid LocalQueue name{source}: {problem}")
    if known_queues is not None and queue not in known_queues:
        raise _FieldError(f"no LocalQueue {queue!r}{source} in this namespace{available}")
    return queue


def _parse_image(raw: object) -> str:
    if not isinstance(raw, str):
        raise _FieldError(f"must be a string, got {_show(raw)}")
    image = raw.strip()
    if not image:
        raise _FieldError("must not be empty")
    if any(char.isspace() or not char.isprintable() for char in image):
        raise _FieldError(f"{_show(raw)} must not contain spaces or control characters")
    return image


def _parse_allowed_images(raw: object) -> tuple[str, ...]:
    if isinstance(raw, str) or not isinstance(raw, Collection):
        raise _FieldError(f"must be a list of image prefixes or patterns, got {_show(raw)}")
    entries = tuple(raw)
    if not all(isinstance(entry, str) and entry for entry in entries):
        raise _FieldError("every entry must be a non-empty string")
    return entries


def _image_allowed(image: str, allowed: tuple[str, ...]) -> bool:
    for entry in allowed:
        if any(char in entry for char in "*?["):
            if fnmatch.fnmatchcase(image, entry):
                return True
        elif image.startswith(entry):
            return True
    return False


def _check_image(image: str, allowed: tuple[str, ...]) -> str:
    if allowed and not _image_allowed(image, allowed):
        listed = ", ".join(repr(entry) for entry in allowed)
        raise _FieldError(f"{image!r} is not allowed on this server; allowed images: {listed}")
    return image


def _parse_amount(raw: object) -> Decimal:
    # Strip first: parse_quantity's "$" anchor would let a trailing newline through.
    value = raw.strip() if isinstance(raw, str) else raw
    try:
        return parse_quantity(value)  # type: ignore[arg-type]  # it rejects other types itself
    except QuantityError as err:
        raise _FieldError(str(err)) from err


def _parse_cpu(raw: object) -> Decimal:
    cpu = _parse_amount(raw)
    if cpu <= 0:
        raise _FieldError(f"must be more than 0 CPUs, got {_show(raw)}")
    if (cpu * 1000) % 1 != 0:
        raise _FieldError(
            f"{_show(raw)} is finer than a millicore; CPUs are counted in steps of 1m (0.001)"
        )
    return cpu


def _parse_memory(raw: object) -> Decimal:
    memory = _parse_amount(raw)
    if memory <= 0:
        raise _FieldError(f"must be more than 0 bytes, got {_show(raw)}")
    if memory % 1 != 0:
        hint = ""
        if isinstance(raw, str) and raw.strip().endswith("m"):
            hint = f"; 'm' means milli, did you mean {raw.strip()[:-1] + 'Mi'!r}?"
        raise _FieldError(f"{_show(raw)} is a fraction of a byte{hint}")
    if memory < MIN_MEMORY:
        hint = ""
        if isinstance(raw, int) or (isinstance(raw, str) and raw.strip().isdigit()):
            hint = f"; memory is counted in bytes, did you mean {str(raw).strip() + 'Gi'!r}?"
        raise _FieldError(f"{_show(raw)} is only {memory} bytes, less than 1Mi{hint}")
    return memory


def _parse_gpu(raw: object) -> int:
    amount = _parse_amount(raw)
    if amount < 0 or amount % 1 != 0:
        raise _FieldError(f"must be a whole number of GPUs, 0 or more, got {_show(raw)}")
    return int(amount)


def _parse_count(raw: object) -> int:
    """A whole number >= 0 given as an int, a digit string ("3") or an integral number (3.0)."""
    if isinstance(raw, bool):
        count = None
    elif isinstance(raw, int):
        count = raw
    elif isinstance(raw, str) and _COUNT_TEXT.fullmatch(raw.strip()):
        count = int(raw.strip())
    elif isinstance(raw, float | Decimal) and math.isfinite(raw) and raw == int(raw):
        count = int(raw)
    else:
        count = None
    if count is None:
        raise _FieldError(f"must be a whole number, got {_show(raw)}")
    if count < 0:
        raise _FieldError(f"must be 0 or more, got {count} (0 workers is a head-only cluster)")
    if count > _INT32_MAX:
        raise _FieldError(f"{count} is too large (at most {_INT32_MAX})")
    return count


def _over_limit(shown: str, limit: str) -> _FieldError:
    return _FieldError(f"{shown} is more than this server's limit of {limit}")


@dataclass(frozen=True)
class _Sized:
    """A size a spec asks for, with its parser, how it is shown, and the policy limit on it."""

    parse: Callable[[Any], Any]
    show: Callable[[Any], str]
    limit: str  # the SpecPolicy field holding the limit
    unit: str  # after the shown limit: "CPUs per worker"


_SIZED: dict[str, _Sized] = {
    "workers": _Sized(_parse_count, str, "max_workers", "workers"),
    "head_cpu": _Sized(_parse_cpu, _cpu_text, "max_head_cpu", "CPUs for the head"),
    "head_memory": _Sized(_parse_memory, _memory_text, "max_head_memory", "for the head"),
    "worker_cpu": _Sized(_parse_cpu, _cpu_text, "max_worker_cpu", "CPUs per worker"),
    "worker_memory": _Sized(_parse_memory, _memory_text, "max_worker_memory", "per worker"),
    "worker_gpu": _Sized(_parse_gpu, str, "max_worker_gpu", "GPUs per worker"),
}
"""The sized fields; each also has a ``default_<field>`` on :class:`SpecPolicy`."""


def _sized_value(field_name: str, raw: object, *, policy: SpecPolicy) -> Any:
    """Parse sized field ``field_name`` and check it against the policy's limit."""
    sized = _SIZED[field_name]
    value = sized.parse(raw)
    limit = getattr(policy, sized.limit)
    if limit is not None and value > limit:
        raise _over_limit(sized.show(value), f"{sized.show(limit)} {sized.unit}")
    return value


def _parse_env(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise _FieldError(
            "must be a mapping of variable names to string values, e.g. {'OMP_NUM_THREADS': '4'}"
        )
    problems = []
    for name, value in raw.items():
        if not isinstance(name, str):
            problems.append(f"variable name {_show(name)} is not a string")
            continue
        name_problem = env_name_error(name)
        if name_problem is not None:
            problems.append(name_problem)
        elif name in _KUBERAY_REJECTED_ENV:
            problems.append(
                f"{name!r} is not allowed: KubeRay rejects it unless GCS fault tolerance is "
                "configured, which this form does not offer"
            )
        elif name in RESERVED_ENV:
            problems.append(
                f"{name!r} is not allowed: Ray's authentication is set by this server "
                "(ray_auth) and by KubeRay, which would keep a value set here"
            )
        if not isinstance(value, str):
            problems.append(f"the value of {name!r} must be a string, got {_show(value)}")
    if problems:
        raise _FieldError("; ".join(problems))
    return dict(raw)


def _parse_labels(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise _FieldError("must be a mapping of label keys to string values, e.g. {'team': 'nlp'}")
    problems = []
    for key, value in raw.items():
        if not isinstance(key, str):
            problems.append(f"label key {_show(key)} is not a string")
            continue
        problem = label_key_error(key) or _reserved_label_error(key)
        if problem is not None:
            problems.append(problem)
        if not isinstance(value, str):
            problems.append(f"the value of label {key!r} must be a string, got {_show(value)}")
        elif (value_problem := label_value_error(value)) is not None:
            problems.append(value_problem)
    if problems:
        raise _FieldError("; ".join(problems))
    return dict(raw)


def _parse_tolerations(raw: object) -> tuple[Toleration, ...]:
    if isinstance(raw, str):
        raw = [part for part in (p.strip() for p in raw.split(",")) if part]
    if not isinstance(raw, list | tuple):
        raise _FieldError(
            "must be a list of tolerations, e.g. [{'key': 'nvidia.com/gpu', 'operator': "
            "'Exists', 'effect': 'NoSchedule'}] or 'nvidia.com/gpu:NoSchedule'"
        )
    found, problems = [], []
    for item in raw:
        try:
            found.append(_toleration(item))
        except _FieldError as err:
            problems.append(str(err))
    if problems:
        raise _FieldError("; ".join(problems))
    return tuple(found)


def _toleration(item: object) -> Toleration:
    """One toleration: a Kubernetes ``Toleration`` mapping, or ``KEY[=VALUE][:EFFECT]``
    (without a value the operator is Exists)."""
    if isinstance(item, str):
        text, _, effect = item.partition(":")
        key, equals, value = text.partition("=")
        item = {"key": key, "operator": "Equal" if equals else "Exists", "effect": effect}
        if equals:
            item["value"] = value
    if not isinstance(item, Mapping):
        raise _FieldError(
            f"a toleration must be a mapping or 'KEY[=VALUE][:EFFECT]', got {_show(item)}"
        )
    unknown = sorted(set(item) - {"key", "operator", "value", "effect"})
    if unknown:
        raise _FieldError(f"unknown toleration field(s) {', '.join(map(repr, unknown))}")
    toleration = Toleration.from_object(item)
    if toleration.operator not in OPERATORS:
        raise _FieldError(f"toleration operator {toleration.operator!r} must be one of {OPERATORS}")
    if toleration.effect and toleration.effect not in EFFECTS:
        raise _FieldError(f"toleration effect {toleration.effect!r} must be one of {EFFECTS}")
    if toleration.key and (problem := label_key_error(toleration.key)) is not None:
        raise _FieldError(f"toleration key: {problem}")
    if not toleration.key and toleration.operator != "Exists":
        raise _FieldError("a toleration without a key must use the Exists operator")
    if toleration.operator == "Exists" and toleration.value:
        raise _FieldError(f"toleration {toleration.key!r}: Exists takes no value")
    if toleration.value and (problem := label_value_error(toleration.value)) is not None:
        raise _FieldError(f"toleration value: {problem}")
    return toleration


def _parse_node_selector(raw: object) -> dict[str, str]:
    if isinstance(raw, str):
        pairs = [p.strip() for p in raw.split(",") if p.strip()]
        if any("=" not in p for p in pairs):
            raise _FieldError("must be 'key=value[,key=value]' or a mapping of labels")
        raw = dict(p.split("=", 1) for p in pairs)
    if not isinstance(raw, Mapping):
        raise _FieldError("must be a mapping of node label keys to values, e.g. {'gpu': 'a100'}")
    problems = []
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, str):
            problems.append(f"node_selector {_show(key)}: keys and values must be strings")
        elif (problem := label_key_error(key) or label_value_error(value)) is not None:
            problems.append(problem)
    if problems:
        raise _FieldError("; ".join(problems))
    return dict(raw)


def parse_priority(raw: object, known: Collection[str] | None) -> str | None:
    """A WorkloadPriorityClass name (empty: none, like omitting it), checked against ``known``
    when the classes are readable."""
    if not isinstance(raw, str):
        raise _FieldError(f"must be a string naming a WorkloadPriorityClass, got {_show(raw)}")
    name = raw.strip()
    if not name:
        return None
    available = ""
    if known is not None:
        names = sorted(known)
        available = f"; available: {', '.join(names)}" if names else "; the cluster has none"
    # The name goes into a label value (<= 63); Kueue's classes are DNS-1123 subdomains.
    problem = dns1123_subdomain_error(name, DNS1123_LABEL_MAX_LENGTH)
    if problem is not None:
        raise _FieldError(f"not a valid WorkloadPriorityClass name: {problem}{available}")
    if known is not None and name not in known:
        raise _FieldError(f"no WorkloadPriorityClass {name!r}{available}")
    return name


def _reserved_label_error(key: str) -> str | None:
    if key in _RESERVED_LABELS:
        return f"label {key!r} cannot be set: {_RESERVED_LABELS[key]}"
    for prefix, reason in _RESERVED_LABEL_PREFIXES.items():
        if key.startswith(prefix):
            return f"label {key!r} cannot be set: {reason}"
    return None


def _ray_version(image: str) -> str | None:
    """The Ray version in a ``.../ray:X.Y.Z...`` image tag, for ``spec.rayVersion``.

    KubeRay uses rayVersion to gate features; a custom image's tag says nothing reliable about
    Ray, so for any other image the field is left out.
    """
    match = _RAY_IMAGE_TAG.fullmatch(image.rsplit("/", 1)[-1])
    return match[1] if match else None


__all__ = [
    "DEFAULT_RAY_IMAGE",
    "ELASTIC_JOB_ANNOTATION",
    "FIELDS",
    "GPU_RESOURCE",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "MAX_NAME_LENGTH",
    "OWNER_ANNOTATION",
    "OWNER_LABEL",
    "QUEUE_LABEL",
    "RAYCLUSTER_API_VERSION",
    "RAYCLUSTER_KIND",
    "REQUEST_ERROR_KEY",
    "SpecError",
    "SpecPolicy",
    "ValidatedSpec",
    "owner_label_value",
    "ray_cluster_name_error",
]


# The per-field parsers other job requests share (a TrainJob's ``resources_per_node`` and
# ``image``): the same rules and words as a cluster's.
parse_cpu = _parse_cpu
parse_memory = _parse_memory
parse_gpu = _parse_gpu


def parse_allowed_image(raw: object, allowed: tuple[str, ...]) -> str:
    """An image name, checked against the server's ``allowed_images`` (when any)."""
    return _check_image(_parse_image(raw), allowed)
