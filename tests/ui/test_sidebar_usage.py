"""What a cluster holds and uses, on the sidebar's card and in its queue's line (issue 28,
item 1), in headless Chromium against JupyterLab running as a workbench service account on
the local control plane.

The workbench here may not read the metrics API (the test bed serves it), so the use is
unknown: the card shows each resource's held amount with the server's reason in words ("a
namespace without the metrics API or the permission says so"), never a zero and never an
empty bar; the queue's line sums what this workbench's clusters
hold there and says their use is unknown. The held amounts are the cluster's pods' requests
(a head and one worker of 1 CPU and 1Gi each). Every wait is Playwright's wait for a
condition.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.integration.clusters_support import small_cluster
from tests.integration.workbench_rbac import namespace_rules
from tests.ui.lab import LabServer, StandInDashboard, team_queue, workbench_lab
from tests.ui.test_sidebar import card, open_panel

pytestmark = pytest.mark.cluster

READY_TIMEOUT = 90_000  # ms: Kueue admission, KubeRay pods, KWOK readiness
NOT_ALLOWED = "this workbench may not list pods.metrics.k8s.io in namespace"


@pytest.fixture
def lab(
    workbench, dashboard: StandInDashboard, artifacts: Path, tmp_path: Path
) -> Iterator[LabServer]:
    """JupyterLab as a workbench that may not read its pods' metrics (the test bed serves the
    metrics API): the card says so instead of a use."""
    yield from workbench_lab(workbench, dashboard, artifacts, tmp_path, rules=namespace_rules())


def test_the_card_shows_what_the_cluster_holds_and_why_its_use_is_unknown(
    page: Page, lab: LabServer, kueue: KueueObjects, artifacts: Path
) -> None:
    team_queue(kueue, cpu="4")
    sidebar = open_panel(page, lab)

    lab.api("POST", "clusters", small_cluster("ui-usage", workers=1, queue="team"))
    box = card(sidebar, "ui-usage")
    expect(box).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)

    # One row per resource: the held amount (the pods' requests) and the reason, no bar.
    cpu = box.locator('.jp-dw-usage-row[data-resource="cpu"]')
    memory = box.locator('.jp-dw-usage-row[data-resource="memory"]')
    expect(cpu).to_contain_text(f"CPU 2 held — use unknown: {NOT_ALLOWED}", timeout=30_000)
    expect(memory).to_contain_text(f"Memory 2Gi held — use unknown: {NOT_ALLOWED}")
    expect(cpu).to_have_attribute("data-used", "")
    expect(box.locator(".jp-dw-usage [role=meter]")).to_have_count(0)
    # Unknown is not idle: no idle line is drawn from a use nobody measured.
    expect(box.locator(".jp-dw-idle")).to_have_count(0)

    # The queue's line: what this workbench's clusters hold in team, summed by the server.
    line = sidebar.locator('[data-queue="team"] .jp-dw-holding')
    expect(line).to_have_text("Your cluster holds 2 CPU of team; its use is unknown now")
    expect(line).to_have_attribute("data-clusters", "1")
    box.screenshot(path=str(artifacts / "card-usage.png"))

    # What the REST API says is what the card shows (one computation, in the server's core).
    usage = lab.api("GET", "clusters/ui-usage")["usage"]
    assert usage["resources"]["cpu"] == {"held": "2", "used": None}, usage
    assert usage["reason"].startswith(NOT_ALLOWED), usage

    # Deleted: the queue's line goes with the last cluster holding anything there.
    lab.api("DELETE", "clusters/ui-usage")
    expect(box).to_have_count(0, timeout=READY_TIMEOUT)
    expect(line).to_have_count(0)
