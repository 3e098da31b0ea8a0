"""The RayJob kind from a kernel: ``dw.RayJobSpec``, ``dw.rayjob(name)``, ``dw.rayjobs()``, ...
A KubeRay RayJob, which brings its own cluster; not
:class:`~jupyter_dw.notebook.jobs.RayJobHandle` (docs/explanation/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ...domain.kinds.rayjob import RAYJOB, RayJobInfo
from ..job_waiting import JobEnded, JobHandle
from ..kind_calls import KindCalls


@dataclass
class RayJobSpec:
    """What to run; None means the default. ``cluster`` is the job's cluster
    (a ``dw.ClusterSpec`` or a dict of its fields; its own name, queue and priority are not
    used). ``shutdown_after_finish`` must stay True under Kueue; ``ttl_seconds_after_finished``
    keeps the finished RayJob object that long."""

    name: str | None = None
    queue: str | None = None
    priority: str | None = None
    entrypoint: str | None = None
    runtime_env: dict[str, Any] | None = None
    submission_mode: str | None = None
    """``"K8sJobMode"`` (default: a Kubernetes Job submits it) or ``"SidecarMode"``."""
    shutdown_after_finish: bool | None = None
    ttl_seconds_after_finished: int | None = None
    cluster: Any = None

    example: ClassVar[str] = "dw.RayJobSpec(name=..., entrypoint=..., cluster=dw.ClusterSpec(...))"

    def to_request(self) -> dict[str, Any]:
        """The REST request body: the fields that are set."""
        body = {f.name: getattr(self, f.name) for f in fields(self)}
        cluster = body.get("cluster")
        if cluster is not None and hasattr(cluster, "to_request"):
            body["cluster"] = cluster.to_request()
        return {k: v for k, v in body.items() if v is not None}


class RayJobEnded(JobEnded):
    """A wait for a RayJob state ended otherwise: the job failed, stopped or was deleted
    first; ``state`` is its last state."""

    code = "rayjob_ended"


class KubeRayJobHandle(JobHandle[RayJobInfo]):
    """One RayJob of the namespace, by name (``status()``, ``wait()``/``wait_async()``,
    ``logs()``, ``delete()``); every read is fresh from the watch caches."""

    job_kind = RAYJOB
    ended = RayJobEnded
    hint = "See the reason (KubeRay's words); dw.rayjob(name).logs() while the head runs."

    def logs(self) -> str:
        """The job's log so far, from its cluster's head (Ray's Jobs API, token added by
        jupyter_dw); only while KubeRay's cluster for it runs."""
        from ..jobs import RayJobHandle

        info = self.status()
        if not info.cluster or not info.job_id:
            raise RayJobEnded(
                f"RayJob {self.name!r} has no running Ray job yet",
                f"it is {info.state}",
                "Logs are there once the job runs (await h.wait_async('running')).",
                info.state,
            )
        return RayJobHandle(info.cluster, info.job_id).logs()


CALLS = KindCalls(RayJobSpec, KubeRayJobHandle)
rayjob = CALLS.get
rayjobs = CALLS.list
