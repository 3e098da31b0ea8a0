"""The sidebar's "In my queues" section, in headless Chromium against JupyterLab on the local
control plane: every Workload of the namespace's queues, whatever job owns it. A batch/v1 Job
of a higher WorkloadPriorityClass waits ahead of our Ray cluster (Kueue orders pending
workloads by priority), and a Job holds the quota both need; when that Job goes, Kueue admits
the one ahead and ours moves to the front, live from the events socket."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.integration.clusters_support import KUEUE, make_queue, small_cluster
from tests.integration.test_workloads import (
    admitted,
    job,
    job_workload,
    queue_with_others_ahead,
    waiting,
)
from tests.ui.lab import LabServer
from tests.ui.test_sidebar import open_panel

pytestmark = pytest.mark.cluster


def high_priority(kueue: KueueObjects) -> str:
    """A WorkloadPriorityClass of value 1000 (removed with the test's Kueue objects)."""
    body = {
        "apiVersion": f"{KUEUE}/{kueue.api_version}",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": f"{kueue.prefix}-high"},
        "value": 1000,
    }
    return kueue._create_cluster_scoped("workloadpriorityclasses", body)


def row(section: Any, owner_name: str) -> Any:
    return section.locator(".jp-dw-workload").filter(
        has=section.page.locator(".jp-dw-workload-name", has_text=owner_name)
    )


def test_in_my_queues_shows_another_kinds_workload_ahead_of_ours(
    page: Page, lab: LabServer, kueue: KueueObjects, kube, namespace: str
) -> None:
    queue = make_queue(kueue, cpu="2", memory="8Gi")
    urgent = high_priority(kueue)
    jobs = client.BatchV1Api(kube)
    jobs.create_namespaced_job(namespace, job("holder", queue.local_queue, "2"))
    job_workload(kueue, "holder", admitted, "admitted")
    sidebar = open_panel(page, lab)
    section = sidebar.locator(".jp-dw-in-queues")
    expect(section.get_by_role("heading", name="In my queues")).to_be_visible()

    ahead = job("batch-ahead", queue.local_queue, "1")
    ahead["metadata"]["labels"][f"{KUEUE}/priority-class"] = urgent
    jobs.create_namespaced_job(namespace, ahead)
    job_workload(kueue, "batch-ahead", waiting, "waiting for quota")
    lab.api("POST", "clusters", small_cluster("ui-mine", workers=1))

    listed = section.locator(f'[data-queue="{queue.local_queue}"] .jp-dw-workload')
    expect(listed).to_have_count(3, timeout=60_000)
    holder, other, ours = (
        row(section, "holder"),
        row(section, "batch-ahead"),
        row(section, "ui-mine"),
    )
    expect(holder).to_have_attribute("data-state", "admitted")
    expect(holder).to_have_attribute("data-kind", "Job")
    expect(other).to_have_attribute("data-kind", "Job")
    expect(other.locator(".jp-dw-workload-position")).to_have_text("#1", timeout=60_000)
    expect(other.locator(".jp-dw-workload-words")).to_contain_text("insufficient unused quota")
    expect(ours).to_have_attribute("data-kind", "RayCluster")
    expect(ours).to_have_attribute("data-mine", "true")
    expect(ours.locator(".jp-dw-tag")).to_have_text("mine")
    expect(ours.locator(".jp-dw-workload-position")).to_have_text("#2", timeout=60_000)
    # In Kueue's order: the one holding quota, the other kind's job ahead, then ours.
    expect(listed.locator(".jp-dw-workload-name")).to_have_text(
        ["holder", "batch-ahead", "ui-mine"]
    )

    # The holder goes: Kueue admits the Job ahead (1 CPU), ours (2 CPU) moves to the front.
    jobs.delete_namespaced_job("holder", namespace, propagation_policy="Background")
    expect(other).to_have_attribute("data-state", "admitted", timeout=60_000)
    expect(ours.locator(".jp-dw-workload-position")).to_have_text("#1", timeout=60_000)
    expect(listed.locator(".jp-dw-workload-name")).to_have_text(["batch-ahead", "ui-mine"])
    expect(ours).to_have_attribute("data-state", "queued")


def test_a_long_queue_shows_its_first_workloads_and_ours_until_asked_for_all(
    page: Page, lab: LabServer, kueue: KueueObjects, kube, namespace: str
) -> None:
    queue = queue_with_others_ahead(kueue, kube)  # seven others, then ours: last
    lab.api("POST", "clusters", small_cluster("ui-mine-late", workers=1))
    sidebar = open_panel(page, lab)
    group = sidebar.locator(f'.jp-dw-in-queues [data-queue="{queue.local_queue}"]')
    listed = group.locator(".jp-dw-workload")
    more = group.get_by_role("button", name="Show all 8 (2 more)")
    expect(more).to_be_visible(timeout=60_000)
    ours = row(group, "ui-mine-late")
    expect(ours.locator(".jp-dw-workload-position")).to_have_text("#7", timeout=60_000)

    # The first five in Kueue's order, then ours (mine: always shown).
    expect(listed).to_have_count(6)
    expect(listed.first).to_have_attribute("data-state", "admitted")
    expect(listed.last).to_have_attribute("data-mine", "true")
    expect(more).to_have_attribute("aria-expanded", "false")

    more.click()
    expect(listed).to_have_count(8)
    fewer = group.get_by_role("button", name="Show fewer")
    expect(fewer).to_have_attribute("aria-expanded", "true")
    fewer.click()
    expect(listed).to_have_count(6)
