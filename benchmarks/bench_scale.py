"""How fast a live widget follows an elastic cluster's scale-up through Kueue's workload
slices: from the Workload slice being written to the ``ClusterStatus`` widget showing it.

Runs against the local control plane (started if needed) in a fresh namespace. One elastic
Ray cluster (head + 1 worker of 100m CPU, range 1..4) sits in a LocalQueue whose quota is
exactly full when a *blocker* (a Workload of 100m with no job behind it) is admitted too. Each
of ``--changes`` rounds:

1. the benchmark, playing the Ray autoscaler, raises ``replicas`` from 1 to 2: Kueue makes a
   new slice that waits for quota;
2. the blocker is deleted: Kueue admits the slice;
3. the cluster is scaled back to 1 (``h.scale(1)``) and a new blocker takes the freed quota.

Two clocks in the same process:

- **reference (raw watch)**: an administrator's own Workload watch, on a thread, notes when it
  receives the pending slice (``QuotaReserved=False`` with Kueue's reason) and when it
  receives it admitted (``QuotaReserved=True``);
- **widget**: when the widget's ``scale`` trait shows the slice queued with Kueue's reason,
  and when its ``workers_admitted`` becomes 2 (watch -> cache -> change feed -> the kernel's
  loop -> the trait).

Latency = widget time - reference time, p50 and p95.

Usage: ``.venv/bin/python -m benchmarks.bench_scale [--changes 30]``
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
from jupyter_dw.names import WORKLOAD_SLICE_REPLACEMENT_ANNOTATION
from jupyter_dw.notebook.runtime import KernelRuntime, set_runtime
from tests.cluster.fixtures import plain_workload
from tests.integration.test_elastic_scale import set_worker_group

GROUP = "kueue.x-k8s.io"


def reserved(obj: dict) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "QuotaReserved":
            return c.get("status") if c.get("status") == "True" or c.get("reason") else None
    return None


class Reference:
    """The raw watch: when each slice was first seen pending and first seen reserved."""

    def __init__(self, custom, version: str, namespace: str) -> None:
        self.pending: dict[str, float] = {}
        self.admitted: dict[str, float] = {}
        self.blockers: dict[str, float] = {}
        self.noted = threading.Condition()
        self.stop = threading.Event()
        self.args = (custom, version, namespace)
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        custom, version, namespace = self.args
        stream = watch.Watch()
        for event in stream.stream(
            custom.list_namespaced_custom_object, GROUP, version, namespace, "workloads",
            timeout_seconds=1800,
        ):  # fmt: skip
            obj, now = event["raw_object"], time.monotonic()
            name = obj["metadata"]["name"]
            annotations = obj["metadata"].get("annotations") or {}
            state = reserved(obj)
            with self.noted:
                if name.startswith("blocker-") and state == "True":
                    self.blockers.setdefault(name, now)
                elif WORKLOAD_SLICE_REPLACEMENT_ANNOTATION in annotations:
                    if state == "False":
                        self.pending.setdefault(name, now)
                    elif state == "True":
                        self.admitted.setdefault(name, now)
                self.noted.notify_all()
            if self.stop.is_set():
                stream.stop()

    def wait(self, table: str, name: str, timeout: float = 30) -> float:
        with self.noted:
            found = self.noted.wait_for(lambda: name in getattr(self, table), timeout)
        assert found, f"{name} never seen in {table}"
        return getattr(self, table)[name]


async def trait_becomes(widget, trait: str, predicate, timeout: float = 60) -> float:
    """When ``widget.<trait>`` first satisfies ``predicate`` (monotonic time)."""
    if predicate(getattr(widget, trait)):
        return time.monotonic()
    loop = asyncio.get_running_loop()
    done: asyncio.Future[float] = loop.create_future()

    def on_change(change) -> None:
        if not done.done() and predicate(change["new"]):
            done.set_result(time.monotonic())

    widget.observe(on_change, names=trait)
    try:
        return await asyncio.wait_for(done, timeout)
    finally:
        widget.unobserve(on_change, names=trait)


async def run(changes: int, namespace: str, version: str, custom) -> tuple[list, list]:
    import jupyter_dw as dw
    from jupyter_dw.notebook.widgets import ClusterStatus

    ref = Reference(custom, version, namespace)

    def blocker(i: int) -> str:
        name = f"blocker-{i}"
        custom.create_namespaced_custom_object(
            GROUP, version, namespace, "workloads", plain_workload(version, name, "bench", "100m")
        )
        ref.wait("blockers", name)
        return name

    def set_replicas(replicas: int) -> None:
        set_worker_group(custom.api_client, namespace, "el", replicas=replicas)

    small = {"head_cpu": "100m", "head_memory": "256Mi", "worker_cpu": "100m",
             "worker_memory": "256Mi", "workers": 1, "min_workers": 1,
             "max_workers": 4}  # fmt: skip
    handle = await asyncio.to_thread(dw.submit, name="el", queue="bench", **small)
    widget = ClusterStatus("el")
    await trait_becomes(widget, "state", lambda s: s == "ready")
    shown_pending, shown_admitted = [], []
    for i in range(changes):
        held = await asyncio.to_thread(blocker, i)
        await asyncio.to_thread(set_replicas, 2)
        queued = await trait_becomes(
            widget, "scale", lambda s: bool(s and s["state"] == "queued" and s["reason"])
        )
        slice_name = widget.scale["workload"]
        shown_pending.append((queued - ref.wait("pending", slice_name)) * 1000)
        await asyncio.to_thread(
            custom.delete_namespaced_custom_object, GROUP, version, namespace, "workloads", held
        )
        grown = await trait_becomes(widget, "workers_admitted", lambda n: n == 2)
        shown_admitted.append((grown - ref.wait("admitted", slice_name)) * 1000)
        await asyncio.to_thread(handle.scale, 1)
        await trait_becomes(
            widget, "workers_admitted", lambda n: n == 1
        )  # quota back before the next blocker
        await trait_becomes(widget, "scale", lambda s: s is None)
        await asyncio.to_thread(handle.scale, None)  # the autoscaler owns the size again
    ref.stop.set()
    widget.close()
    return shown_pending, shown_admitted


def quota_cluster_queue(name: str, flavor: str, version: str, cpu: str) -> dict:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                 "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu},
                 {"name": "memory", "nominalQuota": "16Gi"}]}]}]},
    }  # fmt: skip


def summary(label: str, values: list[float]) -> str:
    q = statistics.quantiles(values, n=100, method="inclusive")
    return f"{label:<34} p50 {statistics.median(values):7.1f} ms   p95 {q[94]:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--changes", type=int, default=30)
    args = parser.parse_args()
    state, api, version = connect()
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    # Head 100m + sidecar 500m (counted by Kueue 0.19, not 0.14) + 1 worker 100m + blocker 100m.
    cpu = "800m" if version == "v1beta2" else "300m"
    namespace = f"bench-scale-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    flavor, cq = f"{namespace}-f", f"{namespace}-cq"
    custom.create_cluster_custom_object(GROUP, version, "resourceflavors", {
        "apiVersion": f"{GROUP}/{version}", "kind": "ResourceFlavor", "metadata": {"name": flavor},
    })  # fmt: skip
    custom.create_cluster_custom_object(
        GROUP, version, "clusterqueues", quota_cluster_queue(cq, flavor, version, cpu)
    )
    custom.create_namespaced_custom_object(GROUP, version, namespace, "localqueues", {
        "apiVersion": f"{GROUP}/{version}", "kind": "LocalQueue", "metadata": {"name": "bench"},
        "spec": {"clusterQueue": cq},
    })  # fmt: skip
    runtime = KernelRuntime(DWSettings(namespace=namespace, autoscaler_cpu="500m"))
    set_runtime(runtime)
    try:
        pending, admitted = asyncio.run(run(args.changes, namespace, version, custom))
    finally:
        runtime.stop()
        core.delete_namespace(namespace)
        for plural, name in (("clusterqueues", cq), ("resourceflavors", flavor)):
            with contextlib.suppress(client.ApiException):
                custom.delete_cluster_custom_object(GROUP, version, plural, name)
    print(f"Elastic scale-up, n={len(pending)} rounds (Kueue {state.versions['kueue']}); "
          "latency after the raw Workload watch saw the same change "
          "(the baseline, 0 ms):")  # fmt: skip
    print(summary("slice pending -> widget shows it", pending))
    print(summary("slice admitted -> widget shows it", admitted))


if __name__ == "__main__":
    main()
