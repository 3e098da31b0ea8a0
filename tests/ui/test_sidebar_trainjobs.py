"""The sidebar's TrainJob cards in headless Chromium, against JupyterLab running as a workbench
service account on the local control plane (Kueue 0.19.2 with Kubeflow Trainer v2.2.1).

Two TrainJobs submitted through the server (the sidebar has no TrainJob form: a notebook's
``dw.TrainJobSpec`` or ``%dw trainjob`` makes them) in a queue that holds one: the first card
follows Trainer's states (the test runtime's pods run 20 s on KWOK, then succeed), the second
waits with Kueue's reason and its position, then is admitted once the first has finished; both
are "by you" and tagged "mine" in "In my queues"; delete from the cards removes them. Every wait
is Playwright's wait for a condition.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.cluster.fixtures import KueueObjects
from tests.cluster.versions import Versions
from tests.integration.workbench_rbac import KUEUE
from tests.ui.lab import LabServer
from tests.ui.test_sidebar import open_panel
from tests.ui.test_sidebar_rayjobs import state_recorder

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        not Versions.selected().trainjobs,
        reason="Kueue 0.14.8's TrainJob integration targets Trainer 2.1: no Trainer on this bed",
    ),
]

ADMIT_TIMEOUT = 90_000  # ms: Kueue admission
RUN_TIMEOUT = 180_000  # ms: the runtime's pods run 20 s on KWOK, then Trainer says so


def request(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "runtime": "torch-distributed",
        "num_nodes": 2,
        "resources_per_node": {"cpu": "1", "memory": "1Gi"},
        "command": ["torchrun", "train.py"],
    }


def test_sidebar_trainjob_cards_follow_their_states(
    page: Page, lab: LabServer, kueue: KueueObjects, artifacts: Path
) -> None:
    # team: 2 CPU, one TrainJob of 2 nodes x 1 CPU at a time.
    flavor = kueue.flavor("default")
    team = kueue.cluster_queue("team", {flavor: {"cpu": "2", "memory": "8Gi"}})
    kueue.wait_active("clusterqueues", team)
    kueue.local_queue("team", team, annotations={f"{KUEUE}/default-queue": "true"})
    kueue.wait_active("localqueues", "team")
    sidebar = open_panel(page, lab)
    page.evaluate(state_recorder("trainjob"))
    expect(sidebar.locator("#jp-dw-trainjobs-title")).to_have_text("TrainJobs")
    expect(sidebar.locator("#jp-dw-trainjobs-title + p")).to_contain_text("No TrainJob yet")

    # -- the first runs: its card follows Kueue's, then Trainer's states ---------------------
    created = lab.api("POST", "trainjobs", request("tj-a"))
    assert created["owner"], created
    first = sidebar.locator('[data-trainjob="tj-a"]')
    expect(first).to_be_visible()
    expect(first.locator(".jp-dw-card-queue")).to_have_text(
        "queue team · runtime torch-distributed · by you"
    )
    expect(first.locator("[data-trainjob-nodes]")).to_contain_text("2 nodes")
    # Holding the queue's quota: the second is made now, while the first still has its whole
    # run ahead (its pods complete 20 s after they start). Made once the first ran, the
    # second could find the quota free again on a slow machine and never wait.
    expect(first).to_have_attribute(
        "data-state", re.compile("admitted|starting|running"), timeout=ADMIT_TIMEOUT
    )

    # -- the second waits: Kueue's reason and its position on its card -----------------------
    lab.api("POST", "trainjobs", request("tj-b"))
    second = sidebar.locator('[data-trainjob="tj-b"]')
    # The visibility API lists a Workload before Kueue's first try writes why it waits: the
    # card shows a position first, then the reason once that condition lands.
    expect(second.locator(".jp-dw-position")).to_be_visible(timeout=ADMIT_TIMEOUT)
    expect(second.locator(".jp-dw-reason")).to_be_visible(timeout=ADMIT_TIMEOUT)
    waiting = lab.api("GET", "trainjobs/tj-b")
    assert waiting["state"] == "queued" and waiting["position_in_local_queue"] == 0, waiting
    assert waiting["reason"], waiting
    expect(second.locator(".jp-dw-position")).to_have_text(
        "position 1 in queue team (1 in its ClusterQueue)"
    )
    expect(second.locator(".jp-dw-reason")).to_have_text(waiting["reason"])
    # "In my queues" lists its Workload as mine (who made the TrainJob, as for clusters).
    mine = sidebar.locator(f'[data-workload="{waiting["workload"]}"]')
    expect(mine).to_have_attribute("data-kind", "TrainJob")
    expect(mine).to_have_attribute("data-mine", "true")
    sidebar.screenshot(path=str(artifacts / "trainjob-waiting.png"))

    # -- the first runs and succeeds; its quota goes to the second ---------------------------
    page.wait_for_function(
        "() => (window.__dwStates['tj-a'] || []).includes('running')", timeout=RUN_TIMEOUT
    )
    expect(first).to_have_attribute("data-state", "succeeded", timeout=RUN_TIMEOUT)
    expect(second).to_have_attribute(
        "data-state", re.compile("admitted|starting|running"), timeout=ADMIT_TIMEOUT
    )
    states = page.evaluate("() => window.__dwStates")
    assert states["tj-a"][0] in ("queued", "admitted", "starting"), states
    assert states["tj-a"][-2:] == ["running", "succeeded"], states
    assert states["tj-b"][0] == "queued", states
    # Its life as a bar: waited, ran; what ended it in words under it.
    done = lab.api("GET", "trainjobs/tj-a")["timeline"]
    segments = first.locator(".jp-dw-timeline-segment")
    expect(segments).to_have_count(2)
    for i, span in enumerate(done["spans"]):
        expect(segments.nth(i)).to_have_attribute("data-step", span["step"])
        expect(segments.nth(i)).to_have_attribute("data-current", "false")
    assert [s["step"] for s in done["spans"]] == ["queue", "running"], done
    expect(first.locator(".jp-dw-timeline-caption")).to_contain_text("succeeded")
    # The second, admitted now: its run is the span under way, counting up.
    expect(second.locator('.jp-dw-timeline-segment[data-step="running"]')).to_have_attribute(
        "data-current", "true", timeout=ADMIT_TIMEOUT
    )
    sidebar.screenshot(path=str(artifacts / "trainjob-succeeded.png"))

    # -- delete from the cards (with confirmation) -------------------------------------------
    for job, name in ((first, "tj-a"), (second, "tj-b")):
        job.get_by_role("button", name=f"Delete {name}").click()
        dialog = page.locator(".jp-Dialog")
        expect(dialog).to_contain_text(f"Delete {name}?")
        dialog.get_by_role("button", name="Delete").click()
        expect(job).to_have_count(0, timeout=ADMIT_TIMEOUT)
    assert lab.api("GET", "trainjobs")["trainjobs"] == []
    expect(sidebar.locator("#jp-dw-trainjobs-title + p")).to_contain_text("No TrainJob yet")
