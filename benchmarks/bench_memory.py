"""How much memory the watch caches of 5,000 Workloads and their pods take.

On the local control plane (started if needed): the scale fixture (tests/cluster/scale.py,
``--queues`` LocalQueues on ``--cluster-queues`` ClusterQueues, ``--workloads`` Workloads that
Kueue queues or admits) and, in the same namespace, one pod per Workload shaped like a KubeRay
worker pod (labelled ``ray.io/cluster``, as the session's pod cache selects; held Pending by a
scheduling gate so nothing schedules or runs them).

Each figure is the resident memory (``VmRSS``, after ``gc.collect()``) of a fresh process,
minus that of the same process on an empty namespace (same imports, same caches started):

- **jupyter_dw**: a ``KubeSession`` started on the namespace, once its Workload and pod caches
  hold every object (what the server and each kernel hold);
- **baseline**: the same Workloads and pods listed once and held as the full dicts the API
  server sends (``json.loads`` of the list answers), in the same kind of process.

And what a kernel showing live widgets (a ``QueueBoard`` and a ``ClusterStatus``) holds on
that namespace, over a **bare kernel** (the same imports, no widget, nothing connected), in
a fresh process each: reading through a real ``jupyter server`` with jupyter_dw (the
product's default: one connection per workbench), and on its own connection (the baseline).

And what the server's events socket costs a kernel's board, on the same server: the snapshot
a socket is sent at open (``?workloads=1``: every Workload; ``?workloads=rows``: the rows a
QueueBoard shows), in bytes of JSON text, and the server's RSS added per socket held open
(:data:`SOCKETS` of each mode, after one opened and closed to warm the server up).

Usage: ``.venv/bin/python -m benchmarks.bench_memory [--workloads 5000] [--runs 2] [--json FILE]
[--smoke]`` (``--smoke``: 100 Workloads on 5 LocalQueues, checks only that it runs).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client, config

from benchmarks.testbed import connect
from tests.cluster.scale import ScaleShape, create_all, create_scale, delete_scale

RAY_CLUSTER_LABEL = "ray.io/cluster"
HOLDERS = ("jupyter_dw", "baseline")


def worker_pod(index: int, cluster: str) -> dict[str, Any]:
    """A pod as KubeRay makes a Ray worker's (labels, command, env, probes, volumes), held
    Pending by a scheduling gate."""
    env = [
        {"name": name, "value": value}
        for name, value in (
            ("RAY_CLUSTER_NAME", cluster),
            ("RAY_CLOUD_INSTANCE_ID", f"{cluster}-worker-{index}"),
            ("RAY_NODE_TYPE_NAME", "workers"),
            ("KUBERAY_GEN_RAY_START_CMD", "ray start --address=head-svc:6379 --block"),
            ("RAY_PORT", "6379"),
            ("RAY_ADDRESS", f"{cluster}-head-svc.ns.svc.cluster.local:6379"),
            ("RAY_USAGE_STATS_KUBERAY_IN_USE", "1"),
            ("REDIS_PASSWORD", ""),
            ("RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "1"),
        )
    ]
    env.append({"name": "FQ_RAY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    probe = {
        "exec": {
            "command": [
                "bash",
                "-c",
                "wget -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success",
            ]
        },
        "initialDelaySeconds": 30,
        "periodSeconds": 5,
        "timeoutSeconds": 2,
        "failureThreshold": 10,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{cluster}-workers-{index:05d}",
            "labels": {
                RAY_CLUSTER_LABEL: cluster,
                "ray.io/group": "workers",
                "ray.io/node-type": "worker",
                "ray.io/identifier": f"{cluster}-worker",
                "ray.io/is-ray-node": "yes",
                "app.kubernetes.io/created-by": "kuberay-operator",
                "app.kubernetes.io/name": "kuberay",
            },
            "annotations": {"ray.io/ft-enabled": "false"},
        },
        "spec": {
            "schedulingGates": [{"name": "jupyter-dw/bench-memory"}],
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.60.0",
                    "command": ["/bin/bash", "-lc", "--"],
                    "args": ["ulimit -n 65536; ray start --address=head-svc:6379 --block"],
                    "env": env,
                    "resources": {
                        "limits": {"cpu": "1", "memory": "2Gi"},
                        "requests": {"cpu": "1", "memory": "2Gi"},
                    },
                    "ports": [{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
                    "livenessProbe": probe,
                    "readinessProbe": probe,
                    "volumeMounts": [{"mountPath": "/dev/shm", "name": "shared-mem"}],
                }
            ],
            "volumes": [
                {"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}
            ],
        },
    }


# -- the holder process -----------------------------------------------------------------------


def rss_mib() -> float:
    gc.collect()
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def hold(holder: str, namespace: str, api_version: str) -> dict[str, Any]:
    """Load ``namespace``'s Workloads and Ray pods as ``holder`` does; the RSS once all are
    in. Both start the same session first, so the difference is only what each holds."""
    from jupyter_dw.k8s.resources import POD
    from jupyter_dw.k8s.session import KubeSession

    # The baseline's session starts no watch (lazy, and nothing asks for one).
    lazy = holder != "jupyter_dw"
    session = KubeSession(
        namespace=namespace, service_account_dir="/nonexistent", lazy_watches=lazy
    )
    session.start()
    session.wait_ready()
    held: list[Any] = []
    if holder == "jupyter_dw":
        workloads = session.workloads(timeout=300)
        pods = session.cache(POD)
        assert pods is not None and pods.wait_synced(timeout=300)
        counts = (len(workloads), len(pods.snapshot()))
    else:
        api = config.new_client_from_config()
        answers = (
            client.CustomObjectsApi(api).list_namespaced_custom_object(
                "kueue.x-k8s.io", api_version, namespace, "workloads", _preload_content=False
            ),
            client.CoreV1Api(api).list_namespaced_pod(
                namespace, label_selector=RAY_CLUSTER_LABEL, _preload_content=False
            ),
        )
        held = [json.loads(answer.data)["items"] for answer in answers]
        counts = (len(held[0]), len(held[1]))
    figures = {"rss_mib": rss_mib(), "workloads": counts[0], "pods": counts[1]}
    session.stop()
    return figures


KERNELS = ("bare", "server", "own", "server-status")
"""A kernel with nothing shown; one showing live widgets (a QueueBoard and a ClusterStatus)
through its server or on its own; one showing only the ClusterStatus, through its server."""


def kernel_hold(mode: str, namespace: str, workloads: int) -> dict[str, Any]:
    """A kernel process's RSS once its widgets show every Workload (none for ``bare``)."""
    import asyncio

    import jupyter_dw as dw
    from jupyter_dw.core.settings import load_settings
    from jupyter_dw.notebook import widgets  # noqa: F401  # what a kernel showing them imports
    from jupyter_dw.notebook.runtime import KernelRuntime, set_runtime

    if mode == "bare":
        return {"rss_mib": rss_mib()}
    profile = os.environ.get("DW_BENCH_PROFILE") == "1"
    if profile:
        import tracemalloc

        tracemalloc.start(3)
    runtime = KernelRuntime(load_settings(paths=[]))
    set_runtime(runtime)

    async def show() -> list[Any]:
        if mode == "server-status":
            return [dw.ClusterStatus("ray-000")]
        shown = [dw.QueueBoard(), dw.ClusterStatus("ray-000")]
        board = shown[0]
        deadline = asyncio.get_running_loop().time() + 300
        while sum(board.workload_counts.values()) != workloads:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(board.workload_counts)
            await asyncio.sleep(0.05)
        return shown

    shown = asyncio.run(show())
    connection = mode.split("-")[0]
    assert runtime.connection is not None and runtime.connection.mode == connection, mode
    figures = {"rss_mib": rss_mib(), "widgets": len(shown)}
    if profile:  # where a kernel's memory goes (to stderr: not a figure)
        import tracemalloc

        top = tracemalloc.take_snapshot().statistics("traceback")[:25]
        for stat in top:
            print(stat, *stat.traceback.format()[-3:], sep="\n  ", file=sys.stderr)
    runtime.stop()
    return figures


def measure_kernel(mode: str, namespace: str, workloads: int, environ: dict[str, str]) -> float:
    """:func:`kernel_hold` in a fresh process: its RSS (MiB)."""
    answer = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_memory", "--kernel", mode, namespace,
         str(workloads)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
        env=environ,
    )  # fmt: skip
    rss: float = json.loads(answer.stdout.strip().splitlines()[-1])["rss_mib"]
    return rss


SOCKETS = 10
"""Events sockets of one mode held open at once: the server's RSS added, divided by them."""
SOCKET_MODES = ("rows", "1")


def process_rss_mib(pid: int) -> float:
    """Resident memory of process ``pid`` (MiB)."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


async def open_socket(link_path: Path, mode: str) -> tuple[Any, int]:
    """An events socket of the server ``link_path`` names, as its kernels open it, with
    ``?workloads=mode``; and the length of its snapshot (JSON text, bytes)."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    from jupyter_dw.names import KERNEL_AUTH_SCHEME
    from jupyter_dw.notebook.server_link import EVENTS_PATH, read_link

    link = read_link(link_path)
    assert link is not None, link_path
    url = "ws" + link.url[len("http") :] + EVENTS_PATH + f"?workloads={mode}"
    headers = {"Authorization": f"{KERNEL_AUTH_SCHEME} {link.secret}"}
    socket = await websocket_connect(HTTPRequest(url, headers=headers), compression_options={})
    text = await socket.read_message()
    assert isinstance(text, str) and json.loads(text)["type"] == "snapshot", text
    return socket, len(text.encode())


def measure_sockets(link_path: Path, server_pid: int) -> dict[str, Any]:
    """Per mode: the snapshot's bytes, and the server's RSS added per socket held open."""
    import asyncio

    async def measure(mode: str) -> dict[str, Any]:
        warm, size = await open_socket(link_path, mode)
        warm.close()
        before = process_rss_mib(server_pid)
        sockets = [(await open_socket(link_path, mode))[0] for _ in range(SOCKETS)]
        added = (process_rss_mib(server_pid) - before) / SOCKETS
        for socket in sockets:
            socket.close()
        await asyncio.sleep(1)  # the server's on_close runs before the next mode is measured
        return {"snapshot_bytes": size, "server_mib_per_socket": round(added, 2)}

    async def both() -> dict[str, Any]:
        return {mode: await measure(mode) for mode in SOCKET_MODES}

    results = asyncio.run(both())
    for mode, figures in results.items():
        print(
            f"events socket ?workloads={mode}: snapshot {figures['snapshot_bytes']:,} bytes, "
            f"server +{figures['server_mib_per_socket']} MiB per socket"
        )
    return results


def measure_kernels(namespace: str, workloads: int, runs: int) -> dict[str, Any]:
    """Kernels on ``namespace``: bare, through a real server, on their own (``runs`` each)."""
    from benchmarks.workbench import JupyterServer
    from jupyter_dw.names import KERNEL_LINK_ENV

    with tempfile.TemporaryDirectory(prefix="dw-bench-memory-") as tmp:
        work = Path(tmp)
        environ = {
            **os.environ,
            "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
            "JUPYTER_DW_NAMESPACE": namespace,
            "JUPYTER_DW_SERVICE_ACCOUNT_DIR": "/nonexistent",  # the administrator's kubeconfig
        }
        server = JupyterServer(work, environ)
        try:
            server.wait_answer("dw/api/queues", timeout=300)
            kernels = {
                "bare": {**environ, "JUPYTER_DW_KERNELS_THROUGH_SERVER": "false"},
                "server": {
                    **environ,
                    KERNEL_LINK_ENV: str(work / "runtime" / f"jupyter_dw-{server.port}.json"),
                },
                "server-status": {
                    **environ,
                    KERNEL_LINK_ENV: str(work / "runtime" / f"jupyter_dw-{server.port}.json"),
                },
                "own": {**environ, "JUPYTER_DW_KERNELS_THROUGH_SERVER": "false"},
            }
            rss: dict[str, list[float]] = {mode: [] for mode in KERNELS}
            for _ in range(runs):
                for mode in KERNELS:
                    rss[mode].append(measure_kernel(mode, namespace, workloads, kernels[mode]))
            link = Path(kernels["server"][KERNEL_LINK_ENV])
            sockets = measure_sockets(link, server.process.pid)
        finally:
            server.stop()
    bare = statistics.median(rss["bare"])
    results: dict[str, Any] = {"bare_mib": round(bare, 1), "sockets": sockets}
    for mode in KERNELS[1:]:
        added = [r - bare for r in rss[mode]]
        results[mode] = {
            "added_mib": round(statistics.median(added), 1),
            "runs": [round(a, 1) for a in added],
        }
        print(f"kernel with live widgets, {mode}: {results[mode]['added_mib']} MiB over bare")
    return results


def measure_holder(holder: str, namespace: str, api_version: str) -> dict[str, Any]:
    """:func:`hold` in a fresh process (its memory is its own)."""
    answer = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_memory", "--hold", holder, namespace, api_version],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    )
    result: dict[str, Any] = json.loads(answer.stdout.strip().splitlines()[-1])
    return result


# -- the driver -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument("--cluster-queues", type=int, default=50)
    parser.add_argument("--workloads", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=2, help="processes per holder and namespace")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--smoke", action="store_true", help="tiny: every figure measured")
    parser.add_argument("--hold", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--kernel", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument(
        "--kernels-only", action="store_true", help="measure the kernels, not the holders"
    )
    args = parser.parse_args()
    if args.kernel:
        mode, namespace, workloads = args.kernel
        print(json.dumps(kernel_hold(mode, namespace, int(workloads))))
        return
    if args.hold:
        holder, namespace, api_version = args.hold
        print(json.dumps(hold(holder, namespace, api_version)))
        return
    if args.smoke:
        args.queues, args.cluster_queues, args.workloads, args.runs = 5, 2, 100, 1
    state, api, version = connect()
    shape = ScaleShape(
        args.queues, args.cluster_queues, args.workloads, min(5, args.cluster_queues)
    )
    empty = f"bench-memory-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(api)
    results: dict[str, Any] = {"workloads": args.workloads, "pods": args.workloads}
    testbed = create_scale(api, version, shape, kueue_pid=state.pids.get("kueue"))
    core.create_namespace({"metadata": {"name": empty}})
    try:
        print(testbed.describe())
        pods = [worker_pod(i, f"ray-{i % 500:03d}") for i in range(args.workloads)]
        seconds = create_all(api, f"/api/v1/namespaces/{testbed.namespace}/pods", pods)
        print(f"{len(pods)} pods created in {seconds:.1f} s")
        for holder in () if args.kernels_only else HOLDERS:
            added = []
            for _ in range(args.runs):
                base = measure_holder(holder, empty, version)
                full = measure_holder(holder, testbed.namespace, version)
                counted = (full["workloads"], full["pods"])
                assert counted == (args.workloads, args.workloads), full
                added.append(full["rss_mib"] - base["rss_mib"])
                print(
                    f"{holder}: {base['rss_mib']:.1f} MiB empty, {full['rss_mib']:.1f} MiB "
                    f"with {full['workloads']} Workloads and {full['pods']} pods"
                )
            results[holder] = {
                "added_mib": round(statistics.median(added), 1),
                "runs": [round(a, 1) for a in added],
            }
        results["kernels"] = measure_kernels(testbed.namespace, args.workloads, args.runs)
    finally:
        core.delete_namespace(empty)
        # The gated pods go at once (never scheduled); then the scale objects, waited for so
        # the next run starts on a quiet Kueue. A slow teardown does not undo the figures.
        try:
            core.delete_collection_namespaced_pod(
                testbed.namespace, label_selector=RAY_CLUSTER_LABEL
            )
        except client.ApiException as err:  # 504 under load: the namespace's deletion goes on
            print(f"deleting the pods: {err.status} {err.reason}", file=sys.stderr)
        try:
            delete_scale(api, testbed, timeout=900)
        except (TimeoutError, client.ApiException) as err:
            print(f"teardown still going on: {err}", file=sys.stderr)
    if not args.kernels_only:
        print(
            f"\nRSS added by {args.workloads} Workloads and {args.workloads} pods (median of "
            f"{args.runs}): jupyter_dw {results['jupyter_dw']['added_mib']} MiB, baseline (full "
            f"dicts) {results['baseline']['added_mib']} MiB"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
