"""What a cluster uses, in ``dw.ClusterStatus``'s usage rows and in ``dw.QueueBoard``'s line
"Your cluster holds … of team; it uses … now" (issue 28), in headless Chromium (JupyterLab),
the kernel running as a workbench service account that may read the metrics API.

The pods use what their ``kwok.x-k8s.io/usage-*`` annotations say (KWOK's emulated kubelets,
scraped by metrics-server): 250m + 750m of 2 CPU, then the worker drops to 50m and both widgets
show 0.3 with no cell run in between. Every wait is Playwright's wait for a condition.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from playwright.sync_api import Page, expect

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from tests.cluster.fixtures import KueueObjects
from tests.integration.clusters_support import make_queue, small_cluster
from tests.integration.test_usage_metrics import annotated, use
from tests.integration.workbench_rbac import METRICS_READ_RULES, namespace_rules
from tests.ui.lab import LabServer
from tests.ui.test_widgets import kernel_lab, run_all_cells

pytestmark = pytest.mark.cluster

WIDGET = "ui-use-w"
CELL = f"""import jupyter_dw as dw
display(dw.ClusterStatus("{WIDGET}"))
dw.QueueBoard()"""
METRICS_TIMEOUT = 150_000
"""ms: admission, pods Running, a pod's first PodMetrics (20-35 s), the next sample."""


@pytest.fixture
def lab(workbench, artifacts: Path, tmp_path: Path) -> Iterator[LabServer]:
    """JupyterLab whose kernel shows the cluster and the queues, sampling every 2 s."""
    yield from kernel_lab(
        workbench,
        artifacts,
        tmp_path,
        CELL,
        rules=[*namespace_rules(), *METRICS_READ_RULES],
        kernel_environ={"JUPYTER_DW_USAGE_INTERVAL": "2"},
    )


def test_status_and_queue_board_show_what_the_pods_use_live(
    page: Page, lab: LabServer, kueue: KueueObjects, kube, namespace: str, artifacts: Path
) -> None:
    queue = make_queue(kueue)
    me = lab.api("GET", "context")["identity"]["username"]
    spec = ValidatedClusterSpec.from_request(
        small_cluster(WIDGET, workers=1, queue=queue.local_queue)
    )
    body = spec.to_raycluster(namespace, owner=me)  # this workbench's owner's: "Your cluster"
    annotated(body["spec"]["headGroupSpec"], "250m", "300Mi")
    annotated(body["spec"]["workerGroupSpecs"][0], "750m", "512Mi")
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", body
    )

    run_all_cells(page, f"{lab.url}/lab/tree/widgets.ipynb?token={lab.token}")

    status = page.locator(".jp-OutputArea-output").filter(has=page.locator(".jp-dw-state"))
    cpu = status.locator('.jp-dw-usage-row[data-resource="cpu"]')
    memory = status.locator('.jp-dw-usage-row[data-resource="memory"]')
    # The board in the output (the sidebar, open beside it, has a line of its own).
    line = page.locator(".jp-OutputArea-output .jp-dw-queues .jp-dw-holding")

    # 250m + 750m of the two pods' 1 CPU each, as the metrics API measures it.
    expect(cpu).to_have_attribute("data-used", "1", timeout=METRICS_TIMEOUT)
    expect(cpu).to_contain_text("CPU 1 of 2 used")
    expect(memory).to_contain_text("Memory 812Mi of 2Gi used")
    share = cpu.get_by_role("meter").get_attribute("aria-valuenow")
    assert share is not None and abs(float(share) - 0.5) < 0.03, share  # the bar: half full
    expect(line).to_have_text("Your cluster holds 2 CPU of team; it uses 1 CPU now")
    page.screenshot(path=str(artifacts / "widgets-usage-busy.png"))

    # The worker's use drops: both widgets follow the kernel's samples, no cell run.
    use(kube, namespace, f"ray.io/cluster={WIDGET},ray.io/node-type=worker", cpu="50m")
    expect(cpu).to_have_attribute("data-used", "0.3", timeout=METRICS_TIMEOUT)
    expect(cpu).to_contain_text("CPU 0.3 of 2 used")
    expect(line).to_have_text("Your cluster holds 2 CPU of team; it uses 0.3 CPU now")
    page.screenshot(path=str(artifacts / "widgets-usage-quieter.png"))
