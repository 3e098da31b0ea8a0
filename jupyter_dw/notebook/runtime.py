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
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core.errors import DWError
from ..core.feed import Change, ChangeFeed, Message
from ..core.services import DWCore
from ..core.settings import DWSettings, load_settings

log = logging.getLogger(__name__)

Subscriber = Callable[[Message], None]


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


class KernelRuntime:
    """The kernel process's core, its live feed and its clean-up at shutdown."""

    def __init__(self, settings: DWSettings | None = None) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._core: DWCore | None = None
        self._subscriptions: list[_Subscription] = []
        self._changes: queue.SimpleQueue[Change | None] = queue.SimpleQueue()
        self._feed: ChangeFeed | None = None
        self._feed_thread: threading.Thread | None = None
        self._remove_listener: Callable[[], None] | None = None
        self._ephemeral: set[str] = set()
        self._atexit = False

    # -- the core ------------------------------------------------------------------------

    @property
    def core(self) -> DWCore:
        """The started core (built and connected on first use; raises the DWError)."""
        with self._lock:
            if self._core is None:
                settings = self._settings or load_settings()
                self._core = DWCore.from_settings(
                    settings, kernel_base_url() + "dw/ray", lazy_watches=True
                )
                self._register_shutdown()
            core = self._core
        core.session.wait_ready()
        return core

    @property
    def started(self) -> bool:
        """Whether anything has contacted Kubernetes yet."""
        return self._core is not None and self._core.session.ready

    def stop(self) -> None:
        """Delete the ephemeral clusters, stop the feed and the watches."""
        with self._lock:
            core, self._core = self._core, None
            ephemeral, self._ephemeral = set(self._ephemeral), set()
            remove, self._remove_listener = self._remove_listener, None
            self._subscriptions.clear()
            self._feed = None
        if remove is not None:
            remove()
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

    def subscribe(
        self, callback: Subscriber, loop: asyncio.AbstractEventLoop | None = None
    ) -> Callable[[], None]:
        """Call ``callback(message)`` on ``loop`` (default: the caller's, i.e. the kernel's)
        for every change message. Returns an unsubscribe function."""
        core = self.core
        subscription = _Subscription(callback, loop or _current_loop())
        with self._lock:
            self._subscriptions.append(subscription)
            if self._feed is None:
                self._feed = core.change_feed()
                self._remove_listener = self._feed.listen(lambda *change: self._changes.put(change))
                self._feed_thread = threading.Thread(
                    target=self._run_feed, args=(self._feed,), name="dw-kernel-feed", daemon=True
                )
                self._feed_thread.start()

        def unsubscribe() -> None:
            with self._lock:
                if subscription in self._subscriptions:
                    self._subscriptions.remove(subscription)

        return unsubscribe

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
            with self._lock:
                subscriptions = list(self._subscriptions)
            for message in messages:
                for sub in subscriptions:
                    if not sub.loop.is_closed():
                        sub.loop.call_soon_threadsafe(_deliver, sub.callback, message)


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
