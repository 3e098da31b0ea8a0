"""Kueue's queue positions of waiting Workloads, from the visibility API: one call per
LocalQueue with a waiting Workload, whoever asks (the cluster list, the workload list)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..k8s.errors import KubeUnreachable
from ..k8s.session import KubeSession

Object = dict[str, Any]


def pending_entries(session: KubeSession, queues: Iterable[str | None]) -> dict[str, Object]:
    """``{workload name: pendingworkloads item}`` of the LocalQueues ``queues``, asking the
    visibility API once per queue (none when positions are not visible; a queue whose call
    does not answer ends the asking: one timeout is enough)."""
    entries: dict[str, Object] = {}
    for queue in sorted({q for q in queues if q}):
        try:
            items = session.pending_workloads(queue) or []
        except KubeUnreachable:
            break  # not answering (a timeout each): no positions this time, ask no more
        for item in items:
            name = (item.get("metadata") or {}).get("name")
            if name:
                entries[str(name)] = item
    return entries
