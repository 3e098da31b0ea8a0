"""Change -> events message at the scale of a real shared cluster, with many sockets open.

Runs against the local control plane (started if needed): the scale fixture
(:mod:`tests.cluster.scale`, by default 200 LocalQueues on 50 ClusterQueues and 5,000
Workloads that Kueue queues or admits), a JupyterLab server running as a workbench service
account of that namespace (tests/ui/lab.py, a subprocess), and ``--sockets`` clients of
``dw/api/events`` in this process. Then ``--changes`` changes, one after another, each waited
for on every socket before the next:

- even changes create a Workload in the next LocalQueue (it waits for quota: its queue's
  pending set changes), odd ones delete the Workload created just before.

Two clocks, one machine:

- **reference (raw watch)**: an administrator's own Workload watch in this process notes when
  the change reached a watcher of the API server: the zero of the main figure;
- **socket**: when each socket received the ``workload`` message about it.

Also counted per change (read from the server's core through the test bed's counters
endpoint, tests/ui/core_counters.py): the visibility-API calls the server made, and the CPU
time the Jupyter server, Kueue and the API server spent over the run.

Usage: ``.venv/bin/python -m benchmarks.bench_events [--sockets 10] [--changes 200]
[--queues 200 --cluster-queues 50 --workloads 5000]``; ``--smoke`` runs a tiny setup and checks
only that every figure was measured (for ``make test``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import statistics
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, watch
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from benchmarks.testbed import GROUP, connect
from jupyter_dw.server import events as events_socket
from tests.cluster.fixtures import cluster_role_name, make_workbench, plain_workload
from tests.cluster.scale import ScaleShape, process_cpu_seconds, scale_testbed
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules
from tests.ui.lab import LabServer

MAX_MESSAGE = 512 << 20
"""The snapshot at 5,000 Workloads is several MB; tornado's client refuses over 10 MiB."""
WAIT = 60.0

Key = tuple[str, str]
"""``(workload name, watch event)``."""

MESSAGE_TYPE = re.compile(r'"type": "(\w+)"')
QUEUE_TYPES = ("queues", "queue")
"""The messages that carry the queues answer: whole, or the records a change altered."""


@dataclass
class Traffic:
    """What one socket received, by message type: ``[count, characters, largest, wire]`` (the
    characters of the JSON text: its bytes, but for non-ASCII text; ``wire``: the bytes of
    its frames' payloads as the server's permessage-deflate sent them when the socket agreed
    on it, made again here with the server's settings; else the characters)."""

    by_type: dict[str, list[int]] = field(default_factory=dict)
    compressor: Any = field(default=None, repr=False)

    def add(self, text: str) -> None:
        # The type without parsing: most messages name it first (a snapshot near its start).
        found = MESSAGE_TYPE.search(text, 0, 2000)
        entry = self.by_type.setdefault(found.group(1) if found else "?", [0, 0, 0, 0])
        entry[0] += 1
        entry[1] += len(text)
        entry[2] = max(entry[2], len(text))
        if self.compressor is None:
            entry[3] += len(text)
        else:  # as tornado's _PerMessageDeflateCompressor does (RFC 7692: tail removed)
            data = text.encode()
            entry[3] += len(self.compressor.compress(data) + self.compressor.flush(Z_SYNC)) - 4

    def next_phase(self) -> Traffic:
        """A new count that goes on with this socket's compression context."""
        return Traffic(compressor=self.compressor)

    def total(self, types: tuple[str, ...] | None = None) -> tuple[int, int, int, int]:
        """``(messages, characters, largest, wire)`` of ``types`` (default: every type)."""
        rows = [v for k, v in self.by_type.items() if types is None or k in types]
        return (
            sum(r[0] for r in rows),
            sum(r[1] for r in rows),
            max((r[2] for r in rows), default=0),
            sum(r[3] for r in rows),
        )

    def describe(self) -> str:
        count, size, _, wire = self.total()
        parts = ", ".join(
            f"{kind} {n} ({chars / 1000:,.1f} KB, largest {largest / 1000:,.1f} KB)"
            for kind, (n, chars, largest, _) in sorted(
                self.by_type.items(), key=lambda kv: -kv[1][1]
            )
        )
        return f"{count} messages, {size / 1000:,.1f} KB ({wire / 1000:,.1f} KB sent): {parts}"


Z_SYNC = zlib.Z_SYNC_FLUSH
COMPRESSION: dict[str, Any] = getattr(events_socket, "COMPRESSION", None) or {}
"""The server's permessage-deflate settings (none before the socket had them)."""


def server_compressor(ws: WebSocketClientConnection) -> Any:
    """A compressor like the server's for this socket, when the two agreed on
    permessage-deflate (None: frames go uncompressed)."""
    agreed = ws.headers.get("Sec-WebSocket-Extensions") or ""
    if not agreed.startswith("permessage-deflate"):
        return None
    level = COMPRESSION.get("compression_level", 6)
    return zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, COMPRESSION.get("mem_level", 8))


@dataclass
class Stamps:
    """When each change was first seen: by the raw watch, and by each socket."""

    reference: dict[Key, float] = field(default_factory=dict)
    sockets: list[dict[Key, float]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def seen_everywhere(self, key: Key) -> bool:
        return key in self.reference and all(key in s for s in self.sockets)


def reference_watch(
    custom: client.CustomObjectsApi,
    version: str,
    namespace: str,
    stamps: Stamps,
    loop: asyncio.AbstractEventLoop,
    started: threading.Event,
    stop: threading.Event,
) -> None:
    """Note when each probe Workload's ADDED and DELETED reach an administrator's watch."""
    listing = custom.list_namespaced_custom_object(GROUP, version, namespace, "workloads")
    resource_version = listing["metadata"]["resourceVersion"]
    started.set()
    while not stop.is_set():
        stream = watch.Watch()
        for event in stream.stream(
            custom.list_namespaced_custom_object,
            GROUP,
            version,
            namespace,
            "workloads",
            resource_version=resource_version,
            timeout_seconds=30,
        ):
            at = time.time()
            obj = event["raw_object"]
            resource_version = obj["metadata"].get("resourceVersion", resource_version)
            key = (obj["metadata"]["name"], event["type"])
            if stop.is_set() or loop.is_closed():
                stream.stop()
                return
            if key[0].startswith("probe-") and key not in stamps.reference:
                stamps.reference[key] = at
                loop.call_soon_threadsafe(stamps.changed.set)
            if stop.is_set():
                stream.stop()


async def read_socket(
    ws: WebSocketClientConnection, seen: dict[Key, float], stamps: Stamps, traffic: list[Traffic]
):
    """Stamp the first ``workload`` message about each probe, on arrival, and count every
    message in ``traffic[-1]`` (a new phase appends another). Reads from the start (tornado's
    client answers the server's pings only while it reads)."""
    while True:
        text = await ws.read_message()
        at = time.time()
        if text is None:
            return
        assert isinstance(text, str)
        traffic[-1].add(text)
        if '"type": "workload"' not in text[:40]:
            continue
        message = json.loads(text)
        key = (message["name"], message["event"])
        if key[0].startswith("probe-") and key not in seen:
            seen[key] = at
            stamps.changed.set()


QUIET_S = 3.0
"""A socket's opening is over when no message has come for this long."""


async def quiet(phases: list[Traffic]) -> None:
    """Until no message has come to the socket counted in ``phases`` for :data:`QUIET_S`."""
    last = -1
    while (count := phases[-1].total()[0]) != last:
        last = count
        await asyncio.sleep(QUIET_S)


async def open_socket(lab: LabServer) -> tuple[WebSocketClientConnection, dict[str, Any], str]:
    request = HTTPRequest(
        f"ws://127.0.0.1:{lab.port}/dw/api/events",
        headers={"Authorization": f"token {lab.token}"},
        request_timeout=WAIT,
    )
    # Offering permessage-deflate, as browsers do.
    ws = await websocket_connect(request, max_message_size=MAX_MESSAGE, compression_options={})
    text = await asyncio.wait_for(ws.read_message(), 5 * WAIT)
    assert isinstance(text, str)
    snapshot = json.loads(text)
    assert snapshot["type"] == "snapshot", snapshot["type"]
    return ws, snapshot, text


async def measure(
    lab: LabServer,
    custom: client.CustomObjectsApi,
    version: str,
    namespace: str,
    queues: list[str],
    sockets: int,
    changes: int,
    workloads: int,
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    stamps = Stamps()
    started, stop = threading.Event(), threading.Event()
    threading.Thread(
        target=reference_watch,
        args=(custom, version, namespace, stamps, loop, started, stop),
        daemon=True,
    ).start()
    await asyncio.to_thread(started.wait, WAIT)
    opened, readers = [], []
    snapshot_ms = []
    traffic: list[list[Traffic]] = []
    for _ in range(sockets):
        start = time.perf_counter()
        ws, snapshot, text = await open_socket(lab)
        snapshot_ms.append((time.perf_counter() - start) * 1000)
        assert len(snapshot["workloads"]) >= workloads, len(snapshot["workloads"])
        opened.append(ws)
        stamps.sockets.append({})
        traffic.append([Traffic(compressor=server_compressor(ws))])
        traffic[-1][-1].add(text)
        readers.append(
            asyncio.ensure_future(read_socket(ws, stamps.sockets[-1], stamps, traffic[-1]))
        )
    # The first socket's opening: its snapshot, then what the server sends after it by itself
    # (the positions it reads in the background), until nothing came for QUIET_S.
    await quiet(traffic[0])
    for phases in traffic:
        phases.append(phases[-1].next_phase())  # the changes' own
    pids = {"jupyter": lab.process.pid if lab.process else None}
    cpu_before = {name: process_cpu_seconds(pid) if pid else None for name, pid in pids.items()}
    calls_before = visibility_calls(lab)
    written: dict[Key, float] = {}
    calls: list[int] = []
    started_at = time.monotonic()
    for i in range(changes):
        name = f"probe-{i // 2}"
        if i % 2 == 0:
            key = (name, "ADDED")
            body = plain_workload(version, name, queues[(i // 2) % len(queues)], "1")
            written[key] = time.time()
            await asyncio.to_thread(
                custom.create_namespaced_custom_object, GROUP, version, namespace, "workloads", body
            )
        else:
            key = (name, "DELETED")
            written[key] = time.time()
            await asyncio.to_thread(
                custom.delete_namespaced_custom_object, GROUP, version, namespace, "workloads", name
            )
        deadline = loop.time() + WAIT
        while not stamps.seen_everywhere(key):
            stamps.changed.clear()
            if stamps.seen_everywhere(key):
                break
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise SystemExit(f"change {i} ({key}) not seen on every socket in {WAIT:.0f} s")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stamps.changed.wait(), remaining)
        now_calls = visibility_calls(lab)
        if now_calls is not None and calls_before is not None:
            calls.append(now_calls - calls_before - sum(calls))
    elapsed = time.monotonic() - started_at
    cpu_after = {name: process_cpu_seconds(pid) if pid else None for name, pid in pids.items()}
    stop.set()
    for reader in readers:
        reader.cancel()
    for ws in opened:
        ws.close()
    keys = list(written)
    after_watch = [(seen[k] - stamps.reference[k]) * 1000 for k in keys for seen in stamps.sockets]
    slowest = [max(seen[k] for seen in stamps.sockets) - stamps.reference[k] for k in keys]
    after_write = [(seen[k] - written[k]) * 1000 for k in keys for seen in stamps.sockets]
    watch_after_write = [(stamps.reference[k] - written[k]) * 1000 for k in keys]
    cpu = {
        name: (cpu_after[name] - before)
        if before is not None and cpu_after[name] is not None
        else None
        for name, before in cpu_before.items()
    }
    return {
        "opening": traffic[0][0].by_type,
        "compressed": traffic[0][0].compressor is not None,
        "changes_traffic": [phases[-1].by_type for phases in traffic],
        "after_watch": after_watch,
        "slowest_socket": [s * 1000 for s in slowest],
        "after_write": after_write,
        "watch_after_write": watch_after_write,
        "visibility_calls": calls,
        "elapsed_s": elapsed,
        "snapshot_ms": snapshot_ms,
        "cpu_s": cpu,
    }


def visibility_calls(lab: LabServer) -> int | None:
    return lab.api_counters().get("visibility_calls")


def describe(name: str, samples: list[float], unit: str = "ms") -> str:
    q = statistics.quantiles(samples, n=20, method="inclusive")
    return (
        f"{name:<44} n={len(samples):<5} p50 {statistics.median(samples):8.1f} {unit}   "
        f"p95 {q[18]:8.1f} {unit}   max {max(samples):8.1f} {unit}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sockets", type=int, default=10)
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument("--cluster-queues", type=int, default=50)
    parser.add_argument("--workloads", type=int, default=5000)
    parser.add_argument("--smoke", action="store_true", help="tiny and quick; checks it ran")
    args = parser.parse_args()
    if args.smoke:
        args.queues, args.cluster_queues, args.workloads = 4, 2, 8
        args.sockets, args.changes = 3, 6
    shape = ScaleShape(
        args.queues, args.cluster_queues, args.workloads, cohorts=min(5, args.cluster_queues)
    )
    state, api, version = connect()
    custom = client.CustomObjectsApi(api)
    rbac = client.RbacAuthorizationV1Api(api)
    workdir = Path(tempfile.mkdtemp(prefix="bench-events-"))
    with scale_testbed(api, version, shape, kueue_pid=state.pids.get("kueue")) as testbed:
        namespace = testbed.namespace
        identity = make_workbench(
            api, state, namespace, workdir, namespace_rules(), CLUSTER_READ_RULES
        )
        lab = LabServer(
            identity.service_account_dir,
            identity.environ,
            workdir / "lab",
            workdir / "jupyter-server.log",
        )
        lab.workdir.mkdir()
        kueue_cpu = process_cpu_seconds(state.pids["kueue"]) if "kueue" in state.pids else None
        api_cpu = (
            process_cpu_seconds(state.pids["kube-apiserver"])
            if "kube-apiserver" in state.pids
            else None
        )
        try:
            lab.start()
            result = asyncio.run(
                measure(
                    lab,
                    custom,
                    version,
                    namespace,
                    testbed.local_queues,
                    args.sockets,
                    args.changes,
                    args.workloads,
                )
            )
        finally:
            lab.stop()
            with contextlib.suppress(client.ApiException):
                role = cluster_role_name(namespace, identity.name)
                rbac.delete_cluster_role_binding(role)
                rbac.delete_cluster_role(role)
        for name, before in (("kueue", kueue_cpu), ("kube-apiserver", api_cpu)):
            after = process_cpu_seconds(state.pids[name]) if before is not None else None
            result["cpu_s"][name] = after - before if after is not None and before else None

    print(
        f"Change -> events message, {args.queues} LocalQueues on {args.cluster_queues} "
        f"ClusterQueues, {args.workloads} Workloads, {args.sockets} sockets, {args.changes} "
        f"changes (Kueue {state.versions['kueue']}, {version})"
    )
    print(f"setup: {testbed.describe()}; teardown {testbed.timings['teardown']:.1f} s")
    print(describe("message after the raw watch (every socket)", result["after_watch"]))
    print(describe("  the slowest socket of each change", result["slowest_socket"]))
    print(describe("message after the write (every socket)", result["after_write"]))
    print(describe("baseline: raw watch after the write", result["watch_after_write"]))
    calls = result["visibility_calls"]
    if calls:
        print(
            f"visibility-API calls per change: mean {statistics.fmean(calls):.2f}, "
            f"max {max(calls)}, total {sum(calls)} over {len(calls)} changes"
        )
    else:
        print("visibility-API calls per change: not counted (no position board)")
    cpu = ", ".join(
        f"{name} {seconds:.1f} s" if seconds is not None else f"{name} ?"
        for name, seconds in result["cpu_s"].items()
    )
    print(f"permessage-deflate agreed: {result['compressed']}")
    opening = Traffic(result["opening"])
    print(f"opening one socket (snapshot, then until {QUIET_S:g} s quiet): {opening.describe()}")
    changes = [Traffic(t) for t in result["changes_traffic"]]
    print(f"during the {args.changes} changes, the first socket: {changes[0].describe()}")
    per_socket = [t.total(QUEUE_TYPES) for t in changes]
    print(
        f"queues answers ({'/'.join(QUEUE_TYPES)}) per change and socket: "
        f"{statistics.fmean(c[1] for c in per_socket) / args.changes / 1000:,.2f} KB "
        f"({statistics.fmean(c[0] for c in per_socket) / args.changes:.2f} messages), "
        f"largest {max(c[2] for c in per_socket) / 1000:,.1f} KB; every message: "
        f"{statistics.fmean(t.total()[1] for t in changes) / args.changes / 1000:,.2f} KB "
        f"per change and socket ({changes[0].total()[3] / args.changes / 1000:,.2f} KB sent "
        "to the first)"
    )
    snapshots = ", ".join(f"{ms / 1000:.1f}" for ms in result["snapshot_ms"])
    print(f"socket opened -> snapshot read, s: {snapshots}")
    print(f"run {result['elapsed_s']:.1f} s; CPU over the run: {cpu}")
    if args.smoke:
        figures = [result[k] for k in ("after_watch", "after_write", "watch_after_write")]
        assert all(len(f) == args.changes * args.sockets for f in figures[:2]), "figure missing"
        assert len(figures[2]) == args.changes and calls, "a figure is missing"
        print("smoke: ok", file=sys.stderr)


if __name__ == "__main__":
    main()
