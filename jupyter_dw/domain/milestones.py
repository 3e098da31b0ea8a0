"""When a Ray cluster passed each step, from the controllers' own timestamps.

Every surface draws the same timeline from this one list: ``Submitted`` (the RayCluster's
``creationTimestamp``), ``QuotaReserved`` (the Workload's condition), ``CapacityProvisioned``
(every admission check Ready, e.g. the cluster autoscaler provisioned the nodes a
ProvisioningRequest asked for; only when the ClusterQueue requires checks), ``Admitted``,
``HeadReady`` (KubeRay's ``HeadPodReady`` condition, else the head pod's ``Ready``),
``WorkerReady:<n>`` (the n-th worker pod to turn ``Ready``, by its condition's time), ``Ready``
(when the last of those happened, once the cluster is ready), then ``Evicted``/``Preempted``
and ``Deleting`` when they apply. Times are the RFC 3339 strings the API server wrote; a
milestone reached with no time recorded has ``time`` None. Names are the ones
:func:`jupyter_dw.domain.cluster_state.transition` reports on the events socket.

Pure: the inputs are API objects as dicts; nothing here raises on a malformed one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_dw.domain.cluster_state import ClusterStatus
from jupyter_dw.names import RAY_NODE_TYPE_LABEL


@dataclass(frozen=True)
class Milestone:
    """One step of a cluster's life and when it happened (RFC 3339, None if unrecorded)."""

    name: str
    time: str | None

    def to_json(self) -> dict[str, str | None]:
        """``{"name", "time"}``."""
        return {"name": self.name, "time": self.time}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _true_since(obj: Mapping[str, Any] | None, kind: str) -> tuple[bool, str | None]:
    """Whether condition ``kind`` is True, and since when."""
    for condition in _map(_map(obj).get("status")).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            if condition.get("status") == "True":
                return True, _text(condition.get("lastTransitionTime"))
            return False, None
    return False, None


def _ready_times(pods: Iterable[Mapping[str, Any]], role: str) -> list[str | None]:
    """Since when each ready pod of ``role`` is ready, oldest first (unknown times last)."""
    times = []
    for pod in pods:
        labels = _map(_map(pod.get("metadata")).get("labels"))
        if labels.get(RAY_NODE_TYPE_LABEL) != role:
            continue
        ready, since = _true_since(pod, "Ready")
        if ready:
            times.append(since)
    return sorted(times, key=lambda t: (t is None, t or ""))


def milestones(
    status: ClusterStatus,
    raycluster: Mapping[str, Any],
    workload: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]] = (),
) -> tuple[Milestone, ...]:
    """The steps ``status`` shows the cluster has passed, in the order they happen."""
    pods = list(pods)
    steps = [Milestone("Submitted", status.created)]
    reserved, reserved_at = _true_since(workload, "QuotaReserved")
    if reserved:
        steps.append(Milestone("QuotaReserved", reserved_at))
    admitted, admitted_at = _true_since(workload, "Admitted")
    if status.capacity_provisioned:
        # Kueue admits the moment the last check turns Ready, and a check's own
        # lastTransitionTime may predate its last state change: Admitted's time is the one.
        checks = [c.time for c in status.admission_checks if c.time]
        steps.append(
            Milestone("CapacityProvisioned", admitted_at if admitted else max(checks, default=None))
        )
    if admitted:
        steps.append(Milestone("Admitted", admitted_at))
    head_times: list[str | None] = []
    if status.head_ready:
        reached, since = _true_since(raycluster, "HeadPodReady")
        head_times = [since] if reached and since else _ready_times(pods, "head")[:1] or [None]
        steps.append(Milestone("HeadReady", head_times[0]))
    worker_times = _ready_times(pods, "worker")
    # KubeRay's count decides how many are ready; pod times say when (the cache may lag).
    worker_times += [None] * (status.workers_ready - len(worker_times))
    worker_times = worker_times[: status.workers_ready]
    steps += [Milestone(f"WorkerReady:{n}", t) for n, t in enumerate(worker_times, 1)]
    if status.state == "ready":
        known = [t for t in [*head_times, *worker_times] if t]
        steps.append(Milestone("Ready", max(known) if known else None))
    if status.state in ("evicted", "preempted"):
        # Kueue may mark a preemption on Evicted alone (reason Preempted).
        reached, since = _true_since(workload, "Preempted")
        if status.state == "evicted" or not reached:
            since = _true_since(workload, "Evicted")[1]
        steps.append(Milestone(status.state.capitalize(), since))
    if status.state == "deleting":
        deleted = _text(_map(raycluster.get("metadata")).get("deletionTimestamp"))
        steps.append(Milestone("Deleting", deleted))
    return tuple(steps)
