"""A Kueue Workload's own state, whatever its job: the rules that read only the Workload.
In the precedence a Ray cluster's state uses too (:mod:`.cluster_state` adds KubeRay's part).
Pure. The fields read: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from jupyter_dw.domain.lenient import conditions as _conditions
from jupyter_dw.domain.lenient import integer as _int
from jupyter_dw.domain.lenient import is_true as _is_true
from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.domain.lenient import text as _text
from jupyter_dw.domain.lenient import words as _words
from jupyter_dw.domain.priorities import PreemptedBy, preemptor

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


@dataclass(frozen=True, kw_only=True)
class WorkloadFacts:
    """What the Kueue rules look at, read once from a Workload (and its object's deletion)."""

    deleting: bool
    has_workload: bool
    active: bool
    wl: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    checks: tuple[AdmissionCheckStatus, ...] = ()

    @property
    def quota_reserved(self) -> bool:
        return _is_true(self.wl.get("QuotaReserved"))

    @property
    def admitted(self) -> bool:
        return _is_true(self.wl.get("Admitted"))


Outcome = tuple[str, str | None, str | None]
"""``(state, reason, message)``: a state of :data:`WorkloadState` from the rules here, of
``ClusterState`` from a cluster's."""


def deleting(f: WorkloadFacts) -> Outcome | None:
    return ("deleting", None, None) if f.deleting else None


def rejected(f: WorkloadFacts) -> Outcome | None:
    # A Rejected check makes Kueue deactivate the workload (it is never retried); say which
    # check refused and why rather than "suspended".
    refusing = next((c for c in f.checks if c.state == CHECK_REJECTED), None)
    evicted = f.wl.get("Evicted")
    reason, message = _words(evicted) if _is_true(evicted) else (None, None)
    if refusing is not None:
        # Seen before Kueue deactivates the workload: the check's own state and words.
        why = f"admission check {refusing.name} rejected the workload"
        return (
            "rejected",
            reason or CHECK_REJECTED,
            (f"{why}: {refusing.message}" if refusing.message else why),
        )
    if reason == _DEACTIVATED_BY_CHECK:
        return "rejected", reason, message
    # Between Kueue's two steps: the deactivation is decided (DeactivationTarget) but the
    # check was already reset.
    target = f.wl.get("DeactivationTarget")
    if _is_true(target) and _words(target)[0] == _ADMISSION_CHECK_REASON:
        return ("rejected", *_words(target))
    return None


def retrying_check(f: WorkloadFacts) -> Outcome | None:
    # A Retry check evicts the workload (reason AdmissionCheck) and Kueue requeues it after a
    # backoff: it is still waiting for capacity, not evicted for good.
    evicted = f.wl.get("Evicted")
    if f.active and _is_true(evicted) and _words(evicted)[0] == _ADMISSION_CHECK_REASON:
        return ("waiting-for-capacity", *_words(evicted))
    return None


def deactivated(f: WorkloadFacts) -> Outcome | None:
    # Kueue evicts a deactivated Workload (reason Deactivated) but never requeues it: it stays
    # off until someone sets spec.active=true, which is a suspension, not an eviction.
    if not (f.has_workload and not f.active):
        return None
    evicted = f.wl.get("Evicted")
    reason, message = _words(evicted) if _is_true(evicted) else ("Deactivated", None)
    return "suspended", reason, message


def reactivated(f: WorkloadFacts) -> Outcome | None:
    # spec.active set back to true: Kueue leaves Evicted=True (reason Deactivated) until it
    # reserves quota again (then Evicted=False, "Previously: ...") and says Requeued=True
    # (reason Reactivated): the Workload waits in its queue like a new one, not evicted.
    evicted = f.wl.get("Evicted")
    if not (f.has_workload and f.active and _is_true(evicted)):
        return None
    # Also while the reservation is still on record: eviction is two writes (Evicted, then
    # the reservation released), and a resume soon after a stop lands between them.
    if _words(evicted)[0] not in _DEACTIVATED_REASONS:
        return None
    reason, message = _words(f.wl.get("QuotaReserved"))
    stale = reason is None or reason in _DEACTIVATED_REASONS or message == _words(evicted)[1]
    if f.quota_reserved or stale:
        # Still the eviction's words: the scheduler has not judged the queue yet.
        requeued = f.wl.get("Requeued")
        reason, message = _words(requeued) if _is_true(requeued) else ("Reactivated", None)
    return "queued", reason, message


def evicted(f: WorkloadFacts) -> Outcome | None:
    eviction, preemption = f.wl.get("Evicted"), f.wl.get("Preempted")
    if _is_true(preemption):
        # The Preempted condition carries the finer reason (InClusterQueue, InCohort...).
        return ("preempted", *_words(preemption))
    if _is_true(eviction):
        reason, message = _words(eviction)
        return ("preempted" if reason == _PREEMPTED_REASON else "evicted"), reason, message
    return None


def admitted(f: WorkloadFacts) -> Outcome | None:
    return ("admitted", *_words(f.wl.get("Admitted"))) if f.admitted else None


def waiting_for_capacity(f: WorkloadFacts) -> Outcome | None:
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


def queued(f: WorkloadFacts) -> Outcome | None:
    if not f.has_workload:
        return None
    reserved = f.wl.get("QuotaReserved")
    # Quota reserved but not admitted: admission checks pending; Admitted says which.
    condition = f.wl.get("Admitted") if _is_true(reserved) else reserved
    return ("queued", *_words(condition))


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

KUEUE_RULES: tuple[Callable[[WorkloadFacts], Outcome | None], ...] = (
    deleting,
    rejected,
    deactivated,
    reactivated,
    retrying_check,
    evicted,
    admitted,
    waiting_for_capacity,
    queued,
)
"""The rules that read only the Workload, in the precedence a cluster's state uses too."""


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
    (deactivated); ``queued`` (reactivated, until Kueue reserves quota again);
    ``waiting-for-capacity`` (an admission check in Retry, or quota reserved
    with checks not Ready); ``preempted``/``evicted``; ``admitted``; ``queued`` (Kueue's
    ``QuotaReserved=False`` reason and message). Never raises on a partial object."""
    workload = _map(workload)
    metadata = _map(workload.get("metadata"))
    conditions = _conditions(workload)
    facts = WorkloadFacts(
        deleting=_text(metadata.get("deletionTimestamp")) is not None,
        has_workload=True,
        active=_map(workload.get("spec")).get("active") is not False,
        wl=conditions,
        checks=admission_checks(workload),
    )
    if not facts.deleting and _is_true(conditions.get("Finished")):
        return KueueState("finished", *_words(conditions.get("Finished")))
    for rule in KUEUE_RULES:
        outcome = rule(facts)
        if outcome is not None:
            state, reason, message = outcome
            preempted = preemptor_of(facts, message) if state == "preempted" else None
            return KueueState(cast(WorkloadState, state), reason, message, preempted)
    raise AssertionError("unreachable: queued matches every Workload")  # pragma: no cover


def assignments(workload: Mapping[str, Any] | None) -> dict[str, dict[str, str]]:
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


def preemptor_of(facts: WorkloadFacts, message: str | None) -> PreemptedBy | None:
    """The preemptor named in the state's message, else in the Preempted or Evicted one."""
    for text in (message, *(_words(facts.wl.get(t))[1] for t in ("Preempted", "Evicted"))):
        found = preemptor(text)
        if found is not None:
            return found
    return None
