"""What ``dw.fit``/``dw.submit`` share for every kind they make (a Ray cluster, a RayJob): the
request body from a spec object or a mapping, and a safe retry after a lost answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..core.errors import InvalidSpec, KubeUnreachable
from ..domain.idempotency import new_idempotency_key

T = TypeVar("T")


def request_body(
    spec: Any, overrides: Mapping[str, Any], spec_type: type, what: str, example: str
) -> dict[str, Any]:
    """``spec`` (None, a ``spec_type`` with ``to_request()``, or a mapping) with the non-None
    ``overrides`` on top; :class:`InvalidSpec` for anything else (``what``: "cluster")."""
    if spec is None:
        base: dict[str, Any] = {}
    elif isinstance(spec, spec_type):
        base = spec.to_request()  # type: ignore[attr-defined]
    elif isinstance(spec, Mapping):
        base = dict(spec)
    else:
        name = spec_type.__name__
        raise InvalidSpec(
            f"Invalid {what} spec",
            f"expected a dw.{name} or a dict, got {type(spec).__name__}",
            f"Pass {example}.",
            {"request": f"must be a {name} or a mapping of fields"},
        )
    return {**base, **{k: v for k, v in overrides.items() if v is not None}}


def create_with_key(create: Callable[[str], T], idempotency_key: str | None) -> T:
    """``create(key)`` with ``idempotency_key`` (a fresh one by default); a lost answer
    (``Unreachable``) carries the key and says how to retry without making a second one."""
    key = idempotency_key or new_idempotency_key()
    try:
        return create(key)
    except KubeUnreachable as err:  # the answer may be lost: say how to retry safely
        err.idempotency_key = key  # type: ignore[attr-defined]
        err.hint = f"{err.hint or ''} Retry with dw.submit(..., idempotency_key={key!r}).".strip()
        raise
