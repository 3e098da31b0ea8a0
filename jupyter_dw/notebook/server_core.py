"""The kernel's core when it reads through its Jupyter server: the same services, each method
called on the server's core by name and its answer read back as the type
:mod:`jupyter_dw.core.kernel_calls` declares for it. No cache, watch or session of its own,
and none of the modules that make them: the Kubernetes layer is imported only if the server
goes away and the kernel connects on its own.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.kernel_calls import KIND_PREFIX, allowed, calls_shape, service_object
from ..domain.freshness import WatchHealth
from ..domain.identity import Identity
from ..domain.job_kind import Info
from ..domain.json_decode import decode
from ..domain.kinds import KINDS
from ..domain.workloads import WorkloadInfo
from .server_link import ServerGone, ServerLink

if TYPE_CHECKING:
    from ..core.services import DWCore


@cache
def returns(shape: type, method: str) -> Any:
    """What ``shape.method`` declares it returns (its string annotations resolved)."""
    return typing.get_type_hints(getattr(shape, method)).get("return", Any)


def _bound(hint: Any, types: dict[Any, Any]) -> Any:
    """``hint`` with the TypeVars in ``types`` replaced (``JobList[Info]`` →
    ``JobList[RayJobInfo]``)."""
    if isinstance(hint, TypeVar):
        return types.get(hint, Any)
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if not args or origin is None:
        return hint
    bound = tuple(_bound(arg, types) for arg in args)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return typing.Union[bound]  # noqa: UP007  # built from a tuple
    return origin[bound] if hasattr(origin, "__class_getitem__") else hint


Gone = Callable[[str], "DWCore"]
"""Called when the server is gone for good: the kernel's own core, which answers from then on."""


class RemoteService:
    """One service of the server's core: ``service.method(...)`` for each allowed method.
    Once the server is gone, the same call goes to the kernel's own core."""

    def __init__(
        self,
        link: ServerLink,
        gone: Gone,
        service: str,
        types: dict[Any, Any] | None = None,
    ) -> None:
        self._link = link
        self._gone = gone
        self._service = service
        self._shape = calls_shape(service)
        """The protocol that declares the service's calls: what each answer is read as."""
        self._types = types or {}

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_") or not allowed(self._service, method):
            raise AttributeError(f"{self._service}.{method} is not read through the server")
        answer_type = _bound(returns(self._shape, method), self._types)

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                answer = self._link.call(self._service, method, list(args), kwargs)
            except ServerGone as err:
                member = getattr(service_object(self._gone(str(err)), self._service), method)
                return member(*args, **kwargs) if callable(member) else member
            return decode(answer_type, answer)

        call.__name__ = method
        return call


class RemoteWorkloads(RemoteService):
    """The Workloads service; which of them this identity made is asked once per listing."""

    def __init__(self, link: ServerLink, gone: Gone) -> None:
        super().__init__(link, gone, "workloads")
        self._mine: dict[str, bool] = {}

    def follow_owners(self, timeout: float | None = None) -> None:
        """Nothing to open here: the server follows them."""

    def made_by_me(self, info: WorkloadInfo) -> bool:
        """Whether this identity made ``info``'s job (asked of the server once per name)."""
        if info.name not in self._mine:
            self.know_mine([info.name])
        return self._mine.get(info.name, False)

    def know_mine(self, names: Iterable[str]) -> None:
        """Ask the server which of ``names`` are mine, in one call."""
        wanted = [name for name in names if name not in self._mine]
        if wanted:
            mine = set(self.__getattr__("mine")(wanted))
            self._mine.update({name: name in mine for name in wanted})

    def list(self, *args: Any, **kwargs: Any) -> Any:
        """``WorkloadService.list``; learns which are mine at the same time."""
        answer = self.__getattr__("list")(*args, **kwargs)
        self.know_mine(w.name for w in answer.workloads)
        return answer


class RemoteSession:
    """What the kernel asks of a session: who it is, the watches' health, readiness."""

    def __init__(
        self, link: ServerLink, gone: Gone, add_listener: Callable[..., Callable[[], None]]
    ) -> None:
        self._remote = RemoteService(link, gone, "session")
        self.add_listener = add_listener
        self._identity: Identity | None = None

    @property
    def ready(self) -> bool:
        """Always: the server's session is what answers."""
        return True

    def wait_ready(self, timeout: float | None = None) -> None:
        """Nothing to wait for here (the server waits for its own session)."""

    def stop(self) -> None:
        """Nothing to stop: the server's session lives on."""

    @property
    def identity(self) -> Identity:
        """Who the server's session is to Kubernetes (the pod's service account)."""
        if self._identity is None:
            self._identity = self._remote.identity()
        return self._identity

    def watch_health(self) -> WatchHealth:
        """The server's watches' health."""
        health: WatchHealth = self._remote.watch_health()
        return health


@dataclass(frozen=True)
class ServerContext:
    """The server's ``GET context`` answer, as a kernel shows it."""

    answer: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The answer as the server sent it."""
        return self.answer


class ServerCore:
    """A kernel's core read through its server: ``queues``, ``clusters``, ``workloads``,
    ``jobs``, ``kind(plural)``, ``session`` and ``context()`` as :class:`DWCore` has them."""

    def __init__(
        self,
        link: ServerLink,
        add_listener: Callable[..., Callable[[], None]],
        gone: Gone,
    ) -> None:
        self.link = link
        self.queues = RemoteService(link, gone, "queues")
        self.clusters = RemoteService(link, gone, "clusters")
        self.workloads = RemoteWorkloads(link, gone)
        self.jobs = RemoteService(link, gone, "jobs")
        self.session = RemoteSession(link, gone, add_listener)
        self._kinds = {
            kind.plural: RemoteService(
                link, gone, KIND_PREFIX + kind.plural, {Info: kind.record_type}
            )
            for kind in KINDS
        }
        self._core = RemoteService(link, gone, "core")

    def kind(self, plural: str) -> RemoteService:
        """The service of the workload kind whose plural is ``plural``."""
        try:
            return self._kinds[plural]
        except KeyError:
            raise KeyError(f"no workload kind {plural!r}") from None

    def context(self, timeout: float | None = None) -> ServerContext:
        """The server's session context (``GET context``: identity, APIs, permissions)."""
        return ServerContext(self._core.context())
