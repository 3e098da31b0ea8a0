"""A kernel's line to its Jupyter server's jupyter_dw: found by the file the server names in its
kernels' environment, calls over HTTP (:mod:`jupyter_dw.core.kernel_calls`), changes over its
events WebSocket. Loopback only; the secret never leaves this module.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._version import __version__
from ..domain.errors import DWError
from ..names import KERNEL_AUTH_SCHEME, KERNEL_LINK_ENV

log = logging.getLogger(__name__)

CALL_PATH = "dw/api/kernel/call"
EVENTS_PATH = "dw/api/events"
RETURN_GRACE = 30.0
"""Seconds a call waits for a server that stopped answering (a restart) before the kernel
gives up on it and connects on its own."""
CONNECT_GRACE = 3.0
"""Seconds the first call waits for the server the link names: a file left by a server that
died must not hold up the kernel's first cell."""
RECONNECT_DELAYS = (0.2, 0.5, 1.0, 2.0, 5.0)
"""Waits between attempts to re-open the events socket (the last one repeats)."""


class ServerGone(Exception):
    """The server does not answer (within :data:`RETURN_GRACE`) or no longer knows the
    kernel: the kernel connects on its own from then on."""


@dataclass(frozen=True)
class LinkInfo:
    """What the server published: its loopback URL, version and kernel secret."""

    path: Path
    url: str
    version: str
    secret: str


def read_link(path: str | os.PathLike[str]) -> LinkInfo | None:
    """The published file at ``path``; None when missing, unreadable or malformed."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    url, version, secret = data.get("url"), data.get("version"), data.get("secret")
    if not (isinstance(url, str) and isinstance(version, str) and isinstance(secret, str)):
        return None
    return LinkInfo(Path(path), url, version, secret)


def find_link(environ: Mapping[str, str] | None = None) -> tuple[LinkInfo | None, str]:
    """This kernel's server link and why, or None and why not (``dw.context()`` shows it)."""
    environ = os.environ if environ is None else environ
    path = environ.get(KERNEL_LINK_ENV)
    if not path:
        return None, (
            "no Jupyter server with jupyter_dw started this kernel "
            f"({KERNEL_LINK_ENV} is not set: VS Code, another server, or a kernel of its own)"
        )
    info = read_link(path)
    if info is None:
        return None, f"the server's link file {path} is missing or unreadable"
    if info.version != __version__:
        return None, (
            f"the server runs jupyter_dw {info.version}, this kernel {__version__}: "
            "the kernel connects on its own"
        )
    return info, f"through the Jupyter server at {info.url}"


def _context(url: str) -> ssl.SSLContext | None:
    # Loopback to a server of the same pod: its certificate names a host, not 127.0.0.1.
    if not url.startswith("https:"):
        return None
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


class ServerLink:
    """Calls and the change feed of one server, re-reading its file when it restarted (a new
    secret) and waiting up to :data:`RETURN_GRACE` for it to come back."""

    def __init__(self, info: LinkInfo, timeout: float = 60.0, grace: float | None = None) -> None:
        self._info = info
        self.timeout = timeout
        self.grace = RETURN_GRACE if grace is None else grace
        """Seconds a call waits for a server that stopped answering."""
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        """Calls made, by ``service.method`` (tests and benchmarks count them)."""

    @property
    def url(self) -> str:
        """The server's loopback URL (with its base URL)."""
        return self._info.url

    def _headers(self) -> dict[str, str]:
        return {
            "Authorization": f"{KERNEL_AUTH_SCHEME} {self._info.secret}",
            "Content-Type": "application/json",
        }

    def _reread(self) -> bool:
        """Read the file again: True when it names a server of this version (maybe new)."""
        info = read_link(self._info.path)
        if info is None or info.version != __version__:
            return False
        with self._lock:
            self._info = info
        return True

    def call(
        self,
        service: str,
        method: str,
        args: list[Any],
        kwargs: Mapping[str, Any],
        grace: float | None = None,
    ) -> Any:
        """``service.method(*args, **kwargs)`` on the server's core: its JSON answer. Raises the
        core's DWError as the server answered it, or :class:`ServerGone` after ``grace``
        seconds (default :attr:`grace`) without an answer."""
        body = json.dumps(
            {"service": service, "method": method, "args": args, "kwargs": dict(kwargs)}
        ).encode()
        deadline = time.monotonic() + (self.grace if grace is None else grace)
        self.calls[f"{service}.{method}"] += 1
        while True:
            try:
                return self._post(body)
            except _Retry as retry:
                if time.monotonic() >= deadline:
                    raise ServerGone(str(retry)) from None
                time.sleep(0.2)
                self._reread()

    def _post(self, body: bytes) -> Any:
        request = urllib.request.Request(
            self.url + CALL_PATH, data=body, headers=self._headers(), method="POST"
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout, context=_context(self.url)
            ) as answer:
                return json.loads(answer.read())["result"]
        except urllib.error.HTTPError as err:
            data = _json(err.read())
            if err.code in (401, 403) and not (isinstance(data, dict) and "code" in data):
                # Not jupyter_dw's answer: jupyter_server refused the secret (a new server).
                raise _Retry(f"the server refused the kernel's secret ({err.code})") from None
            if err.code == 404 and not (isinstance(data, dict) and "code" in data):
                raise _Retry("the server no longer serves jupyter_dw") from None
            if isinstance(data, dict) and isinstance(data.get("error"), str):
                from ..core.errors import error_from_json

                raise error_from_json(err.code, data) from None
            raise DWError(f"The Jupyter server answered {err.code}", None, None) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
            raise _Retry(f"the server does not answer ({err})") from None

    def open_events(
        self,
        on_message: Callable[[dict[str, Any]], None],
        on_down: Callable[[str], None],
        workloads: str = "1",
        greeting: Callable[[], list[dict[str, Any]]] = list,
    ) -> EventsFollow:
        """Follow the events socket on a thread of its own: ``on_message(json)`` for each
        message (a ``snapshot`` first, and again after each reconnection); ``on_down(why)``
        once the server is gone for good; ``workloads`` is the socket's ``?workloads=``
        (``1`` every Workload, ``rows`` the queue rows, ``0`` none: no view of this kernel
        shows them); ``greeting()`` the messages sent first on each socket opened (what the
        reader asked of the last one). Returns the follow, to send on it and close it."""
        follow = EventsFollow()
        query = f"?workloads={workloads}" if workloads != "1" else ""
        thread = threading.Thread(
            target=lambda: asyncio.run(self._follow(on_message, on_down, follow, query, greeting)),
            name="dw-kernel-events",
            daemon=True,
        )
        thread.start()
        return follow

    async def _follow(
        self,
        on_message: Callable[[dict[str, Any]], None],
        on_down: Callable[[str], None],
        follow: EventsFollow,
        query: str,
        greeting: Callable[[], list[dict[str, Any]]],
    ) -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        failures = 0
        down_since: float | None = None
        stop = follow.stopped
        while not stop.is_set():
            url = "ws" + self.url[len("http") :] + EVENTS_PATH + query
            try:
                socket = await websocket_connect(
                    HTTPRequest(
                        url,
                        headers=self._headers(),
                        validate_cert=not url.startswith("wss:"),
                        connect_timeout=self.timeout,
                    ),
                    compression_options={},
                )
            except Exception as err:  # refused, reset, 403: back off and retry
                down_since = down_since or time.monotonic()
                if time.monotonic() - down_since > self.grace:
                    on_down(f"the server's events socket does not open ({err})")
                    return
                failures += 1
                await asyncio.sleep(RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS)) - 1])
                self._reread()
                continue
            failures, down_since = 0, None
            follow.opened(asyncio.get_running_loop(), socket)
            for message in greeting():  # a new socket knows nothing the last one was asked
                follow.send(message)
            while not stop.is_set():
                try:
                    text = await asyncio.wait_for(socket.read_message(), 1.0)
                except asyncio.TimeoutError:
                    continue
                if text is None:
                    break  # closed: reconnect (the server restarts, or found us too slow)
                data = _json(text)
                # Not kept while waiting for the next message: the snapshot's text and its
                # JSON were 3 MiB of a kernel's board at 5,000 Workloads (1,000 rows).
                text = None
                if isinstance(data, dict):
                    on_message(data)
                data = None
            follow.opened(None, None)
            socket.close()


class EventsFollow:
    """The events socket a thread follows (:meth:`ServerLink.open_events`): what the kernel
    sends on it, and its end."""

    def __init__(self) -> None:
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._socket: Any = None

    def opened(self, loop: asyncio.AbstractEventLoop | None, socket: Any) -> None:
        """The socket now open on ``loop`` (None: none until the next)."""
        with self._lock:
            self._loop, self._socket = loop, socket

    def send(self, message: dict[str, Any]) -> None:
        """Send ``message`` on the open socket (from any thread); with none open, nothing:
        the next one's greeting says it."""
        with self._lock:
            loop, socket = self._loop, self._socket
        if loop is not None and socket is not None and not loop.is_closed():
            text = json.dumps(message)
            loop.call_soon_threadsafe(lambda: _write(socket, text))

    def close(self) -> None:
        """Stop following (the socket closes within a second)."""
        self.stopped.set()


def _write(socket: Any, text: str) -> None:
    try:
        socket.write_message(text)
    except Exception:  # closed meanwhile: the next socket's greeting says it
        log.debug("jupyter_dw: a message to the server's events socket was not sent")


class _Retry(Exception):
    """The server did not answer this time."""


def _json(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
