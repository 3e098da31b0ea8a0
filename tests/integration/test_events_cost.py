"""What the events sockets cost the server, on the real control plane: the visibility API is
asked again only for a LocalQueue whose pending list changed, once for every reader at a time
(counted by the core's own :class:`PositionBoard`), and a browser that stops reading never
makes the server hold more than one change per object (a real socket that does not read)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from kubernetes import client

from jupyter_dw.k8s.resources import CLUSTER_QUEUE, LOCAL_QUEUE, WORKLOAD
from jupyter_dw.server.events import SLOW_READER_CODE, EventsHandler
from jupyter_dw.server.handlers import CORE_SETTING
from tests.cluster.fixtures import WAIT_TIMEOUT, plain_workload
from tests.integration.clusters_support import (
    KUEUE,
    QUEUE_MESSAGES,
    Events,
    make_queue,
    open_events,
)
from tests.integration.test_events_ws import eventually
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

WORKBENCH_RULES = namespace_rules()
# The priority classes too: a change of one sends a whole queues answer (the slow reader's).
WORKBENCH_CLUSTER_RULES = [
    *CLUSTER_READ_RULES,
    {
        "apiGroups": [KUEUE],
        "resources": ["workloadpriorityclasses"],
        "verbs": ["get", "list", "watch"],
    },
]

DEFAULT_QUEUE = f"{KUEUE}/default-queue"
MOVERS = frozenset({WORKLOAD.plural, CLUSTER_QUEUE.plural, LOCAL_QUEUE.plural})
"""The kinds whose changes may move a waiting Workload's position (and so ask Kueue)."""


def core_of(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings[CORE_SETTING].get()


def wait_cache(session: Any, kind: Any, done: Any, what: str) -> None:
    cache = session.cache(kind)
    assert cache is not None and cache.wait_until(lambda _: done(cache), WAIT_TIMEOUT), what


def pending_in(cache: Any, name: str, namespace: str = "") -> int | None:
    """The queue's pending count as the cache holds it."""
    held = cache.get(name, namespace) or {}
    return (held.get("status") or {}).get("pendingWorkloads")


async def past_the_second(obj: dict[str, Any]) -> None:
    """Until the clock (the API server's: the same machine) has passed the second ``obj`` was
    made in."""
    made = datetime.fromisoformat(obj["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    while datetime.now(timezone.utc) < made + timedelta(seconds=1):
        await asyncio.sleep(0.05)


async def test_pending_changes_cost_one_visibility_call_for_every_reader(
    kube, kueue, namespace, jp_serverapp, jp_ws_fetch
):
    queue = make_queue(kueue, cpu="2")
    custom = client.CustomObjectsApi(kube)
    core = core_of(jp_serverapp)
    session, board = core.session, core.positions
    await asyncio.to_thread(session.wait_ready, WAIT_TIMEOUT)

    def create(name: str, cpu: str) -> dict[str, Any]:
        # With a priority, as Kueue gives every job's Workload: Kueue 0.14.8's visibility API
        # panics (nil pointer, answered 503) on a pending Workload without one.
        body = plain_workload(kueue.api_version, name, queue.local_queue, cpu, priority=0)
        made: dict[str, Any] = custom.create_namespaced_custom_object(
            KUEUE, kueue.api_version, namespace, "workloads", body
        )
        return made

    # One holder takes the quota; then N Workloads wait in the one LocalQueue: N changes of
    # its pending list, made before anyone reads positions. Kueue orders equal priorities by
    # the second they were made in, and 0.14 breaks no tie between one second's Workloads
    # (they may swap places between two reads): the first two are each made in a second of
    # their own, so which one moves up below is Kueue's order, not chance.
    await asyncio.to_thread(create, "holder", "2")
    waiting = [f"waiting-{i}" for i in range(8)]
    for index, name in enumerate(waiting):
        made = await asyncio.to_thread(create, name, "1")
        if index < 2:
            await past_the_second(made)
    # Quiet first: every Workload cached, and Kueue's count of them in the ClusterQueue's
    # status (its status change marks the queue too) and in the LocalQueue's (an answer that
    # lists more than that count is checked again: see PositionBoard).
    await asyncio.to_thread(
        wait_cache,
        session,
        WORKLOAD,
        lambda c: all(c.get(n, namespace) for n in waiting),
        "the Workloads cached",
    )
    await asyncio.to_thread(
        wait_cache,
        session,
        CLUSTER_QUEUE,
        lambda c: pending_in(c, queue.cluster_queue) == len(waiting),
        "Kueue counting them",
    )
    await asyncio.to_thread(
        wait_cache,
        session,
        LOCAL_QUEUE,
        lambda c: pending_in(c, queue.local_queue, namespace) == len(waiting),
        "the LocalQueue counting them",
    )

    # Five readers at once after N changes: one call between them.
    before = board.calls
    with ThreadPoolExecutor(5) as pool:
        answers = list(pool.map(lambda _: core.workloads.describe_many(waiting), range(5)))
    assert board.calls - before == 1, board.calls - before
    for answer in answers:
        assert sorted(w.position_in_local_queue for w in answer.values()) == list(range(8))
    # Kueue orders equal priorities by creation second, then UID: not by name.
    first, second = sorted(waiting, key=lambda n: answers[0][n].position_in_local_queue)[:2]

    # Nothing changed since: no call.
    core.workloads.describe_many(waiting)
    assert board.calls - before == 1

    # Sockets: a change that moves no position (an annotation) asks no visibility call (and
    # sends nothing: no record changed).
    sockets = [(await open_events(jp_ws_fetch))[0] for _ in range(4)]
    await eventually(lambda: board.settled, "the snapshots' positions read")
    before = board.calls
    await annotated(session, board, custom, kueue.api_version, namespace, "waiting-3")
    assert board.calls == before, "a change that moves no position asked the visibility API"

    # A Workload leaves the pending list: every socket hears the others move, and the socket
    # count does not multiply the calls: at most one per change the caches saw that may move
    # a position (the Workload's deletion, Kueue's status of the ClusterQueue and LocalQueue,
    # and the waiting Workloads' conditions Kueue may write again after it, more of them
    # apart on a busy machine).
    seen_changes: list[str] = []
    stop_counting = session.add_listener(
        lambda plural, _event, _obj: plural in MOVERS and seen_changes.append(plural)
    )
    marks = [len(events.seen) for events in sockets]
    await asyncio.to_thread(
        custom.delete_namespaced_custom_object,
        KUEUE,
        kueue.api_version,
        namespace,
        "workloads",
        first,
    )
    for events in sockets:
        # The others moved up: one `positions` message for them all.
        await events.until(
            lambda m, events=events: (
                m["type"] == "positions"
                and (events.workloads.get(second) or {}).get("position_in_local_queue") == 0
            ),
            "the second one first in its queue",
        )
        assert events.workloads[second]["state"] == "queued"
    moved = [m for m in sockets[0].seen[marks[0] :] if m["type"] == "positions"]
    assert max(len(m["positions"]) for m in moved) > 1, moved  # several in one message
    await asyncio.to_thread(
        wait_cache,
        session,
        CLUSTER_QUEUE,
        lambda c: pending_in(c, queue.cluster_queue) == len(waiting) - 1,
        "Kueue counting one fewer",
    )

    def counted(m: dict[str, Any]) -> bool:
        # The summary's count is the LocalQueue's status: Kueue may write it before or after
        # the ClusterQueue's, which changes no record of ours (its pending count is not one).
        return m["type"] == "queue" and m["queues"][0]["pending"] == len(waiting) - 1

    # The deletion's LocalQueue change too has reached every socket, as its record alone.
    for events, mark in zip(sockets, marks, strict=True):
        if not any(counted(m) for m in events.seen[mark:]):
            await events.until(counted, "the queue counting one fewer")
    # The ClusterQueue's status change is in the cache: once the board has nothing left to
    # ask, every call it caused is counted.
    await eventually(lambda: board.settled, "no visibility call left")
    stop_counting()
    calls = board.calls - before
    assert 1 <= calls <= len(seen_changes), (calls, seen_changes)
    for events in sockets:
        events.close()


async def test_a_change_in_a_queue_where_nothing_waits_asks_no_positions(
    kube, kueue, namespace, jp_serverapp, jp_ws_fetch
):
    """An admitted Workload's change (Kueue's PodsReady, an annotation) moves no position
    when nothing waits in its queue: no socket asks the visibility API for it."""
    queue = make_queue(kueue, cpu="2")
    custom = client.CustomObjectsApi(kube)
    core = core_of(jp_serverapp)
    session, board = core.session, core.positions
    await asyncio.to_thread(session.wait_ready, WAIT_TIMEOUT)
    body = plain_workload(kueue.api_version, "alone", queue.local_queue, "1", priority=0)
    await asyncio.to_thread(
        custom.create_namespaced_custom_object,
        KUEUE,
        kueue.api_version,
        namespace,
        "workloads",
        body,
    )
    await asyncio.to_thread(
        wait_cache,
        session,
        WORKLOAD,
        lambda c: admitted(c.get("alone", namespace)),
        "the Workload admitted",
    )
    events, _ = await open_events(jp_ws_fetch)
    await eventually(lambda: board.settled, "the snapshot's positions read")
    before = board.calls
    await annotated(session, board, custom, kueue.api_version, namespace, "alone")
    assert board.calls == before, "a change in a queue where nothing waits asked for positions"
    events.close()


def annotate(custom: client.CustomObjectsApi, version: str, namespace: str, name: str) -> None:
    """A change of Workload ``name`` that moves no position: an annotation."""
    patch = {"metadata": {"annotations": {"example.com/note": "hello"}}}
    custom.patch_namespaced_custom_object(KUEUE, version, namespace, "workloads", name, patch)


SETTLE_S = 1.0
"""Time for the sockets to take a change the server's cache holds (a read it schedules is
scheduled then, and :attr:`PositionBoard.settled` says when it is done)."""


async def annotated(
    session: Any, board: Any, custom: Any, version: str, namespace: str, name: str
) -> None:
    """Annotate Workload ``name``; return once the server's cache holds the annotation, its
    sockets have had the time to take the change and no visibility call is left."""
    await asyncio.to_thread(annotate, custom, version, namespace, name)
    await asyncio.to_thread(
        wait_cache,
        session,
        WORKLOAD,
        lambda c: (
            "example.com/note"
            in ((c.get(name, namespace) or {}).get("metadata") or {}).get("annotations", {})
        ),
        f"the server's cache holding {name}'s annotation",
    )
    await asyncio.sleep(SETTLE_S)
    await eventually(lambda: board.settled, "no visibility call left")


def admitted(workload: dict[str, Any] | None) -> bool:
    conditions = ((workload or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Admitted" and c.get("status") == "True" for c in conditions)


class SlowReader:
    """Tracks the server side of each events socket opened (as the page's socket would be)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.handlers: list[EventsHandler] = []
        original = EventsHandler.open

        def open_and_track(handler: EventsHandler, *args: Any, **kwargs: Any) -> None:
            self.handlers.append(handler)
            original(handler, *args, **kwargs)

        monkeypatch.setattr(EventsHandler, "open", open_and_track)


async def block_socket(
    toggle: Toggles, handler: EventsHandler, limit: int = 2000
) -> tuple[int, str]:
    """Change the WorkloadPriorityClass's description until the server's writes to a socket
    that does not read are stuck (its changes start to coalesce); returns how many changes
    that took and the last value written. Each change is a whole ``queues`` answer (~100 KB at
    120 LocalQueues: the answer's priority classes changed), so the buffers fill quickly."""
    value = "false"
    for i in range(limit):
        value = "true" if i % 2 else "false"
        await asyncio.to_thread(toggle, toggle.priority_class, value)
        if handler.backlog.coalesced >= 10:
            return i + 1, value
    raise AssertionError(f"{limit} changes and the server's writes never blocked")


@dataclass
class Toggles:
    """Sets ``lq-<i>``'s default-queue annotation, or the description of WorkloadPriorityClass
    :attr:`priority_class`."""

    custom: client.CustomObjectsApi
    version: str
    namespace: str
    priority_class: str

    def __call__(self, name: str, value: str) -> None:
        if name == self.priority_class:
            self.custom.patch_cluster_custom_object(
                KUEUE, self.version, "workloadpriorityclasses", name, {"description": value}
            )
            return
        self.custom.patch_namespaced_custom_object(
            KUEUE,
            self.version,
            self.namespace,
            "localqueues",
            name,
            {"metadata": {"annotations": {DEFAULT_QUEUE: value}}},
        )


@pytest.fixture
def many_queues(kube, kueue, namespace) -> Toggles:
    """120 LocalQueues (a whole queues answer then carries ~100 KB) and a WorkloadPriorityClass
    whose change sends a whole answer; :class:`Toggles` changes either."""
    queue = make_queue(kueue)
    custom = client.CustomObjectsApi(kube)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: kueue.local_queue(f"lq-{i}", queue.cluster_queue), range(120)))
    # Kueue activates each (a status write): done before a socket opens, so what waits for a
    # slow socket later is only what the test changes.
    for i in range(120):
        kueue.wait_active("localqueues", f"lq-{i}")
    body = {
        "apiVersion": f"{KUEUE}/{kueue.api_version}",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": f"{kueue.prefix}-toggled"},
        "value": 10,
        "description": "false",
    }
    priority_class = kueue._create_cluster_scoped("workloadpriorityclasses", body)
    return Toggles(custom, kueue.api_version, namespace, priority_class)


async def read_all(events: Events, until: Any, what: str) -> list[dict[str, Any]]:
    """Read until ``until(message)``; every message read."""
    read = []
    while True:
        message = await events.next()
        read.append(message)
        if until(message):
            return read


def described(toggle: Toggles, message: dict[str, Any]) -> str | None:
    """The toggled WorkloadPriorityClass's description in a whole ``queues`` answer."""
    if message["type"] != "queues" or message["queues"] is None:
        return None
    classes = message["queues"]["priority_classes"] or []
    return next((c["description"] for c in classes if c["name"] == toggle.priority_class), None)


async def synced(session: Any) -> None:
    """The server's caches hold everything (their first lists' changes are behind them)."""
    await asyncio.to_thread(session.wait_ready, WAIT_TIMEOUT)
    for cache in list(session._caches.values()):
        assert await asyncio.to_thread(cache.wait_synced, WAIT_TIMEOUT)


async def test_a_socket_that_does_not_read_holds_one_change_per_object(
    many_queues, session, jp_ws_fetch, monkeypatch
):
    await synced(session)
    slow = SlowReader(monkeypatch)
    events, _ = await open_events(jp_ws_fetch)
    [handler] = slow.handlers
    objects = len(handler.core.session.cache(LOCAL_QUEUE).snapshot()) + 10  # + the other kinds
    # The page stops reading: tornado's client reads no further frame until asked, so the
    # kernel's buffers fill and the server's writes wait.
    made, last = await block_socket(many_queues, handler)
    folded = handler.backlog.coalesced
    for i in range(100):  # 100 more changes of one object, and a few of three others
        last = "true" if (made + i) % 2 else "false"
        await asyncio.to_thread(many_queues, many_queues.priority_class, last)
        if i % 25 == 0:
            await asyncio.to_thread(many_queues, f"lq-{1 + i // 25}", "false")
        assert len(handler.backlog) <= objects, len(handler.backlog)
    # Every one of those changes was folded into one already waiting: none made it grow.
    await eventually(lambda: handler.backlog.coalesced >= folded + 100, "the changes folded")
    assert len(handler.backlog) <= objects, len(handler.backlog)
    # Reading again: the latest state arrives, without every change on the way.
    read = await read_all(
        events,
        lambda m: described(many_queues, m) == last and not len(handler.backlog),
        "last",
    )
    queues_messages = [m for m in read if m["type"] in QUEUE_MESSAGES]
    assert len(queues_messages) < made + 100, (made, len(queues_messages))
    events.close()


async def test_a_socket_too_far_behind_is_closed_with_a_reason(
    many_queues, session, jp_ws_fetch, monkeypatch
):
    await synced(session)
    monkeypatch.setattr(EventsHandler, "backlog_limit", 3)
    slow = SlowReader(monkeypatch)
    events, _ = await open_events(jp_ws_fetch)
    [handler] = slow.handlers
    await block_socket(many_queues, handler)
    for i in range(1, 6):  # five more objects than one: past the limit of three
        await asyncio.to_thread(many_queues, f"lq-{i}", "false")
    await eventually(lambda: handler.backlog.overflowed, "the backlog past its limit")
    assert len(handler.backlog) <= 3
    # Reading again (unchecked: the bytes the server had sent, then the close frame, must be
    # read before the server gives up waiting for the close handshake): the code and reason.
    ws = events.ws._ws
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_TIMEOUT
    while await asyncio.wait_for(ws.read_message(), deadline - loop.time()) is not None:
        pass
    assert ws.close_code == SLOW_READER_CODE
    assert "too slow" in (ws.close_reason or "")
