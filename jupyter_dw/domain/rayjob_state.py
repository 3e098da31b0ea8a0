"""A RayJob's state, as every surface shows it: its Workload's state while Kueue decides
(the same words as a cluster's and any workload's), then KubeRay's account of the job.

Pure: a RayJob object (KubeRay v1.6.2 ``rayjob_types.go``) and, when known, its Workload's
:class:`~jupyter_dw.domain.workloads.WorkloadInfo` → :class:`RayJobInfo`.

States, first match wins:

- ``deleting`` (``metadata.deletionTimestamp``);
- ``succeeded`` / ``stopped``: ``jobDeploymentStatus`` ``Complete`` with Ray's job status;
- ``failed``: ``jobDeploymentStatus`` ``Failed`` or ``ValidationFailed``, with KubeRay's
  ``reason`` (``AppFailed``, ``DeadlineExceeded``, ``SubmissionFailed``,
  ``JobDeploymentStatusTransitionGracePeriodExceeded``, ``ValidationFailed``...) and message;
- the Workload's state when Kueue has not admitted it (``queued`` with Kueue's reason and
  position, ``waiting-for-capacity``, ``evicted``, ``preempted``, ``suspended``, ``rejected``);
  ``queued`` while Kueue has not made the Workload yet;
- ``running``: ``jobDeploymentStatus`` ``Running`` and Ray says ``RUNNING``;
- ``starting``: admitted, the cluster coming up or the job submitted but not running yet
  (``Initializing``, ``Running`` with ``PENDING``, ``Retrying``, ``Waiting``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jupyter_dw.domain.usage import ClusterUsage, usage_json
from jupyter_dw.domain.workloads import WorkloadInfo, created_by, held_by_kueue, workload_fields
from jupyter_dw.names import PRIORITY_CLASS_LABEL, QUEUE_LABEL, RAYJOB_KIND

RayJobState = Literal[
    "queued",
    "waiting-for-capacity",
    "admitted",
    "starting",
    "running",
    "succeeded",
    "stopped",
    "failed",
    "evicted",
    "preempted",
    "suspended",
    "rejected",
    "deleting",
]
FINAL_STATES = frozenset({"succeeded", "stopped", "failed"})
"""States a RayJob does not leave (KubeRay's ``IsJobDeploymentTerminal``)."""


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class RayJobInfo:
    """One RayJob: Kueue's side (``workload``) and KubeRay's (``deployment_status``,
    ``job_status``, the job's ``cluster`` and Ray's ``job_id``)."""

    name: str
    namespace: str | None
    queue: str | None
    priority: str | None
    submission_mode: str | None
    entrypoint: str | None
    state: RayJobState
    reason: str | None
    message: str | None
    deployment_status: str | None
    job_status: str | None
    job_id: str | None
    cluster: str | None
    workload: WorkloadInfo | None
    created: str | None
    start_time: str | None
    end_time: str | None
    owner: str | None = None
    """The username that created it through jupyter_dw (as a cluster's ``owner``)."""
    usage: ClusterUsage | None = None
    """What its RayCluster's pods use against what they hold, as its cluster's record says
    (the submitter's pod is not counted); None when usage is off (``usage_interval`` 0)."""
    idle_since: str | None = None
    """When the usage samples first found it idle since it was last busy."""

    @property
    def final(self) -> bool:
        """Whether the job is over (succeeded, stopped or failed)."""
        return self.state in FINAL_STATES

    @property
    def position_in_local_queue(self) -> int | None:
        """Kueue's 0-based position while the job waits for quota."""
        return self.workload.position_in_local_queue if self.workload else None

    def to_json(self) -> dict[str, Any]:
        """The JSON shape the REST API and the events socket share."""
        workload = self.workload
        return {
            "name": self.name,
            "namespace": self.namespace,
            "owner": self.owner,
            "queue": self.queue,
            "priority": self.priority,
            "submission_mode": self.submission_mode,
            "entrypoint": self.entrypoint,
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "final": self.final,
            "deployment_status": self.deployment_status,
            "job_status": self.job_status,
            "job_id": self.job_id,
            "cluster": self.cluster,
            **workload_fields(workload),
            "created": self.created,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "usage": usage_json(self.usage, self.idle_since),
        }


def owning_rayjob(obj: Mapping[str, Any]) -> str | None:
    """The RayJob that controls ``obj`` (a RayCluster KubeRay made for a job), if any."""
    for owner in _map(obj.get("metadata")).get("ownerReferences") or []:
        owner = _map(owner)
        if owner.get("kind") == RAYJOB_KIND and owner.get("controller") is True:
            return _text(owner.get("name"))
    return None


def rayjob_info(rayjob: Mapping[str, Any], workload: WorkloadInfo | None) -> RayJobInfo:
    """The state of ``rayjob`` given its Workload's (None: Kueue has made none yet, or it
    cannot be read). Never raises on a partial object."""
    metadata = _map(rayjob.get("metadata"))
    labels = _map(metadata.get("labels"))
    spec = _map(rayjob.get("spec"))
    status = _map(rayjob.get("status"))
    deployment = _text(status.get("jobDeploymentStatus"))
    job_status = _text(status.get("jobStatus"))
    state, reason, message = _state(metadata, status, deployment, job_status, workload)
    return RayJobInfo(
        name=str(metadata.get("name") or ""),
        namespace=_text(metadata.get("namespace")),
        owner=created_by(rayjob),
        queue=_text(labels.get(QUEUE_LABEL)),
        priority=_text(labels.get(PRIORITY_CLASS_LABEL)),
        submission_mode=_text(spec.get("submissionMode")) or "K8sJobMode",
        entrypoint=_text(spec.get("entrypoint")),
        state=state,
        reason=reason,
        message=message,
        deployment_status=deployment,
        job_status=job_status,
        job_id=_text(status.get("jobId")),
        cluster=_text(status.get("rayClusterName")),
        workload=workload,
        created=_text(metadata.get("creationTimestamp")),
        start_time=_text(status.get("startTime")),
        end_time=_text(status.get("endTime")),
    )


def _state(
    metadata: Mapping[str, Any],
    status: Mapping[str, Any],
    deployment: str | None,
    job_status: str | None,
    workload: WorkloadInfo | None,
) -> tuple[RayJobState, str | None, str | None]:
    kuberay_reason = _text(status.get("reason"))
    kuberay_message = _text(status.get("message"))
    if _text(metadata.get("deletionTimestamp")):
        return "deleting", None, None
    if deployment == "Complete":
        if job_status == "STOPPED":
            return "stopped", kuberay_reason, kuberay_message
        return "succeeded", kuberay_reason, kuberay_message
    if deployment in ("Failed", "ValidationFailed"):
        return "failed", kuberay_reason or deployment, kuberay_message
    held = held_by_kueue(workload)
    if held is not None:
        return held  # type: ignore[return-value]
    assert workload is not None  # held_by_kueue answers for a missing Workload
    if deployment == "Running" and job_status == "RUNNING":
        return "running", None, None
    if deployment in (None, "Suspended", "Suspending"):
        return "admitted", workload.reason, workload.message
    return "starting", None, kuberay_message
