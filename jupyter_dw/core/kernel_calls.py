"""What a kernel may ask its Jupyter server's core: the same service methods it would call on a
core of its own, named here one by one, their answers as the JSON their ``to_json`` makes (the
kernel reads them back with the methods' declared types: :mod:`jupyter_dw.domain.json_decode`).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol

from ..domain.freshness import WatchHealth
from ..domain.identity import Identity
from ..domain.job_kind import Info
from ..domain.ray_auth import RayEndpoint
from ..domain.ray_jobs import JobList as RayJobList
from ..domain.ray_jobs import JobLogs, JobStopped, RayJob
from .cluster_results import ClusterInfo, ClusterList, Deleted, FitResult, ScaleResult
from .errors import DWError
from .kind_results import JobList
from .queue_results import QueueList
from .workload_results import WorkloadList

if TYPE_CHECKING:
    from .services import DWCore

KIND_PREFIX = "kind:"
"""``kind:<plural>`` names a workload kind's service (``kind:rayjobs``)."""

# What a kernel may call, service by service: each method's signature as the core's service
# has it (tests/unit/test_server_core.py and mypy hold them equal). Declared here, apart from
# the services, so that a kernel reading through its server reads each answer's type without
# importing the services, and with them the Kubernetes client.


class QueueCalls(Protocol):
    """``queues``: :class:`~jupyter_dw.core.queues.QueueService`."""

    def list(self, timeout: float | None = None) -> QueueList: ...


class WorkloadCalls(Protocol):
    """``workloads``: :class:`~jupyter_dw.core.workloads.WorkloadService`."""

    def list(
        self,
        queue: str | None = None,
        kind: str | None = None,
        timeout: float | None = None,
        *,
        fresh: bool = True,
    ) -> WorkloadList: ...

    def mine(self, names: Iterable[str]) -> builtins.list[str]: ...


class ClusterCalls(Protocol):
    """``clusters``: :class:`~jupyter_dw.core.clusters.ClusterService`."""

    def fit(self, data: Any, ask_positions: bool = True) -> FitResult: ...

    def list(self) -> ClusterList: ...

    def entries(self, *, fresh: bool = True) -> builtins.list[ClusterInfo]: ...

    def get(self, name: str) -> ClusterInfo: ...

    def create(self, data: Any, idempotency_key: str | None = None) -> ClusterInfo: ...

    def delete(self, name: str) -> Deleted: ...

    def scale(self, name: str, workers: Any, dry_run: bool = False) -> ScaleResult: ...

    def stop(self, name: str, reason: dict[str, Any] | None = None) -> ClusterInfo: ...

    def resume(self, name: str) -> ClusterInfo: ...

    def describe(self, name: str) -> ClusterInfo | None: ...

    def dashboard_url(self, name: str) -> str | None: ...

    def image(self, name: str) -> str | None: ...

    def published_sizes(self) -> dict[str, dict[str, int | str | None]]: ...


class RayJobCalls(Protocol):
    """``jobs``: :class:`~jupyter_dw.core.ray_jobs.RayJobService` (Ray's Jobs API)."""

    def submit(self, name: str, request: Mapping[str, Any]) -> RayJob: ...

    def list(self, name: str) -> RayJobList: ...

    def get(self, name: str, job_id: str) -> RayJob: ...

    def logs(self, name: str, job_id: str) -> JobLogs: ...

    def stop(self, name: str, job_id: str) -> JobStopped: ...

    def client_address(self, name: str) -> str: ...

    def endpoint(self, name: str) -> RayEndpoint: ...


class SessionCalls(Protocol):
    """``session``: what a kernel reads of the session (``identity`` is read, not called)."""

    def watch_health(self) -> WatchHealth: ...

    def identity(self) -> Identity: ...


class CoreCalls(Protocol):
    """``core``: :class:`~jupyter_dw.core.services.DWCore` itself."""

    def context(self) -> dict[str, Any]: ...  # read as JSON: what dw.context() shows


class KindCalls(Protocol, Generic[Info]):
    """``kind:<plural>``: :class:`~jupyter_dw.core.kind_service.KindService` of that kind."""

    def fit(self, data: Any, ask_positions: bool = True) -> FitResult: ...

    def list(self) -> JobList[Info]: ...

    def get(self, name: str) -> Info: ...

    def create(self, data: Any, idempotency_key: str | None = None) -> Info: ...

    def delete(self, name: str) -> Deleted: ...


SERVICE_CALLS: Mapping[str, type] = {
    "queues": QueueCalls,
    "workloads": WorkloadCalls,
    "clusters": ClusterCalls,
    "jobs": RayJobCalls,
    "session": SessionCalls,
    "core": CoreCalls,
}
"""Each service's calls; a workload kind's (``kind:<plural>``) are :class:`KindCalls`."""


def calls_of(shape: type) -> frozenset[str]:
    """The methods ``shape`` declares."""
    return frozenset(
        name for name, value in vars(shape).items() if callable(value) and not name.startswith("_")
    )


KERNEL_CALLS: Mapping[str, frozenset[str]] = {
    service: calls_of(shape) for service, shape in SERVICE_CALLS.items()
}
"""Each service's methods a kernel may call; a workload kind's are :data:`KIND_CALLS`.
Nothing else of the core is reachable: the rest is the server's own."""
KIND_CALLS = calls_of(KindCalls)


def calls_shape(service: str) -> type:
    """The protocol that declares ``service``'s calls (``kind:<plural>``: :class:`KindCalls`)."""
    return KindCalls if service.startswith(KIND_PREFIX) else SERVICE_CALLS[service]


if TYPE_CHECKING:

    def _served_by(core: DWCore) -> None:
        """For mypy: each service is what its protocol declares (the session and the core
        are read differently; the unit test holds every signature equal)."""
        queues: QueueCalls = core.queues
        workloads: WorkloadCalls = core.workloads
        clusters: ClusterCalls = core.clusters
        jobs: RayJobCalls = core.jobs
        kind: KindCalls[Any] = core.kind("rayjobs")
        del queues, workloads, clusters, jobs, kind


class UnknownCall(DWError, status=400, code="unknown_call"):
    """A kernel asked for a method that is not in :data:`KERNEL_CALLS` (a kernel of another
    jupyter_dw version: the versions are checked first, so this is a bug)."""


def service_object(core: DWCore, service: str) -> Any:
    """The object of ``core`` that answers what ``service`` names (a kernel's call on the
    server, or on its own core once the server is gone); None for a name no kernel calls."""
    if service.startswith(KIND_PREFIX):
        try:
            return core.kind(service[len(KIND_PREFIX) :])
        except KeyError:
            return None
    if service == "core":
        return core
    return getattr(core, service, None) if service in KERNEL_CALLS else None


def allowed(service: str, method: str) -> bool:
    """Whether a kernel may call ``service.method``."""
    if service.startswith(KIND_PREFIX):
        return method in KIND_CALLS
    return method in KERNEL_CALLS.get(service, frozenset())


def kernel_call(
    core: DWCore, service: str, method: str, args: list[Any], kwargs: Mapping[str, Any]
) -> Any:
    """Run ``service.method(*args, **kwargs)`` on ``core`` (blocking, once its session is
    ready) and return its answer as JSON; DWErrors pass through. An attribute
    (``session.identity``) is read, not called."""
    target = service_object(core, service) if allowed(service, method) else None
    if target is None:
        raise UnknownCall(
            f"A kernel may not call {service}.{method}",
            "it is not one of the calls a kernel makes through its server",
            "Use the same jupyter_dw version in the kernel as in the Jupyter server.",
        )
    # As a kernel's own core does before its first call: a kernel started with the server
    # waits for its session rather than hearing "not connected yet".
    core.session.wait_ready()
    member = getattr(target, method)
    value = member(*args, **dict(kwargs)) if callable(member) else member
    return to_json(value)


def to_json(value: Any) -> Any:
    """A service's answer as JSON: its ``to_json()``, lists and mappings of them, or a plain
    value."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): to_json(item) for key, item in value.items()}
    raise TypeError(f"{type(value).__name__} has no JSON form")
