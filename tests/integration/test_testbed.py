"""Proof that the local control plane is real: Kueue admits, KubeRay scales out, KWOK runs pods,
the visibility API answers, and RBAC denies what a Role does not allow."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from tests.cluster.fixtures import KueueObjects, condition, watch_until

pytestmark = pytest.mark.cluster

RAY_IMAGE = "rayproject/ray:2.9.0"  # never pulled: KWOK runs the pods


def raycluster(name: str, queue: str, *, workers: int, cpu: str, memory: str) -> dict[str, Any]:
    """A minimal RayCluster for Kueue: one head, one worker group, requests == limits."""

    def container(role: str) -> dict[str, Any]:
        resources = {"cpu": cpu, "memory": memory}
        return {
            "name": f"ray-{role}",
            "image": RAY_IMAGE,
            "resources": {"requests": resources, "limits": resources},
        }

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [container("head")]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": workers,
                    "maxReplicas": workers,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [container("worker")]}},
                }
            ],
        },
    }


def create_raycluster(kube: client.ApiClient, namespace: str, body: dict[str, Any]) -> dict:
    return client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", body
    )


def workload_of(kube, kueue: KueueObjects, raycluster_obj: dict, predicate, what: str) -> dict:
    """Wait for the Workload Kueue made for ``raycluster_obj`` (found by its job-uid label)."""
    uid = raycluster_obj["metadata"]["uid"]
    custom = client.CustomObjectsApi(kube)
    return watch_until(
        lambda **kw: custom.list_namespaced_custom_object(
            "kueue.x-k8s.io", kueue.api_version, kueue.namespace, "workloads", **kw
        ),
        predicate,
        label_selector=f"kueue.x-k8s.io/job-uid={uid}",
        what=what,
    )


def cond_status(obj: dict, kind: str) -> str | None:
    return (condition(obj, kind) or {}).get("status")


@pytest.fixture
def small_queue(kueue: KueueObjects) -> str:
    """A LocalQueue whose ClusterQueue has 4 CPUs and 8Gi."""
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("small", {flavor: {"cpu": "4", "memory": "8Gi"}})
    kueue.wait_active("clusterqueues", cq)
    lq = kueue.local_queue("team", cq)
    kueue.wait_active("localqueues", lq)
    return lq


def test_admitted_raycluster_scales_out_on_fake_nodes(kube, kueue, namespace, small_queue):
    created = create_raycluster(
        kube, namespace, raycluster("fits", small_queue, workers=2, cpu="1", memory="1Gi")
    )

    workload = workload_of(
        kube,
        kueue,
        created,
        lambda w: cond_status(w, "Admitted") == "True",
        "Workload admitted",
    )
    assert cond_status(workload, "QuotaReserved") == "True"
    assert workload["status"]["admission"]["clusterQueue"] == f"{namespace}-small"

    custom = client.CustomObjectsApi(kube)
    ready = watch_until(
        lambda **kw: custom.list_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", **kw
        ),
        lambda rc: (
            rc.get("status", {}).get("readyWorkerReplicas") == 2
            and cond_status(rc, "HeadPodReady") == "True"
        ),
        field_selector="metadata.name=fits",
        what="RayCluster with 2 ready workers",
    )
    assert ready["status"]["desiredWorkerReplicas"] == 2
    assert ready["spec"].get("suspend") is False

    pods = (
        client.CoreV1Api(kube)
        .list_namespaced_pod(namespace, label_selector="ray.io/cluster=fits")
        .items
    )
    assert len(pods) == 3  # head + 2 workers
    assert all(p.status.phase == "Running" for p in pods)
    assert all(p.spec.node_name and p.spec.node_name.startswith("kwok-node-") for p in pods)


def test_over_quota_raycluster_waits_with_position_then_is_admitted(
    kube, kueue, namespace, small_queue
):
    # 3 pods x 1 CPU fits in 4 CPUs; the second cluster's 3 CPUs do not fit in the 1 left.
    first = create_raycluster(
        kube, namespace, raycluster("first", small_queue, workers=2, cpu="1", memory="1Gi")
    )
    workload_of(
        kube, kueue, first, lambda w: cond_status(w, "Admitted") == "True", "first admitted"
    )

    second = create_raycluster(
        kube, namespace, raycluster("second", small_queue, workers=2, cpu="1", memory="1Gi")
    )
    pending = workload_of(
        kube,
        kueue,
        second,
        lambda w: (
            cond_status(w, "QuotaReserved") == "False"
            and bool((condition(w, "QuotaReserved") or {}).get("message"))
        ),
        "second waiting for quota",
    )
    reserved = condition(pending, "QuotaReserved")
    assert reserved["reason"]  # Kueue's own reason, e.g. Pending / WaitingForQuota
    assert "cpu" in reserved["message"]

    version = kueue.api_version
    raw = client.ApiClient.call_api(
        kube,
        f"/apis/visibility.kueue.x-k8s.io/{version}/namespaces/{namespace}/localqueues/"
        f"{small_queue}/pendingworkloads",
        "GET",
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    items = json.loads(raw.data)["items"]
    assert [i["metadata"]["name"] for i in items] == [pending["metadata"]["name"]]
    assert items[0]["positionInLocalQueue"] == 0
    assert items[0]["positionInClusterQueue"] == 0

    client.CustomObjectsApi(kube).delete_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "first"
    )
    admitted = workload_of(
        kube, kueue, second, lambda w: cond_status(w, "Admitted") == "True", "second admitted"
    )
    assert cond_status(admitted, "QuotaReserved") == "True"


def test_service_account_token_gets_real_403(workbench, namespace, kueue_api_version):
    identity = workbench(
        rules=[
            {
                "apiGroups": ["kueue.x-k8s.io"],
                "resources": ["localqueues"],
                "verbs": ["get", "list", "watch"],
            }
        ]
    )
    custom = client.CustomObjectsApi(identity.api_client())

    # Allowed by the Role: answers (an empty list), proving the token authenticates.
    listed = custom.list_namespaced_custom_object(
        "kueue.x-k8s.io", kueue_api_version, namespace, "localqueues"
    )
    assert listed["items"] == []

    with pytest.raises(client.ApiException) as denied:
        custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")
    assert denied.value.status == 403
    body = json.loads(denied.value.body)
    assert body["reason"] == "Forbidden"
    assert identity.username in body["message"]
    assert 'cannot list resource "rayclusters"' in body["message"]
