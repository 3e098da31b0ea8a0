"""Writes and one-off reads for KubeRay objects (RayClusters, RayJobs): create (dry run
first), delete, patch, annotate, get.

Everything that is watched (RayClusters, their pods, Workloads) is read from the session's
caches instead; these are the calls no cache can answer. All functions block.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..names import IDEMPOTENCY_KEY_ANNOTATION, REQUEST_DIGEST_ANNOTATION
from .errors import KubeApiError, KubeConflict, KubeError, KubeNotFound, KubeUnreachable
from .resources import (
    RAY_CLUSTER,
    Resource,
)

if TYPE_CHECKING:
    from .client import KubeApi

log = logging.getLogger(__name__)

Object = dict[str, Any]

DRY_RUN = ("dryRun", "All")
BACKGROUND = ("propagationPolicy", "Background")


def create_raycluster(
    api: KubeApi, namespace: str, obj: Object, resource: Resource = RAY_CLUSTER
) -> Object:
    """Create ``obj`` (a ``resource``: RayCluster unless told) in ``namespace`` after a
    server-side dry run; return the created object.

    The dry run goes through schema validation and every admission webhook (Kueue's, KubeRay's)
    without storing anything, so a rejected cluster leaves the namespace unchanged. A refused
    object raises :class:`KubeRejected`; missing RBAC :class:`KubeForbidden` naming
    ``create rayclusters.ray.io``.

    ``obj``'s ``jupyter-dw/idempotency-key`` annotation makes the create safe to repeat: when
    the name is taken by a cluster carrying the same key (this request, or an earlier try of
    it whose answer was lost), that cluster is returned as created. When the create was sent
    but its answer is lost (connection cut, timeout), the cluster is looked up by name: there
    with the key, it is the answer; absent, the create is sent once more. So a key makes at
    most one cluster, whatever the network does. A name taken by another key (or without a
    key), or by the same key sent with a different request (its digest is stored next to the
    key), raises :class:`KubeConflict`; an answer that stays lost raises the transport error
    with a hint to retry with the same key.
    """
    metadata = obj.get("metadata") or {}
    name = str(metadata.get("name") or "")
    key = (metadata.get("annotations") or {}).get(IDEMPOTENCY_KEY_ANNOTATION)
    digest = None
    if key is not None:
        digest = request_digest(obj)
        obj = copy.deepcopy(obj)
        obj["metadata"]["annotations"][REQUEST_DIGEST_ANNOTATION] = digest
    path = resource.path(namespace)
    try:
        api.post(path, obj, query=[DRY_RUN])  # stores nothing: its errors are final
    except KubeApiError as err:
        if err.api_status != 409:
            raise
        existing = _keyed_cluster(api, resource, namespace, name, key, digest, err)
        if existing is not None:
            return existing
    for attempt in (1, 2):
        try:
            return api.post(path, obj)
        except KubeApiError as err:
            if err.api_status != 409:
                raise
            existing = _keyed_cluster(api, resource, namespace, name, key, digest, err)
        except KubeUnreachable as err:  # sent: it may have been stored, look before resending
            if key is None or attempt == 2:
                raise _outcome_unknown(err, resource, name, key is not None) from err
            existing = _keyed_cluster(api, resource, namespace, name, key, digest, None)
            if existing is not None:
                log.info(
                    "create of %s %s/%s: answer lost, found by its key",
                    resource.kind,
                    namespace,
                    name,
                )
        if existing is not None:
            return existing
    raise _conflict(resource, namespace, name, None)


def request_digest(obj: Object) -> str:
    """SHA-256 of a create request as sent (without its own digest annotation): the same
    click retried gives the same digest, a changed form another."""
    sent = copy.deepcopy(obj)
    (sent.get("metadata") or {}).get("annotations", {}).pop(REQUEST_DIGEST_ANNOTATION, None)
    canonical = json.dumps(sent, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _keyed_cluster(
    api: KubeApi,
    resource: Resource,
    namespace: str,
    name: str,
    key: str | None,
    digest: str | None,
    cause: KubeError | None,
) -> Object | None:
    """Object ``name`` if it carries idempotency ``key`` from the same request
    (``digest``); None when there is none; raises :class:`KubeConflict` (with ``cause``'s
    reason, the API server's 409) when another request made it, or the transport error as an
    unknown outcome when the API server cannot tell."""
    if key is None:
        raise _conflict(resource, namespace, name, cause)
    try:
        existing = api.get(resource.path(namespace, name))
    except KubeApiError as err:
        if err.api_status == 404:
            return None
        raise _conflict(resource, namespace, name, cause) from err
    except KubeUnreachable as err:
        raise _outcome_unknown(err, resource, name, True) from err
    annotations = (existing.get("metadata") or {}).get("annotations") or {}
    if annotations.get(IDEMPOTENCY_KEY_ANNOTATION) != key:
        raise _conflict(resource, namespace, name, cause)
    if annotations.get(REQUEST_DIGEST_ANNOTATION, digest) != digest:
        raise KubeConflict(
            f"{resource.kind} {name!r} was created by an earlier request with this idempotency "
            "key, and this request differs from it",
            cause.reason if cause is not None else None,
            "A changed request needs a new idempotency key (each Submit makes one); to change "
            "it, delete it and submit again.",
        )
    return existing


def _conflict(
    resource: Resource, namespace: str, name: str, cause: KubeError | None
) -> KubeConflict:
    return KubeConflict(
        f"A {resource.kind} named {name!r} already exists in namespace {namespace}",
        cause.reason if cause is not None else None,
        "Choose another name, or delete the existing one first.",
    )


def _outcome_unknown(
    err: KubeUnreachable, resource: Resource, name: str, keyed: bool
) -> KubeUnreachable:
    """``err`` with a hint saying the object may exist and how to find out safely."""
    hint = (
        f"{resource.kind} {name!r} may or may not have been created. Retrying with the same "
        "idempotency key is safe: it answers with that object if it exists and never makes "
        "a second one."
        if keyed
        else f"{resource.kind} {name!r} may or may not have been created: look for it (GET "
        f"{_collection(resource)}) before creating it again."
    )
    return type(err)(err.error, err.reason, hint)


def _collection(resource: Resource) -> str:
    """The REST collection listing ``resource``'s objects (``clusters``, ``rayjobs``)."""
    return "clusters" if resource == RAY_CLUSTER else resource.plural


def delete_raycluster(
    api: KubeApi, namespace: str, name: str, resource: Resource = RAY_CLUSTER
) -> Object:
    """Delete ``name`` (a RayCluster unless told) with background propagation; return the
    API's answer.

    The API server answers at once; the garbage collector then removes what it owns (its
    Workload, pods and Services; a RayJob's RayCluster). Raises :class:`KubeNotFound` when
    it is absent.
    """
    try:
        return api.delete(resource.path(namespace, name), query=[BACKGROUND])
    except KubeApiError as err:
        if err.api_status == 404:
            raise not_found(namespace, name, resource) from err
        raise


def patch_raycluster(
    api: KubeApi, namespace: str, name: str, operations: list[dict[str, Any]]
) -> Object:
    """Apply JSON-patch ``operations`` to RayCluster ``name``; :class:`KubeNotFound` when it
    is absent."""
    try:
        return api.patch(RAY_CLUSTER.path(namespace, name), operations)
    except KubeApiError as err:
        if err.api_status == 404:
            raise not_found(namespace, name) from err
        raise


def annotate_raycluster(
    api: KubeApi,
    namespace: str,
    name: str,
    annotations: Mapping[str, str | None],
    dry_run: bool = False,
) -> Object:
    """Set (a string) or remove (None) ``annotations`` of RayCluster ``name`` in one merge
    patch, leaving its other annotations and its spec as they are; :class:`KubeNotFound` when
    it is absent, :class:`KubeForbidden` naming ``patch rayclusters.ray.io`` without RBAC."""
    try:
        return api.merge_patch(
            RAY_CLUSTER.path(namespace, name),
            {"metadata": {"annotations": dict(annotations)}},
            query=[DRY_RUN] if dry_run else (),
        )
    except KubeApiError as err:
        if err.api_status == 404:
            raise not_found(namespace, name) from err
        raise


def get_raycluster(
    api: KubeApi, namespace: str, name: str, resource: Resource = RAY_CLUSTER
) -> Object:
    """One object (a RayCluster unless told) read from the API server; :class:`KubeNotFound`
    when absent."""
    try:
        return api.get(resource.path(namespace, name))
    except KubeApiError as err:
        if err.api_status == 404:
            raise not_found(namespace, name, resource) from err
        raise


def not_found(namespace: str, name: str, resource: Resource = RAY_CLUSTER) -> KubeNotFound:
    """The error for an object (a RayCluster unless told) that does not exist."""
    if resource == RAY_CLUSTER:
        hint = "List the namespace's clusters with GET clusters."
    else:
        hint = f"List the namespace's {resource.plural} with GET {_collection(resource)}."
    return KubeNotFound(f"No {resource.kind} named {name!r} in namespace {namespace}", None, hint)
