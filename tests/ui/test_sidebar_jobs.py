"""The sidebar's Ray jobs in headless Chromium: a ready cluster's card lists its jobs and the
selected job's log tail, both updating live while a job runs, against a real Ray head with
token auth standing in for the cluster's (see :mod:`tests.integration.ray_jobs_support`).
The token is never in the page: not in its DOM, storage or cookies, nor in the server's log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import watch_until
from tests.integration.clusters_support import make_queue, small_cluster
from tests.integration.ray_jobs_support import (
    CLUSTER,
    TEMPLATE,
    give_token,
    submit_to_ray,
    wait_for_file,
)
from tests.ui.lab import LabServer, StandInDashboard, workbench_lab
from tests.ui.test_sidebar import open_panel

pytestmark = pytest.mark.cluster

READY_TIMEOUT = 90_000  # ms


class LocalRayHead(StandInDashboard):
    """Dashboards, and Ray's Jobs API, at the local Ray head (``http://{name}:{port}``)."""

    def __init__(self, port: int) -> None:
        super().__init__()
        self.ray_port = port

    def lab_args(self) -> list[str]:
        return [
            f"--JupyterDW.ray_dashboard_url={TEMPLATE}",
            f"--JupyterDW.ray_dashboard_port={self.ray_port}",
        ]


@pytest.fixture
def dashboard(ray_port: int) -> Iterator[StandInDashboard]:
    stand_in = LocalRayHead(ray_port)
    yield stand_in
    stand_in.stop()


@pytest.fixture
def lab(
    workbench, dashboard: StandInDashboard, artifacts: Path, tmp_path: Path
) -> Iterator[LabServer]:
    """JupyterLab whose Ray heads are the local one."""
    yield from workbench_lab(workbench, dashboard, artifacts, tmp_path)


def test_the_job_list_and_log_tail_update_live(
    page: Page, lab: LabServer, kueue, kube, namespace, ray_port, head_token, tmp_path
):
    make_queue(kueue)
    lab.api("POST", "clusters", small_cluster(CLUSTER, 1))
    watch_until(
        client.CustomObjectsApi(kube).list_namespaced_custom_object,
        lambda rc: (rc.get("status") or {}).get("state") == "ready",
        group="ray.io", version="v1", namespace=namespace, plural="rayclusters",
        field_selector=f"metadata.name={CLUSTER}", what="the cluster ready",
    )  # fmt: skip
    give_token(kube, namespace, head_token)

    panel = open_panel(page, lab)
    card = panel.locator(f'[data-cluster="{CLUSTER}"]')
    expect(card).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    jobs = card.get_by_label(f"Ray jobs of {CLUSTER}")
    expect(jobs).to_contain_text("No job yet")

    release = tmp_path / "release"
    job = submit_to_ray(ray_port, head_token, wait_for_file(release))
    row = jobs.locator(f'[data-job="{job}"]')
    expect(row).to_have_attribute("data-job-status", "RUNNING")  # pushed: no reload, no click
    row.get_by_role("button", name="python").click()
    log = row.locator(".jp-dw-job-log")
    expect(log).to_contain_text("42")  # the log line while the job runs
    expect(row).to_have_attribute("data-job-status", "RUNNING")
    release.touch()
    expect(row).to_have_attribute("data-job-status", "SUCCEEDED")
    expect(log).to_contain_text("done")
    expect(log).to_have_attribute("data-log-end", "true")
    expect(row.locator(".jp-dw-job-duration")).to_contain_text("s")

    # Stop, from the card.
    second = submit_to_ray(ray_port, head_token, wait_for_file(tmp_path / "never"))
    other = jobs.locator(f'[data-job="{second}"]')
    expect(other).to_have_attribute("data-job-status", "RUNNING")
    other.get_by_role("button", name="python").click()
    other.get_by_role("button", name=f"Stop job {second}").click()
    expect(other).to_have_attribute("data-job-status", "STOPPED")

    seen = page.evaluate(
        "() => [document.documentElement.outerHTML, document.cookie,"
        " JSON.stringify(Object.assign({}, localStorage)),"
        " JSON.stringify(Object.assign({}, sessionStorage)), location.href].join('\\n')"
    )
    assert "42" in seen and head_token not in seen
    assert not [c for c in page.context.cookies() if head_token in c["value"]]
    server_log = lab.log_path.read_text()
    assert "jupyter_dw" in server_log and head_token not in server_log
