"""Four kinds of job in one LocalQueue on the real control plane: a batch/v1 Job with the
queue-name label, one of our RayClusters, a RayJob and a TrainJob (the TrainJob where the bed
runs Kubeflow Trainer: Kueue 0.19.2; on 0.14.8 the same test runs with the other three).

The quota holds the Job (2 CPU of 3) and no second one: each of the others needs at least
2 CPU, so they wait, in the order Kueue's visibility API gives (read here as an administrator:
jobs created within one second are ordered by Kueue, not by the test). ``GET workloads``, the
events socket and the kernel's ``QueueBoard`` must show that order and every owner's kind; a
waiting one deleted moves those behind it, and the Job deleted lets Kueue admit the first, live.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from kubernetes import client

import jupyter_dw as dw
from tests.cluster.fixtures import KueueObjects, condition
from tests.cluster.versions import Versions
from tests.integration.clusters_support import (
    Events,
    call,
    headroom_becomes,
    make_queue,
    open_events,
    owned_workload,
    quota_reserved,
    small_cluster,
    totals,
)
from tests.integration.test_notebook_widgets import until
from tests.integration.test_rayjobs import rayjob_request
from tests.integration.test_trainjobs import WORKBENCH_CLUSTER_RULES as TRAINJOB_CLUSTER_RULES
from tests.integration.test_trainjobs import request as trainjob_request
from tests.integration.test_workloads import admitted, by_owner, job, job_workload
from tests.integration.workbench_rbac import namespace_rules

pytestmark = pytest.mark.cluster

TRAINER_BED = Versions.selected().trainjobs
WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = TRAINJOB_CLUSTER_RULES  # the fit reads the runtime

RAYJOB = rayjob_request("rj")  # head 1 + worker 1 CPU, and the submitter
TRAINJOB = trainjob_request("tj")
# Owner name -> (kind, API group, the REST route that deletes it; None: a Job, deleted as admin).
KINDS: dict[str, tuple[str, str, str | None]] = {
    "batch": ("Job", "batch", None),
    "ray": ("RayCluster", "ray.io", "clusters"),
    "rj": ("RayJob", "ray.io", "rayjobs"),
}
if TRAINER_BED:
    KINDS["tj"] = ("TrainJob", "trainer.kubeflow.org", "trainjobs")


async def past_the_second_of(kueue: KueueObjects, kind: str, job: str) -> None:
    """Wait until ``kind`` ``job``'s Workload exists and the clock (the API server's: the same
    machine) has passed the second it was made in."""
    workload = await asyncio.to_thread(owned_workload, kueue, kind, job, lambda w: True, "made")
    made = datetime.fromisoformat(workload["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    while datetime.now(timezone.utc) < made + timedelta(seconds=1):
        await asyncio.sleep(0.05)


def pending_order(kube: client.ApiClient, kueue: KueueObjects, local_queue: str) -> list[str]:
    """The Workload names Kueue's visibility API lists as pending in ``local_queue``, in its
    order (``positionInLocalQueue`` checked to be that order)."""
    raw = kube.call_api(
        f"/apis/visibility.kueue.x-k8s.io/{kueue.api_version}/namespaces/{kueue.namespace}/"
        f"localqueues/{local_queue}/pendingworkloads",
        "GET",
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    items = json.loads(raw.data)["items"]
    assert [i["positionInLocalQueue"] for i in items] == list(range(len(items))), items
    return [i["metadata"]["name"] for i in items]


def positions(records: Any, names: dict[str, str]) -> dict[str, tuple[str, int | None]]:
    """``{owner name: (state, position)}`` of the records whose Workload is in ``names``
    (Workload name -> owner name)."""
    return {
        names[w["name"]]: (w["state"], w["position_in_local_queue"])
        for w in records
        if w["name"] in names
    }


class Seen:
    """What the events socket has said of each Workload last (gone ones dropped), and every
    state it has shown each in: read from every message ``events`` has read so far, whichever
    wait read it."""

    def __init__(self, events: Events, snapshot: dict[str, Any]) -> None:
        self.events = events
        self.snapshot = snapshot["workloads"]
        self.snapshot_jobs = snapshot

    def records(self) -> dict[str, dict[str, Any]]:
        """The Workload records as the socket's messages made them (positions included)."""
        return dict(self.events.workloads)

    def states(self, name: str) -> set[str]:
        """Every state Workload ``name`` was shown in."""
        return {
            m["workload"]["state"]
            for m in self.events.seen
            if m["type"] == "workload" and m["name"] == name and m["workload"]
        }

    def job_positions(self) -> dict[str, int | None]:
        """Each RayJob's and TrainJob's position in its LocalQueue, as its own record (its
        card) last showed it on the socket (the snapshot's, then each message's)."""
        found = {
            j["name"]: j.get("position_in_local_queue")
            for kind in ("rayjobs", "trainjobs")
            for j in self.snapshot_jobs.get(kind) or ()
        }
        for message in self.events.seen:
            if message["type"] in ("rayjob", "trainjob"):
                job = message[message["type"]]
                found[message["name"]] = job.get("position_in_local_queue") if job else None
        return found

    async def jobs_until(self, want: dict[str, int | None]) -> None:
        """Until the jobs' own records show the positions ``want``."""

        def shown() -> bool:
            return {n: self.job_positions().get(n) for n in want} == want

        if not shown():
            await self.events.until(lambda _: shown(), f"the job records show {want}")

    async def until(self, names: dict[str, str], want: dict[str, tuple[str, int | None]]) -> None:
        """Until the socket has shown ``want`` (see :func:`positions`)."""
        if positions(self.records().values(), names) != want:
            await self.events.until(
                lambda _: positions(self.records().values(), names) == want,
                f"the socket shows {want}",
            )


@pytest.mark.skipif(
    not TRAINER_BED,
    reason="no Kubeflow Trainer on this bed (Kueue 0.14.8): "
    "test_three_kinds_in_one_queue runs the same test without the TrainJob",
)
async def test_four_kinds_in_one_queue(kube, kueue, namespace, jp_fetch, jp_ws_fetch, kernel):
    await _kinds_in_one_queue(kube, kueue, namespace, jp_fetch, jp_ws_fetch)


@pytest.mark.skipif(TRAINER_BED, reason="this bed runs Trainer: test_four_kinds_in_one_queue runs")
async def test_three_kinds_in_one_queue(kube, kueue, namespace, jp_fetch, jp_ws_fetch, kernel):
    await _kinds_in_one_queue(kube, kueue, namespace, jp_fetch, jp_ws_fetch)


async def _kinds_in_one_queue(kube, kueue, namespace, jp_fetch, jp_ws_fetch) -> None:
    queue = make_queue(kueue, cpu="3", memory="16Gi")
    events, snapshot = await open_events(jp_ws_fetch)
    seen = Seen(events, snapshot)

    # The Job holds 2 of the 3 CPUs for as long as it lives (its pod is never scheduled).
    jobs = client.BatchV1Api(kube)
    jobs.create_namespaced_job(namespace, job("batch", queue.local_queue, "2"))
    held = job_workload(kueue, "batch", admitted, "admitted")
    # The server's caches have seen it hold them (Kueue writes its ClusterQueue's usage after).
    await seen.until({held["metadata"]["name"]: "batch"}, {"batch": ("admitted", None)})
    await headroom_becomes(events, jp_fetch, queue, Decimal(1))

    # The others each need 2 CPU or more: what each will hold, as the fit counts it.
    requests = {"ray": {"cpu": Decimal(2), "memory": Decimal(2 * 2**30)}}
    code, fit = await call(jp_fetch, "POST", "rayjobs", "fit", body=RAYJOB)
    assert code == 200 and fit["verdict"] == "must-wait", fit
    requests["rj"] = totals(fit["requests"])
    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("ray", workers=1))
    assert code == 201, created
    # Kueue orders equal priorities by the second their Workloads were made; Kueue 0.14 breaks
    # no tie, so two made in one second may swap places between two reads. Each is made in a
    # second of its own.
    await past_the_second_of(kueue, KINDS["ray"][0], "ray")
    code, created = await call(jp_fetch, "POST", "rayjobs", body=RAYJOB)
    assert code == 201, created
    if TRAINER_BED:
        await past_the_second_of(kueue, KINDS["rj"][0], "rj")
        code, fit = await call(jp_fetch, "POST", "trainjobs", "fit", body=TRAINJOB)
        assert code == 200 and fit["verdict"] == "must-wait", fit
        requests["tj"] = totals(fit["requests"])
        code, created = await call(jp_fetch, "POST", "trainjobs", body=TRAINJOB)
        assert code == 201, created

    # Kueue judged each of them (no quota) before the visibility API is read.
    workloads = {"batch": held}
    for name, (kind, _, _) in KINDS.items():
        if name != "batch":
            workloads[name] = owned_workload(
                kueue, kind, name, lambda w: quota_reserved(w) is False, "waiting for quota"
            )
    owners = {w["metadata"]["name"]: name for name, w in workloads.items()}
    order = [owners[n] for n in pending_order(kube, kueue, queue.local_queue)]
    assert sorted(order) == sorted(set(KINDS) - {"batch"}), order
    expected = {"batch": ("admitted", None), **{n: ("queued", i) for i, n in enumerate(order)}}

    await seen.until(owners, expected)

    # GET workloads: every kind with its owner, state, position, what it holds and asks.
    code, listing = await call(jp_fetch, "GET", "workloads")
    assert code == 200, listing
    found = by_owner(listing)
    assert set(found) == set(KINDS), listing
    assert {n: (w["owner"]["kind"], w["owner"]["api_group"]) for n, w in found.items()} == {
        n: (kind, group) for n, (kind, group, _) in KINDS.items()
    }
    assert {n: w["name"] for n, w in found.items()} == {
        n: w["metadata"]["name"] for n, w in workloads.items()
    }
    assert positions(listing["workloads"], owners) == expected
    # The one holding quota first, then the waiting ones in Kueue's order.
    assert [w["owner"]["name"] for w in listing["workloads"]] == ["batch", *order]
    assert {w["queue"] for w in listing["workloads"]} == {queue.local_queue}
    assert found["batch"]["cluster_queue"] == queue.cluster_queue
    assert found["batch"]["resources"] == {queue.flavor: {"cpu": "2", "memory": "1Gi"}}
    assert found["batch"]["since"] == condition(held, "Admitted")["lastTransitionTime"]
    for name in order:
        record, reserved = found[name], condition(workloads[name], "QuotaReserved")
        assert record["resources"] == {}, record
        assert totals(record["requests"]) == requests[name], record
        assert (record["reason"], record["message"]) == (reserved["reason"], reserved["message"])
        assert "insufficient unused quota" in record["message"], record

    # The kernel sees the same, and its board follows what comes next by itself.
    listed = await asyncio.to_thread(dw.workloads)
    assert [w.owner.name for w in listed if w.owner] == ["batch", *order]
    board = dw.QueueBoard()
    assert positions(board.workloads, owners) == expected

    # The first waiting one deleted: those behind it move up, on the socket and the board.
    first = order.pop(0)
    route = KINDS[first][2]
    assert route is not None and (await call(jp_fetch, "DELETE", route, first))[0] == 200
    moved = {"batch": ("admitted", None), **{n: ("queued", i) for i, n in enumerate(order)}}
    await seen.until(owners, moved)
    # The waiting jobs' own records (their cards) move with their Workloads: nothing of the
    # RayJob or the TrainJob itself changed, only the queue ahead of it.
    await seen.jobs_until({n: moved[n][1] for n in order if KINDS[n][0] in ("RayJob", "TrainJob")})
    await until(
        board,
        "workloads",
        lambda ws: positions(ws, owners) == moved,
        f"the board: {first} gone, the others moved up",
    )
    assert [owners[n] for n in pending_order(kube, kueue, queue.local_queue)] == order

    # The Job deleted frees its 2 CPUs: Kueue admits the next one, the last keeps waiting.
    jobs.delete_namespaced_job("batch", namespace, propagation_policy="Background")

    # What follows an admission (running, finished) may come before the test reads it: the
    # socket and the board must have shown it admitted on the way.
    def now(records: Any) -> dict[str, tuple[str, int | None]]:
        shown = positions(records, owners)
        if shown.get(order[0], ("", 0))[1] is None:
            shown.pop(order[0], None)
        return shown

    rest = {n: ("queued", i) for i, n in enumerate(order[1:])}

    def admitted_next(_: Any) -> bool:
        return now(seen.records().values()) == rest and "admitted" in seen.states(
            workloads[order[0]]["metadata"]["name"]
        )

    await events.until(admitted_next, f"the Job gone, {order[0]} admitted")
    board_states: set[str] = set()

    def board_shows(records: Any) -> bool:
        board_states.update(s for o, (s, _) in positions(records, owners).items() if o == order[0])
        return now(records) == rest and "admitted" in board_states

    await until(board, "workloads", board_shows, f"the board: the Job gone, {order[0]} admitted")
    board.close()
    events.close()
