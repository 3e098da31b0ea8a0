"""What a cluster uses, read from the real metrics API (metrics-server scraping KWOK's
emulated kubelets: each pod uses what its ``kwok.x-k8s.io/usage-*`` annotations say), through
the REST API and the events socket: held against used, and a change of use seen live.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from kubernetes import client

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.quantity import parse_quantity
from tests.cluster.manifests import USAGE_CPU_ANNOTATION, USAGE_MEMORY_ANNOTATION
from tests.integration.clusters_support import call, make_queue, open_events, small_cluster
from tests.integration.workbench_rbac import METRICS_READ_RULES, namespace_rules

WORKBENCH_RULES = [*namespace_rules(), *METRICS_READ_RULES]

pytestmark = pytest.mark.cluster

METRICS_WAIT = 120.0
"""A pod's first PodMetrics take three scrapes 10 s apart (20-35 s measured), then the next
sample of ours."""
CPU_TOLERANCE = Decimal("0.05")
"""metrics-server's CPU is a rate over its scrape window, KWOK's counter grows by its own
clock: the two windows differ by the scrapes' jitter."""


@pytest.fixture
def dw_config() -> dict[str, Any]:
    return {"usage_interval": 2.0}


def annotated(group: dict[str, Any], cpu: str, memory: str) -> None:
    """Make each container of ``group``'s pods use ``cpu`` and ``memory`` (KWOK's annotations)."""
    metadata = group["template"].setdefault("metadata", {})
    metadata.setdefault("annotations", {}).update(
        {USAGE_CPU_ANNOTATION: cpu, USAGE_MEMORY_ANNOTATION: memory}
    )


def use(kube: client.ApiClient, namespace: str, selector: str, **usage: str) -> None:
    """Make the one pod ``selector`` matches use ``cpu`` and/or ``memory`` from now on (KWOK
    reads its annotations at each scrape)."""
    [pod] = client.CoreV1Api(kube).list_namespaced_pod(namespace, label_selector=selector).items
    names = {"cpu": USAGE_CPU_ANNOTATION, "memory": USAGE_MEMORY_ANNOTATION}
    annotations = {names[resource]: amount for resource, amount in usage.items()}
    client.CoreV1Api(kube).patch_namespaced_pod(
        pod.metadata.name, namespace, {"metadata": {"annotations": annotations}}
    )


def cpu_near(usage: dict[str, Any] | None, cores: str) -> bool:
    used = ((usage or {}).get("resources") or {}).get("cpu", {}).get("used")
    if used is None:
        return False
    wanted = parse_quantity(cores)
    return abs(parse_quantity(used) - wanted) <= wanted * CPU_TOLERANCE


async def test_used_against_held_from_the_metrics_api_and_its_changes_live(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch
):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    events, _ = await open_events(jp_ws_fetch)
    spec = ValidatedClusterSpec.from_request(
        small_cluster("used", workers=1, queue=queue.local_queue)
    )
    body = spec.to_raycluster(namespace, owner=identity.username)
    annotated(body["spec"]["headGroupSpec"], "250m", "300Mi")
    annotated(body["spec"]["workerGroupSpecs"][0], "750m", "512Mi")
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", body
    )

    seen = await events.cluster_state(
        "used",
        lambda s: bool(s and cpu_near(s["usage"], "1")),
        "the metrics API's reading of 250m + 750m",
    )
    usage = seen["usage"]
    assert usage["reason"] is None and usage["sampled_at"] is not None, usage
    assert usage["resources"]["cpu"]["held"] == "2"  # 1 CPU per pod requested
    assert usage["resources"]["memory"] == {"held": "2Gi", "used": "812Mi"}, usage
    assert usage["idle"] is False and usage["idle_basis"] == "metrics"  # 25 % and 75 % of 1 CPU
    code, listed = await call(jp_fetch, "GET", "clusters", "used")
    assert code == 200 and cpu_near(listed["usage"], "1"), listed["usage"]

    # The worker's use changes: the next samples say so on the socket, nothing asked.
    use(kube, namespace, "ray.io/cluster=used,ray.io/node-type=worker", cpu="5m", memory="1Gi")
    quieter = await events.cluster_state(
        "used",
        lambda s: bool(s and cpu_near(s["usage"], "255m")),
        "the changed use: 250m + 5m",
    )
    assert quieter["usage"]["resources"]["memory"]["used"] == "1324Mi"
    # The head uses 25 % of its CPU: the cluster is not idle by the metrics API's rule.
    assert quieter["usage"]["idle"] is False
    events.close()
