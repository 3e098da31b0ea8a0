"""The Distributed Workloads sidebar in headless Chromium, against JupyterLab running as a
workbench service account on the local control plane (real Kueue, KubeRay, KWOK nodes).

One scenario, in the order a user meets it: open the panel; the queues show what
``GET queues`` says; create a cluster from the form and watch it go queued → ready without
reloading; a second cluster that must wait shows Kueue's reason and its position, and is
admitted when the first is deleted from its card; the server drops the events socket and the
panel recovers; light and dark screenshots. Every wait is Playwright's wait for a condition.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from playwright.sync_api import Page, expect

from jupyter_dw.names import IDEMPOTENCY_KEY_ANNOTATION
from tests.cluster.fixtures import KueueObjects
from tests.integration.workbench_rbac import KUEUE
from tests.ui.lab import LabServer

pytestmark = pytest.mark.cluster

READY_TIMEOUT = 90_000  # ms: Kueue admission, KubeRay pods, KWOK readiness

# Installed once the panel is open: every data-state a card shows and every connection
# state, in order, as the DOM changes (nothing is missed between two Playwright polls).
RECORDER = """
() => {
  window.__dw = { states: {}, connection: [] };
  const root = document.getElementById('jp-dw-sidebar');
  const record = () => {
    for (const card of root.querySelectorAll('[data-cluster]')) {
      const seen = (window.__dw.states[card.dataset.cluster] ||= []);
      if (seen[seen.length - 1] !== card.dataset.state) seen.push(card.dataset.state);
    }
    const status = root.querySelector('[data-connection]');
    const c = window.__dw.connection;
    if (status && c[c.length - 1] !== status.dataset.connection) c.push(status.dataset.connection);
  };
  new MutationObserver(record).observe(root, {
    subtree: true, childList: true, attributes: true,
    attributeFilter: ['data-state', 'data-connection']
  });
  record();
}
"""


def make_queues(kueue: KueueObjects) -> None:
    """``team`` (default; 4 CPU, 8Gi: one 3-CPU cluster at a time) and ``research``."""
    flavor = kueue.flavor("default")
    team = kueue.cluster_queue("team", {flavor: {"cpu": "4", "memory": "8Gi"}})
    research = kueue.cluster_queue("research", {flavor: {"cpu": "2", "memory": "4Gi"}})
    for cq in (team, research):
        kueue.wait_active("clusterqueues", cq)
    kueue.local_queue("team", team, annotations={f"{KUEUE}/default-queue": "true"})
    kueue.local_queue("research", research)
    for lq in ("team", "research"):
        kueue.wait_active("localqueues", lq)


# Before the page loads: every events message's type and queue names, as it arrives (the
# whole answer's in a `snapshot` or `queues` message, the changed records' in a `queue` one).
MESSAGES = """
const Native = window.WebSocket;
window.__dwMessages = [];
window.WebSocket = class extends Native {
  constructor(...args) {
    super(...args);
    if (String(args[0]).includes('dw/api/events')) {
      this.addEventListener('message', event => {
        const m = JSON.parse(event.data);
        const records = Array.isArray(m.queues) ? m.queues : m.queues?.queues;
        const queues = records ? records.map(q => q.name) : null;
        window.__dwMessages.push({ type: m.type, queues });
      });
    }
  }
};
"""

NEXT_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def open_panel(page: Page, lab: LabServer) -> Any:
    page.add_init_script(MESSAGES)
    page.goto(lab.lab_url())
    tab = page.get_by_role("tab", name="Distributed Workloads")
    expect(tab).to_be_visible(timeout=60_000)
    tab.click()
    sidebar = page.locator("#jp-dw-sidebar")
    expect(sidebar).to_be_visible()
    expect(sidebar.locator("[data-connection]")).to_have_attribute("data-connection", "live")
    page.evaluate(RECORDER)
    return sidebar


def fill_form(sidebar: Any, **fields: str) -> None:
    labels = {
        "name": "Name",
        "workers": "Workers",
        "worker_cpu": "Worker CPU",
        "worker_memory": "Worker memory",
        "head_cpu": "Head CPU",
        "head_memory": "Head memory",
    }
    for name, value in fields.items():
        sidebar.get_by_label(labels[name], exact=True).fill(value)


def card(sidebar: Any, name: str) -> Any:
    return sidebar.locator(f'[data-cluster="{name}"]')


def run_js(page: Page, command: str, args: dict[str, Any]) -> None:
    """Run a JupyterLab command (the app is exposed by --LabApp.expose_app_in_browser)."""
    page.evaluate(
        "async ([c, a]) => { await window.jupyterapp.commands.execute(c, a); }", [command, args]
    )


def test_sidebar_end_to_end(
    page: Page,
    lab: LabServer,
    kueue: KueueObjects,
    kube,
    namespace: str,
    artifacts: Path,
    docs_picture,
) -> None:
    make_queues(kueue)
    sidebar = open_panel(page, lab)

    # -- the queues show what GET queues says ------------------------------------------------
    answer = lab.api("GET", "queues")
    assert [q["name"] for q in answer["queues"]] == ["research", "team"]
    for queue in answer["queues"]:
        item = sidebar.locator(f'[data-queue="{queue["name"]}"]')
        expect(item.locator('[data-count="pending"] strong')).to_have_text(str(queue["pending"]))
        expect(item.locator('[data-count="admitted"] strong')).to_have_text(str(queue["admitted"]))
        expect(item.locator(".jp-dw-tag", has_text="default")).to_have_count(
            1 if queue["default"] else 0
        )
        assert {r["resource"] for r in queue["resources"]} == {"cpu", "memory"}
        for resource in queue["resources"]:
            row = item.locator(
                f'[data-resource="{resource["resource"]}"][data-flavor="{resource["flavor"]}"]'
            )
            expect(row.locator(".jp-dw-headroom")).to_have_text(resource["headroom"])
            expect(row).to_contain_text(f"of {resource['max_obtainable']}")
            expect(row.get_by_role("meter")).to_have_count(1)

    # -- create a cluster from the form; it goes queued → ready without a reload ------------
    expect(sidebar.get_by_label("Queue", exact=True)).to_have_value("team")  # the default
    size = {"worker_cpu": "1", "worker_memory": "1Gi", "head_cpu": "1", "head_memory": "1Gi"}
    # 1 + 5 CPU cannot fit 4: the fit check offers what would start now, in one click.
    fill_form(sidebar, name="ui-first", workers="5", **size)
    verdict = sidebar.locator("[data-verdict]")
    expect(verdict).to_have_attribute("data-verdict", re.compile("never-fits|must-wait"))
    fit = lab.api("POST", "clusters/fit", {"queue": "team", "workers": 5, **size})
    assert fit["suggestion"]["workers"] == 3, fit
    expect(sidebar.locator(".jp-dw-fit-message")).to_have_text(fit["message"])
    sidebar.get_by_role("button", name="3 workers would start now — use that").click()
    expect(sidebar.get_by_label("Workers", exact=True)).to_have_value("3")
    expect(verdict).to_have_attribute("data-verdict", "fits-now")
    sidebar.get_by_role("button", name="Create cluster").click()
    expect(sidebar.locator(".jp-dw-result")).to_contain_text("Created ui-first")
    # The click sent an idempotency key (a UUID made in the page), stored on the cluster.
    stored = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "ui-first"
    )
    key = stored["metadata"]["annotations"][IDEMPOTENCY_KEY_ANNOTATION]
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", key)
    first = card(sidebar, "ui-first")
    expect(first).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    expect(first.locator("[data-workers-ready]")).to_have_text("3")
    # A fixed-size cluster: the ready/desired bar as before, no elastic bar, no stepper.
    fixed = lab.api("GET", "clusters/ui-first")
    assert fixed["elastic"] is False and fixed["min_workers"] == fixed["max_workers"] == 3
    expect(first.locator(".jp-dw-workers")).to_have_text("workers 3/3 ready · head ready")
    expect(first.locator("[data-elastic]")).to_have_count(0)
    expect(first.get_by_role("group", name="Scale ui-first")).to_have_count(0)
    # It fits, so Kueue may admit it before the panel draws its first state: the card is
    # first drawn in whichever state before ready the feed brought, then turns ready live.
    # (ui-second below, which must wait, is the one held to be seen queued.)
    states = page.evaluate("() => window.__dw.states['ui-first']")
    assert states[0] in ("queued", "suspended", "admitted", "starting"), states
    assert len(states) >= 2 and states[-1] == "ready", states
    ready = lab.api("GET", "clusters/ui-first")
    assert ready["state"] == "ready"
    # The timeline is the API's milestones, each with its time.
    names = [m["name"] for m in ready["milestones"]]
    assert names[:3] == ["Submitted", "QuotaReserved", "Admitted"] and names[-1] == "Ready"
    expect(first.locator("[data-milestone]")).to_have_count(len(names))
    for i, name in enumerate(names):
        expect(first.locator("[data-milestone]").nth(i)).to_have_attribute("data-milestone", name)
    expect(first.locator(".jp-dw-held")).to_have_text(
        re.compile(r"holding quota for \d+(s|m \d\ds)")
    )
    expect(first.locator(".jp-dw-card-queue")).to_contain_text("by you")
    sidebar.screenshot(path=str(artifacts / "sidebar-light.png"))

    # -- the dashboard opens in a sandboxed tab; ray.init goes into the notebook ------------
    first.get_by_role("button", name="Open the Ray dashboard of ui-first").click()
    frame = page.locator("#jp-dw-dashboard-ui-first iframe")
    expect(frame).to_have_attribute("src", re.compile(r"/dw/ray/ui-first/$"))
    sandbox = frame.get_attribute("sandbox") or ""
    assert "allow-scripts" in sandbox and "allow-same-origin" not in sandbox, sandbox
    # Through the server's proxy to the (stand-in) dashboard of this cluster.
    expect(page.frame_locator("#jp-dw-dashboard-ui-first iframe").locator("#path")).to_have_text(
        f"/{namespace}/ui-first/"
    )

    run_js(page, "notebook:create-new", {"kernelName": "python3"})
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()
    first.get_by_role("button", name="Insert ray.init code for ui-first").click()
    # Ray Client through jupyter_dw (the token stays in the kernel, never in the notebook).
    # The cell that holds it (not the last cell: JupyterLab may add an empty one after it).
    cells = page.locator(".jp-NotebookPanel .jp-Cell")
    inserted = cells.filter(has_text='h = dw.cluster("ui-first")')
    expect(inserted).to_have_count(1)
    expect(inserted).to_contain_text("h.ray_init()")
    expect(inserted).to_contain_text(f"ray://ui-first-head-svc.{namespace}.svc:10001")

    # -- a second cluster must wait: Kueue's reason and its position ------------------------
    fill_form(sidebar, name="ui-second", workers="2", **size)  # 3 CPU; 0 left in team
    expect(sidebar.locator("[data-verdict]")).to_have_attribute("data-verdict", "must-wait")
    sidebar.get_by_role("button", name="Create cluster").click()
    second = card(sidebar, "ui-second")
    # Kueue's position and its reason come in separate writes: wait for both in the panel.
    expect(second.locator(".jp-dw-position")).to_be_visible(timeout=READY_TIMEOUT)
    expect(second.locator(".jp-dw-reason")).to_be_visible(timeout=READY_TIMEOUT)
    waiting = lab.api("GET", "clusters/ui-second")
    assert waiting["state"] == "queued" and waiting["position_in_local_queue"] is not None
    expect(second).to_have_attribute("data-state", "queued")
    expect(second.locator(".jp-dw-position")).to_have_attribute(
        "data-position", str(waiting["position_in_local_queue"])
    )
    assert waiting["reason"], waiting
    expect(second.locator(".jp-dw-reason")).to_have_text(waiting["reason"])
    sidebar.screenshot(path=str(artifacts / "sidebar-waiting-light.png"))
    docs_picture(second, "waiting-card.png")

    # -- delete the first from its card (with confirmation); the second is admitted ---------
    first.get_by_role("button", name="Delete ui-first").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Delete ui-first?")
    dialog.get_by_role("button", name="Delete").click()
    expect(first).to_have_count(0, timeout=READY_TIMEOUT)
    expect(second).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    assert "queued" in page.evaluate("() => window.__dw.states['ui-second']")

    # -- the server drops the events socket: "reconnecting", then live on a fresh snapshot --
    status = sidebar.locator("[data-connection]")
    page.evaluate("() => { window.__dw.connection = ['live']; }")
    closed = lab.request("POST", "dw-test/drop-events", {})
    assert closed[0] == 200 and closed[1]["closed"] >= 1, closed
    expect(status).to_have_attribute("data-reconnects", "1")
    expect(status).to_have_attribute("data-connection", "live")
    assert page.evaluate("() => window.__dw.connection") == ["live", "reconnecting", "live"]
    # ... and keeps updating: a queue the administrator adds appears.
    kueue.local_queue("late", f"{namespace}-team")
    expect(sidebar.locator('[data-queue="late"]')).to_be_visible()

    # -- hidden, the panel keeps its socket but does not render; shown, it renders once ------
    page.get_by_role("tab", name="File Browser").click()
    expect(sidebar).to_be_hidden()
    renders = sidebar.get_attribute("data-renders")
    seen = page.evaluate("() => window.__dwMessages.length")
    client.CustomObjectsApi(kube).delete_namespaced_custom_object(
        KUEUE, kueue.api_version, namespace, "localqueues", "late"
    )
    page.wait_for_function(
        f"""() => window.__dwMessages.slice({seen}).some(
              m => m.type === 'queues' && m.queues && !m.queues.includes('late'))"""
    )
    page.evaluate(NEXT_FRAMES)
    assert sidebar.get_attribute("data-renders") == renders  # the message came; no render
    expect(sidebar.locator('[data-queue="late"]')).to_have_count(1)  # the stale DOM
    page.get_by_role("tab", name="Distributed Workloads").click()
    expect(sidebar.locator('[data-queue="late"]')).to_have_count(0)
    assert int(sidebar.get_attribute("data-renders") or 0) > int(renders or 0)
    expect(status).to_have_attribute("data-reconnects", "1")

    # -- keyboard: the form is reachable with Tab, fields in order ---------------------------
    sidebar.get_by_label("Name", exact=True).focus()
    page.keyboard.press("Tab")
    expect(sidebar.get_by_label("Workers", exact=True)).to_be_focused()
    second.get_by_role("button", name="Dashboard").focus()
    page.keyboard.press("Tab")
    expect(second.get_by_role("button", name="Insert ray.init")).to_be_focused()

    # -- dark theme --------------------------------------------------------------------------
    run_js(page, "apputils:change-theme", {"theme": "JupyterLab Dark"})
    expect(page.locator("body")).to_have_attribute("data-jp-theme-light", "false")
    sidebar.screenshot(path=str(artifacts / "sidebar-dark.png"))

    # -- clean up through the panel -----------------------------------------------------------
    second.get_by_role("button", name="Delete ui-second").click()
    page.locator(".jp-Dialog").get_by_role("button", name="Delete").click()
    expect(second).to_have_count(0, timeout=READY_TIMEOUT)
