"""Ray clusters as every surface shows them: validated, fitted, created, listed, stopped, deleted.
:class:`ClusterService` joins the domain with the session: no state of its own, typed results,
every method blocks. What a request costs: docs/explanation/architecture.md.
"""

from __future__ import annotations

import builtins  # in ClusterService, `list` is its method: the type is `builtins.list`
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from ..domain.cluster_spec import (
    MAX_NAME_LENGTH,
    REQUEST_ERROR_KEY,
    SpecError,
    SpecPolicy,
    ValidatedClusterSpec,
    ray_cluster_name_error,
)
from ..domain.cluster_state import ClusterSnapshot, cluster_snapshot
from ..domain.fit import FITS_NOW, FitVerdict, PodSetRequest, assess_fit, pod_sets_for_spec
from ..domain.fit_suggestion import Suggestion, suggest_workers
from ..domain.freshness import WatchHealth
from ..domain.idempotency import check_idempotency_key, new_idempotency_key
from ..domain.idle_rule import RULE_OFF, IdleRule, IdleVerdict, judge, waiting_near
from ..domain.kinds.rayjob import owning_rayjob
from ..domain.kueue_model import ClusterQueueQuota, LocalQueueInfo, default_local_queue
from ..domain.lenient import conditions, is_true
from ..domain.milestones import milestones
from ..domain.multikueue import (
    Dispatcher,
    Placement,
    dispatcher_among,
    fit_note,
    placement,
    unreachable_dashboard,
    worker_dashboard,
)
from ..domain.priorities import (
    Ahead,
    PriorityClass,
    ahead_by_count,
    ahead_in_cluster_queue,
    ahead_in_local_queue,
    priority_value,
)
from ..domain.quota import QuotaTree, format_amount
from ..domain.ray_auth import Refusal, kuberay_refusal, ray_auth_of
from ..domain.ray_endpoints import head_image
from ..domain.scheduling import FlavorTraits
from ..domain.slices import slice_chain
from ..domain.usage import ClusterUsage
from ..domain.workloads import created_by
from ..k8s.resources import POD, RAY_CLUSTER, WORKLOAD
from ..k8s.session import KubeSession
from ..names import (
    DASHBOARD_PORT,
    IDEMPOTENCY_KEY_ANNOTATION,
    RAY_NODE_TYPE_LABEL,
)
from .cluster_objects import kuberay_warnings, ray_cluster_by_uid, ray_pods, slices_of
from .cluster_results import (
    FIT_NAME,
    ClusterInfo,
    ClusterList,
    Deleted,
    FitResult,
    PodInfo,
    ScaleResult,
)
from .elastic import ElasticSupport
from .errors import (
    DWError,
    InvalidName,
    InvalidSpec,
    KubeForbidden,
    KubeRejected,
    KubeUnreachable,
    RunsOnWorker,
)
from .positions import PositionBoard
from .queue_state import QueueState, queue_state
from .settings import refuse_writes
from .usage import UsageService

Object = dict[str, Any]
Snapshot = tuple[Object, list[Object], ClusterSnapshot]
"""A RayCluster, its Workloads (slices) and its status."""

CLUSTER_SOURCES = (RAY_CLUSTER.plural, WORKLOAD.plural, POD.plural)
"""The caches a cluster's state is read from."""


def check_cluster_name(name: str) -> str:
    """``name`` if it can be a RayCluster's name, else :class:`InvalidName`."""
    problem = ray_cluster_name_error(name) if isinstance(name, str) else "must be a string"
    if problem is not None:
        raise InvalidName(
            "Invalid RayCluster name",
            problem,
            f"RayCluster names are DNS-1035 labels of at most {MAX_NAME_LENGTH} characters.",
            {"name": problem},
        )
    return name


@dataclass(frozen=True)
class ClusterService:
    """The namespace's Ray clusters for one session: ``policy`` holds the configured defaults
    and limits, ``dashboard_base`` is the public path of the dashboard proxy
    (``{base_url}dw/ray``), None when the proxy is turned off."""

    session: KubeSession
    policy: SpecPolicy
    dashboard_base: str | None = "/dw/ray"
    elastic: ElasticSupport = None  # type: ignore[assignment]  # made from session when None
    """Whether Kueue admits elastic clusters and counts the autoscaler sidecar."""
    config_errors: tuple[str, ...] = ()
    """Configuration files that could not be read: creates and scales are refused."""
    positions: PositionBoard = None  # type: ignore[assignment]  # made from session when None
    """The session's queue positions (one board shared by every service of a core)."""
    usage: UsageService | None = None
    """What the clusters use (None: usage turned off)."""
    idle_rule: IdleRule = RULE_OFF
    """The administrator's idle rule (off by default): its verdict is shown on every surface
    for the clusters it would touch; the server acts on it (:mod:`.idle_rule`)."""
    worker_dashboard: str = ""
    """``JupyterDW.multikueue_dashboard_url``: where the dashboards of clusters MultiKueue
    sent to a worker cluster are (empty: not reachable from here)."""
    dashboard_port: int = DASHBOARD_PORT
    """The ``{port}`` of the dashboard templates (``JupyterDW.ray_dashboard_port``)."""

    def __post_init__(self) -> None:
        if self.elastic is None:
            object.__setattr__(self, "elastic", ElasticSupport(self.session))
        if self.positions is None and self.session is not None:
            object.__setattr__(self, "positions", PositionBoard(self.session))

    # -- answers -------------------------------------------------------------------------

    def fit(self, data: Any, ask_positions: bool = True) -> FitResult:
        """Would this spec fit its queue now? ``name`` may be omitted here.

        ``ask_positions`` False answers from the caches alone (no visibility API call: the
        workloads ahead are the ClusterQueue's pending count, an upper bound), for a form
        judged as it is typed in. See :meth:`ahead` for what counts as ahead."""
        require_mapping(data)
        request = dict(data)
        named = request.get("name") is not None
        if not named:
            request["name"] = FIT_NAME
        state = queue_state(self.session, naming=requested_queue(data))
        queues = {lq.name: lq for lq in state.local_queues}
        choice = default_local_queue(state.local_queues, self.session.namespace)
        spec = self.validate_spec(
            request, queues, choice.queue.name if choice else None, priority_names(state)
        )
        scene = self.fit_scene(state, spec.queue, spec.priority, ask_positions)
        counted = self.elastic.autoscaler_quota().counted
        verdict = scene.assess(pod_sets_for_spec(spec, sidecar_counted=counted))
        if spec.autoscaling:
            verdict = replace(verdict, message=f"{verdict.message} {_sidecar_note(spec, counted)}")
        suggestion = scene.suggest(
            verdict,
            spec.workers,
            lambda n: pod_sets_for_spec(spec.with_workers(n), sidecar_counted=counted),
        )
        omitted_queue = not (isinstance(data.get("queue"), str) and data["queue"].strip())
        return FitResult(
            assessment=verdict,
            spec=spec,
            named=named,
            default_queue=choice.reason if choice and omitted_queue else None,
            suggestion=suggestion,
        )

    def fit_scene(
        self, state: QueueState, queue: str, priority: str | None, ask_positions: bool = True
    ) -> FitScene:
        """What a new workload of ``priority`` in LocalQueue ``queue`` (known to exist) is
        judged against: its ClusterQueue in the quota tree, the flavors and what is ahead. The
        one place every kind of workload (RayCluster, RayJob) is fitted from."""
        local_queue = next(lq for lq in state.local_queues if lq.name == queue)
        tree = state.quota_tree
        cluster_queue = tree.cluster_queue(local_queue.cluster_queue) if tree else None
        value = priority_value(priority, state.priority_classes)
        ahead = self.ahead(local_queue, cluster_queue, value, ask_positions)
        checks = [r.name for r in cluster_queue.admission_checks] if cluster_queue else []
        dispatcher = dispatcher_among(checks, state.dispatchers)
        return FitScene(local_queue, cluster_queue, tree, ahead, state.flavors, dispatcher)

    def list(self) -> ClusterList:
        """Every RayCluster of the namespace, sorted by name."""
        clusters = tuple(self.entries())  # waits for the session first
        return ClusterList(self.session.namespace, self.session.positions_visible, clusters)

    def entries(self, *, fresh: bool = True) -> builtins.list[ClusterInfo]:
        """Every RayCluster of the namespace, sorted by name; a RayJob's own cluster is shown
        under its RayJob (``GET rayjobs``), not here."""
        own = [rc for rc in self.session.ray_clusters() if owning_rayjob(rc) is None]
        return self.infos(self.snapshots(own, fresh))

    def raycluster(self, name: str) -> dict[str, Any] | None:
        """RayCluster ``name`` as Kubernetes holds it, None when there is none: what the
        dashboard proxy reaches (it needs only ``get rayclusters``, no list or watch)."""
        found = self.session.find_ray_cluster(check_cluster_name(name))
        return dict(found) if found is not None else None

    def published_sizes(self) -> dict[str, dict[str, int | str | None]]:
        """The defaults and limits of new clusters' sizes, as a form shows them
        (:meth:`SpecPolicy.published_sizes`)."""
        return self.policy.published_sizes()

    def image(self, name: str) -> str | None:
        """The image of cluster ``name``'s Ray head (None when it has none or is not cached):
        what a kernel's Ray must match to use Ray Client."""
        return head_image(self.session.cached_ray_cluster(check_cluster_name(name)))

    def get(self, name: str) -> ClusterInfo:
        """Cluster ``name`` (``KubeNotFound`` when there is none)."""
        raycluster = self.session.ray_cluster(check_cluster_name(name))
        [info] = self.infos(self.snapshots([raycluster], fresh=True))
        return info

    def create(self, data: Any, idempotency_key: str | None = None) -> ClusterInfo:
        """Validate, dry-run and create a cluster.

        ``idempotency_key`` identifies one user action (a click) across its retries: it is
        stored on the RayCluster (annotation ``jupyter-dw/idempotency-key``), and a create
        whose name is taken by a cluster with the same key answers with that cluster instead
        of 409, so a retry after a lost answer never makes a second cluster. None: a key is
        made for this call (its own recovery from a lost answer is still safe).

        Raises :class:`InvalidSpec` (nothing sent to Kubernetes), :class:`InvalidRequest` (a
        malformed key), ``KubeRejected`` (the dry run refused it: nothing created),
        ``KubeConflict`` (the name is taken by another request), ``KubeForbidden`` (``create
        rayclusters.ray.io`` missing), ``WebhookUnavailable`` (Kueue's webhook is down: nothing
        created) or ``KubeUnreachable``/``KubeTimeout`` (the answer was lost: retry with the
        same key).
        """
        refuse_writes(self.config_errors)
        key = check_idempotency_key(idempotency_key) or new_idempotency_key()
        require_mapping(data)
        self.session.wait_ready()
        namespace = self.session.namespace
        try:
            state = queue_state(self.session, naming=requested_queue(data), default=True)
        except KubeForbidden:
            # LocalQueues unreadable: the queue cannot be checked here, Kueue will judge it.
            known, default, priorities = None, None, None
        else:
            known = {lq.name: lq for lq in state.local_queues}
            choice = default_local_queue(state.local_queues, namespace)
            default = choice.queue.name if choice else None
            priorities = priority_names(state)
        spec = self.validate_spec(data, known, default, priorities)
        # Unknown (no OpenAPI v3 document): sent; a KubeRay without it prunes the field and
        # the cluster then reads as ray_auth "none", with its warning.
        served = self.session.discovery.ray_auth_options is not False
        obj = spec.to_raycluster(
            namespace, owner=self.session.identity.username, auth_options_served=served
        )
        obj["metadata"].setdefault("annotations", {})[IDEMPOTENCY_KEY_ANNOTATION] = key
        # Read before the create: the answer shows the cluster as the create left it.
        dispatching = self.dispatching()
        try:
            created = self.session.create_raycluster(obj)
        except KubeRejected as err:
            if not err.errors:
                err.errors = {REQUEST_ERROR_KEY: err.reason or err.error}
            raise
        current = self.session.cached_ray_cluster(spec.name) or created
        # Just created: no positions to ask for yet.
        [info] = self.infos([self._snapshot_of(current, None, dispatching)])
        return info

    def delete(self, name: str) -> Deleted:
        """Delete a cluster (``KubeNotFound`` when absent); its Workload, pods and Services
        follow in the background."""
        self.session.delete_raycluster(check_cluster_name(name))
        return Deleted(name, self.session.namespace)

    def scale(self, name: str, workers: Any, dry_run: bool = False) -> ScaleResult:
        """Pin elastic cluster ``name`` at ``workers`` (None: give the size back to the Ray
        autoscaler), after fitting a scale-up; see :mod:`jupyter_dw.core.scaling`."""
        from .scaling import scale_cluster

        if not dry_run:
            refuse_writes(self.config_errors)
        return scale_cluster(self, name, workers, dry_run)

    def stop(self, name: str, reason: dict[str, Any] | None = None) -> ClusterInfo:
        """Stop admitted cluster ``name``, keeping its RayCluster (its Workload deactivated:
        the quota is freed, the pods go); see :mod:`jupyter_dw.core.stopping`."""
        from .stopping import stop_cluster

        return stop_cluster(self, name, reason)

    def resume(self, name: str) -> ClusterInfo:
        """Resume stopped cluster ``name``: Kueue queues it again, at the same size."""
        from .stopping import resume_cluster

        return resume_cluster(self, name)

    def describe(self, name: str) -> ClusterInfo | None:
        """The cached RayCluster ``name``, None if the cache does not hold it. Only the cache
        is read, plus one visibility call for a waiting cluster. For the change feed."""
        return self.describe_many([name]).get(name)

    def describe_many(self, names: Iterable[str]) -> dict[str, ClusterInfo]:
        """:meth:`describe` for several cached clusters at once (those the cache does not hold
        are left out), with the positions the board holds: the visibility API is asked again
        only for a LocalQueue whose pending list a change marked."""
        found = [
            rc
            for name in names
            if (rc := self.session.cached_ray_cluster(name)) and owning_rayjob(rc) is None
        ]
        return {info.snapshot.name: info for info in self.infos(self.snapshots(found))}

    def dashboard_url(self, name: str) -> str | None:
        """``{base_url}dw/ray/<name>/``: the Ray dashboard through the Jupyter server; None
        when the proxy is turned off (``ray_dashboard_proxy``), or the cached cluster runs on
        a MultiKueue worker whose dashboards are not reachable from here (no
        ``worker_dashboard``: its record's ``dashboard_note`` says so)."""
        url = self._proxy_url(name)
        if url is None or self.worker_dashboard or self.session is None:
            return url
        raycluster = self.session.cached_ray_cluster(name)
        where = self.placement_of(raycluster) if raycluster is not None else None
        return None if where is not None and where.dispatched else url

    def _proxy_url(self, name: str) -> str | None:
        if self.dashboard_base is None:
            return None
        return f"{self.dashboard_base.rstrip('/')}/{quote(name, safe='')}/"

    # -- MultiKueue: clusters that run on a worker cluster -------------------------------

    def dispatching(self) -> frozenset[str] | None:
        """The AdmissionChecks MultiKueue runs, when this identity may read them (None: not
        readable, or the queues cannot be read at all: each Workload tells on its own)."""
        try:
            return queue_state(self.session).dispatching
        except DWError:
            return None

    def placement_of(self, raycluster: Object) -> Placement | None:
        """Where MultiKueue sent ``raycluster`` (from its Workload in the cache), if it did."""
        current = slice_chain(slices_of(self.session, raycluster)).current
        return placement(current, self.dispatching()) if current is not None else None

    def worker_dashboard_base(self, raycluster: Object) -> str | None:
        """The dashboard root of a cluster that runs on a MultiKueue worker, from
        ``worker_dashboard``; None for a cluster that runs here. Raises :class:`RunsOnWorker`
        when it runs on a worker and no address of the worker's dashboards is configured."""
        where = self.placement_of(raycluster)
        if where is None or where.worker_cluster is None:
            return None
        name = str((raycluster.get("metadata") or {}).get("name") or "")
        if not self.worker_dashboard:
            raise RunsOnWorker(
                f"Ray cluster {name} runs on worker cluster {where.worker_cluster}",
                unreachable_dashboard(where),
                "Use its dashboard and jobs from the worker cluster, or ask an administrator "
                "to set JupyterDW.multikueue_dashboard_url.",
            )
        return worker_dashboard(
            self.worker_dashboard,
            self.dashboard_port,
            where.worker_cluster,
            name,
            self.session.namespace,
        )

    # -- the seam the scaling module shares (a cluster's status, what is ahead) ----------

    def infos(self, statuses: Iterable[Snapshot]) -> builtins.list[ClusterInfo]:
        """:class:`ClusterInfo` of each ``(raycluster, slices, status)``, the watches'
        health read once for all of them."""
        health = self.session.watch_health()
        return [self._info(rc, slices, status, health) for rc, slices, status in statuses]

    def _info(
        self,
        raycluster: Object,
        slices: builtins.list[Object],
        status: ClusterSnapshot,
        health: WatchHealth,
    ) -> ClusterInfo:
        pods = ray_pods(self.session, status.name)
        status = self._name_preemptor(status)
        where = status.placement if status.placement and status.placement.dispatched else None
        if where is not None:
            return self._info_on_worker(raycluster, slices, status, health, where)
        idle_since = self.usage.idle_since(status.name) if self.usage is not None else None
        return ClusterInfo(
            snapshot=status,
            dashboard_url=self._proxy_url(status.name),
            owner=created_by(raycluster),
            pods=tuple(_pod_info(pod) for pod in pods),
            milestones=milestones(status, raycluster, None, pods, slices=slices),
            freshness=health.of_cluster(CLUSTER_SOURCES, follows_workload=bool(slices)),
            ray_auth=ray_auth_of(raycluster),
            # A live view never waits for the metrics API: it answers from the last sample.
            usage=(
                self.usage.usage(status.name, ask=not self.positions.answering_held_only)
                if self.usage is not None
                else None
            ),
            idle_since=idle_since,
            idle_verdict=self._idle_verdict(raycluster, status, idle_since),
        )

    def _info_on_worker(
        self,
        raycluster: Object,
        slices: builtins.list[Object],
        status: ClusterSnapshot,
        health: WatchHealth,
        where: Placement,
    ) -> ClusterInfo:
        """A cluster MultiKueue sent to a worker cluster: its state and worker counts are the
        worker's (copied back to the RayCluster), its pods are there, not here; its dashboard
        only where the administrator said how to reach the worker's, and what it uses is
        measured there (never sampled here: no pods, no head to ask)."""
        reachable = bool(self.worker_dashboard) and self.dashboard_base is not None
        on_worker = f"runs on worker cluster {where.worker_cluster}"
        return ClusterInfo(
            snapshot=status,
            dashboard_url=self._proxy_url(status.name) if reachable else None,
            owner=created_by(raycluster),
            pods=(),
            milestones=milestones(status, raycluster, None, (), slices=slices),
            freshness=health.of_cluster(CLUSTER_SOURCES, follows_workload=bool(slices)),
            ray_auth=ray_auth_of(raycluster),
            usage=(
                ClusterUsage(metrics_reason=f"{on_worker}: its pods' use is measured there")
                if self.usage is not None
                else None
            ),
            dashboard_note=None if reachable else unreachable_dashboard(where),
        )

    def _idle_verdict(
        self, raycluster: Object, status: ClusterSnapshot, idle_since: str | None
    ) -> IdleVerdict | None:
        """The idle rule's verdict on a cluster it may touch: one this workbench's owner
        made, admitted and idle (None otherwise, or with the rule off)."""
        if not self.idle_rule.on or idle_since is None or not status.admitted:
            return None
        if status.state in ("stopped", "deleting") or not self.is_mine(raycluster):
            return None
        state = queue_state(self.session)
        waiting = waiting_near(state.quota_tree, status.cluster_queue, state.local_queues)
        return judge(self.idle_rule, idle_since, datetime.now(timezone.utc), waiting)

    def idle_verdict_key(self, name: str) -> tuple[Any, ...] | None:
        """What surfaces show of the idle rule's verdict on cluster ``name`` (not the idle
        seconds, which move every sample): the usage sampler's change key for it."""
        with self.positions.held_only():  # from the caches: never a visibility call
            info = self.describe(name)
        verdict = info.idle_verdict if info is not None else None
        if verdict is None:
            return None
        return (verdict.action, verdict.at, verdict.waiting, verdict.warning, verdict.held_back)

    def is_mine(self, raycluster: Object) -> bool:
        """Whether this workbench's owner made the cluster (its owner annotation is this
        identity's username): the only clusters a rule of this workbench may touch."""
        username = self.session.identity.username
        return username is not None and created_by(raycluster) == username

    def _name_preemptor(self, status: ClusterSnapshot) -> ClusterSnapshot:
        """``status`` with ``preempted_by.name`` set when the preemptor's job is a RayCluster
        of the namespace (a lookup in the RayCluster cache's UID index)."""
        preempted_by = status.preempted_by
        if preempted_by is None or preempted_by.job_uid is None:
            return status
        preemptor = ray_cluster_by_uid(self.session, preempted_by.job_uid)
        if preemptor is None:
            return status
        name = (preemptor.get("metadata") or {}).get("name")
        return replace(status, preempted_by=replace(preempted_by, name=name))

    def validate_spec(
        self,
        data: Mapping[str, Any],
        queues: Mapping[str, LocalQueueInfo] | None,
        default_queue: str | None,
        priorities: Iterable[str] | None = None,
    ) -> ValidatedClusterSpec:
        """``data`` validated with this server's policy (``InvalidSpec`` listing every bad
        field); ``queues``/``priorities`` None: not checked against what exists."""
        known = frozenset(priorities) if priorities is not None else None
        policy = replace(self.policy, elastic_jobs=self.elastic.allows_autoscaling())
        try:
            return ValidatedClusterSpec.from_request(data, policy, queues, default_queue, known)
        except SpecError as err:
            details = "; ".join(f"{field}: {message}" for field, message in err.errors.items())
            raise InvalidSpec(
                "Invalid cluster spec",
                details,
                "Fix the fields listed in 'errors'; nothing was created.",
                err.errors,
            ) from err

    def _snapshot_of(
        self,
        raycluster: Object,
        pending: Object | None = None,
        dispatching: frozenset[str] | None = None,
    ) -> Snapshot:
        """The RayCluster with its Workloads (slices) and its status from the caches;
        ``pending`` is the visibility API's entry of whichever of them waits (positions);
        ``dispatching`` the AdmissionChecks MultiKueue runs (:meth:`dispatching`)."""
        slices = slices_of(self.session, raycluster)
        pods = ray_pods(self.session, str((raycluster.get("metadata") or {}).get("name")))
        refusal = self._refusal(raycluster)
        status = cluster_snapshot(
            raycluster,
            pending=pending,
            pods=pods,
            slices=slices,
            refusal=refusal,
            dispatching=dispatching,
        )
        return raycluster, slices, status

    def _refusal(self, raycluster: Object) -> Refusal | None:
        """KubeRay's refusal of ``raycluster``'s spec, from the cached Warning events."""
        return kuberay_refusal(kuberay_warnings(self.session, raycluster), raycluster)

    def snapshots(
        self, rayclusters: Iterable[Object], fresh: bool = False
    ) -> builtins.list[Snapshot]:
        """Each RayCluster with its Workloads and status; the ones whose Workload waits for
        quota (or whose scale-up's slice does) get their positions: asked of the visibility
        API once per LocalQueue involved (``fresh``), else only for the LocalQueues a change
        marked since the board's last answer."""
        rayclusters = builtins.list(rayclusters)
        dispatching = self.dispatching() if rayclusters else None
        found = [self._snapshot_of(rc, None, dispatching) for rc in rayclusters]
        waiting = [status.queue for _, _, status in found if _waiting_workload(status)]
        entries = self.positions.entries(waiting, fresh)
        return [
            self._snapshot_of(rc, entry, dispatching)
            if (entry := entries.get(_waiting_workload(status) or "")) is not None
            else (rc, slices, status)
            for rc, slices, status in found
        ]

    def ahead(
        self,
        local_queue: LocalQueueInfo,
        cluster_queue: ClusterQueueQuota | None,
        priority: int | None,
        ask_positions: bool = True,
    ) -> Ahead | None:
        """Pending workloads Kueue would order before a new submission of ``priority`` to
        ``local_queue``: those of higher or equal priority (equal ones are older). From the
        best source this identity may read: the ClusterQueue's pending list (visibility API,
        every namespace), else the LocalQueue's (a lower bound when other namespaces share the
        ClusterQueue), else the ClusterQueue status's pending count (an upper bound); None when
        none is known. ``priority`` None (a class that cannot be read) counts like the last."""
        if ask_positions and priority is not None:
            try:
                if local_queue.cluster_queue:
                    everyone = self.session.cluster_queue_pending_workloads(
                        local_queue.cluster_queue
                    )
                    if everyone is not None:
                        return ahead_in_cluster_queue(everyone, priority)
                mine = self.session.pending_workloads(local_queue.name)
                if mine is not None:
                    total = cluster_queue.pending if cluster_queue is not None else None
                    return ahead_in_local_queue(mine, priority, total)
            except KubeUnreachable:
                pass  # not answering: one timeout is enough, the count below will do
        return ahead_by_count(cluster_queue.pending) if cluster_queue is not None else None


@dataclass(frozen=True)
class FitScene:
    """A queue as a new workload meets it (see :meth:`ClusterService.fit_scene`)."""

    local_queue: LocalQueueInfo
    cluster_queue: ClusterQueueQuota | None
    """Its ClusterQueue; None when it does not exist or cannot be read."""
    tree: QuotaTree | None
    """Every readable ClusterQueue and Cohort; None when quota is hidden from this identity."""
    ahead: Ahead | None
    """The pending workloads Kueue would order first (:meth:`ClusterService.ahead`); None
    when unknown."""
    flavors: Mapping[str, FlavorTraits] | None
    """The ResourceFlavors by name; None when unreadable (every flavor is assumed usable)."""
    multikueue: Dispatcher | None = None
    """The ClusterQueue's MultiKueue check (readable AdmissionChecks only): the workload runs
    on a worker cluster MultiKueue picks."""

    def assess(self, pod_sets: Sequence[PodSetRequest]) -> FitVerdict:
        """The fit verdict of ``pod_sets`` (as Kueue builds them) in this queue now; in a
        queue that dispatches through MultiKueue, with what that means for the verdict (the
        quota judged is this cluster's; MultiKueue and the worker decide the rest), not as a
        capacity check to wait for."""
        cluster_queue, dispatcher = self.cluster_queue, self.multikueue
        if cluster_queue is not None and dispatcher is not None:
            others = tuple(r for r in cluster_queue.admission_checks if r.name != dispatcher.check)
            cluster_queue = replace(cluster_queue, admission_checks=others)
        verdict = assess_fit(
            pod_sets,
            cluster_queue,
            self.tree,
            self.ahead,
            local_queue=self.local_queue,
            flavors=self.flavors,
        )
        if dispatcher is None:
            return verdict
        return replace(
            verdict,
            message=f"{verdict.message} {fit_note(dispatcher, verdict.cluster_queue)}",
            admission_checks=(*verdict.admission_checks, dispatcher.check),
            multikueue=dispatcher,
        )

    def suggest(
        self,
        verdict: FitVerdict,
        workers: int,
        pod_sets_with: Callable[[int], Sequence[PodSetRequest]],
    ) -> Suggestion | None:
        """What would fit now when ``verdict`` does not: the largest count below ``workers``
        whose pod sets, ``pod_sets_with(count)``, fit now (one binary search,
        :func:`suggest_workers`); None when ``verdict`` fits now or nothing smaller does."""
        if verdict.verdict == FITS_NOW:
            return None
        return suggest_workers(
            workers,
            pod_sets_with,
            self.cluster_queue,
            self.tree,
            self.ahead,
            local_queue=self.local_queue,
            flavors=self.flavors,
        )


def require_mapping(data: Any) -> None:
    if not isinstance(data, Mapping):
        raise InvalidSpec(
            "Invalid cluster spec",
            "the request body must be a JSON object of fields",
            'Send e.g. {"name": "my-ray", "workers": 2}.',
            {REQUEST_ERROR_KEY: "must be a JSON object of fields"},
        )


def requested_queue(data: Mapping[str, Any]) -> str | None:
    """The LocalQueue a request names, if it names one (checked later, with the rest)."""
    queue = data.get("queue")
    return queue.strip() if isinstance(queue, str) and queue.strip() else None


def priority_names(state: QueueState) -> list[str] | None:
    """The WorkloadPriorityClass names, None when they cannot be read."""
    classes: tuple[PriorityClass, ...] | None = state.priority_classes
    return [c.name for c in classes] if classes is not None else None


def _pod_info(pod: Object) -> PodInfo:
    metadata = pod.get("metadata") or {}
    return PodInfo(
        name=metadata.get("name"),
        role=(metadata.get("labels") or {}).get(RAY_NODE_TYPE_LABEL),
        phase=(pod.get("status") or {}).get("phase"),
        ready=is_true(conditions(pod).get("Ready")),
    )


def _waiting_workload(status: ClusterSnapshot) -> str | None:
    """The Workload of ``status`` that waits for quota (the cluster's own, or a scale-up's
    slice), whose position to ask for; None when none waits."""
    if status.state == "stopped":
        return None  # deactivated: out of the queue, the visibility API does not list it
    if status.workload is not None and not status.quota_reserved:
        return status.workload
    if status.scale is not None and status.scale.state == "queued":
        return status.scale.workload
    return None


def _sidecar_note(spec: ValidatedClusterSpec, counted: bool) -> str:
    amounts = f"{format_amount('cpu', spec.autoscaler_cpu)} CPU, " + format_amount(
        "memory", spec.autoscaler_memory
    )
    if counted:
        return f"The head includes the Ray autoscaler sidecar ({amounts}), which Kueue counts."
    return (
        f"This Kueue does not count the Ray autoscaler sidecar ({amounts}) in quota, but the "
        "head pod still needs it on its node."
    )
