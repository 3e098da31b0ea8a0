"""Stop and resume of a cluster MultiKueue sent to the worker act on the manager's objects: a
stop deactivates the manager's Workload, MultiKueue carries the eviction to the worker (its
copy evicted, its pods gone there); a resume queues it again and it runs on the worker once
more."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client, watch

from tests.cluster.fixtures import condition, watch_until
from tests.cluster.multikueue import MirroredQueue
from tests.integration.clusters_support import call, open_events, small_cluster, state_is
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

from .test_rest import MULTIKUEUE_READ_RULES, on_worker

pytestmark = [pytest.mark.cluster, pytest.mark.multikueue]

WORKBENCH_RULES = namespace_rules(stop=True)
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES + MULTIKUEUE_READ_RULES


def evicted(workload: dict[str, Any]) -> bool:
    return (condition(workload, "Evicted") or {}).get("status") == "True"


def no_pods_left(kube: client.ApiClient, namespace: str, name: str) -> bool:
    """Whether RayCluster ``name``'s pods are gone (watched until they are)."""
    core = client.CoreV1Api(kube)
    selector = f"ray.io/cluster={name}"
    listing = core.list_namespaced_pod(namespace, label_selector=selector)
    left = {p.metadata.name for p in listing.items}
    if not left:
        return True
    for event in watch.Watch().stream(
        core.list_namespaced_pod, namespace, label_selector=selector,
        resource_version=listing.metadata.resource_version, timeout_seconds=90,
    ):  # fmt: skip
        if event["type"] == "DELETED":
            left.discard(event["object"].metadata.name)
            if not left:
                return True
    return False


async def test_stop_and_resume_reach_the_worker(
    worker_kube, mk_queue: MirroredQueue, identity, jp_fetch, jp_ws_fetch, kueue_api_version
):
    namespace = mk_queue.namespace
    custom = client.CustomObjectsApi(worker_kube)
    events, _ = await open_events(jp_ws_fetch)
    try:
        request = small_cluster("pausable", workers=1, queue="team")
        assert (await call(jp_fetch, "POST", "clusters", body=request))[0] == 201
        await events.cluster_state(
            "pausable", lambda s: state_is("ready")(s) and on_worker(s), "ready on worker-1"
        )
        code, answer = await call(jp_fetch, "POST", "clusters", "pausable", "stop", body={})
        assert code == 200, answer
        stopped = await events.cluster_state("pausable", state_is("stopped"), "stopped")
        assert stopped is not None and stopped["stopped"]["reason"] == {"by": "person"}

        copy = watch_until(
            lambda **kw: custom.list_namespaced_custom_object(
                "kueue.x-k8s.io", kueue_api_version, namespace, "workloads", **kw
            ),
            evicted,
            what="the worker's copy evicted",
        )
        assert condition(copy, "Evicted")["reason"] == "Deactivated"
        assert no_pods_left(worker_kube, namespace, "pausable")

        code, answer = await call(jp_fetch, "POST", "clusters", "pausable", "resume", body={})
        assert code == 200, answer
        again = await events.cluster_state(
            "pausable",
            lambda s: state_is("ready")(s) and on_worker(s) and not (s or {}).get("stopped"),
            "ready on worker-1 again",
        )
    finally:
        events.close()
    assert again is not None and again["workers_ready"] == 1
