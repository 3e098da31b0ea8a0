"""The Ray dashboard of a RayCluster, proxied through the Jupyter server.

``{base_url}dw/ray/<name>/<path>`` forwards HTTP (every method) and WebSocket upgrades to the
dashboard of RayCluster ``<name>`` in the session's namespace, so the dashboard opens in the
browser without a Route, an Ingress or another login. ``{base_url}dw/ray/<name>`` redirects to
the slash form, because the dashboard's pages use relative URLs.

Where requests go: only to ``JupyterDW.ray_dashboard_url``, a template with ``{name}``,
``{namespace}`` and ``{port}`` (default ``http://{name}-head-svc.{namespace}.svc:{port}``,
KubeRay's head Service, port ``JupyterDW.ray_dashboard_port`` = 8265). ``<name>`` must be a
DNS-1035 label naming a RayCluster that exists in the namespace; the browser never chooses a
host.

Security:

- every request is authenticated (``@web.authenticated``) and authorized (``@authorized`` on
  the ``jupyter_dw`` resource; a WebSocket upgrade also needs ``execute``, as jupyter_server's
  own WebSocket handlers do) before anything is sent upstream;
- writes (POST, PUT, PATCH, DELETE) pass jupyter_server's XSRF check unless token
  authenticated, as for every JupyterHandler;
- Jupyter credentials never reach the dashboard: ``Authorization``, ``Cookie``,
  ``X-XSRFToken``/``X-CSRFToken`` headers and the ``token``/``_xsrf`` query parameters are
  dropped;
- the dashboard cannot change the Jupyter origin's policies: its ``Set-Cookie`` headers are
  dropped (the cookie would land on the Jupyter origin, and it could never be sent back
  anyway), so are its ``Access-Control-*`` (CORS) headers, and its
  ``Content-Security-Policy`` is added to Jupyter's rather than replacing it;
- the path is passed on as the browser sent it (percent-encoding intact), but ``.``/``..``
  segments are refused so a path-based template cannot be walked out of.

Errors of the proxy itself are JSON ``{"error", "reason", "hint", "code"}`` as in
:mod:`jupyter_dw.handlers`: 400 ``invalid_name`` / ``invalid_path``, 404 ``raycluster_not_found``,
403 from Kubernetes (with ``denied``: ``"get rayclusters.ray.io"``), 503 from the session, 502
``dashboard_unreachable`` (or ``dashboard_refused``: a WebSocket upgrade the dashboard
answered with an error, whose status is kept). Answers of the dashboard (any status) are
passed back as they are.
"""

from __future__ import annotations

import asyncio
import json
import re
import string
import time
from collections.abc import Awaitable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from http.client import responses
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import url_path_join
from tornado import httputil, web
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.iostream import IOStream, StreamClosedError
from tornado.simple_httpclient import SimpleAsyncHTTPClient
from tornado.tcpclient import TCPClient
from tornado.websocket import (
    WebSocketClientConnection,
    WebSocketClosedError,
    WebSocketError,
    WebSocketHandler,
    websocket_connect,
)

from ..domain.cluster_spec import MAX_NAME_LENGTH, ray_cluster_name_error
from ..k8s.errors import KubeApiError, KubeError
from ..k8s.resources import RAY_CLUSTER, RAY_GROUP, ResourceKind
from ..k8s.session import KubeSession
from ..names import DASHBOARD_PORT
from .handlers import AUTH_RESOURCE, EXECUTOR_SETTING, ExtensionObjectsMixin, JSONErrorsMixin

PROXY_PREFIX = "dw/ray"
PROXY_ROUTE = PROXY_PREFIX + "/([^/]+)/(.*)"
"""``dw/ray/<name>/<path>``: groups are the RayCluster name and the path on the dashboard."""
REDIRECT_ROUTE = PROXY_PREFIX + "/([^/]+)"

DEFAULT_DASHBOARD_PORT = DASHBOARD_PORT
"""The ``dashboard`` port of KubeRay's head Service."""
DEFAULT_DASHBOARD_URL = "http://{name}-head-svc.{namespace}.svc:{port}"
"""KubeRay names the head Service ``<cluster>-head-svc`` (cluster names are at most 53
characters, so the name is never truncated)."""
TEMPLATE_FIELDS = frozenset({"name", "namespace", "port"})

CONNECT_TIMEOUT = 10.0
"""Seconds to connect to the dashboard (and finish a WebSocket handshake). There is no limit on
the whole request: log follows and WebSockets stay open as long as both ends want."""
MAX_RESPONSE_BYTES = 1 << 40
"""Responses are streamed, never held in memory: tornado's 100 MB default would only cut off
large log downloads."""
EXISTS_TTL = 5.0
"""Seconds a found RayCluster is remembered, so a dashboard page (dozens of requests, then a
poll every few seconds) costs one Kubernetes GET per few seconds. Misses are never remembered:
a cluster created a moment ago is reachable at once."""

RAY_CLUSTER_KIND = ResourceKind(RAY_GROUP, RAY_CLUSTER.plural, RAY_CLUSTER.kind, namespaced=True)

# Hop-by-hop headers (RFC 9110 section 7.6.1) belong to one connection, not to the message.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Jupyter's credentials and what tornado recomputes for the upstream connection.
REQUEST_HEADERS_DROPPED = frozenset(
    {"authorization", "cookie", "x-xsrftoken", "x-csrftoken", "host", "content-length", "expect"}
)
# The WebSocket client writes its own handshake; the subprotocols are passed separately.
WEBSOCKET_HEADERS_DROPPED = frozenset(
    {
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-accept",
        "sec-websocket-protocol",
    }
)
QUERY_PARAMS_DROPPED = frozenset({"token", "_xsrf"})
# Close codes that describe a connection state and must never be sent in a close frame.
_UNSENDABLE_CLOSE_CODES = frozenset({1005, 1006, 1015})


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


def validate_url_template(template: str) -> str:
    """Check a ``ray_dashboard_url`` template and return it; raise ``ValueError`` if it is not
    an http(s) URL built only from ``{name}``, ``{namespace}`` and ``{port}``.

    ``{name}`` is required (without it every cluster would share one dashboard); format specs,
    conversions, query strings and fragments are refused because the proxy appends the
    request's path and query to the result.
    """
    try:
        parsed = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(template)]
    except ValueError as err:  # unbalanced braces
        raise ValueError(f"{template!r} is not a valid template: {err}") from err
    fields = [f for f, _, _ in parsed if f is not None]
    unknown = sorted({f for f in fields if f not in TEMPLATE_FIELDS})
    if unknown:
        raise ValueError(
            f"{template!r} uses unknown placeholder(s) {', '.join(repr(f) for f in unknown)}; "
            "only {name}, {namespace} and {port} are known"
        )
    if any(spec or conv for _, spec, conv in parsed):
        raise ValueError(f"{template!r}: placeholders take no format spec or conversion")
    if "name" not in fields:
        raise ValueError(f"{template!r} must contain {{name}} (the RayCluster's name)")
    sample = urlsplit(template.format(name="example", namespace="default", port=1))
    if sample.scheme not in ("http", "https") or not sample.hostname:
        raise ValueError(f"{template!r} must be an http:// or https:// URL with a host")
    if sample.query or sample.fragment:
        raise ValueError(f"{template!r} must not have a query string or fragment")
    return template


@dataclass
class DashboardProxy:
    """Where dashboards are (the URL template and port) and which clusters were seen lately.

    One per server: the routes share it.
    """

    url_template: str = DEFAULT_DASHBOARD_URL
    port: int = DEFAULT_DASHBOARD_PORT
    exists_ttl: float = EXISTS_TTL
    _found: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        validate_url_template(self.url_template)

    def base_url(self, name: str, namespace: str) -> str:
        """The dashboard root of RayCluster ``name`` (no trailing slash)."""
        url = self.url_template.format(name=name, namespace=namespace, port=self.port)
        return url.rstrip("/")

    async def require_cluster(
        self, session: KubeSession, executor: Executor | None, name: str
    ) -> str:
        """Return the namespace if RayCluster ``name`` exists in it; raise
        :class:`DashboardError` (404) if not, or the session's :class:`KubeError`."""
        loop = asyncio.get_running_loop()
        namespace = session.namespace if session.ready else None
        # Only touched on the IO loop: no lock needed.
        if namespace is not None and self._found.get((namespace, name), 0.0) > time.monotonic():
            return namespace
        namespace, exists = await loop.run_in_executor(executor, _look_up, session, name)
        if not exists:
            raise DashboardError(
                404,
                f"No RayCluster named {name!r} in namespace {namespace}",
                "the dashboard proxy only reaches RayClusters of this namespace",
                "Check the name with GET dw/api/clusters, or create the cluster first.",
                "raycluster_not_found",
            )
        self._found[(namespace, name)] = time.monotonic() + self.exists_ttl
        return namespace


def _look_up(session: KubeSession, name: str) -> tuple[str, bool]:
    """``(namespace, exists)`` for RayCluster ``name`` (blocking: run in the executor)."""
    session.wait_ready()
    session.discovery.require_kuberay()
    namespace = session.namespace
    # A RayCluster watch cache, if the session keeps one, answers without a request; a miss
    # may just be an event not seen yet, so it is confirmed with a GET.
    cache = session.cache(RAY_CLUSTER_KIND)
    if cache is not None and cache.synced and cache.get(name, namespace) is not None:
        return namespace, True
    try:
        session.api.get(RAY_CLUSTER.path(namespace, name))
    except KubeApiError as err:
        if err.api_status == 404:
            return namespace, False
        raise
    return namespace, True


def dashboard_routes(
    url_template: str = DEFAULT_DASHBOARD_URL, port: int = DEFAULT_DASHBOARD_PORT
) -> list[tuple[str, type[web.RequestHandler], dict[str, Any]]]:
    """``(pattern, handler, kwargs)`` for the proxy; ExtensionApp prepends ``base_url``."""
    proxy = DashboardProxy(url_template, port)
    return [
        (PROXY_ROUTE, RayDashboardHandler, {"dashboard": proxy}),
        (REDIRECT_ROUTE, RayDashboardRedirectHandler, {}),
    ]


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
        """The JSON body, in the shape of :meth:`KubeError.to_json`."""
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


def check_path(raw_path: str) -> None:
    """Refuse ``.`` and ``..`` segments (also percent-encoded or with backslashes): behind a
    path-based template they would reach another cluster's dashboard."""
    segments = re.split(r"[/\\]", unquote(raw_path))
    if any(segment in (".", "..") for segment in segments):
        raise DashboardError(
            400,
            "Invalid dashboard path",
            "'.' and '..' path segments are not forwarded",
            None,
            "invalid_path",
        )


def _unreachable(name: str, url: str, err: BaseException) -> DashboardError:
    return DashboardError(
        502,
        f"Cannot reach the Ray dashboard of {name}",
        f"{url}: {err}",
        "The head pod may not be running yet (queued by Kueue, or starting); check the "
        "cluster's state, or the JupyterDW.ray_dashboard_url setting.",
        "dashboard_unreachable",
    )


# ---------------------------------------------------------------------------------------------
# What goes upstream
# ---------------------------------------------------------------------------------------------


def _connection_tokens(headers: httputil.HTTPHeaders) -> set[str]:
    """Header names listed in ``Connection``: hop-by-hop for this one message."""
    return {
        token.strip().lower()
        for value in headers.get_list("Connection")
        for token in value.split(",")
        if token.strip()
    }


def upstream_request_headers(
    headers: httputil.HTTPHeaders, extra_dropped: Iterable[str] = ()
) -> httputil.HTTPHeaders:
    """The browser's headers minus hop-by-hop headers and Jupyter's credentials."""
    dropped = HOP_BY_HOP | REQUEST_HEADERS_DROPPED | _connection_tokens(headers)
    dropped |= {name.lower() for name in extra_dropped}
    forwarded = httputil.HTTPHeaders()
    for name, value in headers.get_all():
        if name.lower() not in dropped:
            forwarded.add(name, value)
    return forwarded


def upstream_query(query: str) -> str:
    """The raw query string minus ``token`` and ``_xsrf``; the rest keeps its encoding."""
    kept = [
        item
        for item in query.split("&")
        if item and unquote(item.partition("=")[0].replace("+", " ")) not in QUERY_PARAMS_DROPPED
    ]
    return "&".join(kept)


def rewrite_location(location: str, upstream_base: str, public_prefix: str) -> str:
    """A redirect from the dashboard, pointed back through the proxy when it targets the
    dashboard (absolute or root-relative); relative ones already resolve correctly."""
    parts = urlsplit(location)
    if not parts.scheme and not parts.netloc and not location.startswith("/"):
        return location
    resolved = urljoin(upstream_base + "/", location)
    if resolved.startswith(upstream_base + "/"):
        return public_prefix + resolved[len(upstream_base) + 1 :]
    return location


def _sendable_close(code: int | None) -> int | None:
    if code is None or code in _UNSENDABLE_CLOSE_CODES or not 1000 <= code < 5000:
        return None
    return code


class _TrackingTCPClient(TCPClient):
    """A TCPClient that keeps its streams, so a proxied request can be cut off when the browser
    goes away (a fetch of AsyncHTTPClient cannot be cancelled otherwise)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.streams: list[IOStream] = []

    async def connect(self, *args: Any, **kwargs: Any) -> IOStream:  # type: ignore[override]
        stream = await super().connect(*args, **kwargs)
        self.streams.append(stream)
        return stream

    def abort(self) -> None:
        """Close every connection made so far."""
        for stream in self.streams:
            stream.close()


class _UpstreamClient(SimpleAsyncHTTPClient):
    """tornado's AsyncHTTPClient (the simple implementation), one per proxied request, whose
    connections can be aborted with :meth:`abort`."""

    def initialize(self, **kwargs: Any) -> None:  # type: ignore[override]
        super().initialize(**kwargs)
        # fetch() connects through self.tcp_client: swap in one that remembers its streams.
        self.tcp_client.close()
        self._tracker = _TrackingTCPClient(resolver=self.resolver)
        self.tcp_client = self._tracker

    def abort(self) -> None:
        """Close the upstream connection: the pending fetch fails with a closed stream."""
        self._tracker.abort()


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


class RayDashboardHandler(
    ExtensionObjectsMixin,
    JSONErrorsMixin,
    ExtensionHandlerMixin,
    WebSocketMixin,
    WebSocketHandler,
    JupyterHandler,
):
    """``dw/ray/<name>/<path>``: HTTP and WebSocket to the dashboard of RayCluster ``name``.

    One handler serves both because the dashboard opens its WebSockets on the same paths as
    its pages: a GET with ``Upgrade: websocket`` is proxied as a WebSocket, anything else as
    HTTP. Based on jupyter_server's WebSocket handlers (``WebSocketMixin`` for origin checks
    and keep-alive pings, ``JupyterHandler`` for authentication and XSRF).
    """

    auth_resource = AUTH_RESOURCE

    def initialize(self, name: str, dashboard: DashboardProxy) -> None:  # type: ignore[override]
        """``dashboard`` is the server's shared :class:`DashboardProxy`."""
        super().initialize(name)
        self.dashboard = dashboard
        self._upstream_client: _UpstreamClient | None = None
        self._upstream_ws: WebSocketClientConnection | None = None
        self._pump: asyncio.Task[None] | None = None
        self._client_gone = False
        self._status_line: httputil.ResponseStartLine | None = None
        self._response_headers = httputil.HTTPHeaders()
        self._base = ""
        self._prefix = ""

    # -- the methods (each authenticated and authorized by jupyter_server) ---------------

    @web.authenticated
    @authorized
    async def get(self, name: str, path: str) -> None:
        """A page or API call, or a WebSocket upgrade."""
        if self.request.headers.get("Upgrade", "").lower() == "websocket":
            await self._proxy_websocket(name)
        else:
            await self._proxy_http(name)

    @web.authenticated
    @authorized
    async def head(self, name: str, path: str) -> None:
        """Proxied as is."""
        await self._proxy_http(name)

    @web.authenticated
    @authorized
    async def options(self, name: str, path: str) -> None:
        """Proxied as is (authenticated: no CORS preflight is answered here)."""
        await self._proxy_http(name)

    @web.authenticated
    @authorized
    async def post(self, name: str, path: str) -> None:
        """Proxied as is (after jupyter_server's XSRF check)."""
        await self._proxy_http(name)

    @web.authenticated
    @authorized
    async def put(self, name: str, path: str) -> None:
        """Proxied as is (after jupyter_server's XSRF check)."""
        await self._proxy_http(name)

    @web.authenticated
    @authorized
    async def patch(self, name: str, path: str) -> None:
        """Proxied as is (after jupyter_server's XSRF check)."""
        await self._proxy_http(name)

    @web.authenticated
    @authorized
    async def delete(self, name: str, path: str) -> None:
        """Proxied as is (after jupyter_server's XSRF check)."""
        await self._proxy_http(name)

    # -- common --------------------------------------------------------------------------

    def compute_etag(self) -> str | None:
        """No ETag of our own: the dashboard's (if any) is passed back."""
        return None

    async def _target(self, name: str) -> tuple[str, str] | None:
        """``(dashboard base URL, raw path and query)`` after every check, or None when an
        error was answered."""
        try:
            check_name(name)
            match = re.match(url_path_join(self.base_url, PROXY_ROUTE) + "$", self.request.path)
            if match is None:  # tornado routed here with this very pattern
                raise web.HTTPError(404)
            # tornado hands the path over percent-decoded; the dashboard gets it as sent.
            raw_path = match.group(2)
            check_path(raw_path)
            namespace = await self.dashboard.require_cluster(
                self.core.session, self.settings.get(EXECUTOR_SETTING), name
            )
        except (DashboardError, KubeError) as err:
            self._send_error_json(err)
            return None
        self._base = self.dashboard.base_url(name, namespace)
        self._prefix = self.request.path[: match.start(2)]
        query = upstream_query(self.request.query)
        return self._base, raw_path + (f"?{query}" if query else "")

    def _send_error_json(self, err: DashboardError | KubeError) -> None:
        self.set_status(err.status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(err.to_json()))

    def on_close(self) -> None:
        """The browser went away (HTTP) or closed its WebSocket: close the upstream side."""
        self._client_gone = True
        if self._upstream_client is not None:
            self._upstream_client.abort()
        if self._upstream_ws is not None:
            self._upstream_ws.close(_sendable_close(self.close_code), self.close_reason)

    # -- HTTP ----------------------------------------------------------------------------

    async def _proxy_http(self, name: str) -> None:
        target = await self._target(name)
        if target is None:
            return
        base, path_and_query = target
        url = f"{base}/{path_and_query}"
        method = self.request.method or "GET"
        body = self.request.body
        request = HTTPRequest(
            url,
            method=method,
            headers=upstream_request_headers(self.request.headers),
            body=body if body or method in ("POST", "PUT", "PATCH") else None,
            follow_redirects=False,
            decompress_response=False,  # pass the bytes and Content-Encoding on unchanged
            allow_nonstandard_methods=True,  # bodies on DELETE/OPTIONS, as the browser sent
            connect_timeout=CONNECT_TIMEOUT,
            request_timeout=0,  # 0: no limit (see CONNECT_TIMEOUT)
            header_callback=self._on_response_header,
            streaming_callback=self._on_response_chunk,
        )
        client = _UpstreamClient(force_instance=True, max_body_size=MAX_RESPONSE_BYTES)
        self._upstream_client = client
        try:
            await client.fetch(request, raise_error=False)
        except (OSError, HTTPClientError, StreamClosedError) as err:
            if self._client_gone:
                return
            if self._headers_written:
                # Cut the response off so the browser sees it is incomplete.
                self.log.warning("Ray dashboard %s failed mid-response: %s", url, err)
                self.detach().close()
                return
            self.log.warning("Ray dashboard %s unreachable: %s", url, err)
            self._reset_response()
            self._send_error_json(_unreachable(name, url, err))
            return
        finally:
            self._upstream_client = None
            client.close()
        if not self._finished and not self._client_gone:
            self.finish()

    def _reset_response(self) -> None:
        # Headers of a response that failed before its body started are not sent (clear()
        # restores jupyter_server's default headers).
        self.clear()

    def _on_response_header(self, line: str) -> None:
        """Collect the dashboard's status line and headers; apply them at the blank line."""
        if line.startswith("HTTP/"):
            self._status_line = httputil.parse_response_start_line(line.strip())
            self._response_headers = httputil.HTTPHeaders()
        elif line.strip():
            self._response_headers.parse_line(line)
        elif self._status_line is not None and not self._client_gone:
            self._apply_response_headers(self._status_line, self._response_headers)

    def _apply_response_headers(
        self, start: httputil.ResponseStartLine, headers: httputil.HTTPHeaders
    ) -> None:
        self.set_status(start.code, start.reason or responses.get(start.code, "Unknown"))
        # tornado defaults to text/html; a response without a type must not get one.
        self.clear_header("Content-Type")
        dropped = HOP_BY_HOP | _connection_tokens(headers) | {"set-cookie"}
        for name in {n for n, _ in headers.get_all()}:
            lower = name.lower()
            # CORS headers would open the Jupyter origin to other sites: its CORS policy is
            # jupyter_server's (allow_origin settings), never the dashboard's.
            if lower in dropped or lower.startswith("access-control-"):
                continue
            values = headers.get_list(name)
            if lower == "location":
                values = [rewrite_location(v, self._base, self._prefix) for v in values]
            if lower != "content-security-policy":
                self.clear_header(name)
            # A dashboard CSP is added to Jupyter's, never replaces it: browsers enforce both.
            for value in values:
                self.add_header(name, value)

    def _on_response_chunk(self, chunk: bytes) -> Awaitable[None] | None:
        """Send a piece of the body on at once; the returned future makes tornado (6.6+)
        wait for the browser before reading more from the dashboard."""
        if self._client_gone or self._finished:
            return None
        self.write(chunk)
        flushed = self.flush()
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def settle(future: asyncio.Future[None]) -> None:
            # A failed flush means the browser has gone: stop reading, it is not an error.
            if future.cancelled() or future.exception() is not None:
                self.on_close()
            done.set_result(None)

        flushed.add_done_callback(settle)
        return done

    # -- WebSocket -----------------------------------------------------------------------

    async def _proxy_websocket(self, name: str) -> None:
        # jupyter_server's WebSocket handlers authorize "execute" for a socket.
        if not await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "execute", self.auth_resource)
        ):
            raise web.HTTPError(
                403, f"User is not authorized to execute on resource: {self.auth_resource}."
            )
        # Refuse cross-origin sockets before anything is opened upstream (tornado checks
        # again when it accepts the upgrade).
        if not self.check_origin(self.get_origin()):
            raise web.HTTPError(403, "Cross origin websockets not allowed")
        target = await self._target(name)
        if target is None:
            return
        base, path_and_query = target
        url = re.sub(r"^http", "ws", f"{base}/{path_and_query}")
        protocols = [
            p.strip()
            for p in self.request.headers.get("Sec-WebSocket-Protocol", "").split(",")
            if p.strip()
        ]
        request = HTTPRequest(
            url,
            headers=upstream_request_headers(self.request.headers, WEBSOCKET_HEADERS_DROPPED),
            connect_timeout=CONNECT_TIMEOUT,
            request_timeout=CONNECT_TIMEOUT,
        )
        try:
            self._upstream_ws = await websocket_connect(
                request, subprotocols=protocols or None, ping_interval=None
            )
        except (HTTPClientError, WebSocketError) as err:
            code = getattr(err, "code", None)
            if code == 599:  # no HTTP answer at all
                self._send_error_json(_unreachable(name, url, err))
                return
            # The dashboard answered, but not with an upgrade: keep an error status it gave.
            self._send_error_json(
                DashboardError(
                    code if code is not None and 400 <= code < 600 else 502,
                    f"The Ray dashboard of {name} refused the WebSocket",
                    f"{url}: {err}",
                    None,
                    "dashboard_refused",
                )
            )
            return
        except (OSError, StreamClosedError) as err:
            self._send_error_json(_unreachable(name, url, err))
            return
        try:
            # Returns when the browser's socket is closed (or the upgrade was refused).
            await super().get(name, path_and_query)
        finally:
            self._upstream_ws.close()

    def select_subprotocol(self, subprotocols: list[str]) -> str | None:
        """The subprotocol the dashboard picked (it saw the browser's list)."""
        chosen = self._upstream_ws.selected_subprotocol if self._upstream_ws else None
        return chosen if chosen in subprotocols else None

    def open(self, *args: Any, **kwargs: Any) -> None:
        """Start pinging the browser (WebSocketMixin) and relaying the dashboard's messages."""
        super().open(*args, **kwargs)
        self._pump = asyncio.ensure_future(self._relay_upstream())

    async def on_message(self, message: str | bytes) -> None:
        """Browser → dashboard; awaited, so a slow dashboard slows the browser down."""
        if self._upstream_ws is None:
            return
        try:
            await self._upstream_ws.write_message(message, binary=isinstance(message, bytes))
        except WebSocketClosedError:
            self.close()

    async def _relay_upstream(self) -> None:
        """Dashboard → browser until the dashboard closes; then close the browser's side."""
        upstream = self._upstream_ws
        assert upstream is not None
        while True:
            message = await upstream.read_message()
            if message is None:
                break
            try:
                await self.write_message(message, binary=isinstance(message, bytes))
            except WebSocketClosedError:
                return
        self.close(_sendable_close(upstream.close_code), upstream.close_reason)


class RayDashboardRedirectHandler(JSONErrorsMixin, ExtensionHandlerMixin, JupyterHandler):
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
