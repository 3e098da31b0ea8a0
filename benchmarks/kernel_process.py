"""A kernel's side for the audited benchmarks (bench_load, bench_fleet): a process with a
``KernelRuntime`` showing live widgets on its asyncio loop, driven over stdin.

Run as a script (``python benchmarks/kernel_process.py``), never as a module of the
benchmarks package: the process holds what a kernel holds (IPython, an asyncio loop) and
jupyter_dw, and nothing a benchmark imports (the Kubernetes client, pytest), so its memory
and imports are a kernel's. ``add N`` shows N more widgets (a ``QueueBoard``, then a
``ClusterStatus`` of :data:`CLUSTERS`, alternately) and answers ``ready <total>`` once every
widget is live and shows what it will; ``follow PATH`` subscribes to the kernel's change feed
as a live view does and appends each cluster, job and health message to ``PATH`` (one JSON line
each, the events socket's form), answering ``following``; ``quit`` (or EOF) stops.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

TIMEOUT = 180.0
CLUSTERS = ("load-0", "load-1")
"""The clusters the ``ClusterStatus`` widgets show, by the order they are added."""
KERNEL_MODULES = ("IPython",)
"""What every kernel has imported before its first cell (besides asyncio)."""


async def kernel_process() -> None:
    """The stdin loop of the module's docstring."""
    import jupyter_dw as dw
    from jupyter_dw.core.settings import load_settings
    from jupyter_dw.notebook.runtime import KernelRuntime, set_runtime

    runtime = KernelRuntime(load_settings(paths=[]))
    set_runtime(runtime)
    widgets: list[Any] = []
    followed: list[Any] = []
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
        if not line or line[0] == "quit":
            break
        if line[0] == "follow":
            followed.append(follow(runtime, Path(line[1])))
            print("following", flush=True)
            continue
        for _ in range(int(line[1])):
            index = len(widgets)
            widget = (
                dw.QueueBoard() if index % 2 == 0 else dw.ClusterStatus(CLUSTERS[index % 4 // 2])
            )
            widgets.append(widget)
        deadline = loop.time() + TIMEOUT
        while not (
            all(w.freshness["state"] == "live" and not w.error for w in widgets)
            and all(shows_position(w) for w in widgets)
            # Its widgets' first positions read in the background, sometimes twice (the
            # watches' first lists mark the queue while the first call is under way): part of
            # showing them, not of the idle window.
            and _positions_settled(runtime)
        ):
            if loop.time() > deadline:
                raise TimeoutError([(w.freshness, w.error) for w in widgets])
            await asyncio.sleep(0.01)
        print(f"ready {len(widgets)}", flush=True)
    for widget in widgets:
        widget.close()
    for unsubscribe in followed:
        unsubscribe()
    await asyncio.to_thread(runtime.stop)


def follow(runtime: Any, path: Path) -> Any:
    """Subscribe (on this loop) a view that writes each cluster, job and health message to
    ``path``; returns the unsubscribe function."""
    from jupyter_dw.core.feed_messages import ClusterChanged, HealthChanged, JobChanged

    out = path.open("a")

    def write(message: Any) -> None:
        if isinstance(message, ClusterChanged | JobChanged | HealthChanged):
            out.write(json.dumps(message.to_json()) + "\n")
            out.flush()

    return runtime.subscribe(write)


def _positions_settled(runtime: Any) -> bool:
    """Whether a kernel's own position board has read its first positions (a kernel reading
    through its server has none: the server's board is settled when its socket showed them)."""
    board = getattr(runtime.core.clusters, "positions", None)
    return board is None or board.settled


def shows_position(widget: Any) -> bool:
    """Whether a widget shows what it will: a waiting cluster's queue position."""
    state = getattr(widget, "state", None)
    return state != "queued" or widget.position_in_local_queue is not None


class Kernel:
    """A kernel process of the benchmarks (this file run as a script), with its handle."""

    def __init__(self, environ: dict[str, str], log: Path) -> None:
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            env=environ,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        self.widgets = 0

    def add(self, widgets: int) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"add {widgets}\n")
        self.process.stdin.flush()
        self.widgets += widgets

    def wait_ready(self) -> None:
        assert self.process.stdout is not None
        answer = self.process.stdout.readline().split()
        if answer != ["ready", str(self.widgets)]:
            raise RuntimeError(f"kernel answered {answer}; see {self._log.name}")

    def follow(self, path: Path) -> None:
        """``follow path``: once answered, every later change reaches ``path``."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"follow {path}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().split()
        if answer != ["following"]:
            raise RuntimeError(f"kernel answered {answer}; see {self._log.name}")

    def stop(self) -> None:
        if self.process.stdin is not None and self.process.poll() is None:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


if __name__ == "__main__":
    for module in KERNEL_MODULES:
        __import__(module)
    asyncio.run(kernel_process())
