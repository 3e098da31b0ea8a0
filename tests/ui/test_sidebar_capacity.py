"""The sidebar on a queue that waits for capacity, in headless Chromium against JupyterLab on
the local control plane: a ClusterQueue requiring Kueue's ProvisioningRequest admission check,
the test playing the cluster autoscaler. The card shows ``waiting-for-capacity`` with the
check's name, state and the autoscaler's message, then ``rejected`` with its reason when the
request fails. The queue's headroom, which counts what the cohort may lend, is shown against
the most the queue could obtain (``max_obtainable``), not its nominal quota."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.integration.clusters_support import Autoscaler, make_capacity_queue, small_cluster
from tests.ui.lab import LabServer
from tests.ui.test_sidebar import card, open_panel

pytestmark = pytest.mark.cluster

ETA = "capacity is being provisioned, ETA 2 minutes"
NO_CAPACITY = "no nodes of this shape in any zone"


def lender(kueue: KueueObjects, cohort: str) -> None:
    """A second ClusterQueue in ``cohort`` lending 8 CPU and 16Gi of flavor ``default``."""
    flavor = f"{kueue.prefix}-default"
    cq = kueue.cluster_queue("lender", {flavor: {"cpu": "8", "memory": "16Gi"}}, cohort=cohort)
    kueue.wait_active("clusterqueues", cq)


def test_card_waits_for_capacity_then_shows_the_rejection(
    page: Page, lab: LabServer, kueue: KueueObjects, kube
) -> None:
    check = make_capacity_queue(kube, kueue, cohort="pool")
    lender(kueue, "pool")
    sidebar = open_panel(page, lab)

    # -- headroom against what the queue could obtain, nominal beside it --------------------
    (queue,) = lab.api("GET", "queues")["queues"]
    cpu: dict[str, Any] = next(r for r in queue["resources"] if r["resource"] == "cpu")
    assert (cpu["nominal"], cpu["max_obtainable"]) == ("4", "12"), cpu
    row = sidebar.locator(f'[data-queue="{queue["name"]}"] [data-resource="cpu"]')
    expect(row).to_contain_text(f"headroom {cpu['headroom']} of 12 · nominal 4")

    # -- waiting for capacity: the check, its state and the autoscaler's words --------------
    lab.api("POST", "clusters", small_cluster("ui-capacity", workers=1))
    box = card(sidebar, "ui-capacity")
    expect(box).to_have_attribute("data-state", "waiting-for-capacity", timeout=60_000)
    item = box.locator(f'[data-check="{check}"]')
    expect(item).to_have_attribute("data-check-state", "Pending")
    workload = lab.api("GET", "clusters/ui-capacity")["workload"]
    autoscaler = Autoscaler(kube, kueue.namespace)
    autoscaler.set(workload, Accepted=("True", "accepted"), Provisioned=("False", ETA))
    expect(item).to_contain_text(ETA)
    expect(box.locator(".jp-dw-card-reason")).to_contain_text(f"admission check {check}")

    # -- the autoscaler gives up: rejected, with its reason ---------------------------------
    autoscaler.set(workload, Failed=("True", NO_CAPACITY))
    expect(box).to_have_attribute("data-state", "rejected", timeout=60_000)
    reason = box.locator(".jp-dw-card-reason")
    # Kueue's last word: the workload deactivated because of the check (named there; from
    # Kueue 0.15, serving v1beta2, with the autoscaler's reason too).
    expect(reason).to_contain_text("DeactivatedDueToAdmissionCheck", timeout=60_000)
    expect(reason).to_contain_text(check)
    if kueue.api_version == "v1beta2":
        expect(reason).to_contain_text(NO_CAPACITY)
    expect(box.locator('[data-badge="rejected"]')).to_be_visible()
