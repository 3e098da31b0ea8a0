"""The Python API (``import jupyter_dw as dw``): queues, fit, submit, follow and delete Ray
clusters from a kernel, with the same field names as the REST API.

Everything goes through the kernel's one core (:func:`jupyter_dw.notebook.runtime.runtime`):
the same validation, fit verdict, suggestion and state as the server extension, computed in
the kernel from its own watch caches. Waiting is driven by those watches, never by polling.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..core.clusters import ClusterInfo, FitResult, InvalidSpec, new_idempotency_key
from ..core.queues import QueueList
from ..core.scaling import InvalidScale, NotElastic, ScaleResult
from ..k8s.errors import (
    KubeConflict,
    KubeError,
    KubeForbidden,
    KubeNotFound,
    KubeUnreachable,
    NotInstalled,
)
from .runtime import runtime

# -- errors: one small hierarchy, each with ``error``, ``reason`` and ``hint`` ----------------

DWError = KubeError
"""Base of every jupyter_dw error (``error``, ``reason``, ``hint``, ``code``)."""
PermissionDenied = KubeForbidden
"""Kubernetes denied a permission; ``denied`` names the verb and resource."""
NotFound = KubeNotFound
NameTaken = KubeConflict
Unreachable = KubeUnreachable


class ClusterFailed(KubeError):
    """A cluster reached a state it will not recover from by waiting (evicted, preempted,
    failed, rejected by an admission check) or went away; ``state`` is its last state."""

    code = "cluster_failed"

    def __init__(self, error: str, reason: str | None, hint: str | None, state: str | None):
        super().__init__(error, reason, hint)
        self.state = state


class WaitTimeout(KubeError, TimeoutError):
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
    if spec is None:
        base: dict[str, Any] = {}
    elif isinstance(spec, ClusterSpec):
        base = spec.to_request()
    elif isinstance(spec, Mapping):
        base = dict(spec)
    else:
        raise InvalidSpec(
            "Invalid cluster spec",
            f"expected a dw.ClusterSpec or a dict, got {type(spec).__name__}",
            "Pass dw.ClusterSpec(name=..., workers=...).",
            {"request": "must be a ClusterSpec or a mapping of fields"},
        )
    return {**base, **{k: v for k, v in overrides.items() if v is not None}}


# -- answers ----------------------------------------------------------------------------------


def queues() -> QueueList:
    """The namespace's LocalQueues with quota and headroom (``.queues``, ``.default``)."""
    return runtime().core.queues.list()


def fit(spec: SpecLike | None = None, **fields: Any) -> FitResult:
    """Would this cluster fit its queue now? ``verdict`` (fits-now, must-wait, never-fits,
    unknown), ``message``, ``requests``, ``headroom``, ``ahead`` and ``suggestion`` (what would
    start now, or None). ``name`` may be omitted."""
    return runtime().core.clusters.fit(_request(spec, fields))


def submit(
    spec: SpecLike | None = None,
    *,
    delete_with_kernel: bool = False,
    idempotency_key: str | None = None,
    **fields: Any,
) -> RayClusterHandle:
    """Create the cluster through Kueue (suspended until admitted); return its handle.

    ``delete_with_kernel``: delete it when this kernel shuts down (quota is shared).
    ``idempotency_key``: the key of this submission (default: a fresh one per call); pass the
    one an ``Unreachable`` error names to retry safely: if the first try made the cluster,
    the retry answers with it instead of making a second one or raising ``NameTaken``.
    Raises :class:`InvalidSpec` (``errors`` per field; nothing created), ``NameTaken``,
    ``PermissionDenied``, ``NotInstalled`` or ``Unreachable`` (its ``idempotency_key`` is
    the one to retry with).
    """
    rt = runtime()
    key = idempotency_key or new_idempotency_key()
    try:
        info = rt.core.clusters.create(_request(spec, fields), key)
    except KubeUnreachable as err:  # the answer may be lost: say how to retry safely
        err.idempotency_key = key  # type: ignore[attr-defined]
        err.hint = f"{err.hint or ''} Retry with dw.submit(..., idempotency_key={key!r}).".strip()
        raise
    if delete_with_kernel:
        rt.delete_at_shutdown(info.status.name)
    return RayClusterHandle(info.status.name, _last=info)


def cluster(name: str) -> RayClusterHandle:
    """The handle of an existing cluster (``NotFound`` when there is none)."""
    info = runtime().core.clusters.get(name)
    return RayClusterHandle(info.status.name, _last=info)


def clusters() -> list[RayClusterHandle]:
    """Handles of every Ray cluster of the namespace."""
    return [RayClusterHandle(i.status.name, _last=i) for i in runtime().core.clusters.entries()]


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
        changed = threading.Event()
        remove = runtime().core.session.add_listener(lambda *_: changed.set())
        deadline = time.monotonic() + timeout
        shown: tuple[Any, ...] | None = None
        try:
            while True:
                changed.clear()
                info = self._now()
                if progress is not None and info is not None:
                    seen = (info.state, info.workers_ready, info.position_in_local_queue)
                    if seen != shown:
                        shown = seen
                        progress(info)
                done = self._check(info, state, condition)
                if done is not None:
                    return done
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not changed.wait(remaining):
                    raise self._timeout(state, timeout)
        finally:
            remove()

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
        remove = runtime().core.session.add_listener(
            lambda *_: loop.call_soon_threadsafe(changed.set)
        )
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
        which makes ``ray.init`` fail."""
        info = self._last or self.status()
        image = _image_of(runtime().core.session.cached_ray_cluster(self.name))
        for problem in version_mismatches(image, _installed_ray(), sys.version_info[:2]):
            warnings.warn(problem, stacklevel=2)
        return info.ray_address

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

    def delete(self) -> None:
        """Delete the cluster; its Workload, pods and Services follow."""
        rt = runtime()
        rt.core.clusters.delete(self.name)
        rt.forget_at_shutdown(self.name)

    def _repr_html_(self) -> str:
        from .display import cluster_html

        return cluster_html(self._last or self.status())


# -- versions -------------------------------------------------------------------------------

_IMAGE_TAG = re.compile(r"(?:^|[/:])ray(?:-ml|-llm)?:(\d+\.\d+\.\d+)(?:-py(\d)(\d+))?")


def version_mismatches(
    image: str | None, kernel_ray: str | None, kernel_python: tuple[int, int]
) -> list[str]:
    """Why ``ray.init`` from this kernel may fail against a cluster running ``image``: Ray
    Client needs the same Ray version and the same Python minor version on both sides."""
    if not image:
        return []
    match = _IMAGE_TAG.search(image)
    if match is None:
        return []
    problems = []
    ray_version, py_major, py_minor = match.groups()
    if kernel_ray is not None and kernel_ray != ray_version:
        problems.append(
            f"This kernel has Ray {kernel_ray}, the cluster runs Ray {ray_version} ({image}): "
            f"ray.init fails across versions; pip install 'ray[client]=={ray_version}'."
        )
    if py_major is not None:
        wanted = (int(py_major), int(py_minor))
        if wanted != kernel_python:
            problems.append(
                f"This kernel runs Python {kernel_python[0]}.{kernel_python[1]}, the cluster "
                f"image Python {wanted[0]}.{wanted[1]}: ray.init needs the same minor version."
            )
    return problems


def _installed_ray() -> str | None:
    try:
        return importlib.metadata.version("ray")
    except importlib.metadata.PackageNotFoundError:
        return None


def _image_of(raycluster: Mapping[str, Any] | None) -> str | None:
    try:
        spec = (raycluster or {})["spec"]["headGroupSpec"]["template"]["spec"]
        return str(spec["containers"][0]["image"])
    except (KeyError, IndexError, TypeError):
        return None


__all__ = [
    "ClusterFailed",
    "ClusterSpec",
    "DWError",
    "InvalidScale",
    "InvalidSpec",
    "NameTaken",
    "NotElastic",
    "NotFound",
    "NotInstalled",
    "PermissionDenied",
    "RayClusterHandle",
    "ScaleResult",
    "Unreachable",
    "WaitTimeout",
    "cluster",
    "clusters",
    "fit",
    "queues",
    "submit",
]
