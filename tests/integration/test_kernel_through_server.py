"""A kernel reading through its Jupyter server sees exactly what a kernel with its own connection
sees: the same queues, fits, positions and states through a sequence of changes, and its live
views get the same messages. Both kernels run beside one real server on the real control plane.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from jupyter_dw.core.feed_messages import ClusterChanged, QueuesChanged
from jupyter_dw.domain.workload_rows import WORKLOADS_SHOWN
from jupyter_dw.notebook.runtime import KernelRuntime
from tests.cluster.fixtures import WAIT_TIMEOUT, KueueObjects, plain_workload, watch_until
from tests.integration.clusters_support import make_queue, small_cluster
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES
QUIET = 0.5
"""Seconds without a change after which two kernels' views are read again."""


def cluster_view(info: Any) -> dict[str, Any]:
    """What a user reads of a cluster, without the times a reader computes from its clock."""
    data = info.to_json()
    keep = (
        "name", "queue", "state", "reason", "admitted", "quota_reserved", "flavors",
        "head_ready", "workers_ready", "workers_desired", "position_in_local_queue",
        "position_in_cluster_queue", "cluster_queue", "summary",
    )  # fmt: skip
    return {key: data.get(key) for key in keep}


def past_second(timestamp: str) -> None:
    """Return once the clock is past ``timestamp``'s second (RFC 3339, to the second), so that
    what is created next has a later creation time. The API server runs on this machine's
    clock: this waits for the clock, not for something a sleep would stand in for."""
    second = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    while (left := second + 1 - time.time()) > 0:
        time.sleep(left)


def workload_view(workloads: Any) -> list[tuple[Any, ...]]:
    return [
        (w.name, w.queue, w.state, w.position_in_local_queue, w.position_in_cluster_queue)
        for w in workloads.workloads
    ]


class Both:
    """The kernel with its own connection and the one reading through the server."""

    def __init__(self, own: KernelRuntime, through: KernelRuntime) -> None:
        self.own, self.through = own, through

    def same(
        self,
        read: Callable[[KernelRuntime], Any],
        wanted: Callable[[Any], bool] = lambda _: True,
        what: str = "",
    ) -> Any:
        """``read`` of both kernels, once they agree and ``wanted`` holds; woken by their
        change listeners (never a fixed sleep)."""
        changed = threading.Event()
        removes = [rt.add_listener(lambda *_: changed.set()) for rt in (self.own, self.through)]
        deadline = time.monotonic() + WAIT_TIMEOUT
        try:
            while True:
                changed.clear()
                mine, theirs = read(self.own), read(self.through)
                if mine == theirs and wanted(mine):
                    return mine
                if time.monotonic() > deadline:
                    raise AssertionError(f"{what}: own {mine!r} vs through the server {theirs!r}")
                # Woken by a change; a view's own messages may follow its listener's by a
                # moment (another thread), so a quiet spell reads again too.
                changed.wait(QUIET)
        finally:
            for remove in removes:
                remove()


def scenario(own: KernelRuntime, through: KernelRuntime, queue: str) -> list[Any]:
    both = Both(own, through)
    assert own.connection is None or own.connection.mode == "own"
    through.core  # noqa: B018  # connects
    assert through.connection is not None and through.connection.mode == "server"
    assert through.connection.why.startswith("through the Jupyter server at http://127.0.0.1:")

    messages: list[Any] = []
    loop = asyncio.new_event_loop()
    b_gone = asyncio.Event()  # set on the loop, by the last message the scenario owes

    def told(message: Any) -> None:
        messages.append(message)
        if isinstance(message, ClusterChanged) and message.name == "b" and message.cluster is None:
            b_gone.set()

    through.subscribe(told, loop)

    queues = both.same(lambda rt: rt.core.queues.list().to_json(), what="queues")
    assert [q["name"] for q in queues["queues"]] == [queue]

    fits = both.same(
        lambda rt: rt.core.clusters.fit(small_cluster("a", workers=2)).to_json(), what="fit a"
    )
    assert fits["verdict"] == "fits-now"

    made = through.core.clusters.create(small_cluster("a", workers=2), None)
    assert made.name == "a" and made.queue == queue
    both.same(
        lambda rt: cluster_view(rt.core.clusters.get("a")),
        lambda view: view["state"] == "ready",
        "cluster a ready",
    )
    # 3 of 4 CPUs held: b (3 CPUs) must wait, first in line. Once Kueue wrote the
    # ClusterQueue's usage: a cluster's "ready" can come first (seen 2 in 10 under load, both
    # kernels then saying "fits-now" alike).
    both.same(
        lambda rt: rt.core.clusters.fit(small_cluster("b", workers=2)).to_json()["verdict"],
        lambda verdict: verdict == "must-wait",
        "fit b",
    )
    own.core.clusters.create(small_cluster("b", workers=2), None)
    b = both.same(
        lambda rt: cluster_view(rt.core.clusters.get("b")),
        # Kueue's reason (its summary) is written a moment after the Workload is queued.
        lambda view: (
            view["state"] == "queued"
            and view["position_in_local_queue"] == 0
            and view["summary"] is not None
        ),
        "cluster b queued first, with Kueue's reason",
    )
    assert "CPU more" in b["summary"], b
    both.same(lambda rt: workload_view(rt.core.workloads.list(queue)), what="workloads")
    both.same(
        lambda rt: rt.core.queues.list().to_json(),
        lambda q: q["queues"][0]["pending"] == 1,
        "queues with b pending",
    )

    through.core.clusters.delete("a")
    both.same(
        lambda rt: cluster_view(rt.core.clusters.get("b")),
        lambda view: view["state"] == "ready",
        "cluster b ready once a is gone",
    )
    both.same(lambda rt: [c.name for c in rt.core.clusters.entries()], lambda n: n == ["b"])
    own.core.clusters.delete("b")
    both.same(lambda rt: [c.name for c in rt.core.clusters.entries()], lambda n: n == [])

    # The views' messages come on the loop, after the kernels' caches: run it until the
    # last change's message came (the kernels agreeing does not mean it was delivered).
    loop.run_until_complete(asyncio.wait_for(b_gone.wait(), WAIT_TIMEOUT))
    loop.close()
    return messages


async def test_a_kernel_through_the_server_sees_what_an_own_kernel_sees(
    kernel, server_kernel, kueue
):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    messages = await asyncio.to_thread(scenario, kernel, server_kernel, queue.local_queue)
    # Its live views were told every step, as typed messages.
    states = [m.cluster.state for m in messages if isinstance(m, ClusterChanged) and m.name == "b"
              and m.cluster is not None]  # fmt: skip
    assert "queued" in states and states[-1] == "ready", states
    gone = [m for m in messages if isinstance(m, ClusterChanged) and m.cluster is None]
    assert {m.name for m in gone} == {"a", "b"}
    assert any(isinstance(m, QueuesChanged) and m.queues is not None for m in messages)


async def test_a_kernel_through_the_server_opens_no_connection_of_its_own(server_kernel, kueue):
    make_queue(kueue)

    def use() -> None:
        server_kernel.core.queues.list()
        server_kernel.core.workloads.list()
        server_kernel.core.clusters.entries()

    await asyncio.to_thread(use)
    core = server_kernel.core
    assert not hasattr(core, "change_feed")  # a ServerCore: no session, cache or watch
    assert sum(core.link.calls.values()) == 4  # the connect check, then one call per read


async def test_errors_come_back_as_the_same_classes(server_kernel, kernel, kueue):
    import jupyter_dw as dw

    make_queue(kueue)

    def both_raise(call: Callable[[Any], Any]) -> tuple[Any, Any]:
        caught = []
        for rt in (kernel, server_kernel):
            with pytest.raises(dw.DWError) as err:
                call(rt.core)
            caught.append(err.value)
        return caught[0], caught[1]

    own, through = await asyncio.to_thread(both_raise, lambda core: core.clusters.get("nothere"))
    assert type(own) is type(through) is dw.NotFound
    assert own.to_json() == through.to_json()
    own, through = await asyncio.to_thread(
        both_raise, lambda core: core.clusters.create({"name": "Bad_Name", "workers": -1}, None)
    )
    assert type(own) is type(through) is dw.InvalidSpec
    assert own.to_json() == through.to_json() and through.errors


def boards_scenario(
    own: KernelRuntime, through: KernelRuntime, queue: str, kueue: KueueObjects
) -> None:
    """Two boards, one choosing its rows from every Workload (its own connection), one shown
    the rows its server chose: the same rows and counts through creates, deletes, a queue
    longer than the rows shown with one of mine at its end, and a "Show all" and back."""
    import jupyter_dw as dw
    from jupyter_dw.notebook.runtime import set_runtime

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    boards = {}
    for rt in (own, through):
        set_runtime(rt)
        boards[rt] = dw.QueueBoard()

    def shown(rt: KernelRuntime) -> tuple[Any, ...]:
        loop.run_until_complete(asyncio.sleep(0))  # the views' messages, delivered
        board = boards[rt]
        return (
            board.error or None,  # {} (the trait's default) and None say the same: no error
            board.workloads_error or None,
            [row(w) for w in board.workloads],
            board.workload_counts,
            [(q["name"], q["pending"], q["admitted"]) for q in board.queues],
        )

    def row(w: dict[str, Any]) -> tuple[Any, ...]:
        return (w["name"], w["state"], w["position_in_local_queue"], (w["owner"] or {}).get("name"))

    def owners(view: tuple[Any, ...]) -> list[Any]:
        return [row[3] for row in view[2]]

    def folded(view: tuple[Any, ...]) -> bool:
        """Fewer rows than the queue holds: the first five, then only clusters of mine."""
        rest = owners(view)[WORKLOADS_SHOWN:]
        return len(view[2]) < view[3].get(queue, 0) and all(rest)

    def expand(queues: list[str]) -> None:
        for board in boards.values():
            board.expanded = queues

    both = Both(own, through)
    both.same(shown, what="boards at first")
    for name in ("w-0", "w-1", "w-2"):  # 3 CPU each on 4: one runs, two wait in order
        through.core.clusters.create(small_cluster(name, workers=2), None)
        # Kueue orders equal priorities by their Workloads' creation time, to the second, and
        # a tie's order is not fixed: each Workload's second must be its own.
        # Read by the administrator: the board's kernel must list no Workload (below).
        workload = watch_until(
            kueue.custom.list_namespaced_custom_object,
            lambda w, name=name: any(
                o.get("name") == name for o in w["metadata"].get("ownerReferences", [])
            ),
            what=f"{name}'s Workload",
            group="kueue.x-k8s.io", version=kueue.api_version, namespace=kueue.namespace,
            plural="workloads",
        )  # fmt: skip
        past_second(workload["metadata"]["creationTimestamp"])
    rows = both.same(shown, lambda view: view[3].get(queue) == 3, "boards with three")
    assert [row[1] for row in rows[2]].count("queued") == 2
    through.core.clusters.delete("w-0")
    both.same(shown, lambda view: view[3].get(queue) == 2, "boards once one is gone")
    # Six Workloads of no job (not mine), then w-3 (mine) after them: the queue holds more
    # than the rows shown, which are the first five and w-3. Each its own priority, above
    # the clusters' 0: Kueue's order of equal priorities created in the same second is not
    # fixed (its scheduler's requeues reorder them), and two readers of the visibility API
    # could then each be right at their moment and still differ.
    plain = [f"p-{i}" for i in range(6)]
    for i, name in enumerate(plain):
        kueue.custom.create_namespaced_custom_object(
            "kueue.x-k8s.io", kueue.api_version, kueue.namespace, "workloads",
            plain_workload(kueue.api_version, name, queue, "2", priority=len(plain) - i),
        )  # fmt: skip
    both.same(shown, lambda view: view[3].get(queue) == 8, "boards with the plain ones")
    through.core.clusters.create(small_cluster("w-3", workers=2), None)
    rows = both.same(
        shown,
        lambda view: view[3].get(queue) == 9 and "w-3" in owners(view),
        "boards with mine at the end of a long queue",
    )
    assert folded(rows) and owners(rows)[-1] == "w-3", rows[2]
    expand([queue])
    rows = both.same(shown, lambda view: len(view[2]) == 9, "boards with the queue expanded")
    through.core.clusters.delete("w-1")
    both.same(shown, lambda view: len(view[2]) == 8, "an expanded queue once one is gone")
    expand([])
    rows = both.same(shown, folded, "boards folded again")
    assert owners(rows)[-1] == "w-3", rows[2]
    for name in plain:
        kueue.custom.delete_namespaced_custom_object(
            "kueue.x-k8s.io", kueue.api_version, kueue.namespace, "workloads", name
        )
    for name in ("w-2", "w-3"):
        own.core.clusters.delete(name)
    both.same(shown, lambda view: not view[3].get(queue), "boards empty again")
    # The board read no Workload listing: the rows came from its socket.
    assert through.core.link.calls["workloads.list"] == 0
    for board in boards.values():
        board.close()
    loop.close()


async def test_a_queue_board_through_the_server_shows_what_an_own_one_shows(
    kernel, server_kernel, kueue
):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    await asyncio.to_thread(boards_scenario, kernel, server_kernel, queue.local_queue, kueue)
