"""The authenticated routes: ``dw/ray/<name>/<path>`` issues a capability and redirects to it;
``dw/ray/<name>`` adds the slash; every ``dw/ray`` route answers 404 when the proxy is off."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import url_path_join
from tornado import httputil, web

from ...core.errors import DWError
from ..dashboard_capability import (
    ACTIONS,
    CapabilityError,
)
from ..handlers import AUTH_RESOURCE, EXECUTOR_SETTING, ExtensionObjectsMixin, JSONErrorsMixin
from .errors import (
    DashboardError,
    capability_prefix,
    capability_refused,
    check_name,
    check_path,
    user_name,
)
from .locate import DashboardProxy
from .paths import CAPABILITY_SEGMENT, PROXY_PREFIX, PROXY_ROUTE, SANDBOX_POLICY
from .rules import upstream_query

# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


class SandboxedMixin:
    """What every ``dw/ray`` response carries, errors and redirects included: the sandbox
    (added to jupyter_server's policy, or to the one an administrator configured) and no
    Referer."""

    base_url: str
    request: httputil.HTTPServerRequest

    @property
    def content_security_policy(self) -> str:
        """Jupyter's Content-Security-Policy plus :data:`SANDBOX_POLICY`."""
        return f"{super().content_security_policy}; {SANDBOX_POLICY}"  # type: ignore[misc]

    def set_default_headers(self) -> None:
        """Jupyter's default headers plus ``Referrer-Policy: no-referrer``."""
        super().set_default_headers()  # type: ignore[misc]
        # A capability is in the URL: the browser must never send it on in a Referer.
        self.set_header("Referrer-Policy", "no-referrer")  # type: ignore[attr-defined]

    def set_cors_headers(self) -> None:
        """No CORS: jupyter_server would answer a token-authenticated request from any
        origin; these routes only issue capabilities to navigations and never need it (the
        capability route answers its own)."""

    def _send_error_json(self, err: DashboardError | DWError) -> None:
        self.set_status(err.status)  # type: ignore[attr-defined]
        self.set_header("Content-Type", "application/json")  # type: ignore[attr-defined]
        self.finish(json.dumps(err.to_json()))  # type: ignore[attr-defined]

    def _entry_url(self, name: str, raw_path: str) -> str:
        """``{base_url}dw/ray/<name>/<path>?<query>``: where a capability is (re)issued."""
        query = upstream_query(self.request.query)
        path = url_path_join(self.base_url, PROXY_PREFIX, quote(name, safe="")) + "/"
        return path + raw_path + (f"?{query}" if query else "")


class RayDashboardEntryHandler(
    SandboxedMixin, ExtensionObjectsMixin, JSONErrorsMixin, ExtensionHandlerMixin, JupyterHandler
):
    """``dw/ray/<name>/<path>``: authenticated and authorized by jupyter_server like any Jupyter
    page; issues a capability for RayCluster ``name`` and redirects to its capability path
    (302 for GET and HEAD, 307 for the other methods, which keeps method and body). Nothing
    here reaches the dashboard."""

    auth_resource = AUTH_RESOURCE

    def initialize(self, name: str, dashboard: DashboardProxy) -> None:
        """``dashboard`` is the server's shared :class:`DashboardProxy`."""
        super().initialize(name)
        self.dashboard = dashboard

    @web.authenticated
    @authorized
    async def get(self, name: str, path: str) -> None:
        """Issue and redirect (302)."""
        await self._enter(name, 302)

    # One function per status: jupyter_server's decorators act on the request's method (the
    # authorizer's action, the XSRF check of writes), not on the function's name.
    head = get

    @web.authenticated
    @authorized
    async def post(self, name: str, path: str) -> None:
        """Issue and redirect (307), after jupyter_server's XSRF check of a write."""
        await self._enter(name, 307)

    options = put = patch = delete = post

    def compute_etag(self) -> str | None:
        """Redirects are never cached by ETag."""
        return None

    async def _enter(self, name: str, status: int) -> None:
        match = re.match(url_path_join(self.base_url, PROXY_ROUTE) + "$", self.request.path)
        if match is None:  # tornado routed here with this very pattern
            raise web.HTTPError(404)
        # tornado hands the path over percent-decoded; the dashboard gets it as sent.
        raw_path = match.group(2)
        try:
            check_name(name)
            if raw_path.split("/", 1)[0] == CAPABILITY_SEGMENT:
                # A capability path the capability route did not match (no capability).
                raise capability_refused(name, CapabilityError("malformed capability path"))
            check_path(raw_path)
            located = await self.dashboard.locate(
                self.core, self.settings.get(EXECUTOR_SETTING), name
            )
        except (DashboardError, DWError) as err:
            self._send_error_json(err)
            return
        token = self.dashboard.capabilities.mint(
            located.target, located.uid, user_name(self.current_user), await self._actions()
        )
        # The capability is in this Location only: jupyter_server logs the request's URI, and
        # that has none.
        self.redirect(self._capability_url(name, token, raw_path), status=status)

    async def _actions(self) -> list[str]:
        """What the authorizer lets this user do on jupyter_dw: what the capability grants."""
        return [
            action
            for action in sorted(ACTIONS)
            if await ensure_async(
                self.authorizer.is_authorized(self, self.current_user, action, AUTH_RESOURCE)
            )
        ]

    def _capability_url(self, name: str, token: str, raw_path: str) -> str:
        query = upstream_query(self.request.query)
        root = capability_prefix(self.base_url, name, token)
        return root + raw_path + (f"?{query}" if query else "")


class RayDashboardRedirectHandler(
    SandboxedMixin, JSONErrorsMixin, ExtensionHandlerMixin, JupyterHandler
):
    """``dw/ray/<name>`` → ``dw/ray/<name>/``: the dashboard's relative URLs need the slash."""

    auth_resource = AUTH_RESOURCE

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """Redirect, keeping the query string."""
        self._redirect()

    @web.authenticated
    @authorized
    async def head(self, name: str) -> None:
        """Redirect, keeping the query string."""
        self._redirect()

    def _redirect(self) -> None:
        query = f"?{self.request.query}" if self.request.query else ""
        self.redirect(self.request.path + "/" + query)


class DashboardProxyOffHandler(
    SandboxedMixin, JSONErrorsMixin, ExtensionHandlerMixin, JupyterHandler
):
    """Every ``dw/ray`` path when ``JupyterDW.ray_dashboard_proxy`` is False: 404."""

    auth_resource = AUTH_RESOURCE

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """404 ``dashboard_proxy_disabled``."""
        self._off()

    head = post = put = patch = delete = options = get

    def _off(self) -> None:
        self._send_error_json(
            DashboardError(
                404,
                "The Ray dashboard proxy is turned off on this server",
                "JupyterDW.ray_dashboard_proxy is False",
                "Open the dashboard another way (kubectl port-forward, a Route or Ingress), "
                "or ask the administrator to turn the proxy on.",
                "dashboard_proxy_disabled",
            )
        )
