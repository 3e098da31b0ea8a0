"""Kubeflow Trainer TrainJobs through Kueue on the real control plane (Kueue 0.19.2, Trainer
v2.2.1, JobSet v0.12.0), from a workbench: fit against the real Workload, create, Kueue's
admission, the live states to the end, in REST, the kernel's ``dw`` API and ``%dw``.

The test bed's ``torch-distributed`` ClusterTrainingRuntime annotates its pods with KWOK's
``pod-complete`` delay (20 s): a TrainJob's pods run, then succeed, so ``running`` and then
``succeeded`` are observed as Trainer reports them.

TrainJobs are tested on Kueue 0.19.2 only: Kueue 0.14.8's integration targets Trainer 2.1's
API, so the legacy test bed installs no Trainer, and what a 0.14 user sees from jupyter_dw
there (``trainer_not_installed``, naming what is missing) is asserted instead.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from kubernetes import client

import jupyter_dw as dw
from jupyter_dw.domain.workloads import pod_sets
from jupyter_dw.notebook.magics import run as magic
from tests.cluster.fixtures import condition
from tests.cluster.versions import Versions
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

TRAINER_BED = Versions.selected().trainjobs
needs_trainer = pytest.mark.skipif(
    not TRAINER_BED,
    reason="Kueue 0.14.8's TrainJob integration targets Trainer 2.1: no Trainer on this bed "
    "(test_without_trainer_a_trainjob_request_says_what_is_missing runs instead)",
)

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = [
    *CLUSTER_READ_RULES,
    {
        "apiGroups": ["trainer.kubeflow.org"],
        "resources": ["clustertrainingruntimes"],
        "verbs": ["get"],
    },
]
RUNTIME = "torch-distributed"
TRAINER = ("trainer.kubeflow.org", "v1alpha1")


def request(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "runtime": RUNTIME,
        "num_nodes": 2,
        "resources_per_node": {"cpu": "1", "memory": "1Gi"},
        "command": ["torchrun", "train.py"],
        **extra,
    }


@needs_trainer
async def test_a_trainjob_runs_through_kueue_to_its_end(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch, kernel
):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    events, snapshot = await open_events(jp_ws_fetch)
    assert snapshot["trainjobs"] == [] and snapshot["trainjobs_error"] is None, snapshot

    # Fit: 2 nodes of 1 CPU / 1Gi, the runtime's one pod set ("node").
    code, fit = await call(jp_fetch, "POST", "trainjobs", "fit", body=request("tj-1"))
    assert code == 200, fit
    assert fit["verdict"] == "fits-now", fit
    assert totals(fit["requests"]) == {"cpu": Decimal(2), "memory": Decimal(2 * 2**30)}
    assert set(fit["assignment"]) == {"node"}
    assert fit["spec"]["runtime"] == RUNTIME and fit["spec"]["queue"] == "team"

    code, created = await call(jp_fetch, "POST", "trainjobs", body=request("tj-1"))
    assert code == 201, created
    assert created["state"] in ("queued", "admitted", "starting"), created
    assert created["owner"] == identity.username  # as a cluster's: the sidebar's "mine"
    stored = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        *TRAINER, namespace, "trainjobs", "tj-1"
    )
    assert stored["metadata"]["labels"][f"{KUEUE}/queue-name"] == queue.local_queue
    assert stored["spec"]["runtimeRef"]["name"] == RUNTIME

    # Kueue built the pod sets the fit counted (it ran Trainer's runtime code for them).
    workload = owned_workload(kueue, "TrainJob", "tj-1", quota_reserved, "holding quota")
    assert quota_reserved(workload) is True
    [pod_set] = pod_sets(workload)
    assert (pod_set.name, pod_set.count) == ("node", 2)
    assert dict(pod_set.per_pod) == {"cpu": Decimal(1), "memory": Decimal(2**30)}
    code, listing = await call(
        jp_fetch, "GET", "workloads", params={"kind": "TrainJob.trainer.kubeflow.org"}
    )
    assert code == 200, listing
    [record] = listing["workloads"]
    assert record["owner"] == {
        "kind": "TrainJob",
        "api_group": "trainer.kubeflow.org",
        "name": "tj-1",
    }
    assert totals(record["requests"]) == totals(fit["requests"])

    # The kernel follows it: running (KWOK runs the pods 20 s), then succeeded.
    h = dw.trainjob("tj-1")
    running = await h.wait_async("running", timeout=120)
    assert running.state == "running" and running.jobs_ready >= 1, running
    assert running.workload and running.workload.name == workload["metadata"]["name"]
    ended = await h.wait_async("final", timeout=180)
    assert ended.state == "succeeded", ended
    assert ended.jobs_succeeded == 1 and ended.end_time, ended  # one Job of 2 pods

    # The socket followed it too, with the same records: running, then succeeded. The server's
    # caches are their own watches, a moment behind or ahead of the kernel's: REST answers
    # from them, so it is asked once the server has told the end.
    def trainjob_in(state: str) -> Any:
        return lambda m: m["type"] == "trainjob" and (m["trainjob"] or {}).get("state") == state

    shown = [m["trainjob"]["state"] for m in events.seen if m["type"] == "trainjob"]
    for state in ("running", "succeeded"):
        if state not in shown:
            await events.until(trainjob_in(state), f"the trainjob message: {state}")
    message = next(m for m in events.seen if trainjob_in("succeeded")(m))
    assert message["name"] == "tj-1" and message["trainjob"]["owner"] == identity.username
    assert message["cause"]["kind"] in ("TrainJob", "Workload"), message

    code, got = await call(jp_fetch, "GET", "trainjobs", "tj-1")
    assert code == 200 and got["state"] == "succeeded" and got["final"] is True, got
    # Its life as a bar: waited from its creation to Kueue's admission, ran to its end.
    [wait, run] = got["timeline"]["spans"]
    finished = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        KUEUE, kueue.api_version, namespace, "workloads", workload["metadata"]["name"]
    )
    admitted = condition(finished, "Admitted")["lastTransitionTime"]
    assert (wait["step"], wait["start"], wait["end"]) == ("queue", got["created"], admitted)
    assert (run["step"], run["start"], run["end"]) == ("running", admitted, got["end_time"])
    assert got["timeline"]["ending"]["words"] == "succeeded"
    assert not wait["current"] and not run["current"]
    code, listed = await call(jp_fetch, "GET", "trainjobs")
    assert code == 200 and [j["name"] for j in listed["trainjobs"]] == ["tj-1"], listed

    code, deleted = await call(jp_fetch, "DELETE", "trainjobs", "tj-1")
    assert code == 200 and deleted["deleted"] is True
    code, gone = await call(jp_fetch, "GET", "trainjobs", "tj-1")
    assert code in (200, 404), gone
    assert code == 404 or gone["state"] == "deleting", gone
    gone_message = await events.until(
        lambda m: m["type"] == "trainjob" and m["event"] == "DELETED", "the TrainJob gone"
    )
    assert gone_message["trainjob"] is None and gone_message["name"] == "tj-1"
    events.close()


@needs_trainer
async def test_trainjob_fit_at_the_exact_quota_boundary_matches_kueue(kueue, kernel):
    # Exactly the queue (2 nodes x 1 CPU / 2Gi) fits and Kueue admits it; one millicore more
    # per node can never fit, and Kueue keeps that one waiting.
    make_queue(kueue, cpu="2", memory="4Gi")
    spec = dw.TrainJobSpec(
        name="edge",
        runtime=RUNTIME,
        num_nodes=2,
        resources_per_node={"cpu": 1, "memory": "2Gi"},
    )
    fit = await asyncio.to_thread(dw.fit, spec)
    assert fit.verdict == "fits-now", fit.message
    handle = await asyncio.to_thread(dw.submit, spec)
    assert isinstance(handle, dw.TrainJobHandle)
    workload = owned_workload(
        kueue, "TrainJob", "edge", lambda w: quota_reserved(w) is not None, "decided"
    )
    assert quota_reserved(workload) is True, workload.get("status")

    bigger = dw.TrainJobSpec(
        name="edge-2",
        runtime=RUNTIME,
        num_nodes=2,
        resources_per_node={"cpu": "1001m", "memory": "2Gi"},
    )
    fit = await asyncio.to_thread(dw.fit, bigger)
    assert fit.verdict == "never-fits", fit.message
    await asyncio.to_thread(dw.submit, bigger)
    workload = owned_workload(
        kueue, "TrainJob", "edge-2", lambda w: quota_reserved(w) is not None, "decided"
    )
    assert quota_reserved(workload) is False
    assert "insufficient" in (condition(workload, "QuotaReserved") or {})["message"]

    # The same through %dw: the fit's verdict, the states, a delete.
    printed: list[str] = []
    line = f"trainjob fit edge-3 --runtime {RUNTIME} --nodes 2 --cpu 1001m --memory 2Gi"
    result = await asyncio.to_thread(magic, f"{line} -- torchrun train.py")
    assert result.verdict == "never-fits", result.message
    assert result.spec.command == ("torchrun", "train.py") and result.spec.num_nodes == 2
    listing = await asyncio.to_thread(magic, "trainjob status")
    assert {j.name: j.state for j in listing}["edge-2"] == "queued"
    assert listing["edge-2"].position_in_local_queue == 0
    await asyncio.to_thread(magic, "trainjob delete edge-2", printed.append)
    assert printed == ["Deleted TrainJob edge-2; its JobSet, pods and Workload follow."]
    await asyncio.to_thread(magic, "trainjob delete", printed.append)
    assert "no NAME" in printed[-1]


@needs_trainer
async def test_bad_trainjob_input_is_refused_and_changes_nothing(kube, kueue, namespace, jp_fetch):
    make_queue(kueue)
    bad = {
        "name": "Bad_Name",
        "queue": "nope",
        "num_nodes": 0,
        "resources_per_node": {"cpu": "lots", "disk": "1Gi"},
        "command": "torchrun train.py",
    }
    code, error = await call(jp_fetch, "POST", "trainjobs", body=bad)
    assert code == 400 and error["code"] == "invalid_spec", error
    assert set(error["errors"]) == {
        "name",
        "queue",
        "runtime",
        "num_nodes",
        "resources_per_node",
        "command",
    }, error["errors"]
    assert "unknown resource 'disk'" in error["errors"]["resources_per_node"]
    code, error = await call(jp_fetch, "POST", "trainjobs", body=request("ok", nodes=2))
    assert code == 400 and list(error["errors"]) == ["nodes"], error
    assert "did you mean 'num_nodes'" in error["errors"]["nodes"]
    code, error = await call(jp_fetch, "POST", "trainjobs", "fit", body=request("ok", runtime="x"))
    assert code == 404 and "ClusterTrainingRuntime" in error["error"], error
    code, error = await call(jp_fetch, "GET", "trainjobs", "Bad_Name")
    assert code == 400 and error["code"] == "invalid_name", error
    code, listing = await call(jp_fetch, "GET", "trainjobs")
    assert code == 200 and listing["trainjobs"] == [], listing
    stored = client.CustomObjectsApi(kube).list_namespaced_custom_object(
        *TRAINER, namespace, "trainjobs"
    )
    assert stored["items"] == []


@pytest.mark.skipif(TRAINER_BED, reason="this bed runs Kubeflow Trainer (the tests above run)")
async def test_without_trainer_a_trainjob_request_says_what_is_missing(
    kueue, jp_fetch, jp_ws_fetch
):
    # Kueue 0.14.8's bed: no Trainer. Every TrainJob operation names what is missing.
    make_queue(kueue)
    # The socket's snapshot has no TrainJob list (not served: no error either), so the
    # sidebar shows no TrainJob section.
    events, snapshot = await open_events(jp_ws_fetch)
    assert (snapshot["trainjobs"], snapshot["trainjobs_error"]) == (None, None), snapshot
    assert snapshot["rayjobs"] == [], snapshot
    events.close()
    code, context = await call(jp_fetch, "GET", "context")
    assert code == 200 and context["trainer"] == {"installed": False, "api_version": None}
    for method, path, body in [
        ("GET", ("trainjobs",), None),
        ("POST", ("trainjobs",), request("tj")),
        ("POST", ("trainjobs", "fit"), request("tj")),
        ("GET", ("trainjobs", "tj"), None),
        ("DELETE", ("trainjobs", "tj"), None),
    ]:
        code, error = await call(jp_fetch, method, *path, body=body)
        assert code == 503 and error["code"] == "trainer_not_installed", (path, error)
        assert "trainjobs in trainer.kubeflow.org/v1alpha1" in error["reason"], error
