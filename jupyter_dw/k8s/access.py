"""Who am I, and what may I do: SelfSubjectReview, SelfSubjectRulesReview and AccessReviews.
Asked before a cache starts, so a missing permission degrades one feature only
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from jupyter_dw.domain.identity import Identity
from jupyter_dw.domain.json_decode import decode_fields, decode_key
from jupyter_dw.domain.rbac_rules import ResourceRule, rules_allow
from jupyter_dw.names import qualified

from .errors import KubeError, KubeForbidden
from .resources import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    CLUSTER_TRAINING_RUNTIME,
    COHORT,
    EVENT,
    JOB_RESOURCES,
    LOCAL_QUEUE,
    MULTIKUEUE_CLUSTER,
    MULTIKUEUE_CONFIG,
    PENDING_WORKLOADS_SUBRESOURCE,
    POD,
    POD_METRICS,
    RAY_CLUSTER,
    RESOURCE_FLAVOR,
    SECRET,
    SELF_SUBJECT_ACCESS_REVIEW,
    SELF_SUBJECT_REVIEW,
    SELF_SUBJECT_RULES_REVIEW,
    VISIBILITY_CLUSTER_QUEUE,
    VISIBILITY_LOCAL_QUEUE,
    WORKLOAD,
    WORKLOAD_PRIORITY_CLASS,
    Resource,
    ResourceKind,
)

if TYPE_CHECKING:
    from .client import KubeApi

log = logging.getLogger(__name__)

_RBAC_DENIAL = re.compile(r'cannot (\S+) resource "([^"]+)" in API group "([^"]*)"')


@dataclass(frozen=True)
class Permission:
    """One RBAC permission: a verb on a resource (maybe a subresource) and why we need it.

    ``purpose`` is the feature it unlocks, as a short phrase. ``required`` permissions are
    what a workbench needs for jupyter_dw to work (``jupyter dw doctor`` fails without them);
    the others reveal more (quota, priorities) and degrade one feature when missing.
    """

    verb: str
    group: str
    resource: str
    namespaced: bool
    purpose: str
    subresource: str = ""
    required: bool = True

    @property
    def name(self) -> str:
        """``<verb> <resource>.<group>[/<subresource>]``: ``list clusterqueues.kueue.x-k8s.io``."""
        return f"{self.verb} {describe_resource(self.resource, self.group, self.subresource)}"

    @property
    def rbac_resource(self) -> str:
        """The resource as an RBAC rule names it: ``localqueues/pendingworkloads``."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def to_json(self) -> dict[str, Any]:
        """This permission as ``GET context`` lists it (without the verdict)."""
        return {
            "permission": self.name,
            "verb": self.verb,
            "group": self.group,
            "resource": self.resource,
            "subresource": self.subresource or None,
            "scope": "namespace" if self.namespaced else "cluster",
            "purpose": self.purpose,
            "required": self.required,
        }


def _perms(
    kind: ResourceKind | Resource,
    verbs: Iterable[str],
    purpose: str,
    subresource: str = "",
    *,
    required: bool = True,
) -> list[Permission]:
    return [
        Permission(v, kind.group, kind.plural, kind.namespaced, purpose, subresource, required)
        for v in verbs
    ]


NEEDED_PERMISSIONS: tuple[Permission, ...] = (
    # In the workbench's namespace (a Role; examples/rbac/role.yaml): all required.
    *_perms(LOCAL_QUEUE, ("list", "watch"), "show the namespace's queues"),
    *_perms(WORKLOAD, ("list", "watch"), "show queued and admitted workloads"),
    *_perms(WORKLOAD, ("patch",), "stop and resume Ray clusters (a Workload's spec.active)"),
    *_perms(
        VISIBILITY_LOCAL_QUEUE,
        ("get",),
        "show positions of pending workloads",
        PENDING_WORKLOADS_SUBRESOURCE,
    ),
    *_perms(RAY_CLUSTER, ("create",), "create Ray clusters"),
    *_perms(RAY_CLUSTER, ("delete",), "delete Ray clusters"),
    *_perms(RAY_CLUSTER, ("list", "watch"), "list Ray clusters and follow their state"),
    *_perms(RAY_CLUSTER, ("get",), "open a Ray cluster's dashboard through the server"),
    *_perms(
        RAY_CLUSTER, ("patch",), "scale elastic Ray clusters; record who stopped a Ray cluster"
    ),
    *(
        permission
        for kind, resource in JOB_RESOURCES
        for permission in (
            *_perms(resource, ("create", "delete", "get"), kind.does),
            *_perms(resource, ("list", "watch"), f"list {kind.kind}s and follow their state"),
        )
    ),
    *_perms(POD, ("list", "watch"), "show Ray cluster pods and ready workers"),
    *_perms(
        SECRET,
        ("get",),
        "use a Ray cluster's token (its KubeRay-made Secret) in the dashboard proxy",
    ),
    *_perms(
        EVENT,
        ("list", "watch"),
        "show a Ray cluster KubeRay refused as stalled, with KubeRay's words",
    ),
    *_perms(EVENT, ("create",), "tell the user on the Ray cluster what the idle rule did"),
    *_perms(POD_METRICS, ("list",), "show what Ray clusters use of what they hold"),
    # Cluster-wide (an optional ClusterRole; examples/rbac/clusterrole.yaml).
    *_perms(CLUSTER_QUEUE, ("list", "watch"), "show quota, borrowing and headroom", required=False),
    *_perms(
        COHORT, ("list", "watch"), "count quota set on Cohort objects in headroom", required=False
    ),
    *_perms(RESOURCE_FLAVOR, ("list", "watch"), "describe resource flavors", required=False),
    *_perms(
        WORKLOAD_PRIORITY_CLASS,
        ("list", "watch"),
        "offer WorkloadPriorityClasses for clusters",
        required=False,
    ),
    *_perms(
        ADMISSION_CHECK,
        ("list", "watch"),
        "show which queues run their workloads on other clusters (MultiKueue)",
        required=False,
    ),
    *_perms(
        MULTIKUEUE_CONFIG,
        ("list", "watch"),
        "name the worker clusters a MultiKueue queue may run workloads on",
        required=False,
    ),
    *_perms(
        MULTIKUEUE_CLUSTER,
        ("list", "watch"),
        "tell whether MultiKueue reaches its worker clusters (jupyter dw doctor)",
        required=False,
    ),
    *_perms(
        VISIBILITY_CLUSTER_QUEUE,
        ("get",),
        "count the pending workloads of every namespace ahead of a new cluster, by priority",
        PENDING_WORKLOADS_SUBRESOURCE,
        required=False,
    ),
    *_perms(
        CLUSTER_TRAINING_RUNTIME,
        ("get",),
        "fit a TrainJob to its queue (its ClusterTrainingRuntime's pod shape)",
        required=False,
    ),
)
"""Everything the product uses, checked at start (then again on a timer and after a 403),
reported by ``GET context`` and ``jupyter dw doctor``. ``examples/rbac/`` grants exactly
these (a unit test compares them)."""


@dataclass(frozen=True)
class AccessResult:
    """The API server's verdict on one :class:`Permission` (``reason`` from the authorizer)."""

    permission: Permission
    allowed: bool
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The permission and its verdict, as ``GET context`` lists it."""
        return {**self.permission.to_json(), "allowed": self.allowed, "reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AccessResult:
        """What :meth:`to_json` made (``scope`` is ``namespaced``; ``permission`` is made
        again from the rest)."""
        scope = decode_key(Literal["namespace", "cluster"], data, "scope")
        subresource = decode_key(str | None, data, "subresource")
        permission = decode_fields(
            Permission, data, namespaced=scope == "namespace", subresource=subresource or ""
        )
        return decode_fields(cls, data, permission=permission)


def check_access(
    api: KubeApi, namespace: str, permissions: Iterable[Permission] = NEEDED_PERMISSIONS
) -> dict[Permission, AccessResult]:
    """Ask the API server (SelfSubjectAccessReview) about each permission in ``namespace``.

    The reviews run in parallel: each is one small POST and together they delay start-up.
    """
    perms = list(permissions)
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="dw-access") as pool:
        results = list(pool.map(lambda p: _review(api, namespace, p), perms))
    return dict(zip(perms, results, strict=True))


def recheck_access(
    api: KubeApi,
    namespace: str,
    previous: Mapping[Permission, AccessResult] | None = None,
    permissions: Iterable[Permission] = NEEDED_PERMISSIONS,
) -> dict[Permission, AccessResult]:
    """The verdicts of :func:`check_access` at the cost of one SelfSubjectRulesReview.

    What the API server documents and does (kube-apiserver's RBAC authorizer, ``RulesFor``):
    a SelfSubjectRulesReview needs ``spec.namespace`` and answers the rules of every
    ClusterRoleBinding of the identity together with those of its RoleBindings in that
    namespace, in one list that does not say which binding a rule came from; authorizers
    that cannot list rules (webhooks) make it ``incomplete: true``, as does a binding whose
    role cannot be read (``evaluationError``). So:

    - a namespaced permission is allowed exactly when a rule matches (a ClusterRoleBinding's
      rule applies in every namespace, a RoleBinding's in its own);
    - a cluster-scoped permission no rule matches is denied (no binding grants it), but one a
      rule matches may come from a RoleBinding, which never grants a cluster-scoped
      resource: it is confirmed by its own SelfSubjectAccessReview unless ``previous`` (the
      last verdicts) already allowed it, so a steady state costs no review (a revoked
      ClusterRoleBinding shows as the 403 of the watch it fed, and the re-check that 403
      asks for runs :func:`check_access`, exact);
    - an incomplete answer, or a review that fails or is refused, falls back to
      :func:`check_access` (one review per permission).

    ``reason`` is None where the rules decided (they carry none).
    """
    perms = list(permissions)
    try:
        answer = api.post(
            SELF_SUBJECT_RULES_REVIEW.path(),
            {
                "apiVersion": SELF_SUBJECT_RULES_REVIEW.api_version,
                "kind": SELF_SUBJECT_RULES_REVIEW.kind,
                "spec": {"namespace": namespace},
            },
        )
    except KubeError as err:
        log.info("jupyter_dw: no SelfSubjectRulesReview (%s); reviewing each permission", err)
        return check_access(api, namespace, perms)
    status = answer.get("status") or {}
    if status.get("incomplete"):
        return check_access(api, namespace, perms)
    rules = [ResourceRule.from_json(r) for r in status.get("resourceRules") or ()]
    previous = previous or {}
    results: dict[Permission, AccessResult] = {}
    confirm: list[Permission] = []
    for perm in perms:
        matched = rules_allow(rules, perm.verb, perm.group, perm.resource, perm.subresource)
        last = previous.get(perm)
        if last is not None and last.allowed == matched:
            results[perm] = last  # unchanged: keep the verdict with its reason
        elif matched and not perm.namespaced:
            confirm.append(perm)
        else:
            results[perm] = AccessResult(perm, matched)
    results.update(check_access(api, namespace, confirm) if confirm else {})
    return {perm: results[perm] for perm in perms}


def _review(api: KubeApi, namespace: str, permission: Permission) -> AccessResult:
    attributes: dict[str, Any] = {
        "verb": permission.verb,
        "group": permission.group,
        "resource": permission.resource,
    }
    if permission.subresource:
        attributes["subresource"] = permission.subresource
    if permission.namespaced:
        attributes["namespace"] = namespace
    review = api.post(
        SELF_SUBJECT_ACCESS_REVIEW.path(),
        {
            "apiVersion": SELF_SUBJECT_ACCESS_REVIEW.api_version,
            "kind": SELF_SUBJECT_ACCESS_REVIEW.kind,
            "spec": {"resourceAttributes": attributes},
        },
    )
    status = review.get("status") or {}
    reason = status.get("reason") or status.get("evaluationError") or None
    return AccessResult(permission, bool(status.get("allowed")), reason)


def who_am_i(api: KubeApi) -> Identity:
    """The identity from a SelfSubjectReview; unknown (None) where the API is not served
    (Kubernetes before 1.28) rather than failing start-up."""
    try:
        review = api.post(
            SELF_SUBJECT_REVIEW.path(),
            {"apiVersion": SELF_SUBJECT_REVIEW.api_version, "kind": SELF_SUBJECT_REVIEW.kind},
        )
    except KubeError as err:
        if getattr(err, "api_status", None) == 404:
            return Identity(username=None)
        raise
    info = (review.get("status") or {}).get("userInfo") or {}
    return Identity(
        username=info.get("username"),
        groups=tuple(info.get("groups") or ()),
        uid=info.get("uid"),
    )


def describe_resource(resource: str, group: str, subresource: str = "") -> str:
    """``resource.group`` (``resource`` alone for the core group), then ``/subresource``."""
    text = qualified(resource, group)
    return f"{text}/{subresource}" if subresource else text


def denied_action(status_body: str | bytes | Mapping[str, Any] | None) -> str | None:
    """``"<verb> <resource>.<group>"`` from the body of a 403, or None if it names none.

    Reads the RBAC denial message (``cannot list resource "clusterqueues" in API group
    "kueue.x-k8s.io"``); subresources come as ``localqueues/pendingworkloads``.
    """
    body = _as_mapping(status_body)
    match = _RBAC_DENIAL.search(str(body.get("message") or ""))
    if match is None:
        return None
    verb, resource, group = match.groups()
    resource, _, subresource = resource.partition("/")
    return f"{verb} {describe_resource(resource, group, subresource)}"


def forbidden_error(
    status_body: str | bytes | Mapping[str, Any] | None, fallback: str = ""
) -> KubeForbidden:
    """A :class:`KubeForbidden` naming the denied verb and resource of a 403 body."""
    body = _as_mapping(status_body)
    message = str(body.get("message") or fallback or "403 Forbidden")
    denied = denied_action(body)
    if denied is None:
        details = body.get("details") or {}
        resource, group = details.get("kind"), details.get("group", "")
        denied = f"access {describe_resource(resource, group)}" if resource else "the request"
    return KubeForbidden(
        f"Forbidden: this identity may not {denied}",
        message,
        f"Ask a cluster administrator to allow '{denied}' for this identity (a Role and "
        "RoleBinding in the namespace, or a ClusterRole and ClusterRoleBinding for "
        "cluster-scoped resources).",
        denied=denied,
    )


def _as_mapping(body: str | bytes | Mapping[str, Any] | None) -> Mapping[str, Any]:
    if body is None:
        return {}
    if isinstance(body, Mapping):
        return body
    try:
        parsed = json.loads(body)
    except ValueError:
        return {"message": body.decode("utf-8", "replace") if isinstance(body, bytes) else body}
    return parsed if isinstance(parsed, Mapping) else {}
