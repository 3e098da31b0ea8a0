"""RayJobs without a server: the request's validation, the manifest, the pod sets Kueue builds
on each version, and the state from KubeRay's ``jobDeploymentStatus``/``jobStatus`` (every
value of KubeRay v1.6.2's ``rayjob_types.go``) joined with the Workload's."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from jupyter_dw.domain.cluster_spec import SpecError, ValidatedClusterSpec
from jupyter_dw.domain.fit import FITS_NOW, MUST_WAIT, assess_fit
from jupyter_dw.domain.fit_suggestion import suggest, suggest_workers
from jupyter_dw.domain.kinds.rayjob import (
    MAX_RAYJOB_NAME_LENGTH,
    SUBMITTER_CPU,
    SUBMITTER_MEMORY,
    ValidatedRayJob,
    owning_rayjob,
    rayjob_info,
)
from jupyter_dw.domain.kueue_model import ClusterQueueQuota
from jupyter_dw.domain.quota import QuotaTree
from jupyter_dw.domain.workloads import workload_info
from tests.unit.test_fit import cpu_mem, cq_obj

QUEUES = ["team", "other"]
CLUSTER = {"workers": 2, "worker_cpu": "1", "worker_memory": "1Gi", "head_cpu": "1"}
GiB = Decimal(2**30)


def parse(data: dict[str, Any], priorities: list[str] | None = None) -> ValidatedRayJob:
    return ValidatedRayJob.from_request(
        data,
        lambda request: ValidatedClusterSpec.from_request(request, known_queues=QUEUES),
        QUEUES,
        "team",
        priorities,
    )


def errors(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        parse(data)
    return dict(caught.value.errors)


def job(**extra: Any) -> dict[str, Any]:
    return {"name": "train", "entrypoint": "python train.py", "cluster": CLUSTER, **extra}


def test_defaults_and_the_clusters_own_name_and_queue_are_the_jobs():
    parsed = parse(job(cluster={**CLUSTER, "name": "x", "queue": "other", "priority": "p"}))
    assert (parsed.queue, parsed.submission_mode, parsed.shutdown_after_finish) == (
        "team",
        "K8sJobMode",
        True,
    )
    assert (parsed.cluster.name, parsed.cluster.queue, parsed.cluster.priority) == (
        "train",
        "team",
        None,
    )
    back = parse(parsed.to_json())
    assert back == parsed


def test_every_bad_field_is_named_and_the_clusters_under_cluster():
    found = errors(
        {
            "name": "a" * (MAX_RAYJOB_NAME_LENGTH + 1),
            "queue": "missing",
            "submission_mode": "InteractiveMode",
            "shutdown_after_finish": False,
            "ttl_seconds_after_finished": -1,
            "runtime_env": ["pip"],
            "cluster": {"worker_memory": "lots", "wrkers": 2},
            "bogus": 1,
        }
    )
    assert set(found) == {
        "name",
        "queue",
        "entrypoint",
        "submission_mode",
        "shutdown_after_finish",
        "ttl_seconds_after_finished",
        "runtime_env",
        "cluster.worker_memory",
        "cluster.wrkers",
        "bogus",
    }
    assert "at most 47" in found["name"]
    assert "Kueue requires" in found["shutdown_after_finish"]
    assert "did you mean 'workers'" in found["cluster.wrkers"]
    assert errors(job(cluster=[1])) == {"cluster": found_message("cluster")}


def found_message(field: str) -> str:
    return errors(job(cluster=[1]))[field]


def test_an_autoscaling_cluster_is_refused_for_a_rayjob():
    found = errors(job(cluster={**CLUSTER, "min_workers": 1, "max_workers": 4}))
    assert sorted(found) == ["cluster.max_workers", "cluster.min_workers"]
    assert "fixed size" in found["cluster.max_workers"]
    fixed = parse(job(cluster={**CLUSTER, "min_workers": 2, "max_workers": 2}))
    assert (fixed.cluster.min_workers, fixed.cluster.max_workers) == (2, 2)


def test_the_manifest_is_a_suspended_kueue_rayjob_with_the_clusters_spec():
    parsed = parse(job(runtime_env={"pip": ["numpy"]}, ttl_seconds_after_finished=60))
    obj = parsed.to_rayjob("ns", owner="system:serviceaccount:ns:wb")
    assert (obj["apiVersion"], obj["kind"]) == ("ray.io/v1", "RayJob")
    labels = obj["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "team"
    spec = obj["spec"]
    assert spec["suspend"] is True and spec["shutdownAfterJobFinishes"] is True
    assert spec["ttlSecondsAfterFinished"] == 60
    assert spec["runtimeEnvYAML"] == '{"pip": ["numpy"]}'
    cluster = spec["rayClusterSpec"]
    raycluster = parsed.cluster.to_raycluster("ns", owner="system:serviceaccount:ns:wb")
    assert "suspend" not in cluster  # the RayJob is what Kueue suspends
    assert cluster == {k: v for k, v in raycluster["spec"].items() if k != "suspend"}
    assert cluster["enableInTreeAutoscaling"] is False
    assert cluster["authOptions"] == {"mode": "token"} and cluster["rayVersion"] == "2.60.0"
    # Who made it reads back as its record's owner, as a cluster's does (the sidebar's "mine").
    assert rayjob_info(obj, None).owner == "system:serviceaccount:ns:wb"
    assert rayjob_info(parsed.to_rayjob("ns"), None).to_json()["owner"] is None


@pytest.mark.parametrize(
    "mode, counted, head_cpu, sets",
    [
        ("K8sJobMode", True, Decimal(1), ["head", "workers", "submitter"]),
        ("K8sJobMode", False, Decimal(1), ["head", "workers", "submitter"]),
        ("SidecarMode", True, Decimal(1) + SUBMITTER_CPU, ["head", "workers"]),
        ("SidecarMode", False, Decimal(1), ["head", "workers"]),
    ],
)
def test_pod_sets_as_each_kueue_builds_them(mode, counted, head_cpu, sets):
    pod_sets = parse(job(submission_mode=mode)).pod_sets(sidecar_counted=counted)
    assert [p.name for p in pod_sets] == sets
    head = pod_sets[0]
    assert head.per_pod["cpu"] == head_cpu
    assert head.per_pod["memory"] == 2 * GiB + (SUBMITTER_MEMORY if head_cpu > 1 else 0)
    assert (pod_sets[1].count, pod_sets[1].per_pod["cpu"]) == (2, Decimal(1))
    if "submitter" in sets:
        submitter = pod_sets[2]
        assert submitter.count == 1 and submitter.tolerations == ()
        assert dict(submitter.per_pod) == {"cpu": SUBMITTER_CPU, "memory": SUBMITTER_MEMORY}


# -- what would fit now -------------------------------------------------------------------------


def queue_with_free_cpu(free: str) -> tuple[Any, QuotaTree]:
    """ClusterQueue ``x``: 8 CPU and 64Gi, all but ``free`` CPU in use."""
    used = Decimal(8) - Decimal(free)
    cq = ClusterQueueQuota.from_object(
        cq_obj("x", [cpu_mem("f", "8", "64Gi")], reserved={("f", "cpu"): str(used)})
    )
    tree = QuotaTree([cq], [])
    return tree.cluster_queue("x"), tree


@pytest.mark.parametrize(
    "mode, counted, workers, counting",
    [
        # 4.2 CPU free; head 1 + submitter 0.5 + N workers of 1 CPU: N = 2 (5.5 would not fit).
        ("K8sJobMode", True, 2, "the head and the submitter"),
        ("K8sJobMode", False, 2, "the head and the submitter"),
        # Kueue 0.19 counts the submitter in the head pod set: the same N.
        ("SidecarMode", True, 2, "the head"),
        # Kueue 0.14 does not count it: head 1 + N <= 4.2 gives N = 3.
        ("SidecarMode", False, 3, "the head"),
    ],
)
def test_the_suggestion_counts_the_submitter_as_the_fit_does(mode, counted, workers, counting):
    parsed = parse(job(submission_mode=mode, cluster={**CLUSTER, "workers": 6}))
    cluster_queue, tree = queue_with_free_cpu("4.2")

    def pod_sets(n: int) -> Any:
        return parsed.with_workers(n).pod_sets(sidecar_counted=counted)

    found = suggest_workers(parsed.cluster.workers, pod_sets, cluster_queue, tree)
    assert found is not None and found.workers == workers
    expected = assess_fit(pod_sets(workers), cluster_queue, tree)
    assert expected.verdict == FITS_NOW and found.requests == expected.requests
    assert assess_fit(pod_sets(workers + 1), cluster_queue, tree).verdict == MUST_WAIT
    assert found.message.endswith(f"with {counting})"), found.message
    # The job is unchanged but for its cluster's worker count.
    smaller = parsed.with_workers(workers)
    assert smaller.cluster.workers == workers and smaller.entrypoint == parsed.entrypoint
    assert (smaller.cluster.min_workers, smaller.cluster.max_workers) == (workers, workers)


def test_the_submitter_can_take_the_last_worker():
    # 3 CPU free: a cluster of head 1 + 1 worker of 1.5 would fit (2.5), but a K8sJobMode
    # RayJob also needs its submitter's 500m (3.0 for one worker, 4.5 for two).
    parsed = parse(job(cluster={**CLUSTER, "workers": 4, "worker_cpu": "1500m"}))
    cluster_queue, tree = queue_with_free_cpu("2.9")

    def pod_sets(n: int) -> Any:
        return parsed.with_workers(n).pod_sets(sidecar_counted=True)

    assert suggest_workers(4, pod_sets, cluster_queue, tree) is None
    as_cluster = suggest(parsed.cluster, cluster_queue, tree)
    assert as_cluster is not None and as_cluster.workers == 1


# -- state -------------------------------------------------------------------------------------


def rayjob(status: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "train", "namespace": "ns", "uid": "u1", **metadata},
        "spec": {"entrypoint": "python train.py", "submissionMode": "K8sJobMode"},
        "status": status or {},
    }


def workload(reserved: str | None, admitted: bool = False, **more: Any) -> Any:
    conditions = []
    if reserved is not None:
        conditions.append(
            {
                "type": "QuotaReserved",
                "status": reserved,
                "reason": "Pending" if reserved == "False" else "QuotaReserved",
                "message": "insufficient unused quota" if reserved == "False" else "",
                "lastTransitionTime": "2026-11-24T00:00:00Z",
            }
        )
    if admitted:
        conditions.append(
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "lastTransitionTime": "2026-11-24T00:00:01Z",
            }
        )
    obj = {
        "metadata": {"name": "rayjob-train-1", "namespace": "ns"},
        "spec": {"queueName": "team", "podSets": []},
        "status": {"conditions": conditions, **more},
    }
    return workload_info(obj)


ADMITTED = workload("True", admitted=True)


@pytest.mark.parametrize(
    "status, record, state",
    [
        ({}, None, "queued"),
        ({"jobDeploymentStatus": "Suspended"}, workload("False"), "queued"),
        ({}, ADMITTED, "admitted"),
        ({"jobDeploymentStatus": "Suspending"}, ADMITTED, "admitted"),
        ({"jobDeploymentStatus": "New"}, ADMITTED, "starting"),
        ({"jobDeploymentStatus": "Initializing"}, ADMITTED, "starting"),
        ({"jobDeploymentStatus": "Waiting"}, ADMITTED, "starting"),
        ({"jobDeploymentStatus": "Retrying"}, ADMITTED, "starting"),
        ({"jobDeploymentStatus": "Running", "jobStatus": "PENDING"}, ADMITTED, "starting"),
        ({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, ADMITTED, "running"),
        ({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, ADMITTED, "succeeded"),
        ({"jobDeploymentStatus": "Complete", "jobStatus": "STOPPED"}, ADMITTED, "stopped"),
        ({"jobDeploymentStatus": "Failed", "reason": "AppFailed"}, ADMITTED, "failed"),
        ({"jobDeploymentStatus": "ValidationFailed"}, None, "failed"),
    ],
)
def test_state_from_kuberay_and_the_workload(status, record, state):
    info = rayjob_info(rayjob(status), record)
    assert info.state == state
    assert info.final == (state in ("succeeded", "stopped", "failed"))
    if state == "queued" and record is not None:
        assert info.reason == "Pending" and info.message == "insufficient unused quota"


def test_a_failure_keeps_kuberays_words_and_deleting_wins():
    status = {
        "jobDeploymentStatus": "Failed",
        "reason": "JobDeploymentStatusTransitionGracePeriodExceeded",
        "message": "The RayJob has passed the grace period",
        "rayClusterName": "train-abcde",
        "jobId": "train-xyz",
    }
    info = rayjob_info(rayjob(status), ADMITTED)
    assert (info.reason, info.message) == (status["reason"], status["message"])
    assert (info.cluster, info.job_id) == ("train-abcde", "train-xyz")
    body = info.to_json()
    assert body["final"] is True and body["workload"] == "rayjob-train-1"
    gone = rayjob_info(rayjob(status, deletionTimestamp="2026-11-24T00:00:00Z"), ADMITTED)
    assert gone.state == "deleting"
    assert rayjob_info({"status": "junk"}, None).state == "queued"  # partial objects: no crash


def test_the_rayjob_owning_a_cluster():
    owned = {"metadata": {"ownerReferences": [{"kind": "RayJob", "name": "t", "controller": True}]}}
    assert owning_rayjob(owned) == "t"
    assert (
        owning_rayjob({"metadata": {"ownerReferences": [{"kind": "RayJob", "name": "t"}]}}) is None
    )
    assert owning_rayjob({"metadata": {}}) is None
