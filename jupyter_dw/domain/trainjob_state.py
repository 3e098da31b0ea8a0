"""A TrainJob's state, as every surface shows it: its Workload's state while Kueue decides
(the same words as a cluster's, a RayJob's and any workload's), then Trainer's account.

Pure: a TrainJob object (Trainer v2.2.1 ``trainjob_types.go``: conditions ``Complete``,
``Failed``, ``Suspended``; ``jobsStatus[{name, ready, succeeded, failed, active}]``) and, when
known, its Workload's :class:`~jupyter_dw.domain.workloads.WorkloadInfo` → :class:`TrainJobInfo`.

States, first match wins: ``deleting``; ``succeeded`` (``Complete``) / ``failed`` (``Failed``,
with Trainer's reason and message); the Workload's state when Kueue has not admitted it
(``queued`` with Kueue's reason and position, ``waiting-for-capacity``, ``evicted``,
``preempted``, ``suspended``, ``rejected``), ``queued`` while Kueue has made no Workload yet;
``admitted`` while the TrainJob is still suspended; ``running`` once a child Job is ready;
``starting`` in between.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jupyter_dw.domain.usage import ClusterUsage, usage_json
from jupyter_dw.domain.workloads import WorkloadInfo, created_by, held_by_kueue, workload_fields
from jupyter_dw.names import PRIORITY_CLASS_LABEL, QUEUE_LABEL

TrainJobState = Literal[
    "queued",
    "waiting-for-capacity",
    "admitted",
    "starting",
    "running",
    "succeeded",
    "failed",
    "evicted",
    "preempted",
    "suspended",
    "rejected",
    "deleting",
]
FINAL_STATES = frozenset({"succeeded", "failed"})


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True)
class TrainJobInfo:
    """One TrainJob: Kueue's side (``workload``) and Trainer's: ``jobs_ready``,
    ``jobs_succeeded``, ``jobs_failed`` count the JobSet's child Jobs (Trainer's
    ``jobsStatus``; a step of N nodes is one Job of N pods)."""

    name: str
    namespace: str | None
    queue: str | None
    priority: str | None
    runtime: str | None
    num_nodes: int | None
    state: TrainJobState
    reason: str | None
    message: str | None
    jobs_ready: int
    jobs_succeeded: int
    jobs_failed: int
    workload: WorkloadInfo | None
    created: str | None
    end_time: str | None
    owner: str | None = None
    """The username that created it through jupyter_dw (as a cluster's ``owner``)."""
    usage: ClusterUsage | None = None
    """What its pods (its JobSet's) use against what they hold, summed as a cluster's are;
    None when usage is off (``usage_interval`` 0)."""
    idle_since: str | None = None
    """When the usage samples first found it idle since it was last busy."""

    @property
    def final(self) -> bool:
        """Whether the job is over (succeeded or failed)."""
        return self.state in FINAL_STATES

    @property
    def position_in_local_queue(self) -> int | None:
        """Kueue's 0-based position while the job waits for quota."""
        return self.workload.position_in_local_queue if self.workload else None

    def to_json(self) -> dict[str, Any]:
        """The JSON shape the REST API and the kernel share."""
        return {
            "name": self.name,
            "namespace": self.namespace,
            "owner": self.owner,
            "queue": self.queue,
            "priority": self.priority,
            "runtime": self.runtime,
            "num_nodes": self.num_nodes,
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "final": self.final,
            "jobs_ready": self.jobs_ready,
            "jobs_succeeded": self.jobs_succeeded,
            "jobs_failed": self.jobs_failed,
            **workload_fields(self.workload),
            "created": self.created,
            "end_time": self.end_time,
            "usage": usage_json(self.usage, self.idle_since),
        }


def trainjob_info(trainjob: Mapping[str, Any], workload: WorkloadInfo | None) -> TrainJobInfo:
    """The state of ``trainjob`` given its Workload's (None: Kueue has made none yet, or it
    cannot be read). Never raises on a partial object."""
    metadata = _map(trainjob.get("metadata"))
    labels = _map(metadata.get("labels"))
    spec = _map(trainjob.get("spec"))
    status = _map(trainjob.get("status"))
    conditions = {
        str(c.get("type")): c for c in map(_map, status.get("conditions") or []) if c.get("type")
    }
    jobs = [_map(j) for j in status.get("jobsStatus") or []]
    ready = sum(_count(j.get("ready")) for j in jobs)
    state, reason, message = _state(metadata, spec, conditions, ready, workload)
    done = next((conditions[t] for t in ("Complete", "Failed") if _true(conditions.get(t))), None)
    nodes = _map(spec.get("trainer")).get("numNodes")
    return TrainJobInfo(
        name=str(metadata.get("name") or ""),
        namespace=_text(metadata.get("namespace")),
        owner=created_by(trainjob),
        queue=_text(labels.get(QUEUE_LABEL)),
        priority=_text(labels.get(PRIORITY_CLASS_LABEL)),
        runtime=_text(_map(spec.get("runtimeRef")).get("name")),
        num_nodes=nodes if isinstance(nodes, int) else None,
        state=state,
        reason=reason,
        message=message,
        jobs_ready=ready,
        jobs_succeeded=sum(_count(j.get("succeeded")) for j in jobs),
        jobs_failed=sum(_count(j.get("failed")) for j in jobs),
        workload=workload,
        created=_text(metadata.get("creationTimestamp")),
        end_time=_text(done.get("lastTransitionTime")) if done else None,
    )


def _true(condition: Mapping[str, Any] | None) -> bool:
    return condition is not None and condition.get("status") == "True"


def _state(
    metadata: Mapping[str, Any],
    spec: Mapping[str, Any],
    conditions: Mapping[str, Mapping[str, Any]],
    ready: int,
    workload: WorkloadInfo | None,
) -> tuple[TrainJobState, str | None, str | None]:
    if _text(metadata.get("deletionTimestamp")):
        return "deleting", None, None
    for kind, state in (("Complete", "succeeded"), ("Failed", "failed")):
        condition = conditions.get(kind)
        if _true(condition):
            assert condition is not None
            return state, _text(condition.get("reason")), _text(condition.get("message"))  # type: ignore[return-value]
    held = held_by_kueue(workload)
    if held is not None:
        return held  # type: ignore[return-value]
    assert workload is not None  # held_by_kueue answers for a missing Workload
    if spec.get("suspend") is True:
        return "admitted", workload.reason, workload.message
    if ready > 0:
        return "running", None, None
    return "starting", None, None
