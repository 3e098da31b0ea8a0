"""``dw.ClusterStatus`` stops and resumes its cluster in headless Chromium (JupyterLab), its
kernel running as a workbench service account that may (``patch workloads``): Stop → the
widget says ``stopped`` and who stopped it, the Workload is inactive and the pods are gone
(read with the administrator's client), the RayCluster is kept; Resume → admitted again on the
free quota and ready at the same size. No cell runs in between: the widget follows the kernel's
watches. Every wait is a wait for a condition, bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.integration.clusters_support import make_queue, small_cluster
from tests.ui.lab import LabServer
from tests.ui.test_sidebar import READY_TIMEOUT
from tests.ui.test_stop_resume import STOP_RULES, raycluster, wait_no_pods, workload
from tests.ui.test_widgets import kernel_lab, run_all_cells

pytestmark = pytest.mark.cluster

WIDGET = "ui-stop-w"
CELL = f"""import jupyter_dw as dw
dw.ClusterStatus("{WIDGET}")"""


@pytest.fixture
def lab(workbench, artifacts: Path, tmp_path: Path) -> Iterator[LabServer]:
    """JupyterLab whose kernel shows ``ClusterStatus`` and may stop and resume."""
    yield from kernel_lab(workbench, artifacts, tmp_path, CELL, rules=STOP_RULES)


def test_status_widget_stops_and_resumes(
    page: Page,
    lab: LabServer,
    kueue: KueueObjects,
    kube,
    namespace: str,
    artifacts: Path,
) -> None:
    make_queue(kueue)
    lab.api("POST", "clusters", small_cluster(WIDGET, workers=2))
    me = lab.api("GET", "context")["identity"]["username"]
    run_all_cells(page, f"{lab.url}/lab/tree/widgets.ipynb?token={lab.token}")

    output = page.locator(".jp-OutputArea-output").first
    state = output.locator(".jp-dw-state")
    expect(state).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    expect(output.get_by_role("button", name="Resume", exact=True)).to_have_count(0)

    # -- Stop, in the kernel: the widget says stopped and by whom; the cluster is kept -------
    output.get_by_role("button", name="Stop", exact=True).click()
    expect(state).to_have_attribute("data-state", "stopped", timeout=READY_TIMEOUT)
    expect(output.locator(".jp-dw-stopped")).to_contain_text(f"stopped by {me} at ")
    expect(output.get_by_role("button", name="Stop", exact=True)).to_have_count(0)
    assert workload(kube, kueue, namespace, WIDGET)["spec"]["active"] is False
    wait_no_pods(kube, namespace, WIDGET)
    assert raycluster(kube, namespace, WIDGET)["spec"]["workerGroupSpecs"][0]["replicas"] == 2
    expect(state).to_have_attribute("data-state", "stopped")
    page.screenshot(path=str(artifacts / "widget-stopped.png"))

    # -- Resume: admitted again on the free quota, ready at the same size ---------------------
    output.get_by_role("button", name="Resume", exact=True).click()
    expect(output.locator(".jp-dw-stopped")).to_have_count(0, timeout=READY_TIMEOUT)
    expect(state).not_to_have_attribute("data-state", "stopped")
    assert workload(kube, kueue, namespace, WIDGET)["spec"]["active"] is True
    expect(state).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    expect(output).to_contain_text("2/2 workers ready")
    expect(output.get_by_role("button", name="Stop", exact=True)).to_be_visible()
    page.screenshot(path=str(artifacts / "widget-resumed.png"))
