"""The kernel side on the MultiKueue bed's manager: ``dw.submit`` in a queue that dispatches
through MultiKueue waits until the cluster is ready on the worker; its status, its HTML, the
ClusterStatus widget and the workloads say it runs on worker-1 (workers counted there, no
dashboard link, why), and deleting it from the widget removes it on the worker."""

from __future__ import annotations

import asyncio

import pytest

import jupyter_dw as dw
from jupyter_dw.core.errors import RunsOnWorker
from tests.cluster.multikueue import MirroredQueue
from tests.integration.clusters_support import wait_gone
from tests.integration.test_notebook_widgets import until
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

from .conftest import WORKER
from .test_rest import MULTIKUEUE_READ_RULES

pytestmark = [pytest.mark.cluster, pytest.mark.multikueue]

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES + MULTIKUEUE_READ_RULES
SMALL = {"head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1", "worker_memory": "1Gi"}


async def test_the_kernel_shows_a_cluster_running_on_the_worker(
    kernel, worker_kube, mk_queue: MirroredQueue
):
    h = await asyncio.to_thread(dw.submit, name="nb-far", workers=1, queue="team", **SMALL)
    info = await asyncio.to_thread(h.wait, "ready")
    assert info.placement is not None and info.placement.worker_cluster == WORKER
    assert (info.workers_ready, info.workers_desired) == (1, 1)
    assert info.pods == () and info.dashboard_url is None
    assert info.dashboard_note is not None and WORKER in info.dashboard_note
    assert h.dashboard_url is None  # no proxy link to a head this workbench cannot reach
    with pytest.raises(RunsOnWorker, match=f"runs on worker cluster {WORKER}"):
        kernel.core.jobs.client_address("nb-far")  # what h.ray_init() connects to
    with pytest.raises(RunsOnWorker, match=f"runs on worker cluster {WORKER}"):
        h.ray_address  # noqa: B018 - the property raises: the worker's address is not ours
    html = h._repr_html_()
    assert f"runs on worker cluster {WORKER} (sent there by MultiKueue)" in html
    assert f"1/1 workers ready on worker cluster {WORKER}" in html
    assert "kubectl port-forward" not in html

    status = dw.ClusterStatus("nb-far")
    await until(status, "placement", lambda p: (p or {}).get("worker_cluster") == WORKER, "placed")
    assert status.dashboard_note == info.dashboard_note
    assert status.usage is not None and WORKER in status.usage["reason"]

    listing = await asyncio.to_thread(dw.workloads)
    (mine,) = [w for w in listing.workloads if w.name == info.workload]
    assert mine.placement is not None and mine.placement.worker_cluster == WORKER
    queues = await asyncio.to_thread(dw.queues)
    assert queues["team"].multikueue is not None and queues["team"].multikueue.workers == (WORKER,)

    status._handle_custom_msg({"action": "delete"}, [])  # what the confirmed Delete sends
    await until(status, "deleted", bool, "the deleted cluster")
    assert status.placement is None
    assert wait_gone(worker_kube, mk_queue.namespace, "nb-far"), "still on the worker"
