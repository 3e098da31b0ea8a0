"""What a kernel may ask its Jupyter server's core: the same service methods it would call on a
core of its own, named here one by one, their answers as the JSON their ``to_json`` makes (the
kernel reads them back with the methods' declared types: :mod:`jupyter_dw.domain.json_decode`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import DWError

if TYPE_CHECKING:
    from .services import DWCore

KIND_PREFIX = "kind:"
"""``kind:<plural>`` names a workload kind's service (``kind:rayjobs``)."""

KERNEL_CALLS: Mapping[str, frozenset[str]] = {
    "queues": frozenset({"list"}),
    "workloads": frozenset({"list", "mine"}),
    "clusters": frozenset(
        {
            "fit",
            "list",
            "entries",
            "get",
            "create",
            "delete",
            "scale",
            "stop",
            "resume",
            "describe",
            "dashboard_url",
            "image",
            "published_sizes",
        }
    ),
    "jobs": frozenset({"submit", "list", "get", "logs", "stop", "client_address", "endpoint"}),
    "session": frozenset({"watch_health", "identity"}),
    "core": frozenset({"context"}),
}
"""Each service's methods a kernel may call; a workload kind's (``kind:<plural>``) are
:data:`KIND_CALLS`. Nothing else of the core is reachable: the rest is the server's own."""
KIND_CALLS = frozenset({"fit", "list", "get", "create", "delete"})


class UnknownCall(DWError, status=400, code="unknown_call"):
    """A kernel asked for a method that is not in :data:`KERNEL_CALLS` (a kernel of another
    jupyter_dw version: the versions are checked first, so this is a bug)."""


def _target(core: DWCore, service: str) -> Any:
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
    target = _target(core, service) if allowed(service, method) else None
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
