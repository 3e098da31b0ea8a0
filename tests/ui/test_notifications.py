"""Notifications of what a person waits for (issue 32), in headless Chromium against JupyterLab
and Notebook 7 running as a workbench service account on the local control plane: a cluster
made by another client (the test's REST calls, not this tab) notifies once when it is ready,
and once when, after waiting in its queue, it is admitted; a stop by another client notifies
(the `stopped` kind turned on in the user's settings); the user's own Stop and Resume in this
tab notify nothing. The ready notification's picture is the docs'
(docs/img/notification-ready.png). Every wait is Playwright's wait for a condition.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.integration.clusters_support import small_cluster
from tests.integration.workbench_rbac import namespace_rules
from tests.ui.lab import LabServer, StandInDashboard, team_queue, workbench_lab
from tests.ui.test_sidebar import card, open_panel
from tests.ui.test_widgets import NOTEBOOK7_UPSTREAM_ERROR

pytestmark = pytest.mark.cluster

READY_TIMEOUT = 120_000  # ms: Kueue admission, KubeRay pods, KWOK readiness

# Before the page loads: the text of every notification toast shown, once per toast (a toast
# closes by itself after a while; what it said stays recorded).
TOASTS = """
window.__dwToasts = [];
const seen = new WeakSet();
const record = () => {
  for (const toast of document.querySelectorAll('.Toastify__toast')) {
    if (!seen.has(toast)) {
      seen.add(toast);
      window.__dwToasts.push(toast.textContent);
    }
  }
};
const watch = () =>
  new MutationObserver(record).observe(document.body, { childList: true, subtree: true });
if (document.body) watch(); else document.addEventListener('DOMContentLoaded', watch);
"""


@pytest.fixture
def lab(
    workbench, dashboard: StandInDashboard, artifacts: Path, tmp_path: Path
) -> Iterator[LabServer]:
    """JupyterLab as a workbench that may stop and resume, `stopped` notifications on (the
    user's settings, read when the page asks for them)."""
    for server in workbench_lab(
        workbench, dashboard, artifacts, tmp_path, rules=namespace_rules(stop=True)
    ):
        settings = server.workdir / "settings" / "jupyter-dw"
        settings.mkdir(parents=True)
        (settings / "plugin.jupyterlab-settings").write_text(
            json.dumps({"notifications": {"stopped": True}})
        )
        yield server


@pytest.fixture
def expected_console_errors(request: pytest.FixtureRequest) -> list[str]:
    return [NOTEBOOK7_UPSTREAM_ERROR] if "notebook7" in request.node.name else []


def toasts(page: Page, text: str) -> list[str]:
    """The toasts shown so far that say ``text``."""
    return [t for t in page.evaluate("() => window.__dwToasts") if text in t]


def wait_toasts(page: Page, text: str, count: int) -> None:
    """Wait until ``count`` toasts saying ``text`` have been shown (one may have closed)."""
    page.wait_for_function(
        "([text, count]) => window.__dwToasts.filter(t => t.includes(text)).length >= count",
        arg=[text, count],
        timeout=READY_TIMEOUT,
    )


def test_notifications_in_jupyterlab(
    page: Page, lab: LabServer, kueue: KueueObjects, docs_picture
) -> None:
    team_queue(kueue, cpu="5")  # one 3-CPU cluster and one 2-CPU cluster at a time
    page.add_init_script(TOASTS)
    sidebar = open_panel(page, lab)

    # -- ready, made by another client: one notification, with the dashboard as its action ---
    lab.api("POST", "clusters", small_cluster("nt-first", workers=2))
    first_ready = page.locator(".Toastify__toast").filter(has_text="Ray cluster nt-first is ready")
    expect(first_ready).to_be_visible(timeout=READY_TIMEOUT)
    expect(first_ready.get_by_role("button", name="Open dashboard")).to_be_visible()
    docs_picture(first_ready, "notification-ready.png")
    first_ready.get_by_role("button", name="Open dashboard").click()
    expect(page.locator('iframe[src*="/dw/ray/nt-first/"]')).to_have_count(1)

    # -- a cluster that waits, admitted when the first goes: admitted, then ready ------------
    lab.api("POST", "clusters", small_cluster("nt-second", workers=2))
    second = card(sidebar, "nt-second")
    expect(second.locator(".jp-dw-summary")).to_be_visible(timeout=READY_TIMEOUT)
    lab.api("DELETE", "clusters/nt-first")
    wait_toasts(page, "Ray cluster nt-second was admitted after waiting", 1)
    expect(second).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    wait_toasts(page, "Ray cluster nt-second is ready", 1)

    # -- stopped by another client: told, with Resume --------------------------------------
    lab.api("POST", "clusters/nt-second/stop")
    stopped = page.locator(".Toastify__toast").filter(has_text="Ray cluster nt-second was stopped")
    expect(stopped).to_have_count(1, timeout=READY_TIMEOUT)
    expect(stopped.get_by_role("button", name="Resume")).to_be_visible()
    lab.api("POST", "clusters/nt-second/resume")
    expect(second).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    wait_toasts(page, "Ray cluster nt-second is ready", 2)  # a new admission, a new ready

    # -- the user's own Stop and Resume in this tab: nothing told ---------------------------
    second.get_by_role("button", name="Stop nt-second").click()
    expect(second).to_have_attribute("data-state", "stopped", timeout=READY_TIMEOUT)
    second.get_by_role("button", name="Resume nt-second").click()
    expect(second).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    # A later event of another cluster is told: everything before it has been decided.
    lab.api("POST", "clusters", small_cluster("nt-third", workers=1))
    wait_toasts(page, "Ray cluster nt-third is ready", 1)
    assert len(toasts(page, "nt-second was stopped")) == 1, page.evaluate("window.__dwToasts")
    assert len(toasts(page, "nt-second is ready")) == 2, page.evaluate("window.__dwToasts")
    assert len(toasts(page, "nt-first is ready")) == 1
    assert len(toasts(page, "nt-second was admitted")) == 1
    assert not toasts(page, "nt-third was admitted")  # it did not wait


def test_notifications_in_notebook7(page: Page, lab: LabServer, kueue: KueueObjects) -> None:
    """Notebook 7 loads the same plugin: its file browser page tells the same events."""
    team_queue(kueue, cpu="4")
    page.add_init_script(TOASTS)
    page.goto(f"{lab.url}/tree?token={lab.token}")
    expect(page.locator("#main-panel, .jp-FileBrowser").first).to_be_visible(timeout=60_000)
    lab.api("POST", "clusters", small_cluster("nb-ready", workers=1))
    wait_toasts(page, "Ray cluster nb-ready is ready", 1)
    lab.api("POST", "clusters/nb-ready/stop")
    wait_toasts(page, "Ray cluster nb-ready was stopped", 1)
    assert len(toasts(page, "nb-ready is ready")) == 1, page.evaluate("window.__dwToasts")
