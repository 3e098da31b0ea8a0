"""One state for a Ray cluster, read from KubeRay's RayCluster and Kueue's Workload together.

Inputs are the JSON dicts the API server returns: the ``ray.io/v1`` RayCluster, its Workload
(label ``kueue.x-k8s.io/job-uid=<RayCluster uid>``; ``kueue.x-k8s.io/v1beta1`` or ``v1beta2``,
whose status fields used here are the same) and optionally its entry from the visibility API's
``pendingworkloads``. Any status field may be missing — a fresh object has no status, KubeRay
omits zero counts, a queued cluster has no head — so every read has a default and nothing here
raises on a malformed object.

Field names checked against the CRDs of Kueue v0.19.2 and KubeRay v1.6.2 (what the tests run):

- Workload: ``status.conditions`` of type ``QuotaReserved``, ``Admitted``, ``Evicted``,
  ``Preempted``; ``status.admission{clusterQueue, podSetAssignments[{name, flavors}]}``;
  ``spec.active``. Kueue resets ``Evicted``/``Preempted`` to False (reason ``QuotaReserved``)
  when it reserves quota again (``workload.SetQuotaReservation``), so ``Evicted=True`` means
  "evicted and not re-admitted yet".
- RayCluster: ``spec.suspend``; ``status.readyWorkerReplicas``, ``desiredWorkerReplicas``,
  ``head{podName, serviceName}``, ``endpoints``, ``state`` (deprecated) and conditions
  ``HeadPodReady``, ``RayClusterProvisioned``, ``ReplicaFailure``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeGuard, cast

from jupyter_dw.domain.pod_problems import PodProblem, first_problem
from jupyter_dw.domain.priorities import PreemptedBy, preemptor
from jupyter_dw.domain.ray_auth import Refusal
from jupyter_dw.domain.slices import ScaleChange, SliceChain, scale_change, slice_chain
from jupyter_dw.names import (
    AUTOSCALING_MIN_ANNOTATION,
    DASHBOARD_PORT,
    ELASTIC_JOB_ANNOTATION,
    JOB_UID_LABEL,
    QUEUE_LABEL,
    RAY_NODE_TYPE_LABEL,
    head_service_name,
)

ClusterState = Literal[
    "queued",
    "waiting-for-capacity",
    "admitted",
    "starting",
    "stalled",
    "ready",
    "evicted",
    "preempted",
    "suspended",
    "failed",
    "rejected",
    "deleting",
]

CheckState = Literal["Pending", "Ready", "Retry", "Rejected"]
CHECK_READY = "Ready"
CHECK_REJECTED = "Rejected"

# Kueue's Evicted reason when spec.active is set to false ("InactiveWorkload" before v0.9).
_DEACTIVATED_REASONS = frozenset({"Deactivated", "InactiveWorkload"})
_PREEMPTED_REASON = "Preempted"
# Kueue's eviction reason for admission checks (WorkloadEvictedByAdmissionCheck): a Retry check
# evicts with it (the workload is requeued); a Rejected one deactivates the workload, and the
# Evicted reason becomes "DeactivatedDueToAdmissionCheck" (Kueue >= 0.15, ReasonWithCause).
_ADMISSION_CHECK_REASON = "AdmissionCheck"
_DEACTIVATED_BY_CHECK = "DeactivatedDueToAdmissionCheck"
_HEAD_POD_NOT_FOUND = "HeadPodNotFound"


# --------------------------------------------------------------------------------------------
# Lenient readers: status is written by controllers and may be partial at any moment
# --------------------------------------------------------------------------------------------


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _conditions(obj: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """``status.conditions`` by type (the last one wins if a type repeats)."""
    raw = _map(_map(obj).get("status")).get("conditions")
    if not isinstance(raw, list):
        return {}
    return {c["type"]: c for c in raw if isinstance(c, Mapping) and isinstance(c.get("type"), str)}


def _is_true(condition: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    return condition is not None and condition.get("status") == "True"


def workload_selector(raycluster: Mapping[str, Any]) -> str | None:
    """The label selector of the RayCluster's Workload, or None before it has a UID."""
    uid = _text(_map(_map(raycluster).get("metadata")).get("uid"))
    return f"{JOB_UID_LABEL}={uid}" if uid else None


# --------------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dashboard:
    """Where the Ray dashboard listens: a Service of the cluster's namespace and a port."""

    service: str
    port: int = DASHBOARD_PORT

    def to_json(self) -> dict[str, Any]:
        """``{"service": ..., "port": ...}``."""
        return {"service": self.service, "port": self.port}


@dataclass(frozen=True)
class AdmissionCheckStatus:
    """One entry of the Workload's ``status.admissionChecks``: an AdmissionCheck's ``state``
    (Pending, Ready, Retry, Rejected), the controller's ``message`` (for the provisioning check:
    the cluster autoscaler's words from the ProvisioningRequest) and ``lastTransitionTime``."""

    name: str
    state: str
    message: str | None = None
    time: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"name", "state", "message", "time"}``."""
        return {"name": self.name, "state": self.state, "message": self.message, "time": self.time}


def admission_checks(workload: Mapping[str, Any] | None) -> tuple[AdmissionCheckStatus, ...]:
    """The Workload's ``status.admissionChecks`` in the order Kueue lists them."""
    raw = _map(_map(workload).get("status")).get("admissionChecks")
    return tuple(
        AdmissionCheckStatus(
            name=_text(check.get("name")) or "",
            state=_text(check.get("state")) or "Pending",
            message=_text(check.get("message")),
            time=_text(check.get("lastTransitionTime")),
        )
        for check in (raw if isinstance(raw, list) else [])
        if isinstance(check, Mapping) and _text(check.get("name"))
    )


@dataclass(frozen=True)
class ClusterSnapshot:
    """What a user needs to know about one Ray cluster now, from Kueue and KubeRay together:
    one observation (the notebook's ``dw.ClusterStatus`` widget shows them as they change).

    ``state`` follows a fixed precedence (first match wins) — see ``cluster_status``.
    ``reason``/``message`` are the controllers' own words for that state (Kueue's for
    queued/admitted/evicted/preempted/suspended-by-deactivation, KubeRay's for
    starting/failed); None when they gave none. ``quota_reserved``/``admitted`` are the
    Workload's ``QuotaReserved``/``Admitted`` conditions. ``flavors`` lists the flavors
    assigned (first-seen order); ``pod_set_flavors`` maps PodSet → resource → flavor.
    Positions are Kueue's 0-based ``positionInLocalQueue``/``positionInClusterQueue``, set only
    while the Workload waits for quota. Times are RFC 3339 strings as the API gives them.
    """

    name: str
    namespace: str | None
    queue: str | None
    state: ClusterState
    reason: str | None
    message: str | None
    created: str | None
    workload: str | None
    cluster_queue: str | None
    quota_reserved: bool
    admitted: bool
    admitted_at: str | None
    flavors: tuple[str, ...]
    pod_set_flavors: Mapping[str, Mapping[str, str]]
    head_ready: bool
    workers_ready: int
    workers_desired: int
    dashboard: Dashboard
    position_in_local_queue: int | None = None
    position_in_cluster_queue: int | None = None
    preempted_by: PreemptedBy | None = None
    """While ``preempted``: the workload Kueue named as the preemptor (``name`` is filled in
    by the caller, who can look the job UID up among the namespace's RayClusters)."""
    admission_checks: tuple[AdmissionCheckStatus, ...] = ()
    """The Workload's admission checks (e.g. the ProvisioningRequest check asking the cluster
    autoscaler for nodes); empty when its ClusterQueue requires none."""
    workers_admitted: int | None = None
    """Workers whose quota Kueue holds now: the admitted slice's worker pod-set count (None
    before the first admission, or without a Workload)."""
    min_workers: int = 0
    """The worker range the Ray autoscaler may use (the cluster's own, also while pinned)."""
    max_workers: int = 0
    elastic: bool = False
    """An elastic job (annotation ``kueue.x-k8s.io/elastic-job: "true"`` and the Ray
    autoscaler on): Kueue admits its changes of size as Workload slices."""
    pinned_workers: int | None = None
    """A person pinned the size at this many workers (``minReplicas`` = ``replicas``); None
    while the Ray autoscaler owns it."""
    scale: ScaleChange | None = None
    """A change of size in flight (elastic clusters only)."""

    @property
    def capacity_provisioned(self) -> bool:
        """Every admission check is Ready (False when there are none)."""
        return bool(self.admission_checks) and all(
            c.state == CHECK_READY for c in self.admission_checks
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON shape the REST API and the events stream share."""
        return {
            "name": self.name,
            "namespace": self.namespace,
            "queue": self.queue,
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "created": self.created,
            "workload": self.workload,
            "cluster_queue": self.cluster_queue,
            "quota_reserved": self.quota_reserved,
            "admitted": self.admitted,
            "admitted_at": self.admitted_at,
            "flavors": list(self.flavors),
            "pod_set_flavors": {ps: dict(f) for ps, f in self.pod_set_flavors.items()},
            "head_ready": self.head_ready,
            "workers_ready": self.workers_ready,
            "workers_desired": self.workers_desired,
            "dashboard": self.dashboard.to_json(),
            "position_in_local_queue": self.position_in_local_queue,
            "position_in_cluster_queue": self.position_in_cluster_queue,
            "preempted_by": self.preempted_by.to_json() if self.preempted_by else None,
            "admission_checks": [c.to_json() for c in self.admission_checks],
            "workers_admitted": self.workers_admitted,
            "min_workers": self.min_workers,
            "max_workers": self.max_workers,
            "elastic": self.elastic,
            "pinned_workers": self.pinned_workers,
            "scale": self.scale.to_json() if self.scale else None,
        }


# --------------------------------------------------------------------------------------------
# Facts read from the objects
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Facts:
    """Everything the state rules look at, read once from the three inputs."""

    deleting: bool
    suspend: bool
    ray: dict[str, Mapping[str, Any]]
    ray_state: str | None
    ray_reason: str | None
    head_ready: bool
    head_started: bool
    workers_ready: int
    workers_desired: int
    has_workload: bool
    active: bool
    wl: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    problem: PodProblem | None = None
    checks: tuple[AdmissionCheckStatus, ...] = ()
    workers_admitted: int | None = None
    """An elastic cluster's admitted slice's workers: readiness is judged against these while
    a scale-up waits (the cluster runs at its admitted size)."""
    refusal: Refusal | None = None

    @property
    def running(self) -> bool:
        """Kueue (or the user) let the RayCluster run: KubeRay may create pods."""
        return not self.suspend

    @property
    def quota_reserved(self) -> bool:
        return _is_true(self.wl.get("QuotaReserved"))

    @property
    def admitted(self) -> bool:
        return _is_true(self.wl.get("Admitted"))

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
    ray_state = _text(status.get("state"))
    # Before the HeadPodReady condition existed (KubeRay < 1.2) "ready" was the only signal.
    head_ready = _is_true(head_condition) or (head_condition is None and ray_state == "ready")
    head_started = (
        head_ready
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
        ray_state=ray_state,
        ray_reason=_text(status.get("reason")),
        head_ready=head_ready,
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
# State rules, in order of precedence
# --------------------------------------------------------------------------------------------

_Outcome = tuple[ClusterState, str | None, str | None]
"""``(state, reason, message)``."""


def _words(condition: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    if condition is None:
        return None, None
    return _text(condition.get("reason")), _text(condition.get("message"))


def _deleting(f: _Facts) -> _Outcome | None:
    return ("deleting", None, None) if f.deleting else None


def _failed(f: _Facts) -> _Outcome | None:
    failure = f.ray.get("ReplicaFailure")
    if _is_true(failure):
        return ("failed", *_words(failure))
    if f.ray_state == "failed":
        return "failed", f.ray_reason, None
    return None


def _rejected(f: _Facts) -> _Outcome | None:
    # A Rejected check makes Kueue deactivate the workload (it is never retried); say which
    # check refused and why rather than "suspended".
    rejected = next((c for c in f.checks if c.state == CHECK_REJECTED), None)
    evicted = f.wl.get("Evicted")
    reason, message = _words(evicted) if _is_true(evicted) else (None, None)
    if rejected is not None:
        # Seen before Kueue deactivates the workload: the check's own state and words.
        why = f"admission check {rejected.name} rejected the workload"
        return (
            "rejected",
            reason or CHECK_REJECTED,
            (f"{why}: {rejected.message}" if rejected.message else why),
        )
    if reason == _DEACTIVATED_BY_CHECK:
        return "rejected", reason, message
    # Between Kueue's two steps: the deactivation is decided (DeactivationTarget) but the
    # check was already reset.
    target = f.wl.get("DeactivationTarget")
    if _is_true(target) and _words(target)[0] == _ADMISSION_CHECK_REASON:
        return ("rejected", *_words(target))
    return None


def _retrying_check(f: _Facts) -> _Outcome | None:
    # A Retry check evicts the workload (reason AdmissionCheck) and Kueue requeues it after a
    # backoff: it is still waiting for capacity, not evicted for good.
    evicted = f.wl.get("Evicted")
    if f.active and _is_true(evicted) and _words(evicted)[0] == _ADMISSION_CHECK_REASON:
        return ("waiting-for-capacity", *_words(evicted))
    return None


def _deactivated(f: _Facts) -> _Outcome | None:
    # Kueue evicts a deactivated Workload (reason Deactivated) but never requeues it: it stays
    # off until someone sets spec.active=true, which is a suspension, not an eviction.
    evicted = f.wl.get("Evicted")
    by_reason = _is_true(evicted) and _words(evicted)[0] in _DEACTIVATED_REASONS
    if f.has_workload and (not f.active or by_reason):
        reason, message = _words(evicted) if _is_true(evicted) else ("Deactivated", None)
        return "suspended", reason, message
    return None


def _evicted(f: _Facts) -> _Outcome | None:
    evicted, preempted = f.wl.get("Evicted"), f.wl.get("Preempted")
    if _is_true(preempted):
        # The Preempted condition carries the finer reason (InClusterQueue, InCohort...).
        return ("preempted", *_words(preempted))
    if _is_true(evicted):
        reason, message = _words(evicted)
        return ("preempted" if reason == _PREEMPTED_REASON else "evicted"), reason, message
    return None


def _refused_by_kuberay(f: _Facts) -> _Outcome | None:
    # KubeRay will not reconcile this spec: no pods, no status, whatever Kueue decides. A head
    # or a ready worker means a later spec was accepted, so the event is history.
    if f.refusal is None or f.head_started or f.workers_ready > 0:
        return None
    return "stalled", f.refusal.reason, f.refusal.message


def _ready(f: _Facts) -> _Outcome | None:
    return ("ready", None, None) if f.running and f.ready else None


def _stalled(f: _Facts) -> _Outcome | None:
    # Let run, not ready, and a pod that will not get there by waiting a few seconds.
    if not f.running or (f.has_workload and not f.admitted) or f.problem is None:
        return None
    return "stalled", f.problem.reason, f.problem.sentence


def _starting(f: _Facts) -> _Outcome | None:
    if not f.running or (f.has_workload and not f.admitted):
        return None
    # Admitted clusters are "admitted" until KubeRay has a head pod; one without a Workload
    # (not managed by Kueue) is starting as soon as it runs.
    if f.has_workload and not (f.head_started or f.workers_ready > 0):
        return None
    if not f.head_ready:
        return ("starting", *_words(f.ray.get("HeadPodReady")))
    return ("starting", *_words(f.ray.get("RayClusterProvisioned")))


def _admitted(f: _Facts) -> _Outcome | None:
    return ("admitted", *_words(f.wl.get("Admitted"))) if f.admitted else None


def _waiting_for_capacity(f: _Facts) -> _Outcome | None:
    # Quota reserved, admission checks not all Ready yet: Kueue's Admitted=False says which.
    if not (f.has_workload and f.quota_reserved and not f.admitted and f.checks):
        return None
    reason, message = _words(f.wl.get("Admitted"))
    waiting = [c for c in f.checks if c.state != CHECK_READY]
    if waiting:
        first = waiting[0]
        message = f"admission check {first.name} is {first.state}" + (
            f": {first.message}" if first.message else ""
        )
    return "waiting-for-capacity", reason, message


def _queued(f: _Facts) -> _Outcome | None:
    if not f.has_workload:
        return None
    reserved = f.wl.get("QuotaReserved")
    # Quota reserved but not admitted: admission checks pending; Admitted says which.
    condition = f.wl.get("Admitted") if _is_true(reserved) else reserved
    return ("queued", *_words(condition))


def _suspended(f: _Facts) -> _Outcome | None:
    return "suspended", None, None


_RULES: tuple[Callable[[_Facts], _Outcome | None], ...] = (
    _deleting,
    _failed,
    _rejected,
    _deactivated,
    _retrying_check,
    _evicted,
    _refused_by_kuberay,
    _ready,
    _stalled,
    _starting,
    _admitted,
    _waiting_for_capacity,
    _queued,
    _suspended,
)


def _state(facts: _Facts) -> _Outcome:
    for rule in _RULES:
        outcome = rule(facts)
        if outcome is not None:
            return outcome
    raise AssertionError("unreachable: _suspended always matches")  # pragma: no cover


WorkloadState = Literal[
    "queued",
    "waiting-for-capacity",
    "admitted",
    "evicted",
    "preempted",
    "suspended",
    "rejected",
    "finished",
    "deleting",
]
"""A Workload's own state, whatever its job: the Kueue part of :data:`ClusterState` (the same
words mean the same) plus ``finished``. What the job's pods do is not a Workload's to say."""

_KUEUE_RULES: tuple[Callable[[_Facts], _Outcome | None], ...] = (
    _deleting,
    _rejected,
    _deactivated,
    _retrying_check,
    _evicted,
    _admitted,
    _waiting_for_capacity,
    _queued,
)
"""The rules of :data:`_RULES` that read only the Workload, in the same precedence."""


@dataclass(frozen=True)
class KueueState:
    """A Workload's state by the cluster rules that read only Kueue (see ``kueue_state``)."""

    state: WorkloadState
    reason: str | None
    message: str | None
    preempted_by: PreemptedBy | None = None


def kueue_state(workload: Mapping[str, Any]) -> KueueState:
    """The state of any Kueue Workload, by the same rules (and precedence) as a cluster's
    Kueue states: ``deleting``; ``finished`` (``Finished=True``: Kueue released its quota;
    Kueue's reason, e.g. ``Succeeded``, and message); ``rejected``; ``suspended``
    (deactivated); ``waiting-for-capacity`` (an admission check in Retry, or quota reserved
    with checks not Ready); ``preempted``/``evicted``; ``admitted``; ``queued`` (Kueue's
    ``QuotaReserved=False`` reason and message). Never raises on a partial object."""
    workload = _map(workload)
    metadata = _map(workload.get("metadata"))
    conditions = _conditions(workload)
    facts = _Facts(
        deleting=_text(metadata.get("deletionTimestamp")) is not None,
        suspend=True,
        ray={},
        ray_state=None,
        ray_reason=None,
        head_ready=False,
        head_started=False,
        workers_ready=0,
        workers_desired=0,
        has_workload=True,
        active=_map(workload.get("spec")).get("active") is not False,
        wl=conditions,
        checks=admission_checks(workload),
    )
    if not facts.deleting and _is_true(conditions.get("Finished")):
        return KueueState("finished", *_words(conditions.get("Finished")))
    for rule in _KUEUE_RULES:
        outcome = rule(facts)
        if outcome is not None:
            state, reason, message = outcome
            preempted = _preempted_by(facts, message) if state == "preempted" else None
            return KueueState(cast(WorkloadState, state), reason, message, preempted)
    raise AssertionError("unreachable: _queued matches every Workload")  # pragma: no cover


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def _assignments(workload: Mapping[str, Any] | None) -> dict[str, dict[str, str]]:
    admission = _map(_map(_map(workload).get("status")).get("admission"))
    raw = admission.get("podSetAssignments")
    out: dict[str, dict[str, str]] = {}
    for assignment in raw if isinstance(raw, list) else []:
        assignment = _map(assignment)
        flavors = {
            str(resource): flavor
            for resource, flavor in _map(assignment.get("flavors")).items()
            if isinstance(flavor, str)
        }
        out[_text(assignment.get("name")) or "main"] = flavors
    return out


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


def pending_positions(
    pending: Mapping[str, Any] | None, workload_name: str | None
) -> tuple[int | None, int | None]:
    """``(positionInLocalQueue, positionInClusterQueue)`` of a visibility API item, if it is
    ``workload_name``'s."""
    entry = _map(pending)
    # Ignore an entry that names another Workload rather than show someone else's place.
    entry_name = _text(_map(entry.get("metadata")).get("name"))
    if entry_name is not None and workload_name is not None and entry_name != workload_name:
        return None, None
    return _int(entry.get("positionInLocalQueue")), _int(entry.get("positionInClusterQueue"))


def cluster_status(
    raycluster: Mapping[str, Any],
    workload: Mapping[str, Any] | None = None,
    pending: Mapping[str, Any] | None = None,
    pods: Iterable[Mapping[str, Any]] = (),
    slices: Iterable[Mapping[str, Any]] | None = None,
    refusal: Refusal | None = None,
) -> ClusterSnapshot:
    """Derive a cluster's state and details; never raises on missing or malformed fields.

    ``workload`` is the RayCluster's Workload (``workload_selector``) or None if Kueue has not
    made one (or does not manage the cluster); ``slices``, when given, are all its Workloads
    (an elastic cluster's chain of slices, see :func:`slice_chain`) and replace ``workload``:
    the state is then read from the admitted slice, and a scale-up's slice waiting for quota
    is the ``scale`` in flight. ``pending`` is the visibility API's ``pendingworkloads`` item
    of whichever of them waits (the cluster's Workload, or the scale-up's slice).
    ``refusal`` is KubeRay's refusal event of this RayCluster
    (``ray_auth.kuberay_refusal``), if any.

    State precedence, first match wins (later states are only reached when no earlier one
    applies, so a stale "ready" status never hides an eviction):

    1. ``deleting``: ``metadata.deletionTimestamp`` is set;
    2. ``failed``: RayCluster ``ReplicaFailure=True`` (or deprecated ``status.state: failed``);
    3. ``rejected``: an admission check is ``Rejected`` (e.g. the ProvisioningRequest turned
       ``Failed`` with no retries left), or Kueue deactivated the Workload because of one
       (``Evicted`` reason ``DeactivatedDueToAdmissionCheck``; Kueue then resets the check to
       Pending, so the Evicted message is what names it); ``suspended`` by deactivation:
       Workload ``spec.active: false`` (Kueue evicts it with reason ``Deactivated`` and never
       requeues it); ``waiting-for-capacity``: evicted with reason ``AdmissionCheck`` (a check
       in ``Retry``: Kueue requeues it after a backoff);
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
    state, reason, message = _state(facts)
    pod_set_flavors = _assignments(workload)
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
        preempted_by=_preempted_by(facts, message) if state == "preempted" else None,
        admission_checks=facts.checks,
        workers_admitted=chain.workers_admitted,
        min_workers=size.min_workers,
        max_workers=size.max_workers,
        elastic=elastic,
        pinned_workers=size.pinned,
        scale=_scale(chain, facts, pods, size, pending) if elastic else None,
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
    if elastic and own_min is not None and low == replicas:
        # Pinned: minReplicas was raised to the pin; the user's own minimum is the annotation.
        return _Size(elastic, replicas, own_min, high, replicas)
    return _Size(elastic, replicas, low, high, None)


def live_worker_pods(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The worker pods (KubeRay's ``ray.io/node-type: worker``) not being deleted."""
    return [
        pod
        for pod in pods
        if _map(_map(pod.get("metadata")).get("labels")).get(RAY_NODE_TYPE_LABEL) == "worker"
        and not _text(_map(pod.get("metadata")).get("deletionTimestamp"))
    ]


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
        # Pods not readable: the running count is unknown, never a scale-down.
        workers_running=len(live_worker_pods(pods)) if pods else facts.workers_desired,
        workers_ready=facts.workers_ready,
        pinned_workers=size.pinned,
        pending_entry=pending,
    )


def _preempted_by(facts: _Facts, message: str | None) -> PreemptedBy | None:
    """The preemptor named in the state's message, else in the Preempted or Evicted one."""
    for text in (message, *(_words(facts.wl.get(t))[1] for t in ("Preempted", "Evicted"))):
        found = preemptor(text)
        if found is not None:
            return found
    return None


# States announced when entered; the progress milestones cover the others.
_ENTRY_EVENTS: dict[str, str] = {
    "evicted": "Evicted",
    "preempted": "Preempted",
    "failed": "Failed",
    "rejected": "Rejected",
    "suspended": "Suspended",
    "deleting": "Deleting",
}


def transition(old: ClusterSnapshot | None, new: ClusterSnapshot) -> list[str]:
    """The milestones crossed going from ``old`` to ``new``, in the order they happen.

    Progress milestones, always in this order: ``Queued`` (entering the queue),
    ``QuotaReserved``, ``WaitingForCapacity`` (entering that state), ``CapacityProvisioned``
    (every admission check Ready), ``Admitted``, ``HeadReady``, ``WorkerReady:<n>`` for each
    newly ready worker count n, ``Ready``. Then the state entered, if it is one of
    ``Evicted``, ``Preempted``, ``Failed``, ``Rejected``, ``Suspended``, ``Deleting``; then
    ``QuotaReleased`` if the reservation was lost; then an elastic cluster's
    ``ScaleRequested:<n>``, ``ScaleAdmitted:<n>``, ``ScaledTo:<n>``. ``old`` None means
    nothing was known: every
    milestone already reached is reported, so skipped observations never hide a step or
    reorder them.
    """
    was_state = old.state if old is not None else None
    events: list[str] = []
    if new.state == "queued" and was_state != "queued":
        events.append("Queued")
    if new.quota_reserved and not (old is not None and old.quota_reserved):
        events.append("QuotaReserved")
    if new.state == "waiting-for-capacity" and was_state != "waiting-for-capacity":
        events.append("WaitingForCapacity")
    if new.capacity_provisioned and not (old is not None and old.capacity_provisioned):
        events.append("CapacityProvisioned")
    if new.admitted and not (old is not None and old.admitted):
        events.append("Admitted")
    if new.head_ready and not (old is not None and old.head_ready):
        events.append("HeadReady")
    ready_before = old.workers_ready if old is not None else 0
    events.extend(f"WorkerReady:{n}" for n in range(ready_before + 1, new.workers_ready + 1))
    if new.state == "ready" and was_state != "ready":
        events.append("Ready")
    if new.state in _ENTRY_EVENTS and was_state != new.state:
        events.append(_ENTRY_EVENTS[new.state])
    if old is not None and old.quota_reserved and not new.quota_reserved:
        events.append("QuotaReleased")
    events.extend(_scale_events(old, new))
    return events


def _scale_events(old: ClusterSnapshot | None, new: ClusterSnapshot) -> list[str]:
    """``ScaleRequested:<n>`` when a change to n workers appears, ``ScaleAdmitted:<n>`` when
    the admitted slice grows to n, ``ScaledTo:<n>`` when a change is over at n ready.

    A viewer may not see every step (a quick scale-down is over before its change is read),
    so a change of the asked or admitted size counts as a change even unseen."""
    if old is None or not new.elastic:
        return [f"ScaleRequested:{new.scale.to_workers}"] if new.scale is not None else []
    events: list[str] = []
    before = old.scale
    resized = old.workers_admitted is not None and (
        old.workers_desired != new.workers_desired or old.workers_admitted != new.workers_admitted
    )
    if new.scale is not None and (before is None or before.to_workers != new.scale.to_workers):
        events.append(f"ScaleRequested:{new.scale.to_workers}")
    elif (
        new.scale is None
        and before is None
        and resized
        and old.workers_desired != new.workers_desired
    ):
        events.append(f"ScaleRequested:{new.workers_desired}")
    if (
        new.workers_admitted is not None
        and old.workers_admitted is not None
        and new.workers_admitted > old.workers_admitted
    ):
        events.append(f"ScaleAdmitted:{new.workers_admitted}")
    if new.scale is None and new.state == "ready" and (before is not None or resized):
        events.append(f"ScaledTo:{new.workers_ready}")
    return events
