"""What reading through the server costs a kernel: the events snapshot of a namespace at scale,
and one message of each kind that follows, decoded back into the core's objects
(:mod:`jupyter_dw.core.feed_json`).

In one process, no control plane: the objects are made from Kubernetes objects shaped as Kueue
and KubeRay write them (``--queues`` LocalQueues on ``--cluster-queues`` ClusterQueues,
``--workloads`` Workloads, half admitted and half waiting with positions, ``--clusters`` Ray
clusters). Measured in the same run, each the median of ``--rounds``:

- **encode**: ``Snapshot.to_json()`` and ``json.dumps`` (what the server pays per socket);
- **parse** (baseline): ``json.loads`` of that text, what any client pays (the sidebar too);
- **decode**: ``message_from_json`` of the parsed message, what a kernel adds to have the
  same typed objects as one that reads Kubernetes itself;
- per message: a ``workload`` and a ``cluster`` message, parsed and decoded.

Usage: ``.venv/bin/python -m benchmarks.bench_decode [--workloads 5000] [--rounds 20]
[--json FILE] [--smoke]`` (``--smoke``: 100 Workloads, a few rounds, checks that it runs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from jupyter_dw.core.cluster_results import ClusterInfo, PodInfo
from jupyter_dw.core.feed_json import FeedState, message_from_json
from jupyter_dw.core.feed_messages import Cause, ClusterChanged, Snapshot, WorkloadChanged
from jupyter_dw.core.queue_results import QueueList
from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.cluster_state import cluster_snapshot
from jupyter_dw.domain.freshness import Freshness, WatchHealth
from jupyter_dw.domain.kinds import KINDS
from jupyter_dw.domain.kueue_model import ClusterQueueQuota, LocalQueueInfo
from jupyter_dw.domain.milestones import milestones
from jupyter_dw.domain.quota import queue_summaries
from jupyter_dw.domain.ray_auth import RayAuth
from jupyter_dw.domain.workloads import WorkloadInfo, workload_info

T0 = "2026-11-26T10:00:00Z"


def cluster_queue(index: int) -> dict[str, Any]:
    quota = [{"name": r, "nominalQuota": q} for r, q in (("cpu", "64"), ("memory", "256Gi"))]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": f"cq-{index:03d}"},
        "spec": {
            "cohort": f"pool-{index % 5}",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": f, "resources": quota} for f in ("small", "big")],
                }
            ],
        },
        "status": {
            "pendingWorkloads": 12,
            "flavorsReservation": [
                {"name": "small", "resources": [{"name": "cpu", "total": "40"}]}
            ],
        },
    }


def local_queue(index: int, cluster_queues: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": f"team-{index:03d}", "namespace": "ns"},
        "spec": {"clusterQueue": f"cq-{index % cluster_queues:03d}"},
        "status": {"pendingWorkloads": 3, "reservingWorkloads": 2, "admittedWorkloads": 2},
    }


def queues(count: int, cluster_queues: int) -> QueueList:
    summaries = queue_summaries(
        [LocalQueueInfo.from_object(local_queue(i, cluster_queues)) for i in range(count)],
        [ClusterQueueQuota.from_object(cluster_queue(i)) for i in range(cluster_queues)],
        [],
    )
    return QueueList("ns", "v1beta2", True, True, tuple(summaries))


def workload(index: int, queue: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A Workload of a two-pod-set job, admitted (even ``index``) or waiting, and its
    visibility item when it waits."""
    name = f"raycluster-c{index:05d}-{index:05x}"
    container = {"name": "ray", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}
    admitted = index % 2 == 0
    reserved = "True" if admitted else "False"
    conditions = [
        {
            "type": "QuotaReserved",
            "status": reserved,
            "reason": "QuotaReserved" if admitted else "Pending",
            "message": "Quota reserved in ClusterQueue cq-000"
            if admitted
            else "couldn't assign flavors to pod set workers: insufficient unused quota for cpu "
            "in flavor small, 2 more needed",
            "lastTransitionTime": T0,
        }
    ]
    if admitted:
        conditions.append(
            {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": T0}
        )
    obj: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "creationTimestamp": T0,
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "name": f"c{index:05d}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "queueName": queue,
            "priority": 0,
            "podSets": [
                {"name": n, "count": c, "template": {"spec": {"containers": [container]}}}
                for n, c in (("head", 1), ("workers", 2))
            ],
        },
        "status": {"conditions": conditions},
    }
    if admitted:
        flavors = {"cpu": "small", "memory": "small"}
        obj["status"]["admission"] = {
            "clusterQueue": "cq-000",
            "podSetAssignments": [
                {"name": "head", "flavors": flavors, "count": 1},
                {"name": "workers", "flavors": flavors, "count": 2},
            ],
        }
        return obj, None
    item = {
        "metadata": {"name": name},
        "positionInLocalQueue": index // 2 % 50,
        "positionInClusterQueue": index // 2,
    }
    return obj, item


def workloads(count: int, queue_names: list[str]) -> tuple[WorkloadInfo, ...]:
    made = (workload(i, queue_names[i % len(queue_names)]) for i in range(count))
    return tuple(info for obj, item in made if (info := workload_info(obj, item)) is not None)


def cluster(index: int, queue: str) -> ClusterInfo:
    spec = ValidatedClusterSpec.from_request(
        {"name": f"c{index:03d}", "queue": queue, "workers": 2}
    )
    raycluster = spec.to_raycluster("ns", owner="alice")
    raycluster["metadata"].update({"uid": f"uid-{index}", "creationTimestamp": T0})
    raycluster["spec"]["suspend"] = False
    raycluster["status"] = {
        "readyWorkerReplicas": 2,
        "desiredWorkerReplicas": 2,
        "head": {"podName": f"c{index:03d}-head", "serviceName": f"c{index:03d}-head-svc"},
        "conditions": [
            {"type": "HeadPodReady", "status": "True", "lastTransitionTime": T0},
            {"type": "RayClusterProvisioned", "status": "True", "lastTransitionTime": T0},
        ],
        "state": "ready",
    }
    wl, _ = workload(index * 2, queue)
    snapshot = cluster_snapshot(raycluster, wl)
    pods = (
        PodInfo(f"c{index:03d}-head", "head", "Running", True),
        *tuple(PodInfo(f"c{index:03d}-worker-{w}", "worker", "Running", True) for w in range(2)),
    )
    steps = milestones(snapshot, raycluster, wl)
    return ClusterInfo(
        snapshot, f"/dw/ray/c{index:03d}/", "alice", pods, steps, ray_auth=RayAuth("token")
    )


def median_ms(call: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(samples), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument("--cluster-queues", type=int, default=50)
    parser.add_argument("--workloads", type=int, default=5000)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--smoke", action="store_true", help="tiny: every figure measured")
    args = parser.parse_args()
    if args.smoke:
        args.queues, args.cluster_queues, args.workloads, args.clusters, args.rounds = (
            5,
            2,
            100,
            3,
            3,
        )
    answer = queues(args.queues, args.cluster_queues)
    names = answer.names()
    infos = tuple(cluster(i, names[i % len(names)]) for i in range(args.clusters))
    snapshot = Snapshot(
        namespace="ns",
        queues=answer,
        queues_error=None,
        clusters=infos,
        clusters_error=None,
        positions_visible=True,
        health=WatchHealth({"workloads": Freshness(), "rayclusters": Freshness()}),
        workloads=workloads(args.workloads, names),
        jobs={kind.plural: ((), None) for kind in KINDS},
        kinds=KINDS,
        holdings={},
    )
    text = json.dumps(snapshot.to_json())
    parsed = json.loads(text)
    decoded = message_from_json(parsed, FeedState())
    assert isinstance(decoded, Snapshot) and decoded.to_json() == parsed  # the same, to the letter
    state = FeedState().after(decoded)
    one = snapshot.workloads[1] if snapshot.workloads else None
    messages = {
        "workload": json.dumps(
            WorkloadChanged(
                "MODIFIED", one.name, one.queue, Cause("Workload", one.name, "MODIFIED"), one
            ).to_json()
        )
        if one is not None
        else "{}",
        "cluster": json.dumps(
            ClusterChanged(
                "MODIFIED", infos[0].name, Cause("Pod", "x", "MODIFIED"), infos[0], ()
            ).to_json()
        ),
    }
    figures: dict[str, Any] = {
        "queues": args.queues,
        "workloads": args.workloads,
        "clusters": args.clusters,
        "rounds": args.rounds,
        "snapshot_kib": round(len(text) / 1024, 1),
        "encode_ms": median_ms(lambda: json.dumps(snapshot.to_json()), args.rounds),
        "parse_ms": median_ms(lambda: json.loads(text), args.rounds),
        "decode_ms": median_ms(lambda: message_from_json(parsed, FeedState()), args.rounds),
    }
    for kind, message in messages.items():
        figures[f"{kind}_parse_ms"] = median_ms(lambda m=message: json.loads(m), args.rounds * 50)
        figures[f"{kind}_decode_ms"] = median_ms(
            lambda m=message: message_from_json(json.loads(m), state), args.rounds * 50
        )
    print(
        f"snapshot of {args.queues} LocalQueues, {args.workloads:,} Workloads, "
        f"{args.clusters} clusters: {figures['snapshot_kib']:,} KiB (median of {args.rounds})"
    )
    print(f"  server: to_json + dumps     {figures['encode_ms']:9.3f} ms")
    print(f"  baseline: json.loads       {figures['parse_ms']:9.3f} ms")
    print(f"  kernel: decode (added)     {figures['decode_ms']:9.3f} ms")
    for kind in messages:
        print(
            f"  a {kind} message: loads {figures[f'{kind}_parse_ms']:.3f} ms, loads + decode "
            f"{figures[f'{kind}_decode_ms']:.3f} ms"
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)
    if args.smoke:
        assert all(v is not None for v in figures.values())
        print("smoke: ok", file=sys.stderr)


if __name__ == "__main__":
    main()
