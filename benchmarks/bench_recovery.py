"""How fast jupyter_dw recovers from real faults, on a disposable control plane.

A full control plane of its own (tests/cluster/disposable.py, kube-apiserver with
``--watch-cache=false``) in a temporary directory, never the shared test cluster. Three faults,
each ``--runs`` times (median reported):

- **API server restart**: kube-apiserver killed, started again. Measured from the moment its
  ``/readyz`` answers ok (polled every 0.2 s) to a ``QueueBoard`` widget's ``freshness`` trait
  being ``live`` again (the kernel's watch caches reconnect, the change feed tells the
  widget; the events socket gets the same ``health`` message from the same feed).
  Baseline: a cold start (a new kernel runtime and widget, until every watch is live) — what
  restarting the kernel would cost instead.
- **silent watch**: every connection through a TCP proxy stops forwarding (sockets kept
  open). Measured from that moment to a RayCluster created right after it being in the
  session's cache: the idle timeout (``--idle``) noticing the silence, the watch re-opened on a
  new connection from the last version. Baseline: the same change seen through a healthy watch.
- **410 Gone**: the watches are made silent, three changes are made, etcd is compacted, the
  silent connections are cut: each watch resumes from a compacted version, gets 410 Gone and
  lists again. Measured from the cut to the changes being in the cache. Baseline: the same.

Usage: ``.venv/bin/python -m benchmarks.bench_recovery [--runs 3] [--idle 2]``
(``--cluster-dir DIR`` reuses or keeps a disposable cluster there; needs ``make cluster-build``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from jupyter_dw.core.settings import DWSettings
from jupyter_dw.k8s.resources import RAY_CLUSTER
from jupyter_dw.k8s.session import KubeSession
from jupyter_dw.notebook.runtime import KernelRuntime, set_runtime
from tests.cluster.disposable import DisposableCluster, TcpProxy
from tests.integration.clusters_support import suspended_raycluster

TIMEOUT = 120.0


def until(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> float:
    """Wait for ``condition`` (re-checked every 5 ms); return the time it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.005)
    return time.monotonic()


@contextlib.contextmanager
def proxied_kubeconfig(kubeconfig: str, port: int) -> Iterator[str]:
    """A copy of ``kubeconfig`` whose server is the proxy on ``port``."""
    data = yaml.safe_load(Path(kubeconfig).read_text())
    for entry in data["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{port}"
    with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig", delete=False) as handle:
        yaml.safe_dump(data, handle)
    try:
        yield handle.name
    finally:
        os.unlink(handle.name)


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s (runs: {', '.join(f'{v:.2f}' for v in values)})"


# -- API server restart -----------------------------------------------------------------------


async def wait_trait(widget: Any, predicate: Callable[[Any], bool], what: str) -> float:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not predicate(widget.freshness):
        if loop.time() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.005)
    return time.monotonic()


async def restart_runs(plane: DisposableCluster, namespace: str, runs: int) -> dict[str, list]:
    import jupyter_dw as dw

    cold: list[float] = []
    recovery: list[float] = []
    for _ in range(runs):
        started = time.monotonic()
        runtime = KernelRuntime(DWSettings(namespace=namespace))
        previous = set_runtime(runtime)
        board = dw.QueueBoard()  # on the loop, as in a kernel (blocks until queues are read)
        live = await wait_trait(board, lambda f: f["state"] == "live", "every watch synced")
        cold.append(live - started)

        await asyncio.to_thread(plane.stop_component, "kube-apiserver", kill=True)
        await wait_trait(board, lambda f: f["state"] != "live", "the widget marked not live")
        await asyncio.to_thread(plane.start_component, "kube-apiserver")
        back = time.monotonic()
        fresh = await wait_trait(board, lambda f: f["state"] == "live", "the widget live again")
        recovery.append(fresh - back)
        board.close()
        set_runtime(previous)
        await asyncio.to_thread(runtime.stop)
    return {"cold": cold, "recovery": recovery}


# -- silent watch and 410 ---------------------------------------------------------------------


def proxied_session(kubeconfig: str, namespace: str, idle: float) -> KubeSession:
    session = KubeSession(
        namespace=namespace,
        environ={"KUBECONFIG": kubeconfig},
        service_account_dir="/nonexistent",
        watch_idle_timeout=idle,
    )
    session.start()
    session.ray_clusters()  # synced
    return session


def silent_runs(
    plane: DisposableCluster,
    custom: client.CustomObjectsApi,
    namespace: str,
    runs: int,
    idle: float,
) -> dict[str, list[float]]:
    port = int(plane.running.apiserver.rpartition(":")[2])
    healthy: list[float] = []
    silent: list[float] = []
    with TcpProxy(port) as proxy, proxied_kubeconfig(plane.running.kubeconfig, proxy.port) as kc:
        session = proxied_session(kc, namespace, idle)
        cache = session.cache(RAY_CLUSTER)
        assert cache is not None
        try:
            for index in range(runs):
                name = f"healthy-{index}"
                started = time.monotonic()
                custom.create_namespaced_custom_object(
                    "ray.io", "v1", namespace, "rayclusters", suspended_raycluster(name)
                )
                seen = until(lambda n=name: cache.get(n, namespace) is not None, "healthy watch")
                healthy.append(seen - started)

                name = f"silent-{index}"
                proxy.freeze()
                started = time.monotonic()
                custom.create_namespaced_custom_object(
                    "ray.io", "v1", namespace, "rayclusters", suspended_raycluster(name)
                )
                seen = until(lambda n=name: cache.get(n, namespace) is not None, "silent watch")
                silent.append(seen - started)
                proxy.cut()
        finally:
            session.stop()
    return {"healthy": healthy, "silent": silent}


def gone_runs(
    plane: DisposableCluster, custom: client.CustomObjectsApi, namespace: str, runs: int
) -> list[float]:
    port = int(plane.running.apiserver.rpartition(":")[2])
    relist: list[float] = []
    etcd = plane.etcd()
    with TcpProxy(port) as proxy, proxied_kubeconfig(plane.running.kubeconfig, proxy.port) as kc:
        session = proxied_session(kc, namespace, idle=600.0)
        cache = session.cache(RAY_CLUSTER)
        assert cache is not None
        try:
            for index in range(runs):
                before = cache.relists
                proxy.freeze()
                names = [f"gone-{index}-{n}" for n in range(3)]
                for name in names:
                    custom.create_namespaced_custom_object(
                        "ray.io", "v1", namespace, "rayclusters", suspended_raycluster(name)
                    )
                etcd.compact(etcd.revision())
                started = time.monotonic()
                proxy.cut()

                def relisted(before: int = before, names: list[str] = names) -> bool:
                    return cache.relists > before and all(
                        cache.get(n, namespace) is not None for n in names
                    )

                seen = until(relisted, "410 re-list")
                relist.append(seen - started)
        finally:
            session.stop()
    return relist


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle", type=float, default=2.0, help="watch_idle_timeout (s)")
    parser.add_argument("--cluster-dir", help="reuse or keep a disposable cluster here")
    args = parser.parse_args()

    directory = Path(args.cluster_dir or tempfile.mkdtemp(prefix="dw-bench-recovery-"))
    plane = DisposableCluster(directory / "control-plane", apiserver_flags=("--watch-cache=false",))
    started = time.monotonic()
    plane.up()
    print(f"disposable control plane ready in {time.monotonic() - started:.1f} s")
    os.environ["KUBECONFIG"] = plane.running.kubeconfig
    kube = config.new_client_from_config(config_file=plane.running.kubeconfig)
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(kube).create_namespace({"metadata": {"name": namespace}})
    custom = client.CustomObjectsApi(kube)
    try:
        silent = silent_runs(plane, custom, namespace, args.runs, args.idle)
        gone = gone_runs(plane, custom, namespace, args.runs)
        restart = asyncio.run(restart_runs(plane, namespace, args.runs))
    finally:
        if not args.cluster_dir:
            plane.down()
            directory.rmdir()
    print(f"\nmedians of {args.runs} runs (threads alive: {threading.active_count()})")
    print(f"API server back -> widget fresh:       {median(restart['recovery'])}")
    print(f"  baseline, cold start of a widget:    {median(restart['cold'])}")
    print(f"silent watch -> change seen (idle {args.idle:g} s): {median(silent['silent'])}")
    print(f"  baseline, change through a live watch: {median(silent['healthy'])}")
    print(f"410 Gone -> re-listed, changes seen:   {median(gone)}")


if __name__ == "__main__":
    main()
