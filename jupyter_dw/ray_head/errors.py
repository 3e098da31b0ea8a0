"""Errors of the Ray layer: each a :class:`DWError`, the base the Kubernetes layer's errors
share, so a handler, widget or magic needs no second kind of error."""

from __future__ import annotations

from typing import Any

from ..domain.errors import DWError


class RayError(DWError):
    """Ray's Jobs API answered with an error of its own (a 5xx, or something unreadable)."""

    status = 502
    code = "ray_error"


class RayUnreachable(RayError):
    """The Ray head did not answer (connection refused, DNS, timeout)."""

    status = 503
    code = "ray_unreachable"


class RayAuthRefused(RayError):
    """Ray refused the request's credentials (401 without a token, 403 with a wrong one)."""

    code = "ray_auth_refused"


class RayRejected(RayError):
    """Ray refused the request itself (400: a bad entrypoint, runtime_env or job id)."""

    status = 400
    code = "ray_rejected"


class JobNotFound(RayError):
    """No Ray job of that id on the cluster."""

    status = 404
    code = "job_not_found"


class ClusterNotReady(DWError):
    """The cluster's head is not up yet: nothing answers for it. ``state`` is its state."""

    status = 409
    code = "cluster_not_ready"

    def __init__(self, error: str, reason: str | None, hint: str | None, state: str) -> None:
        super().__init__(error, reason, hint)
        self.state = state

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "state": self.state}


class RayTokenUnavailable(DWError):
    """The cluster uses Ray token authentication, but its token cannot be used (its Secret is
    missing, owned by something else, or holds no token)."""

    status = 502
    code = "ray_token_unavailable"


class RayNotInstalled(DWError):
    """A call needs the ``ray`` package in this kernel (``pip install 'jupyter-dw[ray]'``)."""

    status = 501
    code = "ray_not_installed"


class RayVersionMismatch(DWError):
    """The kernel's Ray or Python version differs from the cluster image's: Ray Client cannot
    connect across them."""

    status = 400
    code = "ray_version_mismatch"


class JobFailed(DWError):
    """A Ray job ended without succeeding (``FAILED`` or ``STOPPED``): Ray's message and the
    last lines of its log. ``job`` is the job as Ray last reported it."""

    status = 409
    code = "job_failed"

    def __init__(self, error: str, reason: str | None, hint: str | None, job: Any) -> None:
        super().__init__(error, reason, hint)
        self.job = job
