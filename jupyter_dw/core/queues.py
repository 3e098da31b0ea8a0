"""The namespace's LocalQueues with their quota and headroom, as every surface shows them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..domain.priorities import PriorityClass
from ..domain.quota import QueueSummary, queue_summaries
from ..k8s.session import KubeSession, QueueState
from .listing import ByName


@dataclass(frozen=True)
class QueueList(ByName["QueueSummary"]):
    """The ``GET queues`` answer: every LocalQueue of ``namespace`` with its quota. A
    sequence of its queues: iterate it, ``len()`` it, index it by position or by name.

    ``quota_visible`` False: ClusterQueues are not readable by this identity (each queue's
    ``hint`` names the permission). ``cohorts_visible`` False: Cohort objects exist but cannot
    be read, so headroom may miss quota set on them. ``priority_classes``: the
    WorkloadPriorityClasses a cluster's ``priority`` may name, highest value first; None when
    this identity may not read them.
    """

    namespace: str
    kueue_api: str | None
    quota_visible: bool
    cohorts_visible: bool
    queues: tuple[QueueSummary, ...]
    priority_classes: tuple[PriorityClass, ...] | None = None

    def _entries(self) -> tuple[QueueSummary, ...]:
        return self.queues

    def to_json(self) -> dict[str, Any]:
        """The REST shape (quantities as Kubernetes quantity strings)."""
        return {
            "namespace": self.namespace,
            "kueue_api": self.kueue_api,
            "quota_visible": self.quota_visible,
            "cohorts_visible": self.cohorts_visible,
            "queues": [q.to_json() for q in self.queues],
            "priority_classes": (
                [c.to_json() for c in self.priority_classes]
                if self.priority_classes is not None
                else None
            ),
        }

    def get(self, name: str) -> QueueSummary | None:
        """The queue called ``name``, if there is one."""
        return next((q for q in self.queues if q.name == name), None)

    @property
    def default(self) -> QueueSummary | None:
        """The namespace's default queue, if it has one."""
        return next((q for q in self.queues if q.default), None)


@dataclass(frozen=True)
class QueueService:
    """Queues for one session: answers come from its watch caches."""

    session: KubeSession

    def state(self, timeout: float | None = None) -> QueueState:
        """The parsed Kueue objects (waits for the caches' first sync)."""
        return self.session.queue_state(timeout)

    def list(self, timeout: float | None = None) -> QueueList:
        """Every LocalQueue of the namespace with its quota and headroom.

        Raises ``NotInstalled`` without Kueue and ``KubeForbidden`` when LocalQueues cannot
        be listed and watched; hidden quota is not an error.
        """
        state = self.state(timeout)
        return QueueList(
            namespace=self.session.namespace,
            kueue_api=self.session.discovery.kueue_version,
            quota_visible=state.cluster_queues is not None,
            cohorts_visible=state.cohorts is not None,
            queues=tuple(queue_summaries(state.local_queues, state.cluster_queues, state.cohorts)),
            priority_classes=(
                tuple(state.priority_classes) if state.priority_classes is not None else None
            ),
        )
