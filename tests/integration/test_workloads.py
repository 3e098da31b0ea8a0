"""``GET dw/api/workloads`` and the ``workload`` events on the real control plane: every Kueue
Workload of the namespace whatever owns it — batch/v1 Jobs sent to Kueue with the queue-name
label and one of our RayClusters — from a workbench that may not read Jobs at all.

The Jobs' pods carry a nodeSelector no node has: KWOK completes a Job's pods as soon as they
run, and a pod that is never scheduled keeps its Job, and so its admitted Workload, holding
quota for as long as the test needs.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from kubernetes import client

import jupyter_dw as dw
from jupyter_dw.core.workloads import InvalidFilter
from jupyter_dw.domain.workloads import Owner
from jupyter_dw.notebook.display import workloads_html
from jupyter_dw.notebook.magics import run as magic
from tests.cluster.fixtures import KueueObjects, condition, plain_workload, watch_until
from tests.integration.clusters_support import (
    KUEUE,
    Events,
    Queue,
    call,
    make_queue,
    open_events,
    small_cluster,
)
from tests.integration.test_notebook_widgets import until
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

# A workbench as usual: Kueue's batch-user view of its namespace, Ray clusters; no batch Jobs.
WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES
NOWHERE = {"jupyter-dw/test-node": "none"}


def job(name: str, queue: str, cpu: str, memory: str = "1Gi") -> dict[str, Any]:
    """A suspended batch/v1 Job of one pod for LocalQueue ``queue`` (Kueue unsuspends it)."""
    container = {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {f"{KUEUE}/queue-name": queue}},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": NOWHERE,
                    "containers": [container],
                }
            },
        },
    }


def job_workload(kueue: KueueObjects, job_name: str, done: Any, what: str) -> dict[str, Any]:
    """Watch the Workload Kueue made for Job ``job_name`` until ``done(workload)``."""
    custom = kueue.custom
    return watch_until(
        lambda **kw: custom.list_namespaced_custom_object(
            KUEUE, kueue.api_version, kueue.namespace, "workloads", **kw
        ),
        lambda w: (
            any(
                ref.get("kind") == "Job" and ref.get("name") == job_name
                for ref in w["metadata"].get("ownerReferences", [])
            )
            and done(w)
        ),
        what=f"Job {job_name}'s Workload {what}",
    )


def admitted(workload: dict[str, Any]) -> bool:
    return (condition(workload, "Admitted") or {}).get("status") == "True"


def waiting(workload: dict[str, Any]) -> bool:
    reserved = condition(workload, "QuotaReserved") or {}
    return reserved.get("status") == "False" and bool(reserved.get("message"))


async def seen_or_next(events: Events, since: int, predicate: Any, what: str) -> dict[str, Any]:
    return await events.since(since, predicate, what)


def by_owner(listing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["owner"]["name"]: w for w in listing["workloads"] if w["owner"]}


class Latest:
    """The last record the events socket gave of each Workload (its ``workload`` messages, the
    positions of its ``positions`` messages), by its owner's name."""

    def __init__(self, events: Events) -> None:
        self.events = events

    def read(self, message: dict[str, Any]) -> None:
        """Nothing to do: the socket keeps the records as it reads (``Events.workloads``)."""

    def states(self) -> dict[str, tuple[str, int | None, bool]]:
        return {
            name: (w["state"], w["position_in_local_queue"], w["reason"] is not None)
            for name, w in by_owner({"workloads": list(self.events.workloads.values())}).items()
        }


async def test_every_workload_of_the_namespace(kube, kueue, namespace, jp_fetch, jp_ws_fetch):
    queue = make_queue(kueue, cpu="3", memory="8Gi")
    events, snapshot = await open_events(jp_ws_fetch)
    latest = Latest(events)
    jobs = client.BatchV1Api(kube)
    jobs.create_namespaced_job(namespace, job("fits", queue.local_queue, "1"))
    fits = job_workload(kueue, "fits", admitted, "admitted")
    code, cluster = await call(jp_fetch, "POST", "clusters", body=small_cluster("ray", workers=1))
    assert code == 201, cluster
    # The cluster's 2 CPUs and the first Job's 1 fill the queue: the next two Jobs must wait.
    for name, cpu in (("wait-a", "2"), ("wait-b", "1")):
        jobs.create_namespaced_job(namespace, job(name, queue.local_queue, cpu))
    job_workload(kueue, "wait-a", waiting, "waiting for quota")
    wait_b = job_workload(kueue, "wait-b", waiting, "waiting for quota")
    # The server's watch has seen all of it when the socket says so.
    settled = {"fits": ("admitted", None, True), "ray": ("admitted", None, True)}

    def all_seen(message: dict[str, Any]) -> bool:
        latest.read(message)
        states = latest.states()
        # A position may come after the state (the board reads it in the background): None
        # sorts first.
        waits = sorted(
            (states.get(n, ("", None, False)) for n in ("wait-a", "wait-b")),
            key=lambda s: (s[0], -1 if s[1] is None else s[1], s[2]),
        )
        return waits == [("queued", 0, True), ("queued", 1, True)] and all(
            states.get(n) == v for n, v in settled.items()
        )

    await events.until(all_seen, "every Workload in its state, the waiting ones in order")

    code, listing = await call(jp_fetch, "GET", "workloads")
    assert code == 200, listing
    assert (listing["namespace"], listing["queue"], listing["kind"]) == (namespace, None, None)
    found = by_owner(listing)
    assert set(found) == {"fits", "ray", "wait-a", "wait-b"}, listing
    assert {n: (w["owner"]["kind"], w["owner"]["api_group"]) for n, w in found.items()} == {
        "fits": ("Job", "batch"),
        "ray": ("RayCluster", "ray.io"),
        "wait-a": ("Job", "batch"),
        "wait-b": ("Job", "batch"),
    }
    # Those holding quota first, then the waiting ones in Kueue's order (created in the same
    # second, the two are ordered by UID: either may be first).
    ahead, behind = listing["workloads"][2:]
    assert (ahead["position_in_local_queue"], behind["position_in_local_queue"]) == (0, 1)
    assert {ahead["owner"]["name"], behind["owner"]["name"]} == {"wait-a", "wait-b"}
    # Kueue 0.14 breaks no tie between two Workloads of one priority made in one second, and
    # its visibility API lists them in any order on each call (an unstable sort of a heap and
    # a Go map): each of these answers asks it again, and every one keeps the order first seen.
    for _ in range(8):
        code, again = await call(jp_fetch, "GET", "workloads")
        assert code == 200 and again["workloads"] == listing["workloads"], again
    assert {n: w["queue"] for n, w in found.items()} == dict.fromkeys(found, queue.local_queue)

    held = found["fits"]
    assert (held["state"], held["name"]) == ("admitted", fits["metadata"]["name"])
    assert held["resources"] == {queue.flavor: {"cpu": "1", "memory": "1Gi"}}
    assert held["cluster_queue"] == queue.cluster_queue
    assert held["since"] == condition(fits, "Admitted")["lastTransitionTime"]
    code, cluster = await call(jp_fetch, "GET", "clusters", "ray")
    assert found["ray"]["state"] == "admitted" and found["ray"]["name"] == cluster["workload"]
    assert found["ray"]["resources"] == {queue.flavor: {"cpu": "2", "memory": "2Gi"}}

    reserved = condition(wait_b, "QuotaReserved")
    assert (found["wait-b"]["state"], found["wait-b"]["reason"]) == ("queued", reserved["reason"])
    assert found["wait-b"]["message"] == reserved["message"]
    assert "insufficient unused quota" in found["wait-b"]["message"]
    assert found["wait-a"]["resources"] == {}
    assert found["wait-a"]["requests"] == {"cpu": "2", "memory": "1Gi"}

    # Filters.
    code, only_team = await call(jp_fetch, "GET", "workloads", params={"queue": queue.local_queue})
    assert code == 200 and only_team["workloads"] == listing["workloads"], only_team
    code, other = await call(jp_fetch, "GET", "workloads", params={"queue": "another"})
    assert code == 200 and other["workloads"] == [] and other["queue"] == "another"
    code, jobs_only = await call(jp_fetch, "GET", "workloads", params={"kind": "Job.batch"})
    assert code == 200 and sorted(by_owner(jobs_only)) == ["fits", "wait-a", "wait-b"]
    code, rays = await call(
        jp_fetch, "GET", "workloads", params={"kind": "RayCluster.ray.io", "queue": "team"}
    )
    assert code == 200 and list(by_owner(rays)) == ["ray"], rays
    for field, bad in (("kind", "nope"), ("queue", "Not_A_Name")):
        code, error = await call(jp_fetch, "GET", "workloads", params={field: bad})
        assert code == 400 and error["code"] == "invalid_filter", error
        assert list(error["errors"]) == [field] and error["reason"].startswith(f"{field}: ")
        assert repr(bad) in error["errors"][field]
    code, error = await call(jp_fetch, "GET", "workloads", params={"kind": "nope"})
    assert "Kind.group" in error["reason"] and "Job.batch" in error["hint"]
    code, again = await call(jp_fetch, "GET", "workloads")
    assert code == 200 and by_owner(again).keys() == found.keys()

    # A new socket's snapshot lists them; a Workload deleted moves the one behind it.
    another, snapshot = await open_events(jp_ws_fetch)
    assert {w["name"] for w in snapshot["workloads"]} == {w["name"] for w in listing["workloads"]}
    another.close()
    mark = len(events.seen)
    jobs.delete_namespaced_job(ahead["owner"]["name"], namespace, propagation_policy="Background")
    gone = await events.until(
        lambda m: m["type"] == "workload" and m["name"] == ahead["name"] and m["workload"] is None,
        "the first waiting Workload gone",
    )
    assert gone["event"] == "DELETED"
    # Kueue may move it up while the first one is being deleted (before it is gone).
    # (a `positions` message when only its position moved, else its `workload` message)
    await seen_or_next(
        events,
        mark,
        lambda m: (
            m["type"] in ("workload", "positions")
            and (events.workloads.get(behind["name"]) or {}).get("position_in_local_queue") == 0
        ),
        "the second one moved to the front",
    )
    assert events.workloads[behind["name"]]["state"] == "queued"
    # The cluster deleted frees 2 CPUs: Kueue admits the waiting one, and the socket says so.
    assert (await call(jp_fetch, "DELETE", "clusters", "ray"))[0] == 200
    now = await events.until(
        lambda m: (
            m["type"] == "workload"
            and m["name"] == behind["name"]
            and (m["workload"] or {}).get("state") == "admitted"
        ),
        "the waiting one admitted",
    )
    assert now["workload"]["resources"] == {queue.flavor: behind["requests"]}
    assert now["workload"]["position_in_local_queue"] is None
    events.close()


def queue_with_others_ahead(kueue: KueueObjects, kube: Any, others: int = 7) -> Queue:
    """A LocalQueue of 1 CPU holding ``others`` Workloads of others at priority 100 (one
    admitted, the rest waiting): a job of ours made next is last in Kueue's order, beyond the
    rows a queue shows at first."""
    queue = make_queue(kueue, cpu="1", memory="8Gi")
    custom = client.CustomObjectsApi(kube)
    for i in range(others):
        body = plain_workload(kueue.api_version, f"other-{i}", queue.local_queue, "1", 100)
        custom.create_namespaced_custom_object(
            KUEUE, kueue.api_version, kueue.namespace, "workloads", body
        )
    return queue


# --------------------------------------------------------------------------------------------
# The kernel: dw.workloads() and the QueueBoard
# --------------------------------------------------------------------------------------------


async def test_kernel_lists_workloads_and_the_board_follows_them(kernel, kueue, kube, namespace):
    queue = make_queue(kueue, cpu="1", memory="4Gi")
    jobs = client.BatchV1Api(kube)
    jobs.create_namespaced_job(namespace, job("first", queue.local_queue, "1"))
    first = job_workload(kueue, "first", admitted, "admitted")
    jobs.create_namespaced_job(namespace, job("second", queue.local_queue, "1"))
    second = job_workload(kueue, "second", waiting, "waiting for quota")

    listed = await asyncio.to_thread(dw.workloads)
    assert len(listed) == 2 and listed.names() == [
        first["metadata"]["name"],
        second["metadata"]["name"],
    ]
    held, queued = listed
    assert (held.state, held.owner, held.resources) == (
        "admitted",
        Owner("Job", "batch", "first"),
        {queue.flavor: {"cpu": Decimal(1), "memory": Decimal(2**30)}},
    )
    assert listed[queued.name] is queued and queued.position_in_local_queue == 0
    assert listed.in_queue(queue.local_queue) == (held, queued)
    html = workloads_html(listed)  # what the formatter %load_ext registers draws
    assert "Job second" in html and "position 1" in html and "insufficient unused quota" in html
    assert len(await asyncio.to_thread(dw.workloads, kind="RayCluster.ray.io")) == 0
    assert len(await asyncio.to_thread(dw.workloads, queue=queue.local_queue)) == 2
    with pytest.raises(InvalidFilter, match=r"Kind\.group"):
        await asyncio.to_thread(dw.workloads, kind="nope")
    said: list[str] = []
    shown = await asyncio.to_thread(magic, "workloads --kind Job.batch --queue team", said.append)
    assert shown.names() == listed.names() and said == []
    assert await asyncio.to_thread(magic, "workloads --kind nope", said.append) is None
    assert said and said[0].startswith("Invalid workload filter: kind: must be Kind.group")

    board = dw.QueueBoard()
    assert [(w["owner"]["name"], w["state"]) for w in board.workloads] == [
        ("first", "admitted"),
        ("second", "queued"),
    ]
    assert board.workloads[1]["position_in_local_queue"] == 0
    # The first Job deleted: Kueue admits the second, and the board follows by itself.
    jobs.delete_namespaced_job("first", namespace, propagation_policy="Background")
    await until(
        board,
        "workloads",
        lambda ws: [(w["owner"]["name"], w["state"]) for w in ws] == [("second", "admitted")],
        "the second Job admitted once the first is gone",
    )
    assert board.workloads[0]["position_in_local_queue"] is None
    board.close()


async def test_the_board_shows_a_long_queues_first_rows_and_ours_until_expanded(
    kernel, kueue, kube, namespace
):
    """Seven Workloads of others of a higher priority, then our Ray cluster: last in Kueue's
    order, beyond the rows a queue shows at first. The board syncs the first five and ours,
    counts all eight, and every row once the queue is expanded."""
    queue = queue_with_others_ahead(kueue, kube)
    custom = client.CustomObjectsApi(kube)
    await asyncio.to_thread(dw.submit, small_cluster("mine-late", workers=1))

    def owners(rows: list[dict[str, Any]]) -> list[str]:
        return [(w["owner"] or {"name": w["name"]})["name"] for w in rows]

    board = dw.QueueBoard()
    await until(board, "workload_counts", lambda c: c.get(queue.local_queue) == 8, "all eight")
    await until(board, "workloads", lambda ws: "mine-late" in owners(ws), "ours among the rows")
    shown = owners(board.workloads)
    assert len(shown) == 6 and shown[-1] == "mine-late"
    assert all(name.startswith("other-") for name in shown[:5])

    board.expanded = [queue.local_queue]
    every = owners(board.workloads)
    assert every[:5] == shown[:5] and every[-1] == "mine-late"
    assert sorted(every[:7]) == [f"other-{i}" for i in range(7)]
    board.expanded = []
    assert owners(board.workloads) == shown

    # A change in the queue still reaches the board, counted and chosen again.
    hidden = every[5]  # an other's row not shown while folded
    custom.delete_namespaced_custom_object(KUEUE, kueue.api_version, namespace, "workloads", hidden)
    await until(board, "workload_counts", lambda c: c.get(queue.local_queue) == 7, "one gone")
    assert owners(board.workloads) == shown
    board.close()
