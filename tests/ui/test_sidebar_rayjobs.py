"""The sidebar's RayJob mode in headless Chromium, against JupyterLab running as a workbench
service account on the local control plane (real Kueue, KubeRay, KWOK nodes).

One scenario: switch the New form to RayJob; the fit verdict (``POST rayjobs/fit``, the
submitter counted) with its suggestion as a one-click fix; bad fields each marked with the
server's message and nothing created; submit; the card follows the RayJob live from the
events socket: a second RayJob waits with Kueue's reason and its position, the first ends
``failed`` in KubeRay's words (KWOK's pods run no Ray: in K8sJobMode the submitter Job
completes at once and KubeRay marks the RayJob Failed with
``JobDeploymentStatusTransitionGracePeriodExceeded`` about 30 s later, the path
``tests/integration/test_rayjobs.py`` asserts), which frees the quota and the second is
admitted; delete from the card removes it. Every wait is Playwright's wait for a condition.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from kubernetes import client
from playwright.sync_api import Page, expect

from jupyter_dw.names import IDEMPOTENCY_KEY_ANNOTATION
from tests.cluster.fixtures import KueueObjects
from tests.integration.workbench_rbac import KUEUE
from tests.ui.lab import LabServer
from tests.ui.test_sidebar import open_panel

pytestmark = pytest.mark.cluster

ADMIT_TIMEOUT = 90_000  # ms: Kueue admission
FAILED_TIMEOUT = 240_000  # ms: KubeRay's grace period after the submitter completes
GRACE_PERIOD_EXCEEDED = "JobDeploymentStatusTransitionGracePeriodExceeded"


def state_recorder(kind: str) -> str:
    """A script that records every data-state each ``data-<kind>`` card shows, in order, as the
    DOM changes, in ``window.__dwStates[name]`` (RayJob and TrainJob cards alike)."""
    return """
() => {
  window.__dwStates = {};
  const root = document.getElementById('jp-dw-sidebar');
  const record = () => {
    for (const card of root.querySelectorAll('[data-KIND]')) {
      const seen = (window.__dwStates[card.dataset.KIND] ||= []);
      if (seen[seen.length - 1] !== card.dataset.state) seen.push(card.dataset.state);
    }
  };
  new MutationObserver(record).observe(root, {
    subtree: true, childList: true, attributes: true, attributeFilter: ['data-state']
  });
  record();
}
""".replace("KIND", kind)


RECORDER = state_recorder("rayjob")

LABELS = {
    "name": "Name",
    "entrypoint": "Entrypoint",
    "runtime_env": "Runtime env (JSON)",
    "ttl_seconds_after_finished": "TTL after finish (s)",
    "workers": "Workers",
    "worker_cpu": "Worker CPU",
    "worker_memory": "Worker memory",
    "head_cpu": "Head CPU",
    "head_memory": "Head memory",
}
SIZE = {"worker_cpu": "1", "worker_memory": "1Gi", "head_cpu": "1", "head_memory": "1Gi"}


@pytest.fixture
def expected_console_errors() -> list[str]:
    """The bad fields the test types: Chromium logs each 400 (fit and submit) as a failed
    resource load, without the URL; the test checks whose they are."""
    return [r"^console\.error: Failed to load resource: the server responded with a status of 400"]


def fill(sidebar: Any, **fields: str) -> None:
    for name, value in fields.items():
        sidebar.get_by_label(LABELS[name], exact=True).fill(value)


def card(sidebar: Any, name: str) -> Any:
    return sidebar.locator(f'[data-rayjob="{name}"]')


def field_error(sidebar: Any, name: str) -> Any:
    """The message shown next to field ``name`` (the element its input is described by)."""
    return sidebar.locator(f'[data-field="{name}"] .jp-dw-field-error')


def stored_rayjobs(kube: Any, namespace: str) -> list[dict[str, Any]]:
    listing = client.CustomObjectsApi(kube).list_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayjobs"
    )
    return list(listing["items"])


def test_sidebar_rayjob_mode_end_to_end(
    page: Page, lab: LabServer, kueue: KueueObjects, kube, namespace: str, artifacts: Path
) -> None:
    # team: 4 CPU; one RayJob of head 1 + 2 workers + the 500m submitter (3.5 CPU) at a time.
    flavor = kueue.flavor("default")
    team = kueue.cluster_queue("team", {flavor: {"cpu": "4", "memory": "16Gi"}})
    kueue.wait_active("clusterqueues", team)
    kueue.local_queue("team", team, annotations={f"{KUEUE}/default-queue": "true"})
    kueue.wait_active("localqueues", "team")
    refusals: list[str] = []
    page.on(  # the path: ServerConnection adds a cache-busting query
        "response", lambda r: refusals.append(urlparse(r.url).path) if r.status == 400 else None
    )
    sidebar = open_panel(page, lab)
    page.evaluate(RECORDER)

    # -- RayJob mode: the same cluster fields plus the job's own -----------------------------
    expect(sidebar.locator("#jp-dw-rayjobs-title")).to_have_text("RayJobs")
    sidebar.get_by_role("radio", name="RayJob").check()
    expect(sidebar.locator("#jp-dw-form-title")).to_have_text("New RayJob")
    expect(sidebar.get_by_role("button", name="Submit RayJob")).to_be_visible()
    expect(sidebar.get_by_label("Submission mode", exact=True)).to_have_value("K8sJobMode")
    expect(sidebar.get_by_label("Queue", exact=True)).to_have_value("team")

    # -- fit first: 1 + 0.5 + 5 CPU never fits 4; the suggestion counts the submitter -------
    fill(sidebar, workers="5", **SIZE)  # no name or entrypoint yet: judged all the same
    verdict = sidebar.locator("[data-verdict]")
    expect(verdict).to_have_attribute("data-verdict", "never-fits")
    fit = lab.api("POST", "rayjobs/fit", {"cluster": {"workers": 5, **SIZE}})
    assert fit["verdict"] == "never-fits", fit
    assert fit["suggestion"]["workers"] == 2, fit  # 3.5 CPU: as a cluster, 3 would fit
    expect(sidebar.locator(".jp-dw-fit-message")).to_have_text(fit["message"])
    expect(sidebar.locator(".jp-dw-suggestion")).to_contain_text(fit["suggestion"]["message"])
    assert fit["suggestion"]["message"].endswith("with the head and the submitter)")
    sidebar.get_by_role("button", name="2 workers would start now — use that").click()
    expect(sidebar.get_by_label("Workers", exact=True)).to_have_value("2")
    expect(verdict).to_have_attribute("data-verdict", "fits-now")

    # -- bad fields: each marked with the server's message, nothing created ------------------
    fill(sidebar, name="Bad_Name", entrypoint="python -c 'print(1)'", worker_cpu="lots")
    fill(sidebar, runtime_env="numpy", ttl_seconds_after_finished="-1")
    expect(field_error(sidebar, "worker_cpu")).to_be_visible()  # the fit says so already
    sidebar.get_by_role("button", name="Submit RayJob").click()
    expect(sidebar.locator(".jp-dw-result-error")).to_be_visible()
    status, refused = lab.request(
        "POST",
        "dw/api/rayjobs",
        {
            "name": "Bad_Name",
            "entrypoint": "python -c 'print(1)'",
            "runtime_env": "numpy",
            "ttl_seconds_after_finished": -1,
            "cluster": {"workers": 2, **SIZE, "worker_cpu": "lots"},
        },
    )
    assert status == 400 and refused["code"] == "invalid_spec", refused
    shown = {
        "name": "name",
        "worker_cpu": "cluster.worker_cpu",
        "runtime_env": "runtime_env",
        "ttl_seconds_after_finished": "ttl_seconds_after_finished",
    }
    assert set(refused["errors"]) == set(shown.values()), refused["errors"]
    for field, key in shown.items():
        expect(field_error(sidebar, field)).to_have_text(refused["errors"][key])
        expect(sidebar.get_by_label(LABELS[field], exact=True)).to_have_attribute(
            "aria-invalid", "true"
        )
    assert any(url.endswith("/dw/api/rayjobs") for url in refusals), refusals
    assert all(re.search(r"/dw/api/rayjobs(/fit)?$", url) for url in refusals), refusals
    assert lab.api("GET", "rayjobs")["rayjobs"] == [] and stored_rayjobs(kube, namespace) == []
    expect(sidebar.locator("[data-rayjob]")).to_have_count(0)
    sidebar.screenshot(path=str(artifacts / "rayjob-invalid.png"))

    # -- submit: the card appears and the fields' marks go -----------------------------------
    fill(sidebar, name="ui-job", worker_cpu="1", runtime_env='{"env_vars": {"A": "1"}}')
    fill(sidebar, ttl_seconds_after_finished="600")
    expect(verdict).to_have_attribute("data-verdict", "fits-now")
    sidebar.get_by_role("button", name="Submit RayJob").click()
    expect(sidebar.locator(".jp-dw-result")).to_have_text("Submitted RayJob ui-job in queue team.")
    expect(sidebar.locator(".jp-dw-field-error")).to_have_count(0)
    first = card(sidebar, "ui-job")
    expect(first).to_be_visible()
    [stored] = stored_rayjobs(kube, namespace)
    assert stored["metadata"]["labels"][f"{KUEUE}/queue-name"] == "team"
    assert stored["metadata"]["annotations"][IDEMPOTENCY_KEY_ANNOTATION]
    assert stored["spec"]["submissionMode"] == "K8sJobMode"
    assert stored["spec"]["ttlSecondsAfterFinished"] == 600
    assert json.loads(stored["spec"]["runtimeEnvYAML"]) == {"env_vars": {"A": "1"}}
    assert stored["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] == 2

    # Kueue admits it; the form's fit is judged as typed, so the next one is typed once the
    # queue shows the quota held (the ClusterQueue's status follows the Workload's).
    expect(first).to_have_attribute(
        "data-state", re.compile("admitted|starting|running"), timeout=ADMIT_TIMEOUT
    )
    headroom = sidebar.locator('[data-queue="team"] [data-resource="cpu"] .jp-dw-headroom')
    expect(headroom).to_have_text("500m", timeout=ADMIT_TIMEOUT)

    # -- a second one must wait: Kueue's reason and its position on its card ----------------
    fill(sidebar, name="ui-job-2")
    expect(verdict).to_have_attribute("data-verdict", "must-wait")
    sidebar.get_by_role("button", name="Submit RayJob").click()
    second = card(sidebar, "ui-job-2")
    expect(second.locator(".jp-dw-position")).to_be_visible(timeout=ADMIT_TIMEOUT)
    expect(second.locator(".jp-dw-reason")).to_be_visible(timeout=ADMIT_TIMEOUT)
    waiting = lab.api("GET", "rayjobs/ui-job-2")
    assert waiting["state"] == "queued" and waiting["position_in_local_queue"] == 0, waiting
    expect(second).to_have_attribute("data-state", "queued")
    expect(second.locator(".jp-dw-position")).to_have_text(
        "position 1 in queue team (1 in its ClusterQueue)"
    )
    expect(second.locator(".jp-dw-reason")).to_have_text(waiting["reason"])
    sidebar.screenshot(path=str(artifacts / "rayjob-waiting.png"))

    # -- the first ends in KubeRay's words; its quota goes to the second ---------------------
    expect(first).to_have_attribute("data-state", "failed", timeout=FAILED_TIMEOUT)
    ended = lab.api("GET", "rayjobs/ui-job")
    assert (ended["state"], ended["reason"]) == ("failed", GRACE_PERIOD_EXCEEDED), ended
    expect(first.locator(".jp-dw-reason")).to_have_text(GRACE_PERIOD_EXCEEDED)
    expect(first.locator(".jp-dw-message")).to_have_text(ended["message"])
    assert ended["cluster"], ended
    expect(first.locator("[data-rayjob-cluster]")).to_have_text(f"its cluster {ended['cluster']}")
    states = page.evaluate("() => window.__dwStates['ui-job']")
    assert states[0] in ("queued", "admitted", "starting"), states
    assert states[-1] == "failed", states
    expect(second).not_to_have_attribute("data-state", "queued", timeout=ADMIT_TIMEOUT)
    assert page.evaluate("() => window.__dwStates['ui-job-2']")[0] == "queued"
    sidebar.screenshot(path=str(artifacts / "rayjob-failed.png"))

    # -- delete from the cards (with confirmation) -------------------------------------------
    for job, name in ((first, "ui-job"), (second, "ui-job-2")):
        job.get_by_role("button", name=f"Delete {name}").click()
        dialog = page.locator(".jp-Dialog")
        expect(dialog).to_contain_text(f"Delete {name}?")
        dialog.get_by_role("button", name="Delete").click()
        expect(job).to_have_count(0, timeout=ADMIT_TIMEOUT)
    assert lab.api("GET", "rayjobs")["rayjobs"] == []
    expect(sidebar.locator("#jp-dw-rayjobs-title + p")).to_contain_text("No RayJob yet")
