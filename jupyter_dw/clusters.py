"""Ray clusters as the REST API and the events socket show them: validated, fitted, created,
listed with their Kueue and KubeRay state, deleted.

:class:`ClusterService` joins the pure domain (``ClusterSpec``, ``assess_fit``,
``cluster_status``) with :class:`KubeSession` (caches, writes, visibility API). It holds no
state of its own and every method blocks: the server runs them on its thread pool.

Per-request cost: listing reads only the watch caches (RayClusters, their Workloads by the
``kueue.x-k8s.io/job-uid`` index, their pods by ``ray.io/cluster``), plus one visibility API
call per LocalQueue that has a waiting cluster, for positions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from jupyter_server.utils import url_path_join

from .domain.cluster_spec import (
    MAX_NAME_LENGTH,
    OWNER_ANNOTATION,
    REQUEST_ERROR_KEY,
    ClusterSpec,
    SpecError,
    SpecPolicy,
    ray_cluster_name_error,
)
from .domain.cluster_state import ClusterStatus, cluster_status
from .domain.fit import assess_fit, pod_sets_for_spec
from .domain.kueue_model import ClusterQueueQuota, LocalQueueInfo, default_local_queue
from .domain.quota import QuotaTree
from .k8s.errors import InvalidRequest, KubeForbidden, KubeRejected
from .k8s.resources import RAY_NODE_TYPE_LABEL
from .k8s.session import KubeSession

Object = dict[str, Any]

FIT_NAME = "fit-check"
"""The name a fit check uses when the request names no cluster yet (sizing comes first)."""


class InvalidSpec(InvalidRequest):
    """A cluster request that fails validation (400); ``errors`` maps field → message."""

    code = "invalid_spec"


class InvalidName(InvalidRequest):
    """A cluster name (from a URL) that no RayCluster can have (400); nothing was asked."""

    code = "invalid_name"


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
    """The namespace's Ray clusters for one server: ``session`` sees Kubernetes, ``policy``
    holds the configured defaults and limits, ``dashboard_base`` is the public path of the
    dashboard proxy (``{base_url}dw/ray``)."""

    session: KubeSession
    policy: SpecPolicy
    dashboard_base: str = "/dw/ray"

    # -- answers -------------------------------------------------------------------------

    def fit(self, data: Any) -> dict[str, Any]:
        """The ``POST clusters/fit`` answer: would this spec fit its queue now?

        ``FitVerdict.to_json()`` (``verdict``, ``reason``, ``message``, ``requests``,
        ``headroom``, ``max_obtainable``, ``flavors``, ``assignment``, ``ahead``, ``queue``,
        ``cluster_queue``) plus ``spec`` (the request after defaults) and ``default_queue``
        (why that queue, when the request named none). ``name`` may be omitted here.
        """
        _require_mapping(data)
        request = dict(data)
        unnamed = request.get("name") is None
        if unnamed:
            request["name"] = FIT_NAME
        state = self.session.queue_state()
        queues = {lq.name: lq for lq in state.local_queues}
        choice = default_local_queue(state.local_queues, self.session.namespace)
        spec = self._spec(request, queues, choice.queue.name if choice else None)
        local_queue = queues[spec.queue]
        tree = (
            QuotaTree(state.cluster_queues, state.cohorts or ())
            if state.cluster_queues is not None
            else None
        )
        cluster_queue = tree.cluster_queue(local_queue.cluster_queue) if tree else None
        verdict = assess_fit(
            pod_sets_for_spec(spec),
            cluster_queue,
            tree,
            self._ahead(local_queue, cluster_queue),
            local_queue=local_queue,
        )
        spec_json = spec.to_json()
        if unnamed:
            spec_json["name"] = None
        omitted_queue = not (isinstance(data.get("queue"), str) and data["queue"].strip())
        return {
            **verdict.to_json(),
            "spec": spec_json,
            "default_queue": choice.reason if choice and omitted_queue else None,
        }

    def list(self) -> dict[str, Any]:
        """The ``GET clusters`` answer: ``{"namespace", "positions_visible", "clusters"}``,
        each cluster as :meth:`cluster_json` shows it, sorted by name."""
        clusters = [cluster for _, cluster in self.entries()]  # waits for the session first
        return {
            "namespace": self.session.namespace,
            "positions_visible": self.session.positions_visible,
            "clusters": clusters,
        }

    def entries(self) -> list[tuple[ClusterStatus, Object]]:
        """Every RayCluster of the namespace as ``(status, cluster JSON)``, sorted by name."""
        rayclusters = self.session.ray_clusters()
        return [
            (status, self.cluster_json(rc, status)) for rc, status in self._statuses(rayclusters)
        ]

    def get(self, name: str) -> dict[str, Any]:
        """The ``GET clusters/{name}`` answer (``KubeNotFound`` when there is none)."""
        raycluster = self.session.ray_cluster(check_cluster_name(name))
        [(_, status)] = self._statuses([raycluster])
        return self.cluster_json(raycluster, status)

    def create(self, data: Any) -> dict[str, Any]:
        """Validate, dry-run and create a cluster; the ``POST clusters`` answer.

        Raises :class:`InvalidSpec` (nothing sent to Kubernetes), ``KubeRejected`` (the dry
        run refused it: nothing created), ``KubeConflict`` (the name is taken) or
        ``KubeForbidden`` (``create rayclusters.ray.io`` missing).
        """
        _require_mapping(data)
        self.session.wait_ready()
        namespace = self.session.namespace
        try:
            state = self.session.queue_state()
        except KubeForbidden:
            # LocalQueues unreadable: the queue cannot be checked here, Kueue will judge it.
            known, default = None, None
        else:
            known = {lq.name: lq for lq in state.local_queues}
            choice = default_local_queue(state.local_queues, namespace)
            default = choice.queue.name if choice else None
        spec = self._spec(data, known, default)
        obj = spec.to_raycluster(namespace, owner=self.session.identity.username)
        try:
            created = self.session.create_raycluster(obj)
        except KubeRejected as err:
            if not err.errors:
                err.errors = {REQUEST_ERROR_KEY: err.reason or err.error}
            raise
        current = self.session.cached_ray_cluster(spec.name) or created
        return self.cluster_json(current, cluster_status(current, None))

    def delete(self, name: str) -> dict[str, Any]:
        """Delete a cluster (``KubeNotFound`` when absent): ``{"name", "namespace",
        "deleted": true}``; its Workload, pods and Services follow in the background."""
        self.session.delete_raycluster(check_cluster_name(name))
        return {"name": name, "namespace": self.session.namespace, "deleted": True}

    def describe(self, name: str, positions: bool = True) -> tuple[ClusterStatus, Object] | None:
        """The cached RayCluster ``name`` as ``(status, cluster JSON)``, None if the cache
        does not hold it. Only the cache is read, plus one visibility call for a waiting
        cluster when ``positions``. For the events socket."""
        raycluster = self.session.cached_ray_cluster(name)
        if raycluster is None:
            return None
        [(_, status)] = self._statuses([raycluster], positions=positions)
        return status, self.cluster_json(raycluster, status)

    # -- shapes --------------------------------------------------------------------------

    def cluster_json(self, raycluster: Object, status: ClusterStatus) -> dict[str, Any]:
        """``ClusterStatus.to_json()`` plus ``dashboard_url`` (through the Jupyter server),
        ``owner`` (who created it through jupyter_dw, if it did) and ``pods``
        (``[{"name", "role", "phase", "ready"}]`` from the pod cache)."""
        metadata = raycluster.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        return {
            **status.to_json(),
            "dashboard_url": self.dashboard_url(status.name),
            "owner": annotations.get(OWNER_ANNOTATION),
            "pods": [_pod_json(pod) for pod in self.session.ray_pods(status.name)],
        }

    def dashboard_url(self, name: str) -> str:
        """``{base_url}dw/ray/<name>/``: the Ray dashboard through the Jupyter server."""
        return url_path_join(self.dashboard_base, quote(name, safe="")) + "/"

    # -- internals -----------------------------------------------------------------------

    def _spec(
        self,
        data: Mapping[str, Any],
        queues: Mapping[str, LocalQueueInfo] | None,
        default_queue: str | None,
    ) -> ClusterSpec:
        try:
            return ClusterSpec.from_request(data, self.policy, queues, default_queue)
        except SpecError as err:
            details = "; ".join(f"{field}: {message}" for field, message in err.errors.items())
            raise InvalidSpec(
                "Invalid cluster spec",
                details,
                "Fix the fields listed in 'errors'; nothing was created.",
                err.errors,
            ) from err

    def _statuses(
        self, rayclusters: Iterable[Object], positions: bool = True
    ) -> list[tuple[Object, ClusterStatus]]:
        """Each RayCluster with its status; the ones whose Workload waits for quota get their
        positions, asking the visibility API once per LocalQueue involved."""
        found = []
        for raycluster in rayclusters:
            workload = self.session.workload_of(raycluster)
            found.append((raycluster, workload, cluster_status(raycluster, workload)))
        waiting = {
            status.queue
            for _, workload, status in found
            if workload is not None and not status.quota_reserved and status.queue
        }
        entries: dict[str, Object] = {}
        for queue in sorted(waiting) if positions else ():
            for item in self.session.pending_workloads(queue) or []:
                name = (item.get("metadata") or {}).get("name")
                if name:
                    entries[str(name)] = item
        return [
            (rc, cluster_status(rc, wl, entries[status.workload]))
            if status.workload in entries
            else (rc, status)
            for rc, wl, status in found
        ]

    def _ahead(
        self, local_queue: LocalQueueInfo, cluster_queue: ClusterQueueQuota | None
    ) -> int | None:
        """Pending workloads a new submission to ``local_queue`` would queue behind: the most
        of what the visibility API shows (positions of this queue's pending workloads in the
        ClusterQueue) and what the ClusterQueue's status counts, None when neither is known."""
        counts: list[int] = []
        pending = self.session.pending_workloads(local_queue.name)
        if pending is not None:
            positions = [_int(p.get("positionInClusterQueue")) for p in pending]
            counts.append(max((p + 1 for p in positions if p is not None), default=len(pending)))
        if cluster_queue is not None:
            counts.append(cluster_queue.pending)
        return max(counts) if counts else None


def _require_mapping(data: Any) -> None:
    if not isinstance(data, Mapping):
        raise InvalidSpec(
            "Invalid cluster spec",
            "the request body must be a JSON object of fields",
            'Send e.g. {"name": "my-ray", "workers": 2}.',
            {REQUEST_ERROR_KEY: "must be a JSON object of fields"},
        )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _conditions(obj: Object) -> dict[str, Object]:
    raw = (obj.get("status") or {}).get("conditions") or []
    return {c["type"]: c for c in raw if isinstance(c, dict) and isinstance(c.get("type"), str)}


def _pod_json(pod: Object) -> dict[str, Any]:
    metadata = pod.get("metadata") or {}
    return {
        "name": metadata.get("name"),
        "role": (metadata.get("labels") or {}).get(RAY_NODE_TYPE_LABEL),
        "phase": (pod.get("status") or {}).get("phase"),
        "ready": (_conditions(pod).get("Ready") or {}).get("status") == "True",
    }
