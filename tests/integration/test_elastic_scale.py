"""Elastic Ray clusters through Kueue's workload slices, on the real control plane.

An autoscaling RayCluster (``min_workers`` < ``max_workers``) is an elastic job: each
scale-up is a new Workload slice that waits for the difference in quota. The test plays the
Ray autoscaler by changing the worker group's ``replicas`` (KWOK pods run no Ray), and scales
as a person through ``POST clusters/{name}/scale``. Every step is checked in REST and on the
events socket; Kueue's own Workloads are read as the administrator to check the product
against them.

Quota (one flavor, CPU decides; memory is plenty):

- the cluster: head 1 CPU + the autoscaler sidecar 500m (Kueue 0.19 counts it; 0.14 does
  not) + 1 CPU per worker;
- a fixed-size blocker: head 1 CPU + 1 worker of 1 CPU = 2 CPU.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from kubernetes import client

from jupyter_dw.domain.quantity import parse_quantity
from tests.cluster.fixtures import condition, watch_until
from tests.integration.clusters_support import (
    KUEUE,
    Queue,
    call,
    headroom_becomes,
    make_queue,
    open_events,
    small_cluster,
    state_is,
    workloads_of,
)
from tests.integration.test_notebook_widgets import until
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster


def elastic(name: str, workers: int = 1, low: int = 1, high: int = 8) -> dict:
    return small_cluster(name, workers=workers, min_workers=low, max_workers=high)


def wait_slice(kube: client.ApiClient, kueue, uid: str, predicate, what: str) -> dict:
    """The first of the cluster's Workloads satisfying ``predicate`` (watched)."""
    custom = client.CustomObjectsApi(kube)
    return watch_until(
        lambda **kw: custom.list_namespaced_custom_object(
            KUEUE, kueue.api_version, kueue.namespace, "workloads", **kw
        ),
        predicate,
        label_selector=f"{KUEUE}/job-uid={uid}",
        what=what,
    )


def reserved(workload: dict) -> str | None:
    found = condition(workload, "QuotaReserved")
    return found["status"] if found else None


def uid_of(kube: client.ApiClient, namespace: str, name: str) -> str:
    return client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", name
    )["metadata"]["uid"]


def pod_set_cpu(workload: dict) -> Decimal:
    """CPU a Workload asks for, summed from its pod sets as Kueue stores them."""
    total = Decimal(0)
    for pod_set in workload["spec"]["podSets"]:
        for container in pod_set["template"]["spec"]["containers"]:
            requests = (container.get("resources") or {}).get("requests") or {}
            total += parse_quantity(requests.get("cpu", "0")) * pod_set["count"]
    return total


def set_worker_group(kube: client.ApiClient, namespace: str, name: str, **fields: int) -> None:
    """Set fields of the first worker group with a JSON patch: no read-modify-write, so a
    controller writing the object meanwhile (KubeRay's status) can never make it a 409."""
    operations = [
        {"op": "replace", "path": f"/spec/workerGroupSpecs/0/{field}", "value": value}
        for field, value in fields.items()
    ]
    client.CustomObjectsApi(kube).api_client.call_api(
        f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}",
        "PATCH",
        header_params={"Content-Type": "application/json-patch+json"},
        body=operations,
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )


def set_replicas(kube: client.ApiClient, namespace: str, name: str, replicas: int) -> None:
    """What the Ray autoscaler does: change the worker group's replicas."""
    set_worker_group(kube, namespace, name, replicas=replicas)


def worker_pods(kube: client.ApiClient, namespace: str, name: str) -> list:
    pods = client.CoreV1Api(kube).list_namespaced_pod(
        namespace, label_selector=f"ray.io/cluster={name},ray.io/node-type=worker"
    )
    return [p for p in pods.items if p.metadata.deletion_timestamp is None]


def sizes(raycluster: dict) -> list[tuple]:
    """What a scale may change of a RayCluster's worker groups."""
    return [
        (g.get("replicas"), g.get("minReplicas"), g.get("maxReplicas"), g.get("scaleStrategy"))
        for g in raycluster["spec"]["workerGroupSpecs"]
    ]


async def release_pin(jp_fetch, kube: client.ApiClient, namespace: str, name: str, replicas: int):
    """Give the size back to the autoscaler: the cluster's own minimum (1) comes back as
    ``minReplicas``, the pin is gone, ``replicas`` is left as it was."""
    status, released = await call(
        jp_fetch, "POST", "clusters", name, "scale", body={"workers": None}
    )
    assert status == 200 and released["changed"], released
    assert released["cluster"]["pinned_workers"] is None
    assert released["cluster"]["min_workers"] == 1
    group = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", name
    )["spec"]["workerGroupSpecs"][0]
    assert (group["minReplicas"], group["replicas"]) == (1, replicas)


def counts_sidecar(kueue_api_version: str) -> bool:
    # Kueue 0.19 (serving v1beta2) counts the autoscaler sidecar; 0.14 (v1beta1 only) does not.
    return kueue_api_version == "v1beta2"


async def test_scale_up_waits_for_quota_then_is_admitted_and_scale_down_frees_it(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch, kueue_api_version
):
    sidecar = Decimal("0.5") if counts_sidecar(kueue_api_version) else Decimal(0)
    # Room for the blocker (2) and the cluster at 4 workers (5 + sidecar), and 1 CPU more:
    # a 5th worker fits, a 6th waits.
    nominal = 2 + 5 + sidecar + 1
    queue = make_queue(kueue, cpu=str(nominal), memory="64Gi")
    events, _ = await open_events(jp_ws_fetch)

    code, blocker = await call(jp_fetch, "POST", "clusters", body=small_cluster("blocker", 1))
    assert code == 201, blocker
    code, created = await call(jp_fetch, "POST", "clusters", body=elastic("grow"))
    assert code == 201, created
    assert created["elastic"] and (created["min_workers"], created["max_workers"]) == (1, 8)
    ready = await events.cluster_state("grow", state_is("ready"), "ready at 1 worker")
    assert ready["workers_admitted"] == 1 and ready["scale"] is None

    # -- the Ray autoscaler asks for 4: a new slice, admitted at once -----------------------
    set_replicas(kube, namespace, "grow", 4)
    requested = await events.cluster_state(
        "grow", lambda s: s is not None and s["workers_desired"] == 4, "asked for 4"
    )
    assert requested["state"] in ("ready", "starting")
    at_four = await events.cluster_state(
        "grow",
        lambda s: s is not None and s["state"] == "ready" and s["workers_ready"] == 4,
        "4 workers ready",
    )
    assert at_four["workers_admitted"] == 4 and at_four["scale"] is None
    assert {"ScaleAdmitted:4", "ScaledTo:4"} <= set(events.milestones("grow"))

    # Kueue's ClusterQueue status counts the new slice (it updates it after admitting).
    await headroom_becomes(events, jp_fetch, queue, Decimal(1))

    # -- a person asks for 6: the fit says it must wait and 5 would start now ---------------
    code, dry = await call(
        jp_fetch, "POST", "clusters", "grow", "scale", body={"workers": 6, "dry_run": True}
    )
    assert code == 200, dry
    assert dry["changed"] is False and dry["fit"]["verdict"] == "must-wait", dry
    assert dry["fit"]["starts_now"] == 5 and dry["fit"]["requests"]["cpu"] == "2", dry
    assert f"in flavor {queue.flavor}" in dry["fit"]["message"]
    assert dry["cluster"]["workers_desired"] == 4  # a dry run changes nothing

    code, scaled = await call(jp_fetch, "POST", "clusters", "grow", "scale", body={"workers": 6})
    assert code == 200, scaled
    assert scaled["changed"] is True and scaled["cluster"]["pinned_workers"] == 6
    waiting = await events.cluster_state(
        "grow",
        lambda s: s is not None and (s.get("scale") or {}).get("reason") is not None,
        "the scale-up waits with Kueue's reason",
    )
    scale = waiting["scale"]
    assert scale["state"] == "queued" and (scale["from"], scale["to"]) == (4, 6), scale
    assert scale["requested_by"] == "user"
    assert "insufficient" in (scale["message"] or "") or "quota" in (scale["message"] or "")
    # The cluster itself runs on: its admitted slice, its milestones.
    assert waiting["state"] == "ready" and waiting["workers_admitted"] == 4
    assert waiting["quota_reserved"] and waiting["admitted"] and waiting["cluster_queue"]
    assert waiting["flavors"] == [queue.flavor]
    names = [m["name"] for m in waiting["milestones"]]
    assert "QuotaReserved" in names and "Admitted" in names and "ScaleRequested:6" in names
    # Kueue's view: the pending slice replaces the admitted one.
    code, listed = await call(jp_fetch, "GET", "clusters", "grow")
    assert listed["scale"]["workload"] not in (None, listed["workload"]), listed

    # The position may come with Kueue's reason (one message) or after it.
    def has_position(state: dict[str, Any] | None) -> bool:
        return state is not None and (state.get("scale") or {}).get("position_in_local_queue") == 0

    positioned = (
        waiting
        if has_position(waiting)
        else await events.cluster_state("grow", has_position, "the pending slice's position")
    )
    assert positioned["scale"]["position_in_cluster_queue"] == 0
    # Gated pods of the pending slice are waiting for quota, not a pod problem.
    assert positioned["state"] == "ready"

    # -- the blocker leaves: the slice is admitted and 6 workers run ------------------------
    code, _ = await call(jp_fetch, "DELETE", "clusters", "blocker")
    assert code == 200
    at_six = await events.cluster_state(
        "grow",
        lambda s: s is not None and s["state"] == "ready" and s["workers_ready"] == 6,
        "6 workers ready",
    )
    assert at_six["workers_admitted"] == 6 and at_six["scale"] is None
    assert {"ScaleAdmitted:6", "ScaledTo:6"} <= set(events.milestones("grow"))

    # -- back to 2: quota freed at once, exactly 2 worker pods remain -----------------------
    code, down = await call(jp_fetch, "POST", "clusters", "grow", "scale", body={"workers": 2})
    assert code == 200 and down["fit"] is None, down
    shrunk = await events.cluster_state(
        "grow",
        lambda s: s is not None and s["workers_admitted"] == 2 and s["scale"] is None,
        "scaled down to 2",
    )
    assert shrunk["workers_desired"] == 2
    assert "ScaledTo:2" in events.milestones("grow")
    assert len(worker_pods(kube, namespace, "grow")) == 2
    await headroom_becomes(events, jp_fetch, queue, nominal - (1 + sidecar + 2))
    events.close()


async def test_bad_scales_are_refused_and_change_nothing(
    kube, kueue, namespace, identity, jp_fetch
):
    make_queue(kueue, cpu="20", memory="64Gi")
    assert (await call(jp_fetch, "POST", "clusters", body=elastic("el", 2, 1, 4)))[0] == 201
    assert (await call(jp_fetch, "POST", "clusters", body=small_cluster("fixed", 1)))[0] == 201
    before = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "el"
    )
    for body, code, field in [
        ({"workers": 0}, 400, "workers"),  # below min_workers
        ({"workers": 5}, 400, "workers"),  # above max_workers
        ({"workers": 2.5}, 400, "workers"),
        ({"workers": "3"}, 400, "workers"),
        ({"workers": True}, 400, "workers"),
        ({}, 400, "workers"),
        ({"workers": 3, "size": 1}, 400, "request"),
    ]:
        status, answer = await call(jp_fetch, "POST", "clusters", "el", "scale", body=body)
        assert status == code and field in answer.get("errors", {}), (body, answer)
    status, answer = await call(jp_fetch, "POST", "clusters", "fixed", "scale", body={"workers": 2})
    assert status == 400 and answer["code"] == "not_elastic", answer
    status, answer = await call(jp_fetch, "POST", "clusters", "gone", "scale", body={"workers": 2})
    assert status == 404, answer
    after = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "el"
    )
    # Nothing of ours changed (Kueue may admit it meanwhile: suspend, node selectors).
    assert sizes(after) == sizes(before)
    assert after["metadata"].get("annotations") == before["metadata"].get("annotations")
    # A released pin gives minReplicas back.
    assert (await call(jp_fetch, "POST", "clusters", "el", "scale", body={"workers": 3}))[0] == 200
    await release_pin(jp_fetch, kube, namespace, "el", replicas=3)


async def test_the_sidecar_inclusive_fit_matches_kueue_at_the_exact_boundary(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch, kueue_api_version
):
    """Exactly the headroom fits now and is admitted; 1m CPU more must wait, and Kueue keeps
    it pending. The fit counts what Kueue holds: the real Workload's pod sets."""
    flavor = kueue.flavor("default")
    # One autoscaling cluster first: the product learns from its Workload whether this Kueue
    # counts the sidecar (until then it counts it, the safe side).
    cq = kueue.cluster_queue("learn", {flavor: {"cpu": "10", "memory": "64Gi"}})
    kueue.wait_active("clusterqueues", cq)
    lq = kueue.local_queue("learn", cq)
    kueue.wait_active("localqueues", lq)
    code, learner = await call(
        jp_fetch, "POST", "clusters", body=elastic("learner") | {"queue": lq}
    )
    assert code == 201, learner
    real = wait_slice(
        kube,
        kueue,
        uid_of(kube, namespace, "learner"),
        lambda w: reserved(w) == "True",
        "the learner admitted",
    )
    expected_cpu = Decimal(1 + 1) + (Decimal("0.5") if counts_sidecar(kueue_api_version) else 0)
    assert pod_set_cpu(real) == expected_cpu
    code, context = await call(jp_fetch, "GET", "context")
    quota = context["kueue"]["autoscaler_in_quota"]
    assert quota == {"counted": counts_sidecar(kueue_api_version), "learned_from": "workload"}

    events, _ = await open_events(jp_ws_fetch)
    for name, spare in (("exact", Decimal(0)), ("over", Decimal("0.001"))):
        # Nominal = a 2-worker cluster as Kueue counts it + a blocker's 1 CPU head - spare.
        need = Decimal(1 + 2) + (Decimal("0.5") if counts_sidecar(kueue_api_version) else 0)
        cq = kueue.cluster_queue(name, {flavor: {"cpu": str(need + 1 - spare), "memory": "64Gi"}})
        kueue.wait_active("clusterqueues", cq)
        lq = kueue.local_queue(name, cq)
        kueue.wait_active("localqueues", lq)
        blocker = small_cluster(f"{name}-blocker", 0, queue=lq)
        assert (await call(jp_fetch, "POST", "clusters", body=blocker))[0] == 201
        wait_slice(
            kube,
            kueue,
            uid_of(kube, namespace, f"{name}-blocker"),
            lambda w: reserved(w) == "True",
            "the blocker admitted",
        )
        # The fit reads Kueue's ClusterQueue status: wait until it counts the blocker.
        await headroom_becomes(events, jp_fetch, Queue(lq, cq, flavor), need - spare)
        request = elastic(f"{name}-cluster", 2, 1, 4) | {"queue": lq}
        code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=request)
        assert code == 200, fit
        assert parse_quantity(fit["requests"]["cpu"]) == need
        assert fit["verdict"] == ("fits-now" if spare == 0 else "must-wait"), fit
        code, made = await call(jp_fetch, "POST", "clusters", body=request)
        assert code == 201, made
        judged = wait_slice(
            kube,
            kueue,
            uid_of(kube, namespace, f"{name}-cluster"),
            # Kueue judged it: reserved, or pending with its reason (the scheduler tried).
            lambda w: (
                reserved(w) == "True"
                or (
                    reserved(w) == "False"
                    and "insufficient" in condition(w, "QuotaReserved")["message"]
                )
            ),
            f"Kueue's verdict on {name}-cluster",
        )
        assert pod_set_cpu(judged) == need
        assert reserved(judged) == ("True" if spare == 0 else "False")


async def test_a_widget_shows_a_waiting_scale_up_and_its_stepper_scales(
    kernel, kueue, kube, namespace, kueue_api_version
):
    import jupyter_dw as dw
    from jupyter_dw.notebook.widgets import ClusterStatus

    sidecar = Decimal("0.5") if counts_sidecar(kueue_api_version) else Decimal(0)
    make_queue(kueue, cpu=str(1 + sidecar + 2 + Decimal("0.5")), memory="64Gi")
    dw.submit(elastic("wid", workers=2, low=1, high=4))
    widget = ClusterStatus("wid")
    await until(widget, "state", lambda s: s == "ready", "ready at 2 workers")
    assert widget.elastic and widget.workers_admitted == 2

    set_replicas(kube, namespace, "wid", 3)  # the Ray autoscaler asks for one more
    scale = await until(widget, "scale", lambda s: bool(s and s.get("reason")), "waiting")
    assert scale["state"] == "queued" and (scale["from"], scale["to"]) == (2, 3)
    assert scale["requested_by"] == "autoscaler"
    assert widget.state == "ready" and widget.workers_admitted == 2
    # The RayCluster's watch may bring the new replicas after the Workload's watch brought
    # Kueue's new slice: the widget shows each as its watch delivers it.
    await until(widget, "workers_desired", lambda n: n == 3, "the spec's 3 workers")

    widget.scale_to(2)  # the stepper: back to 2, pinned
    await until(widget, "scale", lambda s: s is None, "the change withdrawn")
    assert widget.pinned_workers == 2 and widget.scale_result["changed"] is True
    assert widget.workers_desired == 2 and widget.state == "ready"
    widget.scale_to(9)
    assert "workers" in widget.scale_result["error"]["errors"]
    widget.close()


async def test_a_pinned_cluster_the_autoscaler_grew_scales_down_to_its_own_range(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch, kueue_api_version
):
    """Pinned at 5, then the autoscaler asks for 7 (it waits for quota): a scale to 2 is
    within the cluster's own range (1 to 8), replaces the pending slice and leaves 2 workers.
    The same after a release: the release gives minReplicas back (it was a no-op before)."""
    sidecar = Decimal("0.5") if counts_sidecar(kueue_api_version) else Decimal(0)
    # The cluster at 6 workers fits (head 1 + sidecar + 6); 7 waits.
    queue = make_queue(kueue, cpu=str(1 + sidecar + 6), memory="64Gi")
    events, _ = await open_events(jp_ws_fetch)
    code, created = await call(jp_fetch, "POST", "clusters", body=elastic("pin", 2))
    assert code == 201, created
    await events.cluster_state("pin", state_is("ready"), "ready at 2 workers")

    async def pin_five_then_autoscaler_asks_seven() -> None:
        code, pinned = await call(jp_fetch, "POST", "clusters", "pin", "scale", body={"workers": 5})
        assert code == 200 and pinned["cluster"]["pinned_workers"] == 5, pinned
        await events.cluster_state(
            "pin",
            lambda s: s is not None and s["workers_ready"] == 5 and s["scale"] is None,
            "5 workers ready",
        )
        set_replicas(kube, namespace, "pin", 7)  # the Ray autoscaler asks for more
        waiting = await events.cluster_state(
            "pin",
            lambda s: s is not None and (s.get("scale") or {}).get("reason") is not None,
            "the autoscaler's 7 wait for quota",
        )
        assert (waiting["scale"]["from"], waiting["scale"]["to"]) == (5, 7), waiting
        assert waiting["scale"]["requested_by"] == "autoscaler"
        # The cluster's own range is still the one it was made with; the pin is still 5.
        assert (waiting["min_workers"], waiting["max_workers"]) == (1, 8), waiting
        assert waiting["pinned_workers"] == 5

    async def scale_to_two() -> None:
        code, down = await call(jp_fetch, "POST", "clusters", "pin", "scale", body={"workers": 2})
        assert code == 200 and down["changed"] and down["fit"] is None, down
        assert down["cluster"]["pinned_workers"] == 2 and down["cluster"]["min_workers"] == 1
        shrunk = await events.cluster_state(
            "pin",
            lambda s: s is not None and s["workers_admitted"] == 2 and s["scale"] is None,
            "scaled down to 2, the pending slice gone",
        )
        assert shrunk["workers_desired"] == 2 and shrunk["state"] == "ready", shrunk
        # Kueue's own view: one slice holds quota, for 2 workers; none waits.
        live = [
            w
            for w in workloads_of(kube, kueue, uid_of(kube, namespace, "pin"))
            if condition(w, "Finished") is None
        ]
        assert [reserved(w) for w in live] == ["True"], live
        assert worker_count(live[0]) == 2
        assert len(worker_pods(kube, namespace, "pin")) == 2
        await headroom_becomes(events, jp_fetch, queue, Decimal(6 - 2))

    # Straight from the pin the autoscaler grew past.
    await pin_five_then_autoscaler_asks_seven()
    await scale_to_two()
    # A release first, then the scale.
    await pin_five_then_autoscaler_asks_seven()
    await release_pin(jp_fetch, kube, namespace, "pin", replicas=7)
    await scale_to_two()
    events.close()


def worker_count(workload: dict) -> int:
    """The worker pod set's count of a RayCluster's Workload (every set but the head's)."""
    return sum(p["count"] for p in workload["spec"]["podSets"] if p["name"] != "head")
