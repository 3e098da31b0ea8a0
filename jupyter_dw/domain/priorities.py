"""Priorities as Kueue applies them: classes, who is ahead of a new workload, who preempted.
Pure. Kueue's order and preemption messages, checked against v0.19.2 and v0.14.8:
docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from jupyter_dw.domain.kueue_model import KueueObjectError

DEFAULT_PRIORITY = 0
"""What Kueue gives a workload without a priority class (and no default PriorityClass)."""
DEFAULT_CLASS_NAME = "default"
"""Kueue's ``WorkloadPriorityClassDefaulting`` applies the class of this name."""

AheadSource = Literal["cluster-queue", "local-queue", "pending-count"]
"""Where a count of workloads ahead came from: the ClusterQueue's pending list (visibility
API, every namespace), the LocalQueue's (this namespace only) or the ClusterQueue's status
count of pending workloads (no priorities known)."""


@dataclass(frozen=True)
class PriorityClass:
    """A WorkloadPriorityClass: ``default`` marks the one Kueue applies to a job that names
    none (when its ``WorkloadPriorityClassDefaulting`` gate is on)."""

    name: str
    value: int
    description: str | None = None

    @property
    def default(self) -> bool:
        return self.name == DEFAULT_CLASS_NAME

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> PriorityClass:
        """Parse a ``kueue.x-k8s.io`` WorkloadPriorityClass (``KueueObjectError`` if it has
        no name or no integer ``value``)."""
        name = (obj.get("metadata") or {}).get("name")
        value = obj.get("value")
        if not isinstance(name, str) or not name:
            raise KueueObjectError("WorkloadPriorityClass without a name")
        if not _is_int(value):
            raise KueueObjectError(f"WorkloadPriorityClass {name}: value is not an integer")
        description = obj.get("description")
        return cls(name, value, description if isinstance(description, str) else None)

    def to_json(self) -> dict[str, Any]:
        """``{"name", "value", "description", "default"}``."""
        return {
            "name": self.name,
            "value": self.value,
            "description": self.description,
            "default": self.default,
        }


def priority_value(name: str | None, classes: Iterable[PriorityClass] | None) -> int | None:
    """The priority a new workload with class ``name`` gets; None when it cannot be known (a
    named class that is not readable or not found)."""
    if not name:
        return DEFAULT_PRIORITY
    found = next((c for c in classes or () if c.name == name), None)
    return found.value if found is not None else None


@dataclass(frozen=True)
class Ahead:
    """How many pending workloads Kueue orders before a new one, and how sure that is.

    ``count`` is exact unless ``bound`` says it is a lower (``at-least``: this namespace's
    list does not show other namespaces' workloads behind its own) or an upper
    (``at-most``: a count of every pending workload, whatever its priority) bound.
    """

    count: int
    source: AheadSource
    bound: Literal["exact", "at-least", "at-most"] = "exact"

    def to_json(self) -> dict[str, Any]:
        """``{"count", "source", "bound"}``."""
        return {"count": self.count, "source": self.source, "bound": self.bound}

    def words(self) -> str:
        """``3 workloads``, ``at least 1 workload``, ``at most 4 workloads``."""
        noun = "workload" if self.count == 1 else "workloads"
        prefix = "" if self.bound == "exact" else f"{self.bound.replace('-', ' ')} "
        return f"{prefix}{self.count} {noun}"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _priority(item: Mapping[str, Any]) -> int:
    value = item.get("priority")
    return value if _is_int(value) else DEFAULT_PRIORITY


def ahead_in_cluster_queue(pending: Iterable[Mapping[str, Any]], priority: int) -> Ahead:
    """From the ClusterQueue's whole pending list: those of equal or higher priority."""
    count = sum(1 for item in pending if _priority(item) >= priority)
    return Ahead(count, "cluster-queue")


def ahead_in_local_queue(
    pending: Iterable[Mapping[str, Any]], priority: int, total: int | None = None
) -> Ahead:
    """From one LocalQueue's pending list, whose items carry ``positionInClusterQueue``.

    The ClusterQueue order puts everything before an item of priority >= ``priority`` ahead
    too (it has a priority at least as high), so the last such item's position + 1 is a lower
    bound; the first item of lower priority bounds it from above (the new one goes before
    it), and so does ``total``, the ClusterQueue's pending count when known. Equal bounds
    make the count exact.
    """
    low, high = 0, total
    for item in pending:
        position = item.get("positionInClusterQueue")
        if not _is_int(position):
            continue
        if _priority(item) >= priority:
            low = max(low, position + 1)
        else:
            high = position if high is None else min(high, position)
    if high is not None and high <= low:
        return Ahead(low, "local-queue")
    return Ahead(low, "local-queue", "at-least")


def ahead_by_count(pending_count: int) -> Ahead:
    """From the ClusterQueue status's pending count: priorities unknown, so at most that."""
    return Ahead(max(0, pending_count), "pending-count", "at-most" if pending_count else "exact")


# --------------------------------------------------------------------------------------------
# What preempted a workload
# --------------------------------------------------------------------------------------------

_PREEMPTOR = re.compile(
    r"to accommodate a workload \(UID: (?P<uid>[^,)\s]+)(?:, JobUID: (?P<job>[^)\s]*))?\)"
)
_UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class PreemptedBy:
    """The workload that took a preempted cluster's quota: its Workload UID, the UID of the
    job it was made for (``kueue.x-k8s.io/job-uid``) and, when that job is a RayCluster of
    the namespace, its name."""

    workload_uid: str | None
    job_uid: str | None
    name: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"workload_uid", "job_uid", "name"}``."""
        return {"workload_uid": self.workload_uid, "job_uid": self.job_uid, "name": self.name}


def preemptor(message: str | None) -> PreemptedBy | None:
    """The preemptor named in Kueue's eviction message, None when it names none."""
    match = _PREEMPTOR.search(message or "")
    if match is None:
        return None
    uid, job = match["uid"], match["job"]
    return PreemptedBy(
        workload_uid=uid if uid != _UNKNOWN else None,
        job_uid=job if job and job != _UNKNOWN else None,
    )
