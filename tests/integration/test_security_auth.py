"""Every route of jupyter_dw refuses a request without valid credentials, and a cross-origin
write or WebSocket, on the real control plane.

The routes are read from the running server's handler table (every tornado rule whose handler
is a jupyter_dw class), not listed here: a route added later is attacked too, and a route this
module cannot build a request for fails the test. Each route is tried with each method its
handler implements, as an attacker would:

- no credentials, and a wrong token;
- a write (POST/PUT/PATCH/DELETE) from another site: the user's real login cookies (a browser
  sends them), ``Origin: https://evil.example``, and no or a wrong ``X-XSRFToken`` (the other
  site cannot read the ``_xsrf`` cookie);
- a WebSocket from another site with the user's cookies;
- on capability paths (``dw/ray/<name>/~cap/<capability>/...``), where the capability in the
  URL is the only credential: none, a wrong one, Jupyter's token instead of one, and a valid
  one used for a write or WebSocket from another site.

Refused means 401/403, or a redirect to Jupyter's login page; the stand-in dashboard must have
received nothing and the RayCluster must still be there. Each refusal has a control: the same
request with valid credentials gets past authentication (any answer but 401/403/login), so a
route that refused everything could not pass.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import JupyterServerAuthWarning, url_path_join
from tornado import web
from tornado.httpclient import HTTPClientError, HTTPRequest, HTTPResponse
from tornado.routing import PathMatches
from tornado.websocket import WebSocketError, websocket_connect

from jupyter_dw.names import KERNEL_LINK_ENV
from jupyter_dw.notebook.server_link import read_link
from jupyter_dw.server.handlers import route_table
from jupyter_dw.server.kernel_handlers import KernelCallHandler
from tests.cluster.fixtures import WAIT_TIMEOUT
from tests.integration.clusters_support import create_suspended_raycluster, rayclusters
from tests.integration.test_dashboard_proxy import (  # the stand-in dashboard
    TEMPLATE,
    StandIn,
    cookie_header,
    login_cookies,
    stand_in,
)
from tests.integration.workbench_rbac import namespace_rules

pytestmark = pytest.mark.cluster

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = None
CLUSTER = "guarded"
ABSENT = "no-such-cluster"
EVIL = "https://evil.example"
WRITES = ("POST", "PUT", "PATCH", "DELETE")
__all__ = ["stand_in"]  # a fixture, imported for its name


@dataclass(frozen=True)
class Route:
    """One rule of the server's handler table that belongs to jupyter_dw."""

    pattern: str
    handler: type[web.RequestHandler]

    @property
    def capability(self) -> bool:
        return "~cap" in self.pattern

    @property
    def websocket(self) -> bool:
        return any(c.__name__ == "WebSocketHandler" for c in self.handler.__mro__)

    def methods(self) -> list[str]:
        """The methods its handler implements (what jupyter_server checks for auth)."""
        return [
            m
            for m in self.handler.SUPPORTED_METHODS
            if getattr(self.handler, m.lower()) is not web.RequestHandler._unimplemented_method
        ]

    def path(self, method: str, capability: str = "wrong.capability", name: str = CLUSTER) -> str:
        """A request path this rule routes, with cluster ``name`` (``fit`` for POST on the
        one cluster route), ``capability`` on capability paths and a dashboard API path."""
        path = self.pattern.removesuffix("$")
        if method == "POST" and path.endswith("/clusters/([^/]+)"):
            name = "fit"
        path = path.replace("([^/]+)", name, 1).replace("([^/]+)", capability, 1)
        path = path.replace("(.*)", "api/jobs/").replace("(?:/.*)?", f"/{name}/")
        assert "(" not in path, f"no request can be built for {self.pattern}: teach path()"
        assert capability == "" or re.fullmatch(self.pattern, path), (self.pattern, path)
        return path


def dw_routes(web_app: web.Application) -> list[Route]:
    """Every jupyter_dw rule of the running server, found by walking tornado's routers."""
    found: dict[tuple[str, type[web.RequestHandler]], Route] = {}

    def walk(router: Any) -> None:
        for rule in getattr(router, "rules", []):
            target = rule.target
            if isinstance(target, type) and issubclass(target, web.RequestHandler):
                if target.__module__.startswith("jupyter_dw.") and isinstance(
                    rule.matcher, PathMatches
                ):
                    pattern = rule.matcher.regex.pattern
                    found[(pattern, target)] = Route(pattern, target)
            else:
                walk(target)

    walk(web_app.default_router)
    return list(found.values())


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture
def dw_config(request: pytest.FixtureRequest, stand_in: StandIn) -> dict[str, Any]:
    return {"ray_dashboard_url": TEMPLATE, "ray_dashboard_port": stand_in.port} | dict(
        getattr(request, "param", {})
    )


@pytest.fixture
def guarded(kube, namespace) -> Iterator[str]:
    create_suspended_raycluster(kube, namespace, CLUSTER)
    yield CLUSTER
    assert [rc["metadata"]["name"] for rc in rayclusters(kube, namespace)] == [CLUSTER]


@dataclass
class Client:
    """Raw requests to the test server: no credentials unless given, redirects not followed,
    errors returned."""

    http: Any
    port: int
    base_url: str
    token: str

    async def fetch(self, method: str, path: str, headers: dict[str, str]) -> HTTPResponse:
        body = b"{}" if method in ("POST", "PUT", "PATCH") else None
        return await self.http.fetch(
            path,
            method=method,
            body=body,
            headers={"Authorization": "", **headers},
            raise_error=False,
            follow_redirects=False,
            allow_nonstandard_methods=True,
            request_timeout=WAIT_TIMEOUT,
        )

    async def websocket(self, path: str, headers: dict[str, str]) -> int:
        """Open a WebSocket; the status it was refused with, or 101."""
        request = HTTPRequest(
            f"ws://127.0.0.1:{self.port}{path}",
            headers={"Authorization": "", **headers},
            request_timeout=WAIT_TIMEOUT,
        )
        try:
            ws = await websocket_connect(request)
        except HTTPClientError as err:
            return err.code
        except WebSocketError:
            return 0
        ws.close()
        return 101

    async def capability(self, name: str) -> str:
        """A valid capability for ``name``, from a token-authenticated navigation."""
        entry = await self.fetch(
            "GET", f"{self.base_url}dw/ray/{name}/", {"Authorization": f"token {self.token}"}
        )
        assert entry.code == 302, entry.body
        return entry.headers["Location"].split("/~cap/")[1].split("/")[0]


@pytest.fixture
def raw(http_server_client, jp_http_port, jp_base_url, jp_serverapp) -> Client:
    return Client(
        http_server_client, jp_http_port, jp_base_url, jp_serverapp.identity_provider.token
    )


def kernel_secret() -> dict[str, str]:
    """The header of a kernel of the test's server (the secret it published)."""
    info = read_link(os.environ[KERNEL_LINK_ENV])
    assert info is not None, "the server published no kernel link"
    return {"Authorization": f"DW-Kernel {info.secret}"}


def refused(response: HTTPResponse, base_url: str) -> bool:
    """401/403, a redirect to the login page, or jupyter_server's answer to a cross-origin API
    request (a bare 404, without the ``code`` of jupyter_dw's own errors)."""
    if response.code in (401, 403):
        return True
    if response.code == 404 and response.request.headers.get("Origin") == EVIL:
        return json.loads(response.body).get("code") is None
    location = response.headers.get("Location", "")
    return response.code == 302 and location.startswith(f"{base_url}login?")


def describe(response: HTTPResponse) -> str:
    return f"{response.code} {response.headers.get('Location', '')} {response.body[:200]!r}"


# --------------------------------------------------------------------------------------------
# Every route
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dw_config",
    [pytest.param({}, id="proxy-on"), pytest.param({"ray_dashboard_proxy": False}, id="off")],
    indirect=True,
)
async def test_every_route_refuses_missing_wrong_and_cross_origin_credentials(
    raw, guarded, stand_in, jp_serverapp, jp_base_url, dw_config
):
    routes = dw_routes(jp_serverapp.web_app)
    # Every REST rule plus the proxy's 3 rules, or its one "turned off" rule.
    rest = len(route_table())
    assert len(routes) == rest + (3 if dw_config.get("ray_dashboard_proxy", True) else 1), routes
    token = {"Authorization": f"token {raw.token}"}
    cookies = await login_cookies(raw.http, jp_base_url, raw.token)
    browser = {"Cookie": cookie_header(cookies)}
    tried = controls = 0
    for route in routes:
        for method in route.methods():
            websocket = route.websocket and method == "GET"
            if route.capability:
                tried += await _attack_capability_route(raw, route, method, websocket, stand_in)
                controls += 1
                continue
            path = route.path(method)
            attacks = [{}, {"Authorization": "token wrong-token"}]
            control_headers = token
            if route.handler is KernelCallHandler:
                # The kernel channel opens to the kernel secret only: a wrong secret, and on
                # the call itself the user's own token, are attacks; the control carries the
                # secret. (A preflight with the token is jupyter_server's, as on any route.)
                attacks.append({"Authorization": "DW-Kernel wrong-secret"})
                attacks += [token] if method == "POST" else []
                control_headers = kernel_secret()
            if method in WRITES:
                attacks += [
                    browser,  # the user's cookies without the XSRF token
                    {**browser, "Origin": EVIL},
                    {**browser, "Origin": EVIL, "X-XSRFToken": "forged"},
                ]
            for headers in attacks:
                response = await raw.fetch(method, path, headers)
                tried += 1
                if method == "OPTIONS" and _is_cors_preflight(route):
                    # jupyter_server's own preflight answer: empty, and no CORS for a site.
                    preflight = await raw.fetch(method, path, {**headers, "Origin": EVIL})
                    assert preflight.body == b"", (path, describe(preflight))
                    assert "Access-Control-Allow-Origin" not in preflight.headers, path
                    continue
                assert refused(response, jp_base_url), (method, path, headers, describe(response))
            # Control on another name: a DELETE that got through must not remove the cluster.
            control = await raw.fetch(method, route.path(method, name=ABSENT), control_headers)
            assert not refused(control, jp_base_url), (method, path, describe(control))
            if websocket:
                for headers in ({}, {"Authorization": "token wrong"}, {**browser, "Origin": EVIL}):
                    assert await raw.websocket(path, headers) in (401, 403), (path, headers)
                    tried += 1
    # Nothing reached the dashboard but the controls on capability paths.
    assert [seen.headers.get("Origin") for seen in stand_in.seen] == ["null"] * controls
    print(f"auth: {tried} refused requests over {len(routes)} routes")
    assert tried >= 60, tried


def _is_cors_preflight(route: Route) -> bool:
    """Whether OPTIONS is jupyter_server's ``APIHandler.options``: the CORS preflight answer,
    allowed unauthenticated (it answers nothing)."""
    return route.handler.options is APIHandler.options


async def _attack_capability_route(
    raw: Client, route: Route, method: str, websocket: bool, stand_in: StandIn
) -> int:
    """The capability is the credential: none, a wrong one, Jupyter's token instead, and a
    valid one from another site's page. Nothing reaches the stand-in but the control."""
    before = len(stand_in.seen)
    tried = 0
    token = {"Authorization": f"token {raw.token}"}
    no_capability = route.path(method, capability="")
    for path, headers in (
        (no_capability, {}),
        (route.path(method), {}),
        (route.path(method), token),  # a Jupyter token is not a capability
    ):
        response = await raw.fetch(method, path, headers)
        assert refused(response, raw.base_url), (method, path, describe(response))
        tried += 1
    valid = route.path(method, capability=await raw.capability(CLUSTER))
    if method in WRITES:
        for origin in (EVIL, "http://127.0.0.1.evil.example"):
            response = await raw.fetch(method, valid, {"Origin": origin})
            assert response.code == 403, (method, origin, describe(response))
            assert json.loads(response.body)["code"] == "cross_origin_refused"
            tried += 1
    if websocket:
        for path in (route.path(method), valid):
            headers = {"Origin": EVIL} if path == valid else {}
            assert await raw.websocket(path, headers) == 403, (path, headers)
            tried += 1
    assert len(stand_in.seen) == before
    # Control: the same capability from the sandboxed page (origin "null") is proxied.
    response = await raw.fetch(method, valid, {"Origin": "null"})
    assert response.code < 400, (method, describe(response))
    assert len(stand_in.seen) == before + 1
    return tried


STRICT_SERVER = {
    "allow_unauthenticated_access": False,
    # pytest-jupyter adds jupyter_server_terminals, whose websocket handler draws a warning.
    "jpserver_extensions": {"jupyter_dw": True, "jupyter_server_terminals": False},
}


@pytest.mark.parametrize("server_options", [STRICT_SERVER], indirect=True)
@pytest.mark.parametrize(
    "dw_config",
    [pytest.param({}, id="proxy-on"), pytest.param({"ray_dashboard_proxy": False}, id="off")],
    indirect=True,
)
async def test_a_strict_server_logs_no_warning_about_our_handlers(
    recwarn, caplog, jp_serverapp, jp_fetch
):
    # recwarn and caplog were set up before the server: they saw every route registered.
    assert jp_serverapp.allow_unauthenticated_access is False
    routes = dw_routes(jp_serverapp.web_app)
    assert routes
    ours = {r.handler.__name__ for r in routes} | {"dw/api", "dw/ray", "jupyter_dw"}
    said = [str(w.message) for w in recwarn]
    said += [
        r.getMessage()
        for phase in ("setup", "call")
        for r in caplog.get_records(phase)
        if r.levelno >= logging.WARNING
    ]
    assert not [line for line in said if any(name in line for name in ours)], said
    assert not [w for w in recwarn if w.category is JupyterServerAuthWarning], said
    assert caplog.get_records("setup"), "the server's start-up log was not captured"
    # And the strict server serves our routes with a token.
    assert (await jp_fetch("dw", "api", "version")).code == 200

    # Control: a jupyter_dw handler without authentication is warned about, and found.
    class Forgotten(APIHandler):
        async def get(self) -> None:
            self.finish({})

    Forgotten.__module__ = "jupyter_dw.server.forgotten"
    path = url_path_join(jp_serverapp.base_url, "dw/api/forgotten")
    jp_serverapp.web_app.add_handlers(".*$", [(path, Forgotten)])
    warned = [str(w.message) for w in recwarn if w.category is JupyterServerAuthWarning]
    assert len(warned) == 1 and "Forgotten" in warned[0], warned
    assert Forgotten in {r.handler for r in dw_routes(jp_serverapp.web_app)}


def test_the_route_walk_finds_a_new_route():
    """Control for :func:`dw_routes`: a jupyter_dw handler added to any router is found."""

    class Extra(web.RequestHandler):
        pass

    Extra.__module__ = "jupyter_dw.server.extra"
    app = web.Application()
    app.add_handlers(".*$", [(r"/dw/api/extra/([^/]+)", Extra)])
    [route] = dw_routes(app)
    assert route.handler is Extra
    assert route.path("GET") == f"/dw/api/extra/{CLUSTER}"


# --------------------------------------------------------------------------------------------
# With the proxy off, no surface points at it
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dw_config", "expected"),
    [
        pytest.param({}, f"dw/ray/{CLUSTER}/", id="proxy-on"),
        pytest.param({"ray_dashboard_proxy": False}, None, id="off"),
    ],
    indirect=["dw_config"],
)
async def test_dashboard_url_is_null_when_the_proxy_is_off(
    guarded, jp_fetch, jp_ws_fetch, jp_base_url, expected
):
    want = None if expected is None else f"{jp_base_url}{expected}"
    # jp_fetch and jp_ws_fetch check every answer against openapi.yaml (nullable there).
    one = json.loads((await jp_fetch("dw", "api", "clusters", CLUSTER)).body)
    listed = json.loads((await jp_fetch("dw", "api", "clusters")).body)["clusters"]
    ws = await jp_ws_fetch("dw", "api", "events")
    snapshot = json.loads(await ws.read_message())
    ws.close()
    assert one["dashboard_url"] == want
    assert [c["dashboard_url"] for c in listed] == [want]
    assert [c["dashboard_url"] for c in snapshot["clusters"]] == [want]
