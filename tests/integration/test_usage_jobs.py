"""What a RayJob's cluster and a TrainJob's pods use, read from the real metrics API (KWOK's
emulated kubelets: each pod uses what its ``kwok.x-k8s.io/usage-*`` annotations say), on the
REST job objects, the events socket's job messages and the kernel's status: held against used,
and a change of use seen live.

Both jobs must run longer than metrics-server needs for a pod's first PodMetrics (20-35 s):
the RayJob's submitter pod and the TrainJob's pods carry KWOK's ``pod-complete`` delay (10
minutes), the TrainJob through a ClusterTrainingRuntime of this test (the test bed's own runs
its pods 20 s).
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from typing import Any

import pytest
from kubernetes import client

import jupyter_dw as dw
from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.kinds.rayjob import ValidatedRayJob
from tests.cluster.manifests import (
    POD_COMPLETE_DELAY_ANNOTATION,
    TORCH_RUNTIME,
    USAGE_CPU_ANNOTATION,
    USAGE_MEMORY_ANNOTATION,
)
from tests.cluster.versions import Versions
from tests.integration.clusters_support import call, make_queue, open_events
from tests.integration.test_usage_metrics import annotated, cpu_near, use
from tests.integration.workbench_rbac import (
    CLUSTER_READ_RULES,
    METRICS_READ_RULES,
    namespace_rules,
)

pytestmark = pytest.mark.cluster

WORKBENCH_RULES = [*namespace_rules(), *METRICS_READ_RULES]
WORKBENCH_CLUSTER_RULES = [
    *CLUSTER_READ_RULES,
    {
        "apiGroups": ["trainer.kubeflow.org"],
        "resources": ["clustertrainingruntimes"],
        "verbs": ["get"],
    },
]
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
RUNS_FOR = "600s"
"""How long the jobs' pods run on KWOK: far longer than the test."""


@pytest.fixture
def dw_config() -> dict[str, Any]:
    return {"usage_interval": 2.0}


@pytest.fixture
def kernel_settings() -> dict[str, str]:
    return {"JUPYTER_DW_USAGE_INTERVAL": "2"}


def rayjob_body(name: str, namespace: str, owner: str, queue: str) -> dict[str, Any]:
    """A RayJob as jupyter_dw makes it (1 head, 1 worker of 1 CPU), its cluster's pods using
    250m + 750m, its submitter running 10 minutes."""
    cluster = {"workers": 1, "head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1"}
    job = ValidatedRayJob.from_request(
        {
            "name": name,
            "entrypoint": "python -c 'print(1)'",
            "queue": queue,
            "cluster": {**cluster, "worker_memory": "1Gi"},
        },
        lambda request: ValidatedClusterSpec.from_request(request),
    )
    body = job.to_rayjob(namespace, owner=owner)
    spec = body["spec"]
    annotated(spec["rayClusterSpec"]["headGroupSpec"], "250m", "300Mi")
    annotated(spec["rayClusterSpec"]["workerGroupSpecs"][0], "750m", "512Mi")
    image = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]
    submitter = {"cpu": "500m", "memory": "200Mi"}  # KubeRay's default submitter's
    spec["submitterPodTemplate"] = {
        "metadata": {"annotations": {POD_COMPLETE_DELAY_ANNOTATION: RUNS_FOR}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": image,
                    "resources": {"requests": submitter, "limits": submitter},
                }
            ],
        },
    }
    return body


def using(kind: str, name: str, cores: str) -> Any:
    """A ``kind`` (``rayjob``, ``trainjob``) message whose record's pods use about ``cores``."""
    return lambda m: (
        m["type"] == kind and m["name"] == name and cpu_near((m[kind] or {}).get("usage"), cores)
    )


async def test_a_rayjobs_cluster_shows_what_its_pods_use_live(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch, kernel
):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    events, _ = await open_events(jp_ws_fetch)
    body = rayjob_body("used-job", namespace, identity.username, queue.local_queue)
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayjobs", body
    )

    seen = await events.until(
        using("rayjob", "used-job", "1"), "the RayJob's cluster using 250m + 750m"
    )
    usage = seen["rayjob"]["usage"]
    assert usage["reason"] is None and usage["sampled_at"] is not None, usage
    # The cluster's two pods of 1 CPU; the submitter's pod is not the cluster's.
    assert usage["resources"]["cpu"]["held"] == "2"
    assert usage["resources"]["memory"] == {"held": "2Gi", "used": "812Mi"}, usage
    assert usage["idle"] is False and usage["idle_action"] is None
    code, got = await call(jp_fetch, "GET", "rayjobs", "used-job")
    assert code == 200 and cpu_near(got["usage"], "1"), got["usage"]
    cluster = got["cluster"]
    assert cluster, got

    # The kernel's status object and its HTML carry the same (its own sample).
    await asyncio.to_thread(dw.clusters)  # the kernel's pod cache synced
    status = await asyncio.to_thread(dw.rayjob("used-job").status)
    assert status.usage is not None and status.usage.resources["cpu"].held == 2, status.usage
    assert "of 2 used" in dw.rayjob("used-job")._repr_html_()

    # The worker's use changes: the next samples say so on the job's own messages.
    worker = f"ray.io/cluster={cluster},ray.io/node-type=worker"
    use(kube, namespace, worker, cpu="5m", memory="1Gi")
    quieter = await events.until(using("rayjob", "used-job", "255m"), "the changed use: 250m + 5m")
    assert quieter["cause"]["kind"] == "PodMetrics" and quieter["cause"]["name"] == cluster
    assert quieter["rayjob"]["usage"]["resources"]["memory"]["used"] == "1324Mi"
    # A RayJob's own cluster is shown under its RayJob, never as a cluster message.
    assert not [m for m in events.seen if m["type"] == "cluster" and m["name"] == cluster]
    events.close()


@pytest.mark.skipif(
    not Versions.selected().trainjobs,
    reason="Kueue 0.14.8's TrainJob integration targets Trainer 2.1: no Trainer on this bed",
)
async def test_a_trainjob_shows_its_pods_use_summed_live(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch
):
    custom = client.CustomObjectsApi(kube)
    runtime = copy.deepcopy(
        custom.get_cluster_custom_object(*TRAINER, "clustertrainingruntimes", TORCH_RUNTIME)
    )
    name = f"long-{uuid.uuid4().hex[:6]}"
    runtime["metadata"] = {"name": name}
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        job["template"]["spec"]["template"]["metadata"]["annotations"].update(
            {
                POD_COMPLETE_DELAY_ANNOTATION: RUNS_FOR,
                USAGE_CPU_ANNOTATION: "400m",
                USAGE_MEMORY_ANNOTATION: "100Mi",
            }
        )
    custom.create_cluster_custom_object(*TRAINER, "clustertrainingruntimes", runtime)
    try:
        make_queue(kueue, cpu="4", memory="8Gi")
        events, _ = await open_events(jp_ws_fetch)
        request = {
            "name": "used-train",
            "runtime": name,
            "num_nodes": 2,
            "resources_per_node": {"cpu": "1", "memory": "1Gi"},
            "command": ["torchrun", "train.py"],
        }
        code, created = await call(jp_fetch, "POST", "trainjobs", body=request)
        assert code == 201, created
        assert created["usage"] is not None and created["usage"]["resources"] == {}, created

        seen = await events.until(
            using("trainjob", "used-train", "800m"), "the TrainJob's 2 pods using 400m each"
        )
        usage = seen["trainjob"]["usage"]
        assert usage["resources"]["cpu"]["held"] == "2" and usage["reason"] is None, usage
        assert usage["resources"]["memory"] == {"held": "2Gi", "used": "200Mi"}, usage
        # No Ray to ask: idle by the metrics API only (400m of 1 CPU is busy).
        assert usage["ray"] is None and usage["ray_reason"] is None
        assert (usage["idle"], usage["idle_basis"]) == (False, "metrics")
        code, got = await call(jp_fetch, "GET", "trainjobs", "used-train")
        assert code == 200 and cpu_near(got["usage"], "800m"), got["usage"]

        # One of the two pods (the first of the step's indexed Job) uses less.
        first = (
            "jobset.sigs.k8s.io/jobset-name=used-train,batch.kubernetes.io/job-completion-index=0"
        )
        use(kube, namespace, first, cpu="100m")
        quieter = await events.until(
            using("trainjob", "used-train", "500m"), "the changed use: 100m + 400m"
        )
        assert quieter["cause"] == {"kind": "PodMetrics", "name": "used-train", "event": "MODIFIED"}
        events.close()
    finally:
        custom.delete_cluster_custom_object(*TRAINER, "clustertrainingruntimes", name)
