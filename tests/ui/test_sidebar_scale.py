"""An elastic Ray cluster on the sidebar card, in headless Chromium against JupyterLab on the
local control plane (Kueue with elastic jobs, KubeRay, KWOK).

The test plays the Ray autoscaler (KWOK pods run no Ray) by raising the worker group's
``replicas`` beyond the queue's quota: Kueue makes a new Workload slice that waits. The card
draws ready / admitted / waiting as one bar with who asked, Kueue's reason and the slice's
position, while the cluster stays ``ready``. Then the user drives the stepper: each step is a
dry run whose fit the card shows (the server's words, compared with the REST answer), and the
change is made on confirm; "Auto" gives the size back to the autoscaler. Every wait is on a
condition in the page or the API.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.integration.test_elastic_scale import set_replicas, set_worker_group
from tests.integration.workbench_rbac import KUEUE
from tests.ui.lab import LabServer
from tests.ui.test_sidebar import card, open_panel

pytestmark = pytest.mark.cluster

READY_TIMEOUT = 90_000  # ms: Kueue admission, KubeRay pods, KWOK readiness

# Head 1 CPU + the autoscaler sidecar (at most 1 CPU) + 2 CPU per worker: 5 workers fit in
# 12 CPU, 6 do not, whatever the sidecar's size in [0, 1] CPU.
QUEUE_CPU = "12"
WORKER_CPU = "2"
RANGE = "1\u20138"  # [min_workers, max_workers] as the bar writes it, with an en dash


def elastic_queue(kueue: KueueObjects) -> None:
    """``team``, the default queue: 12 CPU, memory to spare."""
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("team", {flavor: {"cpu": QUEUE_CPU, "memory": "64Gi"}})
    kueue.wait_active("clusterqueues", cq)
    kueue.local_queue("team", cq, annotations={f"{KUEUE}/default-queue": "true"})
    kueue.wait_active("localqueues", "team")


def elastic_cluster(name: str) -> dict[str, Any]:
    """4 workers now, the Ray autoscaler free to go from 1 to 8."""
    return {
        "name": name,
        "queue": "team",
        "workers": 4,
        "min_workers": 1,
        "max_workers": 8,
        "worker_cpu": WORKER_CPU,
        "worker_memory": "1Gi",
        "head_cpu": "1",
        "head_memory": "1Gi",
    }


def set_max_replicas(kube, namespace: str, name: str, workers: int) -> None:
    """An administrator changes the autoscaling range's upper bound."""
    set_worker_group(kube, namespace, name, maxReplicas=workers)


def worker_group(kube, namespace: str, name: str) -> dict[str, Any]:
    raycluster = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", name
    )
    return raycluster["spec"]["workerGroupSpecs"][0]


def kueue_words(scale: dict[str, Any]) -> str:
    """The pending slice's reason and message as the bar shows them."""
    return ": ".join(part for part in (scale["reason"], scale["message"]) if part)


@pytest.fixture
def expected_console_errors() -> list[str]:
    """The refused scale the test provokes: Chromium logs its 400 as a failed resource load
    (without the URL; the test checks that it is the only 400 and whose it is)."""
    return [r"^console\.error: Failed to load resource: the server responded with a status of 400"]


def test_card_shows_a_pending_scale_up_and_the_stepper_scales(
    page: Page, lab: LabServer, kueue: KueueObjects, kube, namespace: str, docs_picture
) -> None:
    elastic_queue(kueue)
    refusals: list[str] = []
    page.on("response", lambda r: refusals.append(r.url) if r.status == 400 else None)
    sidebar = open_panel(page, lab)
    created = lab.api("POST", "clusters", elastic_cluster("ui-elastic"))
    assert created["elastic"] is True, created
    box = card(sidebar, "ui-elastic")
    workers = box.locator(".jp-dw-elastic")
    summary = workers.locator(".jp-dw-workers-summary")
    expect(box).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    expect(summary).to_have_text("4 ready of 4 admitted · head ready", timeout=READY_TIMEOUT)
    expect(workers).to_have_attribute("data-scale", "none")
    expect(workers.locator(".jp-dw-scale-owner")).to_have_text(
        f"the Ray autoscaler sizes it within {RANGE}"
    )

    # -- the Ray autoscaler asks for 6: the new slice waits for quota ------------------------
    set_replicas(kube, namespace, "ui-elastic", 6)  # what the Ray autoscaler does
    expect(workers).to_have_attribute("data-scale", "queued", timeout=READY_TIMEOUT)
    position = workers.locator(".jp-dw-scale-position")
    # Kueue's reason and the slice's position come in separate writes: wait for both.
    expect(position).to_be_visible(timeout=READY_TIMEOUT)
    expect(workers.locator(".jp-dw-scale-pending")).to_contain_text(
        "insufficient unused quota", timeout=READY_TIMEOUT
    )
    answer = lab.api("GET", "clusters/ui-elastic")
    scale = answer["scale"]
    assert answer["state"] == "ready", answer  # the admitted part runs on
    assert (answer["workers_admitted"], answer["workers_desired"]) == (4, 6), answer
    assert (scale["state"], scale["from"], scale["to"]) == ("queued", 4, 6), scale
    assert scale["requested_by"] == "autoscaler", scale
    assert scale["position_in_local_queue"] is not None, scale
    expect(box).to_have_attribute("data-state", "ready")  # gated pods are no pod problem
    expect(summary).to_have_text("4 ready of 4 admitted · 2 more waiting for quota · head ready")
    bar = workers.get_by_role("progressbar", name="Workers of ui-elastic")
    expect(bar.locator('[data-segment="ready"]')).to_have_attribute("data-count", "4")
    expect(bar.locator('[data-segment="waiting"]')).to_have_attribute("data-count", "2")
    expect(bar.locator('[data-segment="starting"]')).to_have_count(0)
    expect(workers.locator(".jp-dw-scale-request")).to_contain_text(
        "the Ray autoscaler asked for 6 workers: waiting for quota, "
        f"position {scale['position_in_local_queue'] + 1} in the queue"
    )
    expect(position).to_have_attribute("data-position", str(scale["position_in_local_queue"]))
    expect(workers.locator(".jp-dw-scale-pending")).to_have_text(kueue_words(scale))
    docs_picture(box, "elastic-card-pending-scale-up.png")

    # -- the stepper starts at what is asked; 7 must wait, and says what would start now -----
    target = box.locator(".jp-dw-scale-target")
    expect(target).to_have_text("6")
    box.get_by_role("button", name="One worker more for ui-elastic").click()
    expect(target).to_have_text("7")
    proposal = box.locator('.jp-dw-scale-proposal[data-step="proposed"]')
    expect(proposal).to_have_attribute("data-workers", "7")
    seven = lab.api("POST", "clusters/ui-elastic/scale", {"workers": 7, "dry_run": True})
    assert seven["changed"] is False and seven["fit"]["verdict"] == "must-wait", seven
    assert seven["fit"]["starts_now"] == 5, seven["fit"]
    expect(proposal.locator("[data-verdict]")).to_have_attribute("data-verdict", "must-wait")
    expect(proposal.locator(".jp-dw-scale-fit")).to_have_text(seven["fit"]["message"])
    assert worker_group(kube, namespace, "ui-elastic")["replicas"] == 6  # a dry run changed nothing

    # -- the range shrinks under the proposal: confirming 7 is refused, said inline ----------
    set_max_replicas(kube, namespace, "ui-elastic", 6)
    owner = workers.locator(".jp-dw-scale-owner")
    expect(owner).to_have_text("the Ray autoscaler sizes it within 1\u20136")
    proposal.get_by_role("button", name="Scale ui-elastic to 7 workers").click()
    refused = box.locator('.jp-dw-scale-proposal[data-step="error"]')
    expect(refused).to_have_attribute("data-code", "invalid_scale")
    status, error = lab.request("POST", "dw/api/clusters/ui-elastic/scale", {"workers": 7})
    assert status == 400 and error["code"] == "invalid_scale", (status, error)
    expect(refused).to_have_text(f"{error['error']}: {error['errors']['workers']}")
    expect(refused).to_have_attribute("role", "alert")
    assert worker_group(kube, namespace, "ui-elastic")["replicas"] == 6  # nothing changed
    set_max_replicas(kube, namespace, "ui-elastic", 8)
    expect(owner).to_have_text(f"the Ray autoscaler sizes it within {RANGE}")

    # -- 5 fits now: confirmed, the pending slice becomes 5 and is admitted ------------------
    box.get_by_role("button", name="One worker fewer for ui-elastic").click()
    box.get_by_role("button", name="One worker fewer for ui-elastic").click()
    expect(target).to_have_text("5")
    expect(proposal).to_have_attribute("data-workers", "5")
    five = lab.api("POST", "clusters/ui-elastic/scale", {"workers": 5, "dry_run": True})
    assert five["fit"]["verdict"] == "fits-now", five
    expect(proposal.locator(".jp-dw-scale-fit")).to_have_text(five["fit"]["message"])
    proposal.get_by_role("button", name="Scale ui-elastic to 5 workers").click()
    expect(box.locator('.jp-dw-scale-proposal[data-step="applied"]')).to_contain_text("Pinned at 5")
    expect(summary).to_have_text("5 ready of 5 admitted · head ready", timeout=READY_TIMEOUT)
    expect(workers).to_have_attribute("data-scale", "none", timeout=READY_TIMEOUT)
    expect(workers.locator(".jp-dw-scale-owner")).to_have_text(
        f"you pinned it at 5 workers (range {RANGE})"
    )
    group = worker_group(kube, namespace, "ui-elastic")
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (5, 5, 8), group
    pinned = lab.api("GET", "clusters/ui-elastic")
    assert (pinned["pinned_workers"], pinned["workers_admitted"]) == (5, 5), pinned
    expect(bar.locator('[data-segment="ready"]')).to_have_attribute("data-count", "5")
    expect(bar.locator('[data-segment="waiting"]')).to_have_count(0)

    # -- Auto: the size goes back to the Ray autoscaler --------------------------------------
    box.get_by_role("button", name="Give the size of ui-elastic back to the Ray autoscaler").click()
    expect(workers.locator(".jp-dw-scale-owner")).to_have_text(
        f"the Ray autoscaler sizes it within {RANGE}", timeout=READY_TIMEOUT
    )
    expect(
        box.get_by_role("button", name="Give the size of ui-elastic back to the Ray autoscaler")
    ).to_have_count(0)
    group = worker_group(kube, namespace, "ui-elastic")
    assert (group["minReplicas"], group["maxReplicas"]) == (1, 8), group
    assert lab.api("GET", "clusters/ui-elastic")["pinned_workers"] is None
    # The one refused request is the confirm above: no other request of the panel failed.
    assert [url.split("?")[0] for url in refusals] == [
        f"{lab.url}/dw/api/clusters/ui-elastic/scale"
    ], refusals
