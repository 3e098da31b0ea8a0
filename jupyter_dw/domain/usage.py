"""What a cluster's pods use against what they hold, and whether the cluster is idle. Pure.
The two sources (the metrics API, Ray) may each be missing; they and the idle rule:
docs/explanation/architecture.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from jupyter_dw.domain.idle_rule import IdleVerdict
from jupyter_dw.domain.json_decode import DecodeError, decode_fields, decode_key
from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.domain.lenient import text as _text
from jupyter_dw.domain.quantity import QuantityError, parse_quantity
from jupyter_dw.domain.quota import format_amount
from jupyter_dw.domain.workloads import pod_requests
from jupyter_dw.names import RAY_CLUSTER_LABEL

METERED = ("cpu", "memory")
"""What the metrics API measures; a GPU's use comes from Ray only."""

Basis = Literal["ray", "metrics"]

CLUSTER = "cluster"
Subject = tuple[str, str]
"""``(kind, name)`` of what usage is sampled for: a Ray cluster (:data:`CLUSTER`, a RayJob's own
included), or a job of a workload kind whose pods are its own (the kind's ``word``: a
TrainJob's, see :attr:`jupyter_dw.domain.job_kind.JobKind.pod_label`)."""


def is_gpu(resource: str) -> bool:
    """A GPU resource name (``nvidia.com/gpu``, ``amd.com/gpu``)."""
    return resource.endswith("/gpu")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _amount(value: Any) -> Decimal | None:
    try:
        return parse_quantity(value) if isinstance(value, str | int | float) else None
    except QuantityError:
        return None


_BINARY = tuple(
    (unit, Decimal(2**power)) for unit, power in (("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))
)
_CENTI = Decimal("0.01")


def shown_amount(resource: str, value: Decimal) -> str:
    """``value`` as every surface words it (``usage_bar.js``'s ``amountText`` for the sidebar
    and the widgets, the notebook's HTML): CPU ``1.4``, ``0.25``, under a hundredth of a core
    in millicores (``3m``: a quiet pod's use is not ``0``); memory ``2.3Gi``."""
    unit = ""
    if resource == "memory":
        unit, size = next(((u, s) for u, s in _BINARY if value >= s), ("", Decimal(1)))
        value = value / size
    elif resource == "cpu" and 0 < value < _CENTI:
        return f"{max(1, int((value * 1000).quantize(Decimal(1), ROUND_HALF_UP)))}m"
    step = Decimal(1) if value >= 100 else Decimal("0.1") if value >= 1 else _CENTI
    return f"{value.quantize(step, ROUND_HALF_UP).normalize():f}{unit}"


@dataclass(frozen=True)
class PodUsage:
    """One pod's use now, as the metrics API reports it (its containers summed)."""

    pod: str
    used: Mapping[str, Decimal]
    window_end: str | None
    """When metrics-server's sampling window ended (``timestamp``)."""


def pod_usages(pod_metrics: Iterable[Mapping[str, Any]]) -> dict[str, PodUsage]:
    """The PodMetrics items of a namespace by pod name (unreadable items left out)."""
    found: dict[str, PodUsage] = {}
    for item in pod_metrics:
        name = _text(_map(_map(item).get("metadata")).get("name"))
        if name is None:
            continue
        used: dict[str, Decimal] = dict.fromkeys(METERED, Decimal(0))
        for container in _list(_map(item).get("containers")):
            usage = _map(_map(container).get("usage"))
            for resource in METERED:
                amount = _amount(usage.get(resource))
                if amount is not None:
                    used[resource] += amount
        found[name] = PodUsage(name, used, _text(_map(item).get("timestamp")))
    return found


@dataclass(frozen=True)
class ResourceUse:
    """One resource: what the cluster's pods request (hold) and use now (None: unknown)."""

    held: Decimal
    used: Decimal | None

    def to_json(self, resource: str) -> dict[str, str | None]:
        return {
            "held": format_amount(resource, self.held),
            "used": format_amount(resource, self.used),
        }


@dataclass(frozen=True)
class RayLoad:
    """What Ray says of its own load: logical resources ``{name: (used, total)}``, jobs
    running and pending, live actors. A part Ray did not answer is None."""

    resources: Mapping[str, tuple[Decimal, Decimal]] | None = None
    jobs_running: int | None = None
    jobs_pending: int | None = None
    actors_alive: int | None = None

    @property
    def busy(self) -> bool | None:
        """True when any logical resource is in use, a job runs or waits, or an actor lives;
        False when Ray answered all of it and none is; None when a part is unknown."""
        parts = (self.resources, self.jobs_running, self.jobs_pending, self.actors_alive)
        in_use = self.resources is not None and any(u > 0 for u, _ in self.resources.values())
        counted = any(n for n in (self.jobs_running, self.jobs_pending, self.actors_alive) if n)
        if in_use or counted:
            return True
        return None if any(p is None for p in parts) else False

    def to_json(self) -> dict[str, Any]:
        return {
            "resources": (
                {
                    name: {"used": _number(used), "total": _number(total)}
                    for name, (used, total) in sorted(self.resources.items())
                }
                if self.resources is not None
                else None
            ),
            "jobs_running": self.jobs_running,
            "jobs_pending": self.jobs_pending,
            "actors_alive": self.actors_alive,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RayLoad:
        """What :meth:`to_json` made (each resource's ``used`` and ``total`` back to a pair)."""
        figures = decode_key(Mapping[str, Mapping[str, Decimal]] | None, data, "resources")
        resources = (
            {name: (pair["used"], pair["total"]) for name, pair in figures.items()}
            if figures is not None
            else None
        )
        return decode_fields(cls, data, resources=resources)


def _number(value: Decimal) -> float:
    return float(value)


def ray_resources(cluster_status: Mapping[str, Any]) -> dict[str, tuple[Decimal, Decimal]] | None:
    """``loadMetricsReport.usage`` of the dashboard's ``GET /api/cluster_status`` answer
    (``data.clusterStatus``), without Ray's internal resources (``node:…``, ``memory``,
    ``object_store_memory``, accelerator-type markers); None when the answer has none."""
    status = _map(_map(_map(cluster_status).get("data")).get("clusterStatus"))
    usage = _map(_map(status.get("loadMetricsReport")).get("usage"))
    if not usage:
        return None
    found: dict[str, tuple[Decimal, Decimal]] = {}
    for name, pair in usage.items():
        if not isinstance(name, str) or name.startswith(("node:", "accelerator_type:")):
            continue
        if name in ("memory", "object_store_memory", "objectStoreMemory"):
            continue  # Ray's own accounting of memory, not a request of the user's
        values = _list(pair)
        if len(values) == 2 and all(isinstance(v, int | float) for v in values):
            found[name] = (Decimal(str(values[0])), Decimal(str(values[1])))
    return found


def job_counts(jobs: Any) -> tuple[int, int] | None:
    """Jobs running and pending in Ray's ``GET /api/jobs/`` answer, every kind counted: a
    submission, and a driver with no submission (a notebook's Ray Client session) — both use
    the cluster. None when the answer is not a list."""
    if not isinstance(jobs, list):
        return None
    states = [_map(job).get("status") for job in jobs]
    return states.count("RUNNING"), states.count("PENDING")


def ray_load(cluster_status: Any, jobs: Any, actors_alive: int | None) -> RayLoad:
    """Ray's three answers as one :class:`RayLoad` (a part it did not give is None)."""
    counts = job_counts(jobs)
    return RayLoad(
        resources=ray_resources(_map(cluster_status)),
        jobs_running=counts[0] if counts is not None else None,
        jobs_pending=counts[1] if counts is not None else None,
        actors_alive=actors_alive,
    )


@dataclass(frozen=True)
class ClusterUsage:
    """A cluster's use against what it holds, and whether it is idle (see the module)."""

    resources: Mapping[str, ResourceUse] = field(default_factory=dict)
    metrics_reason: str | None = None
    """Why the metrics API's part is unknown (None when it was read)."""
    sampled_at: str | None = None
    ray: RayLoad | None = None
    ray_reason: str | None = None
    """Why Ray's part is unknown (None when Ray answered, or was not asked)."""
    idle: bool | None = None
    idle_basis: Basis | None = None

    def shown(self) -> tuple[Any, ...]:
        """What a reader of this usage sees: each figure as the surfaces word it
        (:func:`shown_amount`), the reasons, Ray's load and idle; not ``sampled_at``, nor the
        digits a rounded figure hides. A sample whose CPU rate moved only within them is no
        change to tell anyone (:mod:`jupyter_dw.core.usage`)."""
        ray = self.ray
        return (
            tuple(
                (
                    r,
                    shown_amount(r, use.held),
                    None if use.used is None else shown_amount(r, use.used),
                )
                for r, use in sorted(self.resources.items())
            ),
            self.metrics_reason,
            self.ray_reason,
            None
            if ray is None
            else (
                None
                if ray.resources is None
                else tuple(
                    (name, shown_amount("", used), shown_amount("", total))
                    for name, (used, total) in sorted(ray.resources.items())
                ),
                ray.jobs_running,
                ray.jobs_pending,
                ray.actors_alive,
            ),
            self.idle,
            self.idle_basis,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "resources": {r: use.to_json(r) for r, use in sorted(self.resources.items())},
            "reason": self.metrics_reason,
            "sampled_at": self.sampled_at,
            "ray": self.ray.to_json() if self.ray is not None else None,
            "ray_reason": self.ray_reason,
            "idle": self.idle,
            "idle_basis": self.idle_basis,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClusterUsage:
        """What :meth:`to_json` made (``reason``: the metrics API's)."""
        return decode_fields(cls, data, metrics_reason=decode_key(str | None, data, "reason"))


def usage_json(
    usage: ClusterUsage | None,
    idle_since: str | None,
    idle_action: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """REST's ``usage`` of a cluster or a job: the :class:`ClusterUsage` with when it became
    idle and the idle rule's verdict (clusters only); None when usage is off."""
    if usage is None:
        return None
    return {**usage.to_json(), "idle_since": idle_since, "idle_action": idle_action}


def usage_from_json(record: Any) -> tuple[ClusterUsage | None, str | None, IdleVerdict | None]:
    """The ``usage`` of a cluster's or a job's JSON (what :func:`usage_json` made) as the
    record's ``usage``, ``idle_since`` and ``idle_verdict`` (all None when usage is off)."""
    data = decode_key(Mapping[str, Any] | None, record, "usage")
    if data is None:
        return None, None, None
    try:
        return (
            ClusterUsage.from_json(data),
            decode_key(str | None, data, "idle_since"),
            decode_key(IdleVerdict | None, data, "idle_action"),
        )
    except DecodeError as err:
        raise err.within("usage") from None


def cluster_pods(pods: Iterable[Mapping[str, Any]], cluster: str) -> list[Mapping[str, Any]]:
    """The cluster's pods that hold a node now (see :func:`holding_pods`)."""
    return holding_pods(
        pod
        for pod in pods
        if _map(_map(pod.get("metadata")).get("labels")).get(RAY_CLUSTER_LABEL) == cluster
    )


def holding_pods(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods (of one cluster, or one job) that hold a node now: scheduled, not finished,
    not being deleted."""
    held = []
    for pod in pods:
        metadata = _map(pod.get("metadata"))
        if metadata.get("deletionTimestamp"):
            continue
        if _map(pod.get("status")).get("phase") in ("Succeeded", "Failed"):
            continue
        if not _map(pod.get("spec")).get("nodeName"):
            continue  # gated or unscheduled: holds no node (its quota is Kueue's to say)
        held.append(pod)
    return held


def cluster_usage(
    pods: Iterable[Mapping[str, Any]],
    usages: Mapping[str, PodUsage] | None,
    metrics_reason: str | None = None,
    ray: RayLoad | None = None,
    ray_reason: str | None = None,
    idle_cpu_fraction: Decimal = Decimal("0.05"),
) -> ClusterUsage:
    """Use against requests over ``pods`` (one cluster's, see :func:`cluster_pods`, or one
    job's, see :func:`holding_pods`).

    ``usages`` None: the metrics API could not be read (``metrics_reason`` says why). A pod
    the metrics API does not list yet (it needs two scrapes) makes the use unknown, not low.
    """
    held: dict[str, Decimal] = {}
    used: dict[str, Decimal] | None = (
        dict.fromkeys(METERED, Decimal(0)) if usages is not None else None
    )
    reason = metrics_reason
    stamps: list[str] = []
    below = True  # every pod below the idle fraction of its CPU request
    pods = list(pods)
    for pod in pods:
        requests = pod_requests(_map(pod.get("spec")))
        for resource, amount in requests.items():
            held[resource] = held.get(resource, Decimal(0)) + amount
        name = _text(_map(pod.get("metadata")).get("name")) or ""
        sample = usages.get(name) if usages else None
        if usages is not None and sample is None:
            used = None
            reason = reason or f"the metrics API has no sample of pod {name} yet"
        if sample is None:
            below = False
            continue
        if sample.window_end:
            stamps.append(sample.window_end)
        if used is not None:
            for resource in METERED:
                used[resource] += sample.used.get(resource, Decimal(0))
        cpu_request = requests.get("cpu", Decimal(0))
        if (
            cpu_request <= 0
            or sample.used.get("cpu", Decimal(0)) >= idle_cpu_fraction * cpu_request
        ):
            below = False
    if usages is None and reason is None:
        reason = "the metrics API was not read"
    if not pods:
        used, below = None, False
        reason = reason or "no pod of it runs"
    gpus = [resource for resource in held if is_gpu(resource)]
    ray_gpu = (ray.resources or {}).get("GPU") if ray is not None and len(gpus) == 1 else None
    resources = {
        resource: ResourceUse(
            amount,
            (
                used.get(resource)
                if used is not None and resource in METERED
                else (ray_gpu[0] if ray_gpu is not None and is_gpu(resource) else None)
            ),
        )
        for resource, amount in held.items()
    }
    busy = ray.busy if ray is not None else None
    idle: bool | None
    basis: Basis | None
    if busy is not None:
        idle, basis = (not busy), "ray"
    elif used is not None:
        idle, basis = below, "metrics"
    else:
        idle, basis = None, None
    return ClusterUsage(
        resources=resources,
        metrics_reason=None if used is not None else reason,
        sampled_at=min(stamps) if stamps else None,
        ray=ray,
        ray_reason=ray_reason,
        idle=idle,
        idle_basis=basis,
    )


@dataclass(frozen=True)
class QueueHolding:
    """What some clusters (a workbench's, in one LocalQueue) hold and use, summed: per
    resource, ``used`` None when any cluster's use of it is unknown (never a partial sum).
    A cluster that holds nothing (stopped, queued, no pod on a node) adds nothing."""

    clusters: int = 0
    """The clusters counted (those holding something)."""
    resources: Mapping[str, ResourceUse] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "clusters": self.clusters,
            "resources": {r: use.to_json(r) for r, use in sorted(self.resources.items())},
        }


def queue_holding(usages: Iterable[ClusterUsage]) -> QueueHolding:
    """The sum of ``usages`` (see :class:`QueueHolding`)."""
    held: dict[str, Decimal] = {}
    used: dict[str, Decimal | None] = {}
    clusters = 0
    for usage in usages:
        if not any(use.held > 0 for use in usage.resources.values()):
            continue
        clusters += 1
        for resource, use in usage.resources.items():
            held[resource] = held.get(resource, Decimal(0)) + use.held
            before = used.get(resource, Decimal(0))
            used[resource] = None if before is None or use.used is None else before + use.used
    return QueueHolding(clusters, {r: ResourceUse(amount, used[r]) for r, amount in held.items()})
