"""``dw/ray/<name>/~cap/<capability>/<path>``: HTTP and WebSocket relayed to the dashboard.
Authorized by the capability alone; one handler, as tornado routes a path to one class
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable
from http.client import responses
from typing import Any
from urllib.parse import unquote, urlsplit

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.auth.identity import User
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import url_path_join
from tornado import httputil, web
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.iostream import StreamClosedError
from tornado.websocket import (
    WebSocketClientConnection,
    WebSocketClosedError,
    WebSocketError,
    WebSocketHandler,
    websocket_connect,
)

from ...core.errors import DWError
from ..dashboard_capability import (
    EXECUTE,
    READ,
    WRITE,
    CapabilityError,
    Grant,
    Target,
)
from ..handlers import AUTH_RESOURCE, EXECUTOR_SETTING, ExtensionObjectsMixin, JSONErrorsMixin
from .entry import SandboxedMixin
from .errors import (
    DashboardError,
    capability_prefix,
    capability_refused,
    check_name,
    check_path,
    unreachable,
    user_name,
)
from .locate import DashboardProxy, Located
from .paths import (
    CAPABILITY_IN_URL,
    CAPABILITY_MASK,
    CAPABILITY_ROUTE,
    CAPABILITY_SEGMENT,
    TOKEN_CHARS,
)
from .rules import (
    DOCUMENT_DESTINATIONS,
    HOP_BY_HOP,
    SAFE_METHODS,
    WEBSOCKET_HEADERS_DROPPED,
    connection_tokens,
    response_header_kept,
    rewrite_location,
    sendable_close,
    shim_place_known,
    upstream_query,
    upstream_request_headers,
    with_storage_shim,
)
from .upstream import CONNECT_TIMEOUT, MAX_RESPONSE_BYTES, UpstreamClient


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
        self._upstream_client: UpstreamClient | None = None
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
            self.request.headers["Referer"] = CAPABILITY_IN_URL.sub(
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
        await self.wait_for_core()
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
                self.core, self.settings.get(EXECUTOR_SETTING), name
            )
            if located.uid != grant.uid:
                raise capability_refused(
                    name, CapabilityError("the cluster was replaced since this link was made")
                )
        except (DashboardError, DWError) as err:
            self._send_error_json(err)
            return
        self._located = located
        # For jupyter_server's access log ("200 GET ... (user@ip)"), never for authorization.
        self.current_user = self._jupyter_current_user = User(username=grant.user)

    async def _verify(self, name: str, token: str, raw_path: str) -> Grant | None:
        namespace = await self._namespace()
        try:
            if not TOKEN_CHARS.fullmatch(token):
                raise CapabilityError("malformed capability")
            grant = self.dashboard.capabilities.verify(token, Target(name, namespace))
            await self._check_session_user(grant)
        except CapabilityError as err:
            if self._renewable(err):
                # A page reloaded after its link expired: Jupyter's login decides again.
                self.redirect(self._entry_url(name, raw_path))
                return None
            raise capability_refused(name, err) from err
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

    head = put = patch = delete = post

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
            self._upstream_ws.close(sendable_close(self.close_code), self.close_reason)

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
        client = UpstreamClient(force_instance=True, max_body_size=MAX_RESPONSE_BYTES)
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
            self._send_error_json(unreachable(name, url, err))
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
        dropped = HOP_BY_HOP | connection_tokens(headers)
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
        return self.request.headers.get("Sec-Fetch-Dest") in DOCUMENT_DESTINATIONS

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
                self._send_error_json(unreachable(name, url, err))
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
            self._send_error_json(unreachable(name, url, err))
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
        self.close(sendable_close(upstream.close_code), upstream.close_reason)
