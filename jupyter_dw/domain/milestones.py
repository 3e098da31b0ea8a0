"""When a Ray cluster passed each step, from the controllers' own timestamps.
The one timeline every surface draws, and the steps a change crosses (:func:`transition`). Pure;
nothing raises on a malformed object. Each milestone's source:
docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_dw.domain.cluster_snapshot import ClusterSnapshot
from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.domain.lenient import text as _text
from jupyter_dw.domain.slices import SliceChain, is_true, slice_chain, true_since, worker_count
from jupyter_dw.names import RAY_NODE_TYPE_LABEL

_WORDS = {
    "Submitted": "submitted",
    "QuotaReserved": "quota reserved",
    "CapacityProvisioned": "capacity provisioned",
    "Admitted": "admitted",
    "HeadReady": "head ready",
    "Ready": "ready",
    "Evicted": "evicted",
    "Preempted": "preempted",
    "Stopped": "stopped",
    "Deleting": "being deleted",
    "Succeeded": "succeeded",
    "Failed": "failed",
}
_COUNTED_WORDS = {
    "WorkerReady": "worker {n} ready",
    "ScaleRequested": "resize to {n} workers asked",
    "ScaleAdmitted": "resize to {n} workers admitted",
    "ScaledTo": "{n} workers ready",
}


def milestone_words(name: str) -> str:
    """A milestone's name in words: ``WorkerReady:3`` is ``worker 3 ready``; a name not
    known here is itself."""
    kind, _, count = name.partition(":")
    if count and kind in _COUNTED_WORDS:
        return _COUNTED_WORDS[kind].format(n=count)
    return _WORDS.get(name, name)


@dataclass(frozen=True)
class Milestone:
    """One step of a cluster's life and when it happened (RFC 3339, None if unrecorded)."""

    name: str
    time: str | None

    def to_json(self) -> dict[str, str | None]:
        """``{"name", "time", "words"}``."""
        return {"name": self.name, "time": self.time, "words": milestone_words(self.name)}


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
    status: ClusterSnapshot,
    raycluster: Mapping[str, Any],
    workload: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]] = (),
    slices: Iterable[Mapping[str, Any]] | None = None,
) -> tuple[Milestone, ...]:
    """The steps ``status`` shows the cluster has passed, in the order they happen.

    ``slices`` are all the cluster's Workloads when it is elastic (see
    :func:`~jupyter_dw.domain.slices.slice_chain`): ``QuotaReserved`` and ``Admitted`` are then
    the first admission's, and each scale-up's slice adds ``ScaleRequested:<n>`` (when it was
    made) and ``ScaleAdmitted:<n>``; ``ScaledTo:<n>`` follows once the last one's n workers
    are ready.
    """
    pods = list(pods)
    chain = slice_chain(slices) if slices is not None else None
    first = chain.first if chain is not None else workload
    workload = chain.current if chain is not None else workload
    steps = [Milestone("Submitted", status.created), *_admission(status, chain, first)]
    head_times = _head_ready_times(status, raycluster, pods)
    if head_times:
        steps.append(Milestone("HeadReady", head_times[0]))
    worker_times = _worker_ready_times(status, pods)
    steps += [Milestone(f"WorkerReady:{n}", t) for n, t in enumerate(worker_times, 1)]
    if status.state == "ready":
        steps.append(_ready(status, chain, head_times, worker_times))
    if chain is not None and status.elastic:
        steps += _scale_steps(chain, status, worker_times)
    end = _end(status, raycluster, workload)
    if end is not None:
        steps.append(end)
    return tuple(steps)


def _admission(
    status: ClusterSnapshot, chain: SliceChain | None, first: Mapping[str, Any] | None
) -> list[Milestone]:
    """Kueue's steps: ``QuotaReserved``, ``CapacityProvisioned`` (with admission checks),
    ``Admitted``."""
    steps = []
    reserved, reserved_at = _first_true(chain, first, "QuotaReserved")
    if reserved:
        steps.append(Milestone("QuotaReserved", reserved_at))
    admitted, admitted_at = _first_true(chain, first, "Admitted")
    if status.capacity_provisioned:
        # Kueue admits the moment the last check turns Ready, and a check's own
        # lastTransitionTime may predate its last state change: Admitted's time is the one.
        checks = [c.time for c in status.admission_checks if c.time]
        steps.append(
            Milestone("CapacityProvisioned", admitted_at if admitted else max(checks, default=None))
        )
    if admitted:
        steps.append(Milestone("Admitted", admitted_at))
    return steps


def _head_ready_times(
    status: ClusterSnapshot, raycluster: Mapping[str, Any], pods: list[Mapping[str, Any]]
) -> list[str | None]:
    """When the head became ready (one time, maybe None); empty while it is not ready."""
    if not status.head_ready:
        return []
    reached, since = _true_since(raycluster, "HeadPodReady")
    return [since] if reached and since else _ready_times(pods, "head")[:1] or [None]


def _worker_ready_times(status: ClusterSnapshot, pods: list[Mapping[str, Any]]) -> list[str | None]:
    """When each ready worker became ready, in order: as many as KubeRay counts ready."""
    worker_times = _ready_times(pods, "worker")
    # KubeRay's count decides how many are ready; pod times say when (the cache may lag).
    worker_times += [None] * (status.workers_ready - len(worker_times))
    return worker_times[: status.workers_ready]


def _ready(
    status: ClusterSnapshot,
    chain: SliceChain | None,
    head_times: list[str | None],
    worker_times: list[str | None],
) -> Milestone:
    """``Ready``: when the last pod of the cluster's first size became ready."""
    first_size = worker_times
    if chain is not None and status.elastic and chain.first is not None:
        # Ready is when the first admission's size was reached: later workers came with
        # scale-ups, whose own milestones follow.
        first_size = worker_times[: worker_count(chain.first) or 0]
    known = [t for t in [*head_times, *first_size] if t]
    return Milestone("Ready", max(known) if known else None)


def _end(
    status: ClusterSnapshot, raycluster: Mapping[str, Any], workload: Mapping[str, Any] | None
) -> Milestone | None:
    """The step that ends the cluster's run, if it has one: ``Evicted``/``Preempted``,
    ``Stopped`` or ``Deleting``."""
    if status.state in ("evicted", "preempted"):
        # Kueue may mark a preemption on Evicted alone (reason Preempted).
        reached, since = _true_since(workload, "Preempted")
        if status.state == "evicted" or not reached:
            since = _true_since(workload, "Evicted")[1]
        return Milestone(status.state.capitalize(), since)
    if status.state == "stopped":
        # Kueue's eviction time, else (not evicted yet) the time our record says.
        since = _true_since(workload, "Evicted")[1]
        return Milestone("Stopped", since or (status.stopped.at if status.stopped else None))
    if status.state == "deleting":
        return Milestone(
            "Deleting", _text(_map(raycluster.get("metadata")).get("deletionTimestamp"))
        )
    return None


def _first_true(
    chain: SliceChain | None, first: Mapping[str, Any] | None, kind: str
) -> tuple[bool, str | None]:
    """Whether the first admission reached condition ``kind``, and when: the first slice's
    condition, else (a replaced slice keeps no such condition) the earliest of the chain."""
    reached, since = _true_since(first, kind)
    if reached or chain is None:
        return reached, since
    times = [t for w in chain.slices if (t := true_since(w, kind))]
    if times:
        return True, min(times)
    return any(is_true(w, kind) for w in chain.slices), None


def _scale_steps(
    chain: SliceChain, status: ClusterSnapshot, worker_times: list[str | None]
) -> list[Milestone]:
    steps: list[Milestone] = []
    ups = chain.scale_ups()
    for index, piece in enumerate(ups):
        count = worker_count(piece)
        if count is None:
            continue
        made = _text(_map(piece.get("metadata")).get("creationTimestamp"))
        steps.append(Milestone(f"ScaleRequested:{count}", made))
        admitted_at = true_since(piece, "Admitted")
        later_admitted = any(is_true(w, "QuotaReserved") for w in ups[index + 1 :])
        replaced = chain.replaced_by(piece) is not None and is_true(piece, "Finished")
        if admitted_at or is_true(piece, "Admitted") or replaced or later_admitted:
            steps.append(Milestone(f"ScaleAdmitted:{count}", admitted_at))
    last = ups[-1] if ups else None
    if last is not None and last is chain.admitted and status.scale is None:
        count = worker_count(last) or 0
        if 0 < count <= status.workers_ready:
            ready = sorted(t for t in worker_times if t)
            steps.append(Milestone(f"ScaledTo:{count}", ready[-1] if ready else None))
    return steps


# States announced when entered; the progress milestones cover the others.
_ENTRY_EVENTS: dict[str, str] = {
    "evicted": "Evicted",
    "preempted": "Preempted",
    "failed": "Failed",
    "rejected": "Rejected",
    "suspended": "Suspended",
    "stopped": "Stopped",
    "deleting": "Deleting",
}


def transition(old: ClusterSnapshot | None, new: ClusterSnapshot) -> list[str]:
    """The milestones crossed going from ``old`` to ``new``, in the order they happen.

    Progress milestones, always in this order: ``Queued`` (entering the queue),
    ``QuotaReserved``, ``WaitingForCapacity`` (entering that state), ``CapacityProvisioned``
    (every admission check Ready), ``Admitted``, ``HeadReady``, ``WorkerReady:<n>`` for each
    newly ready worker count n, ``Ready``. Then the state entered, if it is one of
    ``Evicted``, ``Preempted``, ``Failed``, ``Rejected``, ``Suspended``, ``Stopped``,
    ``Deleting``; then
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
