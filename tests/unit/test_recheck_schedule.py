"""When a session's re-check asks discovery again (``k8s/recheck_schedule.py``): only on a
signal, while Kueue or KubeRay is missing, or on the optional cadence; the rules review, which
runs at every re-check, is the session's and not asked here."""

from __future__ import annotations

import dataclasses

import pytest

from jupyter_dw.k8s.discovery import Discovery
from jupyter_dw.k8s.recheck_schedule import DISCOVERY_FOLLOW_UPS, Plan, RecheckSchedule

SERVED = Discovery(
    kueue_served=("v1beta2",),
    kueue_version="v1beta2",
    kueue_resources=frozenset({"localqueues", "workloads"}),
    ray_version="v1",
)


def discovers(schedule: RecheckSchedule, discovery: Discovery = SERVED, returns: int = 0) -> bool:
    """What one re-check plans, reporting its discovery as done when it asked one."""
    plan = schedule.plan(discovery, returns)
    if plan.discover:
        schedule.discovered(returns)
    return plan.discover


def test_a_quiet_cluster_with_kueue_and_kuberay_asks_no_discovery():
    schedule = RecheckSchedule(refresh_interval=60)
    schedule.connected(kueue_returns=0)
    assert [discovers(schedule) for _ in range(5)] == [False] * 5


@pytest.mark.parametrize("missing", [{"kueue_version": None}, {"ray_version": None}])
def test_every_recheck_asks_discovery_while_kueue_or_kuberay_is_missing(missing):
    schedule = RecheckSchedule(refresh_interval=60)
    bare = dataclasses.replace(SERVED, **missing)
    assert [discovers(schedule, bare) for _ in range(3)] == [True] * 3


def test_a_signal_asks_discovery_at_the_next_rechecks_until_they_answered():
    schedule = RecheckSchedule(refresh_interval=60)
    schedule.ask_discovery()
    plan = schedule.plan(SERVED, 0)
    assert plan.discover and not plan.periodic
    # That discovery failed (nothing reported): it stays owed.
    assert [discovers(schedule) for _ in range(DISCOVERY_FOLLOW_UPS + 1)] == [
        *[True] * DISCOVERY_FOLLOW_UPS,
        False,
    ]


def test_kueue_answering_again_asks_discovery_once():
    schedule = RecheckSchedule(refresh_interval=60)
    schedule.connected(kueue_returns=0)
    assert [discovers(schedule, returns=1) for _ in range(2)] == [True, False]


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_interrupted_watches_ask_discovery_but_run_early_at_most_once_an_interval():
    clock = Clock()
    schedule = RecheckSchedule(refresh_interval=60, clock=clock)
    assert schedule.watch_interrupted() is True  # the first: a re-check now
    clock.now += 59
    assert schedule.watch_interrupted() is False  # the others wait for the regular one
    assert discovers(schedule) is True  # ... which still asks discovery
    clock.now += 1
    assert schedule.watch_interrupted() is True  # an interval later: early again


def test_a_request_may_ask_discovery_again_once_an_interval():
    clock = Clock()
    schedule = RecheckSchedule(refresh_interval=60, clock=clock)
    assert schedule.may_rediscover_now() is True
    clock.now += 59
    assert schedule.may_rediscover_now() is False
    clock.now += 1
    assert schedule.may_rediscover_now() is True


def test_the_optional_cadence_asks_discovery_and_says_it_is_periodic():
    clock = Clock()
    schedule = RecheckSchedule(refresh_interval=60, discovery_interval=600, clock=clock)
    schedule.connected(kueue_returns=0)
    clock.now += 599
    assert schedule.plan(SERVED, 0) == Plan(discover=False, periodic=False)
    clock.now += 1
    assert schedule.plan(SERVED, 0) == Plan(discover=True, periodic=True)
    assert schedule.plan(SERVED, 0) == Plan(discover=False, periodic=False)  # counted anew
    off = RecheckSchedule(refresh_interval=60, discovery_interval=0, clock=clock)
    clock.now += 10**6
    assert off.plan(SERVED, 0) == Plan(discover=False, periodic=False)


def test_a_negative_cadence_is_refused():
    with pytest.raises(ValueError, match="discovery_interval"):
        RecheckSchedule(refresh_interval=60, discovery_interval=-1)
