"""A gateway that routes by path, ``/<cluster>/...`` → one local Ray head, for the demo and
the quickstart test.

KWOK pods run no Ray, so a real Ray head on 127.0.0.1 stands in for every RayCluster's. The
product reaches a cluster's head through the ``ray_dashboard_url`` template, which must name
the cluster (``{name}``): ``http://127.0.0.1:<gateway>/{name}`` is the shape of a real
deployment whose dashboards sit behind a gateway that routes by path (the setting's own
example), and the gateway strips the ``/<cluster>`` prefix. HTTP requests and WebSockets (Ray's
job log tail) are relayed as they are, ``Authorization`` included: the head checks the token.
Each request received is counted per cluster (:class:`RequestCount`, for the benchmarks).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.httpserver import HTTPServer
from tornado.web import Application
from tornado.websocket import WebSocketClientConnection, WebSocketHandler, websocket_connect

from .controlplane import free_port

# Hop-by-hop and framing headers: the relay's own connection sets them.
_NOT_RELAYED = {"connection", "content-length", "transfer-encoding", "host", "keep-alive"}
_NAME = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
MAX_MESSAGE = 64 * 1024 * 1024


class RequestCount:
    """How many requests (HTTP, and WebSocket handshakes) the gateway received per cluster
    name; thread-safe (the gateway counts on its own thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, name: str) -> None:
        with self._lock:
            self._counts[name] += 1

    def snapshot(self) -> Counter[str]:
        """The counts so far (a copy)."""
        with self._lock:
            return Counter(self._counts)


class _Relay(WebSocketHandler):
    """One request to ``/<cluster>/<path>``: relayed to the head's ``/<path>``."""

    def initialize(self, head: str, counts: RequestCount | None = None) -> None:
        self.head = head
        self.counts = counts
        self.upstream: WebSocketClientConnection | None = None

    def prepare(self) -> None:
        if self.counts is not None and self.path_args:
            self.counts.add(self.path_args[0])

    def check_origin(self, origin: str) -> bool:
        return True  # a stand-in for a network gateway, which has no notion of origin

    def _target(self, path: str, scheme: str = "http") -> str:
        query = f"?{self.request.query}" if self.request.query else ""
        return f"{scheme}://{self.head}/{path}{query}"

    def _request_headers(self) -> dict[str, str]:
        return {k: v for k, v in self.request.headers.get_all() if k.lower() not in _NOT_RELAYED}

    async def get(self, name: str, path: str) -> None:  # type: ignore[override]
        if self.request.headers.get("Upgrade", "").lower() != "websocket":
            await self._http(name, path)
            return
        request = HTTPRequest(
            self._target(path, "ws"),
            # The handshake's own headers are the client connection's to make.
            headers={
                k: v for k, v in self._request_headers().items() if "websocket" not in k.lower()
            },
        )
        try:
            self.upstream = await websocket_connect(request, max_message_size=MAX_MESSAGE)
        except HTTPClientError as err:  # the head refused the handshake (401/403/404)
            self.set_status(err.code)
            self.finish(err.response.body if err.response else b"")
            return
        await super().get(name, path)

    def open(self, *_: Any) -> None:
        self.relaying = asyncio.ensure_future(self._downstream())

    async def _downstream(self) -> None:
        assert self.upstream is not None
        while (message := await self.upstream.read_message()) is not None:
            await self.write_message(message, binary=isinstance(message, bytes))
        self.close()

    def on_message(self, message: str | bytes) -> None:
        if self.upstream is not None:
            self.upstream.write_message(message, binary=isinstance(message, bytes))

    def on_close(self) -> None:
        if self.upstream is not None:
            self.upstream.close()

    async def _http(self, name: str, path: str) -> None:
        method = self.request.method or "GET"
        body = self.request.body if method in ("POST", "PUT", "PATCH") else None
        response = await AsyncHTTPClient().fetch(
            HTTPRequest(
                self._target(path),
                method=method,
                headers=self._request_headers(),
                body=body,
                follow_redirects=False,
                decompress_response=False,
                allow_nonstandard_methods=True,
                request_timeout=120,
            ),
            raise_error=False,
        )
        if response.code == 599:  # no answer at all
            self.set_status(502)
            self.finish(f"the Ray head did not answer: {response.error}")
            return
        self.set_status(response.code, response.reason)
        for key, value in response.headers.get_all():
            if key.lower() in _NOT_RELAYED:
                continue
            if key.lower() == "location" and value.startswith("/"):
                value = f"/{name}{value}"  # the prefix the client knows the head by
            self.add_header(key, value)
        self.finish(response.body or b"")

    async def post(self, name: str, path: str) -> None:
        await self._http(name, path)

    put = patch = delete = head = options = post


@contextlib.contextmanager
def ray_gateway(head_port: int, counts: RequestCount | None = None) -> Iterator[int]:
    """Serve the gateway on 127.0.0.1 in a thread of its own; yields its port. ``counts``:
    where to count the requests received per cluster."""
    port = free_port()
    ready = threading.Event()
    loop = asyncio.new_event_loop()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        app = Application(
            [(rf"/({_NAME})/?(.*)", _Relay, {"head": f"127.0.0.1:{head_port}", "counts": counts})],
            websocket_max_message_size=MAX_MESSAGE,
        )
        server = HTTPServer(app, max_body_size=MAX_MESSAGE)
        server.listen(port, "127.0.0.1")
        loop.call_soon(ready.set)
        loop.run_forever()
        server.stop()
        loop.run_until_complete(server.close_all_connections())
        loop.close()

    thread = threading.Thread(target=serve, name="ray-gateway", daemon=True)
    thread.start()
    ready.wait(timeout=30)
    try:
        yield port
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
