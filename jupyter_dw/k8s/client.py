"""A small JSON-over-REST client on top of ``kubernetes.client.ApiClient``.
Raw JSON for any path, one retry after a 401 with a fresh token, errors translated, one log line
per failed call, one ``timeout`` per call. Blocking: never on the IO loop. Why:
docs/explanation/architecture.md.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import urllib3
from urllib3.util.retry import Retry

from ..names import KUEUE_MUTATING_RAYCLUSTER_WEBHOOK
from .access import denied_action, forbidden_error
from .auth import Credentials
from .errors import (
    KubeApiError,
    KubeBusy,
    KubeConfigError,
    KubeError,
    KubeRejected,
    KubeTimeout,
    KubeUnauthorized,
    KubeUnreachable,
    WebhookUnavailable,
)

if TYPE_CHECKING:
    # Imported on the first call (see auth.py: never while the extension loads).
    from kubernetes import client

log = logging.getLogger(__name__)

T = TypeVar("T")
Query = Sequence[tuple[str, str | int | bool]]
DEFAULT_TIMEOUT = 30.0

# A bearer token in any text: the header form, and any JWT (service-account tokens are JWTs).
_SECRETS = (
    re.compile(r"(?i)(bearer\s+)[^\s\"',]+"),
    re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
)
REDACTED = "[redacted]"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class FailedCall:
    """One Kubernetes call that failed, as logged and given to ``on_failure`` listeners.

    ``status`` is the HTTP status (0: never answered); ``reason`` the Status reason
    (``Forbidden``, ``NotFound``) or the transport error; ``message`` the API server's (or an
    aggregated API's, a webhook's) own words; ``object_name`` is set when the Status names one
    object (a missing object rather than a resource the API server does not serve).
    """

    method: str
    path: str
    status: int
    reason: str
    message: str
    object_name: str | None = None

    @property
    def group(self) -> str | None:
        """The API group of :attr:`path` (``""`` for the core API), None for other paths."""
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts[0] == "api":
            return ""
        if parts[0] == "apis" and len(parts) > 1:
            return parts[1]
        return None

    def describe(self) -> str:
        """``GET /apis/... → 403 Forbidden: <message>`` (secrets not removed: see
        :meth:`KubeApi.redact`)."""
        status = f"{self.status} {self.reason}" if self.status else f"no answer ({self.reason})"
        return f"{self.method} {self.path} → {status}: {self.message or '(no message)'}"


FailureListener = Callable[[FailedCall], None]


class _RetryUntilTimeout(Retry):
    """urllib3's retries except after a timeout: a timeout is raised at once (retrying it
    would multiply the wait the caller configured)."""

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> _RetryUntilTimeout:
        if error is not None and _timed_out(error):
            raise error
        return super().increment(method, url, response, error, _pool, _stacktrace)


CALL_RETRIES = _RetryUntilTimeout(total=3, connect=3, read=1, status=0, other=0)
"""Connection failures before sending: up to 3 retries; a read error (a pooled connection
closed under us): 1 retry, for idempotent methods only (urllib3 never retries a POST after
sending it); a timeout: none."""


class KubeApi:
    """Blocking JSON calls to the API server with the given credentials.

    ``on_failure`` is called (on the calling thread, after the log line) with every
    :class:`FailedCall`; it must be quick and must not raise.
    """

    def __init__(
        self,
        credentials: Credentials,
        timeout: float = DEFAULT_TIMEOUT,
        on_failure: FailureListener | None = None,
    ) -> None:
        self.credentials = credentials
        self.timeout = timeout
        self.on_failure = on_failure
        if credentials.configuration.retries is None:
            credentials.configuration.retries = CALL_RETRIES
        self._client = credentials.api_client()

    @property
    def host(self) -> str:
        """The API server URL."""
        return str(self._client.configuration.host)

    def bearer_token(self) -> str | None:
        """The bearer token this client sends now (re-read first where its source rotates,
        as a pod's projected token does); None when it authenticates otherwise (a client
        certificate). Never logged: for an ``Authorization`` header only."""
        cfg = self._client.configuration
        if cfg.refresh_api_key_hook is not None:
            cfg.refresh_api_key_hook(cfg)
        scheme, _, token = (cfg.api_key.get("authorization") or "").partition(" ")
        return token.strip() or None if scheme.lower() == "bearer" else None

    def redact(self, text: str) -> str:
        """``text`` without the current token or anything that looks like a bearer token."""
        key = self._client.configuration.api_key.get("authorization") or ""
        token = key.split(" ", 1)[-1].strip()
        if len(token) >= 8:
            text = text.replace(token, REDACTED)
        for pattern in _SECRETS:
            text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + REDACTED, text)
        return text

    def get(
        self,
        path: str,
        query: Query = (),
        timeout: float | None = None,
        accept: str = "application/json",
        expected: tuple[int, ...] = (),
    ) -> dict[str, Any]:
        """GET ``path`` and return the decoded JSON object (``accept``: the Accept header, to
        ask for another representation such as aggregated discovery). A failure with a status
        in ``expected`` is an answer the caller turns into words: logged at DEBUG only (a
        kernel shows its warnings in the cell)."""
        return self._json("GET", path, query, None, timeout, accept=accept, expected=expected)

    def post(
        self, path: str, body: Mapping[str, Any], query: Query = (), timeout: float | None = None
    ) -> dict[str, Any]:
        """POST ``body`` to ``path`` and return the decoded JSON object."""
        return self._json("POST", path, query, body, timeout)

    def patch(
        self,
        path: str,
        operations: list[dict[str, Any]],
        query: Query = (),
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """PATCH ``path`` with a JSON patch (RFC 6902; a ``test`` operation makes it
        conditional) and return the decoded JSON object."""
        return self._json("PATCH", path, query, operations, timeout, JSON_PATCH)

    def merge_patch(
        self,
        path: str,
        changes: Mapping[str, Any],
        query: Query = (),
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """PATCH ``path`` with a JSON merge patch (RFC 7386: ``None`` removes a key; what
        ``kubectl patch --type=merge`` sends) and return the decoded JSON object."""
        return self._json("PATCH", path, query, changes, timeout, MERGE_PATCH)

    def delete(self, path: str, query: Query = (), timeout: float | None = None) -> dict[str, Any]:
        """DELETE ``path`` and return the decoded JSON object (a Status or the object)."""
        return self._json("DELETE", path, query, None, timeout)

    def stream(
        self, path: str, query: Query, read_timeout: float
    ) -> urllib3.response.BaseHTTPResponse:
        """Open a streaming GET (a watch). The caller reads lines and must close it.

        ``read_timeout`` bounds the wait for each chunk, so a silently dead connection fails
        instead of hanging forever; make it longer than the watch's ``timeoutSeconds``.
        """
        return self._call(
            lambda: self._client.call_api(
                path,
                "GET",
                query_params=list(query),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=(self.timeout, read_timeout),
            ),
            "WATCH",
            path,
        )

    def close(self) -> None:
        """Release pooled connections."""
        self._client.close()

    # -- internals -----------------------------------------------------------------------

    def _json(
        self,
        method: str,
        path: str,
        query: Query,
        body: Mapping[str, Any] | list[dict[str, Any]] | None,
        timeout: float | None,
        content_type: str = "application/json",
        accept: str = "application/json",
        expected: tuple[int, ...] = (),
    ) -> dict[str, Any]:
        def call() -> Any:
            response = self._client.call_api(
                path,
                method,
                query_params=list(query),
                header_params={"Accept": accept, "Content-Type": content_type},
                body=(list(body) if isinstance(body, list) else dict(body))
                if body is not None
                else None,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                # A (connect, read) pair: the client ignores a float (it only honours an int
                # or a pair), which left every call without any timeout.
                _request_timeout=(timeout or self.timeout, timeout or self.timeout),
            )
            try:
                return response.data
            finally:
                response.release_conn()

        data = self._call(call, method, path, expected)
        return json.loads(data) if data else {}

    def _call(
        self, call: Callable[[], T], method: str, path: str, expected: tuple[int, ...] = ()
    ) -> T:
        from kubernetes.client import ApiException

        try:
            try:
                return call()
            except ApiException as err:
                if err.status != 401:
                    raise
                # The token may have rotated since we last read it: re-read once and retry.
                log.info("401 from the API server on %s: re-reading credentials once", path)
                self.credentials.reload()
                return call()
        except ApiException as err:
            body = _status_body(err)
            found = body.get("details")
            details: dict[str, Any] = found if isinstance(found, dict) else {}
            self._failed(
                FailedCall(
                    method,
                    path,
                    int(err.status or 0),
                    str(body.get("reason") or err.reason or "").strip(),
                    str(body.get("message") or "").strip(),
                    str(details.get("name")) if details.get("name") else None,
                ),
                expected,
            )
            raise translate_api_exception(err, path) from err
        except urllib3.exceptions.HTTPError as err:
            self._failed(FailedCall(method, path, 0, type(err).__name__, _cause(err)))
            if _timed_out(err):
                raise KubeTimeout(
                    f"The Kubernetes API server did not answer within {self._timeout_of(err):g}s",
                    f"{method} {path}: {_cause(err)}",
                    "The API server (or a webhook or aggregated API behind it) is slow or "
                    "overloaded; try again in a moment. JupyterDW.request_timeout sets how long "
                    "each call may take.",
                ) from err
            raise KubeUnreachable(
                f"Cannot reach the Kubernetes API server at {self.host}",
                _cause(err),
                "Check that the API server is up and reachable from this pod (network "
                "policy, proxy settings, KUBERNETES_SERVICE_HOST).",
            ) from err
        except OSError as err:  # token or CA file vanished or unreadable
            self._failed(FailedCall(method, path, 0, "credentials", str(err)))
            raise KubeConfigError("Cannot read the Kubernetes credentials", str(err), None) from err

    def _timeout_of(self, err: BaseException) -> float:
        timeout = getattr(getattr(err, "reason", err), "timeout", None)
        return timeout if isinstance(timeout, int | float) else self.timeout

    def _failed(self, failure: FailedCall, expected: tuple[int, ...] = ()) -> None:
        """One log line for a failed call, then the ``on_failure`` listener."""
        # A missing object, a taken name or an expired version (relist) is an answer: INFO.
        level = logging.INFO if failure.status in (404, 409, 410) else logging.WARNING
        if failure.status in expected:
            level = logging.DEBUG
        log.log(level, "Kubernetes call failed: %s", self.redact(failure.describe()))
        if self.on_failure is not None:
            try:
                self.on_failure(failure)
            except Exception:  # a listener must never turn one failure into another
                log.exception("on_failure listener failed")


def _retry_after(err: client.ApiException, body: dict[str, Any]) -> int | None:
    """The API server's advice, in seconds: its Status ``details.retryAfterSeconds``, else
    the ``Retry-After`` header; None when it gave none."""
    details = body.get("details")
    candidates = [details.get("retryAfterSeconds") if isinstance(details, dict) else None]
    headers = getattr(err, "headers", None)
    if headers is not None:
        candidates.append(headers.get("Retry-After"))
    for value in candidates:
        try:
            seconds = int(str(value))
        except ValueError:
            continue
        if seconds > 0:
            return seconds
    return None


def translate_api_exception(err: client.ApiException, path: str = "") -> KubeError:
    """The :mod:`errors` exception for an ``ApiException`` (status 0 = TLS/transport)."""
    status = int(err.status or 0)
    body = _status_body(err)
    message = str(body.get("message") or err.reason or "").strip()
    if status == 0:
        return KubeUnreachable(
            "Cannot reach the Kubernetes API server",
            message or "transport error",
            "Check the API server address and its CA certificate.",
        )
    webhook = webhook_unavailable(message)
    if webhook is not None:
        return webhook
    if status == 504:
        return KubeTimeout(
            f"The Kubernetes API server timed out on {path or 'the request'}",
            message or "504 Gateway Timeout",
            "The API server (or a webhook or aggregated API behind it) is slow or "
            "overloaded; try again in a moment.",
        )
    if status == 429:
        retry_after = _retry_after(err, body)
        return KubeBusy(
            f"The Kubernetes API server is too busy to serve {path or 'the request'}",
            message or "429 Too Many Requests",
            "Its API Priority and Fairness limits are reached; try again"
            + (f" in {retry_after} s." if retry_after else " in a moment."),
            retry_after,
        )
    if status == 401:
        return KubeUnauthorized(
            "The Kubernetes API server rejected the credentials (401 Unauthorized)",
            message or None,
            "The service-account token may have expired or been revoked; restart the "
            "workbench, or refresh the kubeconfig login.",
        )
    if status == 403 and is_admission_denial(body):
        return KubeRejected(
            status,
            "Kubernetes refused the object",
            message,
            "An admission webhook or policy of the cluster rejected it; change what it names.",
        )
    if status == 403:
        return forbidden_error(status_body=body, fallback=message)
    if status == 422:
        return KubeRejected(
            status,
            "Kubernetes refused the object as invalid",
            message or None,
            "Change the fields the reason names.",
            _causes(body),
        )
    if status == 503:
        return KubeUnreachable(
            f"The Kubernetes API server could not serve {path or 'the request'}",
            message or "503 Service Unavailable",
            "An aggregated API (such as Kueue's visibility API) may be down; try again.",
        )
    return KubeApiError(status, f"Kubernetes API error {status} on {path}", message or None)


# How the API server words a 403 that comes from admission, not from RBAC: a webhook
# ("admission webhook \"x\" denied the request: ..."), a ValidatingAdmissionPolicy ("... denied
# request: ...") or a ResourceQuota ("exceeded quota"). Retrying as another identity won't help.
_ADMISSION_DENIALS = ("admission webhook", "denied request", "exceeded quota")


def is_admission_denial(body: Mapping[str, Any]) -> bool:
    """True when a 403 Status was written by admission control rather than the authorizer."""
    if denied_action(body) is not None:
        return False  # the RBAC wording: a permission is missing
    message = str(body.get("message") or "")
    return any(marker in message for marker in _ADMISSION_DENIALS)


# How the API server words a webhook it could not call (server down, refused, timed out) when
# the webhook's failurePolicy is Fail: 'Internal error occurred: failed calling webhook
# "mraycluster.kb.io": failed to call webhook: Post "https://host/path?timeout=10s": ...'.
_FAILED_WEBHOOK = re.compile(r'failed calling webhook "([^"]+)"')
_WEBHOOK_URL = re.compile(r'failed to call webhook: \w+ "([^"]+)"')


def webhook_unavailable(message: str) -> WebhookUnavailable | None:
    """The error for a write refused because an admission webhook could not be called, None
    for any other message. Kueue's webhook (named by :data:`KUEUE_MUTATING_RAYCLUSTER_WEBHOOK`
    or served by a host named after Kueue) gets ``kueue_webhook_unavailable``."""
    match = _FAILED_WEBHOOK.search(message)
    if match is None:
        return None
    webhook = match.group(1)
    url = _WEBHOOK_URL.search(message)
    host = (urlsplit(url.group(1)).hostname or "") if url else ""
    if webhook == KUEUE_MUTATING_RAYCLUSTER_WEBHOOK or "kueue" in host:
        return WebhookUnavailable(
            f"Kueue's admission webhook {webhook} is not answering, so the API server refuses "
            "new RayClusters; nothing was created",
            message,
            "Kueue's controller (kueue-controller-manager, usually in namespace kueue-system) "
            "is down or restarting. Try again in a minute; if it persists, ask a cluster "
            "administrator to check Kueue.",
            webhook,
            "kueue_webhook_unavailable",
        )
    return WebhookUnavailable(
        f"The admission webhook {webhook} is not answering, so the API server refuses the "
        "request; nothing was changed",
        message,
        "The operator serving that webhook (KubeRay's or Kueue's, for RayClusters) is down or "
        "restarting. Try again in a minute; if it persists, ask a cluster administrator.",
        webhook,
        "webhook_unavailable",
    )


def _causes(body: Mapping[str, Any]) -> dict[str, str]:
    """``details.causes`` of a 422 Status as ``{field: message}`` (fields as the API names
    them, e.g. ``metadata.name``)."""
    causes: dict[str, str] = {}
    for cause in (body.get("details") or {}).get("causes") or []:
        if isinstance(cause, Mapping) and cause.get("message"):
            field = str(cause.get("field") or "request")
            causes[field] = "; ".join(filter(None, (causes.get(field), str(cause["message"]))))
    return causes


def _status_body(err: client.ApiException) -> dict[str, Any]:
    raw = err.body
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        return {"message": str(raw)[:500]}
    return body if isinstance(body, dict) else {}


def _timed_out(err: BaseException | None) -> bool:
    """A urllib3 timeout, raised as it is or as the reason of a ``MaxRetryError`` (not a
    refused connection: urllib3's ``NewConnectionError`` derives from its timeout error)."""
    reason = getattr(err, "reason", None)
    return any(
        isinstance(e, urllib3.exceptions.TimeoutError)
        and not isinstance(e, urllib3.exceptions.NewConnectionError)
        for e in (err, reason)
    )


def _cause(err: BaseException) -> str:
    # urllib3 wraps the real cause (connection refused, timeout) in MaxRetryError.reason.
    reason = getattr(err, "reason", None)
    return str(reason or err)
