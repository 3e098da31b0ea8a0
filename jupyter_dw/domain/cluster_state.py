"""One state for a Ray cluster, read from KubeRay's RayCluster and Kueue's Workload together.
The Workload's part is :mod:`.kueue_state`. Every read has a default: nothing here raises on a
malformed object. The fields read, per version: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from jupyter_dw.domain import kueue_state as kueue
from jupyter_dw.domain.cluster_snapshot import ClusterSnapshot, ClusterState, Dashboard
from jupyter_dw.domain.kueue_state import (
    AdmissionCheckStatus,
    Outcome,
    WorkloadFacts,
    admission_checks,
    assignments,
    pending_positions,
    preemptor_of,
)
from jupyter_dw.domain.lenient import conditions as _conditions
from jupyter_dw.domain.lenient import integer as _int
from jupyter_dw.domain.lenient import is_true as _is_true
from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.domain.lenient import text as _text
from jupyter_dw.domain.lenient import words as _words
from jupyter_dw.domain.milestones import transition
from jupyter_dw.domain.multikueue import placed_outcome, placement
from jupyter_dw.domain.pod_problems import PodProblem, first_problem
from jupyter_dw.domain.ray_auth import Refusal
from jupyter_dw.domain.slices import ScaleChange, SliceChain, scale_change, slice_chain
from jupyter_dw.domain.stop_record import stop_record
from jupyter_dw.names import (
    AUTOSCALING_MIN_ANNOTATION,
    DASHBOARD_PORT,
    ELASTIC_JOB_ANNOTATION,
    ELASTIC_JOB_SCHEDULING_GATE,
    JOB_UID_LABEL,
    QUEUE_LABEL,
    RAY_NODE_TYPE_LABEL,
    head_service_name,
)

__all__ = [
    "AdmissionCheckStatus",
    "ClusterSnapshot",
    "ClusterState",
    "Dashboard",
    "behind_elastic_gate",
    "cluster_snapshot",
    "live_worker_pods",
    "transition",
    "workload_selector",
]

_HEAD_POD_NOT_FOUND = "HeadPodNotFound"


def workload_selector(raycluster: Mapping[str, Any]) -> str | None:
    """The label selector of the RayCluster's Workload, or None before it has a UID."""
    uid = _text(_map(_map(raycluster).get("metadata")).get("uid"))
    return f"{JOB_UID_LABEL}={uid}" if uid else None


@dataclass(frozen=True, kw_only=True)
class _Facts(WorkloadFacts):
    """Everything the state rules look at, read once from the three inputs: the Workload's
    facts and KubeRay's."""

    suspend: bool
    ray: dict[str, Mapping[str, Any]]
    ray_state: str | None
    ray_reason: str | None
    head_ready: bool
    head_started: bool
    workers_ready: int
    workers_desired: int
    problem: PodProblem | None = None
    workers_admitted: int | None = None
    """An elastic cluster's admitted slice's workers: readiness is judged against these while
    a scale-up waits (the cluster runs at its admitted size)."""
    refusal: Refusal | None = None

    @property
    def running(self) -> bool:
        """Kueue (or the user) let the RayCluster run: KubeRay may create pods."""
        return not self.suspend

    @property
    def ready(self) -> bool:
        wanted = self.workers_desired
        if self.workers_admitted is not None:
            wanted = min(wanted, self.workers_admitted)
        return self.head_ready and self.workers_ready >= wanted


def _worker_sum(spec: Mapping[str, Any], key: str, fallback: str | None = None) -> int:
    """Sum of ``<key> * numOfHosts`` over worker groups not suspended (KubeRay's rule);
    ``fallback`` stands in for a group without ``key``."""
    groups = spec.get("workerGroupSpecs")
    total = 0
    for group in groups if isinstance(groups, list) else []:
        group = _map(group)
        if group.get("suspend") is True:
            continue
        value = _int(group.get(key))
        if value is None and fallback is not None:
            value = _int(group.get(fallback))
        hosts = _int(group.get("numOfHosts")) or 1
        total += max(0, value or 0) * max(1, hosts)
    return total


def _desired_from_spec(spec: Mapping[str, Any]) -> int:
    """Sum of ``replicas * numOfHosts`` over worker groups not suspended (KubeRay's rule)."""
    return _worker_sum(spec, "replicas")


def head_ready(raycluster: Mapping[str, Any]) -> bool:
    """KubeRay says the cluster's head is ready (its ``HeadPodReady`` condition; before that
    condition existed, KubeRay < 1.2, ``status.state`` ``ready`` was the only signal)."""
    condition = _conditions(raycluster).get("HeadPodReady")
    state = _text(_map(raycluster.get("status")).get("state"))
    return _is_true(condition) or (condition is None and state == "ready")


def _read_facts(
    raycluster: Mapping[str, Any],
    workload: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]] = (),
    workers_admitted: int | None = None,
    refusal: Refusal | None = None,
) -> _Facts:
    metadata = _map(raycluster.get("metadata"))
    spec = _map(raycluster.get("spec"))
    status = _map(raycluster.get("status"))
    ray = _conditions(raycluster)
    head = _map(status.get("head"))
    head_condition = ray.get("HeadPodReady")
    ready = head_ready(raycluster)
    head_started = (
        ready
        or _text(head.get("podName")) is not None
        or (head_condition is not None and head_condition.get("reason") != _HEAD_POD_NOT_FOUND)
    )
    desired = _int(status.get("desiredWorkerReplicas"))
    # KubeRay omits zero counts (omitempty), so a missing count is 0 — except desired, which
    # is also missing before KubeRay's first reconcile: then the spec says what is wanted.
    workers_desired = desired if desired is not None else _desired_from_spec(spec)
    wl_spec = _map(_map(workload).get("spec"))
    return _Facts(
        deleting=_text(metadata.get("deletionTimestamp")) is not None,
        suspend=spec.get("suspend") is True,
        ray=ray,
        ray_state=_text(status.get("state")),
        ray_reason=_text(status.get("reason")),
        head_ready=ready,
        head_started=head_started,
        workers_ready=max(0, _int(status.get("readyWorkerReplicas")) or 0),
        workers_desired=max(0, workers_desired),
        has_workload=workload is not None,
        active=wl_spec.get("active") is not False,
        wl=_conditions(workload),
        problem=first_problem(pods),
        checks=admission_checks(workload),
        workers_admitted=workers_admitted,
        refusal=refusal,
    )


# --------------------------------------------------------------------------------------------
# State rules, in order of precedence (KubeRay's here, Kueue's in kueue_state)
# --------------------------------------------------------------------------------------------


def _failed(f: _Facts) -> Outcome | None:
    failure = f.ray.get("ReplicaFailure")
    if _is_true(failure):
        return ("failed", *_words(failure))
    if f.ray_state == "failed":
        return "failed", f.ray_reason, None
    return None


def _refused_by_kuberay(f: _Facts) -> Outcome | None:
    # KubeRay will not reconcile this spec: no pods, no status, whatever Kueue decides. A head
    # or a ready worker means a later spec was accepted, so the event is history.
    if f.refusal is None or f.head_started or f.workers_ready > 0:
        return None
    return "stalled", f.refusal.reason, f.refusal.message


def _ready(f: _Facts) -> Outcome | None:
    return ("ready", None, None) if f.running and f.ready else None


def _stalled(f: _Facts) -> Outcome | None:
    # Let run, not ready, and a pod that will not get there by waiting a few seconds.
    if not f.running or (f.has_workload and not f.admitted) or f.problem is None:
        return None
    return "stalled", f.problem.reason, f.problem.sentence


def _starting(f: _Facts) -> Outcome | None:
    if not f.running or (f.has_workload and not f.admitted):
        return None
    # Admitted clusters are "admitted" until KubeRay has a head pod; one without a Workload
    # (not managed by Kueue) is starting as soon as it runs.
    if f.has_workload and not (f.head_started or f.workers_ready > 0):
        return None
    if not f.head_ready:
        return ("starting", *_words(f.ray.get("HeadPodReady")))
    return ("starting", *_words(f.ray.get("RayClusterProvisioned")))


def _suspended(f: _Facts) -> Outcome | None:
    return "suspended", None, None


def _stopped(f: _Facts) -> Outcome | None:
    # A Ray cluster whose Workload is deactivated (spec.active: false: our Stop, or `kueuectl
    # stop workload`) is stopped, not gone: Kueue evicted it and suspended the RayCluster,
    # KubeRay removed its pods, the quota is free, and the RayCluster with its spec is kept
    # to be resumed. The Workload alone keeps Kueue's word for it, `suspended`.
    outcome = kueue.deactivated(f)
    return ("stopped", outcome[1], outcome[2]) if outcome is not None else None


_RULES: tuple[Callable[[_Facts], Outcome | None], ...] = (
    kueue.deleting,
    _failed,
    kueue.rejected,
    _stopped,
    kueue.reactivated,
    kueue.retrying_check,
    kueue.evicted,
    _refused_by_kuberay,
    _ready,
    _stalled,
    _starting,
    kueue.admitted,
    kueue.waiting_for_capacity,
    kueue.queued,
    _suspended,
)
"""State precedence, first match wins (later states are only reached when no earlier one
applies, so a stale "ready" status never hides an eviction):

1. ``deleting``: ``metadata.deletionTimestamp`` is set;
2. ``failed``: RayCluster ``ReplicaFailure=True`` (or deprecated ``status.state: failed``);
3. ``rejected``: an admission check is ``Rejected`` (e.g. the ProvisioningRequest turned
   ``Failed`` with no retries left), or Kueue deactivated the Workload because of one
   (``Evicted`` reason ``DeactivatedDueToAdmissionCheck``; Kueue then resets the check to
   Pending, so the Evicted message is what names it); ``stopped``: Workload
   ``spec.active: false`` (Kueue evicts it with reason ``Deactivated``, suspends the
   RayCluster and never requeues it; ``stopped`` is the record of who stopped it and why,
   from the RayCluster's annotations); ``queued`` once reactivated (Kueue keeps
   ``Evicted=True``, reason ``Deactivated``, until it reserves quota again);
   ``waiting-for-capacity``: evicted with reason ``AdmissionCheck`` (a check in ``Retry``:
   Kueue requeues it after a backoff);
4. ``preempted``: Workload ``Preempted=True`` or ``Evicted=True`` with reason
   ``Preempted``; ``evicted``: ``Evicted=True`` with another reason (PodsReadyTimeout,
   ClusterQueueStopped, LocalQueueStopped, AdmissionCheck, ...), until Kueue reserves
   quota again;
5. ``stalled``: KubeRay refused the spec (an ``InvalidRayClusterSpec`` or
   ``InvalidRayClusterMetadata`` Warning event; it then makes no pods, no status and no
   token Secret, while Kueue may still admit and hold quota) and no head was ever
   started: reason and message are KubeRay's event's;
   ``ready``: running, head ready and ``readyWorkerReplicas >= desiredWorkerReplicas``;
6. ``stalled``: running, admitted (or not Kueue-managed), not ready, and a pod cannot be
   scheduled, pull its image or stay up (the pod's reason and message);
   ``starting``: running, admitted (or not Kueue-managed) and KubeRay has a head pod;
7. ``admitted``: Workload ``Admitted=True`` but KubeRay has not started the head yet;
8. ``waiting-for-capacity``: quota reserved, admission checks not all Ready (the first
   one that is not, with its state and message); ``queued``: a Workload without
   admission (reason/message from ``QuotaReserved``, or from ``Admitted`` while admission
   checks are pending);
9. ``suspended``: ``spec.suspend: true`` and no Workload yet.
"""


def _state(facts: _Facts) -> tuple[ClusterState, str | None, str | None]:
    for rule in _RULES:
        outcome = rule(facts)
        if outcome is not None:
            state, reason, message = outcome
            return cast(ClusterState, state), reason, message
    raise AssertionError("unreachable: _suspended always matches")  # pragma: no cover


def _dashboard(name: str, raycluster: Mapping[str, Any]) -> Dashboard:
    status = _map(raycluster.get("status"))
    service = _text(_map(status.get("head")).get("serviceName"))
    if service is None:
        # A custom head Service name in the spec wins over KubeRay's default name.
        head_group = _map(_map(raycluster.get("spec")).get("headGroupSpec"))
        custom = _map(_map(head_group.get("headService")).get("metadata"))
        service = _text(custom.get("name")) or head_service_name(name)
    port = _int(_map(status.get("endpoints")).get("dashboard"))
    return Dashboard(service=service, port=port or DASHBOARD_PORT)


def cluster_snapshot(
    raycluster: Mapping[str, Any],
    workload: Mapping[str, Any] | None = None,
    pending: Mapping[str, Any] | None = None,
    pods: Iterable[Mapping[str, Any]] = (),
    slices: Iterable[Mapping[str, Any]] | None = None,
    refusal: Refusal | None = None,
    dispatching: Collection[str] | None = None,
) -> ClusterSnapshot:
    """Derive a cluster's state and details; never raises on missing or malformed fields.

    ``workload`` is the RayCluster's Workload (``workload_selector``) or None if Kueue has not
    made one (or does not manage the cluster); ``slices``, when given, are all its Workloads
    (an elastic cluster's chain of slices, see :func:`slice_chain`) and replace ``workload``:
    the state is then read from the admitted slice, and a scale-up's slice waiting for quota
    is the ``scale`` in flight. ``pending`` is the visibility API's ``pendingworkloads`` item
    of whichever of them waits (the cluster's Workload, or the scale-up's slice).
    ``refusal`` is KubeRay's refusal event of this RayCluster
    (``ray_auth.kuberay_refusal``), if any. ``dispatching``: the AdmissionChecks MultiKueue
    runs, when readable (see :func:`~jupyter_dw.domain.multikueue.placement`); a cluster
    MultiKueue sent to a worker has its state from the status the worker's KubeRay wrote,
    copied back to this RayCluster.

    ``state`` is the first of :data:`_RULES` that matches (see there).
    """
    raycluster = _map(raycluster)
    metadata = _map(raycluster.get("metadata"))
    name = _text(metadata.get("name")) or ""
    labels = _map(metadata.get("labels"))
    pods = list(pods)
    chain = slice_chain(slices if slices is not None else [w for w in (workload,) if w])
    workload = chain.current
    wl_meta = _map(_map(workload).get("metadata"))
    wl_name = _text(wl_meta.get("name")) if workload is not None else None
    size = _size(raycluster)
    elastic = size.elastic
    facts = _read_facts(
        raycluster, workload, pods, chain.workers_admitted if elastic else None, refusal
    )
    if elastic:
        # The spec's replicas now: KubeRay's status lags a scale by a reconcile.
        facts = replace(facts, workers_desired=size.replicas)
    where = placement(workload, dispatching)
    state, reason, message = _state(facts)
    _, reason, message = placed_outcome((state, reason, message), where)
    pod_set_flavors = assignments(workload)
    waiting = facts.has_workload and not facts.quota_reserved
    local, cluster = pending_positions(pending, wl_name) if waiting else (None, None)
    admitted = facts.wl.get("Admitted")
    admission = _map(_map(_map(workload).get("status")).get("admission"))
    return ClusterSnapshot(
        name=name,
        namespace=_text(metadata.get("namespace")),
        queue=_text(labels.get(QUEUE_LABEL))
        or _text(_map(_map(workload).get("spec")).get("queueName")),
        state=state,
        reason=reason,
        message=message,
        created=_text(metadata.get("creationTimestamp")),
        workload=wl_name,
        cluster_queue=_text(admission.get("clusterQueue")),
        quota_reserved=facts.quota_reserved,
        admitted=facts.admitted,
        admitted_at=_text(admitted.get("lastTransitionTime")) if _is_true(admitted) else None,
        flavors=tuple(dict.fromkeys(f for fl in pod_set_flavors.values() for f in fl.values())),
        pod_set_flavors=pod_set_flavors,
        head_ready=facts.head_ready,
        workers_ready=facts.workers_ready,
        workers_desired=facts.workers_desired,
        dashboard=_dashboard(name, raycluster),
        position_in_local_queue=local,
        position_in_cluster_queue=cluster,
        preempted_by=preemptor_of(facts, message) if state == "preempted" else None,
        admission_checks=facts.checks,
        workers_admitted=chain.workers_admitted,
        min_workers=size.min_workers,
        max_workers=size.max_workers,
        elastic=elastic,
        pinned_workers=size.pinned,
        scale=_scale(chain, facts, pods, size, pending) if elastic else None,
        stopped=stop_record(raycluster) if state == "stopped" else None,
        placement=where,
    )


@dataclass(frozen=True)
class _Size:
    """The worker range of a RayCluster and who owns its size."""

    elastic: bool
    replicas: int
    min_workers: int
    max_workers: int
    pinned: int | None


def _size(raycluster: Mapping[str, Any]) -> _Size:
    """Sums over the worker groups not suspended (``numOfHosts`` counted, as KubeRay)."""
    metadata = _map(raycluster.get("metadata"))
    annotations = _map(metadata.get("annotations"))
    spec = _map(raycluster.get("spec"))
    replicas = _worker_sum(spec, "replicas")
    low = _worker_sum(spec, "minReplicas")
    high = _worker_sum(spec, "maxReplicas", fallback="replicas")
    elastic = (
        annotations.get(ELASTIC_JOB_ANNOTATION) == "true"
        and spec.get("enableInTreeAutoscaling") is True
    )
    own_min = _int(annotations.get(AUTOSCALING_MIN_ANNOTATION))
    if elastic and own_min is not None:
        # Pinned: minReplicas was raised to the pin and the cluster's own minimum kept in the
        # annotation. The autoscaler may grow past the pin (replicas > minReplicas): the pin
        # is still minReplicas and the range still the annotation's, or a later scale down
        # would be judged against the pin as if it were the cluster's own range.
        return _Size(elastic, replicas, own_min, high, low)
    return _Size(elastic, replicas, low, high, None)


def live_worker_pods(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The worker pods (KubeRay's ``ray.io/node-type: worker``) not being deleted."""
    return [
        pod
        for pod in pods
        if _map(_map(pod.get("metadata")).get("labels")).get(RAY_NODE_TYPE_LABEL) == "worker"
        and not _text(_map(pod.get("metadata")).get("deletionTimestamp"))
    ]


def behind_elastic_gate(pod_spec: Any) -> bool:
    """Whether a pod spec (a pod's, or a template's) carries Kueue's elastic-job scheduling
    gate: a pod behind it waits for its slice's admission, never ran and holds no quota."""
    gates = _map(pod_spec).get("schedulingGates")
    return any(
        _map(gate).get("name") == ELASTIC_JOB_SCHEDULING_GATE
        for gate in (gates if isinstance(gates, list) else ())
    )


def _running_workers(pods: list[Mapping[str, Any]], desired: int) -> int:
    """The worker pods past Kueue's gate: a gated one is never one a scale-down removes. It
    is also how a scale-up first shows itself: KubeRay makes the new pods (gated) from the
    raised ``replicas``, and the pods' watch may tell of them before the RayCluster's does (a
    CI run saw "scaling down 5 → 4" for a person's 4 → 6 that way). Pods not readable: the
    count is unknown, never a scale-down (``desired``)."""
    if not pods:
        return desired
    return sum(not behind_elastic_gate(pod.get("spec")) for pod in live_worker_pods(pods))


def _scale(
    chain: SliceChain,
    facts: _Facts,
    pods: list[Mapping[str, Any]],
    size: _Size,
    pending: Mapping[str, Any] | None,
) -> ScaleChange | None:
    return scale_change(
        chain,
        workers_desired=facts.workers_desired,
        workers_running=_running_workers(pods, facts.workers_desired),
        workers_ready=facts.workers_ready,
        pinned_workers=size.pinned,
        pending_entry=pending,
    )
