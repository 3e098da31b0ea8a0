"""The errors every surface shows, in one place: a handler, widget, magic or the CLI names
them from here, never from the Kubernetes or Ray layers that raise them (``make lint`` checks
that surfaces import neither). Each has ``error``, ``reason``, ``hint``, ``code`` and, for
HTTP, ``status`` (:class:`KubeError`)."""

from __future__ import annotations

from ..k8s.access import NEEDED_PERMISSIONS
from ..k8s.errors import (
    InvalidRequest,
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
from ..ray.errors import (
    ClusterNotReady,
    JobFailed,
    JobNotFound,
    RayError,
    RayNotInstalled,
    RayTokenUnavailable,
    RayUnreachable,
    RayVersionMismatch,
)
from .stopping import WrongState

__all__ = [
    "NEEDED_PERMISSIONS",
    "ClusterNotReady",
    "InvalidRequest",
    "JobFailed",
    "JobNotFound",
    "KubeConfigError",
    "KubeConflict",
    "KubeError",
    "KubeForbidden",
    "KubeNotFound",
    "KubeRejected",
    "KubeUnreachable",
    "NotInstalled",
    "NotReady",
    "RayError",
    "RayNotInstalled",
    "RayTokenUnavailable",
    "RayUnreachable",
    "RayVersionMismatch",
    "WrongState",
]
