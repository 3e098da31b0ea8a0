"""Watch-cache indexes (Workloads by job UID, pods by RayCluster, RayClusters by UID): kept
right through events, deletes, label changes and a re-list after 410."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_dw.k8s.watch_cache import (
    ADDED,
    DELETED,
    MODIFIED,
    WatchCache,
    label_index,
    uid_index,
)
from tests.unit.test_watch_cache import FAST, WAIT, Block, FakeListWatch, event, gone

LABEL = "kueue.x-k8s.io/job-uid"


def labelled(name: str, rv: str, value: str | None, uid: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "resourceVersion": rv}
    if value is not None:
        metadata["labels"] = {LABEL: value}
    if uid is not None:
        metadata["uid"] = uid
    return {"metadata": metadata}


@pytest.fixture
def fake() -> FakeListWatch:
    return FakeListWatch()


@pytest.fixture
def cache(fake: FakeListWatch) -> Iterator[WatchCache]:
    made = WatchCache(
        fake,
        backoff=FAST,
        min_watch_seconds=0.0,
        indexes={"job": label_index(LABEL), "uid": uid_index},
    )
    yield made
    made.stop()


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


def test_index_follows_events(fake, cache):
    fake.lists.append(
        ([labelled("a", "1", "u1"), labelled("b", "2", "u1"), labelled("c", "3", None)], "10")
    )
    fake.watches.append(
        Block(
            event(MODIFIED, labelled("a", "11", "u2")),  # the label value changed
            event(DELETED, labelled("b", "12", "u1")),
            event(ADDED, labelled("d", "13", "u2")),
        )
    )
    cache.start()
    assert cache.wait_synced(WAIT)
    assert cache.wait_until(lambda objs: len(objs) == 3, WAIT)

    assert cache.by_index("job", "u1") == []
    assert names(cache.by_index("job", "u2")) == ["a", "d"]
    assert cache.by_index("job", "missing") == []
    with pytest.raises(KeyError):
        cache.by_index("no-such-index", "u1")


def test_index_is_rebuilt_by_a_relist(fake, cache):
    fake.lists.append(([labelled("a", "1", "u1")], "10"))
    fake.lists.append(([labelled("b", "20", "u1"), labelled("a", "21", "u3")], "30"))
    fake.watches.append([gone()])
    cache.start()

    fake.wait(lambda: fake.list_calls == 2)
    assert cache.wait_until(lambda objs: names(objs) == ["a", "b"], WAIT)
    assert names(cache.by_index("job", "u1")) == ["b"]
    assert names(cache.by_index("job", "u3")) == ["a"]


def test_uid_index_and_a_failing_index_function(fake):
    def broken(obj: dict[str, Any]) -> list[str]:
        raise ValueError("malformed")

    fake.lists.append(([labelled("a", "1", None, uid="x-1")], "10"))
    cache = WatchCache(
        fake, backoff=FAST, min_watch_seconds=0.0, indexes={"uid": uid_index, "bad": broken}
    )
    try:
        cache.start()
        assert cache.wait_synced(WAIT)
        assert names(cache.by_index("uid", "x-1")) == ["a"]
        assert cache.by_index("bad", "anything") == []  # logged, not fatal
        assert names(cache.snapshot()) == ["a"]
    finally:
        cache.stop()


def test_listener_count(fake, cache):
    assert cache.listener_count == 0
    remove = cache.add_listener(lambda kind, obj: None)
    assert cache.listener_count == 1
    remove()
    assert cache.listener_count == 0
