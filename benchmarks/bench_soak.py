"""A workbench that runs for days: clusters and jobs made, scaled and deleted in a loop for
``--minutes``, the API server and Kueue restarted on the way; what the Jupyter server and a
kernel hold over time, whether every change reached every open view, and what is left after.

On an audited disposable control plane of its own (tests/cluster/audit.py, a
``DisposableCluster`` that can stop and start its components; never the shared test plane):
a namespace with LocalQueue ``team`` on a ClusterQueue of 8 CPU, a workbench service account
with a workbench's RBAC, a real ``jupyter server`` with jupyter_dw running as it, a long-lived
kernel process reading through it (benchmarks/kernel_process.py: a ``QueueBoard``, a
``ClusterStatus`` and a subscription to its change feed) and a long-lived ``dw/api/events``
socket (the sidebar's). Then cycles until the time is up, each:

1. ``POST dw/api/clusters``: an elastic cluster (1 worker, up to 4), waited for through the
   long-lived socket until created, admitted and ready;
2. scaled to 3 workers, then back to 1 (``POST dw/api/clusters/NAME/scale``), each waited for
   until ready at that size;
3. ``POST dw/api/rayjobs``, waited for until Kueue admits it, ``DELETE``, until it is gone;
4. ``DELETE dw/api/clusters/NAME``, until it is gone.

Every 2nd cycle an events socket is opened once the cluster is ready and closed at the end of
the next cycle; every 3rd a short-lived kernel process starts before the cycle and stops after
it. In the first cycle past a third of the time (of the first 30 minutes, in a longer run)
the API server is stopped and started again once the cluster is ready, past two thirds Kueue:
a longer run measures the trends after the restarts for longer. The loop waits for the views
to be live again (a deadline, never a fixed sleep). REST calls answered 502/503/504 or not at
all are retried until a deadline (counted).

Measured:

- every ``--interval`` s, the Jupyter server's and the long-lived kernel's RSS, threads and
  open file descriptors (``/proc``); after the warm-up (the first 20 % of the time) each
  series fitted as a line: slope per hour with its standard error, and its first (the
  baseline, same run), last and largest values;
- every change reached every open view: after each cycle, each view (the two long-lived
  ones, the short-lived sockets and kernels open then) must have been told each milestone it
  owes (soak_views.py), within a deadline; the misses are counted (target 0);
- nothing left behind: no RayCluster, RayJob, Workload or pod of the cycles in the
  namespace; the server's open watches (audit log) as many per resource as after the
  warm-up; no short-lived kernel process alive; the server's kernel link file the only one
  while it runs, none after it stopped.

Usage: ``.venv/bin/python -m benchmarks.bench_soak [--minutes 30] [--interval 10]
[--json FILE] [--smoke] [--cluster-dir DIR]`` (needs ``make cluster-build``; ``--smoke``: 2
minutes, a sample every 2 s, both restarts: checks that every figure was measured).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from benchmarks.apiserver_metrics import scrape
from benchmarks.kernel_process import CLUSTERS, Kernel
from benchmarks.process_stats import open_fds, rss_mib, threads
from benchmarks.soak_series import trends
from benchmarks.soak_views import Cycle, Milestone, missed, owed_since, records
from benchmarks.workbench import (
    JupyterServer,
    audited_plane,
    pod_environment,
    run_in_temporary_directory,
    team_namespace,
)
from jupyter_dw.names import KERNEL_LINK_ENV
from tests.cluster.audit import AuditedCluster, AuditLog
from tests.cluster.fixtures import WorkbenchIdentity
from tests.integration.clusters_support import suspended_raycluster

GROUP = "kueue.x-k8s.io"
QUEUE = "team"
LOW, HIGH = 1, 3
"""Each cycle's cluster runs at LOW workers, is scaled to HIGH and back."""
STEP_TIMEOUT = 180.0
"""The longest a milestone may take to reach the loop's own view."""
RECOVERY = 240.0
"""The longest the product may take to serve again after a restart."""
VIEW_DEADLINE = 30.0
"""How long after the loop's view every other open view has to be told a cycle's changes."""
SOCKET_EVERY, KERNEL_EVERY = 2, 3
SETTLE = 60.0
"""Seconds after the last restart left out of the trends after the restarts."""
RESTARTS_WITHIN = 30 * 60.0
"""Seconds of a run its two restarts are placed in (at a third and two thirds of them, or of
the whole run when it is shorter)."""
WARMUP = 0.2
"""The share of the time left out of the trends (caches filling, first imports)."""
TOKEN_ROTATION = 1800.0
"""Seconds between new service account tokens (the kubelet rotates them at 80 % of their
hour; the product reads the file again)."""
SERIES = (
    "server_rss_mib",
    "server_threads",
    "server_fds",
    "kernel_rss_mib",
    "kernel_threads",
    "kernel_fds",
)
SHOWN = CLUSTERS[0]
"""The suspended cluster (in no queue) the kernels' ClusterStatus widgets show."""
CLUSTER_BODY = {
    "workers": LOW,
    "min_workers": 1,
    "max_workers": 4,
    "head_cpu": "1",
    "head_memory": "1Gi",
    "worker_cpu": "1",
    "worker_memory": "1Gi",
    "queue": QUEUE,
}
RAYJOB_CLUSTER = {k: CLUSTER_BODY[k] for k in ("head_cpu", "head_memory", "worker_cpu")}


# -- views -------------------------------------------------------------------------------------


@dataclass
class View:
    """One open view's messages in the events socket's form: a socket's (read by a task) or
    a kernel's (the lines its ``follow`` writes to ``path``). ``seen_before``: how many
    milestones the loop had seen when it opened."""

    label: str
    seen_before: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None
    socket: WebSocketClientConnection | None = None
    reader: asyncio.Task[None] | None = None
    kernel: Kernel | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    _offset: int = 0

    def add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.changed.set()

    def refresh(self) -> None:
        """A kernel's view: the lines its process wrote since the last read."""
        if self.path is None or not self.path.exists():
            return
        with self.path.open() as handle:
            handle.seek(self._offset)
            text = handle.read()
        complete = text[: text.rfind("\n") + 1]
        self._offset += len(complete.encode())
        for line in complete.splitlines():
            self.add(json.loads(line))

    async def wait(self, condition: Callable[[], bool], what: str, timeout: float) -> None:
        """Until ``condition()`` holds of the messages read (a socket's wake this; a kernel's
        file is read again every 50 ms)."""
        deadline = time.monotonic() + timeout
        while True:
            self.refresh()
            if condition():
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{self.label}: {what}; last: {self.messages[-3:]}")
            self.changed.clear()
            step = remaining if self.path is None else min(remaining, 0.05)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), step)

    def trim(self) -> None:
        """Forget what was read (a cycle checked: its names never come back)."""
        self.messages = []

    async def close(self) -> None:
        if self.socket is not None:
            self.socket.close()
        if self.reader is not None:
            self.reader.cancel()
        if self.kernel is not None:
            await asyncio.to_thread(self.kernel.stop)


async def open_socket(server: JupyterServer, label: str, seen_before: int) -> View:
    """A ``dw/api/events`` socket as a view, its snapshot read."""
    request = HTTPRequest(
        f"ws://127.0.0.1:{server.port}/dw/api/events",
        headers={"Authorization": f"token {server.token}"},
    )
    socket = await websocket_connect(request)
    view = View(label, seen_before, socket=socket)
    first = await asyncio.wait_for(socket.read_message(), STEP_TIMEOUT)
    assert first is not None and json.loads(first)["type"] == "snapshot", first
    view.add(json.loads(first))

    async def read() -> None:
        while (message := await socket.read_message()) is not None:
            view.add(json.loads(message))

    view.reader = asyncio.create_task(read())
    return view


async def open_kernel(environ: dict[str, str], directory: Path, label: str, seen: int) -> View:
    """A kernel process showing a QueueBoard and a ClusterStatus, following its change feed."""
    kernel = Kernel(environ, directory / f"{label}.log")
    kernel.add(2)
    await asyncio.to_thread(kernel.wait_ready)
    path = directory / f"{label}.jsonl"
    await asyncio.to_thread(kernel.follow, path)
    return View(label, seen, path=path, kernel=kernel)


def health_states(view: View, since: int) -> list[str]:
    """The freshness of each ``health`` message from the ``since``-th on."""
    return [m["freshness"]["state"] for m in view.messages[since:] if m.get("type") == "health"]


# -- the soak ----------------------------------------------------------------------------------


@dataclass
class Soak:
    """The plane, the workbench and what the loop counts."""

    args: argparse.Namespace
    plane: AuditedCluster
    kube: client.ApiClient
    version: str
    namespace: str
    identity: WorkbenchIdentity
    directory: Path
    server: JupyterServer
    kernel_environ: dict[str, str]
    primary: View | None = None
    kernel: View | None = None
    views: list[View] = field(default_factory=list)
    sequence: dict[tuple[int, str], int] = field(default_factory=dict)
    started: float = 0.0
    duration: float = 0.0
    samples: list[dict[str, float]] = field(default_factory=list)
    cycle_seconds: list[float] = field(default_factory=list)
    owed: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)
    rest_calls: int = 0
    retried: Counter[str] = field(default_factory=Counter)
    restarts: dict[str, dict[str, Any]] = field(default_factory=dict)
    sockets_opened: int = 0
    kernels_started: int = 0
    short_kernels: list[Kernel] = field(default_factory=list)
    apiserver_stopped_at: float = 0.0
    """When the API server was last stopped (Unix seconds; 0: never)."""

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.kube)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # -- REST, through the workbench's server -----------------------------------------------

    async def rest(
        self, method: str, path: str, expect: int, body: Any = None, key: str | None = None
    ) -> Any:
        """``method dw/api/path``; answers 502, 503, 504 or none are retried (the product
        recovering from a restart) until :data:`RECOVERY`, counted by status."""
        headers = {"Idempotency-Key": key} if key else None
        deadline = time.monotonic() + RECOVERY
        self.rest_calls += 1
        while True:
            try:
                status, answer = await asyncio.to_thread(
                    self.server.request,
                    f"dw/api/{path}",
                    STEP_TIMEOUT,
                    method=method,
                    body=body,
                    headers=headers,
                )
            except OSError as err:
                status, answer = 0, str(err)
            if status == expect:
                return answer
            if status not in (0, 502, 503, 504) or time.monotonic() > deadline:
                raise RuntimeError(f"{method} dw/api/{path}: {status} {answer}")
            self.retried[f"{status} {(answer or {}).get('code') if status else 'no answer'}"] += 1
            await asyncio.sleep(1.0)  # between tries of a server still recovering

    # -- milestones --------------------------------------------------------------------------

    async def reach(self, cycle: Cycle, label: str, since: int) -> None:
        """Until the loop's own view was told milestone ``label`` of ``cycle`` (from its
        ``since``-th message), numbered in the order the loop saw them."""
        view = self.primary
        assert view is not None
        milestone = next(m for m in cycle.milestones() if m.label == label)

        def told() -> bool:
            shown = records(view.messages[since:], milestone.kind, milestone.name)
            return any(milestone.reached(r) for r in shown)

        await view.wait(told, f"{milestone.kind} {milestone.name} {label}", STEP_TIMEOUT)
        self.sequence[(cycle.index, label)] = len(self.sequence) + 1

    async def check(self, cycle: Cycle) -> None:
        """Every open view told every milestone of ``cycle`` it owes, within
        :data:`VIEW_DEADLINE` of the loop's own view; what one was not told is a miss."""
        for view in self.views:
            owed = owed_since(cycle, view.seen_before, self.sequence)
            self.owed += len(owed)

            def told(view: View = view, owed: list[Milestone] = owed) -> bool:
                return not missed(view.messages, owed)

            try:
                await view.wait(told, f"cycle {cycle.index}", VIEW_DEADLINE)
            except TimeoutError:
                for label in missed(view.messages, owed):
                    self.misses.append({"view": view.label, "cycle": cycle.index, "change": label})
                    print(f"  MISSED: {view.label} was not told {label} of cycle {cycle.index}")
            view.trim()

    # -- one cycle ---------------------------------------------------------------------------

    async def cycle(self, index: int) -> None:
        began = time.monotonic()
        cycle = Cycle(index, f"soak-{index:04d}", f"soak-job-{index:04d}", LOW, HIGH)
        primary = self.primary
        assert primary is not None
        closing: list[View] = [v for v in self.views if v.label.startswith("socket-")]
        if index % KERNEL_EVERY == 0:
            label = f"kernel-{index:04d}"
            seen = len(self.sequence)
            short = await open_kernel(self.kernel_environ, self.directory, label, seen)
            assert short.kernel is not None
            self.short_kernels.append(short.kernel)
            self.views.append(short)
            closing.append(short)
            self.kernels_started += 1

        mark = len(primary.messages)
        await self.rest("POST", "clusters", 201, {"name": cycle.cluster, **CLUSTER_BODY}, uuid4())
        for label in ("created", "admitted", "ready"):
            await self.reach(cycle, label, mark)
        if index % SOCKET_EVERY == 1:
            label = f"socket-{index:04d}"
            self.views.append(await open_socket(self.server, label, len(self.sequence)))
            self.sockets_opened += 1
        await self.restart_when_due(index)

        for workers, label in ((HIGH, "scaled_up"), (LOW, "scaled_down")):
            mark = len(primary.messages)
            await self.rest("POST", f"clusters/{cycle.cluster}/scale", 200, {"workers": workers})
            await self.reach(cycle, label, mark)

        mark = len(primary.messages)
        job: dict[str, Any] = {"name": cycle.rayjob, "entrypoint": "python -c 'print(1)'"}
        job |= {"queue": QUEUE, "cluster": {"workers": 1, "worker_memory": "1Gi", **RAYJOB_CLUSTER}}
        await self.rest("POST", "rayjobs", 201, job, uuid4())
        for label in ("rayjob_created", "rayjob_admitted"):
            await self.reach(cycle, label, mark)
        mark = len(primary.messages)
        await self.rest("DELETE", f"rayjobs/{cycle.rayjob}", 200)
        await self.reach(cycle, "rayjob_deleted", mark)
        mark = len(primary.messages)
        await self.rest("DELETE", f"clusters/{cycle.cluster}", 200)
        await self.reach(cycle, "deleted", mark)

        await self.check(cycle)
        for view in closing:
            self.views.remove(view)
            await view.close()
        self.cycle_seconds.append(time.monotonic() - began)

    async def restart_when_due(self, index: int) -> None:
        """The API server past a third of the time, Kueue past two thirds (once each; of the
        first :data:`RESTARTS_WITHIN` seconds of a longer run)."""
        span = min(self.duration, RESTARTS_WITHIN)
        for component, share in (("kube-apiserver", 1 / 3), ("kueue", 2 / 3)):
            if component not in self.restarts and self.elapsed >= share * span:
                self.restarts[component] = await self.restart(component, index)
                return

    async def restart(self, component: str, index: int) -> dict[str, Any]:
        """Stop ``component``, start it again; until the loop's view is live again (when it
        was told otherwise)."""
        primary = self.primary
        assert primary is not None
        mark = len(primary.messages)
        at = self.elapsed
        stopped = time.monotonic()
        if component == "kube-apiserver":
            self.apiserver_stopped_at = time.time()
        await asyncio.to_thread(self.plane.stop_component, component)
        await asyncio.to_thread(self.plane.start_component, component)
        serving = time.monotonic()

        def live_again() -> bool:
            states = health_states(primary, mark)
            return not states or states[-1] == "live"

        await primary.wait(live_again, f"the views live again after {component}", RECOVERY)
        states = health_states(primary, mark)
        figures = {
            "cycle": index,
            "at_seconds": round(at, 1),
            "down_seconds": round(serving - stopped, 1),
            "views_told": next((s for s in states if s != "live"), None),
            "live_again_seconds": round(time.monotonic() - serving, 2),
            "live_at_seconds": round(self.elapsed, 1),
        }
        print(f"  {component} restarted: {figures}", flush=True)
        return figures

    # -- samples -----------------------------------------------------------------------------

    async def sample_every(self, interval: float) -> None:
        """The server's and the long-lived kernel's RSS, threads and fds every ``interval`` s
        (the cadence is the measurement: nothing is waited for); a new token when due."""
        kernel = self.kernel
        assert kernel is not None and kernel.kernel is not None
        pids = {"server": self.server.process.pid, "kernel": kernel.kernel.process.pid}
        rotated = time.monotonic()
        while True:
            # The machine's load (noisy figures under load: the results say how noisy).
            sample = {"t": round(self.elapsed, 1), "load1": os.getloadavg()[0]}
            for who, pid in pids.items():
                sample[f"{who}_rss_mib"] = round(rss_mib(pid) or 0.0, 2)
                sample[f"{who}_threads"] = float(threads(pid) or 0)
                sample[f"{who}_fds"] = float(open_fds(pid) or 0)
            self.samples.append(sample)
            if time.monotonic() - rotated > TOKEN_ROTATION:
                await asyncio.to_thread(rotate_token, self.kube, self.identity)
                rotated = time.monotonic()
            await asyncio.sleep(interval)

    # -- what is left ------------------------------------------------------------------------

    def server_watches(self) -> Counter[str]:
        """The workbench's watches open now, by resource (audit log; a watch the stopped API
        server cut may have no end there: only those opened since count)."""
        log = AuditLog(self.plane.audit_dir / "audit.log")
        now = time.time()
        return Counter(
            r.resource
            for r in log.requests([self.identity.username])
            if r.is_watch and r.open_at(now) and r.received >= self.apiserver_stopped_at
        )

    def ours(self) -> dict[str, list[str]]:
        """The cycles' objects still in the namespace (the kernels' shown cluster aside)."""
        left: dict[str, list[str]] = {}
        for group, version, plural in (
            ("ray.io", "v1", "rayclusters"),
            ("ray.io", "v1", "rayjobs"),
            (GROUP, self.version, "workloads"),
        ):
            listed = self.custom.list_namespaced_custom_object(
                group, version, self.namespace, plural
            )
            left[plural] = [
                o["metadata"]["name"] for o in listed["items"] if o["metadata"]["name"] != SHOWN
            ]
        pods = client.CoreV1Api(self.kube).list_namespaced_pod(self.namespace)
        left["pods"] = [p.metadata.name for p in pods.items]
        return left

    def link_files(self) -> list[str]:
        """jupyter_dw's files in the server's runtime directory (its kernel link)."""
        runtime = Path(self.kernel_environ[KERNEL_LINK_ENV]).parent
        return sorted(p.name for p in runtime.glob("*jupyter_dw-*")) if runtime.exists() else []


def after_restarts(soak: Soak) -> dict[str, Any] | None:
    """The trends from :data:`SETTLE` after the last restart on (a restart may step a figure
    up once: reconnecting refills the connection pool), None with under 3 samples there."""
    since = max(r["live_at_seconds"] for r in soak.restarts.values()) + SETTLE
    if sum(1 for s in soak.samples if s["t"] >= since) < 3:
        return None
    return {"since_seconds": since, **trends(soak.samples, since, SERIES)}


def uuid4() -> str:
    return str(uuid.uuid4())


def rotate_token(kube: client.ApiClient, identity: WorkbenchIdentity) -> None:
    """A new token in the service account directory, as the kubelet writes it (atomically)."""
    token = (
        client.CoreV1Api(kube)
        .create_namespaced_service_account_token(
            identity.name,
            identity.namespace,
            client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
            ),
        )
        .status.token
    )
    temporary = identity.service_account_dir / ".token.new"
    temporary.write_text(token)
    os.replace(temporary, identity.service_account_dir / "token")


def kernel_processes() -> list[int]:
    """This process's children running benchmarks/kernel_process.py."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"kernel_process.py" in command:
            found.append(int(entry.name))
    return found


async def until_left(soak: Soak) -> dict[str, list[str]]:
    """Until the cycles' objects are gone (the garbage collector deletes a RayJob's cluster,
    a cluster's pods and Workloads after them) or :data:`STEP_TIMEOUT` passed; what is left."""
    deadline = time.monotonic() + STEP_TIMEOUT
    while True:
        left = await asyncio.to_thread(soak.ours)
        if not any(left.values()) or time.monotonic() > deadline:
            return left
        await asyncio.sleep(1.0)  # nothing of ours announces the collector's progress


async def watches_settled(soak: Soak, baseline: Counter[str]) -> Counter[str]:
    """The server's open watches once they match ``baseline`` (a watch being renewed at the
    moment of reading counts one less), or after 30 s: the last count."""
    deadline = time.monotonic() + 30.0
    while True:
        now = await asyncio.to_thread(soak.server_watches)
        if now == baseline or time.monotonic() > deadline:
            return now
        await asyncio.sleep(0.5)


# -- the run -----------------------------------------------------------------------------------


def environment_setting(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` of ``--env``."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def memory_probe_environment(directory: Path, interval: float, traced: bool) -> dict[str, str]:
    """What starts ``probe_site/sitecustomize.py`` in the server and the kernels: a probe
    every ten samples (with a tracemalloc snapshot when ``traced``)."""
    directory.mkdir(parents=True, exist_ok=True)
    site = str(Path(__file__).with_name("probe_site"))
    path = os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH", "")) if p)
    return {
        "PYTHONPATH": path,
        "DW_MEMORY_PROBE": str(directory.resolve()),
        "DW_MEMORY_PROBE_INTERVAL": str(interval * 10),
        "DW_MEMORY_PROBE_TRACE": "1" if traced else "0",
    }


async def setup(args: argparse.Namespace, directory: Path) -> Soak:
    """The plane, the namespace and its queue, the workbench's server and long-lived views."""
    plane, state, kube, version = audited_plane(args.cluster_dir, directory)
    quota: dict[str, str | dict[str, str]] = {"cpu": "8", "memory": "32Gi"}
    namespace, identity, kueue, cq = team_namespace(kube, state, version, "soak", directory, quota)
    kueue.wait_active("clusterqueues", cq)
    kueue.wait_active("localqueues", kueue.local_queue(QUEUE, cq))
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", suspended_raycluster(SHOWN)
    )
    runtime_dir = directory / "runtime"
    environ = {**pod_environment(identity), "JUPYTER_RUNTIME_DIR": str(runtime_dir)}
    environ.update(args.env)
    if args.memory_probe:
        environ.update(
            memory_probe_environment(Path(args.memory_probe), args.interval, not args.untraced)
        )
    flags = (f"--JupyterDW.service_account_dir={identity.service_account_dir}",)
    server = JupyterServer(directory, environ, extra_args=flags)
    await asyncio.to_thread(server.wait_answer, "dw/api/queues", 200, STEP_TIMEOUT)
    # What a kernel the server starts inherits (these kernels are started here instead).
    kernel_environ = {
        **environ,
        KERNEL_LINK_ENV: str(runtime_dir / f"jupyter_dw-{server.port}.json"),
    }
    soak = Soak(args, plane, kube, version, namespace, identity, directory, server, kernel_environ)
    soak.primary = await open_socket(server, "sidebar-socket", 0)
    soak.kernel = await open_kernel(kernel_environ, directory, "long-lived-kernel", 0)
    soak.views = [soak.primary, soak.kernel]
    return soak


async def run_loop(soak: Soak, interval: float) -> dict[str, Any]:
    """Cycles until the time is up and both restarts were made; the watches after warm-up."""
    soak.started = time.monotonic()
    sampler = asyncio.create_task(soak.sample_every(interval))
    baseline: dict[str, Any] = {}
    index = 0
    try:
        while soak.elapsed < soak.duration or len(soak.restarts) < 2:
            await soak.cycle(index)
            index += 1
            if not baseline and soak.elapsed >= WARMUP * soak.duration:
                baseline = {
                    "server": await asyncio.to_thread(soak.server_watches),
                    "apiserver": int((await asyncio.to_thread(scrape, soak.kube)).watches_open),
                    "at_seconds": round(soak.elapsed, 1),
                }
            print(
                f"cycle {index - 1} done in {soak.cycle_seconds[-1]:.1f} s "
                f"({soak.elapsed:.0f} s of {soak.duration:.0f}), {len(soak.misses)} misses",
                flush=True,
            )
    finally:
        sampler.cancel()
    return baseline


async def measure(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    load_before = os.getloadavg()
    soak = await setup(args, directory)
    soak.duration = args.minutes * 60
    results: dict[str, Any] = {
        "minutes": args.minutes,
        "interval_seconds": args.interval,
        "environment": dict(args.env),
    }
    try:
        baseline = await run_loop(soak, args.interval)
        end_watches = await watches_settled(soak, baseline["server"])
        apiserver_watches = int((await asyncio.to_thread(scrape, soak.kube)).watches_open)
        left = await until_left(soak)
        assert soak.kernel is not None and soak.kernel.kernel is not None
        stray = [pid for pid in kernel_processes() if pid != soak.kernel.kernel.process.pid]
        links_live = soak.link_files()
        for view in soak.views:
            await view.close()
        await asyncio.to_thread(soak.server.stop)
        links_after = soak.link_files()
        results.update(
            {
                "seconds": round(soak.elapsed, 1),
                "cycles": len(soak.cycle_seconds),
                "cycle_seconds_median": round(statistics.median(soak.cycle_seconds), 1),
                "cycle_seconds_max": round(max(soak.cycle_seconds), 1),
                "warmup_seconds": round(WARMUP * soak.duration, 1),
                "restarts": soak.restarts,
                "views": {
                    "sockets_opened": soak.sockets_opened,
                    "kernels_started": soak.kernels_started,
                    "changes_owed": soak.owed,
                    "misses": len(soak.misses),
                    "missed": soak.misses,
                },
                "rest": {"calls": soak.rest_calls, "retried": dict(soak.retried)},
                "watches": {
                    "server_after_warmup": sum(baseline["server"].values()),
                    "server_at_end": sum(end_watches.values()),
                    "server_by_resource_after_warmup": dict(baseline["server"]),
                    "server_by_resource_at_end": dict(end_watches),
                    "apiserver_after_warmup": baseline["apiserver"],
                    "apiserver_at_end": apiserver_watches,
                },
                "left_behind": {
                    **left,
                    "kernel_processes": stray,
                    "link_files_while_serving": links_live,
                    "link_files_after_stop": links_after,
                    "link_file_expected": Path(soak.kernel_environ[KERNEL_LINK_ENV]).name,
                },
                "series": trends(soak.samples, WARMUP * soak.duration, SERIES),
                "series_after_restarts": after_restarts(soak),
                "samples": soak.samples,
                "kueue": soak.plane.running.versions.get("kueue"),
                "load_average_before": [round(x, 2) for x in load_before],
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
                "load_average_during": {
                    "min": min(s["load1"] for s in soak.samples),
                    "median": statistics.median(s["load1"] for s in soak.samples),
                    "max": max(s["load1"] for s in soak.samples),
                },
            }
        )
    finally:
        for kernel in soak.short_kernels:
            await asyncio.to_thread(kernel.stop)
        for view in soak.views:
            await view.close()
        if soak.server.process.poll() is None:
            await asyncio.to_thread(soak.server.stop)
        if args.cluster_dir:
            client.CoreV1Api(soak.kube).delete_namespace(soak.namespace)
        else:
            soak.plane.down()
    report(results)
    return results


def report(results: dict[str, Any]) -> None:
    views, left = results["views"], results["left_behind"]
    print(
        f"\n{results['cycles']} cycles in {results['seconds']:.0f} s (median "
        f"{results['cycle_seconds_median']} s); {views['changes_owed']} changes owed to the "
        f"views ({views['sockets_opened']} sockets and {views['kernels_started']} kernels "
        f"opened on the way), {views['misses']} missed; REST retries {results['rest']['retried']}"
    )
    for component, figures in results["restarts"].items():
        print(f"  {component} restarted: {figures}")
    print(f"  watches: {results['watches']}")
    print(f"  left behind: {left}")
    print("after warm-up (start = the baseline, same run):")
    for name, t in results["series"].items():
        se = f" +- {t['slope_se']}" if t["slope_se"] is not None else ""
        print(
            f"  {name:16s} start {t['start']:>9.1f}  end {t['end']:>9.1f}  max {t['max']:>9.1f}"
            f"  slope {t['slope_per_hour']:>+9.3f}{se} per hour ({t['samples']} samples)"
        )
    calm = results["series_after_restarts"]
    if calm is not None:
        print(f"from {calm['since_seconds']:.0f} s on (after the restarts):")
        for name in SERIES:
            t = calm[name]
            se = f" +- {t['slope_se']}" if t["slope_se"] is not None else ""
            print(f"  {name:16s} slope {t['slope_per_hour']:>+9.3f}{se} per hour")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=10.0, help="s between samples")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--cluster-dir", help="reuse or keep an audited control plane here")
    parser.add_argument("--smoke", action="store_true", help="2 minutes: every figure measured")
    parser.add_argument(
        "--env",
        action="append",
        type=environment_setting,
        default=[],
        metavar="NAME=VALUE",
        help="set in the server's and the kernels' environment (e.g. MALLOC_ARENA_MAX=2); "
        "repeatable, recorded with the figures",
    )
    parser.add_argument(
        "--memory-probe",
        metavar="DIR",
        help="trace the server's and kernels' allocations into DIR (a diagnosis: slows them; "
        "compare with benchmarks/memory_diff.py)",
    )
    parser.add_argument(
        "--untraced",
        action="store_true",
        help="with --memory-probe: counts, largest containers and pymalloc arenas only, no "
        "tracemalloc (a run at full speed, long enough for what comes late)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.minutes, args.interval = 2.0, 2.0
    run_in_temporary_directory(measure, args, "dw-bench-soak-")


if __name__ == "__main__":
    main()
