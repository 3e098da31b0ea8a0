"""The real Ray dashboard through the sandboxing proxy, in headless Chromium.

A Ray head (``ray[default]`` from PyPI, in a virtualenv of its own so the product's
dependencies stay clean) runs on 127.0.0.1 with one CPU; RayCluster ``localhost`` in the test
namespace names it (the proxy's template is ``http://{name}:{port}``, so the dashboard is
``http://localhost:<port>``). The dashboard must load through the proxy, sandboxed, render its
cluster view from its own API calls, and log no console error.

The virtualenv is built once and kept in ``~/.cache/jupyter-dw/ray-venv-<version>`` (about
80 s and 400 MB on 2 cores); ``DW_RAY_VENV`` points elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.cluster.controlplane import free_port
from tests.integration.browser import Console, chromium, watch
from tests.integration.clusters_support import create_suspended_raycluster

pytestmark = pytest.mark.cluster

RAY_VERSION = "2.60.0"
RAY_VENV = Path(
    os.environ.get("DW_RAY_VENV", Path.home() / ".cache" / "jupyter-dw" / f"ray-venv-{RAY_VERSION}")
)
CLUSTER = "localhost"  # a valid RayCluster name, and a host name that is 127.0.0.1
WORKBENCH_RULES = [{"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get"]}]
START_TIMEOUT = 120.0
PAGE_TIMEOUT_MS = 90_000


def ray_venv() -> Path:
    """The Ray virtualenv, built when missing (a stamp marks a finished install)."""
    stamp = RAY_VENV / ".installed"
    if stamp.exists():
        return RAY_VENV
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(RAY_VENV)], check=True)
    pip = [str(RAY_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"ray[default]=={RAY_VERSION}"], check=True)
    stamp.touch()
    return RAY_VENV


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def ray_head() -> Iterator[int]:
    """A Ray head on 127.0.0.1 (its own ports and temp dir); yields the dashboard's port.
    Stopped afterwards by signalling its process group: ``ray stop`` would stop every Ray of
    this user on the machine."""
    venv = ray_venv()
    temp = tempfile.mkdtemp(prefix="dwray-", dir="/tmp")  # short: Ray puts sockets in it
    port = free_port()
    command = [
        str(venv / "bin" / "ray"),
        "start",
        "--head",
        "--block",
        "--num-cpus=1",
        "--include-dashboard=true",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={port}",
        f"--port={free_port()}",
        f"--ray-client-server-port={free_port()}",
        f"--dashboard-agent-listen-port={free_port()}",
        "--min-worker-port=0",
        "--max-worker-port=0",
        "--node-ip-address=127.0.0.1",
        f"--temp-dir={temp}",
        "--disable-usage-stats",
    ]
    environ = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    log = Path(temp) / "ray-start.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=environ, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers(f"http://127.0.0.1:{port}/api/cluster_status"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Ray head did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)  # polling the condition: the dashboard answering
        yield port
    finally:
        _stop(process)
        shutil.rmtree(temp, ignore_errors=True)  # Ray's logs and sockets: nothing is kept


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to ``ray start --block`` (it stops its processes), then SIGKILL to whatever of
    its process group is left."""
    if process.poll() is None:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.fixture
def dw_config(ray_head: int) -> dict[str, Any]:
    return {"ray_dashboard_url": "http://{name}:{port}", "ray_dashboard_port": ray_head}


@pytest.fixture
def raycluster(kube: client.ApiClient, namespace: str) -> str:
    create_suspended_raycluster(kube, namespace, CLUSTER)
    return CLUSTER


def direct_status(url: str) -> int:
    """The status the Ray dashboard itself answers ``url`` with (no proxy, no browser)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


FAILED_RESOURCE = re.compile(
    r"^console: Failed to load resource: the server responded with a status of (\d+)"
)


async def test_the_ray_dashboard_works_sandboxed(
    raycluster, ray_head, jp_serverapp, jp_base_url, http_server_client
):
    base = f"http://127.0.0.1:{http_server_client.get_http_port()}{jp_base_url}"
    token = jp_serverapp.identity_provider.token
    console = Console()
    answers: list[tuple[int, str]] = []

    async with chromium() as browser:
        context = await browser.new_context()
        watch(context, console)
        context.on("response", lambda r: answers.append((r.status, r.url)))
        page = await context.new_page()
        await page.goto(f"{base}api/status?token={token}")
        await page.goto(f"{base}dw/ray/{CLUSTER}/#/cluster")

        assert "/~cap/" in page.url
        # The cluster view: the node table, filled from the dashboard's own API calls.
        for text in ("Node summary fetched.", "ALIVE x 1", "Node List"):
            await page.get_by_text(text).first.wait_for(timeout=PAGE_TIMEOUT_MS)
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
