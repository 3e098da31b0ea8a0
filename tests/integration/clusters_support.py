"""Shared by test_clusters_api.py and test_events_ws.py: the workbench's RBAC, REST and
WebSocket helpers, and Kueue queues for Ray clusters. Every wait is on a condition (an events
message, a watch) with a timeout.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from kubernetes import client, watch
from tornado.httpclient import HTTPClientError
from tornado.websocket import WebSocketClientConnection

from jupyter_dw.domain.quantity import parse_quantity
from tests.cluster.fixtures import WAIT_TIMEOUT, KueueObjects, condition, watch_until
from tests.cluster.versions import Versions
from tests.integration.workbench_rbac import KUEUE

# --------------------------------------------------------------------------------------------
# REST
# --------------------------------------------------------------------------------------------


async def call(
    jp_fetch,
    method: str,
    *route: str,
    body: Any = None,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """``method dw/api/<route>[?params]``; errors are returned, not raised."""
    kwargs: dict[str, Any] = {"method": method, "request_timeout": WAIT_TIMEOUT}
    if headers:
        kwargs["headers"] = headers
    if params:
        kwargs["params"] = params
    if raw is not None:
        kwargs["body"] = raw
    elif body is not None or method == "POST":
        kwargs["body"] = json.dumps(body)
    if method == "DELETE":
        kwargs["allow_nonstandard_methods"] = True
    try:
        response = await jp_fetch("dw", "api", *route, **kwargs)
    except HTTPClientError as err:
        assert err.response is not None, err
        return err.code, json.loads(err.response.body)
    return response.code, json.loads(response.body)


# --------------------------------------------------------------------------------------------
# The events socket
# --------------------------------------------------------------------------------------------


QUEUE_MESSAGES = ("queues", "queue")
"""The message types that change the queues answer: the whole of it, or the records changed."""


@dataclass
class Events:
    """A connected ``dw/api/events`` socket, read message by message. Like the sidebar, it
    keeps the queues answer and the Workload records its messages make (:attr:`queues`,
    :attr:`workloads`), so a test can wait for what a view would show."""

    ws: WebSocketClientConnection
    seen: list[dict[str, Any]] = field(default_factory=list)
    _reading: asyncio.Future[Any] | None = None
    queues: dict[str, Any] | None = None
    """The ``GET queues`` answer as the messages read so far make it."""
    workloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The Workload records, by name, as the messages read so far make them."""

    def queue(self, name: str) -> dict[str, Any] | None:
        """LocalQueue ``name``'s record in :attr:`queues`."""
        return next((q for q in (self.queues or {}).get("queues") or [] if q["name"] == name), None)

    def _apply(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind in ("snapshot", "queues") and message["queues"] is not None:
            self.queues = message["queues"]
        if kind == "snapshot":
            self.workloads = {w["name"]: w for w in message["workloads"] or []}
        elif kind == "queue" and self.queues is not None:
            changed = {q["name"]: q for q in message["queues"]}
            queues = [changed.get(q["name"], q) for q in self.queues["queues"]]
            self.queues = {**self.queues, "queues": queues}
        elif kind == "workload":
            if message["workload"] is None:
                self.workloads.pop(message["name"], None)
            else:
                self.workloads[message["name"]] = message["workload"]
        elif kind == "positions":
            for name, (local, cluster) in message["positions"].items():
                if name in self.workloads:
                    self.workloads[name] = {
                        **self.workloads[name],
                        "position_in_local_queue": local,
                        "position_in_cluster_queue": cluster,
                    }

    def reading(self) -> asyncio.Future[Any]:
        """The read of the next message, started once and kept until it is taken: a wait
        that gives up (a timeout, waiting on another socket) never loses a message."""
        if self._reading is None:
            self._reading = asyncio.ensure_future(self.ws.read_message())
        return self._reading

    def take(self) -> dict[str, Any]:
        """The message :meth:`reading` has read (it must be done)."""
        assert self._reading is not None and self._reading.done()
        text, self._reading = self._reading.result(), None
        assert text is not None, "the server closed the events socket"
        message = json.loads(text)
        self.seen.append(message)
        self._apply(message)
        return message

    async def next(self, timeout: float = WAIT_TIMEOUT) -> dict[str, Any]:
        done, _ = await asyncio.wait({self.reading()}, timeout=timeout)
        if not done:
            raise asyncio.TimeoutError
        return self.take()

    async def until(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = WAIT_TIMEOUT,
    ) -> dict[str, Any]:
        """Read until a message satisfies ``predicate``; return it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"no events message: {what}; last: {self.seen[-3:]}")
            try:
                message = await self.next(remaining)
            except asyncio.TimeoutError:
                raise TimeoutError(f"no events message: {what}; last: {self.seen[-3:]}") from None
            if predicate(message):
                return message

    async def since(
        self,
        index: int,
        predicate: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = WAIT_TIMEOUT,
    ) -> dict[str, Any]:
        """The first message from the ``index``-th on that satisfies ``predicate``: one
        already read, else the next one that comes."""
        for message in self.seen[index:]:
            if predicate(message):
                return message
        return await self.until(predicate, what, timeout)

    async def cluster_state(
        self, name: str, predicate: Callable[[dict[str, Any] | None], bool], what: str
    ) -> dict[str, Any] | None:
        """Read until a message about cluster ``name`` has a ``state`` satisfying
        ``predicate``; return that state."""
        message = await self.until(
            lambda m: m["type"] == "cluster" and m["name"] == name and predicate(m["state"]),
            f"cluster {name}: {what}",
        )
        return message["state"]

    def milestones(self, name: str) -> list[str]:
        """Every milestone reported for cluster ``name`` so far, in order."""
        return [
            milestone
            for m in self.seen
            if m["type"] == "cluster" and m["name"] == name
            for milestone in m["milestones"]
        ]

    def close(self) -> None:
        self.ws.close()


async def open_events(jp_ws_fetch) -> tuple[Events, dict[str, Any]]:
    """Connect to ``dw/api/events``; return the socket and its snapshot message."""
    events = Events(await jp_ws_fetch("dw", "api", "events"))
    snapshot = await events.next()
    assert snapshot["type"] == "snapshot", snapshot
    return events, snapshot


def state_is(*states: str) -> Callable[[dict[str, Any] | None], bool]:
    return lambda state: state is not None and state["state"] in states


def in_order(seen: Sequence[str], expected: Sequence[str]) -> bool:
    """Whether ``expected`` occurs in ``seen`` in this order (others may come between)."""
    it = iter(seen)
    return all(any(item == wanted for item in it) for wanted in expected)


# --------------------------------------------------------------------------------------------
# Kueue and the namespace, as an administrator sees them
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Queue:
    """A LocalQueue (the namespace's default) on its own ClusterQueue and flavor."""

    local_queue: str
    cluster_queue: str
    flavor: str


def make_queue(kueue: KueueObjects, cpu: str = "4", memory: str = "8Gi", **spec: Any) -> Queue:
    """LocalQueue ``team`` (annotated default) → a ClusterQueue with ``cpu`` and ``memory``."""
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("small", {flavor: {"cpu": cpu, "memory": memory}}, **spec)
    kueue.wait_active("clusterqueues", cq)
    lq = kueue.local_queue("team", cq, annotations={f"{KUEUE}/default-queue": "true"})
    kueue.wait_active("localqueues", lq)
    return Queue(lq, cq, flavor)


def suspended_raycluster(name: str) -> dict[str, Any]:
    """A minimal suspended RayCluster with no queue: nothing runs and Kueue ignores it;
    enough for what needs only the object (proxy, names, watch events)."""
    container = {"name": "ray-head", "image": "rayproject/ray:2.60.0"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "suspend": True,
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [container]}},
            },
        },
    }


def create_suspended_raycluster(kube: client.ApiClient, namespace: str, name: str) -> None:
    """:func:`suspended_raycluster` made by the administrator."""
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", suspended_raycluster(name)
    )


def wait_gone(kube, namespace: str, name: str) -> bool:
    """Watch RayClusters until ``name`` is deleted (True), or ``WAIT_TIMEOUT`` passes (False)."""
    custom = client.CustomObjectsApi(kube)
    listing = custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")
    if name not in {rc["metadata"]["name"] for rc in listing["items"]}:
        return True
    for event in watch.Watch().stream(
        custom.list_namespaced_custom_object, "ray.io", "v1", namespace, "rayclusters",
        resource_version=listing["metadata"]["resourceVersion"], timeout_seconds=WAIT_TIMEOUT,
    ):  # fmt: skip
        if event["type"] == "DELETED" and event["raw_object"]["metadata"]["name"] == name:
            return True
    return False


def rayclusters(kube: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    """The namespace's RayClusters read by the administrator."""
    return client.CustomObjectsApi(kube).list_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters"
    )["items"]


def workloads_of(kube: client.ApiClient, kueue: KueueObjects, uid: str) -> list[dict[str, Any]]:
    """Every Workload of the job with ``uid`` (an elastic cluster's slices), read by the
    administrator."""
    return client.CustomObjectsApi(kube).list_namespaced_custom_object(
        KUEUE,
        kueue.api_version,
        kueue.namespace,
        "workloads",
        label_selector=f"{KUEUE}/job-uid={uid}",
    )["items"]


def workload_of(kube: client.ApiClient, kueue: KueueObjects, uid: str) -> dict[str, Any]:
    """The Workload of the RayCluster with ``uid``, read by the administrator."""
    items = workloads_of(kube, kueue, uid)
    assert len(items) == 1, items
    return items[0]


def cpu_headroom(queues: dict[str, Any] | None, queue: Queue) -> Decimal | None:
    """The CPU headroom of ``queue`` in a ``queues`` answer."""
    for entry in (queues or {}).get("queues") or []:
        if entry["name"] == queue.local_queue:
            for resource in entry["resources"]:
                if resource["resource"] == "cpu" and resource["headroom"] is not None:
                    return parse_quantity(resource["headroom"])
    return None


async def headroom_becomes(events: Events, jp_fetch: Any, queue: Queue, amount: Decimal) -> None:
    """Until ``GET queues`` shows ``amount`` CPU free in ``queue``: asked again after each
    ``queues`` message of the socket (a change of Kueue's ClusterQueue status, which Kueue
    writes after it admits a Workload, not with it)."""
    while True:
        _, queues = await call(jp_fetch, "GET", "queues")
        if cpu_headroom(queues, queue) == amount:
            return
        await events.until(lambda m: m["type"] in QUEUE_MESSAGES, f"headroom {amount} CPU")


async def queues_listing(jp_fetch: Any, jp_ws_fetch: Any, queue: Queue) -> dict[str, Any]:
    """The ``GET queues`` answer once the server's watch has seen ``queue`` (created a moment
    ago: the cache may lag the write); asked again after each ``queues`` message."""
    events, _ = await open_events(jp_ws_fetch)
    try:
        while True:
            _, queues = await call(jp_fetch, "GET", "queues")
            if queue.local_queue in [q["name"] for q in queues.get("queues") or []]:
                return queues
            await events.until(lambda m: m["type"] in QUEUE_MESSAGES, f"queue {queue.local_queue}")
    finally:
        events.close()


def small_cluster(name: str, workers: int = 2, **extra: Any) -> dict[str, Any]:
    """A request for a cluster of ``1 + workers`` pods of 1 CPU and 1Gi each."""
    return {
        "name": name,
        "workers": workers,
        "head_cpu": "1",
        "head_memory": "1Gi",
        "worker_cpu": "1",
        "worker_memory": "1Gi",
        **extra,
    }


# --------------------------------------------------------------------------------------------
# Capacity provisioning: Kueue's ProvisioningRequest admission check, the test as autoscaler
# --------------------------------------------------------------------------------------------

AUTOSCALING = ("autoscaling.x-k8s.io", "v1")


def make_capacity_queue(kube: client.ApiClient, kueue: KueueObjects, **spec: Any) -> str:
    """LocalQueue ``team`` (default) on a ClusterQueue that requires a ProvisioningRequest
    admission check whose failed requests are not retried (``backoffLimitCount: 0``); returns
    the check's name (``spec``: more ClusterQueue fields for ``make_queue``, e.g. ``cohort``).
    Fails clearly on a test cluster started before the test bed applied the
    ProvisioningRequest CRD (Kueue then never started its provisioning controller)."""
    try:
        client.ApiextensionsV1Api(kube).read_custom_resource_definition(
            "provisioningrequests.autoscaling.x-k8s.io"
        )
    except client.ApiException as err:
        if err.status != 404:
            raise
        raise AssertionError(
            "the test cluster predates the ProvisioningRequest CRD (tests/cluster/manifests.py): "
            "restart it (python -m tests.cluster down && up) so Kueue enables its provisioning "
            "controller"
        ) from None
    check = kueue.provisioning_check("capacity", backoff_limit=0)
    make_queue(kueue, admissionChecksStrategy={"admissionChecks": [{"name": check}]}, **spec)
    return check


class Autoscaler:
    """What the cluster autoscaler does to a ProvisioningRequest Kueue created: set its
    conditions (``Accepted``, ``Provisioned``, ``Failed``)."""

    def __init__(self, kube: client.ApiClient, namespace: str) -> None:
        self.custom = client.CustomObjectsApi(kube)
        self.namespace = namespace

    def request_of(self, workload: str) -> dict[str, Any]:
        """The ProvisioningRequest Kueue made for ``workload`` (waits for it)."""
        return watch_until(
            self.custom.list_namespaced_custom_object,
            lambda pr: any(
                ref.get("kind") == "Workload" and ref.get("name") == workload
                for ref in pr["metadata"].get("ownerReferences", [])
            ),
            what=f"the ProvisioningRequest of {workload}",
            group=AUTOSCALING[0],
            version=AUTOSCALING[1],
            namespace=self.namespace,
            plural="provisioningrequests",
        )

    def set(self, workload: str, **conditions: tuple[str, str]) -> None:
        """Set conditions ``type=(status, message)`` on the workload's ProvisioningRequest."""
        request = self.request_of(workload)
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "status": {
                "conditions": [
                    {
                        "type": kind,
                        "status": status,
                        "reason": kind if status == "True" else f"Not{kind}",
                        "message": message,
                        "lastTransitionTime": now,
                    }
                    for kind, (status, message) in conditions.items()
                ]
            }
        }
        self.custom.patch_namespaced_custom_object_status(
            *AUTOSCALING, self.namespace, "provisioningrequests", request["metadata"]["name"], body
        )


NAMESPACED_KINDS: tuple[tuple[str, str, str], ...] = (
    ("ray.io", "v1", "rayclusters"),
    ("ray.io", "v1", "rayjobs"),
    (KUEUE, "", "workloads"),
    (KUEUE, "", "localqueues"),
    ("", "v1", "services"),
    ("", "v1", "pods"),
    ("", "v1", "configmaps"),
    ("", "v1", "secrets"),
    ("", "v1", "serviceaccounts"),
    ("rbac.authorization.k8s.io", "v1", "roles"),
    ("rbac.authorization.k8s.io", "v1", "rolebindings"),
)
"""What a leaked request could create, change or delete in a namespace (``""`` version:
Kueue's, which the test cluster serves); TrainJobs too where the test bed runs Trainer."""
if Versions.selected().trainjobs:
    NAMESPACED_KINDS = (
        *NAMESPACED_KINDS,
        ("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
        ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    )


def namespace_objects(
    kube: client.ApiClient, namespace: str, kueue_api_version: str
) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Every object of :data:`NAMESPACED_KINDS` in ``namespace``, read by the administrator:
    ``(plural, name)`` → ``(uid, generation, labels, annotations, deletionTimestamp,
    controller)``, ``controller`` the UID of the object's controller (its ownerReference with
    ``controller: true``) or None. A create, a delete, a spec change or a label change shows;
    status updates by controllers do not."""
    found: dict[tuple[str, str], tuple[Any, ...]] = {}
    for group, version, plural in NAMESPACED_KINDS:
        version = version or kueue_api_version
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        response = kube.call_api(
            f"{prefix}/namespaces/{namespace}/{plural}",
            "GET",
            auth_settings=["BearerToken"],
            response_type="object",
            _return_http_data_only=True,
        )
        for item in response["items"]:
            meta = item["metadata"]
            found[(plural, meta["name"])] = (
                meta["uid"],
                meta.get("generation"),
                json.dumps(meta.get("labels") or {}, sort_keys=True),
                json.dumps(meta.get("annotations") or {}, sort_keys=True),
                meta.get("deletionTimestamp"),
                next(
                    (o["uid"] for o in meta.get("ownerReferences") or [] if o.get("controller")),
                    None,
                ),
            )
    return found


def owned_workload(
    kueue: KueueObjects, kind: str, job: str, done: Callable[[dict[str, Any]], Any], what: str
) -> dict[str, Any]:
    """Watch the Workload Kueue made for ``kind`` ``job`` (a RayJob, a TrainJob) until
    ``done(workload)``."""
    return watch_until(
        lambda **kw: kueue.custom.list_namespaced_custom_object(
            KUEUE, kueue.api_version, kueue.namespace, "workloads", **kw
        ),
        lambda w: (
            any(
                ref.get("kind") == kind and ref.get("name") == job
                for ref in w["metadata"].get("ownerReferences", [])
            )
            and done(w)
        ),
        what=f"{kind} {job}'s Workload {what}",
    )


def quota_reserved(workload: dict[str, Any]) -> bool | None:
    """Whether Kueue reserved quota for ``workload``: None until it has judged it."""
    found = condition(workload, "QuotaReserved") or {}
    if found.get("status") == "True":
        return True
    return False if found.get("status") == "False" and found.get("message") else None


def totals(amounts: dict[str, str]) -> dict[str, Decimal]:
    """A REST answer's ``{resource: quantity}`` as exact numbers."""
    return {r: parse_quantity(q) for r, q in amounts.items()}


def reserved_cpu(cluster_queue: dict[str, Any]) -> Decimal:
    """The CPU a ClusterQueue's status says is reserved, over its flavors."""
    total = Decimal(0)
    for flavor in (cluster_queue.get("status") or {}).get("flavorsReservation") or []:
        for resource in flavor.get("resources") or []:
            if resource.get("name") == "cpu":
                total += parse_quantity(resource.get("total", "0"))
    return total
