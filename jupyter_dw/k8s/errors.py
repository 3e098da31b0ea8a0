"""Errors of the Kubernetes layer: each a :class:`DWError` (what, why, what to do) that
says the failure came from talking to Kubernetes."""

from __future__ import annotations

from ..domain.errors import DWError, InvalidRequest


class KubeError(DWError, status=500, code="kubernetes_error"):
    """Base class: a failure talking to Kubernetes, explained for a user."""


class KubeConfigError(KubeError, status=503, code="no_credentials"):
    """No usable credentials: neither a service account nor a kubeconfig."""


class KubeUnreachable(KubeError, status=503, code="unreachable"):
    """The API server could not be reached (connection refused, TLS, timeout)."""


class KubeTimeout(KubeUnreachable, status=504, code="timeout"):
    """The API server did not answer within the request timeout (a slow or overloaded API
    server, a webhook or aggregated API holding it up). 504 to our clients."""


class KubeBusy(KubeUnreachable, code="busy"):
    """The API server asked us to slow down (429 Too Many Requests: its API Priority and
    Fairness queues are full). 503 to our clients, as any temporarily unavailable API server;
    ``retry_after`` is the API server's advice in seconds when it gave one."""

    retry_after: int | None = None
    """None also on an error read back from a server's answer (a header carries it)."""

    def __init__(
        self, error: str, reason: str | None, hint: str | None, retry_after: int | None
    ) -> None:
        super().__init__(error, reason, hint)
        self.retry_after = retry_after


class WebhookUnavailable(
    KubeError, status=503, codes=("kueue_webhook_unavailable", "webhook_unavailable")
):
    """An admission webhook with ``failurePolicy: Fail`` could not be called (its server is
    down or slow), so the API server refused the write: nothing was created. ``webhook`` is
    the webhook's name as the API server gives it; ``code`` is
    ``kueue_webhook_unavailable`` when the webhook is Kueue's."""

    shown = ("webhook",)

    def __init__(
        self, error: str, reason: str | None, hint: str | None, webhook: str, code: str
    ) -> None:
        super().__init__(error, reason, hint)
        self.webhook = webhook
        self.code = code


class KubeUnauthorized(KubeError, status=401, code="unauthorized"):
    """The API server rejected the credentials (401), even after re-reading the token."""


class KubeForbidden(KubeError, status=403, code="forbidden"):
    """The identity may not do something (403). ``denied`` is ``"<verb> <resource>.<group>"``."""

    shown = ("denied",)

    def __init__(
        self, error: str, reason: str | None = None, hint: str | None = None, denied: str = ""
    ) -> None:
        super().__init__(error, reason, hint)
        self.denied = denied


class KubeApiError(KubeError, code="api_error"):
    """Any other error status from the API server; ``status`` is the API server's."""

    api_status: int | None = None
    """The API server's own status; None on an error read back from a server's answer (it
    sends only its own ``status``)."""

    def __init__(
        self, status: int, error: str, reason: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(error, reason, hint)
        # Our clients get the statuses openapi.yaml lists: a missing object (404) and a taken
        # name (409) as they are; any other answer the API server should not have given us
        # (a 5xx, or a 4xx such as 410 or 413 about our own request) is a gateway problem.
        self.status = status if status in (404, 409) else 502
        self.api_status = status


class KubeNotFound(KubeApiError, status=404, code="not_found"):
    """The object does not exist (404)."""

    def __init__(self, error: str, reason: str | None = None, hint: str | None = None) -> None:
        super().__init__(404, error, reason, hint)


class KubeConflict(KubeApiError, status=409, code="already_exists"):
    """An object of that name already exists (409 AlreadyExists)."""

    def __init__(self, error: str, reason: str | None = None, hint: str | None = None) -> None:
        super().__init__(409, error, reason, hint)


class KubeRejected(KubeError, InvalidRequest, status=400, code="rejected"):
    """The API server refused an object: schema validation (422 Invalid) or an admission
    webhook or policy (which answer 403, though no permission is missing). A bad request
    (``errors`` per field) that Kubernetes, not jupyter_dw, found bad."""

    api_status: int | None = None
    """As :attr:`KubeApiError.api_status`."""

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


class NotInstalled(
    KubeError,
    status=503,
    codes=("kueue_not_installed", "kuberay_not_installed", "trainer_not_installed"),
):
    """A required API (Kueue, KubeRay) is not served by the cluster."""

    def __init__(self, product: str, reason: str, hint: str, code: str) -> None:
        super().__init__(f"{product} is not installed", reason, hint)
        self.code = code


class NotReady(KubeError, status=503, code="not_ready"):
    """The session has not finished starting (discovery, first list of every cache)."""
