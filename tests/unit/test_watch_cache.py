"""The watch cache's reflector logic (resume, bookmarks, 410 Gone, backoff, stop) on a scripted
list/watch. Real API behaviour is covered in tests/integration/test_server_session.py."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jupyter_dw.domain.freshness import Freshness
from jupyter_dw.k8s.errors import KubeForbidden, KubeUnreachable
from jupyter_dw.k8s.watch_cache import (
    ADDED,
    DELETED,
    MODIFIED,
    Backoff,
    ResourceGone,
    WatchCache,
    WatchIdle,
    _lines,
)

WAIT = 5.0  # upper bound for every wait below; they return as soon as the condition holds
FAST = Backoff(initial=0.001, maximum=0.005)


def obj(name: str, rv: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, **extra}


def event(kind: str, o: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": o}


def bookmark(rv: str) -> dict[str, Any]:
    return {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": rv}}}


def gone() -> dict[str, Any]:
    return {"type": "ERROR", "object": {"code": 410, "reason": "Expired", "message": "too old"}}


class Block:
    """A watch script that yields ``events`` and then blocks until the stream is closed."""

    def __init__(self, *events: dict[str, Any]) -> None:
        self.events = events


class Ends:
    """A watch script: ``events``, then the stream ends, opened for ``lasts`` seconds (its
    ``timeoutSeconds``)."""

    def __init__(self, lasts: float, *events: dict[str, Any]) -> None:
        self.lasts = lasts
        self.events = events


class FakeStream:
    def __init__(
        self, events: tuple[dict[str, Any], ...], block: bool, lasts: float | None = None
    ) -> None:
        self.events = events
        self.block = block
        self.closed = threading.Event()
        self.lasts = lasts

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for item in self.events:
            if isinstance(item, BaseException):  # the connection fails mid-stream
                raise item
            yield item
        if self.block:
            self.closed.wait()

    def close(self) -> None:
        self.closed.set()


class FakeListWatch:
    """Scripted lists and watches; records every call. Unscripted watches block until closed."""

    description = "fake"

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.lists: deque[Any] = deque()
        self.watches: deque[Any] = deque()
        self.list_calls = 0
        self.watch_versions: list[str] = []
        self.streams: list[FakeStream] = []

    def list(self) -> tuple[list[dict[str, Any]], str]:
        with self.cond:
            self.list_calls += 1
            self.cond.notify_all()
            result = self.lists.popleft() if self.lists else RuntimeError("no list scripted")
        if isinstance(result, BaseException):
            raise result
        return result

    def watch(self, resource_version: str) -> FakeStream:
        with self.cond:
            self.watch_versions.append(resource_version)
            script = self.watches.popleft() if self.watches else Block()
            if isinstance(script, BaseException):
                self.cond.notify_all()
                raise script
            if isinstance(script, Block):
                stream = FakeStream(script.events, block=True)
            elif isinstance(script, Ends):
                stream = FakeStream(script.events, block=False, lasts=script.lasts)
            else:
                stream = FakeStream(tuple(script), block=False)
            self.streams.append(stream)
            self.cond.notify_all()
            return stream

    def wait(self, predicate: Callable[[], bool]) -> None:
        with self.cond:
            assert self.cond.wait_for(predicate, WAIT), "fake list/watch never reached the state"


@pytest.fixture
def fake() -> FakeListWatch:
    return FakeListWatch()


@pytest.fixture
def make_cache(fake: FakeListWatch) -> Iterator[Callable[..., WatchCache]]:
    caches: list[WatchCache] = []

    def make(**kwargs: Any) -> WatchCache:
        cache = WatchCache(fake, backoff=FAST, min_watch_seconds=0.0, **kwargs)
        caches.append(cache)
        return cache

    yield make
    for cache in caches:
        cache.stop()


def names(cache: WatchCache) -> list[str]:
    return [o["metadata"]["name"] for o in cache.snapshot()]


def test_lists_then_watches_from_the_list_version(fake, make_cache):
    fake.lists.append(([obj("a", "5"), obj("b", "6")], "10"))
    fake.watches.append(Block(event(ADDED, obj("c", "11")), event(MODIFIED, obj("a", "12"))))
    cache = make_cache()
    seen: list[tuple[str, str]] = []
    cache.add_listener(lambda kind, o: seen.append((kind, o["metadata"]["name"])))

    cache.start()

    assert cache.wait_synced(WAIT)
    assert cache.wait_until(lambda objs: len(objs) == 3, WAIT)
    assert fake.watch_versions[0] == "10"
    assert names(cache) == ["a", "b", "c"]
    assert cache.get("a", "ns")["metadata"]["resourceVersion"] == "12"
    assert cache.resource_version == "12"
    assert seen == [(ADDED, "a"), (ADDED, "b"), (ADDED, "c"), (MODIFIED, "a")]


def test_deleted_event_removes_the_object(fake, make_cache):
    fake.lists.append(([obj("a", "5"), obj("b", "6")], "10"))
    fake.watches.append(Block(event(DELETED, obj("a", "11"))))
    cache = make_cache()
    cache.start()

    assert cache.wait_until(lambda objs: len(objs) == 1, WAIT)
    assert names(cache) == ["b"]
    assert cache.get("a", "ns") is None


def test_watch_end_and_bookmark_resume_without_listing_again(fake, make_cache):
    fake.lists.append(([obj("a", "5")], "10"))
    # The first watch ends normally after an event and a bookmark (server timeout).
    fake.watches.append([event(MODIFIED, obj("a", "11")), bookmark("20")])
    cache = make_cache()
    cache.start()

    fake.wait(lambda: len(fake.watch_versions) == 2)
    assert fake.watch_versions == ["10", "20"]  # resumed from the bookmark's version
    assert fake.list_calls == 1
    assert cache.relists == 1


def test_gone_error_event_relists_and_reports_the_difference(fake, make_cache):
    fake.lists.append(([obj("a", "5"), obj("b", "6")], "10"))
    fake.lists.append(([obj("b", "30"), obj("c", "31")], "40"))
    fake.watches.append([gone()])
    cache = make_cache()
    seen: list[tuple[str, str]] = []
    cache.add_listener(lambda kind, o: seen.append((kind, o["metadata"]["name"])))
    cache.start()

    fake.wait(lambda: len(fake.watch_versions) == 2)
    assert cache.wait_until(lambda objs: [o["metadata"]["name"] for o in objs] == ["b", "c"], WAIT)
    assert fake.list_calls == 2
    assert fake.watch_versions == ["10", "40"]
    assert cache.relists == 2
    assert seen[2:] == [(DELETED, "a"), (MODIFIED, "b"), (ADDED, "c")]


def test_a_cache_made_again_tells_its_first_list_against_what_the_last_one_held(fake, make_cache):
    fake.lists.append(([obj("a", "5"), obj("b", "6")], "10"))
    first = make_cache()
    first.start()
    assert first.wait_synced(WAIT)
    first.stop()
    # Meanwhile: a deleted, b unchanged, c created.
    fake.lists.append(([obj("b", "6"), obj("c", "31")], "40"))
    second = make_cache(inherited=first.objects())
    seen: list[tuple[str, str]] = []
    second.add_listener(lambda kind, o: seen.append((kind, o["metadata"]["name"])))
    assert names(second) == []  # not served before its first list: it may be out of date

    second.start()

    assert second.wait_synced(WAIT)
    assert names(second) == ["b", "c"]
    assert seen == [(DELETED, "a"), (ADDED, "c")]
    assert second.objects().keys() == {("ns", "b"), ("ns", "c")}


def test_http_410_when_opening_the_watch_relists(fake, make_cache):
    fake.lists.append(([obj("a", "5")], "10"))
    fake.lists.append(([obj("a", "5")], "50"))
    fake.watches.append(ResourceGone("410"))
    cache = make_cache()
    cache.start()

    fake.wait(lambda: len(fake.watch_versions) == 2)
    assert fake.watch_versions == ["10", "50"]
    assert fake.list_calls == 2


def test_errors_back_off_and_resume_from_the_last_version(fake, make_cache):
    fake.lists.append(([obj("a", "5")], "10"))
    fake.watches.append([event(MODIFIED, obj("a", "15"))])
    fake.watches.append(ConnectionResetError("connection reset"))
    fake.watches.append(Block(event(MODIFIED, obj("a", "16"))))
    cache = make_cache()
    cache.start()

    fake.wait(lambda: len(fake.watch_versions) == 3)
    assert cache.wait_until(lambda objs: objs[0]["metadata"]["resourceVersion"] == "16", WAIT)
    assert fake.watch_versions == ["10", "15", "15"]  # same version after the error
    assert fake.list_calls == 1  # an error is not a reason to list again
    assert cache.last_error is None  # cleared by the next event


def test_a_failed_first_list_is_retried_and_reported(fake, make_cache):
    fake.lists.append(PermissionError("forbidden"))
    cache = make_cache()
    cache.start()

    fake.wait(lambda: fake.list_calls >= 2)  # backed off, then tried again
    # The retry had no scripted result either; the error is kept for callers to show.
    assert isinstance(cache.last_error, RuntimeError | PermissionError)
    assert not cache.synced


def test_stop_interrupts_a_blocked_watch(fake, make_cache):
    fake.lists.append(([], "10"))
    cache = make_cache()
    cache.start()
    fake.wait(lambda: len(fake.streams) == 1)

    cache.stop(timeout=WAIT)

    assert fake.streams[0].closed.is_set()
    assert not any(t.name == "dw-watch-fake" for t in threading.enumerate())


def test_a_failing_listener_does_not_stop_the_cache(fake, make_cache):
    fake.lists.append(([obj("a", "5")], "10"))
    fake.watches.append(Block(event(ADDED, obj("b", "11"))))
    cache = make_cache()

    def broken(kind: str, o: dict[str, Any]) -> None:
        raise ValueError("listener bug")

    cache.add_listener(broken)
    cache.start()

    assert cache.wait_until(lambda objs: len(objs) == 2, WAIT)


def test_removed_listener_is_not_called(fake, make_cache):
    fake.lists.append(([obj("a", "5")], "10"))
    cache = make_cache()
    seen: list[str] = []
    remove = cache.add_listener(lambda kind, o: seen.append(kind))
    remove()
    cache.start()

    assert cache.wait_synced(WAIT)
    assert seen == []


def test_wait_for_change_returns_a_newer_generation(fake, make_cache):
    fake.lists.append(([obj("a", "5")], "10"))
    fake.watches.append(Block(event(MODIFIED, obj("a", "11"))))
    cache = make_cache()
    cache.start()

    assert cache.wait_synced(WAIT)
    assert cache.wait_until(lambda objs: objs[0]["metadata"]["resourceVersion"] == "11", WAIT)
    assert cache.wait_for_change(0, WAIT) >= 2  # the list and the event


def test_versioned_snapshot_names_the_generation_of_its_objects(fake, make_cache):
    fake.lists.append(([obj("a", "5")], "10"))
    fake.watches.append(Block(event(ADDED, obj("b", "11"))))
    cache = make_cache()
    cache.start()

    assert cache.wait_until(lambda objs: len(objs) == 2, WAIT)
    generation, objects = cache.versioned_snapshot()
    assert generation == cache.generation == 2  # the list and the event
    assert [o["metadata"]["name"] for o in objects] == names(cache) == ["a", "b"]


def test_lines_are_split_across_chunks():
    chunks = [b'{"type":"ADD', b'ED"}\n{"type":', b'"BOOKMARK"}\n\n', "tail"]
    assert list(_lines(chunks)) == ['{"type":"ADDED"}', '{"type":"BOOKMARK"}', "", "tail"]


def test_backoff_grows_and_is_capped():
    backoff = Backoff(initial=1.0, maximum=8.0)
    assert 0.5 <= backoff.delay(0) <= 1.0
    assert 2.0 <= backoff.delay(2) <= 4.0
    assert 4.0 <= backoff.delay(30) <= 8.0


def test_wait_synced_gives_up_on_a_permanent_error(fake, make_cache):
    fake.lists.extend(PermissionError("forbidden") for _ in range(10_000))
    cache = make_cache()
    cache.start()

    started = time.monotonic()
    synced = cache.wait_synced(60, give_up=lambda err: isinstance(err, PermissionError))

    assert synced is False
    assert time.monotonic() - started < 30  # returned on the error, not at the timeout
    assert isinstance(cache.last_error, PermissionError)


# -- health ---------------------------------------------------------------------------------


def test_health_is_reconnecting_while_the_api_server_is_away_then_live(fake, make_cache):
    seen: list[Freshness] = []
    fake.lists.append(([obj("a", "5")], "10"))
    fake.watches.append([event(MODIFIED, obj("a", "15"))])
    fake.watches.append(KubeUnreachable("Cannot reach the Kubernetes API server", "refused"))
    fake.watches.append(KubeUnreachable("Cannot reach the Kubernetes API server", "refused"))
    fake.watches.append(Block())
    cache = make_cache(on_health=seen.append)
    assert cache.health.state == "reconnecting"  # nothing listed yet
    cache.start()

    fake.wait(lambda: len(fake.watch_versions) == 4)
    assert cache.wait_until(lambda _: cache.health.live, WAIT)
    # Told once per change, not per failed attempt; the reason names the cause.
    assert [h.state for h in seen] == ["live", "reconnecting", "live"]
    assert seen[1].reason == "Cannot reach the Kubernetes API server: refused"
    assert seen[1].since is not None and seen[2].since is not None
    assert seen[2].since >= seen[1].since
    assert fake.watch_versions[-1] == "15"  # resumed: nothing missed, nothing listed again
    assert fake.list_calls == 1


def test_a_forbidden_list_is_stale_naming_the_permission(fake, make_cache):
    denied = "list workloads.kueue.x-k8s.io"
    fake.lists.extend(
        KubeForbidden(f"Forbidden: this identity may not {denied}", denied=denied)
        for _ in range(10_000)
    )
    cache = make_cache()
    cache.start()

    cache.wait_synced(WAIT, give_up=lambda err: isinstance(err, KubeForbidden))
    assert cache.health.state == "stale"
    assert cache.health.reason == f"forbidden: this identity may no longer {denied}"


def test_a_silent_watch_is_reopened_from_the_last_version(fake, make_cache):
    seen: list[Freshness] = []
    fake.lists.append(([obj("a", "5")], "10"))
    fake.watches.append([event(MODIFIED, obj("a", "12")), WatchIdle("no event for 2s")])
    fake.watches.append(Block(event(MODIFIED, obj("a", "13"))))
    cache = make_cache(on_health=seen.append)
    cache.start()

    assert cache.wait_until(lambda objs: objs[0]["metadata"]["resourceVersion"] == "13", WAIT)
    assert cache.idle_reopens == 1
    assert fake.watch_versions == ["10", "12"]
    assert fake.list_calls == 1
    assert [h.state for h in seen] == ["live"]  # re-opened at once: never shown as away


def test_reconnect_backoff_is_capped_lower():
    backoff = Backoff(initial=1.0, maximum=30.0, reconnect_maximum=2.0)
    assert 1.0 <= backoff.delay(10, reconnecting=True) <= 2.0
    assert 15.0 <= backoff.delay(10) <= 30.0


def test_a_watch_the_api_server_ends_early_tells_of_an_interruption(fake, make_cache):
    """A CRD changed: the API server ends its resource's watches long before their timeout
    (the served APIs may have changed); a watch ended by its own timeout tells nothing."""
    fake.lists.append(([obj("a", "5")], "10"))
    fake.watches.append(Ends(0.0, event(MODIFIED, obj("a", "11"))))  # its timeout: nothing
    fake.watches.append(Ends(600.0, event(MODIFIED, obj("a", "12"))))  # ended early
    told: list[int] = []
    cache = make_cache(on_interrupted=lambda: told.append(len(fake.streams)))
    cache.start()

    fake.wait(lambda: len(fake.watch_versions) == 3)
    assert told == [2]  # by the second watch only
    assert fake.watch_versions == ["10", "11", "12"]  # resumed, no new list
    assert fake.list_calls == 1


def test_a_cache_back_after_failures_tells_of_an_interruption_once(fake, make_cache):
    """An API server restarted: the first list or watch that opens after failures tells; the
    first list of a new cache, a silent watch re-opened and a 410 do not."""
    fake.lists.append(([obj("a", "5")], "10"))
    fake.lists.append(([obj("a", "5")], "30"))
    fake.watches.append(WatchIdle("silent"))
    fake.watches.append([gone()])
    fake.watches.append(KubeUnreachable("down", None, None))
    fake.watches.append(KubeUnreachable("down", None, None))
    fake.watches.append(Block())
    told: list[str] = []
    cache = make_cache(on_interrupted=lambda: told.append(f"after watch {len(fake.streams)}"))
    cache.start()

    fake.wait(lambda: len(fake.watch_versions) == 5)
    assert cache.wait_until(lambda _: bool(told), WAIT)
    assert told == ["after watch 2"]  # the watch that opened after the two failures
    assert cache.relists == 2  # the 410's list told nothing either
