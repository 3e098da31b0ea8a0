"""Watch health under real faults, on the disposable control plane (never the shared cluster).

Each fault is caused for real: the workbench's Role deleted, a watch connection made silent
by a TCP proxy, etcd compacted under a watch (410 Gone from an API server without a watch
cache), kube-apiserver killed and started again, Kueue stopped, and Kueue's
``waitForPodsReady`` evicting a cluster whose pods never become ready. The events socket,
``GET context``, ``GET clusters`` and the widget models must say what can no longer be trusted
(``reconnecting``/``stale``), never show old data as fresh, and recover by themselves. Each
test undoes its fault; they are ordered so the cluster restarts as little as possible.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

import jupyter_dw as dw
from jupyter_dw.k8s.resources import RAY_CLUSTER
from jupyter_dw.k8s.watch_cache import WatchCache
from tests.cluster.disposable import DisposableCluster, TcpProxy
from tests.cluster.kubeapi import wait_for
from tests.integration.clusters_support import (
    Events,
    call,
    create_suspended_raycluster,
    make_queue,
    open_events,
    rayclusters,
    small_cluster,
    state_is,
)
from tests.integration.test_notebook_widgets import until
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = [pytest.mark.cluster, pytest.mark.faults]

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES
NAMESPACED_CACHES = {"localqueues", "workloads", "rayclusters", "rayjobs", "pods", "events"}
"""The namespaced watches every disposable plane feeds (``trainjobs`` too where it runs
Kubeflow Trainer: :func:`namespaced_caches`)."""
CLUSTER_CACHES = {"clusterqueues", "cohorts", "resourceflavors"}
RECOVERY_BOUND = 60.0
"""A generous bound on recovering after a fault is undone (the time is measured in
benchmarks/bench_recovery.py, not asserted here)."""

Message = dict[str, Any]


def namespaced_caches(plane: DisposableCluster) -> set[str]:
    """:data:`NAMESPACED_CACHES`, plus ``trainjobs`` and ``trainjob-pods`` on a plane that
    runs Kubeflow Trainer (beside Kueue 0.19: the session then watches TrainJobs and their
    pods in the namespace)."""
    extra = {"trainjobs", "trainjob-pods"} if plane.versions.trainjobs else set()
    return NAMESPACED_CACHES | extra


def health_is(state: str) -> Callable[[Message], bool]:
    return lambda m: m["type"] == "health" and m["freshness"]["state"] == state


def cluster_freshness(name: str, state: str) -> Callable[[Message], bool]:
    return lambda m: (
        m["type"] == "cluster"
        and m["name"] == name
        and m["state"] is not None
        and m["state"]["freshness"]["state"] == state
    )


async def seen_or_next(
    events: Events, since: int, predicate: Callable[[Message], bool], what: str
) -> Message:
    """:meth:`Events.since`, waiting as long as a recovery may take."""
    return await events.since(since, predicate, what, timeout=RECOVERY_BOUND)


async def watch_open(cache: WatchCache) -> None:
    """Wait until ``cache``'s watch stream is open (after its list), so that silencing the
    connections open now silences it."""
    await asyncio.to_thread(wait_for, lambda: cache.watching, timeout=RECOVERY_BOUND, what="watch")


async def context_health(jp_fetch) -> dict[str, Any]:
    code, context = await call(jp_fetch, "GET", "context")
    assert code == 200, context
    return dict(context["health"])


# --------------------------------------------------------------------------------------------
# No component stopped
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dw_config", [{"access_refresh_interval": 2.0}], indirect=True)
async def test_role_removed_marks_the_caches_it_fed_stale(
    kube, kueue, namespace, identity, jp_fetch, jp_ws_fetch, faults
):
    make_queue(kueue)
    events, snapshot = await open_events(jp_ws_fetch)
    health = snapshot["health"]
    if health["freshness"]["state"] == "reconnecting":
        # A cache's first list may still be under way when the socket opens ("first list not
        # done yet"): the socket says when it is done.
        health = await events.until(health_is("live"), "every watch listed")
    assert health["freshness"]["state"] == "live", health
    namespaced = namespaced_caches(faults)
    assert set(health["caches"]) >= namespaced | CLUSTER_CACHES

    # The workbench's Role goes (its ClusterRole for quota stays).
    client.RbacAuthorizationV1Api(kube).delete_namespaced_role(identity.name, namespace)

    message = await events.until(health_is("stale"), "the watches of the Role reported stale")
    caches = message["caches"]
    stale = {plural for plural, f in caches.items() if f["state"] == "stale"}
    assert stale == namespaced, caches
    assert "workloads.kueue.x-k8s.io" in caches["workloads"]["reason"]
    assert "forbidden" in caches["workloads"]["reason"]
    assert caches["workloads"]["since"] is not None
    assert all(caches[plural]["state"] == "live" for plural in CLUSTER_CACHES), caches

    health = await context_health(jp_fetch)
    assert health["freshness"]["state"] == "stale"
    assert health["caches"]["rayclusters"]["state"] == "stale"
    assert "list rayclusters.ray.io" in health["caches"]["rayclusters"]["reason"]
    assert health["caches"]["clusterqueues"]["state"] == "live"
    events.close()


@pytest.mark.parametrize("dw_config", [{"watch_idle_timeout": 2.0}], indirect=True)
async def test_a_silent_watch_is_noticed_and_reopened(
    kube, namespace, apiserver_proxy: TcpProxy, jp_ws_fetch, session, faults
):
    events, snapshot = await open_events(jp_ws_fetch)
    assert snapshot["clusters"] == []
    cache = session.cache(RAY_CLUSTER)
    await watch_open(cache)
    reopened_before = cache.idle_reopens
    accepted_before = apiserver_proxy.accepted

    # Every connection open now (the watches among them) goes silent, sockets kept open.
    assert apiserver_proxy.freeze() > 0
    create_suspended_raycluster(kube, namespace, "after-silence")  # past the proxy
    message = await events.until(
        lambda m: m["type"] == "cluster" and m["name"] == "after-silence",
        "a change made while the watch was silent",
        timeout=RECOVERY_BOUND,
    )
    assert message["event"] == "ADDED"
    if message["state"]["freshness"]["state"] != "live":
        # The RayCluster watch reopened first; another watch the cluster's state is made of
        # (its pods', its Workloads') may still be reconnecting: its reopening says so.
        assert message["state"]["freshness"]["state"] == "reconnecting", message
        message = await events.until(
            lambda m: (
                m["type"] == "cluster"
                and m["name"] == "after-silence"
                and m["state"]["freshness"]["state"] == "live"
            ),
            "the cluster live again once every watch reopened",
            timeout=RECOVERY_BOUND,
        )
    assert message["state"]["name"] == "after-silence"
    # Seen on a new connection, after the silent one was given up.
    assert cache.idle_reopens > reopened_before
    assert apiserver_proxy.accepted > accepted_before
    events.close()


@pytest.mark.parametrize("dw_config", [{"watch_idle_timeout": 600.0}], indirect=True)
async def test_410_gone_relists_with_no_lost_and_no_duplicate_event(
    kube,
    namespace,
    apiserver_proxy: TcpProxy,
    jp_fetch,
    jp_ws_fetch,
    session,
    faults: DisposableCluster,
):
    custom = client.CustomObjectsApi(kube)
    for name in ("kept", "changed", "removed"):
        create_suspended_raycluster(kube, namespace, name)
    await asyncio.to_thread(session.ray_clusters)  # started and synced
    cache = session.cache(RAY_CLUSTER)
    assert await asyncio.to_thread(cache.wait_until, lambda objs: len(objs) == 3, RECOVERY_BOUND)
    events, snapshot = await open_events(jp_ws_fetch)
    assert sorted(c["name"] for c in snapshot["clusters"]) == ["changed", "kept", "removed"]
    await watch_open(cache)
    relists_before = cache.relists
    since = len(events.seen)

    # The watches go silent (an idle timeout of 10 minutes: nothing re-opens them meanwhile);
    # changes happen, and etcd forgets the history the watches would resume from.
    apiserver_proxy.freeze()
    custom.delete_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", "removed")
    custom.patch_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "changed",
        {"metadata": {"labels": {"dw-test/changed": "yes"}}},
    )  # fmt: skip
    create_suspended_raycluster(kube, namespace, "added")
    etcd = faults.etcd()
    etcd.compact(etcd.revision())
    assert apiserver_proxy.cut() > 0  # the watches break: they resume from the old version

    await events.until(
        lambda _m: cluster_events(events, since).get("added") == ["ADDED"],
        "the re-list's news",
        timeout=RECOVERY_BOUND,
    )
    await events.until(
        lambda _m: {"removed", "changed"} <= set(cluster_events(events, since)),
        "the re-list's news",
        timeout=RECOVERY_BOUND,
    )
    assert cache.relists > relists_before  # 410 Gone for real, then a new list
    news = cluster_events(events, since)
    assert news == {"added": ["ADDED"], "changed": ["MODIFIED"], "removed": ["DELETED"]}, news
    code, answer = await call(jp_fetch, "GET", "clusters")
    assert code == 200
    listed = sorted(c["name"] for c in answer["clusters"])
    assert listed == sorted(rc["metadata"]["name"] for rc in rayclusters(kube, namespace))
    assert listed == ["added", "changed", "kept"]
    events.close()


def cluster_events(events: Events, since: int) -> dict[str, list[str]]:
    """Per cluster, the RayCluster events the socket reported from index ``since`` on."""
    found: dict[str, list[str]] = {}
    for message in events.seen[since:]:
        if message["type"] == "cluster" and message["cause"]["kind"] == "RayCluster":
            found.setdefault(message["name"], []).append(message["event"])
    return found


# --------------------------------------------------------------------------------------------
# Components stopped and started again
# --------------------------------------------------------------------------------------------


async def test_apiserver_restart_shows_reconnecting_then_recovers_by_itself(
    kube, kueue, namespace, kernel, jp_fetch, jp_ws_fetch, faults: DisposableCluster
):
    make_queue(kueue)
    code, body = await call(jp_fetch, "POST", "clusters", body=small_cluster("steady", workers=1))
    assert code == 201, body
    create_suspended_raycluster(kube, namespace, "doomed")
    events, _ = await open_events(jp_ws_fetch)
    await events.cluster_state("steady", state_is("ready"), "ready")
    widget = dw.ClusterStatus("steady")
    doomed_widget = dw.ClusterStatus("doomed")
    await until(widget, "state", lambda s: s == "ready", "the widget shows ready")
    since = len(events.seen)

    faults.stop_component("kube-apiserver", kill=True)
    await events.until(health_is("reconnecting"), "the socket says reconnecting")
    message = await seen_or_next(
        events, since, cluster_freshness("steady", "reconnecting"), "steady marked reconnecting"
    )
    assert message["state"]["state"] == "ready"  # the last known state, marked as such
    await until(widget, "freshness", lambda f: f["state"] == "reconnecting", "widget: not fresh")

    # While it is down, the cluster changes behind it (what another API server would write).
    key = f"/registry/ray.io/rayclusters/{namespace}/doomed"
    assert faults.etcd().delete(key) == 1
    since = len(events.seen)
    faults.start_component("kube-apiserver")

    await seen_or_next(events, since, health_is("live"), "the socket is live again")
    await seen_or_next(
        events,
        since,
        lambda m: m["type"] == "cluster" and m["name"] == "doomed" and m["state"] is None,
        "the change made while it was down",
    )
    fresh = await seen_or_next(events, since, cluster_freshness("steady", "live"), "steady fresh")
    assert fresh["state"]["state"] == "ready"
    await until(widget, "freshness", lambda f: f["state"] == "live", "widget: fresh again")
    await until(doomed_widget, "deleted", bool, "widget: the deletion made while it was down")
    code, answer = await call(jp_fetch, "GET", "clusters")
    assert code == 200
    assert [(c["name"], c["freshness"]["state"]) for c in answer["clusters"]] == [
        ("steady", "live")
    ]
    widget.close()
    doomed_widget.close()
    events.close()


@pytest.mark.parametrize("dw_config", [{"access_refresh_interval": 2.0}], indirect=True)
async def test_kueue_stopped_marks_its_clusters_stale_until_it_is_back(
    kube, kueue, namespace, jp_fetch, jp_ws_fetch, faults: DisposableCluster
):
    make_queue(kueue)
    code, _ = await call(jp_fetch, "POST", "clusters", body=small_cluster("managed", workers=1))
    assert code == 201
    create_suspended_raycluster(kube, namespace, "unmanaged")  # no queue: not Kueue's
    events, _ = await open_events(jp_ws_fetch)
    await events.cluster_state("managed", state_is("ready"), "ready")
    since = len(events.seen)

    faults.stop_component("kueue")
    message = await events.until(
        lambda m: m["type"] == "health" and m["kueue_controller"]["state"] == "stale",
        "Kueue reported not answering",
        timeout=RECOVERY_BOUND,
    )
    assert "Kueue is not answering" in message["kueue_controller"]["reason"]
    assert {f["state"] for f in message["caches"].values()} == {"live"}  # the API server is
    stale = await seen_or_next(
        events, since, cluster_freshness("managed", "stale"), "the managed cluster marked stale"
    )
    assert stale["state"]["state"] == "ready"  # its last known state, kept
    code, answer = await call(jp_fetch, "GET", "clusters")
    assert code == 200
    freshness = {c["name"]: c["freshness"] for c in answer["clusters"]}
    assert freshness["managed"]["state"] == "stale"
    assert "Kueue" in freshness["managed"]["reason"]
    assert freshness["unmanaged"]["state"] == "live"  # no Workload to follow
    assert (await context_health(jp_fetch))["kueue_controller"]["state"] == "stale"

    since = len(events.seen)
    faults.start_component("kueue")
    await seen_or_next(
        events,
        since,
        lambda m: m["type"] == "health" and m["kueue_controller"]["state"] == "live",
        "Kueue answering again",
    )
    await seen_or_next(events, since, cluster_freshness("managed", "live"), "managed fresh again")
    assert (await context_health(jp_fetch))["freshness"]["state"] == "live"
    events.close()


PODS_READY_TIMEOUT = {
    "waitForPodsReady": {
        "timeout": "5s",
        # Requeued only after an hour: the eviction stays what the cluster shows.
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 3600},
    }
}


@pytest.fixture
def pods_ready_timeout(faults: DisposableCluster):
    """Kueue restarted with ``waitForPodsReady`` (5 s); restarted without it after."""
    faults.stop_component("kueue")
    faults.start_component("kueue", kueue_config=PODS_READY_TIMEOUT)
    yield faults
    faults.stop_component("kueue")
    faults.start_component("kueue", kueue_config={})


async def test_pods_ready_timeout_shows_kueues_eviction_not_starting(
    kueue, jp_fetch, jp_ws_fetch, pods_ready_timeout
):
    make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    # Admitted, but its pods can never be scheduled, so they never become ready.
    request = small_cluster("never-ready", workers=1, node_selector={"dw-test/nowhere": "true"})
    code, created = await call(jp_fetch, "POST", "clusters", body=request)
    assert code == 201, created
    state = await events.cluster_state("never-ready", state_is("evicted"), "evicted by Kueue")
    assert state is not None
    assert state["reason"] == "PodsReadyTimeout"
    assert state["message"]  # Kueue's own words
    assert "Evicted" in events.milestones("never-ready")
    code, answer = await call(jp_fetch, "GET", "clusters", "never-ready")
    assert code == 200
    assert (answer["state"], answer["reason"]) == ("evicted", "PodsReadyTimeout")
    events.close()
