"""The ``GET workloads`` answer (no Kubernetes imports: a kernel reading through its server
decodes it without loading the session)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..domain.workloads import WorkloadInfo
from .listing import ByName


@dataclass(frozen=True)
class WorkloadList(ByName["WorkloadInfo"]):
    """The ``GET workloads`` answer: the namespace's Workloads (those the filters ``queue`` and
    ``kind`` let through), by queue, each queue's holding ones first, then the waiting ones in
    Kueue's order. A sequence: iterate it, ``len()`` it, index it by position or name."""

    namespace: str
    positions_visible: bool
    workloads: tuple[WorkloadInfo, ...]
    queue: str | None = None
    kind: str | None = None

    def _entries(self) -> tuple[WorkloadInfo, ...]:
        return self.workloads

    def in_queue(self, queue: str) -> tuple[WorkloadInfo, ...]:
        """The Workloads of LocalQueue ``queue``, in the list's order."""
        return tuple(w for w in self.workloads if w.queue == queue)

    def to_json(self) -> dict[str, Any]:
        """``{"namespace", "positions_visible", "queue", "kind", "workloads"}``."""
        return {
            "namespace": self.namespace,
            "positions_visible": self.positions_visible,
            "queue": self.queue,
            "kind": self.kind,
            "workloads": [w.to_json() for w in self.workloads],
        }
