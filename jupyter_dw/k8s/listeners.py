"""Callbacks registered from any thread, each with the function that removes it: a watch
cache's change listeners, the session's watch-health listeners and the position board's.

The owner calls them, outside any lock, with the arguments of its kind of change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

Listener = TypeVar("Listener", bound=Callable[..., None])


class Listeners(Generic[Listener]):
    """A thread-safe list of listeners."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []

    def add(self, listener: Listener) -> Callable[[], None]:
        """Register ``listener``; returns a function that removes it (once; later calls do
        nothing)."""
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def __len__(self) -> int:
        with self._lock:
            return len(self._listeners)

    def now(self) -> list[Listener]:
        """The listeners registered now, to call outside the lock."""
        with self._lock:
            return list(self._listeners)
