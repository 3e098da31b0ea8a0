"""What usage and the idle rule cost: API requests per minute from the audit log, Ray calls per
cluster per minute, with ``--clusters`` ready clusters shown in ``--sockets`` tabs.

On a disposable control plane of its own whose kube-apiserver writes an audit log of every
service account's requests (tests/cluster/audit.py; never the shared test plane, which has
metrics-server too), a workbench service account with the RBAC of ``examples/rbac/`` (it may
``list pods.metrics.k8s.io``) runs a real ``jupyter server`` with jupyter_dw. ``--clusters``
RayClusters made through that server's ``POST dw/api/clusters`` (so they are this
workbench's owner's) are admitted by a queue with room for all and their KWOK pods ready.
Every cluster's Ray is the test bed's stand-in (tests/cluster/ray_standin.py): one real Ray
head behind a gateway that routes ``/<cluster>/...`` to it, the server's ``ray_dashboard_url``
set to the gateway's template, so the product's Ray calls are real HTTP calls; the gateway
counts them per cluster (:class:`tests.cluster.ray_gateway.RequestCount`). Sidebar tabs are
stood in for by ``dw/api/events`` WebSockets (what a sidebar holds open).

Three configurations, each a fresh server with the same clusters and sockets, each measured
for ``--seconds`` once its sockets are open (and, with usage on, once its first sample has
asked every cluster's Ray):

- **off**: ``usage_interval = 0`` (the baseline, same run);
- **usage**: ``usage_interval = --interval`` (15 s, the product's default);
- **rule**: the same and the idle rule on (``idle_cluster_timeout = 3600``: it never acts
  here; ``idle_cluster_only_when_others_wait`` its default).

From the audit log (user = the workbench's service account), requests received per minute
besides watches, split into metrics.k8s.io pods lists, the session's periodic re-check
(``access_refresh_interval``, 60 s) and the others (by verb and resource); the watches opened
in the window counted apart. From the gateway: Ray calls per cluster per minute. From the
sockets: cluster messages each was sent per minute (one per change a reader sees).

Usage: ``.venv/bin/python -m benchmarks.bench_usage [--seconds 60] [--clusters 50]
[--sockets 5] [--interval 15] [--json FILE] [--smoke] [--cluster-dir DIR] [--work-dir DIR]``
(needs the test bed's binaries and its Ray virtualenv; ``--smoke``: 6 s windows, 5 clusters, a
2 s interval, checks only that every figure was measured).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client
from tornado.websocket import WebSocketClientConnection

from benchmarks.bench_load import drain, open_socket, settled
from benchmarks.workbench import JupyterServer, audited_plane, is_session_check, pod_environment
from tests.cluster.audit import AuditedCluster, Request, count, describe, received_between
from tests.cluster.fixtures import KueueObjects, make_workbench, watch_until
from tests.cluster.ray_standin import RayStandIn, ray_standin
from tests.integration.rbac_examples import CLUSTER_ROLE_FILE, ROLE_FILE, example_objects

TIMEOUT = 600.0
SETTLE = 2.0
"""Seconds after the sockets are open (and the first sample) before a window starts."""
RAY_CALLS_PER_READ = 3  # cluster status, jobs, live actors (core/ray_jobs.py: load)
METRICS_PATH = "/apis/metrics.k8s.io/"
IDLE_TIMEOUT = 3600.0

CONFIGS: tuple[tuple[str, str], ...] = (
    ("off", "usage off (`usage_interval = 0`): baseline"),
    ("usage", "usage on"),
    ("rule", "usage on + idle rule (`idle_cluster_timeout = 3600`)"),
)


def cluster_names(clusters: int) -> list[str]:
    return [f"use-{i:02d}" for i in range(clusters)]


def server_flags(
    name: str, identity_dir: Path, ray: RayStandIn, interval: float
) -> tuple[str, ...]:
    flags = [
        f"--JupyterDW.service_account_dir={identity_dir}",
        f"--JupyterDW.ray_dashboard_url={ray.dashboard_template}",
        f"--JupyterDW.usage_interval={0 if name == 'off' else interval:g}",
    ]
    if name == "rule":
        flags.append(f"--JupyterDW.idle_cluster_timeout={IDLE_TIMEOUT:g}")
    return tuple(flags)


def is_metrics(request: Request) -> bool:
    return request.uri.startswith(METRICS_PATH)


def per_minute(n: int, seconds: float) -> float:
    return round(n * 60.0 / seconds, 2)


def window(requests: list[Request], start: float, end: float) -> dict[str, Any]:
    """What the workbench asked in ``[start, end)``, per minute and by kind."""
    seconds = end - start
    inside = received_between(requests, start, end)
    others = [r for r in inside if not r.is_watch]
    metrics = [r for r in others if is_metrics(r)]
    recheck = [r for r in others if not is_metrics(r) and is_session_check(r)]
    rest = [r for r in others if not is_metrics(r) and not is_session_check(r)]
    gaps = [b.received - a.received for a, b in itertools.pairwise(metrics)]
    return {
        "seconds": round(seconds, 1),
        "requests": len(others),
        "metrics_requests": len(metrics),
        "recheck_requests": len(recheck),
        "other_requests": len(rest),
        "requests_per_minute": per_minute(len(others), seconds),
        "metrics_per_minute": per_minute(len(metrics), seconds),
        "recheck_per_minute": per_minute(len(recheck), seconds),
        "others_per_minute": per_minute(len(rest), seconds),
        "metrics_interval_s": round(sum(gaps) / len(gaps), 2) if gaps else None,
        "others_by_kind": {
            f"{verb} {resource}": n for (_, verb, resource), n in count(rest).items()
        },
        "watches_opened": sum(1 for r in inside if r.is_watch),
        "watches_open_at_end": sum(1 for r in requests if r.is_watch and r.open_at(end)),
        "_others": [*metrics, *rest],
    }


def ray_figures(
    before: Counter[str], after: Counter[str], names: list[str], seconds: float
) -> dict[str, Any]:
    """Ray calls the gateway received per cluster between two snapshots."""
    calls = [after[n] - before[n] for n in names]
    return {
        "ray_calls": sum(calls),
        "ray_calls_per_cluster_per_minute": round(sum(calls) / len(names) * 60.0 / seconds, 2),
        "ray_calls_per_cluster_min": min(calls),
        "ray_calls_per_cluster_max": max(calls),
        "ray_calls_elsewhere": sum(after.values()) - sum(before.values()) - sum(calls),
    }


async def until(predicate: Any, what: str, timeout: float = TIMEOUT, step: float = 0.5) -> None:
    """Wait for something nothing here announces, polling, bounded in time."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(predicate):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        await asyncio.sleep(step)


def heads_ready(custom: client.CustomObjectsApi, namespace: str, names: list[str]) -> bool:
    listed = custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")
    ready = {
        rc["metadata"]["name"]
        for rc in listed["items"]
        if any(
            c.get("type") == "HeadPodReady" and c.get("status") == "True"
            for c in (rc.get("status") or {}).get("conditions") or []
        )
    }
    return ready >= set(names)


async def run_config(
    name: str,
    args: argparse.Namespace,
    directory: Path,
    environ: dict[str, str],
    identity_dir: Path,
    username: str,
    ray: RayStandIn,
    names: list[str],
    plane: AuditedCluster,
) -> dict[str, Any]:
    flags = server_flags(name, identity_dir, ray, args.interval)
    server = JupyterServer(directory, environ, extra_args=flags, log_name=f"server-{name}.log")
    sockets: list[WebSocketClientConnection] = []
    readers: list[asyncio.Task[None]] = []
    received: Counter[str] = Counter()
    try:
        await asyncio.to_thread(server.wait_answer, "dw/api/queues", 200, TIMEOUT)
        started = ray.requests.snapshot()
        for _ in range(args.sockets):
            sockets.append(await open_socket(server))
            readers.append(asyncio.create_task(drain(sockets[-1], received)))
        if name != "off":
            # The first sample asks every cluster's Ray: the window measures the steady state.
            await until(
                lambda: all(
                    ray.requests.snapshot()[n] - started[n] >= RAY_CALLS_PER_READ for n in names
                ),
                f"{name}: the first sample to ask every cluster's Ray",
            )
        await asyncio.sleep(SETTLE)
        before = ray.requests.snapshot()
        sent_before = Counter(received)
        begin = time.time()
        # The measurement is the time itself: nothing is waited for here.
        await asyncio.sleep(args.seconds)
        end = time.time()
        after = ray.requests.snapshot()
        sent = Counter(received)
        sent.subtract(sent_before)
        figures = window(plane.audit_log.requests([username]), begin, end)
        others = figures.pop("_others")
        figures.update(ray_figures(before, after, names, end - begin))
        # What each tab was sent in the window: a cluster message per change a reader sees.
        figures["messages_in_window"] = {kind: n for kind, n in sent.items() if n}
        figures["cluster_messages_per_socket_per_minute"] = per_minute(
            sent["cluster"], (end - begin) * len(sockets)
        )
        # What the configuration did, as the product says it (after the window: not counted).
        status, shown = await asyncio.to_thread(server.request, f"dw/api/clusters/{names[0]}")
        assert status == 200, shown
        usage = shown.get("usage")
        figures["usage_shown"] = usage is not None
        figures["idle_action_shown"] = bool(usage and usage.get("idle_action"))
        expected = {"off": (False, False), "usage": (True, False), "rule": (True, True)}[name]
        if (figures["usage_shown"], figures["idle_action_shown"]) != expected:
            raise RuntimeError(f"{name}: the server shows usage {usage}; see {server.log_path}")
        if name == "rule" and "idle rule on" not in server.log_path.read_text():
            raise RuntimeError(f"the idle rule is not on; see {server.log_path}")
        figures["socket_messages"] = dict(received)
        print(
            f"\n{name}: {figures['seconds']} s, {len(names)} clusters, {len(sockets)} sockets: "
            f"{figures['requests_per_minute']} requests/min besides watches "
            f"(metrics {figures['metrics_per_minute']}, re-check {figures['recheck_per_minute']}, "
            f"others {figures['others_per_minute']}), {figures['watches_opened']} watches "
            f"opened, {figures['watches_open_at_end']} open; "
            f"{figures['cluster_messages_per_socket_per_minute']} cluster messages per socket "
            "per minute; Ray "
            f"{figures['ray_calls_per_cluster_per_minute']} calls per cluster per minute "
            f"({figures['ray_calls_per_cluster_min']}-{figures['ray_calls_per_cluster_max']} "
            "per cluster in the window)",
            flush=True,
        )
        if others:
            print(describe(count(others)), flush=True)
        return figures
    finally:
        for socket in sockets:
            socket.close()
        for reader in readers:
            reader.cancel()
        server.stop()


async def make_clusters(
    args: argparse.Namespace,
    directory: Path,
    environ: dict[str, str],
    identity_dir: Path,
    ray: RayStandIn,
    names: list[str],
) -> None:
    """The clusters, made through a server of their own (usage off) as the owner would."""
    flags = server_flags("off", identity_dir, ray, args.interval)
    server = JupyterServer(directory, environ, extra_args=flags, log_name="server-setup.log")
    try:
        await asyncio.to_thread(server.wait_answer, "dw/api/queues", 200, TIMEOUT)
        for name in names:
            body = {
                "name": name,
                "workers": 0,
                "head_cpu": "1",
                "head_memory": "1Gi",
                "queue": "team",
            }
            status, made = await asyncio.to_thread(
                server.request, "dw/api/clusters", TIMEOUT, method="POST", body=body
            )
            if status != 201:
                raise RuntimeError(f"POST dw/api/clusters {name}: {status} {made}")
    finally:
        server.stop()


async def measure(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    plane, state, kube, version = audited_plane(args.cluster_dir, directory)
    namespace = f"bench-usage-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(kube).create_namespace({"metadata": {"name": namespace}})
    account = "workbench"
    role, cluster_role = (
        next(obj for obj in example_objects(file, namespace, account) if "rules" in obj)["rules"]
        for file in (ROLE_FILE, CLUSTER_ROLE_FILE)
    )
    identity = make_workbench(kube, state, namespace, directory, role, cluster_role, account)
    kueue = KueueObjects(kube, version, namespace, prefix=namespace)
    flavor = kueue.flavor("default")
    room = {"cpu": str(args.clusters + 2), "memory": f"{args.clusters + 2}Gi"}
    cq = kueue.cluster_queue("cq", {flavor: room})
    kueue.wait_active("clusterqueues", cq)
    kueue.wait_active("localqueues", kueue.local_queue("team", cq))
    names = cluster_names(args.clusters)
    custom = client.CustomObjectsApi(kube)
    environ = pod_environment(identity)
    results: dict[str, Any] = {
        "clusters": args.clusters,
        "sockets": args.sockets,
        "usage_interval": args.interval,
        "idle_cluster_timeout": IDLE_TIMEOUT,
        "access_refresh_interval": 60.0,
        "ray_calls_counted_at": "the stand-in's gateway (tests/cluster/ray_gateway.py)",
        "configs": {},
    }
    try:
        started = time.monotonic()
        with ray_standin(kube, namespace) as ray:
            print(f"Ray stand-in ready in {time.monotonic() - started:.1f} s", flush=True)
            started = time.monotonic()
            await make_clusters(args, directory, environ, identity.service_account_dir, ray, names)
            await until(
                lambda: heads_ready(custom, namespace, names),
                f"every one of {len(names)} clusters' head ready",
                step=1.0,
            )
            # Kueue done with the setup's Workloads before any window (its late status writes
            # are changes the server rightly follows, not idleness).
            watch_until(
                lambda **kw: custom.list_namespaced_custom_object(
                    "kueue.x-k8s.io", version, namespace, "localqueues", **kw
                ),
                lambda lq: settled(lq, len(names)),
                what="Kueue to count every RayCluster's Workload in LocalQueue team",
                field_selector="metadata.name=team",
            )
            print(
                f"{len(names)} clusters made and ready in {time.monotonic() - started:.1f} s",
                flush=True,
            )
            for name, _ in CONFIGS:
                results["configs"][name] = await run_config(
                    name,
                    args,
                    directory,
                    environ,
                    identity.service_account_dir,
                    identity.username,
                    ray,
                    names,
                    plane,
                )
    finally:
        if not args.cluster_dir:
            plane.down()
    print_table(results)
    return results


def print_table(results: dict[str, Any]) -> None:
    print(
        f"\n{results['clusters']} clusters, {results['sockets']} sockets, usage_interval "
        f"{results['usage_interval']:g} s"
    )
    print(
        f"{'configuration':12s} {'window':>7s} {'req/min':>8s} {'metrics':>8s} {'re-check':>9s} "
        f"{'others':>7s} {'watches':>8s} {'Ray/cluster/min':>16s} {'msgs/tab/min':>13s}"
    )
    for name, _ in CONFIGS:
        c = results["configs"][name]
        print(
            f"{name:12s} {c['seconds']:6.1f}s {c['requests_per_minute']:8.2f} "
            f"{c['metrics_per_minute']:8.2f} {c['recheck_per_minute']:9.2f} "
            f"{c['others_per_minute']:7.2f} {c['watches_opened']:8d} "
            f"{c['ray_calls_per_cluster_per_minute']:16.2f} "
            f"{c['cluster_messages_per_socket_per_minute']:13.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--sockets", type=int, default=5)
    parser.add_argument("--interval", type=float, default=15.0, help="usage_interval (s)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--cluster-dir", help="reuse or keep an audited control plane here")
    parser.add_argument("--work-dir", help="keep the servers' logs here (default: removed)")
    parser.add_argument("--smoke", action="store_true", help="tiny: every figure measured")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.clusters, args.sockets, args.interval = 6.0, 5, 2, 2.0
    if args.work_dir:
        Path(args.work_dir).mkdir(parents=True, exist_ok=True)
        results = asyncio.run(measure(args, Path(args.work_dir)))
    else:
        with tempfile.TemporaryDirectory(prefix="dw-bench-usage-") as tmp:
            results = asyncio.run(measure(args, Path(tmp)))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
