"""Which RayCluster a request names, whether it exists, where its dashboard is and the Ray
credential sent upstream (remembered a few seconds per cluster)."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tornado import httputil

from ...domain.ray_auth import RayToken
from ...domain.url_templates import validate_url_template
from ...domain.validation import dns1035_label_error
from ...names import DASHBOARD_PORT
from ..dashboard_capability import (
    Capabilities,
    Target,
)
from .errors import DashboardError

if TYPE_CHECKING:
    from ...core.services import DWCore

KUBERAY_DASHBOARD_URL = "http://{service}.{namespace}.svc:{port}"
"""Where the dashboard is when no template is configured: the head Service and dashboard port
KubeRay reports in the RayCluster's status."""
DEFAULT_DASHBOARD_URL = ""
"""No template: use what KubeRay reports (:data:`KUBERAY_DASHBOARD_URL`)."""
DEFAULT_DASHBOARD_PORT = DASHBOARD_PORT
"""The ``{port}`` of a configured template (KubeRay's ``dashboard`` port by default)."""


EXISTS_TTL = 5.0
"""Seconds a found RayCluster is remembered, so a dashboard page (dozens of requests, then a
poll every few seconds) costs one Kubernetes GET per few seconds. Misses are never remembered:
a cluster created a moment ago is reachable at once."""


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Located:
    """A RayCluster that exists (its uid), and the root URL of its dashboard (no trailing
    slash)."""

    target: Target
    uid: str
    base_url: str
    token: RayToken | None = None
    """The cluster's Ray token, sent upstream only; None when the cluster has no token auth
    (its ``repr`` never shows it)."""

    def upstream_headers(self, headers: httputil.HTTPHeaders) -> httputil.HTTPHeaders:
        """``headers`` (already without the browser's credentials) plus Ray's token."""
        if self.token is not None:
            headers["Authorization"] = self.token.header()
        return headers


@dataclass
class DashboardProxy:
    """Where dashboards are, which clusters were seen lately, and the capabilities.

    One per server: the routes share it.
    """

    url_template: str = DEFAULT_DASHBOARD_URL
    port: int = DEFAULT_DASHBOARD_PORT
    exists_ttl: float = EXISTS_TTL
    capabilities: Capabilities = field(default_factory=Capabilities)
    _found: dict[tuple[str, str], tuple[float, Located]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        validate_url_template(self.url_template)

    def base_url(self, name: str, namespace: str, raycluster: dict[str, Any]) -> str:
        """The dashboard root of RayCluster ``name`` (no trailing slash): the configured
        template, or the head Service and port KubeRay reports."""
        if self.url_template:
            url = self.url_template.format(name=name, namespace=namespace, port=self.port)
            return url.rstrip("/")
        # Imported here, as the core is (see server/core_loader.py): the cluster models are
        # not needed before a dashboard is opened, and would weigh on the server's start.
        from ...domain.cluster_state import cluster_snapshot

        dashboard = cluster_snapshot(raycluster).dashboard
        # The status is written by KubeRay, but a name that is not a Service name, or a port
        # that is not a port, must not become a host or a URL.
        if dns1035_label_error(dashboard.service) is not None or not 0 < dashboard.port < 65536:
            raise DashboardError(
                502,
                f"The Ray dashboard of {name} has no usable address",
                f"the cluster reports Service {dashboard.service!r}, port {dashboard.port!r}",
                "Check the RayCluster's status.head.serviceName and status.endpoints.dashboard, "
                "or set JupyterDW.ray_dashboard_url.",
                "dashboard_unknown",
            )
        return KUBERAY_DASHBOARD_URL.format(
            service=dashboard.service, namespace=namespace, port=dashboard.port
        )

    async def locate(self, core: DWCore, executor: Executor | None, name: str) -> Located:
        """RayCluster ``name`` of the session's namespace and its dashboard's address; raise
        :class:`DashboardError` (404) if there is no such cluster, or the core's
        :class:`DWError` (``ray_token_unavailable``: its token cannot be used)."""
        loop = asyncio.get_running_loop()
        known = core.session.namespace if core.session.ready else None
        # Only touched on the IO loop: no lock needed.
        if known is not None:
            until, located = self._found.get((known, name), (0.0, None))
            if located is not None and until > time.monotonic():
                return located
        namespace, raycluster, token, worker_base = await loop.run_in_executor(
            executor, _look_up, core, name
        )
        if raycluster is None:
            raise DashboardError(
                404,
                f"No RayCluster named {name!r} in namespace {namespace}",
                "the dashboard proxy only reaches RayClusters of this namespace",
                "Check the name with GET dw/api/clusters, or create the cluster first.",
                "raycluster_not_found",
            )
        uid = str((raycluster.get("metadata") or {}).get("uid") or "")
        base = worker_base or self.base_url(name, namespace, raycluster)
        located = Located(Target(name, namespace), uid, base, token)
        self._found[(namespace, name)] = (time.monotonic() + self.exists_ttl, located)
        return located


def _look_up(
    core: DWCore, name: str
) -> tuple[str, dict[str, Any] | None, RayToken | None, str | None]:
    """``(namespace, RayCluster or None, what its Ray checks or None, its dashboard root on a
    MultiKueue worker or None)`` for ``name``, through the core's cluster and Ray services
    (blocking: run in the executor). A cluster on a worker whose dashboards this workbench
    cannot reach raises the core's ``RunsOnWorker`` (409)."""
    raycluster = core.clusters.raycluster(name)
    if raycluster is None:
        return core.session.namespace, None, None, None
    worker_base = core.clusters.worker_dashboard_base(raycluster)
    # The token Secret of a cluster on a worker is the worker's: its gateway authenticates.
    token = None if worker_base else core.jobs.token(raycluster)
    return core.session.namespace, raycluster, token, worker_base
