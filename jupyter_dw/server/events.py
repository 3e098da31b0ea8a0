"""``GET {base_url}dw/api/events``: a WebSocket of the namespace's changes, so pages never poll.
Every tab shares the session's watch caches; each socket has its own backlog and change feed.
Messages: ``openapi.yaml`` (``EventMessage``); the protocol and its limits:
docs/explanation/architecture.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from typing import Any

from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado.ioloop import IOLoop
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from ..core.backlog import DEFAULT_LIMIT, ChangeBacklog
from ..core.errors import DWError
from ..core.feed_messages import Message, PositionsChanged, Snapshot, WorkloadChanged
from ..core.rows_feed import RowsFeed
from ..domain.workloads import WorkloadInfo
from .handlers import AUTH_RESOURCE, KernelAuthMixin
from .job_stream import JobWatches

log = logging.getLogger(__name__)

Object = dict[str, Any]


SLOW_READER_CODE = 1013
GOING_AWAY = 1001
SOCKETS_SETTING = "jupyter_dw_event_sockets"
"""The open events sockets (a set), closed with :data:`GOING_AWAY` when the server stops."""
"""The close code of a socket whose browser fell too far behind (RFC 6455: Try Again Later)."""

COMPRESSION: dict[str, Any] = {"compression_level": 1}
"""permessage-deflate (RFC 7692) for the events socket when the browser offers it (every browser
does), unless ``ServerApp.websocket_compression_options`` says otherwise. A snapshot at 5,000
Workloads is ~3.5 MB of JSON, mostly the same keys again: level 1 makes it a small fraction of
that in a few milliseconds on the IO loop (docs/explanation/benchmarks.md); later messages
compress against the ones before (the context is kept per socket)."""

WORKLOAD_MESSAGES = (WorkloadChanged, PositionsChanged)
"""What a socket opened with ``?workloads=0`` or ``?workloads=rows`` is not sent."""
ROWS = "rows"
"""``?workloads=rows``: a reader that shows queue rows only (a kernel's QueueBoard) is sent
each LocalQueue's rows and count, chosen here (:mod:`jupyter_dw.core.rows_feed`)."""
MAX_EXPANDED = 1000
"""LocalQueues an ``expand`` message may name (a namespace's, with room to spare)."""

HANDSHAKE_HINT = "Open dw/api/events as a WebSocket (new WebSocket(url) in a browser)."
_WEBSOCKET_VERSIONS = ("7", "8", "13")


def handshake_problem(headers: Any) -> str | None:
    """What makes a request no WebSocket handshake tornado would accept (RFC 6455 4.2.1),
    or None."""
    if headers.get("Upgrade", "").lower() != "websocket":
        return 'the request must have "Upgrade: websocket"'
    connection = [part.strip().lower() for part in headers.get("Connection", "").split(",")]
    if "upgrade" not in connection:
        return 'the request must have "Connection: Upgrade"'
    if not headers.get("Sec-WebSocket-Key"):
        return "the request has no Sec-WebSocket-Key"
    if headers.get("Sec-WebSocket-Version") not in _WEBSOCKET_VERSIONS:
        return "the request's Sec-WebSocket-Version is not 13"
    return None


class EventsHandler(
    KernelAuthMixin, ExtensionHandlerMixin, WebSocketMixin, WebSocketHandler, JupyterHandler
):
    """``GET events``: the WebSocket of changes (docs/explanation/architecture.md).

    Like jupyter_server's own sockets: authenticated before the upgrade (no login redirect),
    authorized on the ``jupyter_dw`` resource, origin checked by ``WebSocketMixin`` (which
    also pings to keep the connection alive).
    """

    auth_resource = AUTH_RESOURCE
    backlog_limit = DEFAULT_LIMIT
    """Changed objects waiting for a slow browser before the socket is closed."""

    @ws_authenticated
    @authorized
    async def get(self, *args: Any, **kwargs: Any) -> None:
        """Upgrade to a WebSocket (after jupyter_server's authentication and authorization).
        A request that is no WebSocket handshake gets a JSON 400 (tornado would answer
        text), one from another site a JSON 403."""
        problem = handshake_problem(self.request.headers)
        if problem is not None:
            self._refuse(400, problem, "websocket_required")
            return
        if not self.check_origin():
            self._refuse(403, "Cross-origin WebSockets are not allowed", "cross_origin_refused")
            return
        await super().get(*args, **kwargs)

    def get_compression_options(self) -> dict[str, Any] | None:
        """:data:`COMPRESSION`, or the server's own WebSocket compression when it sets one."""
        return self.settings.get("websocket_compression_options") or COMPRESSION

    def _refuse(self, status: int, reason: str, code: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        error = DWError("Not a WebSocket this server accepts", reason, HANDSHAKE_HINT)
        self.finish(json.dumps({**error.to_json(), "code": code}))

    # -- socket life ---------------------------------------------------------------------

    def open(self, *args: Any, **kwargs: Any) -> None:
        """Listen to the session's caches and start the task that sends messages."""
        super().open(*args, **kwargs)  # WebSocketMixin: keep-alive pings
        self._loop = IOLoop.current()
        self.backlog = ChangeBacklog(self.backlog_limit)
        self._wake = asyncio.Event()
        self._closed = False
        self._stopped = False
        self._given_up = False
        core = self.core
        self._feed = core.change_feed()
        # Registered before the snapshot is read, so no change between the two is lost.
        self._remove_listener = self._feed.listen(self._on_change)
        self._rows = RowsFeed(core.workloads.made_by_me) if self._workloads_mode == ROWS else None
        self._expand: frozenset[str] | None = None
        """The queues the reader last asked to see whole, until the sending task tells it."""
        self._pump = asyncio.ensure_future(self._run())
        self._jobs = JobWatches(core, self.run_blocking, self._send_while_open)
        self.settings[SOCKETS_SETTING].add(self)

    def on_message(self, message: str | bytes) -> None:
        """``watch_jobs`` (see :mod:`.job_stream`), ``expand`` (a rows reader's queues shown
        whole); anything else is ignored."""
        try:
            decoded = json.loads(message)
        except ValueError:
            return
        if not isinstance(decoded, dict):
            return
        if decoded.get("type") == "watch_jobs":
            self._jobs.update(decoded)
        elif decoded.get("type") == "expand" and self._rows is not None:
            queues = decoded.get("queues")
            if isinstance(queues, list) and len(queues) <= MAX_EXPANDED:
                # The sending task tells it, in order with the changes (it owns the rows).
                self._expand = frozenset(q for q in queues if isinstance(q, str))
                self._wake.set()

    def on_close(self) -> None:
        """Stop listening and stop the sending tasks."""
        self._stop()
        self.settings[SOCKETS_SETTING].discard(self)

    def going_away(self) -> None:
        """The server stops: stop sending and close with 1001 ("going away"), so the page
        reconnects to the next server. Called before the extension's threads stop: the
        sending task would otherwise hand its next change to a stopped thread pool and
        report that as a failure."""
        self._stop()
        self.close(GOING_AWAY, "the Jupyter server is stopping")

    def _stop(self) -> None:
        self._closed = True
        if self._stopped:
            return
        self._stopped = True
        self._remove_listener()
        self._pump.cancel()
        self._jobs.stop()

    def _on_change(self, plural: str, event_type: str, obj: Object) -> None:
        """Session listener, on a cache thread: keep the change and wake the sending task."""
        if self._closed:
            return
        if self.backlog.put((plural, event_type, obj)):
            self._loop.add_callback(self._wake.set)
        if self.backlog.overflowed and not self._given_up:
            self._given_up = True
            self._loop.add_callback(self._give_up)

    def _give_up(self) -> None:
        """The browser fell too far behind: close with the reason (the page reconnects and
        starts again from a snapshot)."""
        if self._closed:
            return
        log.warning(
            "jupyter_dw: closing an events socket whose browser reads too slowly "
            "(%d changed objects waiting)",
            len(self.backlog),
        )
        self.close(SLOW_READER_CODE, f"too slow: {self.backlog.limit} changed objects waiting")

    # -- the sending task ----------------------------------------------------------------

    @property
    def _workloads_mode(self) -> str:
        """``?workloads=``: ``0``, a reader that shows no Workload (a kernel's cluster
        widgets), is sent none, neither in its snapshot nor after: at 5,000 Workloads that is
        most of it; :data:`ROWS`, one that shows queue rows, only those; else every one."""
        return self.get_query_argument("workloads", "1")

    @property
    def _wants_workloads(self) -> bool:
        return self._workloads_mode not in ("0", ROWS)

    async def _run(self) -> None:
        try:
            snapshot = await self.run_blocking(self._feed.snapshot)
            if self._rows is not None:
                expand, self._expand = self._expand or frozenset(), None
                snapshot = await self.run_blocking(self._rows_snapshot, snapshot, expand)
            elif not self._wants_workloads:
                snapshot = replace(snapshot, workloads=None, workloads_error=None)
            await self._send(snapshot.to_json())
            while True:
                if self._expand is not None and self._rows is not None:
                    expand, self._expand = self._expand, None
                    for told in await self.run_blocking(self._rows.expand, expand):
                        await self._send(told.to_json())
                change = self.backlog.take()
                if change is None:
                    self._wake.clear()
                    change = self.backlog.take()  # put after the first take, before clear()
                    if change is None:
                        await self._wake.wait()
                        continue
                messages = await self.run_blocking(self._feed.messages, *change)
                if self._rows is not None:
                    messages = await self.run_blocking(self._rows_messages, messages)
                for message in messages:
                    if self._wants_workloads or not isinstance(message, WORKLOAD_MESSAGES):
                        await self._send(message.to_json())
        except (WebSocketClosedError, asyncio.CancelledError):
            return
        except Exception as err:  # a bug: say so and close, rather than go silent
            log.exception("jupyter_dw events socket failed")
            await self._fail(DWError("The events stream failed", f"{type(err).__name__}: {err}"))

    def _rows_snapshot(self, snapshot: Snapshot, expand: frozenset[str]) -> Snapshot:
        """The snapshot a rows reader is sent: the rows of each queue (``expand`` whole)
        instead of every Workload (the rows hold the snapshot's records: references)."""
        assert self._rows is not None
        if snapshot.workloads is None:  # its workloads_error says why; no rows follow
            self._rows = None
            return snapshot
        self.core.workloads.follow_owners()  # what "mine" is read from
        rows = self._rows.reset(snapshot.workloads, expand)
        return replace(snapshot, workloads=None, queue_rows=rows)

    def _rows_messages(self, messages: list[Message]) -> list[Message]:
        """A rows reader's messages: its Workload changes as the queues' rows they change."""
        assert self._rows is not None
        changed: list[tuple[str, WorkloadInfo | None]] = []
        for message in messages:
            if isinstance(message, WorkloadChanged):
                changed.append((message.name, message.workload))
            elif isinstance(message, PositionsChanged):
                changed.extend((info.name, info) for info in message.workloads)
        if not changed:
            return messages
        kept = [m for m in messages if not isinstance(m, WORKLOAD_MESSAGES)]
        return [*kept, *self._rows.put(changed)]

    async def _send(self, message: dict[str, Any]) -> None:
        # Awaiting the write makes a slow browser slow this socket down, not the server.
        await self.write_message(json.dumps(message))

    async def _send_while_open(self, message: dict[str, Any]) -> None:
        if not self._closed:
            try:
                await self._send(message)
            except WebSocketClosedError:
                self._closed = True

    async def _fail(self, err: DWError) -> None:
        try:
            await self._send({"type": "error", **err.to_json()})
        except WebSocketClosedError:
            return
        self.close(1011, err.error[:120])
