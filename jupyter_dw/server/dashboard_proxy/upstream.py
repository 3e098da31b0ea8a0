"""The HTTP client that reaches a dashboard: streamed, and cut off when the browser goes away."""

from __future__ import annotations

from typing import Any

from tornado.iostream import IOStream
from tornado.simple_httpclient import SimpleAsyncHTTPClient
from tornado.tcpclient import TCPClient

CONNECT_TIMEOUT = 10.0
"""Seconds to connect to the dashboard (and finish a WebSocket handshake). There is no limit on
the whole request: log follows and WebSockets stay open as long as both ends want."""
MAX_RESPONSE_BYTES = 1 << 40
"""Responses are streamed, never held in memory: tornado's 100 MB default would only cut off
large log downloads."""


class TrackingTCPClient(TCPClient):
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


class UpstreamClient(SimpleAsyncHTTPClient):
    """tornado's AsyncHTTPClient (the simple implementation), one per proxied request, whose
    connections can be aborted with :meth:`abort`."""

    def initialize(self, **kwargs: Any) -> None:  # type: ignore[override]
        super().initialize(**kwargs)
        # fetch() connects through self.tcp_client: swap in one that remembers its streams.
        self.tcp_client.close()
        self._tracker = TrackingTCPClient(resolver=self.resolver)
        self.tcp_client = self._tracker

    def abort(self) -> None:
        """Close the upstream connection: the pending fetch fails with a closed stream."""
        self._tracker.abort()
