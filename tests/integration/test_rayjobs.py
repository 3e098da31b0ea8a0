"""KubeRay RayJobs through Kueue on the real control plane, from a workbench: fit, create,
Kueue's admission, KubeRay's cluster and submitter, the end state in KubeRay's words, in REST,
the events socket and the kernel's ``dw`` API.

KWOK's pods run no Ray. In K8sJobMode KubeRay starts the job's cluster once Kueue admits the
RayJob, then runs the submitter Job, whose pod KWOK completes at once; with no Ray head to ask,
KubeRay then marks the RayJob ``Failed`` with reason
``JobDeploymentStatusTransitionGracePeriodExceeded`` (about 30 s later). That is the path
asserted here; the other KubeRay states are mapped in ``tests/unit/test_rayjobs.py``.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from kubernetes import client

import jupyter_dw as dw
from jupyter_dw.notebook.magics import run as magic
from tests.cluster.fixtures import condition, watch_until
from tests.integration.clusters_support import (
    KUEUE,
    call,
    make_queue,
    open_events,
    owned_workload,
    quota_reserved,
    totals,
)
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

GRACE_PERIOD_EXCEEDED = "JobDeploymentStatusTransitionGracePeriodExceeded"
CLUSTER = {"workers": 1, "head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1"}
CLUSTER["worker_memory"] = "1Gi"


def rayjob_request(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "entrypoint": "python -c 'print(1)'", "cluster": CLUSTER, **extra}


async def test_a_rayjob_runs_through_kueue_and_ends_in_kuberays_words(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch, kernel
):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    events, snapshot = await open_events(jp_ws_fetch)
    assert snapshot["rayjobs"] == [], snapshot["rayjobs_error"]

    # Fit: head 1 + worker 1 + KubeRay's submitter 500m; 2Gi + 200Mi.
    code, fit = await call(jp_fetch, "POST", "rayjobs", "fit", body=rayjob_request("job-1"))
    assert code == 200, fit
    assert fit["verdict"] == "fits-now", fit
    assert totals(fit["requests"]) == {
        "cpu": Decimal("2.5"),
        "memory": Decimal(2 * 2**30 + 200 * 2**20),
    }
    assert set(fit["assignment"]) == {"head", "workers", "submitter"}
    assert fit["spec"]["submission_mode"] == "K8sJobMode" and fit["spec"]["queue"] == "team"
    # A form is judged before it has a name or a command: the same requests.
    code, bare = await call(jp_fetch, "POST", "rayjobs", "fit", body={"cluster": CLUSTER})
    assert code == 200 and bare["requests"] == fit["requests"], bare
    assert (bare["spec"]["name"], bare["spec"]["entrypoint"]) == (None, "")

    code, created = await call(jp_fetch, "POST", "rayjobs", body=rayjob_request("job-1"))
    assert code == 201, created
    assert created["state"] in ("queued", "admitted", "starting"), created
    assert created["owner"] == identity.username  # as a cluster's: the sidebar's "mine"
    stored = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayjobs", "job-1"
    )
    assert stored["metadata"]["labels"][f"{KUEUE}/queue-name"] == queue.local_queue
    assert stored["spec"]["shutdownAfterJobFinishes"] is True
    assert stored["spec"]["rayClusterSpec"]["authOptions"] == {"mode": "token"}

    # Kueue admits it with exactly the fit's requests.
    workload = owned_workload(kueue, "RayJob", "job-1", quota_reserved, "holding quota")
    assert quota_reserved(workload) is True
    code, listing = await call(jp_fetch, "GET", "workloads", params={"kind": "RayJob.ray.io"})
    assert code == 200, listing
    [record] = listing["workloads"]
    assert record["owner"] == {"kind": "RayJob", "api_group": "ray.io", "name": "job-1"}
    assert totals(record["requests"]) == totals(fit["requests"])

    # KubeRay makes the job's cluster: shown under the RayJob, not as a cluster.
    job_cluster = watch_until(
        lambda **kw: client.CustomObjectsApi(kube).list_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", **kw
        ),
        lambda rc: any(r.get("name") == "job-1" for r in rc["metadata"].get("ownerReferences", [])),
        what="the RayJob's RayCluster",
    )
    name = job_cluster["metadata"]["name"]
    assert name.startswith("job-1-")
    code, clusters = await call(jp_fetch, "GET", "clusters")
    assert code == 200 and name not in [c["name"] for c in clusters["clusters"]], clusters

    # The kernel follows it to its end: the submitter ran, KubeRay failed it in its words.
    h = dw.rayjob("job-1")
    ended = await h.wait_async("final", timeout=240)
    assert (ended.state, ended.reason) == ("failed", GRACE_PERIOD_EXCEEDED), ended
    assert ended.deployment_status == "Failed" and ended.message
    assert ended.cluster == name
    submitter = client.BatchV1Api(kube).read_namespaced_job("job-1", namespace)
    assert submitter.status.succeeded == 1, submitter.status

    code, got = await call(jp_fetch, "GET", "rayjobs", "job-1")
    assert code == 200 and (got["state"], got["reason"]) == ("failed", GRACE_PERIOD_EXCEEDED)
    assert got["final"] is True and got["message"] == ended.message

    # The socket said so as well: the last rayjob message is the failed record.
    def failed(message: dict[str, Any]) -> bool:
        record = message.get("rayjob") if message["type"] == "rayjob" else None
        return record is not None and record["state"] == "failed"

    message = await events.until(failed, "the rayjob message with its end")
    assert message["rayjob"]["reason"] == GRACE_PERIOD_EXCEEDED

    code, deleted = await call(jp_fetch, "DELETE", "rayjobs", "job-1")
    assert code == 200 and deleted["deleted"] is True
    gone = await events.until(
        lambda m: m["type"] == "rayjob" and m["event"] == "DELETED", "the RayJob gone"
    )
    assert gone["rayjob"] is None and gone["name"] == "job-1"


async def test_rayjob_fit_at_the_exact_quota_boundary_matches_kueue(kueue, kernel):
    # Exactly what the job needs (2.5 CPU with the submitter) fits and Kueue admits it; a
    # job a millicore bigger than the whole queue can never fit, and Kueue keeps it waiting.
    make_queue(kueue, cpu="2500m", memory="8Gi")
    # Three workers (4.5 CPU) never fit; one (2.5 with the submitter) would, as clusters say.
    three = dw.RayJobSpec(
        name="edge", entrypoint="python x.py", cluster=dw.ClusterSpec(**{**CLUSTER, "workers": 3})
    )
    fit = await asyncio.to_thread(dw.fit, three)
    assert fit.verdict == "never-fits" and fit.suggestion is not None, fit.message
    assert fit.suggestion.workers == 1, fit.suggestion
    assert fit.suggestion.message.endswith("with the head and the submitter)"), fit.suggestion
    spec = dw.RayJobSpec(name="edge", entrypoint="python x.py", cluster=dw.ClusterSpec(**CLUSTER))
    fit = await asyncio.to_thread(dw.fit, spec)
    assert fit.verdict == "fits-now", fit.message
    await asyncio.to_thread(dw.submit, spec)
    workload = owned_workload(
        kueue, "RayJob", "edge", lambda w: quota_reserved(w) is not None, "decided"
    )
    assert quota_reserved(workload) is True, workload.get("status")

    bigger = dw.RayJobSpec(
        name="edge-2",
        entrypoint="python x.py",
        cluster=dw.ClusterSpec(**{**CLUSTER, "head_cpu": "1001m"}),
    )
    # 1m more than the whole queue: never fits; Kueue says the same.
    fit = await asyncio.to_thread(dw.fit, bigger)
    assert fit.verdict == "never-fits", fit.message
    await asyncio.to_thread(dw.submit, bigger)
    workload = owned_workload(
        kueue, "RayJob", "edge-2", lambda w: quota_reserved(w) is not None, "decided"
    )
    assert quota_reserved(workload) is False
    assert "insufficient" in (condition(workload, "QuotaReserved") or {})["message"]

    # The same through %dw: the fit's verdict, the states, a delete.
    printed: list[str] = []
    line = "rayjob fit edge-3 --workers 1 --worker-cpu 1 --worker-memory 1Gi --head-cpu 1001m"
    result = await asyncio.to_thread(magic, f"{line} --head-memory 1Gi -- python x.py")
    assert result.verdict == "never-fits", result.message
    assert result.spec.entrypoint == "python x.py" and result.spec.cluster.workers == 1
    listing = await asyncio.to_thread(magic, "rayjob status")
    assert {j.name: j.state for j in listing}["edge-2"] == "queued"
    assert listing["edge-2"].position_in_local_queue == 0
    await asyncio.to_thread(magic, "rayjob delete edge-2", printed.append)
    assert printed == ["Deleted RayJob edge-2; its cluster and Workload follow."]
    await asyncio.to_thread(magic, "rayjob delete", printed.append)
    assert "no NAME" in printed[-1]


async def test_bad_rayjob_input_is_refused_and_changes_nothing(kueue, jp_fetch):
    make_queue(kueue)
    bad = {
        "name": "Bad_Name",
        "queue": "nope",
        "shutdown_after_finish": False,
        "submission_mode": "HTTPMode",
        "cluster": {"worker_cpu": "lots", "min_workers": 1, "max_workers": 3},
    }
    code, error = await call(jp_fetch, "POST", "rayjobs", body=bad)
    assert code == 400 and error["code"] == "invalid_spec", error
    assert set(error["errors"]) == {
        "name",
        "queue",
        "entrypoint",
        "shutdown_after_finish",
        "submission_mode",
        "cluster.worker_cpu",
    }, error["errors"]
    assert "Kueue requires" in error["errors"]["shutdown_after_finish"]
    code, error = await call(jp_fetch, "POST", "rayjobs", body=rayjob_request("ok", nope=1))
    assert code == 400 and list(error["errors"]) == ["nope"], error
    code, error = await call(
        jp_fetch,
        "POST",
        "rayjobs",
        body=rayjob_request("elastic", cluster={**CLUSTER, "min_workers": 1, "max_workers": 3}),
    )
    assert code == 400 and list(error["errors"]) == ["cluster.max_workers"], error
    assert "fixed size" in error["errors"]["cluster.max_workers"]
    code, error = await call(jp_fetch, "GET", "rayjobs", "Bad_Name")
    assert code == 400 and error["code"] == "invalid_name", error
    code, listing = await call(jp_fetch, "GET", "rayjobs")
    assert code == 200 and listing["rayjobs"] == [], listing
