"""The errors every surface shows, in one place: the core's own, and the Kubernetes and Ray
layers' re-exported, so a handler, widget, magic or the CLI names them from here (``make
lint`` checks that surfaces import neither layer). All are a :class:`DWError` with ``error``,
``reason``, ``hint``, ``code`` and, for HTTP, ``status``."""

from __future__ import annotations

from typing import Any

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


class InvalidSpec(InvalidRequest):
    """A cluster request that fails validation (400); ``errors`` maps field → message."""

    code = "invalid_spec"


class InvalidName(InvalidRequest):
    """A cluster name (from a URL) that no RayCluster can have (400); nothing was asked."""

    code = "invalid_name"


class InvalidScale(InvalidRequest):
    """A size that cannot be asked for (400); ``errors["workers"]`` says why. Nothing was
    changed."""

    code = "invalid_scale"


class NotElastic(InvalidRequest):
    """The cluster cannot change size after admission (400). Nothing was changed."""

    code = "not_elastic"


class InvalidFilter(InvalidRequest):
    """A ``queue`` or ``kind`` filter no Workload can match (400); nothing was read."""

    code = "invalid_filter"


class WrongState(DWError):
    """The cluster is not in a state the action applies to (409); nothing was changed.
    ``state`` is the cluster's state now."""

    status = 409

    def __init__(
        self, error: str, reason: str | None, hint: str | None, state: str, code: str
    ) -> None:
        super().__init__(error, reason, hint)
        self.state = state
        self.code = code

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "state": self.state}


class SettingsUnreadable(DWError):
    """A configuration file could not be read, so the administrator's defaults and limits
    may be missing: writes are refused (fail closed) until it is fixed."""

    status = 500
    code = "settings_unreadable"
