"""A cluster's timeline bar and Kueue's words made short on the sidebar's cards (issue 32), in
headless Chromium against JupyterLab running as a workbench service account on the local
control plane: a ready cluster's bar has one segment per span of its REST `timeline`, each
titled with its words and the time its milestones say it took; a cluster of many workers draws
them as one folded segment, its milestones listed in words on expand; a waiting cluster says
Kueue's summary in one line and its whole message on expand. The bar's picture is the docs'
(docs/img/timeline-bar.png) and the waiting card's
(docs/img/waiting-summary.png). Every wait is Playwright's wait for a condition.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from jupyter_dw.notebook.display import duration
from tests.cluster.fixtures import KueueObjects
from tests.integration.clusters_support import small_cluster
from tests.ui.lab import LabServer, team_queue
from tests.ui.test_sidebar import card, open_panel

pytestmark = pytest.mark.cluster

READY_TIMEOUT = 120_000  # ms: Kueue admission, KubeRay pods, KWOK readiness
MANY = 32  # workers of the folded cluster (the issue asks for 32)


def _at(milestones: list[dict[str, Any]], name: str) -> datetime:
    time = next(m["time"] for m in milestones if m["name"] == name)
    return datetime.fromisoformat(time.replace("Z", "+00:00"))


def _seconds(milestones: list[dict[str, Any]], start: str, end: str) -> int:
    return int((_at(milestones, end) - _at(milestones, start)).total_seconds())


def _title(span: dict[str, Any]) -> str:
    """What timeline_bar.js writes for a finished span: words, (detail), duration."""
    detail = f" ({span['detail']})" if span["detail"] else ""
    return f"{span['words']}{detail} {duration(span['seconds'])}"


def test_timeline_bar_and_kueue_s_words(
    page: Page, lab: LabServer, kueue: KueueObjects, docs_picture
) -> None:
    team_queue(kueue, cpu="8", memory="10Gi")
    sidebar = open_panel(page, lab)

    # -- a ready cluster: one segment per span, titled with its milestones' times ----------
    lab.api("POST", "clusters", small_cluster("tl-ready", workers=2, queue="team"))
    ready = card(sidebar, "tl-ready")
    expect(ready).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    record = lab.api("GET", "clusters/tl-ready")
    milestones, spans = record["milestones"], record["timeline"]["spans"]
    assert [s["step"] for s in spans] == ["queue", "head", "workers"], spans
    assert all(s["done"] and not s["current"] for s in spans), spans
    by_step = {s["step"]: s for s in spans}
    assert by_step["queue"]["seconds"] == _seconds(milestones, "Submitted", "QuotaReserved")
    assert by_step["head"]["seconds"] == _seconds(milestones, "Admitted", "HeadReady")
    assert by_step["workers"]["seconds"] == _seconds(milestones, "HeadReady", "Ready")
    segments = ready.locator(".jp-dw-timeline-segment")
    expect(segments).to_have_count(len(spans))
    for i, span in enumerate(spans):
        segment = segments.nth(i)
        expect(segment).to_have_attribute("data-step", span["step"])
        expect(segment).to_have_attribute("title", _title(span))
        expect(segment).to_have_attribute("aria-label", _title(span))
        expect(segment).to_have_attribute("data-seconds", str(int(span["seconds"])))
    expect(ready.locator('[data-step="workers"]')).to_have_attribute(
        "title", re.compile(r"^starting the workers \(2/2 workers\) ")
    )
    total = sum(int(s["seconds"]) for s in spans)
    expect(ready.locator(".jp-dw-timeline-caption")).to_have_text(f"started in {duration(total)}")
    # The milestones, in words, on expand (the numbered list of names is gone).
    listed = ready.locator(".jp-dw-milestones li")
    expect(listed).to_have_count(len(milestones))
    expect(listed.first).not_to_be_visible()
    ready.locator(".jp-dw-milestones > summary").click()
    expect(listed.first).to_be_visible()
    expect(listed.first.locator(".jp-dw-milestone-name")).to_have_text("submitted")
    expect(ready.locator('[data-milestone="WorkerReady:1"] .jp-dw-milestone-name')).to_have_text(
        "worker 1 ready"
    )

    # -- many workers: one folded segment ---------------------------------------------------
    many = small_cluster(
        "tl-many", workers=MANY, queue="team", worker_cpu="100m", worker_memory="128Mi"
    )
    lab.api("POST", "clusters", many)
    folded = card(sidebar, "tl-many")
    # Under way: the span being waited for is animated and counts up.
    expect(folded.locator('.jp-dw-timeline-segment[data-current="true"]')).to_have_count(
        1, timeout=READY_TIMEOUT
    )
    expect(folded).to_have_attribute("data-state", "ready", timeout=READY_TIMEOUT)
    workers = folded.locator('.jp-dw-timeline-segment[data-step="workers"]')
    expect(workers).to_have_count(1)
    expect(workers).to_have_attribute(
        "title", re.compile(rf"^starting the workers \({MANY}/{MANY} workers\) \d+")
    )
    expect(folded.locator(".jp-dw-timeline-segment")).to_have_count(3)
    expect(folded.locator('[data-milestone^="WorkerReady:"]')).to_have_count(MANY)
    timeline = folded.locator(".jp-dw-timeline")
    docs_picture(timeline, "timeline-bar.png")
    folded.locator(".jp-dw-milestones > summary").click()
    expect(folded.locator(f'[data-milestone="WorkerReady:{MANY}"]')).to_contain_text(
        f"worker {MANY} ready"
    )

    # -- a waiting cluster: Kueue's summary in one line, its whole message on expand --------
    lab.api("POST", "clusters", small_cluster("tl-waits", workers=2, queue="team"))
    waits = card(sidebar, "tl-waits")
    line = waits.locator(".jp-dw-card-reason.jp-dw-folded")
    expect(line).to_have_attribute("data-summary", "kueue", timeout=READY_TIMEOUT)
    waiting = lab.api("GET", "clusters/tl-waits")
    assert waiting["state"] == "queued" and waiting["summary"], waiting
    expect(line.locator(".jp-dw-summary")).to_have_text(waiting["summary"])
    whole = line.locator(".jp-dw-message")
    expect(whole).not_to_be_visible()
    expect(line.locator("summary")).to_have_attribute("title", waiting["message"])
    line.locator("summary").click()
    expect(whole).to_be_visible()
    expect(whole).to_have_text(waiting["message"])
    docs_picture(waits, "waiting-summary.png")
    # The queue span under way, in the waiting tone's words.
    expect(waits.locator('[data-step="queue"]')).to_have_attribute("data-current", "true")
    expect(waits.locator(".jp-dw-timeline-caption")).to_have_text(
        re.compile(r"^waiting in the queue \d+(s|m \d+s) so far$")
    )
