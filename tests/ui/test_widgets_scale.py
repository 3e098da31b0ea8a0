"""``dw.ClusterStatus`` of an elastic Ray cluster in headless Chromium, in JupyterLab and in
Notebook 7, its kernel running as the workbench's service account.

The test plays the Ray autoscaler (raising ``replicas`` beyond the quota): with no cell run in
between, the widget draws the pending scale-up as one bar (ready / waiting for quota) with who
asked, Kueue's reason and the slice's position. Its stepper then asks the kernel for a dry run
(the fit shown is the server's, compared with the REST answer) and scales on confirm.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.integration.test_elastic_scale import set_replicas
from tests.ui.lab import LabServer
from tests.ui.test_sidebar_scale import (
    RANGE,
    READY_TIMEOUT,
    elastic_cluster,
    elastic_queue,
    kueue_words,
    set_max_replicas,
    worker_group,
)
from tests.ui.test_widgets import (
    expected_console_errors,  # noqa: F401 (a fixture: Notebook 7's own start-up error)
    kernel_lab,
    run_all_cells,
)

pytestmark = pytest.mark.cluster

NAME = "ui-elastic-w"
CELL = f"""import jupyter_dw as dw
dw.ClusterStatus("{NAME}")"""


@pytest.fixture
def lab(workbench, artifacts: Path, tmp_path: Path) -> Iterator[LabServer]:
    yield from kernel_lab(workbench, artifacts, tmp_path, CELL)


@pytest.mark.parametrize(
    "frontend, path",
    [("jupyterlab", "/lab/tree/widgets.ipynb"), ("notebook7", "/notebooks/widgets.ipynb")],
    ids=["jupyterlab", "notebook7"],
)
def test_status_widget_shows_a_pending_scale_up_and_scales(
    page: Page,
    lab: LabServer,
    kueue: KueueObjects,
    kube,
    namespace: str,
    artifacts: Path,
    docs_picture,
    frontend: str,
    path: str,
) -> None:
    elastic_queue(kueue)
    lab.api("POST", "clusters", elastic_cluster(NAME))
    run_all_cells(page, f"{lab.url}{path}?token={lab.token}")

    output = page.locator(".jp-OutputArea-output").first
    state = output.locator(".jp-dw-state")
    workers = output.locator('.jp-dw-workers[data-elastic="true"]')
    summary = workers.locator(".jp-dw-workers-summary")
    expect(state).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    expect(summary).to_have_text("4 ready of 4 admitted", timeout=READY_TIMEOUT)

    # -- the Ray autoscaler asks for 6; no cell runs, the widget follows ----------------------
    set_replicas(kube, namespace, NAME, 6)  # what the Ray autoscaler does
    expect(workers).to_have_attribute("data-scale", "queued", timeout=READY_TIMEOUT)
    position = workers.locator(".jp-dw-scale-position")
    expect(position).to_be_visible(timeout=READY_TIMEOUT)
    pending = workers.locator(".jp-dw-scale-pending")
    expect(pending).to_contain_text("insufficient unused quota", timeout=READY_TIMEOUT)
    scale = lab.api("GET", f"clusters/{NAME}")["scale"]
    assert (scale["state"], scale["to"], scale["requested_by"]) == ("queued", 6, "autoscaler")
    expect(state).to_have_attribute("data-state", "ready")
    expect(summary).to_have_text("4 ready of 4 admitted · 2 more waiting for quota")
    bar = workers.get_by_role("progressbar", name="workers")
    expect(bar.locator('[data-segment="ready"]')).to_have_attribute("data-count", "4")
    expect(bar.locator('[data-segment="waiting"]')).to_have_attribute("data-count", "2")
    expect(workers.locator(".jp-dw-scale-request")).to_contain_text(
        "the Ray autoscaler asked for 6 workers: waiting for quota, "
        f"position {scale['position_in_local_queue'] + 1} in the queue"
    )
    expect(pending).to_have_text(kueue_words(scale))
    page.screenshot(path=str(artifacts / f"{frontend}-pending-scale-up.png"))
    if frontend == "jupyterlab":
        docs_picture(page, "elastic-widget-pending-scale-up.png")

    # -- the stepper: a dry run in the kernel, then the change on confirm --------------------
    target = output.locator(".jp-dw-scale-target")
    expect(target).to_have_text("6")
    output.get_by_role("button", name="One worker more").click()
    expect(target).to_have_text("7")
    proposal = output.locator('.jp-dw-scale-proposal[data-step="proposed"]')
    expect(proposal).to_have_attribute("data-workers", "7", timeout=30_000)
    seven = lab.api("POST", f"clusters/{NAME}/scale", {"workers": 7, "dry_run": True})
    assert seven["fit"]["verdict"] == "must-wait", seven
    expect(proposal.locator("[data-verdict]")).to_have_attribute("data-verdict", "must-wait")
    expect(proposal.locator(".jp-dw-scale-fit")).to_have_text(seven["fit"]["message"])

    # -- the range shrinks under the proposal: the kernel's refusal is said inline -----------
    set_max_replicas(kube, namespace, NAME, 6)
    owner = workers.locator(".jp-dw-scale-owner")
    expect(owner).to_have_text("the Ray autoscaler sizes it within 1\u20136")
    proposal.get_by_role("button", name="Scale to 7").click()
    refused = output.locator('.jp-dw-scale-proposal[data-step="error"]')
    expect(refused).to_have_attribute("data-code", "invalid_scale", timeout=30_000)
    status, error = lab.request("POST", f"dw/api/clusters/{NAME}/scale", {"workers": 7})
    assert status == 400 and error["code"] == "invalid_scale", (status, error)
    expect(refused).to_have_text(f"{error['error']}: {error['errors']['workers']}")
    assert worker_group(kube, namespace, NAME)["replicas"] == 6  # nothing changed
    set_max_replicas(kube, namespace, NAME, 8)
    expect(owner).to_have_text(f"the Ray autoscaler sizes it within {RANGE}")

    # -- 5 fits now: a dry run in the kernel, then the change on confirm ---------------------
    output.get_by_role("button", name="One worker fewer").click()  # 6: what is asked already
    output.get_by_role("button", name="One worker fewer").click()
    expect(target).to_have_text("5")
    expect(proposal).to_have_attribute("data-workers", "5", timeout=30_000)
    five = lab.api("POST", f"clusters/{NAME}/scale", {"workers": 5, "dry_run": True})
    assert five["fit"]["verdict"] == "fits-now", five
    expect(proposal.locator("[data-verdict]")).to_have_attribute("data-verdict", "fits-now")
    expect(proposal.locator(".jp-dw-scale-fit")).to_have_text(five["fit"]["message"])
    assert worker_group(kube, namespace, NAME)["replicas"] == 6  # the dry run changed nothing
    proposal.get_by_role("button", name="Scale to 5").click()
    expect(output.locator('.jp-dw-scale-proposal[data-step="applied"]')).to_contain_text(
        "Pinned at 5", timeout=30_000
    )
    expect(summary).to_have_text("5 ready of 5 admitted", timeout=READY_TIMEOUT)
    expect(workers).to_have_attribute("data-scale", "none", timeout=READY_TIMEOUT)
    expect(workers.locator(".jp-dw-scale-owner")).to_have_text(
        f"pinned at 5 workers (range {RANGE})"
    )
    group = worker_group(kube, namespace, NAME)
    assert (group["replicas"], group["minReplicas"]) == (5, 5), group
    page.screenshot(path=str(artifacts / f"{frontend}-scaled.png"))

    # -- Auto: the size goes back to the Ray autoscaler --------------------------------------
    output.get_by_role("button", name="Give the size back to the Ray autoscaler").click()
    expect(workers.locator(".jp-dw-scale-owner")).to_have_text(
        f"the Ray autoscaler sizes it within {RANGE}", timeout=30_000
    )
    expect(output.locator('.jp-dw-scale-proposal[data-step="applied"]')).to_have_text(
        f"Given back to the Ray autoscaler ({RANGE})"
    )
    assert worker_group(kube, namespace, NAME)["minReplicas"] == 1
