"""Kueue's flavor assigner, ported: which ResourceFlavor each PodSet gets, or where it sticks.
It decides and says nothing (:mod:`.fit`, :mod:`.fit_words`). Pure. Which function is which part
of Kueue's Go: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.kueue_model import FlavorResource, ResourceGroup
from jupyter_dw.domain.quota import kueue_amount
from jupyter_dw.domain.raycluster_manifest import WORKER_GROUP_NAME
from jupyter_dw.domain.scheduling import Toleration
from jupyter_dw.names import GPU_RESOURCE

HEAD_POD_SET = "head"
"""Kueue's PodSet name for a RayCluster's head group (``headGroupPodSetName``)."""

PODS_RESOURCE = "pods"

SINGLE_POD_SET = "main"  # Kueue's default PodSet name, used for a bare totals mapping
_ZERO = Decimal(0)

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
    spec: ValidatedClusterSpec, *, at_max: bool = False, sidecar_counted: bool = True
) -> tuple[PodSetRequest, ...]:
    """The PodSets Kueue builds from ``spec.to_raycluster()``: ``head`` and the worker group.

    ``at_max`` counts ``max_workers`` instead of ``workers`` (see
    ``ValidatedClusterSpec.total_requests``).
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


Demand = tuple[str, dict[str, Decimal]]
"""A PodSet name and its total requests in Kueue's units, zero requests dropped."""


def demands(
    requests: Mapping[str, Decimal] | Sequence[PodSetRequest], covered: frozenset[str] | None
) -> list[Demand]:
    """Per-PodSet totals as Kueue counts them. ``covered`` None: the ClusterQueue is unknown.

    A bare mapping is one PodSet of totals; its ``pods`` entry (if any) is used as given, since
    the pod count cannot be derived from totals.
    """
    pods_counted = covered is not None and PODS_RESOURCE in covered
    if isinstance(requests, Mapping):
        totals = {r: kueue_amount(r, Decimal(q)) for r, q in requests.items() if Decimal(q) > 0}
        if not pods_counted:
            totals.pop(PODS_RESOURCE, None)
        return [(SINGLE_POD_SET, totals)] if totals else []
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


def total(demands: Iterable[Demand]) -> dict[str, Decimal]:
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
class Stuck:
    """A PodSet whose requests of one resource group fit no flavor of that group."""

    pod_set: str
    group: ResourceGroup
    requests: dict[str, Decimal]
    assumed: dict[FlavorResource, Decimal]


@dataclass
class Placement:
    """Flavors chosen per PodSet and resource, what they add up to, and where it got stuck."""

    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    stuck: Stuck | None = None


def fits(
    flavor: str,
    wanted: Mapping[str, Decimal],
    usage: Mapping[FlavorResource, Decimal],
    cap: Capacity,
) -> bool:
    # Kueue checks assumedUsage + request, so earlier PodSets of this workload count too.
    return all(usage.get((flavor, r), _ZERO) + q <= cap(flavor, r) for r, q in wanted.items())


Step = tuple[str, ResourceGroup, dict[str, Decimal]]
"""One flavor choice Kueue makes: a PodSet's requests of one resource group."""


def steps(demands: Sequence[Demand], groups: Sequence[ResourceGroup]) -> list[Step]:
    found = []
    for pod_set, requests in demands:
        for group in groups:
            wanted = {r: q for r, q in requests.items() if r in group.covered_resources}
            if wanted:
                found.append((pod_set, group, wanted))
    return found


Eligible = Callable[[str, str], bool]
"""``(pod set, flavor) -> bool``: whether Kueue may give that flavor to that pod set."""

Borrowing = Callable[[str, Mapping[str, Decimal], Mapping[FlavorResource, Decimal]], int]
"""``(flavor, requests, assumed usage) -> level``: how far up the cohort tree the requests
must borrow in that flavor (0: within the ClusterQueue's own quota)."""


def by_fungibility(fitting: list[str], level: Callable[[str], int]) -> list[str]:
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


def place(
    demands: Sequence[Demand],
    groups: Sequence[ResourceGroup],
    cap: Capacity,
    *,
    any_order: bool = False,
    eligible: Eligible = lambda _pod_set, _flavor: True,
    borrowing: Borrowing | None = None,
) -> Placement:
    """Assign flavors like Kueue: the first flavor that fits (default flavorFungibility), or
    with ``borrowing`` given (``whenCanBorrow: TryNextFlavor``) the first that fits without
    borrowing, else the one that borrows least.

    With ``any_order`` a later PodSet that fits nowhere makes earlier ones try their next
    flavors (depth-first, still in flavor order, so the first-fit answer comes first). That
    answers "is there any assignment at all?": Kueue's first attempt is first-fit, but it
    remembers the flavors it tried and starts later attempts from the next one, so an
    assignment first-fit misses may still be reached. ``stuck`` is where first-fit got stuck.
    """
    todo = steps(demands, groups)
    stuck: list[Stuck] = []

    def search(i: int, usage: dict[FlavorResource, Decimal], chosen: list[str]) -> Placement | None:
        if i == len(todo):
            return _placed(todo, chosen, usage)
        pod_set, group, wanted = todo[i]
        fitting = [
            f.name
            for f in group.flavors
            if eligible(pod_set, f.name) and fits(f.name, wanted, usage, cap)
        ]
        if not fitting and not stuck:
            stuck.append(Stuck(pod_set, group, wanted, dict(usage)))
        if borrowing is not None and not any_order:
            fitting = by_fungibility(fitting, lambda f: borrowing(f, wanted, usage))
        for flavor in fitting if any_order else fitting[:1]:
            more = {**usage}
            for resource, amount in wanted.items():
                more[(flavor, resource)] = more.get((flavor, resource), _ZERO) + amount
            found = search(i + 1, more, [*chosen, flavor])
            if found is not None:
                return found
        return None

    return search(0, {}, []) or Placement(stuck=stuck[0])


def _placed(
    todo: Sequence[Step], chosen: Sequence[str], usage: dict[FlavorResource, Decimal]
) -> Placement:
    flavors: dict[str, dict[str, str]] = {}
    for (pod_set, _, wanted), flavor in zip(todo, chosen, strict=True):
        for resource in wanted:
            flavors.setdefault(pod_set, {})[resource] = flavor
    return Placement(flavors=flavors, usage=usage)
