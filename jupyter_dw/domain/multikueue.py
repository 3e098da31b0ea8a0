"""MultiKueue as a workbench in the manager cluster sees it: which admission checks dispatch
workloads to worker clusters (and to which, where this identity may read it), and where one
Workload was sent. Pure. The fields read, per Kueue version: docs/explanation/kueue-mapping.md.

A manager's ClusterQueue carries an AdmissionCheck whose controller is MultiKueue
(:data:`~jupyter_dw.names.MULTIKUEUE_CONTROLLER`); the check names a ``MultiKueueConfig`` that
lists the worker clusters (``MultiKueueCluster`` objects). Kueue reserves the manager's quota
first, then MultiKueue copies the Workload to the workers it nominates
(``status.nominatedClusterNames``), the first worker to admit it wins
(``status.clusterName``; the check turns Ready with ``The workload was admitted on "X"``, 0.14:
``got reservation on``), the job runs there and its status is copied back to the manager's
object. The worker's own reason for keeping a copy waiting is not copied back.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_dw.domain.kueue_state import CHECK_READY, AdmissionCheckStatus, admission_checks
from jupyter_dw.domain.lenient import conditions, is_true, words
from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.domain.lenient import text as _text
from jupyter_dw.names import MULTIKUEUE_CONFIG_KIND, MULTIKUEUE_CONTROLLER

DASHBOARD_SETTING = "JupyterDW.multikueue_dashboard_url"
"""The setting that says where a worker cluster's Ray dashboards are reachable from here."""

_ADMITTED_ON = re.compile(r'^The workload (?:was admitted|got reservation) on "([^"]+)"')
"""MultiKueue's message on its check once a worker admitted the copy (0.15+: "was admitted
on", 0.14: "got reservation on"): how a check is known for MultiKueue's without reading the
AdmissionCheck."""


def _names(value: Any) -> tuple[str, ...]:
    return tuple(n for n in (value if isinstance(value, list) else []) if isinstance(n, str) and n)


# --------------------------------------------------------------------------------------------
# The checks that dispatch (from the AdmissionCheck and MultiKueueConfig objects)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dispatcher:
    """An AdmissionCheck run by MultiKueue: ``check`` its name, ``config`` the MultiKueueConfig
    it names, ``workers`` that config's worker clusters (None: this identity may not read
    MultiKueueConfigs, or the check names none)."""

    check: str
    config: str | None = None
    workers: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"check", "config", "workers"}``."""
        return {
            "check": self.check,
            "config": self.config,
            "workers": list(self.workers) if self.workers is not None else None,
        }

    @property
    def sentence(self) -> str:
        """What the check does, in words (the worker clusters when known)."""
        where = (
            f"worker clusters {', '.join(self.workers)}"
            if self.workers
            else "worker clusters (which ones this workbench may not read)"
            if self.workers is None
            else "worker clusters, but its MultiKueueConfig lists none"
        )
        return f"MultiKueue (admission check {self.check}) runs its workloads on {where}"


def dispatchers(
    checks: Iterable[Mapping[str, Any]], configs: Iterable[Mapping[str, Any]] | None = None
) -> dict[str, Dispatcher]:
    """The AdmissionChecks among ``checks`` whose controller is MultiKueue, by name, each with
    the worker clusters of the MultiKueueConfig it names (``configs`` None: not readable)."""
    workers_of: dict[str, tuple[str, ...]] | None = None
    if configs is not None:
        workers_of = {}
        for listing in configs:
            name = _text(_map(_map(listing).get("metadata")).get("name"))
            if name:
                workers_of[name] = _names(_map(_map(listing).get("spec")).get("clusters"))
    found: dict[str, Dispatcher] = {}
    for check in checks:
        check = _map(check)
        name = _text(_map(check.get("metadata")).get("name"))
        spec = _map(check.get("spec"))
        if not name or spec.get("controllerName") != MULTIKUEUE_CONTROLLER:
            continue
        parameters = _map(spec.get("parameters"))
        config = (
            _text(parameters.get("name"))
            if parameters.get("kind") in (None, MULTIKUEUE_CONFIG_KIND)
            else None
        )
        workers = workers_of.get(config) if workers_of is not None and config else None
        found[name] = Dispatcher(name, config, workers)
    return found


@dataclass(frozen=True)
class WorkerCluster:
    """A MultiKueueCluster: a worker cluster the manager's Kueue may send workloads to, and
    whether it reaches it (its ``Active`` condition, with Kueue's reason and message)."""

    name: str
    active: bool
    reason: str | None = None
    message: str | None = None

    @property
    def words(self) -> str:
        """``worker-1 (reached)``, or why Kueue does not reach it."""
        if self.active:
            return f"{self.name} (reached)"
        return f"{self.name} (not reached: {self.message or self.reason or 'no reason given'})"

    def to_json(self) -> dict[str, Any]:
        """``{"name", "active", "reason", "message"}``."""
        return {
            "name": self.name,
            "active": self.active,
            "reason": self.reason,
            "message": self.message,
        }


def worker_clusters(objects: Iterable[Mapping[str, Any]]) -> tuple[WorkerCluster, ...]:
    """The MultiKueueClusters among ``objects``, by name."""
    found = []
    for obj in objects:
        name = _text(_map(_map(obj).get("metadata")).get("name"))
        if not name:
            continue
        active = conditions(obj).get("Active")
        reason, message = words(active)
        found.append(WorkerCluster(name, is_true(active), reason, message))
    return tuple(sorted(found, key=lambda w: w.name))


# --------------------------------------------------------------------------------------------
# Where one Workload was sent
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where MultiKueue sent a Workload, read from the Workload alone (no MultiKueue object).

    ``worker_cluster``: the worker cluster that admitted it and runs its job
    (``status.clusterName``); ``nominated_clusters``: the workers it was offered to while it
    waits for one of them to admit it (``status.nominatedClusterNames``); ``check``,
    ``check_state``, ``check_message``: MultiKueue's admission check on it, when it can be
    told apart (by name from the readable AdmissionChecks, else by MultiKueue's words)."""

    worker_cluster: str | None = None
    nominated_clusters: tuple[str, ...] = ()
    check: str | None = None
    check_state: str | None = None
    check_message: str | None = None

    @property
    def dispatched(self) -> bool:
        """A worker admitted it: its job runs there, not in this cluster."""
        return self.worker_cluster is not None

    @property
    def sentence(self) -> str:
        """Where it runs, or where it is being placed, in words."""
        if self.worker_cluster is not None:
            return f"runs on worker cluster {self.worker_cluster} (sent there by MultiKueue)"
        if self.nominated_clusters:
            offered = ", ".join(self.nominated_clusters)
            plural = "s" if len(self.nominated_clusters) > 1 else ""
            return (
                f"MultiKueue offered it to worker cluster{plural} {offered} and waits for one "
                "to admit it (the worker's own reason is not copied back to this cluster)"
            )
        return "waiting for MultiKueue to offer it to a worker cluster"

    def to_json(self) -> dict[str, Any]:
        """``{"worker_cluster", "nominated_clusters", "check", "check_state", "check_message",
        "sentence"}``."""
        return {
            "worker_cluster": self.worker_cluster,
            "nominated_clusters": list(self.nominated_clusters),
            "check": self.check,
            "check_state": self.check_state,
            "check_message": self.check_message,
            "sentence": self.sentence,
        }


def _multikueue_check(
    checks: tuple[AdmissionCheckStatus, ...], known: Collection[str] | None, placed: bool
) -> AdmissionCheckStatus | None:
    """MultiKueue's check among the Workload's: by name when the dispatching checks are known;
    else the one with MultiKueue's words, or the only one of a Workload MultiKueue placed."""
    if known is not None:
        return next((c for c in checks if c.name in known), None)
    worded = next((c for c in checks if c.message and _ADMITTED_ON.match(c.message)), None)
    if worded is not None:
        return worded
    return checks[0] if placed and len(checks) == 1 else None


def placement(
    workload: Mapping[str, Any] | None, dispatching: Collection[str] | None = None
) -> Placement | None:
    """Where MultiKueue sent ``workload`` (None: nothing shows MultiKueue handles it).

    ``dispatching``: the names of the AdmissionChecks MultiKueue runs, when this identity may
    read AdmissionChecks; None: not readable, and the Workload alone tells (its
    ``clusterName``, ``nominatedClusterNames`` and MultiKueue's words on its check)."""
    status = _map(_map(workload).get("status"))
    worker = _text(status.get("clusterName"))
    nominated = _names(status.get("nominatedClusterNames"))
    checks = admission_checks(workload)
    check = _multikueue_check(checks, dispatching, bool(worker or nominated))
    if worker is None and check is not None and check.state == CHECK_READY and check.message:
        # The check says where (a Workload read before its clusterName was written).
        admitted_on = _ADMITTED_ON.match(check.message)
        worker = admitted_on.group(1) if admitted_on else None
    if worker is None and not nominated and check is None:
        return None
    return Placement(
        worker_cluster=worker,
        nominated_clusters=() if worker else nominated,
        check=check.name if check else None,
        check_state=check.state if check else None,
        check_message=check.message if check else None,
    )


Outcome = tuple[str, str | None, str | None]


def dispatchers_seen(workloads: Iterable[Mapping[str, Any]]) -> dict[str, Dispatcher]:
    """By LocalQueue: the MultiKueue check its Workloads show they were placed by, for a
    workbench that may not read AdmissionChecks (then which workers the check may use is not
    known: ``workers`` None). Only Workloads MultiKueue nominated or placed tell."""
    seen: dict[str, Dispatcher] = {}
    for workload in workloads:
        status = _map(_map(workload).get("status"))
        if not (status.get("clusterName") or status.get("nominatedClusterNames")):
            continue  # the cheap test first: most Workloads were never placed
        queue = _text(_map(_map(workload).get("spec")).get("queueName"))
        where = placement(workload)
        if queue and queue not in seen and where is not None and where.check is not None:
            seen[queue] = Dispatcher(where.check)
    return seen


def placed_outcome(outcome: Outcome, where: Placement | None) -> Outcome:
    """``(state, reason, message)`` of a Workload (or its job) with MultiKueue's part in
    words: while it waits on MultiKueue's check (``waiting-for-capacity``), the message says
    where it was offered instead of "admission check X is Pending"."""
    state, reason, _ = outcome
    if where is None or where.dispatched or state != "waiting-for-capacity":
        return outcome
    if where.check is None or where.check_state == CHECK_READY:
        return outcome
    words = f"admission check {where.check} is {where.check_state}: {where.sentence}"
    if where.check_message:
        words += f"; MultiKueue says: {where.check_message}"
    return state, reason, words


def worker_dashboard(template: str, port: int, worker: str, name: str, namespace: str) -> str:
    """The dashboard root (no trailing slash) of cluster ``name`` running on ``worker``, from
    the administrator's template (``JupyterDW.multikueue_dashboard_url``, checked by
    :func:`~jupyter_dw.domain.url_templates.validate_url_template`)."""
    return template.format(worker=worker, name=name, namespace=namespace, port=port).rstrip("/")


def unreachable_dashboard(where: Placement) -> str:
    """Why a dispatched cluster's dashboard has no address here."""
    return (
        f"runs on worker cluster {where.worker_cluster}: its Ray dashboard is not reachable "
        f"from this workbench (an administrator can say where with {DASHBOARD_SETTING})"
    )


def dispatcher_among(
    checks: Iterable[str], dispatchers: Mapping[str, Dispatcher] | None
) -> Dispatcher | None:
    """The first of ``checks`` (a ClusterQueue's admission checks) MultiKueue runs."""
    known = dispatchers or {}
    return next((known[c] for c in checks if c in known), None)


def fit_note(dispatcher: Dispatcher, cluster_queue: str | None) -> str:
    """What a fit in a queue that dispatches through MultiKueue checks, and what it cannot."""
    queue = f"ClusterQueue {cluster_queue}" if cluster_queue else "its ClusterQueue"
    return (
        f"{dispatcher.sentence}: MultiKueue decides which one runs it, and that worker's own "
        f"quota when; this fit checks the quota of this cluster's {queue}, which Kueue "
        "reserves first."
    )
