"""When a re-check's discovery serves less than the last one (the session then waits
``LOSS_GRACE`` before it believes it: a restarted API server publishes its CRDs late)."""

from __future__ import annotations

import dataclasses

import pytest

from jupyter_dw.k8s.discovery import Discovery

FULL = Discovery(
    kueue_served=("v1beta2",),
    kueue_version="v1beta2",
    kueue_resources=frozenset({"localqueues", "workloads", "clusterqueues"}),
    cohort_version="v1beta2",
    visibility_version="v1beta2",
    ray_version="v1",
    kinds_served=frozenset({"rayjobs", "trainjobs"}),
)


@pytest.mark.parametrize(
    "change",
    [
        {"kueue_version": None},
        {"kueue_resources": frozenset({"localqueues", "workloads"})},
        {"cohort_version": None},
        {"visibility_version": None},
        {"ray_version": None},
        {"kinds_served": frozenset({"trainjobs"})},  # no more RayJobs
        {"kinds_served": frozenset({"rayjobs"})},  # no more TrainJobs
    ],
)
def test_serving_less_is_a_loss(change):
    assert FULL.loses(dataclasses.replace(FULL, **change))


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"kueue_version": "v1beta1"},  # another version: a change, not a loss
        {"kueue_resources": FULL.kueue_resources | {"cohorts"}},
        {"ray_auth_options": True},
    ],
)
def test_serving_as_much_or_more_is_no_loss(change):
    assert not FULL.loses(dataclasses.replace(FULL, **change))


def test_nothing_served_before_loses_nothing():
    assert not Discovery().loses(FULL)
    assert FULL.loses(Discovery())
