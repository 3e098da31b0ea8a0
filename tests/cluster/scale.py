"""A cluster-sized Kueue setup in seconds: by default 200 LocalQueues on 50 ClusterQueues and
5,000 Workloads, for benchmarks and tests that must see the cost of a real cluster.

Everything lives apart from other tests: one fresh namespace (LocalQueues, Workloads) and
cluster-scoped objects (ResourceFlavors, Cohorts, ClusterQueues) named with the namespace as
prefix and labelled ``jupyter-dw/scale=<namespace>``, so teardown finds exactly them.

The Workloads are plain ones (:func:`tests.cluster.fixtures.plain_workload`: one pod, 1 CPU,
no job behind them). Kueue queues and admits those like any job's: it admits what the quota
holds (about 400 with the default shape) and keeps the rest pending, so LocalQueue and
ClusterQueue status carry real counts and usage, and nothing runs. They are created by a
thread pool over one connection pool; :func:`create_scale` returns once Kueue counts every
Workload in its LocalQueues' status (queued or admitted), and records how long each phase
took and how much CPU Kueue spent meanwhile.

Usage::

    with scale_testbed(kube, api_version, ScaleShape(), kueue_pid=cluster.pids["kueue"]) as s:
        ...  # s.namespace, s.local_queues, s.timings

``python -m tests.cluster.scale [--queues 200 --cluster-queues 50 --workloads 5000]`` creates
it on the local control plane, prints the timings and deletes it again.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, config, watch

from .fixtures import plain_workload

GROUP = "kueue.x-k8s.io"
SCALE_LABEL = "jupyter-dw/scale"
"""On every cluster-scoped object of one setup: its namespace (teardown selects by it)."""
DEFAULT_WORKERS = 16
"""Concurrent creates: enough to keep the API server busy, few enough for 2 cores."""
WAIT_TIMEOUT = 300.0

Object = dict[str, Any]


@dataclass(frozen=True)
class ScaleShape:
    """How many objects of each kind. ClusterQueues are spread over ``cohorts`` cohorts under
    one root Cohort (v1beta2; under v1beta1 the cohorts are implicit and have no root)."""

    local_queues: int = 200
    cluster_queues: int = 50
    workloads: int = 5000
    cohorts: int = 5

    def __post_init__(self) -> None:
        if min(self.local_queues, self.cluster_queues, self.cohorts) < 1 or self.workloads < 0:
            raise ValueError(f"every count must be positive: {self}")


@dataclass
class ScaleTestbed:
    """What :func:`create_scale` made, and how long it took."""

    namespace: str
    api_version: str
    shape: ScaleShape
    flavors: list[str] = field(default_factory=list)
    cohorts: list[str] = field(default_factory=list)
    cluster_queues: list[str] = field(default_factory=list)
    local_queues: list[str] = field(default_factory=list)
    workloads: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds per phase: ``queues`` (flavors to LocalQueues, all Active), ``workloads`` (the
    creates), ``queued`` (until Kueue counts them all), ``total``, and ``teardown``."""
    kueue_cpu_seconds: float | None = None
    """CPU time Kueue's process spent from the first create until all were counted (None when
    its pid was not given)."""

    @property
    def prefix(self) -> str:
        return self.namespace

    @property
    def selector(self) -> str:
        return f"{SCALE_LABEL}={self.namespace}"

    def describe(self) -> str:
        t = self.timings
        cpu = (
            f"; Kueue used {self.kueue_cpu_seconds:.1f} CPU-s"
            if self.kueue_cpu_seconds is not None
            else ""
        )
        return (
            f"{len(self.local_queues)} LocalQueues / {len(self.cluster_queues)} ClusterQueues / "
            f"{len(self.workloads)} Workloads in {t.get('total', 0):.1f} s (queues "
            f"{t.get('queues', 0):.1f} s, workload creates {t.get('workloads', 0):.1f} s = "
            f"{len(self.workloads) / max(t.get('workloads', 0), 1e-9):.0f}/s, until Kueue counted "
            f"them {t.get('queued', 0):.1f} s){cpu}"
        )


def bulk_client(kube: client.ApiClient, workers: int) -> client.ApiClient:
    """A client like ``kube`` whose connection pool holds ``workers`` connections (the default
    holds 5 per CPU: more threads would open and drop connections)."""
    configuration = copy.copy(kube.configuration)
    configuration.connection_pool_maxsize = max(workers, configuration.connection_pool_maxsize)
    return client.ApiClient(configuration)


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (None when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After the command: state is field 3, utime 14, stime 15 (proc(5)); clock ticks.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def create_scale(
    kube: client.ApiClient,
    api_version: str,
    shape: ScaleShape | None = None,
    *,
    workers: int = DEFAULT_WORKERS,
    kueue_pid: int | None = None,
    timeout: float = WAIT_TIMEOUT,
) -> ScaleTestbed:
    """Create the objects of ``shape`` in a new namespace and wait until Kueue has queued or
    admitted every Workload. On failure, deletes what it made and raises."""
    shape = shape or ScaleShape()
    testbed = ScaleTestbed(f"dw-scale-{uuid.uuid4().hex[:6]}", api_version, shape)
    api = bulk_client(kube, workers)
    try:
        _create(api, testbed, workers, kueue_pid, timeout)
    except BaseException:
        delete_scale(kube, testbed, wait=False)
        raise
    return testbed


def delete_scale(
    kube: client.ApiClient, testbed: ScaleTestbed, *, wait: bool = True, timeout: float = 300.0
) -> None:
    """Delete the namespace and every cluster-scoped object of ``testbed``; with ``wait``,
    return once they are gone (Kueue keeps a ClusterQueue until its admitted Workloads are
    deleted, and a ResourceFlavor until no ClusterQueue names it), so the next run starts on a
    quiet Kueue. Records ``timings["teardown"]``."""
    start = time.monotonic()
    core = client.CoreV1Api(kube)
    custom = client.CustomObjectsApi(kube)
    plurals = ["clusterqueues", "cohorts", "resourceflavors"]
    if testbed.api_version != "v1beta2":
        plurals.remove("cohorts")
    # ClusterQueues first: a terminating one admits nothing, so Kueue does not admit the
    # pending Workloads one by one as the namespace's deletion frees quota.
    for plural in plurals:
        custom.delete_collection_cluster_custom_object(
            GROUP, testbed.api_version, plural, label_selector=testbed.selector
        )
    try:
        core.delete_namespace(testbed.namespace, propagation_policy="Background")
    except client.ApiException as err:
        if err.status != 404:
            raise
    if wait:
        deadline = time.monotonic() + timeout
        for plural in plurals:
            _follow(
                functools.partial(
                    custom.list_cluster_custom_object, GROUP, testbed.api_version, plural
                ),
                lambda objects: not objects,
                deadline,
                f"{plural} of {testbed.namespace} deleted",
                label_selector=testbed.selector,
            )
        _follow(
            core.list_namespace,
            lambda objects: not objects,
            deadline,
            f"namespace {testbed.namespace} deleted",
            field_selector=f"metadata.name={testbed.namespace}",
        )
    testbed.timings["teardown"] = time.monotonic() - start


@contextmanager
def scale_testbed(
    kube: client.ApiClient,
    api_version: str,
    shape: ScaleShape | None = None,
    *,
    workers: int = DEFAULT_WORKERS,
    kueue_pid: int | None = None,
    wait_teardown: bool = True,
) -> Iterator[ScaleTestbed]:
    """:func:`create_scale`, then :func:`delete_scale` however the block ends."""
    testbed = create_scale(kube, api_version, shape, workers=workers, kueue_pid=kueue_pid)
    try:
        yield testbed
    finally:
        delete_scale(kube, testbed, wait=wait_teardown)


def create_all(
    kube: client.ApiClient, path: str, bodies: list[Object], workers: int = DEFAULT_WORKERS
) -> float:
    """POST every body to ``path`` (``/api/v1/namespaces/NS/pods``) on ``workers`` threads,
    as :func:`create_scale` creates its Workloads; returns the seconds it took."""
    start = time.monotonic()
    poster = _Poster(bulk_client(kube, workers))
    _run_all([poster.post(path, body) for body in bodies], workers)
    return time.monotonic() - start


# --------------------------------------------------------------------------------------------
# Creating
# --------------------------------------------------------------------------------------------


def _create(
    api: client.ApiClient,
    testbed: ScaleTestbed,
    workers: int,
    kueue_pid: int | None,
    timeout: float,
) -> None:
    custom = client.CustomObjectsApi(api)
    shape, version, ns = testbed.shape, testbed.api_version, testbed.namespace
    deadline = time.monotonic() + timeout
    cpu_before = process_cpu_seconds(kueue_pid) if kueue_pid else None
    start = time.monotonic()
    client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})

    poster = _Poster(api)
    kueue_path = f"/apis/{GROUP}/{version}"

    def cluster_scoped(plural: str, body: Object) -> Callable[[], object]:
        body["metadata"]["labels"] = {SCALE_LABEL: ns}
        return poster.post(f"{kueue_path}/{plural}", body)

    def namespaced(plural: str, body: Object) -> Callable[[], object]:
        return poster.post(f"{kueue_path}/namespaces/{ns}/{plural}", body)

    testbed.flavors = [f"{ns}-a", f"{ns}-b"]
    flavors = [_kueue(version, "ResourceFlavor", f, {}) for f in testbed.flavors]
    _run_all([cluster_scoped("resourceflavors", body) for body in flavors], workers)
    if version == "v1beta2":
        # A root with some quota of its own, the cohorts the ClusterQueues sit in below it.
        root, *cohort_of = testbed.cohorts = [ns] + [f"{ns}-c{k}" for k in range(shape.cohorts)]
        quota = _resource_groups({testbed.flavors[0]: {"cpu": "8", "memory": "32Gi"}})
        _run_all([cluster_scoped("cohorts", _kueue(version, "Cohort", root, quota))], 1)
        children = [_kueue(version, "Cohort", c, {"parentName": root}) for c in cohort_of]
        _run_all([cluster_scoped("cohorts", body) for body in children], workers)
    else:
        cohort_of = [f"{ns}-c{k}" for k in range(shape.cohorts)]
    testbed.cluster_queues = [f"{ns}-cq{i}" for i in range(shape.cluster_queues)]
    cluster_queues = [
        _cluster_queue(testbed, i, cohort_of[i % len(cohort_of)])
        for i in range(shape.cluster_queues)
    ]
    _run_all([cluster_scoped("clusterqueues", body) for body in cluster_queues], workers)
    testbed.local_queues = [f"lq-{i}" for i in range(shape.local_queues)]
    local_queues = [
        _kueue(
            version,
            "LocalQueue",
            lq,
            {"clusterQueue": testbed.cluster_queues[i % shape.cluster_queues]},
        )
        for i, lq in enumerate(testbed.local_queues)
    ]
    _run_all([namespaced("localqueues", body) for body in local_queues], workers)
    # Workloads sent to a queue Kueue has not activated yet would wait for it: wait first.
    _follow(
        lambda **kw: custom.list_cluster_custom_object(GROUP, version, "clusterqueues", **kw),
        lambda objects: len(objects) == shape.cluster_queues and all(map(_active, objects)),
        deadline,
        "every ClusterQueue Active",
        label_selector=testbed.selector,
    )
    _follow(
        lambda **kw: custom.list_namespaced_custom_object(GROUP, version, ns, "localqueues", **kw),
        lambda objects: len(objects) == shape.local_queues and all(map(_active, objects)),
        deadline,
        "every LocalQueue Active",
    )
    queues_done = time.monotonic()
    testbed.timings["queues"] = queues_done - start

    testbed.workloads = [f"wl-{i}" for i in range(shape.workloads)]
    _run_all(
        [
            namespaced(
                "workloads",
                plain_workload(version, name, testbed.local_queues[i % shape.local_queues], "1"),
            )
            for i, name in enumerate(testbed.workloads)
        ],
        workers,
    )
    created = time.monotonic()
    testbed.timings["workloads"] = created - queues_done
    # Kueue's own word that it holds them all: each LocalQueue's pending + reserving counts.
    _follow(
        lambda **kw: custom.list_namespaced_custom_object(GROUP, version, ns, "localqueues", **kw),
        lambda objects: sum(counted_workloads(o) for o in objects) == shape.workloads,
        deadline,
        f"Kueue counting {shape.workloads} Workloads in LocalQueue status",
    )
    done = time.monotonic()
    testbed.timings["queued"] = done - created
    testbed.timings["total"] = done - start
    cpu_after = process_cpu_seconds(kueue_pid) if kueue_pid else None
    if cpu_before is not None and cpu_after is not None:
        testbed.kueue_cpu_seconds = cpu_after - cpu_before


class _Poster:
    """Creates through ``api``'s own connection pool (its TLS client certificate or token),
    skipping the generated client's per-call model handling: that costs ~3 ms of Python per
    object, which on two shared cores slowed 5,000 creates by a third."""

    def __init__(self, api: client.ApiClient) -> None:
        self._pool = api.rest_client.pool_manager
        self._host = api.configuration.host
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        token = (api.configuration.api_key or {}).get("authorization")
        if token:
            self._headers["Authorization"] = token

    def post(self, path: str, body: Object) -> Callable[[], object]:
        """A call that creates ``body`` at ``path`` (raises on any answer but 201)."""
        data = json.dumps(body).encode()

        def create() -> object:
            response = self._pool.request(
                "POST", f"{self._host}{path}", body=data, headers=self._headers
            )
            if response.status != 201:
                raise client.ApiException(
                    status=response.status, reason=response.data.decode(errors="replace")
                )
            return None

        return create


def _run_all(calls: list[Callable[[], object]], workers: int) -> None:
    """Run every call on a pool of ``workers`` threads; the first failure is raised."""
    if not calls:
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(calls))) as pool:
        for future in [pool.submit(call) for call in calls]:
            future.result()


def _kueue(version: str, kind: str, name: str, spec: Object) -> Object:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    }


def _resource_groups(flavors: dict[str, dict[str, str | Object]]) -> Object:
    """``spec.resourceGroups`` of one group: ``{flavor: {resource: nominal or quota dict}}``."""
    covered = list(dict.fromkeys(r for resources in flavors.values() for r in resources))
    return {
        "resourceGroups": [
            {
                "coveredResources": covered,
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [
                            {"name": r, **(q if isinstance(q, dict) else {"nominalQuota": q})}
                            for r, q in resources.items()
                        ],
                    }
                    for flavor, resources in flavors.items()
                ],
            }
        ]
    }


def _cluster_queue(testbed: ScaleTestbed, i: int, cohort: str) -> Object:
    """ClusterQueue ``i``: 4 CPUs in each flavor; every other one may borrow at most 4 CPUs of
    the first flavor, every third lends at most 2 (so the quota tree has limits to honour)."""
    first: Object = {"nominalQuota": "4"}
    if i % 2 == 0:
        first["borrowingLimit"] = "4"
    if i % 3 == 0:
        first["lendingLimit"] = "2"
    a, b = testbed.flavors
    spec = {
        "namespaceSelector": {},
        ("cohortName" if testbed.api_version == "v1beta2" else "cohort"): cohort,
        **_resource_groups(
            {a: {"cpu": first, "memory": "16Gi"}, b: {"cpu": "4", "memory": "16Gi"}}
        ),
    }
    return _kueue(testbed.api_version, "ClusterQueue", testbed.cluster_queues[i], spec)


def _active(obj: Object) -> bool:
    return any(
        c.get("type") == "Active" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def counted_workloads(local_queue: Object) -> int:
    """The Workloads Kueue counts in a LocalQueue's status: pending plus reserving quota."""
    status = local_queue.get("status") or {}
    return int(status.get("pendingWorkloads") or 0) + int(status.get("reservingWorkloads") or 0)


def _follow(
    list_call: Callable[..., Any],
    done: Callable[[list[Object]], bool],
    deadline: float,
    what: str,
    **list_kwargs: Any,
) -> None:
    """Wait until ``done(objects)`` holds for the objects ``list_call`` lists: one list, then
    its watch applied event by event (no polling)."""
    listing = json.loads(list_call(_preload_content=False, **list_kwargs).data)
    objects = {o["metadata"]["name"]: o for o in listing.get("items") or []}
    if done(list(objects.values())):
        return
    resource_version = listing["metadata"]["resourceVersion"]
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"timed out waiting for {what}")
        stream = watch.Watch()
        for event in stream.stream(
            list_call,
            resource_version=resource_version,
            timeout_seconds=max(1, int(remaining)),
            allow_watch_bookmarks=True,
            **list_kwargs,
        ):
            obj = event["raw_object"]
            resource_version = obj["metadata"].get("resourceVersion", resource_version)
            if event["type"] == "BOOKMARK":
                continue
            if event["type"] == "DELETED":
                objects.pop(obj["metadata"]["name"], None)
            else:
                objects[obj["metadata"]["name"]] = obj
            if done(list(objects.values())):
                stream.stop()
                return


def main() -> None:
    from .controlplane import LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument("--cluster-queues", type=int, default=50)
    parser.add_argument("--workloads", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    args = parser.parse_args()
    state = LocalCluster().up()
    kube = config.new_client_from_config(config_file=state.kubeconfig)
    groups = client.ApisApi(kube).get_api_versions().groups
    served = {v.version for g in groups if g.name == GROUP for v in g.versions}
    version = "v1beta2" if "v1beta2" in served else "v1beta1"
    shape = ScaleShape(args.queues, args.cluster_queues, args.workloads)
    with scale_testbed(
        kube, version, shape, workers=args.workers, kueue_pid=state.pids.get("kueue")
    ) as testbed:
        print(testbed.describe())
    print(f"teardown {testbed.timings['teardown']:.1f} s")


if __name__ == "__main__":
    main()
