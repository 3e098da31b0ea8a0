"""Stop and resume a Ray cluster, keeping it, on the real control plane: the Workload
deactivated (``spec.active: false``), Kueue evicts it and suspends the RayCluster, KubeRay
removes its pods, the quota goes to the cluster waiting behind it; a resume queues it again
with its position, and it comes back at the same size. 409s, 403 naming ``patch workloads``
with nothing changed, 404, 400.

Pods run on KWOK's fake nodes: nothing here connects to a pod or Service address.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from kubernetes import client

from tests.integration.clusters_support import (
    KUEUE,
    Queue,
    call,
    headroom_becomes,
    make_queue,
    namespace_objects,
    open_events,
    rayclusters,
    small_cluster,
    state_is,
    workload_of,
)
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

# A workbench that may stop and resume (patch workloads) and read quota.
WORKBENCH_RULES = namespace_rules(stop=True)
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster


def _raycluster(kube: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return next(rc for rc in rayclusters(kube, namespace) if rc["metadata"]["name"] == name)


def _workload(kube: client.ApiClient, kueue: Any, namespace: str, name: str) -> dict[str, Any]:
    return workload_of(kube, kueue, _raycluster(kube, namespace, name)["metadata"]["uid"])


def _reserved_cpu(kube: client.ApiClient, kueue: Any, queue: Queue) -> str:
    """The CPU the ClusterQueue holds reserved now, as Kueue's status says."""
    cq = client.CustomObjectsApi(kube).get_cluster_custom_object(
        KUEUE, kueue.api_version, "clusterqueues", queue.cluster_queue
    )
    for flavor in cq.get("status", {}).get("flavorsReservation") or []:
        for resource in flavor.get("resources") or []:
            if resource["name"] == "cpu":
                return str(resource["total"])
    return "0"


def _pods_of(kube: client.ApiClient, namespace: str, name: str) -> list[Any]:
    return (
        client.CoreV1Api(kube)
        .list_namespaced_pod(namespace, label_selector=f"ray.io/cluster={name}")
        .items
    )


async def test_stop_frees_the_quota_for_the_next_and_resume_queues_it_again(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch
):
    queue = make_queue(kueue)  # 4 CPU: one cluster of 3 at a time
    events, _ = await open_events(jp_ws_fetch)
    code, _ = await call(jp_fetch, "POST", "clusters", body=small_cluster("first", workers=2))
    assert code == 201
    await events.cluster_state("first", state_is("ready"), "first ready")
    code, _ = await call(jp_fetch, "POST", "clusters", body=small_cluster("second", workers=2))
    assert code == 201
    await events.cluster_state(
        "second",
        lambda s: s is not None and s["state"] == "queued" and s["message"] is not None,
        "second waits behind first",
    )

    # Resuming what is not stopped, stopping what is not admitted: 409, nothing changed.
    code, error = await call(jp_fetch, "POST", "clusters", "first", "resume")
    assert (code, error["code"], error["state"]) == (409, "not_stopped", "ready"), error
    code, error = await call(jp_fetch, "POST", "clusters", "second", "stop")
    assert (code, error["code"], error["state"]) == (409, "not_admitted", "queued"), error
    assert "Nothing was changed" in error["hint"]

    code, stopped = await call(jp_fetch, "POST", "clusters", "first", "stop")
    assert code == 200, stopped
    assert stopped["state"] == "stopped"
    assert stopped["stopped"]["by"] == identity.username
    assert stopped["stopped"]["reason"] == {"by": "person"}
    assert stopped["stopped"]["at"]
    assert stopped["position_in_local_queue"] is None

    # Kueue evicts it, suspends the RayCluster, KubeRay removes the pods; the quota goes to
    # the cluster waiting behind it.
    gone = await events.cluster_state(
        "first", lambda s: s is not None and s["state"] == "stopped" and s["pods"] == [], "no pods"
    )
    assert gone is not None and gone["stopped"] == stopped["stopped"]
    assert "Stopped" in events.milestones("first")
    await events.cluster_state("second", state_is("ready"), "second admitted and ready")
    assert _pods_of(kube, namespace, "first") == []
    kept = _raycluster(kube, namespace, "first")
    assert kept["spec"]["suspend"] is True  # Kueue's doing, not ours
    assert kept["spec"]["workerGroupSpecs"][0]["replicas"] == 2  # the spec is kept
    annotations = kept["metadata"]["annotations"]
    assert annotations["jupyter-dw/stopped-by"] == identity.username
    workload = _workload(kube, kueue, namespace, "first")
    assert workload["spec"]["active"] is False
    evicted = next(c for c in workload["status"]["conditions"] if c["type"] == "Evicted")
    assert (evicted["status"], evicted["reason"]) == ("True", "Deactivated")
    await headroom_becomes(events, jp_fetch, queue, Decimal(1))
    assert _reserved_cpu(kube, kueue, queue) == "3"  # second's alone
    code, again = await call(jp_fetch, "POST", "clusters", "first", "stop")
    assert (code, again["code"], again["state"]) == (409, "not_admitted", "stopped")

    # Resume while second holds the quota: queued like a new cluster, with its position.
    code, resumed = await call(jp_fetch, "POST", "clusters", "first", "resume")
    assert code == 200, resumed
    assert resumed["state"] == "queued" and resumed["stopped"] is None
    assert _workload(kube, kueue, namespace, "first")["spec"]["active"] is True
    assert "jupyter-dw/stopped-by" not in (
        _raycluster(kube, namespace, "first")["metadata"].get("annotations") or {}
    )
    waiting = await events.cluster_state(
        "first",
        lambda s: (
            s is not None
            and s["state"] == "queued"
            and s["position_in_local_queue"] == 0
            and "insufficient unused quota" in (s["message"] or "")
        ),
        "first queued with its position and Kueue's reason",
    )
    assert waiting is not None and waiting["admitted"] is False

    code, _ = await call(jp_fetch, "DELETE", "clusters", "second")
    assert code == 200
    ready = await events.cluster_state("first", state_is("ready"), "first back and ready")
    assert ready is not None
    assert (ready["workers_desired"], ready["workers_ready"]) == (2, 2)  # the same size
    events.close()


async def test_bad_names_unknown_clusters_and_bodies(kueue, jp_fetch):
    make_queue(kueue)
    for action in ("stop", "resume"):
        code, error = await call(jp_fetch, "POST", "clusters", "absent", action)
        assert (code, error["code"]) == (404, "not_found"), error
        code, error = await call(jp_fetch, "POST", "clusters", "Bad_Name", action)
        assert (code, error["code"]) == (400, "invalid_name"), error
        code, error = await call(jp_fetch, "POST", "clusters", "absent", action, body={"x": 1})
        assert (code, error["code"]) == (400, "invalid_request"), error
        assert "x" in error["errors"]["request"]


BATCH_USER = namespace_rules()  # Kueue's batch-user role: get, list, watch on workloads


@pytest.mark.parametrize("rules", [BATCH_USER], indirect=True)
async def test_without_patch_workloads_stop_is_403_naming_it_and_changes_nothing(
    kube, kueue, namespace, kueue_api_version, jp_fetch, jp_ws_fetch
):
    make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    code, _ = await call(jp_fetch, "POST", "clusters", body=small_cluster("kept", workers=1))
    assert code == 201
    await events.cluster_state("kept", state_is("ready"), "ready")
    before = namespace_objects(kube, namespace, kueue_api_version)

    code, error = await call(jp_fetch, "POST", "clusters", "kept", "stop")

    assert code == 403, error
    assert error["code"] == "forbidden"
    assert error["denied"] == "patch workloads.kueue.x-k8s.io"
    assert "patch workloads.kueue.x-k8s.io" in error["error"]
    assert namespace_objects(kube, namespace, kueue_api_version) == before
    code, cluster = await call(jp_fetch, "GET", "clusters", "kept")
    assert (code, cluster["state"], cluster["stopped"]) == (200, "ready", None)
    code, context = await call(jp_fetch, "GET", "context")
    denied = {p["permission"] for p in context["permissions"] if not p["allowed"]}
    assert "patch workloads.kueue.x-k8s.io" in denied
    events.close()
