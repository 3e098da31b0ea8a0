"""The usage sampler's cost rules: one metrics API read per period whoever asks, none while
nobody follows or asks, Ray asked only for ready clusters someone shows; idle clocks.

A stand-in session plays the caches and the metrics API's answers (as ``test_positions.py``
does for the visibility API), and a hand-moved clock stands in for time, so each rule is
checked without a race.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from jupyter_dw.core.usage import UsageService
from jupyter_dw.domain.kinds.trainjob import TRAINJOB as TRAINJOB_KIND
from jupyter_dw.domain.usage import CLUSTER, RayLoad
from jupyter_dw.k8s.cache_set import pods_cache
from jupyter_dw.k8s.metrics import MetricsRead
from jupyter_dw.k8s.resources import TRAIN_JOB
from jupyter_dw.k8s.session import KubeSession

TRAINJOB = TRAINJOB_KIND.word  # a TrainJob's usage subject: its kind's word
TRAINJOB_PODS = pods_cache(TRAINJOB_KIND)  # its pods' cache, made from its pod_label


def raycluster(name: str, head_ready: bool = True) -> dict[str, Any]:
    status = "True" if head_ready else "False"
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "HeadPodReady", "status": status}]},
    }


def pod(name: str, cluster: str, label: str = "ray.io/cluster") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {label: cluster}},
        "spec": {
            "nodeName": "n",
            "containers": [
                {"name": "ray", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
            ],
        },
        "status": {"phase": "Running"},
    }


class Session:
    def __init__(self) -> None:
        self.clusters = [raycluster("a"), raycluster("b", head_ready=False)]
        self.pods = {"a": [pod("a-head", "a")], "b": [pod("b-head", "b")]}
        self.cpu = {"a-head": "500m", "b-head": "10m"}
        self.trainjobs: list[dict[str, Any]] = []
        self.trainjob_pods: dict[str, list[dict[str, Any]]] = {}
        self.reads = 0

    def pod_metrics(self) -> MetricsRead:
        self.reads += 1
        return MetricsRead(
            [
                {"metadata": {"name": n}, "timestamp": "2026-11-26T10:00:00Z",
                 "containers": [{"name": "ray", "usage": {"cpu": c, "memory": "1Mi"}}]}
                for n, c in self.cpu.items()
            ]
        )  # fmt: skip

    def cached_ray_clusters(self) -> list[dict[str, Any]]:
        return self.clusters

    def cached_ray_cluster(self, name: str) -> dict[str, Any] | None:
        return next((c for c in self.clusters if c["metadata"]["name"] == name), None)

    def cached_jobs(self, resource: Any) -> list[dict[str, Any]]:
        assert resource == TRAIN_JOB
        return self.trainjobs

    def indexed(self, kind: Any, index: str, key: str) -> list[dict[str, Any]]:
        if kind == TRAINJOB_PODS:
            return self.trainjob_pods.get(key, [])
        return self.pods.get(key, [])


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def service(session: Session, clock: Clock, loads: list[str]) -> UsageService:
    """A sampler sampled by hand (no thread): each rule is checked step by step."""

    def load(name: str) -> RayLoad:
        loads.append(name)
        return RayLoad({"CPU": (Decimal(0), Decimal(1))}, 0, 0, 0)

    return UsageService(
        cast(KubeSession, session), load, period=15.0, clock=clock, background=False
    )


def test_readers_share_one_read_per_period():
    session, clock, loads = Session(), Clock(), []
    usage = service(session, clock, loads)
    assert session.reads == 0  # made: nothing read
    first = usage.usage("a")
    assert session.reads == 1 and loads == []  # a read never waits on a Ray head
    assert first.resources["cpu"].used == Decimal("0.5")
    usage.usage("a")
    usage.usage("b")
    assert session.reads == 1  # within the period: the sample held, whichever cluster
    clock.now += 15.0
    usage.usage("a")
    assert session.reads == 2


def test_a_live_view_never_asks_and_nothing_is_read_without_a_reader():
    session, clock, loads = Session(), Clock(), []
    usage = service(session, clock, loads)
    held = usage.usage("a", ask=False)
    assert session.reads == 0 and held.metrics_reason == "not read yet"


def test_ray_is_asked_only_for_ready_clusters_and_idle_is_clocked():
    session, clock, loads = Session(), Clock(), []
    usage = service(session, clock, loads)
    told: list[set[tuple[str, str]]] = []
    usage.add_listener(told.append)
    usage.follow()  # a viewer showing every cluster
    usage.sample()
    assert loads == ["a"]  # b's head is not ready
    assert told == [{(CLUSTER, "a"), (CLUSTER, "b")}]
    a = usage.usage("a", ask=False)
    assert a.idle is True and a.idle_basis == "ray"
    since = usage.idle_since("a")
    assert since is not None
    # b: Ray not asked; the metrics API says 10m of 1 CPU, below 5 %: idle by the metrics.
    b = usage.usage("b", ask=False)
    assert (b.idle, b.idle_basis) == (True, "metrics")
    usage.sample()
    assert len(told) == 1 and usage.idle_since("a") == since  # nothing changed
    session.cpu["b-head"] = "900m"
    usage.sample()
    assert told[-1] == {(CLUSTER, "b")} and usage.idle_since("b") is None


def test_following_samples_until_the_last_follower_leaves():
    import threading

    session, clock = Session(), Clock()
    usage = UsageService(cast(KubeSession, session), None, period=3600.0, clock=clock)
    sampled = threading.Event()
    usage.add_listener(lambda names: sampled.set())
    stop_one, stop_two = usage.follow(), usage.follow()
    assert sampled.wait(10) and session.reads == 1  # the first sample at once, then one per hour
    stop_one()
    assert usage.following == 1
    stop_two()
    thread = usage._thread
    if thread is not None:
        thread.join(10)
        assert not thread.is_alive()
    assert session.reads == 1 and usage.following == 0


def test_the_ray_loader_looking_its_cluster_up_reads_no_second_sample():
    # The product's Ray loader looks the cluster up (a full record, usage included) before it
    # asks the head; while the sample is under way that read must not ask the metrics API
    # again (a benchmark found two reads per period, 17 ms apart).
    session, clock, loads = Session(), Clock(), []
    usage = service(session, clock, loads)

    def load(name: str) -> RayLoad:
        loads.append(name)
        usage.usage(name)  # the default: a reader that asks
        return RayLoad({"CPU": (Decimal(0), Decimal(1))}, 0, 0, 0)

    usage.ray_load = load
    usage.follow()
    usage.sample()
    assert loads == ["a"] and session.reads == 1
    clock.now += 15.0  # the held sample is stale while the next one asks Ray
    usage.sample()
    assert loads == ["a", "a"] and session.reads == 2
    clock.now += 15.0
    usage.usage("a")  # a reader outside a sample still asks once per period
    assert session.reads == 3


def test_nothing_to_measure_asks_nothing():
    """No Ray cluster has a pod on a node (queued, stopped, none yet): no metrics call."""
    session, clock, loads = Session(), Clock(), []
    for pods in session.pods.values():
        for pod in pods:
            del pod["spec"]["nodeName"]  # gated or unscheduled
    usage = service(session, clock, loads)
    usage.follow()
    usage.sample()
    assert session.reads == 0 and usage.reads == 0 and usage.samples == 1
    session.pods["a"][0]["spec"]["nodeName"] = "n"  # one is bound: measured again
    clock.now += 15.0
    usage.sample()
    assert session.reads == 1 and usage.reads == 1


def test_a_rate_that_moves_within_the_shown_figure_is_no_change():
    # metrics-server's CPU is a rate: each sample reads a little differently. A reader sees
    # "0.5" either way; only a change of the figure shown (or of idle) is told.
    session, clock, loads = Session(), Clock(), []
    usage = service(session, clock, loads)
    told: list[set[tuple[str, str]]] = []
    usage.add_listener(told.append)
    usage.follow()
    usage.sample()
    assert len(told) == 1
    session.cpu["a-head"] = "500300000n"  # 0.5003 cores: still "0.5"
    session.cpu["b-head"] = "10400000n"  # 0.0104: still "0.01"
    clock.now += 15.0
    usage.sample()
    assert len(told) == 1 and usage.usage("a", ask=False).resources["cpu"].used == Decimal("0.5003")
    session.cpu["a-head"] = "560m"  # "0.56": a reader sees it
    clock.now += 15.0
    usage.sample()
    assert told[-1] == {(CLUSTER, "a")}


def test_a_trainjob_is_its_pods_summed_from_the_same_sample():
    session, clock, loads = Session(), Clock(), []
    session.trainjobs = [{"metadata": {"name": "t"}}]
    label = "jobset.sigs.k8s.io/jobset-name"
    session.trainjob_pods = {"t": [pod("t-0", "t", label), pod("t-1", "t", label)]}
    session.cpu.update({"t-0": "250m", "t-1": "750m"})
    usage = service(session, clock, loads)
    told: list[set[tuple[str, str]]] = []
    usage.add_listener(told.append)
    usage.follow()
    usage.sample()
    assert session.reads == 1 and loads == ["a"]  # one read for clusters and jobs; no Ray
    assert (TRAINJOB, "t") in told[0]
    job = usage.usage("t", ask=False, kind=TRAINJOB)
    assert job.resources["cpu"].held == Decimal(2) and job.resources["cpu"].used == Decimal(1)
    assert job.ray is None and job.idle is False and job.idle_basis == "metrics"
    session.cpu["t-1"] = "1m"  # 250m + 1m of 2 CPU: t-0 still above 5 %, the figure moved
    clock.now += 15.0
    usage.sample()
    assert told[-1] == {(TRAINJOB, "t")}
    assert usage.usage("t", ask=False, kind=TRAINJOB).resources["cpu"].used == Decimal("0.251")
    session.trainjobs = []  # gone: forgotten
    clock.now += 15.0
    usage.sample()
    assert usage.idle_since("t", TRAINJOB) is None and (TRAINJOB, "t") not in usage._last
