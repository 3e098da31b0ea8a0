"""Errors of the Kubernetes layer: each a :class:`DWError` (what, why, what to do) that
says the failure came from talking to Kubernetes."""

from __future__ import annotations

from typing import Any

from ..domain.errors import DWError, InvalidRequest


class KubeError(DWError):
    """Base class: a failure talking to Kubernetes, explained for a user."""

    status = 500
    code = "kubernetes_error"


class KubeConfigError(KubeError):
    """No usable credentials: neither a service account nor a kubeconfig."""

    status = 503
    code = "no_credentials"


class KubeUnreachable(KubeError):
    """The API server could not be reached (connection refused, TLS, timeout)."""

    status = 503
    code = "unreachable"


class KubeTimeout(KubeUnreachable):
    """The API server did not answer within the request timeout (a slow or overloaded API
    server, a webhook or aggregated API holding it up). 504 to our clients."""

    status = 504
    code = "timeout"


class KubeBusy(KubeUnreachable):
    """The API server asked us to slow down (429 Too Many Requests: its API Priority and
    Fairness queues are full). 503 to our clients, as any temporarily unavailable API server;
    ``retry_after`` is the API server's advice in seconds when it gave one."""

    code = "busy"

    def __init__(
        self, error: str, reason: str | None, hint: str | None, retry_after: int | None
    ) -> None:
        super().__init__(error, reason, hint)
        self.retry_after = retry_after


class WebhookUnavailable(KubeError):
    """An admission webhook with ``failurePolicy: Fail`` could not be called (its server is
    down or slow), so the API server refused the write: nothing was created. ``webhook`` is
    the webhook's name as the API server gives it; ``code`` is
    ``kueue_webhook_unavailable`` when the webhook is Kueue's."""

    status = 503

    def __init__(
        self, error: str, reason: str | None, hint: str | None, webhook: str, code: str
    ) -> None:
        super().__init__(error, reason, hint)
        self.webhook = webhook
        self.code = code

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "webhook": self.webhook}


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
        # Our clients get the statuses openapi.yaml lists: a missing object (404) and a taken
        # name (409) as they are; any other answer the API server should not have given us
        # (a 5xx, or a 4xx such as 410 or 413 about our own request) is a gateway problem.
        self.status = status if status in (404, 409) else 502
        self.api_status = status


class KubeNotFound(KubeApiError):
    """The object does not exist (404)."""

    code = "not_found"

    def __init__(self, error: str, reason: str | None = None, hint: str | None = None) -> None:
        super().__init__(404, error, reason, hint)


class KubeConflict(KubeApiError):
    """An object of that name already exists (409 AlreadyExists)."""

    code = "already_exists"

    def __init__(self, error: str, reason: str | None = None, hint: str | None = None) -> None:
        super().__init__(409, error, reason, hint)


class KubeRejected(KubeError, InvalidRequest):
    """The API server refused an object: schema validation (422 Invalid) or an admission
    webhook or policy (which answer 403, though no permission is missing). A bad request
    (``errors`` per field) that Kubernetes, not jupyter_dw, found bad."""

    # Stated again: KubeError's 500 comes first in the method resolution order.
    status = 400
    code = "rejected"

    def __init__(
        self,
        api_status: int,
        error: str,
        reason: str | None = None,
        hint: str | None = None,
        errors: dict[str, str] | None = None,
    ) -> None:
        super().__init__(error, reason, hint, errors)
        self.api_status = api_status


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
