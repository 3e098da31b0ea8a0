"""The Kubernetes layer under the server (credentials, token rotation, discovery, access reviews,
403 wording, watch caches with a real 410) against the real control plane."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from pathlib import Path

import pytest

from jupyter_dw.core.queues import QueueService
from jupyter_dw.k8s.access import check_access, who_am_i
from jupyter_dw.k8s.auth import load_credentials
from jupyter_dw.k8s.client import KubeApi
from jupyter_dw.k8s.discovery import discover
from jupyter_dw.k8s.errors import (
    KubeConfigError,
    KubeForbidden,
    KubeUnauthorized,
    KubeUnreachable,
)
from jupyter_dw.k8s.resources import CLUSTER_QUEUE, LOCAL_QUEUE, VISIBILITY_LOCAL_QUEUE
from jupyter_dw.k8s.session import KubeSession
from jupyter_dw.k8s.watch_cache import ADDED, ApiListWatch, Backoff, WatchCache
from tests.cluster.controlplane import free_port
from tests.cluster.fixtures import WAIT_TIMEOUT

pytestmark = pytest.mark.cluster

KUEUE = "kueue.x-k8s.io"
QUEUE_READER = [
    {"apiGroups": [KUEUE], "resources": ["localqueues", "workloads"], "verbs": ["list", "watch"]}
]
FAST = Backoff(initial=0.05, maximum=0.5)


@pytest.fixture
def reader(workbench):
    """A service account that may list and watch the namespace's LocalQueues and Workloads."""
    return workbench(rules=QUEUE_READER)


def api_for(identity) -> KubeApi:
    return KubeApi(load_credentials(identity.service_account_dir, environ=identity.environ))


def test_service_account_credentials_and_identity(reader, namespace):
    credentials = load_credentials(reader.service_account_dir, environ=reader.environ)
    assert credentials.source == "service_account"
    assert credentials.namespace == namespace
    assert reader.token not in credentials.description  # never shown

    identity = who_am_i(KubeApi(credentials))

    assert identity.username == reader.username
    assert identity.service_account == (namespace, "workbench")
    assert "system:authenticated" in identity.groups


def test_kubeconfig_is_used_outside_a_pod(cluster, tmp_path):
    environ = {"KUBECONFIG": cluster.kubeconfig}  # no KUBERNETES_SERVICE_HOST: not in a pod
    credentials = load_credentials(tmp_path / "no-such-dir", environ=environ)
    assert credentials.source == "kubeconfig"
    assert credentials.namespace == "default"  # the context names none, as kubectl assumes
    assert who_am_i(KubeApi(credentials)).username  # authenticated by the client certificate

    with pytest.raises(KubeConfigError) as missing:
        load_credentials(tmp_path, "no-such-context", environ=environ)
    assert "no-such-context" in str(missing.value)


def test_a_rotated_token_file_is_picked_up(workbench, namespace):
    first = workbench(rules=QUEUE_READER, name="workbench")
    second = workbench(rules=QUEUE_READER, name="rotated")
    api = api_for(first)
    assert who_am_i(api).username == first.username

    # The kubelet rotates by swapping in a new file (a symlink flip: a new inode).
    token = first.service_account_dir / "token"
    fresh = token.with_name("token.new")
    fresh.write_text(second.token)
    os.replace(fresh, token)

    assert who_am_i(api).username == second.username


def test_a_401_rereads_the_token_once_and_retries(reader, caplog):
    token = reader.service_account_dir / "token"
    valid = reader.token
    token.write_text("x" * len(valid))  # an invalid token of the same length
    api = api_for(reader)  # reads (and caches) the invalid token
    before = token.stat()
    # Replace the content without changing what the per-request check looks at (inode, size,
    # mtime): only a 401 can make the client read the file again.
    with token.open("r+") as f:
        f.write(valid)
    os.utime(token, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (token.stat().st_ino, token.stat().st_size) == (before.st_ino, before.st_size)

    with caplog.at_level(logging.INFO, logger="jupyter_dw.k8s.client"):
        assert who_am_i(api).username == reader.username
    assert any("401" in r.getMessage() for r in caplog.records)
    assert valid not in caplog.text


def test_a_revoked_token_is_a_clear_401(reader):
    (reader.service_account_dir / "token").write_text("not-a-token")
    with pytest.raises(KubeUnauthorized) as rejected:
        who_am_i(api_for(reader))
    assert rejected.value.status == 401
    assert "token" in rejected.value.hint


def test_discovery_finds_kueue_kuberay_and_visibility(reader, kueue_api_version):
    found = discover(api_for(reader))  # discovery needs no RBAC beyond authentication
    assert found.kueue_installed and found.kuberay_installed
    assert found.kueue_version == kueue_api_version
    assert kueue_api_version in found.kueue_served
    assert found.kueue(LOCAL_QUEUE).api_version == f"{KUEUE}/{kueue_api_version}"
    assert found.cohort_version is not None
    assert found.visibility_version in ("v1beta2", "v1beta1")
    assert found.ray_version == "v1"


def test_a_real_403_names_the_verb_and_resource(reader, namespace, kueue_api_version):
    api = api_for(reader)
    with pytest.raises(KubeForbidden) as denied:
        api.get(CLUSTER_QUEUE.at(kueue_api_version).path())
    assert denied.value.status == 403
    assert denied.value.denied == "list clusterqueues.kueue.x-k8s.io"
    assert reader.username in denied.value.reason  # Kubernetes' own message

    found = discover(api)
    pending = VISIBILITY_LOCAL_QUEUE.at(found.visibility_version).path(
        namespace, "team", "pendingworkloads"
    )
    with pytest.raises(KubeForbidden) as denied:
        api.get(pending)
    assert denied.value.denied == "get localqueues.visibility.kueue.x-k8s.io/pendingworkloads"


def test_access_review_matches_what_the_api_server_enforces(reader, namespace):
    api = api_for(reader)
    verdicts = {p.name: r.allowed for p, r in check_access(api, namespace).items()}
    assert verdicts["list localqueues.kueue.x-k8s.io"] is True
    assert verdicts["watch workloads.kueue.x-k8s.io"] is True
    assert verdicts["list clusterqueues.kueue.x-k8s.io"] is False
    assert verdicts["create rayclusters.ray.io"] is False
    assert verdicts["list pods"] is False


class FirstWatchTooOld:
    """Delegates to a real ApiListWatch but opens the first watch at resourceVersion 1, which
    the API server no longer has: it answers 410 Gone (an ERROR event)."""

    def __init__(self, inner: ApiListWatch) -> None:
        self.inner = inner
        self.description = inner.description
        self.first = True

    def list(self):
        return self.inner.list()

    def watch(self, resource_version: str):
        if self.first:
            self.first = False
            resource_version = "1"
        return self.inner.watch(resource_version)


def test_watch_cache_relists_after_a_real_410_and_keeps_watching(reader, kueue, namespace):
    flavor = kueue.flavor("f")
    cq = kueue.cluster_queue("cq", {flavor: {"cpu": "1"}})
    kueue.local_queue("before", cq)
    lw = ApiListWatch(api_for(reader), LOCAL_QUEUE.at(kueue.api_version), namespace)
    cache = WatchCache(FirstWatchTooOld(lw), backoff=FAST)
    seen: list[tuple[str, str]] = []
    cache.add_listener(lambda kind, obj: seen.append((kind, obj["metadata"]["name"])))
    cache.start()
    try:
        assert cache.wait_until(lambda objs: cache.relists >= 2, WAIT_TIMEOUT)
        kueue.local_queue("after", cq)

        assert cache.wait_until(
            lambda objs: {o["metadata"]["name"] for o in objs} >= {"before", "after"},
            WAIT_TIMEOUT,
        )
        assert cache.relists == 2  # one list, one re-list for the 410; "after" came by watch
        assert (ADDED, "after") in seen
    finally:
        cache.stop()


def test_session_lifecycle_caches_and_listeners(reader, kueue, namespace):
    session = KubeSession(
        service_account_dir=str(reader.service_account_dir),
        environ=reader.environ,
        request_timeout=WAIT_TIMEOUT,
        backoff=FAST,
    )
    events: list[tuple[str, str, str]] = []
    arrived = threading.Event()

    def listener(plural: str, kind: str, obj: dict) -> None:
        events.append((plural, kind, obj["metadata"]["name"]))
        arrived.set()

    session.add_listener(listener)
    session.start_background()
    session.wait_ready(WAIT_TIMEOUT)
    try:
        assert session.namespace == namespace
        assert session.cache(CLUSTER_QUEUE) is None  # not readable by this identity
        assert QueueService(session).list().queues == ()

        flavor = kueue.flavor("f")
        kueue.local_queue("team", kueue.cluster_queue("cq", {flavor: {"cpu": "1"}}))

        assert arrived.wait(WAIT_TIMEOUT)
        assert ("localqueues", ADDED, "team") in events
        assert session.cache(LOCAL_QUEUE).wait_until(lambda objs: len(objs) == 1, WAIT_TIMEOUT)
        assert [q.name for q in QueueService(session).list().queues] == ["team"]
    finally:
        session.stop()
    alive = [t.name for t in threading.enumerate() if namespace in t.name]
    assert alive == []
    assert not session.ready


class Forwarder:
    """A TCP forwarder to the API server, started late: until then its port refuses."""

    def __init__(self, port: int, target: tuple[str, int]) -> None:
        self.port, self.target = port, target
        self.listener: socket.socket | None = None

    def start(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        assert self.listener is not None
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()


def test_a_failed_start_is_reported_then_retried(reader):
    forwarder = Forwarder(free_port(), (reader.host, int(reader.port)))
    environ = dict(reader.environ, KUBERNETES_SERVICE_PORT=str(forwarder.port))
    session = KubeSession(
        service_account_dir=str(reader.service_account_dir), environ=environ, request_timeout=10
    )
    session.start_background()
    with pytest.raises(KubeUnreachable) as first:
        session.wait_ready(WAIT_TIMEOUT)
    assert str(forwarder.port) in first.value.error
    assert not session.ready

    forwarder.start()  # the API server becomes reachable
    try:
        session.wait_ready(WAIT_TIMEOUT)  # retries the failed start
        assert session.ready
        assert session.identity.username == reader.username
    finally:
        session.stop()
        forwarder.close()


def test_an_empty_token_file_is_a_credentials_error(tmp_path: Path, reader):
    sa_dir = tmp_path / "sa"
    sa_dir.mkdir()
    (sa_dir / "token").write_text("")
    (sa_dir / "ca.crt").write_text("")
    with pytest.raises(KubeConfigError) as err:
        load_credentials(sa_dir, environ=reader.environ)
    assert err.value.status == 503
    assert str(sa_dir) in err.value.reason
