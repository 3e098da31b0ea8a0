"""Kueue queue objects as plain, immutable Python values, the same for v1beta1 and v1beta2.
One module on purpose: each parser (LocalQueue, ClusterQueue, Cohort) beside the renames it
absorbs, so the version mapping is checked in one place; the renames:
docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from typing import Any, Literal

from jupyter_dw.domain.quantity import QuantityError, parse_quantity
from jupyter_dw.names import (
    CLUSTER_QUEUE_KIND,
    DEFAULT_QUEUE_ANNOTATION,
    DEFAULT_QUEUE_NAME,
    LOCAL_QUEUE_KIND,
)

BEST_EFFORT_FIFO = "BestEffortFIFO"
"""Kueue's default queueing strategy: a workload that does not fit lets later ones try."""
STRICT_FIFO = "StrictFIFO"

STOP_POLICY_NONE = "None"

# flavorFungibility policies. v1beta2 (Kueue >= 0.15) says MayStopSearch for what v1beta1 called
# Borrow (whenCanBorrow) and Preempt (whenCanPreempt); the conversion webhook maps them.
MAY_STOP_SEARCH = "MayStopSearch"
TRY_NEXT_FLAVOR = "TryNextFlavor"
_V1BETA1_STOP = {"Borrow": MAY_STOP_SEARCH, "Preempt": MAY_STOP_SEARCH}

FlavorResource = tuple[str, str]
"""A ``(flavor, resource)`` pair, e.g. ``("default-flavor", "cpu")``."""

DefaultConvention = Literal["annotation", "name"]

_ZERO = Decimal(0)


class KueueObjectError(ValueError):
    """A Kueue object dict that cannot be read (wrong shape or a bad quantity)."""


# --------------------------------------------------------------------------------------------
# Small readers for untrusted JSON
# --------------------------------------------------------------------------------------------


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise KueueObjectError(f"{where} must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise KueueObjectError(f"{where} must be a list, got {type(value).__name__}")
    return value


def _objects(value: Any, where: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Each element of the list ``value`` as an object, with where it is (``where[i]``)."""
    for i, item in enumerate(_list(value, where)):
        item_where = f"{where}[{i}]"
        yield _mapping(item, item_where), item_where


def _count(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise KueueObjectError(f"{where} must be an integer, got {value!r}")
    return value


def _quantity(value: Any, where: str) -> Decimal:
    try:
        return parse_quantity(value)
    except QuantityError as err:
        raise KueueObjectError(f"{where}: {err}") from err


def _optional_quantity(value: Any, where: str) -> Decimal | None:
    return None if value is None else _quantity(value, where)


def _name(obj: Any, kind: str) -> tuple[str, str | None]:
    """Return ``(metadata.name, metadata.namespace)``; a missing name is an error."""
    if not isinstance(obj, Mapping):
        raise KueueObjectError(f"a {kind} must be an object, got {type(obj).__name__}")
    metadata = _mapping(obj.get("metadata"), f"{kind}.metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise KueueObjectError(f"{kind} has no metadata.name")
    namespace = metadata.get("namespace")
    return name, namespace if isinstance(namespace, str) and namespace else None


def _queue_status(status: Mapping[str, Any], where: str, usage_key: str) -> dict[str, Any]:
    """The status fields LocalQueues and ClusterQueues share, as constructor keywords."""
    active, message = _active_condition(status, where)
    return {
        "active_condition": active,
        "active_message": message,
        "pending": _count(status.get("pendingWorkloads"), f"{where}.status.pendingWorkloads"),
        "reserving": _count(status.get("reservingWorkloads"), f"{where}.status.reservingWorkloads"),
        "admitted": _count(status.get("admittedWorkloads"), f"{where}.status.admittedWorkloads"),
        "reservation": _amounts(
            status.get("flavorsReservation"), f"{where}.status.flavorsReservation"
        ),
        "usage": _amounts(status.get(usage_key), f"{where}.status.{usage_key}"),
    }


def _active_condition(status: Mapping[str, Any], where: str) -> tuple[bool | None, str | None]:
    """Read the ``Active`` condition: ``(True/False, message)`` or ``(None, None)`` if absent."""
    for condition in _list(status.get("conditions"), f"{where}.status.conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "Active":
            message = condition.get("message") or condition.get("reason")
            return condition.get("status") == "True", message if isinstance(message, str) else None
    return None, None


def _stop_policy(spec: Mapping[str, Any]) -> str:
    policy = spec.get("stopPolicy")
    return policy if isinstance(policy, str) and policy else STOP_POLICY_NONE


# --------------------------------------------------------------------------------------------
# Quota specification (ClusterQueue and Cohort spec.resourceGroups)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceQuota:
    """Quota of one resource in one flavor, as written in ``spec.resourceGroups``.

    ``borrowing_limit`` None: no limit on borrowing from the cohort (unbounded).
    ``lending_limit`` None: no lending limit, all unused nominal quota may be lent.
    """

    name: str
    nominal: Decimal
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    """One flavor of a resource group with its per-resource quotas."""

    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True)
class ResourceGroup:
    """A set of covered resources and the flavors, in order of preference, that provide them."""

    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


def _quota_node(obj: Any, kind: str) -> tuple[str, str, Mapping[str, Any]]:
    """What a cluster-scoped node of the quota tree (a ClusterQueue, a Cohort) is read from:
    its name, how messages name it (``where``) and its spec."""
    name, _ = _name(obj, kind)
    where = f"{kind} {name!r}"
    return name, where, _mapping(obj.get("spec"), f"{where}.spec")


def _renamed(spec: Mapping[str, Any], name: str, old_name: str) -> str | None:
    """A field v1beta2 renamed (``cohort`` to ``cohortName``, ``parent`` to ``parentName``),
    read under either name; None when unset."""
    value = spec.get(name) or spec.get(old_name)
    return str(value) if value else None


def _resource_groups(value: Any, where: str) -> tuple[ResourceGroup, ...]:
    groups = []
    for group, gwhere in _objects(value, where):
        flavors = []
        for flavor, fwhere in _objects(group.get("flavors"), f"{gwhere}.flavors"):
            resources = [
                ResourceQuota(
                    name=str(res.get("name", "")),
                    nominal=_quantity(res.get("nominalQuota", 0), f"{rwhere}.nominalQuota"),
                    borrowing_limit=_optional_quantity(
                        res.get("borrowingLimit"), f"{rwhere}.borrowingLimit"
                    ),
                    lending_limit=_optional_quantity(
                        res.get("lendingLimit"), f"{rwhere}.lendingLimit"
                    ),
                )
                for res, rwhere in _objects(flavor.get("resources"), f"{fwhere}.resources")
            ]
            flavors.append(
                FlavorQuotas(name=str(flavor.get("name", "")), resources=tuple(resources))
            )
        covered = tuple(str(r) for r in _list(group.get("coveredResources"), gwhere))
        groups.append(ResourceGroup(covered_resources=covered, flavors=tuple(flavors)))
    return tuple(groups)


def _flatten_quotas(groups: tuple[ResourceGroup, ...]) -> dict[FlavorResource, ResourceQuota]:
    return {
        (flavor.name, quota.name): quota
        for group in groups
        for flavor in group.flavors
        for quota in flavor.resources
    }


# --------------------------------------------------------------------------------------------
# Status amounts (flavorsReservation / flavorsUsage)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlavorResourceAmount:
    """A status total for one flavor and resource.

    ``borrowed`` is the part above nominal quota taken from the cohort (ClusterQueue status
    only; always zero for LocalQueues, whose status does not report it).
    """

    flavor: str
    resource: str
    total: Decimal
    borrowed: Decimal = _ZERO


def _amounts(value: Any, where: str) -> tuple[FlavorResourceAmount, ...]:
    return tuple(
        FlavorResourceAmount(
            flavor=str(flavor.get("name", "")),
            resource=str(res.get("name", "")),
            total=_quantity(res.get("total", 0), f"{rwhere}.total"),
            borrowed=_quantity(res.get("borrowed", 0), f"{rwhere}.borrowed"),
        )
        for flavor, fwhere in _objects(value, where)
        for res, rwhere in _objects(flavor.get("resources"), f"{fwhere}.resources")
    )


def amounts_by_key(amounts: Iterable[FlavorResourceAmount]) -> dict[FlavorResource, Decimal]:
    """Map ``(flavor, resource)`` to ``total`` (entries repeated in status are summed)."""
    out: dict[FlavorResource, Decimal] = {}
    for amount in amounts:
        key = (amount.flavor, amount.resource)
        out[key] = out.get(key, _ZERO) + amount.total
    return out


# --------------------------------------------------------------------------------------------
# What LocalQueues and ClusterQueues both report
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class QueueStatus:
    """The stop policy and status fields LocalQueues and ClusterQueues share.

    ``reservation`` is ``status.flavorsReservation``: quota held by workloads with a quota
    reservation (what Kueue's scheduler counts against quota); ``usage`` is
    ``status.flavorsUsage`` (LocalQueue v1beta1: ``flavorUsage``), the part held by admitted
    workloads. A LocalQueue reports only its own workloads' share. ``active_condition`` is
    the ``Active`` condition (None while Kueue has not reported it).
    """

    stop_policy: str = STOP_POLICY_NONE
    active_condition: bool | None = None
    active_message: str | None = None
    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    reservation: tuple[FlavorResourceAmount, ...] = ()
    usage: tuple[FlavorResourceAmount, ...] = ()

    @property
    def stopped(self) -> bool:
        """True when ``spec.stopPolicy`` is Hold or HoldAndDrain: no new admissions."""
        return self.stop_policy != STOP_POLICY_NONE

    @property
    def active(self) -> bool:
        """True when Kueue reports ``Active=True`` and the queue is not stopped (a stopped
        queue admits nothing even before Kueue updates the condition)."""
        return self.active_condition is True and not self.stopped

    def reserved(self, flavor: str, resource: str) -> Decimal:
        """Quota reserved for ``(flavor, resource)`` (0 if not reported)."""
        return self._reserved_by_key.get((flavor, resource), _ZERO)

    def used(self, flavor: str, resource: str) -> Decimal:
        """Quota used by admitted workloads for ``(flavor, resource)`` (0 if not reported)."""
        return self._used_by_key.get((flavor, resource), _ZERO)

    # Summed once: a queue's summary asks for every flavor and resource, and one parsed
    # status answers every summary until its object changes.
    @cached_property
    def _reserved_by_key(self) -> dict[FlavorResource, Decimal]:
        return amounts_by_key(self.reservation)

    @cached_property
    def _used_by_key(self) -> dict[FlavorResource, Decimal]:
        return amounts_by_key(self.usage)


# --------------------------------------------------------------------------------------------
# ClusterQueue
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlavorFungibility:
    """``spec.flavorFungibility``: whether Kueue tries the next flavor when one fits only by
    borrowing (``when_can_borrow``) or only by preempting (``when_can_preempt``). Values are
    the v1beta2 names (``MayStopSearch`` | ``TryNextFlavor``); the v1beta1 names ``Borrow`` and
    ``Preempt`` read as ``MayStopSearch``. Defaults are Kueue's: MayStopSearch, TryNextFlavor.
    """

    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR

    @classmethod
    def from_spec(cls, value: Any, where: str) -> FlavorFungibility:
        spec = _mapping(value, where)

        def policy(key: str, default: str) -> str:
            raw = spec.get(key)
            text = str(raw) if raw else default
            return _V1BETA1_STOP.get(text, text)

        return cls(
            when_can_borrow=policy("whenCanBorrow", MAY_STOP_SEARCH),
            when_can_preempt=policy("whenCanPreempt", TRY_NEXT_FLAVOR),
        )

    @property
    def try_next_when_borrowing(self) -> bool:
        """True when a flavor that fits only by borrowing does not end the search."""
        return self.when_can_borrow == TRY_NEXT_FLAVOR

    @property
    def stops_to_preempt(self) -> bool:
        """True when a flavor that fits only by preempting may end the search there."""
        return self.when_can_preempt == MAY_STOP_SEARCH


@dataclass(frozen=True)
class AdmissionCheckRule:
    """One AdmissionCheck a ClusterQueue requires; ``on_flavors`` empty means for every
    workload, else only for workloads assigned one of those flavors."""

    name: str
    on_flavors: tuple[str, ...] = ()

    def applies(self, flavors: Iterable[str]) -> bool:
        """Whether the check runs for a workload assigned ``flavors``."""
        return not self.on_flavors or any(f in self.on_flavors for f in flavors)


def _preempts(preemption: Any) -> bool:
    """Whether ``spec.preemption`` allows any preemption (Kueue's defaults allow none)."""
    if not isinstance(preemption, Mapping):
        return False
    borrow = preemption.get("borrowWithinCohort")
    policies = (
        preemption.get("withinClusterQueue"),
        preemption.get("reclaimWithinCohort"),
        borrow.get("policy") if isinstance(borrow, Mapping) else None,
    )
    return any(policy not in (None, "", "Never") for policy in policies)


def _admission_checks(spec: Mapping[str, Any], where: str) -> tuple[AdmissionCheckRule, ...]:
    """``spec.admissionChecksStrategy.admissionChecks[{name, onFlavors}]`` (both versions) or
    v1beta1's plain ``spec.admissionChecks: [name]``."""
    strategy = _mapping(spec.get("admissionChecksStrategy"), f"{where}.admissionChecksStrategy")
    rules = []
    for i, rule in enumerate(_list(strategy.get("admissionChecks"), f"{where}.admissionChecks")):
        rule = _mapping(rule, f"{where}.admissionChecksStrategy.admissionChecks[{i}]")
        on = _list(rule.get("onFlavors"), f"{where}.admissionChecks[{i}].onFlavors")
        rules.append(AdmissionCheckRule(str(rule.get("name", "")), tuple(str(f) for f in on)))
    for name in _list(spec.get("admissionChecks"), f"{where}.admissionChecks"):
        rules.append(AdmissionCheckRule(str(name)))
    return tuple(r for r in rules if r.name)


@dataclass(frozen=True)
class ClusterQueueQuota(QueueStatus):
    """A ClusterQueue's quota (spec) and what its workloads hold (status).

    ``cohort`` is ``spec.cohortName`` (v1beta2) / ``spec.cohort`` (v1beta1); None when unset.
    """

    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    queueing_strategy: str = BEST_EFFORT_FIFO
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    admission_checks: tuple[AdmissionCheckRule, ...] = ()
    preempts: bool = False
    """``spec.preemption`` lets Kueue preempt admitted workloads for a pending one (any of
    ``withinClusterQueue``, ``reclaimWithinCohort``, ``borrowWithinCohort.policy`` not
    ``Never``)."""

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> ClusterQueueQuota:
        """Read a ``ClusterQueue`` dict of API version v1beta1 or v1beta2."""
        name, where, spec = _quota_node(obj, CLUSTER_QUEUE_KIND)
        status = _mapping(obj.get("status"), f"{where}.status")
        return cls(
            name=name,
            cohort=_renamed(spec, "cohortName", "cohort"),
            resource_groups=_resource_groups(
                spec.get("resourceGroups"), f"{where}.spec.resourceGroups"
            ),
            stop_policy=_stop_policy(spec),
            queueing_strategy=str(spec.get("queueingStrategy") or BEST_EFFORT_FIFO),
            flavor_fungibility=FlavorFungibility.from_spec(
                spec.get("flavorFungibility"), f"{where}.spec.flavorFungibility"
            ),
            admission_checks=_admission_checks(spec, f"{where}.spec"),
            preempts=_preempts(spec.get("preemption")),
            **_queue_status(status, where, usage_key="flavorsUsage"),
        )

    @property
    def strict_fifo(self) -> bool:
        """Under ``StrictFIFO`` nothing is admitted ahead of an older pending workload."""
        return self.queueing_strategy == STRICT_FIFO

    def quotas(self) -> dict[FlavorResource, ResourceQuota]:
        """All ``(flavor, resource)`` quotas in spec order."""
        return _flatten_quotas(self.resource_groups)

    def borrowed(self, flavor: str, resource: str) -> Decimal:
        """Reserved quota above nominal, borrowed from the cohort (``flavorsReservation``)."""
        return sum(
            (a.borrowed for a in self.reservation if a.flavor == flavor and a.resource == resource),
            _ZERO,
        )


# --------------------------------------------------------------------------------------------
# Cohort (hierarchical cohorts)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CohortQuota:
    """A ``Cohort`` object: a node of the cohort tree that may hold quota of its own.

    ``parent`` is ``spec.parentName`` (``spec.parent`` in early v1beta1); None for a root.
    Its resource groups add a shared pool on top of the member ClusterQueues' quota; its
    borrowing/lending limits apply towards its parent.
    """

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> CohortQuota:
        """Read a ``Cohort`` dict of API version v1beta1 or v1beta2."""
        name, where, spec = _quota_node(obj, "Cohort")
        return cls(
            name=name,
            parent=_renamed(spec, "parentName", "parent"),
            resource_groups=_resource_groups(
                spec.get("resourceGroups"), f"{where}.spec.resourceGroups"
            ),
        )

    def quotas(self) -> dict[FlavorResource, ResourceQuota]:
        """All ``(flavor, resource)`` quotas in spec order."""
        return _flatten_quotas(self.resource_groups)


# --------------------------------------------------------------------------------------------
# LocalQueue
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalQueueInfo(QueueStatus):
    """A namespace's LocalQueue: where it sends workloads and what they hold."""

    name: str
    namespace: str | None
    cluster_queue: str
    annotated_default: bool = False

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> LocalQueueInfo:
        """Read a ``LocalQueue`` dict of API version v1beta1 or v1beta2."""
        name, namespace = _name(obj, LOCAL_QUEUE_KIND)
        where = f"LocalQueue {namespace}/{name}"
        metadata = _mapping(obj.get("metadata"), f"{where}.metadata")
        annotations = _mapping(metadata.get("annotations"), f"{where}.metadata.annotations")
        spec = _mapping(obj.get("spec"), f"{where}.spec")
        status = _mapping(obj.get("status"), f"{where}.status")
        # v1beta2 renamed status.flavorUsage to status.flavorsUsage.
        usage_key = "flavorsUsage" if "flavorsUsage" in status else "flavorUsage"
        return cls(
            name=name,
            namespace=namespace,
            cluster_queue=str(spec.get("clusterQueue") or ""),
            annotated_default=str(annotations.get(DEFAULT_QUEUE_ANNOTATION, "")).lower() == "true",
            stop_policy=_stop_policy(spec),
            **_queue_status(status, where, usage_key=usage_key),
        )

    @property
    def default_convention(self) -> DefaultConvention | None:
        """Which default-queue convention this queue satisfies (annotation first), if any."""
        if self.annotated_default:
            return "annotation"
        if self.name == DEFAULT_QUEUE_NAME:
            return "name"
        return None

    @property
    def is_default_candidate(self) -> bool:
        """True if either convention marks this queue as a namespace default."""
        return self.default_convention is not None


@dataclass(frozen=True)
class DefaultQueueChoice:
    """The default LocalQueue of a namespace and the convention that chose it.

    ``candidates`` lists every queue the winning convention matched; more than one means the
    namespace is ambiguous (several annotated queues) and the first by name was taken.
    """

    queue: LocalQueueInfo
    convention: DefaultConvention
    candidates: tuple[str, ...]

    @property
    def ambiguous(self) -> bool:
        """True when several queues carry the default annotation."""
        return len(self.candidates) > 1

    @property
    def reason(self) -> str:
        """A sentence for the user saying why this queue is the default."""
        if self.convention == "annotation":
            text = f"LocalQueue {self.queue.name!r} is annotated {DEFAULT_QUEUE_ANNOTATION}=true"
            if self.ambiguous:
                others = ", ".join(repr(c) for c in self.candidates if c != self.queue.name)
                text += f" (also annotated: {others}; the first by name was chosen)"
            return text
        return f"LocalQueue is named {DEFAULT_QUEUE_NAME!r} (Kueue's LocalQueueDefaulting)"


def default_local_queue(
    local_queues: Iterable[LocalQueueInfo], namespace: str | None = None
) -> DefaultQueueChoice | None:
    """Pick THE default LocalQueue of one namespace, or None if there is none.

    The ``kueue.x-k8s.io/default-queue: "true"`` annotation wins over a queue named
    ``default``; among several annotated queues the first by name wins (and the choice is
    marked ambiguous). With ``namespace`` None all queues must be from one namespace.
    """
    queues = [q for q in local_queues if namespace is None or q.namespace == namespace]
    if namespace is None and len({q.namespace for q in queues}) > 1:
        raise ValueError("LocalQueues from several namespaces: pass namespace=")
    annotated = sorted((q for q in queues if q.annotated_default), key=lambda q: q.name)
    if annotated:
        return DefaultQueueChoice(
            queue=annotated[0],
            convention="annotation",
            candidates=tuple(q.name for q in annotated),
        )
    for queue in queues:
        if queue.name == DEFAULT_QUEUE_NAME:
            return DefaultQueueChoice(queue=queue, convention="name", candidates=(queue.name,))
    return None
