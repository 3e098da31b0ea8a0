"""Records shared between readers: derived once per object version and position, and derived
again whenever either changes (a memo must never answer for an input it was not given)."""

from __future__ import annotations

from typing import Any

from jupyter_dw.core.record_memo import RecordMemo
from jupyter_dw.core.shown_workloads import ShownWorkloads
from jupyter_dw.domain.workloads import WorkloadInfo, workload_info


def waiting(name: str, version: str, queue: str = "lq", message: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                     "resourceVersion": version, "creationTimestamp": "2026-11-24T00:00:00Z"},
        "spec": {"queueName": queue, "priority": 0},
        "status": {"conditions": [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": message}
        ]},
    }  # fmt: skip


def item(name: str, position: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "positionInLocalQueue": position,
            "positionInClusterQueue": position}  # fmt: skip


def memo_get(memo: RecordMemo[WorkloadInfo | None], obj: Any, pending: Any) -> WorkloadInfo:
    key = None if pending is None else pending["positionInLocalQueue"]
    record = memo.get(obj, pending, key)
    assert record is not None
    return record


def test_one_version_and_position_is_derived_once_and_shared():
    memo: RecordMemo[WorkloadInfo | None] = RecordMemo(workload_info)
    obj = waiting("a", "10", message="no quota")
    first = memo_get(memo, obj, item("a", 2))
    again = memo_get(memo, obj, item("a", 2))
    assert again is first and memo.derived == 1
    assert first.position_in_local_queue == 2 and first.message == "no quota"


def test_a_new_version_or_position_is_derived_again():
    memo: RecordMemo[WorkloadInfo | None] = RecordMemo(workload_info)
    before = memo_get(memo, waiting("a", "10", message="no quota"), item("a", 2))
    moved = memo_get(memo, waiting("a", "10", message="no quota"), item("a", 1))
    assert moved.position_in_local_queue == 1 and before.position_in_local_queue == 2
    changed = memo_get(memo, waiting("a", "11", message="still no quota"), item("a", 1))
    assert changed.message == "still no quota" and memo.derived == 3
    # No position: a record of its own.
    assert memo_get(memo, waiting("a", "11"), None).position_in_local_queue is None


def test_an_object_without_uid_or_version_is_never_remembered():
    memo: RecordMemo[WorkloadInfo | None] = RecordMemo(workload_info)
    obj = waiting("a", "10")
    del obj["metadata"]["resourceVersion"]
    assert memo_get(memo, obj, None) is not memo_get(memo, obj, None)
    assert memo.derived == 0


def test_past_its_limit_the_memo_starts_again():
    memo: RecordMemo[WorkloadInfo | None] = RecordMemo(workload_info, limit=2)
    for version in ("1", "2", "3"):
        memo_get(memo, waiting("a", version), None)
    first = memo_get(memo, waiting("a", "3"), None)
    assert memo_get(memo, waiting("a", "3"), None) is first and memo.derived == 3


def test_shown_workloads_index_the_waiting_ones_by_queue():
    shown = ShownWorkloads()
    records = [
        workload_info(waiting(n, "1", queue=q)) for n, q in (("a", "x"), ("b", "x"), ("c", "y"))
    ]
    shown.reset(r for r in records if r is not None)
    assert shown.waiting_queues() == {"x", "y"} and shown.waiting_in("x") == ["a", "b"]
    admitted = waiting("a", "2", queue="x")
    admitted["status"]["conditions"][0]["status"] = "True"
    info = workload_info(admitted)
    assert info is not None
    shown.put(info)  # no longer waiting: out of the index, still held
    assert shown.waiting_in("x") == ["b"] and shown.get("a") is info and len(shown) == 3
    moved = workload_info(waiting("b", "2", queue="y"))
    assert moved is not None
    shown.put(moved)  # another queue
    assert shown.waiting_queues() == {"y"} and shown.waiting_in("y") == ["b", "c"]
    assert shown.pop("c") is not None and shown.waiting_in("y") == ["b"]
    assert shown.pop("c") is None and shown.any_waiting()
    shown.pop("b")
    assert not shown.any_waiting() and shown.waiting_queues() == set()
