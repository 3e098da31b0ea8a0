"""The base of every jupyter_dw error, and the bad request any layer may refuse.

Pure and at the bottom of the layers so the Kubernetes and Ray layers can subclass it;
surfaces import the whole vocabulary from ``core/errors.py``, never from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from jupyter_dw.domain.json_decode import decode_fields

_Error = TypeVar("_Error", bound="DWError")


class DWError(Exception):
    """Base class: a failure explained for a user. Every surface shows ``error``, ``reason``
    and ``hint`` as they are; ``code`` is a stable machine-readable tag; HTTP uses ``status``.

    A subclass states its own in the class line, ``class NotFound(DWError, status=404,
    code="not_found")`` (one whose instances are given their code names them all in
    ``codes``), and names in ``shown`` the attributes of its own that :meth:`to_json` adds.
    The code is what an error is read back by (``core.errors.error_from_json``)."""

    status = 500
    code = "error"
    codes: ClassVar[tuple[str, ...]] = ()
    shown: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(
        cls,
        *,
        status: int | None = None,
        code: str | None = None,
        codes: tuple[str, ...] | None = None,
    ) -> None:
        super().__init_subclass__()
        if status is not None:
            cls.status = status
        if code is not None:
            cls.code = code
        cls.codes = codes if codes is not None else (code,) if code is not None else ()

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

    @classmethod
    def from_json(cls: type[_Error], data: Mapping[str, Any], status: int | None = None) -> _Error:
        """This error as :meth:`to_json` wrote it and ``status`` (the HTTP answer's; the
        class's own when None) sent it: ``error``, ``reason``, ``hint``, the ``shown``
        attributes, and ``code`` and ``status`` where they differ from the class's. Not
        through the subclass's ``__init__``: its arguments are not all in the JSON."""
        error = decode_fields(_Words, data)
        made = cls.__new__(cls)
        DWError.__init__(made, error.error, error.reason, error.hint)
        for name in cls.shown:
            setattr(made, name, data.get(name))
        code = data.get("code")
        if isinstance(code, str) and code != cls.code:
            made.code = code
        if status is not None and status != cls.status:
            made.status = status
        return made


@dataclass(frozen=True)
class _Words:
    """What every error's JSON says."""

    error: str
    reason: str | None = None
    hint: str | None = None


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
