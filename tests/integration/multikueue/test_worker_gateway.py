"""With ``JupyterDW.multikueue_dashboard_url`` set, a cluster MultiKueue sent to the worker is
reachable through the worker's gateway: its record has a dashboard link, the dashboard proxy
and its Ray jobs go to the address the template gives for worker-1 (a stand-in gateway on
127.0.0.1 here, answering as Ray's Jobs API does), and no token of this cluster is sent (the
cluster's token Secret is the worker's)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.cluster.multikueue import MirroredQueue
from tests.integration.clusters_support import call, small_cluster
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

from .conftest import WORKER
from .test_rest import MULTIKUEUE_READ_RULES, ready_on_worker

pytestmark = [pytest.mark.cluster, pytest.mark.multikueue]

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES + MULTIKUEUE_READ_RULES
TEMPLATE = "http://127.0.0.1:{port}/{worker}/{namespace}/{name}"


class Gateway(ThreadingHTTPServer):
    """What a worker's gateway would be: every request it got (path, Authorization)."""

    seen: list[tuple[str, str | None]]


class _Answer(BaseHTTPRequestHandler):
    server: Gateway

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        body = b"[]" if self.path.endswith("/api/jobs/") else b"<html>Ray dashboard</html>"
        self.send_response(200)
        kind = "application/json" if body == b"[]" else "text/html"
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    server = Gateway(("127.0.0.1", 0), _Answer)
    # Never an accept() that waits for good: one that found no connection waiting after the
    # selector said there was one held serve_forever, and with it shutdown() in teardown (a
    # run hung here). socketserver takes the timeout as "none yet"; the accepted sockets
    # are blocking as before (socket.accept makes them so).
    server.socket.settimeout(1.0)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def dw_config(gateway: Gateway) -> dict[str, Any]:
    return {"multikueue_dashboard_url": TEMPLATE, "ray_dashboard_port": gateway.server_port}


async def test_the_workers_gateway_serves_its_dashboard_and_jobs(
    gateway: Gateway,
    mk_queue: MirroredQueue,
    identity,
    jp_fetch,
    jp_ws_fetch,
    enter_dashboard,
    http_server_client,
):
    ready = await ready_on_worker(jp_fetch, jp_ws_fetch, small_cluster("gw", 1, queue="team"))
    assert ready["dashboard_url"] is not None and ready["dashboard_url"].endswith("/dw/ray/gw/")
    assert ready["dashboard_note"] is None

    code, jobs = await call(jp_fetch, "GET", "clusters", "gw", "jobs")
    assert code == 200, jobs
    assert jobs == {"cluster": "gw", "jobs": []}
    root = f"/{WORKER}/{mk_queue.namespace}/gw"
    assert (f"{root}/api/jobs/", None) in gateway.seen  # no token: the worker's gateway's call

    # The dashboard proxy: the entry route issues a capability, the page comes from the worker.
    entry = await enter_dashboard("gw")
    assert entry.code == 302, (entry.code, entry.body)
    page = await http_server_client.fetch(
        entry.headers["Location"], follow_redirects=False, raise_error=False
    )
    assert (page.code, page.body) == (200, b"<html>Ray dashboard</html>")
    assert (f"{root}/", None) in gateway.seen
    assert (await call(jp_fetch, "DELETE", "clusters", "gw"))[0] == 200
