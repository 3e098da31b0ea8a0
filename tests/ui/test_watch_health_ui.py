"""The sidebar says when what it shows can no longer be trusted: the workbench's Role is
removed mid-session (in the test's own namespace on the shared cluster), and the panel shows a
"Stale" banner naming the permission instead of presenting the last lists as current."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.cluster.versions import Versions
from tests.ui.lab import LabServer, StandInDashboard, workbench_lab
from tests.ui.test_sidebar import make_queues, open_panel

pytestmark = pytest.mark.cluster


@pytest.fixture
def lab(
    workbench, dashboard: StandInDashboard, artifacts: Path, tmp_path: Path
) -> Iterator[LabServer]:
    """JupyterLab as a workbench that re-checks its permissions every 2 s."""
    yield from workbench_lab(
        workbench, dashboard, artifacts, tmp_path, "--JupyterDW.access_refresh_interval=2"
    )


@pytest.fixture
def expected_console_errors() -> list[str]:
    """With the Role gone, a request the panel makes meanwhile (say, re-reading the queues
    after a change) is refused with 403, which Chromium logs as a failed resource load; whether
    one happens before the test ends depends on timing, so it is allowed, and nothing else."""
    return [r"^console\.error: Failed to load resource: the server responded with a status of 403"]


def test_a_removed_role_shows_a_stale_banner(
    page: Page, lab: LabServer, kueue: KueueObjects, kube, namespace: str, artifacts: Path
) -> None:
    make_queues(kueue)
    sidebar = open_panel(page, lab)
    expect(sidebar.locator('[data-queue="team"]')).to_be_visible()
    expect(sidebar.locator("[data-freshness]")).to_have_count(0)  # live: no banner

    client.RbacAuthorizationV1Api(kube).delete_namespaced_role("workbench", namespace)

    banner = sidebar.locator('.jp-dw-freshness[data-freshness="stale"]')
    expect(banner).to_be_visible(timeout=60_000)
    expect(banner).to_contain_text("Stale since")
    expect(banner).to_contain_text("forbidden: this identity may no longer")
    expect(banner).to_contain_text("last known state")
    # TrainJobs (and their pods) are watched too where the test bed runs Kubeflow Trainer.
    trainjobs = " trainjob-pods, trainjobs," if Versions.selected().trainjobs else ""
    expect(banner.locator(".jp-dw-freshness-affected")).to_have_text(
        f"Affected: events, localqueues, pods, rayclusters, rayjobs,{trainjobs} workloads"
    )
    health = lab.api("GET", "context")["health"]
    assert health["freshness"]["state"] == "stale"
    assert health["freshness"]["reason"] in banner.inner_text()
    sidebar.screenshot(path=str(artifacts / "sidebar-stale.png"))
