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

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from http.client import responses
from typing import Any
from urllib.parse import quote, unquote, urljoin, urlsplit

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import allow_unauthenticated, authorized
from jupyter_server.auth.identity import User
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
from ..domain.cluster_state import cluster_status
from ..domain.ray_auth import RayToken, TokenUnavailable, ray_auth_of
from ..domain.ray_endpoints import validate_url_template
from ..domain.validation import dns1035_label_error
from ..k8s.errors import KubeApiError, KubeError
from ..k8s.resources import RAY_CLUSTER, RAY_GROUP, ResourceKind
from ..k8s.session import KubeSession
from ..names import DASHBOARD_PORT
from .dashboard_capability import (
    ACTIONS,
    EXECUTE,
    READ,
    WRITE,
    Capabilities,
    CapabilityError,
    Grant,
    Target,
)
from .handlers import AUTH_RESOURCE, EXECUTOR_SETTING, ExtensionObjectsMixin, JSONErrorsMixin

PROXY_PREFIX = "dw/ray"
DASHBOARD_SETTING = "jupyter_dw_dashboard_proxy"
"""The server's :class:`DashboardProxy` in the tornado settings (None when turned off)."""
CAPABILITY_SEGMENT = "~cap"
CAPABILITY_ROUTE = PROXY_PREFIX + "/([^/]+)/" + CAPABILITY_SEGMENT + "/([^/]+)/(.*)"
"""``dw/ray/<name>/~cap/<capability>/<path>``: the only route that reaches a dashboard."""
PROXY_ROUTE = PROXY_PREFIX + "/([^/]+)/(.*)"
"""``dw/ray/<name>/<path>``: mints a capability and redirects to the capability path."""
REDIRECT_ROUTE = PROXY_PREFIX + "/([^/]+)"
OFF_ROUTE = PROXY_PREFIX + "(?:/.*)?"
"""Every ``dw/ray`` path, when the proxy is turned off."""

SANDBOX_POLICY = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"
"""The sandbox of every proxied response. Never ``allow-same-origin`` (the page would share
Jupyter's origin: cookies, storage, service workers), ``allow-top-navigation*`` (it could
navigate a JupyterLab tab that frames it) or ``allow-popups-to-escape-sandbox`` (its popups
would be unsandboxed)."""

KUBERAY_DASHBOARD_URL = "http://{service}.{namespace}.svc:{port}"
"""Where the dashboard is when no template is configured: the head Service and dashboard port
KubeRay reports in the RayCluster's status."""
DEFAULT_DASHBOARD_URL = ""
"""No template: use what KubeRay reports (:data:`KUBERAY_DASHBOARD_URL`)."""
DEFAULT_DASHBOARD_PORT = DASHBOARD_PORT
"""The ``{port}`` of a configured template (KubeRay's ``dashboard`` port by default)."""

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
# Jupyter's credentials, the Referer (it would hold the capability) and what tornado recomputes
# for the upstream connection.
REQUEST_HEADERS_DROPPED = frozenset(
    {
        "authorization",
        "cookie",
        "x-xsrftoken",
        "x-csrftoken",
        "referer",
        "x-ray-authorization",  # Ray's token header for proxies: only this proxy sets it
        "host",
        "content-length",
        "expect",
    }
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
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that only read: every other method is a write (``write`` capability, origin
checked)."""

# The dashboard's response headers that reach the browser: an allow-list, because many
# headers act on the whole Jupyter origin or host (Set-Cookie, Clear-Site-Data,
# Service-Worker-Allowed, Strict-Transport-Security, Alt-Svc, NEL, Report-To), navigate
# (Refresh), ask for credentials (WWW-Authenticate) or instruct a proxy in front of Jupyter
# (X-Accel-Redirect, X-Sendfile). ``Location`` is rewritten; ``Content-Security-Policy`` is
# added to ours (browsers enforce every policy, so it can only restrict).
RESPONSE_HEADERS_KEPT = frozenset(
    {
        "accept-ranges",
        "age",
        "cache-control",
        "content-disposition",
        "content-encoding",
        "content-language",
        "content-length",
        "content-range",
        "content-security-policy",
        "content-type",
        "etag",
        "expires",
        "last-modified",
        "location",
        "pragma",
        "retry-after",
        "vary",
        "x-content-type-options",  # nosniff: it can only restrict
    }
)
# A sandboxed page (opaque origin) gets a SecurityError from localStorage, sessionStorage and
# document.cookie. Dashboards use them for small preferences (the Ray dashboard reads its theme
# from localStorage while it starts, and axios reads document.cookie on every request), and
# would fail to start. This script, put first in every proxied HTML page, gives the page
# in-memory replacements that live as long as the page: it grants nothing (the page could
# define them itself) and nothing is shared with Jupyter.
STORAGE_SHIM = (
    b"<script>/* jupyter_dw: sandboxed page, in-memory storage */(function(){"
    b"function ok(f){try{f();return true}catch(e){return false}}"
    b"function mem(){var m=new Map();return{get length(){return m.size},"
    b"key:function(i){var k=Array.from(m.keys())[i];return k===undefined?null:k},"
    b"getItem:function(k){k=String(k);return m.has(k)?m.get(k):null},"
    b"setItem:function(k,v){m.set(String(k),String(v))},"
    b"removeItem:function(k){m.delete(String(k))},clear:function(){m.clear()}}}"
    b"['localStorage','sessionStorage'].forEach(function(n){"
    b"if(!ok(function(){return window[n]}))"
    b"Object.defineProperty(window,n,{value:mem(),configurable:true})});"
    b"if(!ok(function(){return document.cookie}))"
    b"Object.defineProperty(document,'cookie',{get:function(){return ''},"
    b"set:function(){},configurable:true})})()</script>"
)
# Where the shim goes: after the doctype (a script there is parsed into <head>, and the page
# keeps its standards mode), or first in a page without one.
_DOCTYPE = re.compile(
    rb"^(\xef\xbb\xbf)?\s*(<!--.*?-->\s*)*<!doctype[^>]*>", re.IGNORECASE | re.DOTALL
)
SHIM_LOOKAHEAD = 4096
"""Bytes of an HTML page read before the shim is placed (a doctype is at the very start)."""
# Requests for a page (navigations) are sent upstream with Accept-Encoding: identity, so the
# shim can be put in without decompressing.
_DOCUMENT_DESTINATIONS = frozenset({"document", "iframe", "frame", "embed", "object"})

# Close codes that describe a connection state and must never be sent in a close frame.
_UNSENDABLE_CLOSE_CODES = frozenset({1005, 1006, 1015})
# Characters browsers strip from or treat specially in URLs: a Location holding one could
# resolve differently from what was checked.
_URL_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")


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
        dashboard = cluster_status(raycluster).dashboard
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

    async def locate(self, session: KubeSession, executor: Executor | None, name: str) -> Located:
        """RayCluster ``name`` of the session's namespace and its dashboard's address; raise
        :class:`DashboardError` (404) if there is no such cluster, or the session's
        :class:`KubeError`."""
        loop = asyncio.get_running_loop()
        known = session.namespace if session.ready else None
        # Only touched on the IO loop: no lock needed.
        if known is not None:
            until, located = self._found.get((known, name), (0.0, None))
            if located is not None and until > time.monotonic():
                return located
        namespace, raycluster, token = await loop.run_in_executor(executor, _look_up, session, name)
        if raycluster is None:
            raise DashboardError(
                404,
                f"No RayCluster named {name!r} in namespace {namespace}",
                "the dashboard proxy only reaches RayClusters of this namespace",
                "Check the name with GET dw/api/clusters, or create the cluster first.",
                "raycluster_not_found",
            )
        uid = str((raycluster.get("metadata") or {}).get("uid") or "")
        base = self.base_url(name, namespace, raycluster)
        located = Located(Target(name, namespace), uid, base, token)
        self._found[(namespace, name)] = (time.monotonic() + self.exists_ttl, located)
        return located


def _look_up(session: KubeSession, name: str) -> tuple[str, dict[str, Any] | None, RayToken | None]:
    """``(namespace, RayCluster or None, its Ray token or None)`` for ``name`` (blocking: run
    in the executor)."""
    namespace, raycluster = _find(session, name)
    if raycluster is None or not ray_auth_of(raycluster).uses_secret:
        return namespace, raycluster, None
    try:
        token = session.ray_token(raycluster)
    except TokenUnavailable as err:
        raise DashboardError(
            502,
            f"The Ray token of {name} cannot be used",
            str(err),
            "The cluster uses Ray token authentication; KubeRay makes its Secret when it "
            "accepts the cluster (check its state). A Secret of that name owned by anything "
            "else is never used: delete it and the cluster to start over.",
            "ray_token_unavailable",
        ) from None
    return namespace, raycluster, token


def _find(session: KubeSession, name: str) -> tuple[str, dict[str, Any] | None]:
    """``(namespace, RayCluster or None)`` for ``name`` (blocking)."""
    session.wait_ready()
    session.discovery.require_kuberay()
    namespace = session.namespace
    # A RayCluster watch cache, if the session keeps one, answers without a request; a miss
    # may just be an event not seen yet, so it is confirmed with a GET.
    cache = session.cache(RAY_CLUSTER_KIND)
    if cache is not None and cache.synced:
        cached = cache.get(name, namespace)
        if cached is not None:
            return namespace, dict(cached)
    try:
        return namespace, dict(session.api.get(RAY_CLUSTER.path(namespace, name)))
    except KubeApiError as err:
        if err.api_status == 404:
            return namespace, None
        raise


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


def _unreachable(name: str, url: str, err: BaseException) -> DashboardError:
    return DashboardError(
        502,
        f"Cannot reach the Ray dashboard of {name}",
        f"{url}: {err}",
        "The head pod may not be running yet (queued by Kueue, or starting); check the "
        "cluster's state, or the JupyterDW.ray_dashboard_url setting.",
        "dashboard_unreachable",
    )


def _capability_refused(name: str, err: CapabilityError) -> DashboardError:
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


# ---------------------------------------------------------------------------------------------
# What goes upstream and what comes back
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


def response_header_kept(name: str) -> bool:
    """Whether the dashboard's response header ``name`` may reach the browser."""
    # Only the allow-list: an unknown X- header may be an instruction to a proxy in front of
    # Jupyter (X-Accel-Redirect, X-Sendfile and whatever the next proxy reads).
    return name.lower() in RESPONSE_HEADERS_KEPT


def shim_place_known(head: bytes) -> bool:
    """Whether the start of a page decides where the shim goes: a doctype (or comment) is
    complete, or the page starts with something else. A streamed page is held no longer."""
    if len(head) >= SHIM_LOOKAHEAD or _DOCTYPE.match(head):
        return True
    rest = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    while rest.startswith(b"<!--"):
        end = rest.find(b"-->")
        if end < 0:
            return False
        rest = rest[end + 3 :].lstrip()
    if not rest:
        return False
    # Undecided only while the bytes so far could still be the start of "<!doctype ...>".
    return not (b"<!doctype".startswith(rest[:9].lower()) or rest[:9].lower() == b"<!doctype")


def with_storage_shim(head: bytes) -> bytes:
    """The start of an HTML page with :data:`STORAGE_SHIM` put in."""
    match = _DOCTYPE.match(head)
    at = match.end() if match else 0
    return head[:at] + STORAGE_SHIM + head[at:]


def rewrite_location(
    location: str, upstream_url: str, upstream_base: str, public_prefix: str
) -> str | None:
    """A redirect of the dashboard as the browser must see it: resolved against the proxied
    request's URL and pointed at the same place under ``public_prefix`` (the cluster's
    capability path); None when it leaves the dashboard (another host or port, a path outside
    ``upstream_base``, dot segments, characters browsers would read differently)."""
    if _URL_UNSAFE.search(location):
        return None
    resolved = urlsplit(urljoin(upstream_url, location))
    base = urlsplit(upstream_base + "/")
    if (resolved.scheme, resolved.netloc) != (base.scheme, base.netloc):
        return None
    if not resolved.path.startswith(base.path) or has_dot_segment(resolved.path):
        return None
    rest = resolved.path[len(base.path) :]
    query = f"?{resolved.query}" if resolved.query else ""
    fragment = f"#{resolved.fragment}" if resolved.fragment else ""
    return public_prefix + rest + query + fragment


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

    async def connect(self, *args: Any, **kwargs: Any) -> IOStream:
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

CAPABILITY_MASK = "[capability]"
_CAPABILITY_IN_URL = re.compile("/" + re.escape(CAPABILITY_SEGMENT) + "/[^/?#]*/?")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_.-]+")


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

    def _send_error_json(self, err: DashboardError | KubeError) -> None:
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

    @web.authenticated
    @authorized
    async def head(self, name: str, path: str) -> None:
        """Issue and redirect (302)."""
        await self._enter(name, 302)

    @web.authenticated
    @authorized
    async def options(self, name: str, path: str) -> None:
        """Issue and redirect (307)."""
        await self._enter(name, 307)

    @web.authenticated
    @authorized
    async def post(self, name: str, path: str) -> None:
        """Issue and redirect (307), after jupyter_server's XSRF check."""
        await self._enter(name, 307)

    @web.authenticated
    @authorized
    async def put(self, name: str, path: str) -> None:
        """Issue and redirect (307), after jupyter_server's XSRF check."""
        await self._enter(name, 307)

    @web.authenticated
    @authorized
    async def patch(self, name: str, path: str) -> None:
        """Issue and redirect (307), after jupyter_server's XSRF check."""
        await self._enter(name, 307)

    @web.authenticated
    @authorized
    async def delete(self, name: str, path: str) -> None:
        """Issue and redirect (307), after jupyter_server's XSRF check."""
        await self._enter(name, 307)

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
                raise _capability_refused(name, CapabilityError("malformed capability path"))
            check_path(raw_path)
            located = await self.dashboard.locate(
                self.core.session, self.settings.get(EXECUTOR_SETTING), name
            )
        except (DashboardError, KubeError) as err:
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


class RayDashboardHandler(
    SandboxedMixin,
    ExtensionObjectsMixin,
    JSONErrorsMixin,
    ExtensionHandlerMixin,
    WebSocketMixin,
    WebSocketHandler,
    JupyterHandler,
):
    """``dw/ray/<name>/~cap/<capability>/<path>``: HTTP and WebSocket to the dashboard of
    RayCluster ``name``, authorized by the capability alone.

    Jupyter's cookies and tokens do not authorize anything here (the sandboxed page has none to
    send), so jupyter_server's identity, XSRF and CORS steps are replaced: ``prepare`` checks
    the host as jupyter_server does, then the capability (for this cluster, unexpired, issued
    by this server, granting the method's action: ``read`` for GET/HEAD/OPTIONS, ``write`` for
    the others, ``execute`` for a WebSocket), then that the RayCluster is still the one it was
    issued for. A request that also carries a Jupyter login cookie of another user is refused.
    The methods are marked ``allow_unauthenticated`` for jupyter_server's sake: they are
    authenticated by the capability, before anything is sent upstream.

    One handler serves HTTP and WebSocket because the dashboard opens its WebSockets on the
    same paths as its pages: a GET with ``Upgrade: websocket`` is proxied as a WebSocket,
    anything else as HTTP.
    """

    auth_resource = AUTH_RESOURCE

    def initialize(self, name: str, dashboard: DashboardProxy) -> None:
        """``dashboard`` is the server's shared :class:`DashboardProxy`."""
        super().initialize(name)
        self.dashboard = dashboard
        self._upstream_client: _UpstreamClient | None = None
        self._upstream_ws: WebSocketClientConnection | None = None
        self._pump: asyncio.Task[None] | None = None
        self._client_gone = False
        self._status_line: httputil.ResponseStartLine | None = None
        self._response_headers = httputil.HTTPHeaders()
        self._located: Located | None = None
        self._shim_pending: bytearray | None = None
        """The start of an HTML page, held until the shim is placed (None: pass through)."""
        self._upstream_url = ""
        self._route = self._take_route()

    def _take_route(self) -> tuple[str, str, str]:
        """``(name, capability, raw path)`` from the raw request path, which then has the
        capability masked: jupyter_server and tornado log ``request.uri`` (and
        ``request.path``), and a capability must never reach a log."""
        pattern = url_path_join(self.base_url, CAPABILITY_ROUTE) + "$"
        match = re.match(pattern, self.request.path)
        if match is None:  # tornado routed here with this very pattern
            return "", "", ""
        token = match.group(2)
        self.request.path = self.request.path.replace(token, CAPABILITY_MASK, 1)
        self.request.uri = (self.request.uri or "").replace(token, CAPABILITY_MASK, 1)
        # jupyter_server logs the Referer of failed requests; browsers send none (we answer
        # Referrer-Policy: no-referrer), other clients might.
        referer = self.request.headers.get("Referer")
        if referer:
            self.request.headers["Referer"] = _CAPABILITY_IN_URL.sub(
                f"/{CAPABILITY_SEGMENT}/{CAPABILITY_MASK}/", referer
            )
        # tornado hands the path over percent-decoded; the dashboard gets it as sent.
        return unquote(match.group(1)), token, match.group(3)

    # -- authentication and authorization: the capability -------------------------------

    async def prepare(self) -> None:  # type: ignore[override]
        """Authorize by the capability; answer an error (or a renewal redirect) if it does
        not allow this request."""
        # Not JupyterHandler.prepare: it would authenticate by cookie or token, set login
        # cookies, check XSRF and answer CORS the Jupyter way. Its host check is kept.
        if not self.check_host():
            raise web.HTTPError(403)
        self.current_user = self._jupyter_current_user = None
        name, token, raw_path = self._route
        try:
            self._check_write_origin(name)
            check_name(name)
            check_path(raw_path)
            grant = await self._verify(name, token, raw_path)
            if grant is None:  # answered with a redirect
                return
            self._require_action(name, grant)
            located = await self.dashboard.locate(
                self.core.session, self.settings.get(EXECUTOR_SETTING), name
            )
            if located.uid != grant.uid:
                raise _capability_refused(
                    name, CapabilityError("the cluster was replaced since this link was made")
                )
        except (DashboardError, KubeError) as err:
            self._send_error_json(err)
            return
        self._located = located
        # For jupyter_server's access log ("200 GET ... (user@ip)"), never for authorization.
        self.current_user = self._jupyter_current_user = User(username=grant.user)

    async def _verify(self, name: str, token: str, raw_path: str) -> Grant | None:
        namespace = await self._namespace()
        try:
            if not _TOKEN_CHARS.fullmatch(token):
                raise CapabilityError("malformed capability")
            grant = self.dashboard.capabilities.verify(token, Target(name, namespace))
            await self._check_session_user(grant)
        except CapabilityError as err:
            if self._renewable(err):
                # A page reloaded after its link expired: Jupyter's login decides again.
                self.redirect(self._entry_url(name, raw_path))
                return None
            raise _capability_refused(name, err) from err
        return grant

    async def _namespace(self) -> str:
        session = self.core.session
        if not session.ready:
            await self.run_blocking(session.wait_ready)
        return session.namespace

    async def _check_session_user(self, grant: Grant) -> None:
        """Refuse a capability presented with another user's Jupyter login cookie (a link
        copied to another browser session)."""
        try:
            cookie_user = await ensure_async(self.identity_provider.get_user_cookie(self))
        except Exception:  # an identity provider without cookie users: nothing to compare
            cookie_user = None
        if cookie_user is not None and user_name(cookie_user) != grant.user:
            raise CapabilityError(
                "the capability belongs to another user's session",
                code="capability_user_mismatch",
                renewable=True,
            )

    def _renewable(self, err: CapabilityError) -> bool:
        # Only a top-level or frame navigation can go through Jupyter's login again; a
        # dashboard's fetch or socket gets the 403.
        return (
            err.renewable
            and self.request.method == "GET"
            and self.request.headers.get("Sec-Fetch-Mode") == "navigate"
            and not self._is_websocket()
        )

    def _require_action(self, name: str, grant: Grant) -> None:
        if self._is_websocket():
            action = EXECUTE
        elif self.request.method in SAFE_METHODS:
            action = READ
        else:
            action = WRITE
        if not grant.allows(action):
            raise DashboardError(
                403,
                f"Not allowed to {action} on the Ray dashboard of {name}",
                f"jupyter_server's authorizer did not allow {action!r} on {AUTH_RESOURCE!r} "
                "when this link was made",
                None,
                "capability_not_granted",
            )

    def _check_write_origin(self, name: str) -> None:
        """Writes come from the sandboxed page (origin ``null``), Jupyter's own origin or a
        program (no origin), as WebSockets do (:meth:`check_origin`): another site's page
        holding a leaked capability link still cannot write through it."""
        if self.request.method in SAFE_METHODS or self.check_origin():
            return
        raise DashboardError(
            403,
            f"Cross-origin write to the Ray dashboard of {name} refused",
            f"origin {self.get_origin()!r} is neither the sandboxed dashboard nor this server",
            None,
            "cross_origin_refused",
        )

    def _is_websocket(self) -> bool:
        return self.request.headers.get("Upgrade", "").lower() == "websocket"

    def check_xsrf_cookie(self) -> None:
        """No XSRF check: forging a request needs ambient credentials, and nothing here is
        authorized by one (the capability is in the URL, which a forger does not know)."""

    def set_cors_headers(self) -> None:
        """Set in :meth:`set_default_headers` (so errors carry them too)."""

    def set_default_headers(self) -> None:
        """Sandbox headers plus CORS for the sandboxed page (origin ``null``), never with
        credentials: its fetches and XHRs to its own paths are cross-origin."""
        super().set_default_headers()
        self.set_header("Access-Control-Allow-Origin", "null")
        self.set_header("Access-Control-Expose-Headers", "*")

    def check_origin(self, origin: str | None = None) -> bool:
        """WebSockets from the sandboxed page (origin ``null``), from Jupyter's own origin, or
        from a program (no origin); not from other sites, even with the capability."""
        origin = self.get_origin() if origin is None else origin
        if origin is None or origin == "null":
            return True
        host = self.request.headers.get("Host") or ""
        return urlsplit(origin.lower()).netloc == host.lower()

    # -- the methods (authenticated by the capability in prepare) ------------------------

    @allow_unauthenticated
    async def get(self, *args: str) -> None:
        """A page or API call, or a WebSocket upgrade."""
        if self._is_websocket():
            await self._proxy_websocket()
        else:
            await self._proxy_http()

    @allow_unauthenticated
    async def head(self, *args: str) -> None:
        """Proxied as is."""
        await self._proxy_http()

    @allow_unauthenticated
    async def options(self, *args: str) -> None:
        """A CORS preflight of the sandboxed page is answered here; other OPTIONS are
        proxied."""
        if "Access-Control-Request-Method" in self.request.headers:
            self._answer_preflight()
        else:
            await self._proxy_http()

    @allow_unauthenticated
    async def post(self, *args: str) -> None:
        """Proxied as is."""
        await self._proxy_http()

    @allow_unauthenticated
    async def put(self, *args: str) -> None:
        """Proxied as is."""
        await self._proxy_http()

    @allow_unauthenticated
    async def patch(self, *args: str) -> None:
        """Proxied as is."""
        await self._proxy_http()

    @allow_unauthenticated
    async def delete(self, *args: str) -> None:
        """Proxied as is."""
        await self._proxy_http()

    # -- common --------------------------------------------------------------------------

    def compute_etag(self) -> str | None:
        """No ETag of our own: the dashboard's (if any) is passed back."""
        return None

    def _answer_preflight(self) -> None:
        self.set_status(204)
        self.set_header("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE")
        requested = self.request.headers.get("Access-Control-Request-Headers")
        if requested:
            self.set_header("Access-Control-Allow-Headers", requested)
        self.set_header("Access-Control-Max-Age", "600")
        self.finish()

    def _upstream(self) -> str:
        """The dashboard URL of this request: the dashboard root, the raw path as the browser
        sent it, the query without Jupyter's parameters."""
        assert self._located is not None
        query = upstream_query(self.request.query)
        return f"{self._located.base_url}/{self._route[2]}" + (f"?{query}" if query else "")

    def _public_prefix(self) -> str:
        """``{base_url}dw/ray/<name>/~cap/<capability>/``, as the browser knows it."""
        name, token, _ = self._route
        return capability_prefix(self.base_url, name, token)

    def on_close(self) -> None:
        """The browser went away (HTTP) or closed its WebSocket: close the upstream side."""
        self._client_gone = True
        if self._upstream_client is not None:
            self._upstream_client.abort()
        if self._upstream_ws is not None:
            self._upstream_ws.close(_sendable_close(self.close_code), self.close_reason)

    # -- HTTP ----------------------------------------------------------------------------

    async def _proxy_http(self) -> None:
        name = self._route[0]
        url = self._upstream_url = self._upstream()
        method = self.request.method or "GET"
        body = self.request.body
        assert self._located is not None
        headers = self._located.upstream_headers(upstream_request_headers(self.request.headers))
        if self._is_document_request():
            headers["Accept-Encoding"] = "identity"
        request = HTTPRequest(
            url,
            method=method,
            headers=headers,
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
            if self._client_gone or self._finished:
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
            self._release_shimmed()
            self.finish()

    def _reset_response(self) -> None:
        # Headers of a response that failed before its body started are not sent (clear()
        # restores the default headers: the sandbox stays).
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
        if start.code < 200:  # 100 Continue and the like: the final answer follows
            return
        locations = headers.get_list("Location")
        public = [
            rewrite_location(v, self._upstream_url, self._base(), self._public_prefix())
            for v in locations
        ]
        if 300 <= start.code < 400 and locations and None in public:
            self._refuse_redirect(locations)
            return
        self.set_status(start.code, start.reason or responses.get(start.code, "Unknown"))
        # tornado defaults to text/html; a response without a type must not get one.
        self.clear_header("Content-Type")
        dropped = HOP_BY_HOP | _connection_tokens(headers)
        if self._takes_shim(headers):
            self._shim_pending = bytearray()
            dropped |= {"content-length"}  # the body grows by the shim
        for name in {n for n, _ in headers.get_all()}:
            lower = name.lower()
            if lower in dropped or not response_header_kept(name):
                continue
            values = headers.get_list(name)
            if lower == "location":
                values = [v for v in public if v is not None]
            if lower != "content-security-policy":
                self.clear_header(name)
            # A dashboard CSP is added to ours, never replaces it: browsers enforce both.
            for value in values:
                self.add_header(name, value)

    def _takes_shim(self, headers: httputil.HTTPHeaders) -> bool:
        """A page being navigated to, whose HTML we can read as it is (not compressed, an
        ASCII-compatible charset)."""
        content_type = headers.get("Content-Type", "").lower()
        encoding = headers.get("Content-Encoding", "identity").strip().lower()
        return (
            self.request.method == "GET"
            and self._is_document_request()
            and content_type.startswith("text/html")
            and encoding == "identity"
            and "utf-16" not in content_type
        )

    def _is_document_request(self) -> bool:
        return self.request.headers.get("Sec-Fetch-Dest") in _DOCUMENT_DESTINATIONS

    def _release_shimmed(self) -> None:
        """Write the held start of the page, with the shim; from then on, pass through."""
        if self._shim_pending is not None:
            head, self._shim_pending = bytes(self._shim_pending), None
            self.write(with_storage_shim(head))

    def _base(self) -> str:
        assert self._located is not None
        return self._located.base_url

    def _refuse_redirect(self, locations: list[str]) -> None:
        """A redirect out of the dashboard: answered as an error, its body not passed on."""
        name = self._route[0]
        self._send_error_json(
            DashboardError(
                502,
                f"The Ray dashboard of {name} redirected outside its proxy",
                f"refused redirect to {locations[0][:200]!r}",
                "The proxy only follows redirects within the dashboard.",
                "dashboard_redirect_refused",
            )
        )

    def _on_response_chunk(self, chunk: bytes) -> Awaitable[None] | None:
        """Send a piece of the body on at once; the returned future makes tornado (6.6+)
        wait for the browser before reading more from the dashboard."""
        if self._client_gone or self._finished:
            return None
        if self._shim_pending is not None:
            self._shim_pending += chunk
            if not shim_place_known(bytes(self._shim_pending)):
                return None
            self._release_shimmed()
        else:
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

    async def _proxy_websocket(self) -> None:
        # Refuse cross-origin sockets before anything is opened upstream (tornado checks
        # again when it accepts the upgrade).
        if not self.check_origin(self.get_origin()):
            raise web.HTTPError(403, "Cross origin websockets not allowed")
        name = self._route[0]
        url = re.sub(r"^http", "ws", self._upstream())
        protocols = [
            p.strip()
            for p in self.request.headers.get("Sec-WebSocket-Protocol", "").split(",")
            if p.strip()
        ]
        assert self._located is not None
        headers = upstream_request_headers(self.request.headers, WEBSOCKET_HEADERS_DROPPED)
        request = HTTPRequest(
            url,
            headers=self._located.upstream_headers(headers),
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
            await super().get(*self.path_args)
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

    @web.authenticated
    @authorized
    async def head(self) -> None:
        """404 ``dashboard_proxy_disabled``."""
        self._off()

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """404 ``dashboard_proxy_disabled``."""
        self._off()

    @web.authenticated
    @authorized
    async def put(self) -> None:
        """404 ``dashboard_proxy_disabled``."""
        self._off()

    @web.authenticated
    @authorized
    async def patch(self) -> None:
        """404 ``dashboard_proxy_disabled``."""
        self._off()

    @web.authenticated
    @authorized
    async def delete(self) -> None:
        """404 ``dashboard_proxy_disabled``."""
        self._off()

    @web.authenticated
    @authorized
    async def options(self) -> None:
        """404 ``dashboard_proxy_disabled``."""
        self._off()

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
