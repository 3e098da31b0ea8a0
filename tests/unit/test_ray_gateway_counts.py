"""The test bed's Ray gateway counts the requests it relays per cluster (the benchmarks read
Ray calls per cluster there), behind a stand-in head that answers everything 200."""

from __future__ import annotations

import threading
import urllib.request
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.cluster.ray_gateway import RequestCount, ray_gateway


class _Head(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def head_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Head)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def fetch(port: int, path: str, body: bytes | None = None) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", data=body, timeout=10) as r:
        return bytes(r.read())


def test_every_request_is_counted_under_its_cluster(head_port: int) -> None:
    counts = RequestCount()
    with ray_gateway(head_port, counts) as port:
        assert fetch(port, "/alpha/api/cluster_status") == b"/api/cluster_status"
        assert fetch(port, "/alpha/api/jobs/?x=1") == b"/api/jobs/?x=1"
        fetch(port, "/beta/api/jobs/", body=b"{}")
        assert counts.snapshot() == Counter({"alpha": 2, "beta": 1})
        before = counts.snapshot()
        fetch(port, "/beta/")
    assert before == Counter({"alpha": 2, "beta": 1})  # a copy: later requests do not change it
    assert counts.snapshot() == Counter({"alpha": 2, "beta": 2})


def test_without_a_counter_the_gateway_relays_as_before(head_port: int) -> None:
    with ray_gateway(head_port) as port:
        assert fetch(port, "/alpha/api/version") == b"/api/version"
