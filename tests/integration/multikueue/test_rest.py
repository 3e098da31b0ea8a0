"""A workbench in the manager cluster, through the REST API and the events socket: a RayCluster
and a RayJob it creates in a queue that dispatches through MultiKueue run on the worker, and
every answer says so (the worker's name, the state copied back, no pods here, no dashboard
link, usage measured there); the fit says what it checks; one that waits for the full worker
says where it was offered; deleting on the manager removes it on the worker; a workbench
that may not read MultiKueue's objects still sees where its workloads went."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client, watch

from tests.cluster.fixtures import watch_until
from tests.cluster.multikueue import ADMISSION_CHECK, MirroredQueue
from tests.integration.clusters_support import (
    call,
    open_events,
    rayclusters,
    small_cluster,
    state_is,
    wait_gone,
)
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, KUEUE, namespace_rules

from .conftest import WORKER

pytestmark = [pytest.mark.cluster, pytest.mark.multikueue]

MULTIKUEUE_READ_RULES = [
    {
        "apiGroups": [KUEUE],
        "resources": ["admissionchecks", "multikueueconfigs", "multikueueclusters"],
        "verbs": ["list", "watch"],
    }
]
WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES + MULTIKUEUE_READ_RULES


def on_worker(state: dict[str, Any] | None) -> bool:
    placement = (state or {}).get("placement") or {}
    return placement.get("worker_cluster") == WORKER


async def ready_on_worker(jp_fetch, jp_ws_fetch, request: dict[str, Any]) -> dict[str, Any]:
    """Create cluster ``request`` through the REST API; its state once it is ready on the
    worker, as the events socket tells it."""
    name = request["name"]
    events, _ = await open_events(jp_ws_fetch)
    try:
        assert (await call(jp_fetch, "POST", "clusters", body=request))[0] == 201
        ready = await events.cluster_state(
            name, lambda s: state_is("ready")(s) and on_worker(s), f"{name} ready on worker-1"
        )
    finally:
        events.close()
    assert ready is not None
    return ready


def worker_has(worker_kube: client.ApiClient, namespace: str, plural: str, name: str) -> bool:
    """Whether the worker holds ``plural`` ``name`` (watched until it does)."""
    custom = client.CustomObjectsApi(worker_kube)
    found = watch_until(
        lambda **kw: custom.list_namespaced_custom_object("ray.io", "v1", namespace, plural, **kw),
        lambda obj: obj["metadata"]["name"] == name,
        what=f"{plural}/{name} on the worker",
    )
    return found is not None


async def test_a_cluster_runs_on_the_worker_and_every_answer_says_so(
    kube,
    worker_kube,
    mk_queue: MirroredQueue,
    identity,
    jp_fetch,
    jp_ws_fetch,
    enter_dashboard,
):
    namespace = mk_queue.namespace
    request = small_cluster("far", workers=1, queue="team")
    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=request)
    assert code == 200, fit
    assert fit["verdict"] == "fits-now", fit
    assert fit["multikueue"] == {"check": ADMISSION_CHECK, "config": "workers", "workers": [WORKER]}
    assert "MultiKueue decides which one runs it" in fit["message"]
    assert "waits for capacity" not in fit["message"]

    code, queues = await call(jp_fetch, "GET", "queues")
    (team,) = [q for q in queues["queues"] if q["name"] == "team"]
    assert team["multikueue"]["workers"] == [WORKER]

    ready = await ready_on_worker(jp_fetch, jp_ws_fetch, request)
    assert (ready["head_ready"], ready["workers_ready"], ready["workers_desired"]) == (True, 1, 1)
    assert worker_has(worker_kube, namespace, "rayclusters", "far")

    code, listing = await call(jp_fetch, "GET", "clusters")
    (far,) = [c for c in listing["clusters"] if c["name"] == "far"]
    assert far["placement"]["worker_cluster"] == WORKER
    assert (
        far["placement"]["sentence"]
        == f"runs on worker cluster {WORKER} (sent there by MultiKueue)"
    )
    assert far["pods"] == [] and client.CoreV1Api(kube).list_namespaced_pod(namespace).items == []
    assert far["dashboard_url"] is None
    assert far["dashboard_note"].startswith(f"runs on worker cluster {WORKER}: its Ray dashboard")
    assert (
        far["usage"]["reason"]
        == f"runs on worker cluster {WORKER}: its pods' use is measured there"
    )

    code, workloads = await call(jp_fetch, "GET", "workloads")
    (mine,) = [w for w in workloads["workloads"] if w["name"] == far["workload"]]
    assert mine["placement"]["worker_cluster"] == WORKER
    assert mine["placement"]["check"] == ADMISSION_CHECK

    code, jobs = await call(jp_fetch, "GET", "clusters", "far", "jobs")
    assert (code, jobs["code"]) == (409, "runs_on_worker_cluster"), jobs
    assert WORKER in jobs["error"]
    # A proxy URL typed by hand: refused with the same words, nothing proxied anywhere.
    entry = await enter_dashboard("far")
    assert entry.code == 409, (entry.code, entry.body)
    assert json.loads(entry.body)["code"] == "runs_on_worker_cluster"

    code, deleted = await call(jp_fetch, "DELETE", "clusters", "far")
    assert code == 200, deleted
    assert wait_gone(worker_kube, namespace, "far"), "still on the worker"
    assert rayclusters(kube, namespace) == [] or wait_gone(kube, namespace, "far")


async def test_one_waits_for_the_full_worker_with_where_it_was_offered(
    worker_kube, mk_queue: MirroredQueue, identity, jp_fetch, jp_ws_fetch
):
    events, _ = await open_events(jp_ws_fetch)
    try:
        # The worker's 4 CPUs: 3 for the first (head + 2 workers), 2 for the second.
        first = small_cluster("first", workers=2, queue="team")
        assert (await call(jp_fetch, "POST", "clusters", body=first))[0] == 201
        await events.cluster_state("first", on_worker, "first on worker-1")
        second = small_cluster("second", workers=1, queue="team")
        assert (await call(jp_fetch, "POST", "clusters", body=second))[0] == 201
        waiting = await events.cluster_state(
            "second",
            lambda s: (
                state_is("waiting-for-capacity")(s)
                and (s or {}).get("placement", {}).get("nominated_clusters") == [WORKER]
            ),
            "second offered to worker-1",
        )
    finally:
        events.close()
    assert waiting is not None and waiting["quota_reserved"] and not waiting["admitted"]
    assert waiting["placement"]["worker_cluster"] is None
    assert waiting["placement"]["check_state"] == "Pending"
    assert waiting["message"].startswith(
        f"admission check {ADMISSION_CHECK} is Pending: MultiKueue offered it to worker cluster "
        f"{WORKER} and waits for one to admit it"
    )
    code, deleted = await call(jp_fetch, "DELETE", "clusters", "first")
    assert code == 200, deleted


async def test_a_rayjob_runs_on_the_worker(
    worker_kube, mk_queue: MirroredQueue, identity, jp_fetch, jp_ws_fetch
):
    cluster = {"workers": 1, "head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1"}
    cluster["worker_memory"] = "1Gi"
    request = {
        "name": "far-job",
        "entrypoint": "python -c 'print(1)'",
        "cluster": cluster,
        "queue": "team",
    }
    events, _ = await open_events(jp_ws_fetch)
    try:
        assert (await call(jp_fetch, "POST", "rayjobs", body=request))[0] == 201
        message = await events.until(
            lambda m: (
                m["type"] == "rayjob"
                and m["name"] == "far-job"
                and ((m.get("rayjob") or {}).get("placement") or {}).get("worker_cluster") == WORKER
            ),
            "the RayJob on worker-1",
        )
        # KubeRay's status on the worker, copied back: the job's deployment moves on there.
        mirrored = await events.since(
            0,
            lambda m: (
                m["type"] == "rayjob"
                and m["name"] == "far-job"
                and (m.get("rayjob") or {}).get("deployment_status") is not None
                and m["rayjob"]["state"] not in ("queued", "waiting-for-capacity")
            ),
            "the worker's RayJob status copied back, past Kueue's admission",
        )
    finally:
        events.close()
    assert message["rayjob"]["placement"]["check"] == ADMISSION_CHECK
    assert mirrored["rayjob"]["placement"]["worker_cluster"] == WORKER
    assert worker_has(worker_kube, mk_queue.namespace, "rayjobs", "far-job")
    code, listing = await call(jp_fetch, "GET", "rayjobs")
    (job,) = [j for j in listing["rayjobs"] if j["name"] == "far-job"]
    assert job["placement"]["worker_cluster"] == WORKER
    code, deleted = await call(jp_fetch, "DELETE", "rayjobs", "far-job")
    assert code == 200, deleted
    assert wait_gone_kind(worker_kube, mk_queue.namespace, "rayjobs", "far-job")


def wait_gone_kind(kube: client.ApiClient, namespace: str, plural: str, name: str) -> bool:
    """Whether ``plural`` ``name`` is gone (watched until it is)."""
    custom = client.CustomObjectsApi(kube)
    listing = custom.list_namespaced_custom_object("ray.io", "v1", namespace, plural)
    if name not in {o["metadata"]["name"] for o in listing["items"]}:
        return True
    for event in watch.Watch().stream(
        custom.list_namespaced_custom_object, "ray.io", "v1", namespace, plural,
        resource_version=listing["metadata"]["resourceVersion"], timeout_seconds=90,
    ):  # fmt: skip
        if event["type"] == "DELETED" and event["raw_object"]["metadata"]["name"] == name:
            return True
    return False


@pytest.mark.parametrize("cluster_rules", [CLUSTER_READ_RULES], indirect=True)
async def test_without_multikueue_objects_the_workload_still_says_where(
    mk_queue: MirroredQueue, identity, jp_fetch, jp_ws_fetch
):
    events, _ = await open_events(jp_ws_fetch)
    try:
        request = small_cluster("blind", workers=1, queue="team")
        assert (await call(jp_fetch, "POST", "clusters", body=request))[0] == 201
        ready = await events.cluster_state("blind", on_worker, "blind on worker-1")
    finally:
        events.close()
    assert ready is not None and ready["placement"]["check"] == ADMISSION_CHECK
    code, queues = await call(jp_fetch, "GET", "queues")
    assert code == 200, queues
    (team,) = [q for q in queues["queues"] if q["name"] == "team"]
    # The AdmissionChecks are not readable: the queue's Workloads tell which check placed
    # them, not which workers the check may use.
    assert team["multikueue"] == {"check": ADMISSION_CHECK, "config": None, "workers": None}
    code, fit = await call(
        jp_fetch, "POST", "clusters", "fit", body=small_cluster("x", workers=1, queue="team")
    )
    assert code == 200, fit
    assert fit["multikueue"] is None and fit["admission_checks"] == [ADMISSION_CHECK]
    await call(jp_fetch, "DELETE", "clusters", "blind")


async def test_an_autoscaling_cluster_in_kueues_words(
    mk_queue: MirroredQueue, identity, jp_fetch, jp_ws_fetch, kueue_api_version
):
    """Kueue 0.19 refuses Ray's autoscaler on a cluster MultiKueue would dispatch (its words
    reach the user, nothing is created); 0.14 dispatches it like any other."""
    request = small_cluster("elastic", workers=1, queue="team", min_workers=1, max_workers=3)
    events, _ = await open_events(jp_ws_fetch)
    try:
        code, answer = await call(jp_fetch, "POST", "clusters", body=request)
        if kueue_api_version == "v1beta2":
            assert (code, answer["code"]) == (400, "rejected"), answer
            assert "not supported for a MultiKueue-managed elastic RayCluster" in answer["reason"]
            return
        assert code == 201, answer
        placed = await events.cluster_state("elastic", on_worker, "elastic on worker-1")
    finally:
        events.close()
    assert placed is not None and placed["elastic"] is True
