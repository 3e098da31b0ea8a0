"""Stopping a Ray cluster and resuming it, keeping the RayCluster.
Its Workloads are deactivated (``spec.active: false``, as ``kueuectl stop workload`` does) and
reactivated; never KubeRay's ``spec.suspend``, which Kueue owns. Blocking. Why, and the order of
the writes: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..domain.cluster_state import ClusterSnapshot
from ..domain.slices import slice_chain
from ..domain.stop_record import BY_PERSON, STOP_ANNOTATIONS, StopRecord
from .cluster_results import ClusterInfo
from .errors import DWError, InvalidRequest, WrongState
from .settings import refuse_writes

if TYPE_CHECKING:
    from .clusters import ClusterService

log = logging.getLogger(__name__)

Object = dict[str, Any]

STOPPED = "stopped"


def check_no_fields(body: Any, action: str) -> None:
    """:class:`InvalidRequest` unless ``body`` (decoded JSON) is empty (none, ``null`` or
    ``{}``), before anything is read or changed: a stop or resume takes no fields today."""
    if body is None or body == {}:
        return
    problem = (
        f"unknown field(s) {', '.join(sorted(body))}"
        if isinstance(body, dict)
        else "the body must be empty or a JSON object without fields"
    )
    raise InvalidRequest(
        f"Invalid {action} request",
        problem,
        "Send no body, or {}; nothing was changed.",
        {"request": problem},
    )


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def stop_cluster(
    service: ClusterService, name: str, reason: dict[str, Any] | None = None
) -> ClusterInfo:
    """Stop admitted cluster ``name``, keeping it; ``reason`` is the record's reason
    (default ``{"by": "person"}``; a rule passes its own ``by`` and figures).

    Raises ``InvalidName``, ``KubeNotFound``, :class:`WrongState` (409 ``not_admitted``: not
    admitted, already stopped, or being deleted), ``KubeForbidden`` (``patch
    workloads.kueue.x-k8s.io`` or ``patch rayclusters.ray.io`` missing; nothing changed)."""
    from .clusters import check_cluster_name

    refuse_writes(service.config_errors)
    raycluster = service.session.ray_cluster(check_cluster_name(name))
    _, slices, status = service.snapshots([raycluster], fresh=True)[0]
    if not status.admitted or status.state in (STOPPED, "deleting"):
        raise _not_admitted(status)
    targets = [w for w in slice_chain(slices).live() if _active(w)]
    for workload in targets:  # refused here: nothing was written
        service.session.set_workload_active(_name(workload), False, dry_run=True)
    record = StopRecord(
        by=service.session.identity.username,
        at=_now(),
        reason=dict(reason) if reason else {"by": BY_PERSON},
    )
    service.session.annotate_raycluster(name, dict(record.annotations()))
    try:
        for workload in targets:
            service.session.set_workload_active(_name(workload), False)
    except DWError:
        _forget_record(service, name)  # best effort: the record shows only while stopped
        raise
    return _fresh(service, name)


def resume_cluster(service: ClusterService, name: str) -> ClusterInfo:
    """Resume stopped cluster ``name``: its Workloads are reactivated and Kueue queues it
    again, at the size it had. Raises ``InvalidName``, ``KubeNotFound``, :class:`WrongState`
    (409 ``not_stopped``), ``KubeForbidden`` (``patch workloads.kueue.x-k8s.io``; nothing
    changed)."""
    from .clusters import check_cluster_name

    refuse_writes(service.config_errors)
    raycluster = service.session.ray_cluster(check_cluster_name(name))
    _, slices, status = service.snapshots([raycluster], fresh=True)[0]
    if status.state != STOPPED:
        raise WrongState(
            f"Ray cluster {name!r} is not stopped",
            f"it is {status.state}; only a stopped cluster can be resumed",
            "Nothing was changed.",
            status.state,
            "not_stopped",
        )
    targets = [w for w in slice_chain(slices).live() if not _active(w)]
    for workload in targets:  # the first write: a 403 here changed nothing
        service.session.set_workload_active(_name(workload), True)
    _forget_record(service, name)
    return _fresh(service, name)


def _not_admitted(status: ClusterSnapshot) -> WrongState:
    if status.state == STOPPED:
        reason = "it is already stopped"
        hint = "Resume it to queue it again. Nothing was changed."
    elif status.state == "deleting":
        reason = "it is being deleted"
        hint = "Nothing was changed."
    elif status.workload is None:
        reason = f"it is {status.state} and Kueue manages no Workload for it"
        hint = (
            "Only a cluster Kueue admitted can be stopped; delete it instead. Nothing was changed."
        )
    else:
        reason = f"it is {status.state}: Kueue has not admitted it"
        hint = (
            "Only an admitted cluster holds quota to free; delete it to leave the queue. "
            "Nothing was changed."
        )
    return WrongState(
        f"Ray cluster {status.name!r} cannot be stopped", reason, hint, status.state, "not_admitted"
    )


def _forget_record(service: ClusterService, name: str) -> None:
    try:
        removed: dict[str, str | None] = dict.fromkeys(STOP_ANNOTATIONS)
        service.session.annotate_raycluster(name, removed)
    except DWError as err:
        log.warning("could not remove the stop record of RayCluster %s: %s", name, err)


def _fresh(service: ClusterService, name: str) -> ClusterInfo:
    current = service.session.cached_ray_cluster(name) or service.session.ray_cluster(name)
    [info] = service.infos(service.snapshots([current], fresh=True))
    return info


def _active(workload: Mapping[str, Any]) -> bool:
    return (workload.get("spec") or {}).get("active") is not False


def _name(workload: Mapping[str, Any]) -> str:
    return str((workload.get("metadata") or {}).get("name") or "")
