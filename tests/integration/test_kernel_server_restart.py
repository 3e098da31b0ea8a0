"""A kernel reading through its Jupyter server keeps working when the server restarts (it finds
the new one and its live views catch up), and falls back to its own connection, without the
user doing anything, when the server is gone for good or does not run jupyter_dw. Real
``jupyter server`` processes, as a workbench runs them."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.workbench import JupyterServer, pod_environment
from jupyter_dw._version import __version__
from jupyter_dw.core.feed_messages import ClusterChanged
from jupyter_dw.core.settings import load_settings
from jupyter_dw.names import KERNEL_LINK_ENV
from jupyter_dw.notebook import server_link
from jupyter_dw.notebook.runtime import KernelRuntime
from tests.cluster.controlplane import free_port
from tests.cluster.fixtures import WAIT_TIMEOUT
from tests.integration.clusters_support import make_queue, small_cluster
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES
GRACE = 4.0
"""The kernel's patience with a server gone for good, shortened for that test (a restart is
given the product's: a server's start takes a few seconds)."""


class Workbench:
    """A server process on a fixed port and runtime directory (so a restart takes the same
    ones, as a workbench pod's does) and a kernel runtime that found it as a kernel does."""

    def __init__(self, identity: Any, work: Path) -> None:
        self.work = work
        self.port = free_port()
        self.environ = {
            **pod_environment(identity),
            "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
        }
        self.flags = (f"--JupyterDW.service_account_dir={identity.service_account_dir}",)
        self.server: JupyterServer | None = None
        self.link = work / "runtime" / f"jupyter_dw-{self.port}.json"

    def start(self) -> None:
        self.server = JupyterServer(self.work, self.environ, extra_args=self.flags, port=self.port)
        self.server.wait_answer("dw/api/queues")

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def kernel(self, **extra: str) -> KernelRuntime:
        environ = {**self.environ, KERNEL_LINK_ENV: str(self.link), **extra}
        return KernelRuntime(load_settings(environ=environ, paths=[]), environ=environ)


@pytest.fixture
def bench(identity, tmp_path) -> Iterator[Workbench]:
    made = Workbench(identity, tmp_path)
    made.start()
    yield made
    made.stop()


def collect(runtime: KernelRuntime) -> tuple[list[Any], threading.Event, asyncio.AbstractEventLoop]:
    """Subscribe ``runtime``'s live feed on a loop of its own, run on a thread."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    messages: list[Any] = []
    arrived = threading.Event()

    def on(message: Any) -> None:
        messages.append(message)
        arrived.set()

    runtime.subscribe(on, loop)
    return messages, arrived, loop


def wait_for_cluster(messages: list[Any], arrived: threading.Event, name: str) -> ClusterChanged:
    deadline = time.monotonic() + WAIT_TIMEOUT
    while True:
        for message in messages:
            if isinstance(message, ClusterChanged) and message.name == name and message.cluster:
                return message
        arrived.clear()
        if not arrived.wait(max(0.0, deadline - time.monotonic())):
            raise AssertionError(f"no message about {name}: {messages}")


def test_a_restarted_server_is_found_again_and_live_views_catch_up(bench, kueue):
    import jupyter_dw as dw
    from jupyter_dw.notebook.runtime import set_runtime

    queue = make_queue(kueue)
    kernel = bench.kernel()
    board_loop = asyncio.new_event_loop()
    asyncio.set_event_loop(board_loop)
    previous = set_runtime(kernel)
    try:
        assert [q.name for q in kernel.core.queues.list()] == [queue.local_queue]
        assert kernel.connection is not None and kernel.connection.mode == "server"
        messages, arrived, loop = collect(kernel)
        board = dw.QueueBoard()
        board.expanded = [queue.local_queue]  # asked again of the new server's socket
        first_secret = bench.link.read_text()

        bench.stop()
        assert not bench.link.exists()  # the stopped server took its link away
        bench.start()
        assert bench.link.read_text() != first_secret  # a new secret

        # The next call finds the new server (same file, new secret), as does the feed.
        kernel.core.clusters.create(small_cluster("after-restart", workers=1), None)
        assert kernel.connection.mode == "server"
        seen = wait_for_cluster(messages, arrived, "after-restart")
        assert seen.cluster is not None and seen.cluster.queue == queue.local_queue
        # The board's rows come from the new server's socket (still reading through it).
        board_shows(kernel, board, board_loop, lambda c: c.get(queue.local_queue) == 1)
        assert kernel.connection.mode == "server"
        kernel.core.clusters.delete("after-restart")
        board_shows(kernel, board, board_loop, lambda c: not c.get(queue.local_queue))
        board.close()
        loop.call_soon_threadsafe(loop.stop)
    finally:
        set_runtime(previous)
        board_loop.close()
        kernel.stop()


def board_shows(kernel: KernelRuntime, board: Any, loop: Any, wanted: Any) -> dict[str, int]:
    """``board``'s counts once ``wanted(counts)``, its messages delivered on ``loop`` (the
    board's); woken by the kernel's change listener."""
    changed = threading.Event()
    remove = kernel.add_listener(lambda *_: changed.set())
    deadline = time.monotonic() + WAIT_TIMEOUT
    try:
        while True:
            changed.clear()
            loop.run_until_complete(asyncio.sleep(0))
            if wanted(board.workload_counts):
                return dict(board.workload_counts)
            assert time.monotonic() < deadline, board.workload_counts
            changed.wait(0.5)  # its message may be queued on the loop just after the wake
    finally:
        remove()


def test_a_server_gone_for_good_leaves_the_kernel_on_its_own_connection(bench, kueue, monkeypatch):
    import jupyter_dw as dw
    from jupyter_dw.notebook.runtime import set_runtime

    monkeypatch.setattr(server_link, "RETURN_GRACE", GRACE)
    queue = make_queue(kueue)
    kernel = bench.kernel()
    board_loop = asyncio.new_event_loop()
    asyncio.set_event_loop(board_loop)
    previous = set_runtime(kernel)
    try:
        before = kernel.core.queues.list().to_json()
        messages, arrived, loop = collect(kernel)
        board = dw.QueueBoard()  # its rows chosen by the server, until it goes
        assert board.workload_counts == {} and not board.workloads_error
        bench.stop()

        started = time.monotonic()
        after = kernel.core.queues.list().to_json()  # waits GRACE, then on its own
        assert time.monotonic() - started >= GRACE
        assert kernel.connection is not None and kernel.connection.mode == "own"
        assert "went away" in kernel.connection.why
        assert after == before

        # The live views moved over to the kernel's own feed; the board chooses its rows.
        kernel.core.clusters.create(small_cluster("on-its-own", workers=1), None)
        seen = wait_for_cluster(messages, arrived, "on-its-own")
        assert seen.cluster is not None and seen.cluster.queue == queue.local_queue
        board_shows(kernel, board, board_loop, lambda c: c.get(queue.local_queue) == 1)
        kernel.core.clusters.delete("on-its-own")
        board_shows(kernel, board, board_loop, lambda c: not c.get(queue.local_queue))
        board.close()
        loop.call_soon_threadsafe(loop.stop)
    finally:
        set_runtime(previous)
        board_loop.close()
        kernel.stop()


def test_a_stale_link_or_no_server_means_an_own_connection_at_once(bench, kueue):
    queue = make_queue(kueue)
    bench.stop()
    bench.link.parent.mkdir(parents=True, exist_ok=True)
    link = {"url": f"http://127.0.0.1:{bench.port}/", "version": __version__, "secret": "old"}
    bench.link.write_text(json.dumps(link))  # a server killed without cleaning up
    kernel = bench.kernel()
    try:
        started = time.monotonic()
        assert [q.name for q in kernel.core.queues.list()] == [queue.local_queue]
        assert time.monotonic() - started < WAIT_TIMEOUT
        assert kernel.connection is not None and kernel.connection.mode == "own"
        assert "did not answer" in kernel.connection.why
    finally:
        kernel.stop()
    no_link = KernelRuntime(
        load_settings(environ=bench.environ, paths=[]), environ=bench.environ
    )  # VS Code, or a server without jupyter_dw: nothing names a server
    try:
        assert [q.name for q in no_link.core.queues.list()] == [queue.local_queue]
        assert no_link.connection is not None and no_link.connection.mode == "own"
        assert KERNEL_LINK_ENV in no_link.connection.why
    finally:
        no_link.stop()
