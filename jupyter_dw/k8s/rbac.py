"""RBAC that grants :data:`~jupyter_dw.k8s.access.NEEDED_PERMISSIONS`, as YAML to apply.
One renderer, with a comment per rule naming what it unlocks, for ``examples/rbac/``, ``jupyter
dw rbac`` and the doctor's fix (docs/explanation/architecture.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from ..domain.identity import SERVICE_ACCOUNT_PREFIX, Identity
from .access import Permission

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Subject:
    """Who a binding grants to: a ServiceAccount (with its namespace) or a User."""

    kind: str
    name: str
    namespace: str | None = None

    @classmethod
    def of(cls, identity: Identity | None, namespace: str) -> Subject:
        """The subject for ``identity``; a service-account placeholder in ``namespace`` when
        the API server could not say who we are."""
        if identity is not None and identity.service_account is not None:
            sa_namespace, name = identity.service_account
            return cls("ServiceAccount", name, sa_namespace)
        if identity is not None and identity.username:
            return cls("User", identity.username)
        return cls("ServiceAccount", "SERVICE_ACCOUNT", namespace)

    @property
    def short(self) -> str:
        """A name part for objects made for this subject (``workbench``, ``alice``)."""
        return self.name.removeprefix(SERVICE_ACCOUNT_PREFIX).replace(":", "-")

    def to_yaml(self, indent: str) -> str:
        lines = [f"- kind: {self.kind}", f"  name: {_q(self.name)}"]
        if self.kind == "ServiceAccount":
            lines.append(f"  namespace: {_q(self.namespace or '')}")
        else:
            lines.append(f"  apiGroup: {RBAC_GROUP}")
        return "\n".join(indent + line for line in lines)


@dataclass(frozen=True)
class Rule:
    """One RBAC rule (one resource of one API group) and what each of its verbs unlocks."""

    group: str
    resource: str
    verbs: tuple[str, ...]
    purposes: tuple[tuple[str, str], ...]
    """``(verbs joined by ", ", purpose)`` pairs, in the order of the permission list."""

    def to_yaml(self) -> str:
        comments = "".join(f"  # {verbs}: {purpose}\n" for verbs, purpose in self.purposes)
        return (
            f"{comments}"
            f"  - apiGroups: [{_q(self.group)}]\n"
            f"    resources: [{_q(self.resource)}]\n"
            f"    verbs: [{', '.join(_q(v) for v in self.verbs)}]"
        )


def rules_for(permissions: Iterable[Permission]) -> list[Rule]:
    """One rule per API group and resource, verbs in the order the permissions name them."""
    verbs: dict[tuple[str, str], list[str]] = {}
    purposes: dict[tuple[str, str], dict[str, list[str]]] = {}
    for permission in permissions:
        key = (permission.group, permission.rbac_resource)
        if permission.verb not in verbs.setdefault(key, []):
            verbs[key].append(permission.verb)
        purposes.setdefault(key, {}).setdefault(permission.purpose, []).append(permission.verb)
    return [
        Rule(
            group,
            resource,
            tuple(verbs[(group, resource)]),
            tuple((", ".join(v), p) for p, v in purposes[(group, resource)].items()),
        )
        for group, resource in verbs
    ]


def render_rbac(
    permissions: Iterable[Permission],
    namespace: str,
    subject: Subject,
    *,
    role_name: str | None = None,
    cluster_role_name: str | None = None,
    header: str = "",
) -> str:
    """YAML documents granting ``permissions`` to ``subject``: a Role and RoleBinding in
    ``namespace`` for the namespaced ones, a ClusterRole and ClusterRoleBinding for the
    others. Names default to ``jupyter-dw-<subject>-<digest of the rules>``, so applying the
    fix for one set of missing permissions never overwrites another. Empty when
    ``permissions`` is."""
    perms = list(permissions)
    namespaced = [p for p in perms if p.namespaced]
    cluster = [p for p in perms if not p.namespaced]
    who = _dns(subject.short)
    grants = (
        _grant("Role", namespaced, namespace, subject, role_name, who),
        # A shared ClusterRole gets one binding per namespace too.
        _grant("ClusterRole", cluster, None, subject, cluster_role_name, f"{namespace}-{who}"),
    )
    documents = [grant for grant in grants if grant]
    if not documents:
        return ""
    return header + "\n---\n".join(documents) + "\n"


def _grant(
    kind: str,
    permissions: list[Permission],
    namespace: str | None,
    subject: Subject,
    shared_name: str | None,
    binding_suffix: str,
) -> str:
    """A ``kind`` (a Role in ``namespace``, or a ClusterRole: ``namespace`` None) granting
    ``permissions``, and its binding to ``subject``; "" when there are no ``permissions``."""
    if not permissions:
        return ""
    name = shared_name or _name(subject, permissions)
    # A shared role gets one binding per subject; a fix role is the subject's own.
    binding = f"{name}-{binding_suffix}" if shared_name else name
    return (
        _role(kind, name, namespace, rules_for(permissions))
        + "\n---\n"
        + _binding(f"{kind}Binding", binding, namespace, kind, name, subject)
    )


def _role(kind: str, name: str, namespace: str | None, rules: list[Rule]) -> str:
    return "\n".join(
        [
            f"apiVersion: {RBAC_API_VERSION}",
            f"kind: {kind}",
            "metadata:",
            f"  name: {_q(name)}",
            *([f"  namespace: {_q(namespace)}"] if namespace is not None else []),
            "rules:",
            *(rule.to_yaml() for rule in rules),
        ]
    )


def _binding(
    kind: str, name: str, namespace: str | None, role_kind: str, role: str, subject: Subject
) -> str:
    return "\n".join(
        [
            f"apiVersion: {RBAC_API_VERSION}",
            f"kind: {kind}",
            "metadata:",
            f"  name: {_q(name)}",
            *([f"  namespace: {_q(namespace)}"] if namespace is not None else []),
            "roleRef:",
            f"  apiGroup: {RBAC_GROUP}",
            f"  kind: {role_kind}",
            f"  name: {_q(role)}",
            "subjects:",
            subject.to_yaml(""),
        ]
    )


def _name(subject: Subject, permissions: list[Permission]) -> str:
    key = json.dumps(
        [subject.kind, subject.name, subject.namespace, sorted(p.name for p in permissions)]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return f"jupyter-dw-{_dns(subject.short)[:40].strip('-')}-{digest}"


def _dns(text: str) -> str:
    """``text`` with what an object name may not hold replaced by ``-`` (``${...}``, the
    placeholders of the examples, is kept for envsubst)."""
    if "${" not in text:
        text = text.lower()
    return "".join(c if c.isalnum() or c in "-${}_" else "-" for c in text)


def _q(value: str) -> str:
    return json.dumps(value)
