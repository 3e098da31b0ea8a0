"""The Python API (``import jupyter_dw as dw``): Kueue queues and Ray clusters from a kernel.
The same fields as the REST API, through the kernel's one core; waiting follows watches
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..core.cluster_results import ClusterInfo, FitResult, ScaleResult
from ..core.errors import (
    DWError,
    InvalidScale,
    InvalidSpec,
    KubeConflict,
    KubeForbidden,
    KubeNotFound,
    KubeUnreachable,
    NotElastic,
    NotInstalled,
    no_ray_client_on_worker,
)
from ..core.queue_results import QueueList
from ..core.workload_results import WorkloadList
from .job_waiting import wait_until
from .jobs import RayJobHandle, list_jobs, submit_job
from .kinds import calls_for
from .kinds.rayjob import RayJobSpec
from .kinds.trainjob import TrainJobSpec
from .ray_connect import (
    installed_ray,
    job_submission_client,
    ray_init,
    version_mismatches,
)
from .requests import create_with_key, request_body
from .runtime import Connection, runtime

# -- errors: one small hierarchy under DWError, each with ``error``, ``reason`` and ``hint`` ---

PermissionDenied = KubeForbidden
"""Kubernetes denied a permission; ``denied`` names the verb and resource."""
NotFound = KubeNotFound
NameTaken = KubeConflict
Unreachable = KubeUnreachable


class ClusterFailed(DWError):
    """A cluster reached a state it will not recover from by waiting (evicted, preempted,
    failed, rejected by an admission check) or went away; ``state`` is its last state."""

    code = "cluster_failed"

    def __init__(self, error: str, reason: str | None, hint: str | None, state: str | None):
        super().__init__(error, reason, hint)
        self.state = state


class WaitTimeout(DWError, TimeoutError):
    """``wait`` gave up; ``state`` is the last state seen."""

    code = "timeout"

    def __init__(self, error: str, reason: str | None, hint: str | None, state: str | None):
        super().__init__(error, reason, hint)
        self.state = state


GIVE_UP_STATES = frozenset({"evicted", "preempted", "failed", "rejected"})
"""States a wait for ``ready`` stops on: Kueue or KubeRay took the cluster away, or an
admission check (the cluster autoscaler) refused it."""


# -- the spec -------------------------------------------------------------------------------


@dataclass
class ClusterSpec:
    """What to ask for; None means the configured default (or, for ``queue``, the
    namespace's default LocalQueue). Validated by :func:`fit` and :func:`submit`, which
    name every bad field. Quantities are Kubernetes quantities (``"2"``, ``"500m"``,
    ``"8Gi"``)."""

    name: str | None = None
    queue: str | None = None
    workers: int | None = None
    worker_cpu: str | int | float | None = None
    worker_memory: str | None = None
    worker_gpu: int | None = None
    head_cpu: str | int | float | None = None
    head_memory: str | None = None
    image: str | None = None
    min_workers: int | None = None
    max_workers: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, str] | str] = field(default_factory=list)
    """Kubernetes tolerations, or ``"KEY[=VALUE][:EFFECT]"`` strings (for tainted flavors)."""
    node_selector: dict[str, str] = field(default_factory=dict)
    priority: str | None = None
    """A WorkloadPriorityClass name (``dw.queues().priority_classes`` lists them)."""
    ray_version: str | None = None
    """The image's Ray version; only needed for an image whose tag does not say it (any but
    ``rayproject/ray:X.Y.Z`` and other ``.../ray:X.Y.Z...`` images)."""

    def to_request(self) -> dict[str, Any]:
        """The REST request body: the fields that are set."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) not in (None, {}, [])
        }


SpecLike = ClusterSpec | Mapping[str, Any]


def _request(spec: SpecLike | None, overrides: Mapping[str, Any]) -> dict[str, Any]:
    return request_body(
        spec, overrides, ClusterSpec, "cluster", "dw.ClusterSpec(name=..., workers=...)"
    )


# -- answers ----------------------------------------------------------------------------------


def queues() -> QueueList:
    """The namespace's LocalQueues with quota and headroom (``.queues``, ``.default``)."""
    return runtime().core.queues.list()


def workloads(queue: str | None = None, kind: str | None = None) -> WorkloadList:
    """Every Kueue Workload of the namespace, whatever job owns it (batch Jobs, Ray clusters,
    RayJobs, ...): owner, queue, priority, state with Kueue's reason, position while waiting,
    the quota held per flavor. ``queue``: one LocalQueue's; ``kind``: the owner's kind as
    ``Kind.group`` (``"Job.batch"``, ``"RayCluster.ray.io"``). A sequence: iterate it,
    ``len()`` it, index it by position or Workload name; ``.in_queue("team-a")``."""
    return runtime().core.workloads.list(queue, kind)


def fit(spec: SpecLike | RayJobSpec | TrainJobSpec | None = None, **fields: Any) -> FitResult:
    """Would this cluster (or ``dw.RayJobSpec``, ``dw.TrainJobSpec``) fit its queue now?
    ``verdict`` (fits-now,
    must-wait, never-fits, unknown), ``message``, ``requests``, ``headroom``, ``ahead`` and
    ``suggestion`` (what would start now, or None). ``name`` may be omitted."""
    kind = calls_for(spec)
    if kind is not None:
        return kind.fit(spec, **fields)
    # A workload kind's spec went above: what is left is a cluster's.
    return runtime().core.clusters.fit(_request(spec, fields))  # type: ignore[arg-type]


def submit(
    spec: SpecLike | RayJobSpec | TrainJobSpec | None = None,
    *,
    delete_with_kernel: bool = False,
    idempotency_key: str | None = None,
    **fields: Any,
) -> Any:
    """Create the cluster through Kueue (suspended until admitted); return its handle. A
    ``dw.RayJobSpec`` makes a RayJob instead and returns its :class:`KubeRayJobHandle`; a
    ``dw.TrainJobSpec`` a TrainJob, returning its :class:`TrainJobHandle`.

    ``delete_with_kernel``: delete it when this kernel shuts down (quota is shared).
    ``idempotency_key``: the key of this submission (default: a fresh one per call); pass the
    one an ``Unreachable`` error names to retry safely: if the first try made the cluster,
    the retry answers with it instead of making a second one or raising ``NameTaken``.
    Raises :class:`InvalidSpec` (``errors`` per field; nothing created), ``NameTaken``,
    ``PermissionDenied``, ``NotInstalled`` or ``Unreachable`` (its ``idempotency_key`` is
    the one to retry with).
    """
    kind = calls_for(spec)
    if kind is not None:
        return kind.submit(spec, idempotency_key=idempotency_key, **fields)
    rt = runtime()
    request = _request(spec, fields)  # type: ignore[arg-type]  # a cluster's, as in fit
    info = create_with_key(lambda key: rt.core.clusters.create(request, key), idempotency_key)
    if delete_with_kernel:
        rt.delete_at_shutdown(info.snapshot.name)
    return RayClusterHandle(info.snapshot.name, _last=info)


@dataclass(frozen=True)
class KernelContext:
    """``dw.context()``: how this kernel reaches Kubernetes (``connection``: through its
    Jupyter server, or on its own, and why) and what that session is (``session``: the
    ``GET context`` answer: namespace, identity, installed APIs, permissions, watches)."""

    connection: Connection
    session: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """``{"connection": {"mode", "why"}, **GET context}``."""
        return {"connection": self.connection.to_json(), **self.session}

    def _repr_html_(self) -> str:
        from .display import context_html

        return context_html(self.connection.mode, self.connection.why, self.session)


def context() -> KernelContext:
    """How this kernel reaches Kubernetes and who it is there: ``connection.mode`` is
    ``server`` when it reads through its Jupyter server (one connection per workbench, the
    server's watches and permissions) or ``own``; ``session`` as ``GET context`` answers."""
    rt = runtime()
    session = rt.core.context().to_json()
    assert rt.connection is not None  # set when the core was made
    return KernelContext(rt.connection, session)


def cluster(name: str) -> RayClusterHandle:
    """The handle of an existing cluster (``NotFound`` when there is none)."""
    info = runtime().core.clusters.get(name)
    return RayClusterHandle(info.snapshot.name, _last=info)


def clusters() -> list[RayClusterHandle]:
    """Handles of every Ray cluster of the namespace."""
    return [RayClusterHandle(i.snapshot.name, _last=i) for i in runtime().core.clusters.entries()]


# -- a cluster ----------------------------------------------------------------------------------


@dataclass
class RayClusterHandle:
    """One Ray cluster of the namespace, by name. Every read is fresh from the watch caches."""

    name: str
    _last: ClusterInfo | None = field(default=None, repr=False, compare=False)

    def status(self) -> ClusterInfo:
        """The cluster now: ``state``, ``reason``, ``message``, ``position_in_local_queue``,
        ``workers_ready``, ``workers_desired``, ``milestones`` and the rest of REST's fields."""
        self._last = runtime().core.clusters.get(self.name)
        return self._last

    def _now(self) -> ClusterInfo | None:
        info = runtime().core.clusters.describe(self.name)
        if info is not None:
            self._last = info
        return info

    def _check(
        self,
        info: ClusterInfo | None,
        state: str,
        condition: Callable[[ClusterInfo], bool] | None = None,
    ) -> ClusterInfo | None:
        """``info`` if it reached ``state`` (and ``condition``); None to keep waiting; raise
        when it never will."""
        if info is None:
            raise ClusterFailed(f"Ray cluster {self.name!r} is gone", None, "It was deleted.", None)
        if info.state == state and (condition is None or condition(info)):
            return info
        if info.state == "stopped" and state != "stopped":
            # Never comes back by itself: a wait for ready would only time out.
            raise ClusterFailed(
                f"Ray cluster {self.name!r} is stopped",
                info.stopped.sentence() if info.stopped else info.reason,
                "Resume it (h.resume()) to queue it again.",
                info.state,
            )
        if info.state in GIVE_UP_STATES and state not in GIVE_UP_STATES:
            raise ClusterFailed(
                f"Ray cluster {self.name!r} is {info.state}",
                f"{info.reason}: {info.message}" if info.message else info.reason,
                "Kueue or KubeRay took it away; see the reason. Delete it and submit again, "
                "perhaps smaller (dw.fit shows what would start now).",
                info.state,
            )
        return None

    def _timeout(self, state: str, timeout: float) -> WaitTimeout:
        last = self._last
        return WaitTimeout(
            f"Ray cluster {self.name!r} was not {state} after {timeout:g}s",
            f"it is {last.state}: {last.reason or ''} {last.message or ''}".strip()
            if last
            else None,
            "Wait longer, or look at the queue with dw.queues().",
            last.state if last else None,
        )

    def wait(
        self,
        state: str = "ready",
        timeout: float = 600.0,
        progress: Callable[[ClusterInfo], None] | None = None,
        condition: Callable[[ClusterInfo], bool] | None = None,
    ) -> ClusterInfo:
        """Block until the cluster is in ``state`` and, if given, ``condition(info)`` holds
        (for scripts; in a notebook prefer ``await h.wait_async()``, which keeps widgets
        live). Woken by the watches; ``progress(info)`` is called on each change seen.

        Raises :class:`ClusterFailed` on evicted, preempted, failed, rejected or deleted, and
        :class:`WaitTimeout` after ``timeout`` seconds, with the last state and reason.
        """
        self.status()  # the caches this needs are open and synced
        shown: list[tuple[Any, ...]] = []

        def check() -> ClusterInfo | None:
            info = self._now()
            if progress is not None and info is not None:
                seen = (info.state, info.workers_ready, info.position_in_local_queue)
                if seen not in shown[-1:]:
                    shown.append(seen)
                    progress(info)
            return self._check(info, state, condition)

        return wait_until(check, lambda: self._timeout(state, timeout), timeout)

    async def wait_async(
        self,
        state: str = "ready",
        timeout: float = 600.0,
        condition: Callable[[ClusterInfo], bool] | None = None,
    ) -> ClusterInfo:
        """``await`` until the cluster is in ``state``, keeping the kernel (and its widgets)
        live meanwhile. Raises like :meth:`wait`."""
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(self.status)
        changed = asyncio.Event()

        def wake(*_: object) -> None:  # on a cache's thread: the event is the loop's
            loop.call_soon_threadsafe(changed.set)

        remove = runtime().add_listener(wake)
        deadline = loop.time() + timeout
        try:
            while True:
                changed.clear()
                done = self._check(await asyncio.to_thread(self._now), state, condition)
                if done is not None:
                    return done
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise self._timeout(state, timeout)
                try:
                    await asyncio.wait_for(changed.wait(), remaining)
                except asyncio.TimeoutError:
                    raise self._timeout(state, timeout) from None
        finally:
            remove()

    @property
    def dashboard_url(self) -> str | None:
        """The Ray dashboard through the Jupyter server's proxy (``{base_url}dw/ray/<name>/``;
        the kernel learns the base URL from ``JUPYTER_DW_BASE_URL`` or ``NB_PREFIX``). None
        when ``ray_dashboard_proxy`` is off: use ``kubectl port-forward
        svc/<name>-head-svc 8265`` instead."""
        return runtime().core.clusters.dashboard_url(self.name)

    @property
    def ray_address(self) -> str:
        """``ray://<head service>.<namespace>.svc:10001`` for ``ray.init(h.ray_address)``.

        Warns when this kernel's Ray or Python version differs from the cluster image's,
        which makes ``ray.init`` fail. Raises :class:`~jupyter_dw.core.errors.RunsOnWorker`
        for a cluster MultiKueue sent to a worker cluster: its head's address is that
        cluster's, unreachable here."""
        info = self._last or self.status()
        where = info.placement
        if where is not None and where.worker_cluster is not None:
            raise no_ray_client_on_worker(self.name, where.worker_cluster)
        image = runtime().core.clusters.image(self.name)
        for problem in version_mismatches(image, installed_ray(), sys.version_info[:2]):
            warnings.warn(problem, stacklevel=2)
        return info.ray_address

    # -- running work on the cluster ----------------------------------------------------------

    def ray_init(self, **kwargs: Any) -> Any:
        """``ray.init("ray://...")`` against this cluster (``kwargs`` go to ``ray.init``),
        after checking that this kernel's Ray and Python versions are the image's: a
        :class:`RayVersionMismatch` or :class:`RayNotInstalled` says what to install instead
        of Ray's traceback. The address is the ``ray_client_url`` template's, else the head
        Service's cluster DNS name.

        Ray Client takes no token argument: it reads ``RAY_AUTH_MODE=token`` and
        ``RAY_AUTH_TOKEN`` from the process environment and keeps the token for the whole
        process. So this sets both in this kernel's environment: **one cluster's token per
        kernel**, visible to ``!`` subprocesses and ``%env``. ``h.submit_job`` and ``h.jobs``
        need no such thing."""
        image = runtime().core.clusters.image(self.name)
        problems = version_mismatches(image, installed_ray(), sys.version_info[:2])
        return ray_init(self.name, image, problems, **kwargs)

    @property
    def jobs(self) -> Any:
        """Ray's own ``JobSubmissionClient`` for this cluster, authenticated with
        ``Authorization: Bearer`` (needs Ray in the kernel: ``pip install
        'jupyter-dw[ray]'``). :meth:`submit_job` needs no Ray."""
        return job_submission_client(self.name)

    def submit_job(
        self,
        entrypoint: str,
        *,
        runtime_env: Mapping[str, Any] | None = None,
        working_dir: str | None = None,
        metadata: Mapping[str, str] | None = None,
        submission_id: str | None = None,
    ) -> RayJobHandle:
        """Run ``entrypoint`` (a shell command, e.g. ``"python train.py --epochs 3"``) on
        the cluster as a Ray job, through Ray's Jobs REST API (no Ray needed in the kernel).
        ``working_dir``: a local directory (zipped and uploaded, as Ray's SDK does) or a
        remote URI; ``runtime_env`` and ``metadata`` as Ray takes them. Returns a
        :class:`RayJobHandle` (``.status()``, ``.logs()``, ``async for c in .tail()``,
        ``await .wait_async()``, ``.stop()``; displayed, a live ``dw.JobView``).

        Raises ``ClusterNotReady`` (the head is not up yet), ``RayTokenUnavailable`` or
        ``PermissionDenied`` (``get secrets``: the token), ``RayUnreachable``, or
        ``InvalidRequest``/``RayRejected`` (a bad field; nothing submitted)."""
        options = {
            "runtime_env": runtime_env,
            "working_dir": working_dir,
            "metadata": metadata,
            "submission_id": submission_id,
        }
        request = {"entrypoint": entrypoint, **{k: v for k, v in options.items() if v is not None}}
        return submit_job(self.name, request)

    def job(self, submission_id: str) -> RayJobHandle:
        """The handle of one of the cluster's Ray jobs."""
        return RayJobHandle(self.name, submission_id)

    def list_jobs(self) -> Any:
        """The cluster's Ray jobs (id, entrypoint, status, times), newest first."""
        return list_jobs(self.name)

    def scale(self, workers: int | None, *, dry_run: bool = False) -> ScaleResult:
        """Pin an elastic cluster at ``workers`` (None: give the size back to the Ray
        autoscaler, within ``min_workers``..``max_workers``).

        A scale-up is fitted first, in the flavor the cluster holds: the answer's ``fit``
        says whether it starts now or must wait ("6 workers: must wait ...; 5 would start
        now"), and Kueue queues the new slice either way (``dry_run=True`` only asks). A
        scale-down removes exactly the extra worker pods. Raises ``InvalidScale`` (outside
        the range, not a whole number) or ``NotElastic``, with nothing changed.
        """
        result = runtime().core.clusters.scale(self.name, workers, dry_run)
        self._last = result.cluster
        return result

    async def scale_async(self, workers: int | None, *, dry_run: bool = False) -> ScaleResult:
        """:meth:`scale` without blocking the kernel's event loop."""
        return await asyncio.to_thread(self.scale, workers, dry_run=dry_run)

    def stop(self) -> ClusterInfo:
        """Stop the cluster, keeping it: Kueue evicts its Workload (deactivated), KubeRay
        removes its pods and the quota is free for others; the RayCluster and its spec stay,
        with who stopped it and when (``status().stopped``). Raises ``WrongState`` (not
        admitted, already stopped) or ``PermissionDenied`` (``patch
        workloads.kueue.x-k8s.io``), with nothing changed."""
        self._last = runtime().core.clusters.stop(self.name)
        return self._last

    async def stop_async(self) -> ClusterInfo:
        """:meth:`stop` without blocking the kernel's event loop."""
        return await asyncio.to_thread(self.stop)

    def resume(self) -> ClusterInfo:
        """Queue a stopped cluster again: it waits like a new one (its position and Kueue's
        reason in ``status()``), then comes back at the size it had; ``wait()`` for it.
        Raises ``WrongState`` when it is not stopped, with nothing changed."""
        self._last = runtime().core.clusters.resume(self.name)
        return self._last

    async def resume_async(self) -> ClusterInfo:
        """:meth:`resume` without blocking the kernel's event loop."""
        return await asyncio.to_thread(self.resume)

    def delete(self) -> None:
        """Delete the cluster; its Workload, pods and Services follow."""
        rt = runtime()
        rt.core.clusters.delete(self.name)
        rt.forget_at_shutdown(self.name)

    def _repr_html_(self) -> str:
        from .display import cluster_html

        return cluster_html(self._last or self.status())


__all__ = [
    "ClusterFailed",
    "ClusterSpec",
    "DWError",
    "InvalidScale",
    "InvalidSpec",
    "KernelContext",
    "NameTaken",
    "NotElastic",
    "NotFound",
    "NotInstalled",
    "PermissionDenied",
    "RayClusterHandle",
    "RayJobHandle",
    "ScaleResult",
    "Unreachable",
    "WaitTimeout",
    "cluster",
    "clusters",
    "context",
    "fit",
    "queues",
    "submit",
]
