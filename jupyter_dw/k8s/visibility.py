"""Kueue's visibility API: the pending Workloads of a LocalQueue or a ClusterQueue, with their
positions (one call each; the position board, ``core/positions.py``, decides when to ask)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .errors import KubeError, KubeUnreachable
from .resources import (
    PENDING_WORKLOADS_SUBRESOURCE,
    VISIBILITY_CLUSTER_QUEUE,
    VISIBILITY_LOCAL_QUEUE,
)

if TYPE_CHECKING:
    from .client import KubeApi

log = logging.getLogger(__name__)

Object = dict[str, Any]


def pending_workloads(
    api: KubeApi, visibility_version: str, namespace: str, local_queue: str
) -> list[Object] | None:
    """The pending Workloads of ``local_queue`` with their positions, or None when Kueue's
    visibility API cannot tell (not served, forbidden, the LocalQueue gone).

    Items carry ``metadata.name`` (the Workload), ``positionInLocalQueue``,
    ``positionInClusterQueue`` (0-based) and ``priority``. Positions are extra information:
    a failure here is logged and never fails the caller's answer; only when the API server
    does not answer (:class:`KubeUnreachable`, a timeout included) is it raised, so the caller
    asks no more in that request (each would cost another timeout) and answers without.
    """
    path = VISIBILITY_LOCAL_QUEUE.at(visibility_version).path(
        namespace, local_queue, PENDING_WORKLOADS_SUBRESOURCE
    )
    return _pending_items(api, path, f"LocalQueue {namespace}/{local_queue}")


def cluster_queue_pending_workloads(
    api: KubeApi, visibility_version: str, cluster_queue: str
) -> list[Object] | None:
    """Every pending Workload of ``cluster_queue`` (all namespaces) in Kueue's order, with
    ``priority`` and ``positionInClusterQueue``; None when the visibility API cannot tell."""
    path = VISIBILITY_CLUSTER_QUEUE.at(visibility_version).path(
        None, cluster_queue, PENDING_WORKLOADS_SUBRESOURCE
    )
    return _pending_items(api, path, f"ClusterQueue {cluster_queue}")


def _pending_items(api: KubeApi, path: str, what: str) -> list[Object] | None:
    try:
        answer = api.get(path)
    except KubeUnreachable:
        raise  # not answering: the caller stops asking for this request
    except KubeError as err:
        log.info("no pending workloads for %s: %s", what, err)
        return None
    items = answer.get("items")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
