"""What the cluster service answers, as every surface shows it: a cluster
(:class:`ClusterInfo`), the namespace's clusters (:class:`ClusterList`), a fit check
(:class:`FitResult`) and a delete (:class:`Deleted`). Frozen and typed; JSON is made by
their ``to_json`` and HTML by the notebook layer (:mod:`jupyter_dw.notebook.formatters`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..domain.cluster_spec import ValidatedClusterSpec
from ..domain.cluster_state import AdmissionCheckStatus, ClusterSnapshot, ClusterState, Dashboard
from ..domain.fit import FitVerdict, Verdict
from ..domain.fit_suggestion import Suggestion
from ..domain.freshness import FRESH, Freshness
from ..domain.idle_rule import IdleVerdict
from ..domain.job_kind import JobRequest
from ..domain.json_decode import DecodeError, decode, decode_fields, decode_key, decode_one_of
from ..domain.kinds import KINDS
from ..domain.milestones import Milestone
from ..domain.multikueue import Dispatcher, Placement
from ..domain.priorities import PreemptedBy
from ..domain.ray_auth import RayAuth
from ..domain.scale_fit import ScaleFit
from ..domain.slices import ScaleChange
from ..domain.stop_record import StopRecord
from ..domain.timeline import Timeline, cluster_timeline
from ..domain.usage import ClusterUsage, usage_from_json, usage_json
from ..names import CLIENT_PORT
from .listing import ByName

FIT_NAME = "fit-check"
"""The name a fit check uses when the request names no cluster yet (sizing comes first)."""


@dataclass(frozen=True)
class PodInfo:
    """One pod of a cluster: ``role`` is ``head`` or ``worker`` (KubeRay's label)."""

    name: str | None
    role: str | None
    phase: str | None
    ready: bool

    def to_json(self) -> dict[str, Any]:
        """``{"name", "role", "phase", "ready"}``."""
        return {"name": self.name, "role": self.role, "phase": self.phase, "ready": self.ready}


@dataclass(frozen=True)
class ClusterInfo:
    """One Ray cluster as every surface shows it: its :class:`ClusterSnapshot` (each of whose
    fields is a property here too: ``info.state``, ``info.reason``, ...) plus where its
    dashboard is, who made it, its pods and its milestones with their times."""

    snapshot: ClusterSnapshot
    """The cluster's Kueue and KubeRay state (what ``cluster_state.cluster_snapshot`` read)."""
    dashboard_url: str | None
    """``{base_url}dw/ray/<name>/``, or None when the dashboard proxy is turned off, or the
    cluster runs on a MultiKueue worker this workbench cannot reach (``dashboard_note``)."""
    owner: str | None
    pods: tuple[PodInfo, ...]
    milestones: tuple[Milestone, ...]
    freshness: Freshness = FRESH
    """Whether ``snapshot`` is the state now: not ``live`` while a watch it is read from is
    reconnecting or stale, or Kueue (for a cluster it manages) does not answer."""
    ray_auth: RayAuth | None = None
    """How Ray authenticates on this cluster, read from the RayCluster, with the warning every
    surface shows when it does not (``disabled`` by the administrator, ``none``)."""
    usage: ClusterUsage | None = None
    """What its pods use against what they hold, and whether it is idle (None when usage is
    turned off: ``usage_interval`` 0)."""
    idle_since: str | None = None
    """When the usage samples first found it idle since it was last busy."""
    idle_verdict: IdleVerdict | None = None
    """What the idle rule will do to it and when (None: not idle, not one the rule may
    touch, or the rule is off)."""
    dashboard_note: str | None = None
    """Why ``dashboard_url`` is None although the proxy is on: the cluster runs on a
    MultiKueue worker cluster and no address of that worker's dashboards is configured."""

    # -- the snapshot's fields, read through (REST's names; tests check none is missing) --

    @property
    def name(self) -> str:
        """The RayCluster's name."""
        return self.snapshot.name

    @property
    def namespace(self) -> str | None:
        """Its namespace."""
        return self.snapshot.namespace

    @property
    def queue(self) -> str | None:
        """Its LocalQueue (the ``kueue.x-k8s.io/queue-name`` label, else its Workload's)."""
        return self.snapshot.queue

    @property
    def state(self) -> ClusterState:
        """``queued``, ``admitted``, ``starting``, ``ready``, ``evicted``... (``ClusterState``)."""
        return self.snapshot.state

    @property
    def reason(self) -> str | None:
        """The controllers' reason for ``state`` (Kueue's or KubeRay's), None if they gave none."""
        return self.snapshot.reason

    @property
    def message(self) -> str | None:
        """The controllers' words for ``state``, None if they gave none."""
        return self.snapshot.message

    @property
    def created(self) -> str | None:
        """When the RayCluster was created (RFC 3339)."""
        return self.snapshot.created

    @property
    def workload(self) -> str | None:
        """Its Kueue Workload's name, None before Kueue made one."""
        return self.snapshot.workload

    @property
    def cluster_queue(self) -> str | None:
        """The ClusterQueue that admitted it, None before admission."""
        return self.snapshot.cluster_queue

    @property
    def quota_reserved(self) -> bool:
        """The Workload's ``QuotaReserved`` condition."""
        return self.snapshot.quota_reserved

    @property
    def admitted(self) -> bool:
        """The Workload's ``Admitted`` condition."""
        return self.snapshot.admitted

    @property
    def admitted_at(self) -> str | None:
        """When Kueue admitted it (RFC 3339), None while not admitted."""
        return self.snapshot.admitted_at

    @property
    def flavors(self) -> tuple[str, ...]:
        """The ResourceFlavors assigned, in first-seen order."""
        return self.snapshot.flavors

    @property
    def pod_set_flavors(self) -> Mapping[str, Mapping[str, str]]:
        """PodSet → resource → the flavor assigned."""
        return self.snapshot.pod_set_flavors

    @property
    def head_ready(self) -> bool:
        """Whether the head pod is ready."""
        return self.snapshot.head_ready

    @property
    def workers_ready(self) -> int:
        """Worker pods ready."""
        return self.snapshot.workers_ready

    @property
    def workers_desired(self) -> int:
        """Worker pods asked for."""
        return self.snapshot.workers_desired

    @property
    def dashboard(self) -> Dashboard:
        """Where the Ray dashboard listens (the head Service and port)."""
        return self.snapshot.dashboard

    @property
    def position_in_local_queue(self) -> int | None:
        """Kueue's 0-based position in the LocalQueue while waiting for quota."""
        return self.snapshot.position_in_local_queue

    @property
    def position_in_cluster_queue(self) -> int | None:
        """Kueue's 0-based position in the ClusterQueue while waiting for quota."""
        return self.snapshot.position_in_cluster_queue

    @property
    def preempted_by(self) -> PreemptedBy | None:
        """While ``preempted``: the workload Kueue named as the preemptor."""
        return self.snapshot.preempted_by

    @property
    def admission_checks(self) -> tuple[AdmissionCheckStatus, ...]:
        """The Workload's admission checks (empty when its ClusterQueue requires none)."""
        return self.snapshot.admission_checks

    @property
    def workers_admitted(self) -> int | None:
        """Workers whose quota Kueue holds now (None before the first admission)."""
        return self.snapshot.workers_admitted

    @property
    def min_workers(self) -> int:
        """The least workers the Ray autoscaler may scale to."""
        return self.snapshot.min_workers

    @property
    def max_workers(self) -> int:
        """The most workers the Ray autoscaler may scale to."""
        return self.snapshot.max_workers

    @property
    def elastic(self) -> bool:
        """An elastic job: Kueue admits its changes of size as Workload slices."""
        return self.snapshot.elastic

    @property
    def pinned_workers(self) -> int | None:
        """The size a person pinned it at; None while the Ray autoscaler owns it."""
        return self.snapshot.pinned_workers

    @property
    def scale(self) -> ScaleChange | None:
        """A change of size in flight (elastic clusters only)."""
        return self.snapshot.scale

    @property
    def stopped(self) -> StopRecord | None:
        """While ``stopped``: who stopped it, when and why (None otherwise)."""
        return self.snapshot.stopped

    @property
    def capacity_provisioned(self) -> bool:
        """Every admission check is Ready (False when there are none)."""
        return self.snapshot.capacity_provisioned

    @property
    def placement(self) -> Placement | None:
        """Where MultiKueue sent it (the worker cluster it runs on); None without MultiKueue."""
        return self.snapshot.placement

    @property
    def summary(self) -> str | None:
        """Kueue's waiting ``message`` in one short line, or None when it says nothing known."""
        return self.snapshot.summary

    # -- derived ------------------------------------------------------------------------

    @property
    def ray_address(self) -> str:
        """``ray://<head service>.<namespace>.svc:10001``, for ``ray.init`` in the cluster."""
        service = self.snapshot.dashboard.service
        return f"ray://{service}.{self.snapshot.namespace}.svc:{CLIENT_PORT}"

    @property
    def timeline(self) -> Timeline:
        """Its milestones as the spans a timeline bar draws (``domain/timeline.py``)."""
        return cluster_timeline(self.milestones, self.snapshot.state, self.snapshot.workers_desired)

    def to_json(self) -> dict[str, Any]:
        """``ClusterSnapshot.to_json()`` plus ``dashboard_url``, ``ray_address``, ``owner``,
        ``pods``, ``milestones`` (``[{"name", "time", "words"}]``), ``timeline`` and
        ``freshness``."""
        return {
            **self.snapshot.to_json(),
            "dashboard_url": self.dashboard_url,
            "dashboard_note": self.dashboard_note,
            "ray_address": self.ray_address,
            "owner": self.owner,
            "pods": [pod.to_json() for pod in self.pods],
            "milestones": [m.to_json() for m in self.milestones],
            "timeline": self.timeline.to_json(),
            "freshness": self.freshness.to_json(),
            "ray_auth": self.ray_auth.to_json() if self.ray_auth is not None else None,
            "usage": self.usage_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClusterInfo:
        """What :meth:`to_json` made: the snapshot's fields are the same object's, ``usage``
        holds ``idle_since`` and the verdict; ``ray_address`` and ``timeline`` are made again
        from the rest."""
        usage, idle_since, verdict = usage_from_json(data)
        return decode_fields(
            cls,
            data,
            snapshot=decode(ClusterSnapshot, data),
            usage=usage,
            idle_since=idle_since,
            idle_verdict=verdict,
        )

    def usage_json(self) -> dict[str, Any] | None:
        """REST's ``usage``: the :class:`ClusterUsage` with ``idle_since`` and the idle rule's
        verdict (``idle_action``); None when usage is off."""
        verdict = self.idle_verdict
        return usage_json(self.usage, self.idle_since, verdict.to_json() if verdict else None)


@dataclass(frozen=True)
class ClusterList(ByName["ClusterInfo"]):
    """The ``GET clusters`` answer; a sequence of its clusters (iterate, ``len()``, index by
    position or by name)."""

    namespace: str
    positions_visible: bool
    clusters: tuple[ClusterInfo, ...]

    def _entries(self) -> tuple[ClusterInfo, ...]:
        return self.clusters

    @staticmethod
    def _name_of(entry: ClusterInfo) -> str:
        return entry.snapshot.name

    def to_json(self) -> dict[str, Any]:
        """``{"namespace", "positions_visible", "clusters"}``."""
        return {
            "namespace": self.namespace,
            "positions_visible": self.positions_visible,
            "clusters": [c.to_json() for c in self.clusters],
        }


@dataclass(frozen=True)
class FitResult:
    """The ``POST clusters/fit`` answer: the assessment (each of whose fields is a property
    here too: ``result.verdict``, ``result.message``, ``result.headroom``...), the spec after
    defaults (``name`` None when the request named none), why the default queue was chosen
    (when the request named no queue) and, when the cluster must wait or can never fit, one
    that would start now (None when none would)."""

    assessment: FitVerdict
    spec: ValidatedClusterSpec | JobRequest
    """What was judged: a Ray cluster's spec, or a job's request (a RayJob's, a TrainJob's)."""
    named: bool
    default_queue: str | None
    suggestion: Suggestion | None

    # -- the assessment's fields, read through (tests check none is missing) ------------

    @property
    def verdict(self) -> Verdict:
        """``fits-now``, ``must-wait``, ``never-fits`` or ``unknown``."""
        return self.assessment.verdict

    @property
    def reason(self) -> str:
        """A short machine-readable cause (Kueue's own reason names where they exist)."""
        return self.assessment.reason

    @property
    def message(self) -> str:
        """The verdict in a sentence, with its numbers."""
        return self.assessment.message

    @property
    def requests(self) -> Mapping[str, Decimal]:
        """The cluster's totals per resource, in Kueue's units."""
        return self.assessment.requests

    @property
    def headroom(self) -> Mapping[str, Decimal | None]:
        """Per resource, what its flavor has free now (None when quota is hidden)."""
        return self.assessment.headroom

    @property
    def max_obtainable(self) -> Mapping[str, Decimal | None]:
        """Per resource, the most its flavor could ever give (None when hidden)."""
        return self.assessment.max_obtainable

    @property
    def flavors(self) -> Mapping[str, str | None]:
        """Per resource, the flavor the numbers refer to (None when none applies)."""
        return self.assessment.flavors

    @property
    def assignment(self) -> Mapping[str, Mapping[str, str]]:
        """PodSet → resource → flavor, when every PodSet got one."""
        return self.assessment.assignment

    @property
    def ahead(self) -> int | None:
        """Pending workloads Kueue orders before this one, None if unknown."""
        return self.assessment.ahead

    @property
    def queue(self) -> str | None:
        """The LocalQueue judged."""
        return self.assessment.queue

    @property
    def cluster_queue(self) -> str | None:
        """Its ClusterQueue."""
        return self.assessment.cluster_queue

    @property
    def ahead_bound(self) -> str | None:
        """Whether ``ahead`` is ``exact``, ``at-least`` or ``at-most``."""
        return self.assessment.ahead_bound

    @property
    def admission_checks(self) -> tuple[str, ...]:
        """The AdmissionChecks the ClusterQueue requires of this cluster."""
        return self.assessment.admission_checks

    @property
    def multikueue(self) -> Dispatcher | None:
        """The ClusterQueue's MultiKueue check: the workload runs on a worker cluster."""
        return self.assessment.multikueue

    def to_json(self) -> dict[str, Any]:
        """``FitVerdict.to_json()`` plus ``spec``, ``default_queue`` and ``suggestion``."""
        spec = self.spec.to_json()
        if not self.named:
            spec["name"] = None
        return {
            **self.assessment.to_json(),
            "spec": spec,
            "default_queue": self.default_queue,
            "suggestion": self.suggestion.to_json() if self.suggestion else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FitResult:
        """What :meth:`to_json` made: the verdict's fields are the same object's; ``spec`` is
        a cluster's or a workload kind's request, whichever it reads as (a spec without a name
        was judged under the name ``fit-check``)."""
        spec = decode_key(Mapping[str, Any], data, "spec")
        named = spec.get("name") is not None
        requests = (ValidatedClusterSpec, *(kind.request_type for kind in KINDS))
        try:
            request = decode_one_of(requests, spec if named else {**spec, "name": FIT_NAME})
        except DecodeError as err:
            raise err.within("spec") from None
        return decode_fields(
            cls, data, assessment=decode(FitVerdict, data), spec=request, named=named
        )


@dataclass(frozen=True)
class Deleted:
    """A cluster whose delete the API server accepted (its Workload and pods follow)."""

    name: str
    namespace: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "namespace", "deleted": true}``."""
        return {"name": self.name, "namespace": self.namespace, "deleted": True}


@dataclass(frozen=True)
class ScaleResult:
    """A scale's answer: the cluster after the change (or as it is, for a dry run), the
    scale-up's fit (None for a scale-down or a release), and whether anything changed."""

    cluster: ClusterInfo
    fit: ScaleFit | None
    dry_run: bool
    changed: bool

    @property
    def message(self) -> str:
        """One sentence for a person: the fit's, or what was done."""
        if self.fit is not None:
            return self.fit.message
        status = self.cluster.snapshot
        if status.pinned_workers is None:
            return (
                f"The Ray autoscaler owns the size of {status.name} again "
                f"({status.min_workers} to {status.max_workers} workers)."
            )
        return f"{status.name}: pinned at {status.pinned_workers} workers."

    def to_json(self) -> dict[str, Any]:
        """The REST ``ScaleResult`` shape."""
        return {
            "cluster": self.cluster.to_json(),
            "fit": self.fit.to_json() if self.fit else None,
            "dry_run": self.dry_run,
            "changed": self.changed,
        }
