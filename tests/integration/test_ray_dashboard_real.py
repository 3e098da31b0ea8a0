"""The real Ray dashboard through the sandboxing proxy, in headless Chromium.

A Ray head (``ray[default]`` from PyPI, in a virtualenv of its own so the product's
dependencies stay clean) runs on 127.0.0.1 with one CPU; RayCluster ``localhost`` in the test
namespace names it (the proxy's template is ``http://{name}:{port}``, so the dashboard is
``http://localhost:<port>``). The dashboard must load through the proxy, sandboxed, render its
cluster view from its own API calls, and log no console error.

The Ray head and its virtualenv: :mod:`tests.cluster.ray_head` (``RAY_AUTH_MODE`` pinned,
a private ``HOME``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.cluster.ray_head import ray_head as start_ray_head
from tests.cluster.ray_head import status_of
from tests.integration.browser import Console, chromium, watch
from tests.integration.clusters_support import create_suspended_raycluster

pytestmark = pytest.mark.cluster

CLUSTER = "localhost"  # a valid RayCluster name, and a host name that is 127.0.0.1
WORKBENCH_RULES = [{"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get"]}]
PAGE_TIMEOUT_MS = 90_000


@pytest.fixture(scope="module")
def ray_head() -> Iterator[int]:
    """A Ray head on 127.0.0.1 without authentication (``RAY_AUTH_MODE=disabled``, its own
    ``HOME``); yields the dashboard's port."""
    with start_ray_head() as port:
        yield port


@pytest.fixture
def dw_config(ray_head: int) -> dict[str, Any]:
    return {"ray_dashboard_url": "http://{name}:{port}", "ray_dashboard_port": ray_head}


@pytest.fixture
def raycluster(kube: client.ApiClient, namespace: str) -> str:
    create_suspended_raycluster(kube, namespace, CLUSTER)
    return CLUSTER


def direct_status(url: str) -> int:
    """The status the Ray dashboard itself answers ``url`` with (no proxy, no browser)."""
    return status_of(url)


FAILED_RESOURCE = re.compile(
    r"^console: Failed to load resource: the server responded with a status of (\d+)"
)


async def open_cluster_view(
    browser: Any, base: str, jupyter_token: str, console: Console, answers: list[tuple[int, str]]
) -> tuple[Any, Any]:
    """Log in to Jupyter, open cluster ``CLUSTER``'s dashboard through the proxy and wait for
    its cluster view (the node table, filled from the dashboard's own API calls); every
    answer the browser gets goes into ``answers``. Returns the browser context and page."""
    context = await browser.new_context()
    watch(context, console)
    context.on("response", lambda r: answers.append((r.status, r.url)))
    page = await context.new_page()
    await page.goto(f"{base}api/status?token={jupyter_token}")
    await page.goto(f"{base}dw/ray/{CLUSTER}/#/cluster")
    assert "/~cap/" in page.url
    for text in ("Node summary fetched.", "ALIVE x 1", "Node List"):
        await page.get_by_text(text).first.wait_for(timeout=PAGE_TIMEOUT_MS)
    return context, page


async def test_the_ray_dashboard_works_sandboxed(
    raycluster, ray_head, jp_serverapp, jp_base_url, http_server_client
):
    base = f"http://127.0.0.1:{http_server_client.get_http_port()}{jp_base_url}"
    token = jp_serverapp.identity_provider.token
    console = Console()
    answers: list[tuple[int, str]] = []

    async with chromium() as browser:
        context, page = await open_cluster_view(browser, base, token, console, answers)
        origin = await page.evaluate("window.origin")
        await context.close()

    assert origin == "null"  # sandboxed: an opaque origin
    proxied = [(status, url) for status, url in answers if "/~cap/" in url]
    assert any("/api/" in url or "nodes" in url for _, url in proxied), answers
    # Some of Ray's own endpoints fail without Grafana or Prometheus (grafana_health: 500,
    # ...). The proxy must answer exactly what the dashboard answers: every failure seen in
    # the browser is the same when asked of Ray directly, and is the only console error.
    failed = [(status, url) for status, url in answers if status >= 400]
    assert all("/~cap/" in url for _, url in failed), failed
    for status, url in failed:
        path = url.split("/~cap/", 1)[1].split("/", 1)[1]
        assert direct_status(f"http://127.0.0.1:{ray_head}/{path}") == status, url
    statuses = sorted(int(m.group(1)) for e in console.errors if (m := FAILED_RESOURCE.match(e)))
    assert statuses == sorted(status for status, _ in failed), console.errors
    assert [e for e in console.errors if not FAILED_RESOURCE.match(e)] == []
