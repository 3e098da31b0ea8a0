"""``dw/api/events`` on the real control plane: one set of watches for any number of tabs,
messages for queue, Workload and cluster changes, errors in the snapshot, and jupyter_server's
authentication, authorization and origin checks before the upgrade."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from jupyter_server.auth.authorizer import Authorizer
from kubernetes import client
from tornado.httpclient import HTTPClientError

from jupyter_dw.k8s.session import KubeSession
from jupyter_dw.server.handlers import AUTH_RESOURCE
from tests.cluster.fixtures import WAIT_TIMEOUT, condition, plain_workload, watch_until
from tests.integration.clusters_support import (
    KUEUE,
    QUEUE_MESSAGES,
    Events,
    call,
    make_queue,
    open_events,
    small_cluster,
    state_is,
)
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

# A data scientist's workbench that may also read quota.
WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster


async def eventually(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Wait for in-process state the server changes on its own loop turn (a socket closing)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def watches(session: KubeSession) -> dict[str, tuple[int, int, int]]:
    """Per cache: (identity, re-lists, listeners)."""
    return {
        plural: (id(cache), cache.relists, cache.listener_count)
        for plural, cache in session._caches.items()  # the set of caches itself is the point
    }


async def test_tabs_share_one_set_of_watches(kueue, session, jp_fetch, jp_ws_fetch):
    make_queue(kueue)
    await asyncio.to_thread(session.wait_ready, WAIT_TIMEOUT)
    for cache in session._caches.values():
        assert await asyncio.to_thread(cache.wait_synced, WAIT_TIMEOUT)
    before = watches(session)
    assert {"localqueues", "workloads", "rayclusters", "pods", "clusterqueues"} <= set(before)

    first, snapshot_1 = await open_events(jp_ws_fetch)
    second, snapshot_2 = await open_events(jp_ws_fetch)
    assert snapshot_1["clusters"] == snapshot_2["clusters"] == []
    # Kueue may still write the new queues' status between the two snapshots; each socket then
    # gets a `queue` message for it. Both tabs' views must come to the same answer.
    await same_queues_view((first, second), (snapshot_1["queues"], snapshot_2["queues"]))

    during = watches(session)
    assert set(during) == set(before)  # no cache (no watch) per socket ...
    for plural, (identity, relists, listeners) in during.items():
        assert (identity, relists) == before[plural][:2]  # ... nor any new list
        assert listeners == before[plural][2] + 2  # just one listener each

    code, _ = await call(jp_fetch, "POST", "clusters", body=small_cluster("shared", workers=1))
    assert code == 201
    for tab in (first, second):
        state = await tab.cluster_state("shared", state_is("admitted", "starting", "ready"), "in")
        assert state is not None and state["quota_reserved"] is True
        assert in_order_once(tab, "shared", ["QuotaReserved", "Admitted"])

    first.close()
    await eventually(
        lambda: all(w[2] == before[p][2] + 1 for p, w in watches(session).items()),
        "the first tab's listeners removed",
    )
    code, _ = await call(jp_fetch, "DELETE", "clusters", "shared")
    assert code == 200
    await second.cluster_state("shared", lambda state: state is None, "gone")
    second.close()
    await eventually(lambda: watches(session) == before, "every listener removed")


async def same_queues_view(tabs: tuple[Events, Events], views: tuple[object, object]) -> None:
    """Read both sockets (as messages come, on either) until the `queues` answers each has
    seen last are equal; fail after WAIT_TIMEOUT."""
    latest = list(views)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_TIMEOUT
    while latest[0] != latest[1]:
        remaining = deadline - loop.time()
        assert remaining > 0, f"the tabs' queue views differ: {latest}"
        reads = {tab.reading(): i for i, tab in enumerate(tabs)}
        done, _ = await asyncio.wait(reads, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        for read in done:
            tab = tabs[reads[read]]
            if tab.take()["type"] in QUEUE_MESSAGES:
                latest[reads[read]] = tab.queues


def in_order_once(tab: Events, name: str, expected: list[str]) -> bool:
    milestones = tab.milestones(name)
    return [m for m in milestones if m in expected] == expected


async def test_queue_and_workload_changes_are_messages(kube, kueue, namespace, jp_ws_fetch):
    queue = make_queue(kueue, cohort="pool")
    events, snapshot = await open_events(jp_ws_fetch)
    assert [q["name"] for q in snapshot["queues"]["queues"]] == ["team"]

    # A ClusterQueue of no cohort of ours says nothing; one in our cohort (it may lend to
    # ours, or borrow what ours could) does.
    unrelated = kueue.cluster_queue("unrelated", {queue.flavor: {"cpu": "1"}})
    kueue.wait_active("clusterqueues", unrelated)
    kueue.cluster_queue("sibling", {queue.flavor: {"cpu": "1"}}, cohort="pool")
    # Its CPU is ours to borrow: the queue's headroom grows (the message may name another
    # change that re-read the queues first: it says what changed, whoever caused it).
    await events.until(
        lambda m: m["type"] in QUEUE_MESSAGES and cpu_headroom(events) == "5",
        "the cohort's new member",
    )
    kueue.local_queue("extra", queue.cluster_queue)
    # A queue that comes brings the whole answer (whichever change re-read it first).
    message = await events.until(
        lambda m: m["type"] == "queues" and events.queue("extra") is not None,
        "the new LocalQueue",
    )
    assert [q["name"] for q in message["queues"]["queues"]] == ["extra", "team"]
    assert not [m for m in events.seen if m.get("name") == unrelated], events.seen

    # A Workload of another kind of job: reported as a Workload, not as a Ray cluster.
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        KUEUE,
        kueue.api_version,
        namespace,
        "workloads",
        plain_workload(kueue.api_version, "plain", "team", "1"),
    )
    message = await events.until(
        lambda m: m["type"] == "workload" and m["name"] == "plain", "the plain Workload"
    )
    assert (message["event"], message["queue"]) == ("ADDED", "team")
    # Its admission changes the queue's numbers: a message with the queue's record follows,
    # not the whole answer (no queue came or went). "extra" shares team's ClusterQueue, so
    # its record changes too when Kueue writes the ClusterQueue's usage in the same change
    # (0.14 and 0.19 order the two status writes differently).
    message = await events.until(
        lambda m: m["type"] in QUEUE_MESSAGES and (events.queue("team") or {}).get("admitted") == 1,
        "the queue counting the admitted Workload",
    )
    assert message["type"] == "queue", message
    assert "team" in [q["name"] for q in message["queues"]], message
    assert {q["name"] for q in message["queues"]} <= {"team", "extra"}, message
    events.close()


def cpu_headroom(events: Events, queue: str = "team") -> str | None:
    """The CPU headroom of ``queue`` as the socket's messages made its record."""
    record = events.queue(queue) or {}
    return next(
        (r["headroom"] for r in record.get("resources") or [] if r["resource"] == "cpu"), None
    )


NO_QUEUES = [r for r in namespace_rules() if "localqueues" not in r["resources"]]


async def test_waiting_position_moves_live_when_a_workload_ahead_is_admitted(
    kube, kueue, namespace, jp_fetch, jp_ws_fetch
):
    # Nothing of the waiting cluster changes when the workload ahead of it is admitted: only
    # the queue's status does, and that must be enough to move its position on the socket.
    queue = make_queue(kueue)  # 4 CPU
    custom = client.CustomObjectsApi(kube)

    def create_workload(name: str) -> None:
        # Priority 1 puts it ahead of the cluster's Workload (priority 0) for sure: Kueue
        # orders equal priorities by creation time in whole seconds, then by UID.
        body = plain_workload(kueue.api_version, name, queue.local_queue, "3", priority=1)
        custom.create_namespaced_custom_object(
            KUEUE, kueue.api_version, namespace, "workloads", body
        )

    def wait_workload(name: str, admitted: bool) -> None:
        watch_until(
            lambda **kw: custom.list_namespaced_custom_object(
                KUEUE, kueue.api_version, namespace, "workloads", **kw
            ),
            lambda wl: (
                (condition(wl, "QuotaReserved") or {}).get("status")
                == ("True" if admitted else "False")
            ),
            what=f"Workload {name} {'admitted' if admitted else 'pending'}",
            field_selector=f"metadata.name={name}",
        )

    await asyncio.to_thread(create_workload, "holder")
    await asyncio.to_thread(wait_workload, "holder", True)
    await asyncio.to_thread(create_workload, "first")
    await asyncio.to_thread(wait_workload, "first", False)

    events, _ = await open_events(jp_ws_fetch)
    code, _ = await call(jp_fetch, "POST", "clusters", body=small_cluster("later", workers=2))
    assert code == 201
    second = await events.cluster_state(
        "later",
        lambda s: s is not None and s["position_in_local_queue"] == 1,
        "second in its queue",
    )
    assert second is not None and second["state"] == "queued"

    # "holder" goes: "first" takes its place and 3 of the 4 CPUs; "later" (3 CPU) still waits.
    await asyncio.to_thread(
        custom.delete_namespaced_custom_object,
        KUEUE,
        kueue.api_version,
        namespace,
        "workloads",
        "holder",
    )
    moved = await events.until(
        lambda m: (
            m["type"] == "cluster"
            and m["name"] == "later"
            and m["state"] is not None
            and m["state"]["position_in_local_queue"] == 0
        ),
        "later moved up to the front",
    )
    # A queue change brings it (Kueue 0.19 leaves the RayCluster and its Workload as they
    # were): whichever queue object Kueue writes first (its status, or a finalizer on the
    # flavor) makes the socket re-read positions. Kueue 0.14 may touch the RayCluster, or
    # rewrite the waiting Workload's message on requeue, or record a Warning Event about the
    # RayCluster, at the same moment, and that message then carries the fresh position first.
    queue_kinds = ("LocalQueue", "ClusterQueue", "Cohort", "ResourceFlavor")
    legacy = (
        ("RayCluster", "Workload", "Event") if kueue.api_version == "v1beta1" else ("RayCluster",)
    )
    assert moved["cause"]["kind"] in (*queue_kinds, *legacy), moved
    assert moved["state"]["state"] == "queued"
    assert moved["state"]["admitted"] is False
    code, listing = await call(jp_fetch, "GET", "clusters", "later")
    assert code == 200 and listing["position_in_local_queue"] == 0
    events.close()


@pytest.mark.parametrize("rules", [NO_QUEUES], indirect=True)
async def test_snapshot_says_what_cannot_be_read(kueue, jp_ws_fetch):
    make_queue(kueue)
    events, snapshot = await open_events(jp_ws_fetch)
    assert snapshot["queues"] is None
    assert snapshot["queues_error"]["code"] == "forbidden"
    assert "localqueues.kueue.x-k8s.io" in snapshot["queues_error"]["denied"]
    assert snapshot["clusters"] == [] and snapshot["clusters_error"] is None
    events.close()


async def test_the_socket_is_compressed_when_the_client_offers_it(kueue, jp_ws_fetch):
    """permessage-deflate, as a browser offers it: a snapshot at 5,000 Workloads is megabytes
    of JSON that compresses to a fraction. A client that does not offer it reads plain text."""
    make_queue(kueue)
    for offered, extension in (({}, "permessage-deflate"), (None, None)):
        ws = await jp_ws_fetch("dw", "api", "events", compression_options=offered)
        events = Events(ws)
        snapshot = await events.next()
        assert snapshot["type"] == "snapshot" and snapshot["queues"]["queues"], snapshot
        agreed = ws.headers.get("Sec-WebSocket-Extensions")
        assert (agreed or "").split(";")[0] == (extension or ""), agreed
        events.close()


async def test_unauthenticated_socket_is_refused(jp_ws_fetch):
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("dw", "api", "events", headers={"Authorization": "token wrong"})
    assert refused.value.code == 403


async def login_cookie(jp_fetch, jp_serverapp, host: str) -> str:
    """A browser's login cookie for ``host``: what a cross-site page could ride on (a token in
    a header is not, and jupyter_server skips the origin check for token-authenticated
    requests). The cookie's name carries the host, so log in as the socket will connect."""
    response = await jp_fetch(
        "api",
        "status",
        params={"token": jp_serverapp.identity_provider.token},
        headers={"Authorization": "", "Host": host},
    )
    cookies = [c.split(";", 1)[0] for c in response.headers.get_list("Set-Cookie")]
    assert cookies, "no login cookie"
    return "; ".join(cookies)


async def test_cross_origin_socket_is_refused(jp_fetch, jp_ws_fetch, jp_serverapp, jp_http_port):
    host = f"localhost:{jp_http_port}"  # where jp_ws_fetch connects
    cookie = await login_cookie(jp_fetch, jp_serverapp, host)
    browser = {"Authorization": "", "Cookie": cookie}

    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch(
            "dw", "api", "events", headers={**browser, "Origin": "http://evil.example"}
        )
    assert refused.value.code == 403

    # The same browser from the server's own origin is let in.
    own = {**browser, "Origin": f"http://{host}"}
    events = Events(await jp_ws_fetch("dw", "api", "events", headers=own))
    assert (await events.next())["type"] == "snapshot"
    events.close()


class DenyJupyterDW(Authorizer):
    """Allows everything except the ``jupyter_dw`` resource."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != AUTH_RESOURCE


@pytest.mark.parametrize("server_options", [{"authorizer_class": DenyJupyterDW}], indirect=True)
async def test_socket_is_authorized_by_jupyter_server(jp_ws_fetch):
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("dw", "api", "events")
    assert refused.value.code == 403


async def test_a_stopping_server_closes_each_socket_going_away(
    kueue, jp_serverapp, jp_ws_fetch, caplog
):
    """The extension stops (as the server does, before its threads go): every events socket
    closes with 1001, so the page reconnects to the next server, and none reports a failure."""
    make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_dw"]
    await app.stop_extension()

    async def closed() -> None:
        while await events.ws.read_message() is not None:
            pass  # messages already on their way before the stop

    await asyncio.wait_for(closed(), WAIT_TIMEOUT)
    assert events.ws.close_code == 1001
    assert events.ws.close_reason == "the Jupyter server is stopping"
    assert not [r for r in caplog.records if "events socket failed" in r.getMessage()]


async def test_a_rows_socket_is_sent_the_rows_shown_and_what_changes_them(
    kueue, jp_fetch, jp_ws_fetch
):
    """``?workloads=rows``: a queue's first rows and its count, no ``workload`` message; an
    ``expand`` answered with the queue's other rows only; a change, with its queue's."""
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    names = [f"r-{i}" for i in range(7)]
    for name in names:  # 1 CPU each on 4: four admitted, three waiting
        kueue.custom.create_namespaced_custom_object(
            "kueue.x-k8s.io", kueue.api_version, kueue.namespace, "workloads",
            plain_workload(kueue.api_version, name, queue.local_queue, "1"),
        )  # fmt: skip

    async def listed() -> int:
        code, answer = await call(jp_fetch, "GET", "workloads", params={"queue": queue.local_queue})
        assert code == 200
        return len(answer["workloads"])

    deadline = asyncio.get_running_loop().time() + WAIT_TIMEOUT
    while await listed() < len(names):  # the server's cache holds them all
        assert asyncio.get_running_loop().time() < deadline, "the Workloads never listed"
        await asyncio.sleep(0.1)

    events = Events(await jp_ws_fetch("dw", "api", "events", params={"workloads": "rows"}))
    snapshot = await events.next()
    assert snapshot["queue_rows"] == {queue.local_queue: {"count": 7, "mine": []}}
    shown = [w["name"] for w in snapshot["workloads"]]
    assert len(shown) == 5 and set(shown) <= set(names)

    await events.ws.write_message(json.dumps({"type": "expand", "queues": [queue.local_queue]}))
    expanded = await events.until(
        lambda m: m["type"] == "rows" and len(m["names"]) == 7, "the queue's every row"
    )
    # Only the rows not sent yet come as records; the five are named only.
    assert {w["name"] for w in expanded["workloads"]} == set(names) - set(shown)
    assert expanded["count"] == 7 and sorted(expanded["names"]) == names

    kueue.custom.delete_namespaced_custom_object(
        "kueue.x-k8s.io", kueue.api_version, kueue.namespace, "workloads", expanded["names"][-1]
    )
    gone = await events.until(
        lambda m: m["type"] == "rows" and m["count"] == 6, "the queue once one is gone"
    )
    assert len(gone["names"]) == 6

    await events.ws.write_message(json.dumps({"type": "expand", "queues": []}))
    folded = await events.until(
        lambda m: m["type"] == "rows" and len(m["names"]) == 5, "the queue folded again"
    )
    assert folded["count"] == 6 and folded["workloads"] == []  # all five were sent before
    assert not [m for m in events.seen if m["type"] in ("workload", "positions")]
    events.close()
