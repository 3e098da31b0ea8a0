"""A TLS-terminating proxy in front of a kube-apiserver that injects network faults into the
requests it picks: **cut** (the request reaches the API server, which answers, but the
connection is cut before the answer is relayed: a lost response), **hold** (the request
waits at the proxy, for a delay or until released: a slow API server) or **throttle** (the
proxy answers 429 Too Many Requests exactly as the API server's flow control words it, and
the request never reaches the API server: a busy one. The real API Priority and Fairness
cannot be made to reject on cue: it lets a request through whenever its priority level has
nothing executing, however few seats it has).

The proxy serves its own certificate from its own CA (``ca_file``, for the client's
kubeconfig or service-account ``ca.crt``) and verifies the API server with the cluster's CA.
It rewrites each request to ``Connection: close``, so every request has its own connection
and a fault never touches another request; watches stream through unchanged. It runs an
asyncio loop on one daemon thread and only listens on 127.0.0.1. Test bed only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from .pki import CertificateAuthority

Matcher = Callable[[str, str], bool]
"""``(method, target)`` → whether a fault applies; ``target`` is the path with its query."""

_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection"}
_MAX_HEAD = 1 << 20


def request_to(method: str, path: str, *, dry_run: bool | None = None) -> Matcher:
    """Requests with ``method`` whose path (without query) matches the regex ``path``;
    ``dry_run`` True/False: only server-side dry runs / only real writes."""
    pattern = re.compile(path)

    def match(request_method: str, target: str) -> bool:
        split = urlsplit(target)
        if request_method != method or not pattern.fullmatch(split.path):
            return False
        return dry_run is None or ("dryRun=All" in split.query) == dry_run

    return match


@dataclass
class Fault:
    """One injected fault: which requests, what happens to them, how often it struck."""

    match: Matcher
    action: Literal["cut", "hold", "throttle"]
    times: int | None
    """How many requests it strikes (None: every matching one)."""
    hold_seconds: float | None = None
    """``hold``: how long (None: until :meth:`release`); ``throttle``: the retry advice."""
    hits: int = 0
    struck: threading.Event = field(default_factory=threading.Event)
    """Set once a request was held (on arrival) or cut (after the API server answered)."""
    _release: asyncio.Event = field(default_factory=asyncio.Event)
    _loop: asyncio.AbstractEventLoop | None = None

    def release(self) -> None:
        """Let every held request (and any later one) through."""
        self.times = 0
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._release.set)


class ApiProxy:
    """``with ApiProxy(upstream, upstream_ca, directory) as proxy:`` → ``proxy.url``."""

    def __init__(self, upstream: str, upstream_ca: str | Path, directory: Path) -> None:
        split = urlsplit(upstream)
        assert split.hostname and split.port, upstream
        self.upstream_host, self.upstream_port = split.hostname, split.port
        directory.mkdir(parents=True, exist_ok=True)
        ca = CertificateAuthority(directory, "proxy-ca")
        serving = ca.issue("proxy", "jupyter-dw-test-proxy", hosts=("127.0.0.1",))
        self.ca_file = ca.pair.cert
        self._server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._server_ssl.load_cert_chain(serving.cert, serving.key)
        self._client_ssl = ssl.create_default_context(cafile=str(upstream_ca))
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str, str]] = []
        """``(method, target, outcome)`` of every request: ``passed``, ``cut``, ``held`` or
        ``throttled``."""
        self._open: list[tuple[str, str, asyncio.StreamWriter]] = []
        """Answers being relayed now (a watch's for minutes): what :meth:`sever` can drop."""
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> ApiProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        # A connection accepted while closing: cancel it and let it end, then close the loop.
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.wait(pending))
        self._loop.close()

    def __enter__(self) -> ApiProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    # -- faults ----------------------------------------------------------------------------

    def cut(self, match: Matcher, times: int | None = 1) -> Fault:
        """Forward matching requests, then cut the connection instead of relaying the answer."""
        return self._add(Fault(match, "cut", times))

    def hold(self, match: Matcher, seconds: float | None = None, times: int | None = None) -> Fault:
        """Hold matching requests ``seconds`` (None: until released) before forwarding them."""
        return self._add(Fault(match, "hold", times, seconds))

    def throttle(self, match: Matcher, retry_after: int = 1, times: int | None = None) -> Fault:
        """Answer matching requests 429 as API Priority and Fairness does (its Status body,
        ``details.retryAfterSeconds`` and ``Retry-After``), without forwarding them."""
        return self._add(Fault(match, "throttle", times, retry_after))

    def relaying(self, match: Matcher) -> int:
        """How many matching requests' answers are being relayed now (open watches)."""
        with self._lock:
            return sum(1 for m, t, _ in self._open if match(m, t))

    def sever(self, match: Matcher) -> int:
        """Drop the connections of matching requests whose answers are being relayed now (an
        open watch: the client sees its stream end and opens another); how many were open."""
        with self._lock:
            chosen = [writer for m, t, writer in self._open if match(m, t)]
        for writer in chosen:
            self._loop.call_soon_threadsafe(writer.transport.abort)
        return len(chosen)

    def heal(self) -> None:
        """Remove every fault and release what is held."""
        with self._lock:
            faults, self.faults = self.faults, []
        for fault in faults:
            fault.release()

    def outcomes(self, match: Matcher) -> list[str]:
        """The outcome of each request ``match`` selects, in order."""
        with self._lock:
            return [outcome for m, t, outcome in self.requests if match(m, t)]

    def _add(self, fault: Fault) -> Fault:
        fault._loop = self._loop
        with self._lock:
            self.faults.append(fault)
        return fault

    def _strike(self, method: str, target: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if (fault.times is None or fault.hits < fault.times) and fault.match(
                    method, target
                ):
                    fault.hits += 1
                    return fault
        return None

    def _record(self, method: str, target: str, outcome: str) -> None:
        with self._lock:
            self.requests.append((method, target, outcome))

    # -- the proxy -------------------------------------------------------------------------

    async def _listen(self) -> asyncio.Server:
        return await asyncio.start_server(
            self._spawn, "127.0.0.1", 0, ssl=self._server_ssl, limit=_MAX_HEAD
        )

    async def _close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *lines = head.decode("latin-1").split("\r\n")[:-2]
            method, target, _ = request_line.split(" ", 2)
            headers = [tuple(line.split(":", 1)) for line in lines]
            length = next((int(v) for k, v in headers if k.strip().lower() == "content-length"), 0)
            body = await reader.readexactly(length) if length else b""
            kept = [f"{k}:{v}" for k, v in headers if k.strip().lower() not in _HOP_BY_HOP]
            head = "\r\n".join([request_line, *kept, "Connection: close", "", ""]).encode("latin-1")

            fault = self._strike(method, target)
            if fault is not None and fault.action == "throttle":
                self._record(method, target, "throttled")
                fault.struck.set()
                writer.write(_too_many_requests(int(fault.hold_seconds or 1)))
                await writer.drain()
                writer.close()
                await writer.wait_closed()
                return
            if fault is not None and fault.action == "hold":
                self._record(method, target, "held")
                fault.struck.set()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(fault._release.wait(), fault.hold_seconds)

            up_reader, upstream = await asyncio.open_connection(
                self.upstream_host,
                self.upstream_port,
                ssl=self._client_ssl,
                server_hostname=self.upstream_host,
                limit=_MAX_HEAD,
            )
            upstream.write(head + body)
            await upstream.drain()
            if fault is not None and fault.action == "cut":
                await up_reader.read()  # the whole answer: the API server has done the work
                self._record(method, target, "cut")
                fault.struck.set()
                writer.transport.abort()  # the client sees the connection drop, no answer
                return
            if fault is None:
                self._record(method, target, "passed")
            entry = (method, target, writer)
            with self._lock:
                self._open.append(entry)
            try:
                await _relay(up_reader, writer, reader)
            finally:
                with self._lock:
                    self._open.remove(entry)
            writer.close()  # after what was relayed has been sent
            await writer.wait_closed()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass  # the client or the API server went away (ssl.SSLError is an OSError)
        finally:
            for w in (upstream, writer):
                if w is not None and not w.transport.is_closing():
                    w.transport.abort()


def _too_many_requests(retry_after: int) -> bytes:
    """The answer kube-apiserver's flow control gives a rejected request (its words)."""
    body = json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Too many requests, please try again later.",
            "reason": "TooManyRequests",
            "details": {"retryAfterSeconds": retry_after},
            "code": 429,
        }
    ).encode()
    head = (
        "HTTP/1.1 429 Too Many Requests\r\n"
        "Content-Type: application/json\r\n"
        f"Retry-After: {retry_after}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


async def _relay(
    source: asyncio.StreamReader, sink: asyncio.StreamWriter, client: asyncio.StreamReader
) -> None:
    """Copy the API server's answer (a watch streams for minutes) until it ends or the client
    goes away."""

    async def copy() -> None:
        while chunk := await source.read(1 << 16):
            sink.write(chunk)
            await sink.drain()

    copying = asyncio.ensure_future(copy())
    client_gone = asyncio.ensure_future(client.read(1))
    try:
        await asyncio.wait({copying, client_gone}, return_when=asyncio.FIRST_COMPLETED)
        if copying.done():
            copying.result()
    finally:
        copying.cancel()
        client_gone.cancel()
