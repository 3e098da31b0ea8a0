"""The changes one viewer has not taken yet, at most one per object.
A later change replaces a waiting one (events merged), so a slow viewer never makes the server
hold more than the caches do. Thread-safe. See docs/explanation/architecture.md.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..k8s.watch_events import ADDED, DELETED, MODIFIED

Object = dict[str, Any]
Change = tuple[str, str, Object]
"""``(plural, event_type, object)`` as the session's listeners get it."""

DEFAULT_LIMIT = 20_000
"""Distinct objects waiting before a viewer is given up on: far more than a namespace's
queues, clusters and Workloads change between two reads of a live browser."""


def _key(change: Change) -> tuple[str, str, str]:
    plural, _, obj = change
    metadata = obj.get("metadata") or {}
    return plural, str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _merged(before: str, after: str) -> str:
    """The event a viewer should hear for ``before`` followed by ``after``."""
    if after == MODIFIED and before == ADDED:
        return ADDED
    return after if after != ADDED or before != DELETED else MODIFIED


class ChangeBacklog:
    """Changes in the order their objects first changed, the latest state of each."""

    def __init__(self, limit: int = DEFAULT_LIMIT, key: Callable[[Change], Any] = _key) -> None:
        self.limit = limit
        self.coalesced = 0
        """Changes folded into one already waiting (how much a slow viewer was spared)."""
        self.overflowed = False
        """Set once a change came while ``limit`` objects were waiting (it was not kept)."""
        self._key = key
        self._lock = threading.Lock()
        self._waiting: dict[Any, Change] = {}

    def put(self, change: Change) -> bool:
        """Keep ``change`` (merged with a waiting change of the same object); True when the
        backlog was empty before, i.e. the taker may be asleep."""
        key = self._key(change)
        with self._lock:
            before = self._waiting.get(key)
            if before is not None:
                self._waiting[key] = (change[0], _merged(before[1], change[1]), change[2])
                self.coalesced += 1
                return False
            if len(self._waiting) >= self.limit:
                self.overflowed = True
                return False
            self._waiting[key] = change
            return len(self._waiting) == 1

    def take(self) -> Change | None:
        """The oldest waiting change, or None."""
        with self._lock:
            if not self._waiting:
                return None
            key = next(iter(self._waiting))
            return self._waiting.pop(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)
