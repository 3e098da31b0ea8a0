"""Writes and one-off reads for Ray clusters: create (dry run first), delete, get, and the
positions of pending Workloads from Kueue's visibility API.

Everything that is watched (RayClusters, their pods, Workloads) is read from the session's
caches instead; these are the calls no cache can answer. All functions block.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .errors import KubeApiError, KubeConflict, KubeError, KubeNotFound
from .resources import (
    PENDING_WORKLOADS_SUBRESOURCE,
    RAY_CLUSTER,
    VISIBILITY_CLUSTER_QUEUE,
    VISIBILITY_LOCAL_QUEUE,
)

if TYPE_CHECKING:
    from .client import KubeApi

log = logging.getLogger(__name__)

Object = dict[str, Any]

DRY_RUN = ("dryRun", "All")
BACKGROUND = ("propagationPolicy", "Background")


def create_raycluster(api: KubeApi, namespace: str, obj: Object) -> Object:
    """Create ``obj`` in ``namespace`` after a server-side dry run; return the created object.

    The dry run goes through schema validation and every admission webhook (Kueue's, KubeRay's)
    without storing anything, so a rejected cluster leaves the namespace unchanged. A name that
    is taken raises :class:`KubeConflict`; a refused object :class:`KubeRejected`; missing RBAC
    :class:`KubeForbidden` naming ``create rayclusters.ray.io``. The create itself is one POST,
    never retried after it reached the API server, so one call makes at most one cluster.
    """
    name = str((obj.get("metadata") or {}).get("name") or "")
    path = RAY_CLUSTER.path(namespace)
    try:
        api.post(path, obj, query=[DRY_RUN])
        return api.post(path, obj)
    except KubeApiError as err:
        if err.api_status == 409:
            raise KubeConflict(
                f"A RayCluster named {name!r} already exists in namespace {namespace}",
                err.reason,
                "Choose another name, or delete the existing cluster first.",
            ) from err
        raise


def delete_raycluster(api: KubeApi, namespace: str, name: str) -> Object:
    """Delete RayCluster ``name`` with background propagation; return the API's answer.

    The API server answers at once; the garbage collector then removes what the RayCluster
    owns (its Workload, pods and Services). Raises :class:`KubeNotFound` when it is absent.
    """
    try:
        return api.delete(RAY_CLUSTER.path(namespace, name), query=[BACKGROUND])
    except KubeApiError as err:
        if err.api_status == 404:
            raise not_found(namespace, name) from err
        raise


def get_raycluster(api: KubeApi, namespace: str, name: str) -> Object:
    """One RayCluster read from the API server; :class:`KubeNotFound` when absent."""
    try:
        return api.get(RAY_CLUSTER.path(namespace, name))
    except KubeApiError as err:
        if err.api_status == 404:
            raise not_found(namespace, name) from err
        raise


def not_found(namespace: str, name: str) -> KubeNotFound:
    """The error for a RayCluster that does not exist."""
    return KubeNotFound(
        f"No RayCluster named {name!r} in namespace {namespace}",
        None,
        "List the namespace's clusters with GET clusters.",
    )


def pending_workloads(
    api: KubeApi, visibility_version: str, namespace: str, local_queue: str
) -> list[Object] | None:
    """The pending Workloads of ``local_queue`` with their positions, or None when Kueue's
    visibility API cannot tell (not served, forbidden, the LocalQueue gone, the API down).

    Items carry ``metadata.name`` (the Workload), ``positionInLocalQueue``,
    ``positionInClusterQueue`` (0-based) and ``priority``. Positions are extra information:
    a failure here is logged and never fails the caller's answer.
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
    except KubeError as err:
        log.info("no pending workloads for %s: %s", what, err)
        return None
    items = answer.get("items")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
