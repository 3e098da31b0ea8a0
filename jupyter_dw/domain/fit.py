"""Will a Ray cluster fit its queue? The fit verdict, decided the way Kueue assigns flavors.

Kueue v0.19 (``pkg/scheduler/flavorassigner/flavorassigner.go``) admits a workload like this,
and ``assess_fit`` follows it step by step:

- Requests are counted per PodSet (a RayCluster has PodSet ``head``, count 1, and one PodSet per
  worker group, count ``replicas``), in Kueue's integer units (``quota.kueue_amount``).
- ``pods`` is added to a PodSet's requests (= its count) only when the ClusterQueue covers it.
- A zero request of a resource no resource group covers is skipped (``#8079``); a non-zero one
  makes the workload inadmissible ("resource X unavailable in ClusterQueue", reason
  ``NoMatchingFlavor``).
- PodSets are assigned one after the other; each sees the quota earlier PodSets of the same
  workload took (``assumedUsage``). For each resource group the PodSet touches, the group's
  flavors are tried in order; a flavor fits when *every* requested resource of the group fits.
- A request above ``PotentialAvailable`` (``QuotaTree.max_obtainable``) in a flavor can never
  fit there (``ExceedsMaxQuota``); at most ``Available`` (``QuotaTree.headroom``) it fits now.
- ``flavorFungibility``: with the default (``whenCanBorrow: MayStopSearch`` — ``Borrow`` in
  v1beta1 —, ``whenCanPreempt: TryNextFlavor``) the first flavor that fits, borrowing or not,
  is taken. With ``whenCanBorrow: TryNextFlavor`` the search goes on past a flavor that fits
  only by borrowing: the first flavor that fits within the ClusterQueue's own quota wins, else
  the one borrowing least (``QuotaTree.borrowing_level``, Kueue's borrowing height). A flavor
  that does not fit now is skipped whatever ``whenCanPreempt`` says: whether preemption could
  make room depends on the priorities of admitted workloads, which the verdict does not know
  (Kueue behaves the same when it finds no preemption candidates). With ``whenCanPreempt:
  MayStopSearch`` on a ClusterQueue that preempts, a fits-now message says so when a flavor
  ahead of the assigned one was skipped (Kueue may stop there to preempt instead).
- Admission checks (``spec.admissionChecksStrategy``): fitting the quota only reserves it; the
  workload is admitted when every check that applies to its flavors is Ready. The verdict
  names them (``admission_checks``) and a fitting workload's message says it then waits for
  capacity from them (the verdict stays ``fits-now``: quota is what the verdict judges).

Headroom itself is never computed here: ``QuotaTree`` owns that arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Literal

from jupyter_dw.domain.cluster_spec import GPU_RESOURCE, WORKER_GROUP_NAME, ValidatedSpec
from jupyter_dw.domain.kueue_model import (
    ClusterQueueQuota,
    FlavorResource,
    LocalQueueInfo,
    ResourceGroup,
)
from jupyter_dw.domain.priorities import Ahead
from jupyter_dw.domain.quota import HIDDEN_QUOTA_HINT, QuotaTree, format_amount, kueue_amount
from jupyter_dw.domain.scheduling import FlavorTraits, Toleration, flavor_mismatch

Verdict = Literal["fits-now", "must-wait", "never-fits", "unknown"]
FITS_NOW: Verdict = "fits-now"
MUST_WAIT: Verdict = "must-wait"
NEVER_FITS: Verdict = "never-fits"
UNKNOWN: Verdict = "unknown"

HEAD_POD_SET = "head"
"""Kueue's PodSet name for a RayCluster's head group (``headGroupPodSetName``)."""

PODS_RESOURCE = "pods"

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
_SINGLE_POD_SET = "main"  # Kueue's default PodSet name, used for a bare totals mapping


# --------------------------------------------------------------------------------------------
# What is asked for
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodSetRequest:
    """One Kueue PodSet: ``count`` identical pods, each requesting ``per_pod``, placed with
    ``tolerations`` and ``node_selector`` (which decide the flavors it may get)."""

    name: str
    count: int
    per_pod: Mapping[str, Decimal]
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)


def pod_sets_for_spec(
    spec: ValidatedSpec, *, at_max: bool = False, sidecar_counted: bool = True
) -> tuple[PodSetRequest, ...]:
    """The PodSets Kueue builds from ``spec.to_raycluster()``: ``head`` and the worker group.

    ``at_max`` counts ``max_workers`` instead of ``workers`` (see ``ValidatedSpec.total_requests``).
    An autoscaling cluster's head pod set includes the Ray autoscaler sidecar when
    ``sidecar_counted`` (Kueue 0.19 adds KubeRay's ``autoscaler`` container to it; 0.14 does
    not, though the head pod still needs those resources on its node).
    """
    worker: dict[str, Decimal] = {"cpu": spec.worker_cpu, "memory": spec.worker_memory}
    if spec.worker_gpu > 0:
        worker[GPU_RESOURCE] = Decimal(spec.worker_gpu)
    head = {"cpu": spec.head_cpu, "memory": spec.head_memory}
    if spec.autoscaling and sidecar_counted:
        head = {
            "cpu": head["cpu"] + spec.autoscaler_cpu,
            "memory": head["memory"] + spec.autoscaler_memory,
        }
    count = spec.max_workers if at_max else spec.workers
    # Both pod sets are placed alike: the spec's tolerations and node selector.
    return (
        PodSetRequest(HEAD_POD_SET, 1, head, spec.tolerations, spec.node_selector),
        PodSetRequest(WORKER_GROUP_NAME, count, worker, spec.tolerations, spec.node_selector),
    )


_Demand = tuple[str, dict[str, Decimal]]
"""A PodSet name and its total requests in Kueue's units, zero requests dropped."""


def _demands(
    requests: Mapping[str, Decimal] | Sequence[PodSetRequest], covered: frozenset[str] | None
) -> list[_Demand]:
    """Per-PodSet totals as Kueue counts them. ``covered`` None: the ClusterQueue is unknown.

    A bare mapping is one PodSet of totals; its ``pods`` entry (if any) is used as given, since
    the pod count cannot be derived from totals.
    """
    pods_counted = covered is not None and PODS_RESOURCE in covered
    if isinstance(requests, Mapping):
        totals = {r: kueue_amount(r, Decimal(q)) for r, q in requests.items() if Decimal(q) > 0}
        if not pods_counted:
            totals.pop(PODS_RESOURCE, None)
        return [(_SINGLE_POD_SET, totals)] if totals else []
    demands = []
    for pod_set in requests:
        if pod_set.count <= 0:
            continue  # a PodSet of zero pods requests nothing
        totals = {
            r: kueue_amount(r, Decimal(q)) * pod_set.count
            for r, q in pod_set.per_pod.items()
            if Decimal(q) > 0 and r != PODS_RESOURCE
        }
        if pods_counted:
            totals[PODS_RESOURCE] = Decimal(pod_set.count)
        if totals:
            demands.append((pod_set.name, totals))
    return demands


def _sum(demands: Iterable[_Demand]) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = {}
    for _, requests in demands:
        for resource, amount in requests.items():
            totals[resource] = totals.get(resource, _ZERO) + amount
    return totals


# --------------------------------------------------------------------------------------------
# Flavor assignment (Kueue's first-fit over PodSets, resource groups and flavors)
# --------------------------------------------------------------------------------------------

Capacity = Callable[[str, str], Decimal]
"""``(flavor, resource) -> amount`` one workload may take: headroom or max_obtainable."""


@dataclass(frozen=True)
class _Stuck:
    """A PodSet whose requests of one resource group fit no flavor of that group."""

    pod_set: str
    group: ResourceGroup
    requests: dict[str, Decimal]
    assumed: dict[FlavorResource, Decimal]


@dataclass
class _Placement:
    """Flavors chosen per PodSet and resource, what they add up to, and where it got stuck."""

    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    stuck: _Stuck | None = None


def _fits(
    flavor: str,
    wanted: Mapping[str, Decimal],
    usage: Mapping[FlavorResource, Decimal],
    cap: Capacity,
) -> bool:
    # Kueue checks assumedUsage + request, so earlier PodSets of this workload count too.
    return all(usage.get((flavor, r), _ZERO) + q <= cap(flavor, r) for r, q in wanted.items())


_Step = tuple[str, ResourceGroup, dict[str, Decimal]]
"""One flavor choice Kueue makes: a PodSet's requests of one resource group."""


def _steps(demands: Sequence[_Demand], groups: Sequence[ResourceGroup]) -> list[_Step]:
    steps = []
    for pod_set, requests in demands:
        for group in groups:
            wanted = {r: q for r, q in requests.items() if r in group.covered_resources}
            if wanted:
                steps.append((pod_set, group, wanted))
    return steps


Eligible = Callable[[str, str], bool]
"""``(pod set, flavor) -> bool``: whether Kueue may give that flavor to that pod set."""

Borrowing = Callable[[str, Mapping[str, Decimal], Mapping[FlavorResource, Decimal]], int]
"""``(flavor, requests, assumed usage) -> level``: how far up the cohort tree the requests
must borrow in that flavor (0: within the ClusterQueue's own quota)."""


def _by_fungibility(fitting: list[str], level: Callable[[str], int]) -> list[str]:
    """``whenCanBorrow: TryNextFlavor``: the first fitting flavor that needs no borrowing,
    else the one borrowing least (first of equals). Kueue's findFlavorForPodSets stops at a
    flavor whose mode is optimal and otherwise keeps the preferred (isPreferred) one."""
    best: tuple[int, str] | None = None
    for flavor in fitting:
        borrows = level(flavor)
        if borrows == 0:
            return [flavor]
        if best is None or borrows < best[0]:
            best = (borrows, flavor)
    return [best[1]] if best is not None else []


def _place(
    demands: Sequence[_Demand],
    groups: Sequence[ResourceGroup],
    cap: Capacity,
    *,
    any_order: bool = False,
    eligible: Eligible = lambda _pod_set, _flavor: True,
    borrowing: Borrowing | None = None,
) -> _Placement:
    """Assign flavors like Kueue: the first flavor that fits (default flavorFungibility), or
    with ``borrowing`` given (``whenCanBorrow: TryNextFlavor``) the first that fits without
    borrowing, else the one that borrows least.

    With ``any_order`` a later PodSet that fits nowhere makes earlier ones try their next
    flavors (depth-first, still in flavor order, so the first-fit answer comes first). That
    answers "is there any assignment at all?": Kueue's first attempt is first-fit, but it
    remembers the flavors it tried and starts later attempts from the next one, so an
    assignment first-fit misses may still be reached. ``stuck`` is where first-fit got stuck.
    """
    steps = _steps(demands, groups)
    stuck: list[_Stuck] = []

    def search(
        i: int, usage: dict[FlavorResource, Decimal], chosen: list[str]
    ) -> _Placement | None:
        if i == len(steps):
            return _placement(steps, chosen, usage)
        pod_set, group, wanted = steps[i]
        fitting = [
            f.name
            for f in group.flavors
            if eligible(pod_set, f.name) and _fits(f.name, wanted, usage, cap)
        ]
        if not fitting and not stuck:
            stuck.append(_Stuck(pod_set, group, wanted, dict(usage)))
        if borrowing is not None and not any_order:
            fitting = _by_fungibility(fitting, lambda f: borrowing(f, wanted, usage))
        for flavor in fitting if any_order else fitting[:1]:
            more = {**usage}
            for resource, amount in wanted.items():
                more[(flavor, resource)] = more.get((flavor, resource), _ZERO) + amount
            found = search(i + 1, more, [*chosen, flavor])
            if found is not None:
                return found
        return None

    return search(0, {}, []) or _Placement(stuck=stuck[0])


def _placement(
    steps: Sequence[_Step], chosen: Sequence[str], usage: dict[FlavorResource, Decimal]
) -> _Placement:
    flavors: dict[str, dict[str, str]] = {}
    for (pod_set, _, wanted), flavor in zip(steps, chosen, strict=True):
        for resource in wanted:
            flavors.setdefault(pod_set, {})[resource] = flavor
    return _Placement(flavors=flavors, usage=usage)


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
    ``ValidatedSpec.total_requests()`` (treated as one PodSet). ``cluster_queue``: the
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
        return _unknown(_demands(requests, None), ahead, local_queue)
    if cluster_queue is None:
        return _missing_cluster_queue(_demands(requests, None), ahead, local_queue)
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
        _demands(requests, covered),
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
    """One assessment against a visible ClusterQueue: the checks and the sentences."""

    def __init__(
        self,
        cq: ClusterQueueQuota,
        tree: QuotaTree,
        demands: list[_Demand],
        ahead: Ahead | None,
        lq: LocalQueueInfo | None,
        mismatch: Callable[[str, str], str | None] = lambda _pod_set, _flavor: None,
    ) -> None:
        self.mismatch = mismatch
        self.cq = cq
        self.tree = tree
        self.demands = demands
        self.totals = _sum(demands)
        self.ahead = ahead
        self.lq = lq
        self.groups = cq.resource_groups

    def headroom(self, flavor: str, resource: str) -> Decimal:
        return self.tree.headroom(self.cq.name, flavor, resource)

    def max_obtainable(self, flavor: str, resource: str) -> Decimal:
        return self.tree.max_obtainable(self.cq.name, flavor, resource)

    # -- decision --------------------------------------------------------------------------

    def run(self) -> FitVerdict:
        if not self.totals:
            return self._verdict(FITS_NOW, REASON_FITS, "Needs no quota: fits now.", _Placement())
        uncovered = [r for r in self.totals if self._group_of(r) is None]
        if uncovered:
            return self._uncovered(uncovered)
        if self.tree.has_cycle(self.cq.name):
            return self._cycle()
        for pod_set, group, _ in _steps(self.demands, self.groups):
            reasons = [self.mismatch(pod_set, f.name) for f in group.flavors]
            if all(reasons):
                return self._no_usable_flavor(pod_set, [r for r in reasons if r])
        ever = _place(
            self.demands, self.groups, self.max_obtainable, any_order=True, eligible=self.eligible
        )
        if ever.stuck is not None:
            return self._exceeds(ever.stuck, ever)
        now = _place(
            self.demands,
            self.groups,
            self.headroom,
            eligible=self.eligible,
            borrowing=self.borrowing
            if self.cq.flavor_fungibility.try_next_when_borrowing
            else None,
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

    def _no_usable_flavor(self, pod_set: str, reasons: list[str]) -> FitVerdict:
        message = (
            f"{_needs(self.totals)}; no flavor of ClusterQueue {self.cq.name} can take pod set "
            f"{pod_set}: {'; '.join(reasons)}. Add the toleration (or change the node "
            "selector) that one of these flavors needs, or use another queue."
        )
        return self._verdict(NEVER_FITS, REASON_NO_FLAVOR, message, None)

    def _group_of(self, resource: str) -> ResourceGroup | None:
        return next((g for g in self.groups if resource in g.covered_resources), None)

    def _hold(self) -> tuple[str, str] | None:
        """Why Kueue admits nothing to this queue right now, as ``(reason, sentence)``."""
        cq, lq = self.cq, self.lq
        if cq.stopped:
            return REASON_STOPPED, (
                f"ClusterQueue {cq.name} is stopped (stopPolicy={cq.stop_policy}): Kueue keeps "
                "new workloads pending until an administrator resumes it"
            )
        if lq is not None and lq.stopped:
            return REASON_STOPPED, (
                f"LocalQueue {lq.name} is stopped (stopPolicy={lq.stop_policy}): Kueue keeps "
                "new workloads pending until it is resumed"
            )
        if cq.active_condition is False:
            why = cq.active_message or "no reason given"
            return REASON_INACTIVE, (
                f"ClusterQueue {cq.name} is not active ({why}): Kueue keeps new workloads "
                "pending until it is"
            )
        if lq is not None and lq.active_condition is False:
            why = lq.active_message or "no reason given"
            return REASON_INACTIVE, f"LocalQueue {lq.name} is not active ({why})"
        return None

    # -- per-resource numbers --------------------------------------------------------------

    def _flavor_per_resource(self, placement: _Placement) -> dict[str, str | None]:
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
        self, verdict: Verdict, reason: str, message: str, placement: _Placement | None
    ) -> FitVerdict:
        flavors = self._flavor_per_resource(placement or _Placement())

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

    def _checks(self, placement: _Placement | None) -> tuple[str, ...]:
        """The checks that apply to the placement's flavors (every one when unplaced)."""
        rules = self.cq.admission_checks
        if placement is None:
            return tuple(r.name for r in rules)
        flavors = {f for by_resource in placement.flavors.values() for f in by_resource.values()}
        return tuple(r.name for r in rules if r.applies(flavors))

    # -- verdicts --------------------------------------------------------------------------

    def _uncovered(self, uncovered: list[str]) -> FitVerdict:
        covered = [r for g in self.groups for r in g.covered_resources]
        message = (
            f"{_needs(self.totals)}; ClusterQueue {self.cq.name} has no quota for "
            f"{', '.join(uncovered)} (it covers {', '.join(covered) or 'nothing'}), so Kueue "
            "can never admit it. Ask for no "
            f"{' or '.join(uncovered)}, or use a queue that provides {_it(uncovered)}."
        )
        return self._verdict(NEVER_FITS, REASON_NO_FLAVOR, message, None)

    def _cycle(self) -> FitVerdict:
        message = (
            f"{_needs(self.totals)}; the cohort tree of ClusterQueue {self.cq.name} has a cycle, "
            "so Kueue admits nothing to it until an administrator removes the cycle."
        )
        return self._verdict(MUST_WAIT, REASON_CYCLE, message, None)

    def _exceeds(self, stuck: _Stuck, ever: _Placement) -> FitVerdict:
        # Name every flavor's excess: the user sees the most each flavor could ever give.
        parts = []
        for flavor in stuck.group.flavors:
            over = [
                (r, stuck.assumed.get((flavor.name, r), _ZERO) + q)
                for r, q in stuck.requests.items()
                if stuck.assumed.get((flavor.name, r), _ZERO) + q
                > self.max_obtainable(flavor.name, r)
            ]
            needed = ", ".join(_human(r, amount) for r, amount in over)
            most = ", ".join(_human(r, self.max_obtainable(flavor.name, r)) for r, _ in over)
            parts.append(f"flavor {flavor.name} would need {needed} but can give at most {most}")
        pod_set = "" if stuck.pod_set == _SINGLE_POD_SET else f" (at pod set {stuck.pod_set})"
        message = (
            f"{_needs(self.totals)}: more than ClusterQueue {self.cq.name} can ever give"
            f"{pod_set}, counting nominal quota and all it may borrow: {'; '.join(parts)}. "
            "Ask for fewer or smaller workers."
        )
        return self._verdict(NEVER_FITS, REASON_EXCEEDS, message, ever)

    def _fits_now(self, now: _Placement) -> FitVerdict:
        verdict = self._verdict(FITS_NOW, REASON_FITS, "", now)
        message = self._free_now(verdict)
        checks = verdict.admission_checks
        if checks:
            message += (
                f": fits the quota; then waits for capacity from {_checks_phrase(checks)} "
                "before Kueue admits it"
            )
        else:
            message += ": fits now"
        if self.ahead is not None and self.ahead.count:
            # Fitting does not jump the queue: under StrictFIFO the head of the queue goes first.
            message += f"; {_workloads(self.ahead)} pending ahead may be admitted first"
        skipped = self._preemptible_before(now)
        if skipped:
            message += (
                f"; but with whenCanPreempt: MayStopSearch Kueue may instead preempt "
                f"lower-priority workloads in flavor {', '.join(skipped)}, which comes first"
            )
        return replace(verdict, message=message + ".")

    def _preemptible_before(self, now: _Placement) -> list[str]:
        """Flavors ahead of the ones assigned in which Kueue may stop to preempt instead
        (``whenCanPreempt: MayStopSearch`` on a ClusterQueue that preempts). Whether it does
        depends on the priorities of admitted workloads, which the verdict does not know: so
        this is said, not decided."""
        if not (self.cq.preempts and self.cq.flavor_fungibility.stops_to_preempt):
            return []
        found: list[str] = []
        for pod_set, group, wanted in _steps(self.demands, self.groups):
            assigned = {now.flavors.get(pod_set, {}).get(resource) for resource in wanted}
            for flavor in group.flavors:
                if flavor.name in assigned:
                    break
                if self.eligible(pod_set, flavor.name) and flavor.name not in found:
                    found.append(flavor.name)
        return found

    def _waits(self, ever: _Placement) -> FitVerdict:
        verdict = self._verdict(MUST_WAIT, REASON_WAITING, "", ever)
        in_use = self._in_use(verdict)
        message = self._free_now(verdict)
        if in_use:
            message += f" ({in_use} in use)"
        shortfall = self._shortfall(ever)
        message += f": waits for {shortfall}" if shortfall else ": must wait for quota"
        if self.ahead is not None:
            message += f"; {_workloads(self.ahead)} ahead"
        if verdict.admission_checks:
            message += f"; then for capacity from {_checks_phrase(verdict.admission_checks)}"
        return replace(verdict, message=message + ".")

    def _held(self, hold: tuple[str, str], now: _Placement, ever: _Placement) -> FitVerdict:
        reason, sentence = hold
        if now.stuck is None:
            after = "once admissions resume it fits (enough quota is free now)"
        else:
            shortfall = self._shortfall(ever)
            after = f"even then it waits for {shortfall}" if shortfall else "even then it waits"
        message = f"{_needs(self.totals)}; {sentence}; {after}"
        if self.ahead is not None:
            message += f"; {_workloads(self.ahead)} ahead"
        return self._verdict(MUST_WAIT, reason, message + ".", now if now.stuck is None else ever)

    # -- sentence parts --------------------------------------------------------------------

    def _free_now(self, verdict: FitVerdict) -> str:
        return f"{_needs(self.totals)}; {self._where(verdict)} has {self._free(verdict)} free now"

    def _where(self, verdict: FitVerdict) -> str:
        flavors = _flavor_phrase(verdict.flavors)
        if self.lq is not None:
            return f"queue {self.lq.name} (ClusterQueue {self.cq.name}, {flavors})"
        return f"ClusterQueue {self.cq.name} ({flavors})"

    def _free(self, verdict: FitVerdict) -> str:
        free = ", ".join(_human(r, h) for r, h in verdict.headroom.items() if h is not None)
        if self.cq.cohort:
            free += f" counting what cohort {self.cq.cohort} may lend"
        return free

    def _in_use(self, verdict: FitVerdict) -> str:
        used = [(r, self.cq.reserved(f, r)) for r, f in verdict.flavors.items() if f is not None]
        return ", ".join(_human(r, amount) for r, amount in used if amount > 0)

    def _shortfall(self, ever: _Placement) -> str:
        """What is missing now for the placement Kueue would make with the cohort idle."""
        missing: dict[str, Decimal] = {}
        for (flavor, resource), amount in ever.usage.items():
            gap = amount - self.headroom(flavor, resource)
            if gap > 0:
                missing[resource] = missing.get(resource, _ZERO) + gap
        return ", ".join(_human(r, missing[r]) for r in self.totals if r in missing)


def _unknown(demands: list[_Demand], ahead: Ahead | None, lq: LocalQueueInfo | None) -> FitVerdict:
    totals = _sum(demands)
    where = f"queue {lq.name}" if lq is not None else "the queue"
    message = f"{_needs(totals)}; whether {where} can take it is unknown. "
    if lq is not None and lq.stopped:
        message += f"LocalQueue {lq.name} is stopped (stopPolicy={lq.stop_policy}). "
    message += HIDDEN_QUOTA_HINT
    return _without_quota(
        UNKNOWN,
        REASON_HIDDEN,
        message,
        totals,
        ahead,
        lq,
        lq.cluster_queue if lq is not None else None,
    )


def _missing_cluster_queue(
    demands: list[_Demand], ahead: Ahead | None, lq: LocalQueueInfo | None
) -> FitVerdict:
    totals = _sum(demands)
    name = lq.cluster_queue if lq is not None and lq.cluster_queue else None
    if lq is not None and not lq.cluster_queue:
        what = f"LocalQueue {lq.name} names no ClusterQueue"
    else:
        what = f"ClusterQueue {name or '(unknown)'} does not exist"
    message = (
        f"{_needs(totals)}; {what}, so Kueue admits nothing from "
        f"{'queue ' + lq.name if lq is not None else 'this queue'} until an administrator "
        "creates it."
    )
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


# --------------------------------------------------------------------------------------------
# Words
# --------------------------------------------------------------------------------------------


def _human(resource: str, amount: Decimal | None) -> str:
    """``5 CPU``, ``12Gi memory``, ``3 pods``, ``2 nvidia.com/gpu``."""
    text = format_amount(resource, amount) or "?"
    if resource == "cpu":
        return f"{text} CPU"
    return f"{text} {resource}"


def _needs(totals: Mapping[str, Decimal]) -> str:
    if not totals:
        return "Needs no resources"
    return "Needs " + ", ".join(_human(r, q) for r, q in totals.items())


def _it(resources: list[str]) -> str:
    return "it" if len(resources) == 1 else "them"


def _workloads(ahead: Ahead) -> str:
    """``no workloads``, ``2 workloads``, ``at most 4 workloads (every pending one counted:
    priorities unknown)``."""
    if ahead.count == 0 and ahead.bound != "at-least":
        return "no workloads"
    if ahead.bound == "at-most":
        return f"{ahead.words()} (an upper bound: every pending one counted, priorities unknown)"
    return ahead.words()


def _checks_phrase(checks: Sequence[str]) -> str:
    """``admission check X`` or ``admission checks X, Y``."""
    return f"admission check{'s' if len(checks) > 1 else ''} {', '.join(checks)}"


def _flavor_phrase(flavors: Mapping[str, str | None]) -> str:
    by_flavor: dict[str, list[str]] = {}
    for resource, flavor in flavors.items():
        if flavor is not None:
            by_flavor.setdefault(flavor, []).append(resource)
    if len(by_flavor) == 1:
        return f"flavor {next(iter(by_flavor))}"
    if not by_flavor:
        return "no flavor"
    return "flavors " + ", ".join(f"{f} ({', '.join(rs)})" for f, rs in by_flavor.items())


# --------------------------------------------------------------------------------------------
# What would fit now
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Suggestion:
    """A smaller cluster (or a RayJob's smaller cluster) that would be admitted now: the same
    head and per-worker sizes with ``workers`` workers (``requests``: its totals in Kueue's
    units, the head and a RayJob's submitter included)."""

    workers: int
    requests: Mapping[str, Decimal]
    message: str

    def to_json(self) -> dict[str, Any]:
        """``{"workers", "requests", "message"}``, amounts as Kubernetes quantity strings."""
        return {
            "workers": self.workers,
            "requests": {r: format_amount(r, q) for r, q in self.requests.items()},
            "message": self.message,
        }


def largest_fitting(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest n in ``low..high`` for which ``fits(n)``, given that ``low`` counts as
    fitting (it is returned when nothing above does) and that fitting only gets easier as n
    falls: a binary search, O(log(high - low)) calls."""
    while low < high:  # invariant: low fits, high + 1 does not
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def suggest(
    spec: ValidatedSpec,
    cluster_queue: ClusterQueueQuota | None,
    tree: QuotaTree | None,
    ahead: int | Ahead | None = None,
    *,
    local_queue: LocalQueueInfo | None = None,
    flavors: Mapping[str, FlavorTraits] | None = None,
    sidecar_counted: bool = True,
) -> Suggestion | None:
    """The largest worker count N >= 1 (below ``spec.workers``) for which the same cluster
    would fit now (see :func:`suggest_workers`)."""
    return suggest_workers(
        spec.workers,
        lambda n: pod_sets_for_spec(spec.with_workers(n), sidecar_counted=sidecar_counted),
        cluster_queue,
        tree,
        ahead,
        local_queue=local_queue,
        flavors=flavors,
    )


def suggest_workers(
    workers: int,
    pod_sets_with: Callable[[int], Sequence[PodSetRequest]],
    cluster_queue: ClusterQueueQuota | None,
    tree: QuotaTree | None,
    ahead: int | Ahead | None = None,
    *,
    local_queue: LocalQueueInfo | None = None,
    flavors: Mapping[str, FlavorTraits] | None = None,
) -> Suggestion | None:
    """The largest worker count N >= 1 (below ``workers``) for which the pod sets Kueue would
    count with N workers, ``pod_sets_with(N)`` (a cluster's head and workers; a RayJob's also
    its submitter), would fit now; None when none does, quota is hidden, or the queue is
    ``StrictFIFO`` with pending workloads ahead (there nothing starts before them, whatever
    its size). The message names the other pod sets counted ("with the head and the
    submitter").

    Fitting only gets easier with fewer workers, so a binary search over N asks
    :func:`assess_fit` O(log N) times.
    """
    if tree is None or cluster_queue is None or workers <= 1:
        return None
    if cluster_queue.strict_fifo and (ahead.count if isinstance(ahead, Ahead) else ahead):
        return None

    def verdict(n: int) -> FitVerdict:
        return assess_fit(
            pod_sets_with(n), cluster_queue, tree, ahead, local_queue=local_queue, flavors=flavors
        )

    low = largest_fitting(0, workers - 1, lambda n: verdict(n).verdict == FITS_NOW)
    if low == 0:
        return None
    found = verdict(low)
    counted = " and the ".join(p.name for p in pod_sets_with(low) if p.name != WORKER_GROUP_NAME)
    started = f"{low} worker{'s' if low != 1 else ''}"
    totals = ", ".join(_human(r, q) for r, q in found.requests.items())
    message = f"{started} would start now ({totals} with the {counted})"
    return Suggestion(low, dict(found.requests), message)
