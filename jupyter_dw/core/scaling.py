"""Changing an elastic Ray cluster's size: checked, fitted, then one JSON patch.
The patch pins the worker group (so the autoscaler cannot undo it) and names the pods a
scale-down removes. Blocking. How Kueue and KubeRay take it: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..domain.cluster_state import ClusterSnapshot, live_worker_pods
from ..domain.kueue_model import LocalQueueInfo
from ..domain.lenient import conditions, is_true
from ..domain.priorities import priority_value
from ..domain.scale_fit import ScaleFit, assess_scale_up, held_flavors, worker_pod_set
from ..k8s.elastic import FEATURE_GATE
from ..names import (
    AUTOSCALING_MIN_ANNOTATION,
    PRIORITY_CLASS_LABEL,
)
from .cluster_objects import ray_pods
from .cluster_results import ScaleResult
from .errors import InvalidRequest, InvalidScale, NotElastic
from .queue_state import queue_state

if TYPE_CHECKING:
    from .clusters import ClusterService  # which imports this module when it scales

Object = dict[str, Any]

WORKERS_FIELD = "workers"


def _escape(key: str) -> str:
    """A key as a JSON-pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True)
class ScaleRequest:
    """A REST scale request, ``{"workers": N | null, "dry_run": bool}``, its shape checked.
    ``workers`` is as sent: :func:`parse_workers` checks the number when the cluster scales."""

    workers: Any
    dry_run: bool


def scale_request(body: Any) -> ScaleRequest:
    """``body`` (decoded JSON) as a :class:`ScaleRequest`, else :class:`InvalidRequest` naming
    the bad field; nothing is read or changed before it passes."""
    if not isinstance(body, dict) or WORKERS_FIELD not in body:
        problem = 'the body must be a JSON object with "workers" (a whole number or null)'
        raise InvalidRequest(
            "Invalid scale request",
            problem,
            'Send e.g. {"workers": 4}; nothing was changed.',
            {WORKERS_FIELD: problem},
        )
    unknown = sorted(set(body) - {WORKERS_FIELD, "dry_run"})
    dry_run = body.get("dry_run", False)
    if unknown or not isinstance(dry_run, bool):
        problem = (
            f"unknown field(s) {', '.join(unknown)}" if unknown else "dry_run must be a boolean"
        )
        raise InvalidRequest(
            "Invalid scale request", problem, "Nothing was changed.", {"request": problem}
        )
    workers = body[WORKERS_FIELD]
    if isinstance(workers, str):  # JSON has numbers: a string is a client's mistake here
        problem = f"must be a whole number or null, got {workers!r}"
        raise InvalidRequest(
            "Invalid number of workers", problem, "Nothing was changed.", {WORKERS_FIELD: problem}
        )
    return ScaleRequest(workers, dry_run)


def parse_workers(raw: Any) -> int | None:
    """``None`` (give the size back to the autoscaler) or a whole number >= 0; anything else
    is :class:`InvalidScale`. Digit strings (from ``%dw scale``) are accepted."""
    if raw is None:
        return None
    if isinstance(raw, str) and raw.strip().lower() in ("auto", "none", "null"):
        return None
    value: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str) and raw.strip().isdigit():
        value = int(raw.strip())
    if value is None or value < 0:
        problem = f"must be a whole number of workers (0 or more) or null, got {raw!r}"
        raise InvalidScale(
            "Invalid number of workers", problem, "Nothing was changed.", {WORKERS_FIELD: problem}
        )
    return value


def _worker_pods_to_remove(pods: list[Object], keep: int) -> list[str]:
    """Names of the worker pods to remove so that ``keep`` remain: gated pods first (they
    never ran), then pods not ready, then the newest."""
    workers = live_worker_pods(pods)

    def order(pod: Mapping[str, Any]) -> tuple[bool, bool, str]:
        gated = bool((pod.get("spec") or {}).get("schedulingGates"))
        created = str((pod.get("metadata") or {}).get("creationTimestamp") or "")
        # sorted ascending: gated (True) first, then not ready, then newest first.
        return (not gated, is_true(conditions(pod).get("Ready")), _reverse(created))

    ordered = sorted(workers, key=order)
    return [str(p["metadata"]["name"]) for p in ordered[: max(0, len(workers) - keep)]]


def _reverse(text: str) -> str:
    # Newest first inside one class: invert the characters of an RFC 3339 time.
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


def _not_elastic(status: ClusterSnapshot, gate_off: bool, detail: str | None) -> NotElastic:
    if gate_off:
        reason = (
            f"Kueue runs without the feature gate {FEATURE_GATE}: it admits every cluster at a "
            f"fixed size ({detail})"
        )
        hint = f"Ask an administrator to enable {FEATURE_GATE} in Kueue's configuration."
    else:
        reason = (
            f"{status.name} is not an elastic job: it was created with a fixed size "
            f"({status.workers_desired} workers), and Kueue admits such a cluster once, at "
            "that size"
        )
        hint = "Create the cluster with min_workers < max_workers to scale it after admission."
    return NotElastic(
        f"RayCluster {status.name!r} cannot change size", reason, hint, {WORKERS_FIELD: reason}
    )


def scale_cluster(
    service: ClusterService, name: str, workers: Any, dry_run: bool = False
) -> ScaleResult:
    """Pin cluster ``name`` at ``workers`` (None: give the size back to the Ray autoscaler).

    Raises :class:`InvalidScale` (not a whole number, outside ``[min_workers, max_workers]``,
    the cluster is being deleted), :class:`NotElastic`, ``KubeNotFound``, ``KubeForbidden``
    (``patch rayclusters.ray.io``), ``KubeRejected`` (the cluster changed meanwhile: retry).
    """
    from .clusters import check_cluster_name

    target = parse_workers(workers)
    raycluster = service.session.ray_cluster(check_cluster_name(name))
    found = service.snapshots([raycluster], fresh=True)[0]
    status = found[2]
    if (raycluster.get("metadata") or {}).get("deletionTimestamp"):
        problem = "the cluster is being deleted"
        raise InvalidScale(
            f"RayCluster {name!r} is being deleted", problem, None, {WORKERS_FIELD: problem}
        )
    jobs = service.elastic.jobs()
    groups = (raycluster.get("spec") or {}).get("workerGroupSpecs") or []
    if not status.elastic or jobs.enabled is False:
        raise _not_elastic(status, jobs.enabled is False, jobs.detail)
    if len(groups) != 1:
        problem = f"has {len(groups)} worker groups; only a cluster of one group can be scaled"
        raise NotElastic(f"RayCluster {name!r} cannot be scaled here", problem, None, {})
    if target is not None and not status.min_workers <= target <= status.max_workers:
        problem = (
            f"{target} is outside this cluster's range of {status.min_workers} to "
            f"{status.max_workers} workers"
        )
        raise InvalidScale(
            "Invalid number of workers",
            problem,
            "Choose a size within the range; nothing was changed.",
            {WORKERS_FIELD: problem},
        )
    fit = None
    held = status.workers_admitted
    if target is not None and held is not None and target > held:
        fit = _fit_scale_up(service, raycluster, status, held, target)
    operations = _operations(raycluster, status, target, ray_pods(service.session, name))
    if dry_run or not operations:
        [info] = service.infos([found])
        return ScaleResult(info, fit, dry_run, False)
    patched = service.session.patch_raycluster(name, operations)
    service.session.wait_for_ray_cluster(name, str(patched["metadata"]["resourceVersion"]))
    current = service.session.cached_ray_cluster(name) or patched
    [info] = service.infos(service.snapshots([current], fresh=True))
    return ScaleResult(info, fit, False, True)


def _operations(
    raycluster: Object, status: ClusterSnapshot, target: int | None, pods: list[Object]
) -> list[dict[str, Any]]:
    """The JSON patch for the change (empty when there is none)."""
    group = ((raycluster.get("spec") or {}).get("workerGroupSpecs") or [{}])[0]
    path = "/spec/workerGroupSpecs/0"
    annotations = (raycluster.get("metadata") or {}).get("annotations") or {}
    pin_path = f"/metadata/annotations/{_escape(AUTOSCALING_MIN_ANNOTATION)}"
    # The group must still be the one judged: a concurrent change fails the patch (422).
    guard = [{"op": "test", "path": f"{path}/groupName", "value": group.get("groupName")}]
    if target is None:
        if status.pinned_workers is None:
            return []
        return [
            *guard,
            {"op": "replace", "path": f"{path}/minReplicas", "value": status.min_workers},
            {"op": "remove", "path": pin_path},
        ]
    if status.pinned_workers == target and group.get("replicas") == target:
        return []
    operations: list[dict[str, Any]] = [
        *guard,
        {"op": "replace", "path": f"{path}/replicas", "value": target},
        {"op": "replace", "path": f"{path}/minReplicas", "value": target},
    ]
    if AUTOSCALING_MIN_ANNOTATION not in annotations:
        if not annotations:
            operations.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        operations.append({"op": "add", "path": pin_path, "value": str(status.min_workers)})
    remove = _worker_pods_to_remove(pods, target)
    strategy = dict(group.get("scaleStrategy") or {})
    if remove or strategy.get("workersToDelete"):
        strategy["workersToDelete"] = remove
        operations.append({"op": "add", "path": f"{path}/scaleStrategy", "value": strategy})
    return operations


def _fit_scale_up(
    service: ClusterService, raycluster: Object, status: ClusterSnapshot, held: int, target: int
) -> ScaleFit | None:
    """The scale-up's fit in the admitted slice's flavor (None without a worker group)."""
    workers = worker_pod_set(raycluster, 1)
    if workers is None:
        return None
    state = queue_state(service.session)
    queues = {lq.name: lq for lq in state.local_queues}
    local_queue: LocalQueueInfo | None = queues.get(status.queue or "")
    tree = state.quota_tree
    cluster_queue = (
        tree.cluster_queue(status.cluster_queue or local_queue.cluster_queue)
        if tree is not None and local_queue is not None
        else None
    )
    labels = (raycluster.get("metadata") or {}).get("labels") or {}
    priority = priority_value(labels.get(PRIORITY_CLASS_LABEL), state.priority_classes)
    ahead = service.ahead(local_queue, cluster_queue, priority) if local_queue is not None else None
    return assess_scale_up(
        workers,
        held,
        target,
        held_flavors(status.pod_set_flavors, workers.name),
        cluster_queue,
        tree,
        ahead,
        local_queue=local_queue,
        flavors=state.flavors,
    )
