"""The watch caches keep only what jupyter_dw reads (jupyter_dw/k8s/projection.py): every
reader of cached pods, Workloads and RayClusters gives the same answer on the projected object
as on the full one the API server sends, and the projection changes nothing it is given."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_dw.core.clusters import _pod_info
from jupyter_dw.domain.cluster_state import (
    cluster_snapshot,
    live_worker_pods,
)
from jupyter_dw.domain.kueue_state import admission_checks, kueue_state
from jupyter_dw.domain.milestones import milestones
from jupyter_dw.domain.pod_problems import first_problem, pod_problem
from jupyter_dw.domain.usage import cluster_pods, cluster_usage
from jupyter_dw.domain.workloads import (
    held_per_flavor,
    owner_of,
    pod_requests,
    pod_sets,
    priority_of,
    requested,
    workload_info,
)
from jupyter_dw.k8s.projection import slim, slim_pod
from jupyter_dw.k8s.watch_cache import WatchCache
from tests.unit.test_cluster_state import (
    ADMITTED,
    CREATED,
    RESERVED,
    admitted_workload,
    cond,
    kuberay_status,
    raycluster,
    running,
)

DATA = Path(__file__).parent / "data" / "kueue_0.19.2_job_workloads.json"
MANAGED = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": CREATED,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:ray.io/cluster": {}}}},
    }
]


def pod(name: str, role: str, *, ready: bool, waiting: str | None = None, **extra: Any) -> dict:
    """A Ray pod as KubeRay makes it and the kubelet reports it (spec, managedFields)."""
    container_state: dict[str, Any] = (
        {"waiting": {"reason": waiting, "message": f"{waiting} for rayproject/ray"}}
        if waiting
        else {"running": {"startedAt": CREATED}}
    )
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": "42",
            "labels": {"ray.io/cluster": "demo", "ray.io/node-type": role, "ray.io/group": role},
            "managedFields": copy.deepcopy(MANAGED),
            **extra,
        },
        "spec": {
            "nodeName": "kwok-node-0",
            "containers": [
                {
                    "name": "ray",
                    "image": "rayproject/ray:2.60.0",
                    "env": [{"name": "RAY_PORT", "value": "6379"}],
                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                    "readinessProbe": {"exec": {"command": ["true"]}},
                }
            ],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
        },
        "status": {
            "phase": "Running" if ready else "Pending",
            "conditions": [
                cond("PodScheduled", "True", "", at=CREATED),
                cond("Ready", "True" if ready else "False", "", at="2026-08-01T10:00:09Z"),
            ],
            "containerStatuses": [{"name": "ray", "ready": ready, "state": container_state}],
        },
    }
    return obj


def unschedulable(name: str) -> dict:
    obj = pod(name, "worker", ready=False)
    obj["status"]["conditions"] = [
        cond("PodScheduled", "False", "Unschedulable", "0/3 nodes are available")
    ]
    return obj


POD_SETS = {
    "all ready": [
        pod("demo-head", "head", ready=True),
        pod("demo-w-1", "worker", ready=True),
        pod("demo-w-2", "worker", ready=True),
    ],
    "pulling and unschedulable": [
        pod("demo-head", "head", ready=True),
        pod("demo-w-1", "worker", ready=False, waiting="ImagePullBackOff"),
        unschedulable("demo-w-2"),
    ],
    "a worker being deleted": [
        pod("demo-head", "head", ready=True),
        pod("demo-w-1", "worker", ready=True, deletionTimestamp="2026-08-01T10:01:00Z"),
        pod("demo-w-2", "worker", ready=False, waiting="CrashLoopBackOff"),
    ],
}


def with_managed_fields(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj.setdefault("metadata", {})["managedFields"] = copy.deepcopy(MANAGED)
    return obj


@pytest.mark.parametrize("case", sorted(POD_SETS))
def test_pod_readers_answer_the_same_on_projected_pods(case: str) -> None:
    full = POD_SETS[case]
    projected = [slim_pod(p) for p in full]
    assert all("managedFields" not in p["metadata"] for p in projected)
    # Of the spec only the node, gates and requests are kept (usage and scaling read them).
    assert all(
        set(p.get("spec", {}))
        <= {"nodeName", "schedulingGates", "overhead", "containers", "initContainers"}
        for p in projected
    )
    rc = running(raycluster(**kuberay_status("ready", ready_workers=1)))
    wl = admitted_workload()
    for rc_seen in (rc, slim(with_managed_fields(rc))):
        status = cluster_snapshot(rc, wl, pods=full)
        assert cluster_snapshot(rc_seen, slim(wl), pods=projected) == status
        assert milestones(status, rc_seen, slim(wl), projected) == milestones(status, rc, wl, full)
    assert first_problem(projected) == first_problem(full)
    assert [pod_problem(p) for p in projected] == [pod_problem(p) for p in full]
    assert live_worker_pods(projected) == [slim_pod(p) for p in live_worker_pods(full)]
    assert [_pod_info(p) for p in projected] == [_pod_info(p) for p in full]
    # What the cluster's pods hold (usage): the cache once dropped the spec, so it was empty.
    held = cluster_usage(cluster_pods(full, "demo"), None).to_json()["resources"]
    assert (
        held and cluster_usage(cluster_pods(projected, "demo"), None).to_json()["resources"] == held
    )
    assert [pod_requests(p["spec"]) for p in projected] == [pod_requests(p["spec"]) for p in full]


def test_the_cases_cover_what_the_readers_tell_apart() -> None:
    """The comparisons above are not vacuous: the cases differ in what is read."""
    problems = {case: first_problem(pods) for case, pods in POD_SETS.items()}
    assert problems["all ready"] is None
    assert problems["pulling and unschedulable"] is not None
    assert problems["a worker being deleted"] is not None
    assert len(live_worker_pods(POD_SETS["a worker being deleted"])) == 1


WORKLOADS = {
    name: obj for name, obj in json.loads(DATA.read_text()).items() if obj.get("kind") == "Workload"
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_readers_answer_the_same_on_projected_workloads(name: str) -> None:
    full = with_managed_fields(WORKLOADS[name])
    projected = slim(full)
    assert "managedFields" not in projected["metadata"]
    assert {k: v for k, v in full["metadata"].items() if k != "managedFields"} == projected[
        "metadata"
    ]
    for reader in (
        workload_info,
        held_per_flavor,
        requested,
        pod_sets,
        priority_of,
        owner_of,
        kueue_state,
        admission_checks,
    ):
        assert reader(projected) == reader(full), reader.__name__


def test_a_workload_with_conditions_and_admission_reads_the_same() -> None:
    full = with_managed_fields(admitted_workload())
    full["status"]["conditions"] = [RESERVED, ADMITTED]
    assert kueue_state(slim(full)) == kueue_state(full)
    assert slim(full)["status"] == full["status"]


def test_the_projection_changes_nothing_it_is_given() -> None:
    full = POD_SETS["all ready"][0]
    before = copy.deepcopy(full)
    slim_pod(full)
    slim(full)
    assert full == before


class _Listing:
    """A list+watch with one object listed and one watch event, for the cache below."""

    description = "pods"

    def __init__(self) -> None:
        self.events = [{"type": "ADDED", "object": pod("demo-w-9", "worker", ready=False)}]

    def list(self, project: Any = None) -> tuple[list[dict], str]:
        assert project is slim_pod  # the cache asks for the projection page by page
        return [project(pod("demo-head", "head", ready=True))], "1"

    def watch(self, resource_version: str) -> Any:
        events = self.events
        self.events = []

        class Stream:
            lasts = None

            def __iter__(self) -> Any:
                return iter(events)

            def close(self) -> None:
                pass

        return Stream()


def test_a_cache_keeps_the_projection_of_what_it_lists_and_watches() -> None:
    cache = WatchCache(_Listing(), projection=slim_pod)
    cache.start()
    try:
        assert cache.wait_synced(timeout=10)
        assert cache.wait_until(lambda objs: len(objs) == 2, timeout=10)
        for obj in cache.snapshot():
            assert "managedFields" not in obj["metadata"]
            assert set(obj.get("spec", {})) <= {"nodeName", "containers"}
            assert obj["status"]["conditions"]
    finally:
        cache.stop()


@pytest.mark.parametrize("case", sorted(POD_SETS))
def test_usage_reads_the_same_on_projected_pods(case: str) -> None:
    from jupyter_dw.domain.usage import cluster_pods, cluster_usage

    full = POD_SETS[case]
    projected = [slim_pod(p) for p in full]
    assert cluster_usage(cluster_pods(projected, "demo"), {}) == cluster_usage(
        cluster_pods(full, "demo"), {}
    )
    held = cluster_usage(cluster_pods(projected, "demo"), {}).resources
    assert not full or held["cpu"].held > 0
