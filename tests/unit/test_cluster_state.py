"""Cluster state from KubeRay's RayCluster and Kueue's Workload together, and its milestones.

Objects are shaped like the controllers write them: the RayCluster is ValidatedClusterSpec's own
(``spec.suspend: true``, queue label), its status as KubeRay v1.7 reports it (zero counts
omitted), the Workload as Kueue v0.19 writes it in both API versions.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.cluster_state import (
    ClusterSnapshot,
    cluster_snapshot,
    transition,
    workload_selector,
)
from jupyter_dw.domain.kueue_state import kueue_state
from jupyter_dw.domain.stop_record import StopRecord, stop_record

UID = "5f0c2a4e-8d7b-4c59-9d0e-1a2b3c4d5e6f"
CREATED = "2026-08-01T10:00:00Z"
ADMITTED_AT = "2026-08-01T10:00:05Z"
WL_NAME = "raycluster-demo-3f1c2"

# -- builders -------------------------------------------------------------------------------


def cond(kind: str, status: str, reason: str, message: str = "", at: str = CREATED) -> dict:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
        "observedGeneration": 1,
    }


def raycluster(workers: int = 2, **status: Any) -> dict[str, Any]:
    """The RayCluster jupyter_dw creates, as stored after creation (uid, timestamps)."""
    spec = ValidatedClusterSpec.from_request(
        {"name": "demo", "queue": "team-a", "workers": workers}
    )
    obj = spec.to_raycluster("ns", owner="alice")
    obj["metadata"].update({"uid": UID, "creationTimestamp": CREATED, "generation": 1})
    if status:
        obj["status"] = status
    return obj


def running(obj: dict[str, Any]) -> dict[str, Any]:
    """What Kueue does on admission: spec.suspend=false."""
    obj = copy.deepcopy(obj)
    obj["spec"]["suspend"] = False
    return obj


def kuberay_status(head: str = "ready", ready_workers: int = 0, desired: int = 2) -> dict:
    """KubeRay's status at a stage: head "none" (no pod), "pending" or "ready"."""
    status: dict[str, Any] = {"desiredWorkerReplicas": desired, "maxWorkerReplicas": desired}
    if ready_workers:  # omitempty: KubeRay leaves zero counts out
        status["readyWorkerReplicas"] = ready_workers
        status["availableWorkerReplicas"] = ready_workers
    conditions = []
    if head == "none":
        conditions.append(cond("HeadPodReady", "False", "HeadPodNotFound", "Head Pod not found"))
    else:
        status["head"] = {"podName": "demo-head-x7k2p", "serviceName": "demo-head-svc"}
        status["endpoints"] = {"client": "10001", "dashboard": "8265", "gcs-server": "6379"}
        if head == "ready":
            conditions.append(cond("HeadPodReady", "True", "HeadPodRunningAndReady"))
        else:
            conditions.append(cond("HeadPodReady", "False", "ContainersNotReady", "not ready"))
    provisioned = head == "ready" and ready_workers >= desired
    conditions.append(
        cond("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime")
        if provisioned
        else cond("RayClusterProvisioned", "False", "RayClusterPodsProvisioning")
    )
    status["conditions"] = conditions
    if provisioned:
        status["state"] = "ready"
    return status


def workload(
    *conditions: dict, version: str = "v1beta2", admission: bool = False, active: bool = True
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Workload",
        "metadata": {
            "name": WL_NAME,
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/job-uid": UID},
            "creationTimestamp": CREATED,
        },
        "spec": {"queueName": "team-a", "active": active, "podSets": []},
    }
    status: dict[str, Any] = {}
    if conditions:
        status["conditions"] = list(conditions)
    if admission:
        status["admission"] = {
            "clusterQueue": "cq-a",
            "podSetAssignments": [
                {"name": "head", "flavors": {"cpu": "default", "memory": "default"}, "count": 1},
                {
                    "name": "workers",
                    "flavors": {"cpu": "default", "memory": "default", "nvidia.com/gpu": "a100"},
                    "count": 2,
                },
            ],
        }
    if status:
        obj["status"] = status
    return obj


PENDING_V1BETA1 = cond(
    "QuotaReserved",
    "False",
    "Pending",
    "couldn't assign flavors to pod set workers: insufficient unused quota for cpu in flavor "
    "default, 2 more needed",
)
PENDING_V1BETA2 = cond(
    "QuotaReserved",
    "False",
    "WaitingForQuota",
    "couldn't assign flavors to pod set workers: insufficient unused quota for cpu in flavor "
    "default, 2 more needed",
)
RESERVED = cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq-a")
ADMITTED = cond("Admitted", "True", "Admitted", "The workload is admitted", at=ADMITTED_AT)
PREEMPT_MSG = (
    "Preempted to accommodate a workload (UID: 0f1e, JobUID: 9a8b) due to prioritization in "
    "the ClusterQueue"
)


def admitted_workload(**kwargs: Any) -> dict[str, Any]:
    return workload(RESERVED, ADMITTED, admission=True, **kwargs)


def pending_entry(local: int = 1, cluster: int = 3, name: str = WL_NAME) -> dict[str, Any]:
    """An item of the visibility API's pendingworkloads list."""
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": CREATED},
        "priority": 0,
        "localQueueName": "team-a",
        "positionInClusterQueue": cluster,
        "positionInLocalQueue": local,
    }


# -- the states, in lifecycle order ---------------------------------------------------------


def test_fresh_suspended_cluster_without_workload_is_suspended() -> None:
    status = cluster_snapshot(raycluster())
    assert status.state == "suspended"
    assert status.workload is None
    assert status.queue == "team-a"
    assert status.created == CREATED
    assert (status.head_ready, status.workers_ready, status.workers_desired) == (False, 0, 2)
    assert status.dashboard.service == "demo-head-svc"
    assert status.dashboard.port == 8265


def test_workload_without_status_is_queued_without_invented_words() -> None:
    status = cluster_snapshot(raycluster(), workload())
    assert status.state == "queued"
    assert status.workload == WL_NAME
    assert (status.reason, status.message) == (None, None)


@pytest.mark.parametrize(
    ("version", "pending"), [("v1beta1", PENDING_V1BETA1), ("v1beta2", PENDING_V1BETA2)]
)
def test_queued_shows_kueues_reason_and_positions(version: str, pending: dict) -> None:
    status = cluster_snapshot(raycluster(), workload(pending, version=version), pending_entry())
    assert status.state == "queued"
    assert status.reason == pending["reason"]
    assert status.message is not None and "2 more needed" in status.message
    assert (status.position_in_local_queue, status.position_in_cluster_queue) == (1, 3)
    assert status.quota_reserved is False
    assert status.admitted_at is None


def test_pending_entry_of_another_workload_is_ignored() -> None:
    status = cluster_snapshot(raycluster(), workload(PENDING_V1BETA2), pending_entry(name="other"))
    assert status.position_in_local_queue is None
    assert status.position_in_cluster_queue is None


def test_quota_reserved_but_waiting_for_admission_checks_is_queued() -> None:
    checks = cond("Admitted", "False", "NoChecks", "The workload has pending admission checks")
    status = cluster_snapshot(raycluster(), workload(RESERVED, checks, admission=True))
    assert status.state == "queued"
    assert status.quota_reserved is True
    assert status.admitted is False
    assert status.message == "The workload has pending admission checks"


def test_admitted_before_kueue_unsuspends() -> None:
    status = cluster_snapshot(raycluster(), admitted_workload(), pending_entry())
    assert status.state == "admitted"
    assert status.admitted_at == ADMITTED_AT
    assert status.cluster_queue == "cq-a"
    assert status.flavors == ("default", "a100")
    assert status.pod_set_flavors["workers"]["nvidia.com/gpu"] == "a100"
    # Quota is reserved, so a stale pending entry gives no position.
    assert status.position_in_local_queue is None


def test_admitted_while_kuberay_has_no_head_pod_yet() -> None:
    obj = running(raycluster(**kuberay_status(head="none")))
    status = cluster_snapshot(obj, admitted_workload())
    assert status.state == "admitted"
    assert status.reason == "Admitted"


def test_starting_with_head_pod_not_ready() -> None:
    obj = running(raycluster(**kuberay_status(head="pending")))
    status = cluster_snapshot(obj, admitted_workload())
    assert status.state == "starting"
    assert status.head_ready is False
    assert (status.reason, status.message) == ("ContainersNotReady", "not ready")


def test_starting_with_some_workers_ready() -> None:
    obj = running(raycluster(**kuberay_status(head="ready", ready_workers=1)))
    status = cluster_snapshot(obj, admitted_workload())
    assert status.state == "starting"
    assert (status.head_ready, status.workers_ready, status.workers_desired) == (True, 1, 2)
    assert status.reason == "RayClusterPodsProvisioning"


def test_ready_when_head_and_all_workers_are_ready() -> None:
    obj = running(raycluster(**kuberay_status(head="ready", ready_workers=2)))
    status = cluster_snapshot(obj, admitted_workload())
    assert status.state == "ready"
    data = status.to_json()
    assert data["dashboard"] == {"service": "demo-head-svc", "port": 8265}
    assert data["flavors"] == ["default", "a100"]
    assert data["workers_ready"] == 2


def test_ready_with_zero_workers_needs_only_the_head() -> None:
    obj = running(raycluster(workers=0, **kuberay_status(head="ready", desired=0)))
    assert cluster_snapshot(obj, admitted_workload()).state == "ready"


# -- eviction, preemption, deactivation -----------------------------------------------------


def evicted_workload(reason: str, message: str, *extra: dict) -> dict[str, Any]:
    # After eviction Kueue clears the admission and the reservation, then requeues.
    return workload(
        cond("Evicted", "True", reason, message),
        cond("QuotaReserved", "False", "Pending", "Evicted"),
        cond("Admitted", "False", "NoReservation", "The workload has no reservation"),
        *extra,
    )


def test_preempted_wins_over_a_stale_ready_status() -> None:
    wl = evicted_workload(
        "Preempted", PREEMPT_MSG, cond("Preempted", "True", "InClusterQueue", PREEMPT_MSG)
    )
    # Kueue marks the Workload evicted before it suspends the RayCluster, and KubeRay's status
    # lags further: a still-running, still-"ready" cluster must show the preemption.
    ready = running(raycluster(**kuberay_status(head="ready", ready_workers=2)))
    status = cluster_snapshot(ready, wl, pending_entry(0, 0))
    assert status.state == "preempted"
    assert status.reason == "InClusterQueue"
    assert status.message == PREEMPT_MSG
    assert status.position_in_local_queue == 0  # requeued: waiting again


def test_evicted_with_reason_preempted_is_preempted_without_the_detail_condition() -> None:
    status = cluster_snapshot(raycluster(), evicted_workload("Preempted", PREEMPT_MSG))
    assert (status.state, status.reason) == ("preempted", "Preempted")


@pytest.mark.parametrize("reason", ["ClusterQueueStopped", "LocalQueueStopped", "PodsReadyTimeout"])
def test_evicted_shows_kueues_reason(reason: str) -> None:
    message = f"The workload is evicted: {reason}"
    status = cluster_snapshot(raycluster(), evicted_workload(reason, message))
    assert (status.state, status.reason, status.message) == ("evicted", reason, message)


def test_readmitted_after_eviction_is_no_longer_evicted() -> None:
    # Kueue resets Evicted/Preempted to False (reason QuotaReserved) when quota is reserved again.
    wl = workload(
        RESERVED,
        ADMITTED,
        cond("Evicted", "False", "QuotaReserved", "Previously: " + PREEMPT_MSG),
        cond("Preempted", "False", "QuotaReserved", "Previously: " + PREEMPT_MSG),
        admission=True,
    )
    assert cluster_snapshot(raycluster(), wl).state == "admitted"


def test_deactivated_workload_is_stopped_not_evicted() -> None:
    wl = evicted_workload("Deactivated", "The workload is deactivated")
    wl["spec"]["active"] = False
    status = cluster_snapshot(raycluster(), wl)
    assert (status.state, status.reason) == ("stopped", "Deactivated")
    assert status.message == "The workload is deactivated"
    assert status.stopped is None  # deactivated by other means: no record


def test_deactivated_before_kueue_evicts_it() -> None:
    status = cluster_snapshot(raycluster(), workload(PENDING_V1BETA2, active=False))
    assert (status.state, status.reason) == ("stopped", "Deactivated")


def test_a_stopped_cluster_carries_its_record_and_only_while_stopped() -> None:
    record = StopRecord("system:serviceaccount:ns:wb", "2026-11-26T10:00:00Z")
    rc = raycluster()
    rc["metadata"]["annotations"] = record.annotations()
    wl = evicted_workload("Deactivated", "The workload is deactivated")
    wl["spec"]["active"] = False
    status = cluster_snapshot(rc, wl)
    assert status.state == "stopped" and status.stopped == record
    assert status.to_json()["stopped"] == {
        "by": "system:serviceaccount:ns:wb",
        "at": "2026-11-26T10:00:00Z",
        "reason": {"by": "person"},
    }
    assert transition(None, status)[-1] == "Stopped"
    # Reactivated: the record left behind is not shown.
    wl["spec"]["active"] = True
    assert cluster_snapshot(rc, wl).stopped is None


def test_a_rules_figures_are_kept_in_the_record() -> None:
    reason = {"by": "idle-rule", "idle_seconds": 1800, "waiting": 2}
    rc = raycluster()
    rc["metadata"]["annotations"] = StopRecord("sa", "t", reason).annotations()
    record = stop_record(rc)
    assert record is not None and record.reason == reason
    assert record.sentence() == "stopped by the idle-rule (as sa) at t"
    rc["metadata"]["annotations"]["jupyter-dw/stop-reason"] = "not json"
    assert stop_record(rc) == StopRecord("sa", "t", {"by": None, "text": "not json"})


def test_reactivated_waits_in_the_queue_not_evicted() -> None:
    # spec.active back to true: Kueue keeps Evicted=True (Deactivated) until it reserves quota
    # again, and says Requeued=True (Reactivated).
    # The eviction's words are still on QuotaReserved until the scheduler judges the queue.
    off = "The workload is deactivated"
    evicted = cond("Evicted", "True", "Deactivated", off)
    requeued = cond("Requeued", "True", "Reactivated", "The workload was reactivated")
    wl = workload(evicted, cond("QuotaReserved", "False", "Pending", off), requeued)
    status = cluster_snapshot(raycluster(), wl)
    assert (status.state, status.reason) == ("queued", "Reactivated")
    assert status.message == "The workload was reactivated"
    assert kueue_state(wl).state == "queued"
    # Resumed between Kueue's two eviction writes (the reservation not yet released).
    wl = workload(evicted, RESERVED, requeued)
    status = cluster_snapshot(raycluster(), wl)
    assert (status.state, status.reason) == ("queued", "Reactivated")
    # Judged: the scheduler's own words (why it waits).
    short = "couldn't assign flavors to pod set head: insufficient unused quota"
    wl = workload(evicted, cond("QuotaReserved", "False", "Pending", short), requeued)
    assert cluster_snapshot(raycluster(), wl).message == short


# -- failed, deleting -----------------------------------------------------------------------


def test_replica_failure_is_failed_even_when_otherwise_ready() -> None:
    status_fields = kuberay_status(head="ready", ready_workers=2)
    status_fields["conditions"].append(
        cond("ReplicaFailure", "True", "FailedCreateWorkerPod", 'pods "w" is forbidden')
    )
    status = cluster_snapshot(running(raycluster(**status_fields)), admitted_workload())
    assert status.state == "failed"
    assert status.reason == "FailedCreateWorkerPod"
    assert status.message == 'pods "w" is forbidden'


def test_deprecated_failed_state_is_failed() -> None:
    obj = running(raycluster(state="failed", reason="head pod crashed"))
    assert cluster_snapshot(obj).state == "failed"
    assert cluster_snapshot(obj).reason == "head pod crashed"


def test_deleting_wins_over_everything() -> None:
    obj = raycluster(**kuberay_status(head="ready", ready_workers=2))
    obj["metadata"]["deletionTimestamp"] = "2026-08-01T11:00:00Z"
    obj["status"]["conditions"].append(cond("ReplicaFailure", "True", "FailedDeleteWorkerPod"))
    wl = evicted_workload("Preempted", PREEMPT_MSG)
    assert cluster_snapshot(obj, wl).state == "deleting"


# -- without Kueue, and partial or odd objects ----------------------------------------------


def test_cluster_not_managed_by_kueue_starts_when_running() -> None:
    obj = running(raycluster())
    assert cluster_snapshot(obj).state == "starting"
    ready = running(raycluster(**kuberay_status(head="ready", ready_workers=2)))
    assert cluster_snapshot(ready).state == "ready"


def test_old_kuberay_without_conditions_uses_state_ready() -> None:
    obj = running(raycluster(state="ready", readyWorkerReplicas=2, desiredWorkerReplicas=2))
    status = cluster_snapshot(obj, admitted_workload())
    assert status.head_ready is True
    assert status.state == "ready"


@pytest.mark.parametrize(
    "broken",
    [
        {"status": None},
        {"status": {"conditions": "nope", "head": "x", "readyWorkerReplicas": "abc"}},
        {"status": {"conditions": [None, 3, {"status": "True"}], "endpoints": []}},
        {"metadata": None, "spec": None},
    ],
)
def test_malformed_objects_never_crash(broken: dict) -> None:
    obj = raycluster()
    obj.update(broken)
    bad_workload = {"metadata": {"name": 5}, "status": {"admission": {"podSetAssignments": 3}}}
    status = cluster_snapshot(obj, bad_workload, {"positionInLocalQueue": "x"})
    assert status.state in {"queued", "suspended"}
    assert status.workers_ready == 0
    assert status.to_json()["flavors"] == []


def test_empty_dict_is_a_nameless_running_cluster() -> None:
    status = cluster_snapshot({})
    assert (status.name, status.state, status.queue) == ("", "starting", None)
    assert status.dashboard.service == "-head-svc"


def test_desired_workers_from_spec_until_kuberay_reports() -> None:
    obj = raycluster(workers=3)
    group = obj["spec"]["workerGroupSpecs"][0]
    group["numOfHosts"] = 2
    extra = copy.deepcopy(group) | {"groupName": "paused", "suspend": True}
    obj["spec"]["workerGroupSpecs"].append(extra)
    assert cluster_snapshot(obj).workers_desired == 6  # 3 replicas x 2 hosts; paused group: 0
    obj["status"] = {"desiredWorkerReplicas": 4}
    assert cluster_snapshot(obj).workers_desired == 4


def test_dashboard_address_from_status_and_spec() -> None:
    obj = raycluster(head={"serviceName": "custom-svc"}, endpoints={"dashboard": "18265"})
    assert cluster_snapshot(obj).dashboard.to_json() == {"service": "custom-svc", "port": 18265}
    obj = raycluster()
    obj["spec"]["headGroupSpec"]["headService"] = {"metadata": {"name": "mine"}}
    assert cluster_snapshot(obj).dashboard.service == "mine"


def test_queue_falls_back_to_the_workload() -> None:
    obj = raycluster()
    del obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert cluster_snapshot(obj, workload()).queue == "team-a"


def test_workload_selector_uses_the_job_uid_label() -> None:
    assert workload_selector(raycluster()) == f"kueue.x-k8s.io/job-uid={UID}"
    assert workload_selector({"metadata": {}}) is None


# -- transitions ----------------------------------------------------------------------------


def lifecycle() -> list[ClusterSnapshot]:
    """Every stage a cluster goes through from creation to ready, as observed one by one."""
    created = raycluster()
    starting = kuberay_status(head="pending")
    return [
        cluster_snapshot(created),
        cluster_snapshot(created, workload(PENDING_V1BETA2), pending_entry()),
        cluster_snapshot(created, workload(RESERVED, admission=True)),
        cluster_snapshot(created, admitted_workload()),
        cluster_snapshot(running(raycluster(**kuberay_status(head="none"))), admitted_workload()),
        cluster_snapshot(running(raycluster(**starting)), admitted_workload()),
        cluster_snapshot(running(raycluster(**kuberay_status())), admitted_workload()),
        cluster_snapshot(
            running(raycluster(**kuberay_status(ready_workers=1))), admitted_workload()
        ),
        cluster_snapshot(
            running(raycluster(**kuberay_status(ready_workers=2))), admitted_workload()
        ),
    ]


def test_transitions_name_each_milestone_in_order() -> None:
    stages = lifecycle()
    assert [s.state for s in stages] == [
        "suspended",
        "queued",
        "queued",
        "admitted",
        "admitted",
        "starting",
        "starting",
        "starting",
        "ready",
    ]
    steps = [transition(old, new) for old, new in zip([None, *stages], stages, strict=False)]
    assert steps == [
        ["Suspended"],
        ["Queued"],
        ["QuotaReserved"],
        ["Admitted"],
        [],
        [],
        ["HeadReady"],
        ["WorkerReady:1"],
        ["WorkerReady:2", "Ready"],
    ]


def test_skipped_observations_keep_the_order() -> None:
    stages = lifecycle()
    queued, ready = stages[1], stages[-1]
    assert transition(queued, ready) == [
        "QuotaReserved",
        "Admitted",
        "HeadReady",
        "WorkerReady:1",
        "WorkerReady:2",
        "Ready",
    ]
    assert transition(None, ready)[0] == "QuotaReserved"


def test_preemption_then_readmission() -> None:
    ready = lifecycle()[-1]
    wl = evicted_workload(
        "Preempted", PREEMPT_MSG, cond("Preempted", "True", "InClusterQueue", PREEMPT_MSG)
    )
    preempted = cluster_snapshot(raycluster(), wl, pending_entry(0, 0))
    assert transition(ready, preempted) == ["Preempted", "QuotaReleased"]
    readmitted = cluster_snapshot(raycluster(), admitted_workload())
    assert transition(preempted, readmitted) == ["QuotaReserved", "Admitted"]
    assert transition(preempted, preempted) == []


def test_losing_a_worker_and_recovering_is_reported_again() -> None:
    stages = lifecycle()
    ready, one_ready = stages[-1], stages[-2]
    assert transition(ready, one_ready) == []
    assert transition(one_ready, ready) == ["WorkerReady:2", "Ready"]


def test_entering_failed_and_deleting() -> None:
    ready = lifecycle()[-1]
    fields = kuberay_status(ready_workers=2)
    fields["conditions"].append(cond("ReplicaFailure", "True", "FailedCreateWorkerPod"))
    failed = cluster_snapshot(running(raycluster(**fields)), admitted_workload())
    assert transition(ready, failed) == ["Failed"]
    gone = raycluster()
    gone["metadata"]["deletionTimestamp"] = "2026-08-01T11:00:00Z"
    assert transition(failed, cluster_snapshot(gone)) == ["Deleting", "QuotaReleased"]
