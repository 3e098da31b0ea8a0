"""A cluster whose pods cannot run is ``stalled``, in the scheduler's or kubelet's words."""

from __future__ import annotations

import pytest

from jupyter_dw.domain.cluster_state import cluster_snapshot
from jupyter_dw.domain.pod_problems import first_problem, pod_problem
from tests.unit.test_cluster_state import admitted_workload, kuberay_status, raycluster, running

UNSCHEDULABLE = "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."


def pod(name: str, role: str = "worker", conditions=(), waiting: dict | None = None) -> dict:
    status: dict = {"phase": "Pending", "conditions": list(conditions)}
    if waiting is not None:
        status["containerStatuses"] = [{"name": "ray", "state": {"waiting": waiting}}]
    return {"metadata": {"name": name, "labels": {"ray.io/node-type": role}}, "status": status}


def unschedulable(name: str, role: str = "worker") -> dict:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": UNSCHEDULABLE}  # fmt: skip
    return pod(name, role, [condition])


@pytest.mark.parametrize("reason", ["ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff"])
def test_waiting_containers_that_will_not_start(reason):
    problem = pod_problem(pod("w", waiting={"reason": reason, "message": "back-off"}))
    assert problem is not None and problem.reason == reason
    assert problem.sentence == "pod w: back-off"


def test_on_their_way_is_not_a_problem():
    assert pod_problem(pod("w", waiting={"reason": "ContainerCreating"})) is None
    assert pod_problem(pod("w")) is None


def test_the_heads_problem_comes_first():
    found = first_problem([unschedulable("w-1"), unschedulable("h", "head")])
    assert found is not None and found.pod == "h"


def test_an_admitted_cluster_with_an_unschedulable_pod_is_stalled():
    rc = running(raycluster(**kuberay_status("pending", ready_workers=0, desired=2)))
    status = cluster_snapshot(rc, admitted_workload(), pods=[unschedulable("demo-head", "head")])
    assert status.state == "stalled"
    assert status.reason == "Unschedulable"
    assert status.message == f"pod demo-head: {UNSCHEDULABLE}"


def test_ready_wins_and_queued_clusters_have_no_pods_to_blame():
    rc = running(raycluster(**kuberay_status("ready", ready_workers=2, desired=2)))
    assert cluster_snapshot(rc, admitted_workload(), pods=[unschedulable("x")]).state == "ready"
    queued = raycluster()
    assert cluster_snapshot(queued, None, pods=[unschedulable("x")]).state != "stalled"
