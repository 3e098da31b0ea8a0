"""What this workbench's clusters hold and use in each LocalQueue, one line per queue.
Summed from the cluster records the change feed already made, never from a read of its own;
"mine" means created through jupyter_dw by this identity (docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..domain.usage import QueueHolding, queue_holding
from .cluster_results import ClusterInfo


def is_mine(info: ClusterInfo, username: str | None) -> bool:
    """Whether ``info`` was created through jupyter_dw by ``username`` (any, when None)."""
    return info.owner is not None and (username is None or info.owner == username)


def holding(infos: Iterable[ClusterInfo], queue: str, username: str | None) -> QueueHolding:
    """What ``username``'s clusters in LocalQueue ``queue`` hold and use."""
    return queue_holding(
        info.usage
        for info in infos
        if info.usage is not None and info.snapshot.queue == queue and is_mine(info, username)
    )


def holdings(infos: Iterable[ClusterInfo], username: str | None) -> dict[str, QueueHolding]:
    """:func:`holding` for every LocalQueue one of ``username``'s clusters names."""
    infos = list(infos)
    queues = sorted(
        {i.snapshot.queue for i in infos if i.snapshot.queue is not None and is_mine(i, username)}
    )
    return {queue: holding(infos, queue, username) for queue in queues}
