"""Kueue's waiting messages (as its scheduler writes them, 0.14 and 0.19) in one line."""

from __future__ import annotations

import pytest

from jupyter_dw.domain.kueue_words import short_reason

UNUSED = (
    "couldn't assign flavors to pod set workers: insufficient unused quota for cpu in flavor "
    "gpu-a, 1500m more needed"
)
MAXIMUM = (
    "couldn't assign flavors to pod set head: insufficient quota for memory in flavor default, "
    "previously considered podsets requests (0) + current podset request (64Gi) > maximum "
    "capacity (32Gi)"
)


@pytest.mark.parametrize(
    ("message", "line"),
    [
        (UNUSED, "needs 1.5 CPU more in flavor gpu-a"),
        (MAXIMUM, "more memory than flavor default has at all (32Gi memory)"),
        (
            UNUSED + ". Pending the preemption of 2 workload(s)",
            "needs 1.5 CPU more in flavor gpu-a; preempting 2 workloads",
        ),
        (
            "Workload no longer fits after processing another workload",
            "another workload took the quota first; Kueue tries again",
        ),
        ("ClusterQueue team-cq is inactive", "ClusterQueue team-cq is inactive"),
        (
            "couldn't assign flavors to pod set workers: flavor on-demand doesn't match node "
            "affinity, untolerated taint {spot true NoSchedule <nil>} in flavor spot",
            "flavor on-demand does not match its node affinity; flavor spot has a taint it does "
            "not tolerate",
        ),
    ],
)
def test_a_known_message_in_one_line(message, line):
    assert short_reason(message) == line


def test_a_flavor_s_shortfalls_are_one_part_the_largest_per_resource():
    # Kueue counts each pod set's shortfall with those before it: workers' 2200m includes
    # the head's 200m, so the workload needs 2.2 CPU, not 2.4.
    message = (
        "couldn't assign flavors to pod set head: insufficient unused quota for cpu in flavor a,"
        " 200m more needed; couldn't assign flavors to pod set workers: insufficient unused "
        "quota for cpu in flavor a, 2200m more needed, insufficient unused quota for memory in "
        "flavor a, 512Mi more needed"
    )
    assert short_reason(message) == "needs 2.2 CPU and 512Mi memory more in flavor a"


def test_many_reasons_are_counted_not_cut_silently():
    message = (
        "couldn't assign flavors to pod set head: insufficient unused quota for cpu in flavor a,"
        " 1 more needed; couldn't assign flavors to pod set workers: flavor b doesn't match "
        "node affinity, untolerated taint {x y NoSchedule <nil>} in flavor c"
    )
    assert short_reason(message) == (
        "needs 1 CPU more in flavor a; flavor b does not match its node affinity; and 1 more"
    )


@pytest.mark.parametrize("message", [None, "", "Something Kueue will say one day"])
def test_an_unknown_message_has_no_summary(message):
    assert short_reason(message) is None
