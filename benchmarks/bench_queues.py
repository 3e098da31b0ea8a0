"""How fast is ``GET queues``'s answer, from the watch cache, against listing per request?

Runs against the local control plane (started if needed). Creates a namespace with
``--queues`` LocalQueues spread over ClusterQueues in one cohort, then in the same run measures:

- **cache**: ``QueueService.list()``: the product's path (watch caches, no API call);
- **baseline**: what a polling implementation does per request: list LocalQueues,
  ClusterQueues and Cohorts from the API server, then the same ``queue_summaries`` call;
- **propagation**: from creating a Workload that Kueue admits to the change visible in
  ``QueueService.list()`` (pushed by watches).

Usage: ``.venv/bin/python -m benchmarks.bench_queues [--queues 30] [--rounds 200]``
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import threading
import time
import uuid
from collections.abc import Callable

from kubernetes import client, config

from jupyter_dw.core.queues import QueueService
from jupyter_dw.domain.kueue_model import ClusterQueueQuota, CohortQuota, LocalQueueInfo
from jupyter_dw.domain.quota import queue_summaries
from jupyter_dw.k8s.session import KubeSession
from tests.cluster.controlplane import LocalCluster
from tests.cluster.fixtures import plain_workload

GROUP = "kueue.x-k8s.io"


def kueue_object(version: str, kind: str, name: str) -> dict[str, object]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": kind, "metadata": {"name": name}}


def timed(call: Callable[[], object], rounds: int) -> list[float]:
    """Wall-clock milliseconds of ``rounds`` calls."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def describe(name: str, samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=20)
    return (
        f"{name:<9} n={len(samples):<4} median {statistics.median(samples):8.3f} ms   "
        f"p95 {q[18]:8.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()

    state = LocalCluster().up()
    api_client = config.new_client_from_config(config_file=state.kubeconfig)
    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    version = "v1beta2" if state.versions["kueue"] >= "v0.15" else "v1beta1"
    cohort_key = "cohortName" if version == "v1beta2" else "cohort"
    tag = uuid.uuid4().hex[:6]
    namespace = f"bench-{tag}"
    core.create_namespace({"metadata": {"name": namespace}})
    flavor = f"bench-{tag}"
    cluster_queues = [f"bench-{tag}-{i}" for i in range(max(1, args.queues // 3))]
    try:
        custom.create_cluster_custom_object(
            GROUP, version, "resourceflavors", kueue_object(version, "ResourceFlavor", flavor)
        )
        for cq in cluster_queues:
            custom.create_cluster_custom_object(
                GROUP,
                version,
                "clusterqueues",
                {
                    **kueue_object(version, "ClusterQueue", cq),
                    "spec": {
                        cohort_key: f"bench-{tag}",
                        "namespaceSelector": {},
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu", "memory"],
                                "flavors": [
                                    {
                                        "name": flavor,
                                        "resources": [
                                            {"name": "cpu", "nominalQuota": "8"},
                                            {"name": "memory", "nominalQuota": "32Gi"},
                                        ],
                                    }
                                ],
                            }
                        ],
                    },
                },
            )
        for i in range(args.queues):
            custom.create_namespaced_custom_object(
                GROUP,
                version,
                namespace,
                "localqueues",
                {
                    **kueue_object(version, "LocalQueue", f"lq-{i}"),
                    "spec": {"clusterQueue": cluster_queues[i % len(cluster_queues)]},
                },
            )

        session = KubeSession(
            namespace=namespace, kube_context=None, environ={"KUBECONFIG": state.kubeconfig}
        )
        start = time.perf_counter()
        session.start()
        queues = QueueService(session)
        first = queues.list().to_json()
        startup_ms = (time.perf_counter() - start) * 1000
        assert len(first["queues"]) == args.queues, first

        def baseline() -> object:
            lqs = custom.list_namespaced_custom_object(GROUP, version, namespace, "localqueues")
            cqs = custom.list_cluster_custom_object(GROUP, version, "clusterqueues")
            cohorts = (
                custom.list_cluster_custom_object(GROUP, version, "cohorts")
                if version == "v1beta2"
                else {"items": []}
            )
            return [
                s.to_json()
                for s in queue_summaries(
                    [LocalQueueInfo.from_object(o) for o in lqs["items"]],
                    [ClusterQueueQuota.from_object(o) for o in cqs["items"]],
                    [CohortQuota.from_object(o) for o in cohorts["items"]],
                )
            ]

        cache_samples = timed(lambda: queues.list().to_json(), args.rounds)
        baseline_samples = timed(baseline, max(20, args.rounds // 4))

        # Propagation: a Workload Kueue admits shows up in queues() through the watches.
        changed = threading.Event()
        session.add_listener(
            lambda plural, _type, obj: (
                plural == "localqueues"
                and (obj.get("status") or {}).get("admittedWorkloads") == 1
                and changed.set()
            )
        )
        submitted = time.perf_counter()
        custom.create_namespaced_custom_object(
            GROUP,
            version,
            namespace,
            "workloads",
            plain_workload(version, "probe", "lq-0", "1"),
        )
        if not changed.wait(60):
            raise SystemExit("the admitted Workload never reached the cache")
        propagation_ms = (time.perf_counter() - submitted) * 1000
        session.stop()
    finally:
        core.delete_namespace(namespace)
        for plural, name in [("clusterqueues", cq) for cq in cluster_queues] + [
            ("resourceflavors", flavor)
        ]:
            with contextlib.suppress(client.ApiException):
                custom.delete_cluster_custom_object(GROUP, version, plural, name)

    print(
        f"GET queues, {args.queues} LocalQueues on {len(cluster_queues)} ClusterQueues "
        f"(Kueue {state.versions['kueue']}, {version})"
    )
    print(describe("cache", cache_samples))
    print(describe("baseline", baseline_samples))
    ratio = statistics.median(baseline_samples) / statistics.median(cache_samples)
    print(
        f"speed-up  median {ratio:.0f}x"
        " (baseline = list LocalQueues, ClusterQueues, Cohorts per request)"
    )
    print(
        f"session start + first sync {startup_ms:.0f} ms; "
        f"Workload created -> admitted count visible via watch {propagation_ms:.0f} ms"
    )


if __name__ == "__main__":
    main()
