"""Kueue quota arithmetic: headroom per ClusterQueue, flavor and resource, and queue summaries.
One module on purpose: the port of Kueue's quota tree (its scheduler cache) reads best beside it
in one piece. The formulas, with Kueue's names: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Any, overload

from jupyter_dw.domain.kueue_model import (
    ClusterQueueQuota,
    CohortQuota,
    FlavorResource,
    LocalQueueInfo,
    ResourceQuota,
    amounts_by_key,
    default_local_queue,
)
from jupyter_dw.domain.multikueue import Dispatcher
from jupyter_dw.domain.quantity import format_quantity

_ZERO = Decimal(0)
_MILLI = Decimal("0.001")
_BINARY_RESOURCES = frozenset({"memory", "ephemeral-storage"})

HIDDEN_QUOTA_HINT = (
    "Quota is hidden: this identity may not read ClusterQueues. Granting list and watch on "
    "clusterqueues.kueue.x-k8s.io (a cluster-scoped ClusterRole bound with a "
    "ClusterRoleBinding) would show nominal quota, borrowing/lending limits and headroom: "
    "examples/rbac/clusterrole.yaml, or the YAML `jupyter dw doctor` prints for this workbench."
)


# --------------------------------------------------------------------------------------------
# Units and formatting
# --------------------------------------------------------------------------------------------


def is_binary_resource(resource: str) -> bool:
    """True for byte-sized resources shown with binary suffixes (``16Gi``)."""
    return resource in _BINARY_RESOURCES or resource.startswith("hugepages-")


@overload
def format_amount(resource: str, value: Decimal) -> str: ...
@overload
def format_amount(resource: str, value: None) -> None: ...
@overload
def format_amount(resource: str, value: Decimal | None) -> str | None: ...
def format_amount(resource: str, value: Decimal | None) -> str | None:
    """Format ``value`` as a canonical Kubernetes quantity for ``resource``; None stays None."""
    if value is None:
        return None
    return format_quantity(value, binary=is_binary_resource(resource))


def kueue_amount(resource: str, value: Decimal) -> Decimal:
    """Round ``value`` the way Kueue stores it: up to 1m for ``cpu``, up to 1 otherwise."""
    step = _MILLI if resource == "cpu" else Decimal(1)
    return (value / step).to_integral_value(rounding=ROUND_CEILING) * step


def _kueue_quota(resource: str, quota: ResourceQuota) -> ResourceQuota:
    def opt(value: Decimal | None) -> Decimal | None:
        return None if value is None else kueue_amount(resource, value)

    return ResourceQuota(
        name=quota.name,
        nominal=kueue_amount(resource, quota.nominal),
        borrowing_limit=opt(quota.borrowing_limit),
        lending_limit=opt(quota.lending_limit),
    )


def _kueue_quotas(
    quotas: Mapping[FlavorResource, ResourceQuota],
) -> dict[FlavorResource, ResourceQuota]:
    return {fr: _kueue_quota(fr[1], quota) for fr, quota in quotas.items()}


# --------------------------------------------------------------------------------------------
# The quota tree
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Node:
    """A ClusterQueue or Cohort in the tree, with Kueue's SubtreeQuota and Usage."""

    name: str
    quotas: dict[FlavorResource, ResourceQuota]
    parent_name: str | None
    own_usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)
    subtree: dict[FlavorResource, Decimal] = field(default_factory=dict)
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    in_cycle: bool = False

    def local_quota(self, fr: FlavorResource) -> Decimal:
        # Quota kept for this subtree because of a lending limit; the parent never sees it.
        quota = self.quotas.get(fr)
        if quota is None or quota.lending_limit is None:
            return _ZERO
        return max(_ZERO, self.subtree.get(fr, _ZERO) - quota.lending_limit)

    def local_available(self, fr: FlavorResource) -> Decimal:
        return max(_ZERO, self.local_quota(fr) - self.usage.get(fr, _ZERO))

    def borrowing_limit(self, fr: FlavorResource) -> Decimal | None:
        quota = self.quotas.get(fr)
        return None if quota is None else quota.borrowing_limit


def _accumulate(node: _Node) -> None:
    """Fill SubtreeQuota and Usage bottom-up (Kueue's updateCohortResourceNode)."""
    node.subtree = {fr: quota.nominal for fr, quota in node.quotas.items()}
    node.usage = dict(node.own_usage)
    for child in node.children:
        _accumulate(child)
        for fr, quota in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, _ZERO) + quota - child.local_quota(fr)
        for fr, used in child.usage.items():
            node.usage[fr] = node.usage.get(fr, _ZERO) + max(_ZERO, used - child.local_quota(fr))


def _available(node: _Node, fr: FlavorResource) -> Decimal:
    """Kueue's ``available``: may be negative when the tree is over-admitted."""
    if node.parent is None:
        return node.subtree.get(fr, _ZERO) - node.usage.get(fr, _ZERO)
    from_parent = _available(node.parent, fr)
    limit = node.borrowing_limit(fr)
    if limit is not None:
        local = node.local_quota(fr)
        stored_in_parent = node.subtree.get(fr, _ZERO) - local
        used_in_parent = max(_ZERO, node.usage.get(fr, _ZERO) - local)
        from_parent = min(from_parent, stored_in_parent - used_in_parent + limit)
    return node.local_available(fr) + from_parent


def _potential(node: _Node, fr: FlavorResource) -> Decimal:
    """Kueue's ``potentialAvailable``: capacity with no usage anywhere, within limits."""
    if node.parent is None:
        return node.subtree.get(fr, _ZERO)
    potential = node.local_quota(fr) + _potential(node.parent, fr)
    limit = node.borrowing_limit(fr)
    if limit is not None:
        potential = min(potential, node.subtree.get(fr, _ZERO) + limit)
    return potential


@dataclass(frozen=True)
class QuotaRow:
    """Quota of one ClusterQueue for one flavor and resource, in Kueue's units.

    ``borrowing_limit`` None: unbounded. ``lending_limit`` None: may lend all unused nominal.
    ``reserved`` is ``status.flavorsReservation`` (what counts for admission), ``used`` is
    ``status.flavorsUsage`` (admitted workloads), ``borrowed`` the reservation above nominal.
    ``headroom``: the largest request one new workload in this ClusterQueue gets right now
    without preemption, counting what the cohort tree may lend. ``max_obtainable``: the
    largest request it could ever get, with everything else in the cohort idle; a request
    above it never fits.
    """

    cluster_queue: str
    flavor: str
    resource: str
    nominal: Decimal
    borrowing_limit: Decimal | None
    lending_limit: Decimal | None
    reserved: Decimal
    used: Decimal
    borrowed: Decimal
    headroom: Decimal
    max_obtainable: Decimal


class QuotaTree:
    """All ClusterQueues and Cohorts linked as Kueue links them, answering quota questions.

    A ClusterQueue's cohort name that matches no ``Cohort`` object makes an implicit cohort
    with no quota of its own (as in Kueue); so does a ``Cohort`` whose parent does not exist.
    Nodes whose path to the root has a cycle admit nothing (Kueue deactivates them): their
    headroom and max_obtainable are zero.
    """

    def __init__(
        self,
        cluster_queues: Iterable[ClusterQueueQuota],
        cohorts: Iterable[CohortQuota] = (),
    ) -> None:
        self._queues: dict[str, ClusterQueueQuota] = {cq.name: cq for cq in cluster_queues}
        self._cohorts: dict[str, _Node] = {
            c.name: _Node(c.name, _kueue_quotas(c.quotas()), c.parent) for c in cohorts
        }
        self._cq_nodes: dict[str, _Node] = {
            name: self._cq_node(cq) for name, cq in self._queues.items()
        }
        # rows() per ClusterQueue, filled as asked: every LocalQueue of a ClusterQueue shows
        # the same rows, and nothing changes a tree once built.
        self._rows: dict[str, tuple[QuotaRow, ...]] = {}
        self._link()
        self._mark_cycles()
        for node in self._cohorts.values():
            if node.parent is None:
                _accumulate(node)
        for node in self._cq_nodes.values():
            if node.parent is None and not node.in_cycle:
                _accumulate(node)

    @staticmethod
    def _cq_node(cq: ClusterQueueQuota) -> _Node:
        usage = {fr: kueue_amount(fr[1], v) for fr, v in amounts_by_key(cq.reservation).items()}
        return _Node(cq.name, _kueue_quotas(cq.quotas()), cq.cohort, own_usage=usage)

    def _cohort(self, name: str) -> _Node:
        if name not in self._cohorts:
            self._cohorts[name] = _Node(name, {}, None)  # implicit cohort: no quota, no parent
        return self._cohorts[name]

    def _link(self) -> None:
        for node in list(self._cohorts.values()):
            if node.parent_name:
                node.parent = self._cohort(node.parent_name)
                node.parent.children.append(node)
        for node in self._cq_nodes.values():
            if node.parent_name:
                node.parent = self._cohort(node.parent_name)
                node.parent.children.append(node)

    def _mark_cycles(self) -> None:
        # Kueue's hierarchy.HasCycle: walking up from a cohort revisits a cohort.
        for start in self._cohorts.values():
            seen: set[str] = set()
            node: _Node | None = start
            while node is not None and node.name not in seen:
                seen.add(node.name)
                node = node.parent
            start.in_cycle = node is not None
        for node in self._cq_nodes.values():
            node.in_cycle = node.parent is not None and node.parent.in_cycle

    # -- queries --------------------------------------------------------------------------

    @property
    def cluster_queue_names(self) -> tuple[str, ...]:
        """Names of the ClusterQueues in the tree, in input order."""
        return tuple(self._queues)

    def cluster_queue(self, name: str) -> ClusterQueueQuota | None:
        """The ClusterQueue named ``name``, or None if it is not in the tree."""
        return self._queues.get(name)

    def has_cycle(self, cluster_queue: str) -> bool:
        """True when the cohort path of ``cluster_queue`` has a cycle (Kueue disables it)."""
        return self._node(cluster_queue).in_cycle

    def cohort_path(self, cluster_queue: str) -> tuple[str, ...]:
        """Cohort names from the ClusterQueue's cohort up to the root (empty without one)."""
        path: list[str] = []
        node = self._node(cluster_queue).parent
        while node is not None and node.name not in path:
            path.append(node.name)
            node = node.parent
        return tuple(path)

    def headroom(self, cluster_queue: str, flavor: str, resource: str) -> Decimal:
        """The most one new workload in ``cluster_queue`` gets right now without preemption.

        Zero for a ``(flavor, resource)`` the ClusterQueue has no quota for: Kueue never
        assigns such a flavor to that resource.
        """
        node = self._node(cluster_queue)
        fr = (flavor, resource)
        if node.in_cycle or fr not in node.quotas:
            return _ZERO
        return max(_ZERO, _available(node, fr))

    def max_obtainable(self, cluster_queue: str, flavor: str, resource: str) -> Decimal:
        """The most ``cluster_queue`` could ever get with the rest of its cohort idle."""
        node = self._node(cluster_queue)
        fr = (flavor, resource)
        if node.in_cycle or fr not in node.quotas:
            return _ZERO
        return max(_ZERO, _potential(node, fr))

    def borrowing_level(
        self, cluster_queue: str, flavor: str, resource: str, amount: Decimal
    ) -> int:
        """How far up the cohort tree ``amount`` more of ``(flavor, resource)`` has to come
        from: 0 within the ClusterQueue's own quota, 1 from its cohort, 2 from that cohort's
        parent... (Kueue's ``FindHeightOfLowestSubtreeThatFits``; a node borrows when its
        usage plus the amount exceeds its subtree quota). Kueue compares these levels between
        flavors for ``flavorFungibility``; the order along one path is all that matters."""
        node = self._node(cluster_queue)
        fr = (flavor, resource)

        def borrowing(n: _Node, more: Decimal) -> bool:
            return n.usage.get(fr, _ZERO) + more > n.subtree.get(fr, _ZERO)

        if node.parent is None or node.in_cycle or not borrowing(node, amount):
            return 0
        remaining = amount - node.local_available(fr)
        level, parent, seen = 1, node.parent, {node.name}
        while (
            parent.parent is not None and parent.name not in seen and borrowing(parent, remaining)
        ):
            seen.add(parent.name)
            remaining -= parent.local_available(fr)
            level, parent = level + 1, parent.parent
        return level

    def rows(self, cluster_queue: str) -> tuple[QuotaRow, ...]:
        """One row per ``(flavor, resource)`` in the ClusterQueue's spec, in spec order."""
        rows = self._rows.get(cluster_queue)
        if rows is None:
            rows = self._rows[cluster_queue] = self._compute_rows(cluster_queue)
        return rows

    def _compute_rows(self, cluster_queue: str) -> tuple[QuotaRow, ...]:
        node = self._node(cluster_queue)
        cq = self._queues[cluster_queue]
        return tuple(
            QuotaRow(
                cluster_queue=cluster_queue,
                flavor=flavor,
                resource=resource,
                nominal=quota.nominal,
                borrowing_limit=quota.borrowing_limit,
                lending_limit=quota.lending_limit,
                reserved=node.own_usage.get((flavor, resource), _ZERO),
                used=cq.used(flavor, resource),
                borrowed=cq.borrowed(flavor, resource),
                headroom=self.headroom(cluster_queue, flavor, resource),
                max_obtainable=self.max_obtainable(cluster_queue, flavor, resource),
            )
            for (flavor, resource), quota in node.quotas.items()
        )

    def _node(self, cluster_queue: str) -> _Node:
        try:
            return self._cq_nodes[cluster_queue]
        except KeyError:
            raise KeyError(f"no ClusterQueue named {cluster_queue!r}") from None


# --------------------------------------------------------------------------------------------
# Queue summaries (what a namespace user sees)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceSummary:
    """One flavor and resource of a LocalQueue's view. None means unknown or hidden.

    With visible quota ``reserved``/``used`` are the ClusterQueue's totals (all its
    LocalQueues) and ``queue_reserved``/``queue_used`` this LocalQueue's share. With hidden
    quota all four are this LocalQueue's numbers and the quota fields are None.
    ``borrowing_limit`` None with visible quota: unbounded. ``lending_limit`` None with
    visible quota: may lend all unused nominal. ``headroom``/``max_obtainable`` None: hidden.
    """

    flavor: str
    resource: str
    nominal: Decimal | None
    borrowing_limit: Decimal | None
    lending_limit: Decimal | None
    reserved: Decimal
    used: Decimal
    borrowed: Decimal | None
    headroom: Decimal | None
    max_obtainable: Decimal | None
    queue_reserved: Decimal
    queue_used: Decimal

    def to_json(self) -> dict[str, str | None]:
        """Quantities as canonical Kubernetes strings (binary for memory-like resources)."""
        r = self.resource
        return {
            "flavor": self.flavor,
            "resource": r,
            "nominal": format_amount(r, self.nominal),
            "borrowing_limit": format_amount(r, self.borrowing_limit),
            "lending_limit": format_amount(r, self.lending_limit),
            "reserved": format_amount(r, self.reserved),
            "used": format_amount(r, self.used),
            "borrowed": format_amount(r, self.borrowed),
            "headroom": format_amount(r, self.headroom),
            "max_obtainable": format_amount(r, self.max_obtainable),
            "queue_reserved": format_amount(r, self.queue_reserved),
            "queue_used": format_amount(r, self.queue_used),
        }


@dataclass(frozen=True)
class QueueSummary:
    """What one LocalQueue offers: where it sends work, its state and its quota.

    ``default`` is True for THE default queue of its namespace (``default_convention`` says
    which convention chose it: ``"annotation"`` or ``"name"``). ``active`` is the
    LocalQueue's own ``Active`` condition (False while stopped). ``quota_visible`` is False
    when ClusterQueues could not be read or the ClusterQueue is missing; ``hint`` then says
    why, and says what else limits admission (stopped queues, cohort cycles).
    Headroom counts quota only: nothing is admitted while ``active`` is False.
    ``multikueue``: its ClusterQueue's MultiKueue check (its workloads run on worker clusters;
    the quota here is the manager's, reserved first), when the ClusterQueue and the
    AdmissionChecks are readable.
    """

    name: str
    namespace: str | None
    cluster_queue: str
    default: bool
    default_convention: str | None
    active: bool
    pending: int
    reserving: int
    admitted: int
    quota_visible: bool
    hint: str | None
    resources: tuple[ResourceSummary, ...]
    multikueue: Dispatcher | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON shape the server and widgets share (quantities as k8s strings)."""
        return {
            "name": self.name,
            "namespace": self.namespace,
            "cluster_queue": self.cluster_queue,
            "default": self.default,
            "default_convention": self.default_convention,
            "active": self.active,
            "pending": self.pending,
            "reserving": self.reserving,
            "admitted": self.admitted,
            "quota_visible": self.quota_visible,
            "hint": self.hint,
            "resources": [r.to_json() for r in self.resources],
            "multikueue": self.multikueue.to_json() if self.multikueue else None,
        }


def _queue_only_resources(lq: LocalQueueInfo) -> tuple[ResourceSummary, ...]:
    """Rows from the LocalQueue's own status, used when quota cannot be shown."""
    reserved = amounts_by_key(lq.reservation)
    used = amounts_by_key(lq.usage)
    keys = list(dict.fromkeys([*reserved, *used]))
    return tuple(
        ResourceSummary(
            flavor=flavor,
            resource=resource,
            nominal=None,
            borrowing_limit=None,
            lending_limit=None,
            reserved=reserved.get((flavor, resource), _ZERO),
            used=used.get((flavor, resource), _ZERO),
            borrowed=None,
            headroom=None,
            max_obtainable=None,
            queue_reserved=reserved.get((flavor, resource), _ZERO),
            queue_used=used.get((flavor, resource), _ZERO),
        )
        for flavor, resource in keys
    )


def _quota_resources(lq: LocalQueueInfo, tree: QuotaTree) -> tuple[ResourceSummary, ...]:
    return tuple(
        ResourceSummary(
            flavor=row.flavor,
            resource=row.resource,
            nominal=row.nominal,
            borrowing_limit=row.borrowing_limit,
            lending_limit=row.lending_limit,
            reserved=row.reserved,
            used=row.used,
            borrowed=row.borrowed,
            headroom=row.headroom,
            max_obtainable=row.max_obtainable,
            queue_reserved=lq.reserved(row.flavor, row.resource),
            queue_used=lq.used(row.flavor, row.resource),
        )
        for row in tree.rows(lq.cluster_queue)
    )


def _state_hints(lq: LocalQueueInfo) -> list[str]:
    if lq.stopped:
        return [f"LocalQueue is stopped (stopPolicy={lq.stop_policy}): it admits no new workloads."]
    if lq.active_condition is False:
        return [f"LocalQueue is not active: {lq.active_message or 'no reason given'}."]
    return []


def _cluster_queue_hints(cq: ClusterQueueQuota, tree: QuotaTree, cohorts_known: bool) -> list[str]:
    hints = []
    if cq.stopped:
        hints.append(
            f"ClusterQueue {cq.name!r} is stopped (stopPolicy={cq.stop_policy}): "
            "it admits no new workloads."
        )
    elif cq.active_condition is False:
        hints.append(
            f"ClusterQueue {cq.name!r} is not active: {cq.active_message or 'no reason given'}."
        )
    if tree.has_cycle(cq.name):
        hints.append(
            f"The cohort tree of ClusterQueue {cq.name!r} has a cycle: Kueue admits nothing "
            "to it until the cycle is removed."
        )
    elif cq.cohort and not cohorts_known:
        hints.append(
            f"Cohort objects could not be read: headroom counts the ClusterQueues of cohort "
            f"{cq.cohort!r} but not quota or limits set on Cohort objects."
        )
    return hints


def _summary(
    lq: LocalQueueInfo,
    tree: QuotaTree | None,
    cohorts_known: bool,
    default_conventions: Mapping[tuple[str | None, str], str],
    dispatchers: Mapping[str, Dispatcher],
    seen: Mapping[str, Dispatcher],
) -> QueueSummary:
    hints = _state_hints(lq)
    cq = tree.cluster_queue(lq.cluster_queue) if tree is not None else None
    if tree is None:
        hints.append(HIDDEN_QUOTA_HINT)
        resources = _queue_only_resources(lq)
    elif cq is None:
        hints.append(
            f"ClusterQueue {lq.cluster_queue!r} does not exist: workloads sent to this "
            "LocalQueue stay pending until an administrator creates it."
            if lq.cluster_queue
            else "LocalQueue names no ClusterQueue: its workloads cannot be admitted."
        )
        resources = _queue_only_resources(lq)
    else:
        hints.extend(_cluster_queue_hints(cq, tree, cohorts_known))
        resources = _quota_resources(lq, tree)
    convention = default_conventions.get((lq.namespace, lq.name))
    return QueueSummary(
        name=lq.name,
        namespace=lq.namespace,
        cluster_queue=lq.cluster_queue,
        default=convention is not None,
        default_convention=convention,
        active=lq.active,
        pending=lq.pending,
        reserving=lq.reserving,
        admitted=lq.admitted,
        quota_visible=cq is not None,
        hint=" ".join(hints) or None,
        resources=resources,
        multikueue=next(
            (
                dispatchers[r.name]
                for r in (cq.admission_checks if cq else ())
                if r.name in dispatchers
            ),
            seen.get(lq.name),
        ),
    )


def queue_summaries(
    local_queues: Iterable[LocalQueueInfo],
    cluster_queues: Iterable[ClusterQueueQuota] | None,
    cohorts: Iterable[CohortQuota] | None = None,
    *,
    tree: QuotaTree | None = None,
    dispatchers: Mapping[str, Dispatcher] | None = None,
    seen: Mapping[str, Dispatcher] | None = None,
) -> list[QueueSummary]:
    """One summary per LocalQueue, sorted by namespace and name.

    ``cluster_queues`` None means the identity may not read ClusterQueues: quota is hidden and
    the numbers come from LocalQueue status. ``cohorts`` None means Cohort objects could not
    be read (the summary says so); pass an empty list when there are none or the Cohort API
    is not served — implicit cohorts from ClusterQueue cohort names are always built.
    ``tree``: the :class:`QuotaTree` of exactly these ClusterQueues and Cohorts, when the
    caller has built it already (it is built here otherwise). ``dispatchers``: the
    AdmissionChecks MultiKueue runs, by name (None or empty: none known); ``seen``: by
    LocalQueue, the check its Workloads show they were placed by (where the AdmissionChecks
    or the ClusterQueue cannot be read; :func:`~jupyter_dw.domain.multikueue.dispatchers_seen`).
    """
    queues = sorted(local_queues, key=lambda q: (q.namespace or "", q.name))
    if cluster_queues is None:
        tree = None
    elif tree is None:
        tree = QuotaTree(cluster_queues, cohorts or ())
    conventions: dict[tuple[str | None, str], str] = {}
    for namespace in dict.fromkeys(q.namespace for q in queues):
        choice = default_local_queue([q for q in queues if q.namespace == namespace])
        if choice is not None:
            conventions[(namespace, choice.queue.name)] = choice.convention
    known, workloads_tell = dispatchers or {}, seen or {}
    return [
        _summary(lq, tree, cohorts is not None, conventions, known, workloads_tell) for lq in queues
    ]
