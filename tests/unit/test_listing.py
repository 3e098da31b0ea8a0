"""Answers that are lists behave like them: iteration, len, lookup by name or position."""

from __future__ import annotations

import pytest

from jupyter_dw.core.cluster_results import ClusterList


def test_an_empty_answer_is_an_empty_sequence_but_still_an_answer():
    empty = ClusterList("ns", True, ())
    assert len(empty) == 0 and list(empty) == [] and empty.names() == []
    assert empty  # an answer of no clusters is not a missing answer
    with pytest.raises(KeyError, match="there are: none"):
        empty["demo"]


def test_queues_iterate_count_and_look_up_by_name_or_position():
    from jupyter_dw.core.queue_results import QueueList
    from jupyter_dw.domain.quota import queue_summaries
    from tests.unit.test_fit import lq

    summaries = queue_summaries([lq("team-b", "cq"), lq("team-a", "cq")], None)
    queues = QueueList("ns", "v1beta2", False, True, tuple(summaries))
    assert [q.name for q in queues] == ["team-a", "team-b"] == queues.names()
    assert len(queues) == 2 and "team-b" in queues and "team-c" not in queues
    assert queues["team-b"] is queues[1] and queues[0].name == "team-a"
    with pytest.raises(KeyError, match="there are: team-a, team-b"):
        queues["team-c"]


def containers(value: object) -> list[object]:
    """Every dict and list inside ``value`` (``value`` included)."""
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in containers(v))]
    return []


def test_queues_json_is_formatted_once_yet_every_call_gets_its_own_containers():
    from jupyter_dw.core.queue_results import QueueList
    from jupyter_dw.domain.quota import queue_summaries
    from tests.unit.test_quota import CPU, MEM, cq, lq

    summaries = queue_summaries(
        [lq("team-a", "cq"), lq("team-b", "cq")],
        [cq("cq", {CPU: (4, None, None), MEM: ("8Gi", None, None)})],
        [],
    )
    queues = QueueList("ns", "v1beta2", True, True, tuple(summaries))
    first, second = queues.to_json(), queues.to_json()

    assert first == second == {**first, "queues": [s.to_json() for s in summaries]}
    assert queues._queues_json is queues._queues_json  # formatted once per answer
    # No dict or list is shared between two answers (nor with the formatted one): a caller
    # that changes its copy changes nobody else's.
    mine = {id(c) for c in containers(first)}
    assert not mine & {id(c) for c in containers(second)}
    assert not mine & {id(c) for c in containers(list(queues._queues_json))}
    first["queues"][0]["resources"][0]["headroom"] = "changed"
    assert queues.to_json() == second


def test_queues_json_reuses_what_was_formatted_for_an_equal_summary():
    from jupyter_dw.core.queue_results import QueueList
    from jupyter_dw.domain.quota import queue_summaries
    from tests.unit.test_quota import CPU, cq, lq

    cluster_queues = [cq("cq", {CPU: (4, None, None)})]
    changed, kept = queue_summaries([lq("kept", "cq"), lq("changed", "other")], cluster_queues)
    made_before = {**kept.to_json(), "hint": "formatted earlier"}
    queues = QueueList("ns", "v1beta2", True, True, (changed, kept), formatted={kept: made_before})

    by_name = {q["name"]: q for q in queues.to_json()["queues"]}
    assert by_name["kept"] == made_before  # reused, not formatted again
    assert by_name["changed"] == changed.to_json()
