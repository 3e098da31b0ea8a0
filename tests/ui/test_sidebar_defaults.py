"""The New form and an administrator's defaults and limits (issue 34), in headless Chromium
against JupyterLab running as a workbench service account on the local control plane.

The server is started with sizes of its own (``default_worker_cpu=750m``,
``default_worker_memory=3Gi``, ``default_head_memory=3Gi``, ``max_worker_cpu=4``). The form
shows them (each size field empty, the default as its placeholder, the limit beside its field)
and a user who types only a name gets them: the RayCluster, and a RayJob's cluster, read back
with the administrator's client, ask for 750m/3Gi per worker and 3Gi for the head. Before,
the form prefilled and always sent sizes of its own (1 CPU, 2Gi), so no size default ever
applied to what it made. Every wait is Playwright's wait for a condition.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.integration.workbench_rbac import KUEUE
from tests.ui.lab import LabServer, StandInDashboard, workbench_lab
from tests.ui.test_sidebar import open_panel

pytestmark = pytest.mark.cluster

SETTINGS = {
    "default_worker_cpu": "750m",
    "default_worker_memory": "3Gi",
    "default_head_memory": "3Gi",
    "max_worker_cpu": "4",
}
# What the server applies to the fields left empty: its settings, and its built-in head CPU.
WORKER = {"cpu": "750m", "memory": "3Gi"}
HEAD = {"cpu": "1", "memory": "3Gi"}


@pytest.fixture
def lab(
    workbench, dashboard: StandInDashboard, artifacts: Path, tmp_path: Path
) -> Iterator[LabServer]:
    """JupyterLab whose administrator set the sizes of new clusters and a CPU limit."""
    args = [f"--JupyterDW.{name}={value}" for name, value in SETTINGS.items()]
    yield from workbench_lab(workbench, dashboard, artifacts, tmp_path, *args)


@pytest.fixture
def expected_console_errors() -> list[str]:
    """The over-the-limit size the test types: Chromium logs the fit check's 400 as a failed
    resource load (the test checks the message shown at the field)."""
    return [r"^console\.error: Failed to load resource: the server responded with a status of 400"]


def size_field(sidebar: Any, label: str) -> Any:
    return sidebar.get_by_label(label, exact=True)


def expect_defaults_shown(sidebar: Any) -> None:
    """Each size field empty, saying the value it will get; the limit beside Worker CPU only."""
    shown = {
        "Workers": "default: 1",
        "Worker CPU": "default: 750m",
        "Worker memory": "default: 3Gi",
        "Worker GPUs": "default: 0",
        "Head CPU": "default: 1",
        "Head memory": "default: 3Gi",
        "Image": "default: rayproject/ray:2.60.0",
    }
    for label, placeholder in shown.items():
        field = size_field(sidebar, label)
        expect(field).to_have_value("")
        expect(field).to_have_attribute("placeholder", placeholder)
    # The limit is beside its field and read out as its description.
    expect(sidebar.locator('[data-field="worker_cpu"] .jp-dw-field-hint')).to_have_text("max 4")
    expect(size_field(sidebar, "Worker CPU")).to_have_accessible_description("max 4")
    # No limit configured, none said: only the queue's quota limits these.
    expect(sidebar.locator(".jp-dw-field-hint")).to_have_count(1)


def resources(pod_spec: dict[str, Any]) -> dict[str, str]:
    """The requests of a pod template's one container (requests equal limits)."""
    (container,) = pod_spec["template"]["spec"]["containers"]
    assert container["resources"]["limits"] == container["resources"]["requests"], container
    return dict(container["resources"]["requests"])


def test_the_form_shows_and_applies_the_administrators_defaults(
    page: Page, lab: LabServer, kueue: KueueObjects, kube, namespace: str, artifacts: Path
) -> None:
    # Room for the cluster (1.75 CPU, 6Gi) and the RayJob's (the same and its submitter).
    flavor = kueue.flavor("default")
    team = kueue.cluster_queue("team", {flavor: {"cpu": "8", "memory": "32Gi"}})
    kueue.wait_active("clusterqueues", team)
    kueue.local_queue("team", team, annotations={f"{KUEUE}/default-queue": "true"})
    kueue.wait_active("localqueues", "team")
    sidebar = open_panel(page, lab)
    expect(size_field(sidebar, "Queue")).to_have_value("team")  # preselected, as before

    # -- the form shows the server's defaults and its limit ---------------------------------
    expect_defaults_shown(sidebar)
    sidebar.screenshot(path=str(artifacts / "form-defaults.png"))

    # -- only a name typed: the fit is judged, and the cluster made, with those defaults ----
    size_field(sidebar, "Name").fill("ui-defaults")
    fit = lab.api("POST", "clusters/fit", {"name": "ui-defaults", "queue": "team"})
    expect(sidebar.locator("[data-verdict]")).to_have_attribute("data-verdict", fit["verdict"])
    expect(sidebar.locator(".jp-dw-fit-message")).to_have_text(fit["message"])
    sidebar.get_by_role("button", name="Create cluster").click()
    expect(sidebar.locator(".jp-dw-result")).to_have_text("Created ui-defaults in queue team.")
    stored = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "ui-defaults"
    )
    (workers,) = stored["spec"]["workerGroupSpecs"]
    assert resources(workers) == WORKER, workers
    assert workers["replicas"] == 1
    assert resources(stored["spec"]["headGroupSpec"]) == HEAD
    expect_defaults_shown(sidebar)  # after a create, still nothing of the form's own

    # -- a size typed is sent as typed, and one over the limit refused at its field ---------
    size_field(sidebar, "Worker CPU").fill("5")
    expect(sidebar.locator('[data-field="worker_cpu"] .jp-dw-field-error')).to_contain_text(
        "more than this server's limit of 4"
    )
    size_field(sidebar, "Worker CPU").fill("")
    expect(sidebar.locator('[data-field="worker_cpu"] .jp-dw-field-error')).to_have_count(0)

    # -- RayJob mode shares the cluster fields: the same defaults shown and applied ---------
    sidebar.get_by_role("radio", name="RayJob").check()
    expect(sidebar.locator("#jp-dw-form-title")).to_have_text("New RayJob")
    expect_defaults_shown(sidebar)
    size_field(sidebar, "Name").fill("ui-defaults-job")
    size_field(sidebar, "Entrypoint").fill("python -c 'print(1)'")
    sidebar.get_by_role("button", name="Submit RayJob").click()
    expect(sidebar.locator(".jp-dw-result")).to_have_text(
        "Submitted RayJob ui-defaults-job in queue team."
    )
    job = client.CustomObjectsApi(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayjobs", "ui-defaults-job"
    )
    cluster_spec = job["spec"]["rayClusterSpec"]
    (job_workers,) = cluster_spec["workerGroupSpecs"]
    assert resources(job_workers) == WORKER, job_workers
    assert resources(cluster_spec["headGroupSpec"]) == HEAD
