"""The rows a queue view shows (``domain/workload_rows.py``): a long queue's first ones in
Kueue's order and every one of ours; all of an expanded queue; a change re-chooses only its own
queue's rows and keeps each queue's order."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jupyter_dw.domain.workload_rows import WORKLOADS_SHOWN, QueueRows, first_and_mine
from jupyter_dw.domain.workloads import WorkloadInfo, workload_info


def waiting(name: str, queue: str, position: int) -> WorkloadInfo:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2026-11-25T00:00:00Z"},
        "spec": {"queueName": queue, "priority": 0},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False"}]},
    }
    info = workload_info(obj)
    assert info is not None
    return replace(info, position_in_local_queue=position)


def names(rows: list[WorkloadInfo]) -> list[str]:
    return [info.name for info in rows]


def test_first_and_mine_keeps_the_first_ones_and_ours_in_their_order():
    rows = list(range(12))
    assert first_and_mine(rows, lambda r: r in (3, 9, 11), count=5) == [0, 1, 2, 3, 4, 9, 11]
    assert first_and_mine(rows[:5], lambda r: False, count=5) == rows[:5]
    assert first_and_mine([], lambda r: True) == []


def test_a_long_queue_shows_its_first_rows_and_ours_and_counts_them_all():
    mine = {"a-8"}
    board = QueueRows(lambda info: info.name in mine)
    # Positions opposite to the names' order: the rows must follow Kueue's positions.
    board.reset([waiting(f"a-{i}", "a", 9 - i) for i in range(10)] + [waiting("b-0", "b", 0)])
    assert names(board.rows()) == [f"a-{9 - i}" for i in range(WORKLOADS_SHOWN)] + ["b-0"]
    assert board.counts() == {"a": 10, "b": 1}

    mine.add("a-0")  # ours: shown although last (once its queue is chosen again)
    board.put("a-3", waiting("a-3", "a", 6))
    assert names(board.rows()) == ["a-9", "a-8", "a-7", "a-6", "a-5", "a-0", "b-0"]


def test_an_expanded_queue_shows_every_row_until_it_is_folded_again():
    board = QueueRows(lambda info: False)
    board.reset([waiting(f"a-{i}", "a", i) for i in range(8)])
    board.expand(["a"])
    assert names(board.rows()) == [f"a-{i}" for i in range(8)]
    board.expand([])
    assert names(board.rows()) == [f"a-{i}" for i in range(5)]


def test_a_change_moves_a_row_between_queues_and_a_queue_emptied_goes():
    board = QueueRows(lambda info: False)
    board.reset([waiting("x", "a", 0), waiting("y", "b", 0)])
    board.put("x", waiting("x", "b", 1))
    assert names(board.rows()) == ["y", "x"] and board.counts() == {"b": 2}
    board.put("y", None)
    board.put("gone-before", None)  # never held: nothing to do
    assert names(board.rows()) == ["x"] and board.counts() == {"b": 1}


def test_a_workload_in_no_queue_is_not_a_row():
    info = replace(waiting("z", "a", 0), queue=None)
    board = QueueRows(lambda info: False)
    board.reset([info])
    assert board.rows() == [] and board.counts() == {}
