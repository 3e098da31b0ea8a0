"""Priorities as Kueue applies them: WorkloadPriorityClasses, who is ahead of a new workload,
and what preempted a workload (Kueue's own message wording, v0.14.8 and v0.19.2)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from jupyter_dw.domain.cluster_state import cluster_snapshot
from jupyter_dw.domain.fit import assess_fit
from jupyter_dw.domain.kueue_model import ClusterQueueQuota, KueueObjectError
from jupyter_dw.domain.priorities import (
    Ahead,
    PreemptedBy,
    PriorityClass,
    ahead_by_count,
    ahead_in_cluster_queue,
    ahead_in_local_queue,
    preemptor,
    priority_value,
)
from jupyter_dw.domain.quota import QuotaTree

# Kueue's preemption messages, as preemptionMessage formats them.
MESSAGE_0_14 = (
    "Preempted to accommodate a workload (UID: 5d1c-wl, JobUID: 9f2e-job) due to "
    "prioritization in the ClusterQueue"
)
MESSAGE_0_19 = (
    "Preempted to accommodate a workload (UID: 5d1c-wl, JobUID: 9f2e-job) due to "
    "prioritization in the ClusterQueue; preemptor path: /cq; preemptee path: /cq"
)


def wpc(name: str, value: object, description: str | None = None) -> dict:
    body = {"metadata": {"name": name}, "value": value}
    if description is not None:
        body["description"] = description
    return body


def item(priority: int | None, position: int | None = None) -> dict:
    entry: dict = {"metadata": {"name": f"wl-{priority}-{position}"}}
    if priority is not None:
        entry["priority"] = priority
    if position is not None:
        entry["positionInClusterQueue"] = position
    return entry


# -- WorkloadPriorityClasses ------------------------------------------------------------------


def test_a_priority_class_reads_its_value_and_description():
    found = PriorityClass.from_object(wpc("high", 1000, "interactive work"))
    assert found.to_json() == {
        "name": "high",
        "value": 1000,
        "description": "interactive work",
        "default": False,
    }


def test_the_class_named_default_is_kueues_default():
    assert PriorityClass.from_object(wpc("default", 0)).default


@pytest.mark.parametrize("bad", [wpc("x", "10"), wpc("x", True), wpc("", 1), {"value": 1}])
def test_a_malformed_priority_class_is_refused(bad):
    with pytest.raises(KueueObjectError):
        PriorityClass.from_object(bad)


def test_priority_value_of_a_name():
    classes = [PriorityClass("high", 1000), PriorityClass("low", -5)]
    assert priority_value("low", classes) == -5
    assert priority_value(None, classes) == 0  # no class: Kueue's default priority
    assert priority_value("high", None) is None  # classes unreadable: unknown
    assert priority_value("gone", classes) is None


# -- who is ahead -------------------------------------------------------------------------------


def test_in_the_cluster_queue_only_higher_or_equal_priority_is_ahead():
    pending = [item(1000, 0), item(100, 1), item(100, 2), item(10, 3), item(None, 4)]
    assert ahead_in_cluster_queue(pending, 100) == Ahead(3, "cluster-queue")
    assert ahead_in_cluster_queue(pending, 1001).count == 0
    assert ahead_in_cluster_queue(pending, 0).count == 5  # no priority counts as 0


def test_in_the_local_queue_the_count_is_bounded_by_what_it_shows():
    # This namespace's items at positions 1 (priority 100) and 4 (priority 10): the two
    # before position 1 in the ClusterQueue are ahead whatever they are, and a new priority
    # 100 workload goes somewhere between position 2 and position 4.
    pending = [item(100, 1), item(10, 4)]
    assert ahead_in_local_queue(pending, 100) == Ahead(2, "local-queue", "at-least")
    # The first lower-priority item sits right behind: exact.
    assert ahead_in_local_queue([item(100, 1), item(10, 2)], 100) == Ahead(2, "local-queue")
    # The ClusterQueue's pending count bounds it from above too.
    assert ahead_in_local_queue(pending, 100, total=2) == Ahead(2, "local-queue")
    assert ahead_in_local_queue([], 5, total=0) == Ahead(0, "local-queue")


def test_a_status_count_is_an_upper_bound():
    assert ahead_by_count(4) == Ahead(4, "pending-count", "at-most")
    assert ahead_by_count(0) == Ahead(0, "pending-count", "exact")


def test_the_fit_message_says_when_the_count_is_an_upper_bound():
    cq = ClusterQueueQuota.from_object(
        {
            "metadata": {"name": "cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4}]}
                        ],
                    }
                ]
            },
            "status": {"pendingWorkloads": 3},
        }
    )
    tree = QuotaTree([cq], ())
    bounded = assess_fit({"cpu": Decimal(1)}, cq, tree, ahead_by_count(3))
    assert bounded.ahead == 3 and bounded.ahead_bound == "at-most"
    assert "at most 3 workloads (an upper bound" in bounded.message
    exact = assess_fit({"cpu": Decimal(1)}, cq, tree, Ahead(1, "cluster-queue"))
    assert exact.to_json()["ahead_bound"] == "exact"
    assert "1 workload pending ahead" in exact.message


# -- what preempted a workload --------------------------------------------------------------------


@pytest.mark.parametrize("message", [MESSAGE_0_14, MESSAGE_0_19])
def test_the_preemptor_is_read_from_kueues_message(message):
    assert preemptor(message) == PreemptedBy("5d1c-wl", "9f2e-job")


def test_unknown_uids_and_other_messages():
    unknown = "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to UNKNOWN"
    assert preemptor(unknown) == PreemptedBy(None, None)
    migration = (
        "Evicted to accommodate a workload (UID: 77-wl) due to migration to more favorable "
        "resource flavor"
    )
    assert preemptor(migration) == PreemptedBy("77-wl", None)
    assert preemptor("The workload has no quota") is None
    assert preemptor(None) is None


def test_a_preempted_cluster_names_its_preemptor():
    raycluster = {"metadata": {"name": "low", "uid": "rc-1"}, "spec": {"suspend": True}}
    workload = {
        "metadata": {"name": "raycluster-low"},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": "Pending"},
                {"type": "Evicted", "status": "True", "reason": "Preempted",
                 "message": MESSAGE_0_19},
                {"type": "Preempted", "status": "True", "reason": "InClusterQueue",
                 "message": MESSAGE_0_19},
            ]
        },
    }  # fmt: skip
    status = cluster_snapshot(raycluster, workload)
    assert status.state == "preempted" and status.reason == "InClusterQueue"
    assert status.to_json()["preempted_by"] == {
        "workload_uid": "5d1c-wl",
        "job_uid": "9f2e-job",
        "name": None,
    }


def test_only_a_preempted_cluster_has_a_preemptor():
    raycluster = {"metadata": {"name": "x", "uid": "rc-1"}, "spec": {"suspend": False}}
    workload = {
        "metadata": {"name": "raycluster-x"},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                {"type": "Admitted", "status": "True", "reason": "Admitted"},
                # Reset by Kueue on re-admission: the old message stays, the state does not.
                {"type": "Preempted", "status": "False", "reason": "QuotaReserved",
                 "message": MESSAGE_0_19},
            ]
        },
    }  # fmt: skip
    assert cluster_snapshot(raycluster, workload).preempted_by is None
