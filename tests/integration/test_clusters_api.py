"""Ray clusters through Kueue on the real control plane, from a workbench service account:
fit verdicts, submission, admission and scale-out seen on the events socket, waiting with a
position, never-fitting, eviction, validation, name conflicts and missing permissions.

Pods run on KWOK's fake nodes: nothing here connects to a pod or Service address.
"""

from __future__ import annotations

import re

import pytest
from kubernetes import client

from jupyter_dw.domain.cluster_spec import OWNER_ANNOTATION, OWNER_LABEL, owner_label_value
from tests.cluster.fixtures import condition, watch_until
from tests.integration.clusters_support import (
    KUEUE,
    call,
    in_order,
    make_queue,
    open_events,
    rayclusters,
    small_cluster,
    state_is,
    workload_of,
)
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

# A data scientist's workbench that may also read quota.
WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster

RUNNING = ("starting", "ready")


# --------------------------------------------------------------------------------------------
# Fits now: submit, watch it come up, delete
# --------------------------------------------------------------------------------------------


async def test_fits_now_then_admitted_and_scaled_out_in_order(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch, jp_base_url
):
    queue = make_queue(kueue)
    events, snapshot = await open_events(jp_ws_fetch)
    assert snapshot["namespace"] == namespace
    assert snapshot["clusters"] == []
    assert [q["name"] for q in snapshot["queues"]["queues"]] == [queue.local_queue]

    request = small_cluster("fits", workers=2)  # no queue: the namespace default
    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=request)
    assert code == 200, fit
    assert fit["verdict"] == "fits-now", fit
    assert fit["queue"] == queue.local_queue
    assert fit["requests"] == {"cpu": "3", "memory": "3Gi"}
    assert fit["headroom"] == {"cpu": "4", "memory": "8Gi"}
    assert "default-queue" in fit["default_queue"]
    assert "3 CPU" in fit["message"] and "4 CPU" in fit["message"]

    code, created = await call(jp_fetch, "POST", "clusters", body=request)
    assert code == 201, created
    assert created["name"] == "fits"
    assert created["queue"] == queue.local_queue
    assert created["state"] in ("suspended", "queued")
    assert created["owner"] == identity.username
    assert created["dashboard_url"] == f"{jp_base_url}dw/ray/fits/"

    ready = await events.cluster_state("fits", state_is("ready"), "ready")
    assert ready is not None
    milestones = events.milestones("fits")
    # Admission before anything runs, workers one by one, Ready last. Whether the head or a
    # worker is ready first is up to the pods: on KWOK's fake nodes each pod turns ready on
    # its own (KubeRay's wait-for-GCS init container does not hold workers back there).
    assert in_order(milestones, ["QuotaReserved", "Admitted", "HeadReady", "Ready"]), milestones
    workers = ["WorkerReady:1", "WorkerReady:2"]
    assert in_order(milestones, ["QuotaReserved", "Admitted", *workers, "Ready"]), milestones
    for milestone in ["QuotaReserved", "Admitted", "HeadReady", *workers, "Ready"]:
        assert milestones.count(milestone) == 1, milestones

    code, listing = await call(jp_fetch, "GET", "clusters")
    assert code == 200
    assert listing["namespace"] == namespace
    [cluster] = listing["clusters"]
    raycluster = next(rc for rc in rayclusters(kube, namespace) if rc["metadata"]["name"] == "fits")
    workload = workload_of(kube, kueue, raycluster["metadata"]["uid"])
    assert cluster["state"] == "ready"
    assert cluster["workload"] == workload["metadata"]["name"]
    assert cluster["cluster_queue"] == queue.cluster_queue
    assert cluster["flavors"] == [queue.flavor]
    assert cluster["admitted_at"] == condition(workload, "Admitted")["lastTransitionTime"]
    assert (cluster["head_ready"], cluster["workers_ready"], cluster["workers_desired"]) == (
        True,
        2,
        2,
    )
    assert cluster["position_in_local_queue"] is None
    assert cluster["dashboard_url"] == f"{jp_base_url}dw/ray/fits/"
    # The timeline bar's spans are the milestones' own times, the workers folded into one.
    times = {m["name"]: m["time"] for m in cluster["milestones"]}
    spans = {s["step"]: s for s in cluster["timeline"]["spans"]}
    assert list(spans) == ["queue", "head", "workers"]
    assert (spans["queue"]["start"], spans["queue"]["end"]) == (
        times["Submitted"],
        times["QuotaReserved"],
    )
    assert (spans["head"]["start"], spans["head"]["end"]) == (times["Admitted"], times["HeadReady"])
    assert (spans["workers"]["end"], spans["workers"]["detail"]) == (times["Ready"], "2/2 workers")
    assert not any(s["current"] for s in spans.values())
    assert [m["words"] for m in cluster["milestones"]][-1] == "ready"
    # The head's addresses as the server read them: the sidebar spells no Service or port.
    assert cluster["dashboard"] == {"service": "fits-head-svc", "port": 8265}
    assert cluster["ray_address"] == f"ray://fits-head-svc.{namespace}.svc:10001"
    assert sorted(p["role"] for p in cluster["pods"]) == ["head", "worker", "worker"]
    assert all(p["ready"] and p["phase"] == "Running" for p in cluster["pods"])
    assert (await call(jp_fetch, "GET", "clusters", "fits")) == (200, cluster)

    # What was created: suspended until admitted, owned and queued by labels.
    labels = raycluster["metadata"]["labels"]
    assert labels[f"{KUEUE}/queue-name"] == queue.local_queue
    assert labels[OWNER_LABEL] == owner_label_value(identity.username)
    assert raycluster["metadata"]["annotations"][OWNER_ANNOTATION] == identity.username

    mark = len(events.seen)
    code, deleted = await call(jp_fetch, "DELETE", "clusters", "fits")
    assert (code, deleted) == (200, {"name": "fits", "namespace": namespace, "deleted": True})
    await events.cluster_state("fits", lambda state: state is None, "gone")
    # Its Workload and pods go with it (owner references, background propagation), the
    # Workload before or after the RayCluster (Kueue's own cleanup may come first).
    await events.since(
        mark,
        lambda m: (
            m["type"] == "cluster"
            and m["cause"]
            == {"kind": "Workload", "name": workload["metadata"]["name"], "event": "DELETED"}
        ),
        "the Workload deleted",
    )
    code, missing = await call(jp_fetch, "GET", "clusters", "fits")
    assert code == 404 and missing["code"] == "not_found"
    code, again = await call(jp_fetch, "DELETE", "clusters", "fits")
    assert code == 404 and "fits" in again["error"]
    events.close()


# --------------------------------------------------------------------------------------------
# Must wait: queued with Kueue's reason and a position, admitted when the blocker goes
# --------------------------------------------------------------------------------------------


async def test_must_wait_shows_reason_and_position_then_admitted(
    kube, kueue, namespace, jp_fetch, jp_ws_fetch
):
    queue = make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    code, _ = await call(jp_fetch, "POST", "clusters", body=small_cluster("blocker", workers=2))
    assert code == 201
    await events.cluster_state("blocker", state_is("ready"), "the blocker ready")

    waiter = small_cluster("waiter", workers=2, queue=queue.local_queue)
    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=waiter)
    assert code == 200
    assert fit["verdict"] == "must-wait", fit
    assert fit["headroom"]["cpu"] == "1"
    assert fit["ahead"] == 0
    assert "3 CPU" in fit["message"] and "1 CPU" in fit["message"]
    fit_message = fit["message"]

    code, _ = await call(jp_fetch, "POST", "clusters", body=waiter)
    assert code == 201
    queued = await events.cluster_state(
        "waiter",
        lambda s: s is not None and s["state"] == "queued" and s["message"] is not None,
        "queued with Kueue's message",
    )
    assert queued is not None

    code, listing = await call(jp_fetch, "GET", "clusters")
    assert code == 200 and listing["positions_visible"] is True
    clusters = {c["name"]: c for c in listing["clusters"]}
    assert clusters["blocker"]["state"] == "ready"
    waiting = clusters["waiter"]
    raycluster = next(
        rc for rc in rayclusters(kube, namespace) if rc["metadata"]["name"] == "waiter"
    )
    reserved = condition(workload_of(kube, kueue, raycluster["metadata"]["uid"]), "QuotaReserved")
    assert waiting["state"] == "queued"
    assert (waiting["reason"], waiting["message"]) == (reserved["reason"], reserved["message"])
    assert "insufficient unused quota for cpu" in waiting["message"]
    # Kueue and the fit check agree on what is missing (3 CPU asked, 1 free).
    assert "2 more needed" in waiting["message"] and "waits for 2 CPU" in fit_message
    # Kueue's words in one line for a card, its full message kept beside them.
    assert waiting["summary"].startswith(f"needs 2 CPU more in flavor {queue.flavor}")
    assert (waiting["position_in_local_queue"], waiting["position_in_cluster_queue"]) == (0, 0)
    assert waiting["admitted"] is False and waiting["pods"] == []

    # A second fit check now sees one workload ahead.
    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=small_cluster("third"))
    assert fit["verdict"] == "must-wait" and fit["ahead"] == 1, fit

    code, _ = await call(jp_fetch, "DELETE", "clusters", "blocker")
    assert code == 200
    await events.cluster_state("waiter", state_is("ready"), "admitted and ready")
    milestones = events.milestones("waiter")
    assert in_order(milestones, ["Queued", "QuotaReserved", "Admitted", "Ready"]), milestones
    events.close()


# --------------------------------------------------------------------------------------------
# Never fits: the fit check says so with numbers, and Kueue agrees when forced
# --------------------------------------------------------------------------------------------


def _capacities(message: str) -> dict[str, str]:
    """Every ``insufficient quota for R ... > maximum capacity (X)`` Kueue names in its
    QuotaReserved message, as ``{R: X}``. Kueue 0.19 names each resource that is short;
    0.14 stops at the first one."""
    found = re.findall(
        r"insufficient quota for (\S+) in flavor \S+, [^>]*> maximum capacity \(([^)]+)\)",
        message,
    )
    assert found, message
    return dict(found)


async def test_never_fits_is_refused_with_numbers_and_kueue_agrees(
    kube, kueue, namespace, jp_fetch, jp_ws_fetch
):
    queue = make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    request = small_cluster("huge", workers=10)  # 11 CPU, 11Gi: the ClusterQueue has 4 and 8Gi

    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=request)
    assert code == 200
    assert fit["verdict"] == "never-fits", fit
    assert fit["reason"] == "ExceedsMaxQuota"
    assert fit["requests"] == {"cpu": "11", "memory": "11Gi"}
    assert fit["max_obtainable"] == {"cpu": "4", "memory": "8Gi"}
    assert "11 CPU" in fit["message"] and "4 CPU" in fit["message"]

    code, _ = await call(jp_fetch, "POST", "clusters", body=request)  # forced
    assert code == 201
    state = await events.cluster_state(
        "huge",
        lambda s: s is not None and s["state"] == "queued" and bool(s["message"]),
        "Kueue's verdict",
    )
    assert state is not None
    # Kueue's own words: the same ceiling, exceeded; it never reserves quota for it.
    assert "maximum capacity" in state["message"], state
    named = _capacities(state["message"])
    assert named == {r: fit["max_obtainable"][r] for r in named}, (named, fit)
    assert state["quota_reserved"] is False
    assert queue.flavor in state["message"]
    events.close()


async def test_a_resource_the_queue_does_not_cover_never_fits(kueue, jp_fetch, jp_ws_fetch):
    make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    request = small_cluster("gpus", workers=1, worker_gpu=1)

    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=request)
    assert (code, fit["verdict"], fit["reason"]) == (200, "never-fits", "NoMatchingFlavor"), fit
    assert "nvidia.com/gpu" in fit["message"]

    code, _ = await call(jp_fetch, "POST", "clusters", body=request)
    assert code == 201
    state = await events.cluster_state(
        "gpus", lambda s: s is not None and bool(s["message"]), "Kueue's verdict"
    )
    assert state is not None and state["state"] == "queued"
    assert "nvidia.com/gpu" in state["message"] and "unavailable" in state["message"], state
    events.close()


# --------------------------------------------------------------------------------------------
# Evicted: the ClusterQueue is stopped with HoldAndDrain
# --------------------------------------------------------------------------------------------


async def test_evicted_cluster_shows_evicted_with_kueues_reason(
    kube, kueue, namespace, jp_fetch, jp_ws_fetch
):
    queue = make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    code, _ = await call(jp_fetch, "POST", "clusters", body=small_cluster("victim", workers=1))
    assert code == 201
    await events.cluster_state("victim", state_is(*RUNNING), "running")

    client.CustomObjectsApi(kube).patch_cluster_custom_object(
        KUEUE,
        kueue.api_version,
        "clusterqueues",
        queue.cluster_queue,
        {"spec": {"stopPolicy": "HoldAndDrain"}},
    )
    evicted = await events.cluster_state("victim", state_is("evicted"), "evicted")
    assert evicted is not None
    assert evicted["reason"] == "ClusterQueueStopped", evicted
    assert evicted["message"]
    assert "Evicted" in events.milestones("victim")

    code, cluster = await call(jp_fetch, "GET", "clusters", "victim")
    assert code == 200 and cluster["state"] == "evicted"
    raycluster = next(
        rc for rc in rayclusters(kube, namespace) if rc["metadata"]["name"] == "victim"
    )
    kueue_says = condition(workload_of(kube, kueue, raycluster["metadata"]["uid"]), "Evicted")
    assert (cluster["reason"], cluster["message"]) == (kueue_says["reason"], kueue_says["message"])
    events.close()


# --------------------------------------------------------------------------------------------
# Bad input: 400 per field, and nothing created
# --------------------------------------------------------------------------------------------

LIMITS = {
    "max_workers": 4,
    "max_worker_cpu": "2",
    "max_worker_memory": "4Gi",
    "max_head_cpu": "2",
    "max_head_memory": "4Gi",
    "max_worker_gpu": 1,
    "allowed_images": ["rayproject/ray:", "quay.io/team/*"],
    # An administrator's word that Kueue runs without elastic jobs (the default, auto, asks
    # Kueue: tests/integration/test_elastic_scale.py and faults/test_elastic_gate_off.py).
    "elastic_jobs": "false",
}

BAD_REQUESTS = [
    pytest.param({"workers": 1}, "name", id="name-missing"),
    pytest.param({"name": "My_Cluster"}, "name", id="name-not-dns"),
    pytest.param({"name": "a" * 54}, "name", id="name-too-long"),
    pytest.param({"name": "1abc"}, "name", id="name-starts-with-digit"),
    pytest.param({"name": "ok", "queue": "nope"}, "queue", id="queue-unknown"),
    pytest.param({"name": "ok", "queue": "Bad Queue"}, "queue", id="queue-invalid"),
    pytest.param({"name": "ok", "worker_cpu": "lots"}, "worker_cpu", id="cpu-not-quantity"),
    pytest.param({"name": "ok", "worker_cpu": "-1"}, "worker_cpu", id="cpu-negative"),
    pytest.param({"name": "ok", "head_cpu": "0"}, "head_cpu", id="cpu-zero"),
    pytest.param({"name": "ok", "worker_cpu": "0.0001"}, "worker_cpu", id="cpu-below-milli"),
    pytest.param({"name": "ok", "worker_memory": "4"}, "worker_memory", id="memory-bytes"),
    pytest.param({"name": "ok", "head_memory": "1.5m"}, "head_memory", id="memory-fraction"),
    pytest.param({"name": "ok", "workers": -1}, "workers", id="workers-negative"),
    pytest.param({"name": "ok", "workers": 1.5}, "workers", id="workers-fraction"),
    pytest.param({"name": "ok", "workers": "two"}, "workers", id="workers-text"),
    pytest.param({"name": "ok", "worker_gpu": -1}, "worker_gpu", id="gpu-negative"),
    pytest.param({"name": "ok", "workers": 5}, "workers", id="workers-over-limit"),
    pytest.param({"name": "ok", "worker_cpu": "3"}, "worker_cpu", id="cpu-over-limit"),
    pytest.param({"name": "ok", "worker_memory": "5Gi"}, "worker_memory", id="memory-over-limit"),
    pytest.param({"name": "ok", "head_cpu": "4"}, "head_cpu", id="head-cpu-over-limit"),
    pytest.param({"name": "ok", "head_memory": "8Gi"}, "head_memory", id="head-memory-over-limit"),
    pytest.param({"name": "ok", "worker_gpu": 2}, "worker_gpu", id="gpu-over-limit"),
    pytest.param({"name": "ok", "image": "docker.io/evil/ray:1"}, "image", id="image-not-allowed"),
    pytest.param({"name": "ok", "image": "ray with space"}, "image", id="image-malformed"),
    pytest.param(
        {"name": "ok", "workers": 1, "min_workers": 1, "max_workers": 3},
        "max_workers",
        id="autoscaling-without-elastic-jobs",
    ),
    pytest.param({"name": "ok", "min_workers": 3, "workers": 2}, "min_workers", id="min-above"),
    pytest.param({"name": "ok", "env": {"1BAD": "x"}}, "env", id="env-name"),
    pytest.param({"name": "ok", "env": {"A": 1}}, "env", id="env-value-not-string"),
    pytest.param({"name": "ok", "env": ["A=1"]}, "env", id="env-not-mapping"),
    pytest.param({"name": "ok", "labels": {"ray.io/x": "y"}}, "labels", id="label-reserved"),
    pytest.param({"name": "ok", "labels": {"a": "b c"}}, "labels", id="label-value"),
    pytest.param({"name": "ok", "wokers": 2}, "wokers", id="unknown-field"),
    pytest.param(["name", "ok"], "request", id="body-not-object"),
]


@pytest.mark.parametrize("dw_config", [LIMITS], indirect=True)
@pytest.mark.parametrize(("body", "field"), BAD_REQUESTS)
async def test_bad_input_is_400_per_field_and_creates_nothing(
    kube, kueue, namespace, jp_fetch, body, field
):
    make_queue(kueue)
    before = rayclusters(kube, namespace)

    for route in (("clusters",), ("clusters", "fit")):
        if route[-1] == "fit" and field == "name":
            continue  # a fit check needs no name; a bad one is still refused below
        code, error = await call(jp_fetch, "POST", *route, body=body)
        assert code == 400, (route, error)
        assert error["code"] == "invalid_spec"
        assert field in error["errors"], error
        assert error["errors"][field] in error["reason"]
        assert error["hint"]

    assert rayclusters(kube, namespace) == before == []


async def test_a_body_that_is_not_json_is_400(kueue, kube, namespace, jp_fetch):
    make_queue(kueue)
    code, error = await call(jp_fetch, "POST", "clusters", raw=b"{not json")
    assert code == 400 and error["errors"] == {"request": "must be a JSON object"}
    assert rayclusters(kube, namespace) == []


async def test_refused_by_admission_in_the_dry_run_is_400_and_creates_nothing(
    kube, kueue, namespace, jp_fetch
):
    """A valid spec the cluster refuses (here a ResourceQuota allowing no RayClusters): the
    dry run gets the refusal, so the real create is never sent."""
    make_queue(kueue)
    core = client.CoreV1Api(kube)
    core.create_namespaced_resource_quota(
        namespace,
        {"metadata": {"name": "no-ray"}, "spec": {"hard": {"count/rayclusters.ray.io": "0"}}},
    )
    # Quota is enforced once the quota controller has filled in its status.
    watch_until(
        lambda **kw: core.list_namespaced_resource_quota(namespace, **kw),
        lambda q: bool((q.get("status") or {}).get("hard")),
        field_selector="metadata.name=no-ray",
        what="ResourceQuota status",
    )

    code, error = await call(jp_fetch, "POST", "clusters", body=small_cluster("refused"))

    assert code == 400, error
    assert error["code"] == "rejected"
    assert "exceeded quota" in error["reason"]
    assert error["errors"] == {"request": error["reason"]}
    assert rayclusters(kube, namespace) == []


# --------------------------------------------------------------------------------------------
# Conflicts and permissions
# --------------------------------------------------------------------------------------------


async def test_a_taken_name_is_409_and_one_cluster_exists(kube, kueue, namespace, jp_fetch):
    make_queue(kueue)
    # "fit" is a cluster name like any other, though POST clusters/fit is the fit check.
    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("fit"))
    assert code == 201, created

    code, conflict = await call(jp_fetch, "POST", "clusters", body=small_cluster("fit"))

    assert code == 409
    assert conflict["code"] == "already_exists"
    assert "'fit' already exists" in conflict["error"]
    assert [rc["metadata"]["name"] for rc in rayclusters(kube, namespace)] == ["fit"]
    code, cluster = await call(jp_fetch, "GET", "clusters", "fit")
    assert code == 200 and cluster["name"] == "fit"
    assert (await call(jp_fetch, "DELETE", "clusters", "fit"))[0] == 200


WITHOUT_CREATE = namespace_rules(ray_verbs=["get", "list", "watch", "delete"])


@pytest.mark.parametrize("rules", [WITHOUT_CREATE], indirect=True)
async def test_without_create_permission_403_names_it(kube, kueue, namespace, jp_fetch):
    make_queue(kueue)

    code, error = await call(jp_fetch, "POST", "clusters", body=small_cluster("nope"))

    assert code == 403, error
    assert error["code"] == "forbidden"
    assert error["denied"] == "create rayclusters.ray.io"
    assert "create rayclusters.ray.io" in error["error"]
    assert "create rayclusters.ray.io" in error["hint"]
    assert rayclusters(kube, namespace) == []
    # Reading still works.
    code, listing = await call(jp_fetch, "GET", "clusters")
    assert (code, listing["clusters"]) == (200, [])


WITHOUT_RAY = [rule for rule in namespace_rules() if rule["apiGroups"] != ["ray.io"]]


@pytest.mark.parametrize("rules", [WITHOUT_RAY], indirect=True)
async def test_without_list_permission_listing_is_403_naming_it(kueue, jp_fetch):
    make_queue(kueue)
    code, error = await call(jp_fetch, "GET", "clusters")
    assert code == 403
    assert error["denied"] in ("list rayclusters.ray.io", "watch rayclusters.ray.io")


async def test_unknown_cluster_is_404(kueue, jp_fetch):
    make_queue(kueue)
    code, error = await call(jp_fetch, "GET", "clusters", "absent")
    assert code == 404 and error["code"] == "not_found"
    code, error = await call(jp_fetch, "DELETE", "clusters", "absent")
    assert code == 404 and error["code"] == "not_found"
