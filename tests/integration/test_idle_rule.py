"""Idle clusters give quota back: usage from a real Ray, the idle rule and on_server_stop.

KWOK pods run no Ray, so every cluster's Ray here is one real head behind a gateway that
routes ``/<cluster>/...`` to it (:mod:`tests.cluster.ray_standin`, what ``make demo`` uses):
the product asks it as it asks any cluster's head, with the cluster's own token. One head
serves every cluster, so a job on it makes every cluster busy at once — which these tests use:
a busy cluster is never stopped; once the job ends, the rule acts on this workbench's idle
cluster only, never on another user's.

The server runs with ``usage_interval`` 1 s and ``idle_cluster_timeout`` 6 s (a warning 4 s
before): the rule's clock, not the test's, decides; the tests wait on what the server says.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from tests.cluster.ray_standin import RayStandIn, ray_standin
from tests.integration.clusters_support import (
    call,
    make_queue,
    open_events,
    small_cluster,
    state_is,
    workload_of,
)
from tests.integration.ray_jobs_support import submit_to_ray, wait_for_file
from tests.integration.workbench_rbac import namespace_rules

WORKBENCH_RULES = [
    *namespace_rules(stop=True),
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]

pytestmark = pytest.mark.cluster

INTERVAL = 1.0
TIMEOUT = 6.0
WARNING = 4.0


@pytest.fixture
def standin(kube, namespace) -> Iterator[RayStandIn]:
    with ray_standin(kube, namespace) as ray:
        yield ray


@pytest.fixture
def dw_config(standin, request) -> dict[str, Any]:
    return {
        "ray_dashboard_url": standin.dashboard_template,
        "usage_interval": INTERVAL,
        "idle_cluster_timeout": TIMEOUT,
        "idle_cluster_warning": WARNING,
        **dict(getattr(request, "param", {})),
    }


async def until_true(predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Wait for a condition nothing announces (the sampler's count), bounded in time."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.1)


async def both_ready(events: Any, *names: str) -> None:
    """Read until every cluster of ``names`` has been reported ready, in whatever order."""
    ready: set[str] = set()

    def seen(message: dict[str, Any]) -> bool:
        state = message.get("state") if message.get("type") == "cluster" else None
        if state and state.get("state") == "ready":
            ready.add(message["name"])
        return ready >= set(names)

    await events.until(seen, f"{', '.join(names)} ready")


def extension(jp_serverapp) -> Any:
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_dw"]
    return app


def theirs(namespace: str, name: str, queue: str) -> dict[str, Any]:
    """A cluster another user of the namespace made through jupyter_dw (their owner)."""
    spec = ValidatedClusterSpec.from_request(small_cluster(name, workers=0, queue=queue))
    return spec.to_raycluster(namespace, owner="someone-else")


def rayclusters(kube) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube)


async def test_a_busy_cluster_is_kept_an_idle_one_stopped_while_others_wait(
    kube, kueue, namespace, identity, standin, jp_fetch, jp_ws_fetch, jp_serverapp, tmp_path
):
    queue = make_queue(kueue, cpu="2", memory="8Gi")  # room for two 1-CPU clusters
    events, _ = await open_events(jp_ws_fetch)
    code, made = await call(jp_fetch, "POST", "clusters", body=small_cluster("mine", workers=0))
    assert code == 201, made
    other = theirs(namespace, "theirs", queue.local_queue)
    rayclusters(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", other
    )
    await both_ready(events, "mine", "theirs")

    # A job on the (shared) head: both clusters are busy, whatever the rule's clock says.
    release = tmp_path / "release"
    submit_to_ray(standin.head_port, standin.token, wait_for_file(release))
    busy = await events.cluster_state(
        "mine",
        lambda s: bool(s and s["usage"] and (s["usage"]["ray"] or {}).get("jobs_running")),
        "Ray reports the running job",
    )
    assert busy["usage"]["idle"] is False and busy["usage"]["idle_basis"] == "ray"
    assert busy["usage"]["idle_action"] is None
    # A third cluster of mine waits for the quota the two hold.
    code, waiter = await call(jp_fetch, "POST", "clusters", body=small_cluster("waiter", workers=0))
    assert code == 201, waiter
    await events.cluster_state("waiter", state_is("queued"), "the waiter queued")
    usage = extension(jp_serverapp).core_loader.made.clusters.usage
    samples = usage.samples
    runner = extension(jp_serverapp).idle_runner
    # Longer than the timeout, sampled all along: the running job keeps both.
    await until_true(lambda: usage.samples >= samples + TIMEOUT / INTERVAL + 2, "samples past it")
    assert runner.acted == []
    code, now = await call(jp_fetch, "GET", "clusters", "mine")
    assert now["state"] == "ready" and now["usage"]["idle"] is False

    release.touch()  # the job ends: both clusters are idle from the next sample on
    warned = await events.cluster_state(
        "mine",
        lambda s: bool(s and ((s["usage"] or {}).get("idle_action") or {}).get("warning")),
        "the user warned before the rule acts",
    )
    action = warned["usage"]["idle_action"]
    assert warned["state"] == "ready" and action["action"] == "stop" and action["waiting"] == 1
    assert warned["usage"]["idle"] is True and warned["usage"]["idle_since"] is not None
    stopped = await events.cluster_state("mine", state_is("stopped"), "the rule stopped it")
    record = stopped["stopped"]
    assert record["reason"]["by"] == "idle-rule" and record["reason"]["waiting"] == 1
    assert record["reason"]["idle_seconds"] >= TIMEOUT
    await events.cluster_state("waiter", state_is("ready"), "the waiter admitted in its place")

    # Kept, inactive, pods gone; Kubernetes has the Event; the other user's cluster untouched.
    kept = rayclusters(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "mine"
    )
    assert (
        json.loads(kept["metadata"]["annotations"]["jupyter-dw/stop-reason"])["by"] == "idle-rule"
    )
    assert workload_of(kube, kueue, kept["metadata"]["uid"])["spec"]["active"] is False
    pods = client.CoreV1Api(kube)

    def pods_gone() -> bool:
        listed = pods.list_namespaced_pod(namespace, label_selector="ray.io/cluster=mine")
        return not [p for p in listed.items if p.metadata.deletion_timestamp is None]

    await until_true(pods_gone, "the stopped cluster's pods gone")
    found = (
        client.CoreV1Api(kube)
        .list_namespaced_event(
            namespace, field_selector="involvedObject.name=mine,reason=IdleStopped"
        )
        .items
    )
    assert len(found) == 1 and "while 1 workload waited" in found[0].message, found
    assert found[0].involved_object.kind == "RayCluster"
    code, them = await call(jp_fetch, "GET", "clusters", "theirs")
    assert them["state"] == "ready" and them["usage"]["idle"] is True
    assert them["usage"]["idle_action"] is None  # not this workbench's: never judged
    assert [name for name, _ in runner.acted] == ["mine"]
    events.close()


@pytest.mark.parametrize("dw_config", [{"on_server_stop": "stop"}], indirect=True)
async def test_with_nobody_waiting_nothing_is_stopped_until_the_server_stops(
    kube, kueue, namespace, identity, standin, jp_fetch, jp_ws_fetch, jp_serverapp
):
    make_queue(kueue, cpu="4", memory="8Gi")
    events, _ = await open_events(jp_ws_fetch)
    code, made = await call(jp_fetch, "POST", "clusters", body=small_cluster("alone", workers=0))
    assert code == 201, made
    await events.cluster_state("alone", state_is("ready"), "ready")
    held = await events.cluster_state(
        "alone",
        lambda s: bool(s and ((s["usage"] or {}).get("idle_action") or {}).get("held_back")),
        "idle, held back: nobody waits",
    )
    assert held["usage"]["idle_action"]["warning"] is False
    app = extension(jp_serverapp)
    usage = app.core_loader.made.clusters.usage
    samples = usage.samples
    await until_true(lambda: usage.samples >= samples + TIMEOUT / INTERVAL + 2, "samples past it")
    assert app.idle_runner.acted == []
    code, now = await call(jp_fetch, "GET", "clusters", "alone")
    assert now["state"] == "ready" and now["usage"]["idle_action"]["held_back"] is True
    events.close()

    await app.stop_extension()  # on_server_stop=stop: the owner's clusters are stopped
    kept = rayclusters(kube).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "alone"
    )
    reason = json.loads(kept["metadata"]["annotations"]["jupyter-dw/stop-reason"])
    assert reason == {"by": "server-stop"}
    assert workload_of(kube, kueue, kept["metadata"]["uid"])["spec"]["active"] is False
