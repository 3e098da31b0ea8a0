"""A disposable full control plane for fault tests, and the tools that break it for real.

:class:`DisposableCluster` is a :class:`~tests.cluster.controlplane.LocalCluster` (etcd,
kube-apiserver, controller manager, scheduler, Kueue, KubeRay, KWOK) in a temporary directory
with its own free ports, never the shared test cluster. It takes extra kube-apiserver flags
(``--watch-cache=false``) and a Kueue configuration override (``waitForPodsReady``), and can
stop and start single components by PID while etcd keeps the data
(:meth:`DisposableCluster.stop_component`, :meth:`DisposableCluster.start_component`).

:class:`EtcdGateway` talks to that cluster's etcd through etcd's own JSON gateway (``/v3/``)
with the API server's client certificate: the current revision, compaction, and a change
behind the API server's back (what another API server instance would have written while ours
was down). :class:`TcpProxy` sits between a client and the API server and can make every
connection open now go silent (:meth:`TcpProxy.freeze`: nothing is forwarded, the sockets stay
open, as after a NAT or a load balancer forgot the flow) and cut them (:meth:`TcpProxy.cut`);
new connections are forwarded normally.

The Kueue of a disposable cluster is always the current release (the legacy one binds a fixed
visibility port that the shared legacy cluster holds).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import signal
import socket
import ssl
import struct
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from .controlplane import (
    ClusterState,
    LocalCluster,
    _alive,
    _log,
    _started_in,
    _stop,
    _wait_kueue_webhooks,
    _wait_visibility_api,
    free_port,
)
from .kubeapi import AdminApi
from .versions import Versions, _versions_env

COMPONENTS = ("kube-apiserver", "kueue", "kuberay-operator", "kube-controller-manager")
"""Components a test may stop and start again (etcd keeps the data throughout)."""


class DisposableCluster(LocalCluster):
    """``with DisposableCluster(tmp_dir, apiserver_flags=[...]) as plane:`` a full control
    plane of its own, stopped and removed after."""

    def __init__(
        self,
        state_dir: Path,
        *,
        apiserver_flags: tuple[str, ...] = (),
        kueue_config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            state_dir=state_dir,
            versions=Versions.selected(_versions_env()["KUEUE_VERSION"]),
            apiserver_flags=apiserver_flags,
            kueue_config=kueue_config,
        )

    def build(self) -> None:
        """Nothing to build: the shared test bed's binaries must exist already."""
        for component in ("kube-apiserver", "kueue", "ray-operator", "kwok", "metrics-server"):
            binary = self.versions.binary(component)
            if not binary.is_file():
                raise RuntimeError(f"{binary} is missing: run `make cluster-build` first")

    def __enter__(self) -> DisposableCluster:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    @property
    def running(self) -> ClusterState:
        """The saved state (started)."""
        state = self.state()
        assert state is not None, "not started"
        return state

    def admin(self) -> AdminApi:
        """An admin client of this control plane."""
        return AdminApi(self.running.kubeconfig)

    def etcd(self) -> EtcdGateway:
        """This cluster's etcd, as the API server reaches it."""
        state = self.running
        pki = Path(state.ca_file).parent
        return EtcdGateway(
            f"https://127.0.0.1:{state.ports['etcd']}",
            pki / "ca.crt",
            pki / "etcd-client.crt",
            pki / "etcd-client.key",
        )

    # -- one component at a time -----------------------------------------------------------

    def is_component_running(self, name: str) -> bool:
        """Whether the process of ``name`` started by this cluster is alive."""
        pid = self.running.pids.get(name)
        return pid is not None and _alive(pid) and _started_in(pid, self.state_dir)

    def stop_component(self, name: str, *, kill: bool = False) -> None:
        """Stop ``name`` and wait until it is gone: SIGTERM (then SIGKILL after 15 s), or
        with ``kill`` SIGKILL at once (a crash: no graceful shutdown, connections reset)."""
        if name not in COMPONENTS:
            raise ValueError(f"{name} cannot be stopped alone (one of {COMPONENTS})")
        pid = self.running.pids[name]
        if kill and _alive(pid) and _started_in(pid, self.state_dir):
            os.killpg(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.05)
        _stop({name: pid}, self.state_dir)
        _log(f"{name} {'killed' if kill else 'stopped'}")

    def start_component(self, name: str, kueue_config: dict[str, Any] | None = None) -> float:
        """Start ``name`` again as it was started (same flags and ports) and wait until it
        serves; for Kueue, ``kueue_config`` replaces the override given at construction.
        Returns the seconds it took."""
        if name not in COMPONENTS:
            raise ValueError(f"{name} cannot be started alone (one of {COMPONENTS})")
        state = self.running
        started = time.monotonic()
        if name == "kueue" and kueue_config is not None:
            self.kueue_config = dict(kueue_config)
            self.write_kueue_config(state)
        self._spawn(state, name, state.commands[name], state.environments.get(name) or None)
        ports = state.ports
        if name == "kube-apiserver":
            self._wait_healthy(state, name, f"{state.apiserver}/readyz", state.ca_file)
        elif name == "kueue":
            url = f"http://127.0.0.1:{ports['kueue-health']}/readyz"
            self._wait_healthy(state, name, url, None)
            _wait_kueue_webhooks(self.admin(), self.versions)
            _wait_visibility_api(self.admin(), self.versions)
        elif name == "kuberay-operator":
            url = f"http://127.0.0.1:{ports['kuberay-health']}/readyz"
            self._wait_healthy(state, name, url, None)
        else:
            url = f"https://127.0.0.1:{ports['controller-manager']}/healthz"
            self._wait_healthy(state, name, url, None)
        seconds = time.monotonic() - started
        _log(f"{name} started again in {seconds:.1f}s")
        return seconds


# --------------------------------------------------------------------------------------------
# etcd, behind the API server's back
# --------------------------------------------------------------------------------------------


class EtcdGateway:
    """etcd's JSON gateway (``POST /v3/...``), authenticated with a client certificate."""

    def __init__(self, url: str, ca: Path, cert: Path, key: Path) -> None:
        self.url = url
        self._context = ssl.create_default_context(cafile=str(ca))
        self._context.load_cert_chain(str(cert), str(key))

    def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.url}/v3/{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, context=self._context, timeout=10) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer

    def revision(self) -> int:
        """The current revision (what the API server calls the latest resourceVersion)."""
        header = self.call("kv/range", {"key": _b64("/registry/health-probe")})["header"]
        return int(header["revision"])

    def compact(self, revision: int) -> None:
        """Compact the history up to ``revision``: watches from older versions get 410 Gone
        (from an API server that has no watch cache in front of etcd)."""
        self.call("kv/compaction", {"revision": str(revision), "physical": True})

    def delete(self, key: str) -> int:
        """Delete ``key`` (``/registry/<group>/<plural>/<namespace>/<name>``); returns how many
        keys went."""
        return int(self.call("kv/deleterange", {"key": _b64(key)}).get("deleted") or 0)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# --------------------------------------------------------------------------------------------
# A TCP proxy that can make connections go silent
# --------------------------------------------------------------------------------------------


class _Link:
    """One proxied connection: the client's socket and the upstream one."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client, self.upstream = client, upstream
        self.wake_read, self.wake_write = socket.socketpair()
        self.frozen = False
        self.closed = False

    def poke(self) -> None:
        with contextlib.suppress(OSError):
            self.wake_write.send(b"x")

    def close(self, reset: bool = False) -> None:
        self.closed = True
        for sock in (self.client, self.upstream):
            if reset:  # RST rather than FIN: the peer sees a broken connection
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with contextlib.suppress(OSError):
                sock.close()
        self.poke()


class TcpProxy:
    """Forward ``127.0.0.1:<port>`` to ``127.0.0.1:<target>``; ``with TcpProxy(t) as p:``."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._links: list[_Link] = []
        self._lock = threading.Lock()
        self._closed = False
        self.accepted = 0
        """Connections accepted so far (a client that re-connects makes this grow)."""
        threading.Thread(target=self._accept, name="tcp-proxy", daemon=True).start()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def freeze(self) -> int:
        """Stop forwarding on every connection open now, keeping its sockets open (nothing
        is read, nothing is closed). New connections are forwarded. Returns how many."""
        with self._lock:
            links = [link for link in self._links if not link.closed and not link.frozen]
            for link in links:
                link.frozen = True
                link.poke()
        return len(links)

    def cut(self) -> int:
        """Reset every frozen connection (the client sees it broken). Returns how many."""
        with self._lock:
            links = [link for link in self._links if link.frozen and not link.closed]
        for link in links:
            link.close(reset=True)
        return len(links)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.close()
        with self._lock:
            links = list(self._links)
        for link in links:
            link.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()  # the API server is down: refuse, as it would
                continue
            link = _Link(client, upstream)
            with self._lock:
                self._links = [existing for existing in self._links if not existing.closed]
                self._links.append(link)
                self.accepted += 1
            threading.Thread(target=self._pump, args=(link,), daemon=True).start()

    def _pump(self, link: _Link) -> None:
        peers = {link.client: link.upstream, link.upstream: link.client}
        try:
            while not link.closed:
                watched = [link.wake_read] if link.frozen else [link.wake_read, *peers]
                readable, _, _ = select.select(watched, [], [])
                if link.wake_read in readable:
                    with contextlib.suppress(OSError):
                        link.wake_read.recv(64)
                    continue
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        link.close()
                        return
                    peers[sock].sendall(data)
        except OSError:
            link.close()


if __name__ == "__main__":  # python -m tests.cluster.disposable up|down DIR
    import sys

    action, where = sys.argv[1], Path(sys.argv[2])
    plane = DisposableCluster(where, apiserver_flags=("--watch-cache=false",))
    if action == "up":
        print(f"export KUBECONFIG={plane.up().kubeconfig}")
    else:
        plane.down()
