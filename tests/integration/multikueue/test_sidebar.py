"""The sidebar on the MultiKueue bed's manager, in headless Chromium (as tests/ui, whose
fixtures it borrows): a cluster MultiKueue sent to the worker shows where it runs, its state
and worker counts as the worker's KubeRay wrote them, why its use is not measured here and why
its dashboard is not reachable, with no dashboard link and no Ray jobs spinner; one offered to
the full worker says so; the queue says it runs workloads on worker-1. The documentation's
picture of a cluster running on a worker is taken here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.cluster.multikueue import MirroredQueue
from tests.integration.clusters_support import small_cluster
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules
from tests.ui import conftest as ui
from tests.ui.lab import LabServer
from tests.ui.test_sidebar import card, open_panel

from .conftest import WORKER
from .test_rest import MULTIKUEUE_READ_RULES

pytestmark = [pytest.mark.cluster, pytest.mark.multikueue]

# The UI tests' fixtures (tests/ui/conftest.py), by name: a headless Chromium page, the test's
# artifacts and the documentation's pictures, and pytest-jupyter's loop and clean-up turned off.
artifacts = ui.artifacts
browser = ui.browser
docs_picture = ui.docs_picture
expected_console_errors = ui.expected_console_errors
jp_asyncio_loop = ui.jp_asyncio_loop
jp_server_cleanup = ui.jp_server_cleanup
page = ui.page


@pytest.fixture
def lab(workbench, artifacts: Path, tmp_path: Path) -> Iterator[LabServer]:
    """JupyterLab as a workbench of the manager that may read MultiKueue's objects."""
    identity = workbench(
        rules=namespace_rules(), cluster_rules=CLUSTER_READ_RULES + MULTIKUEUE_READ_RULES
    )
    server = LabServer(
        service_account_dir=identity.service_account_dir,
        pod_environ=identity.environ,
        workdir=tmp_path / "lab",
        log_path=artifacts / "jupyter-server.log",
    )
    server.workdir.mkdir()
    server.start()
    yield server
    server.stop()


def test_a_card_of_a_cluster_running_on_the_worker(
    page: Page, lab: LabServer, mk_queue: MirroredQueue, docs_picture
) -> None:
    sidebar = open_panel(page, lab)
    queue = sidebar.locator('[data-queue="team"]')
    expect(queue.locator(".jp-dw-queue-multikueue")).to_have_text(
        f"runs workloads on worker clusters {WORKER} (MultiKueue)"
    )

    lab.api("POST", "clusters", small_cluster("on-worker", workers=2, queue="team"))
    box = card(sidebar, "on-worker")
    expect(box).to_have_attribute("data-state", "ready", timeout=60_000)
    placement = box.locator(".jp-dw-placement")
    expect(placement).to_have_attribute("data-worker", WORKER)
    expect(placement).to_contain_text(f"runs on worker cluster {WORKER} (sent there by MultiKueue)")
    expect(box.locator(".jp-dw-usage")).to_contain_text(
        f"use unknown: runs on worker cluster {WORKER}: its pods' use is measured there"
    )
    expect(box.locator(".jp-dw-dashboard-note")).to_contain_text(
        "its Ray dashboard is not reachable from this workbench"
    )
    dashboard = box.get_by_role("button", name="Open the Ray dashboard of on-worker")
    expect(dashboard).to_be_disabled()
    connect = box.get_by_role("button", name=re.compile("^Insert ray.init code for on-worker"))
    expect(connect).to_be_disabled()  # Ray Client reaches a worker's head only from there
    expect(connect).to_have_attribute("title", re.compile(f"Runs on worker cluster {WORKER}"))
    expect(box.locator(".jp-dw-jobs")).to_have_count(0)  # no Ray jobs to read, no spinner
    row = sidebar.locator('[data-queue="team"] .jp-dw-workload-worker')
    expect(row).to_have_text(f"on {WORKER}")
    docs_picture(box, "multikueue-card.png")

    # The worker's 4 CPUs are taken (3): the next one is offered to it and waits there.
    lab.api("POST", "clusters", small_cluster("offered", workers=1, queue="team"))
    waiting = card(sidebar, "offered")
    expect(waiting).to_have_attribute("data-state", "waiting-for-capacity", timeout=60_000)
    expect(waiting.locator(".jp-dw-placement")).to_contain_text(
        f"MultiKueue offered it to worker cluster {WORKER}"
    )
    docs_picture(sidebar, "multikueue-sidebar.png")
