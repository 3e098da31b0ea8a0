"""The Ray dashboard of a RayCluster, proxied through the Jupyter server and isolated from it.
Sandboxed pages, capabilities instead of cookies, filtered headers, Ray's token upstream only:
why each, where requests go and the proxy's errors are in docs/explanation/security.md.
"""

from __future__ import annotations

from typing import Any

from tornado import web

from .entry import DashboardProxyOffHandler, RayDashboardEntryHandler, RayDashboardRedirectHandler
from .errors import DashboardError
from .locate import DashboardProxy, Located
from .paths import (
    CAPABILITY_ROUTE,
    DASHBOARD_SETTING,
    OFF_ROUTE,
    PROXY_PREFIX,
    PROXY_ROUTE,
    REDIRECT_ROUTE,
)
from .relay import RayDashboardHandler
from .rules import response_header_kept, rewrite_location, upstream_request_headers

__all__ = [
    "DASHBOARD_SETTING",
    "PROXY_PREFIX",
    "DashboardError",
    "DashboardProxy",
    "Located",
    "dashboard_routes",
    "response_header_kept",
    "rewrite_location",
    "upstream_request_headers",
]


def dashboard_routes(
    proxy: DashboardProxy | None,
) -> list[tuple[str, type[web.RequestHandler], dict[str, Any]]]:
    """``(pattern, handler, kwargs)`` for the proxy, or for the 404s when ``proxy`` is None
    (turned off); ExtensionApp prepends ``base_url``. The capability route comes first:
    tornado takes the first pattern that matches."""
    if proxy is None:
        return [(OFF_ROUTE, DashboardProxyOffHandler, {})]
    return [
        (CAPABILITY_ROUTE, RayDashboardHandler, {"dashboard": proxy}),
        (PROXY_ROUTE, RayDashboardEntryHandler, {"dashboard": proxy}),
        (REDIRECT_ROUTE, RayDashboardRedirectHandler, {}),
    ]
