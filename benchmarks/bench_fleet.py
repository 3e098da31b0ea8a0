"""The fleet: many workbenches on one API server, what they cost it idle and while clusters
come and go, projected to a thousand, beside codeflare-sdk users waiting on a cluster.

On an audited disposable control plane of its own (tests/cluster/audit.py; never the shared
test plane), ``--fleet`` sizes (default 10, 25, then 50) of workbenches, each in a namespace of its
own: a service account with a workbench's RBAC, a LocalQueue ``team`` on a ClusterQueue of its
own (1 CPU, held by a plain Workload), and a RayCluster ``load-0`` waiting behind it (queue
position 1). Each workbench is a real ``jupyter server`` with jupyter_dw running as that
namespace's service account, ``--kernels`` kernel processes reading through it (each a
``KernelRuntime`` showing a ``QueueBoard`` and a ``ClusterStatus`` of ``load-0``, as
bench_load's kernels) and ``--sockets`` ``dw/api/events`` sockets standing in for sidebars.

At each size, the plane without workbenches first (the baseline, same run), three windows of
``--seconds``:

- **idle**: nobody does anything;
- **churn**: in ``--churn`` of the namespaces a RayCluster is created and deleted every
  ``--period`` seconds (through that workbench's ``POST``/``DELETE dw/api/clusters``; by the
  administrator in the baseline), each namespace's cycle offset from the others'.

- **fan-out**: the administrator changes a ResourceFlavor no queue uses ``--fanout-rate``
  times a second: every workbench watches every flavor, so each change is one watch event per
  workbench and nothing else follows; the API server's CPU per change over the sizes is what
  one more watcher of a cluster-scoped kind costs it per event.

Measured in each window: the workbenches' requests (audit log; besides watches, the
periodic re-check apart), the watches they opened and hold; the API server's CPU seconds,
RSS, heap, goroutines, every client's open watches and the watch events it sent (its
``/metrics``); Kueue's and etcd's CPU and RSS; the Jupyter servers' and kernels' CPU, RSS and
PSS. Then each cost is fitted as fixed + per workbench over the sizes and read at
``--project`` (1,000) workbenches.

codeflare-sdk, at the end (the fleet stopped): ``--codeflare-users`` processes in its own
virtual environment (bench_codeflare's), each as a service account of its own in one of the
namespaces, waiting with ``wait_ready`` on that namespace's waiting ``load-0`` for a window:
its requests per user and minute and the API server's CPU over the baseline, per user, times
the fleet's sizes.

The fleet grows only while the machine has ``--reserve-gib`` available: a size it cannot
reach is measured at the size reached, and the results say so (``capped_at``).

Usage: ``.venv/bin/python -m benchmarks.bench_fleet [--fleet 10 25 50] [--kernels 2]
[--sockets 1] [--seconds 60] [--churn 10] [--period 10] [--fanout-rate 10] [--codeflare-users 20]
[--project 1000] [--json FILE] [--smoke] [--cluster-dir DIR]`` (needs ``make cluster-build``;
``--smoke``: 3 workbenches, 10 s windows, 1 codeflare user: checks only that every figure was
measured).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import concurrent.futures
import contextlib
import dataclasses
import os
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client
from tornado.websocket import WebSocketClientConnection

import jupyter_dw
from benchmarks.apiserver_metrics import ApiServerMetrics, scrape
from benchmarks.bench_codeflare import EXTRA_RULES, HERE, codeflare_python
from benchmarks.bench_load import drain, open_socket, settled, window
from benchmarks.bench_usage import until
from benchmarks.fleet_projection import fit, per_change
from benchmarks.kernel_process import CLUSTERS, Kernel
from benchmarks.process_stats import GroupSample, available_mib, rss_mib, sample
from benchmarks.workbench import (
    JupyterServer,
    audited_plane,
    pod_environment,
    run_in_temporary_directory,
    workbench,
    write_kubeconfig,
)
from jupyter_dw.names import KERNEL_LINK_ENV
from tests.cluster.audit import AuditedCluster, AuditLog
from tests.cluster.controlplane import ClusterState
from tests.cluster.fixtures import (
    KueueObjects,
    WorkbenchIdentity,
    cluster_role_name,
    plain_workload,
)
from tests.cluster.scale import process_cpu_seconds
from tests.integration.clusters_support import suspended_raycluster

TIMEOUT = 600.0
GROUP = "kueue.x-k8s.io"
QUEUE = "team"
SHOWN = CLUSTERS[0]
"""The cluster every kernel's ClusterStatus shows (bench_load's kernels show this name)."""
CODEFLARE_ACCOUNT = "cf-user"
PLANE = ("kube-apiserver", "kueue", "etcd")
"""The plane's processes whose CPU and memory are measured."""
HEAD = {"cpu": "1", "memory": "1Gi"}
"""Every cluster here: a head only, 1 CPU (its ClusterQueue's whole quota, held by a plain
Workload: every cluster waits)."""


# -- the namespaces ----------------------------------------------------------------------------


def queued_cluster(name: str) -> dict[str, Any]:
    """A RayCluster of one head asking :data:`HEAD`, in LocalQueue ``team``."""
    body = suspended_raycluster(name)
    body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": QUEUE}
    container = body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": dict(HEAD), "limits": dict(HEAD)}
    return body


@dataclass
class Plane:
    """The audited plane, an administrator's client and the namespaces made in it."""

    audited: AuditedCluster
    state: ClusterState
    kube: client.ApiClient
    version: str
    kueue: KueueObjects
    fanout_flavor: str = ""
    """A ResourceFlavor no ClusterQueue uses, changed by :func:`fan_out`."""
    namespaces: list[str] = field(default_factory=list)
    identities: dict[str, WorkbenchIdentity] = field(default_factory=dict)
    codeflare: dict[str, WorkbenchIdentity] = field(default_factory=dict)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.kube)

    @property
    def audit_log(self) -> AuditLog:
        return self.audited.audit_log

    def local_queues(self) -> list[dict[str, Any]]:
        wanted = set(self.namespaces)
        listed = self.custom.list_cluster_custom_object(GROUP, self.version, "localqueues")
        return [lq for lq in listed["items"] if lq["metadata"]["namespace"] in wanted]

    def every_queue(self, predicate: Callable[[dict[str, Any]], bool]) -> bool:
        queues = self.local_queues()
        return len(queues) == len(self.namespaces) and all(predicate(lq) for lq in queues)

    def churn_left(self) -> int:
        """RayClusters of a churn window not yet gone."""
        listed = self.custom.list_cluster_custom_object("ray.io", "v1", "rayclusters")
        return sum(
            1
            for rc in listed["items"]
            if rc["metadata"]["namespace"] in self.identities
            and rc["metadata"]["name"].startswith("churn-")
        )


async def make_namespaces(
    plane: Plane,
    prefix: str,
    count: int,
    codeflare_users: int,
    directory: Path,
    extra_cluster_queues: int = 0,
) -> None:
    """``count`` namespaces as the module says, every queue settled: its plain Workload
    admitted, then ``load-0`` waiting behind it (in that order, so which one waits is known)."""
    flavor = plane.kueue.flavor("default")
    plane.fanout_flavor = plane.kueue.flavor("fanout")
    custom = plane.custom
    quota: dict[str, str | dict[str, str]] = {"cpu": HEAD["cpu"], "memory": "4Gi"}
    for index in range(count):
        namespace = f"{prefix}-{index:03d}"
        home = directory / namespace
        home.mkdir(parents=True)
        plane.identities[namespace] = workbench(plane.kube, plane.state, namespace, home)
        if index < codeflare_users:
            plane.codeflare[namespace] = workbench(
                plane.kube, plane.state, namespace, home, CODEFLARE_ACCOUNT, EXTRA_RULES
            )
        cluster_queue = plane.kueue.cluster_queue(f"cq-{index:03d}", {flavor: quota})
        dataclasses.replace(plane.kueue, namespace=namespace).local_queue(QUEUE, cluster_queue)
        custom.create_namespaced_custom_object(
            GROUP,
            plane.version,
            namespace,
            "workloads",
            plain_workload(plane.version, "blocker", QUEUE, HEAD["cpu"]),
        )
        plane.namespaces.append(namespace)
    for index in range(extra_cluster_queues):
        # Other teams' queues: no namespace here points at them, every workbench sees them.
        plane.kueue.cluster_queue(f"other-{index:04d}", {flavor: dict(quota)})
    await until(
        lambda: plane.every_queue(lambda lq: admitted(lq) == 1),
        "Kueue to admit every namespace's plain Workload",
        TIMEOUT,
    )
    for namespace in plane.namespaces:
        custom.create_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", queued_cluster(SHOWN)
        )
    await until(
        lambda: plane.every_queue(lambda lq: settled(lq, 2)),
        f"Kueue to count every namespace's {SHOWN} as waiting",
        TIMEOUT,
    )


def admitted(local_queue: dict[str, Any]) -> int:
    return int((local_queue.get("status") or {}).get("admittedWorkloads") or 0)


def remove_namespaces(plane: Plane) -> None:
    """Delete what :func:`make_namespaces` made (a reused plane keeps running)."""
    rbac = client.RbacAuthorizationV1Api(plane.kube)
    core = client.CoreV1Api(plane.kube)
    for identity in [*plane.identities.values(), *plane.codeflare.values()]:
        role = cluster_role_name(identity.namespace, identity.name)
        with contextlib.suppress(client.ApiException):
            rbac.delete_cluster_role_binding(role)
            rbac.delete_cluster_role(role)
    for namespace in plane.namespaces:
        with contextlib.suppress(client.ApiException):
            core.delete_namespace(namespace)
    plane.kueue.cleanup()


# -- the workbenches ---------------------------------------------------------------------------


@dataclass
class Workbench:
    """One namespace's Jupyter server, its kernels and the sockets standing in for sidebars."""

    identity: WorkbenchIdentity
    server: JupyterServer
    kernels: list[Kernel] = field(default_factory=list)
    sockets: list[WebSocketClientConnection] = field(default_factory=list)
    readers: list[asyncio.Task[None]] = field(default_factory=list)
    received: Counter[str] = field(default_factory=Counter)

    async def stop(self) -> None:
        for socket in self.sockets:
            socket.close()
        for reader in self.readers:
            reader.cancel()
        for kernel in self.kernels:
            await asyncio.to_thread(kernel.stop)
        await asyncio.to_thread(self.server.stop)


async def start_workbench(
    args: argparse.Namespace, identity: WorkbenchIdentity, directory: Path
) -> Workbench:
    """A server as the namespace's service account, its kernels showing their widgets live
    (through the server), its sockets sent their snapshot and positions."""
    directory.mkdir(parents=True)
    runtime_dir = directory / "runtime"
    environ = {**pod_environment(identity), "JUPYTER_RUNTIME_DIR": str(runtime_dir)}
    flags = (
        f"--JupyterDW.service_account_dir={identity.service_account_dir}",
        f"--JupyterDW.access_refresh_interval={args.refresh}",
    )
    server = JupyterServer(directory, environ, extra_args=flags)
    bench = Workbench(identity, server)
    await asyncio.to_thread(server.wait_answer, "dw/api/queues", 200, TIMEOUT)
    # What a kernel the server starts inherits (these kernels are started here instead).
    kernel_environ = {
        **environ,
        KERNEL_LINK_ENV: str(runtime_dir / f"jupyter_dw-{server.port}.json"),
    }
    bench.kernels = [
        Kernel(kernel_environ, directory / f"kernel-{i}.log") for i in range(args.kernels)
    ]
    for kernel in bench.kernels:
        kernel.add(2)  # a QueueBoard and a ClusterStatus of load-0
    for kernel in bench.kernels:
        await asyncio.to_thread(kernel.wait_ready)
    for _ in range(args.sockets):
        bench.sockets.append(await open_socket(server))
        bench.readers.append(asyncio.create_task(drain(bench.sockets[-1], bench.received)))
    return bench


async def grow(
    args: argparse.Namespace,
    plane: Plane,
    fleet: list[Workbench],
    size: int,
    directory: Path,
) -> bool:
    """Start workbenches until ``size`` run, ``--parallel`` at a time, while the machine keeps
    ``--reserve-gib`` available; False when it stopped short."""
    while len(fleet) < size:
        if available_mib() < args.reserve_gib * 1024:
            print(
                f"stopping at {len(fleet)} workbenches: {available_mib():.0f} MiB available",
                flush=True,
            )
            return False
        batch = plane.namespaces[len(fleet) : min(size, len(fleet) + args.parallel)]
        started = await asyncio.gather(
            *(start_workbench(args, plane.identities[ns], directory / "fleet" / ns) for ns in batch)
        )
        fleet.extend(started)
        print(f"{len(fleet)} workbenches running ({available_mib():.0f} MiB available)", flush=True)
    return True


# -- churn -------------------------------------------------------------------------------------


def server_churn(bench: Workbench) -> tuple[Callable[[str], None], Callable[[str], None]]:
    """Create and delete a cluster as its owner would: through the workbench's REST API."""
    server = bench.server

    def create(name: str) -> None:
        body = {
            "name": name,
            "workers": 0,
            "head_cpu": HEAD["cpu"],
            "head_memory": HEAD["memory"],
            "queue": QUEUE,
        }
        status, answer = server.request("dw/api/clusters", TIMEOUT, method="POST", body=body)
        if status != 201:
            raise RuntimeError(f"POST dw/api/clusters {name}: {status} {answer}")

    def delete(name: str) -> None:
        status, answer = server.request(f"dw/api/clusters/{name}", TIMEOUT, method="DELETE")
        if status != 200:
            raise RuntimeError(f"DELETE dw/api/clusters/{name}: {status} {answer}")

    return create, delete


def admin_churn(
    plane: Plane, namespace: str
) -> tuple[Callable[[str], None], Callable[[str], None]]:
    """The same clusters made and deleted by the administrator (the baseline: no workbench)."""
    custom = plane.custom

    def create(name: str) -> None:
        custom.create_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", queued_cluster(name)
        )

    def delete(name: str) -> None:
        custom.delete_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", name)

    return create, delete


async def churn(
    doers: list[tuple[Callable[[str], None], Callable[[str], None]]],
    seconds: float,
    period: float,
) -> int:
    """Each doer creates a cluster every ``period`` s and deletes it half a period later, its
    cycle offset by its index, for ``seconds``; the creates and deletes made. The cadence is
    the load itself: nothing is waited for."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    end = start + seconds

    async def cycle(
        index: int, create: Callable[[str], None], delete: Callable[[str], None]
    ) -> int:
        made = 0
        begin = start + index * period / len(doers)
        for round_ in range(int(seconds / period) + 1):
            at = begin + round_ * period
            if at + period / 2 >= end:
                break
            await asyncio.sleep(max(0.0, at - loop.time()))
            name = f"churn-{round_}"
            await asyncio.to_thread(create, name)
            await asyncio.sleep(max(0.0, at + period / 2 - loop.time()))
            await asyncio.to_thread(delete, name)
            made += 2
        return made

    done = await asyncio.gather(*(cycle(i, *doer) for i, doer in enumerate(doers)))
    await asyncio.sleep(max(0.0, end - loop.time()))
    return sum(done)


async def settle_after_churn(plane: Plane) -> None:
    """Until every churn cluster is gone and every queue counts what it did before."""
    await until(lambda: plane.churn_left() == 0, "the churn clusters to go", TIMEOUT)
    await until(
        lambda: plane.every_queue(lambda lq: settled(lq, 2)),
        "Kueue to count two Workloads in every queue again",
        TIMEOUT,
    )


# -- one window --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Moment:
    """What is read at a window's start and end."""

    at: float
    plane_cpu: dict[str, float | None]
    servers: GroupSample
    kernels: GroupSample
    metrics: ApiServerMetrics
    received: Counter[str]
    """The events messages the sidebars' sockets received so far, by type."""


def moment(plane: Plane, fleet: list[Workbench]) -> Moment:
    return Moment(
        at=time.time(),
        plane_cpu={name: process_cpu_seconds(plane.state.pids[name]) for name in PLANE},
        servers=sample(b.server.process.pid for b in fleet),
        kernels=sample(k.process.pid for b in fleet for k in b.kernels),
        metrics=scrape(plane.kube),
        received=sum((b.received for b in fleet), Counter()),
    )


def measured(
    plane: Plane,
    fleet: list[Workbench],
    users: list[str],
    begin: Moment,
    end: Moment,
    phase: str,
    changes: int = 0,
) -> dict[str, Any]:
    """A window's figures (see the module)."""
    seconds = end.at - begin.at
    # Each user is one session that re-checks (a workbench's server; its kernels read through
    # it), or one codeflare-sdk process; none at all for the plane alone.
    asked = window(plane.audit_log.requests(users), begin.at, end.at, max(len(users), 1))
    asked.pop("_others")
    n = len(fleet)
    figures: dict[str, Any] = {
        "phase": phase,
        "workbenches": n,
        "kernels": sum(len(b.kernels) for b in fleet),
        "changes": changes,
        **asked,
        "seconds": round(seconds, 1),
        "requests_per_minute": round(asked["requests_besides_watches"] * 60 / seconds, 2),
        "requests_per_workbench_minute": (
            round(asked["requests_besides_watches"] * 60 / seconds / n, 3) if n else 0.0
        ),
        "watches_open_per_workbench": round(asked["watches_open_at_end"] / n, 2) if n else 0.0,
    }
    for name in PLANE:
        before, after = begin.plane_cpu[name], end.plane_cpu[name]
        cpu = after - before if before is not None and after is not None else None
        figures[name] = {
            "cpu_seconds": round(cpu, 2) if cpu is not None else None,
            "cores": round(cpu / seconds, 4) if cpu is not None else None,
            "rss_mib": round(rss_mib(plane.state.pids[name]) or 0.0, 1),
        }
    m0, m1 = begin.metrics, end.metrics
    figures["kube-apiserver"].update(
        watches_open=int(m1.watches_open),
        watch_events=int(m1.watch_events - m0.watch_events),
        watch_event_mib=round((m1.watch_event_bytes - m0.watch_event_bytes) / 2**20, 2),
        goroutines=int(m1.goroutines),
        heap_inuse_mib=round(m1.heap_inuse_bytes / 2**20, 1),
    )
    for group, key in (("servers", "jupyter_servers"), ("kernels", "kernel_processes")):
        a, b = getattr(begin, group), getattr(end, group)
        figures[key] = {
            "processes": b.processes,
            "cpu_seconds": round(b.cpu_seconds - a.cpu_seconds, 2),
            "rss_mib": round(b.rss_mib, 1),
            "pss_mib": round(b.pss_mib, 1),
        }
    received = sum((b.received for b in fleet), Counter()) - begin.received
    figures["sidebar_messages"] = sum(received.values())
    figures["sidebar_messages_by_type"] = dict(received)
    return figures


async def measure_size(
    args: argparse.Namespace, plane: Plane, fleet: list[Workbench]
) -> dict[str, Any]:
    """The idle and churn windows at the fleet's current size."""
    users = [b.identity.username for b in fleet]
    begin = moment(plane, fleet)
    # The measurement is the idle time itself: nothing is waited for here.
    await asyncio.sleep(args.seconds)
    idle = measured(plane, fleet, users, begin, moment(plane, fleet), "idle")
    report(idle)
    churners = fleet[: args.churn] if fleet else []
    doers = (
        [server_churn(b) for b in churners]
        if churners
        else [admin_churn(plane, ns) for ns in plane.namespaces[: args.churn]]
    )
    begin = moment(plane, fleet)
    changes = await churn(doers, args.seconds, args.period)
    busy = measured(plane, fleet, users, begin, moment(plane, fleet), "churn", changes)
    busy["churning"] = len(doers)
    report(busy)
    await settle_after_churn(plane)
    begin = moment(plane, fleet)
    ticks = await fan_out(plane, args.seconds, args.fanout_rate)
    spread = measured(plane, fleet, users, begin, moment(plane, fleet), "fanout", ticks)
    report(spread)
    return {"idle": idle, "churn": busy, "fanout": spread}


async def fan_out(plane: Plane, seconds: float, rate: float) -> int:
    """The administrator changes a ResourceFlavor that no queue uses ``rate`` times a second
    for ``seconds``: every workbench watches every flavor, so each change is one watch event
    per workbench, and nothing else follows (no queue, no Workload, no position moves). The
    API server's CPU per change over the sizes is what one more watcher of a cluster-scoped
    kind costs it per event. The cadence is the load: nothing is waited for."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    custom = plane.custom
    done = 0
    # Bounded by the clock, not by a count: a machine too busy to keep the cadence makes
    # fewer changes in the same window (each figure is per change).
    while (at := start + done / rate) < start + seconds and loop.time() < start + seconds:
        await asyncio.sleep(max(0.0, at - loop.time()))
        body = {"metadata": {"annotations": {"bench.jupyter-dw/tick": str(done)}}}
        await asyncio.to_thread(
            custom.patch_cluster_custom_object,
            GROUP,
            plane.version,
            "resourceflavors",
            plane.fanout_flavor,
            body,
        )
        done += 1
    await asyncio.sleep(max(0.0, start + seconds - loop.time()))
    return done


def report(figures: dict[str, Any]) -> None:
    api = figures["kube-apiserver"]
    print(
        f"\n{figures['workbenches']} workbenches, {figures['phase']}, {figures['seconds']} s"
        f"{', ' + str(figures['changes']) + ' changes' if figures['changes'] else ''}: "
        f"{figures['requests_besides_watches']} requests besides watches "
        f"({figures['recheck_requests']} of the re-check), "
        f"{figures['watches_open_at_end']} watches open ({figures['watches_opened']} opened); "
        f"API server {api['cores']} cores, {api['rss_mib']} MiB RSS, "
        f"{api['watches_open']} watches of every client, {api['watch_events']} watch events; "
        f"Kueue {figures['kueue']['cores']} cores; servers {figures['jupyter_servers']['pss_mib']} "
        f"MiB PSS, kernels {figures['kernel_processes']['pss_mib']} MiB PSS",
        flush=True,
    )
    if figures["other_requests"]:
        print(f"  others: {figures['requests_besides_watches_by_kind']}", flush=True)


# -- codeflare-sdk users -----------------------------------------------------------------------


async def measure_codeflare(
    args: argparse.Namespace, plane: Plane, python: Path, directory: Path
) -> dict[str, Any]:
    """``--codeflare-users`` processes waiting on their namespace's ``load-0`` together for a
    window of ``--seconds`` (they start together; the window opens once all wait)."""
    # The plane alone again, just before: what the users add is measured against it.
    alone_begin = moment(plane, [])
    await asyncio.sleep(args.seconds)
    alone = measured(plane, [], [], alone_begin, moment(plane, []), "alone")
    report(alone)
    processes = []
    for namespace, identity in plane.codeflare.items():
        kubeconfig = write_kubeconfig(identity, directory / f"{namespace}-cf.kubeconfig")
        environ = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ["HOME"],
            "KUBECONFIG": str(kubeconfig),
        }
        wait = int(args.seconds) + 30  # past the window: it must still be waiting at its end
        processes.append(
            subprocess.Popen(
                [str(python), str(HERE / "codeflare_wait.py"), namespace, SHOWN, str(wait)],
                env=environ,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        for process in processes:
            assert process.stdout is not None
            line = await asyncio.to_thread(process.stdout.readline)
            if "waiting" not in line:
                _, err = process.communicate(timeout=60)
                raise RuntimeError(f"codeflare_wait.py failed: {line}\n{err[-3000:]}")
        begin = moment(plane, [])
        await asyncio.sleep(args.seconds)
        end = moment(plane, [])
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)
    users = [identity.username for identity in plane.codeflare.values()]
    figures = measured(plane, [], users, begin, end, "codeflare")
    figures["users"] = len(users)
    figures["baseline"] = alone
    minutes = figures["seconds"] / 60
    figures["requests_per_user_minute"] = round(
        figures["requests_besides_watches"] / minutes / len(users), 2
    )
    report(figures)
    return figures


# -- the projection ----------------------------------------------------------------------------


IDLE_LINES: dict[str, Callable[[dict[str, Any]], float]] = {
    "requests_per_minute": lambda w: w["requests_per_minute"],
    "watches_open": lambda w: w["watches_open_at_end"],
    "apiserver_watches_open": lambda w: w["kube-apiserver"]["watches_open"],
    "apiserver_cores": lambda w: w["kube-apiserver"]["cores"],
    "apiserver_rss_mib": lambda w: w["kube-apiserver"]["rss_mib"],
    "apiserver_goroutines": lambda w: w["kube-apiserver"]["goroutines"],
    "kueue_cores": lambda w: w["kueue"]["cores"],
    "etcd_cores": lambda w: w["etcd"]["cores"],
    "workbench_pss_mib": lambda w: (
        w["jupyter_servers"]["pss_mib"] + w["kernel_processes"]["pss_mib"]
    ),
}
"""Idle costs, each a line over the sizes (the plane alone at 0)."""
CHURN_LINES: dict[str, Callable[[dict[str, Any]], float]] = {
    "apiserver_cpu_ms_per_change": lambda w: w["kube-apiserver"]["cpu_seconds"] * 1000,
    "kueue_cpu_ms_per_change": lambda w: w["kueue"]["cpu_seconds"] * 1000,
    "watch_events_per_change": lambda w: w["kube-apiserver"]["watch_events"],
    "watch_event_kib_per_change": lambda w: w["kube-apiserver"]["watch_event_mib"] * 1024,
}
FANOUT_LINES: dict[str, Callable[[dict[str, Any]], float]] = {
    "apiserver_cpu_ms_per_flavor_change": lambda w: w["kube-apiserver"]["cpu_seconds"] * 1000,
    "watch_events_per_flavor_change": lambda w: w["kube-apiserver"]["watch_events"],
    "servers_cpu_ms_per_flavor_change": lambda w: w["jupyter_servers"]["cpu_seconds"] * 1000,
}
"""What one change of a cluster-scoped object every workbench watches costs over idling, a
line over every size: the slope is one watcher's share, one event each."""
"""What each change costs over idling, a line over the sizes with workbenches: the same
namespaces churn at each, so the slope is what one more workbench watching adds (the fan-out)
and the fixed part what the change and its churning workbench cost."""


def _line(points: list[tuple[float, float]], n: int) -> dict[str, Any]:
    ln = fit(points)
    se = ln.per_workbench_se
    return {
        "fixed": round(ln.fixed, 4),
        "per_workbench": round(ln.per_workbench, 5),
        "per_workbench_se": round(se, 5) if se is not None else None,
        "within_noise": ln.within_noise,
        "at": round(ln.at(n), 2),
        "at_most": round(ln.at_most(n), 2),
        "worst_residual": round(ln.worst_residual, 4),
        "points": [[x, round(y, 4)] for x, y in ln.points],
    }


def over_idle(
    read: Callable[[dict[str, Any]], float], size: dict[str, Any], phase: str = "churn"
) -> float:
    """A window's ``read`` less the same seconds idle, per change."""
    idle, busy = size["idle"], size[phase]
    return per_change(read(busy), read(idle) / idle["seconds"], busy["seconds"], busy["changes"])


def project(
    sizes: list[dict[str, Any]], codeflare: dict[str, Any] | None, n: int
) -> dict[str, Any]:
    """Each cost's line (fixed + per workbench) and its value at ``n`` workbenches; during
    churn, the API server's cores at the measured rate of changes; for codeflare-sdk, one
    user's cost times ``n`` and times each measured size."""
    lines = {
        name: _line([(s["idle"]["workbenches"], read(s["idle"])) for s in sizes], n)
        for name, read in IDLE_LINES.items()
    }
    with_fleet = [s for s in sizes if s["churn"]["workbenches"]]
    # One size only (the smoke run): the plane alone is the line's other point.
    churned = with_fleet if len(with_fleet) >= 2 else sizes
    for name, read in CHURN_LINES.items():
        lines[name] = _line([(s["churn"]["workbenches"], over_idle(read, s)) for s in churned], n)
    for name, read in FANOUT_LINES.items():
        points = [(s["fanout"]["workbenches"], over_idle(read, s, "fanout")) for s in sizes]
        lines[name] = _line(points, n)
    last = sizes[-1]["churn"]
    rate = last["changes"] / last["seconds"]
    # A change at n workbenches: what it costs the plane and its churning workbench (the churn
    # line's fixed part; its own slope is lost in the noise of a few sizes), plus one event to
    # each workbench per event it sends them, each costing what the flavor changes measured
    # per watcher (read two standard errors high when that slope is within its noise).
    fan = lines["apiserver_cpu_ms_per_flavor_change"]
    per_event = fan["per_workbench"]
    if fan["within_noise"] and fan["per_workbench_se"] is not None:
        per_event = max(per_event, 0.0) + 2 * fan["per_workbench_se"]
    events = lines["watch_events_per_change"]["per_workbench"]
    idle = lines["apiserver_cores"]
    idle_cores = max(idle["at_most"], idle["fixed"]) if idle["within_noise"] else idle["at"]
    change_ms = lines["apiserver_cpu_ms_per_change"]["fixed"] + events * n * per_event
    result: dict[str, Any] = {
        "workbenches": n,
        "lines": lines,
        "changes_per_second": round(rate, 3),
        "apiserver_ms_per_change": round(change_ms, 1),
        "apiserver_cores_churning": round(idle_cores + rate * change_ms / 1000, 2),
        "requests_per_change": {
            str(s["churn"]["workbenches"]): round(
                over_idle(lambda w: w["requests_besides_watches"], s), 2
            )
            for s in with_fleet
        },
    }
    if codeflare is not None:
        baseline = codeflare["baseline"]
        users = codeflare["users"]
        extra_cores = codeflare["kube-apiserver"]["cores"] - baseline["kube-apiserver"]["cores"]
        per_user = {
            "requests_per_minute": codeflare["requests_besides_watches"]
            * 60
            / codeflare["seconds"]
            / users,
            "apiserver_cores": extra_cores / users,
        }
        counts = sorted({s["idle"]["workbenches"] for s in with_fleet} | {n})
        result["codeflare"] = {
            "per_user": {k: round(v, 5) for k, v in per_user.items()},
            "at": {
                str(count): {k: round(v * count, 3) for k, v in per_user.items()}
                for count in counts
            },
        }
    return result


def print_projection(projection: dict[str, Any]) -> None:
    n = projection["workbenches"]
    print(f"\nprojected to {n} workbenches (fixed + per workbench x {n}):")
    for name, ln in projection["lines"].items():
        se = f" +- {ln['per_workbench_se']:.5f}" if ln["per_workbench_se"] is not None else ""
        noise = ", within the noise" if ln["within_noise"] else ""
        print(
            f"  {name:30s} {ln['fixed']:>12.3f} + {ln['per_workbench']:>10.5f}{se} x n = "
            f"{ln['at']:>12.2f}, at most {ln['at_most']:.2f} "
            f"(worst residual {ln['worst_residual']}{noise})"
        )
    print(
        f"  API server per change: {projection['apiserver_ms_per_change']} ms; cores while "
        f"{projection['changes_per_second']} changes/s: "
        f"{projection['apiserver_cores_churning']}; requests per change, by size: "
        f"{projection['requests_per_change']}"
    )
    if "codeflare" in projection:
        cf = projection["codeflare"]
        print(f"codeflare-sdk users waiting on a cluster, per user: {cf['per_user']}")
        for count, figures in cf["at"].items():
            print(f"  at {count}: {figures}")


# -- the run -----------------------------------------------------------------------------------


async def measure(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    # As installing the wheel does: a machine with PYTHONDONTWRITEBYTECODE would otherwise
    # compile jupyter_dw from source in each of the hundred processes.
    compileall.compile_dir(Path(jupyter_dw.__file__).parent, quiet=1)
    loop = asyncio.get_running_loop()
    # Every blocking wait (a server's first answer, a kernel's "ready", a REST call) takes a
    # thread: the default pool's few would serialise a batch of starting workbenches.
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(64))
    audited, state, kube, version = audited_plane(args.cluster_dir, directory)
    prefix = f"fleet-{uuid.uuid4().hex[:4]}"
    kueue = KueueObjects(kube, version, "default", prefix=prefix)
    plane = Plane(audited, state, kube, version, kueue)
    most = max(args.fleet)
    python, cf_version = codeflare_python() if args.codeflare_users else (None, "")
    results: dict[str, Any] = {
        "kernels_per_workbench": args.kernels,
        "sockets_per_workbench": args.sockets,
        "access_refresh_interval": args.refresh,
        "churn_namespaces": args.churn,
        "churn_period": args.period,
        "extra_cluster_queues": args.cluster_queues,
        "kueue": state.versions.get("kueue"),
        "sizes": [],
    }
    fleet: list[Workbench] = []
    try:
        started = time.monotonic()
        await make_namespaces(
            plane, prefix, most, args.codeflare_users, directory, args.cluster_queues
        )
        print(f"{most} namespaces made and settled in {time.monotonic() - started:.1f} s")
        results["sizes"].append(await measure_size(args, plane, fleet))
        for size in sorted(args.fleet):
            started = time.monotonic()
            reached = await grow(args, plane, fleet, size, directory)
            print(f"grew to {len(fleet)} in {time.monotonic() - started:.1f} s", flush=True)
            if fleet and len(fleet) > results["sizes"][-1]["idle"]["workbenches"]:
                results["sizes"].append(await measure_size(args, plane, fleet))
            if not reached:
                results["capped_at"] = len(fleet)
                break
        for bench in fleet:
            await bench.stop()
        fleet = []
        if python is not None:
            results["codeflare_sdk_version"] = cf_version
            results["codeflare"] = await measure_codeflare(args, plane, python, directory)
        elif args.codeflare_users:
            results["codeflare_sdk_blocked"] = cf_version
    finally:
        for bench in fleet:
            await bench.stop()
        if args.cluster_dir:
            remove_namespaces(plane)
        else:
            audited.down()
    results["projection"] = project(results["sizes"], results.get("codeflare"), args.project)
    print_projection(results["projection"])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--fleet",
        type=int,
        nargs="+",
        default=[10, 25, 50],
        help="workbench counts measured, in order (the plane alone first)",
    )
    parser.add_argument("--kernels", type=int, default=2, help="per workbench")
    parser.add_argument("--sockets", type=int, default=1, help="sidebars per workbench")
    parser.add_argument("--seconds", type=float, default=60.0, help="each window")
    parser.add_argument("--churn", type=int, default=10, help="namespaces that churn")
    period = "s between a namespace's creates (each deleted half-way)"
    parser.add_argument("--period", type=float, default=10.0, help=period)
    refresh = "access_refresh_interval (s; default 60 as the product's)"
    parser.add_argument("--refresh", type=float, default=60.0, help=refresh)
    parser.add_argument(
        "--fanout-rate",
        type=float,
        default=10.0,
        help="flavor changes per second (each costs every Jupyter server ~3 ms of CPU: 50 "
        "servers at 10/s keep 1.5 of this machine's 2 cores busy)",
    )
    parser.add_argument("--codeflare-users", type=int, default=20)
    parser.add_argument(
        "--cluster-queues",
        type=int,
        default=0,
        help="other teams' ClusterQueues besides the workbenches' own (every workbench sees "
        "them: what a cluster-scoped change costs each server grows with them)",
    )
    parser.add_argument("--project", type=int, default=1000, help="workbenches projected to")
    parser.add_argument("--parallel", type=int, default=5, help="workbenches started at once")
    reserve = "stop growing when the machine has less available"
    parser.add_argument("--reserve-gib", type=float, default=2.0, help=reserve)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--cluster-dir", help="reuse or keep an audited control plane here")
    parser.add_argument("--smoke", action="store_true", help="tiny: every figure measured")
    args = parser.parse_args()
    if args.smoke:
        args.fleet, args.seconds, args.churn, args.period = [3], 10.0, 2, 4.0
        args.codeflare_users = 1
    run_in_temporary_directory(measure, args, "dw-bench-fleet-")


if __name__ == "__main__":
    main()
