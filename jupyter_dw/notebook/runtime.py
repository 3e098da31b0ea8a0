"""The kernel's one core: started on first use, shared by every API call, widget and magic.
Never started at import, stopped with the kernel. Live views get the change feed's messages on
the kernel's own loop, never from a watch thread (docs/explanation/architecture.md).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..core.errors import DWError
from ..core.feed_messages import Change, Message
from ..core.settings import DWSettings, load_settings
from ..domain.workload_rows import QueueShown
from .server_core import ServerCore
from .server_feed import ServerFeed
from .server_link import CONNECT_GRACE, EventsFollow, ServerGone, ServerLink, find_link

if TYPE_CHECKING:
    # Imported when the kernel connects on its own (:meth:`KernelRuntime._own_core`): a
    # kernel reading through its server never loads the Kubernetes layer.
    from ..core.feed import ChangeFeed
    from ..core.services import DWCore

log = logging.getLogger(__name__)

Subscriber = Callable[[Message], None]
EVENTS_MODES = ("0", "rows")
"""The events socket's ``?workloads=`` modes a kernel opens, each sent more than the one
before: no Workload, the queue rows (no view of a kernel lists every Workload live)."""


def kernel_base_url(environ: Mapping[str, str] | None = None) -> str:
    """The Jupyter server's base URL as a kernel can know it: ``JUPYTER_DW_BASE_URL``, else
    ``NB_PREFIX`` (set by Open Data Hub and Kubeflow workbenches), else
    ``JUPYTERHUB_SERVICE_PREFIX``, else ``/``. Widgets in a browser use the page's own."""
    environ = os.environ if environ is None else environ
    for variable in ("JUPYTER_DW_BASE_URL", "NB_PREFIX", "JUPYTERHUB_SERVICE_PREFIX"):
        value = environ.get(variable)
        if value:
            return value.rstrip("/") + "/"
    return "/"


@dataclass
class _Subscription:
    callback: Subscriber
    loop: asyncio.AbstractEventLoop


@dataclass(frozen=True)
class Connection:
    """How this kernel reaches Kubernetes: ``server`` (through its Jupyter server's
    jupyter_dw: one connection per workbench) or ``own``; ``why`` says why, in words."""

    mode: str
    why: str

    def to_json(self) -> dict[str, str]:
        """``{"mode", "why"}``."""
        return {"mode": self.mode, "why": self.why}


class KernelRuntime:
    """The kernel process's core, its live feed and its clean-up at shutdown."""

    def __init__(
        self, settings: DWSettings | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        self._settings = settings
        self._environ = environ
        """Where the server's link is looked up (default: the process environment)."""
        self._lock = threading.RLock()
        self._core: DWCore | ServerCore | None = None
        self.connection: Connection | None = None
        """None until first use."""
        self._subscriptions: list[_Subscription] = []
        self._listeners: list[Callable[..., None]] = []
        self._changes: queue.SimpleQueue[Change | None] = queue.SimpleQueue()
        self._feed: ChangeFeed | None = None
        self._feed_thread: threading.Thread | None = None
        self._remove_listener: Callable[[], None] | None = None
        self._events: EventsFollow | None = None
        self._server_feed: ServerFeed | None = None
        self._events_mode = "0"
        """What the open events socket is sent of the Workloads (:data:`EVENTS_MODES`): the
        most any view of this kernel shows."""
        self._expanded: dict[object, frozenset[str]] = {}
        """The queues each rows view shows whole; the socket is asked for their union."""
        self._expand_asked: frozenset[str] = frozenset()
        self._snapshot_seen = threading.Event()
        self._ephemeral: set[str] = set()
        self._atexit = False

    # -- the core ------------------------------------------------------------------------

    @property
    def core(self) -> DWCore:
        """The started core (built and connected on first use; raises the DWError): the
        server's, read through it, when this kernel's Jupyter server runs jupyter_dw
        (``connection`` says which), else one of its own. Both answer the same calls with
        the same types (a :class:`ServerCore` has the methods a kernel calls)."""
        with self._lock:
            if self._core is None:
                settings = self._settings or load_settings()
                self._core = self._connect(settings)
                self._register_shutdown()
            core = self._core
        if isinstance(core, ServerCore):
            return cast("DWCore", core)
        core.session.wait_ready()
        return core

    def _connect(self, settings: DWSettings) -> DWCore | ServerCore:
        if not settings.kernels_through_server:
            why = "kernels_through_server is off"
        else:
            info, why = find_link(self._environ)
            if info is not None:
                link = ServerLink(info, settings.request_timeout)
                try:
                    link.call("session", "identity", [], {}, grace=CONNECT_GRACE)
                except (ServerGone, DWError) as err:
                    why = f"its Jupyter server did not answer ({err}): connected on its own"
                else:
                    self.connection = Connection("server", why)
                    return ServerCore(link, self.add_listener, self._server_gone)
        self.connection = Connection("own", why)
        return self._own_core(settings)

    def _own_core(self, settings: DWSettings) -> DWCore:
        from ..core.services import DWCore

        return DWCore.from_settings(settings, kernel_base_url() + "dw/ray", lazy_watches=True)

    def _server_gone(self, why: str) -> DWCore:
        """The server stopped answering for good: connect on our own, and move the live views
        and waits over. Returns the new core."""
        with self._lock:
            core = self._core
            if core is not None and not isinstance(core, ServerCore):
                return core
            close, self._events = self._events, None
            log.warning("jupyter_dw: %s; this kernel connects to Kubernetes on its own", why)
            own = self._own_core(self._settings or load_settings())
            self._core = own
            self.connection = Connection("own", f"its Jupyter server went away ({why})")
            listeners = list(self._listeners)
            resubscribe = bool(self._subscriptions)
        if close is not None:
            close.close()
        own.session.wait_ready()
        for listener in listeners:
            own.session.add_listener(listener)
        if resubscribe:
            self._start_feed()
        return own

    @property
    def started(self) -> bool:
        """Whether anything has contacted Kubernetes (or the server) yet."""
        core = self._core
        return core is not None and (isinstance(core, ServerCore) or core.session.ready)

    def stop(self) -> None:
        """Delete the ephemeral clusters, stop the feed and the watches."""
        with self._lock:
            core, self._core = self._core, None
            ephemeral, self._ephemeral = set(self._ephemeral), set()
            remove, self._remove_listener = self._remove_listener, None
            close, self._events = self._events, None
            self._server_feed = None
            self._expanded.clear()
            self._subscriptions.clear()
            self._listeners.clear()
            self._feed = None
        if remove is not None:
            remove()
        if close is not None:
            close.close()
        self._changes.put(None)
        if core is None:
            return
        for name in sorted(ephemeral):
            try:
                core.clusters.delete(name)
                log.info("jupyter_dw: deleted ephemeral cluster %s", name)
            except DWError as err:
                log.warning("jupyter_dw: could not delete ephemeral cluster %s: %s", name, err)
        core.session.stop()

    def delete_at_shutdown(self, name: str) -> None:
        """Delete cluster ``name`` when the kernel shuts down (``delete_with_kernel``)."""
        with self._lock:
            self._ephemeral.add(name)

    def forget_at_shutdown(self, name: str) -> None:
        """Cluster ``name`` was deleted already: nothing to do at shutdown."""
        with self._lock:
            self._ephemeral.discard(name)

    def _register_shutdown(self) -> None:
        if not self._atexit:
            # A kernel's process exits on shutdown_request; atexit runs then.
            atexit.register(self.stop)
            self._atexit = True

    # -- live changes ----------------------------------------------------------------------

    def add_listener(self, listener: Callable[..., None]) -> Callable[[], None]:
        """Call ``listener(...)`` (on another thread) after every change the watches see;
        what a wait wakes on. Returns a function that removes it."""
        core = self._core if self._core is not None else self.core
        if not isinstance(core, ServerCore):
            return core.session.add_listener(listener)
        with self._lock:
            self._listeners.append(listener)
        self._open_events()

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def subscribe(
        self,
        callback: Subscriber,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        rows: bool = False,
    ) -> Callable[[], None]:
        """Call ``callback(message)`` on ``loop`` (default: the caller's, i.e. the kernel's)
        for every change message; ``rows``: the view shows queue rows of Workloads (a kernel
        reading through its server is then sent the rows its server chose, as
        ``RowsChanged`` messages, only while such a view is live: see :meth:`told_rows`; on
        its own, the ``workload`` and ``positions`` messages). Returns an unsubscribe
        function."""
        self.core  # noqa: B018  # connected first
        subscription = _Subscription(callback, loop or _current_loop())
        with self._lock:
            self._subscriptions.append(subscription)
        if isinstance(self._core, ServerCore):
            self._open_events("rows" if rows else "0")
        else:
            self._start_feed()

        def unsubscribe() -> None:
            with self._lock:
                if subscription in self._subscriptions:
                    self._subscriptions.remove(subscription)

        return unsubscribe

    def told_rows(self) -> tuple[Mapping[str, QueueShown] | None, DWError | None]:
        """Each LocalQueue's rows as the server chose them for this kernel's rows views, by
        queue (None before a rows subscription, or with the error reading the Workloads)."""
        feed = self._server_feed
        return feed.told_rows() if feed is not None else (None, None)

    def expand_rows(self, view: object, queues: Iterable[str]) -> None:
        """Rows view ``view`` shows ``queues`` whole (none: it is gone); the server is asked
        for every view's, and answers with those queues' rows."""
        with self._lock:
            wanted = frozenset(queues)
            if wanted:
                self._expanded[view] = wanted
            else:
                self._expanded.pop(view, None)
            union = frozenset().union(*self._expanded.values())
            if union == self._expand_asked:
                return
            self._expand_asked = union
            events = self._events
        if events is not None:
            events.send(self._expand_message())

    def _expand_message(self) -> dict[str, Any]:
        return {"type": "expand", "queues": sorted(self._expand_asked)}

    def _greeting(self) -> list[dict[str, Any]]:
        """What a new events socket is told first: the queues shown whole."""
        with self._lock:
            return [self._expand_message()] if self._expand_asked else []

    def _start_feed(self) -> None:
        """The own core's change feed, on its thread (once)."""
        with self._lock:
            core = self._core
            if self._feed is not None or core is None or isinstance(core, ServerCore):
                return
            self._feed = core.change_feed()
            self._remove_listener = self._feed.listen(lambda *change: self._changes.put(change))
            self._feed_thread = threading.Thread(
                target=self._run_feed, args=(self._feed,), name="dw-kernel-feed", daemon=True
            )
            self._feed_thread.start()

    def _open_events(self, mode: str = "0") -> None:
        """The server's events socket, followed on its thread: opened once, and again (told
        against what the first one said) when a view that shows more Workloads comes
        (``mode``, one of :data:`EVENTS_MODES`)."""
        with self._lock:
            core = self._core
            if not isinstance(core, ServerCore):
                return
            before = self._server_feed
            more = EVENTS_MODES.index(mode) > EVENTS_MODES.index(self._events_mode)
            if self._events is None or more:
                if self._events is not None:
                    self._events.close()
                feed = ServerFeed(before)
                self._server_feed = feed
                self._events_mode = mode if more else self._events_mode
                self._snapshot_seen.clear()
                self._events = core.link.open_events(
                    lambda data: self._on_server_message(feed, data),
                    self._events_gone,
                    self._events_mode,
                    self._greeting,
                )
        # What a view reads after subscribing must not be older than the socket's first
        # snapshot: later changes then reach it as messages.
        if not self._snapshot_seen.wait(core.link.timeout):
            log.warning("jupyter_dw: the server's events socket sent no snapshot yet")

    def _events_gone(self, why: str) -> None:
        self._server_gone(why)

    def _on_server_message(self, feed: ServerFeed, data: dict[str, Any]) -> None:
        if feed is not self._server_feed:
            return  # a socket closed for a new one: its last messages are the new one's too
        try:
            messages = feed.messages(data)
        except Exception:  # keep following: the next message may read
            log.exception("jupyter_dw: a message from the server could not be read")
            return
        if feed.snapshots:
            self._snapshot_seen.set()
        self._publish(messages)  # first: a wait woken next finds the views' messages queued
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(data.get("type"))

    def _publish(self, messages: list[Message]) -> None:
        with self._lock:
            subscriptions = list(self._subscriptions)
        for message in messages:
            for sub in subscriptions:
                if not sub.loop.is_closed():
                    sub.loop.call_soon_threadsafe(_deliver, sub.callback, message)

    def _run_feed(self, feed: ChangeFeed) -> None:
        try:
            feed.seed_workloads()  # before any change, so moved positions are told
        except Exception:  # positions of Workloads already waiting are then not followed
            log.exception("jupyter_dw: the Workloads could not be read")
        while True:
            change = self._changes.get()
            if change is None or self._feed is not feed:
                return
            try:
                messages = feed.messages(*change)
            except Exception:  # keep the feed alive for the next change
                log.exception("jupyter_dw: a change could not be read")
                continue
            self._publish(messages)


def _deliver(callback: Subscriber, message: Message) -> None:
    try:
        callback(message)
    except Exception:  # one broken view must not stop the others
        log.exception("jupyter_dw: a live view failed to update")


def _current_loop() -> asyncio.AbstractEventLoop:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.get_event_loop_policy().get_event_loop()


_RUNTIME: KernelRuntime | None = None
_RUNTIME_LOCK = threading.Lock()


def runtime() -> KernelRuntime:
    """This process's runtime (created on first call; connects on first use of ``core``)."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is None:
            _RUNTIME = KernelRuntime()
        return _RUNTIME


def set_runtime(new: KernelRuntime | None) -> KernelRuntime | None:
    """Replace this process's runtime (tests, or a notebook that changes settings); returns
    the old one, which the caller should stop."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        old, _RUNTIME = _RUNTIME, new
    return old
