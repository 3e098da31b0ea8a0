"""Records derived once per object version, for every reader of a session.
Keyed by ``uid``, ``resourceVersion`` and the position, so ten sockets derive a record once
(docs/explanation/architecture.md). Only each object's latest version is held, and a deleted
object is forgotten: what the memo holds follows the objects the cache holds, not the history
of their changes (a workbench whose clusters come and go for days would otherwise hold a
record of every version of every Workload it ever saw).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

Object = dict[str, Any]
R = TypeVar("R")

DEFAULT_LIMIT = 50_000
"""Objects held at most; past it the memo starts again (the working set is the objects'
count, and a restart costs one derivation each)."""
KEYS_PER_VERSION = 8
"""Records held per object version (one per position it was shown at): the latest ones."""


class RecordMemo(Generic[R]):
    """``derive(obj, *extra)`` remembered per ``(uid, resourceVersion, *extra)``, for each
    object's latest version only. Thread-safe: two threads deriving the same key at once both
    derive (the same value), never wrong."""

    def __init__(self, derive: Callable[..., R], limit: int = DEFAULT_LIMIT) -> None:
        self._derive = derive
        self._limit = limit
        self._held: dict[str, tuple[str, dict[Hashable, R]]] = {}
        """Per uid: the version held and its records by key."""
        self._lock = threading.Lock()
        self.derived = 0
        """Derivations made (a benchmark's or a test's count)."""

    def __len__(self) -> int:
        """Objects held."""
        return len(self._held)

    def get(self, obj: Object, arg: Any, key: Hashable) -> R:
        """``derive(obj, arg)``, where ``key`` is all ``arg`` means to the result."""
        metadata = obj.get("metadata") or {}
        uid, version = metadata.get("uid"), metadata.get("resourceVersion")
        if not uid or not version:
            return self._derive(obj, arg)
        with self._lock:
            held = self._held.get(uid)
            if held is not None and held[0] == version and key in held[1]:
                return held[1][key]
        value = self._derive(obj, arg)
        with self._lock:
            held = self._held.get(uid)
            # Another version's records go (an older version read late replaces a newer one:
            # a later read derives it again, never answers wrong).
            records = held[1] if held is not None and held[0] == version else {}
            if held is None and len(self._held) >= self._limit:
                self._held.clear()
            if len(records) >= KEYS_PER_VERSION:
                del records[next(iter(records))]
            records[key] = value
            self._held[uid] = (version, records)
            self.derived += 1
        return value

    def forget(self, uid: str) -> None:
        """The object ``uid`` is gone: its records go too."""
        with self._lock:
            self._held.pop(uid, None)
