"""The errors every surface shows, in one place: the core's own, and the Kubernetes and Ray
layers' re-exported, so a handler, widget, magic or the CLI names them from here (``make
lint`` checks that surfaces import neither layer). All are a :class:`DWError` with ``error``,
``reason``, ``hint``, ``code`` and, for HTTP, ``status``."""

from __future__ import annotations

from ..domain.errors import DWError, InvalidRequest
from ..k8s.access import NEEDED_PERMISSIONS
from ..k8s.errors import (
    KubeConfigError,
    KubeConflict,
    KubeError,
    KubeForbidden,
    KubeNotFound,
    KubeRejected,
    KubeUnreachable,
    NotInstalled,
    NotReady,
)
from ..ray_head.errors import (
    ClusterNotReady,
    JobFailed,
    JobNotFound,
    RayError,
    RayNotInstalled,
    RayTokenUnavailable,
    RayUnreachable,
    RayVersionMismatch,
)

__all__ = [
    "NEEDED_PERMISSIONS",
    "ClusterNotReady",
    "DWError",
    "InvalidFilter",
    "InvalidName",
    "InvalidRequest",
    "InvalidScale",
    "InvalidSpec",
    "JobFailed",
    "JobNotFound",
    "KubeConfigError",
    "KubeConflict",
    "KubeError",
    "KubeForbidden",
    "KubeNotFound",
    "KubeRejected",
    "KubeUnreachable",
    "NotElastic",
    "NotInstalled",
    "NotReady",
    "RayError",
    "RayNotInstalled",
    "RayTokenUnavailable",
    "RayUnreachable",
    "RayVersionMismatch",
    "SettingsUnreadable",
    "WrongState",
]


class InvalidSpec(InvalidRequest, code="invalid_spec"):
    """A cluster request that fails validation (400); ``errors`` maps field → message."""


class InvalidName(InvalidRequest, code="invalid_name"):
    """A cluster name (from a URL) that no RayCluster can have (400); nothing was asked."""


class InvalidScale(InvalidRequest, code="invalid_scale"):
    """A size that cannot be asked for (400); ``errors["workers"]`` says why. Nothing was
    changed."""


class NotElastic(InvalidRequest, code="not_elastic"):
    """The cluster cannot change size after admission (400). Nothing was changed."""


class InvalidFilter(InvalidRequest, code="invalid_filter"):
    """A ``queue`` or ``kind`` filter no Workload can match (400); nothing was read."""


class WrongState(DWError, status=409):
    """The cluster is not in a state the action applies to (409); nothing was changed.
    ``state`` is the cluster's state now."""

    shown = ("state",)

    def __init__(
        self, error: str, reason: str | None, hint: str | None, state: str, code: str
    ) -> None:
        super().__init__(error, reason, hint)
        self.state = state
        self.code = code


class SettingsUnreadable(DWError, status=500, code="settings_unreadable"):
    """A configuration file could not be read, so the administrator's defaults and limits
    may be missing: writes are refused (fail closed) until it is fixed."""
