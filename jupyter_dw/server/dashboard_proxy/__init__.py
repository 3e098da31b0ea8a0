"""The Ray dashboard of a RayCluster, proxied through the Jupyter server, isolated from it.

A dashboard serves HTML and JavaScript that jupyter_dw does not control (anyone who can create a
RayCluster or submit a Ray job can change what it serves), on Jupyter's own origin: there is no
second origin (a workbench is one host behind one login). So nothing proxied may act as the
Jupyter user, and the design is:

- **Sandboxed pages.** Every response under ``{base_url}dw/ray/`` carries
  ``Content-Security-Policy: sandbox allow-scripts ...`` without ``allow-same-origin``: the
  browser gives the page an opaque origin. It cannot read Jupyter's cookies (``_xsrf``
  included) or storage, cannot register a service worker, and its requests to Jupyter's API are
  cross-origin: jupyter_server answers them no CORS, and refuses writes without the XSRF token
  the page cannot read. ``allow-top-navigation`` and ``allow-popups-to-escape-sandbox`` are
  never given. ``Referrer-Policy: no-referrer`` keeps the capability out of Referer headers.
- **Capabilities.** A sandboxed page's own requests carry no Jupyter cookie. ``GET
  {base_url}dw/ray/<name>/<path>`` (authenticated and authorized by jupyter_server as any
  Jupyter page) mints a capability (:mod:`.dashboard_capability`) bound to the user, the actions
  the authorizer allows and the RayCluster, and redirects to
  ``{base_url}dw/ray/<name>/~cap/<capability>/<path>``; other methods get a 307 there. Only
  capability paths are proxied, and only the capability authorizes them (cookies are ignored,
  so there is nothing to forge and no XSRF check). The dashboard's relative URLs resolve under
  that path, so its fetches, XHRs and WebSockets work unchanged; CORS is answered
  (``Access-Control-Allow-Origin: null``, never with credentials) only there. A capability
  opens one cluster's dashboard and nothing else: it is not a Jupyter token.
- **What comes back.** Only an allow-list of the dashboard's response headers is passed on:
  ``Set-Cookie``, ``Service-Worker-Allowed``, CORS, ``Clear-Site-Data``, HSTS, ``Alt-Svc``,
  ``Refresh``, ``WWW-Authenticate``, reporting headers and front-proxy directives such as
  ``X-Accel-Redirect`` never reach the browser or a proxy in front. A redirect must stay under
  the cluster's capability path (``Location`` is rewritten to it); one that leaves it (another
  host, or ``..`` out of the prefix) is refused with 502 ``dashboard_redirect_refused``.
- **What goes out.** Jupyter's credentials (``Authorization``, ``Cookie``, XSRF headers,
  ``token``/``_xsrf`` query parameters), the ``Referer`` and any ``X-Ray-Authorization`` the
  page sends are never forwarded.
- **Ray's token.** For a cluster with Ray token authentication (``spec.authOptions.mode:
  token``), every proxied request and WebSocket carries ``Authorization: Bearer <token>``,
  added here, upstream only. The token is read from the Secret KubeRay made for the cluster
  (one ``get``; used only when the Secret's controller owner is this RayCluster's UID, see
  :mod:`jupyter_dw.domain.ray_auth`) and kept in memory for :data:`EXISTS_TTL` seconds. It
  never reaches the browser: Ray's ``/api/authenticate`` answers with a ``Set-Cookie``
  holding it, which the allow-list drops like every cookie, and it is in no URL, no log line.
  A cluster with Kubernetes-delegated auth (``enableK8sTokenAuth``) gets this server's own
  Kubernetes bearer token instead, the same way.

Where requests go: by default to what KubeRay reports for the cluster, its head Service
(``status.head.serviceName``) on the dashboard port (``status.endpoints.dashboard``), as
``http://<service>.<namespace>.svc:<port>``; or, when the administrator sets
``JupyterDW.ray_dashboard_url``, to that template with ``{name}``, ``{namespace}`` and
``{port}`` (``JupyterDW.ray_dashboard_port``). ``<name>`` must be a DNS-1035 label naming a
RayCluster that exists in the namespace; the browser never chooses a host. ``.``/``..`` path
segments are refused so a path-based template cannot be walked out of. ``JupyterDW.
ray_dashboard_proxy = False`` turns the proxy off: every ``dw/ray/`` route answers 404
``dashboard_proxy_disabled``.

Capabilities never reach a log: the handler masks them in the request's path before anything
can log it.

Errors of the proxy itself are JSON ``{"error", "reason", "hint", "code"}`` as in
:mod:`jupyter_dw.handlers`: 400 ``invalid_name`` / ``invalid_path``, 403
``invalid_capability`` / ``capability_expired`` / ``capability_user_mismatch`` /
``capability_not_granted`` / ``cross_origin_refused`` (a write from another site's page),
404 ``raycluster_not_found`` / ``dashboard_proxy_disabled``, 403 from Kubernetes (with
``denied``: ``"get rayclusters.ray.io"`` or ``"get secrets"``), 503 from the session, 502
``ray_token_unavailable`` (the cluster's token Secret is missing, not owned by the cluster, or
holds no token), 502
``dashboard_unreachable``, ``dashboard_unknown`` (KubeRay reported no usable Service),
``dashboard_redirect_refused`` or ``dashboard_refused`` (a WebSocket upgrade the dashboard
answered with an error, whose status is kept). Other answers of the dashboard (any status) are
passed back with the headers above.
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
