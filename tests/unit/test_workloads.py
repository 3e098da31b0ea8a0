"""Every Workload of a namespace as one record: owner, queue, priority, Kueue's state on the
clusters' vocabulary, position, preemptor, quota held per flavor and what is asked for.

The base objects are real: ``data/kueue_0.19.2_job_workloads.json`` holds two batch/v1 Jobs'
Workloads as Kueue v0.19.2 on the test bed wrote them (read back at ``v1beta2`` and through
the conversion webhook at ``v1beta1``; ``managedFields`` dropped), one admitted (2 pods of
750m CPU / 1Gi), one waiting for quota (1 CPU / 1Gi, ``QuotaReserved=False`` reason
``Pending``), and the visibility API's ``pendingworkloads`` answer for the waiting one. Other
states are those objects with the conditions Kueue writes for them.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from jupyter_dw.domain.kueue_state import kueue_state
from jupyter_dw.domain.workloads import (
    Owner,
    kind_filter_problem,
    kueue_decides,
    matches,
    pod_requests,
    sorted_workloads,
    workload_info,
)

DATA = json.loads((Path(__file__).parent / "data" / "kueue_0.19.2_job_workloads.json").read_text())
VERSIONS = ("v1beta2", "v1beta1")
FLAVOR = "wlscratch-f"


def real(key: str) -> dict[str, Any]:
    return copy.deepcopy(DATA[key])


def pending_item() -> dict[str, Any]:
    return real("pending-visibility-v1beta2")["items"][0]


def with_conditions(workload: dict[str, Any], *conditions: dict[str, Any]) -> dict[str, Any]:
    by_type = {c["type"]: c for c in workload["status"].get("conditions", [])}
    by_type.update({c["type"]: c for c in conditions})
    workload["status"]["conditions"] = list(by_type.values())
    return workload


def cond(kind: str, status: str = "True", reason: str = "", message: str = "", at: str = "T9"):
    return {
        "type": kind,
        "status": status,
        "reason": reason or kind,
        "message": message,
        "lastTransitionTime": at,
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_an_admitted_job_holds_its_pod_sets_usage_in_its_flavor(version):
    workload = real(f"{version}-admitted")
    info = workload_info(workload)
    assert info is not None
    admitted_at = next(
        c["lastTransitionTime"] for c in workload["status"]["conditions"] if c["type"] == "Admitted"
    )
    assert info.to_json() == {
        "name": workload["metadata"]["name"],
        "namespace": "wl-scratch",
        "owner": {"kind": "Job", "api_group": "batch", "name": "c"},
        "queue": "lq",
        "cluster_queue": "wlscratch-cq",
        "priority": {"class_name": None, "value": 0, "source": None},
        "state": "admitted",
        "reason": "Admitted",
        "message": "The workload is admitted",
        "summary": None,
        "quota_reserved": True,
        "admitted": True,
        "created": workload["metadata"]["creationTimestamp"],
        "since": admitted_at,
        "admitted_at": admitted_at,
        "resources": {FLAVOR: {"cpu": "1500m", "memory": "2Gi"}},
        "requests": {"cpu": "1500m", "memory": "2Gi"},
        "position_in_local_queue": None,
        "position_in_cluster_queue": None,
        "preempted_by": None,
        "placement": None,
    }
    assert info.owner is not None and info.owner.kind_group == "Job.batch"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_waiting_job_has_kueues_reason_and_its_position(version):
    workload = real(f"{version}-pending")
    info = workload_info(workload, pending_item())
    assert info is not None
    assert (info.state, info.reason) == ("queued", "Pending")
    assert info.message is not None and "insufficient unused quota for cpu" in info.message
    assert (info.position_in_local_queue, info.position_in_cluster_queue) == (0, 0)
    assert info.waiting and not info.quota_reserved and info.cluster_queue is None
    assert info.resources == {}  # holds nothing while it waits
    assert info.to_json()["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert info.since == workload["status"]["conditions"][0]["lastTransitionTime"]


def test_a_visibility_item_of_another_workload_gives_no_position():
    other = pending_item()
    other["metadata"]["name"] = "someone-else"
    info = workload_info(real("v1beta2-pending"), other)
    assert info is not None and info.position_in_local_queue is None


def test_a_workload_with_quota_gets_no_position_even_if_an_item_is_given():
    info = workload_info(real("v1beta2-admitted"), pending_item())
    assert info is not None and info.position_in_local_queue is None


def test_finished_holds_nothing_and_says_kueues_words():
    workload = with_conditions(
        real("v1beta2-admitted"),
        cond("Finished", reason="Succeeded", message="Reached expected number of succeeded pods"),
    )
    info = workload_info(workload)
    assert info is not None
    assert (info.state, info.reason, info.since) == ("finished", "Succeeded", "T9")
    assert info.resources == {} and info.requests  # still says what it asked for


def test_a_replaced_elastic_slice_is_not_listed():
    workload = with_conditions(
        real("v1beta2-admitted"), cond("Finished", reason="WorkloadSliceReplaced")
    )
    assert workload_info(workload) is None


def preempted() -> dict[str, Any]:
    """An admitted Workload Kueue preempted (its message names the preemptor)."""
    message = (
        "Preempted to accommodate a workload (UID: 1111-wl, JobUID: 2222-job) due to "
        "prioritization in the ClusterQueue"
    )
    return with_conditions(
        real("v1beta2-admitted"),
        cond("QuotaReserved", "False", "Preempted", message),
        cond("Admitted", "False", "NoReservation"),
        cond("Evicted", reason="Preempted", message=message, at="T5"),
        cond("Preempted", reason="InClusterQueue", message=message, at="T5"),
    )


def test_preempted_names_the_preemptor_from_kueues_message():
    info = workload_info(preempted())
    assert info is not None
    assert (info.state, info.reason, info.since) == ("preempted", "InClusterQueue", "T5")
    assert info.preempted_by is not None
    assert (info.preempted_by.workload_uid, info.preempted_by.job_uid) == ("1111-wl", "2222-job")
    assert info.resources == {}


def test_evicted_and_requeued_has_its_position_again():
    workload = with_conditions(
        real("v1beta2-pending"),
        cond("Evicted", reason="PodsReadyTimeout", message="Exceeded the PodsReady timeout"),
    )
    info = workload_info(workload, pending_item())
    assert info is not None and info.state == "evicted" and info.waiting
    assert info.position_in_local_queue == 0
    workload["spec"]["active"] = False  # deactivated: out of the queue, nothing to ask
    info = workload_info(workload, pending_item())
    assert info is not None and info.state == "suspended" and not info.waiting
    assert info.position_in_local_queue is None


def test_evicted_for_another_reason():
    workload = with_conditions(
        real("v1beta2-admitted"),
        cond("QuotaReserved", "False", "Pending"),
        cond("Evicted", reason="PodsReadyTimeout", message="Exceeded the PodsReady timeout"),
    )
    state = kueue_state(workload)
    assert (state.state, state.reason, state.preempted_by) == ("evicted", "PodsReadyTimeout", None)


def test_deactivated_is_suspended_and_deleting_wins():
    workload = real("v1beta2-pending")
    workload["spec"]["active"] = False
    assert kueue_state(workload).state == "suspended"
    workload["metadata"]["deletionTimestamp"] = "T7"
    info = workload_info(workload)
    assert info is not None and (info.state, info.since) == ("deleting", "T7")


def test_waiting_for_capacity_with_an_admission_check():
    workload = with_conditions(
        real("v1beta2-pending"), cond("QuotaReserved", reason="QuotaReserved", at="T3")
    )
    workload["status"]["admission"] = real("v1beta2-admitted")["status"]["admission"]
    workload["status"]["admissionChecks"] = [
        {"name": "prov", "state": "Pending", "message": "ETA 5m", "lastTransitionTime": "T3"}
    ]
    info = workload_info(workload)
    assert info is not None
    assert (info.state, info.since) == ("waiting-for-capacity", "T3")
    assert info.message == "admission check prov is Pending: ETA 5m"
    assert info.resources  # quota is reserved while the check runs


def test_no_controller_owner():
    workload = real("v1beta2-pending")
    workload["metadata"]["ownerReferences"][0]["controller"] = False
    info = workload_info(workload)
    assert info is not None and info.owner is None
    assert not matches(info, kind="Job.batch") and matches(info)


def test_usage_is_counted_from_the_spec_where_kueue_wrote_none():
    workload = real("v1beta2-admitted")
    [assignment] = workload["status"]["admission"]["podSetAssignments"]
    del assignment["resourceUsage"]
    assignment["count"] = 1  # partially admitted: 1 of 2 pods
    info = workload_info(workload)
    assert info is not None
    assert info.to_json()["resources"] == {FLAVOR: {"cpu": "750m", "memory": "1Gi"}}


def test_priority_from_either_version():
    v1beta2 = real("v1beta2-pending")
    v1beta2["spec"].update(
        priority=100,
        priorityClassRef={
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "high",
        },
    )
    v1beta1 = real("v1beta1-pending")
    v1beta1["spec"].update(
        priority=100,
        priorityClassName="high",
        priorityClassSource="kueue.x-k8s.io/workloadpriorityclass",
    )
    for workload in (v1beta2, v1beta1):
        info = workload_info(workload)
        assert info is not None
        assert info.priority.to_json() == {
            "class_name": "high",
            "value": 100,
            "source": "kueue.x-k8s.io/workloadpriorityclass",
        }


def test_pod_requests_follow_kubernetes_rule():
    spec = {
        "initContainers": [
            {"name": "setup", "resources": {"requests": {"cpu": "3"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "late", "resources": {"requests": {"cpu": "2", "memory": "8Gi"}}},
        ],
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "250m", "nvidia.com/gpu": "1"}}},
        ],
        "overhead": {"cpu": "100m"},
    }
    # containers 750m + sidecar 1 = 1750m; init max: setup 3, late 2 + sidecar 1 = 3 -> 3;
    # memory: containers 1Gi, late 8Gi -> 8Gi; overhead adds 100m CPU.
    assert pod_requests(spec) == {
        "cpu": Decimal("3.1"),
        "memory": Decimal(8 * 2**30),
        "nvidia.com/gpu": Decimal(1),
    }


@pytest.mark.parametrize(
    "value, ok",
    [
        ("Job.batch", True),
        ("RayCluster.ray.io", True),
        ("TrainJob.trainer.kubeflow.org", True),
        ("Pod", True),
        ("nope", False),
        ("job.batch", False),
        ("Job.", False),
        ("Job.Batch", False),
        ("Job.batch/v1", False),
        ("", False),
    ],
)
def test_kind_filter_syntax(value, ok):
    problem = kind_filter_problem(value)
    assert (problem is None) is ok, problem
    if not ok:
        assert "Kind.group" in str(problem) and repr(value) in str(problem)


def test_filters_and_order():
    admitted = workload_info(real("v1beta2-admitted"))
    waiting = workload_info(real("v1beta2-pending"), pending_item())
    assert admitted is not None and waiting is not None
    other = workload_info(real("v1beta2-pending"))
    assert other is not None
    other = replace(other, name="zz", queue="another")
    ray = replace(other, name="rc", owner=Owner("RayCluster", "ray.io", "rc"))
    listed = sorted_workloads([other, waiting, ray, admitted])
    assert [w.name for w in listed] == ["rc", "zz", admitted.name, waiting.name]
    assert [w.name for w in listed if matches(w, queue="lq")] == [admitted.name, waiting.name]
    assert [w.name for w in listed if matches(w, kind="RayCluster.ray.io")] == ["rc"]
    assert [w.name for w in listed if matches(w, queue="lq", kind="Job.batch")] == [
        admitted.name,
        waiting.name,
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_kueue_decides_about_a_waiting_or_admitted_workload_only_while_it_is_active(version):
    """What the session's Kueue probe is kept for: a Workload Kueue may still admit, preempt
    or evict; a finished or stopped one waits on nobody."""
    assert kueue_decides(real(f"{version}-pending"))
    assert kueue_decides(real(f"{version}-admitted"))
    finished = with_conditions(real(f"{version}-admitted"), cond("Finished", reason="Succeeded"))
    assert not kueue_decides(finished)
    stopped = real(f"{version}-pending")
    stopped["spec"]["active"] = False
    assert not kueue_decides(stopped)
