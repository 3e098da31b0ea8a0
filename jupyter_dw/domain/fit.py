"""Will a Ray cluster fit its queue? The verdict, decided the way Kueue assigns flavors.
A verdict is a reason and its numbers; the assignment is :mod:`.flavor_assigner`, the sentences
:mod:`.fit_words`, headroom ``QuotaTree``'s. Kueue's steps, one by one:
docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal

from jupyter_dw.domain import fit_words as words
from jupyter_dw.domain.fit_words import Excess, Hold
from jupyter_dw.domain.flavor_assigner import (
    SINGLE_POD_SET,
    Capacity,
    Demand,
    Placement,
    PodSetRequest,
    Stuck,
    demands,
    place,
    pod_sets_for_spec,
    steps,
    total,
)
from jupyter_dw.domain.kueue_model import (
    ClusterQueueQuota,
    FlavorResource,
    LocalQueueInfo,
    ResourceGroup,
)
from jupyter_dw.domain.multikueue import Dispatcher
from jupyter_dw.domain.priorities import Ahead
from jupyter_dw.domain.quota import QuotaTree, format_amount
from jupyter_dw.domain.scheduling import FlavorTraits, Toleration, flavor_mismatch

Verdict = Literal["fits-now", "must-wait", "never-fits", "unknown"]
FITS_NOW: Verdict = "fits-now"
MUST_WAIT: Verdict = "must-wait"
NEVER_FITS: Verdict = "never-fits"
UNKNOWN: Verdict = "unknown"

# Machine-readable reasons. The Kueue ones are the QuotaReserved=False reasons Kueue itself
# gives (UnadmittedWorkloadsObservability), so a forced submission can be checked against them.
REASON_FITS = "Fits"
REASON_WAITING = "WaitingForQuota"
REASON_EXCEEDS = "ExceedsMaxQuota"
REASON_NO_FLAVOR = "NoMatchingFlavor"
REASON_MISSING_CQ = "ClusterQueueMissing"
REASON_STOPPED = "Stopped"
REASON_INACTIVE = "Inactive"
REASON_CYCLE = "CohortCycle"
REASON_HIDDEN = "QuotaHidden"

_ZERO = Decimal(0)

__all__ = [
    "FITS_NOW",
    "MUST_WAIT",
    "NEVER_FITS",
    "UNKNOWN",
    "FitVerdict",
    "PodSetRequest",
    "Verdict",
    "assess_fit",
    "pod_sets_for_spec",
]

# --------------------------------------------------------------------------------------------
# The verdict
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitVerdict:
    """Whether a workload fits its queue, with the numbers behind the answer.

    ``requests`` are the workload's totals in Kueue's units. Per requested resource,
    ``flavors`` names the flavor the numbers refer to (the one Kueue would assign; for a
    resource that can never fit, the flavor that comes closest; None when no flavor applies),
    ``headroom`` is what that flavor has free now and ``max_obtainable`` the most it could ever
    give (both None when quota is hidden or the ClusterQueue is missing; 0 for a resource the
    ClusterQueue does not cover). ``assignment`` maps PodSet → resource → flavor when every
    PodSet got one. ``ahead`` is the number of pending workloads Kueue orders before this one
    (higher or equal priority), None if unknown; ``ahead_bound`` says whether that count is
    ``exact``, a lower (``at-least``) or an upper (``at-most``) bound.
    ``reason`` is a short machine-readable cause (Kueue's own reason names where they exist).
    """

    verdict: Verdict
    reason: str
    message: str
    requests: Mapping[str, Decimal]
    headroom: Mapping[str, Decimal | None]
    max_obtainable: Mapping[str, Decimal | None]
    flavors: Mapping[str, str | None]
    assignment: Mapping[str, Mapping[str, str]]
    ahead: int | None
    queue: str | None
    cluster_queue: str | None
    ahead_bound: str | None = None
    admission_checks: tuple[str, ...] = ()
    """The AdmissionChecks the ClusterQueue requires of this workload (those whose
    ``onFlavors`` match its flavors): quota first, then every one must be Ready."""
    multikueue: Dispatcher | None = None
    """The ClusterQueue's MultiKueue check, when it has one (and it can be read): the workload
    then runs on a worker cluster MultiKueue picks; the quota judged here is this cluster's,
    which Kueue reserves first."""

    def to_json(self) -> dict[str, Any]:
        """The verdict as JSON; amounts are canonical Kubernetes quantity strings."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "message": self.message,
            "requests": {r: format_amount(r, q) for r, q in self.requests.items()},
            "headroom": {r: format_amount(r, q) for r, q in self.headroom.items()},
            "max_obtainable": {r: format_amount(r, q) for r, q in self.max_obtainable.items()},
            "flavors": dict(self.flavors),
            "assignment": {ps: dict(flavors) for ps, flavors in self.assignment.items()},
            "ahead": self.ahead,
            "ahead_bound": self.ahead_bound,
            "queue": self.queue,
            "cluster_queue": self.cluster_queue,
            "admission_checks": list(self.admission_checks),
            "multikueue": self.multikueue.to_json() if self.multikueue else None,
        }


def assess_fit(
    requests: Mapping[str, Decimal] | Sequence[PodSetRequest],
    cluster_queue: ClusterQueueQuota | None,
    tree: QuotaTree | None,
    ahead: int | Ahead | None = None,
    *,
    local_queue: LocalQueueInfo | None = None,
    flavors: Mapping[str, FlavorTraits] | None = None,
    only_flavors: Mapping[str, Collection[str]] | None = None,
) -> FitVerdict:
    """Decide whether a workload fits now, must wait, can never fit, or cannot be judged.

    ``requests``: per-PodSet requests (``pod_sets_for_spec``; exact, as Kueue counts PodSets
    one by one and may give head and workers different flavors) or a mapping of totals such as
    ``ValidatedClusterSpec.total_requests()`` (treated as one PodSet). ``cluster_queue``: the
    LocalQueue's ClusterQueue, None when it does not exist or cannot be read. ``tree``: every
    readable ClusterQueue and Cohort; None means quota is hidden from this identity.
    ``ahead``: pending workloads ahead (an :class:`Ahead`, or an exact count), None if
    unknown. ``local_queue``
    names the queue in messages and adds its stop state. ``flavors``: the ResourceFlavors by
    name; a flavor whose taints a pod set does not tolerate, or whose node labels its node
    selector contradicts, is skipped for that pod set as Kueue skips it (None: not readable,
    every flavor is assumed usable). ``only_flavors`` maps a PodSet to the flavors it may use
    at all (a scale-up's slice stays in the flavor its cluster holds).

    Order of checks: hidden quota → unknown; missing ClusterQueue, uncovered resource or a
    request above max_obtainable → never-fits; cohort cycle, stopped or inactive queue →
    must-wait (Kueue keeps the workload pending, it is not rejected); then headroom decides
    fits-now or must-wait.
    """
    ahead = Ahead(ahead, "cluster-queue") if isinstance(ahead, int) else ahead
    if tree is None:
        return _unknown(demands(requests, None), ahead, local_queue)
    if cluster_queue is None:
        return _missing_cluster_queue(demands(requests, None), ahead, local_queue)
    if tree.cluster_queue(cluster_queue.name) is None:
        raise ValueError(f"ClusterQueue {cluster_queue.name!r} is not in the quota tree")
    covered = frozenset(r for g in cluster_queue.resource_groups for r in g.covered_resources)
    placement = {
        p.name: (p.tolerations, p.node_selector)
        for p in (requests if not isinstance(requests, Mapping) else ())
    }
    return _Assessor(
        cluster_queue,
        tree,
        demands(requests, covered),
        ahead,
        local_queue,
        _mismatches(placement, flavors or {}, only_flavors or {}),
    ).run()


def _mismatches(
    placement: Mapping[str, tuple[tuple[Toleration, ...], Mapping[str, str]]],
    flavors: Mapping[str, FlavorTraits],
    only: Mapping[str, Collection[str]],
) -> Callable[[str, str], str | None]:
    """``(pod set, flavor) -> why Kueue skips it`` (None: usable, or nothing known of it)."""

    def mismatch(pod_set: str, flavor: str) -> str | None:
        allowed = only.get(pod_set)
        if allowed is not None and flavor not in allowed:
            held = ", ".join(sorted(allowed)) or "none"
            return f"flavor {flavor}: a scale-up stays in the flavor its cluster holds ({held})"
        traits = flavors.get(flavor)
        if traits is None:
            return None
        tolerations, node_selector = placement.get(pod_set, ((), {}))
        return flavor_mismatch(traits, tolerations, node_selector)

    return mismatch


class _Assessor:
    """One assessment against a visible ClusterQueue: it decides (a verdict, a reason and the
    numbers) and hands each decision to :mod:`~jupyter_dw.domain.fit_words` for its words."""

    def __init__(
        self,
        cq: ClusterQueueQuota,
        tree: QuotaTree,
        demands: list[Demand],
        ahead: Ahead | None,
        lq: LocalQueueInfo | None,
        mismatch: Callable[[str, str], str | None] = lambda _pod_set, _flavor: None,
    ) -> None:
        self.mismatch = mismatch
        self.cq = cq
        self.tree = tree
        self.demands = demands
        self.totals = total(demands)
        self.ahead = ahead
        self.lq = lq
        self.groups = cq.resource_groups

    def headroom(self, flavor: str, resource: str) -> Decimal:
        return self.tree.headroom(self.cq.name, flavor, resource)

    def max_obtainable(self, flavor: str, resource: str) -> Decimal:
        return self.tree.max_obtainable(self.cq.name, flavor, resource)

    # -- decision --------------------------------------------------------------------------

    def run(self) -> FitVerdict:
        totals, cq = self.totals, self.cq
        if not totals:
            return self._verdict(FITS_NOW, REASON_FITS, words.no_quota_needed(), Placement())
        uncovered = [r for r in totals if self._group_of(r) is None]
        if uncovered:
            covered = [r for g in self.groups for r in g.covered_resources]
            message = words.uncovered(totals, cq.name, covered, uncovered)
            return self._verdict(NEVER_FITS, REASON_NO_FLAVOR, message, None)
        if self.tree.has_cycle(cq.name):
            return self._verdict(MUST_WAIT, REASON_CYCLE, words.cycle(totals, cq.name), None)
        for pod_set, group, _ in steps(self.demands, self.groups):
            reasons = [self.mismatch(pod_set, f.name) for f in group.flavors]
            if all(reasons):
                found = [r for r in reasons if r]
                message = words.no_usable_flavor(totals, cq.name, pod_set, found)
                return self._verdict(NEVER_FITS, REASON_NO_FLAVOR, message, None)
        ever = place(
            self.demands, self.groups, self.max_obtainable, any_order=True, eligible=self.eligible
        )
        if ever.stuck is not None:
            return self._exceeds(ever.stuck, ever)
        now = place(
            self.demands,
            self.groups,
            self.headroom,
            eligible=self.eligible,
            borrowing=self.borrowing if cq.flavor_fungibility.try_next_when_borrowing else None,
        )
        hold = self._hold()
        if hold is not None:
            return self._held(hold, now, ever)
        if now.stuck is None:
            return self._fits_now(now)
        return self._waits(ever)

    def borrowing(
        self, flavor: str, wanted: Mapping[str, Decimal], usage: Mapping[FlavorResource, Decimal]
    ) -> int:
        """The worst borrowing level among the requests (Kueue's representative mode)."""
        return max(
            self.tree.borrowing_level(
                self.cq.name, flavor, resource, usage.get((flavor, resource), _ZERO) + amount
            )
            for resource, amount in wanted.items()
        )

    def eligible(self, pod_set: str, flavor: str) -> bool:
        return self.mismatch(pod_set, flavor) is None

    def _group_of(self, resource: str) -> ResourceGroup | None:
        return next((g for g in self.groups if resource in g.covered_resources), None)

    def _hold(self) -> Hold | None:
        """Why Kueue admits nothing to this queue right now, if it does not."""
        cq, lq = self.cq, self.lq
        if cq.stopped:
            return Hold(REASON_STOPPED, "ClusterQueue", cq.name, True, cq.stop_policy)
        if lq is not None and lq.stopped:
            return Hold(REASON_STOPPED, "LocalQueue", lq.name, True, lq.stop_policy)
        if cq.active_condition is False:
            return Hold(REASON_INACTIVE, "ClusterQueue", cq.name, False, cq.active_message)
        if lq is not None and lq.active_condition is False:
            return Hold(REASON_INACTIVE, "LocalQueue", lq.name, False, lq.active_message)
        return None

    # -- verdicts --------------------------------------------------------------------------

    def _exceeds(self, stuck: Stuck, ever: Placement) -> FitVerdict:
        excesses = []
        for flavor in stuck.group.flavors:
            over = []
            for resource, amount in stuck.requests.items():
                needed = stuck.assumed.get((flavor.name, resource), _ZERO) + amount
                most = self.max_obtainable(flavor.name, resource)
                if needed > most:
                    over.append((resource, needed, most))
            excesses.append(Excess(flavor.name, tuple(over)))
        pod_set = None if stuck.pod_set == SINGLE_POD_SET else stuck.pod_set
        message = words.exceeds(self.totals, self.cq.name, pod_set, excesses)
        return self._verdict(NEVER_FITS, REASON_EXCEEDS, message, ever)

    def _fits_now(self, now: Placement) -> FitVerdict:
        verdict = self._verdict(FITS_NOW, REASON_FITS, "", now)
        message = words.fits_now(
            self._free_now(verdict),
            verdict.admission_checks,
            self.ahead,
            self._preemptible_before(now),
        )
        return replace(verdict, message=message)

    def _preemptible_before(self, now: Placement) -> list[str]:
        """Flavors ahead of the ones assigned in which Kueue may stop to preempt instead
        (``whenCanPreempt: MayStopSearch`` on a ClusterQueue that preempts). Whether it does
        depends on the priorities of admitted workloads, which the verdict does not know: so
        this is said, not decided."""
        if not (self.cq.preempts and self.cq.flavor_fungibility.stops_to_preempt):
            return []
        found: list[str] = []
        for pod_set, group, wanted in steps(self.demands, self.groups):
            assigned = {now.flavors.get(pod_set, {}).get(resource) for resource in wanted}
            for flavor in group.flavors:
                if flavor.name in assigned:
                    break
                if self.eligible(pod_set, flavor.name) and flavor.name not in found:
                    found.append(flavor.name)
        return found

    def _waits(self, ever: Placement) -> FitVerdict:
        verdict = self._verdict(MUST_WAIT, REASON_WAITING, "", ever)
        message = words.waits(
            self._free_now(verdict),
            self._in_use(verdict),
            self._shortfall(ever),
            self.ahead,
            verdict.admission_checks,
        )
        return replace(verdict, message=message)

    def _held(self, hold: Hold, now: Placement, ever: Placement) -> FitVerdict:
        fits_once_resumed = now.stuck is None
        shortfall = {} if fits_once_resumed else self._shortfall(ever)
        message = words.held(self.totals, hold, fits_once_resumed, shortfall, self.ahead)
        return self._verdict(MUST_WAIT, hold.reason, message, now if fits_once_resumed else ever)

    # -- numbers ---------------------------------------------------------------------------

    def _free_now(self, verdict: FitVerdict) -> str:
        return words.free_now(self.totals, self.cq, self.lq, verdict.flavors, verdict.headroom)

    def _in_use(self, verdict: FitVerdict) -> dict[str, Decimal]:
        """What the ClusterQueue holds now in the flavors the numbers refer to."""
        used = {r: self.cq.reserved(f, r) for r, f in verdict.flavors.items() if f is not None}
        return {r: amount for r, amount in used.items() if amount > 0}

    def _shortfall(self, ever: Placement) -> dict[str, Decimal]:
        """What is missing now for the placement Kueue would make with the cohort idle."""
        missing: dict[str, Decimal] = {}
        for (flavor, resource), amount in ever.usage.items():
            gap = amount - self.headroom(flavor, resource)
            if gap > 0:
                missing[resource] = missing.get(resource, _ZERO) + gap
        return {r: missing[r] for r in self.totals if r in missing}

    def _flavor_per_resource(self, placement: Placement) -> dict[str, str | None]:
        """The flavor each requested resource's numbers refer to.

        When PodSets got different flavors, the one of the PodSet asking for the most wins;
        resources never placed get the flavor of their group with the largest max_obtainable.
        """
        chosen: dict[str, str | None] = {}
        largest: dict[str, Decimal] = {}
        for pod_set, requests in self.demands:
            for resource, amount in requests.items():
                flavor = placement.flavors.get(pod_set, {}).get(resource)
                if flavor is not None and amount > largest.get(resource, _ZERO):
                    chosen[resource], largest[resource] = flavor, amount
        for resource in self.totals:
            if resource not in chosen:
                chosen[resource] = self._closest_flavor(resource)
        return {r: chosen[r] for r in self.totals}

    def _closest_flavor(self, resource: str) -> str | None:
        group = self._group_of(resource)
        if group is None or not group.flavors:
            return None
        return max(group.flavors, key=lambda f: self.max_obtainable(f.name, resource)).name

    def _verdict(
        self, verdict: Verdict, reason: str, message: str, placement: Placement | None
    ) -> FitVerdict:
        flavors = self._flavor_per_resource(placement or Placement())

        def amounts(of: Capacity) -> dict[str, Decimal | None]:
            # A resource without a flavor is one the ClusterQueue does not cover: Kueue gives 0.
            return {r: _ZERO if f is None else of(f, r) for r, f in flavors.items()}

        complete = placement is not None and placement.stuck is None
        return FitVerdict(
            verdict=verdict,
            reason=reason,
            message=message,
            requests=self.totals,
            headroom=amounts(self.headroom),
            max_obtainable=amounts(self.max_obtainable),
            flavors=flavors,
            assignment=placement.flavors if complete and placement is not None else {},
            ahead=self.ahead.count if self.ahead is not None else None,
            queue=self.lq.name if self.lq is not None else None,
            cluster_queue=self.cq.name,
            ahead_bound=self.ahead.bound if self.ahead is not None else None,
            admission_checks=self._checks(placement if complete else None),
        )

    def _checks(self, placement: Placement | None) -> tuple[str, ...]:
        """The checks that apply to the placement's flavors (every one when unplaced)."""
        rules = self.cq.admission_checks
        if placement is None:
            return tuple(r.name for r in rules)
        flavors = {f for by_resource in placement.flavors.values() for f in by_resource.values()}
        return tuple(r.name for r in rules if r.applies(flavors))


def _unknown(demands: list[Demand], ahead: Ahead | None, lq: LocalQueueInfo | None) -> FitVerdict:
    totals = total(demands)
    return _without_quota(
        UNKNOWN,
        REASON_HIDDEN,
        words.unknown(totals, lq),
        totals,
        ahead,
        lq,
        lq.cluster_queue if lq is not None else None,
    )


def _missing_cluster_queue(
    demands: list[Demand], ahead: Ahead | None, lq: LocalQueueInfo | None
) -> FitVerdict:
    totals = total(demands)
    name = lq.cluster_queue if lq is not None and lq.cluster_queue else None
    message = words.missing_cluster_queue(totals, lq, name)
    return _without_quota(NEVER_FITS, REASON_MISSING_CQ, message, totals, ahead, lq, name)


def _without_quota(
    verdict: Verdict,
    reason: str,
    message: str,
    totals: dict[str, Decimal],
    ahead: Ahead | None,
    lq: LocalQueueInfo | None,
    cluster_queue: str | None,
) -> FitVerdict:
    """A verdict with no quota numbers to show (hidden, or no ClusterQueue to read them from)."""
    return FitVerdict(
        verdict=verdict,
        reason=reason,
        message=message,
        requests=totals,
        headroom=dict.fromkeys(totals),
        max_obtainable=dict.fromkeys(totals),
        flavors=dict.fromkeys(totals),
        assignment={},
        ahead=ahead.count if ahead is not None else None,
        queue=lq.name if lq is not None else None,
        cluster_queue=cluster_queue,
        ahead_bound=ahead.bound if ahead is not None else None,
    )
