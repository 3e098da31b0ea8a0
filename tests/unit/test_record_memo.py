"""Records shared between readers: derived once per object version and position, and derived
again whenever either changes (a memo must never answer for an input it was not given)."""

from __future__ import annotations

from typing import Any, cast

from jupyter_dw.core.record_memo import RecordMemo
from jupyter_dw.core.shown_workloads import ShownWorkloads
from jupyter_dw.core.workloads import WorkloadService
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
    for name in ("a", "b", "c"):
        memo_get(memo, waiting(name, "1"), None)
    assert len(memo) == 1  # "c" alone: a third object started it again
    first = memo_get(memo, waiting("c", "1"), None)
    assert memo_get(memo, waiting("c", "1"), None) is first and memo.derived == 3


def test_only_the_latest_version_of_each_object_is_held():
    # A workbench whose clusters come and go for days: each Workload changes a few times and
    # is deleted; the memo holds what the cache holds, not the history (the soak found it
    # holding a record of every version ever seen, ~35 KiB more per cycle of changes).
    memo: RecordMemo[WorkloadInfo | None] = RecordMemo(workload_info)
    for cycle in range(100):
        for version in range(5):
            memo_get(memo, waiting(f"w-{cycle}", str(version)), item(f"w-{cycle}", version))
        if cycle % 2:
            memo.forget(f"uid-w-{cycle}")
    assert len(memo) == 50 and memo.derived == 500  # one per object left, none deleted
    older = memo.derived
    memo_get(memo, waiting("w-0", "3"), item("w-0", 3))  # an older version: derived again
    assert memo.derived == older + 1


def test_an_object_version_holds_its_latest_positions_only():
    memo: RecordMemo[WorkloadInfo | None] = RecordMemo(workload_info)
    obj = waiting("a", "10")
    for position in range(20):  # a waiting Workload moving up its queue: one version
        memo_get(memo, obj, item("a", position))
    derived = memo.derived
    assert memo_get(memo, obj, item("a", 19)).position_in_local_queue == 19
    assert memo.derived == derived  # the latest are held
    memo_get(memo, obj, item("a", 0))  # the first is gone
    assert memo.derived == derived + 1


def test_a_deleted_workload_leaves_the_services_memo():
    service = WorkloadService(cast(Any, None), positions=cast(Any, object()))
    memo_get(service.records, waiting("a", "10"), None)
    memo_get(service.records, waiting("b", "10"), None)
    service.forget_deleted("pods", "DELETED", waiting("a", "10"))  # not a Workload
    service.forget_deleted("workloads", "MODIFIED", waiting("a", "11"))
    assert len(service.records) == 2
    service.forget_deleted("workloads", "DELETED", waiting("a", "11"))
    assert len(service.records) == 1


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
