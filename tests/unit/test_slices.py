"""An elastic cluster's chain of Workload slices, the change of size in flight, its
milestones, and the fit of a scale-up (difference only, in the held flavor).

Workloads are shaped as Kueue v0.19.2 writes them for an elastic RayCluster: pod sets
``head`` and ``workers``, a scale-up's slice annotated
``kueue.x-k8s.io/workload-slice-replacement-for``, a replaced slice ``Finished`` with reason
``WorkloadSliceReplaced``.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from jupyter_dw.domain.cluster_spec import SpecPolicy, ValidatedClusterSpec
from jupyter_dw.domain.cluster_state import cluster_snapshot, transition
from jupyter_dw.domain.fit import FITS_NOW, MUST_WAIT, NEVER_FITS, pod_sets_for_spec
from jupyter_dw.domain.milestones import milestones
from jupyter_dw.domain.quota import QuotaTree
from jupyter_dw.domain.scale_fit import assess_scale_up, held_flavors, worker_pod_set
from jupyter_dw.domain.slices import counts_autoscaler, slice_chain
from jupyter_dw.names import AUTOSCALING_MIN_ANNOTATION, WORKLOAD_SLICE_REPLACEMENT_ANNOTATION
from tests.unit.test_fit import cq

UID = "0b4c1a8e-1111-2222-3333-444455556666"
T0, T1, T2, T3 = (f"2026-11-24T10:00:0{i}Z" for i in range(4))


def cond(kind: str, status: str = "True", reason: str = "", message: str = "", at: str = T0):
    return {
        "type": kind,
        "status": status,
        "reason": reason or kind,
        "message": message,
        "lastTransitionTime": at,
    }


def elastic_cluster(replicas: int, *, pinned_min: int | None = None) -> dict[str, Any]:
    spec = ValidatedClusterSpec.from_request(
        {"name": "grow", "queue": "team-a", "workers": 1, "min_workers": 1, "max_workers": 8},
        SpecPolicy(elastic_jobs=True),
    )
    obj = spec.to_raycluster("ns", owner="alice")
    obj["metadata"].update({"uid": UID, "creationTimestamp": T0})
    obj["spec"]["suspend"] = False
    obj["spec"]["workerGroupSpecs"][0]["replicas"] = replicas
    if pinned_min is not None:
        obj["spec"]["workerGroupSpecs"][0]["minReplicas"] = replicas
        obj["metadata"]["annotations"][AUTOSCALING_MIN_ANNOTATION] = str(pinned_min)
    obj["status"] = {
        "head": {"podName": "grow-head", "serviceName": "grow-head-svc"},
        "conditions": [cond("HeadPodReady", reason="HeadPodRunningAndReady")],
    }
    return obj


def ready(obj: dict[str, Any], workers: int) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    if workers:
        obj["status"]["readyWorkerReplicas"] = workers
    return obj


def workload(
    name: str,
    workers: int,
    *,
    reserved: bool,
    at: str = T0,
    replaces: str | None = None,
    finished: bool = False,
    message: str = "",
) -> dict[str, Any]:
    conditions = (
        [cond("QuotaReserved", at=at), cond("Admitted", at=at)]
        if reserved
        else [cond("QuotaReserved", "False", "Pending", message, at=at)]
    )
    if finished:
        conditions.append(cond("Finished", reason="WorkloadSliceReplaced", at=T3))
    obj: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "creationTimestamp": at,
            "labels": {"kueue.x-k8s.io/job-uid": UID},
            "annotations": {},
        },
        "spec": {
            "queueName": "team-a",
            "podSets": [
                {"name": "head", "count": 1, "template": {"spec": {"containers": []}}},
                {"name": "workers", "count": workers},
            ],
        },
        "status": {"conditions": conditions},
    }
    if replaces:
        obj["metadata"]["annotations"][WORKLOAD_SLICE_REPLACEMENT_ANNOTATION] = f"ns/{replaces}"
    if reserved:
        obj["status"]["admission"] = {
            "clusterQueue": "cq-a",
            "podSetAssignments": [
                {"name": "head", "flavors": {"cpu": "small", "memory": "small"}},
                {"name": "workers", "flavors": {"cpu": "small", "memory": "small"}},
            ],
        }
    return obj


def worker_pod(name: str, *, is_ready: bool = True, gated: bool = False) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"ray.io/node-type": "worker"}},
        "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/elastic-job"}] if gated else []},
        "status": {"conditions": [{"type": "Ready", "status": "True" if is_ready else "False"}]},
    }


FIRST = workload("grow-a", 4, reserved=True)
WAITING = workload(
    "grow-b", 6, reserved=False, at=T1, replaces="grow-a", message="insufficient unused quota"
)
POSITION = {"metadata": {"name": "grow-b"}, "positionInLocalQueue": 0, "positionInClusterQueue": 2}


def test_the_admitted_slice_is_the_cluster_and_the_pending_one_its_scale_up():
    chain = slice_chain([WAITING, FIRST])
    assert chain.admitted is FIRST and chain.pending is WAITING and chain.current is FIRST
    assert chain.workers_admitted == 4


def test_an_admitted_replacement_takes_over_and_the_replaced_slice_is_not_current():
    replaced = workload("grow-a", 4, reserved=True, finished=True)
    taken = workload("grow-b", 6, reserved=True, at=T2, replaces="grow-a")
    chain = slice_chain([taken, replaced])
    assert chain.admitted is taken and chain.pending is None and chain.first is replaced


def test_a_waiting_scale_up_keeps_the_cluster_ready_and_says_why_it_waits():
    pods = [worker_pod(f"w{i}") for i in range(4)] + [worker_pod("w4", gated=True)] * 2
    status = cluster_snapshot(
        ready(elastic_cluster(6), 4), pending=POSITION, pods=pods, slices=[FIRST, WAITING]
    )
    assert status.state == "ready" and status.workload == "grow-a"
    assert status.quota_reserved and status.admitted and status.cluster_queue == "cq-a"
    assert (status.workers_ready, status.workers_admitted, status.workers_desired) == (4, 4, 6)
    assert status.elastic and (status.min_workers, status.max_workers) == (1, 8)
    scale = status.scale.to_json()
    assert scale["state"] == "queued" and (scale["from"], scale["to"]) == (4, 6)
    assert scale["message"] == "insufficient unused quota" and scale["workload"] == "grow-b"
    assert scale["position_in_local_queue"] == 0 and scale["position_in_cluster_queue"] == 2
    assert scale["requested_by"] == "autoscaler" and scale["since"] == T1
    assert status.position_in_local_queue is None  # the cluster itself does not wait


def test_a_person_pinned_size_is_reported_as_the_user_s_request():
    status = cluster_snapshot(
        ready(elastic_cluster(6, pinned_min=1), 4), slices=[FIRST, WAITING], pods=[]
    )
    assert status.pinned_workers == 6 and status.min_workers == 1
    assert status.scale.requested_by == "user"


def test_scale_milestones_on_the_events_and_the_timeline():
    cluster = elastic_cluster(6)
    waiting = cluster_snapshot(ready(cluster, 4), slices=[FIRST, WAITING], pods=[])
    before = cluster_snapshot(ready(elastic_cluster(4), 4), slices=[FIRST], pods=[])
    assert transition(before, waiting) == ["ScaleRequested:6"]
    replaced = workload("grow-a", 4, reserved=True, finished=True)
    taken = workload("grow-b", 6, reserved=True, at=T2, replaces="grow-a")
    starting = cluster_snapshot(ready(cluster, 4), slices=[replaced, taken], pods=[])
    assert starting.scale.state == "admitted" and starting.state == "starting"
    assert transition(waiting, starting) == ["ScaleAdmitted:6"]
    done = cluster_snapshot(ready(cluster, 6), slices=[replaced, taken], pods=[])
    assert done.scale is None and done.state == "ready"
    assert transition(starting, done)[-1] == "ScaledTo:6"
    steps = milestones(done, ready(cluster, 6), None, [], slices=[replaced, taken])
    names = [m.name for m in steps]
    assert names[:3] == ["Submitted", "QuotaReserved", "Admitted"]
    assert names[-3:] == ["ScaleRequested:6", "ScaleAdmitted:6", "ScaledTo:6"]


def test_a_scale_down_is_in_flight_until_the_extra_pods_are_gone():
    shrunk = workload("grow-a", 2, reserved=True)  # Kueue rewrote the count in place
    pods = [worker_pod(f"w{i}") for i in range(6)]
    status = cluster_snapshot(ready(elastic_cluster(2), 6), slices=[shrunk], pods=pods)
    assert status.workers_admitted == 2
    assert status.scale.state == "scaling-down"
    assert (status.scale.from_workers, status.scale.to_workers) == (6, 2)
    gone = cluster_snapshot(ready(elastic_cluster(2), 2), slices=[shrunk], pods=pods[:2])
    assert gone.scale is None and gone.state == "ready"


def test_gated_pods_are_never_a_scale_down():
    # A person asks for 6: KubeRay makes the 5th pod (gated) and the pods' watch tells of it
    # before the RayCluster's (still at 4 replicas, no pin): no "scaling down 5 -> 4".
    pods = [worker_pod(f"w{i}") for i in range(4)] + [worker_pod("w4", gated=True)]
    early = cluster_snapshot(ready(elastic_cluster(4), 4), slices=[FIRST], pods=pods)
    assert early.scale is None and early.state == "ready"
    # Pinned back to 4 while the slice for 6 waited: the gated pods go, 4 workers are held.
    back = cluster_snapshot(
        ready(elastic_cluster(4), 4), slices=[FIRST], pods=[*pods, worker_pod("w5", gated=True)]
    )
    assert back.scale is None
    # A pod past the gate beyond what is asked for is a scale-down.
    ungated = [*pods[:4], worker_pod("w4")]
    down = cluster_snapshot(ready(elastic_cluster(4), 5), slices=[FIRST], pods=ungated)
    assert down.scale is not None and down.scale.state == "scaling-down"
    assert (down.scale.from_workers, down.scale.to_workers) == (5, 4)


def test_a_fixed_size_cluster_has_no_scale():
    spec = ValidatedClusterSpec.from_request({"name": "fixed", "queue": "team-a", "workers": 2})
    obj = spec.to_raycluster("ns")
    obj["metadata"]["uid"] = UID
    status = cluster_snapshot(obj, slices=[workload("fixed-a", 2, reserved=True)])
    assert not status.elastic and status.scale is None and status.workers_admitted == 2


def test_whether_kueue_counts_the_autoscaler_is_read_from_a_workload():
    counted = workload("w", 1, reserved=True)
    counted["spec"]["podSets"][0]["template"]["spec"]["containers"] = [
        {"name": "ray-head"},
        {"name": "autoscaler"},
    ]
    assert counts_autoscaler(counted, elastic_cluster(1)) is True
    assert counts_autoscaler(workload("w", 1, reserved=True), elastic_cluster(1)) is False
    assert counts_autoscaler(workload("w", 1, reserved=True), None) is None


def test_the_head_pod_set_counts_the_sidecar_set_in_the_spec():
    spec = ValidatedClusterSpec.from_request(
        {"name": "g", "queue": "q", "workers": 1, "min_workers": 1, "max_workers": 4},
        SpecPolicy(elastic_jobs=True, autoscaler_cpu="250m", autoscaler_memory="256Mi"),
    )
    obj = spec.to_raycluster("ns")
    assert obj["spec"]["autoscalerOptions"]["resources"]["requests"] == {
        "cpu": "250m",
        "memory": "256Mi",
    }
    head, _ = pod_sets_for_spec(spec)
    assert head.per_pod["cpu"] == Decimal("1.25")  # head 1 CPU + sidecar 250m
    head, _ = pod_sets_for_spec(spec, sidecar_counted=False)
    assert head.per_pod["cpu"] == Decimal(1)


# -- the fit of a scale-up --------------------------------------------------------------------

GI = 2**30


def _tree_with_used(cpu_nominal: str, used_cpu: str, flavors=("small", "big")):
    group = (["cpu", "memory"], [(f, {"cpu": cpu_nominal, "memory": "100Gi"}) for f in flavors])
    queue = cq("cq-a", [group], reserved={("small", "cpu"): used_cpu})
    return queue, QuotaTree([queue], [])


def _scale_up(to: int, used: str):
    cluster = elastic_cluster(to)
    workers = worker_pod_set(cluster, 1)  # 1 CPU, 2Gi each (the defaults)
    queue, tree = _tree_with_used("8", used)
    held = held_flavors({"workers": {"cpu": "small", "memory": "small"}}, workers.name)
    return assess_scale_up(workers, 4, to, held, queue, tree)


def test_exactly_the_headroom_fits_now_and_one_millicore_more_must_wait():
    # 8 CPU nominal in flavor small; 6 CPU in use: 2 more workers (2 CPU) fit exactly.
    fits = _scale_up(6, "6")
    assert fits.verdict.verdict == FITS_NOW and fits.starts_now == 6
    assert fits.verdict.requests["cpu"] == Decimal(2)  # the difference only
    waits = _scale_up(6, "6001m")
    assert waits.verdict.verdict == MUST_WAIT and waits.starts_now == 5
    assert waits.message.startswith("6 workers: must wait in flavor small")
    assert waits.message.endswith("5 would start now.")


def test_a_scale_up_never_moves_to_another_flavor():
    # Flavor big has all its quota free, but the slice must stay in small.
    stuck = _scale_up(13, "0")  # 9 more CPU > 8 nominal in small
    assert stuck.verdict.verdict == NEVER_FITS
    assert stuck.verdict.flavors["cpu"] == "small"


def test_a_slice_finished_as_replaced_speaks_for_the_quota_until_its_replacement_is_reserved():
    # Kueue 0.14 writes Finished on the old slice before the new one's reservation.
    replaced = workload("grow-a", 4, reserved=True, finished=True)
    arriving = workload("grow-b", 6, reserved=False, at=T1, replaces="grow-a")
    status = cluster_snapshot(ready(elastic_cluster(6), 4), slices=[replaced, arriving], pods=[])
    assert status.state == "ready" and status.quota_reserved and status.workers_admitted == 4
    assert status.scale.state == "queued" and status.scale.to_workers == 6


def test_a_waiting_slice_asked_back_to_the_held_size_is_no_change():
    back = workload("grow-b", 4, reserved=False, at=T1, replaces="grow-a")
    status = cluster_snapshot(ready(elastic_cluster(4), 4), slices=[FIRST, back], pods=[])
    assert status.scale is None and status.workers_admitted == 4


def test_a_pin_the_autoscaler_grew_past_keeps_the_cluster_s_own_range():
    """Pinned at 5, then the autoscaler asked for 7: the range is still the annotation's
    (1 to 8), the pin still 5 — a later scale to 2 is within the cluster's range."""
    grown = elastic_cluster(5, pinned_min=1)
    grown["spec"]["workerGroupSpecs"][0]["replicas"] = 7
    status = cluster_snapshot(ready(grown, 5), slices=[FIRST], pods=[])
    assert (status.min_workers, status.max_workers) == (1, 8)
    assert status.pinned_workers == 5 and status.workers_desired == 7
