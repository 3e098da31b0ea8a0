"""Shared by test_clusters_api.py and test_events_ws.py: a server on a workbench service
account, REST and WebSocket helpers, and Kueue queues for Ray clusters.

Fixtures defined here are imported by those modules (pytest registers fixtures found in a test
module's namespace); their functions are named ``<fixture>_fixture`` so the import does not
clash with the test functions' parameters. Every wait is on a condition (an events message,
a watch) with a timeout.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client
from tornado.httpclient import HTTPClientError
from tornado.websocket import WebSocketClientConnection

from jupyter_dw.handlers import SESSION_SETTING
from jupyter_dw.k8s.session import KubeSession
from tests.cluster.fixtures import WAIT_TIMEOUT, KueueObjects

KUEUE = "kueue.x-k8s.io"
RAY_RULE_VERBS = ["get", "list", "watch", "create", "delete"]


def namespace_rules(ray_verbs: Sequence[str] = RAY_RULE_VERBS) -> list[dict[str, Any]]:
    """What a data scientist's workbench typically may do in its namespace (Kueue's
    batch-user role, Ray clusters with ``ray_verbs``, reading pods)."""
    return [
        {
            "apiGroups": [KUEUE],
            "resources": ["localqueues", "workloads"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["visibility.kueue.x-k8s.io"],
            "resources": ["localqueues/pendingworkloads"],
            "verbs": ["get"],
        },
        {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": list(ray_verbs)},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    ]


CLUSTER_READ_RULES = [
    {
        "apiGroups": [KUEUE],
        "resources": ["clusterqueues", "cohorts", "resourceflavors"],
        "verbs": ["get", "list", "watch"],
    }
]


# --------------------------------------------------------------------------------------------
# Fixtures: a server on the workbench identity
# --------------------------------------------------------------------------------------------


@pytest.fixture(name="rules")
def rules_fixture(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    """The workbench's namespaced RBAC; parametrize indirectly to change it."""
    return getattr(request, "param", namespace_rules())


@pytest.fixture(name="dw_config")
def dw_config_fixture(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Extra ``JupyterDW`` config; parametrize indirectly to set some."""
    return dict(getattr(request, "param", {}))


@pytest.fixture(name="server_options")
def server_options_fixture(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Extra ``ServerApp`` config; parametrize indirectly to set some."""
    return dict(getattr(request, "param", {}))


@pytest.fixture(name="identity")
def identity_fixture(workbench, rules, monkeypatch):
    """The workbench service account (may read quota), its pod environment set before the
    server starts."""
    wb = workbench(rules=rules, cluster_rules=CLUSTER_READ_RULES)
    for key, value in wb.environ.items():
        monkeypatch.setenv(key, value)
    return wb


@pytest.fixture(name="jp_server_config")
def jp_server_config_fixture(identity, dw_config, server_options):
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_dw": True}, **server_options},
        "JupyterDW": {"service_account_dir": str(identity.service_account_dir), **dw_config},
    }


@pytest.fixture(name="session")
def session_fixture(jp_serverapp) -> KubeSession:
    """The server extension's KubeSession (to look at its caches, never to answer)."""
    return jp_serverapp.web_app.settings[SESSION_SETTING]


# --------------------------------------------------------------------------------------------
# REST
# --------------------------------------------------------------------------------------------


async def call(
    jp_fetch, method: str, *route: str, body: Any = None, raw: bytes | None = None
) -> tuple[int, Any]:
    """``method dw/api/<route>``; errors are returned, not raised."""
    kwargs: dict[str, Any] = {"method": method, "request_timeout": WAIT_TIMEOUT}
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


@dataclass
class Events:
    """A connected ``dw/api/events`` socket, read message by message."""

    ws: WebSocketClientConnection
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def next(self, timeout: float = WAIT_TIMEOUT) -> dict[str, Any]:
        text = await asyncio.wait_for(self.ws.read_message(), timeout)
        assert text is not None, "the server closed the events socket"
        message = json.loads(text)
        self.seen.append(message)
        return message

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


def rayclusters(kube: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    """The namespace's RayClusters read by the administrator."""
    return client.CustomObjectsApi(kube).list_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters"
    )["items"]


def workload_of(kube: client.ApiClient, kueue: KueueObjects, uid: str) -> dict[str, Any]:
    """The Workload of the RayCluster with ``uid``, read by the administrator."""
    items = client.CustomObjectsApi(kube).list_namespaced_custom_object(
        KUEUE,
        kueue.api_version,
        kueue.namespace,
        "workloads",
        label_selector=f"{KUEUE}/job-uid={uid}",
    )["items"]
    assert len(items) == 1, items
    return items[0]


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
