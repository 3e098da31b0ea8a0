"""An idle cluster's card (issue 28): what it holds and uses, since when it is idle, and the
idle rule's warning while a workload waits for its quota — in headless Chromium against
JupyterLab running as a workbench service account on the local control plane, with real
PodMetrics (metrics-server scraping KWOK) and a real Ray head standing in for the cluster's
(the gateway ``make demo`` uses). The card's picture is the docs' (docs/img/idle-card.png).

The rule's timeout is an hour and its warning 3,599 s: the warning shows a second after the
cluster is idle, and the rule never acts while the test looks. Every wait is Playwright's wait
for a condition.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.cluster.ray_standin import RayStandIn, ray_standin
from tests.integration.clusters_support import small_cluster
from tests.integration.workbench_rbac import (
    METRICS_READ_RULES,
    namespace_rules,
)
from tests.ui.lab import LabServer, team_queue, workbench_lab
from tests.ui.test_sidebar import card, open_panel, run_js

pytestmark = pytest.mark.cluster

READY_TIMEOUT = 90_000  # ms: Kueue admission, KubeRay pods, KWOK readiness
METRICS_TIMEOUT = 90_000  # ms: a pod's first PodMetrics take three scrapes 10 s apart


@pytest.fixture
def standin(kube, namespace) -> Iterator[RayStandIn]:
    with ray_standin(kube, namespace) as ray:
        yield ray


@pytest.fixture
def lab(workbench, standin: RayStandIn, artifacts: Path, tmp_path: Path) -> Iterator[LabServer]:
    """JupyterLab as a workbench whose clusters' Ray is the stand-in, with the idle rule on."""
    yield from workbench_lab(
        workbench,
        None,
        artifacts,
        tmp_path,
        f"--JupyterDW.ray_dashboard_url={standin.dashboard_template}",
        "--JupyterDW.usage_interval=2",
        "--JupyterDW.idle_cluster_timeout=3600",
        "--JupyterDW.idle_cluster_warning=3599",
        rules=[*namespace_rules(stop=True), *METRICS_READ_RULES],
    )


def test_an_idle_cluster_s_card_says_what_it_holds_and_when_the_rule_stops_it(
    page: Page, lab: LabServer, kueue: KueueObjects, docs_picture
) -> None:
    team_queue(kueue, cpu="2")
    sidebar = open_panel(page, lab)

    lab.api("POST", "clusters", small_cluster("notebook-ray", workers=1, queue="team"))
    box = card(sidebar, "notebook-ray")
    expect(box).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    lab.api("POST", "clusters", small_cluster("next-in-line", workers=1, queue="team"))
    expect(card(sidebar, "next-in-line")).to_have_attribute(
        "data-state", "queued", timeout=READY_TIMEOUT
    )

    # Ray says nothing runs: idle, with what it holds; the rule's warning, a workload waiting.
    idle = box.locator(".jp-dw-idle")
    expect(idle).to_contain_text(
        re.compile(r"^Idle \d+ min \(since .+\), holding 2 CPU"), timeout=READY_TIMEOUT
    )
    expect(idle).to_have_attribute("data-idle-basis", "ray")
    rule = box.locator(".jp-dw-idle-rule.jp-dw-idle-warning")
    expect(rule).to_have_text(
        re.compile(r"^Will be stopped at .+ unless used: 1 workload waits for quota$"),
        timeout=READY_TIMEOUT,
    )
    expect(rule).to_have_attribute("role", "alert")
    # ... and as a JupyterLab notification, once, wherever the user works.
    toast = page.locator(".Toastify__toast").filter(has_text="notebook-ray: Will be stopped at")
    expect(toast).to_have_count(1)
    expect(box.locator(".jp-dw-ray-load")).to_contain_text("0 jobs running")
    # The metrics API's reading: a bar per resource, used of held (KWOK's pods use 1m, 1Mi).
    cpu = box.locator('.jp-dw-usage-row[data-resource="cpu"]')
    expect(cpu.locator("[role=meter]")).to_have_count(1, timeout=METRICS_TIMEOUT)
    expect(cpu).to_contain_text(re.compile(r"^CPU [\d.]+m? of 2 used"))
    docs_picture(box, "idle-card.png")
    # The whole panel from its top (the queue first): a window tall enough to hold it.
    page.set_viewport_size({"width": 1280, "height": 1500})
    sidebar.evaluate("e => { for (const n of [e, ...e.querySelectorAll('*')]) n.scrollTop = 0 }")
    docs_picture(sidebar, "sidebar.png")
    run_js(page, "apputils:change-theme", {"theme": "JupyterLab Dark"})
    expect(page.locator("body")).to_have_attribute("data-jp-theme-light", "false")
    docs_picture(sidebar, "sidebar-dark.png")

    # The REST answer is what the card shows: one verdict, the server's.
    usage = lab.api("GET", "clusters/notebook-ray")["usage"]
    assert usage["idle"] is True and usage["idle_action"]["warning"] is True, usage
    assert usage["idle_action"]["waiting"] == 1 and usage["resources"]["cpu"]["held"] == "2"
