"""The Python API (``import jupyter_dw as dw``) on the real control plane, from a kernel that
uses the workbench's service account directly (no server extension involved): fit, submit,
wait for admission and scale-out, wait in the queue, never fit with a suggestion Kueue
agrees with, eviction, delete, and every kind of error."""

from __future__ import annotations

import pytest
from kubernetes import client, watch

import jupyter_dw as dw
from jupyter_dw.k8s.resources import CLUSTER_QUEUE, RAY_CLUSTER
from tests.cluster.fixtures import condition
from tests.integration.clusters_support import (
    KUEUE,
    make_queue,
    rayclusters,
    reserved_cpu,
    wait_gone,
)
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster

TIMEOUT = 90

SMALL = {"head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1", "worker_memory": "1Gi"}


def spec(name: str, workers: int = 2, **extra) -> dw.ClusterSpec:
    return dw.ClusterSpec(name=name, workers=workers, **{**SMALL, **extra})


def names(info) -> list[str]:
    return [m.name for m in info.milestones]


def test_importing_contacts_nothing(kernel):
    assert not kernel.started
    assert dw.ClusterSpec(name="x").to_request() == {"name": "x"}
    assert not kernel.started  # building a spec is local


def test_fits_now_then_ready_with_timed_milestones_then_deleted(kernel, kueue, kube, namespace):
    queue = make_queue(kueue)
    queues = dw.queues()
    assert [q.name for q in queues.queues] == [queue.local_queue]
    assert queues.default is not None and queues.default.name == queue.local_queue

    verdict = dw.fit(spec("fits"))
    assert verdict.verdict == "fits-now", verdict.message
    assert verdict.suggestion is None
    assert verdict.to_json()["requests"] == {"cpu": "3", "memory": "3Gi"}

    h = dw.submit(spec("fits"))
    assert h.name == "fits"
    # The Workload's admission may reach its cache a moment after the pods' readiness reaches
    # theirs, and the pods' a moment after KubeRay's ready state (separate watches): wait for
    # the whole timeline, each step's time read.
    info = h.wait(
        "ready",
        timeout=TIMEOUT,
        condition=lambda i: "Admitted" in names(i) and all(m.time for m in i.milestones),
    )
    assert info.state == "ready" and info.workers_ready == 2
    steps = names(info)
    assert steps[:3] == ["Submitted", "QuotaReserved", "Admitted"], steps
    assert {"HeadReady", "WorkerReady:1", "WorkerReady:2"} <= set(steps) and steps[-1] == "Ready"
    times = [m.time for m in info.milestones]
    assert all(times) and times == sorted(times[:3]) + times[3:], times
    assert h.status().to_json()["milestones"] == [m.to_json() for m in info.milestones]
    assert h.ray_address == f"ray://fits-head-svc.{namespace}.svc:10001"
    assert h.dashboard_url == "/dw/ray/fits/"
    assert [c.name for c in dw.clusters()] == ["fits"]

    h.delete()
    gone = wait_gone(kube, namespace, "fits")
    assert gone
    # The kernel learns of the deletion from its own watch, which may lag the test's.
    kernel_view = kernel.core.session.cache(RAY_CLUSTER)
    assert kernel_view is not None and kernel_view.wait_until(
        lambda objs: all(o["metadata"]["name"] != "fits" for o in objs), timeout=TIMEOUT
    )
    with pytest.raises(dw.NotFound):
        h.status()


def test_must_wait_is_queued_with_position_then_ready_when_the_blocker_goes(kernel, kueue):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    first = dw.submit(spec("first", workers=2))  # 3 of 4 CPU
    first.wait("ready", timeout=TIMEOUT)
    # Kueue writes the ClusterQueue's reservation after it admits (0.14 a moment later than
    # 0.19), and the fit reads that status as Kueue's own queue listing does: wait on the
    # kernel's ClusterQueue cache until it counts the first cluster's 3 CPU.
    cluster_queues = kernel.core.session.cache(CLUSTER_QUEUE)
    assert cluster_queues is not None
    assert cluster_queues.wait_until(
        lambda cqs: any(
            cq["metadata"]["name"] == queue.cluster_queue and reserved_cpu(cq) == 3 for cq in cqs
        ),
        TIMEOUT,
    )

    verdict = dw.fit(spec("second", workers=2))
    assert verdict.verdict == "must-wait", verdict.message
    assert verdict.suggestion is None  # 1 CPU free: not even head + 1 worker (2 CPU)

    second = dw.submit(spec("second", workers=2))
    queued = second.wait("queued", timeout=TIMEOUT, condition=lambda info: bool(info.message))
    assert queued.reason and "insufficient unused quota" in (queued.message or ""), queued

    assert second.status().position_in_local_queue == 0  # Kueue's visibility API

    first.delete()
    ready = second.wait("ready", timeout=TIMEOUT)
    assert ready.workers_ready == 2
    assert second.status().position_in_local_queue is None


def test_never_fits_suggests_a_size_kueue_admits_at_once(kernel, kueue, kube, namespace):
    make_queue(kueue, cpu="4", memory="8Gi")
    verdict = dw.fit(spec("huge", workers=10))
    assert verdict.verdict == "never-fits", verdict.message
    suggestion = verdict.suggestion
    assert suggestion is not None and suggestion.workers == 3  # head 1 + 3 x 1 CPU = 4
    assert suggestion.to_json()["requests"]["cpu"] == "4"

    custom = client.CustomObjectsApi(kube)
    listing = custom.list_namespaced_custom_object(KUEUE, kueue.api_version, namespace, "workloads")
    h = dw.submit(spec("huge", workers=suggestion.workers))
    # Every write of its Workload, from before the submit on: Kueue never said "pending".
    reserved = []
    for event in watch.Watch().stream(
        custom.list_namespaced_custom_object, KUEUE, kueue.api_version, namespace, "workloads",
        resource_version=listing["metadata"]["resourceVersion"], timeout_seconds=TIMEOUT,
    ):  # fmt: skip
        found = condition(event["raw_object"], "QuotaReserved")
        if found is not None:
            reserved.append(found["status"])
            if found["status"] == "True":
                break
    assert reserved and set(reserved) == {"True"}, reserved
    assert h.wait("ready", timeout=TIMEOUT).workers_ready == 3


def test_an_evicted_cluster_stops_the_wait_with_kueues_reason(kernel, kueue, kube):
    queue = make_queue(kueue)
    h = dw.submit(spec("victim", workers=1))
    h.wait("ready", timeout=TIMEOUT)
    client.CustomObjectsApi(kube).patch_cluster_custom_object(
        KUEUE, kueue.api_version, "clusterqueues", queue.cluster_queue,
        {"spec": {"stopPolicy": "HoldAndDrain"}},
    )  # fmt: skip
    with pytest.raises(dw.ClusterFailed) as failed:  # a wait it cannot finish: 1 worker, not 2
        h.wait("ready", timeout=TIMEOUT, condition=lambda info: info.workers_ready == 2)
    assert failed.value.state == "evicted"
    assert "ClusterQueueStopped" in (failed.value.reason or "")
    assert h.status().milestones[-1].name == "Evicted"


def test_errors_name_what_is_wrong_and_change_nothing(kernel, kueue, kube, namespace):
    make_queue(kueue)
    with pytest.raises(dw.InvalidSpec) as invalid:
        dw.submit(name="Bad_Name", workers=-1, worker_memory="lots")
    assert {"name", "workers", "worker_memory"} <= set(invalid.value.errors)
    with pytest.raises(dw.InvalidSpec) as unknown:
        dw.submit(name="ok", queue="no-such-queue")
    assert "queue" in unknown.value.errors
    assert rayclusters(kube, namespace) == []

    dw.submit(spec("taken", workers=1))
    with pytest.raises(dw.NameTaken):
        dw.submit(spec("taken", workers=1))
    with pytest.raises(dw.NotFound):
        dw.cluster("absent")
    assert [rc["metadata"]["name"] for rc in rayclusters(kube, namespace)] == ["taken"]


@pytest.mark.parametrize("rules", [namespace_rules(["get", "list", "watch"])], indirect=True)
def test_without_create_permission_the_error_names_it(kernel, kueue, kube, namespace):
    make_queue(kueue)
    with pytest.raises(dw.PermissionDenied) as denied:
        dw.submit(spec("nope", workers=1))
    assert denied.value.denied == "create rayclusters.ray.io"
    assert rayclusters(kube, namespace) == []


def test_ephemeral_clusters_go_with_the_kernel(kernel, kueue, kube, namespace):
    make_queue(kueue)
    dw.submit(spec("temporary", workers=1), delete_with_kernel=True)
    dw.submit(spec("kept", workers=1))
    kernel.stop()  # what kernel shutdown runs
    left = {
        rc["metadata"]["name"]: rc["metadata"].get("deletionTimestamp")
        for rc in rayclusters(kube, namespace)
    }
    assert left.get("kept") is None and "kept" in left
    assert "temporary" not in left or left["temporary"] is not None


def test_pods_no_node_can_take_show_as_stalled_in_the_schedulers_words(kernel, kueue):
    make_queue(kueue)
    # Admitted by Kueue (the flavor has no node labels), then no KWOK node has this label:
    # the real kube-scheduler leaves the pods Pending, Unschedulable.
    h = dw.submit(spec("nowhere", workers=1, node_selector={"example.com/pool": "none"}))
    stalled = h.wait("stalled", timeout=TIMEOUT)
    assert stalled.admitted and stalled.reason == "Unschedulable"
    assert "didn't match Pod's node affinity/selector" in (stalled.message or ""), stalled.message
    assert h.status().to_json()["state"] == "stalled"
