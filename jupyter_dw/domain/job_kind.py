"""A workload kind jupyter_dw creates (a RayJob, a TrainJob) as one description. Pure.
The shared machinery (core, routes, feed, watches, permissions) is made from ``KINDS``
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.fit import PodSetRequest
from jupyter_dw.domain.json_decode import decode_fields
from jupyter_dw.domain.kueue_words import Summarized
from jupyter_dw.domain.lenient import mapping, text
from jupyter_dw.domain.multikueue import Placement
from jupyter_dw.domain.timeline import Timeline, job_timeline
from jupyter_dw.domain.usage import ClusterUsage, Subject, usage_from_json, usage_json
from jupyter_dw.domain.validation import dns1035_label_error
from jupyter_dw.domain.workloads import (
    JobWorkload,
    WorkloadInfo,
    created_by,
    held_by_kueue,
    job_workload_from_json,
    workload_fields,
)
from jupyter_dw.names import PRIORITY_CLASS_LABEL, QUEUE_LABEL

JobState = Literal[
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
"""Every state a job of any kind shows: its Workload's while Kueue decides, then its
controller's (``stopped``: a RayJob's only)."""

Reading = tuple[JobState, str | None, str | None]
"""``(state, reason, message)``."""
_Record = TypeVar("_Record", bound="JobInfo")


@dataclass(frozen=True, kw_only=True)
class JobInfo(Summarized):
    """One job as every surface shows it: what every kind has; a kind's record adds its own
    fields (all of them in :meth:`to_json`)."""

    final_states: ClassVar[frozenset[str]] = frozenset({"succeeded", "failed"})
    """States the job does not leave."""

    name: str
    namespace: str | None
    queue: str | None
    priority: str | None
    state: JobState
    reason: str | None
    message: str | None
    workload: JobWorkload | None
    """Its Workload's name, positions and amounts (None before Kueue made one)."""
    created: str | None
    end_time: str | None
    owner: str | None = None
    """The username that created it through jupyter_dw (as a cluster's ``owner``)."""
    usage: ClusterUsage | None = None
    """What its pods use against what they hold (:meth:`JobKind.pods` says whose they are:
    a RayJob's its cluster's, the submitter's pod not counted; a TrainJob's its JobSet's,
    summed as a cluster's are); None when usage is off (``usage_interval`` 0) or the kind
    does not say how its pods are found."""
    idle_since: str | None = None
    """When the usage samples first found it idle since it was last busy."""

    @property
    def final(self) -> bool:
        """Whether the job is over."""
        return self.state in self.final_states

    @property
    def position_in_local_queue(self) -> int | None:
        """Kueue's 0-based position while the job waits for quota."""
        return self.workload.position_in_local_queue if self.workload else None

    @property
    def placement(self) -> Placement | None:
        """Where MultiKueue sent it (the worker cluster it runs on); None without MultiKueue."""
        return self.workload.placement if self.workload else None

    @property
    def timeline(self) -> Timeline:
        """Its life as the spans a timeline bar draws: waiting in the queue, then running."""
        admitted_at = self.workload.admitted_at if self.workload else None
        return job_timeline(self.created, admitted_at, self.end_time, self.state, self.final)

    def to_json(self) -> dict[str, Any]:
        """The JSON shape the REST API, the events socket and the kernel share: every field,
        ``final``, the Workload's part and ``usage`` (with ``idle_since``)."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_SHOWN}
        return {
            **shown,
            "final": self.final,
            "summary": self.summary,
            "timeline": self.timeline.to_json(),
            **workload_fields(self.workload),
            "usage": usage_json(self.usage, self.idle_since),
        }

    @classmethod
    def from_json(cls: type[_Record], data: Mapping[str, Any]) -> _Record:
        """What :meth:`to_json` made (the Workload's part and ``usage`` read back into
        ``workload``, ``usage`` and ``idle_since``; ``final``, ``summary`` and ``timeline``
        are made again from the rest)."""
        usage, idle_since, _ = usage_from_json(data)  # a job's has no idle verdict
        return decode_fields(
            cls, data, workload=job_workload_from_json(data), usage=usage, idle_since=idle_since
        )


_NOT_SHOWN = frozenset({"workload", "usage", "idle_since"})
"""The fields :meth:`JobInfo.to_json` shows in a shape of their own."""


@dataclass(frozen=True)
class QueueChoices:
    """What a request's ``queue`` and ``priority`` are checked against (None: unreadable,
    Kueue will judge), and why the default queue is the default."""

    queues: list[str] | None
    default_queue: str | None
    default_reason: str | None
    priorities: list[str] | None


class Environment(Protocol):
    """What a kind may ask of the core while it parses, fits or makes a job (each answered
    only when asked: most kinds ask for none)."""

    @property
    def allowed_images(self) -> tuple[str, ...]:
        """The images the policy allows (empty: any)."""
        ...

    def parse_cluster(self, request: Mapping[str, Any]) -> ValidatedClusterSpec:
        """A Ray cluster request parsed by the clusters' own parser and policy (``SpecError``)."""
        ...

    def sidecar_counted(self) -> bool:
        """Whether the running Kueue counts a head pod's sidecars (0.19 does, 0.14 does not)."""
        ...

    def auth_options_served(self) -> bool:
        """Whether the RayCluster schema has ``spec.authOptions``."""
        ...

    def referenced(self, kind: str, name: str) -> Mapping[str, Any] | None:
        """The object of ``kind`` (a kind of :data:`JobKind.references`) named ``name``, None
        when there is none."""
        ...


class MissingReference(LookupError):
    """A request names an object that does not exist (404): ``error``, ``reason``, ``hint``."""

    def __init__(self, error: str, reason: str, hint: str) -> None:
        super().__init__(error)
        self.error, self.reason, self.hint = error, reason, hint


@dataclass(frozen=True)
class Install:
    """What the "not installed" answer says when the API server does not serve the kind."""

    what: str
    """What is missing (``"Kubeflow Trainer"``)."""
    hint: str
    code: str
    """The error's ``code`` (``"trainer_not_installed"``)."""


class JobRequest(Protocol):
    """What every kind's validated request has (a frozen dataclass)."""

    @property
    def name(self) -> str: ...
    @property
    def queue(self) -> str: ...
    @property
    def priority(self) -> str | None: ...
    def to_json(self) -> dict[str, Any]:
        """JSON-ready fields in the request's shape."""
        ...


Request = TypeVar("Request", bound=JobRequest)
Info = TypeVar("Info", bound=JobInfo)


class JobKind(ABC, Generic[Request, Info]):
    """One workload kind: class attributes say its names, methods its request and its state.
    A kind's requests are frozen dataclasses with ``name``, ``queue`` and ``priority``."""

    # -- its API (the resource: jupyter_dw.k8s.resources.kind_resource) ---------------------
    group: ClassVar[str]
    version: ClassVar[str]
    kind: ClassVar[str]
    plural: ClassVar[str]
    """Also its REST collection (``dw/api/<plural>``), the :class:`DWCore` attribute, the
    snapshot's key and the list's key."""
    install: ClassVar[Install]
    references: ClassVar[tuple[tuple[str, str], ...]] = ()
    """``(group, plural)`` of the objects its requests name (a TrainJob's runtimes): read with
    ``get``, a permission the access checks list."""
    watched_with: ClassVar[tuple[str, ...]] = ()
    """Kinds (``RayCluster``) whose caches a listing waits for too (a RayJob's own cluster)."""
    pod_label: ClassVar[str | None] = None
    """The label each pod of a job carries, valued with the job's name, when its pods are its
    own (a TrainJob's: JobSet's ``jobset.sigs.k8s.io/jobset-name``): they are watched (a pod
    cache of the kind's own, ``<word>-pods``) and what they use, summed, is its ``usage``
    (:meth:`pods`)."""

    # -- its words on the surfaces ---------------------------------------------------------
    word: ClassVar[str]
    """One job in the events socket (``"rayjob"``: the message type and the record's key)."""
    does: ClassVar[str]
    """What it runs, for the permission checks (``"run RayJobs (a job with its own cluster)"``)."""
    follows: ClassVar[str]
    """What follows a delete (``"its cluster and Workload follow"``)."""

    # -- its request and its record, as classes (what their JSON is read back as) ----------
    request_type: ClassVar[type[JobRequest]]
    """Its validated request's class (a fit's ``spec``)."""
    record_type: ClassVar[type[JobInfo]]
    """Its record's class (``GET <plural>``, the ``<word>`` messages)."""

    # -- its request -----------------------------------------------------------------------
    fields: ClassVar[tuple[str, ...]]
    """Every field a request may carry; the same names in REST JSON, Python and ``%dw``."""
    fit_placeholders: ClassVar[Mapping[str, str]] = {}
    """Fields that ask no quota, filled for a fit check when omitted (a command)."""

    max_name_length: ClassVar[int]
    """Its names are DNS-1035 labels of at most this many characters: its controller names
    what it makes after the job (a RayJob's cluster ``<name>-xxxxx``)."""

    def name_error(self, name: str) -> str | None:
        """What is wrong with ``name`` as a job's name (None if nothing)."""
        return dns1035_label_error(name, self.max_name_length)

    @property
    def name_rule(self) -> str:
        """The hint of a bad name (``"RayJob names are DNS-1035 labels of at most 47 ..."``)."""
        return (
            f"{self.kind} names are DNS-1035 labels of at most {self.max_name_length} characters."
        )

    @abstractmethod
    def parse(self, data: Mapping[str, Any], choices: QueueChoices, env: Environment) -> Request:
        """The validated request (``SpecError`` listing every bad field)."""

    @abstractmethod
    def manifest(
        self, job: Request, namespace: str, owner: str | None, env: Environment
    ) -> dict[str, Any]:
        """The object to create in ``namespace``, suspended until Kueue admits it."""

    @abstractmethod
    def pod_sets(self, job: Request, env: Environment) -> tuple[PodSetRequest, ...]:
        """The pod sets Kueue builds for ``job`` (``MissingReference`` when a named object is
        missing)."""

    def workers(self, job: Request) -> int | None:
        """How many workers ``job`` asks for, when a smaller job could fit (a suggestion)."""
        return None

    def with_workers(self, job: Request, workers: int) -> Request:
        """``job`` with ``workers`` workers (only for a kind whose :meth:`workers` answers)."""
        raise NotImplementedError

    # -- its pods --------------------------------------------------------------------------
    def pods(self, info: Info) -> Subject | None:
        """Whose pods are job ``info``'s, as the usage sampler knows them: ``(word, name)``,
        the job's own, when :attr:`pod_label` finds them; a kind whose jobs run on a Ray
        cluster says ``(CLUSTER, <its cluster>)`` (a RayJob: its usage is its cluster's, Ray's
        load included; ``""`` until the cluster is named). None: the kind does not say, and
        its records' ``usage`` stays None."""
        return (self.word, info.name) if self.pod_label else None

    # -- its state -------------------------------------------------------------------------
    @abstractmethod
    def ended(self, obj: Mapping[str, Any]) -> Reading | None:
        """The controller's final word (succeeded, failed...), or None while it runs."""

    @abstractmethod
    def progress(self, obj: Mapping[str, Any], workload: WorkloadInfo) -> Reading:
        """The state once Kueue has admitted the job and it has not ended."""

    @abstractmethod
    def record(self, obj: Mapping[str, Any], **common: Any) -> Info:
        """The kind's record of ``obj`` from the fields every kind has (``common``)."""

    def info(self, obj: Mapping[str, Any], workload: WorkloadInfo | None) -> Info:
        """The state of ``obj`` given its Workload's (None: Kueue has made none yet, or it
        cannot be read). Never raises on a partial object."""
        metadata = mapping(obj.get("metadata"))
        labels = mapping(metadata.get("labels"))
        state, reason, message = self.state(obj, workload)
        return self.record(
            obj,
            name=str(metadata.get("name") or ""),
            namespace=text(metadata.get("namespace")),
            owner=created_by(obj),
            queue=text(labels.get(QUEUE_LABEL)),
            priority=text(labels.get(PRIORITY_CLASS_LABEL)),
            state=state,
            reason=reason,
            message=message,
            workload=JobWorkload.of(workload) if workload is not None else None,
            created=text(metadata.get("creationTimestamp")),
        )

    def state(self, obj: Mapping[str, Any], workload: WorkloadInfo | None) -> Reading:
        """First match wins: ``deleting``; the controller's final word; the Workload's state
        while Kueue decides (``queued`` before it makes one); then the controller's progress."""
        if text(mapping(obj.get("metadata")).get("deletionTimestamp")):
            return "deleting", None, None
        ended = self.ended(obj)
        if ended is not None:
            return ended
        held = held_by_kueue(workload)
        if held is not None:
            return held  # type: ignore[return-value]
        assert workload is not None  # held_by_kueue answers for a missing Workload
        return self.progress(obj, workload)
