"""Errors of the Ray layer: each a :class:`DWError`, the base the Kubernetes layer's errors
share, so a handler, widget or magic needs no second kind of error."""

from __future__ import annotations

from typing import Any

from ..domain.errors import DWError


class RayError(DWError, status=502, code="ray_error"):
    """Ray's Jobs API answered with an error of its own (a 5xx, or something unreadable)."""


class RayUnreachable(RayError, status=503, code="ray_unreachable"):
    """The Ray head did not answer (connection refused, DNS, timeout)."""


class RayAuthRefused(RayError, code="ray_auth_refused"):
    """Ray refused the request's credentials (401 without a token, 403 with a wrong one)."""


class RayRejected(RayError, status=400, code="ray_rejected"):
    """Ray refused the request itself (400: a bad entrypoint, runtime_env or job id)."""


class JobNotFound(RayError, status=404, code="job_not_found"):
    """No Ray job of that id on the cluster."""


class ClusterNotReady(DWError, status=409, code="cluster_not_ready"):
    """The cluster's head is not up yet: nothing answers for it. ``state`` is its state."""

    shown = ("state",)

    def __init__(self, error: str, reason: str | None, hint: str | None, state: str) -> None:
        super().__init__(error, reason, hint)
        self.state = state


class RayTokenUnavailable(DWError, status=502, code="ray_token_unavailable"):
    """The cluster uses Ray token authentication, but its token cannot be used (its Secret is
    missing, owned by something else, or holds no token)."""


class RayNotInstalled(DWError, status=501, code="ray_not_installed"):
    """A call needs the ``ray`` package in this kernel (``pip install 'jupyter-dw[ray]'``)."""


class RayVersionMismatch(DWError, status=400, code="ray_version_mismatch"):
    """The kernel's Ray or Python version differs from the cluster image's: Ray Client cannot
    connect across them."""


class JobFailed(DWError, status=409, code="job_failed"):
    """A Ray job ended without succeeding (``FAILED`` or ``STOPPED``): Ray's message and the
    last lines of its log. ``job`` is the job as Ray last reported it."""

    job: Any = None
    """None on an error read back from a server's answer (it does not send the job)."""

    def __init__(self, error: str, reason: str | None, hint: str | None, job: Any) -> None:
        super().__init__(error, reason, hint)
        self.job = job
