"""bench_soak's arithmetic: whether a view was told every change of a cycle it owes (in order,
from its snapshot on), and each sampled series as a trend after the warm-up."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.soak_series import trend, trends
from benchmarks.soak_views import Cycle, missed, owed_since, records

CYCLE = Cycle(4, "soak-0004", "soak-job-0004", low=1, high=3)


def cluster(**fields: Any) -> dict[str, Any]:
    record = {
        "name": CYCLE.cluster,
        "state": "queued",
        "admitted": False,
        "workers_ready": 0,
        "workers_admitted": None,
        "workers_desired": 1,
        "scale": None,
    }
    return {**record, **fields}


def told(record: dict[str, Any] | None) -> dict[str, Any]:
    return {"type": "cluster", "name": CYCLE.cluster, "state": record}


def job(record: dict[str, Any] | None) -> dict[str, Any]:
    return {"type": "rayjob", "name": CYCLE.rayjob, "rayjob": record}


READY = {"state": "ready", "admitted": True, "workers_ready": 1, "workers_admitted": 1}
AT_THREE = {**READY, "workers_ready": 3, "workers_admitted": 3, "workers_desired": 3}
WHOLE_CYCLE = [
    told(cluster()),
    told(cluster(admitted=True, state="starting", workers_admitted=1)),
    told(cluster(**READY)),
    told(cluster(**READY, workers_desired=3, scale={"state": "queued"})),
    told(cluster(**AT_THREE)),
    told(cluster(**READY, workers_desired=1)),
    job({"name": CYCLE.rayjob, "state": "queued"}),
    job({"name": CYCLE.rayjob, "state": "starting"}),
    job(None),
    told(None),
]


def test_a_view_told_the_whole_cycle_missed_nothing() -> None:
    assert missed(WHOLE_CYCLE, CYCLE.milestones()) == []


def test_one_message_may_show_several_milestones() -> None:
    # Admitted and ready in one message: both seen; deleted needs its own (None) message.
    messages = [told(cluster(**READY)), *WHOLE_CYCLE[3:]]
    assert missed(messages, CYCLE.milestones()) == []


def test_a_lost_message_is_the_milestone_it_carried() -> None:
    without_three = WHOLE_CYCLE[:4] + WHOLE_CYCLE[5:]  # the message at 3 workers
    assert missed(without_three, CYCLE.milestones()) == ["scaled_up"]
    assert missed(WHOLE_CYCLE[:-1], CYCLE.milestones()) == ["deleted"]
    assert missed([m for m in WHOLE_CYCLE if m["type"] == "cluster"], CYCLE.milestones()) == [
        "rayjob_created",
        "rayjob_admitted",
        "rayjob_deleted",
    ]


def test_the_scale_down_counts_only_after_the_scale_up() -> None:
    # Ready at 1 worker looks like scaled down: it must come after the view saw 3.
    messages = [told(cluster(**READY)), told(None)]
    assert missed(messages, CYCLE.milestones()[:5]) == ["scaled_up", "scaled_down"]


def test_another_cluster_s_messages_are_not_this_one_s() -> None:
    other = [{**m, "name": "soak-0005"} for m in WHOLE_CYCLE]
    assert len(missed(other, CYCLE.milestones())) == len(CYCLE.milestones())


def test_a_view_opened_mid_cycle_owes_what_came_after_its_snapshot() -> None:
    sequence = {(4, m.label): i + 1 for i, m in enumerate(CYCLE.milestones())}
    owed = owed_since(CYCLE, 3, sequence)  # opened once the loop had seen the cluster ready
    assert [m.label for m in owed] == [m.label for m in CYCLE.milestones()[3:]]
    # Its snapshot shows the cluster ready at 1 worker: what came before is not owed.
    snapshot = {"type": "snapshot", "clusters": [cluster(**READY)], "rayjobs": []}
    assert records([snapshot], "cluster", CYCLE.cluster) == [cluster(**READY)]
    assert missed([snapshot, *WHOLE_CYCLE[3:]], owed) == []
    assert missed([snapshot, *WHOLE_CYCLE[5:]], owed) == ["scaled_up"]
    assert owed_since(CYCLE, len(sequence), sequence) == []  # opened after it all


def test_a_trend_after_the_warm_up() -> None:
    # 2 MiB an hour from 100, sampled every 6 minutes for an hour; the warm-up at 0-600 s.
    samples = [{"t": t, "rss": 100.0 + 2 * t / 3600, "fds": 20.0} for t in range(0, 3601, 360)]
    result = trends(samples, 600.0, ["rss", "fds"])
    rss = result["rss"]
    assert rss["samples"] == 9 and rss["start"] == pytest.approx(100.4)
    assert rss["end"] == pytest.approx(102.0) and rss["max"] == pytest.approx(102.0)
    assert rss["slope_per_hour"] == pytest.approx(2.0)
    assert rss["slope_se"] == pytest.approx(0.0, abs=1e-6)
    flat = result["fds"]
    assert flat["slope_per_hour"] == 0.0 and flat["start"] == flat["end"] == 20.0


def test_one_step_is_told_from_a_climb() -> None:
    # Flat at 45 MiB for 34 minutes, one rise of 1.8 MiB, flat again: least squares reads a
    # climb; the median slope stays near zero and the rise is named, with when.
    points = [(t * 10.0, 45.0 + (1.8 if t * 10.0 >= 2040 else 0.0)) for t in range(330)]
    stepped = trend(points)
    assert stepped["slope_per_hour"] > 1.0
    assert stepped["median_slope_per_hour"] == pytest.approx(0.0, abs=1e-9)
    assert stepped["largest_rise"] == pytest.approx(1.8)
    assert stepped["largest_rise_at_seconds"] == 2040.0
    # A steady climb of the same total: both estimators see it, and no rise stands out.
    climbing = trend([(t * 10.0, 45.0 + 1.8 * t / 329) for t in range(330)])
    assert climbing["median_slope_per_hour"] == pytest.approx(climbing["slope_per_hour"], rel=1e-3)
    assert climbing["largest_rise"] == pytest.approx(1.8 / 329, abs=1e-3)  # rounded to 0.001


def test_a_series_that_never_rose_has_no_rise() -> None:
    falling = trend([(t * 60.0, 50.0 - t) for t in range(10)])
    assert falling["largest_rise"] == 0.0 and falling["largest_rise_at_seconds"] is None


def test_noise_around_a_flat_line_is_within_it() -> None:
    noisy = trend([(t * 60.0, 50.0 + (1 if t % 2 else -1)) for t in range(30)])
    assert noisy["within_noise"] and noisy["slope_se"] is not None


def test_a_trend_needs_two_samples_after_the_warm_up() -> None:
    with pytest.raises(ValueError, match="two samples"):
        trends([{"t": 0.0, "rss": 1.0}, {"t": 10.0, "rss": 1.0}], 5.0, ["rss"])
