"""Errors of the Kubernetes layer, each carrying what a user needs: what, why, and what to do.

Every surface (HTTP handlers, widgets, magics, CLI) shows ``error``, ``reason`` and ``hint``
as they are; the HTTP layer also uses ``status``. ``code`` is a stable machine-readable tag.
"""

from __future__ import annotations

from typing import Any


class KubeError(Exception):
    """Base class: a failure talking to Kubernetes, explained for a user."""

    status = 500
    code = "kubernetes_error"

    def __init__(self, error: str, reason: str | None = None, hint: str | None = None) -> None:
        super().__init__(error if reason is None else f"{error}: {reason}")
        self.error = error
        self.reason = reason
        self.hint = hint

    def to_json(self) -> dict[str, Any]:
        """``{"error", "reason", "hint", "code"}`` as the REST API returns it."""
        return {"error": self.error, "reason": self.reason, "hint": self.hint, "code": self.code}


class KubeConfigError(KubeError):
    """No usable credentials: neither a service account nor a kubeconfig."""

    status = 503
    code = "no_credentials"


class KubeUnreachable(KubeError):
    """The API server could not be reached (connection refused, TLS, timeout)."""

    status = 503
    code = "unreachable"


class KubeUnauthorized(KubeError):
    """The API server rejected the credentials (401), even after re-reading the token."""

    status = 401
    code = "unauthorized"


class KubeForbidden(KubeError):
    """The identity may not do something (403). ``denied`` is ``"<verb> <resource>.<group>"``."""

    status = 403
    code = "forbidden"

    def __init__(
        self, error: str, reason: str | None = None, hint: str | None = None, denied: str = ""
    ) -> None:
        super().__init__(error, reason, hint)
        self.denied = denied

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "denied": self.denied}


class KubeApiError(KubeError):
    """Any other error status from the API server; ``status`` is the API server's."""

    code = "api_error"

    def __init__(
        self, status: int, error: str, reason: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(error, reason, hint)
        # A 5xx from the API server is a gateway problem for our clients; keep 4xx as they are.
        self.status = status if 400 <= status < 500 else 502
        self.api_status = status


class NotInstalled(KubeError):
    """A required API (Kueue, KubeRay) is not served by the cluster."""

    status = 503

    def __init__(self, product: str, reason: str, hint: str, code: str) -> None:
        super().__init__(f"{product} is not installed", reason, hint)
        self.code = code


class NotReady(KubeError):
    """The session has not finished starting (discovery, first list of every cache)."""

    status = 503
    code = "not_ready"
