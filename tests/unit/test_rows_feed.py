"""Queue rows chosen by the server (``core/rows_feed.py``, ``?workloads=rows``): a reader is told
each LocalQueue's shown rows and count once, then only the queues whose rows or count changed,
with only the records it was not told; read back (``core/feed_json.py``) they are the rows a
board choosing them itself shows. Messages as ``openapi.yaml`` declares them."""

from __future__ import annotations

from dataclasses import replace

from jupyter_dw.core.feed_json import FeedState, message_from_json, snapshot_from_json
from jupyter_dw.core.feed_messages import Snapshot
from jupyter_dw.core.rows_feed import RowsChanged, RowsFeed
from jupyter_dw.domain.json_decode import DecodeError
from jupyter_dw.domain.workload_rows import (
    WORKLOADS_SHOWN,
    QueueRows,
    QueueShown,
    records_to_tell,
)
from jupyter_dw.domain.workloads import WorkloadInfo
from jupyter_dw.notebook.server_feed import ServerFeed, rows_differences
from tests.openapi_check import check_event
from tests.unit.test_workload_rows import names, waiting

MINE = {"a-7"}


def is_mine(info: WorkloadInfo) -> bool:
    return info.name in MINE


def queue_a(count: int = 8) -> list[WorkloadInfo]:
    return [waiting(f"a-{i}", "a", i) for i in range(count)]


def snapshot(rows: tuple[QueueShown, ...]) -> Snapshot:
    return Snapshot("ns", None, None, None, None, True, queue_rows=rows)


def test_the_snapshot_tells_each_queues_rows_count_and_mine() -> None:
    feed = RowsFeed(is_mine)
    told = feed.reset([*queue_a(), waiting("b-0", "b", 0)])
    a, b = told
    assert (a.queue, a.count, a.mine) == ("a", 8, frozenset({"a-7"}))
    assert names(list(a.rows)) == [f"a-{i}" for i in range(WORKLOADS_SHOWN)] + ["a-7"]
    assert (b.queue, b.count, names(list(b.rows))) == ("b", 1, ["b-0"])
    message = snapshot(told).to_json()
    check_event(message)
    assert [w["name"] for w in message["workloads"]] == names([*a.rows, *b.rows])
    assert message["queue_rows"] == {
        "a": {"count": 8, "mine": ["a-7"]},
        "b": {"count": 1, "mine": []},
    }
    assert snapshot_from_json(message).queue_rows == told


def test_a_change_tells_only_its_queue_and_only_the_records_it_changed() -> None:
    feed = RowsFeed(is_mine)
    feed.reset([*queue_a(), waiting("b-0", "b", 0)])
    # a-6 is not shown: it changes the count of nothing and no row, so nothing is told.
    assert feed.put([("a-6", replace(waiting("a-6", "a", 6), message="moved"))]) == []
    # a-1 is shown: its record alone is sent, the other rows are named only.
    changed = feed.put([("a-1", replace(waiting("a-1", "a", 1), message="Kueue says so"))])
    assert [(c.shown.queue, c.new) for c in changed] == [("a", ("a-1",))]
    message = changed[0].to_json()
    check_event(message)
    assert message["names"] == ["a-0", "a-1", "a-2", "a-3", "a-4", "a-7"]
    assert [w["name"] for w in message["workloads"]] == ["a-1"]
    # A Workload that leaves makes the next one a row: only that one's record is new.
    (gone,) = feed.put([("a-0", None)])
    assert gone.shown.count == 7 and gone.new == ("a-5",)
    # The last of a queue gone: count 0, no rows.
    (emptied,) = feed.put([("b-0", None)])
    assert (emptied.shown.queue, emptied.shown.count, emptied.shown.rows) == ("b", 0, ())


def test_expanding_a_queue_sends_its_other_rows_and_folding_it_sends_none() -> None:
    feed = RowsFeed(is_mine)
    feed.reset(queue_a(), expanded=())
    (expanded,) = feed.expand(["a", "not-a-queue"])
    assert names(list(expanded.shown.rows)) == [f"a-{i}" for i in range(8)]
    assert expanded.new == ("a-5", "a-6")  # the rows it was not shown yet
    assert feed.expand(["a"]) == []  # asked again: nothing changed
    (folded,) = feed.expand([])
    assert folded.new == () and len(folded.shown.rows) == WORKLOADS_SHOWN + 1


def test_read_back_the_rows_are_those_a_board_choosing_them_shows() -> None:
    """The same changes through the server's RowsFeed and the socket's JSON, and into a
    QueueRows of the reader's own: the same rows and counts."""
    workloads = [*queue_a(), waiting("b-0", "b", 0)]
    server, own = RowsFeed(is_mine), QueueRows(is_mine)
    own.reset(workloads)
    state = FeedState().after(snapshot_from_json(snapshot(server.reset(workloads)).to_json()))
    steps: list[list[RowsChanged]] = [
        server.put([("a-2", None)]),
        server.put([("x", waiting("x", "b", 1)), ("a-3", waiting("a-3", "b", 2))]),
        server.expand(["a"]),
        server.put([("a-1", replace(waiting("a-1", "a", 1), message="changed"))]),
        server.expand([]),
    ]
    own_steps = [
        lambda: own.put("a-2", None),
        lambda: (own.put("x", waiting("x", "b", 1)), own.put("a-3", waiting("a-3", "b", 2))),
        lambda: own.expand(["a"]),
        lambda: own.put("a-1", replace(waiting("a-1", "a", 1), message="changed")),
        lambda: own.expand([]),
    ]
    for told, step in zip(steps, own_steps, strict=True):
        step()
        for change in told:
            read = message_from_json(change.to_json(), state)
            assert read == change
            state = state.after(read)
        assert state.rows is not None
        shown = [info for queue in sorted(state.rows) for info in state.rows[queue].rows]
        assert shown == own.rows()
        assert {q: s.count for q, s in sorted(state.rows.items())} == own.counts()


def test_a_rows_message_about_records_never_told_is_refused() -> None:
    message = {"type": "rows", "queue": "a", "count": 1, "names": ["a-0"], "mine": [],
               "workloads": []}  # fmt: skip
    try:
        message_from_json(message, FeedState(rows={}))
    except DecodeError as err:
        assert "a-0" in str(err)
    else:
        raise AssertionError("a row neither sent nor told was read")


def test_records_to_tell_is_nothing_when_nothing_differs() -> None:
    rows = tuple(queue_a(3))
    before = QueueShown("a", 3, rows)
    assert records_to_tell(before, QueueShown("a", 3, rows)) is None
    assert records_to_tell(before, QueueShown("a", 3, tuple(queue_a(3)))) is None  # equal
    assert records_to_tell(before, QueueShown("a", 4, rows)) == ()  # only the count
    assert records_to_tell(before, QueueShown("a", 3, rows, frozenset({"a-0"}))) == ()
    assert records_to_tell(None, QueueShown("a", 0, ())) is None  # never told, still empty


def test_a_view_that_did_not_expand_a_queue_shows_its_first_rows_and_mine() -> None:
    """Another view of the kernel expanded it: the rows are all of them."""
    rows = tuple(queue_a())
    shown = QueueShown("a", 8, rows, frozenset({"a-7"}))
    assert names(shown.visible(True)) == names(list(rows))
    assert names(shown.visible(False)) == [f"a-{i}" for i in range(WORKLOADS_SHOWN)] + ["a-7"]


def test_a_new_snapshot_tells_the_queues_that_changed_meanwhile() -> None:
    feed = RowsFeed(is_mine)
    first = feed.reset([*queue_a(3), waiting("b-0", "b", 0)])
    again = RowsFeed(is_mine).reset([*queue_a(3), waiting("c-0", "c", 0)])
    changed = rows_differences(first, again)
    assert [(c.shown.queue, c.shown.count) for c in changed] == [("b", 0), ("c", 1)]
    # Through a kernel's feed: the second snapshot (a reconnection) becomes those messages.
    server = ServerFeed()
    assert server.messages(snapshot(first).to_json()) == []
    told = server.messages(snapshot(again).to_json())
    assert [(m.shown.queue, m.shown.count) for m in told if isinstance(m, RowsChanged)] == [
        ("b", 0),
        ("c", 1),
    ]
    rows, error = server.told_rows()
    assert error is None and rows is not None and sorted(rows) == ["a", "c"]
