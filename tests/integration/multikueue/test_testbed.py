"""The MultiKueue bed itself, with the administrator's client and no workbench: a RayCluster
created on the manager in a LocalQueue whose ClusterQueue carries the MultiKueue check is
dispatched to the worker (its pods run there on KWOK, none on the manager) and its status is
copied back; with the worker's quota full the next one waits, nominated to the worker;
deleting on the manager removes it on the worker."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.cluster.fixtures import condition, watch_until
from tests.cluster.multikueue import ADMISSION_CHECK, MULTIKUEUE_CONTROLLER, MirroredQueue
from tests.integration.clusters_support import KUEUE, wait_gone

from .conftest import WORKER

pytestmark = [pytest.mark.cluster, pytest.mark.multikueue]


def raycluster(name: str, queue: str, cpu: str = "1") -> dict[str, Any]:
    """A RayCluster of a head and one worker asking ``cpu`` each, in LocalQueue ``queue``."""

    def template(container: str) -> dict[str, Any]:
        resources = {"requests": {"cpu": cpu, "memory": "1Gi"}}
        spec = {"name": container, "image": "rayproject/ray:2.60.0", "resources": resources}
        return {"spec": {"containers": [spec]}}

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "labels": {f"{KUEUE}/queue-name": queue}},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": 1,
                    "minReplicas": 1,
                    "maxReplicas": 1,
                    "rayStartParams": {},
                    "template": template("ray-worker"),
                }
            ],
        },
    }


def create(kube: client.ApiClient, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    return client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", body
    )


def workload_where(
    kube: client.ApiClient, api_version: str, namespace: str, predicate: Any, what: str
) -> dict[str, Any]:
    """The first Workload of ``namespace`` satisfying ``predicate``."""
    custom = client.CustomObjectsApi(kube)
    return watch_until(
        lambda **kw: custom.list_namespaced_custom_object(
            KUEUE, api_version, namespace, "workloads", **kw
        ),
        predicate,
        what=what,
    )


def cluster_workload(
    kube: client.ApiClient, api_version: str, namespace: str, name: str, predicate: Any, what: str
) -> dict[str, Any]:
    """The first Workload owned by RayCluster ``name`` satisfying ``predicate`` (the manager's:
    the copy MultiKueue makes on a worker has no owner until the job is copied too)."""
    return workload_where(
        kube, api_version, namespace,
        lambda wl: any(ref["name"] == name for ref in wl["metadata"].get("ownerReferences", []))
        and predicate(wl),
        what,
    )  # fmt: skip


def check_state(workload: dict[str, Any]) -> dict[str, Any]:
    (state,) = [
        s for s in workload["status"].get("admissionChecks", []) if s["name"] == ADMISSION_CHECK
    ]
    return state


def test_a_raycluster_runs_on_the_worker_and_its_status_comes_back(
    kube, worker_kube, kueue_api_version, mk_queue: MirroredQueue
):
    namespace = mk_queue.namespace
    created = create(kube, namespace, raycluster("far", mk_queue.local_queue))
    assert created["spec"].get("managedBy") == MULTIKUEUE_CONTROLLER, created["spec"]

    workload = cluster_workload(
        kube, kueue_api_version, namespace, "far",
        lambda wl: wl.get("status", {}).get("clusterName") == WORKER, "clusterName worker-1",
    )  # fmt: skip
    assert check_state(workload)["state"] == "Ready"
    assert WORKER in check_state(workload)["message"]

    core = client.CoreV1Api(worker_kube)
    running = watch_until(
        core.list_namespaced_pod,
        lambda pod: (
            pod["status"].get("phase") == "Running"
            and pod["metadata"]["labels"].get("ray.io/node-type") == "head"
        ),
        what="the head pod on the worker",
        namespace=namespace,
        label_selector="ray.io/cluster=far",
    )
    assert running["metadata"]["namespace"] == namespace
    mirrored = watch_until(
        client.CustomObjectsApi(kube).list_namespaced_custom_object,
        lambda rc: rc.get("status", {}).get("state") == "ready",
        what="the manager's RayCluster ready (the worker's status copied back)",
        group="ray.io", version="v1", namespace=namespace, plural="rayclusters",
        field_selector="metadata.name=far",
    )  # fmt: skip
    assert mirrored["status"]["readyWorkerReplicas"] == 1
    assert client.CoreV1Api(kube).list_namespaced_pod(namespace).items == []

    client.CustomObjectsApi(kube).delete_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "far"
    )
    assert wait_gone(worker_kube, namespace, "far"), "still on the worker"


def test_with_the_worker_full_the_next_cluster_waits_nominated_to_it(
    kube, worker_kube, kueue_api_version, mk_queue: MirroredQueue
):
    namespace = mk_queue.namespace
    create(kube, namespace, raycluster("first", mk_queue.local_queue, cpu="2"))  # the worker's 4
    cluster_workload(
        kube, kueue_api_version, namespace, "first",
        lambda wl: wl.get("status", {}).get("clusterName") == WORKER, "first admitted on worker-1",
    )  # fmt: skip
    create(kube, namespace, raycluster("second", mk_queue.local_queue, cpu="1"))
    waiting = cluster_workload(
        kube, kueue_api_version, namespace, "second",
        lambda wl: wl.get("status", {}).get("nominatedClusterNames") == [WORKER],
        "second nominated to worker-1",
    )  # fmt: skip
    assert (condition(waiting, "QuotaReserved") or {}).get("status") == "True"
    assert check_state(waiting)["state"] == "Pending"
    assert "clusterName" not in waiting["status"]
    remote = workload_where(
        worker_kube, kueue_api_version, namespace,
        lambda wl: wl["metadata"]["name"] == waiting["metadata"]["name"]
        and (condition(wl, "QuotaReserved") or {}).get("reason") == "Pending",
        "second's copy pending on the worker",
    )  # fmt: skip
    assert "insufficient unused quota for cpu" in condition(remote, "QuotaReserved")["message"]

    client.CustomObjectsApi(kube).delete_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "first"
    )
    admitted = cluster_workload(
        kube, kueue_api_version, namespace, "second",
        lambda wl: wl.get("status", {}).get("clusterName") == WORKER, "second admitted",
    )  # fmt: skip
    assert "nominatedClusterNames" not in admitted["status"]
