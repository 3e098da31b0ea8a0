"""Priorities on the real control plane, with two WorkloadPriorityClasses made for the test:
the queues API offers them, a bad or unknown ``priority`` is a 400 naming the field with
nothing created, ``ahead`` counts only the pending workloads Kueue orders first, and a
low-priority Ray cluster preempted by a high-priority one says so and names it."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

import jupyter_dw as dw
from tests.cluster.fixtures import KueueObjects, condition, plain_workload, watch_until
from tests.integration.clusters_support import (
    KUEUE,
    call,
    make_queue,
    rayclusters,
    small_cluster,
    workload_of,
)
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
PRIORITY_READ = {
    "apiGroups": [KUEUE],
    "resources": ["workloadpriorityclasses"],
    "verbs": ["list", "watch"],
}
CQ_PENDING = {
    "apiGroups": ["visibility.kueue.x-k8s.io"],
    "resources": ["clusterqueues/pendingworkloads"],
    "verbs": ["get"],
}
WORKBENCH_CLUSTER_RULES = [*CLUSTER_READ_RULES, PRIORITY_READ, CQ_PENDING]

pytestmark = pytest.mark.cluster

TIMEOUT = 90
HIGH, LOW = 1000, 10
SMALL = {"head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1", "worker_memory": "1Gi"}


@pytest.fixture
def classes(kueue: KueueObjects) -> tuple[str, str]:
    """Two WorkloadPriorityClasses, ``(high, low)``, removed with the test's other Kueue
    objects. Asked for before the server or kernel starts, so its first list holds them."""
    names = []
    for short, value in (("high", HIGH), ("low", LOW)):
        body = {
            "apiVersion": f"{KUEUE}/{kueue.api_version}",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": f"{kueue.prefix}-{short}"},
            "value": value,
            "description": f"test class {short}",
        }
        names.append(kueue._create_cluster_scoped("workloadpriorityclasses", body))
    return names[0], names[1]


def prioritized_workload(
    kueue: KueueObjects, name: str, queue: str, cpu: str, priority_class: str, value: int
) -> dict[str, Any]:
    """A plain Workload of class ``priority_class`` (value ``value``), as Kueue's job
    integrations write them: the class reference and the value it resolves to."""
    body = plain_workload(kueue.api_version, name, queue, cpu, priority=value)
    if kueue.api_version == "v1beta2":
        body["spec"]["priorityClassRef"] = {
            "group": KUEUE,
            "kind": "WorkloadPriorityClass",
            "name": priority_class,
        }
    else:
        body["spec"]["priorityClassName"] = priority_class
        body["spec"]["priorityClassSource"] = f"{KUEUE}/workloadpriorityclass"
    return body


def create_workload(kube, kueue: KueueObjects, body: dict[str, Any]) -> None:
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        KUEUE, kueue.api_version, kueue.namespace, "workloads", body
    )


def wait_quota(kube, kueue: KueueObjects, name: str, status: str) -> dict[str, Any]:
    """Watch Workload ``name`` until its QuotaReserved condition has ``status`` (``False``:
    Kueue's scheduler has seen it and keeps it pending)."""
    custom = client.CustomObjectsApi(kube)
    return watch_until(
        custom.list_namespaced_custom_object,
        lambda wl: (
            wl["metadata"]["name"] == name
            and (condition(wl, "QuotaReserved") or {}).get("status") == status
        ),
        what=f"workload {name} QuotaReserved={status}",
        group=KUEUE,
        version=kueue.api_version,
        namespace=kueue.namespace,
        plural="workloads",
    )


# -- the queues API offers the classes; bad names change nothing ------------------------------


@pytest.fixture
def default_queue(kueue: KueueObjects) -> str:
    """The namespace's default LocalQueue, made before the server starts."""
    return make_queue(kueue).local_queue


async def test_queues_list_the_classes_and_a_bad_priority_is_a_field_error(
    kube, kueue, namespace, classes, default_queue, identity, jp_fetch
):
    high, low = classes
    code, queues = await call(jp_fetch, "GET", "queues")
    assert code == 200
    classes = {c["name"]: c for c in queues["priority_classes"]}
    assert classes[high] == {
        "name": high,
        "value": HIGH,
        "description": "test class high",
        "default": False,
    }
    assert classes[low]["value"] == LOW
    order = [c["name"] for c in queues["priority_classes"]]
    assert order.index(high) < order.index(low)  # highest first

    for bad, words in (("no-such-class", "no WorkloadPriorityClass"), ("Not A Name", "valid")):
        for route in (("clusters",), ("clusters", "fit")):
            code, body = await call(
                jp_fetch, "POST", *route, body=small_cluster("prio", priority=bad)
            )
            assert code == 400, body
            assert set(body["errors"]) == {"priority"}, body
            assert words in body["errors"]["priority"], body
    code, body = await call(
        jp_fetch,
        "POST",
        "clusters",
        body=small_cluster("prio", labels={f"{KUEUE}/priority-class": high}),
    )
    assert code == 400 and "'priority' field" in body["errors"]["labels"], body
    assert rayclusters(kube, namespace) == []  # nothing created


# -- ahead counts only what Kueue orders first -------------------------------------------------


@pytest.mark.parametrize(
    "cluster_rules",
    [
        pytest.param(WORKBENCH_CLUSTER_RULES, id="clusterqueue-list"),
        pytest.param([*CLUSTER_READ_RULES, PRIORITY_READ], id="localqueue-list"),
    ],
    indirect=True,
)
def test_ahead_counts_only_higher_or_equal_priority(kueue, classes, kernel, kube, cluster_rules):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    high, low = classes
    # The whole queue taken, so everything after waits.
    create_workload(
        kube, kueue, plain_workload(kueue.api_version, "blocker", queue.local_queue, "4")
    )
    wait_quota(kube, kueue, "blocker", "True")
    # One pending workload of each class and a second low one; distinct priorities or
    # creation order among equals never changes a count, so no tie decides anything.
    pending = [("w-high", high, HIGH), ("w-low-1", low, LOW), ("w-low-2", low, LOW)]
    for name, cls, value in pending:
        create_workload(
            kube, kueue, prioritized_workload(kueue, name, queue.local_queue, "3", cls, value)
        )
    # Kueue's queue manager holds all three (what the visibility API lists): its LocalQueue
    # status says so.
    watch_until(
        client.CustomObjectsApi(kube).list_namespaced_custom_object,
        lambda lq: (
            lq["metadata"]["name"] == queue.local_queue
            and (lq.get("status") or {}).get("pendingWorkloads") == len(pending)
        ),
        what=f"LocalQueue {queue.local_queue} with {len(pending)} pending",
        group=KUEUE,
        version=kueue.api_version,
        namespace=kueue.namespace,
        plural="localqueues",
    )

    as_high = dw.fit(dw.ClusterSpec(workers=1, priority=high, **SMALL))
    assert as_high.verdict == "must-wait", as_high.message
    assert (as_high.ahead, as_high.ahead_bound) == (1, "exact"), as_high.message
    assert "1 workload ahead" in as_high.message

    as_low = dw.fit(dw.ClusterSpec(workers=1, priority=low, **SMALL))
    assert (as_low.ahead, as_low.ahead_bound) == (3, "exact"), as_low.message

    # Without a class: Kueue's default priority 0, below both classes.
    unnamed = dw.fit(dw.ClusterSpec(workers=1, **SMALL))
    assert unnamed.ahead == 3, unnamed.message

    # The builder offers the classes (highest first) and sends the one chosen.
    builder = dw.ClusterBuilder(name="form")
    try:
        offered = [value for _, value in builder.priority.options]
        assert offered[0] == "" and offered.index(high) < offered.index(low), offered
        builder.priority.value = high
        assert builder.request()["priority"] == high
        assert builder.evaluate() is not None and builder.errors == {}
    finally:
        builder.close()


# -- preemption --------------------------------------------------------------------------------


def test_a_preempted_cluster_names_the_cluster_that_preempted_it(kueue, classes, kernel, kube):
    make_queue(kueue, cpu="4", memory="8Gi", preemption={"withinClusterQueue": "LowerPriority"})
    high, low = classes

    victim = dw.submit(dw.ClusterSpec(name="low-prio", workers=2, priority=low, **SMALL))
    victim.wait("ready", timeout=TIMEOUT)

    # 3 of 4 CPUs taken: the high-priority cluster fits only by preempting the other.
    winner = dw.submit(dw.ClusterSpec(name="high-prio", workers=2, priority=high, **SMALL))
    preempted = victim.wait(
        "preempted", timeout=TIMEOUT, condition=lambda info: info.preempted_by is not None
    )
    # Kueue's words, as its preemptor writes them (0.14: "... due to prioritization in the
    # ClusterQueue"; 0.19 adds the preemptor and preemptee paths).
    assert preempted.reason == "InClusterQueue", preempted
    assert (preempted.message or "").startswith("Preempted to accommodate a workload (UID: ")
    assert "due to prioritization in the ClusterQueue" in (preempted.message or "")

    winner_rc = next(
        rc for rc in rayclusters(kube, kueue.namespace) if rc["metadata"]["name"] == "high-prio"
    )
    winner_wl = workload_of(kube, kueue, winner_rc["metadata"]["uid"])
    assert preempted.preempted_by.to_json() == {
        "workload_uid": winner_wl["metadata"]["uid"],
        "job_uid": winner_rc["metadata"]["uid"],
        "name": "high-prio",
    }
    assert preempted.to_json()["preempted_by"]["name"] == "high-prio"
    assert winner.wait("ready", timeout=TIMEOUT).state == "ready"
    # Still preempted (it cannot come back while the winner holds the quota), still named.
    assert victim.status().preempted_by.name == "high-prio"
