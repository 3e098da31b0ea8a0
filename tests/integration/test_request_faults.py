"""Request-level faults, each caused for real between the Jupyter server and the shared
kube-apiserver by a TLS-terminating proxy (tests/cluster/apiproxy.py) that the workbench's
service-account directory points at (its ``ca.crt`` is the proxy's own CA):

- a create whose answer is lost (the API server stored the RayCluster, the connection is cut
  before its answer is relayed): the idempotency key makes it one cluster, answered as 201;
- a slow API server (the proxy holds a request): 504 ``timeout`` with a clear message, the
  fit check still answers, and the server stays responsive meanwhile;
- a busy API server (the proxy answers 429 as flow control does): 503 ``busy`` with its
  ``Retry-After``, nothing created, and the same request creates once it serves again;
- the token file rotated and the old token revoked (its bound Secret deleted): calls go on;
- a LocalQueue made a moment ago, its watch event held back (the proxy drops the watch and
  holds its re-opening): a request naming it looks it up once and waits for the cache;
- no permission to read ClusterQueues: creating a cluster does not need that watch.

Nothing here stops or breaks a component of the shared cluster: only this test's proxy and
this test's own namespace and service account are touched.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from kubernetes import client
from tornado.httpclient import HTTPClientError

from jupyter_dw.k8s.resources import LOCAL_QUEUE
from jupyter_dw.names import IDEMPOTENCY_KEY_ANNOTATION
from tests.cluster.apiproxy import ApiProxy, Fault, Matcher, request_to
from tests.cluster.fixtures import WAIT_TIMEOUT
from tests.cluster.kubeapi import wait_for
from tests.integration.clusters_support import call, make_queue, rayclusters, small_cluster
from tests.integration.test_events_cost import core_of, wait_cache
from tests.integration.workbench_rbac import namespace_rules

# A workbench that may not read ClusterQueues (quota hidden): creating must not need them.
WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = None

pytestmark = pytest.mark.cluster

SHORT_TIMEOUT = 3.0
"""``request_timeout`` of the slow-API-server tests: how long a held call may take."""


@pytest.fixture
def proxy(cluster, tmp_path) -> Iterator[ApiProxy]:
    """A fault-injecting proxy in front of the shared API server, healed and stopped after."""
    with ApiProxy(cluster.apiserver, cluster.ca_file, tmp_path / "proxy") as running:
        yield running
        running.heal()


@pytest.fixture
def identity(workbench, rules, cluster_rules, proxy, monkeypatch):
    """The workbench service account, reaching the API server only through ``proxy``."""
    wb = workbench(rules=rules, cluster_rules=cluster_rules)
    shutil.copyfile(proxy.ca_file, wb.service_account_dir / "ca.crt")
    wb = replace(wb, host=proxy.host, port=str(proxy.port))
    for key, value in wb.environ.items():
        monkeypatch.setenv(key, value)
    return wb


def creates(namespace: str, *, dry_run: bool) -> Matcher:
    """The POSTs that create (or dry-run) a RayCluster in ``namespace``."""
    return request_to(
        "POST", f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", dry_run=dry_run
    )


def reads(namespace: str, name: str) -> Matcher:
    return request_to("GET", f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}")


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


async def until_relaying(proxy: ApiProxy, match: Matcher) -> None:
    """Wait until a matching request's answer is being relayed (a watch is open)."""
    while proxy.relaying(match) == 0:
        await asyncio.sleep(0.05)


async def struck(fault: Fault) -> None:
    """Wait until the proxy applied ``fault`` to a request."""
    assert await asyncio.to_thread(fault.struck.wait, WAIT_TIMEOUT), "the fault never struck"


# --------------------------------------------------------------------------------------------
# A lost answer to a create
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("from_client", [True, False], ids=["client-key", "server-key"])
async def test_a_lost_create_answer_is_found_by_its_key_one_cluster(
    kube, kueue, namespace, proxy, jp_fetch, from_client
):
    """With the client's key, or without one (the server makes a key for the request)."""
    make_queue(kueue)
    cut = proxy.cut(creates(namespace, dry_run=False))
    key = str(uuid.uuid4())
    headers = keyed(key) if from_client else None

    code, created = await call(
        jp_fetch, "POST", "clusters", body=small_cluster("lost"), headers=headers
    )

    assert code == 201, created
    assert created["name"] == "lost"
    # The API server stored it and its answer was cut; the server looked it up by its key
    # instead of sending the create again.
    assert cut.hits == 1 and cut.struck.is_set()
    assert proxy.outcomes(creates(namespace, dry_run=False)) == ["cut"]
    assert proxy.outcomes(reads(namespace, "lost")) == ["passed"]
    [stored] = rayclusters(kube, namespace)
    stored_key = stored["metadata"]["annotations"][IDEMPOTENCY_KEY_ANNOTATION]
    if from_client:
        assert stored_key == key
    else:
        assert uuid.UUID(stored_key).version == 4  # made by the server for this request


async def test_a_retry_with_the_same_key_answers_the_one_cluster_never_409(
    kube, kueue, namespace, proxy, jp_fetch
):
    """The answer stays lost (the look-up is cut too), so the server cannot tell; the client
    retries the same click with the same key once the network is back."""
    make_queue(kueue)
    proxy.cut(creates(namespace, dry_run=False))
    proxy.cut(reads(namespace, "retried"), times=None)
    key = str(uuid.uuid4())
    request = small_cluster("retried")

    code, error = await call(jp_fetch, "POST", "clusters", body=request, headers=keyed(key))

    assert code == 503, error
    assert error["code"] == "unreachable"
    assert "'retried' may or may not have been created" in error["hint"]
    assert "same idempotency key is safe" in error["hint"]
    [stored] = rayclusters(kube, namespace)  # it was stored, once

    proxy.heal()
    code, again = await call(jp_fetch, "POST", "clusters", body=request, headers=keyed(key))

    assert code == 201, again
    assert again["name"] == "retried"
    [still] = rayclusters(kube, namespace)
    assert still["metadata"]["uid"] == stored["metadata"]["uid"]
    # The retry's dry run met the name taken by its own key: no second create was sent.
    assert proxy.outcomes(creates(namespace, dry_run=False)) == ["cut"]

    # Another click (another key), or a client without a key, still meets a taken name.
    code, other = await call(
        jp_fetch, "POST", "clusters", body=request, headers=keyed(str(uuid.uuid4()))
    )
    assert (code, other["code"]) == (409, "already_exists")
    assert "'retried' already exists" in other["error"]
    code, other = await call(jp_fetch, "POST", "clusters", body=request)
    assert (code, other["code"]) == (409, "already_exists")
    # The same key with a changed request is not a retry of it.
    changed = small_cluster("retried", workers=1)
    code, other = await call(jp_fetch, "POST", "clusters", body=changed, headers=keyed(key))
    assert (code, other["code"]) == (409, "already_exists"), other
    assert "this request differs" in other["error"] and "new idempotency key" in other["hint"]
    assert len(rayclusters(kube, namespace)) == 1


async def test_a_malformed_key_is_400_and_nothing_is_sent(kube, kueue, namespace, proxy, jp_fetch):
    make_queue(kueue)
    # The session started first: its own start-up checks (the elastic-jobs dry run among them)
    # are not this request's.
    assert (await call(jp_fetch, "GET", "queues"))[0] == 200
    dry_runs = proxy.outcomes(creates(namespace, dry_run=True))
    code, error = await call(
        jp_fetch, "POST", "clusters", body=small_cluster("bad-key"), headers=keyed("no spaces!")
    )
    assert code == 400, error
    assert error["code"] == "invalid_request"
    assert set(error["errors"]) == {"idempotency_key"}
    assert proxy.outcomes(creates(namespace, dry_run=True)) == dry_runs
    assert rayclusters(kube, namespace) == []


# --------------------------------------------------------------------------------------------
# A slow API server
# --------------------------------------------------------------------------------------------

SHORT = {"request_timeout": SHORT_TIMEOUT}


async def test_a_busy_api_server_is_503_busy_with_its_advice(
    kube, kueue, namespace, proxy, jp_fetch
):
    """429 Too Many Requests (API Priority and Fairness' answer, given by the proxy) is not a
    status of our API: the create answers 503 ``busy`` with the API server's advice as
    ``Retry-After``; once the API server serves again the same request creates the cluster."""
    make_queue(kueue)
    assert (await call(jp_fetch, "GET", "queues"))[0] == 200  # started and synced
    throttled = proxy.throttle(
        request_to("POST", f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters"), retry_after=3
    )

    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch(
            "dw", "api", "clusters", method="POST", body=json.dumps(small_cluster("busy"))
        )

    assert refused.value.code == 503
    assert refused.value.response is not None
    assert refused.value.response.headers.get("Retry-After") == "3"
    answer = json.loads(refused.value.response.body)
    assert answer["code"] == "busy"
    assert "too busy" in answer["error"]
    assert "try again in 3 s" in answer["hint"]
    assert throttled.hits >= 1
    assert rayclusters(kube, namespace) == []

    proxy.heal()
    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("busy"))
    assert code == 201, created
    assert [c["metadata"]["name"] for c in rayclusters(kube, namespace)] == ["busy"]


async def test_a_queue_made_a_moment_ago_is_found_while_its_watch_lags(
    kube, kueue, namespace, proxy, jp_fetch
):
    """A LocalQueue the LocalQueue cache has not seen yet (its watch event still on the way):
    a request naming it gets one look-up and a wait for the cache, not "no LocalQueue". Made
    deterministic: the proxy drops the LocalQueue watch and holds its re-opening, so the cache
    cannot bring the new queue until the look-up has happened."""
    queue = make_queue(kueue)
    assert (await call(jp_fetch, "GET", "queues"))[0] == 200  # started and synced
    collection = rf"/apis/kueue\.x-k8s\.io/[^/]+/namespaces/{namespace}/localqueues"
    watches = request_to("GET", collection)
    # The cache's watch request follows its list: wait until it is open at the proxy.
    await asyncio.wait_for(until_relaying(proxy, watches), WAIT_TIMEOUT)
    held = proxy.hold(watches)
    assert proxy.sever(watches) == 1  # the cache's one watch: it ends and is opened again...
    await struck(held)  # ...and that request waits at the proxy
    kueue.local_queue("fresh", queue.cluster_queue)
    look_up = request_to("GET", f"{collection}/fresh")

    async def release_after_the_look_up() -> None:
        while proxy.outcomes(look_up) != ["passed"]:
            await asyncio.sleep(0.05)
        held.release()

    releasing = asyncio.ensure_future(release_after_the_look_up())
    code, fit = await call(
        jp_fetch, "POST", "clusters", "fit", body=small_cluster("x", queue="fresh")
    )
    releasing.cancel()  # done already when the look-up happened
    held.release()

    assert code == 200, fit
    assert fit["spec"]["queue"] == "fresh"
    assert proxy.outcomes(look_up) == ["passed"]  # one look-up, then the cache
    # A name no LocalQueue has: one look-up too, then the caller's own check says so.
    missing = request_to("GET", f"{collection}/missing")
    code, error = await call(
        jp_fetch, "POST", "clusters", "fit", body=small_cluster("x", queue="missing")
    )
    assert code == 400 and "no LocalQueue 'missing'" in error["errors"]["queue"], error
    assert proxy.outcomes(missing) == ["passed"]
    # A name no object can have is not looked up at all (Kubernetes would answer 400).
    code, error = await call(
        jp_fetch, "POST", "clusters", "fit", body=small_cluster("x", queue="Bad_Name")
    )
    assert code == 400 and "queue" in error["errors"], error
    assert proxy.outcomes(request_to("GET", f"{collection}/Bad_Name")) == []


@pytest.mark.parametrize("dw_config", [SHORT], indirect=True)
async def test_a_slow_api_server_is_504_naming_the_timeout(kube, kueue, namespace, proxy, jp_fetch):
    make_queue(kueue)
    assert (await call(jp_fetch, "GET", "queues"))[0] == 200  # started and synced
    held = proxy.hold(creates(namespace, dry_run=True))

    code, error = await call(jp_fetch, "POST", "clusters", body=small_cluster("slow"))

    assert code == 504, error
    assert error["code"] == "timeout"
    assert error["error"] == f"The Kubernetes API server did not answer within {SHORT_TIMEOUT:g}s"
    assert "/rayclusters" in error["reason"]
    assert "request_timeout" in error["hint"]
    assert held.hits == 1
    assert rayclusters(kube, namespace) == []

    # A read the caches cannot answer times out the same way, after one try: urllib3 would
    # retry a GET's read timeout 3 times by default, 4 times the configured wait.
    held = proxy.hold(reads(namespace, "absent"))
    code, error = await call(jp_fetch, "GET", "clusters", "absent")
    assert (code, error["code"]) == (504, "timeout"), error
    assert held.hits == 1


# Both pending lists readable: the ClusterQueue's first, else the LocalQueue's.
CLUSTER_QUEUE_POSITIONS = [
    {
        "apiGroups": ["visibility.kueue.x-k8s.io"],
        "resources": ["clusterqueues/pendingworkloads"],
        "verbs": ["get"],
    }
]


@pytest.mark.parametrize("dw_config", [SHORT], indirect=True)
@pytest.mark.parametrize("cluster_rules", [CLUSTER_QUEUE_POSITIONS], indirect=True)
async def test_the_fit_check_answers_when_the_visibility_api_does_not(
    kueue, namespace, proxy, jp_serverapp, jp_fetch
):
    """Positions are extra: a visibility call that never answers costs one
    ``request_timeout`` (the LocalQueue's list is then not asked), and the verdict comes
    from the caches."""
    queue = make_queue(kueue)
    assert (await call(jp_fetch, "GET", "queues"))[0] == 200
    # The fit takes the default queue from the cache: once the cache holds it (under load,
    # the second chance, a list within the short request_timeout, may time out).
    session = core_of(jp_serverapp).session
    await asyncio.to_thread(
        wait_cache,
        session,
        LOCAL_QUEUE,
        lambda c: c.get(queue.local_queue, namespace) is not None,
        "the LocalQueue cached",
    )
    held = proxy.hold(request_to("GET", r"/apis/visibility\.kueue\.x-k8s\.io/.*"))

    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=small_cluster("sized"))

    assert code == 200, fit
    assert held.hits == 1
    [(_, target, _)] = [r for r in proxy.requests if held.match(r[0], r[1])]
    assert "/clusterqueues/" in target  # the ClusterQueue's list; the LocalQueue's not asked
    assert fit["queue"] == queue.local_queue
    assert fit["requests"] == {"cpu": "3", "memory": "3Gi"}


async def test_the_server_stays_responsive_while_a_call_is_pending(
    kube, kueue, namespace, proxy, jp_fetch
):
    """The create's dry run is held at the proxy until released: meanwhile version, the
    cached listing and the queues answer (blocking calls run on the thread pool, never on the
    IO loop); once released, the create completes."""
    make_queue(kueue)
    assert (await call(jp_fetch, "GET", "queues"))[0] == 200
    held = proxy.hold(creates(namespace, dry_run=True))
    creating = asyncio.ensure_future(
        call(jp_fetch, "POST", "clusters", body=small_cluster("patient"))
    )
    await struck(held)

    version = await jp_fetch("dw", "api", "version")
    listing = await call(jp_fetch, "GET", "clusters")
    queues = await call(jp_fetch, "GET", "queues")

    assert version.code == 200
    assert (listing[0], listing[1]["clusters"]) == (200, [])
    assert queues[0] == 200
    assert not creating.done()  # all answered while the create was still held
    held.release()
    code, created = await creating
    assert (code, created["name"]) == (201, "patient")


# --------------------------------------------------------------------------------------------
# Identity: the token rotated, the old one revoked
# --------------------------------------------------------------------------------------------


def bound_token(kube: client.ApiClient, namespace: str, account: str, secret: str) -> str:
    """A token for ``account`` bound to Secret ``secret``: deleting the Secret revokes it."""
    core = client.CoreV1Api(kube)
    anchor = core.create_namespaced_secret(
        namespace, client.V1Secret(metadata=client.V1ObjectMeta(name=secret))
    )
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(
            audiences=[],
            expiration_seconds=3600,
            bound_object_ref=client.V1BoundObjectReference(
                api_version="v1", kind="Secret", name=secret, uid=anchor.metadata.uid
            ),
        )
    )
    return core.create_namespaced_service_account_token(account, namespace, request).status.token


def rotate(token_file: Path, token: str) -> None:
    """Replace the token file in one step, as the kubelet does (a new file, renamed over)."""
    fresh = token_file.with_name(".token.new")
    fresh.write_text(token)
    os.replace(fresh, token_file)


def rejected(identity, token: str) -> bool:
    """Whether the API server now answers 401 to ``token``."""
    api = replace(identity, token=token).api_client()
    try:
        client.CoreV1Api(api).list_namespaced_pod(identity.namespace, limit=1)
    except client.ApiException as err:
        return err.status == 401
    finally:
        api.close()
    return False


async def test_calls_go_on_after_the_token_is_rotated_and_the_old_one_revoked(
    kube, kueue, namespace, identity, jp_fetch
):
    make_queue(kueue)
    token_file = identity.service_account_dir / "token"
    first = bound_token(kube, namespace, identity.name, "token-anchor-1")
    rotate(token_file, first)
    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("before"))
    assert code == 201, created

    # The kubelet's rotation: a new token in the file, then the old one stops working.
    rotate(token_file, bound_token(kube, namespace, identity.name, "token-anchor-2"))
    client.CoreV1Api(kube).delete_namespaced_secret("token-anchor-1", namespace)
    await asyncio.to_thread(
        wait_for, lambda: rejected(identity, first), timeout=WAIT_TIMEOUT, what="revocation"
    )

    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("after"))
    assert code == 201, created
    code, error = await call(jp_fetch, "GET", "clusters", "absent")  # asks the API server
    assert (code, error["code"]) == (404, "not_found")
    assert (await call(jp_fetch, "DELETE", "clusters", "before"))[0] == 200
    code, context = await call(jp_fetch, "GET", "context")
    assert code == 200 and context["identity"]["username"] == identity.username


# --------------------------------------------------------------------------------------------
# The ClusterQueue watch is optional for a create
# --------------------------------------------------------------------------------------------


async def test_a_create_does_not_need_the_cluster_queue_watch(
    kube, kueue, namespace, session, jp_fetch
):
    queue = make_queue(kueue)
    code, context = await call(jp_fetch, "GET", "context")
    assert code == 200
    denied = {p["permission"] for p in context["permissions"] if not p["allowed"]}
    assert "list clusterqueues.kueue.x-k8s.io" in denied
    assert "clusterqueues" not in session.watched

    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("no-cq"))

    assert code == 201, created
    assert created["queue"] == queue.local_queue
    [stored] = rayclusters(kube, namespace)
    assert stored["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == queue.local_queue


# --------------------------------------------------------------------------------------------
# The kernel's surfaces: the builder's retry click and dw.submit's retry
# --------------------------------------------------------------------------------------------


def one_cluster_answer_lost(proxy: ApiProxy, namespace: str, name: str) -> None:
    """The create is stored but its answer lost, and so is every look-up of it."""
    proxy.cut(creates(namespace, dry_run=False))
    proxy.cut(reads(namespace, name), times=None)


def test_the_builders_retry_click_sends_the_same_key_one_cluster(
    kernel, kube, kueue, namespace, proxy
):
    import jupyter_dw as dw

    make_queue(kueue)
    one_cluster_answer_lost(proxy, namespace, "clicked")
    builder = dw.ClusterBuilder(name="clicked", head_memory="1Gi", worker_memory="1Gi")

    assert builder.submit() is None  # the answer was lost: the form stays, saying so
    assert "may or may not have been created" in builder.problem.value
    [stored] = rayclusters(kube, namespace)

    proxy.heal()
    status = builder.submit()  # the same form clicked again

    assert status is not None and status.name == "clicked"
    [still] = rayclusters(kube, namespace)
    assert still["metadata"]["uid"] == stored["metadata"]["uid"]
    assert proxy.outcomes(creates(namespace, dry_run=False)) == ["cut"]
    builder.close()


def test_dw_submit_names_the_key_to_retry_with(kernel, kube, kueue, namespace, proxy):
    import jupyter_dw as dw

    make_queue(kueue)
    one_cluster_answer_lost(proxy, namespace, "typed")
    spec = small_cluster("typed")

    with pytest.raises(dw.Unreachable) as caught:
        dw.submit(spec)
    key = caught.value.idempotency_key
    assert f"idempotency_key={key!r}" in caught.value.hint

    proxy.heal()
    handle = dw.submit(spec, idempotency_key=key)

    assert handle.name == "typed"
    [stored] = rayclusters(kube, namespace)
    assert stored["metadata"]["annotations"][IDEMPOTENCY_KEY_ANNOTATION] == key
    with pytest.raises(dw.NameTaken):  # a new call is a new key
        dw.submit(spec)
