"""What the server sends reads back into the objects the core made: every answer a kernel gets
(``decode(type(x), x.to_json())`` is ``x`` again, and says the same JSON), every error (the same
class with its fields) and every message of the events socket (the two deltas applied to what
was told before). Objects are built from the sample Kubernetes objects the other unit tests
use."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Literal

import pytest

from jupyter_dw.core.cluster_results import (
    ClusterInfo,
    ClusterList,
    Deleted,
    FitResult,
    PodInfo,
    ScaleResult,
)
from jupyter_dw.core.context import SessionContext
from jupyter_dw.core.elastic import ASSUMED, AutoscalerQuota
from jupyter_dw.core.errors import (
    ClusterNotReady,
    DWError,
    InvalidFilter,
    InvalidName,
    InvalidRequest,
    InvalidScale,
    InvalidSpec,
    JobFailed,
    JobNotFound,
    KubeConfigError,
    KubeConflict,
    KubeError,
    KubeForbidden,
    KubeNotFound,
    KubeRejected,
    KubeUnreachable,
    NotElastic,
    NotInstalled,
    NotReady,
    RayError,
    RayNotInstalled,
    RayTokenUnavailable,
    RayUnreachable,
    RayVersionMismatch,
    RunsOnWorker,
    SettingsUnreadable,
    WrongState,
    _classes_by_code,
    error_from_json,
)
from jupyter_dw.core.feed_json import (
    FeedState,
    apply_positions,
    apply_queue_records,
    message_from_json,
)
from jupyter_dw.core.feed_messages import (
    Cause,
    ClusterChanged,
    HealthChanged,
    JobChanged,
    PositionsChanged,
    QueuesChanged,
    Snapshot,
    WorkloadChanged,
)
from jupyter_dw.core.kernel_calls import UnknownCall
from jupyter_dw.core.kind_results import JobList
from jupyter_dw.core.queue_results import QueueList
from jupyter_dw.core.workload_results import WorkloadList
from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.cluster_state import ClusterSnapshot, cluster_snapshot
from jupyter_dw.domain.fit import assess_fit, pod_sets_for_spec
from jupyter_dw.domain.fit_suggestion import suggest
from jupyter_dw.domain.freshness import Freshness, WatchHealth
from jupyter_dw.domain.identity import Identity
from jupyter_dw.domain.idle_rule import judge
from jupyter_dw.domain.json_decode import DecodeError, decode
from jupyter_dw.domain.kinds import KINDS
from jupyter_dw.domain.kinds.rayjob import RayJobInfo, ValidatedRayJob, rayjob_info
from jupyter_dw.domain.kinds.trainjob import TrainJobInfo, ValidatedTrainJob, trainjob_info
from jupyter_dw.domain.kueue_model import ClusterQueueQuota
from jupyter_dw.domain.milestones import milestones
from jupyter_dw.domain.priorities import PriorityClass
from jupyter_dw.domain.quota import QuotaTree, queue_summaries
from jupyter_dw.domain.ray_auth import OPEN_WARNING, RayAuth
from jupyter_dw.domain.ray_jobs import JobList as RayJobList
from jupyter_dw.domain.ray_jobs import JobLogs, JobStopped, RayJob
from jupyter_dw.domain.spec_policy import SpecPolicy
from jupyter_dw.domain.stop_record import StopRecord
from jupyter_dw.domain.usage import (
    ClusterUsage,
    QueueHolding,
    RayLoad,
    ResourceUse,
    cluster_pods,
    cluster_usage,
    pod_usages,
)
from jupyter_dw.domain.workloads import WorkloadInfo, workload_info
from jupyter_dw.k8s.access import NEEDED_PERMISSIONS, AccessResult
from jupyter_dw.k8s.discovery import Discovery
from jupyter_dw.k8s.elastic import ElasticJobs
from jupyter_dw.k8s.errors import (
    KubeApiError,
    KubeBusy,
    KubeTimeout,
    KubeUnauthorized,
    WebhookUnavailable,
)
from jupyter_dw.ray_head.errors import RayAuthRefused, RayRejected
from tests.openapi_check import check_event
from tests.unit import test_cluster_state as cs
from tests.unit import test_slices as sl
from tests.unit.test_admission_checks import with_checks
from tests.unit.test_event_deltas import answer, record
from tests.unit.test_fit import cpu_mem, cq_obj
from tests.unit.test_idle_rule import RULE, SINCE, at
from tests.unit.test_quota import lq
from tests.unit.test_rayjobs import job, rayjob
from tests.unit.test_rayjobs import parse as parse_rayjob
from tests.unit.test_rayjobs import workload as rayjob_workload
from tests.unit.test_trainjobs import parse as parse_trainjob
from tests.unit.test_trainjobs import trainjob
from tests.unit.test_usage import metrics, pod
from tests.unit.test_workloads import preempted, real


def through_json(value: Any) -> Any:
    """``value`` as it arrives: written as JSON text and read again."""
    return json.loads(json.dumps(value))


def round_trip(kind: Any, made: Any, *, equal: bool = True) -> Any:
    """``made``'s JSON decoded as ``kind``: the same JSON again, and (``equal``) the same
    object."""
    sent = through_json(made.to_json())
    back = decode(kind, sent)
    assert type(back) is type(made)
    assert back.to_json() == sent
    if equal:
        assert back == made
    return back


# -- clusters ---------------------------------------------------------------------------------

READY_RC = cs.running(cs.raycluster(**cs.kuberay_status(head="ready", ready_workers=2)))
PREEMPTED_WL = cs.evicted_workload(
    "Preempted", cs.PREEMPT_MSG, cs.cond("Preempted", "True", "InClusterQueue", cs.PREEMPT_MSG)
)


def stopped_rc() -> tuple[dict[str, Any], dict[str, Any]]:
    rc = cs.raycluster()
    reason = {"by": "idle-rule", "idle_seconds": 1800, "waiting": 2, "action": "stop"}
    rc["metadata"]["annotations"] = {
        **rc["metadata"]["annotations"],
        **StopRecord("sa", "2026-11-26T10:00:00Z", reason).annotations(),
    }
    wl = cs.evicted_workload("Deactivated", "The workload is deactivated")
    wl["spec"]["active"] = False
    return rc, wl


def elastic() -> ClusterSnapshot:
    pods = [sl.worker_pod(f"w{i}") for i in range(4)] + [sl.worker_pod("w4", gated=True)] * 2
    return cluster_snapshot(
        sl.ready(sl.elastic_cluster(6), 4),
        pending=sl.POSITION,
        pods=pods,
        slices=[sl.FIRST, sl.WAITING],
    )


SNAPSHOTS = {
    "queued": cluster_snapshot(
        cs.raycluster(), cs.workload(cs.PENDING_V1BETA2), cs.pending_entry()
    ),
    "preempted": cluster_snapshot(READY_RC, PREEMPTED_WL, cs.pending_entry(0, 0)),
    "ready": cluster_snapshot(READY_RC, cs.admitted_workload()),
    "stopped": cluster_snapshot(*stopped_rc()),
    "capacity": cluster_snapshot(
        cs.raycluster(),
        with_checks(
            cs.workload(cs.RESERVED, admission=True), ("capacity", "Pending", "asking for nodes")
        ),
    ),
    "elastic": elastic(),
    "no workload": cluster_snapshot({"metadata": {"name": "bare"}}),
}


def busy_usage() -> ClusterUsage:
    pods = cluster_pods([pod("h"), pod("w1", cpu="2", memory="4Gi")], "c")
    ray = RayLoad({"CPU": (Decimal("1.5"), Decimal(3)), "GPU": (Decimal(0), Decimal(1))}, 1, 0, 3)
    return cluster_usage(pods, pod_usages([metrics("h", "213m"), metrics("w1", "1200m")]), ray=ray)


def idle_usage() -> ClusterUsage:
    pods = cluster_pods([pod("h")], "c")
    return cluster_usage(pods, None, "no metrics API", RayLoad(None, 0, 0, 0), None)


def cluster_info(snapshot: ClusterSnapshot, **more: Any) -> ClusterInfo:
    raycluster = READY_RC if snapshot.state == "ready" else cs.raycluster()
    steps = milestones(snapshot, raycluster, cs.admitted_workload())
    pods = (
        PodInfo("demo-head-x7k2p", "head", "Running", True),
        PodInfo("demo-workers-worker-abcde", "worker", "Pending", False),
    )
    more.setdefault("ray_auth", RayAuth("token"))  # the core always reads one
    return ClusterInfo(snapshot, f"/dw/ray/{snapshot.name}/", "alice", pods, steps, **more)


CLUSTERS = {
    **{name: cluster_info(s) for name, s in SNAPSHOTS.items()},
    "in use, reconnecting": cluster_info(
        SNAPSHOTS["ready"],
        freshness=Freshness("reconnecting", "the watch of pods broke", 1764151200.25),
        ray_auth=RayAuth("k8s"),
        usage=busy_usage(),
        idle_since=None,
    ),
    "idle, acted on": cluster_info(
        SNAPSHOTS["ready"],
        ray_auth=RayAuth("none", OPEN_WARNING),
        usage=idle_usage(),
        idle_since=SINCE,
        idle_verdict=judge(RULE, SINCE, at(70), waiting=2),
    ),
    "idle, held back": cluster_info(
        SNAPSHOTS["ready"],
        usage=idle_usage(),
        idle_since=SINCE,
        idle_verdict=judge(RULE, SINCE, at(55), waiting=0),
    ),
    "without a proxy or an owner": ClusterInfo(
        SNAPSHOTS["queued"], None, None, (), (), ray_auth=RayAuth("disabled")
    ),
}


@pytest.mark.parametrize("made", CLUSTERS.values(), ids=CLUSTERS.keys())
def test_a_cluster_reads_back_as_the_same_cluster(made: ClusterInfo) -> None:
    back = round_trip(ClusterInfo, made)
    assert back.timeline == made.timeline and back.ray_address == made.ray_address


def test_the_clusters_that_were_built_show_every_part() -> None:
    # The objects above are the ones worth reading back: each part is there in some of them.
    shown = [c.to_json() for c in CLUSTERS.values()]
    for key in ("preempted_by", "scale", "stopped", "position_in_local_queue", "ray_auth"):
        assert any(c[key] for c in shown), key
    assert any(c["admission_checks"] for c in shown) and any(c["pod_set_flavors"] for c in shown)
    usage = [c["usage"] for c in shown if c["usage"]]
    assert any(u["ray"]["resources"] for u in usage) and any(u["idle_action"] for u in usage)
    assert {u["idle_action"]["act"] for u in usage if u["idle_action"]} == {True, False}


def test_a_since_reads_back_to_its_milliseconds() -> None:
    fresh = Freshness("stale", "no answer", 1764151200.123456)
    back = round_trip(Freshness, fresh, equal=False)
    assert back.since == pytest.approx(1764151200.123, abs=1e-6)
    assert round_trip(Freshness, replace(fresh, since=None)).since is None


def test_the_cluster_list_and_a_delete() -> None:
    made = ClusterList("ns", True, tuple(CLUSTERS.values()))
    assert round_trip(ClusterList, made).names() == made.names()
    round_trip(ClusterList, ClusterList("ns", False, ()))
    round_trip(Deleted, Deleted("demo", "ns"))


# -- queues and workloads ---------------------------------------------------------------------


def hidden_queues() -> QueueList:
    summaries = queue_summaries([lq("team-a", "cq")], None)
    return QueueList("ns", "v1beta1", False, False, tuple(summaries))


QUEUE_LISTS = {
    "with quota": answer(2),
    "with priority classes": answer(
        0, priority_classes=(PriorityClass("high", 1000, "urgent"), PriorityClass("low", 10))
    ),
    "quota hidden": hidden_queues(),
    "none": QueueList("ns", None, True, True, ()),
}


@pytest.mark.parametrize("made", QUEUE_LISTS.values(), ids=QUEUE_LISTS.keys())
def test_the_queues_read_back(made: QueueList) -> None:
    back = round_trip(QueueList, made)
    assert back.default == made.default


def preempted_workload() -> WorkloadInfo:
    workload = preempted()
    name = workload["metadata"]["name"]
    found = workload_info(workload, {**cs.pending_entry(0, 2), "metadata": {"name": name}})
    assert found is not None and found.preempted_by is not None
    return found


def workload_records() -> list[WorkloadInfo]:
    found = [
        workload_info(real(key))
        for key in ("v1beta2-admitted", "v1beta2-pending", "v1beta1-admitted", "v1beta1-pending")
    ]
    prioritized = real("v1beta2-pending")
    prioritized["spec"]["priority"] = 1000
    prioritized["spec"]["priorityClassRef"] = {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    found.append(workload_info(prioritized))
    records = [r for r in found if r is not None]
    return [*records, record("w1", 3), preempted_workload()]


def test_the_workloads_read_back() -> None:
    records = workload_records()
    assert any(r.resources for r in records) and any(r.preempted_by for r in records)
    assert any(r.position_in_local_queue is not None for r in records)
    assert any(r.owner for r in records) and any(r.priority.class_name for r in records)
    for made in records:
        round_trip(WorkloadInfo, made)
    round_trip(
        WorkloadList, WorkloadList("ns", True, tuple(records), queue="team", kind="Job.batch")
    )
    round_trip(WorkloadList, WorkloadList("ns", False, ()))


# -- fits and scales --------------------------------------------------------------------------


def queue_with_free_cpu(free: str) -> tuple[ClusterQueueQuota | None, QuotaTree]:
    used = Decimal(8) - Decimal(free)
    queue = ClusterQueueQuota.from_object(
        cq_obj("x", [cpu_mem("f", "8", "64Gi")], reserved={("f", "cpu"): str(used)})
    )
    tree = QuotaTree([queue], [])
    return tree.cluster_queue("x"), tree


def cluster_fit(workers: int, named: bool, **request: Any) -> FitResult:
    spec = ValidatedClusterSpec.from_request(
        {"name": "demo", "queue": "x", "workers": workers, "env": {"A": "1"}, **request}
    )
    queue, tree = queue_with_free_cpu("4.2")
    verdict = assess_fit(pod_sets_for_spec(spec), queue, tree, 2)
    named_spec = spec if named else replace(spec, name="fit-check")
    suggestion = suggest(spec, queue, tree)
    return FitResult(verdict, named_spec, named, None if named else "the only queue", suggestion)


def rayjob_request() -> ValidatedRayJob:
    return parse_rayjob(job(runtime_env={"pip": ["torch"]}, ttl_seconds_after_finished=60))


def trainjob_request(**fields: Any) -> ValidatedTrainJob:
    return parse_trainjob(**fields)


FITS = {
    "a cluster that must wait, with a suggestion": cluster_fit(6, True),
    "a nameless cluster that fits": cluster_fit(
        1, False, tolerations=[{"key": "gpu", "operator": "Exists"}], node_selector={"z": "a"}
    ),
    "quota hidden": FitResult(
        assess_fit({"cpu": Decimal(3)}, None, None),
        ValidatedClusterSpec.from_request({"name": "rc", "queue": "q", "workers": 2}),
        True,
        None,
        None,
    ),
    "a RayJob": FitResult(
        assess_fit({"cpu": Decimal("3.5")}, None, None), rayjob_request(), True, None, None
    ),
    "a RayJob with its placeholders empty": FitResult(
        assess_fit({"cpu": Decimal("3.5")}, None, None),
        replace(rayjob_request(), entrypoint=""),
        True,
        None,
        None,
    ),
    "a TrainJob": FitResult(
        assess_fit({"cpu": Decimal(4)}, None, None),
        trainjob_request(
            num_nodes=2, resources_per_node={"cpu": "2", "memory": "4Gi", "gpu": 1}, command=["x"]
        ),
        True,
        None,
        None,
    ),
    "a TrainJob of its runtime's shape": FitResult(
        assess_fit({"cpu": Decimal(4)}, None, None), trainjob_request(), True, None, None
    ),
}


@pytest.mark.parametrize("made", FITS.values(), ids=FITS.keys())
def test_a_fit_reads_back_with_its_spec(made: FitResult) -> None:
    back = round_trip(FitResult, made)
    assert type(back.spec) is type(made.spec)


def test_the_fits_that_were_built_show_every_part() -> None:
    shown = [f.to_json() for f in FITS.values()]
    assert {f["verdict"] for f in shown} >= {"must-wait", "fits-now", "unknown"}
    assert any(f["suggestion"] for f in shown) and any(f["spec"]["name"] is None for f in shown)
    assert any(f["spec"].get("tolerations") for f in shown)


def test_a_scale_reads_back() -> None:
    info = cluster_info(SNAPSHOTS["elastic"])
    for fit in (sl._scale_up(6, "6"), sl._scale_up(6, "6001m"), None):
        made = ScaleResult(info, fit, dry_run=fit is not None, changed=fit is None)
        back = round_trip(ScaleResult, made, equal=fit is None)
        assert back.cluster == info and back.message == made.message
        if fit is not None:
            # What the JSON keeps of the fit's verdict; the rest is not sent.
            assert back.fit is not None and back.fit.verdict.requests == fit.verdict.requests
            assert (back.fit.starts_now, back.fit.verdict.verdict) == (
                fit.starts_now,
                fit.verdict.verdict,
            )


# -- workload kinds ---------------------------------------------------------------------------


def rayjob_records() -> list[RayJobInfo]:
    failed = {
        "jobDeploymentStatus": "Failed",
        "reason": "AppFailed",
        "message": "it broke",
        "rayClusterName": "train-abcde",
        "jobId": "train-xyz",
        "startTime": "2026-11-24T00:00:02Z",
        "endTime": "2026-11-24T00:10:00Z",
    }
    waiting = rayjob_workload("False")
    waiting = replace(waiting, position_in_local_queue=1, position_in_cluster_queue=4)
    running = rayjob_info(
        rayjob({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, creationTimestamp="t0"),
        rayjob_workload("True", admitted=True),
    )
    return [
        rayjob_info(rayjob(), None),
        rayjob_info(rayjob(), waiting),
        rayjob_info(rayjob(failed), rayjob_workload("True", admitted=True)),
        replace(running, owner="alice", usage=busy_usage(), idle_since=None),
        replace(running, usage=idle_usage(), idle_since=SINCE),
    ]


def trainjob_records() -> list[TrainJobInfo]:
    done = [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-11-24T01:00:00Z"}]
    admitted = workload_info(real("v1beta2-admitted"))
    assert admitted is not None
    return [
        trainjob_info(trainjob(), None),
        trainjob_info(trainjob(suspend=False, jobsStatus=[{"name": "node", "ready": 2}]), admitted),
        replace(
            trainjob_info(trainjob(suspend=False, conditions=done), admitted),
            usage=idle_usage(),
            idle_since=SINCE,
        ),
    ]


@pytest.mark.parametrize(
    ("kind", "records"),
    [(RayJobInfo, rayjob_records()), (TrainJobInfo, trainjob_records())],
    ids=["rayjobs", "trainjobs"],
)
def test_a_kinds_records_and_list_read_back(kind: type, records: list[Any]) -> None:
    assert any(r.workload is not None and r.workload.admitted_at for r in records)
    assert any(r.workload is None for r in records) and any(r.usage for r in records)
    for made in records:
        back = round_trip(kind, made)
        assert back.timeline == made.timeline and back.final == made.final
    plural = next(k.plural for k in KINDS if k.record_type is kind)
    jobs = JobList("ns", True, tuple(records), plural)
    assert round_trip(JobList, jobs).plural == plural
    round_trip(JobList, JobList("ns", False, (), plural))


def test_a_job_list_names_its_kind() -> None:
    with pytest.raises(DecodeError, match="rayjobs, trainjobs"):
        decode(JobList, {"namespace": "ns", "positions_visible": True, "jobs": []})


# -- Ray's jobs -------------------------------------------------------------------------------

RAY_JOB = RayJob.from_ray(
    {
        "type": "SUBMISSION",
        "job_id": "02000000",
        "submission_id": "raysubmit_AbC123",
        "entrypoint": "python -c 'print(\"hi\")'",
        "status": "FAILED",
        "message": "Job entrypoint command failed with exit code 1",
        "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR",
        "start_time": 1764151200123,
        "end_time": 1764151260456,
        "metadata": {"owner": "alice"},
        "driver_exit_code": 1,
        "runtime_env": {"pip": ["x"]},
    }
)


def test_ray_jobs_read_back() -> None:
    assert round_trip(RayJob, RAY_JOB).command == RAY_JOB.command
    round_trip(RayJob, RayJob("raysubmit_x", "python a.py", "PENDING"))
    round_trip(RayJobList, RayJobList("demo", (RAY_JOB, RayJob("raysubmit_y", "x", "RUNNING"))))
    round_trip(JobLogs, JobLogs("demo", "raysubmit_AbC123", "line 1\nline 2\n", truncated=True))
    round_trip(JobStopped, JobStopped("demo", "raysubmit_AbC123", stopped=False))


# -- the session's context --------------------------------------------------------------------


def context() -> SessionContext:
    discovery = Discovery(
        kueue_served=("v1beta2", "v1beta1"),
        kueue_version="v1beta2",
        kueue_resources=frozenset({"localqueues", "workloads"}),
        cohort_version="v1beta2",
        visibility_version="v1beta2",
        ray_version="v1",
        kinds_served=frozenset({"rayjobs"}),
        ray_auth_options=True,
    )
    permissions = tuple(
        AccessResult(p, i % 3 != 0, None if i % 3 else "RBAC: no rule")
        for i, p in enumerate(NEEDED_PERMISSIONS)
    )
    health = WatchHealth(
        {"rayclusters": Freshness(), "pods": Freshness("stale", "403", 1764151200.5)},
        Freshness("reconnecting", "Kueue does not answer", 1764151100.0),
    )
    return SessionContext(
        namespace="ns",
        namespace_source="service account",
        api_server="https://10.0.0.1:443",
        credentials_source="in-cluster",
        credentials_description="service account ns/wb",
        identity=Identity("system:serviceaccount:ns:wb", ("system:authenticated",)),
        discovery=discovery,
        permissions=permissions,
        caches={"rayclusters": (True, None), "pods": (False, "forbidden")},
        health=health,
        elastic_jobs=ElasticJobs(True, "dry-run", "Kueue accepted an elastic RayCluster"),
        autoscaler_quota=AutoscalerQuota(False, "workload"),
        policy=SpecPolicy(default_worker_cpu="750m", max_worker_cpu="4", max_workers=8),
    )


def test_the_context_reads_back_with_what_it_publishes() -> None:
    made = context()
    back = round_trip(SessionContext, made, equal=False)
    assert back.policy.published_sizes() == made.policy.published_sizes()
    assert back.policy.published_sizes()["worker_cpu"] == {"default": "750m", "max": "4"}
    assert (back.identity, back.permissions, back.caches) == (
        made.identity,
        made.permissions,
        made.caches,
    )
    assert (back.health, back.elastic_jobs, back.autoscaler_quota) == (
        made.health,
        made.elastic_jobs,
        made.autoscaler_quota,
    )
    # Not in the JSON: which Kueue kinds are served (a client asks the server, not Kubernetes).
    assert back.discovery == replace(made.discovery, kueue_resources=frozenset())
    plain = replace(
        made, identity=Identity(None), elastic_jobs=ElasticJobs(None), autoscaler_quota=ASSUMED
    )
    round_trip(SessionContext, replace(plain, discovery=Discovery()), equal=False)


# -- errors -----------------------------------------------------------------------------------

ERRORS = [
    DWError("The events stream failed", "KeyError: 'x'"),
    UnknownCall("A kernel may not call session.stop", "not listed", "Same versions."),
    InvalidRequest(
        "Invalid scale request", "dry_run must be a boolean", "Nothing.", {"dry_run": "no"}
    ),
    InvalidSpec("Invalid cluster spec", "workers: -1", "Fix them.", {"workers": "must be >= 0"}),
    InvalidName("Invalid RayCluster name 'A'", "not DNS", "Names are...", {"name": "not DNS"}),
    InvalidScale("Invalid number of workers", "above 8", None, {"workers": "above 8"}),
    NotElastic("demo cannot change size", "not elastic", "Make it elastic."),
    InvalidFilter("Invalid workload filter", "queue: bad", "Filter by...", {"queue": "bad"}),
    WrongState(
        "Ray cluster 'demo' is not stopped", "it is ready", "Nothing.", "ready", "not_stopped"
    ),
    WrongState("Ray cluster 'demo' cannot be stopped", "queued", None, "queued", "not_admitted"),
    SettingsUnreadable("A settings file cannot be read", "/etc/x: bad JSON", "Fix it."),
    KubeError("Kubernetes failed", "boom"),
    KubeConfigError("No credentials", "no service account", "Mount one."),
    KubeUnreachable("Cannot reach the API server", "connection refused", "Check it."),
    KubeTimeout("The API server did not answer", "after 10 s", "Try again."),
    KubeUnauthorized("The API server refused the credentials", "401", "Renew the token."),
    KubeBusy("The API server is busy", "429", "Try again in 5 s.", 5),
    WebhookUnavailable(
        "Kueue's webhook", "timeout", "Kueue is down.", "vwl", "kueue_webhook_unavailable"
    ),
    WebhookUnavailable("A webhook", "timeout", "Ask.", "vrc.ray.io", "webhook_unavailable"),
    KubeForbidden("Forbidden", "cannot list", "Ask for it.", "list localqueues.kueue.x-k8s.io"),
    KubeApiError(500, "The API server failed", "etcd"),
    KubeNotFound("Ray cluster 'demo' not found"),
    KubeConflict("A RayCluster named 'demo' exists", "AlreadyExists", "Pick another name."),
    KubeRejected(422, "The API server refused it", "spec.x: bad", None, {"request": "spec.x: bad"}),
    NotInstalled("Kueue", "no LocalQueues served", "Install Kueue.", "kueue_not_installed"),
    NotInstalled("Kubeflow Trainer", "no trainjobs", "Install it.", "trainer_not_installed"),
    NotInstalled("KubeRay", "no rayclusters", "Install KubeRay.", "kuberay_not_installed"),
    NotReady("Not ready", "the session is starting", "Wait."),
    RayError("Ray failed", "500"),
    RayUnreachable("The Ray head does not answer", "refused", None),
    RayAuthRefused("Ray refused the token", "401", None),
    RayRejected("Ray refused the request", "bad entrypoint", None),
    JobNotFound("No job raysubmit_x", None, None),
    ClusterNotReady("demo is not ready", "its head is starting", "Wait.", "starting"),
    RayTokenUnavailable("No token", "secret missing", None),
    RayNotInstalled("Ray is not installed", None, "pip install ray"),
    RayVersionMismatch("Ray versions differ", "2.9 vs 2.60", None),
    JobFailed("The job failed", "exit 1", None, RAY_JOB),
    RunsOnWorker("Ray cluster demo runs on worker cluster w1", "not reachable here", "Ask."),
]


@pytest.mark.parametrize("made", ERRORS, ids=lambda e: f"{type(e).__name__}-{e.code}")
def test_an_error_reads_back_as_its_class_with_its_fields(made: DWError) -> None:
    sent = through_json(made.to_json())
    back = error_from_json(made.status, sent)
    assert type(back) is type(made)
    assert back.to_json() == sent
    assert (back.status, back.code, str(back)) == (made.status, made.code, str(made))
    for name in made.shown:
        assert getattr(back, name) == getattr(made, name)
    # Inside a message there is no HTTP status: the class's own stands in.
    assert type(error_from_json(None, sent)) is type(made)


def test_every_code_a_server_sends_is_read_back() -> None:
    codes = [e.code for e in ERRORS]
    assert set(_classes_by_code()) <= set(codes)
    assert {k.install.code for k in KINDS} <= set(NotInstalled.codes)


def test_one_class_per_code() -> None:
    seen: dict[str, type] = {}
    waiting: list[type[DWError]] = [DWError]
    while waiting:
        cls = waiting.pop()
        waiting.extend(cls.__subclasses__())
        if not cls.__module__.startswith("jupyter_dw.notebook"):
            for code in cls.codes:
                assert seen.setdefault(code, cls) is cls, f"{code}: {seen[code]} and {cls}"


def test_an_unknown_or_missing_code_is_a_plain_error() -> None:
    back = error_from_json(403, {"error": "Forbidden", "reason": "Forbidden", "hint": None})
    assert type(back) is DWError and (back.status, back.code) == (403, "error")
    other = error_from_json(400, {"error": "x", "reason": None, "hint": None, "code": "new_one"})
    assert type(other) is DWError and (other.status, other.code) == (400, "new_one")
    assert other.to_json()["code"] == "new_one"


# -- the events socket ------------------------------------------------------------------------

CAUSE = Cause("ClusterQueue", "cq", "MODIFIED")


NOTHING_TOLD = FeedState()


def read(message: Any, state: FeedState = NOTHING_TOLD) -> Any:
    sent = through_json(message.to_json())
    check_event(sent)
    back = message_from_json(sent, state)
    assert back.to_json() == sent
    return back


def snapshot(**more: Any) -> Snapshot:
    infos = (CLUSTERS["idle, acted on"], CLUSTERS["queued"])
    holding = QueueHolding(1, {"cpu": ResourceUse(Decimal(2), Decimal("0.213"))})
    fields: dict[str, Any] = {
        "namespace": "ns",
        "queues": answer(2),
        "queues_error": None,
        "clusters": infos,
        "clusters_error": None,
        "positions_visible": True,
        "health": WatchHealth({"rayclusters": Freshness()}),
        "workloads": tuple(workload_records()),
        "jobs": {
            "rayjobs": (tuple(rayjob_records()), None),
            "trainjobs": (
                None,
                NotInstalled("Kubeflow Trainer", "no", "x", "trainer_not_installed"),
            ),
        },
        "kinds": KINDS,
        "holdings": {"team-a": holding},
    }
    return Snapshot(**{**fields, **more})


def test_the_snapshot_reads_back_whole() -> None:
    made = snapshot()
    back = read(made)
    assert isinstance(back, Snapshot)
    assert (back.queues, back.clusters, back.workloads, back.health, back.holdings) == (
        made.queues,
        made.clusters,
        made.workloads,
        made.health,
        made.holdings,
    )
    assert back.kinds == KINDS and back.jobs["rayjobs"] == made.jobs["rayjobs"]
    records, error = back.jobs["trainjobs"]
    assert records is None and isinstance(error, NotInstalled)


def test_a_snapshot_of_errors_reads_back() -> None:
    denied = KubeForbidden("Forbidden", "cannot list", "Ask.", "list rayclusters.ray.io")
    made = snapshot(
        namespace=None,
        queues=None,
        queues_error=NotInstalled("Kueue", "none", "Install.", "kueue_not_installed"),
        clusters=None,
        clusters_error=denied,
        workloads=None,
        workloads_error=denied,
        health=None,
        jobs={},
        kinds=(),
        holdings=None,
    )
    back = read(made)
    assert (
        isinstance(back.clusters_error, KubeForbidden)
        and back.clusters_error.denied == denied.denied
    )
    assert isinstance(back.queues_error, NotInstalled) and back.kinds == ()


def test_the_queues_whole_and_a_queue_changed_alone() -> None:
    before, now = answer(), answer(2)
    whole = read(QueuesChanged(CAUSE, before, None))
    assert whole == QueuesChanged(CAUSE, before, None)
    state = FeedState().after(whole)
    changed = now.changed_since(before)
    assert changed == ("b",)
    delta = read(QueuesChanged(CAUSE, now, None, changed), state)
    # The reader gets the whole answer, as a view in the server's process does.
    assert delta == QueuesChanged(CAUSE, now, None, changed)
    assert state.after(delta).queues == now
    failed = read(QueuesChanged(CAUSE, None, KubeForbidden("Forbidden", None, None, "list x")))
    assert failed.queues is None and isinstance(failed.error, KubeForbidden)


def test_a_queue_delta_needs_the_queues_told_before() -> None:
    message = through_json(QueuesChanged(CAUSE, answer(2), None, ("b",)).to_json())
    with pytest.raises(DecodeError, match="queues answer told before"):
        message_from_json(message, FeedState())
    with pytest.raises(DecodeError, match=r"LocalQueue.*b.*not in"):
        message_from_json(message, FeedState(queues=answer(0, "a")))


def test_positions_move_the_records_told_before() -> None:
    told = {r.name: r for r in (record("a", 0), record("b", 1), record("c", 2))}
    moved = (record("b", 0), record("c", 1))
    state = FeedState(workloads=told)
    back = read(PositionsChanged("lq", Cause("Workload", "a", "DELETED"), moved), state)
    assert back == PositionsChanged("lq", Cause("Workload", "a", "DELETED"), moved)
    assert state.after(back).workloads == {**told, "b": moved[0], "c": moved[1]}
    assert apply_positions(told, {"c": [None, None]})[0].position_in_local_queue is None
    with pytest.raises(DecodeError, match=r"Workload.*z.*not among"):
        apply_positions(told, {"z": [0, 0]})


def test_a_workload_message_changes_the_records_told() -> None:
    made = record("a", 4)
    added = read(WorkloadChanged("ADDED", "a", "lq", Cause("Workload", "a", "ADDED"), made))
    assert added == WorkloadChanged("ADDED", "a", "lq", Cause("Workload", "a", "ADDED"), made)
    state = FeedState().after(added)
    assert state.workloads == {"a": made}
    gone = read(WorkloadChanged("DELETED", "a", "lq", Cause("Workload", "a", "DELETED"), None))
    assert state.after(gone).workloads == {}


def test_a_cluster_message_with_its_queues_holding() -> None:
    holding = QueueHolding(2, {"cpu": ResourceUse(Decimal(3), None)})
    info = CLUSTERS["idle, acted on"]
    made = ClusterChanged(
        "MODIFIED",
        "demo",
        Cause("Pod", "demo-head", "MODIFIED"),
        info,
        ("HeadReady",),
        ("team-a", holding),
    )
    assert read(made) == made
    gone = ClusterChanged("DELETED", "demo", Cause("RayCluster", "demo", "DELETED"), None, ())
    assert read(gone) == gone


@pytest.mark.parametrize(
    "record_of",
    [rayjob_records()[2], trainjob_records()[1], None],
    ids=["rayjob", "trainjob", "gone"],
)
def test_a_job_message(record_of: Any) -> None:
    word = "trainjob" if isinstance(record_of, TrainJobInfo) else "rayjob"
    made = JobChanged(
        word,
        "MODIFIED" if record_of else "DELETED",
        "j",
        Cause("Workload", "w", "MODIFIED"),
        record_of,
    )
    assert read(made) == made


def test_health_and_the_closing_error() -> None:
    health = WatchHealth({"pods": Freshness("stale", "403", 1764151200.5)}, Freshness())
    assert read(HealthChanged(health)) == HealthChanged(health)
    failure = message_from_json(
        through_json({"type": "error", **DWError("The events stream failed", "boom").to_json()}),
        FeedState(),
    )
    assert type(failure) is DWError and failure.reason == "boom"
    with pytest.raises(DecodeError, match="not a message of the change feed: type 'jobs'"):
        message_from_json(
            {"type": "jobs", "cluster": "x", "jobs": None, "error": None}, FeedState()
        )


def test_apply_queue_records_keeps_the_rest() -> None:
    before = answer(0, "a", "b", "c")
    now = answer(2, "a", "b", "c")
    assert apply_queue_records(before, [now["b"]]) == now


# -- the decoder itself -----------------------------------------------------------------------


def test_where_the_json_differs_is_named() -> None:
    sent = through_json(ClusterList("ns", True, tuple(CLUSTERS.values())).to_json())
    sent["clusters"][2]["state"] = "sleeping"
    with pytest.raises(DecodeError, match=r"^clusters\[2\]\.state: must be one of 'queued'"):
        decode(ClusterList, sent)
    workloads = through_json(workload_records()[0].to_json())
    workloads["requests"]["cpu"] = "lots"
    with pytest.raises(
        DecodeError, match=r"requests\['cpu'\]: 'lots' is not a Kubernetes quantity"
    ):
        decode(WorkloadInfo, workloads)
    del workloads["name"]
    with pytest.raises(DecodeError, match="WorkloadInfo has no 'name'"):
        decode(WorkloadInfo, workloads)
    with pytest.raises(DecodeError, match=r"usage\.ray\.jobs_running: must be a whole number"):
        bad = through_json(CLUSTERS["in use, reconnecting"].to_json())
        bad["usage"]["ray"]["jobs_running"] = True
        decode(ClusterInfo, bad)


@dataclass(frozen=True)
class _Grown:
    """A record that gained fields (MultiKueue's worker cluster, say) since its reader was
    written: the decoder reads them by their hints, with nothing else to change."""

    name: str
    worker_cluster: str | None = None
    figures: tuple[Decimal, ...] = ()
    by_flavor: dict[str, Literal["a", "b"]] = field(default_factory=dict)


def test_new_plain_fields_are_read_and_extra_keys_ignored() -> None:
    back = decode(
        _Grown,
        {
            "name": "x",
            "worker_cluster": "east",
            "figures": ["1", "500m"],
            "by_flavor": {"f": "a"},
            "summary": "made",
        },
    )
    assert back == _Grown("x", "east", (Decimal(1), Decimal("0.5")), {"f": "a"})
    assert decode(_Grown, {"name": "y"}) == _Grown("y")


def test_a_since_that_is_not_a_time_is_refused() -> None:
    with pytest.raises(DecodeError, match="since: must be an RFC 3339 time"):
        decode(Freshness, {"state": "stale", "reason": None, "since": "yesterday"})
    assert datetime.fromtimestamp(
        decode(
            Freshness, {"state": "live", "reason": None, "since": "2026-11-26T10:00:00.500Z"}
        ).since
        or 0,
        tz=timezone.utc,
    ) == datetime(2026, 11, 26, 10, 0, 0, 500000, tzinfo=timezone.utc)
