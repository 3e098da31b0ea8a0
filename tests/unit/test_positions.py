"""The position board's marks: which cache changes make it ask Kueue's visibility API again.

The board listens to a session's caches and asks ``pending_workloads``; here a stand-in
session plays both (the caches' events are what a watch delivers, the answers what Kueue's
visibility API would say at that moment), so each rule is checked without a race.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from jupyter_dw.core.positions import RECHECK_DELAYS, VISIBILITY_PAGE, PositionBoard
from jupyter_dw.k8s.session import KubeSession

Object = dict[str, Any]
Listener = Callable[[str, str, Object], None]


class Caches:
    """What the board uses of a session: its listeners and one visibility answer per queue."""

    positions_visible = True

    def __init__(self) -> None:
        self.listeners: list[Listener] = []
        self.answers: dict[str, list[str]] = {}
        self.asked: list[str] = []
        self.watched: list[str] = []
        """The watches the board opened (a kernel's session opens them on first use)."""

    def cache(self, kind: Any) -> None:
        if kind.plural not in self.watched:  # a session opens a watch on its first use only
            self.watched.append(kind.plural)

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def pending_workloads(self, queue: str) -> list[Object]:
        self.asked.append(queue)
        return [
            {"metadata": {"name": name}, "positionInLocalQueue": i, "positionInClusterQueue": i}
            for i, name in enumerate(self.answers.get(queue, []))
        ]

    def event(self, plural: str, event_type: str, obj: Object) -> None:
        for listener in list(self.listeners):
            listener(plural, event_type, obj)


def local_queue(name: str, pending: int | None = None) -> Object:
    status = {} if pending is None else {"pendingWorkloads": pending}
    return {"metadata": {"name": name}, "spec": {"clusterQueue": "cq"}, "status": status}


def waiting(name: str, queue: str = "lq") -> Object:
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2026-11-24T00:00:00Z"},
        "spec": {"queueName": queue, "priority": 0},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False"}]},
    }


class Checks:
    """The board's scheduled checks, run when the test says (no timer, no race)."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, Callable[[], None]]] = []
        self.delays: list[float] = []

    def schedule(self, delay: float, call: Callable[[], None]) -> None:
        self.pending.append((delay, call))
        self.delays.append(delay)

    def run(self) -> None:
        """Run the check scheduled first."""
        _, call = self.pending.pop(0)
        call()


def board_on(caches: Caches, checks: Checks | None = None) -> PositionBoard:
    return PositionBoard(cast(KubeSession, caches), (checks or Checks()).schedule)


def names(board: PositionBoard) -> list[str]:
    return sorted(board.entries(["lq"]))


def two_waiting(checks: Checks | None = None) -> tuple[Caches, PositionBoard]:
    """A board whose LocalQueue ``lq`` (count 0 so far) has two waiting Workloads, a and b,
    both in the visibility API's answer (not asked yet)."""
    caches = Caches()
    board = board_on(caches, checks)
    caches.event("localqueues", "ADDED", local_queue("lq", pending=0))
    for name in ("a", "b"):
        caches.event("workloads", "ADDED", waiting(name))
    caches.answers["lq"] = ["a", "b"]
    return caches, board


def test_a_stale_answer_is_asked_again_when_the_local_queue_counts_fewer():
    caches, board = two_waiting()
    assert names(board) == ["a", "b"] and caches.asked == ["lq"]
    # The LocalQueue agrees with the answer held: nothing to ask.
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=2))
    assert names(board) == ["a", "b"] and caches.asked == ["lq"]

    # "a" deleted: this watch saw it before Kueue's queue manager did, so the read it marks
    # still lists "a" ...
    caches.event("workloads", "DELETED", waiting("a"))
    assert names(board) == ["a", "b"] and caches.asked == ["lq", "lq"]
    assert names(board) == ["a", "b"] and len(caches.asked) == 2  # held: no change since
    # ... until Kueue writes the LocalQueue's count: it disagrees, the board asks again.
    caches.answers["lq"] = ["b"]
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=1))
    assert names(board) == ["b"] and len(caches.asked) == 3
    # A status change that agrees (or says nothing of the count) asks nothing.
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=1))
    caches.event("localqueues", "MODIFIED", local_queue("lq"))
    assert names(board) == ["b"] and len(caches.asked) == 3


def test_a_count_past_one_page_compares_with_the_page():
    caches = Caches()
    board = board_on(caches)
    caches.event("localqueues", "ADDED", local_queue("lq"))
    caches.answers["lq"] = [f"w{i}" for i in range(VISIBILITY_PAGE)]
    assert len(board.entries(["lq"])) == VISIBILITY_PAGE and len(caches.asked) == 1
    # Kueue counts more than it lists in one answer: the list is not behind for that.
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=VISIBILITY_PAGE + 5))
    assert len(board.entries(["lq"])) == VISIBILITY_PAGE and len(caches.asked) == 1
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=VISIBILITY_PAGE - 1))
    board.entries(["lq"])
    assert len(caches.asked) == 2


def test_a_waiting_workload_marks_its_queue_only_when_its_place_can_move():
    caches = Caches()
    board = board_on(caches)
    caches.event("localqueues", "ADDED", local_queue("lq"))
    caches.answers["lq"] = ["a"]
    caches.event("workloads", "ADDED", waiting("a"))
    board.entries(["lq"])
    assert len(caches.asked) == 1
    # A new message of Kueue's: same queue, same order, no call.
    changed = waiting("a")
    changed["status"]["conditions"][0]["message"] = "insufficient quota"
    caches.event("workloads", "MODIFIED", changed)
    board.entries(["lq"])
    assert len(caches.asked) == 1
    # Admitted: it leaves the pending list, the queue is asked again.
    admitted = waiting("a")
    admitted["status"]["conditions"][0]["status"] = "True"
    caches.answers["lq"] = []
    caches.event("workloads", "MODIFIED", admitted)
    assert board.entries(["lq"]) == {} and len(caches.asked) == 2


def test_a_count_that_rises_late_asks_nothing():
    caches, board = two_waiting()
    assert names(board) == ["a", "b"] and len(caches.asked) == 1
    # Kueue's count of the new ones comes after the list that has them: not behind.
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=1))
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=2))
    assert names(board) == ["a", "b"] and len(caches.asked) == 1


def test_a_count_that_rises_past_the_answer_asks_again():
    caches, board = two_waiting()
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=2))
    assert names(board) == ["a", "b"] and len(caches.asked) == 1
    # "c" (a scale-up's slice, say) comes: this watch saw it before Kueue's queue manager
    # did, so the read it marks does not list it yet ...
    caches.event("workloads", "ADDED", waiting("c"))
    assert names(board) == ["a", "b"] and len(caches.asked) == 2
    # ... until Kueue counts it: the count passed the answer, the board asks again.
    caches.answers["lq"] = ["a", "b", "c"]
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=3))
    assert names(board) == ["a", "b", "c"] and len(caches.asked) == 3


def test_an_answer_that_lists_fewer_than_the_count_is_not_checked_again():
    checks = Checks()
    caches, board = two_waiting(checks)
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=2))
    assert names(board) == ["a", "b"] and checks.pending == []
    # "a" left; Kueue's list has it gone before Kueue writes the count: the count will agree.
    caches.answers["lq"] = ["b"]
    caches.event("workloads", "DELETED", waiting("a"))
    assert names(board) == ["b"] and len(caches.asked) == 2
    assert checks.pending == []
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=1))
    assert names(board) == ["b"] and len(caches.asked) == 2


def test_an_answer_still_behind_the_count_is_checked_again_and_listeners_told():
    checks = Checks()
    caches, board = two_waiting(checks)
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=2))
    assert names(board) == ["a", "b"]
    checks.pending.clear()  # read before the count agreed: see the late-count test
    told: list[str] = []
    board.add_listener(told.append)
    # "a" leaves and Kueue counts one, but its visibility answer still lists "a" ...
    caches.event("workloads", "DELETED", waiting("a"))
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=1))
    assert names(board) == ["a", "b"] and len(caches.asked) == 2
    assert len(checks.pending) == 1 and told == []
    # ... and no change comes after: the board's own check asks again and tells.
    caches.answers["lq"] = ["b"]
    checks.run()
    assert len(caches.asked) == 3 and told == ["lq"]
    assert names(board) == ["b"] and len(caches.asked) == 3  # the check's answer is held
    assert checks.pending == []  # answer and count agree: no more checks


def test_a_check_finds_the_count_caught_up_and_asks_nothing():
    checks = Checks()
    caches, board = two_waiting(checks)
    assert names(board) == ["a", "b"] and len(checks.pending) == 1
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=2))
    checks.run()
    assert len(caches.asked) == 1 and checks.pending == []


def test_checks_of_a_lasting_disagreement_end():
    checks = Checks()
    caches, board = two_waiting(checks)
    assert names(board) == ["a", "b"]
    told: list[str] = []
    board.add_listener(told.append)
    while checks.pending:
        checks.run()
    # One check per delay, each asking once; the list never changed: nobody told.
    assert checks.delays == list(RECHECK_DELAYS)
    assert len(caches.asked) == 1 + len(RECHECK_DELAYS) and told == []
    # A later read schedules checks again.
    caches.event("workloads", "DELETED", waiting("a"))
    names(board)
    assert len(checks.pending) == 1


def test_a_live_view_never_waits_and_hears_of_each_new_list():
    checks = Checks()
    caches, board = two_waiting(checks)
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=2))
    told: list[str] = []
    board.add_listener(told.append)
    # Nothing held yet: a live view gets no positions at once, and one read is scheduled.
    with board.held_only():
        assert board.entries(["lq"]) == {}
        assert board.refresh(["lq"]) == {}
    assert caches.asked == [] and len(checks.pending) == 1
    checks.run()
    assert caches.asked == ["lq"] and told == ["lq"] and checks.pending == []
    with board.held_only():
        assert sorted(board.entries(["lq"])) == ["a", "b"]
    assert len(caches.asked) == 1 and checks.pending == []
    # A change marks the queue: the view gets the list held at once, the new one after.
    caches.answers["lq"] = ["b"]
    caches.event("workloads", "DELETED", waiting("a"))
    with board.held_only():
        assert sorted(board.entries(["lq"])) == ["a", "b"]
    assert len(caches.asked) == 1 and len(checks.pending) == 1
    checks.run()
    assert told == ["lq", "lq"] and len(caches.asked) == 2
    assert names(board) == ["b"] and len(caches.asked) == 2  # outside: held, no new call


def test_a_read_outside_a_live_view_still_waits_for_the_marks():
    checks = Checks()
    caches, board = two_waiting(checks)
    with board.held_only():
        board.entries(["lq"])
    assert caches.asked == []
    assert names(board) == ["a", "b"] and caches.asked == ["lq"]


def test_a_read_that_must_be_fresh_tells_the_live_views_of_a_new_list():
    checks = Checks()
    caches, board = two_waiting(checks)
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=2))
    assert names(board) == ["a", "b"]
    told: list[str] = []
    board.add_listener(told.append)
    # A REST answer asks now: the same list tells nobody, a new one tells every view.
    board.entries(["lq"], fresh=True)
    assert told == [] and len(caches.asked) == 2
    caches.answers["lq"] = ["b", "a"]
    board.entries(["lq"], fresh=True)
    assert told == ["lq"] and len(caches.asked) == 3


def test_reading_positions_opens_the_queue_watches_once():
    caches, board = two_waiting()
    assert caches.watched == []  # made, nothing read: a kernel that shows no queue watches none
    names(board)
    with board.held_only():
        board.entries(["lq"])
    names(board)
    assert caches.watched == ["localqueues", "clusterqueues"]


def test_the_board_is_settled_only_with_no_call_under_way_or_scheduled():
    checks = Checks()
    caches, board = two_waiting(checks)
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=1))
    assert board.settled
    with board.held_only():
        board.entries(["lq"])  # a live view's background ask, scheduled
    assert not board.settled
    checks.run()  # asked: the answer lists two, Kueue counts one, a check is scheduled
    assert caches.asked == ["lq"] and not board.settled
    caches.event("localqueues", "MODIFIED", local_queue("lq", pending=2))
    checks.run()  # the count caught up: the check asks nothing and ends
    assert caches.asked == ["lq"] and board.settled
