"""``jupyter dw doctor``: what this workbench can do on this cluster, and the RBAC that fixes it.
Checked as jupyter_dw itself would: API server, Kueue and KubeRay APIs, LocalQueues, every
needed permission. No tornado or jupyter_server (docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from traitlets import TraitError

from ..domain.kueue_model import (
    ClusterQueueQuota,
    KueueObjectError,
    LocalQueueInfo,
    default_local_queue,
)
from ..domain.multikueue import DASHBOARD_SETTING, Dispatcher, dispatchers, worker_clusters
from ..domain.ray_auth import DEFAULT_RAY_AUTH
from ..domain.validation import dns1123_label_error
from ..k8s.access import (
    NEEDED_PERMISSIONS,
    AccessResult,
    Identity,
    Permission,
    check_access,
    who_am_i,
)
from ..k8s.auth import Credentials, load_credentials
from ..k8s.client import KubeApi
from ..k8s.discovery import Discovery, discover
from ..k8s.elastic import FEATURE_GATE, ElasticJobs, probe_elastic_jobs
from ..k8s.rbac import Subject, render_rbac
from ..k8s.resources import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    MULTIKUEUE_CLUSTER,
    MULTIKUEUE_CONFIG,
    PENDING_WORKLOADS_SUBRESOURCE,
    RAY_CLUSTER,
    VISIBILITY_LOCAL_QUEUE,
    ResourceKind,
)
from .errors import DWError
from .settings import DWSettings, load_settings

Status = Literal["ok", "missing", "optional-missing", "failed", "skipped"]
FAILING: frozenset[str] = frozenset({"missing", "failed", "skipped"})
"""Statuses that make a required check fail (``optional-missing`` never does)."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Check:
    """One line of the doctor's table.

    ``kind`` is ``connection``, ``api``, ``queues`` or ``permission``; ``name`` what was
    checked (``create rayclusters.ray.io``); ``detail`` what was found; ``unlocks`` the
    feature it is needed for; ``hint`` what to do when it is not ``ok``.
    """

    kind: str
    name: str
    status: Status
    detail: str
    unlocks: str
    required: bool = True
    scope: str | None = None
    hint: str | None = None

    @property
    def failing(self) -> bool:
        """True when this check makes the doctor fail."""
        return self.required and self.status in FAILING

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "status": self.status,
            "required": self.required,
            "scope": self.scope,
            "detail": self.detail,
            "unlocks": self.unlocks,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class DoctorReport:
    """Every check, and the RBAC YAML that grants the missing permissions (``fix``, empty
    when nothing is missing). ``ok``: every required check passed."""

    namespace: str | None
    api_server: str | None
    credentials: str | None
    identity: str | None
    checks: tuple[Check, ...]
    local_queues: tuple[str, ...] = ()
    default_queue: str | None = None
    fix: str = ""
    kueue: dict[str, Any] = field(default_factory=dict)
    kuberay: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(check.failing for check in self.checks)

    @property
    def exit_code(self) -> int:
        """0 when every required check passed, 1 otherwise."""
        return 0 if self.ok else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "namespace": self.namespace,
            "api_server": self.api_server,
            "credentials": self.credentials,
            "identity": self.identity,
            "kueue": self.kueue,
            "kuberay": self.kuberay,
            "local_queues": list(self.local_queues),
            "default_queue": self.default_queue,
            "checks": [check.to_json() for check in self.checks],
            "fix": self.fix or None,
        }


def run_doctor(
    settings: DWSettings | None = None,
    *,
    namespace: str | None = None,
    kube_context: str | None = None,
    environ: Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> DoctorReport:
    """Run every check from the identity and settings jupyter_dw would use.

    ``settings`` None: :func:`load_settings` (config files, then ``JUPYTER_DW_*`` in
    ``environ``); ``namespace`` and ``kube_context`` override them. Never raises for what it
    finds: a problem (a bad setting too) is a check that is not ``ok``.
    """
    say = progress or (lambda _: None)
    if settings is None:
        try:
            settings = load_settings(environ)
        except TraitError as err:
            return _stopped(Check("connection", "settings", "failed", str(err), "everything"))
    namespace = namespace or settings.namespace
    say("reading credentials")
    try:
        credentials = load_credentials(
            settings.service_account_dir, kube_context or settings.kube_context, environ
        )
    except DWError as err:
        return _stopped(_failed("connection", "credentials", err, "everything"))
    namespace = namespace or credentials.namespace or "default"
    invalid = dns1123_label_error(namespace)
    if invalid is not None:
        return _stopped(
            Check("connection", "namespace", "failed", f"{namespace!r}: {invalid}", "everything")
        )
    api = KubeApi(credentials, timeout=settings.request_timeout)
    try:
        return _Doctor(
            api,
            credentials,
            namespace,
            say,
            settings.elastic_jobs,
            settings.ray_auth,
            settings.multikueue_dashboard_url,
        ).run()
    finally:
        api.close()


class _Doctor:
    """One doctor run on one API client (the checks in the order the table shows them)."""

    def __init__(
        self,
        api: KubeApi,
        credentials: Credentials,
        namespace: str,
        say: Progress,
        elastic_setting: str = "auto",
        ray_auth: str = DEFAULT_RAY_AUTH,
        worker_dashboard: str = "",
    ) -> None:
        self.elastic_setting = elastic_setting
        self.ray_auth = ray_auth
        self.worker_dashboard = worker_dashboard
        self.api = api
        self.credentials = credentials
        self.namespace = namespace
        self.say = say
        self.checks: list[Check] = []

    def run(self) -> DoctorReport:
        """Every check, in the table's order; a step that fails stops the ones that need it."""
        if not self._api_server_answers():
            return self._report(None, None)
        identity = self._identity()
        if identity is None:
            return self._report(None, None)
        discovery = self._discovery()
        if discovery is None:
            return self._report(identity, None)
        self._apis(discovery)
        access = self._access()
        if access is None:
            return self._report(identity, discovery)
        allowed = {p.name: r.allowed for p, r in access.items()}
        queues, default = self._local_queues(discovery, allowed)
        self._visibility(discovery, allowed, default or (queues[0] if queues else None))
        self._elastic_jobs(discovery, allowed, default or (queues[0] if queues else None))
        self._multikueue(discovery, allowed)
        missing = self._permissions(access)
        return self._report(identity, discovery, queues, default, self._fix(missing, identity))

    def _api_server_answers(self) -> bool:
        self.say(f"contacting the API server at {self.api.host}")
        try:
            version = self.api.get("/version")
        except DWError as err:
            self.checks.append(_failed("connection", "API server", err, "everything"))
            return False
        self.checks.append(
            Check(
                "connection",
                "API server",
                "ok",
                f"Kubernetes {version.get('gitVersion', '?')} at {self.api.host}",
                "everything",
            )
        )
        return True

    def _identity(self) -> Identity | None:
        self.say("asking who this identity is")
        try:
            identity = who_am_i(self.api)
        except DWError as err:
            self.checks.append(_failed("connection", "identity", err, "everything"))
            return None
        self.checks.append(
            Check(
                "connection",
                "identity",
                "ok",
                f"{identity.username or 'unknown (no SelfSubjectReview API)'} "
                f"({self.credentials.description}), namespace {self.namespace}",
                "everything",
            )
        )
        return identity

    def _discovery(self) -> Discovery | None:
        self.say("discovering the Kueue, visibility and KubeRay APIs")
        try:
            return discover(self.api)
        except DWError as err:
            self.checks.append(_failed("api", "API discovery", err, "everything"))
            return None

    def _access(self) -> dict[Permission, AccessResult] | None:
        self.say(f"asking the API server about {len(NEEDED_PERMISSIONS)} permissions")
        try:
            return check_access(self.api, self.namespace)
        except DWError as err:
            self.checks.append(_failed("permission", "access reviews", err, "everything"))
            return None

    def _permissions(self, access: dict[Permission, AccessResult]) -> list[Permission]:
        """A check per permission; the ones not allowed."""
        missing = []
        for permission, result in access.items():
            if result.allowed:
                status: Status = "ok"
            else:
                status = "missing" if permission.required else "optional-missing"
                missing.append(permission)
            self.checks.append(
                Check(
                    "permission",
                    permission.name,
                    status,
                    "allowed" if result.allowed else (result.reason or "not allowed"),
                    permission.purpose,
                    permission.required,
                    "namespace" if permission.namespaced else "cluster",
                )
            )
        return missing

    def _fix(self, missing: list[Permission], identity: Identity) -> str:
        """The RBAC that grants ``missing`` to this identity in this namespace."""
        return render_rbac(
            missing,
            self.namespace,
            Subject.of(identity, self.namespace),
            header=(
                "# Grants what `jupyter dw doctor` found missing for this identity in namespace "
                f"{self.namespace}.\n# Apply as a cluster administrator: kubectl apply -f FILE\n"
            ),
        )

    def _apis(self, discovery: Discovery) -> None:
        if discovery.kueue_installed:
            served = ", ".join(discovery.kueue_served)
            self.checks.append(
                Check(
                    "api",
                    "Kueue",
                    "ok",
                    f"kueue.x-k8s.io/{discovery.kueue_version} in use (served: {served})",
                    "queues, quota, admission",
                )
            )
        else:
            try:
                discovery.require_kueue()
            except DWError as err:
                self.checks.append(
                    _failed("api", "Kueue", err, "queues, quota, admission", "missing")
                )
        if discovery.kuberay_installed:
            self.checks.append(
                Check(
                    "api",
                    "KubeRay",
                    "ok",
                    f"ray.io/{discovery.ray_version} rayclusters",
                    "Ray clusters",
                )
            )
        else:
            try:
                discovery.require_kuberay()
            except DWError as err:
                self.checks.append(_failed("api", "KubeRay", err, "Ray clusters", "missing"))
        if discovery.kuberay_installed:
            self.checks.append(_ray_auth_check(discovery, self.ray_auth))

    def _local_queues(
        self, discovery: Discovery, allowed: Mapping[str, bool]
    ) -> tuple[list[str], str | None]:
        """The namespace's LocalQueues (one list call) and the default's name."""
        list_permission = f"list {LOCAL_QUEUE.qualified}"
        resource = discovery.kueue(LOCAL_QUEUE)
        if resource is None or not allowed.get(list_permission):
            why = "Kueue is not installed" if resource is None else f"may not {list_permission}"
            self.checks.append(
                Check("queues", "LocalQueues", "skipped", why, "submitting Ray clusters")
            )
            return [], None
        self.say(f"listing LocalQueues in namespace {self.namespace}")
        try:
            items = self.api.get(resource.path(self.namespace)).get("items") or []
        except DWError as err:
            self.checks.append(_failed("queues", "LocalQueues", err, "submitting Ray clusters"))
            return [], None
        queues: list[LocalQueueInfo] = []
        for item in items:
            try:
                queues.append(LocalQueueInfo.from_object(item))
            except KueueObjectError:
                continue  # one malformed object must not hide the others
        names = sorted(q.name for q in queues)
        choice = default_local_queue(queues, self.namespace)
        default = choice.queue.name if choice else None
        if not names:
            self.checks.append(
                Check(
                    "queues",
                    "LocalQueues",
                    "missing",
                    f"no LocalQueue in namespace {self.namespace}",
                    "submitting Ray clusters",
                    hint="Ask a cluster administrator for a LocalQueue in this namespace that "
                    "points at a ClusterQueue (annotate it kueue.x-k8s.io/default-queue: "
                    '"true" to make it the default).',
                )
            )
            return [], None
        listed = ", ".join(f"{n} (default)" if n == default else n for n in names)
        detail = listed if default else f"{listed}; no default queue: clusters must name one"
        self.checks.append(Check("queues", "LocalQueues", "ok", detail, "submitting Ray clusters"))
        return names, default

    def _visibility(
        self, discovery: Discovery, allowed: Mapping[str, bool], queue: str | None
    ) -> None:
        """Kueue's visibility API (optional: without it, positions in the queue are hidden).
        Served, answering its discovery, and, when a queue exists and it is allowed,
        answering for that queue as this identity."""
        unlocks = "positions of waiting clusters"
        version = discovery.visibility_version
        if version is None:
            self.checks.append(
                Check(
                    "api",
                    "visibility API",
                    "optional-missing",
                    "visibility.kueue.x-k8s.io is not registered",
                    unlocks,
                    required=False,
                    hint="Kueue registers it as an APIService (v0.9+, VisibilityOnDemand).",
                )
            )
            return
        self.say("asking Kueue's visibility API")
        resource = VISIBILITY_LOCAL_QUEUE.at(version)
        permission = f"get {VISIBILITY_LOCAL_QUEUE.qualified}/{PENDING_WORKLOADS_SUBRESOURCE}"
        try:
            self.api.get(resource.group_version_path)
            if queue is not None and allowed.get(permission):
                listing = self.api.get(
                    resource.path(self.namespace, queue, PENDING_WORKLOADS_SUBRESOURCE)
                )
                detail = (
                    f"{resource.group}/{version} answers: {len(listing.get('items') or [])} "
                    f"pending in LocalQueue {queue}"
                )
            else:
                detail = f"{resource.group}/{version} answers"
        except DWError as err:
            self.checks.append(
                _failed("api", "visibility API", err, unlocks, "optional-missing", required=False)
            )
            return
        self.checks.append(Check("api", "visibility API", "ok", detail, unlocks, required=False))

    def _elastic_jobs(
        self, discovery: Discovery, allowed: Mapping[str, bool], queue: str | None
    ) -> None:
        """Whether Kueue admits elastic (autoscaling) clusters: the setting when it says,
        else Kueue's answer to a dry-run create (optional: without it clusters keep the size
        they were admitted at)."""
        unlocks = "autoscaling clusters and scaling them after admission"
        if self.elastic_setting in ("true", "false"):
            found = ElasticJobs(
                self.elastic_setting == "true",
                "setting",
                f"the elastic_jobs setting is {self.elastic_setting}",
            )
        elif not (discovery.kueue_installed and discovery.kuberay_installed):
            return  # the Kueue and KubeRay checks already say what is missing
        elif not allowed.get(f"create {RAY_CLUSTER.qualified}"):
            found = ElasticJobs(None, "unknown", "cannot tell: may not create rayclusters")
        else:
            self.say("asking Kueue (a dry run) whether it admits elastic Ray clusters")
            found = probe_elastic_jobs(self.api, self.namespace, queue)
        status: Status = "ok" if found.enabled else "optional-missing"
        detail = (
            f"elastic_jobs: {str(found.enabled).lower()} ({found.learned_from}): {found.detail}"
        )
        self.checks.append(
            Check(
                "api",
                "elastic jobs",
                status,
                detail,
                unlocks,
                required=False,
                hint=None
                if found.enabled
                else f"Kueue's feature gate {FEATURE_GATE} must be on (the default since 0.18).",
            )
        )

    def _multikueue(self, discovery: Discovery, allowed: Mapping[str, bool]) -> None:
        """Whether MultiKueue sends this namespace's workloads to other clusters, and what
        this workbench may see of it: the AdmissionChecks MultiKueue runs, their worker
        clusters (and whether Kueue reaches them), the namespace's LocalQueues that lead
        there, and whether their dashboards are reachable from here (optional: without
        these reads each workload still says where it went, from its Workload)."""
        unlocks = "which queues run their workloads on other clusters (MultiKueue), and where"
        checks = discovery.kueue(ADMISSION_CHECK)
        if checks is None:
            return  # the Kueue check already says Kueue is missing
        if not allowed.get(f"list {ADMISSION_CHECK.qualified}"):
            self.checks.append(
                Check(
                    "api",
                    "MultiKueue",
                    "optional-missing",
                    f"cannot tell: may not list {ADMISSION_CHECK.qualified}; each workload "
                    "still says which worker cluster it was sent to (from its Workload)",
                    unlocks,
                    required=False,
                    hint="Grant the optional ClusterRole (examples/rbac/clusterrole.yaml).",
                )
            )
            return
        self.say("looking for MultiKueue's admission checks")
        try:
            found = dispatchers(
                self.api.get(checks.path()).get("items") or [],
                self._cluster_scoped(discovery, allowed, MULTIKUEUE_CONFIG),
            )
            workers = self._cluster_scoped(discovery, allowed, MULTIKUEUE_CLUSTER)
            leading = self._queues_to(discovery, allowed, found)
        except DWError as err:
            self.checks.append(
                _failed("api", "MultiKueue", err, unlocks, "optional-missing", required=False)
            )
            return
        if not found:
            detail = "no AdmissionCheck runs MultiKueue: every workload runs in this cluster"
            self.checks.append(Check("api", "MultiKueue", "ok", detail, unlocks, required=False))
            return
        parts = [d.sentence for d in found.values()]
        if workers is not None:
            parts.append(f"worker clusters: {', '.join(w.words for w in worker_clusters(workers))}")
        else:
            parts.append(f"may not list {MULTIKUEUE_CLUSTER.qualified}: reachability unknown")
        if leading is not None:
            parts.append(
                f"LocalQueues of {self.namespace} that lead there: {', '.join(leading) or 'none'}"
            )
        parts.append(
            f"their Ray dashboards: {self.worker_dashboard}"
            if self.worker_dashboard
            else f"their Ray dashboards are not reachable from this workbench ({DASHBOARD_SETTING} "
            "is not set)"
        )
        self.checks.append(
            Check("api", "MultiKueue", "ok", "; ".join(parts), unlocks, required=False)
        )

    def _cluster_scoped(
        self, discovery: Discovery, allowed: Mapping[str, bool], kind: ResourceKind
    ) -> list[dict[str, Any]] | None:
        """Every object of cluster-scoped Kueue ``kind`` (one list), None when not readable."""
        resource = discovery.kueue(kind)
        if resource is None or not allowed.get(f"list {kind.qualified}"):
            return None
        items: list[dict[str, Any]] = self.api.get(resource.path()).get("items") or []
        return items

    def _queues_to(
        self, discovery: Discovery, allowed: Mapping[str, bool], found: Mapping[str, Dispatcher]
    ) -> list[str] | None:
        """The namespace's LocalQueues whose ClusterQueue names one of ``found`` (None when
        LocalQueues or ClusterQueues cannot be read)."""
        local = discovery.kueue(LOCAL_QUEUE)
        cluster_queues = self._cluster_scoped(discovery, allowed, CLUSTER_QUEUE)
        if not found or local is None or cluster_queues is None:
            return None
        if not allowed.get(f"list {LOCAL_QUEUE.qualified}"):
            return None
        dispatching = set()
        for item in cluster_queues:
            try:
                cq = ClusterQueueQuota.from_object(item)
            except KueueObjectError:
                continue
            if any(rule.name in found for rule in cq.admission_checks):
                dispatching.add(cq.name)
        names = []
        for item in self.api.get(local.path(self.namespace)).get("items") or []:
            try:
                queue = LocalQueueInfo.from_object(item)
            except KueueObjectError:
                continue
            if queue.cluster_queue in dispatching:
                names.append(queue.name)
        return sorted(names)

    def _report(
        self,
        identity: Identity | None,
        discovery: Discovery | None,
        queues: list[str] | None = None,
        default: str | None = None,
        fix: str = "",
    ) -> DoctorReport:
        apis = discovery.to_json() if discovery is not None else {}
        return DoctorReport(
            namespace=self.namespace,
            api_server=self.api.host,
            credentials=self.credentials.description,
            identity=identity.username if identity else None,
            checks=tuple(self.checks),
            local_queues=tuple(queues or ()),
            default_queue=default,
            fix=fix,
            kueue=apis.get("kueue", {}),
            kuberay=apis.get("kuberay", {}),
        )


def _ray_auth_check(discovery: Discovery, mode: str) -> Check:
    """Whether new clusters get Ray's authentication: the setting, and KubeRay's schema."""
    name, unlocks = "Ray authentication", "authenticated Ray dashboards, Jobs API and clients"
    if mode == "disabled":
        return Check(
            "api",
            name,
            "optional-missing",
            "ray_auth=disabled: clusters are created without Ray authentication (anyone who "
            "can reach their pods can submit jobs); every cluster shows a warning",
            unlocks,
            required=False,
            hint="Set JupyterDW.ray_auth = 'token' (the default) unless this is on purpose.",
        )
    if discovery.ray_auth_options:
        return Check(
            "api",
            name,
            "ok",
            f"ray_auth={mode}: KubeRay's RayCluster schema has spec.authOptions",
            unlocks,
            required=False,
        )
    found = (
        "has no spec.authOptions"
        if discovery.ray_auth_options is False
        else "could not be read (OpenAPI v3)"
    )
    return Check(
        "api",
        name,
        "optional-missing",
        f"ray_auth={mode}, but KubeRay's RayCluster schema {found}: clusters are created "
        "without Ray authentication and show a warning",
        unlocks,
        required=False,
        hint="Ask a cluster administrator for KubeRay 1.6 or newer.",
    )


def _failed(
    kind: str,
    name: str,
    err: DWError,
    unlocks: str,
    status: Status = "failed",
    required: bool = True,
) -> Check:
    return Check(kind, name, status, str(err), unlocks, required, hint=err.hint)


def _stopped(check: Check) -> DoctorReport:
    return DoctorReport(None, None, None, None, (check,))
