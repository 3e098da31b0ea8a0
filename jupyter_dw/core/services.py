"""The core every surface shares: one session and the services that answer from it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from traitlets import TraitError

from ..domain.idle_rule import RULE_OFF, IdleRule
from ..domain.kinds import KINDS
from ..domain.usage import RayLoad
from ..k8s.session import KubeSession
from .clusters import ClusterService
from .context import SessionContext
from .elastic import ElasticSupport
from .feed import ChangeFeed
from .kind_service import KindService
from .positions import PositionBoard
from .queues import QueueService
from .ray_jobs import RayJobService
from .settings import DWSettings
from .usage import UsageService
from .workloads import WorkloadService

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DWCore:
    """One Kubernetes session with its queue, cluster, workload and Ray job services, and one
    service per workload kind (RayJobs, TrainJobs: :data:`~jupyter_dw.domain.kinds.KINDS`).

    The server builds one per process; so does a kernel (lazily, on first use). Nothing here
    knows HTTP, tornado or widgets: the surfaces turn these answers into JSON or views.
    """

    session: KubeSession
    queues: QueueService
    clusters: ClusterService
    jobs: RayJobService
    """Ray's own jobs on a running cluster (its head's Jobs API)."""
    workloads: WorkloadService
    kinds: tuple[KindService[Any, Any], ...]
    """One service per workload kind, in :data:`~jupyter_dw.domain.kinds.KINDS`' order."""
    positions: PositionBoard
    """Kueue's queue positions, shared by every service and live view of this core."""

    @classmethod
    def from_settings(
        cls, settings: DWSettings, dashboard_base: str, *, lazy_watches: bool = False
    ) -> DWCore:
        """A core for ``settings``; ``dashboard_base`` is the public path of the dashboard
        proxy (``{base_url}dw/ray``; unused when ``ray_dashboard_proxy`` is off: clusters then
        have no ``dashboard_url``). The session is created, not started; with
        ``lazy_watches`` it opens each watch on first use (a kernel), else all at start."""
        session = KubeSession(**settings.session_options(), lazy_watches=lazy_watches)
        # Before any other listener: a change is marked before a live view reads positions.
        positions = PositionBoard(session)
        proxied = dashboard_base if settings.ray_dashboard_proxy else None
        elastic = ElasticSupport(session, settings.elastic_jobs)
        jobs: RayJobService | None = None
        usage = (
            UsageService(
                session,
                # Late-bound: the Ray job service needs the cluster service made below.
                lambda name: jobs.load(name) if jobs is not None else RayLoad(),
                settings.usage_interval,
                Decimal(str(settings.idle_cpu_fraction)),
            )
            if settings.usage_interval > 0
            else None
        )
        clusters = ClusterService(
            session,
            settings.spec_policy(),
            proxied,
            elastic,
            settings.config_errors,
            positions,
            usage,
            _idle_rule(settings),
            settings.multikueue_dashboard_url,
            settings.ray_dashboard_port,
        )
        if usage is not None and clusters.idle_rule.on:
            usage.verdict_key = clusters.idle_verdict_key
        jobs = RayJobService(
            session,
            clusters,
            settings.ray_dashboard_url,
            settings.ray_dashboard_port,
            settings.ray_client_url,
            settings.request_timeout,
        )
        workloads = WorkloadService(session, positions)
        session.add_listener(workloads.forget_deleted)
        return cls(
            session=session,
            queues=QueueService(session),
            clusters=clusters,
            jobs=jobs,
            workloads=workloads,
            kinds=tuple(KindService(session, clusters, kind) for kind in KINDS),
            positions=positions,
        )

    def kind(self, plural: str) -> KindService[Any, Any]:
        """The service of the workload kind whose plural is ``plural`` (``"rayjobs"``)."""
        for service in self.kinds:
            if service.kind.plural == plural:
                return service
        raise KeyError(f"no workload kind {plural!r}")

    def change_feed(self) -> ChangeFeed:
        """A new change feed over this core (one per viewer: a socket, a kernel)."""
        return ChangeFeed(self.session, self.queues, self.clusters, self.workloads, jobs=self.kinds)

    def context(self, timeout: float | None = None) -> SessionContext:
        """Identity, installed APIs, permissions and the cluster policy (waits for the
        session's start)."""
        return SessionContext.of(self.session, timeout, self.clusters.elastic, self.clusters.policy)


def _idle_rule(settings: DWSettings) -> IdleRule:
    """The configured idle rule; one that cannot work is refused, named in the log, and
    left off: a rule that deletes or stops must never run half-configured (fail closed)."""
    try:
        return settings.idle_rule()
    except TraitError as err:
        log.error("jupyter_dw: the idle rule is off: %s", err)
        return RULE_OFF
