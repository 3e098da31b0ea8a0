"""Proof that the local control plane is real: Kueue admits, KubeRay scales out, KWOK runs pods,
the visibility API answers, metrics-server reports the pods' usage, RBAC denies what a Role
does not allow, and every component listens on 127.0.0.1 only."""

from __future__ import annotations

import ipaddress
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from jupyter_dw.domain.quantity import parse_quantity
from tests.cluster.controlplane import ClusterState
from tests.cluster.fixtures import KueueObjects, condition, watch_until
from tests.cluster.kubeapi import wait_for
from tests.cluster.manifests import USAGE_CPU_ANNOTATION, USAGE_MEMORY_ANNOTATION
from tests.integration.workbench_rbac import METRICS_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

RAY_IMAGE = "rayproject/ray:2.9.0"  # never pulled: KWOK runs the pods


def raycluster(
    name: str,
    queue: str,
    *,
    workers: int,
    cpu: str,
    memory: str,
    pod_annotations: dict[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A minimal RayCluster for Kueue: one head, one worker group, requests == limits;
    ``pod_annotations`` by role (``head``, ``worker``) on the pod templates."""

    def container(role: str) -> dict[str, Any]:
        resources = {"cpu": cpu, "memory": memory}
        return {
            "name": f"ray-{role}",
            "image": RAY_IMAGE,
            "resources": {"requests": resources, "limits": resources},
        }

    def template(role: str) -> dict[str, Any]:
        annotations = (pod_annotations or {}).get(role)
        return {
            **({"metadata": {"annotations": annotations}} if annotations else {}),
            "spec": {"containers": [container(role)]},
        }

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": template("head"),
            },
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": workers,
                    "maxReplicas": workers,
                    "rayStartParams": {},
                    "template": template("worker"),
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


METRICS_WAIT = 90.0
"""Bound on metrics-server's answers: a pod's first PodMetrics need two scrapes (10 s apart)."""
CPU_TOLERANCE = Decimal("0.05")
"""metrics-server's CPU is a rate over its scrape window, KWOK's counter grows by its own clock:
the two windows differ by the scrapes' jitter."""


def usage(cpu: str, memory: str) -> dict[str, str]:
    """KWOK's annotations that make each container of a pod use ``cpu`` and ``memory``."""
    return {USAGE_CPU_ANNOTATION: cpu, USAGE_MEMORY_ANNOTATION: memory}


def pod_usage(pod_metrics: dict[str, Any]) -> tuple[Decimal, Decimal]:
    """A PodMetrics' CPU (cores) and memory (bytes), summed over its containers."""
    containers = [c["usage"] for c in pod_metrics["containers"]]
    return (
        sum((parse_quantity(u["cpu"]) for u in containers), Decimal(0)),
        sum((parse_quantity(u["memory"]) for u in containers), Decimal(0)),
    )


def reports(pod_metrics: dict[str, Any], cpu: str, memory: str) -> bool:
    used_cpu, used_memory = pod_usage(pod_metrics)
    wanted_cpu = parse_quantity(cpu)
    return abs(
        used_cpu - wanted_cpu
    ) <= wanted_cpu * CPU_TOLERANCE and used_memory == parse_quantity(memory)


def test_pod_usage_is_served_by_the_metrics_api(kube, namespace, small_queue, workbench):
    created = create_raycluster(
        kube,
        namespace,
        raycluster(
            "used",
            small_queue,
            workers=1,
            cpu="1",
            memory="1Gi",
            pod_annotations={"head": usage("250m", "300Mi"), "worker": usage("750m", "512Mi")},
        ),
    )
    custom = client.CustomObjectsApi(kube)
    watch_until(
        lambda **kw: custom.list_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", **kw
        ),
        lambda rc: (
            rc.get("status", {}).get("readyWorkerReplicas") == 1
            and cond_status(rc, "HeadPodReady") == "True"
        ),
        field_selector=f"metadata.name={created['metadata']['name']}",
        what="RayCluster with its head and worker ready",
    )
    core = client.CoreV1Api(kube)
    by_role = {
        p.metadata.labels["ray.io/node-type"]: p.metadata.name
        for p in core.list_namespaced_pod(namespace, label_selector="ray.io/cluster=used").items
    }
    assert set(by_role) == {"head", "worker"}

    # What the product reads: the cluster's PodMetrics, as a workbench granted the metrics rule.
    reader = client.CustomObjectsApi(
        workbench(rules=METRICS_READ_RULES, name="metrics").api_client()
    )

    def metrics_of_cluster() -> dict[str, dict[str, Any]]:
        listed = reader.list_namespaced_custom_object(
            "metrics.k8s.io", "v1beta1", namespace, "pods", label_selector="ray.io/cluster=used"
        )
        return {item["metadata"]["name"]: item for item in listed["items"]}

    def reported(cpu_memory: dict[str, tuple[str, str]]) -> dict[str, dict[str, Any]] | None:
        found = metrics_of_cluster()
        ok = all(
            name in found and reports(found[name], *cpu_memory[role])
            for role, name in by_role.items()
        )
        return found if ok else None

    first = wait_for(
        lambda: reported({"head": ("250m", "300Mi"), "worker": ("750m", "512Mi")}),
        timeout=METRICS_WAIT,
        what="PodMetrics with the annotated usage",
        interval=1.0,
    )
    assert set(first) == set(by_role.values())
    assert all(m["window"] for m in first.values())

    # A new usage is what the next scrape reports (KWOK reads the annotation at each scrape).
    core.patch_namespaced_pod(
        by_role["worker"],
        namespace,
        {"metadata": {"annotations": usage("1500m", "2Gi")}},
    )
    changed = wait_for(
        lambda: reported({"head": ("250m", "300Mi"), "worker": ("1500m", "2Gi")}),
        timeout=METRICS_WAIT,
        what="PodMetrics with the changed usage",
        interval=1.0,
    )
    total_cpu = sum((pod_usage(m)[0] for m in changed.values()), Decimal(0))
    assert abs(total_cpu - Decimal("1.75")) <= Decimal("1.75") * CPU_TOLERANCE

    # The workbench's usual namespace rules do not include metrics.k8s.io.
    plain = client.CustomObjectsApi(workbench(rules=namespace_rules(), name="plain").api_client())
    with pytest.raises(client.ApiException) as denied:
        plain.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", namespace, "pods")
    assert denied.value.status == 403
    message = json.loads(denied.value.body)["message"]
    assert 'cannot list resource "pods" in API group "metrics.k8s.io"' in message


def _process_group(leader: int) -> list[int]:
    """Every live process in ``leader``'s process group (each component is started as the
    leader of a session of its own)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pgrp is the 3rd field after the parenthesised command (which may hold spaces)
            if int(stat.rsplit(")", 1)[1].split()[2]) == leader:
                members.append(int(entry.name))
    return members


def _socket_owners(pids: dict[str, int]) -> dict[str, str]:
    """Socket inode → the component whose process group holds it."""
    owners = {}
    for name, pid in pids.items():
        for member in _process_group(pid):
            try:
                fds = list(Path(f"/proc/{member}/fd").iterdir())
            except OSError:
                continue
            for fd in fds:
                try:
                    target = os.readlink(fd)
                except OSError:
                    continue
                if target.startswith("socket:["):
                    owners[target[len("socket:[") : -1]] = name
    return owners


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """/proc/net/tcp{,6}'s local address: 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw[::-1])
    return ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))


def test_every_component_listens_on_loopback_only(cluster: ClusterState) -> None:
    """Nothing of the test bed can be reached from another machine: each socket a component
    listens on is bound to a loopback address (Kueue 0.14's visibility server would be on
    0.0.0.0:8082 but for build.sh's one line)."""
    owners = _socket_owners(cluster.pids)
    listening: list[tuple[str, str, int]] = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in owners:  # 0A: TCP_LISTEN
                host, port = local.split(":")
                listening.append((owners[inode], str(_address(host)), int(port, 16)))

    def loopback(host: str) -> bool:
        address = ipaddress.ip_address(host)
        mapped = getattr(address, "ipv4_mapped", None)
        return address.is_loopback or (mapped is not None and mapped.is_loopback)

    # The scan finds what it must: the API server's port, and a listener of each controller.
    assert ("kube-apiserver", "127.0.0.1", cluster.ports["apiserver"]) in listening
    assert {"kueue", "kuberay-operator"} <= {name for name, _, _ in listening}
    assert [entry for entry in listening if not loopback(entry[1])] == []
