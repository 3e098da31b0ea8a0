"""Every Kueue Workload of a namespace, whatever job owns it, as one :class:`WorkloadInfo`.
Its owner, queue, priority, state (the clusters' words), and what it holds and asks for, counted
as Kueue counts. Pure. The fields read, per Kueue version: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from jupyter_dw.domain.json_decode import decode_fields, decode_key
from jupyter_dw.domain.kueue_state import WorkloadState, kueue_state, pending_positions
from jupyter_dw.domain.kueue_words import Summarized
from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.domain.lenient import text as _text
from jupyter_dw.domain.multikueue import Placement, placed_outcome, placement
from jupyter_dw.domain.priorities import PreemptedBy
from jupyter_dw.domain.quantity import QuantityError, parse_quantity
from jupyter_dw.domain.quota import format_amount, kueue_amount
from jupyter_dw.domain.slices import condition, is_true, true_since, words
from jupyter_dw.domain.validation import dns1123_subdomain_error
from jupyter_dw.names import (
    OWNER_ANNOTATION,
    QUEUE_LABEL,
    WORKLOAD_SLICE_REPLACED_REASON,
    qualified,
)

_ZERO = Decimal(0)

Object = Mapping[str, Any]
Amounts = dict[str, Decimal]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _amount(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        return None
    try:
        return parse_quantity(value)
    except (QuantityError, ValueError, ArithmeticError):
        return None


# --------------------------------------------------------------------------------------------
# Who owns it, and how a kind is named
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Owner:
    """The job a Workload was made for: its controller ``ownerReference``. ``api_group`` is
    ``""`` for the core group (a Pod)."""

    kind: str
    api_group: str
    name: str

    def to_json(self) -> dict[str, str]:
        """``{"kind", "api_group", "name"}``."""
        return {"kind": self.kind, "api_group": self.api_group, "name": self.name}

    @property
    def kind_group(self) -> str:
        """``Kind.group`` as the ``kind`` filter spells it (``Job.batch``, ``Pod``)."""
        return qualified(self.kind, self.api_group)


def owner_of(workload: Object) -> Owner | None:
    """The ``ownerReference`` with ``controller: true`` (None when there is none)."""
    for ref in _list(_map(_map(workload).get("metadata")).get("ownerReferences")):
        ref = _map(ref)
        kind, name = _text(ref.get("kind")), _text(ref.get("name"))
        if ref.get("controller") is True and kind and name:
            api_version = _text(ref.get("apiVersion")) or ""
            group = api_version.rpartition("/")[0]
            return Owner(kind, group, name)
    return None


_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")
KIND_FILTER_PROBLEM = (
    "must be Kind.group, a kind with its API group as kubectl spells it "
    "(Job.batch, RayCluster.ray.io; a core kind alone: Pod)"
)


def kind_filter_problem(value: str) -> str | None:
    """Why ``value`` cannot be a ``Kind.group`` filter, or None when it can."""
    kind, dot, group = value.partition(".")
    if not _KIND.fullmatch(kind) or (dot and dns1123_subdomain_error(group) is not None):
        return f"{KIND_FILTER_PROBLEM}; got {value!r}"
    return None


def queue_filter_problem(value: str) -> str | None:
    """Why ``value`` cannot name a LocalQueue, or None when it can."""
    problem = dns1123_subdomain_error(value)
    return f"a LocalQueue name {problem}" if problem else None


# --------------------------------------------------------------------------------------------
# What it asks for and what it holds
# --------------------------------------------------------------------------------------------


def _requests(resources: Any) -> Amounts:
    """A container's requests, its limits standing in for requests it lacks."""
    resources = _map(resources)
    out: Amounts = {}
    for key in ("limits", "requests"):  # requests win
        for name, raw in _map(resources.get(key)).items():
            value = _amount(raw)
            if value is not None and isinstance(name, str):
                out[name] = value
    return out


def _add(into: Amounts, more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, _ZERO) + value


def _max(into: Amounts, other: Mapping[str, Decimal]) -> None:
    for name, value in other.items():
        into[name] = max(into.get(name, _ZERO), value)


def pod_requests(pod_spec: Object) -> Amounts:
    """One pod's requests by Kubernetes' rule (``resourcehelper.PodRequests``, which Kueue
    uses): containers summed plus sidecars (init containers with ``restartPolicy: Always``),
    at least each other init container with the sidecars started before it, plus the pod's
    ``overhead``."""
    pod_spec = _map(pod_spec)
    total: Amounts = {}
    for container in _list(pod_spec.get("containers")):
        _add(total, _requests(_map(container).get("resources")))
    sidecars: Amounts = {}
    init_max: Amounts = {}
    for container in _list(pod_spec.get("initContainers")):
        container = _map(container)
        own = _requests(container.get("resources"))
        if container.get("restartPolicy") == "Always":
            _add(sidecars, own)
            _max(init_max, sidecars)
        else:
            step = dict(sidecars)
            _add(step, own)
            _max(init_max, step)
    _add(total, sidecars)
    _max(total, init_max)
    _add(total, {k: v for k, v in _requests({"requests": pod_spec.get("overhead")}).items()})
    return {name: value for name, value in total.items() if value > 0}


@dataclass(frozen=True)
class PodSet:
    """One pod set of a Workload's spec: ``count`` pods of ``per_pod`` (Kueue's units)."""

    name: str
    count: int
    per_pod: Mapping[str, Decimal]

    def total(self, count: int | None = None) -> Amounts:
        """``per_pod`` x ``count`` (this pod set's own count when None)."""
        pods = self.count if count is None else count
        return {name: value * pods for name, value in self.per_pod.items()}


def pod_sets(workload: Object) -> tuple[PodSet, ...]:
    """The spec's pod sets, per-pod requests rounded as Kueue rounds them."""
    found = []
    for raw in _list(_map(_map(workload).get("spec")).get("podSets")):
        raw = _map(raw)
        template = _map(raw.get("template"))
        per_pod = {
            name: kueue_amount(name, value)
            for name, value in pod_requests(_map(template.get("spec"))).items()
        }
        count = _int(raw.get("count"))
        count = max(0, 1 if count is None else count)
        found.append(PodSet(_text(raw.get("name")) or "main", count, per_pod))
    return tuple(found)


def requested(workload: Object) -> Amounts:
    """What the Workload asks for in all: every pod set's count x per-pod requests."""
    total: Amounts = {}
    for pod_set in pod_sets(workload):
        _add(total, pod_set.total())
    return total


def held_per_flavor(workload: Object) -> dict[str, Amounts]:
    """``{flavor: {resource: amount}}`` of the quota the Workload holds now: empty unless its
    quota is reserved and it has not finished."""
    if not is_true(workload, "QuotaReserved") or is_true(workload, "Finished"):
        return {}
    admission = _map(_map(_map(workload).get("status")).get("admission"))
    specs = {p.name: p for p in pod_sets(workload)}
    held: dict[str, Amounts] = {}
    for assignment in _list(admission.get("podSetAssignments")):
        assignment = _map(assignment)
        name = _text(assignment.get("name")) or "main"
        flavors = _map(assignment.get("flavors"))
        usage = {
            str(resource): amount
            for resource, raw in _map(assignment.get("resourceUsage")).items()
            if (amount := _amount(raw)) is not None
        }
        spec = specs.get(name)
        count = _int(assignment.get("count"))
        computed = spec.total(count) if spec is not None else {}
        for resource in dict.fromkeys([*usage, *computed]):
            flavor = _text(flavors.get(resource))
            amount = usage[resource] if resource in usage else computed[resource]
            if flavor is None or amount <= 0:
                continue
            _add(held.setdefault(flavor, {}), {resource: amount})
    return held


def kueue_decides(workload: Object) -> bool:
    """Whether Kueue still has something to decide about the Workload: it is active (not
    stopped by ``spec.active: false``) and not finished, so it waits for admission, or runs
    and may be preempted or evicted. A finished or stopped one waits on nobody."""
    active = _map(_map(workload).get("spec")).get("active")
    return active is not False and not is_true(workload, "Finished")


def _quantities(amounts: Mapping[str, Decimal]) -> dict[str, str]:
    return {name: format_amount(name, value) or "0" for name, value in sorted(amounts.items())}


# --------------------------------------------------------------------------------------------
# The record
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Priority:
    """The Workload's priority: the class it names (a WorkloadPriorityClass, or a pod
    PriorityClass when ``source`` says so) and the value Kueue orders it by."""

    class_name: str | None
    value: int | None
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"class_name", "value", "source"}``."""
        return {"class_name": self.class_name, "value": self.value, "source": self.source}


def priority_of(workload: Object) -> Priority:
    """``spec.priority`` and the class: ``priorityClassRef`` (v1beta2) or
    ``priorityClassName``/``priorityClassSource`` (v1beta1)."""
    spec = _map(_map(workload).get("spec"))
    ref = _map(spec.get("priorityClassRef"))
    if ref:
        group, kind = _text(ref.get("group")), _text(ref.get("kind"))
        source = f"{group}/{kind.lower()}" if group and kind else kind
        return Priority(_text(ref.get("name")), _int(spec.get("priority")), source)
    return Priority(
        _text(spec.get("priorityClassName")),
        _int(spec.get("priority")),
        _text(spec.get("priorityClassSource")),
    )


# The condition whose last transition dates each state.
_SINCE: dict[str, str] = {
    "finished": "Finished",
    "admitted": "Admitted",
    "waiting-for-capacity": "QuotaReserved",
    "evicted": "Evicted",
    "preempted": "Evicted",
    "suspended": "Evicted",
    "rejected": "Evicted",
    "queued": "QuotaReserved",
}


@dataclass(frozen=True, slots=True)
class WorkloadInfo(Summarized):
    """One Workload as every surface shows it.

    ``state``/``reason``/``message`` are Kueue's (see ``kueue_state``); ``since`` is when the
    state began (the deciding condition's last transition; the creation time while queued
    before Kueue wrote one). Positions are Kueue's 0-based ones from the visibility API, set
    only while the Workload waits for quota. ``resources`` is the quota held now per flavor
    (empty while it holds none), ``requests`` what it asks for in all.
    """

    name: str
    namespace: str | None
    owner: Owner | None
    queue: str | None
    cluster_queue: str | None
    priority: Priority
    state: WorkloadState
    reason: str | None
    message: str | None
    quota_reserved: bool
    admitted: bool
    created: str | None
    since: str | None
    admitted_at: str | None = None
    """When Kueue admitted it (its Admitted condition's time; kept once it finished)."""
    resources: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    requests: Mapping[str, Decimal] = field(default_factory=dict)
    position_in_local_queue: int | None = None
    position_in_cluster_queue: int | None = None
    preempted_by: PreemptedBy | None = None
    placement: Placement | None = None
    """Where MultiKueue sent it (the worker cluster that runs its job, or those it was
    offered to); None when MultiKueue does not handle it."""

    @property
    def waiting(self) -> bool:
        """In its queue without quota (queued, or evicted and requeued): the visibility API
        has a position for it."""
        return _in_queue(self.state, self.quota_reserved)

    def to_json(self) -> dict[str, Any]:
        """The JSON shape the REST API and the events socket share."""
        return {
            "name": self.name,
            "namespace": self.namespace,
            "owner": self.owner.to_json() if self.owner else None,
            "queue": self.queue,
            "cluster_queue": self.cluster_queue,
            "priority": self.priority.to_json(),
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "summary": self.summary,
            "quota_reserved": self.quota_reserved,
            "admitted": self.admitted,
            "created": self.created,
            "since": self.since,
            "admitted_at": self.admitted_at,
            "resources": {f: _quantities(a) for f, a in sorted(self.resources.items())},
            "requests": _quantities(self.requests),
            "position_in_local_queue": self.position_in_local_queue,
            "position_in_cluster_queue": self.position_in_cluster_queue,
            "preempted_by": self.preempted_by.to_json() if self.preempted_by else None,
            "placement": self.placement.to_json() if self.placement else None,
        }


_OUT_OF_QUEUE = frozenset({"finished", "suspended", "rejected", "deleting"})
"""States in which Kueue does not queue a Workload (no position to ask for)."""


def _in_queue(state: WorkloadState, quota_reserved: bool) -> bool:
    return not quota_reserved and state not in _OUT_OF_QUEUE


def queue_order(workload: Object) -> tuple[str, tuple[Any, ...] | None]:
    """``(queue, order)`` of a Workload as far as Kueue's pending list of its LocalQueue can
    tell: ``order`` is None when it is not waiting there, else what Kueue orders waiting
    Workloads by (priority, creation, the times it was evicted or requeued). When neither part
    changes, a change of the Workload moves no position (its status message, say)."""
    workload = _map(workload)
    queue = _text(_map(workload.get("spec")).get("queueName")) or ""
    if not _in_queue(kueue_state(workload).state, is_true(workload, "QuotaReserved")):
        return queue, None
    times = tuple(
        _text(_map(condition(workload, kind)).get("lastTransitionTime"))
        for kind in ("Evicted", "Requeued")
    )
    priority = _map(workload.get("spec")).get("priority")
    created = _text(_map(workload.get("metadata")).get("creationTimestamp"))
    return queue, (priority, created, *times)


def is_replaced_slice(workload: Object) -> bool:
    """An elastic job's slice replaced by a newer admitted one (history, not listed)."""
    replaced = words(workload, "Finished")[0] == WORKLOAD_SLICE_REPLACED_REASON
    return replaced and is_true(workload, "Finished")


def workload_info(
    workload: Object, pending: Object | None = None, dispatching: Collection[str] | None = None
) -> WorkloadInfo | None:
    """The record of one Workload; None for a replaced slice. ``pending`` is its item from the
    visibility API's ``pendingworkloads`` (an item naming another Workload is ignored).
    ``dispatching``: the AdmissionChecks MultiKueue runs (None: not readable; see
    :func:`~jupyter_dw.domain.multikueue.placement`)."""
    workload = _map(workload)
    if is_replaced_slice(workload):
        return None
    metadata = _map(workload.get("metadata"))
    spec = _map(workload.get("spec"))
    name = _text(metadata.get("name")) or ""
    kueue = kueue_state(workload)
    quota_reserved = is_true(workload, "QuotaReserved")
    waiting = _in_queue(kueue.state, quota_reserved)
    local, cluster = pending_positions(pending, name) if waiting else (None, None)
    created = _text(metadata.get("creationTimestamp"))
    since = _text(metadata.get("deletionTimestamp")) if kueue.state == "deleting" else None
    if kueue.state in _SINCE:
        since = _text(_map(condition(workload, _SINCE[kueue.state])).get("lastTransitionTime"))
    admission = _map(_map(workload.get("status")).get("admission"))
    labels = _map(metadata.get("labels"))
    where = placement(workload, dispatching)
    _, reason, message = placed_outcome((kueue.state, kueue.reason, kueue.message), where)
    return WorkloadInfo(
        name=name,
        namespace=_text(metadata.get("namespace")),
        owner=owner_of(workload),
        queue=_text(spec.get("queueName")) or _text(labels.get(QUEUE_LABEL)),
        cluster_queue=_text(admission.get("clusterQueue")) if quota_reserved else None,
        priority=priority_of(workload),
        state=kueue.state,
        reason=reason,
        message=message,
        quota_reserved=quota_reserved,
        admitted=is_true(workload, "Admitted"),
        created=created,
        since=since or created,
        admitted_at=true_since(workload, "Admitted"),
        resources=held_per_flavor(workload),
        requests=requested(workload),
        position_in_local_queue=local,
        position_in_cluster_queue=cluster,
        preempted_by=kueue.preempted_by,
        placement=where,
    )


def _order(info: WorkloadInfo) -> tuple[Any, ...]:
    position = info.position_in_local_queue
    return (
        info.queue or "",
        0 if info.quota_reserved else 1,
        position if position is not None else 1 << 30,
        info.created or "",
        info.name,
    )


def sorted_workloads(infos: Iterable[WorkloadInfo]) -> list[WorkloadInfo]:
    """By queue; in each, those holding quota first, then the waiting ones in Kueue's order
    (position), then the rest by age."""
    return sorted(infos, key=_order)


def matches(info: WorkloadInfo, queue: str | None = None, kind: str | None = None) -> bool:
    """Whether ``info`` passes the filters: its LocalQueue is ``queue``, its owner's
    ``Kind.group`` is ``kind`` (kind names compared as written, groups case-insensitively)."""
    if queue is not None and info.queue != queue:
        return False
    if kind is not None:
        if info.owner is None:
            return False
        want_kind, _, want_group = kind.partition(".")
        if (info.owner.kind, info.owner.api_group.lower()) != (want_kind, want_group.lower()):
            return False
    return True


KUEUE_HELD = frozenset(
    {"queued", "waiting-for-capacity", "evicted", "preempted", "suspended", "rejected"}
)
"""Workload states in which a job waits on Kueue (its controller keeps it suspended): RayJobs and
TrainJobs alike."""


def held_by_kueue(workload: WorkloadInfo | None) -> tuple[str, str | None, str | None] | None:
    """``(state, reason, message)`` while Kueue decides a job (no Workload yet, or one that
    waits, was evicted, preempted, ...: its own words), else None (the job's controller
    speaks). One reading for RayJobs and TrainJobs."""
    if workload is None:
        return "queued", None, "waiting for Kueue to make the job's Workload"
    if workload.state in KUEUE_HELD:
        return workload.state, workload.reason, workload.message
    return None


def created_by(obj: Mapping[str, Any]) -> str | None:
    """The username that created ``obj`` through jupyter_dw (its owner annotation, which a
    RayCluster, a RayJob and a TrainJob carry alike), or None."""
    annotations = _map(_map(obj.get("metadata")).get("annotations"))
    return _text(annotations.get(OWNER_ANNOTATION)) or None


@dataclass(frozen=True)
class JobWorkload:
    """What a job's record (a RayJob's, a TrainJob's) holds of its Workload: its name, its
    positions while it waits, when Kueue admitted it, and what it holds and asks for. The
    Workload's state is in the job's own (``held_by_kueue``); its whole record is the
    ``workloads`` answer's."""

    name: str
    position_in_local_queue: int | None = None
    position_in_cluster_queue: int | None = None
    admitted_at: str | None = None
    resources: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    requests: Mapping[str, Decimal] = field(default_factory=dict)
    placement: Placement | None = None
    """Where MultiKueue sent it (the worker cluster that runs the job); None without it."""

    @classmethod
    def of(cls, info: WorkloadInfo) -> JobWorkload:
        """A job's part of Workload ``info``."""
        return cls(
            name=info.name,
            position_in_local_queue=info.position_in_local_queue,
            position_in_cluster_queue=info.position_in_cluster_queue,
            admitted_at=info.admitted_at,
            resources=info.resources,
            requests=info.requests,
            placement=info.placement,
        )


def workload_fields(workload: JobWorkload | None) -> dict[str, Any]:
    """The Kueue part of a job's JSON (RayJob, TrainJob): its Workload's name, positions, when
    it was admitted and what it asks for and holds (as :meth:`WorkloadInfo.to_json` words
    them) and where MultiKueue sent it; :func:`job_workload_from_json` reads it back."""
    if workload is None:
        return {
            "workload": None,
            "position_in_local_queue": None,
            "position_in_cluster_queue": None,
            "admitted_at": None,
            "resources": {},
            "requests": {},
            "placement": None,
        }
    return {
        "workload": workload.name,
        "position_in_local_queue": workload.position_in_local_queue,
        "position_in_cluster_queue": workload.position_in_cluster_queue,
        "admitted_at": workload.admitted_at,
        "resources": {f: _quantities(a) for f, a in sorted(workload.resources.items())},
        "requests": _quantities(workload.requests),
        "placement": workload.placement.to_json() if workload.placement else None,
    }


def job_workload_from_json(record: Mapping[str, Any]) -> JobWorkload | None:
    """The :class:`JobWorkload` in a job's JSON (what :func:`workload_fields` made)."""
    name = decode_key(str | None, record, "workload")
    return decode_fields(JobWorkload, record, name=name) if name is not None else None
