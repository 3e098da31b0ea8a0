"""What jupyter_dw asks of the API server while nobody does anything, from its audit log.

On a disposable control plane of its own whose kube-apiserver writes an audit log of every
service account's requests (tests/cluster/audit.py; never the shared test plane), a workbench
service account runs a real ``jupyter server`` with jupyter_dw and ``--kernels`` kernel
processes (each a ``KernelRuntime`` with live widgets on its asyncio loop, as in a kernel).
Sidebars are stood in for by ``dw/api/events`` WebSockets (what a sidebar holds open; a browser
times five would measure Chromium, not us). Idle windows of ``--seconds`` each:

- **few**: each kernel shows 2 widgets (a ``QueueBoard`` and a ``ClusterStatus``), 1 socket;
- **many**: each kernel shows ``--widgets`` (default 4, the same two kinds), ``--sockets``
  sockets (default 5);
- **none**: as many, after the Ray clusters were deleted: no Workload of the namespace depends
  on Kueue, so its controller is not probed.

in three runs of a server and its kernels (``--connections`` picks): kernels each on its own
connection (``own``: few, many); kernels through the server (``server``, the product's default)
with ``discovery_refresh_interval`` = ``--refresh``, the cadence before (the re-check's
baseline, same run: discovery and Kueue's probe at every re-check; many); and through the
server with the default (few, many, none).

Each session (the server's, and each kernel's on its own connection) re-checks its permissions
every ``access_refresh_interval`` (``--refresh``, default 60 s as the product's): those
requests (the rules review; discovery and the Kueue probe when due; access reviews and the
elastic-jobs dry run when they can say something new) are counted apart from the rest, also
per session and minute.

For each window, from the audit log (user = the workbench's service account): the requests
received in it other than watches (target 0 besides the re-check), the watches opened in it,
and the watches open at its end (target: the same in few and many, whatever the number of
widgets or tabs).

Usage: ``.venv/bin/python -m benchmarks.bench_load [--seconds 60] [--kernels 5] [--widgets 4]
[--sockets 5] [--refresh 60] [--connections own server] [--json FILE] [--smoke]
[--cluster-dir DIR]`` (needs
``make cluster-build``; ``--smoke``: 5 s windows, 2 kernels, checks only that every figure
was measured).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from benchmarks.kernel_process import CLUSTERS, Kernel
from benchmarks.workbench import (
    JupyterServer,
    audited_plane,
    is_session_check,
    pod_environment,
    run_in_temporary_directory,
    team_namespace,
)
from jupyter_dw.names import KERNEL_LINK_ENV
from tests.cluster.audit import AuditedCluster, Request, count, describe, received_between
from tests.cluster.fixtures import WorkbenchIdentity, watch_until
from tests.integration.clusters_support import suspended_raycluster

TIMEOUT = 180.0
CONNECTIONS = ("own", "server")
QUIET_SECONDS = 3.0
"""How long the workbench must have asked nothing but watches and re-checks before the window
without Workloads starts (what deleting them made it ask is not idleness)."""


# -- sockets standing in for sidebars --------------------------------------------------------


async def open_socket(server: JupyterServer) -> WebSocketClientConnection:
    """A sidebar's ``dw/api/events`` socket, once it shows what a sidebar shows: its snapshot,
    then the queue position of each waiting cluster.

    A live view never waits for the visibility API: the server's first socket gets its snapshot
    without positions and reads them in the background, sending them a moment later. That read
    belongs to opening the socket, not to the idle window after it (counted there, it made the
    smoke fail now and then on Kueue 0.14.8, whose visibility answers come later)."""
    request = HTTPRequest(
        f"ws://127.0.0.1:{server.port}/dw/api/events",
        headers={"Authorization": f"token {server.token}"},
    )
    socket = await websocket_connect(request)
    first = await asyncio.wait_for(socket.read_message(), TIMEOUT)
    assert first is not None and json.loads(first)["type"] == "snapshot", first
    clusters = {c["name"]: c for c in json.loads(first)["clusters"]}
    while any(unplaced(c) for c in clusters.values()):
        message = await asyncio.wait_for(socket.read_message(), TIMEOUT)
        assert message is not None, "the events socket closed before its positions came"
        decoded = json.loads(message)
        if decoded.get("type") == "cluster" and decoded.get("state") is not None:
            clusters[decoded["name"]] = decoded["state"]
    return socket


def unplaced(cluster: dict[str, Any]) -> bool:
    """Whether a cluster waits for quota without its queue position yet."""
    return cluster.get("state") == "queued" and cluster.get("position_in_local_queue") is None


async def drain(socket: WebSocketClientConnection, received: Counter[str]) -> None:
    """Read a socket until it closes, counting its messages by type (a sidebar reads them)."""
    while (message := await socket.read_message()) is not None:
        received[json.loads(message).get("type", "?")] += 1


# -- the measurement ------------------------------------------------------------------------


def window(requests: list[Request], start: float, end: float, processes: int) -> dict[str, Any]:
    """What the workbench asked in ``[start, end)`` and which watches were open at ``end``;
    ``processes`` sessions of it re-check (the server, and kernels on their own connection)."""
    inside = received_between(requests, start, end)
    others = [r for r in inside if not r.is_watch]
    watches_open = [r for r in requests if r.is_watch and r.open_at(end)]
    rechecks = sum(1 for r in others if is_session_check(r))
    return {
        "seconds": round(end - start, 1),
        "processes": processes,
        "requests_besides_watches": len(others),
        "recheck_requests": rechecks,
        "recheck_per_process_per_minute": round(rechecks / processes / (end - start) * 60, 2),
        "other_requests": sum(1 for r in others if not is_session_check(r)),
        "requests_besides_watches_by_kind": dict(Counter(kind(r) for r in others)),
        "watches_opened": sum(1 for r in inside if r.is_watch),
        "watches_open_at_end": len(watches_open),
        "watches_open_by_resource": dict(Counter(r.resource for r in watches_open)),
        "_others": others,
    }


def kind(request: Request) -> str:
    """``verb resource``, and whether it was a dry run (every user's counted together)."""
    dry = " (dry run)" if "dryRun=All" in request.uri else ""
    return f"{request.verb} {request.resource}{dry}"


def settled(local_queue: dict[str, Any], workloads: int) -> bool:
    """Whether a LocalQueue's status counts ``workloads`` Workloads, each admitted or waiting."""
    status = local_queue.get("status") or {}
    return (
        int(status.get("admittedWorkloads") or 0) + int(status.get("pendingWorkloads") or 0)
        == workloads
    )


@dataclass(frozen=True)
class Window:
    """One idle window: ``widgets`` per kernel, ``sockets`` open, and whether the namespace's
    Ray clusters (and so their Workloads, which Kueue decides about) are there."""

    name: str
    widgets: int
    sockets: int
    workloads: bool = True


@dataclass(frozen=True)
class Run:
    """One start of a server and its kernels: how the kernels connect (``own`` or through the
    ``server``), their ``discovery_refresh_interval`` (``cadence``) and the windows measured."""

    connection: str
    cadence: float
    windows: tuple[Window, ...]


@dataclass
class Bench:
    """The audited plane, the workbench identity and namespace of one benchmark run."""

    plane: AuditedCluster
    kube: client.ApiClient
    identity: WorkbenchIdentity
    namespace: str
    kueue_version: str
    directory: Path
    args: argparse.Namespace

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.kube)

    def wait_queue_counts(self, workloads: int) -> None:
        """Until LocalQueue ``team`` counts ``workloads`` Workloads: Kueue is done with what
        the setup (or a deletion) changed, so a window measures idleness, not Kueue's late
        writes (changes the processes rightly follow)."""
        watch_until(
            lambda **kw: self.custom.list_namespaced_custom_object(
                "kueue.x-k8s.io", self.kueue_version, self.namespace, "localqueues", **kw
            ),
            lambda lq: settled(lq, workloads),
            what=f"Kueue to count {workloads} Workloads in LocalQueue team",
            field_selector="metadata.name=team",
        )

    def delete_clusters(self) -> None:
        """Delete the Ray clusters; return once their Workloads are gone."""
        for name in CLUSTERS:
            self.custom.delete_namespaced_custom_object(
                "ray.io", "v1", self.namespace, "rayclusters", name
            )
        self.wait_queue_counts(0)
        deadline = time.monotonic() + TIMEOUT
        while self.custom.list_namespaced_custom_object(
            "kueue.x-k8s.io", self.kueue_version, self.namespace, "workloads"
        )["items"]:
            if time.monotonic() > deadline:
                raise TimeoutError("the Ray clusters' Workloads were never deleted")
            # The garbage collector deletes them: no watch event of ours says when it starts.
            time.sleep(0.2)

    async def quiet(self, seconds: float = QUIET_SECONDS) -> None:
        """Until the workbench asked nothing but watches and re-checks for ``seconds``: the
        processes are done reacting to what changed (a deletion's positions read)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            busy = [
                r
                for r in self.plane.audit_log.requests([self.identity.username])
                if not r.is_watch and not is_session_check(r)
            ]
            last = busy[-1].received if busy else 0.0
            if time.time() - last >= seconds:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the workbench never went quiet: {busy[-1]}")
            await asyncio.sleep(0.5)

    async def run(self, run: Run) -> dict[str, Any]:
        """Start a server and the kernels as ``run`` says, measure each window, stop them."""
        args = self.args
        tag = f"{run.connection}-cadence-{run.cadence:g}"
        directory = self.directory / tag
        directory.mkdir(parents=True)
        runtime_dir = directory / "runtime"
        environ = {
            **pod_environment(self.identity),
            "JUPYTER_RUNTIME_DIR": str(runtime_dir),
            "JUPYTER_DW_ACCESS_REFRESH_INTERVAL": str(args.refresh),
            "JUPYTER_DW_DISCOVERY_REFRESH_INTERVAL": str(run.cadence),
        }
        flags = (
            f"--JupyterDW.service_account_dir={self.identity.service_account_dir}",
            f"--JupyterDW.access_refresh_interval={args.refresh}",
            f"--JupyterDW.discovery_refresh_interval={run.cadence}",
        )
        server = JupyterServer(directory, environ, extra_args=flags)
        kernel_environ = dict(environ)
        if run.connection == "server":
            # What a kernel the server starts inherits (these kernels are started here instead).
            kernel_environ[KERNEL_LINK_ENV] = str(runtime_dir / f"jupyter_dw-{server.port}.json")
        else:
            kernel_environ["JUPYTER_DW_KERNELS_THROUGH_SERVER"] = "false"
        # Sessions that re-check: the server's, and each kernel's on its own connection.
        processes = 1 + (args.kernels if run.connection == "own" else 0)
        kernels: list[Kernel] = []
        sockets: list[WebSocketClientConnection] = []
        readers: list[asyncio.Task[None]] = []
        received: Counter[str] = Counter()
        results: dict[str, Any] = {}
        try:
            await asyncio.to_thread(server.wait_answer, "dw/api/queues")
            kernels = [
                Kernel(kernel_environ, directory / f"kernel-{i}.log") for i in range(args.kernels)
            ]
            for spec in run.windows:
                if not spec.workloads:
                    await asyncio.to_thread(self.delete_clusters)
                for kernel in kernels:
                    kernel.add(spec.widgets - kernel.widgets)
                for kernel in kernels:
                    await asyncio.to_thread(kernel.wait_ready)
                while len(sockets) < spec.sockets:
                    sockets.append(await open_socket(server))
                    readers.append(asyncio.create_task(drain(sockets[-1], received)))
                if not spec.workloads:
                    await self.quiet()
                results[spec.name] = await self.idle(run, spec, processes)
            results["socket_messages"] = dict(received)
        finally:
            for socket in sockets:
                socket.close()
            for kernel in kernels:
                await asyncio.to_thread(kernel.stop)
            server.stop()
        return results

    async def idle(self, run: Run, spec: Window, processes: int) -> dict[str, Any]:
        """One idle window of ``--seconds``: its figures, printed and returned."""
        begin = time.time()
        # The measurement is the idle time itself: nothing is waited for here.
        await asyncio.sleep(self.args.seconds)
        end = time.time()
        figures = window(
            self.plane.audit_log.requests([self.identity.username]), begin, end, processes
        )
        others = figures.pop("_others")
        kernels = self.args.kernels
        print(
            f"\n{run.connection}, {spec.name}, discovery_refresh_interval {run.cadence:g}: "
            f"{spec.widgets * kernels} widgets in {kernels} kernels, {spec.sockets} sockets, "
            f"{'with' if spec.workloads else 'without'} Workloads, {figures['seconds']} s idle: "
            f"{figures['requests_besides_watches']} requests besides watches "
            f"({figures['recheck_requests']} of the re-check: "
            f"{figures['recheck_per_process_per_minute']} a minute per session; "
            f"{figures['other_requests']} others), {figures['watches_opened']} watches opened, "
            f"{figures['watches_open_at_end']} watches open at the end"
        )
        if others:
            print(describe(count(others)))
        return {
            **figures,
            "widgets": spec.widgets * kernels,
            "sockets": spec.sockets,
            "workloads": spec.workloads,
            "discovery_refresh_interval": run.cadence,
        }


def runs(args: argparse.Namespace) -> list[Run]:
    """The runs ``--connections`` asks for: kernels on their own connection (the baseline of
    the connections), then through the server with the cadence before (the re-check's
    baseline: ``discovery_refresh_interval`` = ``access_refresh_interval``) and the default,
    whose last window comes after the Ray clusters are deleted."""
    few = Window("few", 2, 1)
    many = Window("many", args.widgets, args.sockets)
    none = Window("none", args.widgets, args.sockets, workloads=False)
    planned = []
    if "own" in args.connections:
        planned.append(Run("own", 0.0, (few, many)))
    if "server" in args.connections:
        planned.append(Run("server", args.refresh, (many,)))
        planned.append(Run("server", 0.0, (few, many, none)))
    return planned


async def measure(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    plane, state, kube, version = audited_plane(args.cluster_dir, directory)
    quota: dict[str, str | dict[str, str]] = {"cpu": "4", "memory": "8Gi"}
    namespace, identity, kueue, cq = team_namespace(
        kube, state, version, "bench-load", directory, quota
    )
    kueue.local_queue("team", cq)
    bench = Bench(plane, kube, identity, namespace, version, directory, args)
    for name in CLUSTERS:
        body = suspended_raycluster(name)
        body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
        bench.custom.create_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", body)
    # Each RayCluster's Workload admitted or waiting before any process starts.
    bench.wait_queue_counts(len(CLUSTERS))
    results: dict[str, Any] = {
        "kernels": args.kernels,
        "access_refresh_interval": args.refresh,
        "connections": {},
    }
    try:
        for run in runs(args):
            measured = await bench.run(run)
            if run.cadence:
                results["before"] = measured["many"]  # the old cadence, kernels on the server
            else:
                results["connections"][run.connection] = measured
    finally:
        if not args.cluster_dir:
            plane.down()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--kernels", type=int, default=5)
    parser.add_argument("--widgets", type=int, default=4, help="per kernel (even, >= 2)")
    parser.add_argument("--sockets", type=int, default=5)
    parser.add_argument(
        "--refresh", type=float, default=60.0, help="access_refresh_interval (s; default 60)"
    )
    parser.add_argument(
        "--connections",
        nargs="+",
        choices=CONNECTIONS,
        default=list(CONNECTIONS),
        help="kernels on their own connection (the baseline) and/or through the server",
    )
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--cluster-dir", help="reuse or keep an audited control plane here")
    parser.add_argument("--smoke", action="store_true", help="tiny: every figure measured")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.kernels, args.widgets, args.sockets = 5.0, 2, 4, 2
    run_in_temporary_directory(measure, args, "dw-bench-load-")


if __name__ == "__main__":
    main()
