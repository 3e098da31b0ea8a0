"""How fast a live widget follows Kueue: from a Workload's ``Admitted`` condition being
written to the API server to the ``ClusterStatus`` widget's ``state`` changing.

Runs against the local control plane (started if needed) in a fresh namespace with one
LocalQueue. For each of ``--changes`` Ray clusters (1 worker, 100m CPU each; created one after
another and deleted after), a ``ClusterStatus`` follows it on this process's asyncio loop, as
in a kernel. Two clocks in the same process:

- **reference (raw watch)**: an administrator's own Workload watch, on a thread, notes when
  it receives the Workload with ``Admitted=True``: when the write became observable;
- **widget**: when the widget's ``state`` trait changes to admitted/starting/ready (its own
  watch -> cache -> change feed -> the loop -> the trait).

Latency = widget time - reference time. For scale: a poller every 5 s (codeflare-sdk's
``wait_ready``) sees a change 2.5 s later on average.

Usage: ``.venv/bin/python -m benchmarks.bench_live [--changes 50]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import threading
import time
import uuid

from kubernetes import client, watch

from benchmarks.testbed import connect
from jupyter_dw.core.settings import DWSettings
from jupyter_dw.notebook.runtime import KernelRuntime, set_runtime

GROUP = "kueue.x-k8s.io"
RUNNING = ("admitted", "starting", "ready")


def admitted(obj: dict) -> bool:
    return any(
        c.get("type") == "Admitted" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def reference_watch(
    custom, version: str, namespace: str, seen: dict[str, float], noted, stop
) -> None:
    """Note when each Workload (by its RayCluster's name) is first seen admitted."""
    stream = watch.Watch()
    for event in stream.stream(
        custom.list_namespaced_custom_object, GROUP, version, namespace, "workloads",
        timeout_seconds=600,
    ):  # fmt: skip
        obj = event["raw_object"]
        owners = obj["metadata"].get("ownerReferences") or [{}]
        name = owners[0].get("name")
        if name and name not in seen and admitted(obj):
            seen[name] = time.monotonic()
            noted.set()
        if stop.is_set():
            stream.stop()


async def run(changes: int, namespace: str, version: str, custom) -> list[float]:
    import jupyter_dw as dw
    from jupyter_dw.notebook.widgets import ClusterStatus

    seen: dict[str, float] = {}
    noted, stop = threading.Condition(), threading.Event()

    class Noted:
        def set(self) -> None:
            with noted:
                noted.notify_all()

    threading.Thread(
        target=reference_watch,
        args=(custom, version, namespace, seen, Noted(), stop),
        daemon=True,
    ).start()

    def wait_noted(name: str) -> bool:
        with noted:
            return noted.wait_for(lambda: name in seen, 10)

    latencies = []
    small = {"head_cpu": "100m", "head_memory": "256Mi", "worker_cpu": "100m",
             "worker_memory": "256Mi", "workers": 1}  # fmt: skip
    for i in range(changes):
        name = f"live-{i}"
        await asyncio.to_thread(dw.submit, name=name, queue="bench", **small)
        widget = ClusterStatus(name)
        changed = asyncio.Event()
        at: list[float] = []

        def on_state(change, at=at, changed=changed) -> None:
            if change["new"] in RUNNING and not at:
                at.append(time.monotonic())
                changed.set()

        widget.observe(on_state, names="state")
        if widget.state in RUNNING:  # admitted before the widget even started
            widget.close()
            await asyncio.to_thread(dw.cluster(name).delete)
            continue
        await asyncio.wait_for(changed.wait(), 60)
        # The reference thread may note it a moment after the widget did.
        assert await asyncio.to_thread(wait_noted, name), f"{name}: never seen admitted"
        latencies.append((at[0] - seen[name]) * 1000)
        widget.close()
        await asyncio.to_thread(dw.cluster(name).delete)
    stop.set()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--changes", type=int, default=50)
    args = parser.parse_args()
    state, api, version = connect()
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    namespace = f"bench-live-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    flavor, cq = f"{namespace}-f", f"{namespace}-cq"
    meta = lambda kind, name: {"apiVersion": f"{GROUP}/{version}", "kind": kind,  # noqa: E731
                               "metadata": {"name": name}}  # fmt: skip
    custom.create_cluster_custom_object(
        GROUP, version, "resourceflavors", meta("ResourceFlavor", flavor)
    )
    custom.create_cluster_custom_object(GROUP, version, "clusterqueues", {
        **meta("ClusterQueue", cq),
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                 "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"},
                 {"name": "memory", "nominalQuota": "16Gi"}]}]}]},
    })  # fmt: skip
    custom.create_namespaced_custom_object(GROUP, version, namespace, "localqueues", {
        **meta("LocalQueue", "bench"), "spec": {"clusterQueue": cq},
    })  # fmt: skip
    runtime = KernelRuntime(DWSettings(namespace=namespace))
    set_runtime(runtime)
    try:
        latencies = asyncio.run(run(args.changes, namespace, version, custom))
    finally:
        runtime.stop()
        core.delete_namespace(namespace)
        for plural, name in (("clusterqueues", cq), ("resourceflavors", flavor)):
            with contextlib.suppress(client.ApiException):
                custom.delete_cluster_custom_object(GROUP, version, plural, name)
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    print(f"Admitted written -> ClusterStatus.state changed, n={len(latencies)} "
          f"(Kueue {state.versions['kueue']})")  # fmt: skip
    print(f"widget    p50 {statistics.median(latencies):7.1f} ms   p99 {q[98]:7.1f} ms   "
          f"max {max(latencies):7.1f} ms   (after the raw watch saw it)")  # fmt: skip
    print("for scale: a 5 s poll sees a change 2500 ms later on average (codeflare wait_ready)")


if __name__ == "__main__":
    main()
