"""The ``GET queues`` answer, as every surface and a kernel reading through its server hold it
(no Kubernetes imports: a kernel decodes it without loading the session)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..domain.priorities import PriorityClass
from ..domain.quota import QueueSummary
from .listing import ByName


@dataclass(frozen=True)
class QueueList(ByName["QueueSummary"]):
    """The ``GET queues`` answer: every LocalQueue of ``namespace`` with its quota. A
    sequence of its queues: iterate it, ``len()`` it, index it by position or by name.

    ``quota_visible`` False: ClusterQueues are not readable by this identity (each queue's
    ``hint`` names the permission). ``cohorts_visible`` False: Cohort objects exist but cannot
    be read, so headroom may miss quota set on them. ``priority_classes``: the
    WorkloadPriorityClasses a cluster's ``priority`` may name, highest value first; None when
    this identity may not read them. ``formatted``: JSON already made for some of ``queues``
    (by an equal summary of an earlier answer), so a change formats only what it changed.
    """

    namespace: str
    kueue_api: str | None
    quota_visible: bool
    cohorts_visible: bool
    queues: tuple[QueueSummary, ...]
    priority_classes: tuple[PriorityClass, ...] | None = None
    formatted: Mapping[QueueSummary, dict[str, Any]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def _entries(self) -> tuple[QueueSummary, ...]:
        return self.queues

    def to_json(self) -> dict[str, Any]:
        """The REST shape (quantities as Kubernetes quantity strings).

        Formatted once per answer (a few thousand quantities at 200 queues: most of what an
        unchanged ``GET queues`` would cost); each call still returns its own dicts and
        lists, so a caller may keep or change them.
        """
        return {
            "namespace": self.namespace,
            "kueue_api": self.kueue_api,
            "quota_visible": self.quota_visible,
            "cohorts_visible": self.cohorts_visible,
            # A queue's only containers are itself and its resource rows; the rest are
            # strings, numbers and None: copying those two levels copies everything mutable.
            "queues": [
                {**q, "resources": [dict(r) for r in q["resources"]]} for q in self._queues_json
            ],
            "priority_classes": (
                [c.to_json() for c in self.priority_classes]
                if self.priority_classes is not None
                else None
            ),
        }

    @cached_property
    def _queues_json(self) -> tuple[dict[str, Any], ...]:
        return tuple(self.formatted.get(q) or q.to_json() for q in self.queues)

    def records_json(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """The REST records of the queues called ``names`` (in the answer's order), as
        :meth:`to_json` lists them: what a ``queue`` events message carries."""
        wanted = set(names)
        return [
            {**q, "resources": [dict(r) for r in q["resources"]]}
            for summary, q in zip(self.queues, self._queues_json, strict=True)
            if summary.name in wanted
        ]

    def changed_since(self, before: QueueList) -> tuple[str, ...] | None:
        """The names of the LocalQueues whose records differ from ``before``'s, in this
        answer's order; None when more than records changed (a queue came or went, or the
        answer's other fields: then the whole answer is news)."""
        if (
            self.namespace,
            self.kueue_api,
            self.quota_visible,
            self.cohorts_visible,
            self.priority_classes,
        ) != (
            before.namespace,
            before.kueue_api,
            before.quota_visible,
            before.cohorts_visible,
            before.priority_classes,
        ):
            return None
        if [q.name for q in self.queues] != [q.name for q in before.queues]:
            return None
        return tuple(
            now.name
            for now, then in zip(self.queues, before.queues, strict=True)
            if now is not then and now != then
        )

    def get(self, name: str) -> QueueSummary | None:
        """The queue called ``name``, if there is one."""
        return next((q for q in self.queues if q.name == name), None)

    @property
    def default(self) -> QueueSummary | None:
        """The namespace's default queue, if it has one."""
        return next((q for q in self.queues if q.default), None)
