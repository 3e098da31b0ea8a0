"""The errors every surface shows, in one place: the core's own, and the Kubernetes and Ray
layers' re-exported, so a handler, widget, magic or the CLI names them from here (``make
lint`` checks that surfaces import neither layer). All are a :class:`DWError` with ``error``,
``reason``, ``hint``, ``code`` and, for HTTP, ``status``."""

from __future__ import annotations

import functools
from collections.abc import Mapping
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
    "RunsOnWorker",
    "SettingsUnreadable",
    "WrongState",
    "error_from_json",
]


class RunsOnWorker(DWError, status=409, code="runs_on_worker_cluster"):
    """The cluster runs on a MultiKueue worker cluster whose Ray head this workbench cannot
    reach (no ``JupyterDW.multikueue_dashboard_url``): its dashboard and jobs are there."""


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


class WrongState(DWError, status=409, codes=("not_stopped", "not_admitted")):
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


def error_from_json(status: int | None, data: Mapping[str, Any]) -> DWError:
    """The error a server answered with ``status`` (None: not an HTTP answer, a message's
    ``error``) and the JSON ``data`` (``{"error", "reason", "hint", "code", ...}``): the
    class whose ``codes`` has its ``code``, with its ``shown`` fields; a plain
    :class:`DWError` when no class has it (jupyter_server's own refusals have no code)."""
    code = data.get("code")
    cls = _classes_by_code().get(code, DWError) if isinstance(code, str) else DWError
    return cls.from_json(data, status)


_SENT_FROM = ("jupyter_dw.domain.", "jupyter_dw.k8s.", "jupyter_dw.ray_head.", "jupyter_dw.core.")
"""The layers whose errors a server sends (a kernel's own, made in ``notebook/``, are not)."""


@functools.cache
def _classes_by_code() -> dict[str, type[DWError]]:
    found: dict[str, type[DWError]] = {}
    waiting = [DWError]
    while waiting:
        cls = waiting.pop()
        waiting.extend(cls.__subclasses__())
        if cls.__module__.startswith(_SENT_FROM):
            found.update(dict.fromkeys(cls.codes, cls))
    return found


def no_ray_client_on_worker(name: str, worker_cluster: str) -> RunsOnWorker:
    """The refusal of a Ray Client address for cluster ``name``, which MultiKueue sent to
    ``worker_cluster``: its head's address is that cluster's, unreachable from here."""
    return RunsOnWorker(
        f"Ray cluster {name} runs on worker cluster {worker_cluster}",
        "its head is in that cluster: Ray Client reaches it only from there",
        "Submit jobs instead (h.submit_job), through the worker's dashboard address if "
        "an administrator set JupyterDW.multikueue_dashboard_url.",
    )
