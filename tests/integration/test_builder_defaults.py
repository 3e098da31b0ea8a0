"""The notebook's ``ClusterBuilder`` takes the administrator's defaults (issue 34 item 1): a
kernel configured with ``default_worker_cpu=750m``, ``default_worker_memory=3Gi``,
``default_head_memory=3Gi`` and ``max_worker_cpu=4`` (``JUPYTER_DW_*`` variables, what a
kernel can see) starts its form from them and shows the limit; a name alone submitted makes a
RayCluster (read with the administrator's client) of 750m/3Gi workers and a 3Gi head, what the
server makes of a request that gives no size.
"""

from __future__ import annotations

import pytest
from kubernetes import client

import jupyter_dw as dw
from tests.integration.clusters_support import make_queue
from tests.integration.test_notebook_widgets import until
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster


@pytest.fixture
def kernel_settings() -> dict[str, str]:
    return {
        "JUPYTER_DW_DEFAULT_WORKER_CPU": "750m",
        "JUPYTER_DW_DEFAULT_WORKER_MEMORY": "3Gi",
        "JUPYTER_DW_DEFAULT_HEAD_MEMORY": "3Gi",
        "JUPYTER_DW_MAX_WORKER_CPU": "4",
    }


def requests_of(container: dict) -> dict[str, str]:
    return dict(container["resources"]["requests"])


async def test_builder_starts_from_the_configured_defaults(kernel, kueue, kube, namespace):
    make_queue(kueue, cpu="8", memory="16Gi")
    builder = dw.ClusterBuilder()
    assert (builder.worker_cpu.value, builder.worker_memory.value) == ("750m", "3Gi")
    assert (builder.head_cpu.value, builder.head_memory.value) == ("1", "3Gi")
    assert "at most 4 CPUs per worker" in builder.limits.value
    builder.name.value = "defaults"
    await until(builder, "verdict", lambda v: v == "fits-now", "the defaults judged")
    # What the builder sends is what the server makes of a request without sizes.
    validate = kernel.core.clusters.validate_spec
    bare = {"name": "defaults", "queue": builder.queue.value}
    assert validate(builder.request(), None, None) == validate(bare, None, None)

    builder.submit_button.click()
    assert builder.status is not None, builder.problem.value
    rc = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "defaults"
    )
    [worker] = rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"]
    assert requests_of(worker) == {"cpu": "750m", "memory": "3Gi"}
    head = rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert requests_of(head) == {"cpu": "1", "memory": "3Gi"}
    builder.close()


async def test_a_value_over_the_limit_is_refused_at_its_field(kernel, kueue):
    make_queue(kueue)
    builder = dw.ClusterBuilder(name="too-big")
    builder.worker_cpu.value = "5"
    await until(builder, "errors", lambda e: "worker_cpu" in e, "the limit")
    assert "limit of 4 CPUs per worker" in builder.errors["worker_cpu"]
    builder.close()
