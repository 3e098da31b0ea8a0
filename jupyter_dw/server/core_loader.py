"""The extension's core, made off the server's start: once the IO loop runs, on a thread.
The server answers first; a request that comes early waits for the core, never errs
(docs/explanation/architecture.md).
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
