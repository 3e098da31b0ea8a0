"""The base of every jupyter_dw error, and the bad request any layer may refuse.

Pure and at the bottom of the layers so the Kubernetes and Ray layers can subclass it;
surfaces import the whole vocabulary from ``core/errors.py``, never from here.
"""

from __future__ import annotations

from typing import Any, ClassVar


class DWError(Exception):
    """Base class: a failure explained for a user. Every surface shows ``error``, ``reason``
    and ``hint`` as they are; ``code`` is a stable machine-readable tag; HTTP uses ``status``.

    A subclass states its own in the class line, ``class NotFound(DWError, status=404,
    code="not_found")``, and names in ``shown`` the attributes of its own that
    :meth:`to_json` adds."""

    status = 500
    code = "error"
    shown: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, *, status: int | None = None, code: str | None = None) -> None:
        super().__init_subclass__()
        if status is not None:
            cls.status = status
        if code is not None:
            cls.code = code

    def __init__(self, error: str, reason: str | None = None, hint: str | None = None) -> None:
        super().__init__(error if reason is None else f"{error}: {reason}")
        self.error = error
        self.reason = reason
        self.hint = hint

    def to_json(self) -> dict[str, Any]:
        """``{"error", "reason", "hint", "code"}`` and the ``shown`` attributes, as the REST
        API returns it."""
        own = {name: getattr(self, name) for name in self.shown}
        return {
            "error": self.error,
            "reason": self.reason,
            "hint": self.hint,
            "code": self.code,
        } | own


class InvalidRequest(DWError, status=400, code="invalid_request"):
    """A request that cannot be carried out as given (400), nothing was changed.

    ``errors`` maps each bad field of the request to a message (``"request"`` for the request
    as a whole); the REST API returns it as ``"errors"``.
    """

    shown = ("errors",)

    def __init__(
        self,
        error: str,
        reason: str | None = None,
        hint: str | None = None,
        errors: dict[str, str] | None = None,
    ) -> None:
        super().__init__(error, reason, hint)
        self.errors = dict(errors or {})
