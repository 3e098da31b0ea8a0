"""Widget models driven as a user drives them (values typed, Submit and Delete clicked), on the
real control plane. After each action the test only waits: the traits must follow what Kueue
and KubeRay do through the kernel's change feed, on this event loop, with no call in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

import jupyter_dw as dw
from tests.cluster.fixtures import WAIT_TIMEOUT, condition, plain_workload, watch_until
from tests.integration.clusters_support import KUEUE, make_queue, rayclusters
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster


async def until(widget: Any, trait: str, predicate: Callable[[Any], bool], what: str) -> Any:
    """Wait for ``widget.<trait>`` to satisfy ``predicate``: woken by the trait's own change
    notifications (the test calls nothing meanwhile)."""
    changed = asyncio.Event()
    handler = lambda _change: changed.set()  # noqa: E731
    widget.observe(handler, names=trait)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_TIMEOUT
    try:
        while not predicate(getattr(widget, trait)):
            changed.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"{what}: {trait} is still {getattr(widget, trait)!r}")
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except asyncio.TimeoutError:
                raise AssertionError(f"{what}: {trait} is {getattr(widget, trait)!r}") from None
        return getattr(widget, trait)
    finally:
        widget.unobserve(handler, names=trait)


def admitted(workload: dict) -> bool:
    found = condition(workload, "Admitted")
    return found is not None and found["status"] == "True"


def create_workload(kube, kueue, name: str, queue: str, cpu: str) -> str:
    """A Workload with no job behind it, asking ``cpu`` in ``queue``."""
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        KUEUE, kueue.api_version, kueue.namespace, "workloads",
        plain_workload(kueue.api_version, name, queue, cpu),
    )  # fmt: skip
    return name


async def test_builder_judges_as_you_type_submits_and_follows_to_ready_then_delete(
    kernel, kueue, kube, namespace
):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    builder = dw.ClusterBuilder()
    assert builder.queue.value == queue.local_queue  # the default queue is preselected
    assert "free: 4 cpu" in builder.queue.label
    builder.name.value = "built"
    builder.head_memory.value = "1Gi"
    builder.worker_memory.value = "1Gi"
    builder.workers.value = 9  # head 1 + 9 CPU > 4: never
    await until(builder, "verdict", lambda v: v == "never-fits", "a too big cluster")
    assert builder.suggestion is not None and builder.suggestion["workers"] == 3
    assert builder.use_suggestion.layout.display == ""

    builder.worker_memory.value = "lots"
    await until(builder, "errors", lambda e: "worker_memory" in e, "a bad quantity")
    assert builder.verdict == ""
    builder.worker_memory.value = "1Gi"
    await until(builder, "verdict", lambda v: v == "never-fits", "fixed again")

    builder.use_suggestion.click()
    assert builder.workers.value == 3
    assert builder.verdict == "fits-now"

    builder.submit_button.click()
    status = builder.status
    assert isinstance(status, dw.ClusterStatus) and builder.children == (status,)
    await until(status, "state", lambda s: s == "ready", "the submitted cluster")
    # The RayCluster and Workload watches are separate streams: the Workload's admission may
    # reach the cache a moment after the pods' readiness. Wait for the whole timeline.
    await until(
        status, "milestones", lambda ms: "Admitted" in [m["name"] for m in ms], "the timeline"
    )
    assert status.workers_ready == status.workers_desired == 3
    milestones = [m["name"] for m in status.milestones]
    assert (
        milestones[:3] == ["Submitted", "QuotaReserved", "Admitted"] and milestones[-1] == "Ready"
    )

    status._handle_custom_msg({"action": "delete"}, [])  # what the confirmed Delete sends
    await until(status, "deleted", bool, "the deleted cluster")
    assert status.state == "deleted" and status.error is None
    builder.close()
    assert rayclusters(kube, namespace) == [] or all(
        rc["metadata"].get("deletionTimestamp") for rc in rayclusters(kube, namespace)
    )


async def test_status_follows_a_cluster_from_the_queue_to_ready(kernel, kueue, kube):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    blocker = create_workload(kube, kueue, "blocker", queue.local_queue, "3")
    custom = client.CustomObjectsApi(kube)
    watch_until(  # the blocker holds 3 of the 4 CPU before the cluster comes
        custom.list_namespaced_custom_object, admitted, group=KUEUE, version=kueue.api_version,
        namespace=kueue.namespace, plural="workloads", what="the blocker admitted",
    )  # fmt: skip
    small = {"head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1", "worker_memory": "1Gi"}
    await asyncio.to_thread(dw.submit, name="waiting", workers=1, **small)
    status = dw.ClusterStatus("waiting")
    await until(status, "state", lambda s: s == "queued", "queued behind the blocker")
    await until(status, "position_in_local_queue", lambda p: p == 0, "its position")
    await until(status, "message", lambda m: "insufficient unused quota" in (m or ""), "why")
    assert status.reason
    # The head Service and port a port-forward names (status.js spells none of them).
    assert status.dashboard == {"service": "waiting-head-svc", "port": 8265}
    # A kernel watches only what it shows; a position needs the queues' watches too (a
    # LocalQueue's count tells a position read before Kueue had the Workload to ask again).
    assert {"localqueues", "clusterqueues"} <= set(kernel.core.session.watched)

    client.CustomObjectsApi(kube).delete_namespaced_custom_object(
        KUEUE, kueue.api_version, kueue.namespace, "workloads", blocker
    )
    await until(status, "state", lambda s: s == "ready", "admitted once the blocker is gone")
    assert status.position_in_local_queue is None
    status.close()


async def test_queue_board_follows_admissions(kernel, kueue, kube):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    board = dw.QueueBoard()
    assert [q["name"] for q in board.queues] == [queue.local_queue]
    assert board.queues[0]["admitted"] == 0
    create_workload(kube, kueue, "one", queue.local_queue, "1")

    def cpu_headroom(queues: list) -> str:
        return next(r["headroom"] for r in queues[0]["resources"] if r["resource"] == "cpu")

    # Kueue writes the LocalQueue's and the ClusterQueue's status separately: both must show.
    await until(board, "queues", lambda qs: qs[0]["admitted"] == 1, "the admission")
    await until(board, "queues", lambda qs: cpu_headroom(qs) == "3", "the quota it holds")
    board.close()


@pytest.mark.parametrize("rules", [[]], indirect=True)
async def test_a_missing_permission_shows_in_the_widget(kernel, kueue):
    board = dw.QueueBoard()
    assert board.error is not None and board.error["code"] == "forbidden"
    assert "localqueues" in board.error["denied"]
    status = dw.ClusterStatus("anything")
    assert status.error is not None and "rayclusters" in status.error["denied"]
