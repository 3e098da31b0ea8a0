"""Records derived once per object version, for every reader of a session.
Keyed by ``uid``, ``resourceVersion`` and the position, so ten sockets derive a record once
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

Object = dict[str, Any]
R = TypeVar("R")

DEFAULT_LIMIT = 50_000
"""Records held at most; past it the memo starts again (a change creates few new versions,
so the working set is the objects' count, and a restart costs one derivation each)."""


class RecordMemo(Generic[R]):
    """``derive(obj, *extra)`` remembered per ``(uid, resourceVersion, *extra)``. Thread-safe:
    two threads deriving the same key at once both derive (the same value), never wrong."""

    def __init__(self, derive: Callable[..., R], limit: int = DEFAULT_LIMIT) -> None:
        self._derive = derive
        self._limit = limit
        self._held: dict[tuple[Hashable, ...], R] = {}
        self._lock = threading.Lock()
        self.derived = 0
        """Derivations made (a benchmark's or a test's count)."""

    def get(self, obj: Object, arg: Any, key: Hashable) -> R:
        """``derive(obj, arg)``, where ``key`` is all ``arg`` means to the result."""
        metadata = obj.get("metadata") or {}
        uid, version = metadata.get("uid"), metadata.get("resourceVersion")
        if not uid or not version:
            return self._derive(obj, arg)
        full = (uid, version, key)
        with self._lock:
            if full in self._held:
                return self._held[full]
        value = self._derive(obj, arg)
        with self._lock:
            if len(self._held) >= self._limit:
                self._held.clear()
            self._held[full] = value
            self.derived += 1
        return value
