"""What ``make demo`` greets a user with, in headless Chromium: JupyterLab with the demo's user
settings (written by the same code as the Makefile's, :func:`tests.cluster.demo.
write_demo_settings`) and its default URL opens ``quickstart.ipynb`` with the Distributed
Workloads panel shown, and no "Would you like to get notified about official Jupyter news?"
toast over it.

The news prompt is JupyterLab's announcements plugin (on here, as in the demo; the other UI
tests turn it off). Once the app is restored and the notification settings are loaded, the
plugin either shows the prompt (``fetchNews`` "none", JupyterLab's default) or goes on to ask
the server for updates (``GET lab/api/update``; the test server answers it without going out).
The test waits for one of the two, so it knows the plugin has decided, then requires the
second: the prompt was not shown, and cannot be shown later.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.cluster.demo import write_demo_settings
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules
from tests.ui.lab import LabServer, StandInDashboard

pytestmark = pytest.mark.cluster

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart.ipynb"
NEWS_PROMPT = "Would you like to get notified about official Jupyter news?"
DEFAULT_URL = "/lab/tree/quickstart.ipynb"  # the Makefile's --LabApp.default_url

# Before the page loads: whether JupyterLab asked the server for updates (fetch observed, not
# changed).
UPDATE_CHECK = """
window.__dwUpdateChecked = false;
const nativeFetch = window.fetch;
window.fetch = function (input, init) {
  const url = typeof input === 'string' ? input : input.url;
  if (String(url).includes('/lab/api/update')) window.__dwUpdateChecked = true;
  return nativeFetch.call(this, input, init);
};
"""


@pytest.fixture
def lab(
    workbench, dashboard: StandInDashboard, artifacts: Path, tmp_path: Path
) -> Iterator[LabServer]:
    """JupyterLab as ``make demo`` runs it: the quickstart in its root, the demo's settings,
    its default URL, the announcements plugin on."""
    identity = workbench(rules=namespace_rules(), cluster_rules=CLUSTER_READ_RULES)
    workdir = tmp_path / "lab"
    workdir.mkdir()
    shutil.copy(QUICKSTART, workdir / QUICKSTART.name)
    write_demo_settings(workdir / "settings")  # LabServer's --LabApp.user_settings_dir
    server = LabServer(
        service_account_dir=identity.service_account_dir,
        pod_environ=identity.environ,
        workdir=workdir,
        log_path=artifacts / "jupyter-server.log",
        extra_args=[*dashboard.lab_args(), f"--LabApp.default_url={DEFAULT_URL}"],
        announcements=True,
    )
    server.start()
    yield server
    server.stop()


def test_demo_opens_the_quickstart_and_the_panel_without_the_news_prompt(
    page: Page, lab: LabServer, artifacts: Path
) -> None:
    page.add_init_script(UPDATE_CHECK)
    page.goto(f"{lab.url}{DEFAULT_URL}?token={lab.token}")
    expect(page.get_by_role("tab", name="quickstart.ipynb")).to_be_visible(timeout=60_000)
    expect(page.locator("#jp-dw-sidebar")).to_be_visible()  # openOnStartup
    # The announcements plugin has decided: it showed the prompt or asked for updates.
    page.wait_for_function(
        "text => window.__dwUpdateChecked || document.body.innerText.includes(text)",
        arg=NEWS_PROMPT,
        timeout=60_000,
    )
    page.screenshot(path=str(artifacts / "demo-layout.png"))
    assert page.get_by_text(NEWS_PROMPT).count() == 0, "the news prompt is shown"
    assert page.evaluate("window.__dwUpdateChecked"), "JupyterLab never asked for updates"
