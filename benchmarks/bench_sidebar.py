"""How soon does the sidebar show a change written to the API server? Measured in the browser.

Runs against the local control plane (started if needed) with a namespace of ``--queues``
LocalQueues (default 200, on 10 ClusterQueues) and ``--clusters`` Ray clusters (default 50,
waiting in a queue without quota), JupyterLab running as a workbench service account
(tests/ui/lab.py) and the panel open in headless Chromium. Then, ``--changes`` times each:

- **push** (the product): the administrator creates a RayCluster (suspended, in a queue, as
  ``POST clusters`` would); a ``MutationObserver`` in the page stamps the moment its card is in
  the panel's DOM. Latency = that stamp - the wall clock just before the create call (one
  clock: browser and benchmark run on the same machine).
- **workload**: a plain Workload is created in a LocalQueue; latency to the queue's pending
  count in the DOM. This one includes Kueue's own status update of the LocalQueue.
- **bare watch baseline**, same run: a plain watch of the namespace's RayClusters (the
  kubernetes client alone) stamps when each probe arrives: what the API server itself takes,
  which no extension can beat.
- **poll baseline**, same run and page: a 5 s poll of ``GET dw/api/clusters`` (the interval
  dask-labextension uses) stamps when each new cluster first appears in a poll answer; and the
  round trip of that ``GET clusters`` itself.

``--scale`` runs in the namespace of the scale fixture (:mod:`tests.cluster.scale`: 200
LocalQueues on 50 ClusterQueues and 5,000 Workloads, Kueue's quota all taken, so the new
clusters and Workloads wait); ``--smoke`` runs a tiny setup for a few changes and checks only
that every figure was measured (for ``make test``).

Usage: ``.venv/bin/python -m benchmarks.bench_sidebar [--queues 200] [--clusters 50]
[--changes 40] [--scale] [--smoke]`` (needs ``make python-deps`` and ``/usr/bin/chromium``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch
from playwright.sync_api import expect, sync_playwright

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.server import events as events_socket
from tests.cluster.controlplane import LocalCluster
from tests.cluster.fixtures import cluster_role_name, make_workbench, plain_workload
from tests.cluster.scale import ScaleShape, scale_testbed
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules
from tests.ui.lab import CHROMIUM, LabServer

GROUP = "kueue.x-k8s.io"
POLL_MS = 5000
QUIET_MS = 2000

OBSERVE = """
({pollMs}) => {
  const now = () => performance.timeOrigin + performance.now();
  window.__bench = { cards: {}, pending: {}, polled: {}, rtt: [] };
  const root = document.getElementById('jp-dw-sidebar');
  const card = (el, t) => { window.__bench.cards[el.dataset.cluster] ??= t; };
  const queue = (q, t) => {
    const n = q.querySelector('[data-count="pending"] strong')?.textContent;
    const seen = (window.__bench.pending[q.dataset.queue] ??= {});
    seen[n] ??= t;
  };
  const within = (node, selector) => node.nodeType !== Node.ELEMENT_NODE ? [] :
    [...(node.matches(selector) ? [node] : []), ...node.querySelectorAll(selector)];
  // Only what each mutation touched: a scan of the whole panel per mutation (200 queues, 90
  // cards) took most of the page's main thread at scale and delayed what it measured.
  const record = mutations => {
    const t = now();
    const queues = new Set();
    for (const m of mutations) {
      for (const node of m.addedNodes) {
        within(node, '[data-cluster]').forEach(el => card(el, t));
        within(node, '[data-queue]').forEach(q => queues.add(q));
      }
      const target = m.target.nodeType === Node.ELEMENT_NODE ? m.target : m.target.parentElement;
      const q = target?.closest('[data-queue]');
      if (q) queues.add(q);
    }
    queues.forEach(q => queue(q, t));
  };
  new MutationObserver(record).observe(root, {
    subtree: true, childList: true, characterData: true
  });
  const t0 = now();
  root.querySelectorAll('[data-cluster]').forEach(el => card(el, t0));
  root.querySelectorAll('[data-queue]').forEach(q => queue(q, t0));
  // The baseline: what a 5 s poll of GET clusters would show, and when.
  setInterval(async () => {
    const start = now();
    const answer = await (await fetch('/dw/api/clusters', { credentials: 'same-origin' })).json();
    const t = now();
    window.__bench.rtt.push(t - start);
    for (const c of answer.clusters) window.__bench.polled[c.name] ??= t;
  }, pollMs);
}
"""


# Before the page loads: stamp when the first events message about each cluster arrives, to
# split the latency into server (write -> message in the browser) and panel (message -> DOM).
STAMP_MESSAGES = """
const Native = window.WebSocket;
window.__arrived = {};
window.__messages = {};
window.__texts = [];
window.__extensions = null;
window.__lastMessageAt = performance.now();
window.WebSocket = class extends Native {
  constructor(...args) {
    super(...args);
    if (String(args[0]).includes('dw/api/events')) {
      this.addEventListener('open', () => { window.__extensions = this.extensions; });
      this.addEventListener('message', event => {
        window.__texts.push(event.data);
        const t = performance.timeOrigin + performance.now();
        window.__lastMessageAt = performance.now();
        const m = JSON.parse(event.data);
        const kind = window.__messages[m.type] ??= { count: 0, bytes: 0, largest: 0 };
        kind.count += 1;
        kind.bytes += event.data.length;
        kind.largest = Math.max(kind.largest, event.data.length);
        if (m.type === 'cluster' && m.state) window.__arrived[m.name] ??= t;
      });
    }
  }
};
"""


def kueue_object(version: str, kind: str, name: str, **rest: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": kind, "metadata": {"name": name}, **rest}


def cluster_queue(version: str, name: str, flavor: str, cpu: str, memory: str) -> dict[str, Any]:
    resources = [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]
    return kueue_object(
        version,
        "ClusterQueue",
        name,
        spec={
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": flavor, "resources": resources}],
                }
            ],
        },
    )


def describe(name: str, samples: list[float]) -> str:
    # A smoke run may have one sample (the 5 s poll): its p95 is then that sample.
    p95 = statistics.quantiles(samples, n=20)[18] if len(samples) > 1 else samples[0]
    return (
        f"{name:<34} n={len(samples):<3} median {statistics.median(samples):8.1f} ms   "
        f"p95 {p95:8.1f} ms"
    )


@contextlib.contextmanager
def own_namespace(custom: Any, core: Any, version: str, queues: int) -> Iterator[str]:
    """A namespace with ``queues`` LocalQueues on 10 ClusterQueues; ClusterQueue 0 has no
    quota (``lq-000``, ``lq-010``: the clusters and Workloads there wait, parked, and cost
    Kueue nothing). Deleted after."""
    tag = uuid.uuid4().hex[:6]
    namespace, flavor = f"bench-{tag}", f"bench-{tag}"
    cqs = [f"bench-{tag}-{i}" for i in range(10)]
    core.create_namespace({"metadata": {"name": namespace}})
    try:
        custom.create_cluster_custom_object(
            GROUP, version, "resourceflavors", kueue_object(version, "ResourceFlavor", flavor)
        )
        for i, cq in enumerate(cqs):
            cpu, memory = ("0", "0") if i == 0 else ("8", "32Gi")
            custom.create_cluster_custom_object(
                GROUP, version, "clusterqueues", cluster_queue(version, cq, flavor, cpu, memory)
            )
        for i in range(queues):
            body = kueue_object(
                version, "LocalQueue", f"lq-{i:03d}", spec={"clusterQueue": cqs[i % 10]}
            )
            body["metadata"]["annotations"] = {f"{GROUP}/default-queue": "true"} if i == 0 else {}
            custom.create_namespaced_custom_object(GROUP, version, namespace, "localqueues", body)
        yield namespace
    finally:
        core.delete_namespace(namespace)
        for plural, name in [("clusterqueues", cq) for cq in cqs] + [("resourceflavors", flavor)]:
            with contextlib.suppress(client.ApiException):
                custom.delete_cluster_custom_object(GROUP, version, plural, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--changes", type=int, default=40)
    parser.add_argument(
        "--scale",
        action="store_true",
        help="the namespace of tests/cluster/scale.py: 200 LocalQueues, 50 ClusterQueues, "
        "5,000 Workloads (issue 19)",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny and quick; checks it ran")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="write a CPU profile of the page during the changes (.cpuprofile, Chrome DevTools)",
    )
    args = parser.parse_args()
    if args.smoke:
        # 11: lq-010 is the Workloads' queue (on ClusterQueue 0, without quota).
        args.queues, args.clusters, args.changes = 11, 2, 3

    state = LocalCluster().up()
    kube = config.new_client_from_config(config_file=state.kubeconfig)
    custom = client.CustomObjectsApi(kube)
    core = client.CoreV1Api(kube)
    version = "v1beta2" if state.versions["kueue"] >= "v0.15" else "v1beta1"
    if args.scale:
        shape = ScaleShape(args.queues, 50, 5000) if not args.smoke else ScaleShape(11, 2, 8, 2)
        with scale_testbed(kube, version, shape, kueue_pid=state.pids.get("kueue")) as testbed:
            # The fixture's quota is taken: new clusters and Workloads wait.
            result = measure(args, state, kube, version, testbed.namespace, "lq-0", "lq-1")
        what = f"{shape.workloads} Workloads on {shape.cluster_queues} ClusterQueues, "
        print(f"setup: {testbed.describe()}; teardown {testbed.timings['teardown']:.1f} s")
    else:
        with own_namespace(custom, core, version, args.queues) as namespace:
            result = measure(args, state, kube, version, namespace, "lq-000", "lq-010")
        what = ""
    report(args, state, version, what, result)


def measure(
    args: argparse.Namespace,
    state: Any,
    kube: Any,
    version: str,
    namespace: str,
    cluster_queue_name: str,
    pending_queue: str,
) -> dict[str, Any]:
    """Start JupyterLab as a workbench of ``namespace``, open the panel, and time the
    changes (clusters in ``cluster_queue_name``, Workloads in ``pending_queue``)."""
    custom = client.CustomObjectsApi(kube)
    rbac = client.RbacAuthorizationV1Api(kube)
    workdir = Path(tempfile.mkdtemp(prefix="bench-sidebar-"))
    identity = make_workbench(
        kube, state, namespace, workdir, namespace_rules(), CLUSTER_READ_RULES
    )
    cluster_role = cluster_role_name(namespace, identity.name)
    lab = None

    def raycluster(name: str) -> dict[str, Any]:
        spec = ValidatedClusterSpec.from_request(
            {
                "name": name,
                "queue": cluster_queue_name,
                "workers": 1,
                "head_cpu": "1",
                "head_memory": "1Gi",
                "worker_cpu": "1",
                "worker_memory": "1Gi",
            }
        )
        return spec.to_raycluster(namespace, owner=identity.username)

    try:
        for i in range(args.clusters):
            custom.create_namespaced_custom_object(
                "ray.io", "v1", namespace, "rayclusters", raycluster(f"base-{i:02d}")
            )
        lab = LabServer(
            identity.service_account_dir,
            identity.environ,
            workdir / "lab",
            workdir / "jupyter-server.log",
        )
        lab.workdir.mkdir()
        lab.start()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.add_init_script(STAMP_MESSAGES)
            page.goto(lab.lab_url())
            page.get_by_role("tab", name="Distributed Workloads").click(timeout=60_000)
            sidebar = page.locator("#jp-dw-sidebar")
            expect(sidebar.locator("li[data-queue]")).to_have_count(args.queues, timeout=120_000)
            expect(sidebar.locator("[data-cluster]")).to_have_count(args.clusters, timeout=120_000)
            # Settled first: after the snapshot the server reads the waiting Workloads' positions
            # in the background and sends each as it lands (at scale about 5,000 messages). The
            # changes are timed once no message has come for QUIET_MS.
            opened = time.monotonic()
            page.wait_for_function(
                f"() => performance.now() - window.__lastMessageAt > {QUIET_MS}",
                polling=100,
                timeout=300_000,
            )
            settled = time.monotonic() - opened - QUIET_MS / 1000
            print(f"panel settled {settled:.1f} s after its queues and cards showed")
            opening = page.evaluate("window.__messages")
            wire = Wire(page.evaluate("window.__extensions"))
            sent = {"opening": wire.add(page.evaluate("window.__texts.splice(0)"))}
            page.evaluate(OBSERVE, {"pollMs": POLL_MS})

            push: list[float] = []
            server: list[float] = []
            panel: list[float] = []
            bare: list[float] = []
            watched = BareWatch(kube, namespace, "probe-")
            profiler = page.context.new_cdp_session(page) if args.profile else None
            page.evaluate("window.__messages = {}")  # counted from here: the changes' own
            if profiler is not None:
                profiler.send("Profiler.enable")
                profiler.send("Profiler.start")
            for i in range(args.changes):
                name = f"probe-{i:02d}"
                written = time.time() * 1000
                custom.create_namespaced_custom_object(
                    "ray.io", "v1", namespace, "rayclusters", raycluster(name)
                )
                page.wait_for_function(f"() => window.__bench.cards['{name}']", timeout=30_000)
                shown, arrived = page.evaluate(
                    f"() => [window.__bench.cards['{name}'], window.__arrived['{name}']]"
                )
                push.append(shown - written)
                server.append(arrived - written)
                panel.append(shown - arrived)
                bare.append(watched.seen(name) - written)
            if profiler is not None:
                Path(args.profile).write_text(json.dumps(profiler.send("Profiler.stop")["profile"]))
            cluster_messages = page.evaluate("window.__messages")
            page.evaluate("window.__messages = {}")
            sent["clusters"] = wire.add(page.evaluate("window.__texts.splice(0)"))

            workload: list[float] = []
            # Kueue's own count, as the panel shows it now: each new Workload adds one.
            before = next(
                q["pending"]
                for q in lab.api("GET", "queues")["queues"]
                if q["name"] == pending_queue
            )
            for i in range(args.changes):
                expected = str(before + i + 1)
                written = time.time() * 1000
                custom.create_namespaced_custom_object(
                    GROUP,
                    version,
                    namespace,
                    "workloads",
                    plain_workload(version, f"wl-probe-{i:02d}", pending_queue, "1"),
                )
                try:
                    page.wait_for_function(
                        f"() => (window.__bench.pending['{pending_queue}'] || {{}})['{expected}']",
                        timeout=30_000,
                    )
                except Exception as err:
                    seen_counts = page.evaluate(f"() => window.__bench.pending['{pending_queue}']")
                    raise SystemExit(
                        f"{pending_queue}: never showed {expected}: {seen_counts}"
                    ) from err
                seen = page.evaluate(
                    f"() => window.__bench.pending['{pending_queue}']['{expected}']"
                )
                workload.append(seen - written)

            workload_messages = page.evaluate("window.__messages")
            sent["workloads"] = wire.add(page.evaluate("window.__texts.splice(0)"))
            # The poll baseline saw every probe by now or within one more interval.
            page.wait_for_function(
                "() => Object.keys(window.__bench.polled)"
                f".filter(n => n.startsWith('probe-')).length === {args.changes}",
                timeout=POLL_MS * 3,
            )
            polled = page.evaluate("() => window.__bench.polled")
            cards = page.evaluate("() => window.__bench.cards")
            rtt = page.evaluate("() => window.__bench.rtt")
            browser.close()
            watched.stop()
    finally:
        if lab is not None:
            lab.stop()
        with contextlib.suppress(client.ApiException):
            rbac.delete_cluster_role_binding(cluster_role)
            rbac.delete_cluster_role(cluster_role)
    # Poll latency per probe: when the poll first showed it, minus when the push showed it,
    # plus the push latency = poll seen - written.
    poll = [
        polled[f"probe-{i:02d}"] - cards[f"probe-{i:02d}"] + push[i] for i in range(args.changes)
    ]
    return {
        "push": push,
        "server": server,
        "panel": panel,
        "bare": bare,
        "workload": workload,
        "poll": poll,
        "rtt": rtt,
        "messages": {
            "opening": opening,
            "clusters": cluster_messages,
            "workloads": workload_messages,
        },
        "sent": sent,
        "compressed": wire.compressor is not None,
    }


class BareWatch:
    """The API server's own latency, same run: a plain watch of the namespace's RayClusters (no
    Jupyter, no jupyter_dw) stamping when each new one named ``prefix...`` arrives."""

    def __init__(self, kube: Any, namespace: str, prefix: str) -> None:
        self._custom = client.CustomObjectsApi(kube)
        self._namespace = namespace
        self._prefix = prefix
        self._arrived: dict[str, float] = {}
        self._ready = threading.Condition()
        self._watch = watch.Watch()
        listed = self._custom.list_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", limit=1
        )
        self._version = listed["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, name="bare-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for event in self._watch.stream(
            self._custom.list_namespaced_custom_object,
            "ray.io",
            "v1",
            self._namespace,
            "rayclusters",
            resource_version=self._version,
            timeout_seconds=3600,
        ):
            now = time.time() * 1000
            name = str(event["object"]["metadata"]["name"])
            if event["type"] == "ADDED" and name.startswith(self._prefix):
                with self._ready:
                    self._arrived.setdefault(name, now)
                    self._ready.notify_all()

    def seen(self, name: str, timeout: float = 30.0) -> float:
        """When the watch saw ``name`` arrive (waits for it)."""
        with self._ready:
            if not self._ready.wait_for(lambda: name in self._arrived, timeout):
                raise SystemExit(f"the bare watch never saw {name}")
            return self._arrived[name]

    def stop(self) -> None:
        self._watch.stop()


class Wire:
    """The bytes the server sent for the page's messages: their frames' payloads as its
    permessage-deflate made them, made again here with its settings, in order (the context is
    kept across messages), when the page's socket agreed on it (``extensions``); else the
    text's."""

    def __init__(self, extensions: str | None) -> None:
        settings: dict[str, Any] = getattr(events_socket, "COMPRESSION", None) or {}
        self.compressor = (
            zlib.compressobj(
                settings.get("compression_level", 6),
                zlib.DEFLATED,
                -zlib.MAX_WBITS,
                settings.get("mem_level", 8),
            )
            if (extensions or "").startswith("permessage-deflate")
            else None
        )

    def add(self, texts: list[str]) -> int:
        """The bytes sent for ``texts`` (RFC 7692: each flushed, its 4-byte tail removed)."""
        if self.compressor is None:
            return sum(len(t.encode()) for t in texts)
        sync = zlib.Z_SYNC_FLUSH
        return sum(
            len(self.compressor.compress(t.encode()) + self.compressor.flush(sync)) - 4
            for t in texts
        )


QUEUE_TYPES = ("queues", "queue")
"""The messages that carry the queues answer: whole, or the records a change altered."""


def totals(by_type: dict[str, Any], types: tuple[str, ...] | None = None) -> tuple[int, int, int]:
    """``(messages, characters, largest)`` of ``types`` (default: all) in a page's count."""
    rows = [v for k, v in by_type.items() if types is None or k in types]
    return (
        sum(r["count"] for r in rows),
        sum(r["bytes"] for r in rows),
        max((r["largest"] for r in rows), default=0),
    )


def traffic(by_type: dict[str, Any]) -> str:
    """The page's count of events messages by type, in words (KB of JSON text)."""
    count, size, _ = totals(by_type)
    parts = ", ".join(
        f"{kind} {v['count']} ({v['bytes'] / 1000:,.1f} KB, largest {v['largest'] / 1000:,.1f} KB)"
        for kind, v in sorted(by_type.items(), key=lambda kv: -kv[1]["bytes"])
    )
    return f"{count} messages, {size / 1000:,.1f} KB: {parts}"


def report(
    args: argparse.Namespace, state: Any, version: str, what: str, result: dict[str, Any]
) -> None:
    print(
        f"Sidebar latency, {args.queues} LocalQueues, {what}{args.clusters} + {args.changes} Ray "
        f"clusters (Kueue {state.versions['kueue']}, {version}); measured in Chromium"
    )
    print(describe("push: RayCluster created -> card", result["push"]))
    print(describe("  of which: write -> socket message", result["server"]))
    print(describe("  of which: socket message -> DOM", result["panel"]))
    print(describe("baseline: write -> a bare watch sees it", result["bare"]))
    print(describe("push: Workload created -> pending", result["workload"]))
    print(describe(f"baseline: {POLL_MS / 1000:g} s poll of GET clusters", result["poll"]))
    print(describe("baseline: GET clusters round trip", result["rtt"]))
    messages, sent = result["messages"], result["sent"]
    print(f"permessage-deflate agreed: {result['compressed']}")
    print(
        f"opening the panel, until {QUIET_MS / 1000:g} s quiet: {traffic(messages['opening'])}; "
        f"{sent['opening'] / 1000:,.1f} KB sent"
    )
    for phase, what in (("clusters", "RayClusters created"), ("workloads", "Workloads created")):
        print(
            f"during the {args.changes} {what}: {traffic(messages[phase])}; "
            f"{sent[phase] / 1000:,.1f} KB sent"
        )
        count, size, largest = totals(messages[phase], QUEUE_TYPES)
        print(
            f"  queues answers ({'/'.join(QUEUE_TYPES)}): {size / args.changes / 1000:,.2f} KB "
            f"per change ({count / args.changes:.2f} messages), largest {largest / 1000:,.1f} KB"
        )
    ratio = statistics.median(result["poll"]) / statistics.median(result["push"])
    print(f"median speed-up over the 5 s poll: {ratio:.0f}x")
    if args.smoke:
        keys = ("push", "server", "panel", "bare", "workload")
        assert all(len(result[k]) == args.changes for k in keys)
        assert result["rtt"], "a figure is missing"
        print("smoke: ok", file=sys.stderr)


if __name__ == "__main__":
    main()
