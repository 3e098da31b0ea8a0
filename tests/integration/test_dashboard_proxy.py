"""The Ray dashboard proxy ``{base_url}dw/ray/<name>/`` on the real control plane.

RayClusters are real objects: the proxy asks the API server, as the workbench's service
account, whether the cluster exists. The dashboard is a stand-in tornado server on 127.0.0.1
(the KWOK nodes' pod and Service IPs are not real addresses), reached through
``ray_dashboard_url = "http://127.0.0.1:{port}/{namespace}/{name}"`` so that every request the
stand-in records also shows the template's substitution. The stand-in records everything it
receives: "nothing was proxied" is checked on that record, not assumed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.utils import JupyterServerAuthWarning
from kubernetes import client
from tornado import httputil, web
from tornado.httpclient import HTTPClientError, HTTPResponse
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port
from tornado.websocket import WebSocketError, WebSocketHandler
from traitlets import TraitError

from jupyter_dw.server.app import JupyterDW
from jupyter_dw.server.dashboard_proxy import DashboardProxy
from jupyter_dw.server.handlers import AUTH_RESOURCE
from tests.cluster.controlplane import free_port
from tests.cluster.fixtures import WAIT_TIMEOUT

pytestmark = pytest.mark.cluster

CLUSTER = "dash"
# All the proxy needs: to see whether a RayCluster exists.
GET_RAYCLUSTERS = [{"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get"]}]
WORKBENCH_RULES = GET_RAYCLUSTERS
# With list and watch too, a session that keeps a RayCluster watch cache answers from it.
WATCH_RAYCLUSTERS = [
    {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "list", "watch"]}
]
TEMPLATE = "http://127.0.0.1:{port}/{namespace}/{name}"
EVENT_TIMEOUT = 10  # seconds for the stand-in's events; a failure, never a pause


# --------------------------------------------------------------------------------------------
# The stand-in dashboard
# --------------------------------------------------------------------------------------------


@dataclass
class Seen:
    """One request as the stand-in received it (``uri``: raw path and query)."""

    method: str
    uri: str
    headers: httputil.HTTPHeaders
    body: bytes


@dataclass
class StandIn:
    """A fake Ray dashboard that records every request and WebSocket it gets."""

    port: int = 0
    seen: list[Seen] = field(default_factory=list)
    first_chunk_read: asyncio.Event = field(default_factory=asyncio.Event)
    socket_closed: asyncio.Event = field(default_factory=asyncio.Event)
    socket_close_code: int | None = None
    aborted: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the proxy closes a request before the stand-in finished answering it."""

    def record(self, request: httputil.HTTPServerRequest) -> None:
        self.seen.append(
            Seen(request.method or "", request.uri or "", request.headers, request.body)
        )

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


class StandInHandler(web.RequestHandler):
    """Echoes method and raw URI as JSON, except for paths ending in ``teapot``,
    ``redirect-*``, ``missing``, ``hang`` and ``stream`` (see ``_answer``)."""

    SUPPORTED_METHODS = ("GET", "HEAD", "POST", "DELETE", "PATCH", "PUT", "OPTIONS")

    def initialize(self, stand_in: StandIn) -> None:
        self.stand_in = stand_in

    async def _answer(self, path: str) -> None:
        self.stand_in.record(self.request)
        last = path.rsplit("/", 1)[-1]
        if last == "teapot":
            self.set_status(418)
            self.set_header("Content-Type", "text/plain")
            self.set_header("X-Stand-In", "teapot")
            self.set_header("Proxy-Authenticate", "Basic")  # hop-by-hop: must not come back
            self.set_header("Content-Security-Policy", "img-src 'self'")
            self.set_header("Access-Control-Allow-Origin", "https://evil.example")
            self.set_header("Access-Control-Allow-Credentials", "true")
            self.set_cookie("dashboard", "1")
            self.finish(b"short and stout")
        elif last == "redirect-absolute":
            self.redirect(self.stand_in.url(f"/{path.rsplit('/', 1)[0]}/landing?x=1"))
        elif last == "redirect-root":
            self.redirect(f"/{path.rsplit('/', 1)[0]}/landing?x=1")
        elif last == "redirect-relative":
            self.redirect("landing?x=1")
        elif last == "missing":
            raise web.HTTPError(404)
        elif last == "hang":
            self.write(b"first,")
            await self.flush()
            await self.stand_in.aborted.wait()  # until the proxy drops this request
        elif last == "stream":
            self.write(b"first,")
            await self.flush()
            # The rest only comes once the browser has read the first part: a proxy that
            # buffered the body would never let that happen.
            try:
                await asyncio.wait_for(self.stand_in.first_chunk_read.wait(), EVENT_TIMEOUT)
            except asyncio.TimeoutError:
                self.finish(b"buffered")
                return
            self.finish(b"second")
        else:
            self.set_header("X-Echo", "1")
            self.finish({"method": self.request.method, "uri": self.request.uri})

    def on_connection_close(self) -> None:
        if not self._finished:
            self.stand_in.aborted.set()

    get = head = post = put = patch = delete = options = _answer  # type: ignore[assignment]


class StandInSocket(WebSocketHandler):
    """Greets, echoes (text as text, bytes as bytes), and closes with 4002 on "close-me"."""

    def initialize(self, stand_in: StandIn) -> None:
        self.stand_in = stand_in

    async def get(self, *args: Any, **kwargs: Any) -> None:
        self.stand_in.record(self.request)
        await super().get(*args, **kwargs)

    def check_origin(self, origin: str) -> bool:
        return True

    def select_subprotocol(self, subprotocols: list[str]) -> str | None:
        return "dashboard.v1" if "dashboard.v1" in subprotocols else None

    def open(self, *args: str) -> None:
        self.write_message("hello from the dashboard")

    def on_message(self, message: str | bytes) -> None:
        if message == "close-me":
            self.close(4002, "bye")
        elif isinstance(message, bytes):
            self.write_message(b"echo: " + message, binary=True)
        else:
            self.write_message(f"echo: {message}")

    def on_close(self) -> None:
        self.stand_in.socket_close_code = self.close_code
        self.stand_in.socket_closed.set()


@pytest.fixture
def stand_in(jp_asyncio_loop) -> Iterator[StandIn]:
    """The stand-in dashboard, listening on 127.0.0.1 on the test's event loop."""
    sock, port = bind_unused_port()
    stand_in = StandIn(port=port)
    app = web.Application(
        [
            (r"/[^/]+/[^/]+/ws", StandInSocket, {"stand_in": stand_in}),
            (r"/(.*)", StandInHandler, {"stand_in": stand_in}),
        ]
    )
    server = HTTPServer(app)

    async def start() -> None:
        server.add_sockets([sock])

    jp_asyncio_loop.run_until_complete(start())
    yield stand_in
    server.stop()
    jp_asyncio_loop.run_until_complete(server.close_all_connections())


# --------------------------------------------------------------------------------------------
# The server, its identity and the RayCluster
# --------------------------------------------------------------------------------------------


@pytest.fixture
def dashboard_port(request: pytest.FixtureRequest, stand_in: StandIn) -> int:
    """The ``{port}`` of the template: the stand-in's, unless parametrized ("closed")."""
    return free_port() if getattr(request, "param", None) == "closed" else stand_in.port


@pytest.fixture
def dw_config(dashboard_port: int) -> dict[str, Any]:
    """The dashboard address template, aimed at the stand-in."""
    return {"ray_dashboard_url": TEMPLATE, "ray_dashboard_port": dashboard_port}


@pytest.fixture
def raycluster(kube: client.ApiClient, namespace: str) -> str:
    """A RayCluster named ``dash`` in the test namespace (suspended: the proxy only needs the
    object; its pods would not be reachable here anyway)."""
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": CLUSTER},
        "spec": {
            "suspend": True,
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.9.0"}]}
                },
            },
        },
    }
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", body
    )
    return CLUSTER


@pytest.fixture
def proxy(http_server_client, jp_base_url, jp_auth_header):
    """``proxy("<name>/<raw path and query>", ...)``: a request through the proxy with the
    path exactly as given (jp_fetch would re-encode it). Token-authenticated unless
    ``headers`` sets Authorization; errors are returned, not raised."""

    async def fetch(path: str, **kwargs: Any) -> HTTPResponse:
        headers = {**jp_auth_header, **kwargs.pop("headers", {})}
        return await http_server_client.fetch(
            f"{jp_base_url}dw/ray/{path}",
            headers=headers,
            raise_error=False,
            follow_redirects=False,
            request_timeout=WAIT_TIMEOUT,
            **kwargs,
        )

    return fetch


def error_json(response: HTTPResponse) -> dict[str, Any]:
    assert response.headers["Content-Type"].startswith("application/json"), response.headers
    return json.loads(response.body)


def echo(response: HTTPResponse) -> dict[str, Any]:
    assert response.code == 200, (response.code, response.body)
    assert response.headers.get("X-Echo") == "1"
    return json.loads(response.body)


def assert_no_jupyter_credentials(seen: Seen) -> None:
    for header in ("Authorization", "Cookie", "X-XSRFToken", "X-CSRFToken"):
        assert header not in seen.headers, (header, dict(seen.headers))
    assert "token=" not in seen.uri and "_xsrf=" not in seen.uri


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


def test_default_target_is_the_kuberay_head_service():
    app = JupyterDW()
    assert app.ray_dashboard_url == "http://{name}-head-svc.{namespace}.svc:{port}"
    assert app.ray_dashboard_port == 8265
    proxy = DashboardProxy(app.ray_dashboard_url, app.ray_dashboard_port)
    assert proxy.base_url("my-ray", "team-a") == "http://my-ray-head-svc.team-a.svc:8265"


@pytest.mark.parametrize(
    ("template", "complaint"),
    [
        ("http://{name}.{cluster}:{port}", "unknown placeholder"),
        ("http://{}-head-svc:{port}", "unknown placeholder"),
        ("http://{name.upper}-head-svc", "unknown placeholder"),
        ("http://{name!r}-head-svc", "format spec or conversion"),
        ("http://{name}:{port:d}", "format spec or conversion"),
        ("http://{name", "not a valid template"),
        ("http://ray-head.{namespace}.svc:8265", "must contain {name}"),
        ("ftp://{name}-head-svc", "http:// or https://"),
        ("{name}-head-svc.{namespace}.svc:8265", "http:// or https://"),
        ("http:///{name}", "http:// or https://"),
        ("http://{name}-head-svc:{port}/?x=1", "query string or fragment"),
        ("http://{name}-head-svc:{port}/#top", "query string or fragment"),
    ],
)
def test_bad_url_templates_are_refused(template, complaint):
    with pytest.raises(TraitError, match="ray_dashboard_url") as refused:
        JupyterDW(ray_dashboard_url=template)
    assert complaint in str(refused.value)


@pytest.mark.parametrize(
    "template",
    [
        "https://ray-gw.example.com/{namespace}/{name}",
        "http://{name}-head-svc.{namespace}.svc.example.internal:{port}/",
    ],
)
def test_good_url_templates_are_kept(template):
    assert JupyterDW(ray_dashboard_url=template).ray_dashboard_url == template


@pytest.mark.parametrize("port", [0, 65536, -1])
def test_bad_ports_are_refused(port):
    with pytest.raises(TraitError, match="ray_dashboard_port"):
        JupyterDW(ray_dashboard_port=port)


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------


async def test_path_and_query_pass_through_and_credentials_do_not(
    proxy, raycluster, stand_in, namespace, jp_serverapp
):
    token = jp_serverapp.identity_provider.token
    response = await proxy(
        f"{raycluster}/api/jobs/a%2Fb/caf%C3%A9%20x?q=a%26b&token={token}&empty=&_xsrf=x&p=a+b",
        headers={
            "Cookie": "session=abc",
            "X-XSRFToken": "x",
            "X-Ray-Test": "kept",
            "Accept": "application/json",
        },
    )

    expected = f"/{namespace}/{raycluster}/api/jobs/a%2Fb/caf%C3%A9%20x?q=a%26b&empty=&p=a+b"
    assert echo(response)["uri"] == expected
    [seen] = stand_in.seen
    assert seen.uri == expected
    assert seen.method == "GET"
    assert_no_jupyter_credentials(seen)
    assert token not in str(seen.headers) + seen.uri
    assert seen.headers["X-Ray-Test"] == "kept"
    assert seen.headers["Accept"] == "application/json"
    assert seen.headers["Host"] == f"127.0.0.1:{stand_in.port}"


async def test_the_dashboard_root_and_an_empty_query(proxy, raycluster, stand_in, namespace):
    assert echo(await proxy(f"{raycluster}/"))["uri"] == f"/{namespace}/{raycluster}/"
    assert echo(await proxy(f"{raycluster}/?"))["uri"] == f"/{namespace}/{raycluster}/"
    assert [s.uri for s in stand_in.seen] == [f"/{namespace}/{raycluster}/"] * 2


@pytest.mark.parametrize(
    ("method", "body"),
    [
        ("POST", b'{"entrypoint": "python job.py"}'),
        ("PUT", b"package bytes \x00\xff"),
        ("PATCH", b"{}"),
        ("POST", b""),
        ("DELETE", None),
        ("OPTIONS", None),
        ("GET", None),
    ],
)
async def test_methods_and_bodies_pass_through(proxy, raycluster, stand_in, method, body):
    response = await proxy(f"{raycluster}/api/jobs/", method=method, body=body)

    answer = echo(response)
    assert answer["method"] == method
    [seen] = stand_in.seen
    assert (seen.method, seen.body) == (method, body or b"")
    assert_no_jupyter_credentials(seen)


async def test_head_passes_through_without_a_body(proxy, raycluster, stand_in):
    response = await proxy(f"{raycluster}/api/jobs/", method="HEAD")

    assert response.code == 200
    assert response.headers["X-Echo"] == "1"
    assert response.body == b""
    assert int(response.headers["Content-Length"]) > 0  # the dashboard's, for its GET body
    assert [s.method for s in stand_in.seen] == ["HEAD"]


async def test_status_and_headers_come_back(proxy, raycluster, stand_in):
    response = await proxy(f"{raycluster}/teapot")

    assert response.code == 418
    assert response.body == b"short and stout"
    assert response.headers["Content-Type"] == "text/plain"
    assert response.headers["X-Stand-In"] == "teapot"
    assert "Proxy-Authenticate" not in response.headers
    # The Jupyter origin keeps its own CORS policy (none here).
    assert response.headers.get("Access-Control-Allow-Origin") != "https://evil.example"
    assert "Access-Control-Allow-Credentials" not in response.headers
    cookies = response.headers.get_list("Set-Cookie")
    assert not [c for c in cookies if c.startswith("dashboard=")], cookies
    # The dashboard's CSP is added to Jupyter's, not swapped for it.
    policies = response.headers.get_list("Content-Security-Policy")
    assert "img-src 'self'" in policies
    assert any("frame-ancestors" in p for p in policies), policies
    assert len(stand_in.seen) == 1


@pytest.mark.parametrize(
    ("route", "location"),
    [
        ("redirect-absolute", "{base}dw/ray/dash/app/landing?x=1"),
        ("redirect-root", "{base}dw/ray/dash/app/landing?x=1"),
        ("redirect-relative", "landing?x=1"),
    ],
)
async def test_dashboard_redirects_stay_in_the_proxy(
    proxy, raycluster, jp_base_url, route, location
):
    response = await proxy(f"{raycluster}/app/{route}")

    assert response.code == 302
    assert response.headers["Location"] == location.format(base=jp_base_url)


async def test_response_bodies_are_streamed(proxy, raycluster, stand_in):
    chunks: list[bytes] = []

    def on_chunk(chunk: bytes) -> None:
        chunks.append(chunk)
        stand_in.first_chunk_read.set()  # lets the stand-in send the rest

    response = await proxy(f"{raycluster}/logs/stream", streaming_callback=on_chunk)

    assert response.code == 200
    assert b"".join(chunks) == b"first,second"


async def test_no_slash_redirects_to_the_dashboard_root(proxy, raycluster, jp_base_url, stand_in):
    response = await proxy(f"{raycluster}?a=1")

    assert response.code == 302
    assert response.headers["Location"] == f"{jp_base_url}dw/ray/{raycluster}/?a=1"
    assert stand_in.seen == []


# --------------------------------------------------------------------------------------------
# Authentication, XSRF, authorization
# --------------------------------------------------------------------------------------------


async def test_unauthenticated_requests_are_refused(
    proxy, raycluster, stand_in, jp_ws_fetch, jp_base_url
):
    for auth in ("", "token wrong-token"):
        headers = {"Authorization": auth}
        page = await proxy(f"{raycluster}/", headers=headers)
        assert page.code == 302  # a browser goes to the login page, as for any Jupyter page
        assert page.headers["Location"].startswith(f"{jp_base_url}login?next=")
        assert (
            await proxy(f"{raycluster}/x", method="POST", body=b"", headers=headers)
        ).code == 403
        no_slash = await proxy(raycluster, headers=headers)
        assert no_slash.headers["Location"].startswith(f"{jp_base_url}login?next=")
        with pytest.raises((HTTPClientError, WebSocketError)):
            await jp_ws_fetch("dw", "ray", raycluster, "ws", headers=headers)
    assert stand_in.seen == []


STRICT_SERVER = {
    "allow_unauthenticated_access": False,
    # pytest-jupyter adds jupyter_server_terminals, whose websocket handler draws the warning.
    "jpserver_extensions": {"jupyter_dw": True, "jupyter_server_terminals": False},
}


@pytest.mark.parametrize("server_options", [STRICT_SERVER], indirect=True)
async def test_a_strict_server_finds_every_method_authenticated(
    recwarn, proxy, raycluster, stand_in, jp_serverapp, jp_ws_fetch
):
    # recwarn was set up before the server: it saw the routes being registered.
    assert jp_serverapp.allow_unauthenticated_access is False
    assert [str(w.message) for w in recwarn if w.category is JupyterServerAuthWarning] == []

    for method, body in (("GET", None), ("HEAD", None), ("OPTIONS", None), ("PUT", b"")):
        refused = await proxy(
            f"{raycluster}/", method=method, body=body, headers={"Authorization": ""}
        )
        assert refused.code == 403, method
    with pytest.raises(HTTPClientError) as ws_refused:
        await jp_ws_fetch("dw", "ray", raycluster, "ws", headers={"Authorization": ""})
    assert ws_refused.value.code == 403
    assert stand_in.seen == []
    echo(await proxy(f"{raycluster}/api/jobs/"))


async def login_cookies(http_server_client, jp_base_url, token: str) -> dict[str, str]:
    """A browser session: the login cookie (from a token in the URL, as `jupyter server`
    prints it) and the ``_xsrf`` cookie a Jupyter page sets."""
    cookies: dict[str, str] = {}
    for path in (f"api/status?token={token}", "login"):
        response = await http_server_client.fetch(f"{jp_base_url}{path}")
        for header in response.headers.get_list("Set-Cookie"):
            cookies.update({k: m.value for k, m in SimpleCookie(header).items()})
    assert "_xsrf" in cookies and any(k.startswith("username-") for k in cookies), cookies
    return cookies


async def test_writes_from_a_cookie_session_need_the_xsrf_token(
    proxy, raycluster, stand_in, http_server_client, jp_base_url, jp_serverapp
):
    cookies = await login_cookies(
        http_server_client, jp_base_url, jp_serverapp.identity_provider.token
    )
    cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
    browser = {"Authorization": "", "Cookie": cookie}

    # Reads need no XSRF token (the session is enough).
    assert echo(await proxy(f"{raycluster}/api/jobs/", headers=browser))["method"] == "GET"
    assert len(stand_in.seen) == 1

    refused = await proxy(f"{raycluster}/api/jobs/", method="POST", body=b"{}", headers=browser)
    assert refused.code == 403
    assert "_xsrf" in error_json(refused)["error"]
    assert len(stand_in.seen) == 1  # nothing more reached the dashboard

    with_xsrf = {**browser, "X-XSRFToken": cookies["_xsrf"]}
    response = await proxy(f"{raycluster}/api/jobs/", method="POST", body=b"{}", headers=with_xsrf)
    assert echo(response)["method"] == "POST"
    assert len(stand_in.seen) == 2
    assert_no_jupyter_credentials(stand_in.seen[-1])


class DenyJupyterDW(Authorizer):
    """Allows everything except the ``jupyter_dw`` resource."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != AUTH_RESOURCE


class NoExecute(Authorizer):
    """Allows reading and writing, not ``execute`` (what a WebSocket needs)."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return action != "execute"


@pytest.mark.parametrize("server_options", [{"authorizer_class": DenyJupyterDW}], indirect=True)
async def test_requests_are_authorized_by_jupyter_server(proxy, raycluster, stand_in, jp_ws_fetch):
    for method, body in (("GET", None), ("POST", b"{}"), ("DELETE", None)):
        response = await proxy(f"{raycluster}/api/jobs/", method=method, body=body)
        assert response.code == 403
        assert AUTH_RESOURCE in error_json(response)["error"]
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("dw", "ray", raycluster, "ws")
    assert refused.value.code == 403
    assert stand_in.seen == []


@pytest.mark.parametrize("server_options", [{"authorizer_class": NoExecute}], indirect=True)
async def test_websockets_need_execute(proxy, raycluster, stand_in, jp_ws_fetch):
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("dw", "ray", raycluster, "ws")
    assert refused.value.code == 403
    assert stand_in.seen == []
    echo(await proxy(f"{raycluster}/api/jobs/"))  # plain reads are still allowed


# --------------------------------------------------------------------------------------------
# Which clusters
# --------------------------------------------------------------------------------------------


async def test_a_missing_raycluster_is_404(proxy, raycluster, stand_in, namespace, jp_ws_fetch):
    response = await proxy("no-such-cluster/api/jobs/")

    assert response.code == 404
    body = error_json(response)
    assert body["code"] == "raycluster_not_found"
    assert "no-such-cluster" in body["error"] and namespace in body["error"]
    assert body["hint"]
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("dw", "ray", "no-such-cluster", "ws")
    assert refused.value.code == 404
    assert stand_in.seen == []


@pytest.mark.parametrize("rules", [GET_RAYCLUSTERS, WATCH_RAYCLUSTERS], indirect=True)
async def test_only_existing_rayclusters_are_reached(proxy, raycluster, stand_in, namespace):
    assert echo(await proxy(f"{raycluster}/"))["uri"] == f"/{namespace}/{raycluster}/"
    missing = await proxy("other/")
    assert missing.code == 404
    assert error_json(missing)["code"] == "raycluster_not_found"
    assert [s.uri for s in stand_in.seen] == [f"/{namespace}/{raycluster}/"]


@pytest.mark.parametrize(
    "name", ["Dash", "1dash", "da_sh", "dash-", "d" * 54, "%64ash%2Fx", "%44ash", "da%20sh"]
)
async def test_a_bad_name_is_400(proxy, stand_in, name):
    response = await proxy(f"{name}/api/jobs/")

    assert response.code == 400
    assert error_json(response)["code"] == "invalid_name"
    assert stand_in.seen == []


@pytest.mark.parametrize("path", ["static/../../other/x", "%2e%2e/x", "a/.%2F..%5Cx", "./x"])
async def test_dot_segments_are_400(proxy, raycluster, stand_in, path):
    response = await proxy(f"{raycluster}/{path}")

    assert response.code == 400
    assert error_json(response)["code"] == "invalid_path"
    assert stand_in.seen == []


@pytest.mark.parametrize("rules", [[]], indirect=True)
async def test_kubernetes_403_names_the_permission(proxy, raycluster, stand_in):
    response = await proxy(f"{raycluster}/")

    assert response.code == 403
    body = error_json(response)
    assert body["denied"] == "get rayclusters.ray.io"
    assert "get rayclusters.ray.io" in body["error"]
    assert stand_in.seen == []


@pytest.mark.parametrize("dashboard_port", ["closed"], indirect=True)
async def test_an_unreachable_dashboard_is_502(proxy, raycluster, dashboard_port, jp_ws_fetch):
    response = await proxy(f"{raycluster}/api/jobs/")

    assert response.code == 502
    body = error_json(response)
    assert body["code"] == "dashboard_unreachable"
    assert f"127.0.0.1:{dashboard_port}" in body["reason"]
    assert body["hint"]
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("dw", "ray", raycluster, "ws")
    assert refused.value.code == 502


# --------------------------------------------------------------------------------------------
# WebSocket
# --------------------------------------------------------------------------------------------


async def test_websocket_messages_pass_both_ways(jp_ws_fetch, raycluster, stand_in, namespace):
    ws = await jp_ws_fetch(
        "dw", "ray", raycluster, "ws", params={"x": "1"}, subprotocols=["dashboard.v1", "other"]
    )

    assert ws.selected_subprotocol == "dashboard.v1"
    assert await ws.read_message() == "hello from the dashboard"
    await ws.write_message("ping")
    assert await ws.read_message() == "echo: ping"
    await ws.write_message(b"\x00\xff", binary=True)
    assert await ws.read_message() == b"echo: \x00\xff"
    [seen] = stand_in.seen
    assert seen.uri == f"/{namespace}/{raycluster}/ws?x=1"
    assert_no_jupyter_credentials(seen)

    # The browser closes: the dashboard's socket closes with the browser's code.
    ws.close(4001, "tab closed")
    await asyncio.wait_for(stand_in.socket_closed.wait(), EVENT_TIMEOUT)
    assert stand_in.socket_close_code == 4001


async def test_the_dashboard_closing_closes_the_browser_socket(jp_ws_fetch, raycluster):
    ws = await jp_ws_fetch("dw", "ray", raycluster, "ws")
    assert await ws.read_message() == "hello from the dashboard"

    await ws.write_message("close-me")

    assert await ws.read_message() is None
    assert (ws.close_code, ws.close_reason) == (4002, "bye")


async def test_a_browser_going_away_closes_the_dashboard_request(
    http_server_client, jp_base_url, jp_auth_header, raycluster, stand_in
):
    # A raw connection, so the test can drop it mid-response (as a closed tab does).
    port = http_server_client.get_http_port()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (
        f"GET {jp_base_url}dw/ray/{raycluster}/logs/hang HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\n"
        f"Authorization: {jp_auth_header['Authorization']}\r\n\r\n"
    )
    writer.write(request.encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"first,"), EVENT_TIMEOUT)
    assert head.startswith(b"HTTP/1.1 200 ")
    writer.close()

    # The stand-in is idle, waiting: only the proxy closing its request can end that.
    await asyncio.wait_for(stand_in.aborted.wait(), EVENT_TIMEOUT)


@pytest.mark.parametrize(("path", "status"), [("missing", 404), ("api/jobs/", 502)])
async def test_a_websocket_the_dashboard_refuses(jp_ws_fetch, raycluster, stand_in, path, status):
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("dw", "ray", raycluster, *path.split("/"))

    assert refused.value.code == status
    assert b"dashboard_refused" in refused.value.response.body
    assert len(stand_in.seen) == 1  # it did reach the dashboard, which said no
