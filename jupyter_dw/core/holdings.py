"""What this workbench's clusters hold and use in each LocalQueue: one line per queue on every
surface ("your clusters hold 12 CPU, 2 GPU of team-a; they use 1.4 CPU, 0 GPU now").

Summed from :class:`ClusterInfo` records already made (their ``usage``), never from a read of
its own: the change feed keeps the records it last sent and sums one queue again when one of
its clusters changes (see :meth:`jupyter_dw.core.feed.ChangeFeed.holding`).

"Mine" is the sidebar's rule and :meth:`WorkloadService.made_by_me`'s: created through
jupyter_dw by this identity (``owner``); without a known username, any cluster created
through jupyter_dw.
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
        if info.usage is not None and info.status.queue == queue and is_mine(info, username)
    )


def holdings(infos: Iterable[ClusterInfo], username: str | None) -> dict[str, QueueHolding]:
    """:func:`holding` for every LocalQueue one of ``username``'s clusters names."""
    infos = list(infos)
    queues = sorted(
        {i.status.queue for i in infos if i.status.queue is not None and is_mine(i, username)}
    )
    return {queue: holding(infos, queue, username) for queue in queues}
