"""A change sends what changed: a ``queue`` message with the LocalQueues whose records differ
(the whole ``queues`` answer only when a queue came or went), and one ``positions`` message per
LocalQueue for Workloads that only moved in Kueue's order. Both as ``openapi.yaml`` declares."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from jupyter_dw.core.feed import ChangeFeed
from jupyter_dw.core.feed_messages import Cause, PositionsChanged, QueuesChanged, WorkloadChanged
from jupyter_dw.core.queue_results import QueueList
from jupyter_dw.core.queues import QueueService
from jupyter_dw.domain.priorities import PriorityClass
from jupyter_dw.domain.quota import queue_summaries
from jupyter_dw.domain.workloads import WorkloadInfo, workload_info
from tests.openapi_check import check_event
from tests.unit.test_quota import CPU, cq, lq
from tests.unit.test_record_memo import item, waiting

CAUSE = Cause("ClusterQueue", "cq", "MODIFIED")


def answer(reserved: int = 0, *names: str, **fields: Any) -> QueueList:
    """Queues ``names`` (default a, b) on ClusterQueue ``cq`` (4 CPU), ``b`` alone on ``cq-b``
    whose reservation is ``reserved``: a change of ``cq-b`` changes b's record only."""
    names = names or ("a", "b")
    cluster_queues = [
        cq("cq", {CPU: (4, None, None)}),
        cq("cq-b", {CPU: (4, None, None)}, reserved={CPU: reserved}),
    ]
    summaries = queue_summaries(
        [lq(n, "cq-b" if n == "b" else "cq") for n in names], cluster_queues
    )
    return QueueList("ns", "v1beta2", True, True, tuple(summaries), **fields)


def test_a_changed_record_is_told_alone_and_anything_more_as_the_whole_answer() -> None:
    before = answer()
    assert answer().changed_since(before) == ()
    assert answer(2).changed_since(before) == ("b",)
    assert answer(0, "a", "b", "c").changed_since(before) is None  # a queue came
    assert answer(0, "a").changed_since(before) is None  # one went
    classes = (PriorityClass("high", 100),)
    assert answer(priority_classes=classes).changed_since(before) is None


def test_the_queue_message_carries_only_the_changed_records() -> None:
    before, now = answer(), answer(2)
    service = QueueService(session=None)  # type: ignore[arg-type]  # compares, reads nothing
    changed = service.changes(before, now)
    assert service.changes(before, now) is changed  # asked by every socket: compared once
    message = QueuesChanged(CAUSE, now, None, changed).to_json()
    check_event(message)
    assert message["type"] == "queue"
    assert message["queues"] == [now["b"].to_json()]
    assert message["queues"] != [before["b"].to_json()]
    whole = QueuesChanged(CAUSE, now, None).to_json()
    check_event(whole)
    assert (whole["type"], whole["queues"]) == ("queues", now.to_json())


def record(name: str, position: int | None, queue: str = "lq", version: str = "1") -> WorkloadInfo:
    info = workload_info(
        waiting(name, version, queue), item(name, position) if position is not None else None
    )
    assert info is not None
    return info


def feed_told(*infos: WorkloadInfo) -> ChangeFeed:
    nothing: Any = SimpleNamespace()
    feed = ChangeFeed(nothing, nothing, nothing, nothing)
    feed._workloads.reset(infos)
    return feed


def test_moved_workloads_are_one_positions_message_per_queue() -> None:
    told = [record("w-1", 0), record("w-2", 1), record("w-3", 2), record("x", 0, queue="other")]
    feed = feed_told(*told)
    now = {
        "w-2": record("w-2", 0),
        "w-3": record("w-3", 1),
        "x": record("x", 3, queue="other"),
        "w-1": record("w-1", 0, version="2"),  # unchanged: nothing about it
    }
    messages = feed._moved(now, CAUSE)
    assert [type(m) for m in messages] == [PositionsChanged, PositionsChanged]
    by_queue = {m.queue: m.to_json() for m in messages if isinstance(m, PositionsChanged)}
    for message in by_queue.values():
        check_event(message)
    assert by_queue["lq"]["positions"] == {"w-2": [0, 0], "w-3": [1, 1]}
    assert by_queue["other"]["positions"] == {"x": [3, 3]}
    # Told: the same positions again are no news.
    assert feed._moved(now, CAUSE) == []


def test_a_record_that_changed_more_than_its_position_is_sent_whole() -> None:
    feed = feed_told(record("w-1", 0))
    changed = replace(record("w-1", 1), message="no quota at all")
    messages = feed._moved({"w-1": changed}, CAUSE)
    assert [type(m) for m in messages] == [WorkloadChanged]
    assert messages[0].to_json()["workload"]["position_in_local_queue"] == 1


def test_a_workload_change_that_alters_no_record_sends_nothing() -> None:
    """The caches' first list reaching a socket opened while they synced (an ADDED for each
    Workload the snapshot had), or an annotation: no record changed, nothing is sent."""
    current = {"w-1": record("w-1", 0), "w-2": record("w-2", 1)}
    versions = {"lq": 1}
    fake: Any = SimpleNamespace(
        describe_many=lambda names: {n: current[n] for n in names if n in current},
        positions=SimpleNamespace(refresh=lambda queues: {q: versions["lq"] for q in queues}),
    )
    feed = ChangeFeed(fake, fake, fake, fake)
    feed._workloads.reset(current.values())
    feed._positions_seen = dict(versions)
    obj = waiting("w-1", "2")

    assert feed._workload_messages("ADDED", "w-1", obj) == []
    current["w-1"] = record("w-1", 1, version="3")  # its position alone
    [moved] = feed._workload_messages("MODIFIED", "w-1", obj)
    assert moved.to_json()["positions"] == {"w-1": [1, 1]}
    current["w-1"] = replace(current["w-1"], message="no quota at all")
    [changed] = feed._workload_messages("MODIFIED", "w-1", obj)
    assert isinstance(changed, WorkloadChanged) and changed.workload == current["w-1"]
    del current["w-1"]
    [gone] = feed._workload_messages("DELETED", "w-1", obj)
    assert (gone.to_json()["event"], gone.to_json()["workload"]) == ("DELETED", None)
