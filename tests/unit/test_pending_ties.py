"""A pending list's ties keep the order first seen (Kueue 0.14 swaps them on every answer)."""

from __future__ import annotations

from typing import Any

from jupyter_dw.domain.pending_ties import keep_tie_order

T0, T1 = "2026-11-24T10:00:00Z", "2026-11-24T10:00:01Z"


def item(name: str, local: int, cluster: int, priority: int = 0, at: str = T0) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": at},
        "priority": priority,
        "positionInLocalQueue": local,
        "positionInClusterQueue": cluster,
    }


def names(items) -> list[tuple[str, int, int]]:
    return [
        (i["metadata"]["name"], i["positionInLocalQueue"], i["positionInClusterQueue"])
        for i in items
    ]


def test_a_swapped_tie_is_put_back_with_its_positions():
    first = (item("a", 0, 1), item("b", 1, 3))
    swapped = (item("b", 0, 1), item("a", 1, 3))
    assert names(keep_tie_order(first, swapped)) == [("a", 0, 1), ("b", 1, 3)]


def test_nothing_held_takes_kueue_s_order():
    swapped = (item("b", 0, 0), item("a", 1, 1))
    assert keep_tie_order((), swapped) == swapped


def test_workloads_kueue_tells_apart_move_as_kueue_says():
    first = (item("a", 0, 0, priority=0), item("b", 1, 1, priority=0, at=T1))
    # b rose in priority: it is ahead now, and no tie is involved.
    moved = (item("b", 0, 0, priority=5, at=T1), item("a", 1, 1))
    assert keep_tie_order(first, moved) == moved
    later = (item("b", 0, 0), item("a", 1, 1, at=T1))  # a's queue time is later now
    assert keep_tie_order(first, later) == later


def test_a_new_workload_in_a_tie_goes_after_those_seen():
    first = (item("a", 0, 0), item("b", 1, 1))
    answer = (item("c", 0, 0), item("b", 1, 1), item("a", 2, 2))
    assert names(keep_tie_order(first, answer)) == [("a", 0, 0), ("b", 1, 1), ("c", 2, 2)]


def test_only_the_tie_run_moves_and_the_rest_keeps_its_place():
    first = (item("x", 0, 0, priority=9), item("a", 1, 2), item("b", 2, 5), item("z", 3, 6, at=T1))
    answer = (item("x", 0, 0, priority=9), item("b", 1, 2), item("a", 2, 5), item("z", 3, 6, at=T1))
    assert names(keep_tie_order(first, answer)) == [
        ("x", 0, 0),
        ("a", 1, 2),
        ("b", 2, 5),
        ("z", 3, 6),
    ]


def test_the_same_answer_again_is_left_as_it_is():
    first = (item("a", 0, 0), item("b", 1, 1))
    again = (item("a", 0, 0), item("b", 1, 1))
    kept = keep_tie_order(first, again)
    assert kept == again and all(k is a for k, a in zip(kept, again, strict=True))
