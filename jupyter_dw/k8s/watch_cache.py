"""A list+watch cache of one Kubernetes resource, kept current on its own thread: client-go's
reflector (list, then watch from its resourceVersion with bookmarks; list again only on 410),
with its health, indexes and per-page projection. The protocol and why it holds are
docs/explanation/watch-health.md's "The watch cache"."""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import urllib3

from ..domain.errors import DWError
from ..domain.freshness import LIVE, RECONNECTING, STALE, Freshness
from .errors import KubeConfigError, KubeError, KubeForbidden, KubeUnauthorized
from .listeners import Listeners
from .projection import Projection
from .resources import Resource
from .watch_events import ADDED, BOOKMARK, DELETED, ERROR, MODIFIED

if TYPE_CHECKING:
    from .client import KubeApi

log = logging.getLogger(__name__)

Object = dict[str, Any]
Listener = Callable[[str, Object], None]
"""Called with ``(event_type, object)``: ``ADDED``, ``MODIFIED`` or ``DELETED``."""
IndexFunc = Callable[[Object], Iterable[str]]
"""The index values of an object (none, one or several), like client-go's ``IndexFunc``."""
HealthListener = Callable[[Freshness], None]
"""Called with the cache's new :class:`Freshness` whenever its state or reason changes."""
InterruptionListener = Callable[[], None]
"""Called when a watch was interrupted: see ``WatchCache(on_interrupted=...)``."""

GONE = 410
LIST_PAGE_SIZE = 100
"""Objects per list page. A page's full objects are held until projected: with 500 (client-go's
default) a cache of 5,000 Workloads and 5,000 pods left the process 56 MiB larger, with 100
27 MiB (benchmarks/bench_memory.py). More pages cost only at a (re-)list."""
HEALTHY_WATCH_SECONDS = 5.0
"""A watch open this long before it failed was healthy: its failure starts a new backoff."""
DEFAULT_IDLE_TIMEOUT = 180.0
"""Seconds without any byte on a watch (events, bookmarks) before it is taken for dead."""
EARLY_END_MARGIN = 5.0
"""A watch the API server ends more than this many seconds before its ``timeoutSeconds`` was
ended on purpose (its storage torn down, the server shutting down), not by its timeout."""


class WatchStream(Protocol):
    """Raw watch events (``{"type", "object"}`` dicts); ``close`` may be called from another
    thread and must make a blocked iteration end promptly."""

    lasts: float | None
    """The seconds the watch was opened for (its ``timeoutSeconds``), None when unbounded."""

    def __iter__(self) -> Iterator[Object]: ...

    def close(self) -> None: ...


class ListWatch(Protocol):
    """How a cache lists and watches its resource (real API calls, or a fake in tests)."""

    description: str

    def list(self, project: Projection | None = None) -> tuple[list[Object], str]:
        """All objects and the list's ``resourceVersion``; with ``project``, each object's
        projection, made as each page arrives (a cache with a projection asks for this)."""
        ...

    def watch(self, resource_version: str) -> WatchStream:
        """A watch starting after ``resource_version`` (with bookmarks)."""
        ...


class ResourceGone(Exception):
    """The watched resourceVersion is too old (HTTP 410 Gone): list again."""


class WatchFailed(Exception):
    """An ``ERROR`` event other than 410 in a watch stream."""


class WatchIdle(Exception):
    """Nothing arrived on a watch for its idle timeout: the connection is taken for dead."""


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: ``initial``, doubling, capped at ``maximum``."""

    initial: float = 0.5
    maximum: float = 30.0
    reconnect_maximum: float = 1.0
    """The cap while reconnecting (an unreachable API server): it comes back by itself, and
    then the caches should follow within seconds."""

    def delay(self, attempt: int, reconnecting: bool = False) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        cap = min(self.maximum, self.reconnect_maximum) if reconnecting else self.maximum
        ceiling = min(cap, self.initial * (2 ** min(attempt, 16)))
        return random.uniform(ceiling / 2, ceiling)


def object_key(obj: Object) -> tuple[str, str]:
    """``(namespace, name)`` of an object (namespace ``""`` when cluster-scoped)."""
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def label_index(label: str) -> IndexFunc:
    """An index on the value of ``label`` (objects without the label are not indexed)."""

    def values(obj: Object) -> Iterable[str]:
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(label)
        return (str(value),) if value else ()

    return values


def uid_index(obj: Object) -> Iterable[str]:
    """An index on ``metadata.uid``."""
    uid = (obj.get("metadata") or {}).get("uid")
    return (str(uid),) if uid else ()


def _resource_version(obj: Object) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv else None


class WatchCache:
    """Objects of one resource, listed once and then kept current by watching.

    Start with :meth:`start`; :meth:`wait_synced` returns once the first list is in.
    :meth:`snapshot` returns the current objects (shared dicts: do not mutate them).
    Listeners get every change, on the cache's thread, after the snapshot reflects it; a
    re-list after 410 is reported as the ADDED/MODIFIED/DELETED events it amounts to.
    ``indexes`` name functions whose values :meth:`by_index` looks objects up by (a label
    value, the UID): answers in memory instead of scanning or listing per request.
    ``projection`` is what is kept of each object (:mod:`.projection`; default: all of it).
    ``inherited`` is what an earlier cache of the same resource held when it was stopped:
    the first list is then told against it (what went away meanwhile comes as DELETED, what
    is unchanged as nothing), not against an empty cache.
    ``on_interrupted`` is called (on the cache's thread) when the API server ends a watch
    well before its ``timeoutSeconds`` (it does so about a second after the resource's CRD
    changed, tearing down its storage, and when it shuts down), and when a list or watch opens
    again after failures (the API server is back): moments when what it serves may have
    changed. Not for a watch ended by its timeout, a silent one re-opened, or a 410.
    """

    def __init__(
        self,
        list_watch: ListWatch,
        *,
        name: str | None = None,
        backoff: Backoff | None = None,
        min_watch_seconds: float = 1.0,
        indexes: Mapping[str, IndexFunc] | None = None,
        on_health: HealthListener | None = None,
        projection: Projection | None = None,
        inherited: Mapping[tuple[str, str], Object] | None = None,
        on_interrupted: InterruptionListener | None = None,
    ) -> None:
        self.name = name or list_watch.description
        # What is kept of each object listed or watched (see .projection), before any
        # reader, index or listener sees it.
        self._project = projection
        self._lw = list_watch
        self._backoff = backoff or Backoff()
        # A watch that ends faster than this (without events) counts as a failure, so a
        # server that closes watches at once cannot make us spin.
        self._min_watch_seconds = min_watch_seconds
        self._lock = threading.Condition()
        self._objects: dict[tuple[str, str], Object] = {}
        # Read by the first list only (not served before it: it may be long out of date).
        self._inherited: dict[tuple[str, str], Object] = dict(inherited or {})
        self._index_funcs: dict[str, IndexFunc] = dict(indexes or {})
        # index name -> value -> keys of the objects with that value; kept under _lock.
        self._indexes: dict[str, dict[str, set[tuple[str, str]]]] = {
            index: {} for index in self._index_funcs
        }
        self._listeners: Listeners[Listener] = Listeners()
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._thread: threading.Thread | None = None
        self._stream: WatchStream | None = None
        self._resource_version: str | None = None
        self._watch_opened: float | None = None
        self._last_error: BaseException | None = None
        self._generation = 0
        self._health = Freshness(RECONNECTING, "first list not done yet", time.time())
        self._on_health = on_health
        self._on_interrupted = on_interrupted
        self._failing = False  # a list or watch failed since the last one that opened
        self.relists = 0
        """How many times the cache listed (1 + one per 410 Gone); for diagnostics."""
        self.idle_reopens = 0
        """How many watches were re-opened because they went silent; for diagnostics."""

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the background list+watch thread (idempotent)."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._run, name=f"dw-watch-{self.name}", daemon=True
            )
        self._thread.start()

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called (the watch is open or being re-opened)."""
        return self._thread is not None

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching; interrupts a blocked watch read and joins the thread."""
        self._stop.set()
        with self._lock:
            stream, thread = self._stream, self._thread
            self._lock.notify_all()
        if stream is not None:
            _close_quietly(stream)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def wait_synced(
        self,
        timeout: float | None = None,
        give_up: Callable[[BaseException], bool] | None = None,
    ) -> bool:
        """Block until the first list has been stored; False on timeout or stop, or as soon
        as a list/watch failure satisfies ``give_up`` (e.g. a 403 that retrying won't fix)."""
        with self._lock:
            self._lock.wait_for(
                lambda: (
                    self._synced.is_set()
                    or self._stop.is_set()
                    or (
                        give_up is not None
                        and self._last_error is not None
                        and give_up(self._last_error)
                    )
                ),
                timeout,
            )
            return self._synced.is_set()

    # -- reading -------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """True once the first list has been stored."""
        return self._synced.is_set()

    @property
    def resource_version(self) -> str | None:
        """The last resourceVersion seen (list, event or bookmark)."""
        return self._resource_version

    @property
    def last_error(self) -> BaseException | None:
        """The most recent list/watch failure, cleared by the next successful list or event."""
        return self._last_error

    @property
    def watching(self) -> bool:
        """Whether a watch stream is open now (for diagnostics and tests)."""
        return self._stream is not None

    @property
    def health(self) -> Freshness:
        """Whether the cache follows the API server now (see the module docstring)."""
        return self._health

    @property
    def generation(self) -> int:
        """A counter that grows with every change to the snapshot."""
        return self._generation

    @property
    def listener_count(self) -> int:
        """How many listeners are registered (for diagnostics: one per open events socket)."""
        return len(self._listeners)

    def objects(self) -> dict[tuple[str, str], Object]:
        """What the cache holds, by (namespace, name): what a cache made after this one is
        stopped inherits (see ``inherited``)."""
        with self._lock:
            return dict(self._objects) if self.relists else dict(self._inherited)

    def snapshot(self) -> list[Object]:
        """The current objects, sorted by namespace and name."""
        with self._lock:
            return [self._objects[k] for k in sorted(self._objects)]

    def versioned_snapshot(self) -> tuple[int, list[Object]]:
        """:attr:`generation` and :meth:`snapshot` read under one lock: the generation names
        exactly these objects, so what is derived from them can be keyed on it."""
        with self._lock:
            return self._generation, [self._objects[k] for k in sorted(self._objects)]

    def get(self, name: str, namespace: str = "") -> Object | None:
        """One object by name (and namespace for namespaced resources)."""
        with self._lock:
            return self._objects.get((namespace, name))

    def by_index(self, index: str, value: str) -> list[Object]:
        """The objects whose ``index`` function gives ``value``, sorted by namespace and name.

        Raises ``KeyError`` for an index the cache was not created with.
        """
        with self._lock:
            keys = self._indexes[index].get(value, ())
            return [self._objects[key] for key in sorted(keys)]

    def wait_for_change(self, since: int, timeout: float | None = None) -> int:
        """Block until :attr:`generation` exceeds ``since`` (or timeout); return it."""
        with self._lock:
            self._lock.wait_for(lambda: self._generation > since or self._stop.is_set(), timeout)
            return self._generation

    def wait_until(
        self, predicate: Callable[[list[Object]], bool], timeout: float | None = None
    ) -> bool:
        """Block until ``predicate(snapshot)`` holds (checked on every change); False on
        timeout or stop."""
        with self._lock:
            return (
                self._lock.wait_for(
                    lambda: (
                        self._stop.is_set()
                        or (self._synced.is_set() and predicate(self.snapshot()))
                    ),
                    timeout,
                )
                and not self._stop.is_set()
            )

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Register ``listener(event_type, obj)``; returns a function that removes it."""
        return self._listeners.add(listener)

    # -- the reflector loop --------------------------------------------------------------

    def _run(self) -> None:
        attempt = 0  # consecutive failures: the backoff's exponent
        failing: type[BaseException] | None = None  # the kind of the last failure
        gone_in_a_row = 0  # 410s with no healthy watch between them
        needs_list = True
        while not self._stop.is_set():
            try:
                if needs_list:
                    self._relist()
                    needs_list = False
                if self._watch_once():
                    attempt, gone_in_a_row = 0, 0
                    continue  # the server ended the watch: resume from the last version
                # Ended at once without events: treat like a failure to avoid spinning.
                raise WatchFailed("watch ended immediately")
            except WatchIdle as idle:
                log.info("%s: %s; re-opening it", self.name, idle)
                self.idle_reopens += 1
                attempt = 0
                continue  # at once, from the last version: a new connection
            except ResourceGone:
                log.info(
                    "%s: resourceVersion %s is gone (410); listing again",
                    self.name,
                    self._resource_version,
                )
                needs_list = True
                # What the cache holds may be old until the new list is in.
                self._observe(RECONNECTING, "watch history expired (410 Gone): listing again")
                gone_in_a_row = 1 if self._watch_was_healthy() else gone_in_a_row + 1
                if gone_in_a_row == 1:  # the normal case: list again at once
                    continue
            except Exception as err:
                if self._stop.is_set():
                    break
                self._failing = True
                with self._lock:
                    self._last_error = err
                    self._lock.notify_all()  # wake wait_synced(give_up=...)
                if type(err) is not failing or self._watch_was_healthy():
                    # A new incident (a watch that had been fine broke), or a new kind of
                    # failure (the API server back but not ready yet): retried soon, not after
                    # the backoff an earlier one built up.
                    failing, attempt = type(err), 0
                permanent = isinstance(err, KubeForbidden | KubeUnauthorized | KubeConfigError)
                self._observe(STALE if permanent else RECONNECTING, _health_reason(err))
                # KubeApi already logged a failed call; say only that we retry.
                level = logging.DEBUG if isinstance(err, DWError) else logging.WARNING
                log.log(level, "%s: list/watch failed (%s); retrying", self.name, _describe(err))
            reconnecting = self._health.state == RECONNECTING
            if self._stop.wait(self._backoff.delay(attempt, reconnecting)):
                break
            attempt += 1
        log.debug("%s: watch thread stopped", self.name)

    def _relist(self) -> None:
        if self._project is None:
            items, resource_version = self._lw.list()
        else:
            # Projected page by page: a list of every full object first would raise the
            # process's memory to the full objects' size for good (the allocator keeps it).
            items, resource_version = self._lw.list(self._project)
        fresh = {object_key(obj): obj for obj in items}
        events: list[tuple[str, Object]] = []
        with self._lock:
            old = self._objects if self.relists else self._inherited
            self._inherited = {}
            for key, obj in old.items():
                if key not in fresh:
                    events.append((DELETED, obj))
            for key, obj in fresh.items():
                before = old.get(key)
                if before is None:
                    events.append((ADDED, obj))
                elif _resource_version(before) != _resource_version(obj):
                    events.append((MODIFIED, obj))
            self._objects = fresh
            self._reindex()
            self._resource_version = resource_version
            self._last_error = None
            self.relists += 1
            self._generation += 1
            self._synced.set()  # before notify, so woken waiters see the cache as synced
            self._lock.notify_all()
        for event_type, obj in events:
            self._notify(event_type, obj)
        self._observe(LIVE, None)
        self._opened()

    def _observe(self, state: str, reason: str | None) -> None:
        """Record an observation of the cache's health; tell the listener if it changed."""
        with self._lock:
            before = self._health
            self._health = before.moved_to(state, reason, time.time())
            changed = (self._health.state, self._health.reason) != (before.state, before.reason)
            health = self._health
        if changed and self._on_health is not None and not self._stop.is_set():
            try:
                self._on_health(health)
            except Exception:  # a broken listener must not stop the cache
                log.exception("%s: health listener failed", self.name)

    def _watch_was_healthy(self) -> bool:
        """Whether the last watch had been open for a while before it ended (so its failure
        starts a new incident rather than continuing the previous one)."""
        opened = self._watch_opened
        return opened is not None and time.monotonic() - opened >= HEALTHY_WATCH_SECONDS

    def _watch_once(self) -> bool:
        """Follow one watch stream to its end; True if it delivered anything."""
        self._watch_opened = None
        resource_version = self._resource_version or ""
        stream = self._lw.watch(resource_version)
        with self._lock:
            self._stream = stream
        if self._stop.is_set():  # stop() ran while the watch was being opened
            _close_quietly(stream)
            return False
        # Opened from the remembered version: the API server sends every change since.
        self._observe(LIVE, None)
        self._opened()
        delivered = False
        started = self._watch_opened = time.monotonic()
        try:
            for event in stream:
                if self._stop.is_set():
                    break
                self._apply(event)
                delivered = True
        finally:
            with self._lock:
                self._stream = None
            _close_quietly(stream)
        lasted = time.monotonic() - started
        if stream.lasts is not None and lasted < stream.lasts - EARLY_END_MARGIN:
            self._interrupted(f"the API server ended the watch after {lasted:.0f}s")
        return delivered or lasted >= self._min_watch_seconds

    def _opened(self) -> None:
        """A list or watch opened: after failures, that is an interruption to tell."""
        if self._failing:
            self._failing = False
            self._interrupted("open again after failures")

    def _interrupted(self, why: str) -> None:
        log.debug("%s: interrupted (%s)", self.name, why)
        if self._on_interrupted is None or self._stop.is_set():
            return
        try:
            self._on_interrupted()
        except Exception:  # a broken listener must not stop the cache
            log.exception("%s: interruption listener failed", self.name)

    def _apply(self, event: Object) -> None:
        event_type = event.get("type")
        obj = event.get("object") or {}
        if event_type == ERROR:
            if obj.get("code") == GONE:
                raise ResourceGone(obj.get("message", "410 Gone"))
            raise WatchFailed(f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}")
        resource_version = _resource_version(obj)
        if event_type == BOOKMARK:
            # Bookmarks carry only a newer resourceVersion: resume from it next time.
            if resource_version:
                self._resource_version = resource_version
            return
        if event_type not in (ADDED, MODIFIED, DELETED):
            log.debug("%s: ignoring watch event %r", self.name, event_type)
            return
        if self._project is not None:
            obj = self._project(obj)
        key = object_key(obj)
        with self._lock:
            before = self._objects.pop(key, None)
            if before is not None:
                self._unindex(key, before)
            if event_type != DELETED:
                self._objects[key] = obj
                self._index(key, obj)
            if resource_version:
                self._resource_version = resource_version
            self._last_error = None
            self._generation += 1
            self._lock.notify_all()
        self._notify(event_type, obj)

    # -- indexes (callers hold _lock) ------------------------------------------------------

    def _index_values(self, index: str, obj: Object) -> set[str]:
        try:
            return {str(value) for value in self._index_funcs[index](obj)}
        except Exception:  # a malformed object must not break the cache
            log.exception("%s: index %r failed on %s", self.name, index, object_key(obj))
            return set()

    def _index(self, key: tuple[str, str], obj: Object) -> None:
        for index, values in self._indexes.items():
            for value in self._index_values(index, obj):
                values.setdefault(value, set()).add(key)

    def _unindex(self, key: tuple[str, str], obj: Object) -> None:
        for index, values in self._indexes.items():
            for value in self._index_values(index, obj):
                keys = values.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del values[value]

    def _reindex(self) -> None:
        self._indexes = {index: {} for index in self._index_funcs}
        for key, obj in self._objects.items():
            self._index(key, obj)

    def _notify(self, event_type: str, obj: Object) -> None:
        for listener in self._listeners.now():
            try:
                listener(event_type, obj)
            except Exception:  # a broken listener must not stop the cache
                log.exception("%s: listener %r failed", self.name, listener)


# --------------------------------------------------------------------------------------------
# The real list/watch over the API server
# --------------------------------------------------------------------------------------------


class ApiListWatch:
    """List and watch ``resource`` (in ``namespace``, or cluster-wide) through a KubeApi."""

    def __init__(
        self,
        api: KubeApi,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        watch_timeout: tuple[int, int] = (300, 600),
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self._api = api
        self._resource = resource
        self._namespace = namespace if resource.namespaced else None
        self._selectors: list[tuple[str, str]] = []
        if label_selector:
            self._selectors.append(("labelSelector", label_selector))
        if field_selector:
            self._selectors.append(("fieldSelector", field_selector))
        # Like client-go: spread watch renewals over 5-10 minutes.
        self._watch_timeout = watch_timeout
        # The longest silence tolerated on a watch: bookmarks come about once a minute.
        self._idle_timeout = idle_timeout
        where = f" in {self._namespace}" if self._namespace else ""
        self.description = f"{resource.qualified}{where}"

    def list(self, project: Projection | None = None) -> tuple[list[Object], str]:
        """List every page (each object projected by ``project`` as its page arrives); the
        first page's resourceVersion is the snapshot's."""
        path = self._resource.path(self._namespace)
        items: list[Object] = []
        continue_token = ""
        resource_version = ""
        while True:
            query: list[tuple[str, str | int | bool]] = [*self._selectors]
            query.append(("limit", LIST_PAGE_SIZE))
            if continue_token:
                query.append(("continue", continue_token))
            try:
                page = self._api.get(path, query)
            except KubeError as err:
                if continue_token and getattr(err, "api_status", None) == GONE:
                    raise ResourceGone("list continuation expired") from err
                raise
            found = page.get("items") or []
            items.extend(found if project is None else [project(obj) for obj in found])
            metadata = page.get("metadata") or {}
            resource_version = resource_version or str(metadata.get("resourceVersion") or "")
            continue_token = str(metadata.get("continue") or "")
            if not continue_token:
                return items, resource_version

    def watch(self, resource_version: str) -> WatchStream:
        """Open a watch with bookmarks from ``resource_version``."""
        timeout = random.randint(*self._watch_timeout)
        query: list[tuple[str, str | int | bool]] = [
            *self._selectors,
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout),
        ]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        try:
            response = self._api.stream(
                self._resource.path(self._namespace),
                query,
                read_timeout=min(timeout + 60, self._idle_timeout),
            )
        except KubeError as err:
            if getattr(err, "api_status", None) == GONE:
                raise ResourceGone(str(err)) from err
            raise
        return HttpWatchStream(response, self._idle_timeout, lasts=timeout)


class HttpWatchStream:
    """Watch events read line by line from a streaming HTTP response whose read timeout is
    ``idle_timeout``: a silence that long raises :class:`WatchIdle`. ``lasts``: the watch's
    ``timeoutSeconds``."""

    def __init__(
        self, response: Any, idle_timeout: float | None = None, lasts: float | None = None
    ) -> None:
        self._response = response
        self._idle_timeout = idle_timeout
        self._closed = False
        self.lasts = lasts

    def __iter__(self) -> Iterator[Object]:
        try:
            yield from self._events()
        except urllib3.exceptions.ReadTimeoutError as err:
            if self._closed:
                return
            raise WatchIdle(f"no event or bookmark for {self._idle_timeout:g}s") from err

    def _events(self) -> Iterator[Object]:
        for line in _lines(self._response.stream(amt=None, decode_content=True)):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                log.warning("ignoring an undecodable watch line (%d bytes)", len(line))
                continue
            if isinstance(event, dict):
                yield event

    def close(self) -> None:
        """Interrupt a blocked read (socket shutdown) and release the connection."""
        if self._closed:
            return
        self._closed = True
        # shutdown() wakes a read blocked on another thread; it fails when the connection is
        # already released, and then close() alone suffices.
        with contextlib.suppress(Exception):
            self._response.shutdown()
        with contextlib.suppress(Exception):
            self._response.close()
            self._response.release_conn()


def _lines(chunks: Iterable[bytes | str]) -> Iterator[str]:
    buffer = bytearray()
    for chunk in chunks:
        buffer.extend(chunk.encode() if isinstance(chunk, str) else chunk)
        while (newline := buffer.find(b"\n")) != -1:
            yield buffer[:newline].decode("utf-8", errors="replace")
            del buffer[: newline + 1]
    if buffer:
        yield buffer.decode("utf-8", errors="replace")


def _close_quietly(stream: WatchStream) -> None:
    try:
        stream.close()
    except Exception:
        log.debug("closing a watch stream failed", exc_info=True)


def _health_reason(err: BaseException) -> str:
    """Why a cache is not live, for a user: the denied permission for a 403."""
    if isinstance(err, KubeForbidden) and err.denied:
        return f"forbidden: this identity may no longer {err.denied}"
    if isinstance(err, DWError):
        return err.error + (f": {err.reason}" if err.reason else "")
    return _describe(err)


def _describe(err: BaseException) -> str:
    if isinstance(err, DWError):
        return str(err)
    return f"{type(err).__name__}: {err}"
