"""``dw.QueueBoard()`` rendered in headless Chromium in JupyterLab (anywidget's frontend, the
kernel running as the workbench's service account): each queue's Workloads of any kind, a
batch Job holding the quota and another waiting with its position and Kueue's words; when the
first Job goes, the board shows the second admitted with no cell run in between; a long queue
shows its first rows until "Show all"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import plain_workload
from tests.integration.clusters_support import KUEUE, make_queue
from tests.integration.test_workloads import admitted, job, job_workload, waiting
from tests.ui.lab import LabServer
from tests.ui.test_widgets import KERNEL_CONNECTED, kernel_lab

pytestmark = pytest.mark.cluster

CELL = """import jupyter_dw as dw
dw.QueueBoard()"""


@pytest.fixture
def lab(workbench, artifacts: Path, tmp_path: Path) -> Iterator[LabServer]:
    """JupyterLab with the board's notebook."""
    yield from kernel_lab(workbench, artifacts, tmp_path, CELL)


def test_queue_board_shows_each_queues_workloads_live(
    page: Page, lab: LabServer, kube, kueue, namespace: str, artifacts: Path
) -> None:
    queue = make_queue(kueue, cpu="1", memory="4Gi")
    jobs = client.BatchV1Api(kube)
    jobs.create_namespaced_job(namespace, job("first", queue.local_queue, "1"))
    job_workload(kueue, "first", admitted, "admitted")
    jobs.create_namespaced_job(namespace, job("second", queue.local_queue, "1"))
    second = job_workload(kueue, "second", waiting, "waiting for quota")

    page.goto(f"{lab.url}/lab/tree/widgets.ipynb?token={lab.token}")
    expect(page.locator(".jp-Cell").first).to_be_visible(timeout=60_000)
    page.wait_for_function(KERNEL_CONNECTED, polling=100, timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    board = page.locator(".jp-OutputArea-output .jp-dw-queues").first
    expect(board).to_be_visible(timeout=60_000)

    held = board.locator('.jp-dw-workload[data-state="admitted"]')
    queued = board.locator(f'.jp-dw-workload[data-workload="{second["metadata"]["name"]}"]')
    expect(held).to_contain_text("Job first", timeout=30_000)
    expect(held).to_contain_text(f"holds 1 cpu, 1Gi memory ({queue.flavor})")
    expect(queued).to_have_attribute("data-state", "queued")
    expect(queued.locator(".jp-dw-workload-position")).to_have_text("position 1")
    expect(queued).to_contain_text("insufficient unused quota")
    page.screenshot(path=str(artifacts / "queueboard-waiting.png"))

    jobs.delete_namespaced_job("first", namespace, propagation_policy="Background")
    expect(queued).to_have_attribute("data-state", "admitted", timeout=60_000)
    expect(board.locator(".jp-dw-workload")).to_have_count(1)
    expect(queued.locator(".jp-dw-workload-position")).to_have_count(0)
    page.screenshot(path=str(artifacts / "queueboard-admitted.png"))

    # Six more waiting: the kernel syncs the queue's first five rows, and all on "Show all".
    custom = client.CustomObjectsApi(kube)
    for i in range(6):
        body = plain_workload(kueue.api_version, f"more-{i}", queue.local_queue, "1")
        custom.create_namespaced_custom_object(
            KUEUE, kueue.api_version, namespace, "workloads", body
        )
    more = board.get_by_role("button", name="Show all 7 (2 more)")
    expect(more).to_be_visible(timeout=60_000)
    rows = board.locator(".jp-dw-workload")
    expect(rows).to_have_count(5)
    expect(rows.first).to_have_attribute("data-state", "admitted")
    more.click()
    expect(rows).to_have_count(7)
    board.get_by_role("button", name="Show fewer").click()
    expect(rows).to_have_count(5)
