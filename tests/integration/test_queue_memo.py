"""The queue answers are derived once per change of the caches (issue 19), never served stale:
on the real control plane, every input of ``GET queues`` is changed in turn (a LocalQueue, a
ClusterQueue, a Cohort, a ResourceFlavor, a WorkloadPriorityClass, and a Workload's usage as
Kueue writes it into ClusterQueue status), and each time the answer changes with it, while
between changes every caller gets the very same answer object."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

from jupyter_dw.core.queue_results import QueueList
from jupyter_dw.core.queue_state import queue_state
from jupyter_dw.core.queues import QueueService
from jupyter_dw.k8s.resources import (
    CLUSTER_QUEUE,
    COHORT,
    LOCAL_QUEUE,
    RESOURCE_FLAVOR,
    WORKLOAD_PRIORITY_CLASS,
    ResourceKind,
)
from jupyter_dw.k8s.session import KubeSession
from tests.cluster.controlplane import ClusterState
from tests.cluster.fixtures import WAIT_TIMEOUT, KueueObjects, plain_workload
from tests.integration.clusters_support import reserved_cpu

pytestmark = pytest.mark.cluster

KUEUE = "kueue.x-k8s.io"
Object = dict[str, Any]


@pytest.fixture
def admin_session(cluster: ClusterState, namespace: str) -> Iterator[KubeSession]:
    """An administrator's session on the test namespace (it may read every queue object)."""
    session = KubeSession(
        namespace=namespace,
        environ={"KUBECONFIG": cluster.kubeconfig},
        request_timeout=WAIT_TIMEOUT,
    )
    session.start()
    yield session
    session.stop()


def settled(session: KubeSession, service: QueueService) -> QueueList:
    """The answer once two calls in a row saw no cache change (Kueue writes status a moment
    after each change; a memo must answer the same object for as long as nothing changes)."""
    for _ in range(50):
        before = generations(session)
        first, first_state = service.list(), queue_state(session)
        second, second_state = service.list(), queue_state(session)
        if generations(session) == before:
            assert second is first
            assert second_state is first_state
            return first
    raise AssertionError("the queue caches never stopped changing")


def generations(session: KubeSession) -> tuple[int, ...]:
    kinds = (LOCAL_QUEUE, CLUSTER_QUEUE, COHORT, RESOURCE_FLAVOR, WORKLOAD_PRIORITY_CLASS)
    return tuple(c.generation if (c := session.cache(k)) else -1 for k in kinds)


def reached(session: KubeSession, kind: ResourceKind, seen: Callable[[list[Object]], bool]) -> None:
    """Wait until the session's cache of ``kind`` holds what ``seen`` looks for."""
    cache = session.cache(kind)
    assert cache is not None, f"{kind.plural} not watched"
    assert cache.wait_until(seen, WAIT_TIMEOUT), f"{kind.plural}: change never arrived"


def named(objects: list[Object], name: str) -> Object:
    return next((o for o in objects if o["metadata"]["name"] == name), {})


def annotations(obj: Object) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def cpu_group(flavor: str, nominal: str) -> Object:
    """One ``resourceGroups`` entry: ``nominal`` CPUs of ``flavor``."""
    resources = [{"name": "cpu", "nominalQuota": nominal}]
    return {"coveredResources": ["cpu"], "flavors": [{"name": flavor, "resources": resources}]}


def headroom(answer: QueueList, queue: str) -> Decimal:
    [row] = [r for r in answer[queue].resources if r.resource == "cpu"]
    assert row.headroom is not None
    return row.headroom


def test_every_input_of_the_queues_answer_changes_it(
    admin_session: KubeSession, kueue: KueueObjects
) -> None:
    session = admin_session
    custom = kueue.custom
    version = kueue.api_version
    flavor = kueue.flavor("f")
    cq = kueue.cluster_queue("cq", {flavor: {"cpu": "4"}}, cohort="pool")
    kueue.local_queue("team", cq)
    kueue.wait_active("clusterqueues", cq)
    kueue.wait_active("localqueues", "team")
    service = QueueService(session)
    reached(session, LOCAL_QUEUE, lambda objs: bool(named(objs, "team")))
    answer = settled(session, service)
    assert answer.names() == ["team"]
    assert headroom(answer, "team") == 4

    # A LocalQueue: a second one appears.
    kueue.local_queue("team-2", cq)
    reached(session, LOCAL_QUEUE, lambda objs: bool(named(objs, "team-2")))
    answer = settled(session, service)
    assert answer.names() == ["team", "team-2"]

    # ... and one becomes the default by annotation.
    default = f"{KUEUE}/default-queue"
    patch = {"metadata": {"annotations": {default: "true"}}}
    custom.patch_namespaced_custom_object(
        KUEUE, version, kueue.namespace, "localqueues", "team-2", patch
    )
    reached(session, LOCAL_QUEUE, lambda objs: default in annotations(named(objs, "team-2")))
    answer = settled(session, service)
    assert answer.default is not None and answer.default.name == "team-2"

    # A ClusterQueue: its nominal quota.
    spec = custom.get_cluster_custom_object(KUEUE, version, "clusterqueues", cq)["spec"]
    spec["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "6"
    custom.patch_cluster_custom_object(
        KUEUE, version, "clusterqueues", cq, {"spec": {"resourceGroups": spec["resourceGroups"]}}
    )
    reached(
        session,
        CLUSTER_QUEUE,
        lambda objs: (
            named(objs, cq)["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0][
                "nominalQuota"
            ]
            == "6"
        ),
    )
    answer = settled(session, service)
    assert headroom(answer, "team") == 6

    # A Workload's usage, as Kueue writes it into the ClusterQueue's status.
    custom.create_namespaced_custom_object(
        KUEUE, version, kueue.namespace, "workloads", plain_workload(version, "w", "team", "1")
    )
    reached(session, CLUSTER_QUEUE, lambda objs: reserved_cpu(named(objs, cq)) == 1)
    answer = settled(session, service)
    assert headroom(answer, "team") == 5

    # A Cohort object: its own quota is lent to the ClusterQueues below it.
    cohort_version = session.discovery.cohort_version
    if cohort_version is not None:
        cohort = f"{kueue.prefix}-pool"
        custom.create_cluster_custom_object(
            KUEUE,
            cohort_version,
            "cohorts",
            {
                "apiVersion": f"{KUEUE}/{cohort_version}",
                "kind": "Cohort",
                "metadata": {"name": cohort},
                "spec": {"resourceGroups": [cpu_group(flavor, "3")]},
            },
        )
        try:
            reached(session, COHORT, lambda objs: bool(named(objs, cohort)))
            answer = settled(session, service)
            assert headroom(answer, "team") == 8
        finally:
            custom.delete_cluster_custom_object(KUEUE, cohort_version, "cohorts", cohort)
        reached(session, COHORT, lambda objs: not named(objs, cohort))
        answer = settled(session, service)
        assert headroom(answer, "team") == 5

    # A WorkloadPriorityClass: offered by the answer.
    high = kueue._create_cluster_scoped(
        "workloadpriorityclasses",
        {
            "apiVersion": f"{KUEUE}/{version}",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": f"{kueue.prefix}-high"},
            "value": 1000,
        },
    )
    reached(session, WORKLOAD_PRIORITY_CLASS, lambda objs: bool(named(objs, high)))
    answer = settled(session, service)
    assert answer.priority_classes is not None
    assert high in [c.name for c in answer.priority_classes]

    # A ResourceFlavor: not in GET queues, but in the state a fit is judged from.
    assert queue_state(session).flavors is not None
    before = queue_state(session).flavors[flavor]
    custom.patch_cluster_custom_object(
        KUEUE, version, "resourceflavors", flavor, {"spec": {"nodeLabels": {"pool": "spot"}}}
    )
    reached(session, RESOURCE_FLAVOR, lambda objs: "nodeLabels" in named(objs, flavor)["spec"])
    settled(session, service)
    after = queue_state(session).flavors[flavor]
    assert after != before
    assert dict(after.node_labels) == {"pool": "spot"}
