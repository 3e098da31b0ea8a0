"""How fast is ``GET queues``'s answer, from the watch caches, against listing per request?

Runs against the local control plane (started if needed). Creates a namespace with
``--queues`` LocalQueues on ``--cluster-queues`` ClusterQueues (two flavors, cohorts under a
root Cohort) and ``--workloads`` Workloads that Kueue queues or admits
(:mod:`tests.cluster.scale`), then in the same run measures:

- **unchanged**: ``QueueService.list().to_json()`` (what ``GET queues`` answers) while the
  caches do not change between calls: the product's path (watch caches, no API call);
- **changed**: the same, each call right after a change reached the caches (a LocalQueue or
  a ClusterQueue annotated, alternately): what an answer costs when it must be derived again;
- **per call**: what ``GET queues`` cost before issue 19's memo: every call parses every
  cached queue object and derives and formats every summary again (same caches, no API call);
- **baseline**: what a polling implementation does per request: list LocalQueues,
  ClusterQueues and Cohorts from the API server, then the same ``queue_summaries`` call;
- **propagation**: from creating a Workload to Kueue's count of it visible in
  ``QueueService.list()`` (pushed by watches).

Usage: ``.venv/bin/python -m benchmarks.bench_queues [--scale | --queues 30 ...] [--rounds N]``;
``--scale`` is 200 LocalQueues / 50 ClusterQueues / 5,000 Workloads. ``--smoke`` runs a tiny
setup for a few rounds and checks only that every figure was measured (for ``make test``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from benchmarks.testbed import GROUP, connect
from jupyter_dw.core.queues import QueueService
from jupyter_dw.domain.kueue_model import ClusterQueueQuota, CohortQuota, LocalQueueInfo
from jupyter_dw.domain.priorities import PriorityClass
from jupyter_dw.domain.quota import queue_summaries
from jupyter_dw.domain.scheduling import FlavorTraits
from jupyter_dw.k8s.resources import (
    CLUSTER_QUEUE,
    COHORT,
    LOCAL_QUEUE,
    RESOURCE_FLAVOR,
    WORKLOAD_PRIORITY_CLASS,
    ResourceKind,
)
from jupyter_dw.k8s.session import KubeSession
from jupyter_dw.k8s.watch_cache import WatchCache
from tests.cluster.fixtures import plain_workload
from tests.cluster.scale import ScaleShape, ScaleTestbed, counted_workloads, scale_testbed

TICK_ANNOTATION = "benchmarks.jupyter-dw/tick"


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
        f"{name:<10} n={len(samples):<4} median {statistics.median(samples):8.3f} ms   "
        f"p95 {q[18]:8.3f} ms"
    )


def after_changes(
    session: KubeSession,
    custom: client.CustomObjectsApi,
    testbed: ScaleTestbed,
    call: Callable[[], object],
    rounds: int,
) -> list[float]:
    """Milliseconds of ``call`` right after each of ``rounds`` changes has reached the caches:
    a LocalQueue and a ClusterQueue in turn get a new annotation (a write Kueue ignores)."""
    version = testbed.api_version
    samples = []
    for i in range(rounds):
        patch = {"metadata": {"annotations": {TICK_ANNOTATION: str(i)}}}
        if i % 2:
            cache, name = session.cache(LOCAL_QUEUE), testbed.local_queues[0]
            namespace = testbed.namespace
            custom.patch_namespaced_custom_object(
                GROUP, version, testbed.namespace, "localqueues", name, patch
            )
        else:
            cache, name, namespace = session.cache(CLUSTER_QUEUE), testbed.cluster_queues[0], ""
            custom.patch_cluster_custom_object(GROUP, version, "clusterqueues", name, patch)
        assert cache is not None
        wait_annotation(cache, name, namespace, str(i))
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def wait_annotation(cache: WatchCache, name: str, namespace: str, tick: str) -> None:
    def seen(_: object) -> bool:
        held = cache.get(name, namespace) or {}
        return (held.get("metadata") or {}).get("annotations", {}).get(TICK_ANNOTATION) == tick

    if not cache.wait_until(seen, 30):
        raise SystemExit(f"the change to {name} never reached the cache")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=30)
    parser.add_argument("--cluster-queues", type=int, help="default: a third of --queues")
    parser.add_argument("--workloads", type=int, default=0)
    parser.add_argument("--scale", action="store_true", help="200 / 50 / 5,000 (issue 19)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--changes", type=int, default=40, help="rounds with a change before")
    parser.add_argument("--smoke", action="store_true", help="tiny and quick; checks it ran")
    args = parser.parse_args()
    if args.scale:
        args.queues, args.cluster_queues, args.workloads = 200, 50, 5000
    if args.smoke:
        args.queues, args.cluster_queues, args.workloads = 4, 2, 8
        args.rounds, args.changes = 20, 4
    cluster_queues = args.cluster_queues or max(1, args.queues // 3)
    shape = ScaleShape(args.queues, cluster_queues, args.workloads, cohorts=min(5, cluster_queues))

    state, api, version = connect()
    custom = client.CustomObjectsApi(api)
    with scale_testbed(api, version, shape, kueue_pid=state.pids.get("kueue")) as testbed:
        session = KubeSession(namespace=testbed.namespace, kube_context=None)
        start = time.perf_counter()
        session.start()
        queues = QueueService(session)
        first = queues.list().to_json()
        startup_ms = (time.perf_counter() - start) * 1000
        assert len(first["queues"]) == args.queues, first
        counted = sum(q["pending"] + q["reserving"] for q in first["queues"])
        assert counted == args.workloads, f"Kueue counts {counted} of {args.workloads} Workloads"

        def baseline() -> object:
            ns = testbed.namespace
            lqs = custom.list_namespaced_custom_object(GROUP, version, ns, "localqueues")
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

        def answer() -> object:
            return queues.list().to_json()

        def per_call() -> object:
            def parsed(kind: ResourceKind, parse: Callable[[dict], Any]) -> list[Any]:
                cache = session.cache(kind)
                return [parse(o) for o in cache.snapshot()] if cache is not None else []

            parsed(RESOURCE_FLAVOR, FlavorTraits.from_object)
            parsed(WORKLOAD_PRIORITY_CLASS, PriorityClass.from_object)
            summaries = queue_summaries(
                parsed(LOCAL_QUEUE, LocalQueueInfo.from_object),
                parsed(CLUSTER_QUEUE, ClusterQueueQuota.from_object),
                parsed(COHORT, CohortQuota.from_object),
            )
            return [s.to_json() for s in summaries]

        generations = _generations(session)
        unchanged_samples = timed(answer, args.rounds)
        # Kueue still writes status (pending Workloads' reasons) a while after a bulk create:
        # a change between two calls makes the second one derive its answer again.
        changed_meanwhile = _generations(session) - generations
        changed_samples = after_changes(session, custom, testbed, answer, args.changes)
        per_call_samples = timed(per_call, max(10, args.rounds // 4))
        baseline_samples = timed(baseline, max(10, args.rounds // 4))

        # Propagation: a new Workload shows up in Kueue's counts in queues() via the watches.
        seen = threading.Event()
        lq0 = testbed.local_queues[0]
        before = next(q for q in first["queues"] if q["name"] == lq0)
        target = before["pending"] + before["reserving"] + 1
        session.add_listener(
            lambda plural, _type, obj: (
                plural == "localqueues"
                and obj["metadata"]["name"] == lq0
                and counted_workloads(obj) >= target
                and seen.set()
            )
        )
        submitted = time.perf_counter()
        custom.create_namespaced_custom_object(
            GROUP,
            version,
            testbed.namespace,
            "workloads",
            plain_workload(version, "probe", lq0, "1"),
        )
        if not seen.wait(60):
            raise SystemExit("the new Workload never reached the cache")
        propagation_ms = (time.perf_counter() - submitted) * 1000
        session.stop()

    print(
        f"GET queues, {args.queues} LocalQueues on {cluster_queues} ClusterQueues, "
        f"{args.workloads} Workloads (Kueue {state.versions['kueue']}, {version})"
    )
    print(f"setup: {testbed.describe()}; teardown {testbed.timings['teardown']:.1f} s")
    print(describe("unchanged", unchanged_samples))
    print(describe("changed", changed_samples))
    print(describe("per call", per_call_samples))
    print(describe("baseline", baseline_samples))
    base = statistics.median(baseline_samples)
    print(
        f"speed-up  median {base / statistics.median(unchanged_samples):.0f}x unchanged, "
        f"{base / statistics.median(changed_samples):.0f}x changed, "
        f"{base / statistics.median(per_call_samples):.0f}x per call"
        " (baseline = list LocalQueues, ClusterQueues, Cohorts per request)"
    )
    print(
        f"session start + first sync {startup_ms:.0f} ms; queue caches changed "
        f"{changed_meanwhile} times during the unchanged rounds; "
        f"Workload created -> counted in queues() via watch {propagation_ms:.0f} ms"
    )
    if args.smoke:
        figures = [unchanged_samples, changed_samples, per_call_samples, baseline_samples]
        assert all(figures) and propagation_ms > 0, "a figure is missing"
        print("smoke: ok", file=sys.stderr)


def _generations(session: KubeSession) -> int:
    caches = [session.cache(kind) for kind in (LOCAL_QUEUE, CLUSTER_QUEUE)]
    return sum(cache.generation for cache in caches if cache is not None)


if __name__ == "__main__":
    main()
