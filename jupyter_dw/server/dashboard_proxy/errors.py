"""The proxy's own refusals (``{"error", "reason", "hint", "code"}``) and the checks of what a
request names: the cluster, the path."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote

from jupyter_server.utils import url_path_join

from ...domain.cluster_spec import MAX_NAME_LENGTH, ray_cluster_name_error
from ..dashboard_capability import (
    CapabilityError,
)
from .paths import CAPABILITY_SEGMENT, PROXY_PREFIX

# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


class DashboardError(Exception):
    """A failure of the proxy itself, answered as ``{"error", "reason", "hint", "code"}``."""

    def __init__(
        self, status: int, error: str, reason: str | None, hint: str | None, code: str
    ) -> None:
        super().__init__(error if reason is None else f"{error}: {reason}")
        self.status = status
        self.error = error
        self.reason = reason
        self.hint = hint
        self.code = code

    def to_json(self) -> dict[str, Any]:
        """The JSON body, in the shape of :meth:`DWError.to_json`."""
        return {"error": self.error, "reason": self.reason, "hint": self.hint, "code": self.code}


def check_name(name: str) -> None:
    """Raise a 400 :class:`DashboardError` unless ``name`` can be a RayCluster's name."""
    problem = ray_cluster_name_error(name)
    if problem is not None:
        raise DashboardError(
            400,
            "Invalid RayCluster name",
            problem,
            f"RayCluster names are DNS-1035 labels of at most {MAX_NAME_LENGTH} characters.",
            "invalid_name",
        )


def has_dot_segment(raw_path: str) -> bool:
    """Whether ``raw_path`` has a ``.`` or ``..`` segment (also percent-encoded or between
    backslashes, which browsers read as slashes)."""
    segments = re.split(r"[/\\]", unquote(raw_path))
    return any(segment in (".", "..") for segment in segments)


def check_path(raw_path: str) -> None:
    """Refuse ``.`` and ``..`` segments: behind a path-based template they would reach another
    cluster's dashboard."""
    if has_dot_segment(raw_path):
        raise DashboardError(
            400,
            "Invalid dashboard path",
            "'.' and '..' path segments are not forwarded",
            None,
            "invalid_path",
        )


def unreachable(name: str, url: str, err: BaseException) -> DashboardError:
    return DashboardError(
        502,
        f"Cannot reach the Ray dashboard of {name}",
        f"{url}: {err}",
        "The head pod may not be running yet (queued by Kueue, or starting); check the "
        "cluster's state, or the JupyterDW.ray_dashboard_url setting.",
        "dashboard_unreachable",
    )


def capability_refused(name: str, err: CapabilityError) -> DashboardError:
    return DashboardError(
        403,
        f"This link does not open the Ray dashboard of {name}",
        str(err),
        f"Open dw/ray/{name}/ again from Jupyter to get a fresh link.",
        err.code,
    )


def capability_prefix(base_url: str, name: str, token: str) -> str:
    """``{base_url}dw/ray/<name>/~cap/<capability>/``: where the dashboard of ``name`` is
    served for the holder of ``token``."""
    return (
        url_path_join(base_url, PROXY_PREFIX, quote(name, safe=""), CAPABILITY_SEGMENT, token) + "/"
    )


def user_name(user: Any) -> str:
    """The name jupyter_server knows ``user`` by (a ``User``, or a string from older
    identity providers)."""
    return str(getattr(user, "username", user))
