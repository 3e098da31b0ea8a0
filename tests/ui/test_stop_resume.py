"""Stop and Resume in headless Chromium, against JupyterLab running as a workbench service
account that may stop and resume (``patch workloads``) on the local control plane (real Kueue,
KubeRay, KWOK nodes).

A ready cluster's card → Stop → the card says ``stopped`` and who stopped it; the
RayCluster is kept, its Workload is inactive (read with the administrator's client), its pods
are gone, and the cluster waiting behind it in the same ClusterQueue is admitted on the freed
quota. Resume → queued behind that one with Kueue's reason → ready at the same size once it is
deleted (the ``ClusterStatus`` widget's buttons: ``test_widgets_stop_resume.py``). Every
wait is a wait for a condition (Playwright's, or a Kubernetes watch), bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import WAIT_TIMEOUT, KueueObjects
from tests.integration.clusters_support import make_queue, small_cluster, workload_of
from tests.integration.workbench_rbac import namespace_rules
from tests.ui.lab import LabServer, StandInDashboard, workbench_lab
from tests.ui.test_sidebar import READY_TIMEOUT, card, open_panel

pytestmark = pytest.mark.cluster

STOP_RULES = namespace_rules(stop=True)


def raycluster(kube: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    """The RayCluster as the administrator reads it."""
    return client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", name
    )


def workload(kube: client.ApiClient, kueue: KueueObjects, namespace: str, name: str) -> Any:
    """The Workload of RayCluster ``name``, as the administrator reads it."""
    return workload_of(kube, kueue, raycluster(kube, namespace, name)["metadata"]["uid"])


def wait_no_pods(kube: client.ApiClient, namespace: str, name: str) -> None:
    """Watch the pods of Ray cluster ``name`` until there are none (fails after
    ``WAIT_TIMEOUT``)."""
    core = client.CoreV1Api(kube)
    selector = f"ray.io/cluster={name}"
    listing = core.list_namespaced_pod(namespace, label_selector=selector)
    left = {pod.metadata.name for pod in listing.items}
    if not left:
        return
    for event in watch.Watch().stream(
        core.list_namespaced_pod, namespace, label_selector=selector,
        resource_version=listing.metadata.resource_version, timeout_seconds=WAIT_TIMEOUT,
    ):  # fmt: skip
        pod = event["object"].metadata.name
        if event["type"] == "DELETED":
            left.discard(pod)
        else:
            left.add(pod)
        if not left:
            return
    raise AssertionError(f"pods of {name} still there after {WAIT_TIMEOUT}s: {sorted(left)}")


@pytest.fixture
def lab(
    workbench, dashboard: StandInDashboard, artifacts: Path, tmp_path: Path
) -> Iterator[LabServer]:
    """JupyterLab as a workbench that may also stop and resume (``patch workloads``)."""
    yield from workbench_lab(workbench, dashboard, artifacts, tmp_path, rules=STOP_RULES)


def test_sidebar_stop_frees_quota_and_resume_brings_it_back(
    page: Page, lab: LabServer, kueue: KueueObjects, kube, namespace: str, artifacts: Path
) -> None:
    make_queue(kueue)  # 4 CPU: one cluster of 3 CPU (head + 2 workers) at a time
    me = lab.api("GET", "context")["identity"]["username"]
    sidebar = open_panel(page, lab)

    lab.api("POST", "clusters", small_cluster("ui-first", workers=2))
    first = card(sidebar, "ui-first")
    expect(first).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    expect(first.locator("[data-workers-ready]")).to_have_text("2")
    lab.api("POST", "clusters", small_cluster("ui-second", workers=2))
    second = card(sidebar, "ui-second")
    expect(second.locator(".jp-dw-reason")).to_be_visible(timeout=READY_TIMEOUT)
    expect(second).to_have_attribute("data-state", "queued")
    # A queued cluster holds no quota: nothing to stop (Delete leaves the queue).
    expect(second.get_by_role("button", name="Stop ui-second")).to_have_count(0)

    # -- Stop: the card says stopped and by whom; the cluster is kept, its pods go ----------
    first.get_by_role("button", name="Stop ui-first").click()
    expect(first).to_have_attribute("data-state", "stopped", timeout=READY_TIMEOUT)
    expect(first.locator(".jp-dw-stopped")).to_have_attribute("data-stopped-by", "person")
    expect(first.locator(".jp-dw-stopped")).to_contain_text(f"stopped by {me} at ")
    expect(first.get_by_role("button", name="Resume ui-first")).to_be_visible()
    expect(first.get_by_role("button", name="Stop ui-first")).to_have_count(0)
    stopped = lab.api("GET", "clusters/ui-first")
    assert stopped["stopped"]["by"] == me and stopped["stopped"]["reason"] == {"by": "person"}
    kept = raycluster(kube, namespace, "ui-first")
    assert kept["spec"]["workerGroupSpecs"][0]["replicas"] == 2  # the spec is kept
    assert workload(kube, kueue, namespace, "ui-first")["spec"]["active"] is False
    wait_no_pods(kube, namespace, "ui-first")
    expect(first).to_have_attribute("data-state", "stopped")  # still shown, and still stopped
    sidebar.screenshot(path=str(artifacts / "stopped.png"))

    # -- the freed quota goes to the cluster waiting in the same ClusterQueue ----------------
    expect(second).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    expect(second.locator("[data-workers-ready]")).to_have_text("2")
    assert "queued" in page.evaluate("() => window.__dw.states['ui-second']")

    # -- Resume: queued behind ui-second with Kueue's reason, then ready at the same size ----
    first.get_by_role("button", name="Resume ui-first").click()
    expect(first).to_have_attribute("data-state", "queued", timeout=READY_TIMEOUT)
    expect(first.locator(".jp-dw-stopped")).to_have_count(0)
    expect(first.locator(".jp-dw-card-reason")).to_contain_text(
        "insufficient unused quota", timeout=READY_TIMEOUT
    )
    expect(first.locator(".jp-dw-position")).to_have_attribute(
        "data-position", "0", timeout=READY_TIMEOUT
    )
    expect(first.get_by_role("button", name="Resume ui-first")).to_have_count(0)
    assert workload(kube, kueue, namespace, "ui-first")["spec"]["active"] is True
    lab.api("DELETE", "clusters/ui-second")
    expect(second).to_have_count(0, timeout=READY_TIMEOUT)
    expect(first).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    expect(first.locator("[data-workers-ready]")).to_have_text("2")
    expect(first.locator(".jp-dw-workers")).to_have_text("workers 2/2 ready · head ready")
    states = page.evaluate("() => window.__dw.states['ui-first']")
    assert states[states.index("stopped") :][:2] == ["stopped", "queued"], states
    assert states[-1] == "ready", states
    assert raycluster(kube, namespace, "ui-first")["spec"]["workerGroupSpecs"][0]["replicas"] == 2
    sidebar.screenshot(path=str(artifacts / "resumed.png"))
