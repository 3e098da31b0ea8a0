"""Sampling what the namespace's Ray clusters and jobs use, for every surface and the idle rule.
The metrics API at most once per ``period``, Ray only for clusters someone follows, nothing
while nobody looks. Blocking; it samples on a daemon thread. Costs:
docs/explanation/architecture.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from ..domain.cluster_state import head_ready
from ..domain.usage import (
    CLUSTER,
    ClusterUsage,
    PodUsage,
    RayLoad,
    Subject,
    cluster_pods,
    cluster_usage,
    holding_pods,
    pod_usages,
)
from ..k8s.cache_set import POD_KINDS
from ..k8s.listeners import Listeners
from ..k8s.metrics import MetricsRead
from ..k8s.session import KubeSession
from .errors import DWError

log = logging.getLogger(__name__)

DEFAULT_PERIOD = 15.0
"""Seconds between two reads: metrics-server's default resolution (``--metric-resolution``)."""

LASTING_RETRY = 300.0
"""Seconds before the metrics API is asked again after an answer that will not change soon
(not served, not allowed): a namespace without it is not asked every period."""

RayLoader = Callable[[str], RayLoad]
"""``load(cluster)``: what its Ray says of its load (raises a ``DWError``)."""

_POD_KINDS = {kind.word: kind for kind, _ in POD_KINDS}
"""A :data:`~jupyter_dw.domain.usage.Subject`'s kind other than :data:`CLUSTER`: the workload
kind whose ``word`` it is."""


@dataclass
class _Sample:
    at: float
    """``time.monotonic()`` when it was read."""
    metrics: MetricsRead
    usages: dict[str, PodUsage] | None
    ray: dict[str, RayLoad | str] = field(default_factory=dict)
    """Per cluster asked: its load, or why Ray could not tell."""


class UsageService:
    """Samples usage for every surface and the idle rule (see the module docstring). Thread-safe."""

    def __init__(
        self,
        session: KubeSession,
        ray_load: RayLoader | None = None,
        period: float = DEFAULT_PERIOD,
        idle_cpu_fraction: Decimal = Decimal("0.05"),
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
    ) -> None:
        self.session = session
        self.ray_load = ray_load
        self.period = period
        self.idle_cpu_fraction = idle_cpu_fraction
        self.clock = clock
        self.background = background
        """Sample on a thread of its own while followed (False: the caller calls
        :meth:`sample`, as tests do)."""
        self.reads = 0
        """Metrics API calls made (benchmarks and tests count them)."""
        self.samples = 0
        """Samples taken (a sample reuses an answer that will not change soon)."""
        self.ray_calls = 0
        """Ray load reads made (each is three calls to the head)."""
        self._lock = threading.Lock()
        self._sample: _Sample | None = None
        self._followers: dict[int, Callable[[], Iterable[str]] | None] = {}
        self._next_id = 0
        self._listeners: Listeners[Callable[[set[Subject]], None]] = Listeners()
        self._idle_since: dict[Subject, str] = {}
        self._last: dict[Subject, tuple[Any, ...]] = {}
        self._lasting_since: float | None = None
        self.verdict_key: Callable[[str], Any] | None = None
        """What of an idle cluster's idle-rule verdict, if any, a surface shows (set by the
        core when the rule is on): each sample compares it too."""
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._local = threading.local()
        """``sampling``: this thread is asking Ray for a sample (see :meth:`usage`)."""

    # -- who wants it ------------------------------------------------------------------------

    def follow(
        self, clusters: Iterable[str] | Callable[[], Iterable[str]] | None = None
    ) -> Callable[[], None]:
        """Keep sampling while the returned remover is not called. ``clusters``: those whose
        Ray to ask, or a function that names them at each sample (the idle rule's: the
        owner's clusters); None: every cluster of the namespace, as a socket showing all
        does."""
        with self._lock:
            key = self._next_id
            self._next_id += 1
            if clusters is None or callable(clusters):
                self._followers[key] = clusters
            else:
                named = frozenset(clusters)
                self._followers[key] = lambda: named
            if self.background and (self._thread is None or not self._thread.is_alive()):
                self._wake.clear()
                self._thread = threading.Thread(
                    target=self._run, name="jupyter-dw-usage", daemon=True
                )
                self._thread.start()

        def unfollow() -> None:
            with self._lock:
                self._followers.pop(key, None)
                last = not self._followers
            if last:
                self._wake.set()  # the sampler ends now rather than after its wait

        return unfollow

    def add_listener(self, listener: Callable[[set[Subject]], None]) -> Callable[[], None]:
        """``listener(subjects)`` after each sample, with the clusters and jobs whose usage
        changed as a reader sees it."""
        return self._listeners.add(listener)

    @property
    def following(self) -> int:
        with self._lock:
            return len(self._followers)

    # -- answers ------------------------------------------------------------------------------

    def usage(self, name: str, ask: bool = True, kind: str = CLUSTER) -> ClusterUsage:
        """Cluster ``name``'s usage from the sample held (with ``kind`` a job kind's ``word``,
        job ``name``'s: its pods' summed, no Ray to ask). With ``ask`` (a REST read), the
        metrics API is read first when the sample is older than one period (one call per
        period at most, whoever asks); Ray's part is only ever the followers' sampling: a read never
        waits on a head. A read made while this thread asks Ray for a sample (the Ray loader
        looking its cluster up) never asks: the sample under way reads the metrics API once."""
        asking = ask and not getattr(self._local, "sampling", False)
        return self._usage_of((kind, name), self._current(asking))

    def idle_since(self, name: str, kind: str = CLUSTER) -> str | None:
        """When the samples first found cluster (or, ``kind`` a job kind's ``word``, job)
        ``name`` idle since it was last busy (RFC 3339)."""
        with self._lock:
            return self._idle_since.get((kind, name))

    # -- sampling -----------------------------------------------------------------------------

    def _current(self, ask: bool) -> _Sample | None:
        with self._lock:
            sample = self._sample
            fresh = sample is not None and self.clock() - sample.at < self.period
        if fresh or not ask:
            return sample
        return self.sample(ask_ray=False)

    def sample(self, ask_ray: bool = True) -> _Sample:
        """Read the metrics API once and (``ask_ray``) ask Ray for the clusters followed;
        tell the listeners which clusters' usage changed. Without ``ask_ray`` the Ray part
        of the sample before is kept while someone follows (it is at most a period old)."""
        called = False
        metrics = self._lasting_answer()
        if metrics is None and not self._pods_on_nodes():
            # Nothing to measure (no Ray cluster has a pod on a node: none yet, all queued or
            # stopped): no call. A namespace of waiting clusters costs the API server nothing.
            metrics = MetricsRead([], None)
        if metrics is None:
            try:
                called = True
                metrics = self.session.pod_metrics()
            except DWError as err:  # not connected yet, say
                metrics = MetricsRead(None, f"the metrics API could not be read: {err}")
        usages = pod_usages(metrics.items) if metrics.items is not None else None
        sample = _Sample(self.clock(), metrics, usages)
        if ask_ray:
            self._local.sampling = True
            try:
                for name in self._ray_targets():
                    sample.ray[name] = self._ask_ray(name)
            finally:
                self._local.sampling = False
        else:
            with self._lock:
                if self._followers and self._sample is not None:
                    sample.ray = dict(self._sample.ray)
        with self._lock:
            self.samples += 1
            if called:
                self.reads += 1
                self._lasting_since = sample.at if metrics.lasting else None
            self._sample = sample
        changed = self._record(sample)
        if changed:
            for listener in self._listeners.now():
                try:
                    listener(changed)
                except Exception:  # one listener's failure must not stop the others
                    log.exception("jupyter_dw usage listener failed")
        return sample

    def _pods_on_nodes(self) -> bool:
        """Whether any of the namespace's Ray clusters or jobs has a pod bound to a node (the
        caches)."""
        return any(self._pods(subject) for subject in self._subjects())

    def _subjects(self) -> list[Subject]:
        """The namespace's Ray clusters and the jobs of each kind whose pods are their own, as
        the caches hold them now."""
        return [
            *((CLUSTER, _name(rc)) for rc in self.session.cached_ray_clusters()),
            *(
                (kind.word, _name(job))
                for kind, resource in POD_KINDS
                for job in self.session.cached_jobs(resource)
            ),
        ]

    def _pods(self, subject: Subject) -> list[Any]:
        """The pods of ``subject`` that hold a node now: a cluster's (KubeRay's label), or a
        job's own (its kind's ``pod_label``)."""
        from .cluster_objects import job_pods, ray_pods

        kind, name = subject
        if kind == CLUSTER:
            return cluster_pods(ray_pods(self.session, name), name)
        job_kind = _POD_KINDS.get(kind)
        return holding_pods(job_pods(self.session, job_kind, name)) if job_kind else []

    def _lasting_answer(self) -> MetricsRead | None:
        """The last answer again, without a call, while it is one that asking again soon
        will not change (the API not served): asked again every :data:`LASTING_RETRY`."""
        with self._lock:
            sample, since = self._sample, self._lasting_since
        if sample is None or not sample.metrics.lasting or since is None:
            return None
        return sample.metrics if self.clock() - since < LASTING_RETRY else None

    def _ray_targets(self) -> list[str]:
        if self.ray_load is None:
            return []
        with self._lock:
            wanted = list(self._followers.values())
        names = {_name(rc) for rc in self.session.cached_ray_clusters()}
        chosen: set[str] = set()
        for followed in wanted:
            chosen |= names if followed is None else (set(followed()) & names)
        return sorted(n for n in chosen if self._head_ready(n))

    def _head_ready(self, name: str) -> bool:
        """KubeRay says the head is ready (only then is it asked), as the cache holds it."""
        raycluster = self.session.cached_ray_cluster(name)
        return raycluster is not None and head_ready(raycluster)

    def _ask_ray(self, name: str) -> RayLoad | str:
        assert self.ray_load is not None
        with self._lock:
            self.ray_calls += 1
        try:
            return self.ray_load(name)
        except DWError as err:
            return f"Ray on {name} could not be asked: {err}"

    def _usage_of(self, subject: Subject, sample: _Sample | None) -> ClusterUsage:
        pods = self._pods(subject)
        if sample is None:
            return cluster_usage(
                pods, None, "not read yet", idle_cpu_fraction=self.idle_cpu_fraction
            )
        kind, name = subject
        ray = sample.ray.get(name) if kind == CLUSTER else None  # only a cluster has a Ray
        return cluster_usage(
            pods,
            sample.usages,
            sample.metrics.reason,
            ray=ray if isinstance(ray, RayLoad) else None,
            ray_reason=ray if isinstance(ray, str) else None,
            idle_cpu_fraction=self.idle_cpu_fraction,
        )

    def _record(self, sample: _Sample) -> set[Subject]:
        """Idle clocks, and whose usage changed with ``sample`` as a reader sees it."""
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        changed: set[Subject] = set()
        subjects = self._subjects()
        for subject in subjects:
            kind, name = subject
            usage = self._usage_of(subject, sample)
            with self._lock:
                if usage.idle:
                    self._idle_since.setdefault(subject, now)
                else:
                    self._idle_since.pop(subject, None)
            shown = usage.shown()
            if kind == CLUSTER and usage.idle and self.verdict_key is not None:
                # The rule's verdict moves with time and with the queues (a warning due, a
                # workload that came to wait): a change of it is a change to tell.
                shown = (*shown, self.verdict_key(name))
            with self._lock:
                if self._last.get(subject) != shown:
                    self._last[subject] = shown
                    changed.add(subject)
        with self._lock:
            for gone in set(self._last) - set(subjects):
                self._last.pop(gone, None)
                self._idle_since.pop(gone, None)
        return changed

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._followers:
                    self._thread = None
                    return
            try:
                self.sample()
            except Exception:  # a failed sample must not end the sampling
                log.exception("jupyter_dw usage sample failed")
            self._wake.wait(self.period)
            self._wake.clear()


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
