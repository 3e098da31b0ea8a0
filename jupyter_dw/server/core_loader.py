"""The extension's core, made off the server's start: once the IO loop runs, on a thread.

Making the core imports most of jupyter_dw (about a hundred modules of services, Kubernetes
and Kueue models) and starts the session's watches; done while jupyter_server starts, it
delayed every start by about a third of a second, whether or not anyone opened the panel
(``benchmarks/bench_startup.py``). So :meth:`CoreLoader.start` is called when the IO loop
starts: the server answers first, and the core is made meanwhile. Every handler waits for it in
``prepare`` (:meth:`CoreLoader.ready`), so a request that comes first is answered once it is
there, never with an error.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.services import DWCore


class CoreLoader:
    """Makes the core once, on a thread of its own; thread-safe."""

    def __init__(self, make: Callable[[], DWCore]) -> None:
        self._make = make
        self._made: Future[DWCore] = Future()
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Make the core on a thread (once; later calls do nothing)."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._run, name="jupyter-dw-core", daemon=True).start()

    def _run(self) -> None:
        try:
            core = self._make()
        except BaseException as err:  # handed to every request that waits (a bug or bad config)
            self._made.set_exception(err)
            return
        self._made.set_result(core)

    def get(self) -> DWCore:
        """The core, made now if not started yet (blocking: never on the IO loop)."""
        self.start()
        return self._made.result()

    async def ready(self) -> DWCore:
        """The core, once made (awaits without blocking the IO loop)."""
        self.start()
        return await asyncio.wrap_future(self._made)

    def stop(self) -> None:
        """Stop the core's session, waiting for a core still being made (blocking): a core
        made as the server stops must not keep watching. Later :meth:`get` calls fail."""
        with self._lock:
            started, self._started = self._started, True  # nothing starts after a stop
        if not started:
            self._made.set_exception(RuntimeError("jupyter_dw is stopped"))
            return
        try:
            core = self._made.result()
        except BaseException:  # never made: nothing to stop
            return
        core.session.stop()

    @property
    def made(self) -> DWCore | None:
        """The core if it is made, else None (never waits)."""
        if self._made.done() and self._made.exception() is None:
            return self._made.result()
        return None
