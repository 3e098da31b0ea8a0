"""Writes to Kueue Workloads: deactivate and reactivate one (``spec.active``), as kueuectl does.
A JSON merge patch; ``patch workloads`` needs a Role of its own. Blocking
(docs/explanation/kueue-mapping.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import KubeApiError, KubeNotFound
from .resources import Resource

if TYPE_CHECKING:
    from .client import KubeApi

Object = dict[str, Any]

DRY_RUN = ("dryRun", "All")


def set_workload_active(
    api: KubeApi,
    resource: Resource,
    namespace: str,
    name: str,
    active: bool,
    dry_run: bool = False,
) -> Object:
    """Merge-patch ``{"spec": {"active": active}}`` into Workload ``name`` (``resource``: the
    Workload kind at the Kueue version in use) and return it. ``dry_run`` goes through RBAC,
    validation and Kueue's webhooks without storing anything, so a caller can learn that a
    write would be refused (403 :class:`KubeForbidden` naming ``patch
    workloads.kueue.x-k8s.io``) before it changes anything else. :class:`KubeNotFound` when
    the Workload is gone."""
    try:
        return api.merge_patch(
            resource.path(namespace, name),
            {"spec": {"active": active}},
            query=[DRY_RUN] if dry_run else (),
        )
    except KubeApiError as err:
        if err.api_status == 404:
            raise KubeNotFound(
                f"No Workload named {name!r} in namespace {namespace}",
                None,
                "Kueue may have replaced it a moment ago; look at the cluster again.",
            ) from err
        raise
