"""What a real server sends reads back, through ``jupyter_dw.domain.json_decode``, into the
core's own objects, and those say exactly what was sent: the REST answers a kernel reads
(context, queues, Workloads, clusters, a fit, a create, a kind's list and fit, an error, a
delete) and every events message from the snapshot until a cluster is ready and gone, the
deltas applied to what was told before."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from jupyter_dw.core.cluster_results import ClusterInfo, ClusterList, Deleted, FitResult
from jupyter_dw.core.context import SessionContext
from jupyter_dw.core.errors import KubeNotFound, error_from_json
from jupyter_dw.core.feed_json import FeedState, message_from_json
from jupyter_dw.core.feed_messages import ClusterChanged, JobChanged, QueuesChanged
from jupyter_dw.core.kind_results import JobList
from jupyter_dw.core.queue_results import QueueList
from jupyter_dw.core.workload_results import WorkloadList
from jupyter_dw.domain.json_decode import decode
from jupyter_dw.domain.kinds.rayjob import RayJobInfo, ValidatedRayJob
from tests.cluster.fixtures import WAIT_TIMEOUT
from tests.integration.clusters_support import Events, call, make_queue, open_events, small_cluster
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES
JOB_CLUSTER = {"workers": 1, "head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1"}
JOB_CLUSTER["worker_memory"] = "1Gi"


def reads_back(kind: Any, body: Any) -> Any:
    """``body`` as ``kind``, which says ``body`` again, to the letter."""
    back = decode(kind, body)
    assert back.to_json() == body
    return back


async def get(jp_fetch: Any, *route: str, **kwargs: Any) -> Any:
    code, body = await call(jp_fetch, "GET", *route, **kwargs)
    assert code == 200, body
    return body


class Reader:
    """The events socket read as a kernel reading through the server would: every message
    decoded against what was told before, and said again to the letter."""

    def __init__(self, events: Events, snapshot: dict[str, Any]) -> None:
        self.events = events
        self.state = FeedState()
        self.kinds: list[str] = []
        self.read(snapshot)

    def read(self, message: dict[str, Any]) -> Any:
        # The socket's own bytes, not a copy the Events helper may have touched.
        message = json.loads(json.dumps(message))
        back = message_from_json(message, self.state)
        assert back.to_json() == message, message["type"]
        self.state = self.state.after(back)
        self.kinds.append(message["type"])
        if isinstance(back, QueuesChanged):
            assert back.queues is not None and back.queues.to_json() == self.events.queues
        return back

    async def until(self, wanted: Callable[[Any], bool], what: str) -> Any:
        """Read (and check) messages until a decoded one is ``wanted``; return it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_TIMEOUT
        while True:
            remaining = deadline - loop.time()
            assert remaining > 0, f"no events message: {what}; read: {self.kinds[-5:]}"
            message = self.read(await self.events.next(remaining))
            if wanted(message):
                return message


def cluster_in(name: str, *states: str | None) -> Callable[[Any], bool]:
    def wanted(message: Any) -> bool:
        if not isinstance(message, ClusterChanged) or message.name != name:
            return False
        return (message.cluster.state if message.cluster is not None else None) in states

    return wanted


async def test_every_answer_and_message_reads_back(kueue, jp_fetch, jp_ws_fetch):
    queue = make_queue(kueue, cpu="4", memory="8Gi")
    events, snapshot = await open_events(jp_ws_fetch)
    reader = Reader(events, snapshot)

    context = reads_back(SessionContext, await get(jp_fetch, "context"))
    assert context.policy.published_sizes()["workers"]["default"] is not None
    queues = reads_back(QueueList, await get(jp_fetch, "queues"))
    assert queues.names() == [queue.local_queue]
    reads_back(WorkloadList, await get(jp_fetch, "workloads"))
    assert reads_back(ClusterList, await get(jp_fetch, "clusters")).names() == []
    assert list(reads_back(JobList, await get(jp_fetch, "rayjobs"))) == []

    # 3 CPU of the queue's 4; 40 workers never fit, 3 would.
    request = small_cluster("decoded", workers=2)
    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=request)
    assert code == 200 and fit["verdict"] == "fits-now", fit
    assert reads_back(FitResult, fit).named
    code, nameless = await call(jp_fetch, "POST", "clusters", "fit", body={"workers": 40})
    assert code == 200 and nameless["suggestion"] is not None, nameless
    assert not reads_back(FitResult, nameless).named

    code, created = await call(jp_fetch, "POST", "clusters", body=request)
    assert code == 201, created
    reads_back(ClusterInfo, created)
    ready = await reader.until(cluster_in("decoded", "ready"), "the cluster ready")
    assert ready.cluster.workers_ready == 2 and ready.cluster.milestones
    shown = reads_back(ClusterInfo, await get(jp_fetch, "clusters", "decoded"))
    assert shown.state == "ready" and shown.usage == ready.cluster.usage
    assert reads_back(WorkloadList, await get(jp_fetch, "workloads")).names()

    # A RayJob of 2.5 CPU waits behind the cluster: its record has a waiting Workload.
    job = {"name": "decoded-job", "entrypoint": "python -c 'print(1)'", "cluster": JOB_CLUSTER}
    code, job_fit = await call(jp_fetch, "POST", "rayjobs", "fit", body=job)
    assert code == 200 and job_fit["verdict"] == "must-wait", job_fit
    assert isinstance(reads_back(FitResult, job_fit).spec, ValidatedRayJob)
    code, made = await call(jp_fetch, "POST", "rayjobs", body=job)
    assert code == 201, made
    reads_back(RayJobInfo, made)
    waiting = await reader.until(
        lambda m: isinstance(m, JobChanged) and m.job is not None and m.job.workload is not None,
        "the RayJob's record with its Workload",
    )
    assert waiting.job.state == "queued"
    listing = reads_back(JobList, await get(jp_fetch, "rayjobs"))
    assert listing.names() == ["decoded-job"]

    code, missing = await call(jp_fetch, "GET", "clusters", "no-such")
    assert code == 404
    error = error_from_json(code, missing)
    assert isinstance(error, KubeNotFound) and error.to_json() == missing

    for route in (("rayjobs", "decoded-job"), ("clusters", "decoded")):
        code, deleted = await call(jp_fetch, "DELETE", *route)
        assert code == 200, deleted
        reads_back(Deleted, deleted)
    await reader.until(cluster_in("decoded", None), "the cluster gone")
    assert {"snapshot", "cluster", "workload", "rayjob"} <= set(reader.kinds), reader.kinds
    events.close()
