"""A cluster's milestones drawn as a few spans: folded workers, durations from the
milestones' own times, the one span under way, and what ended the run."""

from __future__ import annotations

from jupyter_dw.domain.milestones import Milestone, milestone_words
from jupyter_dw.domain.timeline import cluster_timeline


def at(second: int) -> str:
    return f"2026-11-27T10:{second // 60:02d}:{second % 60:02d}Z"


def steps(*named: tuple[str, int | None]) -> list[Milestone]:
    return [Milestone(name, at(t) if t is not None else None) for name, t in named]


HEAD_UP_AT_3 = (("Submitted", 0), ("QuotaReserved", 1), ("Admitted", 1), ("HeadReady", 3))
"""Admitted at once, the head ready 2 s later."""


def spans(timeline) -> list[tuple[str, float | None, bool, bool]]:
    return [(s.step, s.seconds, s.done, s.current) for s in timeline.spans]


def test_a_queued_cluster_is_one_span_under_way():
    timeline = cluster_timeline(steps(("Submitted", 0)), "queued", 4)
    assert spans(timeline) == [("queue", None, False, True)]
    assert timeline.spans[0].start == at(0) and timeline.spans[0].end is None
    assert timeline.ending is None


def test_a_ready_cluster_has_queue_head_and_workers_with_their_durations():
    timeline = cluster_timeline(
        steps(
            ("Submitted", 0),
            ("QuotaReserved", 40),
            ("Admitted", 40),
            ("HeadReady", 52),
            ("WorkerReady:1", 55),
            ("WorkerReady:2", 56),
            ("Ready", 56),
        ),
        "ready",
        2,
    )
    assert spans(timeline) == [
        ("queue", 40.0, True, False),
        ("head", 12.0, True, False),
        ("workers", 4.0, True, False),
    ]
    assert timeline.spans[2].detail == "2/2 workers"


def test_thirty_two_workers_fold_into_one_span_counting_those_ready():
    ready = [(f"WorkerReady:{n}", 10 + n) for n in range(1, 21)]
    timeline = cluster_timeline(
        steps(("Submitted", 0), ("QuotaReserved", 1), ("Admitted", 1), ("HeadReady", 5), *ready),
        "starting",
        32,
    )
    assert [s.step for s in timeline.spans] == ["queue", "head", "workers"]
    workers = timeline.spans[-1]
    assert (workers.detail, workers.current, workers.end) == ("20/32 workers", True, None)
    assert workers.start == at(5)


def test_admission_checks_add_a_capacity_span():
    timeline = cluster_timeline(
        steps(
            ("Submitted", 0), ("QuotaReserved", 3), ("CapacityProvisioned", 30), ("Admitted", 30)
        ),
        "admitted",
        1,
    )
    assert spans(timeline)[:2] == [("queue", 3.0, True, False), ("capacity", 27.0, True, False)]
    assert spans(timeline)[2] == ("head", None, False, True)


def test_waiting_for_capacity_is_the_span_under_way():
    timeline = cluster_timeline(
        steps(("Submitted", 0), ("QuotaReserved", 3)), "waiting-for-capacity", 1
    )
    assert spans(timeline) == [("queue", 3.0, True, False), ("capacity", None, False, True)]


def test_a_cluster_stopped_while_waiting_ends_its_span_at_the_stop():
    timeline = cluster_timeline(steps(("Submitted", 0), ("Stopped", 600)), "stopped", 2)
    assert spans(timeline) == [("queue", 600.0, False, False)]
    assert timeline.ending == Milestone("Stopped", at(600))
    assert timeline.to_json()["ending"] == {"name": "Stopped", "words": "stopped", "time": at(600)}


def test_a_preempted_cluster_has_no_span_under_way():
    timeline = cluster_timeline(
        steps(
            *HEAD_UP_AT_3,
            ("WorkerReady:1", 4),
            ("Ready", 4),
            ("Preempted", 100),
        ),
        "preempted",
        1,
    )
    assert not any(s.current for s in timeline.spans)
    assert timeline.ending is not None and timeline.ending.name == "Preempted"


def test_a_resize_waits_then_takes_effect_after_the_first_size():
    timeline = cluster_timeline(
        steps(
            *HEAD_UP_AT_3,
            ("WorkerReady:1", 4),
            ("WorkerReady:2", 5),
            ("WorkerReady:3", 70),
            ("WorkerReady:4", 71),
            ("Ready", 5),
            ("ScaleRequested:4", 60),
            ("ScaleAdmitted:4", 66),
            ("ScaledTo:4", 71),
        ),
        "ready",
        4,
    )
    assert spans(timeline) == [
        ("queue", 1.0, True, False),
        ("head", 2.0, True, False),
        ("workers", 2.0, True, False),
        ("resize-queue:4", 6.0, True, False),
        ("resize-workers:4", 5.0, True, False),
    ]
    assert timeline.spans[2].detail == "2/2 workers"


def test_a_resize_waiting_for_quota_is_under_way_on_a_ready_cluster():
    timeline = cluster_timeline(
        steps(
            *HEAD_UP_AT_3,
            ("WorkerReady:1", 4),
            ("Ready", 4),
            ("ScaleRequested:3", 60),
        ),
        "ready",
        3,
    )
    assert spans(timeline)[-1] == ("resize-queue:3", None, False, True)
    assert timeline.spans[2].detail == "1/1 workers"


def test_an_unrecorded_time_leaves_the_duration_unknown_not_wrong():
    timeline = cluster_timeline(
        steps(("Submitted", 0), ("QuotaReserved", None), ("Admitted", None)), "admitted", 0
    )
    assert spans(timeline) == [("queue", None, True, False), ("head", None, False, True)]


def test_milestone_names_in_words():
    assert milestone_words("WorkerReady:3") == "worker 3 ready"
    assert milestone_words("ScaleRequested:6") == "resize to 6 workers asked"
    assert milestone_words("QuotaReserved") == "quota reserved"
    assert milestone_words("SomethingNew") == "SomethingNew"


def test_a_job_waits_then_runs_to_its_end():
    from jupyter_dw.domain.timeline import job_timeline

    timeline = job_timeline(at(0), at(30), at(330), "succeeded", final=True)
    assert spans(timeline) == [("queue", 30.0, True, False), ("running", 300.0, True, False)]
    assert timeline.to_json()["ending"] == {
        "name": "Succeeded",
        "words": "succeeded",
        "time": at(330),
    }


def test_a_waiting_job_s_queue_span_is_under_way_and_a_running_one_s_run():
    from jupyter_dw.domain.timeline import job_timeline

    assert spans(job_timeline(at(0), None, None, "queued", final=False)) == [
        ("queue", None, False, True)
    ]
    assert spans(job_timeline(at(0), at(5), None, "running", final=False)) == [
        ("queue", 5.0, True, False),
        ("running", None, False, True),
    ]


def test_a_job_that_ended_while_waiting_ends_its_wait_there():
    from jupyter_dw.domain.timeline import job_timeline

    timeline = job_timeline(at(0), None, at(90), "failed", final=True)
    assert spans(timeline) == [("queue", 90.0, False, False)]
    assert timeline.ending == Milestone("Failed", at(90))
