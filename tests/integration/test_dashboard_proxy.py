"""The Ray dashboard proxy ``{base_url}dw/ray/<name>/`` on the real control plane.

RayClusters are real objects: the proxy asks the API server, as the workbench's service
account, whether the cluster exists. The dashboard is a stand-in tornado server on 127.0.0.1
(the KWOK nodes' pod and Service IPs are not real addresses), reached through
``ray_dashboard_url = "http://127.0.0.1:{port}/{namespace}/{name}"`` so that every request the
stand-in records also shows the template's substitution. The stand-in records everything it
receives: "nothing was proxied" is checked on that record, not assumed.

Requests reach the dashboard only on capability paths: ``proxy("<name>/<path>")`` first opens
``dw/ray/<name>/`` with the Jupyter token (which answers a redirect to
``dw/ray/<name>/~cap/<capability>/``), then sends the request there *without* Jupyter
credentials, as the sandboxed page does. The capability itself is tested in
test_dashboard_capability.py; the browser's side in tests/ui.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.utils import JupyterServerAuthWarning
from kubernetes import client, watch
from tornado import httputil, web
from tornado.httpclient import HTTPClientError, HTTPResponse
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port
from tornado.websocket import WebSocketError, WebSocketHandler
from traitlets import TraitError

from jupyter_dw.server.app import JupyterDW
from jupyter_dw.server.dashboard_capability import IDLE_TTL, READ, Target
from jupyter_dw.server.dashboard_proxy import DASHBOARD_SETTING, DashboardProxy
from jupyter_dw.server.dashboard_proxy.paths import SANDBOX_POLICY
from jupyter_dw.server.dashboard_proxy.rules import STORAGE_SHIM
from jupyter_dw.server.handlers import AUTH_RESOURCE
from tests.cluster.controlplane import free_port
from tests.cluster.fixtures import WAIT_TIMEOUT
from tests.integration.clusters_support import create_suspended_raycluster, suspended_raycluster
from tests.integration.log_capture import server_log

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
        elif last == "redirect-evil":
            self.redirect("https://evil.example/phish")
        elif last == "redirect-escape":
            self.redirect("../../../../../../api/kernels")
        elif last == "page":
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish(b"<!DOCTYPE html><html><head><title>dash</title></head><body>ok</body>")
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
            self.set_header("ETag", '"echo"')  # a header the proxy keeps: the stand-in answered
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
def dw_config(request: pytest.FixtureRequest, dashboard_port: int) -> dict[str, Any]:
    """The dashboard address template, aimed at the stand-in (plus a test's own settings)."""
    extra = getattr(request, "param", {})
    return {"ray_dashboard_url": TEMPLATE, "ray_dashboard_port": dashboard_port, **extra}


def delete_raycluster(kube: client.ApiClient, namespace: str, name: str) -> None:
    """Delete RayCluster ``name`` and wait until it is gone (finalizers included)."""
    custom = client.CustomObjectsApi(kube)
    custom.delete_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", name)
    listing = custom.list_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", field_selector=f"metadata.name={name}"
    )
    if not listing["items"]:
        return
    stream = watch.Watch()
    for event in stream.stream(
        custom.list_namespaced_custom_object,
        "ray.io",
        "v1",
        namespace,
        "rayclusters",
        field_selector=f"metadata.name={name}",
        resource_version=listing["metadata"]["resourceVersion"],
        timeout_seconds=WAIT_TIMEOUT,
    ):
        if event["type"] == "DELETED":
            stream.stop()
            return
    raise TimeoutError(f"RayCluster {name} was not deleted within {WAIT_TIMEOUT}s")


@pytest.fixture
def raycluster(kube: client.ApiClient, namespace: str) -> str:
    """A RayCluster named ``dash`` in the test namespace."""
    create_suspended_raycluster(kube, namespace, CLUSTER)
    return CLUSTER


@pytest.fixture
def enter(http_server_client, jp_base_url, jp_auth_header):
    """``enter("<name>/<raw path and query>", ...)``: a request to the entry route (where a
    capability is issued), Jupyter-token authenticated unless ``headers`` sets
    Authorization; not following redirects, errors returned."""

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


@pytest.fixture
def capability_path(enter):
    """``await capability_path(name)``: ``{base_url}dw/ray/<name>/~cap/<capability>/``, as the
    entry route redirects a token-authenticated GET."""

    async def get(name: str) -> str:
        response = await enter(f"{name}/")
        assert response.code == 302, (response.code, response.body)
        location = response.headers["Location"]
        assert location.endswith("/"), location
        return location

    return get


@pytest.fixture
def proxy(http_server_client, enter):
    """``proxy("<name>/<raw path and query>", ...)``: a request on the capability path of
    ``<name>``, the path exactly as given (jp_fetch would re-encode it), with no Jupyter
    credentials unless ``headers`` adds some. When the entry route refuses to issue a
    capability (bad name, no such cluster, ...), that answer is returned."""

    async def fetch(path: str, **kwargs: Any) -> HTTPResponse:
        name, _, rest = path.partition("/")
        entry = await enter(f"{name}/")
        if entry.code != 302:
            return entry
        return await http_server_client.fetch(
            entry.headers["Location"] + rest,
            headers=kwargs.pop("headers", {}),
            raise_error=False,
            follow_redirects=False,
            request_timeout=WAIT_TIMEOUT,
            **kwargs,
        )

    return fetch


@pytest.fixture
def dashboard(jp_serverapp) -> DashboardProxy:
    """The server's DashboardProxy (its capabilities and its cache of found clusters)."""
    return jp_serverapp.web_app.settings[DASHBOARD_SETTING]


def ws_parts(location: str, jp_base_url: str, *path: str) -> list[str]:
    """``jp_ws_fetch`` path parts for ``path`` under a capability ``location``."""
    return [*location[len(jp_base_url) :].strip("/").split("/"), *path]


def assert_sandboxed(response: HTTPResponse) -> None:
    """The response carries the sandbox (without allow-same-origin) and no Referer leaks."""
    policies = response.headers.get_list("Content-Security-Policy")
    assert any(SANDBOX_POLICY in p for p in policies), policies
    assert not any("allow-same-origin" in p for p in policies), policies
    assert response.headers["Referrer-Policy"] == "no-referrer"


def error_json(response: HTTPResponse) -> dict[str, Any]:
    assert response.headers["Content-Type"].startswith("application/json"), response.headers
    return json.loads(response.body)


def echo(response: HTTPResponse) -> dict[str, Any]:
    assert response.code == 200, (response.code, response.body)
    assert response.headers.get("ETag") == '"echo"'
    return json.loads(response.body)


def assert_no_jupyter_credentials(seen: Seen) -> None:
    for header in ("Authorization", "Cookie", "X-XSRFToken", "X-CSRFToken", "Referer"):
        assert header not in seen.headers, (header, dict(seen.headers))
    assert "token=" not in seen.uri and "_xsrf=" not in seen.uri
    assert "~cap" not in seen.uri


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


def test_by_default_the_target_is_what_kuberay_reports():
    app = JupyterDW()
    assert app.ray_dashboard_url == ""
    assert app.ray_dashboard_proxy is True
    proxy = DashboardProxy(app.ray_dashboard_url, app.ray_dashboard_port)
    reported = {
        "metadata": {"name": "my-ray"},
        "status": {"head": {"serviceName": "my-ray-head-x1"}, "endpoints": {"dashboard": "8300"}},
    }
    assert proxy.base_url("my-ray", "team-a", reported) == "http://my-ray-head-x1.team-a.svc:8300"
    # Before KubeRay reports anything: its default head Service name and the Ray default port.
    assert (
        proxy.base_url("my-ray", "team-a", {"metadata": {"name": "my-ray"}})
        == "http://my-ray-head-svc.team-a.svc:8265"
    )


@pytest.mark.parametrize(
    "status",
    [
        {"head": {"serviceName": "evil.example.com#"}},
        {"head": {"serviceName": "a/b"}},
        {"head": {"serviceName": "x"}, "endpoints": {"dashboard": "70000"}},
    ],
)
def test_a_reported_address_that_is_not_a_service_is_refused(status):
    from jupyter_dw.server.dashboard_proxy import DashboardError

    with pytest.raises(DashboardError) as refused:
        DashboardProxy().base_url(
            "dash", "team-a", {"metadata": {"name": "dash"}, "status": status}
        )
    assert refused.value.code == "dashboard_unknown"


def test_a_configured_template_wins_over_the_status():
    proxy = DashboardProxy("http://gw.example/{namespace}/{name}", 8265)
    reported = {"status": {"head": {"serviceName": "elsewhere"}}}
    assert proxy.base_url("dash", "team-a", reported) == "http://gw.example/team-a/dash"


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


@pytest.mark.parametrize("dw_config", [{"ray_dashboard_proxy": False}], indirect=True)
async def test_a_proxy_turned_off_answers_404(enter, raycluster, http_server_client, jp_base_url):
    for path in (f"{raycluster}/", f"{raycluster}/~cap/x.y/api/jobs/", raycluster):
        for method, body in (("GET", None), ("POST", b"{}")):
            response = await enter(path, method=method, body=body)
            assert response.code == 404, (path, method, response.code)
            assert error_json(response)["code"] == "dashboard_proxy_disabled"
            assert_sandboxed(response)
    anonymous = await enter(f"{raycluster}/", headers={"Authorization": ""})
    assert anonymous.code == 302  # to the login page: Jupyter's auth still comes first
    assert anonymous.headers["Location"].startswith(f"{jp_base_url}login?next=")


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
            "Authorization": f"token {token}",
            "Referer": "http://127.0.0.1/somewhere",
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


async def test_a_k8s_auth_cluster_gets_the_workbench_token_upstream_only(
    proxy, kube, namespace, stand_in, identity
):
    """``enableK8sTokenAuth``: Ray asks the API server about the caller's own Kubernetes
    token, so the proxy sends the identity this server acts as (the workbench's service
    account token), added upstream and never shown to the page."""
    body = suspended_raycluster("k8sauth")
    body["spec"]["authOptions"] = {"mode": "token", "enableK8sTokenAuth": True}
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", body
    )
    response = await proxy("k8sauth/api/jobs/", headers={"Authorization": "Bearer from-page"})

    assert echo(response)["uri"] == f"/{namespace}/k8sauth/api/jobs/"
    [seen] = stand_in.seen
    assert seen.headers["Authorization"] == f"Bearer {identity.token}"
    assert identity.token not in str(response.headers) + response.body.decode()


async def test_the_entry_route_issues_a_capability_and_keeps_path_and_query(
    enter, raycluster, stand_in, jp_base_url, jp_serverapp
):
    token = jp_serverapp.identity_provider.token
    response = await enter(f"{raycluster}/api/jobs/a%2Fb?x=1&token={token}&y=2")

    assert response.code == 302
    location = response.headers["Location"]
    prefix = f"{jp_base_url}dw/ray/{raycluster}/~cap/"
    assert location.startswith(prefix), location
    capability, _, rest = location[len(prefix) :].partition("/")
    assert capability and token not in location
    assert rest == "api/jobs/a%2Fb?x=1&y=2"
    assert_sandboxed(response)
    assert stand_in.seen == []  # issuing a capability reaches nothing


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
async def test_other_methods_on_the_entry_route_keep_their_method(
    enter, raycluster, stand_in, method
):
    body = b"{}" if method in ("POST", "PUT", "PATCH") else None
    response = await enter(f"{raycluster}/api/jobs/", method=method, body=body)

    assert response.code == 307
    assert "/~cap/" in response.headers["Location"]
    assert stand_in.seen == []


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
    # No cookie, no token, no XSRF token: the sandboxed page has none, the capability is it.
    response = await proxy(f"{raycluster}/api/jobs/", method=method, body=body)

    answer = echo(response)
    assert answer["method"] == method
    [seen] = stand_in.seen
    assert (seen.method, seen.body) == (method, body or b"")
    assert_no_jupyter_credentials(seen)
    assert response.headers["Access-Control-Allow-Origin"] == "null"
    assert "Access-Control-Allow-Credentials" not in response.headers


async def test_head_passes_through_without_a_body(proxy, raycluster, stand_in):
    response = await proxy(f"{raycluster}/api/jobs/", method="HEAD")

    assert response.code == 200
    assert response.headers["ETag"] == '"echo"'
    assert response.body == b""
    assert int(response.headers["Content-Length"]) > 0  # the dashboard's, for its GET body
    assert [s.method for s in stand_in.seen] == ["HEAD"]


async def test_a_cors_preflight_is_answered_on_the_capability_path_only(
    proxy, enter, raycluster, stand_in
):
    preflight = {
        "Origin": "null",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, x-ray",
    }
    response = await proxy(f"{raycluster}/api/jobs/", method="OPTIONS", headers=preflight)

    assert response.code == 204
    assert response.headers["Access-Control-Allow-Origin"] == "null"
    assert "POST" in response.headers["Access-Control-Allow-Methods"]
    assert response.headers["Access-Control-Allow-Headers"] == "content-type, x-ray"
    assert "Access-Control-Allow-Credentials" not in response.headers
    assert_sandboxed(response)
    assert stand_in.seen == []
    # The entry route, the Jupyter API and the no-slash redirect answer no CORS to the page.
    for path in (f"{raycluster}/api/jobs/", raycluster):
        entry = await enter(path, headers={"Origin": "null"})
        assert "Access-Control-Allow-Origin" not in entry.headers


async def test_status_and_headers_come_back_filtered(proxy, raycluster, stand_in):
    response = await proxy(f"{raycluster}/teapot")

    assert response.code == 418
    assert response.body == b"short and stout"
    assert response.headers["Content-Type"] == "text/plain"
    assert "X-Stand-In" not in response.headers  # response headers: an allow-list
    assert "Proxy-Authenticate" not in response.headers
    # Our CORS answer for the sandboxed page, never the dashboard's.
    assert response.headers.get_list("Access-Control-Allow-Origin") == ["null"]
    assert "Access-Control-Allow-Credentials" not in response.headers
    assert not response.headers.get_list("Set-Cookie")
    # The dashboard's CSP is added to ours, which keeps the sandbox.
    policies = response.headers.get_list("Content-Security-Policy")
    assert "img-src 'self'" in policies
    assert any("frame-ancestors" in p and SANDBOX_POLICY in p for p in policies), policies
    assert_sandboxed(response)
    assert len(stand_in.seen) == 1


async def test_html_pages_get_the_storage_shim(proxy, raycluster):
    page = await proxy(f"{raycluster}/app/page", headers={"Sec-Fetch-Dest": "document"})

    assert page.code == 200
    assert page.body == (
        b"<!DOCTYPE html>" + STORAGE_SHIM + b"<html><head><title>dash</title></head><body>ok</body>"
    )
    assert int(page.headers.get("Content-Length", len(page.body))) == len(page.body)
    assert_sandboxed(page)
    json_answer = await proxy(f"{raycluster}/api/jobs/")
    assert STORAGE_SHIM not in json_answer.body


@pytest.mark.parametrize(
    ("route", "location"),
    [
        ("redirect-absolute", "app/landing?x=1"),
        ("redirect-root", "app/landing?x=1"),
        ("redirect-relative", "app/landing?x=1"),
    ],
)
async def test_dashboard_redirects_stay_under_the_capability_path(
    proxy, capability_path, raycluster, route, location
):
    response = await proxy(f"{raycluster}/app/{route}")

    assert response.code == 302
    prefix = response.effective_url[: response.effective_url.index("/~cap/")]
    capability = response.effective_url[len(prefix) + len("/~cap/") :].split("/")[0]
    assert response.headers["Location"].endswith(f"/~cap/{capability}/{location}")
    assert response.headers["Location"].startswith(urlsplit(prefix).path)
    assert_sandboxed(response)


@pytest.mark.parametrize("route", ["redirect-evil", "redirect-escape"])
async def test_dashboard_redirects_out_of_the_proxy_are_refused(proxy, raycluster, route):
    response = await proxy(f"{raycluster}/app/{route}")

    assert response.code == 502
    assert "Location" not in response.headers
    assert error_json(response)["code"] == "dashboard_redirect_refused"
    assert_sandboxed(response)


async def test_response_bodies_are_streamed(proxy, raycluster, stand_in):
    chunks: list[bytes] = []

    def on_chunk(chunk: bytes) -> None:
        chunks.append(chunk)
        stand_in.first_chunk_read.set()  # lets the stand-in send the rest

    response = await proxy(f"{raycluster}/logs/stream", streaming_callback=on_chunk)

    assert response.code == 200
    assert b"".join(chunks) == b"first,second"


async def test_no_slash_redirects_to_the_dashboard_root(enter, raycluster, jp_base_url, stand_in):
    response = await enter(f"{raycluster}?a=1")

    assert response.code == 302
    assert response.headers["Location"] == f"{jp_base_url}dw/ray/{raycluster}/?a=1"
    assert_sandboxed(response)
    assert stand_in.seen == []


# --------------------------------------------------------------------------------------------
# The sandbox on every answer
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dashboard_port", ["closed"], indirect=True)
async def test_errors_of_the_proxy_are_sandboxed_too(
    proxy, enter, raycluster, capability_path, http_server_client
):
    unreachable = await proxy(f"{raycluster}/api/jobs/")
    assert unreachable.code == 502
    assert_sandboxed(unreachable)
    for path in ("Bad_Name/", "no-such-cluster/", f"{raycluster}/a/../x"):
        refused = await enter(path)
        assert refused.code in (400, 404), path
        assert_sandboxed(refused)
    location = await capability_path(raycluster)
    forged = location.replace("/~cap/", "/~cap/x")
    response = await http_server_client.fetch(forged, raise_error=False)
    assert response.code == 403
    assert_sandboxed(response)


async def test_the_websocket_handshake_is_sandboxed(
    jp_ws_fetch, raycluster, capability_path, jp_base_url
):
    location = await capability_path(raycluster)
    ws = await jp_ws_fetch(*ws_parts(location, jp_base_url, "ws"), headers={"Authorization": ""})

    policies = ws.headers.get_list("Content-Security-Policy")
    assert any(SANDBOX_POLICY in p for p in policies), policies
    assert await ws.read_message() == "hello from the dashboard"
    ws.close()


# --------------------------------------------------------------------------------------------
# Authentication, XSRF, authorization
# --------------------------------------------------------------------------------------------


async def test_unauthenticated_requests_are_refused(
    enter, raycluster, stand_in, jp_ws_fetch, jp_base_url
):
    for auth in ("", "token wrong-token"):
        headers = {"Authorization": auth}
        page = await enter(f"{raycluster}/", headers=headers)
        assert page.code == 302  # a browser goes to the login page, as for any Jupyter page
        assert page.headers["Location"].startswith(f"{jp_base_url}login?next=")
        assert (
            await enter(f"{raycluster}/x", method="POST", body=b"", headers=headers)
        ).code == 403
        no_slash = await enter(raycluster, headers=headers)
        assert no_slash.headers["Location"].startswith(f"{jp_base_url}login?next=")
        with pytest.raises((HTTPClientError, WebSocketError)):
            await jp_ws_fetch("dw", "ray", raycluster, "ws", headers=headers)
    assert stand_in.seen == []


async def test_capability_paths_need_a_valid_capability(
    enter, raycluster, stand_in, http_server_client, jp_base_url, jp_ws_fetch
):
    root = f"{jp_base_url}dw/ray/{raycluster}/~cap"
    for capability in ("x", "x.y", "AAAA.BBBB", "%41.%42", "a..b"):
        for method, body in (("GET", None), ("POST", b"{}")):
            response = await http_server_client.fetch(
                f"{root}/{capability}/api/jobs/", method=method, body=body, raise_error=False
            )
            assert response.code == 403, (capability, method)
            assert error_json(response)["code"] == "invalid_capability"
        with pytest.raises(HTTPClientError) as refused:
            await jp_ws_fetch("dw", "ray", raycluster, "~cap", capability, "ws")
        assert refused.value.code == 403
    # No capability at all: the entry route sees a '~cap' path and refuses it.
    empty = await enter(f"{raycluster}/~cap/")
    assert empty.code == 403
    assert error_json(empty)["code"] == "invalid_capability"
    assert stand_in.seen == []


STRICT_SERVER = {
    "allow_unauthenticated_access": False,
    # pytest-jupyter adds jupyter_server_terminals, whose websocket handler draws the warning.
    "jpserver_extensions": {"jupyter_dw": True, "jupyter_server_terminals": False},
}


@pytest.mark.parametrize("server_options", [STRICT_SERVER], indirect=True)
async def test_a_strict_server_finds_every_method_authenticated(
    recwarn, enter, proxy, raycluster, stand_in, jp_serverapp, jp_ws_fetch
):
    # recwarn was set up before the server: it saw the routes being registered.
    assert jp_serverapp.allow_unauthenticated_access is False
    assert [str(w.message) for w in recwarn if w.category is JupyterServerAuthWarning] == []

    for method, body in (("HEAD", None), ("OPTIONS", None), ("PUT", b"")):
        refused = await enter(
            f"{raycluster}/", method=method, body=body, headers={"Authorization": ""}
        )
        assert refused.code in (302, 403), method
        assert "/~cap/" not in refused.headers.get("Location", "")
    with pytest.raises(HTTPClientError):
        await jp_ws_fetch("dw", "ray", raycluster, "ws", headers={"Authorization": ""})
    assert stand_in.seen == []
    # The capability path works without Jupyter credentials on a strict server too.
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


def cookie_header(cookies: dict[str, str]) -> str:
    return "; ".join(f"{k}={v}" for k, v in cookies.items())


async def test_entry_writes_from_a_cookie_session_need_the_xsrf_token(
    enter, raycluster, stand_in, http_server_client, jp_base_url, jp_serverapp
):
    cookies = await login_cookies(
        http_server_client, jp_base_url, jp_serverapp.identity_provider.token
    )
    browser = {"Authorization": "", "Cookie": cookie_header(cookies)}

    # A navigation needs no XSRF token (the session is enough).
    assert (await enter(f"{raycluster}/api/jobs/", headers=browser)).code == 302

    refused = await enter(f"{raycluster}/api/jobs/", method="POST", body=b"{}", headers=browser)
    assert refused.code == 403
    assert "_xsrf" in error_json(refused)["error"]

    with_xsrf = {**browser, "X-XSRFToken": cookies["_xsrf"]}
    response = await enter(f"{raycluster}/api/jobs/", method="POST", body=b"{}", headers=with_xsrf)
    assert response.code == 307
    assert stand_in.seen == []


class DenyJupyterDW(Authorizer):
    """Allows everything except the ``jupyter_dw`` resource."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != AUTH_RESOURCE


class NoExecute(Authorizer):
    """Allows reading and writing, not ``execute`` (what a WebSocket needs)."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return action != "execute"


class ReadOnly(Authorizer):
    """Allows reading only."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return action == "read"


@pytest.mark.parametrize("server_options", [{"authorizer_class": DenyJupyterDW}], indirect=True)
async def test_no_capability_without_jupyter_authorization(
    enter, raycluster, stand_in, jp_ws_fetch
):
    for method, body in (("GET", None), ("POST", b"{}"), ("DELETE", None)):
        response = await enter(f"{raycluster}/api/jobs/", method=method, body=body)
        assert response.code == 403
        assert AUTH_RESOURCE in error_json(response)["error"]
        assert "Location" not in response.headers
    assert stand_in.seen == []


@pytest.mark.parametrize("server_options", [{"authorizer_class": NoExecute}], indirect=True)
async def test_websockets_need_execute(
    proxy, raycluster, stand_in, jp_ws_fetch, capability_path, jp_base_url
):
    location = await capability_path(raycluster)
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch(*ws_parts(location, jp_base_url, "ws"))
    assert refused.value.code == 403
    assert b"capability_not_granted" in refused.value.response.body
    assert stand_in.seen == []
    echo(await proxy(f"{raycluster}/api/jobs/"))  # plain reads are still allowed


@pytest.mark.parametrize("server_options", [{"authorizer_class": ReadOnly}], indirect=True)
async def test_writes_need_write(proxy, raycluster, stand_in):
    refused = await proxy(f"{raycluster}/api/jobs/", method="POST", body=b"{}")
    assert refused.code == 403
    assert error_json(refused)["code"] == "capability_not_granted"
    assert stand_in.seen == []
    echo(await proxy(f"{raycluster}/api/jobs/"))


# --------------------------------------------------------------------------------------------
# The capability: bound to its cluster, its user's session, and time
# --------------------------------------------------------------------------------------------


async def test_a_capability_opens_only_its_own_cluster(
    kube, namespace, raycluster, capability_path, http_server_client, stand_in, jp_base_url
):
    create_suspended_raycluster(kube, namespace, "dash2")
    location = await capability_path(raycluster)

    other = location.replace(f"/dw/ray/{raycluster}/", "/dw/ray/dash2/")
    response = await http_server_client.fetch(other + "api/jobs/", raise_error=False)
    assert response.code == 403
    assert error_json(response)["code"] == "invalid_capability"
    assert stand_in.seen == []


async def test_a_capability_dies_with_its_cluster(
    kube, namespace, raycluster, capability_path, http_server_client, dashboard, stand_in
):
    location = await capability_path(raycluster)
    delete_raycluster(kube, namespace, raycluster)
    create_suspended_raycluster(kube, namespace, raycluster)
    dashboard.exists_ttl = 0  # look the cluster up again now, not after the cache's seconds
    dashboard._found.clear()

    response = await http_server_client.fetch(location + "api/jobs/", raise_error=False)
    assert response.code == 403
    assert error_json(response)["code"] == "invalid_capability"
    assert stand_in.seen == []


def raycluster_uid(kube: client.ApiClient, namespace: str, name: str) -> str:
    custom = client.CustomObjectsApi(kube)
    obj = custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", name)
    return obj["metadata"]["uid"]


async def test_an_expired_capability_is_refused_and_a_navigation_renews_it(
    kube, raycluster, namespace, dashboard, http_server_client, jp_base_url, stand_in
):
    uid = raycluster_uid(kube, namespace, raycluster)
    stale = dashboard.capabilities.mint(
        Target(raycluster, namespace), uid, "someone", [READ], now=time.time() - 2 * IDLE_TTL
    )
    url = f"{jp_base_url}dw/ray/{raycluster}/~cap/{stale}/api/jobs/?x=1"

    fetched = await http_server_client.fetch(url, raise_error=False, follow_redirects=False)
    assert fetched.code == 403
    assert error_json(fetched)["code"] == "capability_expired"
    # A page reloaded after its link expired goes back through Jupyter's login.
    navigation = await http_server_client.fetch(
        url,
        headers={"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"},
        raise_error=False,
        follow_redirects=False,
    )
    assert navigation.code == 302
    assert navigation.headers["Location"] == f"{jp_base_url}dw/ray/{raycluster}/api/jobs/?x=1"
    assert stand_in.seen == []

    fresh = dashboard.capabilities.mint(Target(raycluster, namespace), uid, "someone", [READ])
    echo(
        await http_server_client.fetch(
            url.replace(stale, fresh), raise_error=False, follow_redirects=False
        )
    )


async def test_a_tampered_capability_is_refused(
    raycluster, capability_path, http_server_client, stand_in
):
    location = await capability_path(raycluster)
    capability = location.rstrip("/").rsplit("/", 1)[1]
    payload, mac = capability.split(".")
    for forged in (
        f"{payload[:-1]}{'A' if payload[-1] != 'A' else 'B'}.{mac}",
        f"{payload}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}",
        f"{payload}.{mac}{mac}",
        f"{payload}.",
    ):
        response = await http_server_client.fetch(
            location.replace(capability, forged) + "api/jobs/", raise_error=False
        )
        assert response.code == 403, forged
        assert error_json(response)["code"] == "invalid_capability"
    assert stand_in.seen == []


async def test_a_capability_belongs_to_its_browser_session(
    enter, raycluster, stand_in, http_server_client, jp_base_url, jp_serverapp
):
    token = jp_serverapp.identity_provider.token
    alice = await login_cookies(http_server_client, jp_base_url, token)
    bob = await login_cookies(http_server_client, jp_base_url, token)
    entry = await enter(
        f"{raycluster}/", headers={"Authorization": "", "Cookie": cookie_header(alice)}
    )
    assert entry.code == 302
    location = entry.headers["Location"]

    async def get(cookies: dict[str, str] | None) -> HTTPResponse:
        headers = {"Cookie": cookie_header(cookies)} if cookies else {}
        return await http_server_client.fetch(
            location + "api/jobs/", headers=headers, raise_error=False
        )

    echo(await get(alice))  # the session that opened it
    echo(await get(None))  # the sandboxed page, which sends no cookie
    other = await get(bob)  # the link pasted into another user's session
    assert other.code == 403
    assert error_json(other)["code"] == "capability_user_mismatch"
    assert len(stand_in.seen) == 2


async def test_a_capability_is_not_a_jupyter_credential(
    raycluster, capability_path, http_server_client, jp_base_url, jp_serverapp
):
    location = await capability_path(raycluster)
    capability = location.rstrip("/").rsplit("/", 1)[1]
    kernels_before = list(jp_serverapp.kernel_manager.list_kernel_ids())
    attempts = [
        ("GET", "api/kernels", None),
        ("POST", "api/kernels", b"{}"),
        ("PUT", "api/contents/owned.txt", b'{"type": "file", "format": "text", "content": "x"}'),
        ("GET", "api/contents", None),
        ("GET", "dw/api/clusters", None),
        ("DELETE", f"dw/api/clusters/{raycluster}", None),
        ("GET", f"dw/ray/{raycluster}/", None),
    ]
    for method, path, body in attempts:
        for how in ("header", "query"):
            headers = {"Authorization": f"token {capability}"} if how == "header" else {}
            query = f"?token={capability}" if how == "query" else ""
            response = await http_server_client.fetch(
                f"{jp_base_url}{path}{query}",
                method=method,
                body=body,
                headers=headers,
                raise_error=False,
                follow_redirects=False,
            )
            if method in ("GET", "HEAD"):
                # Jupyter sends a browser without credentials to its login page.
                assert response.code in (302, 403), (method, path, how, response.code)
                assert "/login" in response.headers.get("Location", "/login"), path
            else:
                assert response.code == 403, (method, path, how, response.code)
    assert list(jp_serverapp.kernel_manager.list_kernel_ids()) == kernels_before
    assert not (Path(jp_serverapp.root_dir) / "owned.txt").exists()


# --------------------------------------------------------------------------------------------
# Which clusters
# --------------------------------------------------------------------------------------------


async def test_a_missing_raycluster_is_404(enter, raycluster, stand_in, namespace, jp_ws_fetch):
    response = await enter("no-such-cluster/api/jobs/")

    assert response.code == 404
    body = error_json(response)
    assert body["code"] == "raycluster_not_found"
    assert "no-such-cluster" in body["error"] and namespace in body["error"]
    assert body["hint"]
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
async def test_a_bad_name_is_400(enter, stand_in, name):
    response = await enter(f"{name}/api/jobs/")

    assert response.code == 400
    assert error_json(response)["code"] == "invalid_name"
    assert stand_in.seen == []


@pytest.mark.parametrize("path", ["static/../../other/x", "%2e%2e/x", "a/.%2F..%5Cx", "./x"])
async def test_dot_segments_are_400(proxy, enter, raycluster, stand_in, path):
    for response in (await proxy(f"{raycluster}/{path}"), await enter(f"{raycluster}/{path}")):
        assert response.code == 400
        assert error_json(response)["code"] == "invalid_path"
    assert stand_in.seen == []


@pytest.mark.parametrize("rules", [[]], indirect=True)
async def test_kubernetes_403_names_the_permission(enter, raycluster, stand_in):
    response = await enter(f"{raycluster}/")

    assert response.code == 403
    body = error_json(response)
    assert body["denied"] == "get rayclusters.ray.io"
    assert "get rayclusters.ray.io" in body["error"]
    assert stand_in.seen == []


@pytest.mark.parametrize("dashboard_port", ["closed"], indirect=True)
async def test_an_unreachable_dashboard_is_502(
    proxy, raycluster, dashboard_port, jp_ws_fetch, capability_path, jp_base_url
):
    response = await proxy(f"{raycluster}/api/jobs/")

    assert response.code == 502
    body = error_json(response)
    assert body["code"] == "dashboard_unreachable"
    assert f"127.0.0.1:{dashboard_port}" in body["reason"]
    assert "~cap" not in body["reason"]
    assert body["hint"]
    location = await capability_path(raycluster)
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch(*ws_parts(location, jp_base_url, "ws"))
    assert refused.value.code == 502


# --------------------------------------------------------------------------------------------
# WebSocket
# --------------------------------------------------------------------------------------------


@pytest.fixture
def dashboard_ws(jp_ws_fetch, capability_path, jp_base_url):
    """``await dashboard_ws(name, *path, **kwargs)``: a WebSocket on the capability path,
    without Jupyter credentials."""

    async def connect(name: str, *path: str, **kwargs: Any):
        location = await capability_path(name)
        headers = {"Authorization": "", **kwargs.pop("headers", {})}
        return await jp_ws_fetch(*ws_parts(location, jp_base_url, *path), headers=headers, **kwargs)

    return connect


async def test_websocket_messages_pass_both_ways(dashboard_ws, raycluster, stand_in, namespace):
    ws = await dashboard_ws(
        raycluster, "ws", params={"x": "1"}, subprotocols=["dashboard.v1", "other"]
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


@pytest.mark.parametrize(("origin", "allowed"), [("null", True), ("https://evil.example", False)])
async def test_websocket_origins(dashboard_ws, raycluster, stand_in, origin, allowed):
    if allowed:
        ws = await dashboard_ws(raycluster, "ws", headers={"Origin": origin})
        assert await ws.read_message() == "hello from the dashboard"
        ws.close()
        return
    with pytest.raises(HTTPClientError) as refused:
        await dashboard_ws(raycluster, "ws", headers={"Origin": origin})
    assert refused.value.code == 403
    assert stand_in.seen == []


async def test_the_dashboard_closing_closes_the_browser_socket(dashboard_ws, raycluster):
    ws = await dashboard_ws(raycluster, "ws")
    assert await ws.read_message() == "hello from the dashboard"

    await ws.write_message("close-me")

    assert await ws.read_message() is None
    assert (ws.close_code, ws.close_reason) == (4002, "bye")


async def test_a_browser_going_away_closes_the_dashboard_request(
    http_server_client, capability_path, raycluster, stand_in
):
    location = await capability_path(raycluster)
    # A raw connection, so the test can drop it mid-response (as a closed tab does).
    port = http_server_client.get_http_port()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = f"GET {location}logs/hang HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    writer.write(request.encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"first,"), EVENT_TIMEOUT)
    assert head.startswith(b"HTTP/1.1 200 ")
    writer.close()

    # The stand-in is idle, waiting: only the proxy closing its request can end that.
    await asyncio.wait_for(stand_in.aborted.wait(), EVENT_TIMEOUT)


@pytest.mark.parametrize(("path", "status"), [("missing", 404), ("api/jobs/", 502)])
async def test_a_websocket_the_dashboard_refuses(dashboard_ws, raycluster, stand_in, path, status):
    with pytest.raises(HTTPClientError) as refused:
        await dashboard_ws(raycluster, *path.split("/"))

    assert refused.value.code == status
    assert b"dashboard_refused" in refused.value.response.body
    assert len(stand_in.seen) == 1  # it did reach the dashboard, which said no


# --------------------------------------------------------------------------------------------
# Logs
# --------------------------------------------------------------------------------------------


async def test_no_token_or_capability_reaches_the_log(
    enter,
    proxy,
    capability_path,
    dashboard_ws,
    raycluster,
    namespace,
    identity,
    kube,
    dashboard,
    http_server_client,
    jp_serverapp,
    jp_base_url,
):
    token = jp_serverapp.identity_provider.token
    with server_log(jp_serverapp.log) as lines:
        cookies = await login_cookies(http_server_client, jp_base_url, token)
        locations = []
        for path in (f"{raycluster}/?token={token}", f"{raycluster}/api/jobs/"):
            entry = await enter(path)
            locations.append(entry.headers["Location"])
        location = await capability_path(raycluster)
        locations.append(location)
        cap = location.rstrip("/").rsplit("/", 1)[1]
        # Successes, client errors, dashboard errors, refusals, sockets, expired and forged
        # capabilities: every log level the server uses.
        await proxy(f"{raycluster}/api/jobs/?token={token}")
        await proxy(f"{raycluster}/api/jobs/", method="POST", body=b"{}")
        await proxy(f"{raycluster}/missing")
        await proxy(f"{raycluster}/app/redirect-evil")
        await proxy(f"{raycluster}/a/../../x")
        ws = await dashboard_ws(raycluster, "ws")
        await ws.read_message()
        ws.close()
        # (A Referer holding the capability only on our routes: elsewhere jupyter_server
        # logs it, and browsers send none, as test_dashboard_browser proves.)
        for url, referer in (
            (location + "api/jobs/", location),
            (location.replace(cap, cap[:-1] + ("A" if cap[-1] != "A" else "B")) + "x", location),
            (location.replace(f"/dw/ray/{raycluster}/", "/dw/ray/dash2/") + "x", location),
            (f"{jp_base_url}api/kernels?token={cap}", jp_base_url),
        ):
            await http_server_client.fetch(
                url,
                headers={"Cookie": cookie_header(cookies), "Referer": referer},
                raise_error=False,
                follow_redirects=False,
            )
        uid = raycluster_uid(kube, namespace, raycluster)
        stale = dashboard.capabilities.mint(
            Target(raycluster, namespace), uid, "x", [READ], now=time.time() - 2 * IDLE_TTL
        )
        stale_url = location.replace(cap, stale)
        locations.append(stale_url)
        await http_server_client.fetch(stale_url + "x", raise_error=False)
        await http_server_client.fetch(
            stale_url + "x",
            headers={"Sec-Fetch-Mode": "navigate"},
            raise_error=False,
            follow_redirects=False,
        )

    log = "\n".join(lines)
    assert "dw/ray/" in log and "[capability]" in log  # the requests were logged, masked
    secret = dashboard.capabilities._secret
    capabilities = [u.split("/~cap/")[1].split("/")[0] for u in locations]
    assert len(set(capabilities)) >= 3
    for name, value in [
        ("Jupyter token", token),
        ("service-account token", identity.token),
        ("capability secret (hex)", secret.hex()),
        ("capability secret (base64)", base64.urlsafe_b64encode(secret).decode().rstrip("=")),
        *(("capability", c) for c in capabilities),
        *(("capability payload", c.split(".")[0]) for c in capabilities),
        *(("capability MAC", c.split(".")[1]) for c in capabilities),
        *((f"cookie {k}", v) for k, v in cookies.items()),
    ]:
        assert value not in log, f"the {name} is in the server log"
